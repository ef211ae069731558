package asynceventtest_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
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

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/internal/metered"
	"github.com/asyncevent/asyncevent/queue"
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// A key over its limit is refused as DynamoDB refuses it: a single write with
// ProvisionedThroughputExceededException and the reason naming the table or the
// index, a transaction with a ThrottlingError cancellation. WCU 0.1 lets one write
// through per key and then nothing for ten seconds: the counts do not depend on speed.
func TestLimitedClientThrottlesHotKeysOnTheTableAndTheIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	raw := asynceventtest.DynamoDB(t)
	table := asynceventtest.NewTable(t).TableName()
	db, limits := asynceventtest.NewLimitedClient(raw, asynceventtest.Limits{WCU: 0.1}, func(o *dynamodb.Options) {
		o.RetryMaxAttempts = 1
	})
	put := func(item map[string]types.AttributeValue) error {
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item})
		return err
	}
	reasonOf := func(err error) (string, string) {
		var pte *types.ProvisionedThroughputExceededException
		if !errors.As(err, &pte) || len(pte.ThrottlingReasons) == 0 {
			return "", ""
		}
		return aws.ToString(pte.ThrottlingReasons[0].Reason), aws.ToString(pte.ThrottlingReasons[0].Resource)
	}

	// Ten requests of one event: each its own PK, all on GSI2 EVENT#hot.
	var ok, throttled int
	for i := range 10 {
		err := put(map[string]types.AttributeValue{"PK": s(fmt.Sprintf("REQ#r%d", i)), "SK": s("META"),
			"GSI2PK": s("EVENT#hot"), "GSI2SK": s(fmt.Sprintf("QAT#%d", i))})
		if err == nil {
			ok++
			continue
		}
		reason, resource := reasonOf(err)
		require.Equal(t, "IndexWriteKeyRangeThroughputExceeded", reason, "got %v", err)
		assert.True(t, strings.HasSuffix(resource, "table/"+table+"/index/GSI2"), resource)
		throttled++
	}
	assert.GreaterOrEqual(t, ok, 1)
	assert.GreaterOrEqual(t, throttled, 5, "GSI back-pressure: base-table writes on ten different PKs refused for their GSI2 key")

	// Another key on the same index, and an item on no index, are not held back.
	require.NoError(t, put(map[string]types.AttributeValue{"PK": s("REQ#cold"), "SK": s("META"), "GSI2PK": s("EVENT#cold"), "GSI2SK": s("QAT#1")}))
	require.NoError(t, put(map[string]types.AttributeValue{"PK": s("IDEMP#a#b"), "SK": s("LOCK")}))
	// The same table key again: over its table limit.
	reason, _ := reasonOf(put(map[string]types.AttributeValue{"PK": s("IDEMP#a#b"), "SK": s("LOCK")}))
	assert.Equal(t, "TableWriteKeyRangeThroughputExceeded", reason)

	// An update that names no index key is on GSI2 all the same: the simulator saw the
	// item's GSI2PK when it was put.
	_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table),
		Key:                       map[string]types.AttributeValue{"PK": s("REQ#fresh"), "SK": s("META")},
		UpdateExpression:          aws.String("SET #g = :g, #gs = :gs"),
		ExpressionAttributeNames:  map[string]string{"#g": "GSI2PK", "#gs": "GSI2SK"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":g": s("EVENT#hot"), ":gs": s("QAT#9")},
	})
	reason, _ = reasonOf(err)
	assert.Equal(t, "IndexWriteKeyRangeThroughputExceeded", reason, "an UpdateExpression that SETs GSI2PK: %v", err)

	// A transaction with an item on the hot key: cancelled, that item ThrottlingError.
	_, err = db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(table), Item: map[string]types.AttributeValue{"PK": s("IDEMP#c#d"), "SK": s("LOCK")}}},
		{Put: &types.Put{TableName: aws.String(table), Item: map[string]types.AttributeValue{"PK": s("REQ#tx"), "SK": s("META"),
			"GSI2PK": s("EVENT#hot"), "GSI2SK": s("QAT#tx")}}},
	}})
	var tc *types.TransactionCanceledException
	require.ErrorAs(t, err, &tc)
	require.Len(t, tc.CancellationReasons, 2)
	assert.Equal(t, "None", aws.ToString(tc.CancellationReasons[0].Code))
	assert.Equal(t, "ThrottlingError", aws.ToString(tc.CancellationReasons[1].Code))
	assert.Contains(t, aws.ToString(tc.CancellationReasons[1].Message), "global secondary indexes")

	c := limits.Counts()
	assert.Equal(t, throttled+3, c.Throttled)
	assert.Equal(t, throttled+2, c.IndexThrottled)
	assert.Equal(t, 1, c.Reasons["TableWriteKeyRangeThroughputExceeded"])
	assert.Zero(t, c.Conflicts)

	// Reads have their own buckets: the hot index key can still be read.
	out, err := db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("GSI2"),
		KeyConditionExpression:    aws.String("#k = :k"),
		ExpressionAttributeNames:  map[string]string{"#k": "GSI2PK"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":k": s("EVENT#hot")},
	})
	require.NoError(t, err)
	assert.Len(t, out.Items, ok)
}

