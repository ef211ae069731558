package bench_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/internal/bench"
)

func TestMain(m *testing.M) { asynceventtest.Main(m) }

func TestRunMeasuresBothSides(t *testing.T) {
	t.Parallel()
	table := asynceventtest.UniqueTableName(t)
	t.Cleanup(func() { asynceventtest.DeleteTable(t, table) })
	r, err := bench.Run(context.Background(), bench.Config{
		DB: asynceventtest.DynamoDB(t), Table: table, Rounds: 2, N: 20, Clients: 4, Workers: 3,
	})
	require.NoError(t, err)
	require.Len(t, r.Flows, 6)
	require.NotNil(t, r.Store)
	assert.Equal(t, 1.0, r.Store.Library.PerOp.Calls["TransactWriteItems"])
	assert.Equal(t, 2.0, r.Store.Baseline.PerOp.Calls["PutItem"])
	byName := map[string]bench.Flow{}
	for _, f := range r.Flows {
		byName[f.Name] = f
		assert.Len(t, f.Library.OpsPerSec, 2, f.Name)
		assert.Len(t, f.Baseline.OpsPerSec, 2, f.Name)
		assert.Positive(t, f.Ratio, f.Name)
	}

	in := byName[bench.FlowIngestNew]
	assert.Zero(t, in.Library.PerOp.Calls["TransactWriteItems"], "the design's own writes, no transaction")
	assert.Equal(t, 2.0, in.Library.PerOp.Calls["PutItem"], "the lock, the request")
	assert.Equal(t, 1.0, in.Library.PerOp.Calls["UpdateItem"])
	// Plus the GetItem of the event's config, cached for 5 s per client.
	assert.InDelta(t, 3.0, in.Library.PerOp.DynamoDBCalls-in.Library.PerOp.Calls["GetItem"], 1e-9)
	assert.Less(t, in.Library.PerOp.Calls["GetItem"], 0.5)
	assert.Equal(t, 1.0, in.Library.PerOp.QueueSends)
	assert.Equal(t, 3.0, in.Baseline.PerOp.DynamoDBCalls, "PutItem lock + PutItem request + UpdateItem")
	assert.Equal(t, 1.0, in.Baseline.PerOp.QueueSends)

	dup := byName[bench.FlowIngestDup]
	// Another node: the lock's failed put, plus that node's own cached CONFIG read per
	// event.
	assert.InDelta(t, 1.0, dup.Library.PerOp.DynamoDBCalls-dup.Library.PerOp.Calls["GetItem"], 1e-9)
	assert.Equal(t, 0.0, dup.Library.PerOp.QueueSends)
	assert.Equal(t, 2.0, dup.Baseline.PerOp.DynamoDBCalls)

	repeat := byName[bench.FlowIngestRepeat]
	assert.InDelta(t, 0.0, repeat.Library.PerOp.DynamoDBCalls-repeat.Library.PerOp.Calls["GetItem"], 1e-9, "the same node: from its cache")
	assert.Equal(t, 2.0, repeat.Baseline.PerOp.DynamoDBCalls)

	win := byName[bench.FlowWorkerWin]
	// The home claim: the seat, then SUCCEEDED (and the event's CONFIG, read at most
	// every 5 s; a claim that meets its home shard emptied by others goes on under a
	// lease; the last seat of a shard records it empty).
	assert.InDelta(t, 2.0, win.Library.PerOp.Calls["UpdateItem"], 0.35, "the seat, SUCCEEDED")
	assert.Less(t, win.Library.PerOp.DynamoDBCalls, 3.0, "fewer calls than the raw flow's 3")
	assert.InDelta(t, 1.0, win.Library.PerOp.CapacityWrites, 0.2)
	assert.LessOrEqual(t, win.Library.PerOp.WCU, 5.0, "under the raw flow's 7 WCU: no PROCESSING write")
	assert.Equal(t, 3.0, win.Baseline.PerOp.DynamoDBCalls)

	sold := byName[bench.FlowWorkerSoldOut]
	assert.Equal(t, 1.0, sold.Library.PerOp.Calls["UpdateItem"], "one conditional write")
	assert.Equal(t, 1.0, sold.Library.PerOp.Calls["GetItem"], "after a look at the home shard (no seat of its own there)")
	assert.Equal(t, 0.0, sold.Library.PerOp.CapacityWrites)
	assert.Equal(t, 1.0, sold.Baseline.PerOp.CapacityWrites)

	sharded := byName[bench.FlowWorkerSoldOutSharded]
	// Each loser on a new worker reads its home shard, marked sold out, and rejects it.
	// A shard whose emptiness record (the "capacity shard empty" row, best effort after
	// the last seat) was lost on a loaded machine costs its losers a read of the
	// CONFIG more: a few percent at most.
	assert.InDelta(t, 1.0, sharded.Library.PerOp.Calls["GetItem"], 0.05, "each loser on a new worker reads its home shard, marked sold out")
	assert.Equal(t, 1.0, sharded.Library.PerOp.Calls["UpdateItem"], "and rejects it")
	assert.InDelta(t, 2.0, sharded.Library.PerOp.RoundTrips, 0.05)
	assert.Equal(t, 0.0, sharded.Library.PerOp.CapacityWrites)

	checkHolds(t, r.Holds, 20*2)
}
