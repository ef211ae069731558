package asyncevent_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/queue"
)

// The rules of hold.go's rows, a case each, where a write lands after another
// changed its item.
func TestHoldRules(t *testing.T) {
	t.Parallel()
	// A release read the request HELD, and its write lands after the confirm: the
	// "hold released" row leaves HELD only, so the paid seat stays the buyer's and
	// nothing is given back to the waitlist.
	t.Run("a release landing after the confirm", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		clock := asynceventtest.NewClock(t0)
		hb := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(t))
		c := asynceventtest.NewTableOn(t, hb, asyncevent.Options{Clock: clock.Now})
		holdsEvent(t, c, "pay", 1, 1, time.Minute, 0)
		q := queue.NewMemory(queue.MemoryOptions{})
		id := submitAll(t, c, clock, q, "pay", 1)[0]
		drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)
		r, err := c.GetRequest(ctx, id)
		require.NoError(t, err)
		require.Equal(t, asyncevent.StatusHeld, r.Status)

		held := hb.Hold(func(op string, _ any) bool { return op == "TransactWriteItems" }, 1, asynceventtest.CallerWaits)
		released := make(chan asyncevent.Transition, 1)
		go func() {
			tr, err := c.Release(ctx, id)
			assert.NoError(t, err)
			released <- tr
		}()
		require.NoError(t, held.Caught(ctx))
		paid, err := c.Confirm(ctx, id)
		require.NoError(t, err)
		require.True(t, paid.Applied)
		require.NoError(t, held.Land(ctx))

		assert.False(t, (<-released).Applied, "the release of a confirmed request")
		r, err = c.GetRequest(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, asyncevent.StatusSucceeded, r.Status)
		asynceventtest.CheckEvent(t, c, "pay", asynceventtest.CheckOptions{})
	})
}

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

// submitClicks submits one click per user, a millisecond apart, and returns the
// request IDs in queue order.
func submitClicks(t *testing.T, c *asyncevent.Client, clock *asynceventtest.Clock, q queue.Queue, event string, users []string) []string {
	t.Helper()
	ids := make([]string, len(users))
	for i, u := range users {
		p, err := c.Submit(context.Background(), q, event, u)
		require.NoError(t, err)
		ids[i] = p.RequestID
		clock.Advance(time.Millisecond)
	}
	return ids
}

func userNames(prefix string, from, n int) []string {
	us := make([]string, n)
	for i := range us {
		us[i] = fmt.Sprintf("%s%04d", prefix, from+i)
	}
	return us
}

// holdItemsOf scans the table for the Hold items of an event: request ID → the
// expiries its Hold items record.
func holdItemsOf(t *testing.T, c *asyncevent.Client, eventID string) map[string][]asyncevent.EpochMillis {
	t.Helper()
	out := map[string][]asyncevent.EpochMillis{}
	for _, raw := range asynceventtest.ScanTable(t, c.TableName()) {
		var h struct {
			PK         string
			EntityType entity.Type            `dynamodbav:"entityType"`
			EventID    string                 `dynamodbav:"eventId"`
			RequestID  string                 `dynamodbav:"requestId"`
			ExpiresAt  asyncevent.EpochMillis `dynamodbav:"expiresAt"`
		}
		require.NoError(t, attributevalue.UnmarshalMap(raw, &h))
		if h.EntityType == entity.Hold && h.EventID == eventID {
			out[h.RequestID] = append(out[h.RequestID], h.ExpiresAt)
		}
	}
	return out
}

// requireHoldItemForEveryHeld fails the test for each HELD request of ids without a
// Hold item at its holdExpiresAt: the sweep would never find it.
func requireHoldItemForEveryHeld(t *testing.T, c *asyncevent.Client, eventID string, ids []string) {
	t.Helper()
	holds := holdItemsOf(t, c, eventID)
	for _, id := range ids {
		r, err := c.GetRequest(context.Background(), id)
		require.NoError(t, err)
		if r.Status != asyncevent.StatusHeld {
			continue
		}
		found := false
		for _, at := range holds[id] {
			found = found || at == r.HoldExpiresAt
		}
		assert.True(t, found, "HELD request %s (expires %d) has no Hold item at its expiry (its Hold items: %v)", id, r.HoldExpiresAt, holds[id])
	}
}

// The waitlist walk's remembered starting point (Client.waitFrom) is a
// listing cursor, and for an event with index shards that cursor records the shards
// the listing had read to their end ("ended"). A walk that starts from it never
// queries those shards again, so a request put on one of them later, and WAITLISTED,
// is never seen by this client's sweeps: it is never served while seats wait on the
// Returns item, later requests on other shards are served before it (queue order
// broken), and at the close it is never ended REJECTED_CAPACITY.
func TestWaitlistWalkFrontierSkipsIndexShardsThatEnded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	endsAt := asyncevent.MillisOf(t0.Add(time.Hour))
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{
		EventID: "shardwalk", EventType: asyncevent.FirstCome, CapacityTotal: 500, IndexShards: 8,
		HoldFor: time.Hour, EndsAt: endsAt,
	})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	ids := submitClicks(t, c, clock, q, "shardwalk", userNames("a", 0, 502))
	drain(t, proc, q)
	got := byStatus(t, c, ids)
	require.Len(t, got[asyncevent.StatusHeld], 500)
	require.Equal(t, ids[500:], got[asyncevent.StatusWaitlisted])

	// Two minutes on, the first 500 are settled: a pass walks past them.
	clock.Advance(2 * time.Minute)
	sweeper, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	tr, err := c.Release(ctx, ids[0])
	require.NoError(t, err)
	require.True(t, tr.Applied)
	rep, err := sweeper.SweepHolds(ctx, "shardwalk", asyncevent.HoldSweepOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Served)

	// More people come, and wait (sold out).
	late := submitClicks(t, c, clock, q, "shardwalk", userNames("b", 0, 16))
	drain(t, proc, q)
	got = byStatus(t, c, late)
	require.Len(t, got[asyncevent.StatusWaitlisted], 16)

	// 17 holds are released: 17 seats for the 17 waiting.
	for _, id := range ids[1:18] {
		tr, err := c.Release(ctx, id)
		require.NoError(t, err)
		require.True(t, tr.Applied)
	}
	for range 5 {
		rep, err = sweeper.SweepHolds(ctx, "shardwalk", asyncevent.HoldSweepOptions{})
		require.NoError(t, err)
	}
	waiting := append([]string{ids[501]}, late...)
	got = byStatus(t, c, waiting)
	assert.Empty(t, got[asyncevent.StatusWaitlisted], "17 seats given back, 17 waiting: every one of them is served (%d seats still wait on the Returns item)", rep.Waiting)
	if len(got[asyncevent.StatusWaitlisted]) > 0 && len(got[asyncevent.StatusHeld]) > 0 {
		firstWaiting := indexOf(waiting, got[asyncevent.StatusWaitlisted][0])
		lastServed := indexOf(waiting, got[asyncevent.StatusHeld][len(got[asyncevent.StatusHeld])-1])
		assert.Less(t, lastServed, firstWaiting, "queue order: a request queued after one still waiting was served")
	}

	// The close: the waitlist must end.
	clock.Advance(time.Hour)
	for range 3 {
		_, err = sweeper.SweepHolds(ctx, "shardwalk", asyncevent.HoldSweepOptions{})
		require.NoError(t, err)
	}
	got = byStatus(t, c, waiting)
	assert.Empty(t, got[asyncevent.StatusWaitlisted], "after the close no request is left WAITLISTED")
	asynceventtest.CheckEvent(t, c, "shardwalk", asynceventtest.CheckOptions{})
}

