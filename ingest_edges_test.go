package asyncevent_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/queue"
)

// afterPut wraps a DynamoDB client and calls a hook once a PutItem on an item whose PK
// starts with prefix has landed, or holds such a put back for a while (honouring its
// context, as the SDK would) before it goes.
type afterPut struct {
	asyncevent.DynamoDB
	prefix string
	landed func()        // called after each such put returns
	delay  time.Duration // held back before it is sent
	sent   atomic.Int32  // such puts sent on to DynamoDB
}

func (a *afterPut) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	pk, _ := in.Item["PK"].(*types.AttributeValueMemberS)
	ours := pk != nil && strings.HasPrefix(pk.Value, a.prefix)
	if ours && a.delay > 0 {
		select {
		case <-time.After(a.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if ours {
		a.sent.Add(1)
	}
	out, err := a.DynamoDB.PutItem(ctx, in, optFns...)
	if ours && a.landed != nil {
		a.landed()
	}
	return out, err
}

// A client that hangs up right after the lock's put landed (its HTTP request
// cancelled) still gets its click written, sent and processed: the lock is not left
// without its request.
func TestHungUpClientStillCompletesTheIngest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	opts := asyncevent.Options{Clock: clock.Now, StatusLog: true}
	admin := asynceventtest.NewTableWith(t, opts)
	_, err := admin.CreateEvent(ctx, asyncevent.EventSettings{EventID: "ev", EventType: asyncevent.FirstCome, CapacityTotal: 2})
	require.NoError(t, err)

	callerCtx, hangUp := context.WithCancel(ctx)
	defer hangUp()
	db := &afterPut{DynamoDB: asynceventtest.DynamoDB(t), prefix: "IDEMP#", landed: hangUp}
	opts.TableName = admin.TableName()
	c, err := asyncevent.New(db, opts)
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})

	p, err := c.Submit(callerCtx, q, "ev", "ann")
	require.NoError(t, err, "the writes after the lock do not run under the caller's context")
	require.Error(t, callerCtx.Err(), "the caller hung up after the lock landed")
	assert.False(t, p.Duplicate)
	r, err := admin.GetRequest(ctx, p.RequestID)
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusQueued, r.Status, "written, sent and marked queued")
	require.Equal(t, 1, q.Len().Visible, "its message is on the queue")

	proc := asyncevent.NewProcessor(admin, asyncevent.ProcessOptions{})
	ds, err := q.Receive(ctx, 10, 0, time.Minute)
	require.NoError(t, err)
	assert.Empty(t, asynceventtest.Process(ctx, proc, ds))
	r, err = admin.GetRequest(ctx, p.RequestID)
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusSucceeded, r.Status)
	report := asynceventtest.CheckEvent(t, admin, "ev", asynceventtest.CheckOptions{Users: []string{"ann"}})
	assert.Equal(t, 1, report.Locks, "the lock names its request")

	// A caller gone before the lock's put writes nothing.
	gone, cancel := context.WithCancel(ctx)
	cancel()
	_, err = c.Submit(gone, q, "ev", "bob")
	require.ErrorIs(t, err, context.Canceled)
	_, err = admin.LookupParticipation(ctx, "ev", "bob")
	assert.ErrorIs(t, err, asyncevent.ErrNotFound)
}

