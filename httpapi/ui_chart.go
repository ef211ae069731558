package httpapi

import (
	"context"
	"strconv"
	"strings"

	"github.com/asyncevent/asyncevent"
)

// The event page's chart: the event's requests along queue order (GSI2, queuedAt
// ascending), each coloured by its outcome. Up to maxColumns requests each get a
// column of their own; past that a column stacks the outcomes of a run of
// consecutive requests. For a FIRST_COME event a marker shows where the capacity
// runs out: in a perfectly fair run every success is left of it. With holds a seat
// may be HELD, a loser WAITLISTED, and a hold that ended unpaid (released, expired)
// has a colour of its own: its seat went to the waitlist, right of the marker.

// The chart's geometry, in SVG user units (the SVG scales to the page's width).
const (
	chartWidth   = 1000
	chartTop     = 22 // room for the capacity label
	chartBars    = 110
	chartAxis    = 26
	chartHeight  = chartTop + chartBars + chartAxis
	maxColumns   = 250
	chartPageMax = 500 // ListEventRequests' largest page
)

// The outcome classes, in stacking order (bottom first), with their legend labels.
var outcomes = []struct{ class, label string }{
	{"success", "succeeded"},
	{"held", "held"},
	{"waitlisted", "waitlisted"},
	{"released", "released"},
	{"expired", "hold expired"},
	{"rejected", "rejected"},
	{"failed", "failed"},
	{"processing", "processing"},
	{"waiting", "received / queued"},
}

// outcomeOf is the chart class of a request status.
func outcomeOf(s asyncevent.Status) string {
	switch s {
	case asyncevent.StatusSucceeded:
		return "success"
	case asyncevent.StatusRejected:
		return "rejected"
	case asyncevent.StatusFailedFinal:
		return "failed"
	case asyncevent.StatusProcessing:
		return "processing"
	case asyncevent.StatusHeld:
		return "held"
	case asyncevent.StatusWaitlisted:
		return "waitlisted"
	}
	return "waiting"
}

// outcomeOfRequest is the chart class of a request: its status's, and for a hold
// that ended unpaid, its result code's.
func outcomeOfRequest(r *asyncevent.Request) string {
	if r.Status == asyncevent.StatusRejected && (r.ResultCode == asyncevent.ResultReleased || r.ResultCode == asyncevent.ResultHoldExpired) {
		return outcomeOfResult(r.ResultCode)
	}
	return outcomeOf(r.Status)
}

// outcomeOfResult is the chart class of a result code.
func outcomeOfResult(rc asyncevent.ResultCode) string {
	switch {
	case rc == asyncevent.ResultSuccess:
		return "success"
	case rc == asyncevent.ResultReleased:
		return "released"
	case rc == asyncevent.ResultHoldExpired:
		return "expired"
	case strings.HasPrefix(string(rc), "REJECTED"):
		return "rejected"
	case strings.HasPrefix(string(rc), "FAILED"):
		return "failed"
	}
	return "waiting"
}

// chartView is what the template draws. Coordinates are preformatted.
type chartView struct {
	Width, Height int
	Columns       []chartColumn
	Shown         int  // requests drawn
	Total         int  // requests of the event (EventStats)
	Truncated     bool // more requests than ChartRequests: the first ones are drawn
	PerColumn     string
	Marker        *chartMarker
	Ticks         []chartTick
	Legend        []legendItem
	AxisY         string
	BarsTop       string
}

type chartColumn struct {
	Title string // the tooltip: positions and counts
	Segs  []chartSeg
}

type chartSeg struct {
	Class      string
	X, Y, W, H string
}

type chartMarker struct {
	X     string
	Label string
	Right bool // the label goes left of the line (near the right edge)
}

type chartTick struct {
	X, Label, Anchor string
}