// A worker that has no copy of the event's config trusts the message's
// holdForMillis. The event's config is read during the home claim (freshEvent), but
// only capacityShards is checked against it. A message that says nothing of holds
// (holdForMillis 0 with capacityShards: an ingest of a version before holds, during a
// rolling upgrade) makes the winner of an event with holds SUCCEEDED at once, unpaid;
// one with another holdForMillis holds the seat for the message's time, not the
// event's; and one that claims holds for an event without them leaves a HELD request
// that nothing ever ends (SweepHolds refuses an event without holds).
func TestFreshWorkerTrustsTheMessagesHoldForMillis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "trust", 5, 1, 10*time.Minute, 0)
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "plain", EventType: asyncevent.FirstCome, CapacityTotal: 5})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	withHolds := submitClicks(t, c, clock, q, "trust", userNames("t", 0, 2))
	without := submitClicks(t, c, clock, q, "plain", userNames("p", 0, 1))

	fresh := func() *asyncevent.Client { // a worker that just started: no cached configs
		fc, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
		require.NoError(t, err)
		return fc
	}

	t.Run("no holdForMillis on an event with holds", func(t *testing.T) {
		m := holdMessage(t, c, withHolds[0], 1, 0)
		res := asynceventtest.Work(ctx, t, fresh(), m, asyncevent.ProcessOptions{})
		r, err := c.GetRequest(ctx, withHolds[0])
		require.NoError(t, err)
		assert.Equal(t, asyncevent.StatusHeld, r.Status, "the event holds its winners until paid (outcome %s)", res.Kind)
	})
	t.Run("another holdForMillis", func(t *testing.T) {
		m := holdMessage(t, c, withHolds[1], 1, asyncevent.MinHoldFor)
		res := asynceventtest.Work(ctx, t, fresh(), m, asyncevent.ProcessOptions{})
		r, err := c.GetRequest(ctx, withHolds[1])
		require.NoError(t, err)
		if r.Status == asyncevent.StatusHeld {
			assert.Equal(t, asyncevent.MillisOf(clock.Now().Add(10*time.Minute)), r.HoldExpiresAt,
				"held for the event's HoldFor, not the message's (outcome %s)", res.Kind)
		}
	})
	t.Run("holdForMillis on an event without holds", func(t *testing.T) {
		m := holdMessage(t, c, without[0], 1, time.Minute)
		res := asynceventtest.Work(ctx, t, fresh(), m, asyncevent.ProcessOptions{})
		r, err := c.GetRequest(ctx, without[0])
		require.NoError(t, err)
		assert.NotEqual(t, asyncevent.StatusHeld, r.Status, "an event without holds has no HELD request (outcome %s)", res.Kind)
		if r.Status == asyncevent.StatusHeld {
			clock.Advance(2 * time.Minute)
			_, err := c.SweepHolds(ctx, "plain", asyncevent.HoldSweepOptions{})
			assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions, "and no sweep will ever end that hold")
		}
	})
}

// HoldSweepOptions.MaxWrites "bounds the requests one call moves", but the
// expiry step sets the Query's Limit from the budget once, before the first page:
// when a page holds Hold items that cost no budget (a request still being bound, a
// stray record), the next page is read with the first page's Limit and every hold on
// it is ended, past MaxWrites.
func TestHoldSweepExpiresMoreThanMaxWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "budget", 4, 1, time.Minute, 0)
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := submitClicks(t, c, clock, q, "budget", userNames("m", 0, 4))

	// The first request's worker records its Hold item, then its HELD write fails: a
	// Hold item whose request is not HELD (yet), the earliest to run out.
	faulty := asynceventtest.NewFaultyDynamoDB(asynceventtest.DynamoDB(t), asynceventtest.FaultPlan{
		FailRate: 1, Operations: []string{"UpdateItem"}, KeyPrefix: "REQ#",
	})
	fc, err := asyncevent.New(faulty, asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	res := asynceventtest.Work(ctx, t, fc, holdMessage(t, c, ids[0], 1, time.Minute), asyncevent.ProcessOptions{})
	require.True(t, res.Redeliver)
	for _, id := range ids[1:] {
		clock.Advance(time.Millisecond)
		res := asynceventtest.Work(ctx, t, c, holdMessage(t, c, id, 1, time.Minute), asyncevent.ProcessOptions{})
		require.Equal(t, asyncevent.OutcomeHeld, res.Kind)
	}

	clock.Advance(2 * time.Minute)
	rep, err := c.SweepHolds(ctx, "budget", asyncevent.HoldSweepOptions{MaxWrites: 2})
	require.NoError(t, err)
	assert.LessOrEqual(t, rep.Expired+rep.Served+rep.Closed, 2, "MaxWrites 2 bounds the requests one pass moves: %+v", *rep)
}

// PROBLEM (liveness, by design but unguarded): a Worker sweeps only the events whose
// messages it has processed since it started. Once the spike's messages are all
// processed, a restarted worker fleet (a deploy, a scale-in and out) never sweeps the
// event again: holds that run out are never expired, the waitlist is never served
// and never closed, unless an operator runs the CLI or lists the event in the
// scheduled function's HoldEvents. (The workers' sweeps and the hold's 10 s run
// InBubble, at no wall time.)
func TestRestartedWorkerNeverSweepsAnEventItDidNotMeet(t *testing.T) {
	t.Parallel()
	asynceventtest.InBubble(t, func(t *testing.T) {
		ctx := context.Background()
		c := asynceventtest.NewTable(t)
		holdsEvent(t, c, "restart", 1, 1, asyncevent.MinHoldFor, 0)
		q := queue.NewMemory(queue.MemoryOptions{})
		var ids []string
		for _, u := range []string{"a", "b"} {
			p, err := c.Submit(ctx, q, "restart", u)
			require.NoError(t, err)
			ids = append(ids, p.RequestID)
			time.Sleep(2 * time.Millisecond)
		}
		status := func(id string) asyncevent.Status {
			r, err := c.GetRequest(ctx, id)
			require.NoError(t, err)
			return r.Status
		}
		first, err := asyncevent.NewWorker(c, q, asyncevent.WorkerOptions{Concurrency: 1, WaitTime: 50 * time.Millisecond, HoldSweepEvery: 100 * time.Millisecond})
		require.NoError(t, err)
		require.NoError(t, first.Start(ctx))
		require.Eventually(t, func() bool { return status(ids[1]) == asyncevent.StatusWaitlisted }, 10*time.Second, 20*time.Millisecond)
		require.NoError(t, first.Stop(ctx))

		// A new deploy: a fresh client and worker on the same queue and table.
		c2, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName()})
		require.NoError(t, err)
		second, err := asyncevent.NewWorker(c2, q, asyncevent.WorkerOptions{Concurrency: 1, WaitTime: 50 * time.Millisecond, HoldSweepEvery: 100 * time.Millisecond})
		require.NoError(t, err)
		require.NoError(t, second.Start(ctx))
		defer func() { require.NoError(t, second.Stop(ctx)) }()
		assert.Eventually(t, func() bool { return status(ids[0]) == asyncevent.StatusRejected }, asyncevent.MinHoldFor+5*time.Second, 100*time.Millisecond,
			"the hold ran out: a running worker of the table expires it")
	})
}

