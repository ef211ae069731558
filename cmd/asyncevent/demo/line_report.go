package demo

import (
	"fmt"
	"slices"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
)

// lineReport is how the place in line the polling users were told compares with what
// happened, and the line as a whole.
type lineReport struct {
	Polls        int             `json:"polls"`  // GetRequest calls of requests waiting when picked
	Placed       int             `json:"placed"` // answers with a place in line (the others had just finished)
	PollErrors   int             `json:"pollErrors"`
	PollEveryMs  float64         `json:"pollEveryMs"`
	PollsPerTick int             `json:"pollsPerTick"`
	PerPoll      clikit.CostJSON `json:"perPoll"` // what the polling node spent, per poll
	// MinAhead is the fewest requests truly ahead of a poll that Ahead and Wait count.
	MinAhead int `json:"minAhead"`
	// Ahead is |told − true| ÷ true of the requests ahead: those queued before the
	// request that no worker had finished when the answer came.
	Ahead errorSpread `json:"aheadError"`
	// FirstAhead is Ahead of each request's first answer with a place: what a user
	// is told when it looks first, often before the counts of the arrivals before it
	// are complete.
	FirstAhead errorSpread `json:"firstAheadError"`
	// Wait is |told − true| ÷ true of the wait: until a worker finished the request.
	Wait errorSpread `json:"waitError"`
	// WaitUnknown counts the answers, among Ahead's, told no wait (no rate yet).
	WaitUnknown int `json:"waitUnknown"`

	// The line second by second, as the event's statistics tell it (EventStats.Queue).
	PeakDepth      int64   `json:"peakDepth"`
	PeakAtSeconds  float64 `json:"peakAtSeconds"`  // since the first click
	MeanRatePerSec float64 `json:"meanRatePerSec"` // over the seconds the workers finished requests
	// The deepest line a poll saw (QueueStats on the polling node): the requests truly
	// in line and the depth told, the drain time told, and how long the requests then
	// in line took to be finished.
	DrainDepth       int64   `json:"drainDepth"`
	DrainDepthTold   int64   `json:"drainDepthTold"`
	DrainAtSeconds   float64 `json:"drainAtSeconds"`
	DrainToldSeconds float64 `json:"drainToldSeconds"`
	DrainTookSeconds float64 `json:"drainTookSeconds"`
}

// errorSpread is how far estimates were off, as fractions of the truth.
type errorSpread struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
}

// spreadOf is the median and the 90th percentile (nearest rank) of errs.
func spreadOf(errs []float64) errorSpread {
	if len(errs) == 0 {
		return errorSpread{}
	}
	s := slices.Clone(errs)
	slices.Sort(s)
	rank := func(p int) float64 { return s[(len(s)*p+99)/100-1] }
	return errorSpread{Count: len(s), P50: rank(50), P90: rank(90)}
}

// series sums up the line second by second: its peak, and the workers' mean rate.
func (r *lineReport) series(st *asyncevent.QueueStats, start time.Time) {
	if st == nil {
		return
	}
	first, last := -1, -1
	for i, p := range st.Series {
		if p.Depth > r.PeakDepth {
			r.PeakDepth, r.PeakAtSeconds = p.Depth, p.At.Time().Sub(start).Seconds()
		}
		if p.Rate > 0 && first < 0 {
			first = i
		}
		if p.Rate > 0 {
			last = i
		}
	}
	if first < 0 {
		return
	}
	sum := 0.0
	for _, p := range st.Series[first : last+1] {
		sum += p.Rate
	}
	r.MeanRatePerSec = sum / float64(last-first+1)
}

// drain compares, at the deepest line a poll saw (QueueStats on the polling node,
// with a rate), the depth and the drain time it was told with the requests then truly
// in line and the time they took to be finished.
func (r *lineReport) drain(samples []lineSample, tr lineTruth, start time.Time) {
	for _, s := range samples {
		depth := int64(tr.ahead(asyncevent.MillisOf(s.at)+1, s.at))
		if s.stats.Rate == 0 || depth <= r.DrainDepth {
			continue
		}
		r.DrainDepth, r.DrainDepthTold, r.DrainAtSeconds = depth, s.stats.Depth, s.at.Sub(start).Seconds()
		r.DrainToldSeconds, r.DrainTookSeconds = s.stats.DrainTime.Seconds(), tr.drained(s.at).Seconds()
	}
}

