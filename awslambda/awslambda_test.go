package awslambda_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/awslambda"
	"github.com/asyncevent/asyncevent/queue"
)

// TestMain stops the kit's DynamoDB Local when the tests end: a container, unlike a
// java child, does not end with the test binary.
func TestMain(m *testing.M) { asynceventtest.Main(m) }

// batch makes a FIRST_COME event with the given capacity, submits users, and returns
// their messages as a Lambda SQS event.
func batch(t *testing.T, c *asyncevent.Client, capacity int64, users ...string) events.SQSEvent {
	t.Helper()
	ctx := context.Background()
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: capacity})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	for _, u := range users {
		_, err := c.Submit(ctx, q, "sale", u)
		require.NoError(t, err)
	}
	var ds []queue.Delivery
	for len(ds) < len(users) {
		got, err := q.Receive(ctx, 10, 0, time.Minute)
		require.NoError(t, err)
		require.NotEmpty(t, got)
		ds = append(ds, got...)
	}
	var ev events.SQSEvent
	for _, d := range ds {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: d.MessageID, ReceiptHandle: "receipt-" + d.MessageID, Body: string(d.Body),
			Attributes: map[string]string{
				"ApproximateReceiveCount": strconv.Itoa(d.ReceiveCount),
				"SentTimestamp":           strconv.FormatInt(d.SentAt.UnixMilli(), 10),
			}})
	}
	return ev
}

// visibilityLog records the ChangeVisibility calls of a handler.
type visibilityLog struct {
	mu      sync.Mutex
	changes map[string][]time.Duration // by receipt
}

func (v *visibilityLog) ChangeVisibility(_ context.Context, receipt string, timeout time.Duration) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.changes == nil {
		v.changes = map[string][]time.Duration{}
	}
	v.changes[receipt] = append(v.changes[receipt], timeout)
	return nil
}

func (v *visibilityLog) of(receipt string) []time.Duration {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.changes[receipt]
}

func TestHandleReportsPartialBatchFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTable(t)
	ev := batch(t, c, 1, "ann", "bob")
	ev.Records = append(ev.Records, events.SQSMessage{MessageId: "poison", Body: "{"})

	h, err := awslambda.New(c, awslambda.Options{})
	require.NoError(t, err)
	resp, err := h.Handle(ctx, ev)
	require.NoError(t, err)
	assert.Equal(t, []events.SQSBatchItemFailure{{ItemIdentifier: "poison"}}, resp.BatchItemFailures)
	capacity, err := c.GetCapacity(ctx, "sale")
	require.NoError(t, err)
	assert.Zero(t, capacity.CapacityRemaining)
}

// A retryable failure is hidden for the worker's backoff through the queue, and on
// the last receive the request ends FAILED_FINAL and the message is made visible at
// once for the queue to dead-letter.
func TestHandleAppliesTheBackoffThroughTheQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTable(t)
	ev := batch(t, c, 5, "ann")
	busy := errors.New("eligibility service busy")
	vq := &visibilityLog{}
	h, err := awslambda.New(c, awslambda.Options{
		ProcessOptions: asyncevent.ProcessOptions{
			MaxReceives: 2,
			Backoff:     func(receiveCount int) time.Duration { return time.Duration(receiveCount) * time.Minute },
			Handler:     asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error { return busy }),
		},
		Queue: vq,
	})
	require.NoError(t, err)
	receipt := ev.Records[0].ReceiptHandle

	resp, err := h.Handle(ctx, ev)
	require.NoError(t, err)
	assert.Len(t, resp.BatchItemFailures, 1)
	assert.Equal(t, []time.Duration{time.Minute}, vq.of(receipt), "hidden for the backoff of receive 1")

	ev.Records[0].Attributes["ApproximateReceiveCount"] = "2"
	resp, err = h.Handle(ctx, ev)
	require.NoError(t, err)
	assert.Len(t, resp.BatchItemFailures, 1, "left for the dead-letter queue")
	assert.Equal(t, []time.Duration{time.Minute, 0}, vq.of(receipt), "visible at once on its last receive")
	m, err := asyncevent.DecodeMessage([]byte(ev.Records[0].Body))
	require.NoError(t, err)
	r, err := c.GetRequest(ctx, m.RequestID)
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusFailedFinal, r.Status)
}

// Without a queue a failed record is only reported: it comes back after the queue's
// visibility timeout.
func TestHandleWithoutAQueueOnlyReports(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTable(t)
	ev := batch(t, c, 5, "ann")
	h, err := awslambda.New(c, awslambda.Options{ProcessOptions: asyncevent.ProcessOptions{
		Handler: asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error { return errors.New("busy") }),
	}})
	require.NoError(t, err)
	resp, err := h.Handle(ctx, ev)
	require.NoError(t, err)
	assert.Equal(t, []events.SQSBatchItemFailure{{ItemIdentifier: ev.Records[0].MessageId}}, resp.BatchItemFailures)
}

func TestHandleBoundsConcurrency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTable(t)
	users := make([]string, 12)
	for i := range users {
		users[i] = fmt.Sprintf("user-%02d", i)
	}
	ev := batch(t, c, 100, users...)
	var running, most atomic.Int64
	h, err := awslambda.New(c, awslambda.Options{
		Concurrency: 3,
		ProcessOptions: asyncevent.ProcessOptions{Handler: asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error {
			n := running.Add(1)
			defer running.Add(-1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					return nil
				}
			}
		})},
	})
	require.NoError(t, err)
	resp, err := h.Handle(ctx, ev)
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures)
	assert.LessOrEqual(t, most.Load(), int64(3))
	assert.Positive(t, most.Load())
}

