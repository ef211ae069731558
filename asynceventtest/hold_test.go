package asynceventtest_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent/asynceventtest"
)

// Hold is TransactionHold scaled as the units are: 1,000 WCU over Limits.WCU.
func TestLimitsHold(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		limits asynceventtest.Limits
		want   time.Duration
	}{
		{"DynamoDB's", asynceventtest.Limits{}, 25 * time.Millisecond},
		{"scaled down 50 times", asynceventtest.Limits{WCU: 20}, 1250 * time.Millisecond},
		{"own hold, scaled", asynceventtest.Limits{WCU: 500, TransactionHold: 10 * time.Millisecond}, 20 * time.Millisecond},
		{"off", asynceventtest.Limits{WCU: 20, TransactionHold: -1}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.limits.Hold())
		})
	}
}

// answered tells when the first TransactWriteItems sent through it has its answer
// from DynamoDB Local: beneath a LimitedHTTPClient, from then on only the hold keeps
// the transaction's items.
type answered struct {
	next aws.HTTPClient
	once sync.Once
	done chan struct{}
}

func (a *answered) Do(req *http.Request) (*http.Response, error) {
	resp, err := a.next.Do(req)
	if strings.HasSuffix(req.Header.Get("X-Amz-Target"), ".TransactWriteItems") {
		a.once.Do(func() { close(a.done) })
	}
	return resp, err
}

// holdTest is a table under a LimitedHTTPClient whose client tells, through
// answered, when DynamoDB Local has answered the first transaction.
type holdTest struct {
	db       *dynamodb.Client
	limits   *asynceventtest.LimitedHTTPClient
	answered *answered
	table    string
}

func newHoldTest(t *testing.T, limits asynceventtest.Limits) *holdTest {
	t.Helper()
	a := &answered{done: make(chan struct{})}
	tapped := dynamodb.New(asynceventtest.DynamoDB(t).Options(), func(o *dynamodb.Options) { a.next = o.HTTPClient; o.HTTPClient = a })
	db, l := asynceventtest.NewLimitedClient(tapped, limits, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	return &holdTest{db: db, limits: l, answered: a, table: asynceventtest.NewTable(t).TableName()}
}

// add is an Update adding 1 to n on the item PK pk, SK "ITEM", under condition when
// it is not empty (its :five is 5).
func (h *holdTest) add(pk, condition string) types.TransactWriteItem {
	u := &types.Update{TableName: aws.String(h.table),
		Key:                       map[string]types.AttributeValue{"PK": s(pk), "SK": s("ITEM")},
		UpdateExpression:          aws.String("ADD #n :one"),
		ExpressionAttributeNames:  map[string]string{"#n": "n"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
	}
	if condition != "" {
		u.ConditionExpression = aws.String(condition)
		u.ExpressionAttributeValues[":five"] = &types.AttributeValueMemberN{Value: "5"}
	}
	return types.TransactWriteItem{Update: u}
}

func (h *holdTest) transact(ctx context.Context, items ...types.TransactWriteItem) error {
	_, err := h.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	return err
}

func (h *holdTest) update(ctx context.Context, pk string) error {
	_, err := h.db.UpdateItem(ctx, updateInput(h.add(pk, "").Update))
	return err
}

// n reads n of the item PK pk beside the limits.
func (h *holdTest) n(t *testing.T, pk string) string {
	t.Helper()
	out, err := asynceventtest.DynamoDB(t).GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(h.table),
		Key: map[string]types.AttributeValue{"PK": s(pk), "SK": s("ITEM")}, ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	if n, ok := out.Item["n"].(*types.AttributeValueMemberN); ok {
		return n.Value
	}
	return "0"
}

// codes are the cancellation reason codes of a TransactionCanceledException, nil for
// another error.
func codes(err error) []string {
	var tc *types.TransactionCanceledException
	if !errors.As(err, &tc) {
		return nil
	}
	out := make([]string, len(tc.CancellationReasons))
	for i, r := range tc.CancellationReasons {
		out[i] = aws.ToString(r.Code)
	}
	return out
}

// Eight goroutines run, for two seconds, transactions of two items, their own and a
// shared counter, under a hold of 100 ms (25 ms at 250 WCU): the transactions let
// through hold the counter one after another, so there are at most one per hold in
// the time the run took, and every other one is cancelled with TransactionConflict
// on the counter. With a condition that fails after five, the cancelled ones held
// the counter too, and count in the bound.
func TestHoldBoundsTransactionsPerItem(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, condition string }{
		{"unconditional", ""},
		{"conditional", "attribute_not_exists(#n) OR #n < :five"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			limits := asynceventtest.Limits{WCU: 250}
			hold := limits.Hold()
			require.Equal(t, 100*time.Millisecond, hold)
			h := newHoldTest(t, limits)

			var committed, conditionFailed, conflicts atomic.Int64
			var wg sync.WaitGroup
			start := time.Now()
			stop := start.Add(2 * time.Second)
			for g := range 8 {
				wg.Go(func() {
					own := fmt.Sprintf("OWN#%d", g)
					for time.Now().Before(stop) {
						err := h.transact(ctx, h.add(own, ""), h.add("COUNTER", tc.condition))
						switch c := codes(err); {
						case err == nil:
							committed.Add(1)
						case tc.condition != "" && slices.Equal(c, []string{"None", "ConditionalCheckFailed"}):
							conditionFailed.Add(1)
						case slices.Equal(c, []string{"None", "TransactionConflict"}):
							conflicts.Add(1)
							time.Sleep(2 * time.Millisecond) // a client's backoff, to spare the CPUs
						default:
							assert.Fail(t, "neither committed nor cancelled for its condition or a conflict", "%v", err)
							return
						}
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)

			letThrough := committed.Load() + conditionFailed.Load()
			t.Logf("%s: %d committed, %d cancelled for the condition, %d for a conflict", elapsed, committed.Load(), conditionFailed.Load(), conflicts.Load())
			assert.Positive(t, committed.Load())
			assert.LessOrEqual(t, float64(letThrough), elapsed.Seconds()/hold.Seconds()+1, "at most one transaction per hold on the counter")
			assert.Equal(t, fmt.Sprint(committed.Load()), h.n(t, "COUNTER"))
			if tc.condition != "" {
				assert.LessOrEqual(t, committed.Load(), int64(5))
			}
			c := h.limits.Counts()
			assert.Equal(t, int(conflicts.Load()), c.Conflicts)
			assert.Zero(t, c.Throttled, "the units are not the bound here")
		})
	}
}

// While a transaction holds its items past DynamoDB Local's answer, a single write
// on one of them is refused with TransactionConflictException and a transaction
// naming one is cancelled with TransactionConflict on it, while a write elsewhere
// goes through. The transaction is answered when its hold ends, and its items are
// free from then on.
func TestHoldRefusesWritesOnHeldItems(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	limits := asynceventtest.Limits{TransactionHold: 2 * time.Second}
	h := newHoldTest(t, limits)

	var txErr error
	var took time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		start := time.Now()
		txErr = h.transact(ctx, h.add("OWN#1", ""), h.add("COUNTER", ""))
		took = time.Since(start)
	}()
	<-h.answered.done

	var conflict *types.TransactionConflictException
	assert.ErrorAs(t, h.update(ctx, "COUNTER"), &conflict)
	err := h.transact(ctx, h.add("OWN#2", ""), h.add("COUNTER", ""))
	assert.Equal(t, []string{"None", "TransactionConflict"}, codes(err), "%v", err)
	require.NoError(t, h.update(ctx, "OTHER"), "an item the transaction does not name")

	<-done
	require.NoError(t, txErr)
	assert.GreaterOrEqual(t, took, limits.Hold(), "answered when the hold ends")
	require.NoError(t, h.update(ctx, "COUNTER"), "free once answered")
	assert.Equal(t, "2", h.n(t, "COUNTER"))
	assert.Equal(t, 2, h.limits.Counts().Conflicts)
}

// A caller that gives up during the hold has its context's error at once, and the
// transaction's items stay held until the hold ends: it was let through, so it is
// DynamoDB's to finish.
func TestHoldOutlastsACallerThatGivesUp(t *testing.T) {
	t.Parallel()
	h := newHoldTest(t, asynceventtest.Limits{TransactionHold: 2 * time.Second})

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- h.transact(ctx, h.add("OWN#1", ""), h.add("COUNTER", "")) }()
	<-h.answered.done
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)

	var conflict *types.TransactionConflictException
	assert.ErrorAs(t, h.update(context.Background(), "COUNTER"), &conflict, "still held after its caller left")
	assert.Equal(t, "1", h.n(t, "COUNTER"), "DynamoDB Local committed it")
}

