package asyncevent_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/queue"
)

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// twiceQueue sends every message twice: a duplicate send, as SQS's at-least-once
// delivery may produce.
type twiceQueue struct{ queue.Queue }

func (q twiceQueue) Send(ctx context.Context, m queue.OutgoingMessage) error {
	if err := q.Queue.Send(ctx, m); err != nil {
		return err
	}
	return q.Queue.Send(ctx, m)
}

// fastRetry makes retried messages come back quickly in tests.
func fastRetry(int) time.Duration { return 20 * time.Millisecond }

// requestsOf returns every request of an event, read through GSI2 by the test kit.
func requestsOf(t *testing.T, c *asyncevent.Client, eventID string) []asyncevent.Request {
	t.Helper()
	var out []asyncevent.Request
	for _, raw := range items(t, c)[entity.Request] {
		r := asynceventtest.UnmarshalRequest(t, raw)
		if r.EventID == eventID {
			out = append(out, r)
		}
	}
	return out
}

func countBy[T comparable](rs []asyncevent.Request, key func(asyncevent.Request) T) map[T]int {
	m := map[T]int{}
	for _, r := range rs {
		m[key(r)]++
	}
	return m
}

// newSale returns a client on a fresh table with a FIRST_COME event "sale".
func newSale(t *testing.T, capacity int64) *asyncevent.Client {
	t.Helper()
	c := asynceventtest.NewTable(t)
	_, err := c.CreateEvent(context.Background(), asyncevent.EventSettings{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: capacity})
	require.NoError(t, err)
	return c
}

func TestExactlyNWinnersUnderDuplicateDelivery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newSale(t, 100)
	q := queue.NewMemory(queue.MemoryOptions{})

	const users = 1000
	var wg sync.WaitGroup
	for i := range users {
		wg.Go(func() {
			_, err := c.Submit(ctx, twiceQueue{q}, "sale", fmt.Sprintf("user-%04d", i))
			assert.NoError(t, err)
		})
		if i%50 == 49 {
			wg.Wait()
		}
	}
	wg.Wait()
	require.Equal(t, 2*users, q.Len().Visible)

	var outcomes sync.Map
	var workers []*asyncevent.Worker
	for range 8 {
		w, err := asyncevent.NewWorker(c, q, asyncevent.WorkerOptions{
			Concurrency: 4, WaitTime: 50 * time.Millisecond,
			ProcessOptions: asyncevent.ProcessOptions{Backoff: fastRetry, OnOutcome: func(o asyncevent.Outcome) {
				n, _ := outcomes.LoadOrStore(o.Kind, new(atomic.Int64))
				n.(*atomic.Int64).Add(1)
			}},
		})
		require.NoError(t, err)
		require.NoError(t, w.Start(ctx))
		workers = append(workers, w)
	}
	asynceventtest.WaitDrained(t, q, time.Minute)
	for _, w := range workers {
		require.NoError(t, w.Stop(ctx))
	}

	rs := requestsOf(t, c, "sale")
	require.Len(t, rs, users)
	byStatus := countBy(rs, func(r asyncevent.Request) asyncevent.Status { return r.Status })
	assert.Equal(t, map[asyncevent.Status]int{asyncevent.StatusSucceeded: 100, asyncevent.StatusRejected: 900}, byStatus)
	byCode := countBy(rs, func(r asyncevent.Request) asyncevent.ResultCode { return r.ResultCode })
	assert.Equal(t, 900, byCode[asyncevent.ResultRejectedCapacity])
	capacity, err := c.GetCapacity(ctx, "sale")
	require.NoError(t, err)
	assert.Zero(t, capacity.CapacityRemaining)
	for _, r := range rs {
		if r.Status == asyncevent.StatusSucceeded {
			assert.NotZero(t, r.StartedAt, "a winner was started")
		} // a loser met once the event was known sold out never was (one write)
		assert.GreaterOrEqual(t, r.FinishedAt, r.StartedAt)
		assert.GreaterOrEqual(t, r.FinishedAt, r.QueuedAt)
		assert.Equal(t, asyncevent.UIResultOf(r.Status), r.UIResult)
	}
	dups, _ := outcomes.Load(asyncevent.OutcomeDuplicate)
	leaseHeld, _ := outcomes.Load(asyncevent.OutcomeLeaseHeld)
	var seen int64
	for _, n := range []any{dups, leaseHeld} {
		if n != nil {
			seen += n.(*atomic.Int64).Load()
		}
	}
	assert.GreaterOrEqual(t, seen, int64(users), "every second copy was recognised")
}

func TestWorkerWinsTheQueuedRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 1})
	require.NoError(t, err)

	// Ingest wrote the request and sent the message, but had not yet written QUEUED
	// when the worker got the message.
	p, err := c.Rows().Participate(ctx, "sale", "ann")
	require.NoError(t, err)
	sentAt := t0.Add(40 * time.Millisecond)
	body, err := asyncevent.EncodeMessage(asyncevent.Message{V: 1, RequestID: p.RequestID, EventID: "sale", UserID: "ann",
		EventType: asyncevent.FirstCome, RequestedAt: p.Request.RequestedAt})
	require.NoError(t, err)
	clock.Advance(time.Second)
	proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	failed := asynceventtest.Process(ctx, proc, []queue.Delivery{{MessageID: "m1", Body: body, ReceiveCount: 1, SentAt: sentAt}})
	assert.Empty(t, failed)

	r, err := c.GetRequest(ctx, p.RequestID)
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusSucceeded, r.Status)
	assert.Equal(t, p.Request.QueuedAt, r.QueuedAt, "queuedAt is the put's, not the send time")
	assert.Equal(t, asyncevent.MillisOf(t0), r.QueuedAt)
	page, err := c.ListUserRequests(ctx, "ann", asyncevent.PageOptions{})
	require.NoError(t, err)
	require.Len(t, page.Requests, 1, "the put wrote the index keys")
	assert.Equal(t, r.QueuedAt, page.Requests[0].QueuedAt)

	// Ingest's late MarkQueued changes nothing.
	m, err := asyncevent.DecodeMessage(body)
	require.NoError(t, err)
	tr, err := c.Rows().MarkQueued(ctx, m.Ref())
	require.NoError(t, err)
	assert.False(t, tr.Applied)
	again, err := c.GetRequest(ctx, p.RequestID)
	require.NoError(t, err)
	assert.Equal(t, r, again)
}

// submitted makes a FIRST_COME event with capacity n, submits users, and returns the
// deliveries of their messages.
func submitted(t *testing.T, c *asyncevent.Client, capacity int64, users ...string) (*queue.Memory, []queue.Delivery) {
	t.Helper()
	ctx := context.Background()
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: capacity})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	for _, u := range users {
		_, err := c.Submit(ctx, q, "sale", u)
		require.NoError(t, err)
	}
	ds, err := q.Receive(ctx, 10, 0, time.Minute)
	require.NoError(t, err)
	require.Len(t, ds, len(users))
	return q, ds
}

func TestCancelledWorkerIsTakenOverWithoutSpendingTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now, StatusLog: true})
	_, ds := submitted(t, c, 5, "ann")

	// Worker A is cancelled between its start and its final write.
	ctxA, cancelA := context.WithCancel(ctx)
	a := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{WorkerID: "A", Handler: asyncevent.HandlerFunc(func(ctx context.Context, _ asyncevent.Message) error {
		cancelA()
		return ctx.Err()
	})})
	assert.Len(t, asynceventtest.Process(ctxA, a, ds), 1, "A did not finish it")
	m, err := asyncevent.DecodeMessage(ds[0].Body)
	require.NoError(t, err)
	r, err := asyncevent.ReadStoredRequest(ctx, c, m.RequestID)
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusProcessing, r.Status)

	// B takes it over (A released its lease on the way out) and finishes it. (With a
	// Handler, as A: a worker without one would bind the seat of its home claim with no
	// lease of its own.)
	ds[0].ReceiveCount = 2
	b := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{WorkerID: "B", Handler: asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error { return nil })})
	assert.Empty(t, asynceventtest.Process(ctx, b, ds))
	r, err = asyncevent.ReadStoredRequest(ctx, c, m.RequestID)
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusSucceeded, r.Status)
	assert.Contains(t, r.LeaseOwner, "B/")
	capacity, err := c.GetCapacity(ctx, "sale")
	require.NoError(t, err)
	assert.Equal(t, int64(4), capacity.CapacityRemaining)

	// A redelivery afterwards is a duplicate and spends nothing.
	ds[0].ReceiveCount = 3
	assert.Empty(t, asynceventtest.Process(ctx, a, ds))
	capacity, err = c.GetCapacity(ctx, "sale")
	require.NoError(t, err)
	assert.Equal(t, int64(4), capacity.CapacityRemaining)

	logs, err := c.ListStatusLogs(ctx, m.RequestID)
	require.NoError(t, err)
	var path []asyncevent.Status
	for _, l := range logs {
		path = append(path, l.ToStatus)
	}
	assert.Equal(t, []asyncevent.Status{asyncevent.StatusReceived, asyncevent.StatusQueued, asyncevent.StatusProcessing,
		asyncevent.StatusProcessing, asyncevent.StatusSucceeded}, path)
}

// faultDB fails every call once dead is set: a process that died.
type faultDB struct {
	asyncevent.DynamoDB
	dead atomic.Bool
	// loseNextTransaction applies the next TransactWriteItems and then reports a
	// failure, as when the response is lost on the way back.
	loseNextTransaction atomic.Bool
}

var errDead = errors.New("connection reset by peer")

func (f *faultDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if f.dead.Load() {
		return nil, errDead
	}
	return f.DynamoDB.UpdateItem(ctx, in, o...)
}

func (f *faultDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if f.dead.Load() {
		return nil, errDead
	}
	out, err := f.DynamoDB.TransactWriteItems(ctx, in, o...)
	if err == nil && f.loseNextTransaction.CompareAndSwap(true, false) {
		return nil, errDead
	}
	return out, err
}

func TestCrashedWorkersLeaseExpiresAndIsTakenOver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	_, ds := submitted(t, c, 5, "ann")

	// A starts the request, then its process dies: nothing more reaches the table.
	fault := &faultDB{DynamoDB: asynceventtest.DynamoDB(t)}
	cA, err := asyncevent.New(fault, asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	a := asyncevent.NewProcessor(cA, asyncevent.ProcessOptions{WorkerID: "A", LeaseDuration: 30 * time.Second,
		Handler: asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error { fault.dead.Store(true); return errDead })})
	assert.Len(t, asynceventtest.Process(ctx, a, ds), 1)

	// B finds A's live lease and leaves the message for later.
	b := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{WorkerID: "B"})
	ds[0].ReceiveCount = 2
	res := asynceventtest.WorkDelivery(ctx, t, c, ds[0], asyncevent.ProcessOptions{WorkerID: "B"})
	assert.True(t, res.Redeliver)
	assert.Equal(t, asyncevent.OutcomeLeaseHeld, res.Kind)

	// Once the lease has expired, B takes over and finishes.
	clock.Advance(31 * time.Second)
	ds[0].ReceiveCount = 3
	assert.Empty(t, asynceventtest.Process(ctx, b, ds))
	capacity, err := c.GetCapacity(ctx, "sale")
	require.NoError(t, err)
	assert.Equal(t, int64(4), capacity.CapacityRemaining)
}

func TestLostTransactionResponseDoesNotSpendTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fault := &faultDB{DynamoDB: asynceventtest.DynamoDB(t)}
	c := asynceventtest.NewTableOn(t, fault, asyncevent.Options{})
	_, ds := submitted(t, c, 5, "ann")

	fault.loseNextTransaction.Store(true)
	p := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{Backoff: fastRetry})
	asynceventtest.Process(ctx, p, ds) // the seat is taken, but the worker hears of a failure
	for i := 2; i <= 3; i++ {          // redeliveries
		ds[0].ReceiveCount = i
		assert.Empty(t, asynceventtest.Process(ctx, p, ds))
	}
	m, _ := asyncevent.DecodeMessage(ds[0].Body)
	r, err := c.GetRequest(ctx, m.RequestID)
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusSucceeded, r.Status)
	capacity, err := c.GetCapacity(ctx, "sale")
	require.NoError(t, err)
	assert.Equal(t, int64(4), capacity.CapacityRemaining, "one seat, not two")
}

// runWorker starts a worker on q and stops it when the test ends.
func runWorker(t *testing.T, c *asyncevent.Client, q queue.Queue, opts asyncevent.WorkerOptions) *asyncevent.Worker {
	t.Helper()
	if opts.WaitTime == 0 {
		opts.WaitTime = 50 * time.Millisecond
	}
	if opts.Backoff == nil {
		opts.Backoff = fastRetry
	}
	w, err := asyncevent.NewWorker(c, q, opts)
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		assert.NoError(t, w.Stop(ctx))
	})
	return w
}

func TestPoisonMessagesAndFailingHandlersEndInTheDeadLetters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newSale(t, 10)
	q := queue.NewMemory(queue.MemoryOptions{MaxReceives: 3})

	// A poison message naming a real request, one naming nothing, a user whose
	// handler always fails, a user whose handler panics, and a healthy user.
	poisoned, err := c.Rows().Participate(ctx, "sale", "poisoned")
	require.NoError(t, err)
	require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte(`{"v":1,"requestId":"` + poisoned.RequestID + `","eventId":`)}))
	require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte(`not json at all`)}))
	ids := map[string]string{}
	for _, u := range []string{"failing", "panicking", "healthy"} {
		p, err := c.Submit(ctx, q, "sale", u)
		require.NoError(t, err)
		ids[u] = p.RequestID
	}
	handler := asyncevent.HandlerFunc(func(_ context.Context, m asyncevent.Message) error {
		switch m.UserID {
		case "failing":
			return errors.New("downstream is down")
		case "panicking":
			panic("handler bug")
		}
		return nil
	})
	runWorker(t, c, q, asyncevent.WorkerOptions{ProcessOptions: asyncevent.ProcessOptions{Handler: handler, MaxReceives: 3}})
	asynceventtest.WaitDrained(t, q, time.Minute)

	assert.Len(t, q.DeadLetters(), 3, "the two poison messages and the failing one")
	get := func(id string) *asyncevent.Request {
		r, err := c.GetRequest(ctx, id)
		require.NoError(t, err)
		return r
	}
	r := get(poisoned.RequestID)
	assert.Equal(t, asyncevent.StatusFailedFinal, r.Status)
	assert.Equal(t, asyncevent.ResultFailedSerde, r.ResultCode)
	assert.Equal(t, asyncevent.NonRetryable, r.FailureClass)

	r = get(ids["failing"])
	assert.Equal(t, asyncevent.StatusFailedFinal, r.Status)
	assert.Equal(t, asyncevent.ResultFailedWorker, r.ResultCode)
	assert.Equal(t, asyncevent.Retryable, r.FailureClass)
	assert.Contains(t, r.ErrorMessage, "after 3 receives: downstream is down")

	r = get(ids["panicking"])
	assert.Equal(t, asyncevent.StatusFailedFinal, r.Status)
	assert.Equal(t, asyncevent.ResultFailedWorker, r.ResultCode)
	assert.Equal(t, "PANIC", r.ErrorCode)
	assert.Contains(t, r.ErrorMessage, "handler bug")

	assert.Equal(t, asyncevent.StatusSucceeded, get(ids["healthy"]).Status, "the worker kept serving")
}

func TestPermanentHandlerErrorFailsAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTable(t)
	_, ds := submitted(t, c, 1, "bot")
	calls := 0
	p := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{Handler: asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error {
		calls++
		return asyncevent.Permanent(errors.New("user is not eligible: " + strings.Repeat("reason ", 100)))
	})})
	assert.Empty(t, asynceventtest.Process(ctx, p, ds), "done: the message can go")
	m, _ := asyncevent.DecodeMessage(ds[0].Body)
	r, err := c.GetRequest(ctx, m.RequestID)
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusFailedFinal, r.Status)
	assert.Equal(t, asyncevent.ResultFailedValidation, r.ResultCode)
	assert.Equal(t, asyncevent.NonRetryable, r.FailureClass)
	assert.LessOrEqual(t, len([]rune(r.ErrorMessage)), 256)
	capacity, err := c.GetCapacity(ctx, "sale")
	require.NoError(t, err)
	assert.Equal(t, int64(1), capacity.CapacityRemaining, "no seat spent on a refused user")
	assert.Equal(t, 1, calls)
}

func TestGracefulStopFinishesWorkInFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newSale(t, 100)
	q := queue.NewMemory(queue.MemoryOptions{})
	for i := range 12 {
		_, err := c.Submit(ctx, q, "sale", fmt.Sprintf("u%d", i))
		require.NoError(t, err)
	}
	var started atomic.Int64
	slow := asyncevent.HandlerFunc(func(ctx context.Context, _ asyncevent.Message) error {
		started.Add(1)
		return sleepCtx(ctx, 300*time.Millisecond)
	})
	w, err := asyncevent.NewWorker(c, q, asyncevent.WorkerOptions{Concurrency: 4, WaitTime: 50 * time.Millisecond,
		ProcessOptions: asyncevent.ProcessOptions{Handler: slow}})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	eventually(t, "work in flight", func() bool { return started.Load() >= 4 })
	require.NoError(t, w.Stop(ctx))
	<-w.Done()

	finished := 0
	for _, r := range requestsOf(t, c, "sale") {
		switch r.Status {
		case asyncevent.StatusSucceeded:
			finished++
		case asyncevent.StatusQueued:
		default:
			t.Errorf("request %s left %s", r.RequestID, r.Status)
		}
	}
	assert.Equal(t, int(started.Load()), finished, "every message started was finished")
	assert.Equal(t, 12-finished, q.Len().Visible, "the rest wait on the queue")
	assert.Zero(t, q.Len().InFlight)
}

func TestStopDeadlineReleasesWorkInFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTable(t)
	q, ds := submitted(t, c, 5, "ann", "bob")
	for _, d := range ds { // submitted received them; make them visible again
		require.NoError(t, q.ChangeVisibility(ctx, d.Receipt, 0))
	}
	var started atomic.Int64
	stuck := asyncevent.HandlerFunc(func(ctx context.Context, _ asyncevent.Message) error {
		started.Add(1)
		<-ctx.Done()
		return ctx.Err()
	})
	w, err := asyncevent.NewWorker(c, q, asyncevent.WorkerOptions{WaitTime: 50 * time.Millisecond,
		ProcessOptions: asyncevent.ProcessOptions{Handler: stuck, Backoff: func(int) time.Duration { return 0 }}})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	eventually(t, "both in flight", func() bool { return started.Load() == 2 })
	stopCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, w.Stop(stopCtx), context.DeadlineExceeded)

	// Released: visible again at once, and no longer under a live lease.
	assert.Equal(t, 2, q.Len().Visible)
	p := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	ds, err = q.Receive(ctx, 10, 0, time.Minute)
	require.NoError(t, err)
	assert.Empty(t, asynceventtest.Process(ctx, p, ds))
	capacity, err := c.GetCapacity(ctx, "sale")
	require.NoError(t, err)
	assert.Equal(t, int64(3), capacity.CapacityRemaining)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A handler that runs 10 s, five visibility timeouts, keeps its message to its worker
// by the heartbeat. The worker's ticks and the handler's sleep are on the wall clock:
// the test runs InBubble, where they cost no wall time.
func TestHeartbeatKeepsALongMessageToItsWorker(t *testing.T) {
	t.Parallel()
	asynceventtest.InBubble(t, func(t *testing.T) {
		ctx := context.Background()
		c := asynceventtest.NewTable(t)
		q, ds := submitted(t, c, 1, "ann")
		require.NoError(t, q.ChangeVisibility(ctx, ds[0].Receipt, 0))

		var calls atomic.Int64
		slow := asyncevent.HandlerFunc(func(ctx context.Context, _ asyncevent.Message) error {
			calls.Add(1)
			return sleepCtx(ctx, 10*time.Second) // five visibility timeouts
		})
		// Two seconds apiece, a heartbeat each second, on the bubble's clock (where a
		// lease write takes no time: outside one, a loaded CI machine's DynamoDB Local
		// has taken more than half a second for it).
		opts := asyncevent.WorkerOptions{VisibilityTimeout: 2 * time.Second,
			ProcessOptions: asyncevent.ProcessOptions{Handler: slow, LeaseDuration: 2 * time.Second}}
		runWorker(t, c, q, opts)
		runWorker(t, c, q, opts) // a second worker, polling the whole time
		asynceventtest.WaitDrained(t, q, time.Minute)
		assert.Equal(t, int64(1), calls.Load(), "no other delivery while the first was alive")
		m, _ := asyncevent.DecodeMessage(ds[0].Body)
		r, err := c.GetRequest(ctx, m.RequestID)
		require.NoError(t, err)
		assert.Equal(t, asyncevent.StatusSucceeded, r.Status)
	})
}

