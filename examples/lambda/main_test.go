package main

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

func TestHandlerReportsPartialBatchFailures(t *testing.T) {
	ctx := context.Background()
	c := asynceventtest.NewTable(t)
	_, err := c.CreateEvent(ctx, asyncevent.EventConfig{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 1})
	require.NoError(t, err)
	q := asyncevent.NewMemoryQueue(asyncevent.MemoryQueueOptions{})
	for _, u := range []string{"ann", "bob"} {
		_, err := c.Submit(ctx, q, "sale", u)
		require.NoError(t, err)
	}
	ds, err := q.Receive(ctx, 10, 0, time.Minute)
	require.NoError(t, err)

	ev := events.SQSEvent{}
	for _, d := range ds {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: d.MessageID, Body: string(d.Body),
			Attributes: map[string]string{
				"ApproximateReceiveCount": strconv.Itoa(d.ReceiveCount),
				"SentTimestamp":           strconv.FormatInt(d.SentAt.UnixMilli(), 10),
			}})
	}
	ev.Records = append(ev.Records, events.SQSMessage{MessageId: "poison", Body: "{"})

	resp, err := handler(asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}))(ctx, ev)
	require.NoError(t, err)
	assert.Equal(t, []events.SQSBatchItemFailure{{ItemIdentifier: "poison"}}, resp.BatchItemFailures)
	capacity, err := c.GetCapacity(ctx, "sale")
	require.NoError(t, err)
	assert.Zero(t, capacity.CapacityRemaining)
}
