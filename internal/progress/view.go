package progress

import "time"

// View is what a node read of one event's progress: the counts by tenth of a second
// over the last Span at most, cumulative, on top of the counts before it. A View is
// not changed once made: polls share it.
type View struct {
	readAt time.Time
	first  int64          // the first tenth held (unix tenths of a second)
	base   [2]int64       // the arrivals and the requests reached before first
	cum    [2][]int64     // cum[k][i]: the count k (arrived, reached) before tenth first+i+1
	parts  [][Parts]int64 // parts[i]: tenth first+i's arrivals by hundredth
}

// NewView makes the cumulative view of the counts by tenth, on top of the counts
// before them (base: the arrivals and the requests reached), read at readAt.
func NewView(tenths Tenths, base [2]int64, readAt time.Time) *View {
	v := &View{readAt: readAt, base: base, first: readAt.UnixMilli() / 100}
	if len(tenths) == 0 {
		return v
	}
	first, last := int64(-1), int64(-1)
	for t := range tenths {
		if first < 0 || t < first {
			first = t
		}
		last = max(last, t)
	}
	v.first = first
	n := int(last-first) + 1
	sum := base
	for k := range v.cum {
		v.cum[k] = make([]int64, n)
	}
	v.parts = make([][Parts]int64, n)
	for i := range n {
		c := tenths[first+int64(i)]
		for k := range v.cum {
			sum[k] += c[k]
			v.cum[k][i] = sum[k]
		}
		v.parts[i] = [Parts]int64(c[firstPart:])
	}
	return v
}

// ReadAt returns when the counts of the view were read.
func (v *View) ReadAt() time.Time { return v.readAt }

// total returns the count k over the whole event.
func (v *View) total(k int) int64 {
	if n := len(v.cum[k]); n > 0 {
		return v.cum[k][n-1]
	}
	return v.base[k]
}

// at returns the count k before time t (unix milliseconds): every tenth before t's,
// and the part of t's own tenth up to t (within).
func (v *View) at(k int, t int64) float64 {
	cum := v.cum[k]
	i := int(t/100 - v.first)
	switch {
	case len(cum) == 0 || i < 0:
		return float64(v.base[k])
	case i >= len(cum):
		return float64(cum[len(cum)-1])
	}
	before := v.base[k]
	if i > 0 {
		before = cum[i-1]
	}
	return float64(before) + v.within(k, i, t%100, cum[i]-before)*float64(cum[i]-before)
}

// within returns the share of tenth i's n counts k that came before millisecond ms
// of it. The requests reached are taken as spread evenly over the tenth; the
// arrivals by the hundredth they came in, spread evenly over it: a burst's tenth
// holds tens of arrivals, not evenly (the tenth a burst ends in is filled only in
// its first part), and a request queued there is placed among them by that. A tenth
// written without its hundredths (their sum is not its count) is taken as even.
func (v *View) within(k, i int, ms int64, n int64) float64 {
	even := float64(ms) / 100
	if k != arrivals || n <= 0 || v.parts == nil {
		return even
	}
	const width = 100 / Parts // ms
	var sum, before int64
	for h, c := range v.parts[i] {
		sum += c
		if int64(h) < ms/width {
			before += c
		}
	}
	if sum != n {
		return even
	}
	part := float64(v.parts[i][ms/width]) * float64(ms%width) / width
	return (float64(before) + part) / float64(n)
}

// arrivedBefore returns A(q), the requests queued before q (unix ms), when the
// view's counts of arrivals are complete up to cut. Past cut some nodes' counts have
// not landed yet: the arrivals there are carried on at their pace over the second
// before cut, as the requests finished are at the workers' rate, and never taken as
// fewer than the counts that landed already (a burst that began after that second).
func (v *View) arrivedBefore(q, cut int64) float64 {
	if q <= cut {
		return v.at(arrivals, q)
	}
	complete := v.at(arrivals, cut)
	pace := (complete - v.at(arrivals, cut-paceWindow.Milliseconds())) / float64(paceWindow.Milliseconds())
	return complete + max(v.at(arrivals, q)-complete, pace*float64(q-cut))
}

// paceWindow is the span before the complete counts over which arrivedBefore
// measures the pace of arrivals it carries on.
const paceWindow = time.Second

// rateWindow is the span the workers' rate is measured over.
const rateWindow = 3 * time.Second

// rate returns the requests finished a second over the tenths of the rateWindow
// before cut (unix ms), from the first request finished, in which the line was not
// empty: the workers' pace while they had work, not diluted by the moments they
// waited for it. Zero when the line had less than 0.3 s of work in the window.
func (v *View) rate(cut int64) float64 {
	from := cut/100 - rateWindow.Milliseconds()/100
	began := v.firstDone() / 100
	var busy, done, first float64
	counted := false // the tenth the workers began in is among the busy ones
	for t := max(from, began); (t+1)*100 <= cut; t++ {
		start, end := t*100, (t+1)*100
		if v.at(arrivals, start)-v.at(finished, start) < 1 && v.at(finished, end) == v.at(finished, start) {
			continue // nobody waited, and nobody was finished
		}
		n := v.at(finished, end) - v.at(finished, start)
		busy, done = busy+1, done+n
		if t == began {
			first, counted = n, true
		}
	}
	if busy < 3 {
		return 0
	}
	// The workers began inside the window: the tenth of their first decision holds
	// only the part after it. Fewer decisions than their later tenths' mean there
	// dilute their pace (read 5–10% low for their first 3 s), so it is left out; as
	// many or more (a batch, then nothing) are their work, and stay in.
	if counted && began >= from && busy > 3 {
		if later := (done - first) / (busy - 1); first < later {
			return later * 10
		}
	}
	return done / (busy / 10)
}

// doneBy returns the requests reached by now (unix ms): the complete counts up to
// cut, carried on at rate, no more than the arrivals by now (arrived).
func (v *View) doneBy(now, cut int64, arrived, rate float64) float64 {
	d := v.at(finished, cut) + rate*float64(max(now-cut, 0))/1000
	return min(d, arrived)
}

// firstDone returns the start of the first tenth with a request finished (unix ms),
// the view's start when one was before it, or the view's end when none.
func (v *View) firstDone() int64 {
	done := v.cum[finished]
	if v.base[finished] > 0 {
		return v.first * 100
	}
	for i, d := range done {
		if d > 0 {
			return (v.first + int64(i)) * 100
		}
	}
	return (v.first + int64(len(done))) * 100
}