func TestMessageWithoutRequestIsDropped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newSale(t, 1)
	res := asynceventtest.Work(ctx, t, c, asyncevent.Message{V: 1, RequestID: "never-written", EventID: "sale",
		UserID: "ghost", EventType: asyncevent.FirstCome, RequestedAt: 1}, asyncevent.ProcessOptions{})
	assert.False(t, res.Redeliver)
	assert.Equal(t, asyncevent.OutcomeNotFound, res.Kind)
	assert.Empty(t, items(t, c)[entity.Request], "nothing written for it")
}

// A worker whose lease expired and was taken over writes nothing more: its seat claim
// and its rejection both find the lease lost, and only the new owner finishes.
func TestTakenOverLeaseWritesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	_, ds := submitted(t, c, 5, "ann")
	m, err := asyncevent.DecodeMessage(ds[0].Body)
	require.NoError(t, err)

	tr, err := c.Rows().StartProcessing(ctx, m.Ref(), asyncevent.Lease{Owner: "A", Duration: 30 * time.Second})
	require.NoError(t, err)
	require.True(t, tr.Applied)
	clock.Advance(31 * time.Second) // A stalls past its lease
	tr, err = c.Rows().StartProcessing(ctx, m.Ref(), asyncevent.Lease{Owner: "B", Duration: 30 * time.Second})
	require.NoError(t, err)
	require.True(t, tr.Applied, "B takes the expired lease over")

	tr, err = c.Rows().ClaimSeat(ctx, m.Ref(), asyncevent.Lease{Owner: "A"})
	require.NoError(t, err)
	assert.False(t, tr.Applied, "A's seat claim is a lost condition")
	assert.False(t, tr.SoldOut)
	require.NotNil(t, tr.Current)
	assert.Equal(t, "B", asyncevent.StoredCurrent(tr).LeaseOwner)
	tr, err = c.Rows().MarkCapacityRejected(ctx, m.Ref(), asyncevent.Lease{Owner: "A"})
	require.NoError(t, err)
	assert.False(t, tr.Applied, "A's rejection is a lost condition")
	r, err := c.GetRequest(ctx, m.RequestID)
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusProcessing, r.Status, "still B's")
	capacity, err := c.GetCapacity(ctx, "sale")
	require.NoError(t, err)
	assert.Equal(t, int64(5), capacity.CapacityRemaining, "A spent nothing")

	tr, err = c.Rows().ClaimSeat(ctx, m.Ref(), asyncevent.Lease{Owner: "B"})
	require.NoError(t, err)
	assert.True(t, tr.Applied)
	capacity, err = c.GetCapacity(ctx, "sale")
	require.NoError(t, err)
	assert.Equal(t, int64(4), capacity.CapacityRemaining)
}

// Once a worker has seen the event sold out, each further loser is one read of its
// home shard (no seat of its own there) and one conditional write: no start, no
// lease, no handler, no transaction.
func TestSoldOutLoserIsOneWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	counter := asynceventtest.NewCounter(asynceventtest.DynamoDB(t))
	c := asynceventtest.NewTableOn(t, counter, asyncevent.Options{ProgressEvery: -1})
	_, ds := submitted(t, c, 1, "ann", "bob", "cat", "dan")
	var handled atomic.Int64
	p := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{Handler: asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error {
		handled.Add(1)
		return nil
	})})
	require.Empty(t, asynceventtest.Process(ctx, p, ds[:1]), "ann wins the one seat")
	require.Empty(t, asynceventtest.Process(ctx, p, ds[1:2]), "bob finds it sold out")
	require.Equal(t, int64(2), handled.Load())

	before := counter.Snapshot()
	require.Empty(t, asynceventtest.Process(ctx, p, ds[2:]))
	d := counter.Snapshot().Sub(before)
	assert.Equal(t, map[string]int{"GetItem": 2, "UpdateItem": 2}, d.Calls, "cat and dan: a look at the home shard and one write each")
	assert.Equal(t, int64(2), handled.Load(), "no handler for a known loser")

	for _, delivery := range ds[2:] {
		m, err := asyncevent.DecodeMessage(delivery.Body)
		require.NoError(t, err)
		r, err := asyncevent.ReadStoredRequest(ctx, c, m.RequestID)
		require.NoError(t, err)
		assert.Equal(t, asyncevent.StatusRejected, r.Status)
		assert.Equal(t, asyncevent.ResultRejectedCapacity, r.ResultCode)
		assert.Empty(t, r.LeaseOwner, "never held under a lease")
		assert.NotZero(t, r.QueuedAt)
	}
	// A duplicate delivery of a loser is a lost condition, not a second write.
	res := asynceventtest.WorkDelivery(ctx, t, c, ds[2], asyncevent.ProcessOptions{})
	assert.Equal(t, asyncevent.OutcomeDuplicate, res.Kind)
	asynceventtest.CheckEvent(t, c, "sale", asynceventtest.CheckOptions{})
}

// TestStrictModeKeepsQueueOrder: with a FIFO queue and one message group per event
// (the strict mode), the winners are exactly the first N in queue order: no
// inversions, however many workers.
func TestStrictModeKeepsQueueOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, clock := newIngest(t, asyncevent.Options{}) // capacity 10
	q := queue.NewMemory(queue.MemoryOptions{FIFO: true})
	var ids []string
	for i := range 40 {
		p, err := c.Submit(ctx, q, "ev", fmt.Sprintf("u%02d", i))
		require.NoError(t, err)
		ids = append(ids, p.RequestID)
		clock.Advance(time.Millisecond)
	}
	for range 4 {
		w, err := asyncevent.NewWorker(c, q, asyncevent.WorkerOptions{Concurrency: 4, WaitTime: 20 * time.Millisecond})
		require.NoError(t, err)
		require.NoError(t, w.Start(ctx))
		t.Cleanup(func() { assert.NoError(t, w.Stop(ctx)) })
	}
	asynceventtest.WaitDrained(t, q, time.Minute)
	st, err := c.EventStats(ctx, "ev")
	require.NoError(t, err)
	assert.Equal(t, 10, st.ByStatus[asyncevent.StatusSucceeded])
	assert.Zero(t, st.Fairness.Inversions)
	for i, id := range ids {
		r, err := c.GetRequest(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, i < 10, r.Status == asyncevent.StatusSucceeded, "request %d", i)
	}
}

