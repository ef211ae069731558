package benchcmd

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/bench"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
)

// The client's CPU per operation against the raw-SDK baseline's (issue 43): at most
// this much more CPU, and this many more allocations.
const (
	cpuBar    = 1.2
	allocsBar = 1.5
)

// cpuAcceptance holds each flow of the client's CPU to the bar.
func cpuAcceptance(c *bench.ClientCPU) []check {
	if c == nil {
		return nil
	}
	var cs []check
	for _, f := range c.Flows {
		cs = append(cs,
			check{Name: fmt.Sprintf("client CPU per op, %s ≤ %.1f× the baseline's", f.Name, cpuBar), Value: f.CPURatio,
				Shown: fmt.Sprintf("%.2f×", f.CPURatio), OK: f.CPURatio <= cpuBar},
			check{Name: fmt.Sprintf("allocations per op, %s ≤ %.1f× the baseline's", f.Name, allocsBar), Value: f.AllocsRatio,
				Shown: fmt.Sprintf("%.2f×", f.AllocsRatio), OK: f.AllocsRatio <= allocsBar})
	}
	return cs
}

// writeCPU prints the client's CPU and allocations per operation of each flow.
func writeCPU(w io.Writer, c *bench.ClientCPU) error {
	if c == nil {
		return nil
	}
	fmt.Fprintf(w, "\nclient CPU per operation, on an in-process DynamoDB endpoint that answers at once (%s operations per flow, side and round; the SDK's work and the caller's, not the network's or DynamoDB's)\n", clikit.FormatInt(c.N))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "flow: library | baseline\tCPU µs\tratio\trounds\tallocations\tratio\tKB allocated\tDynamoDB calls\t\n")
	for _, f := range c.Flows {
		fmt.Fprintf(tw, "%s\t%.1f | %.1f\t%.2f×\t%.2f–%.2f×\t%.0f | %.0f\t%.2f×\t%.1f | %.1f\t%.2f | %.2f\t\n", f.Name,
			f.Library.CPUNsPerOp/1e3, f.Baseline.CPUNsPerOp/1e3, f.CPURatio, f.CPURatioMin, f.CPURatioMax,
			f.Library.AllocsPerOp, f.Baseline.AllocsPerOp, f.AllocsRatio,
			f.Library.BytesPerOp/1024, f.Baseline.BytesPerOp/1024, f.Library.CallsPerOp, f.Baseline.CallsPerOp)
	}
	return tw.Flush()
}
