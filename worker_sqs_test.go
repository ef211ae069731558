package asyncevent_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

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
