package httpapi

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/asyncevent/asyncevent"
)

// The Queue panel of a FIRST_COME event's page: the line now (its depth, the rate
// the workers finish requests at, the time to drain it) and how it drained,
// second by second (asyncevent.QueueStats), in two small charts over one time
// axis: the depth above, the rate below. The request page of a waiting request
// shows its place in that line (asyncevent.QueueEstimate).

// The queue chart's geometry, in SVG user units (the SVG scales to the panel's
// width).
const (
	queueChartWidth  = 420
	queuePlotLeft    = 44 // room for the values of the y axes
	queuePlotRight   = queueChartWidth - 8
	queueDepthTop    = 20
	queueDepthHeight = 84
	queueRateTop     = queueDepthTop + queueDepthHeight + 30
	queueRateHeight  = 56
	queueAxisY       = queueRateTop + queueRateHeight + 16
	queueChartHeight = queueAxisY + 6
	maxQueuePoints   = 240 // past that, a point sums up a run of seconds
)

// queueView is the Queue panel.
type queueView struct {
	Counted bool                   // the event's progress was read: else the panel says why it is empty
	AsOf    asyncevent.EpochMillis // when it was read
	Cards   []card                 // depth, rate, time to drain
	Chart   *queueChart            // nil before the first second is counted
}

// queueChart is what the template draws. Coordinates are preformatted.
type queueChart struct {
	Width, Height int
	Plots         []queuePlot // the depth, then the rate
	Ticks         []chartTick // the time axis
	AxisY         string
	PlotLeft      string
	PlotRight     string
	Span          string // the time the series covers: "1m05s"
	PerPoint      string // how many seconds a point sums up, when more than one
}

// queuePlot is one of the queue chart's two charts: a line over a filled area,
// with its y axis's label and top value.
type queuePlot struct {
	ID, Class   string
	Label       string // the y axis's label, with its unit
	LabelY      string
	Top, Bottom string // the plot's top and baseline
	Max         string // the value at the top
	Line, Area  string // polyline and polygon points
	Title       string // the tooltip: the peak
}

// queueOf is the Queue panel of a FIRST_COME event's stats.
func queueOf(s *asyncevent.EventStats) *queueView {
	q := s.Queue
	if q == nil {
		return &queueView{}
	}
	v := &queueView{Counted: true, AsOf: q.AsOf, Cards: queueCards(q)}
	if len(q.Series) > 0 {
		v.Chart = layoutQueueChart(q.Series)
	}
	return v
}

// queueCards are the line now: its depth, the workers' rate, the time to drain it.
func queueCards(q *asyncevent.QueueStats) []card {
	return []card{
		{ID: "queue-depth", Label: "Depth", Value: strconv.FormatInt(q.Depth, 10), Note: "requests arrived, not finished"},
		rateCard("queue-rate", q.Rate),
		waitCard(card{ID: "queue-drain", Label: "Time to drain", Note: "the depth at this rate"}, q.DrainTime, q.Rate, q.Depth, "nothing waits"),
	}
}

// rateCard is the rate the workers finish the event's requests at.
func rateCard(id string, rate float64) card {
	return card{ID: id, Label: "Rate", Value: fmtRate(rate), Unit: "/s", Note: "requests finished a second while there was work, over the last 3 s"}
}

// waitCard is c with the time the workers take to finish ahead requests at rate:
// wait, "none" (with the note none) when nothing is ahead, "unknown" when no worker
// finished a request lately.
func waitCard(c card, wait time.Duration, rate float64, ahead int64, none string) card {
	switch {
	case ahead == 0:
		c.Value, c.Note, c.Tone = "none", none, "good"
	case rate <= 0:
		c.Value, c.Note, c.Tone = "unknown", "no rate yet: no worker finished a request lately", "warn"
	default:
		c.Value = fmtDuration(wait)
	}
	return c
}

// fmtRate writes requests a second: "12.5", "0.25".
func fmtRate(r float64) string {
	if r >= 10 {
		return strconv.FormatFloat(r, 'f', 1, 64)
	}
	return strconv.FormatFloat(r, 'f', 2, 64)
}

// queueSample is one point of the queue chart: a second of the series, or a run
// of seconds.
type queueSample struct {
	at          time.Time // the end of its second, or of its run's last
	depth, rate float64
}

