package main

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"
)

func planCmd() *command {
	var (
		peak  float64
		apply bool
	)
	return &command{
		name: "plan",
		summary: "turn an event's expected peak of clicks/s into its layout (index and capacity shards) and the write and read " +
			"units/s the table, GSI1 and GSI2 need, beside their warm throughput; -apply raises what is short",
		flags: func(fs *flag.FlagSet) {
			fs.Float64Var(&peak, "peak", 0, "the expected peak of new participations `per second` (required)")
			fs.BoolVar(&apply, "apply", false, "raise the table's and indexes' warm throughput to it (UpdateTable: one-way, and billed)")
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, args []string) error {
			if err := wantArgs(args, 0, ""); err != nil {
				return err
			}
			if peak <= 0 {
				return usagef("-peak: the expected clicks per second, more than 0")
			}
			db, err := e.dynamoDB(ctx)
			if err != nil {
				return err
			}
			c, err := e.client(ctx)
			if err != nil {
				return err
			}
			p, err := c.PlanSpike(ctx, peak)
			if err != nil {
				return err
			}
			short := p.Short
			if e.json {
				if err := e.printJSON(planJSON{Plan: p, Short: short}); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(e.stdout, "peak %.0f clicks/s: event layout -index-shards %d -capacity-shards %d (asyncevent event create ... -peak %.0f)\n\n",
					peak, p.IndexShards, p.CapacityShards, peak)
				tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
				fmt.Fprintln(tw, "\tneeds WCU/s\tneeds RCU/s\twarm WCU/s\twarm RCU/s\t")
				for _, name := range []string{"", "GSI1", "GSI2"} {
					label := name
					if label == "" {
						label = "table " + e.table
					}
					need, warm := p.Need[name], p.Warm[name]
					fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t\n", label, need.WriteUnitsPerSecond, need.ReadUnitsPerSecond, warm.WriteUnitsPerSecond, warm.ReadUnitsPerSecond)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				if len(short) == 0 {
					fmt.Fprintln(e.stdout, "\nthe table and its indexes are warm enough")
				} else if !apply {
					fmt.Fprintln(e.stdout, "\nshort of warm throughput: rerun with -apply to raise it (UpdateTable WarmThroughput: one-way, and billed)")
				}
			}
			if !apply || len(short) == 0 {
				return nil
			}
			fmt.Fprintln(e.stderr, "raising the warm throughput of the table and its indexes: a one-way change, billed by AWS")
			return c.ApplySpikePlan(ctx, db, p)
		},
	}
}

// planJSON is a spike plan for scripts.
type planJSON struct {
	Plan  any `json:"plan"`
	Short any `json:"short"`
}