// processingLog records, from ProcessOptions.OnOutcome, the order in which requests
// reached an outcome that decides them.
type processingLog struct {
	mu    sync.Mutex
	order []string // requestIds
}

func (l *processingLog) onOutcome(o asyncevent.Outcome) {
	switch o.Kind {
	case asyncevent.OutcomeSucceeded, asyncevent.OutcomeRejected:
		l.mu.Lock()
		l.order = append(l.order, o.RequestID)
		l.mu.Unlock()
	}
}

func (l *processingLog) requests() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.order...)
}

// submitInOrder submits users one after another to a FIRST_COME event "sale" and
// returns their requestIds in send order.
func submitInOrder(t *testing.T, c *asyncevent.Client, q queue.Queue, users int) []string {
	t.Helper()
	ids := make([]string, users)
	for i := range ids {
		p, err := c.Submit(context.Background(), q, "sale", fmt.Sprintf("u%03d", i))
		require.NoError(t, err)
		ids[i] = p.RequestID
	}
	return ids
}

// winners returns the requestIds of the event's SUCCEEDED requests once every one
// of want requests is final.
func winnersOnceFinal(t *testing.T, c *asyncevent.Client, want int) map[string]bool {
	t.Helper()
	var rs []asyncevent.Request
	eventually(t, "every request final", func() bool {
		rs = requestsOf(t, c, "sale")
		if len(rs) != want {
			return false
		}
		for _, r := range rs {
			if !r.Status.IsTerminal() {
				return false
			}
		}
		return true
	})
	won := map[string]bool{}
	for _, r := range rs {
		if r.Status == asyncevent.StatusSucceeded {
			won[r.RequestID] = true
		}
	}
	return won
}

// TestStrictModeFollowsQueueOrder runs a first-come event in strict mode (a FIFO
// queue, ingest's one message group per event) with several workers that each take
// up to ten of the group per receive: the requests are processed exactly in send
// order, so the winners are exactly the first N sent.
func TestStrictModeFollowsQueueOrder(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"memory", "sqs"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			const capacity, users = 7, 60
			c := newSale(t, capacity)
			q := testQueue(t, kind, true)
			sent := submitInOrder(t, c, q, users)

			log := &processingLog{}
			// A handler of uneven speed: run at once, a batch's messages would
			// finish out of order.
			jitter := asyncevent.HandlerFunc(func(ctx context.Context, _ asyncevent.Message) error {
				return sleepCtx(ctx, time.Duration(rand.IntN(4))*time.Millisecond)
			})
			for range 3 {
				runWorker(t, c, q, asyncevent.WorkerOptions{Concurrency: 10, BatchSize: 10, WaitTime: 100 * time.Millisecond,
					ProcessOptions: asyncevent.ProcessOptions{Handler: jitter, OnOutcome: log.onOutcome}})
			}
			won := winnersOnceFinal(t, c, users)

			assert.Equal(t, sent, log.requests(), "processed in send order")
			want := map[string]bool{}
			for _, id := range sent[:capacity] {
				want[id] = true
			}
			assert.Equal(t, want, won, "the winners are the first %d sent", capacity)
		})
	}
}

// TestWorkerRunsAGroupInReceiveOrder gives one worker a FIFO batch of two groups and
// group-less messages: each group's messages run one after another in receive order;
// after one that is not done, the group's later ones are made visible again, unstarted,
// and come back behind it.
func TestWorkerRunsAGroupInReceiveOrder(t *testing.T) {
	t.Parallel()
	c := newSale(t, 100)
	q := queue.NewMemory(queue.MemoryOptions{FIFO: true})
	sent := submitInOrder(t, c, q, 6)

	var mu sync.Mutex
	var ran []string
	failed := false
	handler := asyncevent.HandlerFunc(func(_ context.Context, m asyncevent.Message) error {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, m.RequestID)
		if m.RequestID == sent[2] && !failed {
			failed = true
			return fmt.Errorf("downstream is down")
		}
		return nil
	})
	runWorker(t, c, q, asyncevent.WorkerOptions{Concurrency: 10, ProcessOptions: asyncevent.ProcessOptions{Handler: handler}})
	asynceventtest.WaitDrained(t, q, 30*time.Second)

	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{sent[0], sent[1], sent[2], sent[2], sent[3], sent[4], sent[5]}, ran,
		"the failure comes back first, and nothing after it ran before it")
	for _, r := range requestsOf(t, c, "sale") {
		assert.Equal(t, asyncevent.StatusSucceeded, r.Status)
	}
}