// rows are the figures of the place in line, label and value, for the text and the
// HTML report.
func (r *lineReport) rows() []row {
	return []row{
		{"polls of the line", r.pollsText()},
		{"position told", r.aheadText()},
		{"wait told", r.waitText()},
		{"line", r.lineText()},
	}
}

func (r *lineReport) pollsText() string {
	s := fmt.Sprintf("%s GetRequest calls by users waiting (%d every %s, spread over the line), %s told a place in line",
		clikit.FormatInt(r.Polls), r.PollsPerTick, formatMs(r.PollEveryMs), clikit.FormatInt(r.Placed))
	if r.PollErrors > 0 {
		s += fmt.Sprintf(", %s failed", clikit.FormatInt(r.PollErrors))
	}
	if r.Polls == 0 {
		return s
	}
	return s + fmt.Sprintf("; per poll: DynamoDB calls %s · %.2f RCU", clikit.CallsOf(r.PerPoll.Calls, r.PerPoll.ByCall), r.PerPoll.RCU)
}

// nearFront says why the polls near the front are left out.
func (r *lineReport) nearFront() string {
	return fmt.Sprintf("fewer than %d ahead are left out: near the front a few requests either way are a large share", r.MinAhead)
}

func (r *lineReport) aheadText() string {
	if r.Ahead.Count == 0 {
		return fmt.Sprintf("not compared: no poll had %d or more requests truly ahead (%s)", r.MinAhead, r.nearFront())
	}
	s := fmt.Sprintf("off by %s median, %s p90 of the true number ahead, over %s polls", percent(r.Ahead.P50), percent(r.Ahead.P90), clikit.FormatInt(r.Ahead.Count))
	if r.FirstAhead.Count > 0 {
		s += fmt.Sprintf("; a request's first answer: %s median, %s p90, over %s", percent(r.FirstAhead.P50), percent(r.FirstAhead.P90), clikit.FormatInt(r.FirstAhead.Count))
	}
	return s + " (" + r.nearFront() + ")"
}

func (r *lineReport) waitText() string {
	var s string
	if r.Wait.Count == 0 {
		s = fmt.Sprintf("not compared: no poll with %d or more ahead was told a wait", r.MinAhead)
	} else {
		s = fmt.Sprintf("off by %s median, %s p90 of the true wait (until a worker finished the request), over %s of those polls",
			percent(r.Wait.P50), percent(r.Wait.P90), clikit.FormatInt(r.Wait.Count))
	}
	if r.WaitUnknown > 0 {
		s += fmt.Sprintf("; %s told no wait: no rate measured yet", clikit.FormatInt(r.WaitUnknown))
	}
	return s
}

func (r *lineReport) lineText() string {
	s := fmt.Sprintf("peak %s waiting at +%s · the workers finished %s requests/s on average",
		clikit.Plural(r.PeakDepth, "request"), clikit.FormatSeconds(r.PeakAtSeconds), clikit.FormatRate(r.MeanRatePerSec))
	if r.DrainDepth == 0 {
		return s + " · no line to drain seen by a poll"
	}
	return s + fmt.Sprintf(" · at the deepest line a poll saw (+%s: %s waiting, told %s ahead) the drain time told was %s, it took %s",
		clikit.FormatSeconds(r.DrainAtSeconds), clikit.Plural(r.DrainDepth, "request"), clikit.FormatInt(int(r.DrainDepthTold)),
		clikit.FormatSeconds(r.DrainToldSeconds), clikit.FormatSeconds(r.DrainTookSeconds))
}

// percent writes a fraction as a percentage: "4.2%".
func percent(f float64) string {
	return fmt.Sprintf("%.1f%%", 100*f)
}