// layoutQueueChart lays out a non-empty series along time: each point at the end
// of its second (or of its run of seconds), the depth above and the rate below.
func layoutQueueChart(series []asyncevent.QueuePoint) *queueChart {
	samples, per := downsample(series)
	first, last := samples[0].at, samples[len(samples)-1].at
	xs := make([]float64, len(samples))
	for i, sm := range samples {
		xs[i] = queuePlotLeft
		if last.After(first) {
			xs[i] += float64(queuePlotRight-queuePlotLeft) * float64(sm.at.Sub(first)) / float64(last.Sub(first))
		}
	}
	c := &queueChart{
		Width: queueChartWidth, Height: queueChartHeight,
		AxisY: strconv.Itoa(queueAxisY), PlotLeft: strconv.Itoa(queuePlotLeft), PlotRight: strconv.Itoa(queuePlotRight),
		Span: fmtDuration(last.Sub(series[0].At.Time().Add(-time.Second))),
		Plots: []queuePlot{
			layoutPlot(queuePlot{ID: "queue-depth-line", Class: "q-depth", Label: "Depth (requests waiting)"}, samples, xs,
				func(sm queueSample) float64 { return sm.depth }, "requests", queueDepthTop, queueDepthHeight),
			layoutPlot(queuePlot{ID: "queue-rate-line", Class: "q-rate", Label: "Rate (requests finished/s)"}, samples, xs,
				func(sm queueSample) float64 { return sm.rate }, "requests/s", queueRateTop, queueRateHeight),
		},
	}
	c.Ticks = []chartTick{{X: c.PlotLeft, Label: clockOf(first), Anchor: "start"}}
	if last.After(first) {
		c.Ticks = append(c.Ticks,
			chartTick{X: strconv.Itoa((queuePlotLeft + queuePlotRight) / 2), Label: clockOf(first.Add(last.Sub(first) / 2)), Anchor: "middle"},
			chartTick{X: c.PlotRight, Label: clockOf(last), Anchor: "end"})
	}
	if per > 1 {
		c.PerPoint = "each point sums up " + strconv.Itoa(per) + " seconds: the deepest, and the mean rate"
	}
	return c
}

// clockOf writes a time of the chart's axis: "09:00:05" (UTC).
func clockOf(t time.Time) string { return t.UTC().Format("15:04:05") }

// downsample returns the series as samples, one for each run of per seconds, so
// that no more than maxQueuePoints are drawn: a run's deepest depth (never below
// 0: the counts of different nodes are written at different moments) and its mean
// rate.
func downsample(series []asyncevent.QueuePoint) (samples []queueSample, per int) {
	per = (len(series) + maxQueuePoints - 1) / maxQueuePoints
	for lo := 0; lo < len(series); lo += per {
		run := series[lo:min(lo+per, len(series))]
		sm := queueSample{at: run[len(run)-1].At.Time()}
		for _, p := range run {
			sm.depth = max(sm.depth, float64(p.Depth))
			sm.rate += p.Rate / float64(len(run))
		}
		sm.rate = math.Round(100*sm.rate) / 100
		samples = append(samples, sm)
	}
	return samples, per
}

// layoutPlot draws value of the samples at xs over the plot area from top, height
// high, scaled to a round maximum, into p; a single sample is a flat line across.
func layoutPlot(p queuePlot, samples []queueSample, xs []float64, value func(queueSample) float64, unit string, top, height int) queuePlot {
	peak := 0
	for i := range samples {
		if value(samples[i]) > value(samples[peak]) {
			peak = i
		}
	}
	scale := niceCeil(value(samples[peak]))
	bottom := float64(top + height)
	p.LabelY, p.Top, p.Bottom = strconv.Itoa(top-7), strconv.Itoa(top), strconv.Itoa(top+height)
	p.Max = strconv.FormatFloat(scale, 'f', -1, 64)
	p.Title = "peak " + strconv.FormatFloat(value(samples[peak]), 'f', -1, 64) + " " + unit + " at " + clockOf(samples[peak].at)
	ys := make([]float64, len(samples))
	for i, sm := range samples {
		ys[i] = bottom - float64(height)*value(sm)/scale
	}
	if len(samples) == 1 {
		xs, ys = []float64{queuePlotLeft, queuePlotRight}, []float64{ys[0], ys[0]}
	}
	points := make([]string, len(xs))
	for i := range xs {
		points[i] = f1(xs[i]) + "," + f1(ys[i])
	}
	p.Line = strings.Join(points, " ")
	p.Area = f1(xs[0]) + "," + f1(bottom) + " " + p.Line + " " + f1(xs[len(xs)-1]) + "," + f1(bottom)
	return p
}

// niceCeil is the round number (1, 2 or 5 times a power of ten) at or above v, for
// the top of an axis; 1 for nothing.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	exp := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*exp >= v {
			return m * exp
		}
	}
	return 10 * exp
}

// placeView is the place in line of a waiting request, for its page.
type placeView struct {
	AsOf  asyncevent.EpochMillis
	Cards []card // ahead, the wait, the rate
}

// placeOf is where a waiting request stands; nil for one that does not wait.
func placeOf(q *asyncevent.QueueEstimate) *placeView {
	if q == nil {
		return nil
	}
	return &placeView{AsOf: q.AsOf, Cards: []card{
		{ID: "place-ahead", Label: "Ahead in line", Value: strconv.FormatInt(q.Ahead, 10), Note: "requests queued before it, not finished"},
		waitCard(card{ID: "place-wait", Label: "Turn in about", Note: "the requests ahead at this rate"}, q.Wait, q.Rate, q.Ahead, "it is next in line"),
		rateCard("place-rate", q.Rate),
	}}
}
