package asyncevent_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/draw"
	"github.com/asyncevent/asyncevent/queue"
)

// prequeueStart is the start of the pre-queued drops of these tests: their pre-queue
// opens at t0.
var prequeueStart = t0.Add(10 * time.Minute)

// prequeueDrop makes a FIRST_COME event "drop" of seats seats on shards capacity
// shards whose pre-queue opens at t0 and starts at prequeueStart, on a stopped clock
// at t0.
func prequeueDrop(t *testing.T, seats int64, shards int) (*asyncevent.Client, *asynceventtest.Clock) {
	t.Helper()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	_, err := c.CreateEvent(context.Background(), asyncevent.EventSettings{EventID: "drop", EventType: asyncevent.FirstCome,
		CapacityTotal: seats, CapacityShards: shards,
		PrequeueOpensAt: asyncevent.MillisOf(t0), StartsAt: asyncevent.MillisOf(prequeueStart)})
	require.NoError(t, err)
	return c, clock
}

// clickAll submits a click of each user, 16 at once, and returns their request IDs.
func clickAll(t *testing.T, c *asyncevent.Client, q queue.Queue, users []string) []string {
	t.Helper()
	ids := make([]string, len(users))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, u := range users {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			p, err := c.Submit(context.Background(), q, "drop", u)
			if assert.NoError(t, err, u) {
				ids[i] = p.RequestID
			}
		})
	}
	wg.Wait()
	return ids
}

// deliverAll hands each message sent so far to p once, one after another in the
// order sent, and returns the outcomes by request.
func deliverAll(t *testing.T, p *asyncevent.Processor, q *sendQueue) map[string]asyncevent.Outcome {
	t.Helper()
	q.mu.Lock()
	sent := slices.Clone(q.sent)
	q.mu.Unlock()
	outcomes := map[string]asyncevent.Outcome{}
	for i, m := range sent {
		o, _, _ := p.ProcessOne(context.Background(), queue.Delivery{MessageID: fmt.Sprint(i), Body: m.Body, ReceiveCount: 1}, 0, nil)
		outcomes[o.RequestID] = o
	}
	return outcomes
}

