package asynceventtest_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
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

	_, err = c.CreateEvent(ctx, asyncevent.EventConfig{EventID: "e1", EventType: asyncevent.FirstCome, CapacityTotal: 2})
	require.NoError(t, err)
	for _, user := range []string{"u1", "u2", "u3"} {
		_, err := c.Participate(ctx, "e1", user)
		require.NoError(t, err)
	}
	assert.Len(t, asynceventtest.ScanTable(t, c.TableName()), 1+1+3+3, "config, capacity, 3 locks, 3 requests")
	rep := asynceventtest.CheckEvent(t, c, "e1", asynceventtest.CheckOptions{
		Users: []string{"u1", "u2", "u3"}, Unsettled: true})
	assert.Equal(t, 3, rep.Requests)
	assert.Equal(t, 3, rep.Locks)
}
