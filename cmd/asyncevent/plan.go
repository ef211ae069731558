package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
	"github.com/asyncevent/asyncevent/spikeplan"
)

// planOptions are the flags of plan.
type planOptions struct {
	peak        float64
	apply       bool
	concurrency int
	messageTime time.Duration
	duration    time.Duration
	ranked      bool          // -ranked
	callLatency time.Duration // -call-latency
}

// defaultCallLatency is one DynamoDB call's latency plan -ranked assumes: a planning
// figure, not a measurement (DynamoDB Local is no guide to DynamoDB's latency).
const defaultCallLatency = 10 * time.Millisecond

func (o *planOptions) register(fs *flag.FlagSet) {
	fs.Float64Var(&o.peak, "peak", 0, "the expected peak of new participations `per second` (required)")
	fs.BoolVar(&o.apply, "apply", false, "raise the table's and indexes' warm throughput to it (UpdateTable: one-way, and billed)")
	fs.IntVar(&o.concurrency, "concurrency", spikeplan.DefaultDrainConcurrency, "messages the workers process at once, over all workers, for the drain time")
	fs.DurationVar(&o.messageTime, "message-time", spikeplan.DefaultMessageTime, "one message's time in a worker, for the drain time (an assumption: a winner's three writes at about 10 ms each)")
	fs.DurationVar(&o.duration, "duration", spikeplan.DefaultDuration, "how long the peak lasts, for the drain time")
	fs.BoolVar(&o.ranked, "ranked", false, "the event decides its winners by rank (EventSettings.Admission RANKED): also print what its one admission decides a second and what its record's reads cost the event's partition key")
	fs.DurationVar(&o.callLatency, "call-latency", defaultCallLatency, "one DynamoDB call's latency, for -ranked's bound (an assumption)")
}

// check checks plan's flags before anything is read.
func (o *planOptions) check() error {
	switch {
	case o.peak <= 0:
		return clikit.Usagef("-peak: the expected clicks per second, more than 0")
	case o.concurrency < 1 || o.messageTime <= 0 || o.duration <= 0:
		return clikit.Usagef("-concurrency must be at least 1, -message-time and -duration more than 0")
	case o.callLatency <= 0:
		return clikit.Usagef("-call-latency must be more than 0")
	}
	return nil
}

func planCmd() *command {
	var o planOptions
	return &command{
		name: "plan",
		summary: "turn an event's expected peak of clicks/s into its layout (index and capacity shards), the write and read " +
			"units/s the table, GSI1 and GSI2 need beside their warm throughput and the on-demand quota, and how long the workers " +
			"take to drain the queue; -apply raises the warm throughput that is short",
		flags: o.register,
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, args []string) error {
			if err := clikit.WantArgs(args, 0, ""); err != nil {
				return err
			}
			if err := o.check(); err != nil {
				return err
			}
			db, err := e.DynamoDB(ctx)
			if err != nil {
				return err
			}
			c, err := e.client(ctx)
			if err != nil {
				return err
			}
			p, err := spikeplan.For(ctx, db, c.TableName(), o.peak)
			if err != nil {
				return err
			}
			p.Drain = spikeplan.DrainFor(int64(math.Ceil(o.peak*o.duration.Seconds())), o.concurrency, o.messageTime)
			var ranked *asyncevent.RankedBound
			if o.ranked {
				b := c.RankedBound(asyncevent.EventSettings{EventType: asyncevent.FirstCome, IndexShards: p.IndexShards, CapacityShards: p.CapacityShards}, o.callLatency)
				ranked = &b
			}
			if err := printPlan(e, p, o.peak, o.apply, ranked); err != nil {
				return err
			}
			if !o.apply || len(p.Short) == 0 {
				return nil
			}
			if e.Endpoint != "" {
				return fmt.Errorf("-apply with -endpoint %s: warm throughput is DynamoDB's on AWS; DynamoDB Local does not support it (its UpdateTable fails), so nothing was applied; run plan -apply without -endpoint against AWS", e.Endpoint)
			}
			fmt.Fprintln(e.Stderr, "raising the warm throughput of the table and its indexes: a one-way change, billed by AWS")
			return spikeplan.Apply(ctx, db, c.TableName(), p)
		},
	}
}

// printPlan prints the plan for the peak: the event's layout, the units/s the table
// and its indexes need beside their warm throughput, whether that is short (and
// -apply not given), and the limits beyond it.
func printPlan(e *env, p *spikeplan.Plan, peak float64, apply bool, ranked *asyncevent.RankedBound) error {
	if e.JSON {
		return e.PrintJSON(clikit.PlanOf(p, ranked))
	}
	fmt.Fprintf(e.Stdout, "peak %.0f clicks/s, %.0f winners/s (a quarter): event layout -index-shards %d -capacity-shards %d (asyncevent event create ... -peak %.0f)\n",
		peak, p.WinnersPerSecond, p.IndexShards, p.CapacityShards, peak)
	fmt.Fprintf(e.Stdout, "  rule: index shards ⌈clicks/s × 4 WCU ÷ 800⌉ (GSI2: put, QUEUED, PROCESSING, final), capacity shards ⌈winners/s × 2 WCU ÷ 800⌉ (one claim, up to 128 seats a shard)\n\n")
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tneeds WCU/s\tneeds RCU/s\twarm WCU/s\twarm RCU/s\t")
	for _, name := range []string{"", "GSI1", "GSI2"} {
		label := name
		if label == "" {
			label = "table " + e.Table
		}
		need, warm := p.Need[name], p.Warm[name]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t\n", label, need.WriteUnitsPerSecond, need.ReadUnitsPerSecond, warm.WriteUnitsPerSecond, warm.ReadUnitsPerSecond)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(p.Short) == 0 {
		fmt.Fprintln(e.Stdout, "\nthe table and its indexes are warm enough")
	} else if !apply {
		fmt.Fprintln(e.Stdout, "\nshort of warm throughput: rerun with -apply to raise it (UpdateTable WarmThroughput: one-way, and billed)")
	}
	writeLimits(e.Stdout, e.Table, p)
	writeRanked(e.Stdout, p, ranked)
	return nil
}

