// Package benchcmd is the benchmark command of the asyncevent CLI (asyncevent
// bench): it runs the measuring engine of cmd/asyncevent/internal/bench, the
// library's flows against the same flows on the raw SDK, and holds the figures to
// the acceptance checks. The CLI runs it through Options: its flags (Register) and its run (Run).
package benchcmd

import (
	"bufio"
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/bench"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
	"github.com/asyncevent/asyncevent/internal/metered"
)

// Summary is the bench's line in the CLI's help.
const Summary = "measure the library's first-come ingest and worker against the same flows written on the raw SDK, " +
	"interleaved on one DynamoDB: ops/s, ratio, round trips, WCU, CAPACITY writes; the flows of an event with holds; a ranked event's winners against the standard mode's, with their extra reads and added latency; what a poll of a waiting request costs; and the client's CPU per operation on an in-process endpoint"

// Options are the bench's flags, which Register declares.
type Options struct {
	rounds, n, clients, workers, warmup int
	heatParticipations, heatWinners     int
	heatPeak                            float64
	poll                                pollOptions
	cpuOps                              int     // -cpu-ops
	latencyClicks                       int     // -latency-clicks
	latencyRate                         float64 // -latency-rate
}

// Register declares the bench's flags on fs.
func (o *Options) Register(fs *flag.FlagSet) {
	fs.IntVar(&o.rounds, "rounds", bench.DefaultRounds, "rounds; each runs every flow on both sides")
	fs.IntVar(&o.n, "n", bench.DefaultN, "operations per flow, side and round")
	fs.IntVar(&o.clients, "clients", bench.DefaultClients, "concurrent ingest callers")
	fs.IntVar(&o.workers, "workers", bench.DefaultWorkers, "messages processed at once")
	fs.IntVar(&o.warmup, "warmup", 0, "unmeasured operations per flow and side before the first round (default n/5; -1: none)")
	fs.IntVar(&o.heatParticipations, "heat-participations", 0, "participations in the heat run of each layout (default 2n; -1: no heat run)")
	fs.IntVar(&o.heatWinners, "heat-winners", 0, "seats in the heat run (default a quarter of the participations)")
	fs.Float64Var(&o.heatPeak, "heat-peak", 20000, "the peak clicks/s whose derived layout (asyncevent.ShardsFor) the heat run measures beside the default one")
	o.poll.register(fs)
	fs.IntVar(&o.latencyClicks, "latency-clicks", 0, "clicks of the ranked latency run, on a standard event and on a ranked one, against a running worker (default n; -1: none)")
	fs.Float64Var(&o.latencyRate, "latency-rate", bench.DefaultLatencyRate, "clicks/s of the ranked latency run")
	fs.IntVar(&o.cpuOps, "cpu-ops", 2000, "operations per flow, side and round of the client-CPU measurement, on an in-process endpoint (-1: none)")
}

