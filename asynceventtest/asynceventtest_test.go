package asynceventtest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

func TestMain(m *testing.M) { asynceventtest.Main(m) }

// A table made through wrappers of an OwnDynamoDB lives on that instance, and the
// kit's scan, check and clean-up find it there.
func TestTableOnOwnDynamoDB(t *testing.T) {
	own := asynceventtest.OwnDynamoDB(t)
	faulty := asynceventtest.NewFaultyDynamoDB(asynceventtest.NewCounter(own), asynceventtest.FaultPlan{})
	c := asynceventtest.NewTableOn(t, faulty, asyncevent.Options{})
	ctx := context.Background()

	_, err := own.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(c.TableName())})
	require.NoError(t, err, "the table is on the own instance")

	_, err = c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "e1", EventType: asyncevent.FirstCome, CapacityTotal: 2})
	require.NoError(t, err)
	for _, user := range []string{"u1", "u2", "u3"} {
		_, err := c.Rows().Participate(ctx, "e1", user)
		require.NoError(t, err)
	}
	assert.Len(t, asynceventtest.ScanTable(t, c.TableName()), 1+1+1+3+3, "config, capacity, its entry in the event list, 3 locks, 3 requests")
	rep := asynceventtest.CheckEvent(t, c, "e1", asynceventtest.CheckOptions{
		Users: []string{"u1", "u2", "u3"}, Unsettled: true})
	assert.Equal(t, 3, rep.Requests)
	assert.Equal(t, 3, rep.Locks)
}

// Each fault of a FaultyHTTPClient goes through the SDK's three attempts: a refused
// call writes nothing, a lost one writes all the same, a throttled one ends as the
// SDK's throttling error; calls on other keys than the plan's prefix pass untouched.
func TestFaultyClient(t *testing.T) {
	ctx := context.Background()
	raw := asynceventtest.DynamoDB(t)
	table := asynceventtest.NewTable(t).TableName()
	item := func(pk string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: pk}, "SK": &types.AttributeValueMemberS{Value: "META"}}
	}
	put := func(db *dynamodb.Client, pk string) error {
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item(pk)})
		return err
	}
	stored := func(pk string) bool {
		out, err := raw.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: item(pk), ConsistentRead: aws.Bool(true)})
		require.NoError(t, err)
		return out.Item != nil
	}

	refused, faults := asynceventtest.NewFaultyClient(raw, asynceventtest.FaultPlan{FailRate: 1})
	require.Error(t, put(refused, "REQ#refused"))
	assert.False(t, stored("REQ#refused"))
	assert.Equal(t, asynceventtest.FaultCounts{Failed: 3}, faults.Counts())

	lost, faults := asynceventtest.NewFaultyClient(raw, asynceventtest.FaultPlan{LoseRate: 1, KeyPrefix: "EVENT#"})
	require.Error(t, put(lost, "EVENT#lost"))
	assert.True(t, stored("EVENT#lost"))
	require.NoError(t, put(lost, "REQ#other"))
	_, err := lost.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(table), Item: item("REQ#tx")}},
		{Put: &types.Put{TableName: aws.String(table), Item: item("EVENT#tx")}},
	}})
	require.Error(t, err, "a transaction matches when any of its items does")
	assert.True(t, stored("EVENT#tx"))
	assert.Equal(t, asynceventtest.FaultCounts{Lost: 6}, faults.Counts())

	throttled, faults := asynceventtest.NewFaultyClient(raw, asynceventtest.FaultPlan{ThrottleRate: 1, Operations: []string{"GetItem"}})
	_, err = throttled.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: item("REQ#other")})
	var throttle *types.ProvisionedThroughputExceededException
	assert.True(t, errors.As(err, &throttle), "got %v", err)
	require.NoError(t, put(throttled, "REQ#throttled"), "PutItem is not in the plan's operations")
	assert.Equal(t, asynceventtest.FaultCounts{Throttled: 3}, faults.Counts())
}
