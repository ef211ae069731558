package layoutrule

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestShards(t *testing.T) {
	for _, tc := range []struct {
		clicks, winners float64
		index, capacity int
	}{
		{20000, 0, 100, 13}, // 80,000 WCU/s on GSI2; a quarter winners, 10,000 on the shards
		{20000, 5000, 100, 13},
		{800, 0, 4, 1},   // 3,200 WCU/s: 4 shards of 800
		{200, 400, 1, 1}, // exactly one shard's budget each
		{201, 401, 2, 2}, // a unit over it
		{0, 0, 1, 1},     // at least one
		{-5, -1, 1, 1},   // a negative peak is no peak
		{1e300, 1e300, 100, 99},
		{math.NaN(), math.NaN(), 100, 99}, // NaN clamps to the most, never wraps
	} {
		index, capacity := Shards(tc.clicks, tc.winners, 100, 99)
		assert.Equal(t, [2]int{tc.index, tc.capacity}, [2]int{index, capacity}, "%v clicks/s, %v winners/s", tc.clicks, tc.winners)
	}
}

func TestCapacityShards(t *testing.T) {
	for _, tc := range []struct {
		name   string
		byRate int
		seats  int64
		holds  bool
		want   int
	}{
		{"the rate decides", 13, 1000, false, 13},
		{"no more shards than seats", 13, 3, false, 3},
		{"no seats counts as one", 13, 0, false, 1},
		{"one shard per 128 seats", 1, 5000, false, 40},
		{"128 seats fit one shard", 1, 128, false, 1},
		{"129 do not", 1, 129, false, 2},
		{"at most the most", 13, 100000, false, 99},
		{"with holds one fewer", 13, 100000, true, 98},
		{"holds under the most change nothing", 13, 1000, true, 13},
	} {
		assert.Equal(t, tc.want, CapacityShards(tc.byRate, tc.seats, tc.holds, 99), tc.name)
	}
}

func TestRanked(t *testing.T) {
	for _, tc := range []struct {
		name            string
		drawConcurrency int
		indexShards     int
		holds           bool
		latency         time.Duration
		want            Bound
	}{
		// The record, the line, the record, the seat, SUCCEEDED, the wave decided.
		{"single keys", 16, 0, false, 10 * time.Millisecond,
			Bound{64, 6, 10 * time.Millisecond, 64 / 0.060, 40, 1, 40, 75}},
		{"100 index shards, 10 at a time", 16, 100, false, 10 * time.Millisecond,
			Bound{64, 15, 10 * time.Millisecond, 64 / 0.150, 4000, 1, 40, 75}},
		{"holds: the Hold item's put", 16, 1, true, 10 * time.Millisecond,
			Bound{64, 7, 10 * time.Millisecond, 64 / 0.070, 40, 1, 40, 75}},
		{"a record over 4 KB reads 2 RCU", 32, 1, false, 10 * time.Millisecond,
			Bound{128, 6, 10 * time.Millisecond, 128 / 0.060, 40, 2, 80, 37}},
		{"no latency, no rate", 16, 1, false, 0,
			Bound{64, 6, 0, 0, 40, 1, 40, 75}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Ranked(tc.drawConcurrency, tc.indexShards, 10, tc.holds, tc.latency)
			assert.InDelta(t, tc.want.WinnersPerSecond, got.WinnersPerSecond, 1e-6)
			got.WinnersPerSecond = tc.want.WinnersPerSecond
			assert.Equal(t, tc.want, got)
		})
	}
}
