package awslambda_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/awslambda"
)

// iamCalls records the IAM actions of the DynamoDB calls made through it: a
// transaction's by its items (Put, Update, Delete, ConditionCheck), as IAM
// authorizes TransactWriteItems.
type iamCalls struct {
	asyncevent.DynamoDB
	mu       sync.Mutex
	actions  map[string]bool
	throttle atomic.Int32 // refuse the next UpdateItems for throughput
}

func (r *iamCalls) Unwrap() asyncevent.DynamoDB { return r.DynamoDB }

func (r *iamCalls) saw(actions ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range actions {
		r.actions["dynamodb:"+a] = true
	}
}

func (r *iamCalls) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	r.saw("GetItem")
	return r.DynamoDB.GetItem(ctx, in, o...)
}

func (r *iamCalls) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	r.saw("PutItem")
	return r.DynamoDB.PutItem(ctx, in, o...)
}

func (r *iamCalls) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	r.saw("UpdateItem")
	if r.throttle.Add(-1) >= 0 {
		return nil, &types.ProvisionedThroughputExceededException{Message: aws.String("refused by the test")}
	}
	return r.DynamoDB.UpdateItem(ctx, in, o...)
}

func (r *iamCalls) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	r.saw("DeleteItem")
	return r.DynamoDB.DeleteItem(ctx, in, o...)
}

func (r *iamCalls) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	r.saw("Query")
	return r.DynamoDB.Query(ctx, in, o...)
}

func (r *iamCalls) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	for _, it := range in.TransactItems {
		switch {
		case it.Put != nil:
			r.saw("PutItem")
		case it.Update != nil:
			r.saw("UpdateItem")
		case it.Delete != nil:
			r.saw("DeleteItem")
		case it.ConditionCheck != nil:
			r.saw("ConditionCheckItem")
		}
	}
	return r.DynamoDB.TransactWriteItems(ctx, in, o...)
}

// queueCalls records the SQS actions of the handler's queue calls (SQSQueue makes a
// ChangeVisibility a ChangeMessageVisibility).
type queueCalls struct {
	mu      sync.Mutex
	actions map[string]bool
}

func (q *queueCalls) ChangeVisibility(context.Context, string, time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.actions["sqs:ChangeMessageVisibility"] = true
	return nil
}