// A request served from the waitlist holds no seat token; a later delivery of
// its message (with and without a Handler) is a duplicate and moves no seat.
func TestServedRequestsMessageAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "served", 2, 2, time.Minute, 0)
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := submitClicks(t, c, clock, q, "served", userNames("s", 0, 5))
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)
	tr, err := c.Release(ctx, ids[0])
	require.NoError(t, err)
	require.True(t, tr.Applied)
	rep, err := c.SweepHolds(ctx, "served", asyncevent.HoldSweepOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Served)
	r, err := c.GetRequest(ctx, ids[2])
	require.NoError(t, err)
	require.Equal(t, asyncevent.StatusHeld, r.Status)

	handler := asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error { return nil })
	for _, h := range []asyncevent.Handler{nil, handler} {
		for _, cl := range []*asyncevent.Client{c, func() *asyncevent.Client {
			fc, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
			require.NoError(t, err)
			return fc
		}()} {
			for _, id := range []string{ids[0], ids[2], ids[3]} {
				res := asynceventtest.Work(ctx, t, cl, holdMessage(t, c, id, 2, time.Minute), asyncevent.ProcessOptions{Handler: h})
				assert.Equal(t, asyncevent.OutcomeDuplicate, res.Kind, "request %s", id)
			}
		}
	}
	got := byStatus(t, c, ids)
	assert.Equal(t, []string{ids[1], ids[2]}, got[asyncevent.StatusHeld])
	assert.Equal(t, ids[3:], got[asyncevent.StatusWaitlisted])
	asynceventtest.CheckEvent(t, c, "served", asynceventtest.CheckOptions{})
	requireHoldItemForEveryHeld(t, c, "served", ids)
}

// Bad input to Confirm, Release and SweepHolds, and messages with a bad
// holdForMillis.
func TestHoldsBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "bad", 1, 1, time.Minute, 0)
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "nohold", EventType: asyncevent.FirstCome, CapacityTotal: 1})
	require.NoError(t, err)
	_, err = c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "lot", EventType: asyncevent.Lottery, WinnerCount: 1,
		LotteryCutoffAt: asyncevent.MillisOf(t0.Add(time.Hour))})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	held := submitClicks(t, c, clock, q, "bad", []string{"x"})
	plain := submitClicks(t, c, clock, q, "nohold", []string{"x"})
	lot := submitClicks(t, c, clock, q, "lot", []string{"x"})
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)

	for _, id := range []string{"", "a#b", strings.Repeat("x", 300), "with space"} {
		_, err := c.Confirm(ctx, id)
		assert.ErrorIs(t, err, asyncevent.ErrInvalidID, "confirm %q", id)
		_, err = c.Release(ctx, id)
		assert.ErrorIs(t, err, asyncevent.ErrInvalidID, "release %q", id)
	}
	_, err = c.Confirm(ctx, "no-such-request")
	assert.ErrorIs(t, err, asyncevent.ErrNotFound)
	_, err = c.Release(ctx, "no-such-request")
	assert.ErrorIs(t, err, asyncevent.ErrNotFound)

	for _, id := range []string{plain[0], lot[0]} {
		before, err := c.GetRequest(ctx, id)
		require.NoError(t, err)
		for _, call := range []func(context.Context, string) (asyncevent.Transition, error){c.Confirm, c.Release} {
			tr, err := call(ctx, id)
			require.NoError(t, err)
			assert.False(t, tr.Applied)
			require.NotNil(t, tr.Current)
			assert.Equal(t, before.Status, tr.Current.Status)
		}
		after, err := c.GetRequest(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, before.Status, after.Status)
		assert.Equal(t, before.ResultCode, after.ResultCode)
	}

	_, err = c.SweepHolds(ctx, "no-such-event", asyncevent.HoldSweepOptions{})
	assert.ErrorIs(t, err, asyncevent.ErrEventNotFound)
	_, err = c.SweepHolds(ctx, "a#b", asyncevent.HoldSweepOptions{})
	assert.ErrorIs(t, err, asyncevent.ErrInvalidID)
	for _, ev := range []string{"nohold", "lot"} {
		_, err = c.SweepHolds(ctx, ev, asyncevent.HoldSweepOptions{})
		assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions, ev)
	}
	rep, err := c.SweepHolds(ctx, "bad", asyncevent.HoldSweepOptions{MaxWrites: -5})
	require.NoError(t, err)
	assert.False(t, rep.More)

	// Messages say nothing of holds: a body that does is malformed (an unknown field).
	for _, hold := range []int64{1, 9999, -1, asyncevent.MaxHoldFor.Milliseconds() + 1} {
		m := holdMessage(t, c, held[0], 1, 0)
		body := []byte(`{"v":1,"requestId":"` + m.RequestID + `","eventId":"bad","userId":"x","eventType":"FIRST_COME","requestedAt":` +
			strconv.FormatInt(int64(m.RequestedAt), 10) + `,"capacityShards":1,"holdForMillis":` + strconv.FormatInt(hold, 10) + `}`)
		_, err = asyncevent.DecodeMessage(body)
		assert.ErrorIs(t, err, asyncevent.ErrMalformedMessage, "holdForMillis %d", hold)
	}
	r, err := c.GetRequest(ctx, held[0])
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusHeld, r.Status)

	// A HELD request's message again: a duplicate, still HELD.
	res := asynceventtest.Work(ctx, t, c, holdMessage(t, c, held[0], 1, 2*time.Minute), asyncevent.ProcessOptions{})
	r, err = c.GetRequest(ctx, held[0])
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusHeld, r.Status, "outcome %s", res.Kind)
}

// Lost answers. A confirm, a release and an expiry whose transaction DynamoDB
// applied but whose answer was lost (the caller sees an error), then called again:
// the seat is given back once, the second call sees a clear outcome.
func TestLostAnswersThenRetried(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "lost", 3, 1, time.Minute, 0)
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := submitClicks(t, c, clock, q, "lost", userNames("l", 0, 6))
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)

	faulty := asynceventtest.NewFaultyDynamoDB(asynceventtest.DynamoDB(t), asynceventtest.FaultPlan{
		LoseRate: 1, Operations: []string{"TransactWriteItems"},
	})
	fc, err := asyncevent.New(faulty, asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)

	_, err = fc.Confirm(ctx, ids[0])
	require.Error(t, err, "the answer was lost")
	tr, err := c.Confirm(ctx, ids[0])
	require.NoError(t, err)
	assert.False(t, tr.Applied)
	assert.Equal(t, asyncevent.StatusSucceeded, tr.Current.Status, "the retry sees it confirmed")

	_, err = fc.Release(ctx, ids[1])
	require.Error(t, err)
	tr, err = c.Release(ctx, ids[1])
	require.NoError(t, err)
	assert.False(t, tr.Applied)
	assert.Equal(t, asyncevent.ResultReleased, tr.Current.ResultCode)
	tr, err = c.Confirm(ctx, ids[1])
	require.NoError(t, err)
	assert.False(t, tr.Applied, "a released hold cannot be confirmed")

	clock.Advance(2 * time.Minute)
	_, err = fc.SweepHolds(ctx, "lost", asyncevent.HoldSweepOptions{})
	require.Error(t, err, "the expiry's answer was lost")
	for range 3 {
		_, err = c.SweepHolds(ctx, "lost", asyncevent.HoldSweepOptions{})
		require.NoError(t, err)
	}
	got := byStatus(t, c, ids)
	assert.Equal(t, []string{ids[0]}, got[asyncevent.StatusSucceeded])
	assert.Equal(t, ids[3:5], got[asyncevent.StatusHeld], "two seats given back, the first two of the waitlist hold them")
	assert.Equal(t, ids[5:], got[asyncevent.StatusWaitlisted])
	asynceventtest.CheckEvent(t, c, "lost", asynceventtest.CheckOptions{})
	requireHoldItemForEveryHeld(t, c, "lost", ids)
}

