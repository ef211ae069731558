package bench

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// BenchmarkClientCPU is each flow of the client's CPU on an Instant endpoint, on the
// library and on the baseline (go test -run '^$' -bench ClientCPU ./internal/bench).
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
// a loser), with the calls that path makes on DynamoDB (the bench's figures against
// DynamoDB Local), and the measurement reports every flow with its ratios.
func TestClientCPU(t *testing.T) {
	rep, err := MeasureClientCPU(context.Background(), 50)
	require.NoError(t, err)
	require.Len(t, rep.Flows, 7)
	calls := map[string][2]float64{ // library, baseline
		FlowIngestNew: {3, 3}, FlowIngestDup: {1, 2}, FlowIngestRepeat: {0, 2}, FlowPoll: {1, 1}, FlowWorkerWin: {2, 3}, FlowWorkerSoldOut: {2, 3}, FlowWorkerSoldOutSharded: {2, 3},
	}
	for _, f := range rep.Flows {
		assert.InDelta(t, calls[f.Name][0], f.Library.CallsPerOp, 0.05, "%s: the library's calls", f.Name)
		assert.InDelta(t, calls[f.Name][1], f.Baseline.CallsPerOp, 0.05, "%s: the baseline's calls", f.Name)
		assert.Positive(t, f.Library.CPUNsPerOp, f.Name)
		assert.Positive(t, f.Baseline.AllocsPerOp, f.Name)
		assert.InDelta(t, f.Library.AllocsPerOp/f.Baseline.AllocsPerOp, f.AllocsRatio, 1e-9, f.Name)
		t.Logf("%s: CPU %.0f | %.0f ns (%.2f×), allocs %.0f | %.0f (%.2f×)", f.Name, f.Library.CPUNsPerOp, f.Baseline.CPUNsPerOp, f.CPURatio, f.Library.AllocsPerOp, f.Baseline.AllocsPerOp, f.AllocsRatio)
	}
}
