package asyncevent_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
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

// drop is the FIRST_COME event "drop" a test of the pre-queue plays: its pre-queue
// opens at opensAt (t0 if zero) and the sale starts at startsAt (prequeueStart if
// zero).
type drop struct {
	seats   int64
	shards  int           // capacity shards (0: the default, one)
	holdFor time.Duration // 0: no holds
	// opts are the client's: Clock, if nil, is the bundle's clock, stopped at t0.
	opts              asyncevent.Options
	db                asyncevent.DynamoDB // the client's (nil: DynamoDB Local's)
	opensAt, startsAt time.Time
}

// endsAt is the drop's end: with holds, a day after its start (an event with holds
// needs an end); none otherwise.
func (d *drop) endsAt() asyncevent.EpochMillis {
	if d.holdFor == 0 {
		return 0
	}
	return asyncevent.MillisOf(d.startsAt.Add(24 * time.Hour))
}

// prequeueBundle is a drop on a table of its own and what its tests play it with.
type prequeueBundle struct {
	c      *asyncevent.Client
	event  *asyncevent.Event
	clock  *asynceventtest.Clock
	q      *sendQueue            // every message the clicks sent
	worker *asyncevent.Processor // a worker on c
}

// prequeueSetup makes d's table, client and event.
func prequeueSetup(t *testing.T, d drop) *prequeueBundle {
	t.Helper()
	b := &prequeueBundle{clock: asynceventtest.NewClock(t0), q: &sendQueue{}}
	if d.opts.Clock == nil {
		d.opts.Clock = b.clock.Now
	}
	if d.db == nil {
		d.db = asynceventtest.DynamoDB(t)
	}
	if d.opensAt.IsZero() {
		d.opensAt = t0
	}
	if d.startsAt.IsZero() {
		d.startsAt = prequeueStart
	}
	b.c = asynceventtest.NewTableOn(t, d.db, d.opts)
	var err error
	b.event, err = b.c.CreateEvent(context.Background(), asyncevent.EventSettings{EventID: "drop", EventType: asyncevent.FirstCome,
		CapacityTotal: d.seats, CapacityShards: d.shards, HoldFor: d.holdFor,
		PrequeueOpensAt: asyncevent.MillisOf(d.opensAt), StartsAt: asyncevent.MillisOf(d.startsAt), EndsAt: d.endsAt()})
	require.NoError(t, err)
	b.worker = asyncevent.NewProcessor(b.c, asyncevent.ProcessOptions{})
	return b
}

// click submits a click of n users named prefix-000 on, 16 at once, and returns
// their request IDs.
func (b *prequeueBundle) click(t *testing.T, prefix string, n int) []string {
	t.Helper()
	return clickAll(t, b.c, b.q, userIDs(prefix, n))
}

// toStart moves the clock to d after the start (d < 0: before it).
func (b *prequeueBundle) toStart(d time.Duration) {
	b.clock.Advance(prequeueStart.Add(d).Sub(b.clock.Now()))
}

// serve runs ServePrequeue on c, which must succeed.
func (b *prequeueBundle) serve(t *testing.T, c *asyncevent.Client) *asyncevent.PrequeueResult {
	t.Helper()
	res, err := c.ServePrequeue(context.Background(), "drop")
	require.NoError(t, err)
	return res
}

// verify runs VerifyPrequeue on b.c, which must answer.
func (b *prequeueBundle) verify(t *testing.T) *asyncevent.PrequeueVerification {
	t.Helper()
	v, err := b.c.VerifyPrequeue(context.Background(), "drop")
	require.NoError(t, err)
	return v
}

// clientOn is another client of the drop's table, on db: another process. opts
// take the table's name, and the bundle's clock if they name none.
func (b *prequeueBundle) clientOn(t *testing.T, db asyncevent.DynamoDB, opts asyncevent.Options) *asyncevent.Client {
	t.Helper()
	opts.TableName = b.c.TableName()
	if opts.Clock == nil {
		opts.Clock = b.clock.Now
	}
	c, err := asyncevent.New(db, opts)
	require.NoError(t, err)
	return c
}

