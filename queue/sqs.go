package queue

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// SQSClient is the part of *sqs.Client that SQS uses. Pass a
// *sqs.Client, or a wrapper of one that injects faults in tests.
type SQSClient interface {
	SendMessage(ctx context.Context, params *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	ReceiveMessage(ctx context.Context, params *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, params *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibility(ctx context.Context, params *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

// SQS is the Queue on an Amazon SQS queue (or anything that speaks its
// API). A queue whose URL ends in ".fifo" is a FIFO queue: Send then
// requires GroupID and DeduplicationID and passes them as MessageGroupId and
// MessageDeduplicationId. Transport retries are left to the client's
// retryer.
//
// Durations are rounded up to whole seconds, SQS's unit: a wait of 300ms
// long-polls for 1s, a visibility of 1.5s hides a message for 2s.
//
// An SQS is safe for concurrent use if its client is (a *sqs.Client
// is).
type SQS struct {
	client SQSClient
	url    string
	fifo   bool
}

// NewSQS returns the Queue on the SQS queue at queueURL (as returned by
// CreateQueue or GetQueueUrl). It makes no call; a wrong URL shows at the
// first Send or Receive. A nil client or a URL that is not absolute is an
// ErrInvalidOptions error.
func NewSQS(client SQSClient, queueURL string) (*SQS, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: NewSQS: nil client", ErrInvalidOptions)
	}
	if u, err := url.Parse(queueURL); err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("%w: NewSQS: queue URL %q is not an absolute URL", ErrInvalidOptions, queueURL)
	}
	return &SQS{client: client, url: queueURL, fifo: strings.HasSuffix(queueURL, ".fifo")}, nil
}

// URL returns the queue's URL.
func (q *SQS) URL() string { return q.url }

// FIFO tells whether the queue is a FIFO queue (its URL ends in ".fifo").
func (q *SQS) FIFO() bool { return q.fifo }

// Send implements Queue with SendMessage. The body is checked first as
// SQS would (1 byte to 1 MiB of the characters SQS accepts); on a FIFO
// queue a missing GroupID or DeduplicationID is an error. Each of the message's
// Attributes is sent as a message attribute of DataType String.
func (q *SQS) Send(ctx context.Context, m OutgoingMessage) error {
	if err := checkBody(m.Body); err != nil {
		return fmt.Errorf("sqs send: %w", err)
	}
	in := &sqs.SendMessageInput{QueueUrl: aws.String(q.url), MessageBody: aws.String(string(m.Body))}
	if q.fifo {
		if m.GroupID == "" || m.DeduplicationID == "" {
			return fmt.Errorf("sqs send: FIFO queue %s needs GroupID and DeduplicationID, got %q and %q", q.url, m.GroupID, m.DeduplicationID)
		}
		in.MessageGroupId = aws.String(m.GroupID)
		in.MessageDeduplicationId = aws.String(m.DeduplicationID)
	}
	if len(m.Attributes) > 0 {
		in.MessageAttributes = make(map[string]types.MessageAttributeValue, len(m.Attributes))
		for name, v := range m.Attributes {
			in.MessageAttributes[name] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
		}
	}
	if _, err := q.client.SendMessage(ctx, in); err != nil {
		return fmt.Errorf("sqs send: %w", err)
	}
	return nil
}

// Receive implements Queue with one ReceiveMessage call: max is capped at 10
// (MaxNumberOfMessages) and wait at 20s (WaitTimeSeconds), both SQS's
// limits. A zero visibility leaves the queue's VisibilityTimeout attribute
// in force (the SDK cannot send a zero). Each Delivery's SentAt, ReceiveCount
// and GroupID come from the system attributes SentTimestamp,
// ApproximateReceiveCount and MessageGroupId; they are zero should SQS not send
// them. The receive
// asks for every message attribute (MessageAttributeNames All); the String and
// Number ones are the Delivery's Attributes.
func (q *SQS) Receive(ctx context.Context, max int, wait, visibility time.Duration) ([]Delivery, error) {
	if err := checkReceive(max, wait, visibility); err != nil {
		return nil, fmt.Errorf("sqs receive: %w", err)
	}
	out, err := q.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:            aws.String(q.url),
		MaxNumberOfMessages: int32(min(max, queueMaxReceive)),
		WaitTimeSeconds:     seconds(min(wait, queueMaxWait)),
		VisibilityTimeout:   seconds(visibility),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{
			types.MessageSystemAttributeNameSentTimestamp,
			types.MessageSystemAttributeNameApproximateReceiveCount,
			types.MessageSystemAttributeNameMessageGroupId,
		},
		MessageAttributeNames: []string{"All"},
	})
	if err != nil {
		return nil, fmt.Errorf("sqs receive: %w", err)
	}
	got := make([]Delivery, 0, len(out.Messages))
	for _, m := range out.Messages {
		d := Delivery{
			MessageID: aws.ToString(m.MessageId),
			Receipt:   aws.ToString(m.ReceiptHandle),
			Body:      []byte(aws.ToString(m.Body)),
		}
		if ms, err := strconv.ParseInt(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
			d.SentAt = time.UnixMilli(ms)
		}
		if n, err := strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)]); err == nil {
			d.ReceiveCount = n
		}
		d.GroupID = m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
		d.Attributes = stringAttributes(m.MessageAttributes)
		got = append(got, d)
	}
	return got, nil
}

