package asyncevent_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// holdsEvent creates a first-come event with holds of holdFor.
func holdsEvent(t *testing.T, c *asyncevent.Client, id string, capacity int64, shards int, holdFor time.Duration, endsAt asyncevent.EpochMillis) {
	t.Helper()
	_, err := c.CreateEvent(context.Background(), asyncevent.EventSettings{
		EventID: id, EventType: asyncevent.FirstCome, CapacityTotal: capacity, CapacityShards: shards,
		HoldFor: holdFor, EndsAt: endsAt,
	})
	require.NoError(t, err)
}

// submitAll submits one click per user, a millisecond apart, and returns the request
// IDs in queue order.
func submitAll(t *testing.T, c *asyncevent.Client, clock *asynceventtest.Clock, q queue.Queue, event string, users int) []string {
	t.Helper()
	ids := make([]string, users)
	for i := range ids {
		p, err := c.Submit(context.Background(), q, event, fmt.Sprintf("u%03d", i))
		require.NoError(t, err)
		ids[i] = p.RequestID
		clock.Advance(time.Millisecond)
	}
	return ids
}

// drain processes the queue's messages one at a time, in queue order, until it is
// empty.
func drain(t *testing.T, proc *asyncevent.Processor, q *queue.Memory) {
	t.Helper()
	ctx := context.Background()
	for {
		ds, err := q.Receive(ctx, 1, 0, time.Minute)
		require.NoError(t, err)
		if len(ds) == 0 {
			return
		}
		for _, d := range ds {
			// A message left unfinished comes back, as the queue would send it again:
			// a claim is sent once, so a connection the transport lost under it (seen
			// on loopback under load) is a RETRY, not a test failure. Twice is one too
			// many.
			for again := 0; ; again++ {
				o, done, _ := proc.ProcessOne(ctx, d, 0, nil)
				if done {
					break
				}
				require.Less(t, again, 2, "message %s not finished: %s %v (request %s)", d.MessageID, o.Kind, o.Err, o.RequestID)
				t.Logf("message %s comes back: %s %v", d.MessageID, o.Kind, o.Err)
				d.ReceiveCount++
			}
		}
	}
}

// byStatus returns the IDs of ids in each status, in the order of ids.
func byStatus(t *testing.T, c *asyncevent.Client, ids []string) map[asyncevent.Status][]string {
	t.Helper()
	out := map[asyncevent.Status][]string{}
	for _, id := range ids {
		r, err := c.GetRequest(context.Background(), id)
		require.NoError(t, err)
		out[r.Status] = append(out[r.Status], id)
	}
	return out
}

