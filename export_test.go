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
