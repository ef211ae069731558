package clikit

import "github.com/asyncevent/asyncevent"

// The line of a FIRST_COME event as the CLI prints it: a waiting request's place in
// it (request get's "queue", and "prequeue" for an entry of a pre-queue) and the line
// as a whole (stats' "queue"). Their times are epoch milliseconds, as a stored
// request's own, and their rates and waits in names of their own (ratePerSec, waitMs, drainTimeMs): the CLI printed them so before
// the HTTP API had its views of the line (httpapi.PlaceView, httpapi.QueueStatsView),
// which write asOf and at in RFC 3339. Both are promised, so each keeps its form.

// Place is a waiting request's place in line (asyncevent.QueueEstimate): those
// ahead, the workers' rate, and the wait at that rate in milliseconds, absent when
// unknown (no worker finished a request of the event lately, so there is no rate to
// carry the line on).
type Place struct {
	Ahead      int64                  `json:"ahead"`
	WaitMs     *float64               `json:"waitMs,omitempty"`
	RatePerSec float64                `json:"ratePerSec"`
	AsOf       asyncevent.EpochMillis `json:"asOf"`
}

// PlaceOf is q as the CLI prints it; nil for none.
func PlaceOf(q *asyncevent.QueueEstimate) *Place {
	if q == nil {
		return nil
	}
	p := &Place{Ahead: q.Ahead, RatePerSec: q.Rate, AsOf: q.AsOf}
	if q.Rate > 0 {
		wait := Ms(q.Wait)
		p.WaitMs = &wait
	}
	return p
}

// PrequeuePlace is a waiting entry's place in its pre-queue's drawn order
// (asyncevent.PrequeuePlace): frozen once the serve recorded the entries, its place
// (1 is served first) among entries, for seats seats; late when the request reached
// the table after the entries were recorded; asOf, when it was read, in epoch
// milliseconds as Place's.
type PrequeuePlace struct {
	Frozen  bool                   `json:"frozen"`
	Place   int64                  `json:"place"`
	Entries int64                  `json:"entries"`
	Seats   int64                  `json:"seats"`
	Late    bool                   `json:"late"`
	AsOf    asyncevent.EpochMillis `json:"asOf"`
}

// PrequeuePlaceOf is p as the CLI prints it; nil for none.
func PrequeuePlaceOf(p *asyncevent.PrequeuePlace) *PrequeuePlace {
	if p == nil {
		return nil
	}
	return &PrequeuePlace{Frozen: p.Frozen, Place: p.Place, Entries: p.Entries, Seats: p.Seats, Late: p.Late, AsOf: p.AsOf}
}

// WaitlistPlace is a WAITLISTED request's place on its event's waitlist
// (asyncevent.WaitlistPlace): those ahead of it, when the waitlist ends (absent for
// an event created without an end), and when the counts were read, in epoch
// milliseconds as Place's.
type WaitlistPlace struct {
	Ahead  int64                  `json:"ahead"`
	EndsAt asyncevent.EpochMillis `json:"endsAt,omitempty"`
	AsOf   asyncevent.EpochMillis `json:"asOf"`
}

// WaitlistPlaceOf is w as the CLI prints it; nil for none.
func WaitlistPlaceOf(w *asyncevent.WaitlistPlace) *WaitlistPlace {
	if w == nil {
		return nil
	}
	return &WaitlistPlace{Ahead: w.Ahead, EndsAt: w.EndsAt, AsOf: w.AsOf}
}

// Line is a FIRST_COME event's line (asyncevent.QueueStats): its depth, the
// workers' rate, the time to drain it in milliseconds (absent when unknown: no
// worker finished a request lately), and the line second by second.
type Line struct {
	Depth       int64                  `json:"depth"`
	RatePerSec  float64                `json:"ratePerSec"`
	DrainTimeMs *float64               `json:"drainTimeMs,omitempty"`
	AsOf        asyncevent.EpochMillis `json:"asOf"`
	Series      []LinePoint            `json:"series"`
}

// LinePoint is one second of the line: its depth at the second's end and the
// requests the workers finished in it.
type LinePoint struct {
	At         asyncevent.EpochMillis `json:"at"`
	Depth      int64                  `json:"depth"`
	RatePerSec float64                `json:"ratePerSec"`
}

func lineOf(q *asyncevent.QueueStats) *Line {
	if q == nil {
		return nil
	}
	l := &Line{Depth: q.Depth, RatePerSec: q.Rate, AsOf: q.AsOf, Series: []LinePoint{}}
	if q.Rate > 0 {
		drain := Ms(q.DrainTime)
		l.DrainTimeMs = &drain
	}
	for _, p := range q.Series {
		l.Series = append(l.Series, LinePoint{At: p.At, Depth: p.Depth, RatePerSec: p.Rate})
	}
	return l
}
