package main

import (
	"fmt"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
)

// The place in line of a waiting request (request get) and the line of a FIRST_COME
// event as a whole (stats), as the library estimates them from the event's progress.

// placeLine is what request get says first of a request that waits in line: how many
// wait before it and for how long; "" for any other request.
func placeLine(q *asyncevent.QueueEstimate) string {
	if q == nil {
		return ""
	}
	s := fmt.Sprintf("place in line: %s ahead", clikit.Plural(q.Ahead, "request"))
	if q.Rate == 0 {
		return s + "; its wait is unknown: the workers have not finished requests for half a second of the last 5s"
	}
	return s + fmt.Sprintf(", its turn in about %s at the workers' %s requests/s (the line as of %s; an estimate, as a standard queue keeps order only roughly)",
		clikit.FormatDuration(q.Wait), clikit.FormatRate(q.Rate), formatMillis(q.AsOf))
}

// formatQueue is the queue line of stats: the line's depth, the workers' rate and the
// time to drain it.
func formatQueue(q *asyncevent.QueueStats) string {
	s := fmt.Sprintf("%s waiting · the workers finish %s requests/s", clikit.Plural(q.Depth, "request"), clikit.FormatRate(q.Rate))
	switch {
	case q.Depth == 0:
		s += " · nothing to drain"
	case q.Rate == 0:
		s += " · drain time unknown: the workers have not finished requests for half a second of the last 5s"
	default:
		s += " · drained in about " + clikit.FormatDuration(q.DrainTime)
	}
	return s + fmt.Sprintf(" (as of %s)", formatMillis(q.AsOf))
}
