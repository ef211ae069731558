package ingest

import (
	mrand "math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
)

// ShardTurns deals the request IDs a client makes round the index shards of each
// event, so that its requests go to the shards in turn rather than at random. A random
// spread is even on average but now and then puts a burst of requests on one shard's
// key; at a modest rate per shard (a spike's tail, a spike played slower under lower
// limits) those bursts are what a key throttles on. Its zero value is ready; it is
// safe for concurrent use.
type ShardTurns struct {
	next sync.Map // eventId → *atomic.Uint64, the turn of the next request
}

// NewRequestID returns a new default request ID (a UUIDv7) for an event with shards
// index shards: for shards > 1, one whose shardOf is the event's next shard in turn.
// It varies the UUID's last 16 random bits until the ID falls on that shard, about
// shards tries of a string and a hash each; the ID is no less unique, and its shard is
// still the one shardOf derives from it.
func (t *ShardTurns) NewRequestID(eventID string, shards int, shardOf func(requestID string, shards int) int) string {
	u := uuid.Must(uuid.NewV7())
	if shards <= 1 {
		return u.String()
	}
	turn, ok := t.next.Load(eventID)
	if !ok {
		start := new(atomic.Uint64)
		start.Store(mrand.Uint64N(uint64(shards))) // clients start at different shards
		turn, _ = t.next.LoadOrStore(eventID, start)
	}
	want := int(turn.(*atomic.Uint64).Add(1) % uint64(shards))
	id := u.String()
	for i := range 1 << 16 {
		u[14], u[15] = byte(i>>8), byte(i)
		if id = u.String(); shardOf(id, shards) == want {
			break
		}
	}
	return id
}