func userIDs(prefix string, n int) []string {
	us := make([]string, n)
	for i := range us {
		us[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return us
}

// The pre-queue's promise, end to end: the clicks of the window wait, decided by
// nobody (a worker acknowledges their messages and holds back the sale's); the serve
// freezes them, reveals the seed and serves them in the order anyone recomputes from
// it (SHA-256 outside the library), the first N winning; the sale's clicks lose once
// the seats are gone; run again, the serve finds the same order and serves nothing;
// VerifyPrequeue checks it all. On one capacity item and on three shards.
func TestPrequeueServesTheDrawnOrderFirst(t *testing.T) {
	for _, shards := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d shards", shards), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			c, clock := prequeueDrop(t, 5, shards)
			q := &sendQueue{}
			clock.Advance(-time.Second)
			_, err := c.Submit(ctx, q, "drop", "too-early")
			require.ErrorIs(t, err, asyncevent.ErrEventNotOpen)
			clock.Advance(time.Minute)

			entries := clickAll(t, c, q, userIDs("early", 20))
			worker := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
			for id, o := range deliverAll(t, worker, q) {
				assert.Equal(t, asyncevent.OutcomeLeftToDraw, o.Kind, id)
			}
			d, err := c.GetDraw(ctx, "drop")
			require.NoError(t, err)
			assert.Empty(t, d.Seed, "the seed before the freeze")
			waiting, err := c.GetRequest(ctx, entries[0])
			require.NoError(t, err)
			require.NotNil(t, waiting.Prequeue, "an entry's view says it waits in the pre-queue")
			assert.False(t, waiting.Prequeue.Frozen)
			assert.Nil(t, waiting.Queue, "no place in a line")

			clock.Advance(prequeueStart.Sub(clock.Now())) // exactly at the start: a click of the sale
			sale := clickAll(t, c, q, userIDs("sale", 3))
			q.sent = q.sent[len(entries):]
			for id, o := range deliverAll(t, worker, q) {
				assert.Equal(t, asyncevent.OutcomeWaitingForPrequeue, o.Kind, id)
			}
			for _, id := range append(slices.Clone(entries), sale...) {
				r, err := c.GetRequest(ctx, id)
				require.NoError(t, err)
				assert.Equal(t, asyncevent.StatusQueued, r.Status, "%s before the serve", id)
			}

			_, err = c.ServePrequeue(ctx, "drop")
			require.ErrorIs(t, err, asyncevent.ErrDrawTooEarly)
			clock.Advance(asyncevent.DefaultDrawSettleWindow)
			res, err := c.ServePrequeue(ctx, "drop")
			require.NoError(t, err)

			ids := slices.Clone(entries)
			recomputed := recomputeWinners(t, res.Record.Seed, ids, len(ids))
			assert.Equal(t, recomputed, res.Order, "the order anyone recomputes")
			assert.Equal(t, recomputed[:5], res.Winners, "the first 5 of the order win")
			assert.Equal(t, 20, res.Served)
			for i, id := range res.Order {
				r, err := c.GetRequest(ctx, id)
				require.NoError(t, err)
				if i < 5 {
					assert.Equal(t, asyncevent.ResultSuccess, r.ResultCode, "entry %d of the order", i)
				} else {
					assert.Equal(t, asyncevent.ResultRejectedCapacity, r.ResultCode, "entry %d of the order", i)
				}
			}

			clock.Advance(10 * time.Second) // past the worker's cached config
			for id, o := range deliverAll(t, worker, q) {
				assert.Equal(t, asyncevent.OutcomeRejected, o.Kind, "%s of the sale, sold out to the pre-queue", id)
			}

			again, err := c.ServePrequeue(ctx, "drop")
			require.NoError(t, err)
			assert.Equal(t, res.Order, again.Order)
			assert.Equal(t, res.Winners, again.Winners)
			assert.Zero(t, again.Served)

			v, err := c.VerifyPrequeue(ctx, "drop")
			require.NoError(t, err)
			assert.True(t, v.OK(), v.String())
			assert.Equal(t, 20, v.EntryCount)
			assert.Equal(t, res.Winners, v.Winners)
			seed, err := hex.DecodeString(res.Record.Seed)
			require.NoError(t, err)
			assert.Equal(t, draw.Order(seed, entries), v.Order)
		})
	}
}

// A pre-queue smaller than the seats: every entry wins, and the sale's clicks take
// the seats left in queue order once the pre-queue is served, exactly N in all.
func TestPrequeueLeavesTheRestToTheSale(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, clock := prequeueDrop(t, 5, 1)
	q := &sendQueue{}
	clock.Advance(time.Minute)
	entries := clickAll(t, c, q, userIDs("early", 3))
	clock.Advance(prequeueStart.Sub(clock.Now()) + time.Second)
	for _, u := range userIDs("sale", 4) {
		_, err := c.Submit(ctx, q, "drop", u)
		require.NoError(t, err)
		clock.Advance(time.Millisecond)
	}
	worker := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	deliverAll(t, worker, q)
	clock.Advance(asyncevent.DefaultDrawSettleWindow)
	res, err := c.ServePrequeue(ctx, "drop")
	require.NoError(t, err)
	assert.ElementsMatch(t, entries, res.Winners)

	clock.Advance(10 * time.Second)
	outcomes := deliverAll(t, worker, q)
	var won []string
	for _, m := range q.sent[3:] {
		got, err := asyncevent.DecodeMessage(m.Body)
		require.NoError(t, err)
		if outcomes[got.RequestID].Kind == asyncevent.OutcomeSucceeded {
			won = append(won, got.UserID)
		}
	}
	assert.Equal(t, []string{"sale-000", "sale-001"}, won, "the seats left, in queue order")
	capacity, err := c.GetCapacity(ctx, "drop")
	require.NoError(t, err)
	assert.Zero(t, capacity.CapacityRemaining)
	v, err := c.VerifyPrequeue(ctx, "drop")
	require.NoError(t, err)
	assert.True(t, v.OK(), v.String())
}