// status reads a request's status.
func (b *prequeueBundle) status(t *testing.T, requestID string) asyncevent.Status {
	t.Helper()
	r, err := b.c.GetRequest(context.Background(), requestID)
	require.NoError(t, err)
	return r.Status
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

// userIDs names n users prefix-000, prefix-001 and on.
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
			b := prequeueSetup(t, drop{seats: 5, shards: shards})
			b.clock.Advance(-time.Second)
			_, err := b.c.Submit(ctx, b.q, "drop", "too-early")
			require.ErrorIs(t, err, asyncevent.ErrEventNotOpen)
			b.clock.Advance(time.Minute)

			entries := b.click(t, "early", 20)
			for id, o := range deliverAll(t, b.worker, b.q) {
				assert.Equal(t, asyncevent.OutcomeLeftToDraw, o.Kind, id)
			}
			d, err := b.c.GetDraw(ctx, "drop")
			require.NoError(t, err)
			assert.Empty(t, d.Seed, "the seed before the freeze")
			waiting, err := b.c.GetRequest(ctx, entries[0])
			require.NoError(t, err)
			require.NotNil(t, waiting.Prequeue, "an entry's view says it waits in the pre-queue")
			assert.False(t, waiting.Prequeue.Frozen)
			assert.Nil(t, waiting.Queue, "no place in a line")

			b.toStart(0) // exactly at the start: a click of the sale
			sale := b.click(t, "sale", 3)
			b.q.sent = b.q.sent[len(entries):]
			for id, o := range deliverAll(t, b.worker, b.q) {
				assert.Equal(t, asyncevent.OutcomeWaitingForPrequeue, o.Kind, id)
			}
			for _, id := range append(slices.Clone(entries), sale...) {
				assert.Equal(t, asyncevent.StatusQueued, b.status(t, id), "%s before the serve", id)
			}

			_, err = b.c.ServePrequeue(ctx, "drop")
			require.ErrorIs(t, err, asyncevent.ErrDrawTooEarly)
			b.clock.Advance(asyncevent.DefaultDrawSettleWindow)
			res := b.serve(t, b.c)

			ids := slices.Clone(entries)
			recomputed := recomputeWinners(t, res.Record.Seed, ids, len(ids))
			assert.Equal(t, recomputed, res.Order, "the order anyone recomputes")
			assert.Equal(t, recomputed[:5], res.Winners, "the first 5 of the order win")
			assert.Equal(t, 20, res.Served)
			for i, id := range res.Order {
				r, err := b.c.GetRequest(ctx, id)
				require.NoError(t, err)
				if i < 5 {
					assert.Equal(t, asyncevent.ResultSuccess, r.ResultCode, "entry %d of the order", i)
				} else {
					assert.Equal(t, asyncevent.ResultRejectedCapacity, r.ResultCode, "entry %d of the order", i)
				}
			}

			b.clock.Advance(10 * time.Second) // past the worker's cached config
			for id, o := range deliverAll(t, b.worker, b.q) {
				assert.Equal(t, asyncevent.OutcomeRejected, o.Kind, "%s of the sale, sold out to the pre-queue", id)
			}

			again := b.serve(t, b.c)
			assert.Equal(t, res.Order, again.Order)
			assert.Equal(t, res.Winners, again.Winners)
			assert.Zero(t, again.Served)

			v := b.verify(t)
			assert.True(t, v.OK(), v.String())
			assert.Equal(t, 20, v.EntryCount)
			assert.Equal(t, res.Winners, v.Winners)
			seed, err := hex.DecodeString(res.Record.Seed)
			require.NoError(t, err)
			assert.Equal(t, draw.Order(seed, entries), v.Order)
		})
	}
}

// The seats the pre-queue leaves go to the sale's clicks, in queue order, exactly N
// in all, and the pre-queue still verifies (a pool seat breaks no order).
func TestPrequeueLeavesTheRestToTheSale(t *testing.T) {
	t.Run("fewer entries than seats: every entry wins, the sale takes the rest in queue order", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		b := prequeueSetup(t, drop{seats: 5, shards: 1})
		b.clock.Advance(time.Minute)
		entries := b.click(t, "early", 3)
		b.toStart(time.Second)
		for _, u := range userIDs("sale", 4) {
			_, err := b.c.Submit(ctx, b.q, "drop", u)
			require.NoError(t, err)
			b.clock.Advance(time.Millisecond)
		}
		deliverAll(t, b.worker, b.q)
		b.clock.Advance(asyncevent.DefaultDrawSettleWindow)
		res := b.serve(t, b.c)
		assert.ElementsMatch(t, entries, res.Winners)

		b.clock.Advance(10 * time.Second)
		outcomes := deliverAll(t, b.worker, b.q)
		var won []string
		for _, m := range b.q.sent[3:] {
			got, err := asyncevent.DecodeMessage(m.Body)
			require.NoError(t, err)
			if outcomes[got.RequestID].Kind == asyncevent.OutcomeSucceeded {
				won = append(won, got.UserID)
			}
		}
		assert.Equal(t, []string{"sale-000", "sale-001"}, won, "the seats left, in queue order")
		capacity, err := b.c.GetCapacity(ctx, "drop")
		require.NoError(t, err)
		assert.Zero(t, capacity.CapacityRemaining)
		v := b.verify(t)
		assert.True(t, v.OK(), v.String())
	})

	t.Run("seats added and a winner's seat cancelled after the serve go to the sale's clicks", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		b := prequeueSetup(t, drop{seats: 2, shards: 1})
		b.clock.Advance(time.Minute)
		b.click(t, "early", 4)
		b.toStart(0)
		sale := b.click(t, "sale", 1)
		b.clock.Advance(asyncevent.DefaultDrawSettleWindow)
		res := b.serve(t, b.c)

		up, err := b.c.AddCapacity(ctx, "drop", asyncevent.AddCapacityInput{Seats: 1, Actor: "ops"})
		require.NoError(t, err)
		require.True(t, up.Applied, up.Reason)
		up, err = b.c.CancelRequest(ctx, res.Winners[0], asyncevent.CancelRequestInput{Actor: "ops"})
		require.NoError(t, err)
		require.True(t, up.Applied, up.Reason)
		late := b.click(t, "later", 1)
		b.clock.Advance(10 * time.Second)
		b.q.sent = b.q.sent[4:]
		outcomes := deliverAll(t, b.worker, b.q)
		for _, id := range append(sale, late...) {
			assert.Equal(t, asyncevent.OutcomeSucceeded, outcomes[id].Kind, "%s: a seat from the pool", id)
		}
		v := b.verify(t)
		assert.True(t, v.OK(), v.String())
	})
}

