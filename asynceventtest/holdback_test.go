package asynceventtest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

// holdTable makes a table behind a HoldBack and returns the HoldBack and the table's
// name.
func holdTable(t *testing.T) (*asynceventtest.HoldBack, string) {
	t.Helper()
	hb := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(t))
	c := asynceventtest.NewTableOn(t, hb, asyncevent.Options{})
	return hb, c.TableName()
}

func itemKey(pk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: pk}, "SK": &types.AttributeValueMemberS{Value: "ITEM"}}
}

// takeOne is a seat claim in miniature: seats − 1 under seats > 0, its expressions
// with #placeholders as the library's are.
func takeOne(table, pk string) *dynamodb.UpdateItemInput {
	return &dynamodb.UpdateItemInput{
		TableName:                 aws.String(table),
		Key:                       itemKey(pk),
		UpdateExpression:          aws.String("SET #0 = #0 - :0"),
		ConditionExpression:       aws.String("#0 > :1"),
		ExpressionAttributeNames:  map[string]string{"#0": "seats"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":0": &types.AttributeValueMemberN{Value: "1"}, ":1": &types.AttributeValueMemberN{Value: "0"}},
	}
}

func putSeats(t *testing.T, db asyncevent.DynamoDB, table, pk string, seats int) {
	t.Helper()
	_, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: pk}, "SK": &types.AttributeValueMemberS{Value: "ITEM"},
		"seats": &types.AttributeValueMemberN{Value: fmt.Sprint(seats)},
	}})
	require.NoError(t, err)
}

func seatsOf(t *testing.T, table, pk string) string {
	t.Helper()
	out, err := asynceventtest.DynamoDB(t).GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: itemKey(pk), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	n, ok := out.Item["seats"].(*types.AttributeValueMemberN)
	require.True(t, ok)
	return n.Value
}

// A write held while its caller gives up: the caller gets its context's error and
// nothing is applied; landed later, the write applies then.
func TestHoldBackLandsAfterTheCallerGaveUp(t *testing.T) {
	t.Parallel()
	hb, table := holdTable(t)
	putSeats(t, hb, table, "K#1", 2)
	held := hb.Hold(asynceventtest.OnKey("UpdateItem", "K#1", "seats > "), 1, asynceventtest.CallerWaits)

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := hb.UpdateItem(ctx, takeOne(table, "K#1"))
		errc <- err
	}()
	require.NoError(t, held.Caught(context.Background()))
	cancel() // a deadline: the caller gives up while the write is on the wire
	err := <-errc
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, "2", seatsOf(t, table, "K#1"), "nothing applied when the caller returns")
	assert.False(t, held.Outcome().Landed)

	require.NoError(t, held.Land(context.Background()))
	assert.True(t, held.Outcome().Applied, "%v", held.Outcome())
	assert.Equal(t, "1", seatsOf(t, table, "K#1"), "applied when it landed")

	_, err = hb.UpdateItem(context.Background(), takeOne(table, "K#1"))
	require.NoError(t, err, "the rule caught its one write: the next goes through")
	assert.Equal(t, "0", seatsOf(t, table, "K#1"))
	assert.Equal(t, 1, held.Count())
}

// A write whose answer is lost at once (CallerReset), and whose condition no longer
// holds when it lands: the landing fails its condition and writes nothing.
func TestHoldBackLandingWhoseConditionNoLongerHolds(t *testing.T) {
	t.Parallel()
	hb, table := holdTable(t)
	putSeats(t, hb, table, "K#1", 1)
	held := hb.Hold(asynceventtest.OnKey("", "K#", ""), 1, asynceventtest.CallerReset)
	_, err := hb.UpdateItem(context.Background(), takeOne(table, "K#1"))
	require.Error(t, err, "the caller is told the connection was reset")
	assert.NotErrorIs(t, err, context.Canceled)
	assert.Equal(t, "1", seatsOf(t, table, "K#1"))

	_, err = hb.UpdateItem(context.Background(), takeOne(table, "K#1")) // another takes the last seat
	require.NoError(t, err)
	require.NoError(t, held.Land(context.Background()))
	o := held.Outcome()
	assert.True(t, o.Landed)
	assert.True(t, o.ConditionFailed, "%v", o)
	assert.False(t, o.Applied)
	var ccf *types.ConditionalCheckFailedException
	assert.True(t, errors.As(o.Err, &ccf))
	assert.Equal(t, "0", seatsOf(t, table, "K#1"))
	require.NoError(t, held.Land(context.Background()), "landing again lands nothing twice")
	assert.Len(t, held.Outcomes(), 1)
}