// The settings of a pre-queue are checked: it needs a start after its opening and is
// for FIRST_COME events; an event without one has no serve.
func TestPrequeueSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTable(t)
	at := asyncevent.MillisOf(t0)
	for name, s := range map[string]asyncevent.EventSettings{
		"no start":  {EventID: "a", EventType: asyncevent.FirstCome, CapacityTotal: 1, PrequeueOpensAt: at},
		"after it":  {EventID: "b", EventType: asyncevent.FirstCome, CapacityTotal: 1, PrequeueOpensAt: at, StartsAt: at},
		"a lottery": {EventID: "c", EventType: asyncevent.Lottery, WinnerCount: 1, PrequeueOpensAt: at, StartsAt: at + 1, LotteryCutoffAt: at + 2},
	} {
		_, err := c.CreateEvent(ctx, s)
		assert.ErrorIs(t, err, asyncevent.ErrInvalidEvent, name)
	}
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "plain", EventType: asyncevent.FirstCome, CapacityTotal: 1})
	require.NoError(t, err)
	_, err = c.ServePrequeue(ctx, "plain")
	assert.ErrorIs(t, err, asyncevent.ErrNoPrequeue)
	_, err = c.VerifyPrequeue(ctx, "plain")
	assert.ErrorIs(t, err, asyncevent.ErrNoPrequeue)
}

// cancelAfter cancels its context once the n-th write went through it: a serve that
// stops half-way, as a crashed process would.
type cancelAfter struct {
	asyncevent.DynamoDB
	n      atomic.Int64
	cancel context.CancelFunc
}

func (c *cancelAfter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if c.n.Add(-1) == 0 {
		c.cancel()
	}
	return c.DynamoDB.UpdateItem(ctx, in, opts...)
}

// Exactly N and the order hold through lost answers, writes landing late and a serve
// that stops half-way: a second serve on another client finds the same entries and
// order, decides the rest, and the pre-queue verifies with exactly the seats' count
// of winners, the first ones of the order. On the real clock (leases expire).
func TestPrequeueResumesAndHoldsExactlyNUnderFaults(t *testing.T) {
	t.Parallel()
	const seats, clicks = 7, 40
	ctx := context.Background()
	faulty := asynceventtest.NewFaultyDynamoDB(asynceventtest.DynamoDB(t), asynceventtest.FaultPlan{
		Seed: 44, LoseRate: 0.1, LateRate: 0.1, LateBy: 200 * time.Millisecond, Operations: []string{"UpdateItem"},
	})
	opts := asyncevent.Options{DrawSettleWindow: time.Second, DrawConcurrency: 4}
	clean := asynceventtest.NewTableOn(t, faulty, opts)
	start := time.Now().Add(3 * time.Second)
	_, err := clean.CreateEvent(ctx, asyncevent.EventSettings{EventID: "drop", EventType: asyncevent.FirstCome,
		CapacityTotal: seats, CapacityShards: 2,
		PrequeueOpensAt: asyncevent.MillisOf(time.Now().Add(-time.Minute)), StartsAt: asyncevent.MillisOf(start)})
	require.NoError(t, err)
	entries := clickAll(t, clean, &sendQueue{}, userIDs("early", clicks))
	time.Sleep(time.Until(start.Add(opts.DrawSettleWindow + 10*time.Millisecond)))

	opts.TableName = clean.TableName()
	var logs bytes.Buffer
	var logMu sync.Mutex
	opts.Logger = slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	defer func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	}()
	stopCtx, stop := context.WithCancel(ctx)
	crash := &cancelAfter{DynamoDB: faulty, cancel: stop}
	crash.n.Store(25)
	crashing, err := asyncevent.New(crash, opts)
	require.NoError(t, err)
	_, err = crashing.ServePrequeue(stopCtx, "drop")
	require.Error(t, err, "the first serve stops half-way")
	opts.Logger.Info("first serve ended", "error", err)
	placed := map[string]int64{} // the entries still waiting, by their place in the drawn order
	for _, id := range entries {
		r, err := clean.GetRequest(ctx, id)
		require.NoError(t, err)
		if r.Status == asyncevent.StatusQueued {
			require.NotNil(t, r.Prequeue, id)
			assert.True(t, r.Prequeue.Frozen, id)
			assert.EqualValues(t, clicks, r.Prequeue.Entries)
			placed[id] = r.Prequeue.Place
		}
	}
	require.NotEmpty(t, placed, "the first serve stopped before the last entry")

	faultyAgain, err := asyncevent.New(faulty, opts)
	require.NoError(t, err)
	res, err := faultyAgain.ServePrequeue(ctx, "drop")
	require.NoError(t, err)
	faulty.WaitLate()
	assert.Len(t, res.Order, clicks)
	assert.ElementsMatch(t, entries, res.Order)
	assert.Equal(t, res.Order[:seats], res.Winners, "exactly the first seats of the order")
	for id, place := range placed {
		assert.Equal(t, id, res.Order[place-1], "a waiting entry's view told its place in the order")
	}
	v, err := clean.VerifyPrequeue(ctx, "drop")
	require.NoError(t, err)
	assert.True(t, v.OK(), v.String())
	assert.Len(t, v.Winners, seats)
	capacity, err := clean.GetCapacity(ctx, "drop")
	require.NoError(t, err)
	assert.Zero(t, capacity.CapacityRemaining)
	counts := faulty.Counts()
	assert.Positive(t, counts.Lost+counts.Late, "faults injected")
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// The sweeper leaves the entries of a pre-queue not served yet alone, however long
// they wait: ServePrequeue finds them on GSI2 without a message.
func TestPrequeueEntriesAreNotStuck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, clock := prequeueDrop(t, 2, 1)
	clock.Advance(time.Second)
	clickAll(t, c, &sendQueue{}, userIDs("early", 3))
	clock.Advance(9 * time.Minute)
	q := &sendQueue{}
	report, err := c.Sweep(ctx, q, "drop", asyncevent.SweepOptions{StuckAfter: time.Minute, RatePerSecond: 1000})
	require.NoError(t, err)
	assert.Equal(t, 3, report.Examined)
	assert.Empty(t, q.sent, "no entry sent again")
}

