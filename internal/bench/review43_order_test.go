package bench

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// The ratio of the new participation with the sides in MeasureClientCPU's order
// (library first in each round) and the other way round, on fresh flows each.
func TestReview43SideOrder(t *testing.T) {
	ctx := context.Background()
	for _, libFirst := range []bool{true, false, true, false} {
		flows, err := cpuFlows(ctx)
		require.NoError(t, err)
		f := flows[0]
		var lib, raw float64
		next := 0
		side := func(op func(context.Context, int) error) float64 {
			s, err := measureCPU(2000, func() error { next++; return op(ctx, next) })
			require.NoError(t, err)
			return s.CPUNsPerOp
		}
		side(f.library)
		side(f.baseline)
		for range 3 {
			if libFirst {
				lib += side(f.library)
				raw += side(f.baseline)
			} else {
				raw += side(f.baseline)
				lib += side(f.library)
			}
		}
		t.Logf("%s library first=%t: %.1f | %.1f µs, %.2f×", f.name, libFirst, lib/3000, raw/3000, lib/raw)
	}
}