func updateInput(u *types.Update) *dynamodb.UpdateItemInput {
	return &dynamodb.UpdateItemInput{TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression,
		ExpressionAttributeNames: u.ExpressionAttributeNames, ExpressionAttributeValues: u.ExpressionAttributeValues}
}

// gate holds the first call sent while it is armed until release is closed.
type gate struct {
	next             aws.HTTPClient
	armed            atomic.Bool
	entered, release chan struct{}
}

func (g *gate) arm() {
	g.entered, g.release = make(chan struct{}), make(chan struct{})
	g.armed.Store(true)
}

func (g *gate) Do(req *http.Request) (*http.Response, error) {
	if g.armed.CompareAndSwap(true, false) {
		close(g.entered)
		<-g.release
	}
	return g.next.Do(req)
}

// A transaction naming an item that another transaction holds is cancelled with
// TransactionConflict, and a single write on it is refused with
// TransactionConflictException; a transaction on an item a single write is under way
// on goes through, as DynamoDB's documentation has it. The overlap is made by
// holding the first call in flight.
func TestLimitedClientRefusesOverlappingTransactions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	raw := asynceventtest.DynamoDB(t)
	table := asynceventtest.NewTable(t).TableName()
	g := &gate{}
	held := dynamodb.New(raw.Options(), func(o *dynamodb.Options) { g.next = o.HTTPClient; o.HTTPClient = g })
	db, limits := asynceventtest.NewLimitedClient(held, asynceventtest.Limits{})
	capacity := map[string]types.AttributeValue{"PK": s("EVENT#e"), "SK": s("CAPACITY")}
	update := func(key map[string]types.AttributeValue) types.TransactWriteItem {
		return types.TransactWriteItem{Update: &types.Update{TableName: aws.String(table), Key: key,
			UpdateExpression: aws.String("ADD #n :one"), ExpressionAttributeNames: map[string]string{"#n": "n"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}}}}
	}
	transact := func(items ...types.TransactWriteItem) error {
		_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		return err
	}
	other := map[string]types.AttributeValue{"PK": s("REQ#r"), "SK": s("META")}

	// A single write on CAPACITY in flight: a transaction on it goes through.
	g.arm()
	var wg sync.WaitGroup
	var firstErr error
	wg.Go(func() { _, firstErr = db.UpdateItem(ctx, updateInput(update(capacity).Update)) })
	<-g.entered
	require.NoError(t, transact(update(other), update(capacity)))
	close(g.release)
	wg.Wait()
	require.NoError(t, firstErr)

	// A transaction on CAPACITY in flight: another transaction and a single write on it
	// are refused.
	g.arm()
	var txErr error
	wg.Go(func() { txErr = transact(update(capacity)) })
	<-g.entered
	var tc *types.TransactionCanceledException
	require.ErrorAs(t, transact(update(capacity)), &tc)
	assert.Equal(t, "TransactionConflict", aws.ToString(tc.CancellationReasons[0].Code))
	_, err := db.UpdateItem(ctx, updateInput(update(capacity).Update))
	var conflict *types.TransactionConflictException
	assert.ErrorAs(t, err, &conflict)
	close(g.release)
	wg.Wait()
	require.NoError(t, txErr)
	require.NoError(t, transact(update(capacity)), "free once answered")

	assert.Equal(t, 2, limits.Counts().Conflicts)
	assert.Zero(t, limits.Counts().Throttled)
}

