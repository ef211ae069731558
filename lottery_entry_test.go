package asyncevent_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// entryWorld is a lottery "lotto" (cutoff an hour after t0, on a stopped clock) with
// users submitted at t0, and their messages.
type entryWorld struct {
	db       asyncevent.DynamoDB
	c        *asyncevent.Client
	clock    *asynceventtest.Clock
	messages []queue.Delivery
}

func newEntryWorld(t *testing.T, users int) *entryWorld {
	t.Helper()
	ctx := context.Background()
	w := &entryWorld{db: asynceventtest.DynamoDB(t), clock: asynceventtest.NewClock(t0)}
	w.c = asynceventtest.NewTableOn(t, w.db, asyncevent.Options{Clock: w.clock.Now})
	_, err := w.c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "lotto", EventType: asyncevent.Lottery,
		WinnerCount: 1, LotteryCutoffAt: asyncevent.MillisOf(cutoff)})
	require.NoError(t, err)
	q := &sendQueue{}
	for i := range users {
		_, err := w.c.Submit(ctx, q, "lotto", fmt.Sprintf("user-%d", i))
		require.NoError(t, err)
	}
	for i, m := range q.sent {
		w.messages = append(w.messages, queue.Delivery{MessageID: fmt.Sprint(i), Receipt: fmt.Sprint(i), Body: m.Body, ReceiveCount: 1})
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

func (w *entryWorld) request(t *testing.T, d queue.Delivery) *asyncevent.Request {
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

// From the entries' fence on, a worker leaves an entry to the draw, collected or not:
// it neither runs the handler nor fails it, whatever its cache of the event says.
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
	p, err := stale.Rows().Participate(ctx, "lotto", "user-0") // a duplicate click fills its cache
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

	// The worker whose cache still says COLLECTING leaves it to the draw too: the
	// fence is time, not the cached phase.
	o, done, _ := staleProc.ProcessOne(ctx, w.messages[1], 0, nil)
	assert.Equal(t, asyncevent.OutcomeLeftToDraw, o.Kind)
	assert.True(t, done)
	assert.Equal(t, asyncevent.StatusQueued, w.request(t, w.messages[1]).Status)

	// So does a worker that knows the draw began.
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

	tr, err := w.c.Rows().MarkClosed(ctx, r.RequestID)
	require.NoError(t, err)
	assert.False(t, tr.Applied, "queued by the cutoff: not late")
	tr, err = w.c.Rows().MarkFailed(ctx, r.Ref(), asyncevent.Failure{Class: asyncevent.NonRetryable, Code: asyncevent.ResultFailedWorker, ErrorCode: "X", Cause: errors.New("x")})
	require.NoError(t, err)
	assert.False(t, tr.Applied, "an entry leaves the running only through the draw's check")
	assert.Equal(t, r.Status, w.request(t, w.messages[0]).Status)
}

// A lottery entry's handler that runs longer than the message's visibility keeps the
// message hidden meanwhile, as a first-come request's heartbeat does.
func TestLongLotteryHandlerKeepsItsMessageHidden(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newEntryWorld(t, 1)
	p := asyncevent.NewProcessor(w.c, asyncevent.ProcessOptions{Handler: asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error {
		time.Sleep(350 * time.Millisecond)
		return nil
	})})
	var kept atomic.Int64
	o, done, _ := p.ProcessOne(ctx, w.messages[0], 200*time.Millisecond, func(context.Context) error {
		kept.Add(1)
		return nil
	})
	assert.Equal(t, asyncevent.OutcomeCollected, o.Kind)
	assert.True(t, done)
	assert.GreaterOrEqual(t, kept.Load(), int64(2), "visibility extended every half visibility while the handler ran")
}

// Every process of a lottery must agree on the settle window, and a window too short
// for a write in flight at the fence to land is refused.
func TestDrawSettleWindowIsValidated(t *testing.T) {
	t.Parallel()
	db := asynceventtest.DynamoDB(t)
	for _, bad := range []time.Duration{-time.Hour, time.Millisecond, 999 * time.Millisecond} {
		_, err := asyncevent.New(db, asyncevent.Options{DrawSettleWindow: bad})
		assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions, "%s", bad)
	}
	_, err := asyncevent.New(db, asyncevent.Options{DrawSettleWindow: time.Second})
	assert.NoError(t, err)
}

// laggingGSI2 serves GSI2 Queries, while lagging is set, as an index that has not
// yet caught up with a failure: a request FAILED_FINAL still shows as QUEUED.
// DynamoDB propagates to a global secondary index eventually ("usually a fraction of
// a second", no bound); DynamoDB Local updates its indexes with the write.
type laggingGSI2 struct {
	asyncevent.DynamoDB
	lagging *atomic.Bool
}

func (l laggingGSI2) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := l.DynamoDB.Query(ctx, in, optFns...)
	if err != nil || in.IndexName == nil || *in.IndexName != "GSI2" || !l.lagging.Load() {
		return out, err
	}
	for _, item := range out.Items {
		if st, _ := item["status"].(*types.AttributeValueMemberS); st != nil && st.Value == string(asyncevent.StatusFailedFinal) {
			item["status"] = &types.AttributeValueMemberS{Value: string(asyncevent.StatusQueued)}
			delete(item, "resultCode")
		}
	}
	return out, err
}

// An entry refused just before the entries' fence, which GSI2 still shows waiting
// when the draw reads it, is not drawn: the draw confirms each entry no worker has
// collected with a strongly consistent read. Past the fence a refusal leaves the
// entry to the draw.
func TestEntryRefusedJustBeforeTheFenceIsNotDrawn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newEntryWorld(t, 3)
	refuse := asyncevent.NewProcessor(w.c, asyncevent.ProcessOptions{Handler: asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error {
		return asyncevent.Permanent(errors.New("not eligible"))
	})})
	// The fence: the draw's opening (cutoff + 30 s) less a second.
	w.clock.Advance(time.Hour + asyncevent.DefaultDrawSettleWindow - 3*time.Second)
	o, _, _ := refuse.ProcessOne(ctx, w.messages[0], 0, nil)
	require.Equal(t, asyncevent.OutcomeFailed, o.Kind, "two seconds before the fence: time to land")
	w.clock.Advance(2 * time.Second)
	o, _, _ = refuse.ProcessOne(ctx, w.messages[1], 0, nil)
	require.Equal(t, asyncevent.OutcomeLeftToDraw, o.Kind, "at the fence the entry is the draw's")

	w.clock.Advance(time.Second)
	var lagging atomic.Bool
	lagging.Store(true)
	drawer := w.client(t, laggingGSI2{DynamoDB: w.db, lagging: &lagging}, asyncevent.Options{})
	res, err := drawer.Draw(ctx, "lotto")
	require.NoError(t, err)
	assert.Equal(t, int64(2), res.Record.EntryCount, "the refused entry is no entry, whatever GSI2 still shows")
	lagging.Store(false)
	v, err := w.c.VerifyDraw(ctx, "lotto")
	require.NoError(t, err)
	assert.True(t, v.OK(), "%s", v)
	assert.Equal(t, asyncevent.StatusFailedFinal, w.request(t, w.messages[0]).Status)
}