// writeRanked prints, for plan -ranked, the bound of the event's one admission
// beside the partition keys' and what its record's reads cost.
func writeRanked(w io.Writer, p *spikeplan.Plan, b *asyncevent.RankedBound) {
	if b == nil {
		return
	}
	atATime := func(n int, what string) string {
		if n > 10 {
			return fmt.Sprintf("%s, 10 at a time", what)
		}
		return what
	}
	fmt.Fprintf(w, "ranked admission: one admission per event decides at most %d winners a wave, a wave %d round trips one after another "+
		"(the record's read; the line: %s; the record's write; the wave's claims at once: the seat, then SUCCEEDED; the record's \"wave decided\"; "+
		"the seats, %s and the pool, only when those counted off are spent): "+
		"at %s a call about %d ÷ (%d × %s) = %s winners/s per event, whatever the workers\n",
		b.WaveSize, b.RoundTrips, atATime(p.IndexShards, fmt.Sprintf("a Query of each of %d index shards", p.IndexShards)), atATime(p.CapacityShards, clikit.PluralShards(p.CapacityShards)),
		clikit.FormatDuration(b.CallLatency), b.WaveSize, b.RoundTrips, clikit.FormatDuration(b.CallLatency), clikit.FormatInt(int(b.WinnersPerSecond)))
	if b.WinnersPerSecond < p.WinnersPerSecond {
		fmt.Fprintf(w, "  below the %s winners/s the capacity shards take at the peak: the event decides the smaller, so its winners wait longer than the settle delay "+
			"(the line grows by about %s a second while the peak lasts)\n",
			clikit.FormatInt(int(p.WinnersPerSecond)), clikit.FormatInt(int(p.WinnersPerSecond-b.WinnersPerSecond)))
	} else {
		fmt.Fprintf(w, "  above the peak's %s winners/s: the admission keeps up with the peak\n", clikit.FormatInt(int(p.WinnersPerSecond)))
	}
	fmt.Fprintf(w, "  its record: each worker with deliveries waiting on it reads it every 25 ms, strongly consistent, %d RCU, on the event's partition key EVENT#<eventId>: "+
		"%s RCU/s a worker; that key's 3,000 RCU/s takes at most about %d such workers\n", b.RecordRCU, clikit.FormatFloat(b.RecordRCUPerWorker), b.MaxWorkers)
	fmt.Fprintf(w, "  its line: while deliveries wait and no wave is full, a Query of each index shard every 25 ms: %s Queries/s on GSI2\n",
		clikit.FormatInt(int(b.LineQueriesPerSecond)))
}

// writeLimits prints what holds the drop beyond warm throughput: the on-demand quota
// and maxima of the table and its indexes, and the time the workers take to drain
// the queue.
func writeLimits(w io.Writer, table string, p *spikeplan.Plan) {
	label := func(name string) string {
		if name == "" {
			return "table " + table
		}
		return name
	}
	for _, name := range []string{"", "GSI1", "GSI2"} {
		if need, ok := p.OverQuota[name]; ok {
			var over []string
			if need.WriteUnitsPerSecond > p.Quota.WriteUnitsPerSecond {
				over = append(over, clikit.FormatInt(int(need.WriteUnitsPerSecond))+" WCU/s")
			}
			if need.ReadUnitsPerSecond > p.Quota.ReadUnitsPerSecond {
				over = append(over, clikit.FormatInt(int(need.ReadUnitsPerSecond))+" RCU/s")
			}
			fmt.Fprintf(w, "on-demand quota: %s needs %s, above AWS's default of %s per table and per index: "+
				"ask AWS (Service Quotas) to raise the account's quota ahead of the drop\n",
				label(name), strings.Join(over, " and "), clikit.FormatInt(spikeplan.DefaultOnDemandQuota))
		}
		if need, ok := p.Capped[name]; ok {
			m := p.OnDemandMax[name]
			fmt.Fprintf(w, "on-demand maximum: %s is capped at %s WCU/s and %s RCU/s, under the %s WCU/s and %s RCU/s it needs (UpdateTable OnDemandThroughput)\n",
				label(name), clikit.FormatInt(int(m.WriteUnitsPerSecond)), clikit.FormatInt(int(m.ReadUnitsPerSecond)), clikit.FormatInt(int(need.WriteUnitsPerSecond)), clikit.FormatInt(int(need.ReadUnitsPerSecond)))
		}
	}
	d := p.Drain
	fmt.Fprintf(w, "drain: %s messages, %d at once, %s each: the workers need about %s to drain the queue (users wait up to that for a result)\n",
		clikit.FormatInt(int(d.Clicks)), d.Concurrency, clikit.FormatDuration(d.MessageTime), clikit.FormatDuration(d.Time))
}
