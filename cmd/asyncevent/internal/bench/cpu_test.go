package bench

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// BenchmarkClientCPU is each flow of the client's CPU on an Instant endpoint, on the
// library and on the baseline
// (go test -run '^$' -bench ClientCPU ./cmd/asyncevent/internal/bench).
func BenchmarkClientCPU(b *testing.B) {
	ctx := context.Background()
	flows, err := cpuFlows(ctx)
	require.NoError(b, err)
	for _, f := range flows {
		for _, side := range []struct {
			name string
			op   func(context.Context, int) error
		}{{"library", f.library}, {"baseline", f.baseline}} {
			b.Run(f.name+"/"+side.name, func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					if err := side.op(ctx, b.N*1_000_000+i); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// Each flow takes its own path on both sides, every time (each operation checks its
// answer: a new participation, a duplicate, a QUEUED request with its place, a winner,
// a loser), with the calls that path makes on DynamoDB, and the measurement reports
// every flow under its stable id with its ratios and their spread. The calls below are
// written down by hand: the paths' calls as docs/performance.md counts them against
// DynamoDB Local (a new participation: lock, request, QUEUED; a worker's winner:
// start, then the claim and the win in one transaction…), so a flow that drifts onto
// another path fails here rather than measuring something else.
func TestClientCPU(t *testing.T) {
	rep, err := MeasureClientCPU(context.Background(), 50)
	require.NoError(t, err)
	require.Len(t, rep.Flows, 7)
	calls := map[string][2]float64{ // library, baseline
		"ingest-new": {3, 3}, "ingest-duplicate": {1, 2}, "ingest-repeat": {0, 2}, "poll": {1, 1},
		"worker-win": {2, 3}, "worker-sold-out": {2, 3}, "worker-sold-out-sharded": {2, 3},
	}
	seen := map[string]bool{}
	for _, f := range rep.Flows {
		want, ok := calls[f.ID]
		require.True(t, ok, "%s: id %q", f.Name, f.ID)
		require.False(t, seen[f.ID], "%s: id %q twice", f.Name, f.ID)
		seen[f.ID] = true
		assert.InDelta(t, want[0], f.Library.CallsPerOp, 0.05, "%s: the library's calls", f.Name)
		assert.InDelta(t, want[1], f.Baseline.CallsPerOp, 0.05, "%s: the baseline's calls", f.Name)
		assert.Positive(t, f.Library.CPUNsPerOp, f.Name)
		assert.Positive(t, f.Baseline.AllocsPerOp, f.Name)
		assert.InDelta(t, f.Library.AllocsPerOp/f.Baseline.AllocsPerOp, f.AllocsRatio, 1e-9, f.Name)
		for _, side := range []CPUSide{f.Library, f.Baseline} {
			assert.LessOrEqual(t, side.CPUNsPerOpMin, side.CPUNsPerOp*(1+1e-9), f.Name)
			assert.GreaterOrEqual(t, side.CPUNsPerOpMax, side.CPUNsPerOp*(1-1e-9), f.Name)
		}
		assert.LessOrEqual(t, f.CPURatioMin, f.CPURatioMax, f.Name)
		assert.Positive(t, f.CPURatioMin, f.Name)
		t.Logf("%s: CPU %.0f | %.0f ns (%.2f×, rounds %.2f–%.2f×), allocs %.0f | %.0f (%.2f×)", f.Name, f.Library.CPUNsPerOp, f.Baseline.CPUNsPerOp,
			f.CPURatio, f.CPURatioMin, f.CPURatioMax, f.Library.AllocsPerOp, f.Baseline.AllocsPerOp, f.AllocsRatio)
	}
}
