package awslambda_test

import (
	"context"
	"fmt"
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

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/awslambda"
	"github.com/asyncevent/asyncevent/internal/deployrole"
	"github.com/asyncevent/asyncevent/queue"
)

// throttled refuses UpdateItem for throughput while its count lasts.
type throttled struct {
	asyncevent.DynamoDB
	count atomic.Int32
}

func (r *throttled) Unwrap() asyncevent.DynamoDB { return r.DynamoDB }

func (r *throttled) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if r.count.Add(-1) >= 0 {
		return nil, &types.ProvisionedThroughputExceededException{Message: aws.String("refused by the test")}
	}
	return r.DynamoDB.UpdateItem(ctx, in, o...)
}

// queueCalls records the SQS actions of the handler's queue calls (queue.SQS makes a
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
	var calls asynceventtest.IAMActions
	rec := &throttled{DynamoDB: calls.Record(asynceventtest.DynamoDB(t))}
	worker, err := asyncevent.New(rec, asyncevent.Options{TableName: setup.TableName()}) // examples/lambda's options
	require.NoError(t, err)
	visibility := &queueCalls{actions: map[string]bool{}}
	h, err := awslambda.New(worker, awslambda.Options{Queue: visibility, ProcessOptions: asyncevent.ProcessOptions{MaxReceives: 5}})
	require.NoError(t, err)

	for _, cfg := range []asyncevent.EventSettings{
		{EventID: "plain", EventType: asyncevent.FirstCome, CapacityTotal: 2},
		{EventID: "sharded", EventType: asyncevent.FirstCome, CapacityTotal: 4, CapacityShards: 2, IndexShards: 2},
		{EventID: "holds", EventType: asyncevent.FirstCome, CapacityTotal: 1, HoldFor: asyncevent.MinHoldFor, EndsAt: asyncevent.MillisOf(time.Now().Add(time.Hour))},
		{EventID: "pool", EventType: asyncevent.FirstCome, CapacityTotal: 1},
		{EventID: "lotto", EventType: asyncevent.Lottery, WinnerCount: 1, LotteryCutoffAt: asyncevent.MillisOf(time.Now().Add(time.Hour))},
	} {
		_, err := setup.CreateEvent(ctx, cfg)
		require.NoError(t, err)
	}
	q := queue.NewMemory(queue.MemoryOptions{})
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
	_, err = setup.CreateEvent(ctx, asyncevent.EventSettings{EventID: "busy", EventType: asyncevent.FirstCome, CapacityTotal: 1})
	require.NoError(t, err)
	_, err = setup.Submit(ctx, q, "busy", "user-busy")
	require.NoError(t, err)
	rec.count.Store(20)
	resp, err := h.Handle(ctx, sqsEvent(t, q, 1))
	require.NoError(t, err)
	require.Len(t, resp.BatchItemFailures, 1, "refused for throughput: it comes back")
	rec.count.Store(0)
	process("plain", 4)
	process("sharded", 6)
	process("holds", 3)
	process("pool", 2)
	up, err := setup.AddCapacity(ctx, "pool", asyncevent.AddCapacityInput{Seats: 2, Actor: "ops"}) // sold out: onto the pool
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

	role, err := deployrole.Read("../deploy/template.yaml", "Worker")
	require.NoError(t, err)
	assert.Equal(t, calls.Actions(), role["AsyncEventTable"].Actions, "the worker's DynamoDB calls are its role's (deploy/template.yaml, Worker)")
	assert.Empty(t, calls.IndexActions(), "the worker reads no index")
	assert.Equal(t, deployrole.TableOnly, role["AsyncEventTable"].Resources)
	assert.Equal(t, sortedKeys(visibility.actions), role["AsyncEventQueue"].Actions, "the worker's SQS calls are its role's")
	// Lambda's SQS event source polls with the function's role: these three, on this
	// queue alone (AWS's managed policy would grant them on every queue).
	assert.Equal(t, []string{"sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"}, role["EventSourcePoller"].Actions)
	assert.Equal(t, []string{"!GetAtt Queue.Arn"}, role["EventSourcePoller"].Resources)
}

