package asyncevent_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// Review 44: "A worker never decides an entry" (design.md, the pre-queue). The gate
// reads the entry's request (GetItem, strongly consistent) to tell an entry from a
// sale click; when that read fails on the message's last receive, the gate hands the
// error to p.failed, which ends the request FAILED_FINAL. So a transient read error
// (a connection reset, a throttle) on a worker, before the start, takes an entry out
// of the pre-queue: the serve then passes it over (a "final failure") and the entry
// after it wins its seat instead. The entry should have been left to the serve
// (acknowledged, or retried), never decided by a worker.
func TestReview44GateErrorOnLastReceiveDecidesAnEntry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, clock := prequeueDrop(t, 1, 1)
	q := &sendQueue{}
	clock.Advance(time.Second)
	entries := clickAll(t, c, q, userIDs("early", 3))

	// A worker whose reads of requests fail (a connection error on every GetItem of a
	// REQ# item), on the same table.
	faulty := asynceventtest.NewFaultyDynamoDB(asynceventtest.DynamoDB(t), asynceventtest.FaultPlan{
		Seed: 1, FailRate: 1, Operations: []string{"GetItem"}, KeyPrefix: "REQ#"})
	wc, err := asyncevent.New(faulty, asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	worker := asyncevent.NewProcessor(wc, asyncevent.ProcessOptions{})

	q.mu.Lock()
	first := q.sent[0]
	q.mu.Unlock()
	// The entry's message on its last receive (SQS maxReceiveCount 5, the default).
	o, _, _ := worker.ProcessOne(ctx, queue.Delivery{MessageID: "m0", Body: first.Body, ReceiveCount: asyncevent.DefaultMaxReceives}, 0, nil)
	t.Logf("outcome of the entry's last receive: %s (%v)", o.Kind, o.Err)

	r, err := c.GetRequest(ctx, o.RequestID)
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusQueued, r.Status,
		"entry %s was decided by a worker before the start (%s %s); it must wait for the serve", r.RequestID, r.Status, r.ResultCode)

	clock.Advance(prequeueStart.Sub(clock.Now()) + asyncevent.DefaultDrawSettleWindow)
	res, err := c.ServePrequeue(ctx, "drop")
	require.NoError(t, err)
	assert.Len(t, res.Order, len(entries))
	assert.Equal(t, res.Order[:1], res.Winners, "the first entry of the order wins the one seat")
}
