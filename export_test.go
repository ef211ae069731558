package asyncevent

import "context"

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
