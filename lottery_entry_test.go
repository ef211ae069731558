package asyncevent_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

// entryWorld is a lottery "lotto" (cutoff an hour after t0, on a stopped clock) with
// users submitted at t0, and their messages.
type entryWorld struct {
	db       asyncevent.DynamoDB
	c        *asyncevent.Client
	clock    *asynceventtest.Clock
	messages []asyncevent.Delivery
}

func newEntryWorld(t *testing.T, users int) *entryWorld {
	t.Helper()
	ctx := context.Background()
	w := &entryWorld{db: asynceventtest.DynamoDB(t), clock: asynceventtest.NewClock(t0)}
	w.c = asynceventtest.NewTableOn(t, w.db, asyncevent.Options{Clock: w.clock.Now})
	_, err := w.c.CreateEvent(ctx, asyncevent.EventConfig{EventID: "lotto", EventType: asyncevent.Lottery,
		WinnerCount: 1, LotteryCutoffAt: asyncevent.MillisOf(cutoff)})
	require.NoError(t, err)
	q := &sendQueue{}
	for i := range users {
		_, err := w.c.Submit(ctx, q, "lotto", fmt.Sprintf("user-%d", i))
		require.NoError(t, err)
	}
	for i, m := range q.sent {
		w.messages = append(w.messages, asyncevent.Delivery{MessageID: fmt.Sprint(i), Receipt: fmt.Sprint(i), Body: m.Body, ReceiveCount: 1})
	}
	return w
}

// client returns another client of the same table (another process), with opts.
func (w *entryWorld) client(t *testing.T, db asyncevent.DynamoDB, opts asyncevent.Options) *asyncevent.Client {
	t.Helper()
	opts.TableName, opts.Clock = w.c.TableName(), w.clock.Now
	c, err := asyncevent.New(db, opts)
	require.NoError(t, err)
	return c
}

func (w *entryWorld) request(t *testing.T, d asyncevent.Delivery) *asyncevent.Request {
	t.Helper()
	m, err := asyncevent.DecodeMessage(d.Body)
	require.NoError(t, err)
	r, err := w.c.GetRequest(context.Background(), m.RequestID)
	require.NoError(t, err)
	return r
}

// A redelivered entry that a worker has collected is a duplicate: the service's
// handler runs once.
func TestCollectedEntryIsADuplicate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newEntryWorld(t, 1)
	calls := 0
	p := asyncevent.NewProcessor(w.c, asyncevent.ProcessOptions{Handler: asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error {
		calls++
		return nil
	})})
	o, done, _ := p.ProcessOne(ctx, w.messages[0], 0, nil)
	assert.Equal(t, asyncevent.OutcomeCollected, o.Kind)
	assert.True(t, done)
	r := w.request(t, w.messages[0])
	assert.Equal(t, asyncevent.StatusQueued, r.Status)
	assert.Equal(t, asyncevent.MillisOf(t0), r.StartedAt, "collected at")

	o, done, _ = p.ProcessOne(ctx, w.messages[0], 0, nil)
	assert.Equal(t, asyncevent.OutcomeDuplicate, o.Kind)
	assert.True(t, done)
	assert.Equal(t, 1, calls, "the handler ran once")
}

