package asyncevent_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

func TestProcessOneReportsDoneOrTheRetryDelay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTable(t)
	_, ds := submitted(t, c, 1, "ann", "bob")

	busy := errors.New("eligibility service busy")
	calls := 0
	p := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{
		Backoff: func(receiveCount int) time.Duration { return time.Duration(receiveCount) * 7 * time.Second },
		Handler: asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error {
			calls++
			if calls == 1 {
				return busy
			}
			return nil
		}),
	})

	o, done, retryAfter := p.ProcessOne(ctx, ds[0], 0, nil)
	assert.Equal(t, asyncevent.OutcomeRetry, o.Kind)
	assert.ErrorIs(t, o.Err, busy)
	assert.False(t, done)
	assert.Equal(t, 7*time.Second, retryAfter, "the backoff of the first receive")

	ds[0].ReceiveCount = 2
	o, done, _ = p.ProcessOne(ctx, ds[0], 0, nil)
	assert.Equal(t, asyncevent.OutcomeSucceeded, o.Kind)
	assert.True(t, done)
	assert.Equal(t, ds[0].MessageID, o.MessageID)

	o, done, retryAfter = p.ProcessOne(ctx, ds[1], 0, nil)
	assert.Equal(t, asyncevent.OutcomeRejected, o.Kind)
	assert.Equal(t, asyncevent.ResultRejectedCapacity, o.ResultCode)
	assert.True(t, done)
	assert.Zero(t, retryAfter)
}

// A long handler keeps its message hidden and its lease alive: ProcessOne calls
// keepAlive and renews the lease while the handler runs.
func TestProcessOneHeartbeatsWhileTheHandlerRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTable(t)
	_, ds := submitted(t, c, 1, "ann")
	m, err := asyncevent.DecodeMessage(ds[0].Body)
	require.NoError(t, err)

	var keptAlive atomic.Int64
	p := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{
		LeaseDuration: 2 * time.Second,
		Handler: asyncevent.HandlerFunc(func(ctx context.Context, _ asyncevent.Message) error {
			first, err := asyncevent.ReadStoredRequest(ctx, c, m.RequestID)
			if err != nil {
				return err
			}
			deadline := time.Now().Add(time.Minute)
			for time.Now().Before(deadline) {
				r, err := asyncevent.ReadStoredRequest(ctx, c, m.RequestID)
				if err != nil {
					return err
				}
				if r.LeaseExpiresAt > first.LeaseExpiresAt && keptAlive.Load() > 0 {
					return nil
				}
				time.Sleep(50 * time.Millisecond)
			}
			return asyncevent.Permanent(errors.New("no heartbeat within a minute"))
		}),
	})
	o, done, _ := p.ProcessOne(ctx, ds[0], 2*time.Second, func(context.Context) error {
		keptAlive.Add(1)
		return nil
	})
	assert.Equal(t, asyncevent.OutcomeSucceeded, o.Kind, "%v", o.Err)
	assert.True(t, done)
}

