package queue_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// TestSQSQueueConformance runs the shared queue behaviour on the test
// binary's local SQS (fauxqs unless SQS_ENDPOINT names another).
func TestSQSQueueConformance(t *testing.T) {
	queueConformance(t, func(t *testing.T, k queueKind) queueUnderTest {
		q := asynceventtest.NewSQSQueue(t, asynceventtest.SQSQueueOptions{FIFO: k.FIFO, MaxReceives: k.MaxReceives})
		return queueUnderTest{Queue: q, deadLetters: func(t *testing.T) []queue.Delivery {
			got, err := asynceventtest.DeadLetterQueue(t, q).Receive(context.Background(), 10, time.Second, time.Minute)
			require.NoError(t, err)
			return got
		}}
	})
}

// TestSQSQueueFIFOAttributes checks what a FIFO queue receives from Send:
// MessageGroupId and MessageDeduplicationId, as SQS reports them back.
func TestSQSQueueFIFOAttributes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := asynceventtest.NewSQSQueue(t, asynceventtest.SQSQueueOptions{FIFO: true})
	assert.True(t, q.FIFO())
	require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte("m"), GroupID: "event-1", DeduplicationID: "req-1"}))
	out, err := asynceventtest.SQS(t).ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(q.URL()),
		WaitTimeSeconds:             1,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
	})
	require.NoError(t, err)
	require.Len(t, out.Messages, 1)
	attrs := out.Messages[0].Attributes
	assert.Equal(t, "event-1", attrs[string(types.MessageSystemAttributeNameMessageGroupId)])
	assert.Equal(t, "req-1", attrs[string(types.MessageSystemAttributeNameMessageDeduplicationId)])
}

// TestSQSQueueQueueDefaultVisibility checks that a zero visibility leaves
// the queue's VisibilityTimeout in force.
func TestSQSQueueQueueDefaultVisibility(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := asynceventtest.NewSQSQueue(t, asynceventtest.SQSQueueOptions{VisibilityTimeout: time.Second})
	require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte("m")}))
	first := receiveUntil(t, q, 1, 0)[0]
	again := receiveUntil(t, q, 1, time.Minute)[0] // back after the queue's 1s
	assert.Equal(t, first.MessageID, again.MessageID)
	assert.Equal(t, 2, again.ReceiveCount)
}

// recordingSQS is an SQSClient that records requests and answers from
// canned replies, for checking what SQS asks of SQS. Behaviour is
// tested on a real SQS implementation above; this only pins the requests.
type recordingSQS struct {
	queue.SQSClient // nil: a call of anything else panics

	mu       sync.Mutex
	receives []*sqs.ReceiveMessageInput
	deletes  []*sqs.DeleteMessageBatchInput
	changes  []*sqs.ChangeMessageVisibilityInput

	receiveOut *sqs.ReceiveMessageOutput
	deleteFn   func(in *sqs.DeleteMessageBatchInput) (*sqs.DeleteMessageBatchOutput, error)
	changeErr  error
}

func (c *recordingSQS) ReceiveMessage(_ context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.receives = append(c.receives, in)
	if c.receiveOut == nil {
		return &sqs.ReceiveMessageOutput{}, nil
	}
	return c.receiveOut, nil
}

func (c *recordingSQS) DeleteMessageBatch(_ context.Context, in *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deletes = append(c.deletes, in)
	return c.deleteFn(in)
}

func (c *recordingSQS) ChangeMessageVisibility(_ context.Context, in *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changes = append(c.changes, in)
	return &sqs.ChangeMessageVisibilityOutput{}, c.changeErr
}

const testQueueURL = "http://127.0.0.1:1/000000000000/q"