// The settings of a pre-queue are checked: it needs a start after its opening and is
// for FIRST_COME events; an event without one has no serve.
func TestPrequeueSettings(t *testing.T) {
	t.Parallel()
	b := prequeueSetup(t, drop{seats: 1})
	at := asyncevent.MillisOf(t0)
	for _, tc := range []struct {
		name     string
		settings asyncevent.EventSettings
	}{
		{"a pre-queue without a start", asyncevent.EventSettings{EventID: "a", EventType: asyncevent.FirstCome, CapacityTotal: 1, PrequeueOpensAt: at}},
		{"a start not after the opening", asyncevent.EventSettings{EventID: "b", EventType: asyncevent.FirstCome, CapacityTotal: 1, PrequeueOpensAt: at, StartsAt: at}},
		{"a lottery", asyncevent.EventSettings{EventID: "c", EventType: asyncevent.Lottery, WinnerCount: 1, PrequeueOpensAt: at, StartsAt: at + 1, LotteryCutoffAt: at + 2}},
	} {
		t.Run(tc.name+" is refused", func(t *testing.T) {
			_, err := b.c.CreateEvent(context.Background(), tc.settings)
			assert.ErrorIs(t, err, asyncevent.ErrInvalidEvent)
		})
	}
	t.Run("an event without a pre-queue has no serve and no verification", func(t *testing.T) {
		ctx := context.Background()
		_, err := b.c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "plain", EventType: asyncevent.FirstCome, CapacityTotal: 1})
		require.NoError(t, err)
		_, err = b.c.ServePrequeue(ctx, "plain")
		assert.ErrorIs(t, err, asyncevent.ErrNoPrequeue)
		_, err = b.c.VerifyPrequeue(ctx, "plain")
		assert.ErrorIs(t, err, asyncevent.ErrNoPrequeue)
	})
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
	opts := asyncevent.Options{Clock: time.Now, DrawSettleWindow: time.Second, DrawConcurrency: 4}
	start := time.Now().Add(3 * time.Second)
	b := prequeueSetup(t, drop{seats: seats, shards: 2, opts: opts, db: faulty, opensAt: time.Now().Add(-time.Minute), startsAt: start})
	entries := b.click(t, "early", clicks)
	time.Sleep(time.Until(start.Add(opts.DrawSettleWindow + 10*time.Millisecond)))

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
	crashing := b.clientOn(t, crash, opts)
	_, err := crashing.ServePrequeue(stopCtx, "drop")
	require.Error(t, err, "the first serve stops half-way")
	opts.Logger.Info("first serve ended", "error", err)
	placed := map[string]int64{} // the entries still waiting, by their place in the drawn order
	for _, id := range entries {
		r, err := b.c.GetRequest(ctx, id)
		require.NoError(t, err)
		if r.Status == asyncevent.StatusQueued {
			require.NotNil(t, r.Prequeue, id)
			assert.True(t, r.Prequeue.Frozen, id)
			assert.EqualValues(t, clicks, r.Prequeue.Entries)
			placed[id] = r.Prequeue.Place
		}
	}
	require.NotEmpty(t, placed, "the first serve stopped before the last entry")

	res := b.serve(t, b.clientOn(t, faulty, opts))
	faulty.WaitLate()
	assert.Len(t, res.Order, clicks)
	assert.ElementsMatch(t, entries, res.Order)
	assert.Equal(t, res.Order[:seats], res.Winners, "exactly the first seats of the order")
	for id, place := range placed {
		assert.Equal(t, id, res.Order[place-1], "a waiting entry's view told its place in the order")
	}
	v := b.verify(t)
	assert.True(t, v.OK(), v.String())
	assert.Len(t, v.Winners, seats)
	capacity, err := b.c.GetCapacity(ctx, "drop")
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
	b := prequeueSetup(t, drop{seats: 2, shards: 1})
	b.clock.Advance(time.Second)
	b.click(t, "early", 3)
	b.clock.Advance(9 * time.Minute)
	q := &sendQueue{}
	report, err := b.c.Sweep(context.Background(), q, "drop", asyncevent.SweepOptions{StuckAfter: time.Minute, RatePerSecond: 1000})
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
	b := prequeueSetup(t, drop{seats: 3, holdFor: time.Minute})
	b.clock.Advance(time.Second)
	b.click(t, "early", 8)
	b.toStart(0)
	sale := b.click(t, "sale", 2)
	deliverAll(t, b.worker, b.q)
	b.clock.Advance(asyncevent.DefaultDrawSettleWindow)
	res := b.serve(t, b.c)
	require.Equal(t, res.Order[:3], res.Winners)
	b.clock.Advance(10 * time.Second)
	deliverAll(t, b.worker, b.q)
	for i, id := range res.Order {
		want := asyncevent.StatusWaitlisted
		if i < 3 {
			want = asyncevent.StatusHeld
		}
		assert.Equal(t, want, b.status(t, id), "entry %d of the order", i)
	}
	for _, id := range sale {
		assert.Equal(t, asyncevent.StatusWaitlisted, b.status(t, id), "a click of the sale")
	}
	// The waitlist's places: the entries by their drawn place, the sale's clicks
	// (queued at the start, in one tenth of a second) after every entry.
	places := waitlistPlaces(t, b.c, b.clock, append(res.Order, sale...))
	assert.Equal(t, []int64{-1, -1, -1, 0, 1, 2, 3, 4}, places[:8], "the entries, in the drawn order")
	for _, p := range places[8:] {
		assert.Contains(t, []int64{5, 6}, p, "a click of the sale waits behind the five entries")
	}

	_, err := b.c.Release(ctx, res.Order[1])
	require.NoError(t, err)
	_, err = b.c.SweepHolds(ctx, "drop", asyncevent.HoldSweepOptions{})
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusHeld, b.status(t, res.Order[3]), "the next entry of the drawn order")
	for _, id := range res.Order[4:] {
		assert.Equal(t, asyncevent.StatusWaitlisted, b.status(t, id))
	}
	_, err = b.c.Confirm(ctx, res.Order[0])
	require.NoError(t, err)

	b.clock.Advance(2 * time.Minute) // order[2] and order[3] lapse: their seats to order[4] and order[5]
	_, err = b.c.SweepHolds(ctx, "drop", asyncevent.HoldSweepOptions{})
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
		assert.Equal(t, want, b.status(t, id), "entry %d of the order", i)
	}
	for _, id := range sale {
		assert.Equal(t, asyncevent.StatusWaitlisted, b.status(t, id), "the sale waits behind every entry")
	}
	places = waitlistPlaces(t, b.c, b.clock, append(res.Order, sale...))
	assert.Equal(t, []int64{-1, -1, -1, -1, -1, -1, 0, 1}, places[:8], "served and lapsed entries left the waitlist")
	for _, p := range places[8:] {
		assert.Contains(t, []int64{2, 3}, p)
	}
	v := b.verify(t)
	assert.True(t, v.OK(), v.String())
	assert.Equal(t, res.Order[:6], v.Winners)
}

