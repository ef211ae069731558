package asyncevent_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// Seats added after a sell-out go to the event's pool, and the next requests in queue
// order win them, on a worker that remembers the sell-out: its look at each loser's
// home shard tells it the pool changed. Exactly N, N being the capacity plus the seats
// added.
func TestSeatsAddedAfterTheSellOutGoToTheNextRequests(t *testing.T) {
	for _, shards := range []int{1, 3} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			clock := asynceventtest.NewClock(t0)
			c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now, StatusLog: true})
			_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "more", EventType: asyncevent.FirstCome, CapacityTotal: 3, CapacityShards: shards})
			require.NoError(t, err)
			q := queue.NewMemory(queue.MemoryOptions{})
			proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
			first := submitAll(t, c, clock, q, "more", 8)
			drain(t, proc, q)
			got := byStatus(t, c, first)
			require.Len(t, got[asyncevent.StatusSucceeded], 3)

			up, err := c.AddCapacity(ctx, "more", asyncevent.AddCapacityInput{Seats: 2, Actor: "ops"})
			require.NoError(t, err)
			require.True(t, up.Applied, up.Reason)
			assert.EqualValues(t, 5, up.Event.CapacityTotal)
			assert.EqualValues(t, 1, poolVersion(t, c, "more"))
			st, err := c.EventStats(ctx, "more")
			require.NoError(t, err)
			assert.EqualValues(t, 0, st.CapacityRemaining, "the shards stay empty")
			assert.EqualValues(t, 2, st.PoolRemaining, "the seats wait on the pool")
			assert.EqualValues(t, 5, st.CapacityTotal)
			list, err := c.ListEvents(ctx, 0, "")
			require.NoError(t, err)
			require.Len(t, list.Events, 1)
			assert.EqualValues(t, 2, *list.Events[0].SeatsLeft, "the list counts the pool's seats as left")

			var later []string
			for i := range 5 {
				p, err := c.Submit(ctx, q, "more", fmt.Sprintf("later-%d", i))
				require.NoError(t, err)
				later = append(later, p.RequestID)
				clock.Advance(time.Millisecond)
			}
			drain(t, proc, q) // the processor that saw the sell-out
			got = byStatus(t, c, later)
			assert.Equal(t, later[:2], got[asyncevent.StatusSucceeded], "the next two in queue order win the added seats")
			assert.Equal(t, later[2:], got[asyncevent.StatusRejected])
			rep := asynceventtest.CheckEvent(t, c, "more", asynceventtest.CheckOptions{})
			assert.Equal(t, 5, rep.ByStatus[asyncevent.StatusSucceeded])
			st, err = c.EventStats(ctx, "more")
			require.NoError(t, err)
			assert.Zero(t, st.Fairness.Inversions, "a seat that reached the pool after the sell-out is no inversion")

			trail, err := c.ListAudit(ctx, "more")
			require.NoError(t, err)
			require.Len(t, trail, 1)
			assert.Equal(t, asyncevent.ActionAddCapacity, trail[0].Action)
		})
	}
}

// Seats added before the sell-out go onto the shards that still hold seats.
func TestSeatsAddedToTheShardsThatHoldSeats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "grow", EventType: asyncevent.FirstCome, CapacityTotal: 4, CapacityShards: 2})
	require.NoError(t, err)
	up, err := c.AddCapacity(ctx, "grow", asyncevent.AddCapacityInput{Seats: 6, Actor: "ops"})
	require.NoError(t, err)
	require.True(t, up.Applied, up.Reason)
	capacity, err := c.GetCapacity(ctx, "grow")
	require.NoError(t, err)
	assert.EqualValues(t, 10, capacity.CapacityTotal)
	assert.EqualValues(t, 10, capacity.CapacityRemaining)
	assert.EqualValues(t, 0, poolVersion(t, c, "grow"), "no seat on the pool")
	up, err = c.AddCapacity(ctx, "grow", asyncevent.AddCapacityInput{Seats: 1, Shard: new(1), Actor: "ops"})
	require.NoError(t, err)
	require.True(t, up.Applied)
	capacity, err = c.GetCapacity(ctx, "grow")
	require.NoError(t, err)
	assert.EqualValues(t, 6, capacity.Shards[1].CapacityTotal, "to the shard asked for")

	q := queue.NewMemory(queue.MemoryOptions{})
	ids := submitAll(t, c, clock, q, "grow", 14)
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)
	rep := asynceventtest.CheckEvent(t, c, "grow", asynceventtest.CheckOptions{})
	assert.Equal(t, 11, rep.ByStatus[asyncevent.StatusSucceeded])
	assert.Len(t, ids, 14)

	_, err = c.AddCapacity(ctx, "grow", asyncevent.AddCapacityInput{Seats: 0, Actor: "ops"})
	assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions)
	_, err = c.AddCapacity(ctx, "grow", asyncevent.AddCapacityInput{Seats: 1, Shard: new(5), Actor: "ops"})
	assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions)
	_, err = c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "lot", EventType: asyncevent.Lottery, WinnerCount: 1, LotteryCutoffAt: asyncevent.MillisOf(t0.Add(time.Hour))})
	require.NoError(t, err)
	up, err = c.AddCapacity(ctx, "lot", asyncevent.AddCapacityInput{Seats: 1, Actor: "ops"})
	require.NoError(t, err)
	assert.False(t, up.Applied)
}

