package asyncevent_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

func TestShardedEventSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTable(t)
	cutoff := asyncevent.MillisOf(time.Now().Add(time.Hour))
	for _, cfg := range []asyncevent.EventSettings{
		{EventID: "a", EventType: asyncevent.FirstCome, CapacityTotal: 10, IndexShards: asyncevent.MaxShards + 1},
		{EventID: "b", EventType: asyncevent.FirstCome, CapacityTotal: 10, CapacityShards: -1},
		{EventID: "c", EventType: asyncevent.FirstCome, CapacityTotal: 3, CapacityShards: 4},
		{EventID: "d", EventType: asyncevent.Lottery, WinnerCount: 3, LotteryCutoffAt: cutoff, CapacityShards: 2},
		{EventID: "e", EventType: asyncevent.FirstCome, CapacityTotal: asyncevent.MaxSeatsPerShard + 1},
		{EventID: "f", EventType: asyncevent.FirstCome, CapacityTotal: 2*asyncevent.MaxSeatsPerShard + 1, CapacityShards: 2},
	} {
		_, err := c.CreateEvent(ctx, cfg)
		assert.ErrorIs(t, err, asyncevent.ErrInvalidEvent, cfg.EventID)
	}
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "g", EventType: asyncevent.FirstCome, CapacityTotal: 2 * asyncevent.MaxSeatsPerShard, CapacityShards: 2})
	assert.NoError(t, err, "at the bound")
}

// An event with index and capacity shards reads as one: its listing merges the
// shards in queue order, both ways, with filter, limits and cursor; its statistics
// and capacity are the sums; and a first-come event still has exactly N winners, each
// shard spent before a request is refused.
func TestShardedEventReadsAsOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTable(t)
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{
		EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 11, IndexShards: 4, CapacityShards: 3,
	})
	require.NoError(t, err)
	capacity, err := c.GetCapacity(ctx, "sale")
	require.NoError(t, err)
	require.Len(t, capacity.Shards, 3)
	assert.Equal(t, []int64{4, 4, 3}, []int64{capacity.Shards[0].CapacityTotal, capacity.Shards[1].CapacityTotal, capacity.Shards[2].CapacityTotal})
	assert.Equal(t, int64(11), capacity.CapacityTotal)

	q := queue.NewMemory(queue.MemoryOptions{})
	const users = 60
	for i := range users {
		_, err := c.Submit(ctx, q, "sale", fmt.Sprintf("user-%02d", i))
		require.NoError(t, err)
	}
	runWorker(t, c, q, asyncevent.WorkerOptions{Concurrency: 4})
	asynceventtest.WaitDrained(t, q, time.Minute)

	// Every request sits in one of the four GSI2 partitions: one client with the
	// default request IDs deals them round the shards, 15 each.
	partitions := map[string]int{}
	var all []asyncevent.Request
	for _, it := range asynceventtest.ScanTable(t, c.TableName()) {
		if pk, ok := it["GSI2PK"]; ok {
			partitions[attrS(pk)]++
		}
	}
	assert.Len(t, partitions, 4)
	for p, n := range partitions {
		assert.True(t, strings.HasPrefix(p, "EVENT#sale#"), p)
		assert.Equal(t, users/4, n, "%s: the shards in turn", p)
	}

	// The listing, page by page, in both orders.
	for _, order := range []asyncevent.Order{asyncevent.Ascending, asyncevent.Descending} {
		all = listAll(t, c, "sale", asyncevent.EventListOptions{PageOptions: asyncevent.PageOptions{Limit: 7}, Order: order})
		require.Len(t, all, users, order)
		assert.True(t, slices.IsSortedFunc(all, func(a, b asyncevent.Request) int {
			if order == asyncevent.Descending {
				a, b = b, a
			}
			return compareQueue(a, b)
		}), "%s: in queue order across the shards", order)
	}
	won := listAll(t, c, "sale", asyncevent.EventListOptions{PageOptions: asyncevent.PageOptions{Limit: 3}, Status: asyncevent.StatusSucceeded, MaxRead: 5})
	assert.Len(t, won, 11, "the filter over every shard")

	page, err := c.ListEventRequests(ctx, "sale", asyncevent.EventListOptions{PageOptions: asyncevent.PageOptions{Limit: 5}})
	require.NoError(t, err)
	require.NotEmpty(t, page.NextCursor)
	_, err = c.ListEventRequests(ctx, "other", asyncevent.EventListOptions{PageOptions: asyncevent.PageOptions{Cursor: page.NextCursor}})
	assert.ErrorIs(t, err, asyncevent.ErrInvalidCursor)

	st, err := c.EventStats(ctx, "sale")
	require.NoError(t, err)
	assert.Equal(t, users, st.Requests)
	assert.Equal(t, 11, st.ByStatus[asyncevent.StatusSucceeded])
	assert.Equal(t, int64(11), st.CapacityTotal)
	assert.Zero(t, st.CapacityRemaining)
	capacity, err = c.GetCapacity(ctx, "sale")
	require.NoError(t, err)
	for _, shard := range capacity.Shards {
		assert.Zero(t, shard.CapacityRemaining, "every shard spent")
	}
	asynceventtest.CheckEvent(t, c, "sale", asynceventtest.CheckOptions{})
}

// A lottery with index shards draws its entries from every shard, and the draw
// verifies.
func TestShardedLotteryDrawsAndVerifies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{
		EventID: "raffle", EventType: asyncevent.Lottery, WinnerCount: 5, IndexShards: 3,
		LotteryCutoffAt: asyncevent.MillisOf(t0.Add(time.Minute)),
	})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	for i := range 30 {
		_, err := c.Submit(ctx, q, "raffle", fmt.Sprintf("user-%02d", i))
		require.NoError(t, err)
	}
	runWorker(t, c, q, asyncevent.WorkerOptions{})
	asynceventtest.WaitDrained(t, q, time.Minute)
	clock.Advance(time.Hour)
	res, err := c.Draw(ctx, "raffle")
	require.NoError(t, err)
	assert.Len(t, res.Winners, 5)
	assert.Equal(t, int64(30), res.Record.EntryCount)
	v, err := c.VerifyDraw(ctx, "raffle")
	require.NoError(t, err)
	assert.True(t, v.OK(), v.String())
	asynceventtest.CheckEvent(t, c, "raffle", asynceventtest.CheckOptions{})
}

func listAll(t *testing.T, c *asyncevent.Client, eventID string, opts asyncevent.EventListOptions) []asyncevent.Request {
	t.Helper()
	var all []asyncevent.Request
	for range 1000 {
		page, err := c.ListEventRequests(context.Background(), eventID, opts)
		require.NoError(t, err)
		all = append(all, page.Requests...)
		if page.NextCursor == "" {
			return all
		}
		opts.Cursor = page.NextCursor
	}
	t.Fatal("the listing did not end")
	return nil
}

// compareQueue orders requests as GSI2SK does: queuedAt, then request ID.
func compareQueue(a, b asyncevent.Request) int {
	if a.QueuedAt != b.QueuedAt {
		return int(a.QueuedAt - b.QueuedAt)
	}
	return strings.Compare(a.RequestID, b.RequestID)
}

func attrS(av types.AttributeValue) string {
	if s, ok := av.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}