// stringAttributes returns the String and Number message attributes (their data
// type may carry a custom suffix, as in "String.traceparent"); nil when there are
// none. Binary ones have no string form and are left out.
func stringAttributes(in map[string]types.MessageAttributeValue) map[string]string {
	var out map[string]string
	for name, v := range in {
		if v.StringValue == nil || strings.HasPrefix(aws.ToString(v.DataType), "Binary") {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(in))
		}
		out[name] = *v.StringValue
	}
	return out
}

// Delete implements Queue with DeleteMessageBatch, ten receipts per call. It
// tries every batch and returns the failures together (errors.Join): each
// names its receipt and SQS's error code. As on SQS, a receipt that is not
// the message's latest may succeed without deleting anything; an empty one
// is an error before any call.
func (q *SQS) Delete(ctx context.Context, receipts ...string) error {
	if err := checkReceipts(receipts...); err != nil {
		return fmt.Errorf("sqs delete: %w", err)
	}
	var errs []error
	for start := 0; start < len(receipts); start += queueMaxReceive {
		batch := receipts[start:min(start+queueMaxReceive, len(receipts))]
		entries := make([]types.DeleteMessageBatchRequestEntry, len(batch))
		for i, r := range batch {
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(r)}
		}
		out, err := q.client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(q.url), Entries: entries})
		if err != nil {
			errs = append(errs, fmt.Errorf("%d receipts from %s: %w", len(batch), batch[0], err))
			continue
		}
		for _, f := range out.Failed {
			i, err := strconv.Atoi(aws.ToString(f.Id))
			receipt := "(unknown entry " + aws.ToString(f.Id) + ")"
			if err == nil && i >= 0 && i < len(batch) {
				receipt = batch[i]
			}
			errs = append(errs, fmt.Errorf("receipt %s: %s: %s", receipt, aws.ToString(f.Code), aws.ToString(f.Message)))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("sqs delete: %w", errors.Join(errs...))
	}
	return nil
}

// ChangeVisibility implements Queue with ChangeMessageVisibility; timeout may
// be 0 to 12h. When SQS answers that the receipt does not hold its message
// in flight any more (MessageNotInflight, ReceiptHandleIsInvalid, or
// InvalidParameterValue, which can only be about the receipt since the
// timeout was checked here), the error is also ErrStaleReceipt.
func (q *SQS) ChangeVisibility(ctx context.Context, receipt string, timeout time.Duration) error {
	if err := checkChangeVisibility(receipt, timeout); err != nil {
		return fmt.Errorf("sqs change visibility: %w", err)
	}
	_, err := q.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl:          aws.String(q.url),
		ReceiptHandle:     aws.String(receipt),
		VisibilityTimeout: seconds(timeout),
	})
	if err == nil {
		return nil
	}
	var notInFlight *types.MessageNotInflight
	var invalid *types.ReceiptHandleIsInvalid
	var api interface{ ErrorCode() string } // smithy.APIError
	if errors.As(err, &notInFlight) || errors.As(err, &invalid) ||
		(errors.As(err, &api) && api.ErrorCode() == "InvalidParameterValue") {
		return fmt.Errorf("sqs change visibility: %w: %w", ErrStaleReceipt, err)
	}
	return fmt.Errorf("sqs change visibility: %w", err)
}

// seconds rounds d up to whole seconds, SQS's unit, so that a message is
// never hidden for less than asked, nor a long poll turned into none.
func seconds(d time.Duration) int32 {
	return int32((d + time.Second - 1) / time.Second)
}
