package asyncevent_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// holdMessage is the message of a request of an event with holds of holdFor: the
// same as without holds (the worker learns the holds from the home shard or the
// event's config, never from the message).
func holdMessage(t *testing.T, c *asyncevent.Client, requestID string, n int, _ time.Duration) asyncevent.Message {
	t.Helper()
	return messageFor(t, c, requestID, n)
}

// A message delivered again after its request's hold was released (its seat now on
// the event's Returns item) is a duplicate: its seat token on the home shard finds the
// request no longer HELD, and no seat goes back to the shard, which would sell it
// twice.
func TestRedeliveryAfterReleaseGivesNothingBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "again", 2, 1, time.Minute, 0)
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := submitAll(t, c, clock, q, "again", 4)
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)

	tr, err := c.Release(ctx, ids[0])
	require.NoError(t, err)
	require.True(t, tr.Applied)
	for _, handler := range []asyncevent.Handler{nil, asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error { return nil })} {
		res := asynceventtest.Work(ctx, t, c, holdMessage(t, c, ids[0], 1, time.Minute), asyncevent.ProcessOptions{Handler: handler})
		assert.Equal(t, asyncevent.OutcomeDuplicate, res.Kind)
		res = asynceventtest.Work(ctx, t, c, holdMessage(t, c, ids[1], 1, time.Minute), asyncevent.ProcessOptions{Handler: handler})
		assert.Equal(t, asyncevent.OutcomeDuplicate, res.Kind, "a HELD request's message again")
		res = asynceventtest.Work(ctx, t, c, holdMessage(t, c, ids[3], 1, time.Minute), asyncevent.ProcessOptions{Handler: handler})
		assert.Equal(t, asyncevent.OutcomeDuplicate, res.Kind, "a WAITLISTED request's message again")
	}
	capacity, err := c.GetCapacity(ctx, "again")
	require.NoError(t, err)
	assert.Zero(t, capacity.CapacityRemaining, "the shard stays empty: the released seat is the waitlist's")
	asynceventtest.CheckEvent(t, c, "again", asynceventtest.CheckOptions{Unsettled: true}) // the seat waits for the sweep

	rep, err := c.SweepHolds(ctx, "again", asyncevent.HoldSweepOptions{})
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Served)
	got := byStatus(t, c, ids)
	assert.Equal(t, []string{ids[1], ids[2]}, got[asyncevent.StatusHeld])
	asynceventtest.CheckEvent(t, c, "again", asynceventtest.CheckOptions{})
}

// A message whose claim and Hold item landed but whose HELD write did not (the
// worker died between them) is claimed again by its next delivery, which finds its
// seat, records a new Hold item and binds it: the first Hold item, no longer the
// request's hold, is cleared by the sweep, not taken for an expiry.
func TestCrashBetweenHoldRecordAndHeld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "crash", 3, 1, time.Minute, 0)
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := submitAll(t, c, clock, q, "crash", 3)

	faulty := asynceventtest.NewFaultyDynamoDB(asynceventtest.DynamoDB(t), asynceventtest.FaultPlan{
		FailRate: 1, Operations: []string{"UpdateItem"}, KeyPrefix: "REQ#",
	})
	fc, err := asyncevent.New(faulty, asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	res := asynceventtest.Work(ctx, t, fc, holdMessage(t, c, ids[0], 1, time.Minute), asyncevent.ProcessOptions{})
	require.True(t, res.Redeliver, "the HELD write failed: the message comes back")
	r, err := c.GetRequest(ctx, ids[0])
	require.NoError(t, err)
	require.Equal(t, asyncevent.StatusQueued, r.Status)

	clock.Advance(10 * time.Second)
	res = asynceventtest.Work(ctx, t, c, holdMessage(t, c, ids[0], 1, time.Minute), asyncevent.ProcessOptions{})
	assert.Equal(t, asyncevent.OutcomeHeld, res.Kind)
	r, err = c.GetRequest(ctx, ids[0])
	require.NoError(t, err)
	assert.Equal(t, asyncevent.MillisOf(clock.Now().Add(time.Minute)), r.HoldExpiresAt, "the hold of the delivery that bound it")
	asynceventtest.CheckEvent(t, c, "crash", asynceventtest.CheckOptions{Unsettled: true})

	clock.Advance(55 * time.Second) // the first Hold item ran out, the hold did not
	rep, err := c.SweepHolds(ctx, "crash", asyncevent.HoldSweepOptions{})
	require.NoError(t, err)
	assert.Equal(t, 0, rep.Expired)
	assert.Equal(t, 1, rep.Cleared)
	clock.Advance(10 * time.Second)
	rep, err = c.SweepHolds(ctx, "crash", asyncevent.HoldSweepOptions{})
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Expired)
	asynceventtest.CheckEvent(t, c, "crash", asynceventtest.CheckOptions{Unsettled: true})
}