// sqsEvent receives n messages from q as a Lambda SQS event.
func sqsEvent(t *testing.T, q *queue.Memory, n int) events.SQSEvent {
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

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// The hold sweeper's role (deploy/template.yaml, HoldSweeper) grants exactly the calls
// its handler makes, as the template runs it (the hold registry's events, the sweep
// lease of ASYNCEVENT_SWEEP_OWNER), recorded over every kind of pass: holds that ran
// out and their seats served to the waitlist, a confirmed hold left alone, a closed
// event's waitlist ended, a seat given back with no one waiting, and a pass
// with nothing to do.
func TestTheHoldSweepersRoleGrantsExactlyItsCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	setup := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now}) // the users', the worker's and the operator's calls
	var calls asynceventtest.IAMActions
	c, err := asyncevent.New(calls.Record(asynceventtest.DynamoDB(t)), asyncevent.Options{TableName: setup.TableName(), Clock: clock.Now})
	require.NoError(t, err)

	sale := heldSale(t, setup, clock, "sale", 2, 5)
	_, err = setup.Confirm(ctx, sale[0])
	require.NoError(t, err)
	lonely := heldSale(t, setup, clock, "lonely", 1, 1) // its seat comes back to no one
	_, err = setup.CreateEvent(ctx, asyncevent.EventSettings{EventID: "closing", EventType: asyncevent.FirstCome, CapacityTotal: 1,
		HoldFor: 10 * time.Minute, EndsAt: asyncevent.MillisOf(clock.Now().Add(5 * time.Minute))})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	var closing []string
	for i := range 3 {
		p, err := setup.Submit(ctx, q, "closing", fmt.Sprintf("closing-%d", i))
		require.NoError(t, err)
		closing = append(closing, p.RequestID)
		clock.Advance(time.Millisecond)
	}
	ds, err := q.Receive(ctx, 10, 0, time.Minute)
	require.NoError(t, err)
	require.Empty(t, asynceventtest.Process(ctx, asyncevent.NewProcessor(setup, asyncevent.ProcessOptions{}), ds))

	s, err := awslambda.NewHoldSweeper(c, awslambda.SweepOptions{HoldSweepOptions: asyncevent.HoldSweepOptions{Owner: "hold-sweeper"}}) // examples/lambda/holdsweep's
	require.NoError(t, err)
	_, err = s.Handle(ctx, scheduled) // nothing ran out yet
	require.NoError(t, err)
	clock.Advance(11 * time.Minute)
	res, err := s.Handle(ctx, scheduled)
	require.NoError(t, err)
	require.Len(t, res.Events, 3)
	assert.Equal(t, asyncevent.StatusHeld, statusOf(t, setup, sale[2]), "a seat that came back went to the waitlist")
	assert.Equal(t, asyncevent.StatusRejected, statusOf(t, setup, lonely[0]), "the hold ran out")
	assert.Equal(t, asyncevent.StatusRejected, statusOf(t, setup, closing[1]), "the closed event's waitlist ended")
	done := map[string]awslambda.EventSweep{}
	for _, e := range res.Events {
		done[e.EventID] = e
	}
	assert.Equal(t, asyncevent.StatusSucceeded, statusOf(t, setup, sale[0]), "a confirmed hold is not the sweep's")
	assert.Positive(t, done["closing"].Closed)
	assert.EqualValues(t, 1, done["lonely"].Waiting)

	role, err := deployrole.Read("../deploy/template.yaml", "HoldSweeper")
	require.NoError(t, err)
	assert.Equal(t, calls.Actions(), role["AsyncEventTable"].Actions, "the sweeper's DynamoDB calls are its role's (deploy/template.yaml, HoldSweeper)")
	if len(calls.IndexActions()) > 0 {
		assert.Equal(t, deployrole.TableAndIndexes, role["AsyncEventTable"].Resources, "it reads an index: %v", calls.IndexActions())
	} else {
		assert.Equal(t, deployrole.TableOnly, role["AsyncEventTable"].Resources, "it reads no index")
	}
	assert.NotContains(t, role, "AsyncEventQueue", "no SQS")
}