// Once the draw has begun, a worker leaves an entry to it, collected or not: it
// neither runs the handler nor fails it, even when its cache of the event is stale.
func TestEntriesMetAfterTheFreezeAreLeftToTheDraw(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newEntryWorld(t, 3)

	// A worker whose event cache was filled while the event was COLLECTING, and
	// keeps it for an hour: it does not see the draw begin.
	stale := w.client(t, w.db, asyncevent.Options{EventCacheTTL: 2 * time.Hour})
	refuse := asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error {
		return asyncevent.Permanent(errors.New("not eligible"))
	})
	staleProc := asyncevent.NewProcessor(stale, asyncevent.ProcessOptions{Handler: refuse})
	p, err := stale.Participate(ctx, "lotto", "user-0") // a duplicate click fills its cache
	require.NoError(t, err)
	require.True(t, p.Duplicate)
	o, _, _ := asyncevent.NewProcessor(stale, asyncevent.ProcessOptions{}).ProcessOne(ctx, w.messages[0], 0, nil)
	require.Equal(t, asyncevent.OutcomeCollected, o.Kind)

	// A draw that froze the entries and stopped before reading them.
	w.clock.Advance(time.Hour + asyncevent.DefaultDrawSettleWindow)
	stopped := w.client(t, asynceventtest.NewFaultyDynamoDB(w.db, asynceventtest.FaultPlan{FailRate: 1, Operations: []string{"Query"}}), asyncevent.Options{})
	_, err = stopped.Draw(ctx, "lotto")
	require.Error(t, err)
	record, err := w.c.GetDraw(ctx, "lotto")
	require.NoError(t, err)
	require.Equal(t, asyncevent.PhaseDrawing, record.Phase)

	// The stale worker runs the handler (it believes the draw is COLLECTING), which
	// refuses the entry; the failure's check of the draw's phase leaves it to the draw.
	o, done, _ := staleProc.ProcessOne(ctx, w.messages[1], 0, nil)
	assert.Equal(t, asyncevent.OutcomeLeftToDraw, o.Kind)
	assert.True(t, done)
	assert.Equal(t, asyncevent.StatusQueued, w.request(t, w.messages[1]).Status)

	// A worker that knows the draw began does not even run the handler.
	fresh := asyncevent.NewProcessor(w.client(t, w.db, asyncevent.Options{}), asyncevent.ProcessOptions{Handler: refuse})
	o, done, _ = fresh.ProcessOne(ctx, w.messages[2], 0, nil)
	assert.Equal(t, asyncevent.OutcomeLeftToDraw, o.Kind)
	assert.True(t, done)

	res, err := w.c.Draw(ctx, "lotto")
	require.NoError(t, err)
	assert.Equal(t, int64(3), res.Record.EntryCount)
	v, err := w.c.VerifyDraw(ctx, "lotto")
	require.NoError(t, err)
	assert.True(t, v.OK(), "%s", v)
	for _, d := range w.messages {
		assert.True(t, w.request(t, d).Status.IsTerminal())
	}
}

// Before the draw, an entry refused by the handler leaves the running (the failure's
// ConditionCheck finds the draw COLLECTING), and the draw does not count it.
func TestEntryRefusedBeforeTheDrawIsNoEntry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newEntryWorld(t, 2)
	p := asyncevent.NewProcessor(w.c, asyncevent.ProcessOptions{Handler: asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error {
		return asyncevent.Permanent(errors.New("not eligible"))
	})})
	o, done, _ := p.ProcessOne(ctx, w.messages[0], 0, nil)
	assert.Equal(t, asyncevent.OutcomeFailed, o.Kind)
	assert.True(t, done)
	r := w.request(t, w.messages[0])
	assert.Equal(t, asyncevent.StatusFailedFinal, r.Status)
	assert.Equal(t, asyncevent.ResultFailedValidation, r.ResultCode)

	w.clock.Advance(time.Hour + asyncevent.DefaultDrawSettleWindow)
	res, err := w.c.Draw(ctx, "lotto")
	require.NoError(t, err)
	assert.Equal(t, int64(1), res.Record.EntryCount)
	v, err := w.c.VerifyDraw(ctx, "lotto")
	require.NoError(t, err)
	assert.True(t, v.OK(), "%s", v)
}

// Neither MarkClosed nor MarkFailed ends an entry queued by the cutoff: their
// conditions refuse it, whoever calls them.
func TestEntriesQueuedByTheCutoffCannotBeClosedOrFailedOutright(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newEntryWorld(t, 1)
	r := w.request(t, w.messages[0])
	w.clock.Advance(2 * time.Hour)

	tr, err := w.c.MarkClosed(ctx, r.RequestID)
	require.NoError(t, err)
	assert.False(t, tr.Applied, "queued by the cutoff: not late")
	tr, err = w.c.MarkFailed(ctx, r.Ref(), asyncevent.Failure{Class: asyncevent.NonRetryable, Code: asyncevent.ResultFailedWorker, ErrorCode: "X", Cause: errors.New("x")})
	require.NoError(t, err)
	assert.False(t, tr.Applied, "an entry leaves the running only through the draw's check")
	assert.Equal(t, r.Status, w.request(t, w.messages[0]).Status)
}