// A sale with holds, from the spike to the close: the first N requests hold a seat
// (HELD, with their expiry), the rest wait on the waitlist (WAITLISTED, in the one
// write that rejects a loser of an event without holds); some winners pay
// (SUCCEEDED), some give up (REJECTED_RELEASED), some let the hold lapse
// (REJECTED_HOLD_EXPIRED, by the sweep); each seat given back goes to the earliest
// waitlisted request, in queue order, HELD in turn; at the close the waitlist ends
// REJECTED_CAPACITY. The seats add up at every step.
func TestHoldsAndWaitlistFromSpikeToClose(t *testing.T) {
	for _, shards := range []int{1, 3} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			clock := asynceventtest.NewClock(t0)
			c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now, StatusLog: true})
			endsAt := asyncevent.MillisOf(t0.Add(time.Hour))
			holdsEvent(t, c, "sale", 9, shards, 10*time.Minute, endsAt)
			q := queue.NewMemory(queue.MemoryOptions{})
			ids := submitAll(t, c, clock, q, "sale", 30)
			proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
			drain(t, proc, q)

			got := byStatus(t, c, ids)
			require.Len(t, got[asyncevent.StatusHeld], 9)
			require.Len(t, got[asyncevent.StatusWaitlisted], 21)
			assert.Equal(t, ids[:9], got[asyncevent.StatusHeld], "processed in queue order: the first nine hold the seats")
			held, err := c.GetRequest(ctx, ids[0])
			require.NoError(t, err)
			assert.Equal(t, asyncevent.UIHeld, held.UIResult)
			assert.Equal(t, asyncevent.MillisOf(clock.Now().Add(10*time.Minute)), held.HoldExpiresAt, "held for HoldFor from its claim")
			w, err := c.GetRequest(ctx, ids[9])
			require.NoError(t, err)
			assert.Equal(t, asyncevent.UIWaitlisted, w.UIResult)
			asynceventtest.CheckEvent(t, c, "sale", asynceventtest.CheckOptions{})

			// Three pay, three give up, three let the hold lapse.
			for _, id := range ids[:3] {
				tr, err := c.Confirm(ctx, id)
				require.NoError(t, err)
				assert.True(t, tr.Applied)
			}
			for _, id := range ids[3:6] {
				tr, err := c.Release(ctx, id)
				require.NoError(t, err)
				assert.True(t, tr.Applied)
			}
			rep, err := c.SweepHolds(ctx, "sale", asyncevent.HoldSweepOptions{})
			require.NoError(t, err)
			assert.Equal(t, 0, rep.Expired, "no hold ran out yet")
			assert.Equal(t, 3, rep.Served, "the released seats went to the waitlist")
			asynceventtest.CheckEvent(t, c, "sale", asynceventtest.CheckOptions{})

			clock.Advance(10*time.Minute + time.Second)
			rep, err = c.SweepHolds(ctx, "sale", asyncevent.HoldSweepOptions{})
			require.NoError(t, err)
			// The three that lapsed, and the three served before them, whose holds
			// began within the same second as theirs.
			assert.Equal(t, 6, rep.Expired)
			assert.Equal(t, 6, rep.Served)
			assert.Equal(t, 0, rep.Cleared, "the confirmed holds' records went with their confirm")
			asynceventtest.CheckEvent(t, c, "sale", asynceventtest.CheckOptions{})

			got = byStatus(t, c, ids)
			assert.Equal(t, ids[:3], got[asyncevent.StatusSucceeded])
			assert.Equal(t, ids[12:18], got[asyncevent.StatusHeld], "the seats went to the earliest waitlisted, in queue order")
			assert.Equal(t, ids[18:], got[asyncevent.StatusWaitlisted])
			codes := map[asyncevent.ResultCode]int{}
			for _, id := range got[asyncevent.StatusRejected] {
				r, err := c.GetRequest(ctx, id)
				require.NoError(t, err)
				codes[r.ResultCode]++
			}
			assert.Equal(t, map[asyncevent.ResultCode]int{asyncevent.ResultReleased: 3, asyncevent.ResultHoldExpired: 6}, codes)

			// Confirm after the expiry is too late, with a clear outcome.
			tr, err := c.Confirm(ctx, ids[6])
			require.NoError(t, err)
			assert.False(t, tr.Applied)
			assert.Equal(t, asyncevent.ResultHoldExpired, tr.Current.ResultCode)

			// The close: the waitlist ends; the holds still running stay until paid or lapsed.
			clock.Advance(time.Hour)
			rep, err = c.SweepHolds(ctx, "sale", asyncevent.HoldSweepOptions{})
			require.NoError(t, err)
			assert.Equal(t, 6, rep.Expired, "the served holds ran out meanwhile")
			assert.Equal(t, 12, rep.Closed)
			assert.Equal(t, 0, rep.Served, "closed: a seat given back stays given back")
			assert.Equal(t, int64(0), rep.Waiting)
			got = byStatus(t, c, ids)
			assert.Empty(t, got[asyncevent.StatusWaitlisted])
			assert.Len(t, got[asyncevent.StatusSucceeded], 3)
			asynceventtest.CheckEvent(t, c, "sale", asynceventtest.CheckOptions{})
		})
	}
}