// Run measures the flows on e's DynamoDB (an embedded DynamoDB Local without
// -endpoint), and the client's CPU on an in-process endpoint, and prints the report
// with its acceptance checks: text, or JSON with -json.
func (o *Options) Run(ctx context.Context, e *clikit.Env) error {
	if o.rounds < 1 || o.n < 2 || o.clients < 1 || o.workers < 1 {
		return clikit.Usagef("-rounds, -clients and -workers must be at least 1, -n at least 2")
	}
	if o.latencyRate <= 0 {
		return clikit.Usagef("-latency-rate must be more than 0")
	}
	if err := o.poll.check(); err != nil {
		return err
	}
	stopLocal, err := e.StartLocal(ctx)
	if err != nil {
		return err
	}
	defer stopLocal()
	db, err := e.DynamoDB(ctx)
	if err != nil {
		return err
	}
	started := time.Now()
	progress := func(format string, args ...any) {
		fmt.Fprintf(e.Stderr, "bench: "+format+"\n", args...)
	}
	rep, err := bench.Run(ctx, bench.Config{
		DB: db, Table: e.Table, Rounds: o.rounds, N: o.n, Clients: o.clients, Workers: o.workers, Warmup: o.warmup,
		LatencyClicks: o.latencyClicks, LatencyRate: o.latencyRate, Progress: progress,
	})
	if err != nil {
		return err
	}
	var poll *pollFlow
	if o.poll.polls >= 0 {
		if poll, err = measurePolls(ctx, db, e.Table, o.poll, progress); err != nil {
			return err
		}
	}
	heat, err := o.measureHeat(ctx, db, e.Table, progress)
	if err != nil {
		return err
	}
	var cpu *bench.ClientCPU
	if o.cpuOps > 0 {
		progress("the client's CPU per operation, %d operations per flow and side, on an in-process endpoint", o.cpuOps)
		if cpu, err = bench.MeasureClientCPU(ctx, o.cpuOps); err != nil {
			return err
		}
	}
	out := benchOutput{
		Date: started.UTC(), Machine: machine(), Command: "asyncevent " + strings.Join(os.Args[1:], " "),
		DynamoDB: e.Endpoint, DynamoDBSource: e.LocalSource, Queue: "in-memory queue",
		Seconds: time.Since(started).Seconds(), Report: rep, Acceptance: slices.Concat(acceptance(rep), pollAcceptance(poll), cpuAcceptance(cpu)), Heat: heat,
		RankedAcceptance: rankedAcceptance(rep), Poll: poll, ClientCPU: cpu,
	}
	if e.JSON {
		return e.PrintJSON(out)
	}
	return out.writeText(e.Stdout)
}

// benchOutput is what bench prints.
type benchOutput struct {
	Date           time.Time     `json:"date"`
	Machine        string        `json:"machine"`
	Command        string        `json:"command"`
	DynamoDB       string        `json:"dynamodb"`
	DynamoDBSource string        `json:"dynamodbSource,omitempty"`
	Queue          string        `json:"queue"`
	Seconds        float64       `json:"seconds"`
	Report         *bench.Report `json:"report"`
	Acceptance     []check       `json:"acceptance"`
	// RankedAcceptance is the checks of the ranked mode (report.ranked), apart
	// from Acceptance.
	RankedAcceptance []check `json:"rankedAcceptance,omitempty"`
	// Heat is the heat of each event layout measured: its hottest partition key and
	// the ceilings that key puts on one event on DynamoDB.
	Heat []bench.LayoutHeat `json:"heat"`
	// Poll is what a poll of a waiting request costs (-polls), on the library only.
	Poll *pollFlow `json:"poll,omitempty"`
	// ClientCPU is the client's CPU and allocations per operation of the flows
	// measured on an in-process endpoint, on both sides (-cpu-ops).
	ClientCPU *bench.ClientCPU `json:"clientCPU,omitempty"`
}

// measureHeat runs the heat run of the default layout, of the one derived for
// -heat-peak, and of that one with a pre-queue; none with -heat-participations -1.
func (o *Options) measureHeat(ctx context.Context, db asyncevent.DynamoDB, table string, progress func(string, ...any)) ([]bench.LayoutHeat, error) {
	var heat []bench.LayoutHeat
	if o.heatParticipations < 0 {
		return heat, nil
	}
	for _, l := range []bench.Layout{bench.DefaultLayout, bench.LayoutFor(o.heatPeak), bench.LayoutFor(o.heatPeak).WithPrequeue()} {
		h, err := bench.MeasureHeat(ctx, bench.HeatConfig{
			DB: db, Table: table, Layout: l, Participations: cmp.Or(o.heatParticipations, 2*o.n), Winners: o.heatWinners,
			Clients: o.clients, Workers: o.workers, Progress: progress,
		})
		if err != nil {
			return nil, err
		}
		heat = append(heat, *h)
	}
	return heat, nil
}

// check is one of the acceptance figures the bench is run for.
type check struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Shown string  `json:"shown"`
	OK    bool    `json:"ok"`
}

