package asyncevent_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

// waitlistPlaces flushes the counts writer holds and returns the place on the
// waitlist GetRequest gives each request, read by a client of its own on the same
// table and clock (a poll on another node, its copy of the counts fresh): -1 for a
// request that is not WAITLISTED, which must have no place.
func waitlistPlaces(t *testing.T, writer *asyncevent.Client, clock *asynceventtest.Clock, ids []string) []int64 {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, writer.FlushProgress(ctx))
	reader, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: writer.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	places := make([]int64, len(ids))
	for i, id := range ids {
		r, err := reader.GetRequest(ctx, id)
		require.NoError(t, err)
		places[i] = -1
		if r.Status != asyncevent.StatusWaitlisted {
			assert.Nil(t, r.Waitlist, "%s is %s: no place on the waitlist", id, r.Status)
			continue
		}
		if assert.NotNil(t, r.Waitlist, "%s is WAITLISTED", id) {
			places[i] = r.Waitlist.Ahead
			cfg, err := reader.GetEvent(ctx, r.EventID)
			require.NoError(t, err)
			assert.Equal(t, cfg.EndsAt, r.Waitlist.EndsAt, "the waitlist ends with the event")
		}
	}
	return places
}

// A WAITLISTED request learns how many wait before it on the waitlist, counted by
// every node that waitlists, releases, serves or closes, and its place moves up as
// those before it leave; the waitlist ends at the event's end. With the status log
// the waitlisting write is a transaction, whose request is read back for the count.
func TestWaitlistPlace(t *testing.T) {
	for _, statusLog := range []bool{false, true} {
		name := "without the status log"
		if statusLog {
			name = "with the status log"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			ends := t0.Add(time.Hour)
			b := setupHolds(t, holdSale{event: holdsOf("sale", 1, 1, 10*time.Minute, asyncevent.MillisOf(ends)), statusLog: statusLog})
			var ids []string
			for _, u := range clickers(5) {
				ids = append(ids, b.submit(t, u)...)
				b.clock.Advance(100 * time.Millisecond) // a tenth of a second apart: places exact
			}
			b.drain(t)
			require.Equal(t, []int64{-1, 0, 1, 2, 3}, waitlistPlaces(t, b.c, b.clock, ids), "one HELD, then the waitlist in queue order")

			// Another node releases the second of the waitlist: those after it move up.
			other := b.client(t, asynceventtest.DynamoDB(t), asyncevent.Options{Clock: b.clock.Now, StatusLog: statusLog})
			_, err := other.Release(ctx, ids[2])
			require.NoError(t, err)
			require.NoError(t, other.FlushProgress(ctx))
			assert.Equal(t, []int64{-1, 0, -1, 1, 2}, waitlistPlaces(t, b.c, b.clock, ids))

			// The hold is released and the sweep serves the first of the waitlist.
			b.released(t, ids[0])
			rep := b.sweep(t, b.c, asyncevent.HoldSweepOptions{})
			require.Equal(t, 1, rep.Served)
			assert.Equal(t, []int64{-1, -1, -1, 0, 1}, waitlistPlaces(t, b.c, b.clock, ids))

			// The event ends: the sweep closes the waitlist, and no place is left.
			b.clock.Advance(ends.Sub(b.clock.Now()) + time.Second)
			rep = b.sweep(t, b.c, asyncevent.HoldSweepOptions{})
			require.Equal(t, 2, rep.Closed)
			for _, id := range ids[3:] {
				r := b.request(t, id)
				assert.Equal(t, asyncevent.ResultRejectedCapacity, r.ResultCode, "closed with the event")
			}
			assert.Equal(t, []int64{-1, -1, -1, -1, -1}, waitlistPlaces(t, b.c, b.clock, ids))
		})
	}

	t.Run("an event with holds needs an end", func(t *testing.T) {
		t.Parallel()
		b := setupHolds(t, holdSale{})
		_, err := b.c.CreateEvent(context.Background(), asyncevent.EventSettings{EventID: "endless", EventType: asyncevent.FirstCome,
			CapacityTotal: 1, HoldFor: 10 * time.Minute})
		require.ErrorIs(t, err, asyncevent.ErrInvalidEvent)
		assert.Contains(t, err.Error(), "needs endsAt")
	})
}