// Several sweeps at once (workers' leased sweeps, a CLI's unleased one, on
// clients with skewed clocks) racing confirms and releases: every hold ends once, no
// seat is handed on twice, the waitlist is served in queue order.
func TestConcurrentSweepsRacingPayers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now, StatusLog: true})
	holdsEvent(t, c, "many", 12, 3, time.Minute, 0)
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := submitClicks(t, c, clock, q, "many", userNames("c", 0, 60))
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)

	var sweepers []*asyncevent.Client
	for _, skew := range []time.Duration{-2 * time.Second, 0, 2 * time.Second, time.Second} {
		cl := asynceventtest.NewClock(clock.Now().Add(skew))
		sc, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: cl.Now, StatusLog: true})
		require.NoError(t, err)
		sweepers = append(sweepers, sc)
	}
	for round := range 4 {
		clock.Advance(time.Minute - time.Second)
		var wg sync.WaitGroup
		got := byStatus(t, c, ids)
		for i, id := range got[asyncevent.StatusHeld] {
			wg.Go(func() {
				switch (i + round) % 3 {
				case 0:
					_, err := c.Confirm(ctx, id)
					assert.NoError(t, err)
				case 1:
					_, err := c.Release(ctx, id)
					assert.NoError(t, err)
				}
			})
		}
		for i, sc := range sweepers {
			wg.Go(func() {
				owner := ""
				if i < 2 {
					owner = fmt.Sprintf("w%d", i)
				}
				for range 3 {
					_, err := sc.SweepHolds(ctx, "many", asyncevent.HoldSweepOptions{Owner: owner, MaxWrites: 3})
					assert.NoError(t, err)
				}
			})
		}
		wg.Wait()
		clock.Advance(2 * time.Second)
		for range 10 {
			rep, err := c.SweepHolds(ctx, "many", asyncevent.HoldSweepOptions{})
			require.NoError(t, err)
			if !rep.More && rep.Expired+rep.Served == 0 {
				break
			}
		}
		asynceventtest.CheckEvent(t, c, "many", asynceventtest.CheckOptions{})
		requireHoldItemForEveryHeld(t, c, "many", ids)
	}
	got := byStatus(t, c, ids)
	// Queue order: every request served before another still waiting was queued earlier.
	lastServed := -1
	for i, id := range ids {
		r, err := c.GetRequest(ctx, id)
		require.NoError(t, err)
		if r.ServedAt != 0 {
			lastServed = i
		}
	}
	for _, id := range got[asyncevent.StatusWaitlisted] {
		assert.Greater(t, indexOf(ids, id), lastServed, "a waiting request queued before a served one")
	}
}

func indexOf(ids []string, id string) int {
	for i, x := range ids {
		if x == id {
			return i
		}
	}
	return -1
}

// slowPuts delays the PutItem calls of a client (its Hold items) once armed, one at a
// time, as a process paused in the middle of one would be: its UpdateItem calls (the
// lease's heartbeat among them) wait for the put too. The waits are on channels, which
// an asynceventtest.InBubble clock waits out (a mutex would hold it still).
type slowPuts struct {
	asyncevent.DynamoDB
	armed   atomic.Bool
	delay   time.Duration
	started chan struct{}
	mu      sync.Mutex
	paused  chan struct{} // closed when the slow put under way ends; nil while none is
}

func (s *slowPuts) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if s.armed.Load() {
		done := make(chan struct{})
		for prev := s.pause(done); prev != nil; prev = s.pause(done) {
			<-prev
		}
		select {
		case s.started <- struct{}{}:
		default:
		}
		time.Sleep(s.delay)
		s.mu.Lock()
		s.paused = nil
		s.mu.Unlock()
		close(done)
	}
	return s.DynamoDB.PutItem(ctx, in, optFns...)
}

// pause marks a slow put under way, its end closing done, unless one is: then it
// returns that one's channel.
func (s *slowPuts) pause(done chan struct{}) (prev chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.paused != nil {
		return s.paused
	}
	s.paused = done
	return nil
}

func (s *slowPuts) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	s.mu.Lock()
	paused := s.paused
	s.mu.Unlock()
	if paused != nil {
		<-paused
	}
	return s.DynamoDB.UpdateItem(ctx, in, optFns...)
}

// A lease taken over while the old holder runs, with holds. The old delivery
// has claimed its seat under its lease; its Hold item's write is slow, and its lease
// runs out meanwhile; a new delivery takes the request over, finds the seat and holds
// it. The old one's Hold item then lands and its HELD write fails: one seat, one
// hold, the stray Hold item cleared by the sweep and not taken for an expiry. The slow
// put, the lease's run-out and the stray's run-out are waited InBubble, at no wall
// time.
func TestLeaseTakenOverWhileTheOldHolderRuns(t *testing.T) {
	t.Parallel()
	asynceventtest.InBubble(t, func(t *testing.T) {
		ctx := context.Background()
		c := asynceventtest.NewTable(t)
		holdsEvent(t, c, "takeover", 2, 1, asyncevent.MinHoldFor, 0)
		q := queue.NewMemory(queue.MemoryOptions{})
		p, err := c.Submit(ctx, q, "takeover", "slow")
		require.NoError(t, err)
		id := p.RequestID

		slow := &slowPuts{DynamoDB: asynceventtest.DynamoDB(t), delay: 1500 * time.Millisecond, started: make(chan struct{}, 1)}
		slow.armed.Store(true)
		oc, err := asyncevent.New(slow, asyncevent.Options{TableName: c.TableName()})
		require.NoError(t, err)
		ok := asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error { return nil })
		m := holdMessage(t, c, id, 1, asyncevent.MinHoldFor)
		done := make(chan asynceventtest.WorkResult, 1)
		go func() {
			done <- asynceventtest.Work(ctx, t, oc, m, asyncevent.ProcessOptions{Handler: ok, LeaseDuration: 300 * time.Millisecond})
		}()
		<-slow.started
		time.Sleep(500 * time.Millisecond) // the old lease ran out; its Hold item is on its way
		res := asynceventtest.Work(ctx, t, c, m, asyncevent.ProcessOptions{Handler: ok})
		assert.Equal(t, asyncevent.OutcomeHeld, res.Kind)
		old := <-done
		assert.NotEqual(t, asyncevent.OutcomeHeld, old.Kind, "the old holder lost its lease: %+v", old.Outcome)
		capacity, err := c.GetCapacity(ctx, "takeover")
		require.NoError(t, err)
		assert.EqualValues(t, 1, capacity.CapacityRemaining, "one seat taken")
		holds := holdItemsOf(t, c, "takeover")
		assert.Len(t, holds[id], 2, "the new delivery's Hold item and the old one's stray")
		requireHoldItemForEveryHeld(t, c, "takeover", []string{id})
		asynceventtest.CheckEvent(t, c, "takeover", asynceventtest.CheckOptions{})

		r, err := c.GetRequest(ctx, id)
		require.NoError(t, err)
		for _, at := range holds[id] {
			if at < r.HoldExpiresAt { // the stray runs out first: a sweep then must not expire the hold
				time.Sleep(time.Until(at.Time().Add(5 * time.Millisecond)))
				rep, err := c.SweepHolds(ctx, "takeover", asyncevent.HoldSweepOptions{})
				require.NoError(t, err)
				if time.Now().Before(r.HoldExpiresAt.Time()) {
					assert.Equal(t, 0, rep.Expired, "the stray is not the hold")
				}
			}
		}
		tr, err := c.Confirm(ctx, id)
		require.NoError(t, err)
		assert.True(t, tr.Applied, "the hold still runs")
	})
}