func flowOf(r *bench.Report, name string) (bench.Flow, bool) {
	for _, f := range r.Flows {
		if f.Name == name {
			return f, true
		}
	}
	return bench.Flow{}, false
}

// acceptance evaluates those figures on a report.
func acceptance(r *bench.Report) []check {
	var cs []check
	ratio := func(name, flow string, least float64) {
		if f, ok := flowOf(r, flow); ok {
			cs = append(cs, check{Name: name, Value: f.Ratio, Shown: fmt.Sprintf("%.2f×", f.Ratio), OK: f.Ratio >= least})
		}
	}
	// The event's CONFIG is read once per event per Options.EventCacheTTL (5s), not per
	// click or message: shown apart, amortised over them.
	calls := func(name, flow string, want float64, extra func(bench.Costs) (string, bool)) {
		f, ok := flowOf(r, flow)
		if !ok {
			return
		}
		p := f.Library.PerOp
		perOp := p.RoundTrips - p.ConfigReads
		shown, ok := fmt.Sprintf("%.2f (+ %.3f cached CONFIG reads)", perOp, p.ConfigReads), perOp <= want+1e-9
		if extra != nil {
			more, good := extra(p)
			shown, ok = shown+", "+more, ok && good
		}
		cs = append(cs, check{Name: name, Value: perOp, Shown: shown, OK: ok})
	}
	ratio("ingest throughput ≥ 0.95× baseline (new participations)", bench.FlowIngestNew, 0.95)
	ratio("ingest throughput ≥ 1.0× baseline (duplicate clicks)", bench.FlowIngestDup, 1.0)
	ratio("worker throughput ≥ 1.3× baseline (after sold out)", bench.FlowWorkerSoldOut, 1.3)
	calls("DynamoDB calls per new participation = 3, no transaction", bench.FlowIngestNew, 3, func(p bench.Costs) (string, bool) {
		return fmt.Sprintf("%.0f transactions, %.2f sends", p.Calls["TransactWriteItems"], p.QueueSends), p.Calls["TransactWriteItems"] == 0 && p.QueueSends <= 1
	})
	calls("DynamoDB calls per duplicate click = 1, no read units", bench.FlowIngestDup, 1, func(p bench.Costs) (string, bool) {
		rcu := p.RCU - p.ConfigReads // the cached CONFIG reads, 1 RCU each
		return fmt.Sprintf("%.3f RCU", rcu), rcu <= 1e-9
	})
	ratio("worker throughput ≥ 1.0× baseline (first-come winners)", bench.FlowWorkerWin, 1.0)
	// The raw flow's 3 calls and 7 WCU are the start, the seat and SUCCEEDED; the home
	// claim writes the seat and SUCCEEDED (4 WCU). The claims that meet a shard
	// emptied by others go on under a lease, and the last seat of each shard records
	// it empty: a little more than 2 calls on average.
	calls("DynamoDB calls per first-come winner < 3, WCU ≤ 7 (the raw flow's)", bench.FlowWorkerWin, 3-1e-6, func(p bench.Costs) (string, bool) {
		return fmt.Sprintf("%.2f WCU", p.WCU), p.WCU <= 7+1e-9
	})
	calls("DynamoDB calls per message once the worker knows it is sold out = 2 (a look at the home shard, one write), no CAPACITY write", bench.FlowWorkerSoldOut, 2, func(p bench.Costs) (string, bool) {
		return fmt.Sprintf("%.3f CAPACITY writes", p.CapacityWrites), p.CapacityWrites == 0
	})
	if f, ok := flowOf(r, bench.FlowWorkerSoldOutSharded); ok {
		// Each loser on a worker new to the event: every read counts.
		p := f.Library.PerOp
		cs = append(cs, check{
			Name: fmt.Sprintf("DynamoDB calls per loser at C = %d once sold out, on a new worker ≤ 2", bench.ShardedSeats), Value: p.RoundTrips,
			Shown: fmt.Sprintf("%.2f (%.2f CONFIG reads, %.2f home shard reads, %.3f CAPACITY writes)", p.RoundTrips, p.ConfigReads, p.CapacityReads, p.CapacityWrites), OK: p.RoundTrips <= 2+1e-9,
		})
	}
	return append(cs, holdsAcceptance(r)...)
}

