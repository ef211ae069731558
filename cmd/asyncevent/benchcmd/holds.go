package benchcmd

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/bench"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
	"github.com/asyncevent/asyncevent/entity"
)

func holdFlowOf(h *bench.Holds, name string) (bench.HoldFlow, bool) {
	if h == nil {
		return bench.HoldFlow{}, false
	}
	for _, f := range h.Flows {
		if f.Name == name {
			return f, true
		}
	}
	return bench.HoldFlow{}, false
}

// holdsAcceptance evaluates the design's figures for an event with holds: a winner
// costs a winner's calls plus the PutItem of its Hold item, a loser once the worker
// knows the event sold out the loser's two calls, its one write WAITLISTED instead of
// REJECTED.
func holdsAcceptance(r *bench.Report) []check {
	var cs []check
	if f, ok := holdFlowOf(r.Holds, bench.FlowHoldsWinner); ok && f.Versus != nil {
		p := f.Library.PerOp
		holds := f.WritesPerOp[entity.Hold]
		rest := p.RoundTrips - p.ConfigReads - holds
		cs = append(cs, check{
			Name:  "DynamoDB calls per first-come winner with holds = a winner's + 1 (the PutItem of its Hold item), the rest < 3",
			Value: f.Versus.ExtraCalls,
			Shown: fmt.Sprintf("%.2f + %.2f Hold item puts (+ %.3f cached CONFIG reads): %+.2f calls, %+.2f WCU on the winner without holds",
				rest, holds, p.ConfigReads, f.Versus.ExtraCalls, f.Versus.ExtraWCU),
			OK: holds == 1 && p.Calls["PutItem"] == 1 && rest < 3,
		})
	}
	if f, ok := holdFlowOf(r.Holds, bench.FlowHoldsLoser); ok && f.Versus != nil {
		p := f.Library.PerOp
		perOp := p.RoundTrips - p.ConfigReads
		cs = append(cs, check{
			Name:  "DynamoDB calls per loser with holds once the worker knows it is sold out = 2 (a look at the home shard, one write to WAITLISTED), as without holds",
			Value: perOp,
			Shown: fmt.Sprintf("%.2f (+ %.3f cached CONFIG reads), %.3f CAPACITY writes, %+.2f calls on the loser without holds",
				perOp, p.ConfigReads, p.CapacityWrites, f.Versus.ExtraCalls),
			OK: perOp <= 2+1e-9 && p.CapacityWrites == 0 && f.Versus.ExtraCalls <= 1e-9,
		})
	}
	return cs
}

// writeHolds prints the flows of an event with holds: what one operation costs.
func writeHolds(w io.Writer, h *bench.Holds) error {
	if h == nil {
		return nil
	}
	fmt.Fprintf(w, "\nholds (EventSettings.HoldFor %s; the library only, the baseline has none), per operation:\n", clikit.FormatSeconds(h.HoldForSeconds))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  \tops/s\tDynamoDB calls\tround trips\tWCU\tRCU\twrites by item\tvs. without holds\n")
	for _, f := range h.Flows {
		p := f.Library.PerOp
		versus := "-"
		if v := f.Versus; v != nil {
			versus = fmt.Sprintf("%+.2f calls, %+.1f WCU, %+.2f RCU (%s)", v.ExtraCalls, v.ExtraWCU, v.ExtraRCU, v.Flow)
		}
		fmt.Fprintf(tw, "  %s\t%.1f\t%s\t%.2f\t%.1f\t%.2f\t%s\t%s\n", f.Name, f.Library.Median, clikit.CallsOf(p.DynamoDBCalls, p.Calls),
			p.RoundTrips, p.WCU, p.RCU, byKind(f.WritesPerOp), versus)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "  (one operation: a message for the workers, a call for Confirm and Release, a hold expired or a seat handed on for SweepHolds)")
	return err
}
