// Package clickcost holds what one click and one seat claim cost DynamoDB, as the
// heat meter measures them on DynamoDB Local (asyncevent bench, its heat rows), and
// the share of the clicks that win when a caller does not say. The layout rule
// (internal/layoutrule, behind ShardsFor and EventSettings.ShardForPeak) and package
// spikeplan's throughput read these, and nothing else does, so that the shards and
// the warm throughput of a peak count the same units.
package clickcost

const (
	// IndexWCU is what one click writes on GSI2 (its event's key) and on GSI1 (its
	// user's) while seats last: the index projects ALL, so the request's put (which
	// carries its index keys), its QUEUED, its PROCESSING and its final status each
	// rewrite its entry, 1 WCU each for an item under 1 KB. A loser once the worker
	// knows the event is sold out skips PROCESSING: 3.
	IndexWCU = 4
	// TableWCU is what one click writes on the table, on keys of its own (a lock and
	// a request per click, so no key of the table runs hot): the lock, the request's
	// put, QUEUED, PROCESSING and the final status.
	TableWCU = 5
	// TableRCU is the reads of a click on the table: a few eventually consistent
	// reads of the request while the user waits for the result.
	TableRCU = 2

	// ClaimWCU is what the layout rule counts for one seat claim: one UpdateItem of
	// a capacity shard, 1 WCU while the shard item is under 1 KB and 2 under 2 KB.
	// The item grows by a 12-byte seat token per winner, so its claims cost 1 WCU to
	// about its 64th winner and 2 to about its 150th: 2 holds for a shard of up to
	// 128 seats, which EventSettings.ShardForPeak keeps.
	ClaimWCU = 2

	// WinnerShare is the share of the clicks that take a seat at the peak when the
	// caller does not say: a quarter.
	WinnerShare = 0.25
)