// With holds, the seats given back go to the pre-queue's waitlisted entries in the
// drawn order, not in queue order, and to the sale's waitlisted clicks only after
// every entry: a release hands the next entry of the order its seat, expiries hand on
// theirs, and the pre-queue still verifies.
func TestPrequeueWithHoldsServesTheWaitlistInTheDrawnOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "drop", EventType: asyncevent.FirstCome, CapacityTotal: 3,
		HoldFor: time.Minute, PrequeueOpensAt: asyncevent.MillisOf(t0), StartsAt: asyncevent.MillisOf(prequeueStart)})
	require.NoError(t, err)
	q := &sendQueue{}
	clock.Advance(time.Second)
	clickAll(t, c, q, userIDs("early", 8))
	clock.Advance(prequeueStart.Sub(clock.Now()))
	sale := clickAll(t, c, q, userIDs("sale", 2))
	worker := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	deliverAll(t, worker, q)
	clock.Advance(asyncevent.DefaultDrawSettleWindow)
	res, err := c.ServePrequeue(ctx, "drop")
	require.NoError(t, err)
	require.Equal(t, res.Order[:3], res.Winners)
	clock.Advance(10 * time.Second)
	deliverAll(t, worker, q)
	status := func(id string) asyncevent.Status {
		r, err := c.GetRequest(ctx, id)
		require.NoError(t, err)
		return r.Status
	}
	for i, id := range res.Order {
		want := asyncevent.StatusWaitlisted
		if i < 3 {
			want = asyncevent.StatusHeld
		}
		assert.Equal(t, want, status(id), "entry %d of the order", i)
	}
	for _, id := range sale {
		assert.Equal(t, asyncevent.StatusWaitlisted, status(id), "a click of the sale")
	}

	_, err = c.Release(ctx, res.Order[1])
	require.NoError(t, err)
	_, err = c.SweepHolds(ctx, "drop", asyncevent.HoldSweepOptions{})
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusHeld, status(res.Order[3]), "the next entry of the drawn order")
	for _, id := range res.Order[4:] {
		assert.Equal(t, asyncevent.StatusWaitlisted, status(id))
	}
	_, err = c.Confirm(ctx, res.Order[0])
	require.NoError(t, err)

	clock.Advance(2 * time.Minute) // order[2] and order[3] lapse: their seats to order[4] and order[5]
	_, err = c.SweepHolds(ctx, "drop", asyncevent.HoldSweepOptions{})
	require.NoError(t, err)
	for i, id := range res.Order {
		want := asyncevent.StatusWaitlisted
		switch {
		case i == 0:
			want = asyncevent.StatusSucceeded
		case i <= 3:
			want = asyncevent.StatusRejected
		case i <= 5:
			want = asyncevent.StatusHeld
		}
		assert.Equal(t, want, status(id), "entry %d of the order", i)
	}
	for _, id := range sale {
		assert.Equal(t, asyncevent.StatusWaitlisted, status(id), "the sale waits behind every entry")
	}
	v, err := c.VerifyPrequeue(ctx, "drop")
	require.NoError(t, err)
	assert.True(t, v.OK(), v.String())
	assert.Equal(t, res.Order[:6], v.Winners)
}

