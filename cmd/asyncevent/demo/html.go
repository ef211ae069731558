package demo

import (
	"bytes"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
)

// chart is the first-come event over time: the cumulative new participations
// (arrivals) and rejections on the left axis, the cumulative wins on the right axis
// (they stop at the capacity), drawn as an inline SVG.
type chart struct {
	Width, Height          int
	Left, Right, Top, Base int // the plot area
	Series                 []series
	XTicks, YTicks, WTicks []tick
	SoldOut                *tick // where the last seat went, if any
	// LeftTitle and RightTitle name what each axis counts: the two scales differ
	// (thousands of requests on the left, the capacity's wins on the right).
	LeftTitle, RightTitle string
}

type series struct {
	Name, Class string
	Points      string // SVG polyline points
	Total       int
}

type tick struct {
	X, Y  int // of the label
	Grid  int // y of the grid line (y ticks)
	Label string
}

const chartBuckets = 80

// newChart plots the cumulative counts of the three kinds of moments (durations since
// the first click) over [0, end].
func newChart(arrivals, wins, rejections []time.Duration, end time.Duration) *chart {
	c := &chart{Width: 780, Height: 320, Left: 78, Right: 700, Top: 16, Base: 280,
		LeftTitle: "requests so far (new participations, rejections)", RightTitle: "wins so far (its own scale, up to the capacity)"}
	var lastWin time.Duration
	for _, ds := range [][]time.Duration{arrivals, wins, rejections} {
		for _, d := range ds {
			end = max(end, d)
		}
	}
	for _, d := range wins {
		lastWin = max(lastWin, d)
	}
	if end <= 0 {
		end = time.Second
	}
	maxY, maxW := max(len(arrivals), len(rejections), 1), max(len(wins), 1)
	x := func(d time.Duration) int {
		return c.Left + int(float64(c.Right-c.Left)*float64(d)/float64(end))
	}
	scale := func(top int) func(int) int {
		return func(n int) int { return c.Base - int(float64(c.Base-c.Top)*float64(n)/float64(top)) }
	}
	y, yw := scale(maxY), scale(maxW)
	for _, s := range []struct {
		name, class string
		ds          []time.Duration
		y           func(int) int
	}{
		{"new participations so far (left axis)", "arrivals", arrivals, y},
		{"rejections so far (left axis)", "rejections", rejections, y},
		{"wins so far (right axis, green)", "wins", wins, yw},
	} {
		counts := make([]int, chartBuckets)
		for _, d := range s.ds {
			b := int(float64(chartBuckets) * float64(d) / float64(end))
			counts[min(max(b, 0), chartBuckets-1)]++
		}
		var pts strings.Builder
		sum := 0
		fmt.Fprintf(&pts, "%d,%d", c.Left, c.Base)
		for b, n := range counts {
			sum += n
			at := time.Duration(float64(end) * float64(b+1) / chartBuckets)
			fmt.Fprintf(&pts, " %d,%d", x(at), s.y(sum))
		}
		c.Series = append(c.Series, series{Name: s.name, Class: s.class, Points: pts.String(), Total: len(s.ds)})
	}
	for i := 0; i <= 5; i++ {
		at := time.Duration(float64(end) * float64(i) / 5)
		c.XTicks = append(c.XTicks, tick{X: x(at), Y: c.Base + 18, Label: clikit.FormatDuration(at.Round(100 * time.Millisecond))})
		n := maxY * i / 5
		c.YTicks = append(c.YTicks, tick{X: c.Left - 8, Y: y(n) + 4, Grid: y(n), Label: clikit.FormatInt(n)})
		w := maxW * i / 5
		c.WTicks = append(c.WTicks, tick{X: c.Right + 8, Y: yw(w) + 4, Label: clikit.FormatInt(w)})
	}
	if len(wins) > 0 {
		c.SoldOut = &tick{X: x(lastWin), Y: c.Top + 12, Label: "last seat at " + clikit.FormatDuration(lastWin.Round(10*time.Millisecond))}
	}
	return c
}

// row is one line of a figures table in the HTML report.
type row struct{ Label, Value string }

type htmlData struct {
	R       *demoReport
	Chart   *chart
	FC      []row
	Holds   []row
	Lottery []row
	Verdict string
	OK      bool
	// Ceiling is the sentence that says where DynamoDB would throttle the event.
	Ceiling string
}

