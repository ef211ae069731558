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
)

// batch makes a FIRST_COME event with the given capacity, submits users, and returns
// their messages as a Lambda SQS event.
func batch(t *testing.T, c *asyncevent.Client, capacity int64, users ...string) events.SQSEvent {
	t.Helper()
	ctx := context.Background()
	_, err := c.CreateEvent(ctx, asyncevent.EventConfig{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: capacity})
	require.NoError(t, err)
	q := asyncevent.NewMemoryQueue(asyncevent.MemoryQueueOptions{})
	for _, u := range users {
		_, err := c.Submit(ctx, q, "sale", u)
		require.NoError(t, err)
	}
	var ds []asyncevent.Delivery
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
	queue := &visibilityLog{}
	h, err := awslambda.New(c, awslambda.Options{
		ProcessOptions: asyncevent.ProcessOptions{
			MaxReceives: 2,
			Backoff:     func(receiveCount int) time.Duration { return time.Duration(receiveCount) * time.Minute },
			Handler:     asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error { return busy }),
		},
		Queue: queue,
	})
	require.NoError(t, err)
	receipt := ev.Records[0].ReceiptHandle

	resp, err := h.Handle(ctx, ev)
	require.NoError(t, err)
	assert.Len(t, resp.BatchItemFailures, 1)
	assert.Equal(t, []time.Duration{time.Minute}, queue.of(receipt), "hidden for the backoff of receive 1")

	ev.Records[0].Attributes["ApproximateReceiveCount"] = "2"
	resp, err = h.Handle(ctx, ev)
	require.NoError(t, err)
	assert.Len(t, resp.BatchItemFailures, 1, "left for the dead-letter queue")
	assert.Equal(t, []time.Duration{time.Minute, 0}, queue.of(receipt), "visible at once on its last receive")
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
		Attributes: map[string]string{"ApproximateReceiveCount": "3", "SentTimestamp": "1795421039191"}})
	assert.Equal(t, asyncevent.Delivery{MessageID: "m", Receipt: "r", Body: []byte("{}"), ReceiveCount: 3,
		SentAt: time.UnixMilli(1795421039191)}, d)
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