// The sold-out path stays one write per loser with holds: a loser of a sold-out
// event with holds costs what a loser of one without holds does (a look and one
// write).
func TestSoldOutLoserCostsTheSameWithHolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cost := func(hold time.Duration) asynceventtest.Counts {
		clock := asynceventtest.NewClock(t0)
		c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
		holdsEvent(t, c, "cost", 2, 1, hold, 0)
		q := queue.NewMemory(queue.MemoryOptions{})
		submitClicks(t, c, clock, q, "cost", userNames("k", 0, 22))
		counter := asynceventtest.NewCounter(asynceventtest.DynamoDB(t))
		cc, err := asyncevent.New(counter, asyncevent.Options{ProgressEvery: -1, TableName: c.TableName(), Clock: clock.Now})
		require.NoError(t, err)
		proc := asyncevent.NewProcessor(cc, asyncevent.ProcessOptions{})
		var before asynceventtest.Counts
		for i := 0; ; i++ {
			ds, err := q.Receive(ctx, 1, 0, time.Minute)
			require.NoError(t, err)
			if len(ds) == 0 {
				break
			}
			if i == 4 { // two winners, two losers that find the sell-out
				before = counter.Snapshot()
			}
			require.Empty(t, asynceventtest.Process(ctx, proc, ds))
		}
		return counter.Snapshot().Sub(before)
	}
	without, with := cost(0), cost(time.Minute)
	t.Logf("18 losers: without holds %+v; with holds %+v", without.Calls, with.Calls)
	assert.Equal(t, without.Calls, with.Calls, "the same calls per sold-out loser")
	assert.InDelta(t, without.WCU, with.WCU, 0.01)
}

// Many holds released at once: each release is a transaction on the event's one
// Returns item. Does each caller get an answer, or do releases fail for conflicts?
func TestReleasesAtOnceOnTheReturnsItem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "rush", 60, 4, time.Minute, 0)
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := submitClicks(t, c, clock, q, "rush", userNames("r", 0, 80))
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)
	var wg sync.WaitGroup
	var failed atomic.Int32
	for _, id := range ids[:60] {
		wg.Go(func() {
			if _, err := c.Release(ctx, id); err != nil {
				failed.Add(1)
				t.Logf("release %s: %v", id, err)
			}
		})
	}
	wg.Wait()
	assert.Zero(t, failed.Load(), "60 releases at once: every one answered")
	asynceventtest.CheckEvent(t, c, "rush", asynceventtest.CheckOptions{Unsettled: true})
}

// Processing under lost answers and failures of every write (the home claim,
// the Hold item, HELD, the leased way), then the sweep: no HELD request is without
// its Hold item at its expiry, and the seats add up.
func TestEveryHeldRequestHasItsHoldItemUnderFaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "faults", 10, 2, time.Minute, 0)
	q := queue.NewMemory(queue.MemoryOptions{Clock: clock.Now})
	ids := submitClicks(t, c, clock, q, "faults", userNames("f", 0, 30))
	faulty := asynceventtest.NewFaultyDynamoDB(asynceventtest.DynamoDB(t), asynceventtest.FaultPlan{
		Seed: faultSeed(11), FailRate: 0.1, LoseRate: 0.2, ThrottleRate: 0.05,
	})
	fc, err := asyncevent.New(faulty, asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	for _, h := range []asyncevent.Handler{nil, asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error { return nil })} {
		proc := asyncevent.NewProcessor(fc, asyncevent.ProcessOptions{Handler: h, MaxReceives: 100, LeaseDuration: time.Second,
			Backoff: func(int) time.Duration { return 0 }})
		for range 400 {
			ds, err := q.Receive(ctx, 5, 0, time.Second)
			require.NoError(t, err)
			if len(ds) == 0 {
				if l := q.Len(); l.Visible+l.InFlight == 0 {
					break
				}
				clock.Advance(2 * time.Second)
				time.Sleep(50 * time.Millisecond)
				continue
			}
			asynceventtest.Process(ctx, proc, ds)
			clock.Advance(100 * time.Millisecond)
		}
		if h == nil {
			// the second round: every message again, the leased way
			for _, id := range ids {
				body, err := asyncevent.EncodeMessage(holdMessage(t, c, id, 2, time.Minute))
				require.NoError(t, err)
				require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: body}))
			}
		}
	}
	requireHoldItemForEveryHeld(t, c, "faults", ids)
	rep0 := asynceventtest.CheckEvent(t, c, "faults", asynceventtest.CheckOptions{Unsettled: true})
	t.Logf("after processing under faults %+v: %v; Hold items %d", faulty.Counts(), rep0.ByStatus, len(holdItemsOf(t, c, "faults")))
	clock.Advance(5 * time.Minute)
	for range 10 {
		rep, err := c.SweepHolds(ctx, "faults", asyncevent.HoldSweepOptions{})
		require.NoError(t, err)
		if !rep.More && rep.Expired+rep.Served+rep.Cleared == 0 {
			break
		}
	}
	requireHoldItemForEveryHeld(t, c, "faults", ids)
	asynceventtest.CheckEvent(t, c, "faults", asynceventtest.CheckOptions{Unsettled: true})
}