// An operator moves a pre-queue's start later: the clicks until the new start are
// entries, served with the others once it has passed, and the start no longer moves
// once the pre-queue's serve began; a pause refuses the pre-queue's clicks as any.
func TestPrequeueStartExtendedAndPaused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, clock := prequeueDrop(t, 2, 1)
	q := &sendQueue{}
	clock.Advance(time.Minute)
	clickAll(t, c, q, userIDs("early", 3))

	_, err := c.PauseEvent(ctx, "drop", "ops")
	require.NoError(t, err)
	_, err = c.Submit(ctx, q, "drop", "paused-out")
	require.ErrorIs(t, err, asyncevent.ErrEventPaused)
	_, err = c.ResumeEvent(ctx, "drop", "ops")
	require.NoError(t, err)

	later := prequeueStart.Add(10 * time.Minute)
	up, err := c.ExtendEvent(ctx, "drop", "ops", asyncevent.ActionExtendStart, later)
	require.NoError(t, err)
	require.True(t, up.Applied, up.Reason)
	assert.Equal(t, asyncevent.MillisOf(later), up.Event.StartsAt)

	clock.Advance(prequeueStart.Sub(clock.Now()) + time.Minute) // past the old start: still the pre-queue
	lateEntry, err := c.Submit(ctx, q, "drop", "between-the-starts")
	require.NoError(t, err)
	worker := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	outcomes := deliverAll(t, worker, q)
	assert.Equal(t, asyncevent.OutcomeLeftToDraw, outcomes[lateEntry.RequestID].Kind)
	clock.Advance(asyncevent.DefaultDrawSettleWindow)
	_, err = c.ServePrequeue(ctx, "drop")
	require.ErrorIs(t, err, asyncevent.ErrDrawTooEarly, "the serve waits for the new start")

	clock.Advance(later.Sub(clock.Now()) + asyncevent.DefaultDrawSettleWindow)
	res, err := c.ServePrequeue(ctx, "drop")
	require.NoError(t, err)
	assert.Contains(t, res.Order, lateEntry.RequestID)
	assert.Len(t, res.Order, 4)

	up, err = c.ExtendEvent(ctx, "drop", "ops", asyncevent.ActionExtendStart, later.Add(time.Hour))
	require.NoError(t, err)
	assert.False(t, up.Applied, "no start moves once the serve began")
	_, err = c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "plain", EventType: asyncevent.FirstCome, CapacityTotal: 1,
		StartsAt: asyncevent.MillisOf(clock.Now().Add(time.Hour))})
	require.NoError(t, err)
	up, err = c.ExtendEvent(ctx, "plain", "ops", asyncevent.ActionExtendStart, clock.Now().Add(2*time.Hour))
	require.NoError(t, err)
	assert.False(t, up.Applied)
	assert.Contains(t, up.Reason, "pre-queue")
}

