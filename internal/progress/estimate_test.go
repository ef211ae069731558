package progress

import (
	"math"
	"testing"
	"time"
)

// newTestMeter returns a meter at every whose clock stands at 0 and whose timer
// flushes nothing: for its lags.
func newTestMeter(every time.Duration) *Meter {
	return NewMeter(every, func() int64 { return 0 }, func(int64) {})
}

// timingOf is the Timing of a reader whose meter m flushes at every.
func timingOf(m *Meter, every time.Duration) Timing {
	t := Timing{Every: every}
	t.Lag, t.WriteLag = m.Lags()
	return t
}

// A reader that measured no lag (it counts nothing) takes writeTime for every write,
// never a moment after the read.
func TestCompleteWithoutLags(t *testing.T) {
	readAt := time.Unix(1_800_000_000, 0)
	want := readAt.UnixMilli() - 200 // the last flush 200 ms (twice writeTime) before
	if a, d := (Timing{Every: 200 * time.Millisecond}).Complete(readAt); a != want-writeTime.Milliseconds() || d != want {
		t.Fatalf("complete up to %d and %d, want %d and %d", a, d, want-writeTime.Milliseconds(), want)
	}
}

// A node's lag rises to what it measured at once and falls towards it by a fifth a
// flush; the complete moments of arrivals and of requests finished follow their own.
func TestLagMeasured(t *testing.T) {
	every := 200 * time.Millisecond
	m := newTestMeter(every)
	m.Measured(300, 20)
	if a, f := timingOf(m, every).lags(); a != 320+lagMargin.Milliseconds() || f != 20+lagMargin.Milliseconds() {
		t.Fatalf("lags %d, %d after one flush", a, f)
	}
	m.Measured(0, 20)
	if a, _ := timingOf(m, every).lags(); a != 320-(320-20)/5+lagMargin.Milliseconds() {
		t.Fatalf("arrivals' lag %d after a quick flush, want a fifth less", a)
	}
	// Read 95 ms after a flush: its writes (45 ms with the margin, taken twice for the
	// nodes slower than this one) have landed, so the requests finished are complete
	// up to it, the arrivals up to it less the time an arrival took to be counted
	// (240 ms, and the margin).
	timing := timingOf(m, every)
	la, lf := timing.lags()
	a, f := timing.Complete(time.UnixMilli(1_800_000_000_095))
	if f != 1_800_000_000_000 || a != f-(la-lf)-lagMargin.Milliseconds() || la-lf != 240 {
		t.Fatalf("complete up to %d (arrivals) and %d (finished)", a, f)
	}
	// Read 60 ms after it: it may still be landing on a slower node, so the flush
	// before it.
	if _, f := timing.Complete(time.UnixMilli(1_800_000_000_060)); f != 1_800_000_000_000-200 {
		t.Fatalf("complete up to %d before the last flush landed", f)
	}
}

// A poll's refresh is due once the writes of the last flush have landed (twice the
// reader's lag after it).
func TestLandedAt(t *testing.T) {
	every := 200 * time.Millisecond
	m := newTestMeter(every)
	m.Measured(0, 20) // lands 45 ms after its flush, with the margin
	timing := timingOf(m, every)
	if got := timing.LandedAt(time.UnixMilli(1_800_000_000_095)); !got.Equal(time.UnixMilli(1_800_000_000_090)) {
		t.Fatalf("landed at %v, want 90 ms after the flush", got.UnixMilli())
	}
	if got := timing.LandedAt(time.UnixMilli(1_800_000_000_080)); !got.Equal(time.UnixMilli(1_800_000_000_090 - 200)) {
		t.Fatalf("landed at %v, want the flush before's", got.UnixMilli())
	}
}