// A confirm racing the expiry: each hold ends once, either SUCCEEDED (the confirm
// came first) or REJECTED_HOLD_EXPIRED (the sweep did), never both, and the loser of
// the race sees the winner's outcome. The confirming client's clock is a second
// before the holds run out and the sweeper's a second after, so both conditions hold
// on their own: only the request's status decides.
func TestConfirmRacingTheExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "race", 40, 2, time.Minute, 0)
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := submitAll(t, c, clock, q, "race", 40)
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)

	late := asynceventtest.NewClock(clock.Now().Add(time.Minute + time.Second))
	early := asynceventtest.NewClock(clock.Now().Add(time.Minute - time.Second))
	sweeper, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: late.Now})
	require.NoError(t, err)
	payer, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: early.Now})
	require.NoError(t, err)

	confirmed := make([]asyncevent.Transition, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			tr, err := payer.Confirm(ctx, id)
			assert.NoError(t, err)
			confirmed[i] = tr
		})
	}
	var expired int
	wg.Go(func() {
		for range 3 {
			rep, err := sweeper.SweepHolds(ctx, "race", asyncevent.HoldSweepOptions{})
			assert.NoError(t, err)
			expired += rep.Expired
		}
	})
	wg.Wait()

	won := 0
	for i, id := range ids {
		r, err := c.GetRequest(ctx, id)
		require.NoError(t, err)
		switch {
		case confirmed[i].Applied:
			won++
			assert.Equal(t, asyncevent.StatusSucceeded, r.Status)
		default:
			assert.Equal(t, asyncevent.ResultHoldExpired, r.ResultCode, "the confirm lost: the sweep expired it")
			require.NotNil(t, confirmed[i].Current)
			assert.Equal(t, asyncevent.StatusRejected, confirmed[i].Current.Status, "the confirm sees the expiry")
		}
	}
	assert.Equal(t, len(ids), won+expired, "every hold ended once")
	asynceventtest.CheckEvent(t, c, "race", asynceventtest.CheckOptions{})
}

// A release and a confirm of the same hold, at once: one wins; the seat is given back
// only when the release did.
func TestReleaseRacingConfirm(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "both", 30, 1, time.Minute, 0)
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := submitAll(t, c, clock, q, "both", 30)
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)

	var wg sync.WaitGroup
	released := make([]bool, len(ids))
	paid := make([]bool, len(ids))
	for i, id := range ids {
		wg.Go(func() {
			tr, err := c.Release(ctx, id)
			assert.NoError(t, err)
			released[i] = tr.Applied
		})
		wg.Go(func() {
			tr, err := c.Confirm(ctx, id)
			assert.NoError(t, err)
			paid[i] = tr.Applied
		})
	}
	wg.Wait()
	for i := range ids {
		assert.True(t, released[i] != paid[i], "request %d: exactly one of the release and the confirm applies", i)
	}
	asynceventtest.CheckEvent(t, c, "both", asynceventtest.CheckOptions{})
}

// The hold sweep's writes under faults: a transaction applied whose answer is lost,
// refusals, throttles. Run again and again until it has nothing left to do, it ends
// every hold once and hands each seat on once: the seats add up.
func TestHoldSweepUnderFaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "chaos", 10, 2, time.Minute, 0)
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := submitAll(t, c, clock, q, "chaos", 50)
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)

	faulty := asynceventtest.NewFaultyDynamoDB(asynceventtest.DynamoDB(t), asynceventtest.FaultPlan{
		Seed: 7, FailRate: 0.05, LoseRate: 0.1, ThrottleRate: 0.05,
	})
	fc, err := asyncevent.New(faulty, asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	// Half the winners give up, through the faults, retried until they get an answer.
	for _, id := range ids[:5] {
		for {
			if _, err := fc.Release(ctx, id); err == nil {
				break
			}
		}
	}
	// Three rounds: every hold runs out in turn, the waitlist is served again.
	for range 3 {
		clock.Advance(time.Minute + time.Second)
		for range 200 {
			rep, err := fc.SweepHolds(ctx, "chaos", asyncevent.HoldSweepOptions{})
			if err == nil && !rep.More && rep.Expired+rep.Served+rep.Cleared == 0 {
				break
			}
		}
		asynceventtest.CheckEvent(t, c, "chaos", asynceventtest.CheckOptions{})
	}
	counts := faulty.Counts()
	assert.Positive(t, counts.Lost, "some answers were lost")
	got := byStatus(t, c, ids)
	assert.Len(t, got[asyncevent.StatusHeld], 10, "every seat is held again, by the next of the waitlist")
	waitlist := got[asyncevent.StatusWaitlisted]
	assert.True(t, sort.SliceIsSorted(waitlist, func(i, j int) bool {
		return slices.Index(ids, waitlist[i]) < slices.Index(ids, waitlist[j])
	}))
	assert.Equal(t, ids[len(ids)-len(waitlist):], waitlist, "the waitlist was served in queue order: the latest still wait")
}