// writeHTMLReport writes the HTML report to path, and beside it the request page it
// links to.
func writeHTMLReport(path string, r *demoReport) error {
	if h := r.Holds; h != nil && h.Page != nil {
		if err := h.Page.save(path); err != nil {
			return err
		}
	}
	var buf bytes.Buffer
	if err := renderHTML(&buf, r); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

func renderHTML(buf *bytes.Buffer, r *demoReport) error {
	d := htmlData{R: r, OK: r.failure() == nil, Verdict: r.verdict()}
	if fc := r.FirstCome; fc != nil {
		d.Chart = fc.chart
		d.FC = []row{
			{"capacity", clikit.FormatInt(fc.Capacity)},
			{"clicks", fmt.Sprintf("%s from %d clients (%s repeat clicks)", clikit.FormatInt(fc.Clicks), fc.Clients, clikit.FormatInt(fc.ScheduledRepeats))},
			{"new participations", clikit.FormatInt(fc.NewParticipations)},
			{"duplicates blocked", clikit.FormatInt(fc.DuplicatesBlocked)},
			{"winners", fmt.Sprintf("%s (want %s)", clikit.FormatInt(fc.Winners), clikit.FormatInt(fc.ExpectedWinners))},
			{"requests by status", clikit.FormatCounts(fc.Stats.ByStatus)},
			{"result codes", clikit.FormatCounts(fc.Stats.ByResultCode)},
			{"ingest latency", fmt.Sprintf("%s (new %s; duplicate %s)", fc.Latency, fc.NewLatency, fc.DupLatency)},
			{"queue wait", clikit.FormatDurations(fc.queueWait)},
			{"processing", clikit.FormatDurations(fc.processing) + " (the requests a worker worked on; the sold-out event's losers are rejected in one write each)"},
			{"end to end", clikit.FormatSeconds(fc.EndToEndSeconds)},
			{"per new participation", fc.PerParticipation.String()},
			{"per duplicate click", fc.PerDuplicate.String() + " (a repeat on the node that took the first click is answered from its memory; on another node it is one failed conditional PutItem, as in the bench)"},
			{"per message", fc.PerMessage.String()},
			{"CAPACITY writes", fmt.Sprintf("%s (%s seats)", clikit.FormatInt(fc.CapacityWrites), clikit.FormatInt(fc.Winners))},
			{"fairness", clikit.FormatFairness(fc.fairness)},
			{"hottest keys", formatHottest(fc.Heat)},
		}
		if l := fc.Line; l != nil {
			for _, r := range l.rows() {
				d.FC = append(d.FC, row{"place in line: " + r.Label, r.Value})
			}
		}
		d.Ceiling = "On DynamoDB " + ceilingSentence(fc.Heat) + "."
	}
	if h := r.Holds; h != nil {
		d.Holds = h.rows()
	}
	if l := r.Lottery; l != nil {
		d.Lottery = []row{
			{"entrants", clikit.FormatInt(l.Entrants)},
			{"entries collected", clikit.FormatInt(l.Collected)},
			{"winners", fmt.Sprintf("%s of %s", clikit.FormatInt(l.Winners), clikit.FormatInt(l.WinnerCount))},
			{"requests by status", clikit.FormatCounts(l.Stats.ByStatus)},
			{"seed commitment", l.SeedCommitment},
			{"revealed seed", l.Seed},
			{"seed mode", clikit.SeedModeText(l.SeedMode)},
			{"entries hash", l.EntriesHash},
			{"collect / draw", clikit.FormatSeconds(l.CollectSeconds) + " / " + clikit.FormatSeconds(l.DrawSeconds)},
			{"verification", l.Verification},
		}
	}
	return htmlReport.Execute(buf, d)
}

var htmlReport = template.Must(template.New("report").Funcs(template.FuncMap{
	"formatInt": clikit.FormatInt,
	"base":      filepath.Base,
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>asyncevent demo report</title>
<style>
body { font: 15px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 820px; color: #1d232a; }
h1 { font-size: 1.5rem; margin-bottom: 0.2rem; }
.meta { color: #5b6570; margin-top: 0; }
.verdict { padding: 0.6rem 0.9rem; border-radius: 6px; font-weight: 600; }
.ok { background: #e3f5e8; color: #17613a; }
.bad { background: #fbe4e4; color: #8a1c1c; }
table { border-collapse: collapse; width: 100%; margin: 0.5rem 0 1.5rem; }
td { padding: 0.3rem 0.6rem; border-bottom: 1px solid #e4e7eb; vertical-align: top; }
td:first-child { color: #5b6570; white-space: nowrap; width: 12rem; }
td.mono { font-family: ui-monospace, monospace; word-break: break-all; }
svg { background: #fafbfc; border: 1px solid #e4e7eb; border-radius: 6px; }
svg text { font: 11px system-ui, sans-serif; fill: #5b6570; }
.axis { stroke: #9aa4ae; stroke-width: 1; }
.grid { stroke: #e4e7eb; stroke-width: 1; }
polyline { fill: none; stroke-width: 2.2; }
.soldout { stroke: #1f9d55; stroke-width: 1; stroke-dasharray: 4 3; }
svg text.wtick { fill: #1f9d55; }
.wins-axis { stroke: #1f9d55; }
.arrivals { stroke: #2f6fdb; } .wins { stroke: #1f9d55; } .rejections { stroke: #d9822b; }
.swatch { display: inline-block; width: 0.9rem; height: 0.25rem; margin-right: 0.35rem; vertical-align: middle; }
.swatch.arrivals { background: #2f6fdb; } .swatch.wins { background: #1f9d55; } .swatch.rejections { background: #d9822b; }
.legend span { margin-right: 1.2rem; }
.ceiling { padding: 0.6rem 0.9rem; border-radius: 6px; background: #fff4e0; color: #7a4a00; }
</style>
</head>
<body>
<h1>asyncevent demo</h1>
<p class="meta">{{.R.StartedAt.Format "2006-01-02 15:04 MST"}} · table {{.R.Table}} · DynamoDB {{.R.DynamoDB}}{{if .R.DynamoDBSource}} ({{.R.DynamoDBSource}}){{end}} · {{.R.Queue}}</p>
<p class="verdict {{if .OK}}ok{{else}}bad{{end}}">{{.Verdict}}</p>
{{with .R.FirstCome}}
<h2>First come: {{.EventID}}</h2>
{{end}}
{{with .Chart}}
<svg width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}" role="img" aria-label="arrivals, wins and rejections over time">
{{range .YTicks}}<line class="grid" x1="{{$.Chart.Left}}" x2="{{$.Chart.Right}}" y1="{{.Grid}}" y2="{{.Grid}}"></line><text x="{{.X}}" y="{{.Y}}" text-anchor="end">{{.Label}}</text>
{{end}}{{range .WTicks}}<text class="wtick" x="{{.X}}" y="{{.Y}}" text-anchor="start">{{.Label}}</text>
{{end}}{{range .XTicks}}<text x="{{.X}}" y="{{.Y}}" text-anchor="middle">{{.Label}}</text>
{{end}}<line class="axis" x1="{{.Left}}" x2="{{.Right}}" y1="{{.Base}}" y2="{{.Base}}"></line>
<line class="axis" x1="{{.Left}}" x2="{{.Left}}" y1="{{.Top}}" y2="{{.Base}}"></line>
<line class="axis wins-axis" x1="{{.Right}}" x2="{{.Right}}" y1="{{.Top}}" y2="{{.Base}}"></line>
<text x="14" y="{{.Base}}" transform="rotate(-90 14 {{.Base}})" text-anchor="start">{{.LeftTitle}}</text>
<text class="wtick" x="{{.Width}}" y="{{.Base}}" dy="-8" transform="rotate(-90 {{.Width}} {{.Base}})" text-anchor="start">{{.RightTitle}}</text>
{{with .SoldOut}}<line class="soldout" x1="{{.X}}" x2="{{.X}}" y1="{{$.Chart.Top}}" y2="{{$.Chart.Base}}"></line><text x="{{.X}}" y="{{.Y}}" dx="4">{{.Label}}</text>
{{end}}{{range .Series}}<polyline class="{{.Class}}" points="{{.Points}}"></polyline>
{{end}}<text x="{{.Right}}" y="{{.Height}}" text-anchor="end" dy="-4">time since the first click</text>
</svg>
<p class="legend">{{range .Series}}<span><i class="swatch {{.Class}}"></i>{{.Name}}: {{formatInt .Total}}</span>{{end}}</p>
{{end}}
{{with .Ceiling}}<p class="ceiling">{{.}}</p>{{end}}
{{if .FC}}<table>{{range .FC}}<tr><td>{{.Label}}</td><td>{{.Value}}</td></tr>{{end}}</table>{{end}}
{{with .R.Holds}}<h2>First come with holds: {{.EventID}}</h2>
<p>Each seat is held {{.HoldForSeconds}} s until it is paid for; the seats given back go to the waitlist, in queue order.</p>{{end}}
{{if .Holds}}<table>{{range .Holds}}<tr><td>{{.Label}}</td><td>{{.Value}}</td></tr>{{end}}</table>{{end}}
{{with .R.Holds}}{{with .Page}}{{if .File}}<p class="request-page">What the user of request <code>{{.RequestID}}</code> saw while it was {{.Status}}: <a href="{{base .File}}">{{.Heading}}</a> “{{.Line}}”, the service's page of their request, saved beside this report as it was served (its countdown stands still; its buttons work on the service only).</p>{{end}}{{end}}{{end}}
{{with .R.Lottery}}<h2>Lottery: {{.EventID}}</h2>{{end}}
{{if .Lottery}}<table>{{range .Lottery}}<tr><td>{{.Label}}</td><td class="mono">{{.Value}}</td></tr>{{end}}</table>{{end}}
<p class="meta">Total {{printf "%.1f" .R.TotalSeconds}} s. Written by <code>asyncevent demo</code>; this file has no external assets.</p>
</body>
</html>
`))