// Cost of an idle pass: a Worker sweeps every event with holds it has met, every
// second, for as long as it runs. Once the event has closed and its waitlist has
// ended, what does one pass (with the worker's lease) cost?
func TestIdlePassAfterTheCloseIsCheap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "idle", 150, 1, time.Minute, asyncevent.MillisOf(t0.Add(time.Hour)))
	q := queue.NewMemory(queue.MemoryOptions{})
	submitClicks(t, c, clock, q, "idle", userNames("i", 0, 170))
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)
	clock.Advance(2 * time.Hour)
	counter := asynceventtest.NewCounter(asynceventtest.DynamoDB(t))
	sc, err := asyncevent.New(counter, asyncevent.Options{ProgressEvery: -1, TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	for range 3 { // the close: the holds expire, the waitlist ends
		_, err := sc.SweepHolds(ctx, "idle", asyncevent.HoldSweepOptions{Owner: "w"})
		require.NoError(t, err)
		clock.Advance(time.Second)
	}
	before := counter.Snapshot()
	rep, err := sc.SweepHolds(ctx, "idle", asyncevent.HoldSweepOptions{Owner: "w"})
	require.NoError(t, err)
	require.Zero(t, rep.Expired+rep.Served+rep.Closed)
	d := counter.Snapshot().Sub(before)
	t.Logf("one idle pass after the close: %+v calls, %.1f RCU, %.1f WCU; at one pass a second: %.0f RCU an hour", d.Calls, d.RCU, d.WCU, d.RCU*3600)
	assert.Less(t, d.RCU, 5.0, "an idle pass of a closed event reads next to nothing")
}

// faultSeed is HOLD_FAULT_SEED when set, else def.
func faultSeed(def int64) int64 {
	if v, err := strconv.ParseInt(os.Getenv("HOLD_FAULT_SEED"), 10, 64); err == nil {
		return v
	}
	return def
}

// heldPuts holds back the PutItem of a request (PK REQ#…) once armed, until released:
// a request whose put lands late, with the queuedAt taken before it.
type heldPuts struct {
	asyncevent.DynamoDB
	armed   atomic.Bool
	started chan struct{}
	release chan struct{}
}

func (h *heldPuts) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if pk, ok := in.Item["PK"].(*types.AttributeValueMemberS); ok && strings.HasPrefix(pk.Value, "REQ#") && h.armed.CompareAndSwap(true, false) {
		h.started <- struct{}{}
		<-h.release
	}
	return h.DynamoDB.PutItem(ctx, in, optFns...)
}

// queueOrderOf lists an event's requests in queue order (ListEventRequests).
func queueOrderOf(t *testing.T, c *asyncevent.Client, eventID string) []asyncevent.Request {
	t.Helper()
	var out []asyncevent.Request
	cursor := ""
	for {
		page, err := c.ListEventRequests(context.Background(), eventID, asyncevent.EventListOptions{PageOptions: asyncevent.PageOptions{Limit: 500, Cursor: cursor}})
		require.NoError(t, err)
		out = append(out, page.Requests...)
		if page.NextCursor == "" {
			return out
		}
		cursor = page.NextCursor
	}
}

// PROBLEM 1 (open, a residual of the fix): the walk's stored queue key moves past
// every request it cannot see yet once the walk's minute has gone. A request whose put
// lands more than walkSettle (a minute) after the queuedAt it took (a caller's
// deadline longer than a minute lets Submit's put run that long; equally an ingest
// host whose clock is a minute behind the sweeper's, or GSI2 lagging a minute) sorts
// before the stored key. Once sold out it is WAITLISTED, and this client's walks
// never meet it again: a seat given back waits on the Returns item while it waits,
// and at the close it is never ended (WAITLISTED for the life of the process, a warm
// Lambda's included). A fresh client would find it: only the stored key hides it.
func TestWalkPassesARequestWhosePutLandsLate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "late", 1, 1, time.Hour, asyncevent.MillisOf(t0.Add(time.Hour)))
	q := queue.NewMemory(queue.MemoryOptions{})
	a := submitClicks(t, c, clock, q, "late", []string{"a"})[0]

	// L's ingest takes its queuedAt now; its put is on its way for a while.
	slow := &heldPuts{DynamoDB: asynceventtest.DynamoDB(t), started: make(chan struct{}, 1), release: make(chan struct{})}
	slow.armed.Store(true)
	lc, err := asyncevent.New(slow, asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	type submitted struct {
		p   asyncevent.Participation
		err error
	}
	lateDone := make(chan submitted, 1)
	go func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Minute) // the caller's deadline
		defer cancel()
		p, err := lc.Submit(sctx, q, "late", "l")
		lateDone <- submitted{p, err}
	}()
	<-slow.started
	clock.Advance(time.Millisecond)
	b := submitClicks(t, c, clock, q, "late", []string{"b"})[0]
	proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	drain(t, proc, q)
	require.Equal(t, map[asyncevent.Status][]string{asyncevent.StatusHeld: {a}, asyncevent.StatusWaitlisted: {b}}, byStatus(t, c, []string{a, b}))

	// Two minutes on, A gives up: the sweeper serves B, and its walk keeps B's key.
	clock.Advance(2 * time.Minute)
	sc, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	tr, err := c.Release(ctx, a)
	require.NoError(t, err)
	require.True(t, tr.Applied)
	rep, err := sc.SweepHolds(ctx, "late", asyncevent.HoldSweepOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Served)

	// L's put lands now, queued before B; sold out, L waits.
	close(slow.release)
	got := <-lateDone
	require.NoError(t, got.err)
	l := got.p.RequestID
	drain(t, proc, q)
	lr, err := c.GetRequest(ctx, l)
	require.NoError(t, err)
	require.Equal(t, asyncevent.StatusWaitlisted, lr.Status)
	order := queueOrderOf(t, c, "late")
	require.Len(t, order, 3)
	require.Equal(t, l, order[1].RequestID, "L is queued between A and B")

	// B gives up: one seat back, L the only one waiting.
	tr, err = c.Release(ctx, b)
	require.NoError(t, err)
	require.True(t, tr.Applied)
	for range 3 {
		rep, err = sc.SweepHolds(ctx, "late", asyncevent.HoldSweepOptions{})
		require.NoError(t, err)
		clock.Advance(time.Second)
	}
	// The walk begins again at the event's first request every 5 minutes: a request
	// that showed on the index late waits that long, not for good.
	clock.Advance(5 * time.Minute)
	rep, err = sc.SweepHolds(ctx, "late", asyncevent.HoldSweepOptions{})
	require.NoError(t, err)
	lr, err = c.GetRequest(ctx, l)
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusHeld, lr.Status, "a seat given back and one request waiting: it is served (%d seats wait on the Returns item)", rep.Waiting)

	// The close: nothing may be left WAITLISTED.
	clock.Advance(time.Hour)
	for range 3 {
		_, err = sc.SweepHolds(ctx, "late", asyncevent.HoldSweepOptions{})
		require.NoError(t, err)
	}
	lr, err = c.GetRequest(ctx, l)
	require.NoError(t, err)
	assert.NotEqual(t, asyncevent.StatusWaitlisted, lr.Status, "after the close no request is WAITLISTED")
	if lr.Status == asyncevent.StatusWaitlisted {
		fresh, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
		require.NoError(t, err)
		rep, err := fresh.SweepHolds(ctx, "late", asyncevent.HoldSweepOptions{})
		require.NoError(t, err)
		t.Logf("a fresh client's pass closes %d: only the long-lived client's stored key hides L", rep.Closed)
	}
}