// With a Handler the request goes the leased way: HELD under its lease, and a loser
// of the sold-out event WAITLISTED under its lease.
func TestHoldsUnderLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now, StatusLog: true})
	holdsEvent(t, c, "leased", 2, 1, time.Minute, 0)
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := submitAll(t, c, clock, q, "leased", 5)
	var handled atomic.Int32
	handler := asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error {
		handled.Add(1)
		return nil
	})
	var outcomes []asyncevent.OutcomeKind
	for range ids {
		ds, err := q.Receive(ctx, 1, 0, time.Minute)
		require.NoError(t, err)
		require.Len(t, ds, 1)
		res := asynceventtest.WorkDelivery(ctx, t, c, ds[0], asyncevent.ProcessOptions{Handler: handler})
		outcomes = append(outcomes, res.Kind)
	}
	assert.Equal(t, []asyncevent.OutcomeKind{asyncevent.OutcomeHeld, asyncevent.OutcomeHeld,
		asyncevent.OutcomeWaitlisted, asyncevent.OutcomeWaitlisted, asyncevent.OutcomeWaitlisted}, outcomes)
	assert.EqualValues(t, 5, handled.Load())
	got := byStatus(t, c, ids)
	assert.Equal(t, ids[:2], got[asyncevent.StatusHeld])
	assert.Equal(t, ids[2:], got[asyncevent.StatusWaitlisted])
	asynceventtest.CheckEvent(t, c, "leased", asynceventtest.CheckOptions{})
}

// A Worker sweeps the holds of the events it meets: a seat given back reaches the
// first of the waitlist without anyone calling SweepHolds, and a hold that ran out
// ends. The worker's sweeps and the hold's 10 s run InBubble, at no wall time.
func TestWorkerSweepsHolds(t *testing.T) {
	t.Parallel()
	asynceventtest.InBubble(t, func(t *testing.T) {
		ctx := context.Background()
		c := asynceventtest.NewTable(t)
		holdsEvent(t, c, "live", 2, 1, 10*time.Second, 0)
		q := queue.NewMemory(queue.MemoryOptions{})
		var ids []string
		for _, u := range []string{"a", "b", "c", "d"} {
			p, err := c.Submit(ctx, q, "live", u)
			require.NoError(t, err)
			ids = append(ids, p.RequestID)
			time.Sleep(2 * time.Millisecond) // queue order
		}
		w, err := asyncevent.NewWorker(c, q, asyncevent.WorkerOptions{Concurrency: 1, WaitTime: 50 * time.Millisecond, HoldSweepEvery: 100 * time.Millisecond})
		require.NoError(t, err)
		require.NoError(t, w.Start(ctx))
		defer func() { require.NoError(t, w.Stop(ctx)) }()

		status := func(id string) asyncevent.Status {
			r, err := c.GetRequest(ctx, id)
			require.NoError(t, err)
			return r.Status
		}
		require.Eventually(t, func() bool { return status(ids[3]) == asyncevent.StatusWaitlisted }, 10*time.Second, 20*time.Millisecond)
		tr, err := c.Release(ctx, ids[0])
		require.NoError(t, err)
		require.True(t, tr.Applied)
		require.Eventually(t, func() bool { return status(ids[2]) == asyncevent.StatusHeld }, 5*time.Second, 20*time.Millisecond,
			"the released seat reached the first of the waitlist")
		assert.Equal(t, asyncevent.StatusWaitlisted, status(ids[3]))
		// b's hold runs out 10 s after its claim: the worker expires it and d gets the seat.
		require.Eventually(t, func() bool { return status(ids[3]) == asyncevent.StatusHeld }, 20*time.Second, 50*time.Millisecond)
		r, err := c.GetRequest(ctx, ids[1])
		require.NoError(t, err)
		assert.Equal(t, asyncevent.ResultHoldExpired, r.ResultCode)
		asynceventtest.CheckEvent(t, c, "live", asynceventtest.CheckOptions{})
	})
}

// The sweep's walk of the waitlist starts, the next time, past the requests it found
// settled for good (final or HELD, queued over a minute before): a pass reads the
// waitlist's head, not every winner ahead of it again.
func TestWaitlistWalkSkipsTheSettled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "long", 505, 1, time.Hour, 0)
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := submitAll(t, c, clock, q, "long", 515)
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)
	clock.Advance(2 * time.Minute)

	counter := asynceventtest.NewCounter(asynceventtest.DynamoDB(t))
	sc, err := asyncevent.New(counter, asyncevent.Options{ProgressEvery: -1, TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	pass := func(release string) float64 {
		tr, err := c.Release(ctx, release)
		require.NoError(t, err)
		require.True(t, tr.Applied)
		before := counter.Snapshot()
		rep, err := sc.SweepHolds(ctx, "long", asyncevent.HoldSweepOptions{})
		require.NoError(t, err)
		require.Equal(t, 1, rep.Served)
		return counter.Snapshot().Sub(before).RCU
	}
	first := pass(ids[0])
	second := pass(ids[1])
	assert.Less(t, second, first/4, "the second pass reads past the 500 settled requests it met (%.1f RCU against %.1f)", second, first)
	got := byStatus(t, c, ids)
	assert.Equal(t, ids[505:507], got[asyncevent.StatusHeld][503:], "served in queue order")
	asynceventtest.CheckEvent(t, c, "long", asynceventtest.CheckOptions{Unsettled: true})
}