// A retryable failure releases the lease at once, and the heartbeat of the message,
// still running while the release is answered (slowly here), never writes the lease
// again after it: the next delivery can take the request over without waiting. The
// lease is 400 ms, so the heartbeat ticks every 200 ms: it renews the lease at 200 ms,
// during the handler's 250 ms, and ticks again at 400 ms, while the release (sent at
// 250 ms) is still being answered; the 150 ms between the handler's end and that tick
// keep a loaded machine's delays from putting a tick's renewal in flight when the
// handler ends (the release then waits for it, and its own time is later).
func TestReleasedLeaseIsNotRenewedByTheHeartbeat(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := &slowAnswers{DynamoDB: asynceventtest.DynamoDB(t)}
	c := asynceventtest.NewTableOn(t, db, asyncevent.Options{})
	_, ds := submitted(t, c, 10, "u0", "u1", "u2")
	var handlerDone atomic.Int64
	p := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{
		LeaseDuration: 400 * time.Millisecond, Backoff: fastRetry,
		Handler: asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error {
			time.Sleep(250 * time.Millisecond) // past a heartbeat's lease write
			handlerDone.Store(int64(asyncevent.MillisOf(time.Now())))
			db.slow.Store(true) // the release's answer takes 250 ms, over a heartbeat tick
			return errors.New("busy")
		}),
	})
	for _, d := range ds {
		db.slow.Store(false)
		o, done, _ := p.ProcessOne(ctx, d, 0, func(context.Context) error { return nil })
		require.Equal(t, asyncevent.OutcomeRetry, o.Kind)
		require.False(t, done)
		r, err := asyncevent.ReadStoredRequest(ctx, c, o.RequestID)
		require.NoError(t, err)
		assert.Equal(t, asyncevent.StatusProcessing, r.Status)
		// Released, the lease ends when the release was written: at most the slow
		// answer (250 ms) of a renewal in flight past the handler's end, on a loaded
		// machine. Not released, it would end 400 ms past the renewal during the
		// handler (350 ms past its end); renewed after the release, 400 ms past a
		// later tick (550 ms past its end). 320 ms tells them apart.
		assert.LessOrEqual(t, r.LeaseExpiresAt, asyncevent.EpochMillis(handlerDone.Load())+320, "the lease stays released (a renewal would set it 400 ms past a tick after the handler)")
	}
}

// slowAnswers answers each UpdateItem 250 ms after DynamoDB applied it, while slow is set.
type slowAnswers struct {
	asyncevent.DynamoDB
	slow atomic.Bool
}

func (s *slowAnswers) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := s.DynamoDB.UpdateItem(ctx, in, o...)
	if s.slow.Load() {
		time.Sleep(250 * time.Millisecond)
	}
	return out, err
}

// A loser rejected in one write once the event is known to be sold out (RejectSoldOut)
// gets its startedAt in that write, equal to its finishedAt, so that its detail shows
// queuedAt → startedAt → finishedAt like every finished request; the statistics do not
// count it as processing.
func TestSoldOutLoserHasStartedAt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now, StatusLog: true})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 1})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	var ids []string
	for _, u := range []string{"ann", "bob", "cat"} {
		p, err := c.Submit(ctx, q, "sale", u)
		require.NoError(t, err)
		ids = append(ids, p.RequestID)
		clock.Advance(time.Millisecond)
	}
	proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	for range ids { // one at a time: a winner, a loser that finds the seat gone, a sold-out loser
		clock.Advance(time.Second)
		ds, err := q.Receive(ctx, 1, 0, time.Minute)
		require.NoError(t, err)
		require.Len(t, ds, 1)
		require.Empty(t, asynceventtest.Process(ctx, proc, ds))
	}

	last, err := asyncevent.ReadStoredRequest(ctx, c, ids[2])
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusRejected, last.Status)
	assert.Equal(t, asyncevent.ResultRejectedCapacity, last.ResultCode)
	assert.Empty(t, last.LeaseOwner, "never held PROCESSING: rejected in one write")
	assert.Equal(t, asyncevent.MillisOf(clock.Now()), last.StartedAt)
	assert.Equal(t, last.FinishedAt, last.StartedAt)
	assert.Less(t, last.QueuedAt, last.StartedAt)
	logs, err := c.ListStatusLogs(ctx, ids[2])
	require.NoError(t, err)
	require.Len(t, logs, 3, "RECEIVED, QUEUED, REJECTED")
	assert.Equal(t, asyncevent.StatusRejected, logs[2].ToStatus)

	st, err := c.EventStats(ctx, "sale")
	require.NoError(t, err)
	assert.Equal(t, 3, st.QueueWait.Count)
	assert.Equal(t, 1, st.Processing.Count, "the winner, from its delivery's start to its SUCCEEDED; both losers ended in one write")
	asynceventtest.CheckEvent(t, c, "sale", asynceventtest.CheckOptions{Users: []string{"ann", "bob", "cat"}})
}