// Single writes hold nothing: while one is in flight on an item (held there by a
// gate), twenty more on the same item are answered, and only the item's units limit
// them. By a clock that stands still the bucket of 10 units never refills: ten writes
// in all go through and eleven are throttled, none refused for a conflict.
func TestHoldDoesNotSerialiseSingleWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	g := &gate{}
	held := dynamodb.New(asynceventtest.DynamoDB(t).Options(), func(o *dynamodb.Options) { g.next = o.HTTPClient; o.HTTPClient = g })
	db, limits := asynceventtest.NewLimitedClient(held, asynceventtest.Limits{WCU: 10, Clock: clock.Now}, func(o *dynamodb.Options) {
		o.RetryMaxAttempts = 1
	})
	h := &holdTest{db: db, limits: limits, table: asynceventtest.NewTable(t).TableName()}

	g.arm()
	firstErr := make(chan error, 1)
	go func() { firstErr <- h.update(ctx, "COUNTER") }()
	<-g.entered

	var ok, throttled atomic.Int64
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			err := h.update(ctx, "COUNTER")
			var pte *types.ProvisionedThroughputExceededException
			switch {
			case err == nil:
				ok.Add(1)
			case assert.ErrorAs(t, err, &pte):
				throttled.Add(1)
			}
		})
	}
	wg.Wait() // with the first write still in flight
	close(g.release)
	require.NoError(t, <-firstErr)

	assert.Equal(t, int64(9), ok.Load(), "the bucket's 10 units, less the first write's")
	assert.Equal(t, int64(11), throttled.Load())
	assert.Equal(t, "10", h.n(t, "COUNTER"))
	c := limits.Counts()
	assert.Zero(t, c.Conflicts)
	assert.Equal(t, 11, c.Throttled)
}
