package progress

import "time"

// Timing is what a reader takes for when the nodes' counts land: every node writes
// its counts at the multiples of Every on its clock, and a count lands Lag after its
// moment (less the wait for its flush), a flush's write WriteLag after it. The
// reader's own period and lags are taken as every node's.
type Timing struct {
	Every time.Duration
	// Lag and WriteLag are the reader's own lags, as its Meter measured them (ms);
	// zero while it measured none, or counts nothing.
	Lag, WriteLag int64
}

// writeTime is the time a node's count may take to land after its moment, less the
// wait for the next flush, when the reader has measured none (with room: a late
// write makes the rate, and so every estimate, too low).
const writeTime = 100 * time.Millisecond

// lagMargin is what lags adds to the lags a reader measured: other nodes' lag is not
// the same.
const lagMargin = 25 * time.Millisecond

// lags returns how long after its moment a node's count of an arrival and of a
// request finished lands on the table, less the wait for its flush (ms): the lags
// measured plus lagMargin; writeTime while none was measured.
func (t Timing) lags() (arrived, finished int64) {
	arrived, finished = writeTime.Milliseconds(), writeTime.Milliseconds()
	if t.Lag > 0 {
		arrived = t.Lag + lagMargin.Milliseconds()
	}
	if t.WriteLag > 0 {
		finished = t.WriteLag + lagMargin.Milliseconds()
	}
	return arrived, finished
}

// Complete returns the moments (unix ms) up to which the counts of arrivals and of
// requests finished read at readAt are taken as complete. The last flush landed by
// the read (flushLanded) covers every request finished before its moment, and every
// arrival before it less the time an arrival takes to be counted (Submit's puts:
// Lag, with lagMargin; writeTime before any was measured).
func (t Timing) Complete(readAt time.Time) (arrived, finished int64) {
	flushed := t.flushLanded(readAt)
	late := writeTime.Milliseconds()
	if t.Lag > 0 {
		la, lf := t.lags()
		late = max(la-lf, 0) + lagMargin.Milliseconds()
	}
	return flushed - late, flushed
}

// flushLanded returns the moment (unix ms) of the nodes' last flush whose writes
// have landed by at: the last multiple of Every at least twice the write's lag
// (with lagMargin) before at. Twice: a node whose write or timer is slower than the
// reader's, or whose clock is behind, lands later, and a flush read before it landed
// hides a whole Every of its counts.
func (t Timing) flushLanded(at time.Time) int64 {
	_, lf := t.lags()
	return lastFlush(at.UnixMilli()-2*lf, t.Every)
}

// LandedAt returns when the writes of the nodes' last flush by now are taken to have
// landed: a view read since then holds every flush a read could hold now.
func (t Timing) LandedAt(now time.Time) time.Time {
	_, lf := t.lags()
	return time.UnixMilli(t.flushLanded(now) + 2*lf)
}

// Place is where a request that waits in line stands: the requests queued before it
// that no worker has finished, and the time until the workers reach it at their rate.
type Place struct {
	Ahead int64
	Wait  time.Duration // zero when Rate is zero: unknown
	Rate  float64       // the requests the workers finished a second

	// Its parts: the arrivals before the request and the requests finished it took,
	// the moment up to which the finished were counted in full (unix ms), and their
	// count then.
	Arrived, Done float64
	DoneCut       int64
	DoneCounted   float64
}

// Place places a request queued at (unix ms) in line at now.
func (v *View) Place(t Timing, queuedAt int64, now time.Time) Place {
	cutA, cutD := t.Complete(v.readAt)
	rate := v.rate(cutD)
	// The request's own arrival is in its tenth's count: the requests before it are
	// the whole ones below A(queuedAt).
	// The workers carried on reach no further than the arrivals carried on by now:
	// on a line they keep up with, a request just queued has none ahead.
	arrivedByNow := max(float64(v.total(arrivals)), v.arrivedBefore(now.UnixMilli(), cutA))
	a, d := v.arrivedBefore(queuedAt, cutA), v.doneBy(now.UnixMilli(), cutD, arrivedByNow, rate)
	ahead := max(a-d, 0)
	p := Place{Ahead: int64(ahead), Rate: rate, Arrived: a, Done: d, DoneCut: cutD, DoneCounted: v.at(finished, cutD)}
	if rate > 0 {
		p.Wait = time.Duration((ahead + 1) / rate * float64(time.Second)) // those ahead, then its own turn
	}
	return p
}

// WantsFresher reports whether a poll of a request queued at (unix ms), placed at p
// from v, would be placed better from a read of the progress since the nodes' last
// flush landed: the arrivals before it are still being written (queuedAt past the
// complete counts), or the requests p takes as finished since the complete counts,
// carried on at the workers' rate, are a tenth of those it says are ahead or more
// (near the front, where a second of the workers is much of the place).
func (v *View) WantsFresher(t Timing, p Place, queuedAt int64, now time.Time) bool {
	cutA, cutD := t.Complete(v.readAt)
	carried := p.Rate * float64(now.UnixMilli()-cutD) / 1000
	return queuedAt > cutA || (carried > 0 && carried >= 0.1*float64(p.Ahead))
}

// Line is an event's line as a whole.
type Line struct {
	// Depth is the requests that arrived and no worker has finished: of the arrivals
	// whose counts have landed, not carried on past them.
	Depth     int64
	Rate      float64       // the requests the workers finish a second
	DrainTime time.Duration // Depth at Rate; zero when either is
	// Series is the line second by second over the view, up to the last second whose
	// counts are complete.
	Series []Point
}

// Point is one second of a line: its depth at the second's end, and the requests
// the workers finished in that second.
type Point struct {
	At    time.Time
	Depth int64
	Rate  float64
}

// Line sums up the event's line at now.
func (v *View) Line(t Timing, now time.Time) Line {
	cutA, cutD := t.Complete(v.readAt)
	cut := min(cutA, cutD)
	l := Line{Rate: v.rate(cutD)}
	if v.total(arrivals) == 0 {
		return l
	}
	landed := float64(v.total(arrivals))
	l.Depth = int64(max(landed-v.doneBy(now.UnixMilli(), cutD, landed, l.Rate), 0) + 0.5)
	if l.Rate > 0 {
		l.DrainTime = time.Duration(float64(l.Depth) / l.Rate * float64(time.Second))
	}
	for s := v.first / Slots; (s+1)*1000 <= cut; s++ { // the seconds counted in full
		end := (s + 1) * 1000
		l.Series = append(l.Series, Point{
			At:    time.UnixMilli(end),
			Depth: int64(max(v.at(arrivals, end)-v.at(finished, end), 0)), // counts of nodes that land apart
			Rate:  v.at(finished, end) - v.at(finished, end-1000),
		})
	}
	return l
}