// The hold sweep serves the pre-queue's waitlist in the drawn order only up to the
// first entry the serve has not decided yet: a seat given back while the serve runs
// waits for that entry, never goes to a waitlisted one after it. (The undecided entry
// is made so behind the library's back, as a serve in progress leaves one.)
func TestPrequeueHoldSweepStopsAtAnUndecidedEntry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := prequeueSetup(t, drop{seats: 2, holdFor: time.Minute})
	b.clock.Advance(time.Second)
	b.click(t, "early", 5)
	b.toStart(asyncevent.DefaultDrawSettleWindow)
	res := b.serve(t, b.c)

	behindTheLibrary(t, b.c, res.Order[2], "SET #s = :s", map[string]types.AttributeValue{":s": str(string(asyncevent.StatusQueued))})
	_, err := b.c.Release(ctx, res.Order[0])
	require.NoError(t, err)
	_, err = b.c.SweepHolds(ctx, "drop", asyncevent.HoldSweepOptions{})
	require.NoError(t, err)
	for _, id := range res.Order[3:] {
		assert.Equal(t, asyncevent.StatusWaitlisted, b.status(t, id), "no seat past an undecided entry")
	}
}

// An operator moves a pre-queue's start later: the clicks until the new start are
// entries, served with the others once it has passed, and the start no longer moves
// once the pre-queue's serve began; a pause refuses the pre-queue's clicks as any.
func TestPrequeueStartExtendedAndPaused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := prequeueSetup(t, drop{seats: 2, shards: 1})
	b.clock.Advance(time.Minute)
	b.click(t, "early", 3)

	_, err := b.c.PauseEvent(ctx, "drop", asyncevent.ControlInput{Actor: "ops"})
	require.NoError(t, err)
	_, err = b.c.Submit(ctx, b.q, "drop", "paused-out")
	require.ErrorIs(t, err, asyncevent.ErrEventPaused)
	_, err = b.c.ResumeEvent(ctx, "drop", asyncevent.ControlInput{Actor: "ops"})
	require.NoError(t, err)

	later := prequeueStart.Add(10 * time.Minute)
	up, err := b.c.ExtendEvent(ctx, "drop", asyncevent.ExtendEventInput{Actor: "ops", Action: asyncevent.ActionExtendStart, To: asyncevent.MillisOf(later)})
	require.NoError(t, err)
	require.True(t, up.Applied, up.Reason)
	assert.Equal(t, asyncevent.MillisOf(later), up.Event.StartsAt)

	b.toStart(time.Minute) // past the old start: still the pre-queue
	lateEntry, err := b.c.Submit(ctx, b.q, "drop", "between-the-starts")
	require.NoError(t, err)
	outcomes := deliverAll(t, b.worker, b.q)
	assert.Equal(t, asyncevent.OutcomeLeftToDraw, outcomes[lateEntry.RequestID].Kind)
	b.clock.Advance(asyncevent.DefaultDrawSettleWindow)
	_, err = b.c.ServePrequeue(ctx, "drop")
	require.ErrorIs(t, err, asyncevent.ErrDrawTooEarly, "the serve waits for the new start")

	b.clock.Advance(later.Sub(b.clock.Now()) + asyncevent.DefaultDrawSettleWindow)
	res := b.serve(t, b.c)
	assert.Contains(t, res.Order, lateEntry.RequestID)
	assert.Len(t, res.Order, 4)

	up, err = b.c.ExtendEvent(ctx, "drop", asyncevent.ExtendEventInput{Actor: "ops", Action: asyncevent.ActionExtendStart, To: asyncevent.MillisOf(later.Add(time.Hour))})
	require.NoError(t, err)
	assert.False(t, up.Applied, "no start moves once the serve began")
	_, err = b.c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "plain", EventType: asyncevent.FirstCome, CapacityTotal: 1,
		StartsAt: asyncevent.MillisOf(b.clock.Now().Add(time.Hour))})
	require.NoError(t, err)
	up, err = b.c.ExtendEvent(ctx, "plain", asyncevent.ExtendEventInput{Actor: "ops", Action: asyncevent.ActionExtendStart, To: asyncevent.MillisOf(b.clock.Now().Add(2 * time.Hour))})
	require.NoError(t, err)
	assert.False(t, up.Applied)
	assert.Contains(t, up.Reason, "pre-queue")
}

