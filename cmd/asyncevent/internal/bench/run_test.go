package bench_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/bench"
	"github.com/asyncevent/asyncevent/entity"
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
	checkRanked(t, r.Ranked, 20*2)
}

// checkRanked checks the ranked flow of a run of ops winners in all and its
// latency run (Config.LatencyClicks defaults to N).
func checkRanked(t *testing.T, k *bench.Ranked, ops int) {
	t.Helper()
	require.NotNil(t, k)
	assert.Equal(t, bench.FlowWorkerWinRanked, k.Flow.Name)
	assert.Equal(t, ops, k.Flow.Library.Ops)
	assert.Equal(t, ops, k.Flow.Baseline.Ops)
	assert.Positive(t, k.Flow.Ratio)
	assert.Positive(t, k.VersusStandard)
	assert.Positive(t, k.DecidedPerSec)
	assert.Positive(t, k.StandardDecidedPerSec)
	// The raw winner flow, as FlowWorkerWin's baseline.
	assert.Equal(t, 3.0, k.Flow.Baseline.PerOp.DynamoDBCalls)
	// A ranked winner is SUCCEEDED on a seat its wave took in one write of its home
	// shard for up to 25 requests, decided by the admission, whose record each wave
	// reads and writes and whose line it queries.
	assert.Positive(t, k.Flow.Library.PerOp.CapacityWrites)
	assert.Less(t, k.Flow.Library.PerOp.CapacityWrites, 0.5, "the wave's seats in a write, not one a winner")
	assert.Positive(t, k.ReadsPerOp[entity.Admission], "the record read")
	assert.Positive(t, k.WritesPerOp[entity.Admission], "the waves written on the record")
	assert.Positive(t, k.QueriesPerOp, "the line read from GSI2")
	// A delivery waiting on its wave ends on the record's "wave decided" without a
	// read; one whose request the record passed before it came reads it once.
	assert.LessOrEqual(t, k.ReadsPerOp[entity.Request], 1.0, "a delivery reads its request at most once")
	assert.Positive(t, k.Extra.Reads)

	l := k.Latency
	require.NotNil(t, l)
	assert.Equal(t, 20, l.Standard.Decided)
	assert.Equal(t, 20, l.Ranked.Decided)
	assert.Equal(t, 100.0, l.SettleMs)
	assert.Equal(t, 25.0, l.TickMs)
	// No ranked request is decided before its settle delay has passed since its
	// queuedAt (by the one clock of this machine).
	assert.GreaterOrEqual(t, l.Ranked.MedianMs, l.SettleMs)
	assert.LessOrEqual(t, l.Ranked.MedianMs, l.Ranked.P95Ms)
	assert.LessOrEqual(t, l.Ranked.P95Ms, l.Ranked.MaxMs)
}