// The worker function's role (deploy/template.yaml) grants exactly the calls its
// handler makes, recorded while it processes every kind of message it meets: the
// winners and losers of a first-come event, of one with holds (HELD, WAITLISTED),
// of one whose seats an operator added after the sell-out (the pool), a lottery's
// entries, a message delivered again after its request was final, and a request the
// table does not hold. A call the code adds fails here until the role grants it; a
// grant the code no longer needs fails too.
func TestTheWorkersRoleGrantsExactlyItsCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	setup := asynceventtest.NewTable(t) // the operator's and the users' calls: not the worker's
	rec := &iamCalls{DynamoDB: asynceventtest.DynamoDB(t), actions: map[string]bool{}}
	worker, err := asyncevent.New(rec, asyncevent.Options{TableName: setup.TableName()}) // examples/lambda's options
	require.NoError(t, err)
	visibility := &queueCalls{actions: map[string]bool{}}
	h, err := awslambda.New(worker, awslambda.Options{Queue: visibility, ProcessOptions: asyncevent.ProcessOptions{MaxReceives: 5}})
	require.NoError(t, err)

	for _, cfg := range []asyncevent.EventConfig{
		{EventID: "plain", EventType: asyncevent.FirstCome, CapacityTotal: 2},
		{EventID: "sharded", EventType: asyncevent.FirstCome, CapacityTotal: 4, CapacityShards: 2, IndexShards: 2},
		{EventID: "holds", EventType: asyncevent.FirstCome, CapacityTotal: 1, HoldFor: asyncevent.MinHoldFor},
		{EventID: "pool", EventType: asyncevent.FirstCome, CapacityTotal: 1},
		{EventID: "lotto", EventType: asyncevent.Lottery, WinnerCount: 1, LotteryCutoffAt: asyncevent.MillisOf(time.Now().Add(time.Hour))},
	} {
		_, err := setup.CreateEvent(ctx, cfg)
		require.NoError(t, err)
	}
	q := asyncevent.NewMemoryQueue(asyncevent.MemoryQueueOptions{})
	clicked := 0
	process := func(eventID string, users int) events.SQSEvent {
		for range users {
			clicked++
			_, err := setup.Submit(ctx, q, eventID, fmt.Sprintf("user-%d", clicked))
			require.NoError(t, err)
		}
		ev := sqsEvent(t, q, users)
		resp, err := h.Handle(ctx, ev)
		require.NoError(t, err)
		require.Empty(t, resp.BatchItemFailures, eventID)
		return ev
	}
	// A throttle: the record comes back later (its visibility set to the backoff).
	_, err = setup.CreateEvent(ctx, asyncevent.EventConfig{EventID: "busy", EventType: asyncevent.FirstCome, CapacityTotal: 1})
	require.NoError(t, err)
	_, err = setup.Submit(ctx, q, "busy", "user-busy")
	require.NoError(t, err)
	rec.throttle.Store(20)
	resp, err := h.Handle(ctx, sqsEvent(t, q, 1))
	require.NoError(t, err)
	require.Len(t, resp.BatchItemFailures, 1, "refused for throughput: it comes back")
	rec.throttle.Store(0)
	process("plain", 4)
	process("sharded", 6)
	process("holds", 3)
	process("pool", 2)
	up, err := setup.AddCapacity(ctx, "pool", 2, -1, "ops") // sold out: onto the pool
	require.NoError(t, err)
	require.True(t, up.Applied)
	process("pool", 2)
	again := process("lotto", 2)
	resp, err = h.Handle(ctx, again) // delivered again: its requests are final
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	resp, err = h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: "gone", ReceiptHandle: "r-gone",
		Body:       `{"v":1,"requestId":"01a21cd0-0000-7000-8000-000000000000","eventId":"plain","userId":"nobody","eventType":"FIRST_COME","requestedAt":1}`,
		Attributes: map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10)}}}})
	require.NoError(t, err)
	t.Logf("a message of a request the table does not hold: %d to come back", len(resp.BatchItemFailures))

	role := workerRole(t)
	assert.Equal(t, sortedKeys(rec.actions), role["AsyncEventTable"], "the worker's DynamoDB calls are its role's (deploy/template.yaml, Worker)")
	assert.Equal(t, sortedKeys(visibility.actions), role["AsyncEventQueue"], "the worker's SQS calls are its role's")
}

// sqsEvent receives n messages from q as a Lambda SQS event.
func sqsEvent(t *testing.T, q *asyncevent.MemoryQueue, n int) events.SQSEvent {
	t.Helper()
	var ev events.SQSEvent
	for len(ev.Records) < n {
		ds, err := q.Receive(context.Background(), 10, 0, time.Minute)
		require.NoError(t, err)
		require.NotEmpty(t, ds)
		for _, d := range ds {
			ev.Records = append(ev.Records, events.SQSMessage{MessageId: d.MessageID, ReceiptHandle: "receipt-" + d.MessageID, Body: string(d.Body),
				Attributes: map[string]string{"ApproximateReceiveCount": strconv.Itoa(d.ReceiveCount), "SentTimestamp": strconv.FormatInt(d.SentAt.UnixMilli(), 10)}})
		}
	}
	return ev
}

// workerRole reads the actions of the Worker's policy statements, by Sid.
func workerRole(t *testing.T) map[string][]string {
	raw, err := os.ReadFile("../deploy/template.yaml")
	require.NoError(t, err)
	var doc struct {
		Resources struct {
			Worker struct {
				Properties struct {
					Policies []struct {
						Statement []struct {
							Sid    string   `yaml:"Sid"`
							Action []string `yaml:"Action"`
						} `yaml:"Statement"`
					} `yaml:"Policies"`
				} `yaml:"Properties"`
			} `yaml:"Worker"`
		} `yaml:"Resources"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &doc))
	out := map[string][]string{}
	for _, p := range doc.Resources.Worker.Properties.Policies {
		for _, s := range p.Statement {
			out[s.Sid] = slices.Sorted(slices.Values(s.Action))
		}
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
