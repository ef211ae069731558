package asyncevent_test

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

// recordingUpdater records UpdateTable calls instead of making them: DynamoDB Local
// ignores warm throughput.
type recordingUpdater struct{ calls []*dynamodb.UpdateTableInput }

func (r *recordingUpdater) UpdateTable(_ context.Context, in *dynamodb.UpdateTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error) {
	r.calls = append(r.calls, in)
	return &dynamodb.UpdateTableOutput{}, nil
}

func TestPlanSpike(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTable(t)
	p, err := c.PlanSpike(ctx, 20000)
	require.NoError(t, err)
	assert.Equal(t, 125, p.IndexShards)
	assert.Equal(t, 13, p.CapacityShards)
	assert.Equal(t, asyncevent.Throughput{ReadUnitsPerSecond: 40000, WriteUnitsPerSecond: 100000}, p.Need[""])
	assert.Equal(t, asyncevent.Throughput{WriteUnitsPerSecond: 80000}, p.Need["GSI1"])
	assert.Equal(t, asyncevent.Throughput{WriteUnitsPerSecond: 80000}, p.Need["GSI2"])
	require.Len(t, p.Short, 3, "DynamoDB Local reports no warm throughput")

	rec := &recordingUpdater{}
	require.NoError(t, c.ApplySpikePlan(ctx, rec, p))
	require.Len(t, rec.calls, 1)
	in := rec.calls[0]
	assert.Equal(t, c.TableName(), aws.ToString(in.TableName))
	assert.Equal(t, int64(100000), aws.ToInt64(in.WarmThroughput.WriteUnitsPerSecond))
	assert.Equal(t, int64(40000), aws.ToInt64(in.WarmThroughput.ReadUnitsPerSecond))
	require.Len(t, in.GlobalSecondaryIndexUpdates, 2)
	for _, u := range in.GlobalSecondaryIndexUpdates {
		assert.Equal(t, int64(80000), aws.ToInt64(u.Update.WarmThroughput.WriteUnitsPerSecond), aws.ToString(u.Update.IndexName))
	}

	// A table warm enough already is left as it is.
	p.Warm = p.Need
	rec.calls = nil
	require.NoError(t, c.ApplySpikePlan(ctx, rec, p))
	assert.Empty(t, rec.calls)

	_, err = c.PlanSpike(ctx, 0)
	assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions)
	missing, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: "no-such-table"})
	require.NoError(t, err)
	_, err = missing.PlanSpike(ctx, 100)
	assert.ErrorIs(t, err, asyncevent.ErrTableNotFound)
}