// VerifyPrequeue catches a serve that broke the order: an entry made to win after one
// before it was refused, and a click of the sale made to win while entries were
// refused, each written behind the library's back.
func TestVerifyPrequeueCatchesABrokenOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, clock := prequeueDrop(t, 2, 1)
	q := &sendQueue{}
	clock.Advance(time.Minute)
	clickAll(t, c, q, userIDs("early", 5))
	clock.Advance(prequeueStart.Sub(clock.Now()))
	sale := clickAll(t, c, q, userIDs("sale", 1))
	clock.Advance(asyncevent.DefaultDrawSettleWindow)
	res, err := c.ServePrequeue(ctx, "drop")
	require.NoError(t, err)
	v, err := c.VerifyPrequeue(ctx, "drop")
	require.NoError(t, err)
	require.True(t, v.OK(), v.String())

	force := func(id string, status asyncevent.Status, code asyncevent.ResultCode) {
		behindTheLibrary(t, c, id, "SET #s = :s, resultCode = :c", map[string]types.AttributeValue{":s": str(string(status)), ":c": str(string(code))})
	}
	force(res.Order[1], asyncevent.StatusRejected, asyncevent.ResultRejectedCapacity)
	force(res.Order[3], asyncevent.StatusSucceeded, asyncevent.ResultSuccess)
	force(sale[0], asyncevent.StatusSucceeded, asyncevent.ResultSuccess)
	v, err = c.VerifyPrequeue(ctx, "drop")
	require.NoError(t, err)
	assert.False(t, v.OK())
	assert.Contains(t, v.String(), fmt.Sprintf("entry %s won a seat after entry %s", res.Order[3], res.Order[1]))
	assert.Contains(t, v.String(), fmt.Sprintf("click %s of the sale won a seat", sale[0]))
}

// A sealed seed (Options.Seeds) is nowhere on the table before the freeze, only its
// commitment, and the serve reveals it; the workers' backlog of the entries' messages,
// delivered after the serve, changes nothing (each entry is decided already).
func TestPrequeueSealedSeedAndABacklogAtTheFreeze(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now, Seeds: hmacSeeds(t, newSecret(t))})
	ev, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "drop", EventType: asyncevent.FirstCome, CapacityTotal: 2,
		PrequeueOpensAt: asyncevent.MillisOf(t0), StartsAt: asyncevent.MillisOf(prequeueStart)})
	require.NoError(t, err)
	assert.Len(t, ev.SeedCommitment, 64)
	q := &sendQueue{}
	clock.Advance(time.Minute)
	clickAll(t, c, q, userIDs("early", 6))
	for _, item := range asynceventtest.ScanTable(t, c.TableName()) {
		_, has := item["seed"]
		assert.False(t, has, "no seed on the table before the freeze: %v", item["PK"])
	}

	clock.Advance(prequeueStart.Sub(clock.Now()) + asyncevent.DefaultDrawSettleWindow)
	res, err := c.ServePrequeue(ctx, "drop") // no worker took any entry's message yet
	require.NoError(t, err)
	assert.NotEmpty(t, res.Record.Seed)
	clock.Advance(10 * time.Second)
	for id, o := range deliverAll(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q) {
		assert.Equal(t, asyncevent.OutcomeDuplicate, o.Kind, "%s: decided by the serve", id)
	}
	v, err := c.VerifyPrequeue(ctx, "drop")
	require.NoError(t, err)
	assert.True(t, v.OK(), v.String())
	assert.Equal(t, res.Order[:2], v.Winners)
}

// Two operators serve the same pre-queue at once, on two clients: exactly N winners,
// the first N of the drawn order, and both serves come to the same order.
func TestPrequeueTwoServesAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const seats, clicks = 7, 30
	c, clock := prequeueDrop(t, seats, 3)
	clock.Advance(time.Minute)
	entries := clickAll(t, c, &sendQueue{}, userIDs("early", clicks))
	clock.Advance(prequeueStart.Sub(clock.Now()) + asyncevent.DefaultDrawSettleWindow)
	other, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: clock.Now, DrawConcurrency: 3})
	require.NoError(t, err)
	var results [2]*asyncevent.PrequeueResult
	var g sync.WaitGroup
	for i, cl := range []*asyncevent.Client{c, other} {
		g.Go(func() {
			res, err := cl.ServePrequeue(ctx, "drop")
			if assert.NoError(t, err) {
				results[i] = res
			}
		})
	}
	g.Wait()
	require.NotNil(t, results[0])
	require.NotNil(t, results[1])
	assert.Equal(t, results[0].Order, results[1].Order)
	assert.ElementsMatch(t, entries, results[0].Order)
	v, err := c.VerifyPrequeue(ctx, "drop")
	require.NoError(t, err)
	assert.True(t, v.OK(), v.String())
	assert.Equal(t, results[0].Order[:seats], v.Winners)
	st, err := c.EventStats(ctx, "drop")
	require.NoError(t, err)
	assert.Zero(t, st.Fairness.Inversions, "the entries' drawn order is no inversion of queue order")
	capacity, err := c.GetCapacity(ctx, "drop")
	require.NoError(t, err)
	assert.Zero(t, capacity.CapacityRemaining)
}

