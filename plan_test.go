package asyncevent_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
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

func TestRankedBound(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		settings              asyncevent.EventSettings
		opts                  asyncevent.Options
		wave, trips           int
		winnersPerSec         float64
		lineQueries           float64
		recordRCU, maxWorkers int
	}{
		// The record, the line, the record, the seat, SUCCEEDED, the wave decided.
		{name: "single keys", wave: 64, trips: 6, winnersPerSec: 64 / 0.060, lineQueries: 40, recordRCU: 1, maxWorkers: 75},
		// The 100 index shards are read 10 at a time (the 13 capacity shards only when
		// the seats counted off are spent).
		{name: "the layout of 20,000 clicks/s", settings: asyncevent.EventSettings{IndexShards: 100, CapacityShards: 13},
			wave: 64, trips: 15, winnersPerSec: 64 / 0.150, lineQueries: 4000, recordRCU: 1, maxWorkers: 75},
		// The PutItem of the Hold item after the seat.
		{name: "holds", settings: asyncevent.EventSettings{HoldFor: time.Minute}, wave: 64, trips: 7, winnersPerSec: 64 / 0.070, lineQueries: 40, recordRCU: 1, maxWorkers: 75},
		// 128 request IDs make a record over 4 KB: 2 RCU a read.
		{name: "DrawConcurrency 32", opts: asyncevent.Options{DrawConcurrency: 32}, wave: 128, trips: 6, winnersPerSec: 128 / 0.060, lineQueries: 40, recordRCU: 2, maxWorkers: 37},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := asyncevent.New(asynceventtest.DynamoDB(t), tc.opts)
			require.NoError(t, err)
			b := c.RankedBound(tc.settings, 10*time.Millisecond)
			assert.Equal(t, tc.wave, b.WaveSize)
			assert.Equal(t, tc.trips, b.RoundTrips)
			assert.InDelta(t, tc.winnersPerSec, b.WinnersPerSecond, 1e-6)
			assert.InDelta(t, tc.lineQueries, b.LineQueriesPerSecond, 1e-9)
			assert.Equal(t, tc.recordRCU, b.RecordRCU)
			assert.InDelta(t, 40*float64(tc.recordRCU), b.RecordRCUPerWorker, 1e-9, "a read every 25 ms")
			assert.Equal(t, tc.maxWorkers, b.MaxWorkers, "3,000 RCU/s on EVENT#<eventId>")
		})
	}
}