// A worker never decides an entry (docs/design.md, the pre-queue): it acknowledges
// an entry's message and leaves it to the serve, whatever it knows of the event and
// whatever its reads answer; the sale's clicks it holds back until the serve.
func TestPrequeueWorkersLeaveEntriesToTheServe(t *testing.T) {
	t.Run("the start to the millisecond divides entries from the sale, on a worker new to the event", func(t *testing.T) {
		// A click 1 ms before the start is an entry, one at it a click of the sale; a
		// worker with no copy of the config holds the sale's click back, and with a
		// message that does not name the pre-queue (a sender that did not know the
		// event) it reads the config and does the same.
		t.Parallel()
		ctx := context.Background()
		b := prequeueSetup(t, drop{seats: 1, shards: 1})
		b.toStart(-time.Millisecond)
		before, err := b.c.Submit(ctx, b.q, "drop", "just-before")
		require.NoError(t, err)
		b.clock.Advance(time.Millisecond)
		at, err := b.c.Submit(ctx, b.q, "drop", "at-the-start")
		require.NoError(t, err)

		fresh := b.clientOn(t, asynceventtest.DynamoDB(t), asyncevent.Options{})
		outcomes := deliverAll(t, asyncevent.NewProcessor(fresh, asyncevent.ProcessOptions{}), b.q)
		assert.Equal(t, asyncevent.OutcomeLeftToDraw, outcomes[before.RequestID].Kind)
		assert.Equal(t, asyncevent.OutcomeWaitingForPrequeue, outcomes[at.RequestID].Kind)
		r, err := b.c.GetRequest(ctx, at.RequestID)
		require.NoError(t, err)
		body, err := asyncevent.EncodeMessage(asyncevent.Message{V: asyncevent.MessageVersion, RequestID: at.RequestID, EventID: "drop",
			UserID: "at-the-start", EventType: asyncevent.FirstCome, RequestedAt: r.RequestedAt}) // no capacityShards, no prequeueUntil
		require.NoError(t, err)
		another := b.clientOn(t, asynceventtest.DynamoDB(t), asyncevent.Options{})
		o, done, _ := asyncevent.NewProcessor(another, asyncevent.ProcessOptions{}).ProcessOne(ctx, queue.Delivery{MessageID: "m", Body: body, ReceiveCount: 1}, 0, nil)
		assert.False(t, done)
		assert.Equal(t, asyncevent.OutcomeWaitingForPrequeue, o.Kind)

		b.clock.Advance(asyncevent.DefaultDrawSettleWindow)
		res := b.serve(t, b.c)
		assert.Equal(t, []string{before.RequestID}, res.Order)
		assert.Equal(t, []string{before.RequestID}, res.Winners)
	})

	t.Run("a failed read of the entry on its message's last receive leaves it to the serve", func(t *testing.T) {
		// The gate reads the entry's request (GetItem, strongly consistent) to tell an
		// entry from a sale click; a read that fails on the last receive (a connection
		// reset, a throttle) leaves the entry waiting, and the first entry of the
		// order wins.
		t.Parallel()
		ctx := context.Background()
		b := prequeueSetup(t, drop{seats: 1, shards: 1})
		b.clock.Advance(time.Second)
		entries := b.click(t, "early", 3)

		// A worker whose reads of requests fail (a connection error on every GetItem of a
		// REQ# item), on the same table.
		faulty := asynceventtest.NewFaultyDynamoDB(asynceventtest.DynamoDB(t), asynceventtest.FaultPlan{
			Seed: 1, FailRate: 1, Operations: []string{"GetItem"}, KeyPrefix: "REQ#"})
		worker := asyncevent.NewProcessor(b.clientOn(t, faulty, asyncevent.Options{}), asyncevent.ProcessOptions{})

		b.q.mu.Lock()
		first := b.q.sent[0]
		b.q.mu.Unlock()
		// The entry's message on its last receive (SQS maxReceiveCount 5, the default).
		o, _, _ := worker.ProcessOne(ctx, queue.Delivery{MessageID: "m0", Body: first.Body, ReceiveCount: asyncevent.DefaultMaxReceives}, 0, nil)
		t.Logf("outcome of the entry's last receive: %s (%v)", o.Kind, o.Err)

		r, err := b.c.GetRequest(ctx, o.RequestID)
		require.NoError(t, err)
		assert.Equal(t, asyncevent.StatusQueued, r.Status,
			"entry %s was decided by a worker before the start (%s %s); it must wait for the serve", r.RequestID, r.Status, r.ResultCode)

		b.toStart(asyncevent.DefaultDrawSettleWindow)
		res := b.serve(t, b.c)
		assert.Len(t, res.Order, len(entries))
		assert.Equal(t, res.Order[:1], res.Winners, "the first entry of the order wins the one seat")
	})

	t.Run("a sealed seed stays off the table until the serve, and the backlog after it finds every entry decided", func(t *testing.T) {
		// Only the seed's commitment is on the table before the freeze (Options.Seeds),
		// and the serve reveals the seed; the workers' backlog of the entries'
		// messages, delivered after the serve, changes nothing.
		t.Parallel()
		b := prequeueSetup(t, drop{seats: 2, opts: asyncevent.Options{Seeds: hmacSeeds(t, newSecret(t))}})
		assert.Len(t, b.event.SeedCommitment, 64)
		b.clock.Advance(time.Minute)
		b.click(t, "early", 6)
		for _, item := range asynceventtest.ScanTable(t, b.c.TableName()) {
			_, has := item["seed"]
			assert.False(t, has, "no seed on the table before the freeze: %v", item["PK"])
		}

		b.toStart(asyncevent.DefaultDrawSettleWindow)
		res := b.serve(t, b.c) // no worker took any entry's message yet
		assert.NotEmpty(t, res.Record.Seed)
		b.clock.Advance(10 * time.Second)
		for id, o := range deliverAll(t, b.worker, b.q) {
			assert.Equal(t, asyncevent.OutcomeDuplicate, o.Kind, "%s: decided by the serve", id)
		}
		v := b.verify(t)
		assert.True(t, v.OK(), v.String())
		assert.Equal(t, res.Order[:2], v.Winners)
	})
}

