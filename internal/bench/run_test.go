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
	assert.InDelta(t, 3.0, win.Library.PerOp.DynamoDBCalls-win.Library.PerOp.Calls["GetItem"], 0.05, "the start, the seat, SUCCEEDED (and the event's cached CONFIG; the last seat of the event records it empty)")
	assert.Equal(t, 1.0, win.Library.PerOp.CapacityWrites)
	assert.LessOrEqual(t, win.Library.PerOp.WCU, 7.0, "at most the raw flow's 7 WCU")
	assert.Equal(t, 3.0, win.Baseline.PerOp.DynamoDBCalls)

	sold := byName[bench.FlowWorkerSoldOut]
	assert.InDelta(t, 1.0, sold.Library.PerOp.DynamoDBCalls-sold.Library.PerOp.Calls["GetItem"], 1e-9, "one conditional write (and the event's cached CONFIG)")
	assert.Equal(t, 1.0, sold.Library.PerOp.Calls["UpdateItem"])
	assert.Equal(t, 0.0, sold.Library.PerOp.CapacityWrites)
	assert.Equal(t, 1.0, sold.Baseline.PerOp.CapacityWrites)

	sharded := byName[bench.FlowWorkerSoldOutSharded]
	assert.Equal(t, 1.0, sharded.Library.PerOp.Calls["GetItem"], "each loser on a new worker reads the event's CONFIG")
	assert.Equal(t, 1.0, sharded.Library.PerOp.Calls["UpdateItem"], "and rejects it: the CONFIG lists every shard empty")
	assert.Equal(t, 2.0, sharded.Library.PerOp.RoundTrips)
	assert.Equal(t, 0.0, sharded.Library.PerOp.CapacityWrites)
}
