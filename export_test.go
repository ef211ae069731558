package asyncevent

import (
	"context"
	"strings"
)

// EventBookkeeping is the library's bookkeeping on an event's EventConfig item, which
// no caller's type carries: for the package's external tests only.
type EventBookkeeping struct {
	EmptyShards    []int
	PoolVersion    int64
	LocksKeptUntil EpochMillis
}

// ReadEventBookkeeping reads an event's bookkeeping (a strongly consistent read).
func ReadEventBookkeeping(ctx context.Context, c *Client, eventID string) (EventBookkeeping, error) {
	e, err := c.getEvent(ctx, eventID)
	if err != nil {
		return EventBookkeeping{}, err
	}
	return EventBookkeeping{EmptyShards: e.EmptyShards, PoolVersion: e.PoolVersion, LocksKeptUntil: e.LocksKeptUntil}, nil
}

// StoredRequest is a Request item's fields with the library's bookkeeping (lease,
// seat place, lock key, expiry), which no caller's type carries: for the package's
// external tests only.
type StoredRequest = storedRequest

// ReadStoredRequest reads a request with its bookkeeping (a strongly consistent read).
func ReadStoredRequest(ctx context.Context, c *Client, requestID string) (*StoredRequest, error) {
	return c.getRequest(ctx, requestID, true)
}

// StoredCurrent is a Transition's Current with its bookkeeping.
func StoredCurrent(t Transition) *StoredRequest { return t.current }

// StoredCapacity is an event's capacity with the library's bookkeeping (seat tokens,
// fence tokens, pool version) of each item, which the caller's EventCapacity leaves
// out: for the package's external tests only. Shards holds each shard's item when the
// event has capacity shards.
type StoredCapacity struct {
	EventCapacity
	Holders     []string
	Void        []string
	PoolVersion int64
	Shards      []StoredCapacity
}

// ReadStoredCapacity reads an event's capacity items (strongly consistent reads).
func ReadStoredCapacity(ctx context.Context, c *Client, eventID string) (*StoredCapacity, error) {
	sum, err := c.GetCapacity(ctx, eventID)
	if err != nil {
		return nil, err
	}
	n := max(1, len(sum.Shards))
	out := &StoredCapacity{EventCapacity: *sum}
	for shard := range n {
		item, err := c.readShard(ctx, eventID, n, shard)
		if err != nil {
			return nil, err
		}
		s := StoredCapacity{EventCapacity: item.EventCapacity, Holders: item.Holders, Void: item.Void, PoolVersion: item.PoolVersion}
		if n == 1 {
			s.Shards = nil
			return &s, nil
		}
		out.Shards = append(out.Shards, s)
	}
	return out, nil
}

// EstimateParts returns the arrivals before a request and the requests finished that
// an estimate took.
func EstimateParts(e QueueEstimate) (arrived, done float64) { return e.arrived, e.done }

// EstimateCut returns the moment up to which an estimate counted the requests
// finished in full (unix ms), and their count then.
func EstimateCut(e QueueEstimate) (cut int64, counted float64) { return e.doneCut, e.doneCounted }

// ClaimWaveSeats is the ranked admission's write of a wave's home seats on one shard
// (the "first-come wave seats" row), for the package's external tests only.
func ClaimWaveSeats(ctx context.Context, c *Client, eventID string, n, shard int, requestIDs []string) (taken int, emptied bool, err error) {
	return c.claimWaveSeats(ctx, eventID, n, shard, requestIDs)
}

// MaxWaveClaim is the most seats one wave write takes.
const MaxWaveClaim = maxWaveClaim

// RowMethods maps each row of the access-pattern table to the methods that its
// declaration names (its method column).
func RowMethods() map[string][]string {
	m := map[string][]string{}
	for _, r := range declaredRows() {
		for _, method := range strings.Split(r.method, ",") {
			m[r.name] = append(m[r.name], strings.TrimSpace(method))
		}
	}
	return m
}

// ReadMethods maps each read's signature, as a test observes the call ("GetItem
// REQUEST", "Query GSI2 EVENT"), to the methods that the table's reads of it name.
func ReadMethods() map[string][]string {
	m := map[string][]string{}
	for _, r := range readRows {
		for _, method := range strings.Split(r.method, ",") {
			m[r.read] = append(m[r.read], strings.TrimSpace(method))
		}
	}
	return m
}