// A node up to twice as slow as the reader, whose last flush has not landed by the
// read: the counts are taken as complete up to the flush before, not read as stopped.
func TestASlowNodesLastFlush(t *testing.T) {
	const F = int64(1_800_000_000_000)
	every := 200 * time.Millisecond
	m := newTestMeter(every)
	m.Measured(0, 20) // lags 45 ms with the margin
	start, burst, readAt := F-5000, int64(330), F+45
	tenths := Tenths{start/100 - 1: {burst, 0}}
	for t := start / 100; t < F/100; t++ {
		n := tenths[t]
		n[finished] += 3 // a node whose flush at F landed
		if (t+1)*100 <= F-200 {
			n[finished] += 3 // a node whose flush at F lands at F+50
		}
		tenths[t] = n
	}
	v := NewView(tenths, [2]int64{}, time.UnixMilli(readAt))
	p := v.Place(timingOf(m, every), start, time.UnixMilli(readAt))
	if truth := float64(burst) - 60*float64(readAt-start)/1000; math.Abs(float64(p.Ahead)-truth) > 2 {
		t.Fatalf("ahead %d (rate %.1f), truly %.1f", p.Ahead, p.Rate, truth)
	}
}

// Workers that stop: the estimate carries them on from the last flush landed, so a
// stall is told within the period and twice the lag of its start, not later.
func TestAStallInTheLastPeriod(t *testing.T) {
	const F = int64(1_800_000_000_000)
	every := 200 * time.Millisecond
	m := newTestMeter(every)
	m.Measured(0, 20) // lags 45 ms with the margin
	start := F - 5000
	tenths := Tenths{start/100 - 1: {400, 0}}
	for t := start / 100; t < (F-200)/100; t++ {
		tenths[t] = Tenth{0, 5} // 50 a second, then nothing from F − 200
	}
	readAt := F + 195
	v := NewView(tenths, [2]int64{}, time.UnixMilli(readAt))
	p := v.Place(timingOf(m, every), start, time.UnixMilli(readAt))
	truth := 400 - 50*4.8
	if bound := 50 * (0.2 + 2*0.045); float64(p.Ahead) < truth-bound {
		t.Fatalf("ahead %d (rate %.1f), truly %.0f: the stall hidden beyond %.1f", p.Ahead, p.Rate, truth, bound)
	}
}

// On a steady line the workers keep up with, a request just queued has none ahead
// and the line no depth: the workers carried on past the counts reach no further
// than the arrivals carried on.
func TestALineTheWorkersKeepUpWith(t *testing.T) {
	base := int64(1_800_000_000_000)
	tenths := Tenths{}
	for i := range int64(32) { // 100 a second arrived and decided, landed up to base+200
		tenths[base/100-30+i] = Tenth{10, 10}
	}
	timing := Timing{Every: 200 * time.Millisecond}
	now := time.UnixMilli(base + 400)
	v := NewView(tenths, [2]int64{}, now)
	if p := v.Place(timing, now.UnixMilli()-10, now); p.Ahead > 1 {
		t.Errorf("a request queued 10 ms ago is told %d ahead, none truly are", p.Ahead)
	}
	if l := v.Line(timing, now); l.Depth > 1 {
		t.Errorf("depth %d of a line the workers keep up with", l.Depth)
	}
}

// Once a burst has ended and its counts have landed, the depth counts no arrival
// that never came: it is of the counts landed, not carried on.
func TestDepthAfterABurst(t *testing.T) {
	base := int64(1_800_000_000_000)
	tenths := Tenths{}
	for i := range int64(10) { // 1,000 a second, ended at base
		tenths[base/100-10+i] = Tenth{100, 0}
	}
	for i := range int64(5) { // then the workers at 50 a second, and no arrival
		tenths[base/100+i] = Tenth{0, 5}
	}
	now := time.UnixMilli(base + 600)
	v := NewView(tenths, [2]int64{}, now)
	l := v.Line(Timing{Every: 200 * time.Millisecond}, now)
	if truth := v.total(arrivals) - v.total(finished) - 10; float64(l.Depth) > 1.05*float64(truth) { // 10 more decided by now
		t.Fatalf("depth %d, true about %d", l.Depth, truth)
	}
}