// Seats an operator adds after the serve, and a winner's seat given back by a cancel,
// reach the event's pool after the entries were refused: the sale's clicks take them,
// and the pre-queue still verifies (a pool seat breaks no order).
func TestPrequeueSeatsAddedOrCancelledAfterTheServe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, clock := prequeueDrop(t, 2, 1)
	q := &sendQueue{}
	clock.Advance(time.Minute)
	clickAll(t, c, q, userIDs("early", 4))
	clock.Advance(prequeueStart.Sub(clock.Now()))
	sale := clickAll(t, c, q, userIDs("sale", 1))
	clock.Advance(asyncevent.DefaultDrawSettleWindow)
	res, err := c.ServePrequeue(ctx, "drop")
	require.NoError(t, err)

	up, err := c.AddCapacity(ctx, "drop", asyncevent.AddCapacityInput{Seats: 1, Actor: "ops"})
	require.NoError(t, err)
	require.True(t, up.Applied, up.Reason)
	up, err = c.CancelRequest(ctx, res.Winners[0], asyncevent.CancelRequestInput{Actor: "ops"})
	require.NoError(t, err)
	require.True(t, up.Applied, up.Reason)
	late := clickAll(t, c, q, userIDs("later", 1))
	clock.Advance(10 * time.Second)
	q.sent = q.sent[4:]
	outcomes := deliverAll(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)
	for _, id := range append(sale, late...) {
		assert.Equal(t, asyncevent.OutcomeSucceeded, outcomes[id].Kind, "%s: a seat from the pool", id)
	}
	v, err := c.VerifyPrequeue(ctx, "drop")
	require.NoError(t, err)
	assert.True(t, v.OK(), v.String())
}

// The boundary of the pre-queue is the start, to the millisecond: a click 1 ms before
// it is an entry, one at it a click of the sale; a worker new to the event (no copy
// of its config) holds the sale's click back, and with a message that does not name
// the pre-queue (a sender that did not know the event) it reads the config and does
// the same.
func TestPrequeueBoundaryAndANewWorker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, clock := prequeueDrop(t, 1, 1)
	q := &sendQueue{}
	clock.Advance(prequeueStart.Sub(clock.Now()) - time.Millisecond)
	before, err := c.Submit(ctx, q, "drop", "just-before")
	require.NoError(t, err)
	clock.Advance(time.Millisecond)
	at, err := c.Submit(ctx, q, "drop", "at-the-start")
	require.NoError(t, err)

	fresh, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	worker := asyncevent.NewProcessor(fresh, asyncevent.ProcessOptions{})
	outcomes := deliverAll(t, worker, q)
	assert.Equal(t, asyncevent.OutcomeLeftToDraw, outcomes[before.RequestID].Kind)
	assert.Equal(t, asyncevent.OutcomeWaitingForPrequeue, outcomes[at.RequestID].Kind)
	r, err := c.GetRequest(ctx, at.RequestID)
	require.NoError(t, err)
	body, err := asyncevent.EncodeMessage(asyncevent.Message{V: asyncevent.MessageVersion, RequestID: at.RequestID, EventID: "drop",
		UserID: "at-the-start", EventType: asyncevent.FirstCome, RequestedAt: r.RequestedAt}) // no capacityShards, no prequeueUntil
	require.NoError(t, err)
	another, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	o, done, _ := asyncevent.NewProcessor(another, asyncevent.ProcessOptions{}).ProcessOne(ctx, queue.Delivery{MessageID: "m", Body: body, ReceiveCount: 1}, 0, nil)
	assert.False(t, done)
	assert.Equal(t, asyncevent.OutcomeWaitingForPrequeue, o.Kind)

	clock.Advance(asyncevent.DefaultDrawSettleWindow)
	res, err := c.ServePrequeue(ctx, "drop")
	require.NoError(t, err)
	assert.Equal(t, []string{before.RequestID}, res.Order)
	assert.Equal(t, []string{before.RequestID}, res.Winners)
}

