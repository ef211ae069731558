package bench

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// What the process does while no flow runs: background goroutines of the flows'
// clients (progress writers, …) whose CPU and calls getrusage and Calls() would
// charge to whichever side is being measured.
func TestReview43IdleBackground(t *testing.T) {
	ctx := context.Background()
	g0 := runtime.NumGoroutine()
	flows, err := cpuFlows(ctx)
	require.NoError(t, err)
	for _, f := range flows {
		for i := range 200 {
			require.NoError(t, f.library(ctx, 5_000_000+i))
			require.NoError(t, f.baseline(ctx, 5_000_000+i))
		}
	}
	calls := map[string]int64{}
	for _, f := range flows {
		calls[f.name] = f.endpoint.Calls()
	}
	runtime.GC()
	cpu := processCPU()
	time.Sleep(2 * time.Second)
	idle := processCPU() - cpu
	for _, f := range flows {
		if d := f.endpoint.Calls() - calls[f.name]; d > 0 {
			t.Logf("%s: %d calls to its endpoint in 2 s of no operation", f.name, d)
		}
	}
	t.Logf("goroutines %d → %d; CPU in 2 s idle: %v", g0, runtime.NumGoroutine(), idle)
}