func (o benchOutput) writeText(w io.Writer) error {
	r := o.Report
	src := o.DynamoDB
	if o.DynamoDBSource != "" {
		src = fmt.Sprintf("DynamoDB Local (%s) at %s", o.DynamoDBSource, o.DynamoDB)
	}
	fmt.Fprintf(w, "asyncevent bench · %s · %s\n", o.Date.Format("2006-01-02 15:04 MST"), o.Machine)
	fmt.Fprintf(w, "%s · %s · %d rounds × %s operations per flow and side, interleaved · %d ingest clients · %d workers · %s\n\n",
		src, o.Queue, r.Rounds, clikit.FormatInt(r.N), r.Clients, r.Workers, clikit.FormatSeconds(o.Seconds))

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "throughput, ops/s (median of rounds)\tlibrary\tbaseline\tlibrary/baseline\t\n")
	for _, f := range r.Flows {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.2f×\t\n", f.Name, f.Library.Median, f.Baseline.Median, f.Ratio)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if st := r.Store; st != nil {
		fmt.Fprintf(w, "\nstore calibration, same concurrency: 1 TransactWriteItems of 2 Puts %.1f ops/s, 2 PutItems %.1f ops/s: %.2f×\n",
			st.Library.Median, st.Baseline.Median, st.Ratio)
		fmt.Fprintln(w, "  (what a transaction costs here; neither a participation nor a seat claim takes one)")
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "per operation: library | baseline\tDynamoDB calls\tround trips\tqueue sends\tWCU\tCAPACITY writes\t\n")
	pair := func(a, b float64, prec int) string {
		return fmt.Sprintf("%.*f | %.*f", prec, a, prec, b)
	}
	for _, f := range r.Flows {
		l, b := f.Library.PerOp, f.Baseline.PerOp
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", f.Name, pair(l.DynamoDBCalls, b.DynamoDBCalls, 2), pair(l.RoundTrips, b.RoundTrips, 2),
			pair(l.QueueSends, b.QueueSends, 2), pair(l.WCU, b.WCU, 1), pair(l.CapacityWrites, b.CapacityWrites, 2))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := writeUnits(w, r.Flows); err != nil {
		return err
	}
	if err := writeHolds(w, r.Holds); err != nil {
		return err
	}
	if err := writeRankedBench(w, r.Ranked); err != nil {
		return err
	}
	if err := writePoll(w, o.Poll); err != nil {
		return err
	}
	if err := writeCPU(w, o.ClientCPU); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nacceptance:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range slices.Concat(o.Acceptance, o.RankedAcceptance) {
		verdict := "ok"
		if !c.OK {
			verdict = "MISSED"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", c.Name, c.Shown, verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, h := range o.Heat {
		if err := writeHeat(w, h); err != nil {
			return err
		}
	}
	return nil
}

