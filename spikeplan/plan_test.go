package spikeplan_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/spikeplan"
)

func TestMain(m *testing.M) { asynceventtest.Main(m) }

// recordingUpdater records UpdateTable calls instead of making them: DynamoDB Local
// ignores warm throughput.
type recordingUpdater struct{ calls []*dynamodb.UpdateTableInput }

func (r *recordingUpdater) UpdateTable(_ context.Context, in *dynamodb.UpdateTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error) {
	r.calls = append(r.calls, in)
	return &dynamodb.UpdateTableOutput{}, nil
}

func TestFor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTable(t)
	db := asynceventtest.DynamoDB(t)
	p, err := spikeplan.For(ctx, db, c.TableName(), 20000)
	require.NoError(t, err)
	// The rule: K = ⌈20,000 × 4 ÷ 800⌉, C = ⌈5,000 × 2 ÷ 800⌉.
	assert.Equal(t, 100, p.IndexShards)
	assert.Equal(t, 13, p.CapacityShards)
	k, cs := asyncevent.ShardsFor(20000, 0)
	assert.Equal(t, [2]int{p.IndexShards, p.CapacityShards}, [2]int{k, cs}, "one rule")
	assert.Equal(t, 5000.0, p.WinnersPerSecond)
	// 20,000 × 5 + 5,000 × 2 WCU and 20,000 × 2 RCU on the table; 20,000 × 4 WCU on each index.
	assert.Equal(t, spikeplan.Throughput{ReadUnitsPerSecond: 40000, WriteUnitsPerSecond: 110000}, p.Need[""])
	assert.Equal(t, spikeplan.Throughput{WriteUnitsPerSecond: 80000}, p.Need["GSI1"])
	assert.Equal(t, spikeplan.Throughput{WriteUnitsPerSecond: 80000}, p.Need["GSI2"])
	require.Len(t, p.Short, 3, "DynamoDB Local reports no warm throughput")
	assert.Equal(t, spikeplan.Throughput{ReadUnitsPerSecond: 40000, WriteUnitsPerSecond: 40000}, p.Quota)
	assert.Equal(t, p.Need, p.OverQuota, "the table and both indexes need more than the default quota")
	assert.Empty(t, p.OnDemandMax, "no on-demand maximum set")
	assert.Empty(t, p.Capped)
	// A one-minute spike, 100 messages at once, 30 ms each.
	assert.Equal(t, spikeplan.Drain{Clicks: 1_200_000, Concurrency: 100, MessageTime: 30 * time.Millisecond, Time: 6 * time.Minute}, p.Drain)

	rec := &recordingUpdater{}
	require.NoError(t, spikeplan.Apply(ctx, rec, c.TableName(), p))
	require.Len(t, rec.calls, 1)
	in := rec.calls[0]
	assert.Equal(t, c.TableName(), aws.ToString(in.TableName))
	assert.Equal(t, int64(110000), aws.ToInt64(in.WarmThroughput.WriteUnitsPerSecond))
	assert.Equal(t, int64(40000), aws.ToInt64(in.WarmThroughput.ReadUnitsPerSecond))
	require.Len(t, in.GlobalSecondaryIndexUpdates, 2)
	for _, u := range in.GlobalSecondaryIndexUpdates {
		assert.Equal(t, int64(80000), aws.ToInt64(u.Update.WarmThroughput.WriteUnitsPerSecond), aws.ToString(u.Update.IndexName))
	}

	// A table warm enough already is left as it is.
	p.Warm = p.Need
	rec.calls = nil
	require.NoError(t, spikeplan.Apply(ctx, rec, c.TableName(), p))
	assert.Empty(t, rec.calls)

	_, err = spikeplan.For(ctx, db, c.TableName(), 0)
	assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions)
	_, err = spikeplan.For(ctx, db, "no-such-table", 100)
	assert.ErrorIs(t, err, asyncevent.ErrTableNotFound)
}

func TestForBelowTheQuota(t *testing.T) {
	t.Parallel()
	p, err := spikeplan.For(context.Background(), asynceventtest.DynamoDB(t), asynceventtest.NewTable(t).TableName(), 1000)
	require.NoError(t, err)
	assert.Equal(t, 5, p.IndexShards)
	assert.Equal(t, 1, p.CapacityShards)
	assert.Equal(t, spikeplan.Throughput{ReadUnitsPerSecond: 2000, WriteUnitsPerSecond: 5500}, p.Need[""])
	assert.Empty(t, p.OverQuota)
}

func TestDrainFor(t *testing.T) {
	assert.Equal(t, 10*time.Second, spikeplan.DrainFor(1000, 10, 100*time.Millisecond).Time)
	d := spikeplan.DrainFor(1000, 0, 0)
	assert.Equal(t, spikeplan.DefaultDrainConcurrency, d.Concurrency)
	assert.Equal(t, spikeplan.DefaultMessageTime, d.MessageTime)
	assert.Equal(t, 300*time.Millisecond, d.Time)
}