// A spike on one FIRST_COME event, with DynamoDB's limits scaled down to 20 WCU/s per
// partition key so that DynamoDB Local at a few hundred calls a second meets them as
// DynamoDB would at tens of thousands: the event's GSI2 key and its CAPACITY item are
// throttled, seat claims conflict, and the event still ends with exactly its capacity
// of winners, every request final and every invariant of CheckEvent holding. How
// often the rates are met depends on the machine's speed, so a burst of other traffic
// heats the event's key for three seconds besides, from the third seat claim on: worker
// calls refused past every retry leave their messages for redelivery
// (OutcomeThrottled). The workers are set to retry for as long as it takes (a short
// backoff, many receives, a short lease), as a service expecting throttles would set
// them.
func TestSpikeUnderScaledDownLimitsEndsWithExactlyNWinners(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, limits := asynceventtest.NewLimitedClient(asynceventtest.DynamoDB(t), asynceventtest.Limits{WCU: 20})
	c := asynceventtest.NewTableOn(t, db, asyncevent.Options{})
	clean, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName()})
	require.NoError(t, err)
	const capacity, users = 5, 40
	_, err = clean.CreateEvent(ctx, asyncevent.EventSettings{EventID: "spike", EventType: asyncevent.FirstCome, CapacityTotal: capacity})
	require.NoError(t, err)

	q := queue.NewMemory(queue.MemoryOptions{})
	var retries, throttledOutcomes, handled atomic.Int64
	w, err := asyncevent.NewWorker(c, q, asyncevent.WorkerOptions{
		Concurrency: 4, WaitTime: 50 * time.Millisecond, VisibilityTimeout: 5 * time.Second,
		ProcessOptions: asyncevent.ProcessOptions{
			LeaseDuration: 2 * time.Second, MaxReceives: 1000,
			Handler: asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error {
				if handled.Add(1) == 3 {
					limits.Heat("EVENT#spike", 3*time.Second)
				}
				return nil
			}),
			Backoff: func(n int) time.Duration { return time.Duration(min(n, 10)) * 50 * time.Millisecond },
			OnOutcome: func(o asyncevent.Outcome) {
				switch o.Kind {
				case asyncevent.OutcomeRetry:
					retries.Add(1)
				case asyncevent.OutcomeThrottled:
					assert.ErrorIs(t, o.Err, asyncevent.ErrThrottled)
					throttledOutcomes.Add(1)
				}
			},
		},
	})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = w.Stop(ctx)
		}
	})

	// Eight clients click at once. A click that fails is clicked again, as its user
	// would after a 503.
	names := make([]string, users)
	for i := range names {
		names[i] = fmt.Sprintf("user-%02d", i)
	}
	var clickErrors, throttledClicks atomic.Int64
	work := make(chan string)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for u := range work {
				for attempt := 1; ; attempt++ {
					_, err := c.Submit(ctx, q, "spike", u)
					if err == nil {
						break
					}
					clickErrors.Add(1)
					if errors.Is(err, asyncevent.ErrThrottled) {
						throttledClicks.Add(1)
					}
					if !assert.Less(t, attempt, 50, "click of %s: %v", u, err) {
						break
					}
					time.Sleep(time.Duration(attempt) * 20 * time.Millisecond)
				}
			}
		})
	}
	for _, u := range names {
		work <- u
	}
	close(work)
	wg.Wait()

	// Every request final: poll with a deadline, on a client beside the limits.
	deadline := time.Now().Add(3 * time.Minute)
	var st *asyncevent.EventStats
	for {
		st, err = clean.EventStats(ctx, "spike")
		require.NoError(t, err)
		final := st.ByStatus[asyncevent.StatusSucceeded] + st.ByStatus[asyncevent.StatusRejected] + st.ByStatus[asyncevent.StatusFailedFinal]
		if l := q.Len(); final == users && l.Visible+l.InFlight == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "not all final: %v, queue %+v, limits %+v", st.ByStatus, q.Len(), limits.Counts())
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, w.Stop(ctx))
	stopped = true

	counts := limits.Counts()
	t.Logf("%v; limits %+v; %d messages throttled, %d other worker retries; %d failed clicks clicked again (%d throttled)",
		st.ByStatus, counts, throttledOutcomes.Load(), retries.Load(), clickErrors.Load(), throttledClicks.Load())
	rep := asynceventtest.CheckEvent(t, clean, "spike", asynceventtest.CheckOptions{Users: names})
	assert.Equal(t, users, rep.Requests)
	assert.Equal(t, capacity, rep.ByStatus[asyncevent.StatusSucceeded])
	assert.Equal(t, users-capacity, rep.ByStatus[asyncevent.StatusRejected])
	assert.Positive(t, counts.Throttled, "the spike went over 20 WCU/s on a key")
	assert.Positive(t, counts.Reasons["IndexWriteKeyRangeThroughputExceeded"], "GSI back-pressure on the event's GSI2 key")
	assert.Positive(t, throttledOutcomes.Load(), "worker calls throttled past every retry left their messages")
}

