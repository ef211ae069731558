package asyncevent_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/queue"
)

// ExtendEvent moves the CONFIG's endsAt and nothing else, but two items carry a copy
// of the end written before the move:
//
//   - the hold registry's entry (HOLD_EVENTS / EVENT#<eventId>, endsAt from
//     CreateEvent): HoldEvents stops listing the event an hour after its first end
//     plus HoldFor, so a worker started later (a deploy) and the scheduled
//     HoldSweeper, which sweep the registry's events, no longer end its holds or
//     serve its waitlist while it still sells;
//   - every IdempotencyLock written before the move (ttl = the end as it was +
//     LockTTL, 7 days): an end moved further than that lets DynamoDB's TTL delete the
//     locks of an open event, and a user's next click makes a second request.
func TestReview26ExtendedEndReachesTheHoldRegistry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "long", 2, 1, time.Minute, asyncevent.MillisOf(t0.Add(time.Hour)))
	up, err := c.ExtendEvent(ctx, "long", "ops", asyncevent.ActionExtendEnd, t0.Add(6*time.Hour))
	require.NoError(t, err)
	require.True(t, up.Applied, up.Reason)

	clock.Advance(3 * time.Hour) // open: its end is 3 hours away
	cfg, err := c.GetEvent(ctx, "long")
	require.NoError(t, err)
	require.Equal(t, asyncevent.StateOpen, cfg.StateAt(clock.Now()))
	listed, err := c.HoldEvents(ctx)
	require.NoError(t, err)
	var ids []string
	for _, e := range listed {
		ids = append(ids, e.EventID)
	}
	assert.Contains(t, ids, "long", "an open event with holds, its end extended, is missing from the hold registry's list")
}

func TestReview26ExtendedEndKeepsTheLocks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "month", EventType: asyncevent.FirstCome, CapacityTotal: 5,
		EndsAt: asyncevent.MillisOf(t0.Add(time.Hour))})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	_, err = c.Submit(ctx, q, "month", "early")
	require.NoError(t, err)

	// Past the first end plus LockTTL (7 days): refused, nothing written.
	before := itemsOf(t, c)
	up, err := c.ExtendEvent(ctx, "month", "ops", asyncevent.ActionExtendEnd, t0.Add(30*24*time.Hour))
	require.NoError(t, err)
	require.False(t, up.Applied, "an end past the locks' TTL")
	assert.Contains(t, up.Reason, "TTL would then delete the locks")
	assert.Equal(t, before, itemsOf(t, c))

	// Up to it: applied, and every lock outlives the new end.
	kept, err := asyncevent.ReadEventBookkeeping(ctx, c, "month")
	require.NoError(t, err)
	newEnd := kept.LocksKeptUntil.Time()
	up, err = c.ExtendEvent(ctx, "month", "ops", asyncevent.ActionExtendEnd, newEnd)
	require.NoError(t, err)
	require.True(t, up.Applied, up.Reason)
	for _, raw := range asynceventtest.ScanTable(t, c.TableName()) {
		var lock asyncevent.IdempotencyLock
		require.NoError(t, attributevalue.UnmarshalMap(raw, &lock))
		if lock.EntityType != entity.Idempotency {
			continue
		}
		assert.GreaterOrEqual(t, lock.TTL, newEnd.Unix(),
			"the lock of %s expires at %s, before the event's extended end %s: TTL deletes it while the event is open",
			lock.UserID, time.Unix(lock.TTL, 0).UTC(), newEnd)
	}
}