// TestProcessKeepsAGroupsOrder is asynceventtest.Process on a batch of two groups:
// each group in receive order, and the rest of a group after a message that is not
// done returned unprocessed, as queue.Groups says a worker does.
func TestProcessKeepsAGroupsOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newSale(t, 100)
	q := queue.NewMemory(queue.MemoryOptions{})
	sent := submitInOrder(t, c, q, 6)
	var ds []queue.Delivery
	for len(ds) < 6 {
		got, err := q.Receive(ctx, 6-len(ds), time.Second, time.Minute)
		require.NoError(t, err)
		ds = append(ds, got...)
	}
	for i := range ds {
		ds[i].GroupID = []string{"a", "b"}[i%2]
	}
	var mu sync.Mutex
	var ran []string
	p := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{Handler: asyncevent.HandlerFunc(func(_ context.Context, m asyncevent.Message) error {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, m.RequestID)
		if m.RequestID == sent[2] {
			return fmt.Errorf("downstream is down")
		}
		return nil
	})})
	failed := asynceventtest.Process(ctx, p, ds)

	assert.Equal(t, []string{ds[2].MessageID, ds[4].MessageID}, failed, "group a stops at its failure")
	var a, b []string
	for _, id := range ran {
		switch id {
		case sent[0], sent[2], sent[4]:
			a = append(a, id)
		default:
			b = append(b, id)
		}
	}
	assert.Equal(t, []string{sent[0], sent[2]}, a)
	assert.Equal(t, []string{sent[1], sent[3], sent[5]}, b)
}

// gatedQueue holds each Receive until the test opens its gate, and tells when one
// is waiting there. Past the gate, a receive on a CancelSafeQueue goes on as usual;
// on any other it behaves as an SQS long poll does: the queue answers it whether or
// not its caller has given up, and what a caller who has given up is handed stays
// hidden for the visibility timeout.
type gatedQueue struct {
	queue.Queue
	polling chan struct{}
	gate    chan struct{}
}

func newGatedQueue(q queue.Queue) gatedQueue {
	return gatedQueue{Queue: q, polling: make(chan struct{}, 1), gate: make(chan struct{})}
}

func (q gatedQueue) Receive(ctx context.Context, max int, wait, visibility time.Duration) ([]queue.Delivery, error) {
	select {
	case q.polling <- struct{}{}:
	default:
	}
	<-q.gate
	if q.ReceiveIsCancelSafe() {
		return q.Queue.Receive(ctx, max, wait, visibility)
	}
	ds, err := q.Queue.Receive(context.WithoutCancel(ctx), max, wait, visibility)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return ds, err
}

func (q gatedQueue) ReceiveIsCancelSafe() bool {
	cs, ok := q.Queue.(queue.CancelSafeQueue)
	return ok && cs.ReceiveIsCancelSafe()
}

// testQueue returns a queue.Memory or a queue on the local SQS (fauxqs).
func testQueue(t *testing.T, kind string, fifo bool) queue.Queue {
	t.Helper()
	if kind == "memory" {
		return queue.NewMemory(queue.MemoryOptions{FIFO: fifo})
	}
	return asynceventtest.NewSQSQueue(t, asynceventtest.SQSQueueOptions{FIFO: fifo})
}

// hidden is longer than any wait of these tests: a message left hidden by a stopping
// worker would come back only after the test has failed.
const hidden = 2 * time.Minute

// TestStoppingWorkerGivesBackItsLastReceive stops a worker while its long poll is in
// flight, then the first user clicks and the poll is answered: her message, which an
// SQS poll is handed after the stop began, is not started and not left hidden, and
// she wins against the users who click after her on the restarted worker.
func TestStoppingWorkerGivesBackItsLastReceive(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"memory", "sqs"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			c := newSale(t, 3)
			q := newGatedQueue(testQueue(t, kind, false))
			log := &processingLog{}
			old, err := asyncevent.NewWorker(c, q, asyncevent.WorkerOptions{WaitTime: 5 * time.Second, VisibilityTimeout: hidden,
				ProcessOptions: asyncevent.ProcessOptions{OnOutcome: log.onOutcome}})
			require.NoError(t, err)
			startCtx, stop := context.WithCancel(ctx)
			require.NoError(t, old.Start(startCtx))
			select {
			case <-q.polling:
			case <-time.After(30 * time.Second):
				t.Fatal("the worker never polled")
			}
			stop() // the stop begins: Start's ctx ends
			sent := submitInOrder(t, c, q, 1)
			close(q.gate)
			stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			require.NoError(t, old.Stop(stopCtx), "the poll in flight ends within WaitTime")
			assert.Empty(t, log.requests(), "nothing started after the stop began")

			for _, u := range []string{"u001", "u002", "u003", "u004"} {
				p, err := c.Submit(ctx, q, "sale", u)
				require.NoError(t, err)
				sent = append(sent, p.RequestID)
			}
			runWorker(t, c, q.Queue, asyncevent.WorkerOptions{Concurrency: 1, VisibilityTimeout: hidden})
			won := winnersOnceFinal(t, c, len(sent))
			assert.True(t, won[sent[0]], "the first to click wins")
			if kind == "memory" { // a queue.Memory delivers in the order messages became visible
				assert.Equal(t, map[string]bool{sent[0]: true, sent[1]: true, sent[2]: true}, won)
			}
		})
	}
}