// writeHeat prints the heat of one layout: the hottest key of the table and of each
// GSI, and the ceilings on DynamoDB.
func writeHeat(w io.Writer, h bench.LayoutHeat) error {
	c := h.Ceiling
	fmt.Fprintf(w, "\nheat, layout %s (index shards %d, capacity shards %d): one event, %s participations, %s winners, "+
		"on DynamoDB's %s WCU/s per partition key (table and each GSI apart)\n",
		h.Layout, h.IndexShards, h.CapacityShards, clikit.FormatInt(h.Participations), clikit.FormatInt(h.Winners), clikit.FormatInt(metered.KeyWCULimit))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  hottest key\t\tWCU/participation\tpeak WCU/s here\tpeak RCU/s here\n")
	for _, index := range append([]string{metered.TableIndex}, metered.Indexes()...) {
		k, ok := c.Hottest[index]
		if !ok {
			continue
		}
		fmt.Fprintf(tw, "  %s\t%s\t%.2f\t%.0f\t%.0f\n", index, k.Key, c.PerParticipation(k), k.PeakWCU, k.PeakRCU)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "  ceiling: about %s participations/s per event (%s at %.2f WCU per participation)",
		clikit.FormatInt(int(h.CeilingParticipationsPerSec)), h.HottestKey, h.HottestWCUPerParticipation)
	if c.WCUPerClaim > 0 {
		fmt.Fprintf(w, ", %s winners/s (%s)", clikit.FormatInt(int(h.CeilingWinnersPerSec)), claimBounds(c))
	}
	fmt.Fprintln(w)
	if h.OneOffKey != "" {
		fmt.Fprintf(w, "  one-off: %.1f WCU on %s (the event's config, a serve's records: once per event or node, whatever the clicks), left out of the ceilings\n",
			h.OneOffWCU, h.OneOffKey)
	}
	return nil
}

// claimBounds says what bounds the claims of one capacity shard and how many shards
// there are: "13 capacity shards × 964 claims/s, by their units (1.04 WCU per claim
// on table:EVENT#…#CAPACITY#<shard> (mean of 13 shards)); no transaction holds them".
func claimBounds(c metered.Ceiling) string {
	s := fmt.Sprintf("%s × %s claims/s, ", clikit.PluralShards(c.CapacityShards), clikit.FormatInt(int(c.ClaimsPerSecPerShard)))
	units := fmt.Sprintf("%.2f WCU per claim on %s", c.WCUPerClaim, c.CapacityKey)
	switch {
	case c.WinnersBound == metered.BoundSerial:
		s += fmt.Sprintf("by one transaction at a time per item (%s ms each; its units would allow %s: %s)",
			clikit.FormatFloat(metered.TransactionHold.Seconds()*1000), clikit.FormatInt(int(c.ClaimsPerSecUnits)), units)
	case c.ClaimsPerSecSerial > 0:
		s += fmt.Sprintf("by their units (%s; transactions on it would allow %s)", units, clikit.FormatInt(int(c.ClaimsPerSecSerial)))
	default:
		s += fmt.Sprintf("by their units (%s; no transaction holds a capacity item)", units)
	}
	return s
}

// machine describes the machine for the report: OS, architecture, CPUs and, where
// /proc/cpuinfo tells it, the CPU model.
func machine() string {
	s := fmt.Sprintf("%s/%s, %d CPUs", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return s + ", " + runtime.Version()
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return s + " (" + strings.TrimSpace(v) + "), " + runtime.Version()
		}
	}
	return s + ", " + runtime.Version()
}

// writeUnits prints where each flow's write units go, by item and by index, the
// library's beside the baseline's: "table:REQUEST 2.00 | 2.00".
func writeUnits(w io.Writer, flows []bench.Flow) error {
	fmt.Fprintln(w, "\nwhere the write units go, per operation (table: by kind of item; each GSI: every write of an item on it): library | baseline")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, f := range flows {
		l, b := f.Library.PerOp.WCUOn, f.Baseline.PerOp.WCUOn
		places := slices.Concat(slices.Collect(maps.Keys(l)), slices.Collect(maps.Keys(b)))
		slices.Sort(places)
		places = slices.Compact(places)
		if len(places) == 0 {
			continue
		}
		parts := make([]string, 0, len(places))
		shown := func(units map[string]float64, on string) string {
			if u, ok := units[on]; ok {
				return fmt.Sprintf("%.2f", u)
			}
			return "–" // the side writes nothing there
		}
		for _, on := range places {
			parts = append(parts, fmt.Sprintf("%s %s | %s", on, shown(l, on), shown(b, on)))
		}
		fmt.Fprintf(tw, "  %s\t%s\n", f.Name, strings.Join(parts, ", "))
	}
	return tw.Flush()
}
