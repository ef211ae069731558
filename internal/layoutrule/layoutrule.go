// Package layoutrule is the arithmetic of the layout rule: how many index and capacity
// shards keep an event's hot keys under DynamoDB's per-key limits at a peak, and what
// one ranked admission can decide a second. The root package's ShardsFor,
// EventSettings.ShardForPeak and Client.RankedBound are its public face and document
// each figure; what one click and one seat write is in internal/clickcost.
package layoutrule

import (
	"math"
	"time"

	"github.com/asyncevent/asyncevent/internal/admission"
	"github.com/asyncevent/asyncevent/internal/clickcost"
)

const (
	// KeyWCULimit is DynamoDB's limit on one partition key: 1,000 WCU/s, on the table
	// and on each GSI apart.
	KeyWCULimit = 1000
	// KeyRCULimit is DynamoDB's limit on one partition key: 3,000 RCU/s (strongly
	// consistent reads of up to 4 KB), on the table and on each GSI apart.
	KeyRCULimit = 3000
	// shardBudget is the share of KeyWCULimit one shard may take at the peak: 80%,
	// for the bursts around it.
	shardBudget = 0.8 * KeyWCULimit

	// SeatsPerShard is the most seats a capacity shard holds for clickcost.ClaimWCU
	// to hold, with room for the item's other attributes.
	SeatsPerShard = 128
)

// Shards returns the index and capacity shards of a peak of clicks new
// participations and winners seats taken a second (winners 0 or less: a
// clickcost.WinnerShare of the clicks), each at least 1 and at most maxIndex and
// maxCapacity.
func Shards(clicks, winners float64, maxIndex, maxCapacity int) (index, capacity int) {
	if winners <= 0 {
		winners = clicks * clickcost.WinnerShare
	}
	return shardsFor(clicks*clickcost.IndexWCU, maxIndex), shardsFor(winners*clickcost.ClaimWCU, maxCapacity)
}

// shardsFor is how many shards of shardBudget take units a second, between 1 and
// most.
func shardsFor(units float64, most int) int {
	n := math.Ceil(units / shardBudget)
	if !(n < float64(most)) { // clamped as a float: a huge peak (or NaN) would overflow int
		return most
	}
	return max(int(n), 1)
}

// CapacityShards is a FIRST_COME event's capacity shards for seats, from byRate
// (Shards' count for its peak): at least one per SeatsPerShard seats, no more than
// the seats, at most most, and one fewer than most with holds.
func CapacityShards(byRate int, seats int64, holds bool, most int) int {
	seats = max(seats, 1)
	bySeats := min((seats+SeatsPerShard-1)/SeatsPerShard, int64(most))
	n := int(min(max(int64(byRate), bySeats), seats))
	if holds {
		// CreateEvent writes an event with holds' registry entry in the same
		// transaction as its shards: one shard fewer fits.
		n = min(n, most-1)
	}
	return n
}

// Bound is the root package's RankedBound, field for field; its doc says what each
// figure is.
type Bound struct {
	WaveSize             int
	RoundTrips           int
	CallLatency          time.Duration
	WinnersPerSecond     float64
	LineQueriesPerSecond float64
	RecordRCU            int
	RecordRCUPerWorker   float64
	MaxWorkers           int
}

// Ranked is the bound of a ranked admission of drawConcurrency (Options), over
// indexShards read partitionReads at a time, with or without holds, each call taking
// callLatency.
func Ranked(drawConcurrency, indexShards, partitionReads int, holds bool, callLatency time.Duration) Bound {
	k := max(indexShards, 1)
	claim := 2
	if holds {
		claim = 3
	}
	b := Bound{
		WaveSize:    admission.WaveSize(drawConcurrency),
		RoundTrips:  1 + ceilDiv(k, partitionReads) + 1 + claim + 1,
		CallLatency: callLatency,
	}
	if callLatency > 0 {
		b.WinnersPerSecond = float64(b.WaveSize) / (float64(b.RoundTrips) * callLatency.Seconds())
	}
	perSecond := float64(time.Second) / float64(admission.Tick)
	b.LineQueriesPerSecond = float64(k) * perSecond
	// The record: its keys, watermark, lease and counters in about 256 bytes, and a
	// request ID of 36 characters (40 bytes stored) per request of the wave.
	b.RecordRCU = ceilDiv(256+40*b.WaveSize, 4096)
	b.RecordRCUPerWorker = float64(b.RecordRCU) * perSecond
	b.MaxWorkers = int(KeyRCULimit / b.RecordRCUPerWorker)
	return b
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