// The hold sweep serves the pre-queue's waitlist in the drawn order only up to the
// first entry the serve has not decided yet: a seat given back while the serve runs
// waits for that entry, never goes to a waitlisted one after it. (The undecided entry
// is made so behind the library's back, as a serve in progress leaves one.)
func TestPrequeueHoldSweepStopsAtAnUndecidedEntry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "drop", EventType: asyncevent.FirstCome, CapacityTotal: 2,
		HoldFor: time.Minute, PrequeueOpensAt: asyncevent.MillisOf(t0), StartsAt: asyncevent.MillisOf(prequeueStart)})
	require.NoError(t, err)
	clock.Advance(time.Second)
	clickAll(t, c, &sendQueue{}, userIDs("early", 5))
	clock.Advance(prequeueStart.Sub(clock.Now()) + asyncevent.DefaultDrawSettleWindow)
	res, err := c.ServePrequeue(ctx, "drop")
	require.NoError(t, err)

	behindTheLibrary(t, c, res.Order[2], "SET #s = :s", map[string]types.AttributeValue{":s": str(string(asyncevent.StatusQueued))})
	_, err = c.Release(ctx, res.Order[0])
	require.NoError(t, err)
	_, err = c.SweepHolds(ctx, "drop", asyncevent.HoldSweepOptions{})
	require.NoError(t, err)
	for _, id := range res.Order[3:] {
		r, err := c.GetRequest(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, asyncevent.StatusWaitlisted, r.Status, "no seat past an undecided entry")
	}
}

// behindTheLibrary writes a request's attributes directly (update, with #s for its
// status), as a broken writer would: for tests of what the library finds.
func behindTheLibrary(t *testing.T, c *asyncevent.Client, requestID, update string, values map[string]types.AttributeValue) {
	t.Helper()
	key, err := asyncevent.NewRequestKey(requestID)
	require.NoError(t, err)
	_, err = asynceventtest.DynamoDB(t).UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(c.TableName()), Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: key.Key().PK}, "SK": &types.AttributeValueMemberS{Value: key.Key().SK}},
		UpdateExpression: aws.String(update), ExpressionAttributeNames: map[string]string{"#s": "status"}, ExpressionAttributeValues: values,
	})
	require.NoError(t, err)
}

// str is a string attribute value.
func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// VerifyPrequeue counts the seats: a request forged onto the table, queued before the
// start and SUCCEEDED on the pool's seat, is a late arrival the record does not name,
// and a sixth winner of five seats.
func TestVerifyPrequeueCountsTheSeats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, clock := prequeueDrop(t, 5, 1)
	q := &sendQueue{}
	ids := clickAll(t, c, q, userIDs("u", 20))
	deliverAll(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)
	clock.Advance(prequeueStart.Sub(clock.Now()) + time.Minute)
	_, err := c.ServePrequeue(ctx, "drop")
	require.NoError(t, err)
	v, err := c.VerifyPrequeue(ctx, "drop")
	require.NoError(t, err)
	require.True(t, v.OK(), v.String())

	var item map[string]types.AttributeValue
	for _, it := range asynceventtest.ScanTable(t, c.TableName()) {
		if attrS(it["PK"]) == "REQ#"+ids[0] && attrS(it["SK"]) == "META" {
			item = it
		}
	}
	require.NotNil(t, item)
	forged := "f0f0f0f0-0000-4000-8000-000000000000"
	for k, av := range item {
		if sv, ok := av.(*types.AttributeValueMemberS); ok {
			item[k] = &types.AttributeValueMemberS{Value: strings.ReplaceAll(sv.Value, ids[0], forged)}
		}
	}
	item["status"] = &types.AttributeValueMemberS{Value: "SUCCEEDED"}
	item["resultCode"] = &types.AttributeValueMemberS{Value: "SUCCESS"}
	item["seatShard"] = &types.AttributeValueMemberN{Value: "1"} // the pool of an event of one shard
	_, err = asynceventtest.DynamoDB(t).PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(c.TableName()), Item: item})
	require.NoError(t, err)
	v, err = c.VerifyPrequeue(ctx, "drop")
	require.NoError(t, err)
	assert.Equal(t, []string{forged}, v.Late)
	assert.Contains(t, v.String(), "6 requests hold a seat (SUCCEEDED or HELD), the event has 5")
}
