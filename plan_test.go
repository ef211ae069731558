package asyncevent_test

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
	// The rule: K = ⌈20,000 × 4 ÷ 800⌉, C = ⌈5,000 × 2 ÷ 800⌉.
	assert.Equal(t, 100, p.IndexShards)
	assert.Equal(t, 13, p.CapacityShards)
	k, cs := asyncevent.ShardsFor(20000, 0)
	assert.Equal(t, [2]int{p.IndexShards, p.CapacityShards}, [2]int{k, cs}, "one rule")
	assert.Equal(t, 5000.0, p.WinnersPerSecond)
	// 20,000 × 5 + 5,000 × 2 WCU and 20,000 × 2 RCU on the table; 20,000 × 4 WCU on each index.
	assert.Equal(t, asyncevent.Throughput{ReadUnitsPerSecond: 40000, WriteUnitsPerSecond: 110000}, p.Need[""])
	assert.Equal(t, asyncevent.Throughput{WriteUnitsPerSecond: 80000}, p.Need["GSI1"])
	assert.Equal(t, asyncevent.Throughput{WriteUnitsPerSecond: 80000}, p.Need["GSI2"])
	require.Len(t, p.Short, 3, "DynamoDB Local reports no warm throughput")
	assert.Equal(t, asyncevent.Throughput{ReadUnitsPerSecond: 40000, WriteUnitsPerSecond: 40000}, p.Quota)
	assert.Equal(t, p.Need, p.OverQuota, "the table and both indexes need more than the default quota")
	assert.Empty(t, p.OnDemandMax, "no on-demand maximum set")
	assert.Empty(t, p.Capped)
	// A one-minute spike, 100 messages at once, 30 ms each.
	assert.Equal(t, asyncevent.Drain{Clicks: 1_200_000, Concurrency: 100, MessageTime: 30 * time.Millisecond, Time: 6 * time.Minute}, p.Drain)

	rec := &recordingUpdater{}
	require.NoError(t, c.ApplySpikePlan(ctx, rec, p))
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
	require.NoError(t, c.ApplySpikePlan(ctx, rec, p))
	assert.Empty(t, rec.calls)

	_, err = c.PlanSpike(ctx, 0)
	assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions)
	missing, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: "no-such-table"})
	require.NoError(t, err)
	_, err = missing.PlanSpike(ctx, 100)
	assert.ErrorIs(t, err, asyncevent.ErrTableNotFound)
}

func TestPlanSpikeBelowTheQuota(t *testing.T) {
	t.Parallel()
	p, err := asynceventtest.NewTable(t).PlanSpike(context.Background(), 1000)
	require.NoError(t, err)
	assert.Equal(t, 5, p.IndexShards)
	assert.Equal(t, 1, p.CapacityShards)
	assert.Equal(t, asyncevent.Throughput{ReadUnitsPerSecond: 2000, WriteUnitsPerSecond: 5500}, p.Need[""])
	assert.Empty(t, p.OverQuota)
}

func TestShardsFor(t *testing.T) {
	for _, tc := range []struct {
		clicks, winners float64
		k, c            int
	}{
		{20000, 0, 100, 13},     // 80,000 WCU/s on GSI2, 10,000 on the capacity shards
		{20000, 5000, 100, 13},  // the same, said
		{20000, 20000, 100, 50}, // every click a winner
		{100, 0, 1, 1},
		{0, 0, 1, 1},
		{100, 10, 1, 1},
		{1e300, 1e300, asyncevent.MaxShards, 99}, // a huge peak is clamped, not wrapped around
		{1e9, 1e9, asyncevent.MaxShards, 99},     // a CreateEvent transaction holds the config and at most 99 capacity shards
	} {
		k, c := asyncevent.ShardsFor(tc.clicks, tc.winners)
		assert.Equal(t, [2]int{tc.k, tc.c}, [2]int{k, c}, "%v clicks/s, %v winners/s", tc.clicks, tc.winners)
	}
}

func TestShardForPeakCountsTheSeats(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  asyncevent.EventConfig
		k, c int
	}{
		{"1,000 seats", asyncevent.EventConfig{EventType: asyncevent.FirstCome, CapacityTotal: 1000}, 100, 13},
		{"3 seats", asyncevent.EventConfig{EventType: asyncevent.FirstCome, CapacityTotal: 3}, 100, 3},
		{"a shard per 128 seats", asyncevent.EventConfig{EventType: asyncevent.FirstCome, CapacityTotal: 5000}, 100, 40},
		{"at most 99 shards", asyncevent.EventConfig{EventType: asyncevent.FirstCome, CapacityTotal: 100000}, 100, 99},
		{"lottery", asyncevent.EventConfig{EventType: asyncevent.Lottery, WinnerCount: 5}, 100, 0},
	} {
		cfg := tc.cfg
		cfg.ShardForPeak(20000)
		assert.Equal(t, [2]int{tc.k, tc.c}, [2]int{cfg.IndexShards, cfg.CapacityShards}, tc.name)
	}
}

func TestDrainFor(t *testing.T) {
	assert.Equal(t, 10*time.Second, asyncevent.DrainFor(1000, 10, 100*time.Millisecond).Time)
	d := asyncevent.DrainFor(1000, 0, 0)
	assert.Equal(t, asyncevent.DefaultDrainConcurrency, d.Concurrency)
	assert.Equal(t, asyncevent.DefaultMessageTime, d.MessageTime)
	assert.Equal(t, 300*time.Millisecond, d.Time)
}
