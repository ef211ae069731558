package bench_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/bench"
	"github.com/asyncevent/asyncevent/entity"
)

// checkHolds holds the flows of an event with holds to what the design says they cost
// (docs/design.md, "Holds and the waitlist"), on a Run of ops winners over its rounds
// whose event has one capacity shard: a winner is the winner's calls plus the PutItem
// of its Hold item, a loser the loser's calls, its one write WAITLISTED instead of
// REJECTED.
func checkHolds(t *testing.T, h *bench.Holds, ops int) {
	t.Helper()
	require.NotNil(t, h)
	assert.Equal(t, bench.HoldFor.Seconds(), h.HoldForSeconds)
	byName := map[string]bench.HoldFlow{}
	var names []string
	for _, f := range h.Flows {
		byName[f.Name] = f
		names = append(names, f.Name)
		assert.Len(t, f.Library.OpsPerSec, 2, f.Name)
		assert.Positive(t, f.Library.Median, f.Name)
	}
	require.Equal(t, []string{bench.FlowHoldsWinner, bench.FlowHoldsLoser, bench.FlowHoldsConfirm, bench.FlowHoldsRelease,
		bench.FlowHoldsExpire, bench.FlowHoldsServe}, names)

	win := byName[bench.FlowHoldsWinner]
	assert.Equal(t, ops, win.Library.Ops)
	assert.Equal(t, 1.0, win.WritesPerOp[entity.Hold], "one Hold item per hold")
	assert.Equal(t, 1.0, win.Library.PerOp.Calls["PutItem"], "the Hold item's put, the only one")
	assert.Zero(t, win.Library.PerOp.Calls["TransactWriteItems"], "no transaction")
	require.NotNil(t, win.Versus)
	assert.Equal(t, bench.FlowWorkerWin, win.Versus.Flow)
	assert.InDelta(t, 1.0, win.Versus.ExtraCalls, 1e-9, "the winner's calls + the Hold item's put")
	assert.Positive(t, win.Versus.ExtraWCU)

	lose := byName[bench.FlowHoldsLoser]
	assert.Equal(t, 1.0, lose.Library.PerOp.Calls["GetItem"], "a look at the home shard")
	assert.Equal(t, 1.0, lose.Library.PerOp.Calls["UpdateItem"], "one write: WAITLISTED")
	assert.Equal(t, 2.0, lose.Library.PerOp.DynamoDBCalls)
	assert.Equal(t, 1.0, lose.WritesPerOp[entity.Request])
	assert.Zero(t, lose.Library.PerOp.CapacityWrites)
	require.NotNil(t, lose.Versus)
	assert.Equal(t, bench.FlowWorkerSoldOut, lose.Versus.Flow)
	assert.Zero(t, lose.Versus.ExtraCalls, "the same calls as without holds")

	// The holds split in thirds: confirmed, released, left to run out.
	third := ops / 2 / 3 // per round: 20 holds, 6 confirmed, 6 released, 8 expired
	confirm := byName[bench.FlowHoldsConfirm]
	assert.Equal(t, 2*third, confirm.Library.Ops)
	assert.Equal(t, 2.0, confirm.Library.PerOp.Calls["GetItem"], "the request, strongly consistent, before the write and after it (the Transition carries it)")
	assert.Equal(t, 1.0, confirm.Library.PerOp.Calls["TransactWriteItems"], "SUCCEEDED and the Hold item's delete")
	assert.Equal(t, 1.0, confirm.WritesPerOp[entity.Hold])
	assert.Zero(t, confirm.WritesPerOp[entity.Returns])

	release := byName[bench.FlowHoldsRelease]
	assert.Equal(t, 2*third, release.Library.Ops)
	assert.Equal(t, 2.0, release.Library.PerOp.Calls["GetItem"], "before the write and after it")
	assert.Equal(t, 1.0, release.Library.PerOp.Calls["TransactWriteItems"], "REJECTED, the seat given back, the Hold item's delete")
	assert.Equal(t, 1.0, release.WritesPerOp[entity.Returns])
	assert.Equal(t, 1.0, release.WritesPerOp[entity.Hold])

	expire := byName[bench.FlowHoldsExpire]
	assert.Equal(t, ops-4*third, expire.Library.Ops)
	assert.Equal(t, 1.0, expire.Library.PerOp.Calls["TransactWriteItems"], "one transaction per hold expired")
	assert.Equal(t, 1.0, expire.WritesPerOp[entity.Request])
	assert.Equal(t, 1.0, expire.WritesPerOp[entity.Returns])
	assert.Equal(t, 1.0, expire.WritesPerOp[entity.Hold])
	assert.Positive(t, expire.Library.PerOp.Calls["Query"], "the holds that ran out, found by a Query")
	assert.Less(t, expire.Library.PerOp.Calls["Query"], 1.0)

	serve := byName[bench.FlowHoldsServe]
	assert.Equal(t, ops-2*third, serve.Library.Ops, "every seat given back, released or expired")
	assert.Equal(t, 1.0, serve.Library.PerOp.Calls["TransactWriteItems"], "one transaction per seat handed on")
	assert.Equal(t, 1.0, serve.WritesPerOp[entity.Request], "WAITLISTED → HELD")
	assert.Equal(t, 1.0, serve.WritesPerOp[entity.Returns], "the seat taken")
	assert.Equal(t, 1.0, serve.WritesPerOp[entity.Hold], "the new hold's Hold item")
	assert.Zero(t, serve.Library.PerOp.CapacityWrites)
}