// Records not started when the function's deadline passes come back.
func TestHandleAfterTheDeadlineReportsEveryRecord(t *testing.T) {
	t.Parallel()
	c := asynceventtest.NewTable(t)
	ev := batch(t, c, 5, "ann", "bob")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h, err := awslambda.New(c, awslambda.Options{})
	require.NoError(t, err)
	resp, err := h.Handle(ctx, ev)
	require.NoError(t, err)
	assert.Len(t, resp.BatchItemFailures, 2)
}

func TestDeliveryReadsTheRecordsAttributes(t *testing.T) {
	t.Parallel()
	d := awslambda.Delivery(events.SQSMessage{MessageId: "m", ReceiptHandle: "r", Body: "{}",
		Attributes: map[string]string{"ApproximateReceiveCount": "3", "SentTimestamp": "1795421039191", "MessageGroupId": "sale"}})
	assert.Equal(t, queue.Delivery{MessageID: "m", Receipt: "r", Body: []byte("{}"), ReceiveCount: 3,
		SentAt: time.UnixMilli(1795421039191), GroupID: "sale"}, d)
	assert.Equal(t, 1, awslambda.Delivery(events.SQSMessage{}).ReceiveCount, "1 when the attribute is missing")
}

func TestDeliveryReadsTheMessageAttributes(t *testing.T) {
	t.Parallel()
	traceparent := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	d := awslambda.Delivery(events.SQSMessage{MessageId: "m", Body: "{}", MessageAttributes: map[string]events.SQSMessageAttribute{
		"traceparent": {DataType: "String", StringValue: &traceparent},
		"binary":      {DataType: "Binary", BinaryValue: []byte{1}},
	}})
	assert.Equal(t, map[string]string{"traceparent": traceparent}, d.Attributes, "String attributes only")
	assert.Nil(t, awslambda.Delivery(events.SQSMessage{}).Attributes)
}

// A FIFO batch: each group's records run one after another in batch order; after a
// record that is not done, the rest of its group is reported unstarted and made
// visible again at once, while another group goes on.
func TestHandleKeepsAFIFOGroupsOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTable(t)
	users := []string{"a0", "a1", "a2", "a3", "b0", "b1"}
	ev := batch(t, c, 100, users...)
	for i := range ev.Records {
		ev.Records[i].Attributes["MessageGroupId"] = "group-" + users[i][:1]
	}
	var mu sync.Mutex
	var ran []string
	v := &visibilityLog{}
	h, err := awslambda.New(c, awslambda.Options{
		Queue: v,
		ProcessOptions: asyncevent.ProcessOptions{Backoff: func(int) time.Duration { return time.Minute },
			Handler: asyncevent.HandlerFunc(func(_ context.Context, m asyncevent.Message) error {
				mu.Lock()
				ran = append(ran, m.UserID)
				mu.Unlock()
				if m.UserID == "a1" {
					return errors.New("downstream is down")
				}
				return nil
			})},
	})
	require.NoError(t, err)
	resp, err := h.Handle(ctx, ev)
	require.NoError(t, err)

	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	assert.Equal(t, []string{ev.Records[1].MessageId, ev.Records[2].MessageId, ev.Records[3].MessageId}, failed)
	var groupA []string
	for _, u := range ran {
		if u[0] == 'a' {
			groupA = append(groupA, u)
		}
	}
	assert.Equal(t, []string{"a0", "a1"}, groupA, "a2 and a3 not started after a1 failed")
	assert.ElementsMatch(t, []string{"a0", "a1", "b0", "b1"}, ran)
	assert.Equal(t, []time.Duration{time.Minute}, v.of(ev.Records[1].ReceiptHandle), "the failure waits out its backoff")
	for _, r := range ev.Records[2:4] {
		assert.Equal(t, []time.Duration{0}, v.of(r.ReceiptHandle), "an unstarted record is visible again at once")
	}
}

// Near the function's deadline no record is started: each is reported and made
// visible again at once.
func TestHandleNearTheDeadlineGivesRecordsBack(t *testing.T) {
	t.Parallel()
	c := asynceventtest.NewTable(t)
	ev := batch(t, c, 5, "ann", "bob")
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	v := &visibilityLog{}
	h, err := awslambda.New(c, awslambda.Options{Queue: v, DeadlineMargin: time.Second})
	require.NoError(t, err)
	resp, err := h.Handle(ctx, ev)
	require.NoError(t, err)
	assert.Len(t, resp.BatchItemFailures, 2)
	for _, r := range ev.Records {
		assert.Equal(t, []time.Duration{0}, v.of(r.ReceiptHandle))
	}
	rs, err := c.GetRequest(context.Background(), mustDecode(t, ev.Records[0].Body).RequestID)
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusQueued, rs.Status, "not started")
}

func mustDecode(t *testing.T, body string) asyncevent.Message {
	t.Helper()
	m, err := asyncevent.DecodeMessage([]byte(body))
	require.NoError(t, err)
	return m
}