// A lottery's ingest writes nothing once its draw may begin (the cutoff plus
// DrawSettleWindow, less a quarter of the window here): a request put held back past
// that moment is never sent, and the lock it leaves is ended FAILED_FINAL, not made an
// entry, by the user's click after the cutoff.
func TestLotteryIngestStopsBeforeTheDrawMayBegin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	const window = time.Second // the deadline is 750 ms away at the cutoff
	// Without the status log the request's put is a PutItem, which afterPut holds back.
	opts := asyncevent.Options{Clock: clock.Now, DrawSettleWindow: window, RedriveAfter: time.Minute}
	admin := asynceventtest.NewTableWith(t, opts)
	cutoff := asyncevent.MillisOf(t0)
	_, err := admin.CreateEvent(ctx, asyncevent.EventSettings{EventID: "lotto", EventType: asyncevent.Lottery, WinnerCount: 1, LotteryCutoffAt: cutoff})
	require.NoError(t, err)
	db := &afterPut{DynamoDB: asynceventtest.DynamoDB(t), prefix: "REQ#", delay: 5 * time.Second}
	opts.TableName = admin.TableName()
	c, err := asyncevent.New(db, opts)
	require.NoError(t, err)
	q := &sendQueue{}

	began := time.Now()
	_, err = c.Submit(ctx, q, "lotto", "ann") // at the cutoff: still open
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(began), 5*time.Second, "cut off at the draw's deadline, not the request's own 10 s")
	assert.Zero(t, db.sent.Load(), "the request's put was never sent")
	assert.Empty(t, items(t, admin)[entity.Request])
	p, err := admin.LookupParticipation(ctx, "lotto", "ann")
	require.NoError(t, err, "the lock landed before the deadline")
	sent := len(q.messages(t)) // a message without its request, which a worker drops

	// After the cutoff, the user clicks again: within RedriveAfter the lock alone
	// answers; after it, its request is written FAILED_FINAL, never an entry.
	clock.Advance(time.Second)
	again, err := admin.Submit(ctx, q, "lotto", "ann")
	require.NoError(t, err, "a duplicate after the cutoff is its participation, not ErrEventClosed")
	assert.True(t, again.Duplicate)
	assert.Equal(t, p.RequestID, again.RequestID)
	assert.Empty(t, items(t, admin)[entity.Request])

	clock.Advance(time.Minute)
	ended, err := admin.Submit(ctx, q, "lotto", "ann")
	require.NoError(t, err)
	require.NotNil(t, ended.Request)
	assertIncomplete(t, ended.Request, p.ParticipatedAt, asyncevent.MillisOf(clock.Now()))
	assert.Greater(t, ended.Request.QueuedAt, cutoff, "never an entry of the draw")
	assert.Len(t, q.messages(t), sent, "nothing sent")

	_, err = admin.Submit(ctx, q, "lotto", "bob")
	assert.ErrorIs(t, err, asyncevent.ErrEventClosed, "a click after the cutoff without a lock")
}

func assertIncomplete(t *testing.T, r *asyncevent.Request, requestedAt, at asyncevent.EpochMillis) {
	t.Helper()
	assert.Equal(t, asyncevent.StatusFailedFinal, r.Status)
	assert.Equal(t, asyncevent.UIFailed, r.UIResult)
	assert.Equal(t, asyncevent.ResultFailedIngestEnqueue, r.ResultCode)
	assert.Equal(t, "INGEST_INCOMPLETE", r.ErrorCode)
	assert.Equal(t, asyncevent.NonRetryable, r.FailureClass)
	assert.NotEmpty(t, r.ErrorMessage)
	assert.Equal(t, requestedAt, r.RequestedAt, "requested when the lock was written")
	assert.Equal(t, at, r.QueuedAt)
	assert.Equal(t, at, r.FinishedAt)
}

// A lock left without its request (the ingest died between the two puts) and met by
// the user's click after the event ended is ended FAILED_FINAL with INGEST_INCOMPLETE:
// a final answer in the user's list and the admin's, no message, and later clicks are
// its duplicates.
func TestOrphanLockMetAfterTheEndEndsFailedFinal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	opts := asyncevent.Options{Clock: clock.Now, RedriveAfter: time.Minute, StatusLog: true}
	c := asynceventtest.NewTableWith(t, opts)
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "ev", EventType: asyncevent.FirstCome, CapacityTotal: 10,
		EndsAt: asyncevent.MillisOf(t0.Add(time.Second))})
	require.NoError(t, err)
	doomed := asynceventtest.NewFaultyDynamoDB(asynceventtest.DynamoDB(t), asynceventtest.FaultPlan{
		CrashAfterRate: 1, Operations: []string{"PutItem"}, KeyPrefix: "IDEMP#",
	})
	opts.TableName = c.TableName()
	dying, err := asyncevent.New(doomed, opts)
	require.NoError(t, err)
	_, err = dying.Submit(ctx, &sendQueue{}, "ev", "ann")
	require.Error(t, err, "the ingest died after the lock")
	p, err := c.LookupParticipation(ctx, "ev", "ann")
	require.NoError(t, err)

	clock.Advance(2 * time.Minute) // past the end and RedriveAfter
	q := &sendQueue{}
	ended, err := c.Submit(ctx, q, "ev", "ann")
	require.NoError(t, err, "not ErrEventClosed: the pair has a participation")
	assert.True(t, ended.Duplicate)
	assert.Equal(t, p.RequestID, ended.RequestID)
	require.NotNil(t, ended.Request)
	assertIncomplete(t, ended.Request, asyncevent.MillisOf(t0), asyncevent.MillisOf(clock.Now()))
	assert.Empty(t, q.messages(t))

	stored, err := c.GetRequest(ctx, p.RequestID)
	require.NoError(t, err)
	assert.Equal(t, ended.Request, stored)
	mine, err := c.ListUserRequests(ctx, "ann", asyncevent.PageOptions{})
	require.NoError(t, err)
	require.Len(t, mine.Requests, 1)
	assert.Equal(t, asyncevent.StatusFailedFinal, mine.Requests[0].Status)
	logs, err := c.ListStatusLogs(ctx, p.RequestID)
	require.NoError(t, err)
	require.Len(t, logs, 2)
	assert.Equal(t, asyncevent.StatusReceived, logs[0].ToStatus)
	assert.Equal(t, asyncevent.MillisOf(t0), logs[0].OccurredAt)
	assert.Equal(t, asyncevent.StatusFailedFinal, logs[1].ToStatus)
	st, err := c.EventStats(ctx, "ev")
	require.NoError(t, err)
	assert.Equal(t, map[asyncevent.ResultCode]int{asyncevent.ResultFailedIngestEnqueue: 1}, st.ByResultCode)

	again, err := c.Submit(ctx, q, "ev", "ann")
	require.NoError(t, err)
	assert.True(t, again.Duplicate)
	assert.Equal(t, p.RequestID, again.RequestID, "its lock stays, naming it")
	_, err = c.Submit(ctx, q, "ev", "bob")
	assert.ErrorIs(t, err, asyncevent.ErrEventClosed)
	asynceventtest.CheckEvent(t, c, "ev", asynceventtest.CheckOptions{Users: []string{"ann"}})
}