// The serve keeps the drawn order, and exactly N, whatever runs beside it: a second
// serve, a seat released or added meanwhile, claims failing on an entry.
func TestPrequeueServeKeepsTheOrder(t *testing.T) {
	t.Run("two serves at once on two clients come to one order", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		const seats, clicks = 7, 30
		b := prequeueSetup(t, drop{seats: seats, shards: 3})
		b.clock.Advance(time.Minute)
		entries := b.click(t, "early", clicks)
		b.toStart(asyncevent.DefaultDrawSettleWindow)
		other := b.clientOn(t, asynceventtest.DynamoDB(t), asyncevent.Options{DrawConcurrency: 3})
		var results [2]*asyncevent.PrequeueResult
		var g sync.WaitGroup
		for i, cl := range []*asyncevent.Client{b.c, other} {
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
		v := b.verify(t)
		assert.True(t, v.OK(), v.String())
		assert.Equal(t, results[0].Order[:seats], v.Winners)
		st, err := b.c.EventStats(ctx, "drop")
		require.NoError(t, err)
		assert.Zero(t, st.Fairness.Inversions, "the entries' drawn order is no inversion of queue order")
		capacity, err := b.c.GetCapacity(ctx, "drop")
		require.NoError(t, err)
		assert.Zero(t, capacity.CapacityRemaining)
	})

	t.Run("a seat released during the serve goes to the next entry, and the serve keeps its waves", func(t *testing.T) {
		// With holds, an entry the serve processes cannot take the pool's seats
		// (poolOpen: no holds only); the hold sweep hands them on. A winner releasing
		// its seat as soon as it is HELD must not turn the serve into one wave an
		// entry, each a strong read of every capacity shard and the pool: 100 entries
		// for 1 seat take a handful of waves.
		t.Parallel()
		ctx := context.Background()
		b := prequeueSetup(t, drop{seats: 1, holdFor: time.Minute})
		b.clock.Advance(time.Minute)
		b.click(t, "early", 100)
		b.toStart(asyncevent.DefaultDrawSettleWindow)

		db := &waveCounter{afterFirstStatus: afterFirstStatus{DynamoDB: asynceventtest.DynamoDB(t), status: asyncevent.StatusHeld}}
		var released string
		db.then = func() {
			// The first winner gives its seat back at once (Release, by its request).
			for _, item := range asynceventtest.ScanTable(t, b.c.TableName()) {
				if s, ok := item["status"].(*types.AttributeValueMemberS); ok && s.Value == string(asyncevent.StatusHeld) {
					released = item["requestId"].(*types.AttributeValueMemberS).Value
				}
			}
			_, err := b.c.Release(ctx, released)
			assert.NoError(t, err)
		}
		began := time.Now()
		res := b.serve(t, b.clientOn(t, db, asyncevent.Options{}))
		require.NotEmpty(t, released)
		t.Logf("served %d entries in %s with %d reads of the capacity item", res.Served, time.Since(began), db.reads.Load())
		// The reads are the waves' (seatsLeft) and the losers' looks at their home shard
		// (one each once the serve's processor knows the event sold out: from 37 to 99 of
		// them, as the refusals race). A wave for each entry adds one read per entry: 198
		// in all; at most 99 looks and a few waves without it.
		assert.Less(t, db.reads.Load(), int64(150), "strong reads of the capacity item: a wave for each entry?")

		_, err := b.c.SweepHolds(ctx, "drop", asyncevent.HoldSweepOptions{})
		require.NoError(t, err)
		assert.Equal(t, asyncevent.StatusHeld, b.status(t, res.Order[1]), "the released seat goes to the next entry of the order")
	})

	t.Run("a seat added during the serve goes to the next entry of the order", func(t *testing.T) {
		// Seats an operator adds while the serve runs go to the entries not yet served,
		// in the order (ServePrequeue): added once every shard is empty, the seat is
		// the pool's, and the serve counts it before its next wave. Added right after
		// the first entry won, it goes to the second. Three drops: the refusals race.
		t.Parallel()
		for n := range 3 {
			t.Run(fmt.Sprint("drop ", n), func(t *testing.T) {
				ctx := context.Background()
				b := prequeueSetup(t, drop{seats: 1, shards: 1})
				b.clock.Advance(time.Minute)
				b.click(t, "early", 40)
				b.toStart(asyncevent.DefaultDrawSettleWindow)

				db := &afterFirstStatus{DynamoDB: asynceventtest.DynamoDB(t), status: asyncevent.StatusSucceeded}
				db.then = func() {
					up, err := b.c.AddCapacity(ctx, "drop", asyncevent.AddCapacityInput{Seats: 1, Actor: "ops"})
					if assert.NoError(t, err) {
						assert.True(t, up.Applied, up.Reason)
					}
				}
				res := b.serve(t, b.clientOn(t, db, asyncevent.Options{}))
				t.Logf("winners at places %v of the order", places(res.Order, res.Winners))
				assert.Equal(t, res.Order[:2], res.Winners, "the first entry wins the seat it found, the second the seat added before it was served")

				v := b.verify(t)
				t.Logf("VerifyPrequeue: %s", v)
				if v.OK() { // "the first N in the order won", it says
					assert.Equal(t, v.Order[:len(v.Winners)], v.Winners, "VerifyPrequeue OK: %s", v)
				}
			})
		}
	})

	t.Run("claims failing on the first entry do not forfeit its place", func(t *testing.T) {
		// The serve is the only one deciding entries, and is resumable: a transient
		// fault is no reason to end an entry. Five failed claims in a row on the
		// capacity item for the first entry (connection errors, as many as
		// DefaultMaxReceives; some 10 s of the serve's backoff) leave it the first
		// entry of the order, and it wins the one seat.
		if testing.Short() {
			t.Skip("waits out the serve's backoff, some 10 s")
		}
		t.Parallel()
		ctx := context.Background()
		b := prequeueSetup(t, drop{seats: 1, shards: 1})
		b.clock.Advance(time.Minute)
		entries := b.click(t, "early", 3)

		// The order, from the seed the Draw record keeps (Options.Seeds unset) and the
		// entries: the test's own look, to aim the failures at the first entry.
		var seedHex string
		for _, item := range asynceventtest.ScanTable(t, b.c.TableName()) {
			if s, ok := item["seed"].(*types.AttributeValueMemberS); ok && pkOf(item) == "EVENT#drop" {
				seedHex = s.Value
			}
		}
		require.NotEmpty(t, seedHex)
		seed, err := hex.DecodeString(seedHex)
		require.NoError(t, err)
		order := draw.Order(seed, entries)

		db := &capacityWriteFaults{DynamoDB: asynceventtest.DynamoDB(t), victim: order[0], budget: asyncevent.DefaultMaxReceives,
			err: errors.New("dial tcp: connection refused (injected)")}
		server := b.clientOn(t, db, asyncevent.Options{})
		b.toStart(asyncevent.DefaultDrawSettleWindow)
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		res, err := server.ServePrequeue(sctx, "drop")
		require.NoError(t, err)
		require.Equal(t, order, res.Order)
		first, err := b.c.GetRequest(ctx, order[0])
		require.NoError(t, err)
		t.Logf("first entry of the order: %s %s", first.Status, first.ResultCode)
		assert.Equal(t, order[:1], res.Winners, "the first entry of the drawn order wins the one seat")

		v := b.verify(t)
		t.Logf("VerifyPrequeue: %s", v)
	})
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

// alterItem updates an item of c's table behind the library's back: update, with :v
// set to v.
func alterItem(t *testing.T, c *asyncevent.Client, key asyncevent.Key, update string, v types.AttributeValue) {
	t.Helper()
	_, err := asynceventtest.DynamoDB(t).UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(c.TableName()),
		Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: key.PK}, "SK": &types.AttributeValueMemberS{Value: key.SK},
		},
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String("attribute_exists(PK)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": v},
	})
	require.NoError(t, err)
}