func TestSQSQueueReceiveRequest(t *testing.T) {
	ctx := context.Background()
	c := &recordingSQS{receiveOut: &sqs.ReceiveMessageOutput{Messages: []types.Message{
		{MessageId: aws.String("id"), ReceiptHandle: aws.String("r"), Body: aws.String("b"), Attributes: map[string]string{
			"SentTimestamp": "1795421039191", "ApproximateReceiveCount": "3", "MessageGroupId": "event-1",
		}},
		{MessageId: aws.String("bare"), ReceiptHandle: aws.String("r2"), Body: aws.String("b2")},
		{MessageId: aws.String("traced"), ReceiptHandle: aws.String("r3"), Body: aws.String("b3"), MessageAttributes: map[string]types.MessageAttributeValue{
			"traceparent": {DataType: aws.String("String"), StringValue: aws.String("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")},
			"n":           {DataType: aws.String("Number.int"), StringValue: aws.String("7")},
			"blob":        {DataType: aws.String("Binary"), BinaryValue: []byte{1, 2}},
		}},
	}}}
	q, err := queue.NewSQS(c, testQueueURL)
	require.NoError(t, err)
	assert.False(t, q.FIFO())

	for _, tc := range []struct {
		max                     int
		wait, visibility        time.Duration
		wantMax, wantWait, want int32
	}{
		{max: 1, wait: 0, visibility: 0, wantMax: 1, wantWait: 0, want: 0},
		{max: 25, wait: time.Minute, visibility: 30 * time.Second, wantMax: 10, wantWait: 20, want: 30},
		{max: 10, wait: 300 * time.Millisecond, visibility: 1500 * time.Millisecond, wantMax: 10, wantWait: 1, want: 2},
		{max: 3, wait: 20 * time.Second, visibility: time.Nanosecond, wantMax: 3, wantWait: 20, want: 1},
	} {
		got, err := q.Receive(ctx, tc.max, tc.wait, tc.visibility)
		require.NoError(t, err)
		in := c.receives[len(c.receives)-1]
		assert.Equal(t, tc.wantMax, in.MaxNumberOfMessages, "max %d", tc.max)
		assert.Equal(t, tc.wantWait, in.WaitTimeSeconds, "wait %s", tc.wait)
		assert.Equal(t, tc.want, in.VisibilityTimeout, "visibility %s", tc.visibility)
		assert.ElementsMatch(t, []types.MessageSystemAttributeName{"SentTimestamp", "ApproximateReceiveCount", "MessageGroupId"}, in.MessageSystemAttributeNames)
		assert.Equal(t, []string{"All"}, in.MessageAttributeNames, "SQS returns message attributes only when asked")
		assert.Equal(t, testQueueURL, aws.ToString(in.QueueUrl))
		assert.Equal(t, []queue.Delivery{
			{MessageID: "id", Receipt: "r", Body: []byte("b"), ReceiveCount: 3, SentAt: time.UnixMilli(1795421039191), GroupID: "event-1"},
			{MessageID: "bare", Receipt: "r2", Body: []byte("b2")},
			{MessageID: "traced", Receipt: "r3", Body: []byte("b3"), Attributes: map[string]string{
				"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "n": "7",
			}},
		}, got)
	}
}

// TestSQSQueueDeleteReportsEachFailure deletes 25 receipts: three batches of
// at most ten, every batch tried, and the failures named by receipt and
// code in one error.
func TestSQSQueueDeleteReportsEachFailure(t *testing.T) {
	ctx := context.Background()
	outage := errors.New("connection reset")
	c := &recordingSQS{deleteFn: func(in *sqs.DeleteMessageBatchInput) (*sqs.DeleteMessageBatchOutput, error) {
		switch aws.ToString(in.Entries[0].ReceiptHandle) {
		case "r10":
			return nil, outage
		case "r20":
			return &sqs.DeleteMessageBatchOutput{Failed: []types.BatchResultErrorEntry{
				{Id: in.Entries[2].Id, Code: aws.String("ReceiptHandleIsInvalid"), Message: aws.String("bad handle"), SenderFault: true},
			}}, nil
		}
		return &sqs.DeleteMessageBatchOutput{}, nil
	}}
	q, err := queue.NewSQS(c, testQueueURL)
	require.NoError(t, err)
	var rs []string
	for i := range 25 {
		rs = append(rs, "r"+strconv.Itoa(i))
	}
	err = q.Delete(ctx, rs...)
	require.Error(t, err)
	t.Log(err)
	require.Len(t, c.deletes, 3)
	for i, want := range []int{10, 10, 5} {
		assert.Len(t, c.deletes[i].Entries, want)
	}
	assert.ErrorIs(t, err, outage)
	assert.ErrorContains(t, err, "receipt r22: ReceiptHandleIsInvalid: bad handle")
	assert.ErrorContains(t, err, "sqs delete: ")

	require.NoError(t, q.Delete(ctx), "nothing to delete: no call")
	assert.Len(t, c.deletes, 3)
}

func TestSQSQueueChangeVisibilityErrors(t *testing.T) {
	ctx := context.Background()
	c := &recordingSQS{}
	q, err := queue.NewSQS(c, testQueueURL)
	require.NoError(t, err)

	require.NoError(t, q.ChangeVisibility(ctx, "r", 1200*time.Millisecond))
	assert.Equal(t, int32(2), c.changes[0].VisibilityTimeout)

	for _, stale := range []error{&types.MessageNotInflight{}, &types.ReceiptHandleIsInvalid{}} {
		c.changeErr = stale
		err := q.ChangeVisibility(ctx, "r", 0)
		assert.ErrorIs(t, err, queue.ErrStaleReceipt)
		assert.ErrorIs(t, err, stale)
	}
	c.changeErr = errors.New("throttled")
	assert.NotErrorIs(t, q.ChangeVisibility(ctx, "r", 0), queue.ErrStaleReceipt)
}

func TestNewSQSQueueRefusesBadArguments(t *testing.T) {
	_, err := queue.NewSQS(nil, testQueueURL)
	assert.ErrorIs(t, err, queue.ErrInvalidOptions)
	for _, url := range []string{"", "queue-name", "/000000000000/q"} {
		_, err := queue.NewSQS(&recordingSQS{}, url)
		assert.ErrorIs(t, err, queue.ErrInvalidOptions, "%q", url)
	}
	q, err := queue.NewSQS(&recordingSQS{}, "https://sqs.example.test/123456789012/events.fifo")
	require.NoError(t, err)
	assert.True(t, q.FIFO())
	err = q.Send(context.Background(), queue.OutgoingMessage{Body: []byte("m"), GroupID: "g"})
	assert.ErrorContains(t, err, "DeduplicationID")
}
