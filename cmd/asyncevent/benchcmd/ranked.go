package benchcmd

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/bench"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
	"github.com/asyncevent/asyncevent/entity"
)

// rankedReadsBar is the most extra reads a ranked winner may cost beyond a standard
// one: its delivery's read of its request once the admission decided it (1), and the
// admission's reads of each wave (the record, the seats, the line) shared by the
// wave's requests, with room for a tick's re-read of a request still being decided.
const rankedReadsBar = 1.5

// rankedAcceptance holds the ranked mode's figures to the bar: its winners
// a second at least the standard mode's in the same rounds; its extra reads; and
// its added latency about the settle delay, a tick and a wave. They are apart from
// the other checks (benchOutput.RankedAcceptance), so that those keep their shape.
func rankedAcceptance(r *bench.Report) []check {
	k := r.Ranked
	if k == nil {
		return nil
	}
	cs := []check{{
		Name:  "ranked first-come winners/s ≥ 1.0× the standard mode's (library, same rounds)",
		Value: k.VersusStandard,
		Shown: fmt.Sprintf("%.2f× (%.1f vs %.1f winners/s, the queue drained; decided %.1f vs %.1f/s, %.2f×)",
			k.VersusStandard, k.Flow.Library.Median, k.StandardMedian, k.DecidedPerSec, k.StandardDecidedPerSec, k.VersusStandardDecided),
		OK: k.VersusStandard >= 1,
	}, {
		Name:  fmt.Sprintf("extra DynamoDB reads per ranked winner ≤ %.1f (its delivery's read of its request once decided, the admission's reads of each wave)", rankedReadsBar),
		Value: k.Extra.Reads,
		Shown: fmt.Sprintf("%+.2f reads, %+.2f RCU, %+.2f calls in all: GetItem %s, Query %.3f", k.Extra.Reads, k.Extra.RCU, k.Extra.Calls, byKind(k.ReadsPerOp), k.QueriesPerOp),
		OK:    k.Extra.Reads <= rankedReadsBar,
	}}
	if l := k.Latency; l != nil {
		added := l.Ranked.MedianMs - l.Standard.MedianMs
		bar := l.SettleMs + 2*l.TickMs + waveMs(k)
		cs = append(cs, check{
			Name:  "ranked added latency (median, queuedAt to decision) ≤ the settle delay + 2 ticks + a wave",
			Value: added,
			Shown: fmt.Sprintf("%+.0f ms (%.0f vs %.0f ms; p95 %.0f vs %.0f ms), bar %.0f ms (%.0f + 2 × %.0f + %.0f)",
				added, l.Ranked.MedianMs, l.Standard.MedianMs, l.Ranked.P95Ms, l.Standard.P95Ms, bar, l.SettleMs, l.TickMs, waveMs(k)),
			OK: added <= bar,
		})
	}
	return cs
}

// waveMs is a wave's time in the ranked flow: the time per winner decided, times a
// wave's 64 requests.
func waveMs(k *bench.Ranked) float64 {
	if k.DecidedPerSec <= 0 {
		return 0
	}
	return 64 / k.DecidedPerSec * 1000
}

// writeRankedBench prints the ranked flow against the standard one: winners a
// second, what a ranked winner reads, and the latency run.
func writeRankedBench(w io.Writer, k *bench.Ranked) error {
	if k == nil {
		return nil
	}
	l, b := k.Flow.Library, k.Flow.Baseline
	fmt.Fprintf(w, "\nranked admission (EventSettings.Admission RANKED, the default RankSettle): %s, library %.1f/s, baseline (the raw winner flow) %.1f/s, %.2f×; "+
		"the library's standard mode %.1f/s: %.2f×\n", k.Flow.Name, l.Median, b.Median, k.Flow.Ratio, k.StandardMedian, k.VersusStandard)
	fmt.Fprintf(w, "  decided (the last winner's finishedAt, before the queue's last acknowledgement): %.1f/s ranked, %.1f/s standard: %.2f×; a wave of 64 about %.0f ms here\n",
		k.DecidedPerSec, k.StandardDecidedPerSec, k.VersusStandardDecided, waveMs(k))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  per ranked winner\tDynamoDB calls\tWCU\tRCU\tGetItem by item\twrites by item\n")
	fmt.Fprintf(tw, "  \t%s\t%.2f\t%.2f\t%s\t%s\n", clikit.CallsOf(l.PerOp.DynamoDBCalls, l.PerOp.Calls), l.PerOp.WCU, l.PerOp.RCU, byKind(k.ReadsPerOp), byKind(k.WritesPerOp))
	fmt.Fprintf(tw, "  beyond a standard winner\t%+.2f\t%+.2f\t%+.2f\t%+.2f reads\t\n", k.Extra.Calls, k.Extra.WCU, k.Extra.RCU, k.Extra.Reads)
	if err := tw.Flush(); err != nil {
		return err
	}
	if lat := k.Latency; lat != nil {
		fmt.Fprintf(w, "  latency, queuedAt to decision, %s clicks at %.0f/s against a running worker, each a winner: standard median %.0f ms, p95 %.0f ms; ranked median %.0f ms, p95 %.0f ms (%+.0f ms): "+
			"about the settle delay (%.0f ms), plus up to a tick (%.0f ms) until the admission reads its line, plus a wave\n",
			clikit.FormatInt(lat.Clicks), lat.ClicksPerSec, lat.Standard.MedianMs, lat.Standard.P95Ms, lat.Ranked.MedianMs, lat.Ranked.P95Ms,
			lat.Ranked.MedianMs-lat.Standard.MedianMs, lat.SettleMs, lat.TickMs)
	}
	return nil
}

// byKind says per-operation counts by kind of item: "ADMISSION 0.03 · REQUEST 2.39".
func byKind(m map[entity.Type]float64) string {
	parts := make([]string, 0, len(m))
	for _, kind := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %.2f", kind, m[kind]))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " · ")
}