// afterFirstStatus runs then, once, right after the first write that gives a request
// status has landed.
type afterFirstStatus struct {
	asyncevent.DynamoDB
	status asyncevent.Status
	once   sync.Once
	then   func()
}

func (a *afterFirstStatus) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := a.DynamoDB.UpdateItem(ctx, in, o...)
	if err == nil && len(pkOf(in.Key)) > 4 && pkOf(in.Key)[:4] == "REQ#" {
		for _, v := range in.ExpressionAttributeValues {
			if s, ok := v.(*types.AttributeValueMemberS); ok && s.Value == string(a.status) {
				a.once.Do(a.then)
			}
		}
	}
	return out, err
}

// waveCounter counts the serve's strongly consistent reads of the capacity item (one
// a wave: seatsLeft), and runs then once right after the first request has status.
type waveCounter struct {
	afterFirstStatus
	reads atomic.Int64
}

func (w *waveCounter) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if skOf(in.Key) == "CAPACITY" && in.ConsistentRead != nil && *in.ConsistentRead {
		w.reads.Add(1)
	}
	return w.DynamoDB.GetItem(ctx, in, o...)
}

// capacityWriteFaults fails (with err) the first budget writes of the event's
// capacity items once victim is set; every other call passes. (A throttle,
// ProvisionedThroughputExceededException, would throttle the serve's final failure
// as well, and so leave the entry undecided whatever the serve does.)
type capacityWriteFaults struct {
	asyncevent.DynamoDB
	mu     sync.Mutex
	victim string
	budget int
	hits   int
	err    error
}

func (v *capacityWriteFaults) hit(key map[string]types.AttributeValue) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.victim == "" || skOf(key) != "CAPACITY" || v.hits >= v.budget {
		return false
	}
	v.hits++
	return true
}

func (v *capacityWriteFaults) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if v.hit(in.Key) {
		return nil, v.err
	}
	return v.DynamoDB.UpdateItem(ctx, in, o...)
}

func (v *capacityWriteFaults) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	for _, it := range in.TransactItems {
		if it.Update != nil && v.hit(it.Update.Key) {
			return nil, v.err
		}
	}
	return v.DynamoDB.TransactWriteItems(ctx, in, o...)
}

func skOf(key map[string]types.AttributeValue) string {
	if s, ok := key["SK"].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

func pkOf(key map[string]types.AttributeValue) string {
	if s, ok := key["PK"].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// places are the places of winners in order, from 0.
func places(order, winners []string) []int {
	var at []int
	for _, w := range winners {
		for i, id := range order {
			if id == w {
				at = append(at, i)
			}
		}
	}
	return at
}