type legendItem struct {
	Class, Label string
	Count        int
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// outcomeChart reads up to chartMax requests in queue order and lays them out.
func (u *adminUI) outcomeChart(ctx context.Context, ev *asyncevent.Event, stats *asyncevent.EventStats) (chartView, error) {
	var classes []string
	cursor := ""
	for len(classes) < u.chartMax {
		page, err := u.client.ListEventRequests(ctx, ev.EventID, asyncevent.EventListOptions{
			PageOptions: asyncevent.PageOptions{Limit: min(chartPageMax, u.chartMax-len(classes)), Cursor: cursor},
			Order:       asyncevent.Ascending,
		})
		if err != nil {
			return chartView{}, err
		}
		for i := range page.Requests {
			classes = append(classes, outcomeOfRequest(&page.Requests[i]))
		}
		cursor = page.NextCursor
		if cursor == "" {
			break
		}
	}
	c := layoutChart(classes, stats.Requests)
	c.Truncated = cursor != ""
	if ev.EventType == asyncevent.FirstCome && ev.CapacityTotal > 0 && int(ev.CapacityTotal) < len(classes) {
		x := float64(chartWidth) * float64(ev.CapacityTotal) / float64(len(classes))
		c.Marker = &chartMarker{X: f1(x), Label: "capacity " + strconv.FormatInt(ev.CapacityTotal, 10), Right: x > chartWidth*0.8}
	}
	return c, nil
}

// layoutChart lays out the classes of the requests in queue order.
func layoutChart(classes []string, total int) chartView {
	n := len(classes)
	c := chartView{Width: chartWidth, Height: chartHeight, Shown: n, Total: total,
		AxisY: strconv.Itoa(chartTop + chartBars + 18), BarsTop: strconv.Itoa(chartTop)}
	counts := map[string]int{}
	for _, cl := range classes {
		counts[cl]++
	}
	for _, o := range outcomes {
		if counts[o.class] > 0 {
			c.Legend = append(c.Legend, legendItem{Class: o.class, Label: o.label, Count: counts[o.class]})
		}
	}
	if n == 0 {
		return c
	}
	cols := min(n, maxColumns)
	colW := float64(chartWidth) / float64(cols)
	gap := 0.0
	if colW >= 3 {
		gap = colW * 0.18
	}
	if cols < n {
		c.PerColumn = "each column stacks about " + strconv.Itoa((n+cols-1)/cols) + " consecutive requests"
	}
	for i := range cols {
		lo, hi := i*n/cols, (i+1)*n/cols
		inCol := map[string]int{}
		for _, cl := range classes[lo:hi] {
			inCol[cl]++
		}
		col := chartColumn{}
		if hi-lo == 1 {
			col.Title = "#" + strconv.Itoa(lo+1) + ": "
		} else {
			col.Title = "#" + strconv.Itoa(lo+1) + "–#" + strconv.Itoa(hi) + ": "
		}
		y := float64(chartTop + chartBars)
		var parts []string
		for _, o := range outcomes {
			k := inCol[o.class]
			if k == 0 {
				continue
			}
			h := float64(chartBars) * float64(k) / float64(hi-lo)
			y -= h
			col.Segs = append(col.Segs, chartSeg{Class: o.class, X: f1(float64(i)*colW + gap/2), Y: f1(y), W: f1(colW - gap), H: f1(h)})
			parts = append(parts, strconv.Itoa(k)+" "+o.label)
		}
		col.Title += strings.Join(parts, ", ")
		c.Columns = append(c.Columns, col)
	}
	c.Ticks = []chartTick{{X: "0", Label: "#1", Anchor: "start"}}
	for _, q := range []int{1, 2, 3} {
		pos := q * n / 4
		if pos > 1 && pos < n {
			c.Ticks = append(c.Ticks, chartTick{X: f1(float64(chartWidth) * float64(pos) / float64(n)), Label: "#" + strconv.Itoa(pos), Anchor: "middle"})
		}
	}
	c.Ticks = append(c.Ticks, chartTick{X: strconv.Itoa(chartWidth), Label: "#" + strconv.Itoa(n), Anchor: "end"})
	return c
}
