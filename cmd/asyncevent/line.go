package main

import (
	"fmt"

	"github.com/asyncevent/asyncevent"
)

// The place in line of a waiting request (request get) and the line of a FIRST_COME
// event as a whole (stats), as the library estimates them from the event's progress.

// placeJSON is asyncevent.QueueEstimate for scripts; times in epoch milliseconds, as
// the request's own.
type placeJSON struct {
	Ahead int64 `json:"ahead"`
	// WaitMs is absent when the wait is unknown: no worker finished a request of the
	// event lately, so there is no rate to carry the line on.
	WaitMs     *float64               `json:"waitMs,omitempty"`
	RatePerSec float64                `json:"ratePerSec"`
	AsOf       asyncevent.EpochMillis `json:"asOf"`
}

func placeOf(q *asyncevent.QueueEstimate) *placeJSON {
	if q == nil {
		return nil
	}
	p := &placeJSON{Ahead: q.Ahead, RatePerSec: q.Rate, AsOf: asyncevent.MillisOf(q.AsOf)}
	if q.Rate > 0 {
		wait := ms(q.Wait)
		p.WaitMs = &wait
	}
	return p
}

// placeLine is what request get says first of a request that waits in line: how many
// wait before it and for how long; "" for any other request.
func placeLine(q *asyncevent.QueueEstimate) string {
	if q == nil {
		return ""
	}
	s := fmt.Sprintf("place in line: %s ahead", plural(q.Ahead, "request"))
	if q.Rate == 0 {
		return s + "; its wait is unknown: the workers have not finished requests for half a second of the last 5s"
	}
	return s + fmt.Sprintf(", its turn in about %s at the workers' %s requests/s (the line as of %s; an estimate, as a standard queue keeps order only roughly)",
		formatDuration(q.Wait), formatRate(q.Rate), formatMillis(asyncevent.MillisOf(q.AsOf)))
}

// queueJSON is asyncevent.QueueStats for scripts.
type queueJSON struct {
	Depth      int64   `json:"depth"`
	RatePerSec float64 `json:"ratePerSec"`
	// DrainTimeMs is absent when unknown: no worker finished a request lately.
	DrainTimeMs *float64               `json:"drainTimeMs,omitempty"`
	AsOf        asyncevent.EpochMillis `json:"asOf"`
	Series      []queuePointJSON       `json:"series"`
}

// queuePointJSON is one second of the line: its depth at the second's end and the
// requests the workers finished in it.
type queuePointJSON struct {
	At         asyncevent.EpochMillis `json:"at"`
	Depth      int64                  `json:"depth"`
	RatePerSec float64                `json:"ratePerSec"`
}

func queueOf(q *asyncevent.QueueStats) *queueJSON {
	if q == nil {
		return nil
	}
	out := &queueJSON{Depth: q.Depth, RatePerSec: q.Rate, AsOf: asyncevent.MillisOf(q.AsOf), Series: []queuePointJSON{}}
	if q.Rate > 0 {
		drain := ms(q.DrainTime)
		out.DrainTimeMs = &drain
	}
	for _, p := range q.Series {
		out.Series = append(out.Series, queuePointJSON{At: asyncevent.MillisOf(p.At), Depth: p.Depth, RatePerSec: p.Rate})
	}
	return out
}

// formatQueue is the queue line of stats: the line's depth, the workers' rate and the
// time to drain it.
func formatQueue(q *asyncevent.QueueStats) string {
	s := fmt.Sprintf("%s waiting · the workers finish %s requests/s", plural(q.Depth, "request"), formatRate(q.Rate))
	switch {
	case q.Depth == 0:
		s += " · nothing to drain"
	case q.Rate == 0:
		s += " · drain time unknown: the workers have not finished requests for half a second of the last 5s"
	default:
		s += " · drained in about " + formatDuration(q.DrainTime)
	}
	return s + fmt.Sprintf(" (as of %s)", formatMillis(asyncevent.MillisOf(q.AsOf)))
}

// formatRate writes a rate of requests a second: 3 significant digits at most.
func formatRate(r float64) string {
	switch {
	case r >= 100:
		return fmt.Sprintf("%.0f", r)
	case r >= 10:
		return fmt.Sprintf("%.1f", r)
	}
	return fmt.Sprintf("%.2f", r)
}

// plural writes a count of things: "1 request", "1,234 requests".
func plural(n int64, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return formatInt(int(n)) + " " + thing + "s"
}