// A write landed while its caller still waits: the caller gets DynamoDB's answer.
// LandAfter lands in the background; Landed waits for it.
func TestHoldBackSlowWrite(t *testing.T) {
	t.Parallel()
	hb, table := holdTable(t)
	putSeats(t, hb, table, "K#1", 0)
	held := hb.Hold(asynceventtest.OnKey("UpdateItem", "K#1", ""), 1, asynceventtest.CallerWaits)
	held.LandAfter(50 * time.Millisecond)
	_, err := hb.UpdateItem(context.Background(), takeOne(table, "K#1"))
	var ccf *types.ConditionalCheckFailedException
	require.True(t, errors.As(err, &ccf), "the caller gets the landing's answer: %v", err)
	require.NoError(t, held.Landed(context.Background()))
	assert.True(t, held.Outcome().ConditionFailed)
}

// Rules match by operation, key and expression (names filled in), in the order they
// were armed; n ≤ 0 catches until Stop; a transaction is caught as a whole. Many
// writers at once (go test -race).
func TestHoldBackRulesAndConcurrency(t *testing.T) {
	t.Parallel()
	hb, table := holdTable(t)
	for i := range 4 {
		putSeats(t, hb, table, fmt.Sprintf("K#%d", i), 100)
	}
	none := hb.Hold(asynceventtest.OnKey("UpdateItem", "K#", "no such text"), 0, asynceventtest.CallerReset)
	puts := hb.Hold(asynceventtest.OnKey("PutItem", "K#", ""), 0, asynceventtest.CallerReset)
	every := hb.Hold(asynceventtest.AnyOf(asynceventtest.OnKey("UpdateItem", "K#1", "seats = seats - "),
		asynceventtest.OnKey("TransactWriteItems", "K#2", "")), 0, asynceventtest.CallerReset)

	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			for _, pk := range []string{"K#0", "K#1", "K#3"} {
				_, err := hb.UpdateItem(context.Background(), takeOne(table, pk))
				assert.Equal(t, pk == "K#1", err != nil, pk)
			}
			_, err := hb.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				{Update: &types.Update{TableName: aws.String(table), Key: itemKey("K#2"), UpdateExpression: aws.String("SET seats = seats - :one"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}}}},
			}})
			assert.Error(t, err)
		})
	}
	wg.Wait()
	assert.Zero(t, none.Count())
	assert.Zero(t, puts.Count())
	assert.Equal(t, 20, every.Count())
	assert.Equal(t, "90", seatsOf(t, table, "K#0"))
	assert.Equal(t, "100", seatsOf(t, table, "K#1"))
	assert.Equal(t, "100", seatsOf(t, table, "K#2"))
	every.Stop()
	_, err := hb.UpdateItem(context.Background(), takeOne(table, "K#1"))
	require.NoError(t, err, "stopped: it catches no more")
	require.NoError(t, every.Land(context.Background()))
	for _, o := range every.Outcomes() {
		assert.True(t, o.Applied, "%v", o)
	}
	assert.Equal(t, "89", seatsOf(t, table, "K#1"))
	assert.Equal(t, "90", seatsOf(t, table, "K#2"))
}

// Two workers' clocks a few seconds apart, both moving with the base clock.
func TestSkewedClock(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	base := asynceventtest.NewClock(t0)
	ahead := asynceventtest.SkewedClock(base.Now, 7*time.Second)
	behind := asynceventtest.SkewedClock(base.Now, -7*time.Second)
	assert.Equal(t, t0.Add(7*time.Second), ahead())
	assert.Equal(t, t0.Add(-7*time.Second), behind())
	base.Advance(time.Minute)
	assert.Equal(t, 14*time.Second, ahead().Sub(behind()))
	assert.Equal(t, t0.Add(time.Minute+7*time.Second), ahead())
}