// Seats added while workers take a spike, several times: no seat given twice, none
// lost, and the winners are the capacity plus the seats added.
func TestSeatsAddedDuringASpike(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTable(t)
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "spike", EventType: asyncevent.FirstCome, CapacityTotal: 40, CapacityShards: 4})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	w, err := asyncevent.NewWorker(c, q, asyncevent.WorkerOptions{Concurrency: 8, WaitTime: 20 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	added := 0
	for i := range 300 {
		_, err := c.Submit(ctx, q, "spike", fmt.Sprintf("u%03d", i))
		require.NoError(t, err)
		if i%60 == 30 {
			up, err := c.AddCapacity(ctx, "spike", asyncevent.AddCapacityInput{Seats: 10, Actor: "ops"})
			require.NoError(t, err)
			if up.Applied {
				added += 10
			}
		}
	}
	asynceventtest.WaitDrained(t, q, time.Minute)
	require.NoError(t, w.Stop(ctx))
	rep := asynceventtest.CheckEvent(t, c, "spike", asynceventtest.CheckOptions{})
	assert.Equal(t, 40+added, rep.ByStatus[asyncevent.StatusSucceeded], "every seat added was won: later requests came")
	assert.Positive(t, added)
}

// A cancelled seat goes back: to the next request of an event without holds, to the
// first of the waitlist of one with holds.
func TestCancelRequestGivesTheSeatBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "plain", EventType: asyncevent.FirstCome, CapacityTotal: 2, CapacityShards: 2})
	require.NoError(t, err)
	holdsEvent(t, c, "held", 2, 1, time.Hour, 0)
	q := queue.NewMemory(queue.MemoryOptions{})
	proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	plain := submitAll(t, c, clock, q, "plain", 3)
	held := submitAll(t, c, clock, q, "held", 4)
	drain(t, proc, q)

	up, err := c.CancelRequest(ctx, plain[0], asyncevent.CancelRequestInput{Actor: "ops"})
	require.NoError(t, err)
	require.True(t, up.Applied, up.Reason)
	r, err := c.GetRequest(ctx, plain[0])
	require.NoError(t, err)
	assert.Equal(t, asyncevent.ResultCancelled, r.ResultCode)
	up, err = c.CancelRequest(ctx, plain[0], asyncevent.CancelRequestInput{Actor: "ops"})
	require.NoError(t, err)
	assert.False(t, up.Applied, "once")
	up, err = c.CancelRequest(ctx, plain[2], asyncevent.CancelRequestInput{Actor: "ops"})
	require.NoError(t, err)
	assert.False(t, up.Applied, "a loser holds no seat")
	assert.Contains(t, up.Reason, "REJECTED")
	// The old message again gives nothing back to a shard.
	res := asynceventtest.Work(ctx, t, c, messageFor(t, c, plain[0], 2), asyncevent.ProcessOptions{})
	assert.Equal(t, asyncevent.OutcomeDuplicate, res.Kind)

	next, err := c.Submit(ctx, q, "plain", "next")
	require.NoError(t, err)
	drain(t, proc, q)
	r, err = c.GetRequest(ctx, next.RequestID)
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusSucceeded, r.Status, "the cancelled seat went to the next request")
	asynceventtest.CheckEvent(t, c, "plain", asynceventtest.CheckOptions{})

	tr, err := c.Confirm(ctx, held[0])
	require.NoError(t, err)
	require.True(t, tr.Applied)
	up, err = c.CancelRequest(ctx, held[0], asyncevent.CancelRequestInput{Actor: "ops"})
	require.NoError(t, err)
	require.True(t, up.Applied, up.Reason)
	up, err = c.CancelRequest(ctx, held[1], asyncevent.CancelRequestInput{Actor: "ops"})
	require.NoError(t, err)
	assert.Contains(t, up.Reason, "Release", "a HELD request is Release's")
	rep, err := c.SweepHolds(ctx, "held", asyncevent.HoldSweepOptions{})
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Served)
	got := byStatus(t, c, held)
	assert.Equal(t, []string{held[1], held[2]}, got[asyncevent.StatusHeld], "the cancelled seat went to the first of the waitlist")
	asynceventtest.CheckEvent(t, c, "held", asynceventtest.CheckOptions{})
}

// poolVersion reads an event's pool version, bookkeeping no caller's type carries.
func poolVersion(t *testing.T, c *asyncevent.Client, eventID string) int64 {
	t.Helper()
	b, err := asyncevent.ReadEventBookkeeping(context.Background(), c, eventID)
	require.NoError(t, err)
	return b.PoolVersion
}
