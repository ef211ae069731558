package asyncevent_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/asyncevent/asyncevent"
)

func TestShardsFor(t *testing.T) {
	for _, tc := range []struct {
		clicks, winners float64
		k, c            int
	}{
		{20000, 0, 100, 13},     // 80,000 WCU/s on GSI2, 10,000 on the capacity shards
		{20000, 5000, 100, 13},  // the same, said
		{20000, 20000, 100, 50}, // every click a winner
		{100, 0, 1, 1},
		{0, 0, 1, 1},
		{100, 10, 1, 1},
		{1e300, 1e300, asyncevent.MaxShards, 99}, // a huge peak is clamped, not wrapped around
		{1e9, 1e9, asyncevent.MaxShards, 99},     // a CreateEvent transaction holds the config and at most 99 capacity shards
	} {
		k, c := asyncevent.ShardsFor(tc.clicks, tc.winners)
		assert.Equal(t, [2]int{tc.k, tc.c}, [2]int{k, c}, "%v clicks/s, %v winners/s", tc.clicks, tc.winners)
	}
}

func TestShardForPeakCountsTheSeats(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  asyncevent.EventSettings
		k, c int
	}{
		{"1,000 seats", asyncevent.EventSettings{EventType: asyncevent.FirstCome, CapacityTotal: 1000}, 100, 13},
		{"3 seats", asyncevent.EventSettings{EventType: asyncevent.FirstCome, CapacityTotal: 3}, 100, 3},
		{"a shard per 128 seats", asyncevent.EventSettings{EventType: asyncevent.FirstCome, CapacityTotal: 5000}, 100, 40},
		{"at most 99 shards", asyncevent.EventSettings{EventType: asyncevent.FirstCome, CapacityTotal: 100000}, 100, 99},
		{"lottery", asyncevent.EventSettings{EventType: asyncevent.Lottery, WinnerCount: 5}, 100, 0},
	} {
		cfg := tc.cfg
		cfg.ShardForPeak(20000)
		assert.Equal(t, [2]int{tc.k, tc.c}, [2]int{cfg.IndexShards, cfg.CapacityShards}, tc.name)
	}
}