// With index shards and requests queued in the same millisecond
// (queue order then by request ID), the walk from the stored key serves each seat to
// the earliest waiting request in queue order, pass after pass, with requests coming
// in between, and the close ends every waiting request.
func TestWalkWithIndexShardsAndEqualQueuedAt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{
		EventID: "eqshards", EventType: asyncevent.FirstCome, CapacityTotal: 4, CapacityShards: 2, IndexShards: 5,
		HoldFor: time.Hour, EndsAt: asyncevent.MillisOf(t0.Add(3 * time.Hour)),
	})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	sc, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)

	submitSameMilli := func(prefix string, n int) {
		for _, u := range userNames(prefix, 0, n) {
			_, err := c.Submit(ctx, q, "eqshards", u)
			require.NoError(t, err)
		}
		clock.Advance(time.Millisecond)
	}
	// earliestWaiting is the first WAITLISTED request in queue order.
	earliestWaiting := func() (string, []asyncevent.Request) {
		order := queueOrderOf(t, c, "eqshards")
		for _, r := range order {
			cur, err := c.GetRequest(ctx, r.RequestID)
			require.NoError(t, err)
			if cur.Status == asyncevent.StatusWaitlisted {
				return cur.RequestID, order
			}
		}
		return "", order
	}
	heldOnes := func() []string {
		var out []string
		for _, r := range queueOrderOf(t, c, "eqshards") {
			cur, err := c.GetRequest(ctx, r.RequestID)
			require.NoError(t, err)
			if cur.Status == asyncevent.StatusHeld {
				out = append(out, cur.RequestID)
			}
		}
		return out
	}

	submitSameMilli("a", 12)
	drain(t, proc, q)
	for round := range 6 {
		clock.Advance(2 * time.Minute)
		want, _ := earliestWaiting()
		require.NotEmpty(t, want)
		held := heldOnes()
		require.NotEmpty(t, held)
		tr, err := c.Release(ctx, held[0])
		require.NoError(t, err)
		require.True(t, tr.Applied)
		rep, err := sc.SweepHolds(ctx, "eqshards", asyncevent.HoldSweepOptions{})
		require.NoError(t, err)
		require.Equal(t, 1, rep.Served, "round %d", round)
		cur, err := c.GetRequest(ctx, want)
		require.NoError(t, err)
		assert.Equal(t, asyncevent.StatusHeld, cur.Status, "round %d: the earliest waiting request in queue order is served", round)
		// newcomers, in one millisecond, on every index shard
		submitSameMilli(fmt.Sprintf("r%d-", round), 3)
		drain(t, proc, q)
	}
	clock.Advance(3 * time.Hour)
	for range 3 {
		_, err := sc.SweepHolds(ctx, "eqshards", asyncevent.HoldSweepOptions{})
		require.NoError(t, err)
	}
	for _, r := range queueOrderOf(t, c, "eqshards") {
		cur, err := c.GetRequest(ctx, r.RequestID)
		require.NoError(t, err)
		assert.NotEqual(t, asyncevent.StatusWaitlisted, cur.Status, "%s: after the close none waits", r.RequestID)
	}
	asynceventtest.CheckEvent(t, c, "eqshards", asynceventtest.CheckOptions{})
}

// Every way a worker decides a first-come request of an event with
// holds takes the event's HoldFor: a worker new to the event (the home shard's look),
// the home claim, a Handler (the leased way), C > 1, a message without capacityShards,
// and ClaimSeat called directly.
func TestHoldForOnEveryPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	const hold = 7 * time.Minute
	holdsEvent(t, c, "paths", 7, 3, hold, 0)
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := submitClicks(t, c, clock, q, "paths", userNames("p", 0, 9))
	fresh := func() *asyncevent.Client {
		fc, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
		require.NoError(t, err)
		return fc
	}
	ok := asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error { return nil })
	warm := fresh()
	cases := []struct {
		name string
		c    *asyncevent.Client
		h    asyncevent.Handler
		n    int
	}{
		{"new worker, home claim", fresh(), nil, 3},
		{"new worker, Handler", fresh(), ok, 3},
		{"new worker, no capacityShards", fresh(), nil, 0},
		{"new worker, Handler, no capacityShards", fresh(), ok, 0},
		{"warm worker, home claim", warm, nil, 3},
		{"warm worker, Handler", warm, ok, 3},
	}
	for i, tc := range cases {
		res := asynceventtest.Work(ctx, t, tc.c, messageFor(t, c, ids[i], tc.n), asyncevent.ProcessOptions{Handler: tc.h})
		r, err := c.GetRequest(ctx, ids[i])
		require.NoError(t, err)
		if assert.Equal(t, asyncevent.StatusHeld, r.Status, "%s (outcome %s)", tc.name, res.Kind) {
			assert.Equal(t, asyncevent.MillisOf(clock.Now().Add(hold)), r.HoldExpiresAt, tc.name)
		}
	}
	// ClaimSeat called directly, under a lease of the caller's.
	dc := fresh()
	lease := asyncevent.Lease{Owner: "direct", Duration: time.Minute}
	ref := asyncevent.RequestRef{RequestID: ids[6], EventID: "paths"}
	tr, err := dc.Rows().StartProcessing(ctx, ref, lease)
	require.NoError(t, err)
	require.True(t, tr.Applied)
	tr, err = dc.Rows().ClaimSeat(ctx, ref, lease)
	require.NoError(t, err)
	require.True(t, tr.Applied)
	r, err := c.GetRequest(ctx, ids[6])
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusHeld, r.Status, "ClaimSeat on an event with holds")
	// The losers, each by a new worker: waitlisted.
	for i := 7; i < 9; i++ {
		res := asynceventtest.Work(ctx, t, fresh(), messageFor(t, c, ids[i], 3), asyncevent.ProcessOptions{Handler: []asyncevent.Handler{nil, ok}[i%2]})
		r, err := c.GetRequest(ctx, ids[i])
		require.NoError(t, err)
		assert.Equal(t, asyncevent.StatusWaitlisted, r.Status, "loser %d (outcome %s)", i, res.Kind)
	}
	asynceventtest.CheckEvent(t, c, "paths", asynceventtest.CheckOptions{Unsettled: true})
}

// MaxWrites bounds every pass, through the expiries (several hold
// partitions), the serving and the close, and the passes together finish the work.
func TestMaxWritesAcrossExpireServeClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "budget3", 6, 3, time.Minute, asyncevent.MillisOf(t0.Add(time.Hour)))
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := submitClicks(t, c, clock, q, "budget3", userNames("w", 0, 15))
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)
	got := byStatus(t, c, ids)
	require.Len(t, got[asyncevent.StatusHeld], 6)
	require.Len(t, got[asyncevent.StatusWaitlisted], 9)

	passes := func(what string) (expired, served, closed int) {
		for i := 0; i < 30; i++ {
			rep, err := c.SweepHolds(ctx, "budget3", asyncevent.HoldSweepOptions{MaxWrites: 2})
			require.NoError(t, err)
			moved := rep.Expired + rep.Served + rep.Closed
			assert.LessOrEqual(t, moved, 2, "%s pass %d: %+v", what, i, *rep)
			expired, served, closed = expired+rep.Expired, served+rep.Served, closed+rep.Closed
			if moved == 0 && !rep.More {
				return
			}
		}
		t.Fatalf("%s: the passes never finished", what)
		return
	}
	clock.Advance(2 * time.Minute) // the 6 holds ran out
	e, s, cl := passes("expiry")
	assert.Equal(t, []int{6, 6, 0}, []int{e, s, cl})
	clock.Advance(time.Hour) // the close; the 6 served holds ran out too
	e, s, cl = passes("close")
	assert.Equal(t, []int{6, 0, 3}, []int{e, s, cl})
	got = byStatus(t, c, ids)
	assert.Empty(t, got[asyncevent.StatusWaitlisted])
	assert.Empty(t, got[asyncevent.StatusHeld])
	asynceventtest.CheckEvent(t, c, "budget3", asynceventtest.CheckOptions{})
}

