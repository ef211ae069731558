package asynceventtest

import (
	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/internal/metered"
)

// Counter wraps a DynamoDB client and counts what goes through it: calls per
// operation, HTTP round trips (counted by a middleware in the SDK's stack after its
// retry step, so the SDK's own retries count too), and the read and write capacity
// units the table reports (it asks every data call for ReturnConsumedCapacity TOTAL).
// It is safe for concurrent use.
type Counter = metered.Counter

// Counts is a snapshot of a Counter: calls by operation, HTTP round trips (Attempts,
// also RoundTrips), RCU and WCU. Sub gives the counts between two snapshots.
type Counts = metered.Counts

// NewCounter returns a Counter around db.
func NewCounter(db asyncevent.DynamoDB) *Counter { return metered.NewCounter(db) }