// TestWorkerRestartedMidSpikeKeepsStrictOrder restarts the only worker of a strict
// first-come event in the middle of its spike, while it holds a batch of the event's
// group: what it has not started goes back at once, in order, and the new worker
// carries on from there. Processing follows send order exactly across the restart,
// and the winners are the first N sent.
func TestWorkerRestartedMidSpikeKeepsStrictOrder(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"memory", "sqs"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			const capacity, users = 5, 30
			c := newSale(t, capacity)
			q := testQueue(t, kind, true)
			sent := submitInOrder(t, c, q, users)

			log := &processingLog{}
			reached, proceed := make(chan struct{}), make(chan struct{})
			var once sync.Once
			blockAtThird := asyncevent.HandlerFunc(func(_ context.Context, m asyncevent.Message) error {
				if m.RequestID == sent[2] {
					once.Do(func() { close(reached) })
					<-proceed
				}
				return nil
			})
			old, err := asyncevent.NewWorker(c, q, asyncevent.WorkerOptions{Concurrency: 10, WaitTime: time.Second, VisibilityTimeout: hidden,
				ProcessOptions: asyncevent.ProcessOptions{Handler: blockAtThird, OnOutcome: log.onOutcome}})
			require.NoError(t, err)
			startCtx, stop := context.WithCancel(ctx)
			require.NoError(t, old.Start(startCtx))
			select {
			case <-reached:
			case <-time.After(30 * time.Second):
				t.Fatal("the worker never reached the third request")
			}
			stop()
			close(proceed)
			stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			require.NoError(t, old.Stop(stopCtx))
			assert.Equal(t, sent[:3], log.requests(), "the stopping worker finished what it had started and started nothing more")

			runWorker(t, c, q, asyncevent.WorkerOptions{Concurrency: 10, VisibilityTimeout: hidden,
				ProcessOptions: asyncevent.ProcessOptions{OnOutcome: log.onOutcome}})
			won := winnersOnceFinal(t, c, users)
			assert.Equal(t, sent, log.requests(), "processed in send order across the restart")
			want := map[string]bool{}
			for _, id := range sent[:capacity] {
				want[id] = true
			}
			assert.Equal(t, want, won)
		})
	}
}

// queueDepth is the number of messages on an SQS queue, visible or in flight.
func queueDepth(t *testing.T, q *queue.SQS) int {
	t.Helper()
	out, err := asynceventtest.SQS(t).GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(q.URL()),
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	require.NoError(t, err)
	n := 0
	for _, v := range out.Attributes {
		k, err := strconv.Atoi(v)
		require.NoError(t, err)
		n += k
	}
	return n
}

// TestWorkerOnSQS runs ingest and workers on SQS (fauxqs), standard and FIFO: exactly
// N winners, and poison or always-failing messages end FAILED_FINAL and in the
// dead-letter queue by the queue's own redrive, while the worker serves the rest.
func TestWorkerOnSQS(t *testing.T) {
	t.Parallel()
	for _, fifo := range []bool{false, true} {
		t.Run(fmt.Sprintf("fifo=%t", fifo), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			c := newSale(t, 10)
			q := asynceventtest.NewSQSQueue(t, asynceventtest.SQSQueueOptions{FIFO: fifo, MaxReceives: 2, VisibilityTimeout: 30 * time.Second})

			for i := range 30 {
				_, err := c.Submit(ctx, q, "sale", fmt.Sprintf("u%02d", i))
				require.NoError(t, err)
			}
			failing, err := c.Submit(ctx, q, "sale", "failing")
			require.NoError(t, err)
			require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte(`{"v":1,`), GroupID: "sale", DeduplicationID: "poison"}))

			handler := asyncevent.HandlerFunc(func(_ context.Context, m asyncevent.Message) error {
				if m.UserID == "failing" {
					return errors.New("downstream is down")
				}
				return nil
			})
			runWorker(t, c, q, asyncevent.WorkerOptions{WaitTime: time.Second, Concurrency: 4,
				ProcessOptions: asyncevent.ProcessOptions{Handler: handler, MaxReceives: 2, Backoff: func(int) time.Duration { return 0 }}})
			// The failing user's message dead-letters unless a worker already knew
			// the event sold out when it came: a known loser is rejected in one write,
			// without the handler.
			dlq := asynceventtest.DeadLetterQueue(t, q)
			var r *asyncevent.Request
			eventually(t, "main queue empty, the poison and the failing user's message dead-lettered", func() bool {
				var err error
				if r, err = c.GetRequest(ctx, failing.RequestID); err != nil || !r.Status.IsTerminal() {
					return false
				}
				want := 1
				if r.Status == asyncevent.StatusFailedFinal {
					want = 2
				}
				return queueDepth(t, q) == 0 && queueDepth(t, dlq) == want
			})

			rs := requestsOf(t, c, "sale")
			byStatus := countBy(rs, func(r asyncevent.Request) asyncevent.Status { return r.Status })
			if r.Status == asyncevent.StatusFailedFinal {
				assert.Equal(t, map[asyncevent.Status]int{
					asyncevent.StatusSucceeded: 10, asyncevent.StatusRejected: 20, asyncevent.StatusFailedFinal: 1,
				}, byStatus)
				assert.Equal(t, asyncevent.ResultFailedWorker, r.ResultCode)
				assert.Contains(t, r.ErrorMessage, "after 2 receives")
			} else {
				assert.Equal(t, map[asyncevent.Status]int{asyncevent.StatusSucceeded: 10, asyncevent.StatusRejected: 21}, byStatus)
				assert.Equal(t, asyncevent.ResultRejectedCapacity, r.ResultCode)
			}
		})
	}
}
