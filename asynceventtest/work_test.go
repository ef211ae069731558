package asynceventtest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// messageOf returns the message ingest sends for p.
func messageOf(p asyncevent.Participation) asyncevent.Message {
	return asyncevent.Message{V: asyncevent.MessageVersion, RequestID: p.RequestID, EventID: p.Request.EventID,
		UserID: p.Request.UserID, EventType: p.Request.EventType, RequestedAt: p.Request.RequestedAt}
}

// Work takes a message to its outcome as a worker would, on a delivery sent now by
// the client's clock, and calls the caller's OnOutcome too.
func TestWork(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 1})
	require.NoError(t, err)
	ann, err := c.Rows().Participate(ctx, "sale", "ann")
	require.NoError(t, err)
	bob, err := c.Rows().Participate(ctx, "sale", "bob")
	require.NoError(t, err)
	clock.Advance(time.Second)

	var seen []asyncevent.Outcome
	res := asynceventtest.Work(ctx, t, c, messageOf(ann), asyncevent.ProcessOptions{
		OnOutcome: func(o asyncevent.Outcome) { seen = append(seen, o) }})
	assert.Equal(t, asyncevent.OutcomeSucceeded, res.Kind)
	assert.Equal(t, ann.RequestID, res.RequestID)
	assert.Equal(t, 1, res.ReceiveCount)
	assert.NotEmpty(t, res.MessageID)
	assert.False(t, res.Redeliver)
	assert.Equal(t, []asyncevent.Outcome{res.Outcome}, seen, "the caller's OnOutcome saw the same")
	r, err := c.GetRequest(ctx, ann.RequestID)
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusSucceeded, r.Status)
	assert.Equal(t, ann.Request.QueuedAt, r.QueuedAt, "its place in line is its put's")
	assert.Equal(t, asyncevent.MillisOf(clock.Now()), r.StartedAt, "started now by the client's clock")

	res = asynceventtest.Work(ctx, t, c, messageOf(bob), asyncevent.ProcessOptions{})
	assert.Equal(t, asyncevent.OutcomeRejected, res.Kind)
	assert.Equal(t, asyncevent.ResultRejectedCapacity, res.ResultCode)
	assert.False(t, res.Redeliver)

	res = asynceventtest.Work(ctx, t, c, messageOf(ann), asyncevent.ProcessOptions{})
	assert.Equal(t, asyncevent.OutcomeDuplicate, res.Kind, "a second delivery")
}

// WorkDelivery keeps what the caller set on the delivery and reports a message that
// must come back.
func TestWorkDelivery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTable(t)
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 1})
	require.NoError(t, err)
	ann, err := c.Rows().Participate(ctx, "sale", "ann")
	require.NoError(t, err)
	body, err := asyncevent.EncodeMessage(messageOf(ann))
	require.NoError(t, err)
	sentAt := time.Now().Add(-time.Minute).Truncate(time.Millisecond)

	down := asyncevent.ProcessOptions{Handler: asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error {
		return errors.New("downstream is down")
	})}
	res := asynceventtest.WorkDelivery(ctx, t, c, queue.Delivery{MessageID: "m1", Body: body, ReceiveCount: 2, SentAt: sentAt}, down)
	assert.Equal(t, asyncevent.OutcomeRetry, res.Kind)
	assert.ErrorContains(t, res.Err, "downstream is down")
	assert.Equal(t, "m1", res.MessageID)
	assert.Equal(t, 2, res.ReceiveCount)
	assert.True(t, res.Redeliver)
	r, err := c.GetRequest(ctx, ann.RequestID)
	require.NoError(t, err)
	assert.Equal(t, ann.Request.QueuedAt, r.QueuedAt, "its put's, whatever the delivery's send time")

	res = asynceventtest.WorkDelivery(ctx, t, c, queue.Delivery{Body: []byte("not json")}, asyncevent.ProcessOptions{})
	assert.Equal(t, asyncevent.OutcomeMalformed, res.Kind)
	assert.Equal(t, 1, res.ReceiveCount, "a zero ReceiveCount is the first receive")
	assert.True(t, res.Redeliver, "left for the dead-letter queue")
}

// fatalRecorder is a testing.TB whose Fatalf records the message and returns.
type fatalRecorder struct {
	testing.TB
	fatal string
}

func (r *fatalRecorder) Helper() {}
func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
}

// WaitDrained returns once workers have taken every message, and names what is left
// when they do not in time.
func TestWaitDrained(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTable(t)
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 3})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	var ids []string
	for i := range 10 {
		p, err := c.Submit(ctx, q, "sale", fmt.Sprintf("u%d", i))
		require.NoError(t, err)
		ids = append(ids, p.RequestID)
	}

	rec := &fatalRecorder{TB: t}
	asynceventtest.WaitDrained(rec, q, 0)
	assert.Equal(t, "asynceventtest: queue not drained after 0s: 10 visible, 0 in flight (0 dead letters)", rec.fatal)
	d, err := q.Receive(ctx, 1, 0, time.Minute)
	require.NoError(t, err)
	rec = &fatalRecorder{TB: t}
	asynceventtest.WaitDrained(rec, q, 10*time.Millisecond)
	assert.True(t, strings.HasSuffix(rec.fatal, ": 9 visible, 1 in flight (0 dead letters)"), rec.fatal)
	require.NoError(t, q.ChangeVisibility(ctx, d[0].Receipt, 0))

	w, err := asyncevent.NewWorker(c, q, asyncevent.WorkerOptions{Concurrency: 4, WaitTime: 20 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	asynceventtest.WaitDrained(t, q, time.Minute)
	require.NoError(t, w.Stop(ctx))
	for _, id := range ids {
		r, err := c.GetRequest(ctx, id)
		require.NoError(t, err)
		assert.True(t, r.Status.IsTerminal(), "%s is %s", id, r.Status)
	}
}