// PROBLEM 4 (new): an event with holds may have at most 98 capacity shards, but the
// layout rule the HTTP API (peakClicksPerSecond) and the CLI (event create -peak) call
// still gives up to 99: a FIRST_COME event of 12,545 seats or more, or a peak of about
// 157,000 clicks/s, with holds cannot be created from its peak. CreateEvent refuses
// it with "capacityShards 99 with holds", a count the caller never gave (the API
// answers 400 invalid event, the CLI a usage error).
func TestShardForPeakWithHolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTable(t)
	for i, cfg := range []asyncevent.EventSettings{
		{EventType: asyncevent.FirstCome, CapacityTotal: 20_000, HoldFor: 10 * time.Minute},
		{EventType: asyncevent.FirstCome, CapacityTotal: 5_000, HoldFor: 10 * time.Minute},
	} {
		cfg.EventID = fmt.Sprintf("peak%d", i)
		peak := []float64{1_000, 200_000}[i]
		cfg.ShardForPeak(peak)
		_, err := c.CreateEvent(ctx, cfg)
		assert.NoError(t, err, "%d seats with holds at a peak of %.0f clicks/s: ShardForPeak gives %d capacity shards", cfg.CapacityTotal, peak, cfg.CapacityShards)
	}
}

// The registry and its filter. An event with holds is listed from its
// creation until its end plus its HoldFor plus an hour, an event without an end for
// ever (each Worker then sweeps it for as long as it runs: see the report), an event
// without holds never; 98 capacity shards with holds fit CreateEvent's transaction.
func TestHoldRegistry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "ends", 2, 1, 10*time.Minute, asyncevent.MillisOf(t0.Add(time.Hour)))
	holdsEvent(t, c, "forever", 2, 1, 10*time.Minute, 0)
	holdsEvent(t, c, "wide", 98, 98, 10*time.Minute, asyncevent.MillisOf(t0.Add(time.Hour)))
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "plain", EventType: asyncevent.FirstCome, CapacityTotal: 2})
	require.NoError(t, err)
	_, err = c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "wider", EventType: asyncevent.FirstCome, CapacityTotal: 99, CapacityShards: 99, HoldFor: time.Minute})
	assert.ErrorIs(t, err, asyncevent.ErrInvalidEvent)

	listed := func() []string {
		evs, err := c.HoldEvents(ctx)
		require.NoError(t, err)
		var ids []string
		for _, e := range evs {
			ids = append(ids, e.EventID)
		}
		slices.Sort(ids)
		return ids
	}
	assert.Equal(t, []string{"ends", "forever", "wide"}, listed())
	clock.Advance(time.Hour + 10*time.Minute + time.Hour - time.Second)
	assert.Equal(t, []string{"ends", "forever", "wide"}, listed())
	clock.Advance(2 * time.Second)
	assert.Equal(t, []string{"forever"}, listed())
	clock.Advance(365 * 24 * time.Hour)
	assert.Equal(t, []string{"forever"}, listed(), "an event without an end is listed for ever")
}

// The sweep lease read before it is written. A holder goes on
// without a write while more than half its lease is left and renews after; another
// owner is skipped, told when the lease runs out, for as long as the holder renews;
// once the holder stops, the other takes it as soon as its lease has run out, and the
// old holder, back, is skipped.
func TestSweepLeaseHandOver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "lease", 2, 1, time.Minute, 0)
	counter := asynceventtest.NewCounter(asynceventtest.DynamoDB(t))
	ac, err := asyncevent.New(counter, asyncevent.Options{ProgressEvery: -1, TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	bc, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	sweep := func(cl *asyncevent.Client, owner string) bool {
		rep, err := cl.SweepHolds(ctx, "lease", asyncevent.HoldSweepOptions{Owner: owner, LeaseFor: 10 * time.Second})
		require.NoError(t, err)
		return !rep.Skipped
	}
	leaseWrites := func() int { return counter.Snapshot().Writes[entity.Returns] }

	require.True(t, sweep(ac, "A"))
	require.Equal(t, 1, leaseWrites())
	require.False(t, sweep(bc, "B"))
	clock.Advance(4 * time.Second)
	require.True(t, sweep(ac, "A"))
	assert.Equal(t, 1, leaseWrites(), "more than half the lease left: no write")
	clock.Advance(2 * time.Second) // 6 s: renewed
	require.True(t, sweep(ac, "A"))
	assert.Equal(t, 2, leaseWrites(), "half the lease gone: renewed")
	clock.Advance(5 * time.Second) // 11 s: the first lease would have run out
	assert.False(t, sweep(bc, "B"), "the renewed lease holds")
	// A dies here; its lease runs out at 16 s.
	clock.Advance(4*time.Second + 999*time.Millisecond)
	assert.False(t, sweep(bc, "B"))
	clock.Advance(time.Millisecond)
	assert.True(t, sweep(bc, "B"), "the lease ran out: B sweeps")
	assert.False(t, sweep(ac, "A"), "A, back, finds B's lease")
}

// PROBLEM 5 (open, a variant the fix does not reach): the walk stops its key at the
// first request not settled, and a pass with a seat on the Returns item and no one
// WAITLISTED (a hold released before the sell-out, or after the waitlist ran dry)
// reads from there to the end of the event's requests, for nothing, at every pass.
// During a spike the requests not settled are the backlog still QUEUED (and every
// request of the last minute): the worker holding the sweep lease reads the whole
// backlog every second, and nothing bounds the reads of a pass (MaxWrites counts
// writes).
func TestPassWithASeatAndNoWaitlistReadsTheBacklog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "backlog", 10, 1, time.Hour, 0)
	q := queue.NewMemory(queue.MemoryOptions{})
	first := submitClicks(t, c, clock, q, "backlog", []string{"first"})
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)
	tr, err := c.Release(ctx, first[0]) // one seat on the Returns item; not sold out
	require.NoError(t, err)
	require.True(t, tr.Applied)
	submitClicks(t, c, clock, q, "backlog", userNames("b", 0, 1200)) // the backlog, still QUEUED
	clock.Advance(2 * time.Minute)

	counter := asynceventtest.NewCounter(asynceventtest.DynamoDB(t))
	sc, err := asyncevent.New(counter, asyncevent.Options{ProgressEvery: -1, TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	_, err = sc.SweepHolds(ctx, "backlog", asyncevent.HoldSweepOptions{})
	require.NoError(t, err)
	clock.Advance(time.Second)
	before := counter.Snapshot()
	rep, err := sc.SweepHolds(ctx, "backlog", asyncevent.HoldSweepOptions{})
	require.NoError(t, err)
	require.Zero(t, rep.Expired+rep.Served+rep.Closed)
	require.EqualValues(t, 1, rep.Waiting)
	d := counter.Snapshot().Sub(before)
	t.Logf("one idle pass with a seat waiting and 1,200 requests QUEUED: %v calls, %.1f RCU", d.Calls, d.RCU)
	// A walk reads at most 2,000 requests past its starting point (about 106 RCU of
	// these): the whole of this backlog, no more however long it grows.
	assert.Less(t, d.RCU, 110.0, "an idle pass reads at most 2,000 requests")
}
