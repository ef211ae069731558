package asyncevent

import (
	"math"

	"github.com/asyncevent/asyncevent/internal/clickcost"
)

// The layout rule: the share of a partition key's 1,000 WCU/s a shard may take, and
// the most seats a capacity shard holds for a claim to cost what the rule counts.
// What one click and one seat write is in internal/clickcost, which package
// spikeplan reads too.
const (
	// keyWCULimit is DynamoDB's limit on one partition key: 1,000 WCU/s, on the table
	// and on each GSI apart.
	keyWCULimit = 1000
	// shardBudget is the share of keyWCULimit one shard may take at the peak: 80%,
	// for the bursts around it.
	shardBudget = 0.8 * keyWCULimit

	// ruleSeatsPerShard is the most seats a capacity shard holds for
	// clickcost.ClaimWCU to hold, with room for the item's other attributes.
	ruleSeatsPerShard = 128
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
	if winnersPerSecond <= 0 {
		winnersPerSecond = clicksPerSecond * clickcost.WinnerShare
	}
	return shardsFor(clicksPerSecond*clickcost.IndexWCU, MaxShards), shardsFor(winnersPerSecond*clickcost.ClaimWCU, maxCapacityShards)
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
	seats := max(e.CapacityTotal, 1)
	bySeats := min((seats+ruleSeatsPerShard-1)/ruleSeatsPerShard, maxCapacityShards)
	e.CapacityShards = int(min(max(int64(e.CapacityShards), bySeats), seats))
	if e.HoldFor > 0 {
		// CreateEvent writes an event with holds' registry entry in the same
		// transaction as its shards: one shard fewer fits.
		e.CapacityShards = min(e.CapacityShards, maxCapacityShards-1)
	}
}