// tokenLedger emulates DynamoDB's ClientRequestToken rule on TransactWriteItems: a
// token seen before (answered or not) with other parameters is refused with
// IdempotentParameterMismatchException, as DynamoDB does for ten minutes.
type tokenLedger struct {
	asyncevent.DynamoDB
	mu     sync.Mutex
	seen   map[string]string // token → the call's items, as text
	fail   func(in *dynamodb.TransactWriteItemsInput) bool
	tokens []string
}

func (l *tokenLedger) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if in.ClientRequestToken != nil {
		token, params := *in.ClientRequestToken, describeItems(in.TransactItems)
		l.mu.Lock()
		l.tokens = append(l.tokens, token)
		before, ok := l.seen[token]
		l.seen[token] = params
		l.mu.Unlock()
		if ok && before != params {
			return nil, &types.IdempotentParameterMismatchException{Message: &token}
		}
	}
	if l.fail != nil && l.fail(in) {
		return nil, errors.New("connection reset") // recorded by DynamoDB, answer lost
	}
	return l.DynamoDB.TransactWriteItems(ctx, in, optFns...)
}

func describeItems(items []types.TransactWriteItem) string {
	var b strings.Builder
	for _, it := range items {
		if it.Put != nil {
			for _, k := range []string{"PK", "SK", "queuedAt"} {
				switch v := it.Put.Item[k].(type) {
				case *types.AttributeValueMemberS:
					b.WriteString(v.Value + "|")
				case *types.AttributeValueMemberN:
					b.WriteString(v.Value + "|")
				}
			}
		}
		b.WriteString(";")
	}
	return b.String()
}

// Healing a lock writes its request with a ClientRequestToken of its own: the first
// put's transaction (with the status log) was recorded by DynamoDB, its answer lost,
// and the heal's put, which differs from it, would otherwise be refused as an
// IdempotentParameterMismatch within ten minutes.
func TestHealUsesATokenOfItsOwn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	var broken atomic.Bool
	broken.Store(true)
	ledger := &tokenLedger{DynamoDB: asynceventtest.DynamoDB(t), seen: map[string]string{},
		fail: func(in *dynamodb.TransactWriteItemsInput) bool {
			pk := in.TransactItems[0].Put
			return broken.Load() && pk != nil && strings.HasPrefix(pk.Item["PK"].(*types.AttributeValueMemberS).Value, "REQ#")
		}}
	c := asynceventtest.NewTableOn(t, ledger, asyncevent.Options{Clock: clock.Now, RedriveAfter: time.Minute, StatusLog: true})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "ev", EventType: asyncevent.FirstCome, CapacityTotal: 10})
	require.NoError(t, err)
	q := &sendQueue{}

	_, err = c.Submit(ctx, q, "ev", "ann")
	require.Error(t, err, "the request's put never landed")
	require.Empty(t, items(t, c)[entity.Request])
	first := len(ledger.tokens)
	require.Positive(t, first)

	broken.Store(false)
	clock.Advance(2 * time.Minute) // well within DynamoDB's ten minutes
	healed, err := c.Submit(ctx, q, "ev", "ann")
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusQueued, healed.Request.Status)
	for _, tok := range ledger.tokens[first:] {
		assert.NotContains(t, ledger.tokens[:first], tok, "the heal reuses no token of the first put")
	}
}
