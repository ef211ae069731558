package asyncevent

import (
	"time"

	"github.com/asyncevent/asyncevent/internal/layoutrule"
)

// ShardsFor returns the layout (EventSettings.IndexShards and CapacityShards) that
// keeps each of an event's hot keys under 80% of a partition key's 1,000 WCU/s at a
// peak of clicksPerSecond new participations and winnersPerSecond seats taken:
//
//	IndexShards    = ⌈clicksPerSecond × 4 WCU ÷ 800⌉   (GSI2: put, QUEUED, PROCESSING, final status)
//	CapacityShards = ⌈winnersPerSecond × 2 WCU ÷ 800⌉  (one UpdateItem of a shard per seat)
//
// (4 is a click that a worker with a Handler holds PROCESSING; the home claim of a
// worker without one, and every loser once the event is sold out, write 3 on GSI2:
// the put, QUEUED and the result.) Each at least 1 and at most MaxShards (99 capacity
// shards); winnersPerSecond 0 means a quarter of the clicks. 20,000 clicks/s gives
// 100 index shards and, for 5,000 winners/s, 13 capacity shards. A claim costs 2 WCU
// only while its shard holds up to about 128 seats: EventSettings.ShardForPeak also
// counts the seats. A capacity shard takes no transaction, so its bound is its units
// alone: no serial bound of one transaction at a time applies. Package spikeplan's
// For calls it for the layout of its plan.
func ShardsFor(clicksPerSecond, winnersPerSecond float64) (indexShards, capacityShards int) {
	return layoutrule.Shards(clicksPerSecond, winnersPerSecond, MaxShards, maxCapacityShards)
}

// ShardForPeak sets the event's layout (IndexShards and CapacityShards) for a peak of
// clicksPerSecond new participations, a quarter of them winners, by ShardsFor: a
// LOTTERY gets no capacity shards; a FIRST_COME event no more capacity shards than
// seats, and at least one per 128 seats (up to 99 shards), so that a claim costs
// the 2 WCU ShardsFor counts. Past 99 × 128 seats a shard's claims cost more as it
// fills (⌈item size ÷ 1 KB⌉ WCU, about 12 bytes a winner) and it takes fewer claims a
// second than the rule says. The CLI's event create -peak and the HTTP API's
// peakClicksPerSecond call it.
func (e *EventSettings) ShardForPeak(clicksPerSecond float64) {
	e.IndexShards, e.CapacityShards = ShardsFor(clicksPerSecond, 0)
	if e.EventType != FirstCome {
		e.CapacityShards = 0
		return
	}
	e.CapacityShards = layoutrule.CapacityShards(e.CapacityShards, e.CapacityTotal, e.HoldFor > 0, maxCapacityShards)
}

// RankedBound is what one ranked admission (EventSettings.Admission AdmissionRanked)
// can decide, and what its record costs the event's partition key. The admission is
// one per event whatever the workers and the shards, so it bounds the event's
// winners a second beside the per-partition bounds of ShardsFor: the event takes the
// smaller of the two.
type RankedBound struct {
	// WaveSize is the most requests one wave decides: 4 × Options.DrawConcurrency
	// (64 by default), or the seats left if fewer.
	WaveSize int
	// RoundTrips is a wave's sequential round trips to DynamoDB, one after another:
	// the record's read; the line (a Query per index shard, 10 at a time); the
	// record's write; the wave's seats (one write of each home shard for up to 25
	// of its requests, all at once), then each request's SUCCEEDED (and, with holds,
	// the PutItem of its Hold item first); the record's "wave decided". 6 on the design's single keys. The seats left (the capacity shards,
	// 10 at a time, then the pool) are read when the admission takes its lease and
	// when the waves have spent what it read, not each wave.
	RoundTrips int
	// CallLatency is one call's latency the bound assumes.
	CallLatency time.Duration
	// WinnersPerSecond is WaveSize ÷ (RoundTrips × CallLatency): the most winners the
	// event's admission decides a second.
	WinnersPerSecond float64
	// LineQueriesPerSecond is the admission's Queries of GSI2 a second while
	// deliveries wait and no wave is full: one per index shard every 25 ms.
	LineQueriesPerSecond float64
	// RecordRCU is one strongly consistent read of the record: 1 RCU while it is
	// under 4 KB (a wave of 64 request IDs is about 3 KB; the late arrivals it
	// names add to it).
	RecordRCU int
	// RecordRCUPerWorker is what one worker (a Worker's Processor) with deliveries
	// waiting on the admission reads of the record a second, on the event's
	// partition key EVENT#<eventId>: one strongly consistent GetItem every 25 ms.
	RecordRCUPerWorker float64
	// MaxWorkers is how many such workers the partition key's 3,000 RCU/s takes at
	// once, the record's reads alone.
	MaxWorkers int
}

// RankedBound returns the bound of a ranked admission of an event of e's layout
// (IndexShards, CapacityShards, HoldFor) on c's options, each call taking
// callLatency (10 ms on DynamoDB is a planning figure, not a measurement: DynamoDB
// Local is no guide to DynamoDB's latency). At 10 ms on the design's single keys:
// 64 ÷ (6 × 10 ms) ≈ 1,067 winners/s, and 40 RCU/s a worker, 75 workers on the
// partition key. The CLI's plan -ranked prints it.
func (c *Client) RankedBound(e EventSettings, callLatency time.Duration) RankedBound {
	return RankedBound(layoutrule.Ranked(c.opts.DrawConcurrency, e.IndexShards, partitionReads, e.HoldFor > 0, callLatency))
}