// An update that adds to a set grows its item, and the simulator charges the grown
// item: a capacity shard's claims cost 2 WCU once its seat tokens pass 1 KB, as on
// DynamoDB, which bills a write by the larger of the item before and after it.
func TestLimitedClientChargesWhatAnUpdateAdds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	table := asynceventtest.NewTable(t).TableName()
	db, limits := asynceventtest.NewLimitedClient(asynceventtest.DynamoDB(t), asynceventtest.Limits{WCU: 3, Burst: time.Second, Clock: clock.Now},
		func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	key := map[string]types.AttributeValue{"PK": s("EVENT#e#CAPACITY#0"), "SK": s("CAPACITY")}
	_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
		"PK": key["PK"], "SK": key["SK"], "pad": s(strings.Repeat("x", 950)), // under 1 KB: 1 unit of the 3
	}})
	require.NoError(t, err)
	add := func(token string) error {
		_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: key,
			UpdateExpression:          aws.String("ADD holders :t"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberSS{Value: []string{token}}},
		})
		return err
	}
	require.NoError(t, add(strings.Repeat("a", 100)), "past 1 KB: 2 units, the last 2 of the bucket")
	assert.Error(t, add(strings.Repeat("b", 10)), "2 units again, and none left: counted at 1 unit it would pass")
	assert.Equal(t, 1, limits.Counts().Throttled)
}

// The limits simulator and the heat meter find an item's index keys by the GSIs that
// internal/metered names apart from the library (which imports internal/, so cannot
// hand them down): they are the table's, with the table's partition keys.
func TestMeteredIndexesAreTheTables(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []string{asyncevent.IndexUser, asyncevent.IndexEvent}, metered.Indexes())

	db := asynceventtest.DynamoDB(t)
	c := asynceventtest.NewTableOn(t, db, asyncevent.Options{})
	out, err := db.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(c.TableName())})
	require.NoError(t, err)
	table := map[string]string{}
	for _, index := range out.Table.GlobalSecondaryIndexes {
		for _, k := range index.KeySchema {
			if k.KeyType == types.KeyTypeHash {
				table[aws.ToString(index.IndexName)] = aws.ToString(k.AttributeName)
			}
		}
	}
	meter := map[string]string{}
	for _, index := range metered.Indexes() {
		meter[index], _ = metered.IndexPartitionKey(index)
	}
	assert.Equal(t, table, meter, "GSI name -> its partition key attribute")
}
