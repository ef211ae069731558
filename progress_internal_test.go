package asyncevent

import (
	"context"
	"math"
	"testing"
	"time"
)

// The workers' rate is their pace over the tenths the line was not empty.
func TestProgressRate(t *testing.T) {
	tenths := map[int64]tenthCounts{0: {1000, 0}}
	for i := int64(10); i < 100; i++ {
		c := tenths[i]
		c[1] = 6
		tenths[i] = c
	}
	v := newProgressView(tenths, [2]int64{}, time.UnixMilli(10_500))
	if got := v.rate(8000); got < 59 || got > 61 {
		t.Fatalf("rate %v, want 60", got)
	}
	// An idle line: 10 finished, then nobody waits for 5 s, then 6 a tenth again.
	idle := map[int64]tenthCounts{0: {10, 0}, 1: {0, 10}, 60: {100, 6}}
	for i := int64(61); i < 70; i++ {
		idle[i] = tenthCounts{0, 6}
	}
	v = newProgressView(idle, [2]int64{}, time.UnixMilli(7000))
	if got := v.rate(7000); got < 59 || got > 101 {
		t.Fatalf("rate %v over an idle line, want the busy tenths' pace", got)
	}
	// Workers that begin late in a tenth a burst filled: their first tenth holds one
	// decision, the next ones five, their pace (50 a second), not 43.
	start := map[int64]tenthCounts{0: {300, 1}}
	for i := int64(1); i < 6; i++ {
		start[i] = tenthCounts{0, 5}
	}
	v = newProgressView(start, [2]int64{}, time.UnixMilli(900))
	if got := v.rate(600); got != 50 {
		t.Fatalf("rate %v as the workers begin, want 50", got)
	}
	// A batch of 10 in the workers' first tenth, then nothing while 20 wait: the
	// batch is their work over the tenths since (10 a second), not a partial tenth.
	batch := map[int64]tenthCounts{0: {30, 10}}
	v = newProgressView(batch, [2]int64{}, time.UnixMilli(1500))
	if got := v.rate(1000); got != 10 {
		t.Fatalf("rate %v after a batch, want 10", got)
	}
}

// A long event: what a node holds by tenth stays within the progressSpan, the
// counts before it are kept as sums, and the line's depth, rate and series come out
// as if it held everything.
func TestProgressOfALongEventIsBounded(t *testing.T) {
	var e progressEntry
	start := time.Unix(1_800_000_000, 0)
	// Two hours: 30 arrivals and 30 finished a second, read a minute at a time.
	for minute := int64(1); minute <= 120; minute++ {
		fresh := map[int64]tenthCounts{}
		since := start.Unix() + (minute-2)*60
		for sec := max(since, start.Unix()); sec < start.Unix()+minute*60; sec++ {
			for slot := range int64(progressSlots) {
				fresh[sec*progressSlots+slot] = tenthCounts{3, 3}
			}
		}
		e.merge(fresh, since, start.Add(time.Duration(minute)*time.Minute))
	}
	v := e.view.Load()
	if n := len(v.cum[arrivals]); n > int(progressSpan/(100*time.Millisecond))+1 {
		t.Fatalf("%d tenths held, want at most the span's", n)
	}
	if got, want := v.total(arrivals), int64(120*60*30); got != want {
		t.Fatalf("arrivals %d, want %d", got, want)
	}
	if got := v.total(finished); got != v.total(arrivals) {
		t.Fatalf("finished %d, want every arrival", got)
	}
	if got := v.rate(v.readAt.UnixMilli() - 1000); got < 29 || got > 31 {
		t.Fatalf("rate %v, want 30", got)
	}
	// A request queued before the span is placed as if queued at its start.
	if got := v.at(arrivals, start.UnixMilli()); got != float64(v.base[arrivals]) {
		t.Fatalf("arrivals before the span %v, want the sum before it %d", got, v.base[arrivals])
	}
	c := &Client{opts: Options{ProgressEvery: time.Second}}
	st := c.queueStats(v, v.readAt)
	if len(st.Series) > int(progressSpan/time.Second)+1 {
		t.Fatalf("series of %d seconds, want at most the span's", len(st.Series))
	}
	if st.Depth != 0 {
		t.Fatalf("depth %d, want 0", st.Depth)
	}
}

// A node whose clock runs ahead writes tenths that have not happened: a reader
// leaves them out until they come near, so its view stays within the span.
func TestProgressFromAClockAheadIsLeftOutUntilItComes(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	var e progressEntry
	tenth := now.UnixMilli() / 100
	e.merge(map[int64]tenthCounts{tenth: {5, 0}, tenth + 30*24*3600*10: {1, 0}}, now.Unix()-60, now)
	v := e.view.Load()
	if n := len(v.cum[arrivals]); n > int(progressSpan/(100*time.Millisecond))+1 {
		t.Fatalf("the view holds %d tenths, beyond the span's", n)
	}
	if got := v.total(arrivals); got != 5 {
		t.Fatalf("arrivals %d, want the 5 of now", got)
	}
}

// A client that counts nothing (ProgressEvery < 0) takes the writers' default period
// for when the counts are complete, never a moment after the read.
func TestProgressCompleteWithoutCounting(t *testing.T) {
	c := &Client{opts: Options{ProgressEvery: -10 * time.Second}}
	v := &progressView{readAt: time.Unix(1_800_000_000, 0)}
	want := v.readAt.UnixMilli() - 200 // the last flush 200 ms (twice the default write's lag) before
	if a, d := c.progressComplete(v); a != want-progressWriteTime.Milliseconds() || d != want {
		t.Fatalf("complete up to %d and %d, want %d and %d", a, d, want-progressWriteTime.Milliseconds(), want)
	}
}

// The tenth a burst ends in holds its arrivals in its first part only, and a
// burst's arrivals come in clumps: a request queued in a tenth is placed among its
// arrivals by the hundredth they came in, not as if they were spread over the whole
// tenth (issue 42: 33 arrivals in the first 55 ms put the last of them 16 too few
// ahead; clumps inside a tenth put requests 4–6 off at 20 ahead).
func TestProgressArrivalsInsideATenth(t *testing.T) {
	at := int64(1_800_000_000_000) // a tenth's start
	var end, start, even, clumps tenthCounts
	count := func(c *tenthCounts, ms int64) {
		c[arrivals]++
		c[firstPart+int(ms/10)]++
	}
	for i := range int64(33) {
		count(&end, i*55/33)        // the first 55 ms
		count(&start, 45+i*55/33+1) // the last 55 ms
	}
	for i := range int64(100) {
		count(&even, i)
	}
	for range 20 { // two clumps of 20, at 12 ms and at 71 ms
		count(&clumps, 12)
		count(&clumps, 71)
	}
	tenth := at / 100
	for _, tc := range []struct {
		name   string
		counts tenthCounts
		ms     int64
		want   float64
	}{
		{"burst ends: at 50 ms", end, 50, 30},
		{"burst ends: past its last", end, 80, 33},
		{"burst begins: at 50 ms", start, 50, 3},
		{"burst begins: at 75 ms", start, 75, 18},
		{"spread evenly", even, 30, 30},
		{"clumps: between them", clumps, 40, 20},
		{"clumps: before the first", clumps, 9, 0},
		{"written without hundredths", tenthCounts{40}, 25, 10},
	} {
		v := newProgressView(map[int64]tenthCounts{tenth: tc.counts}, [2]int64{}, time.UnixMilli(at+1000))
		if got := v.at(arrivals, at+tc.ms); got < tc.want-1.5 || got > tc.want+1.5 {
			t.Errorf("%s: %.1f arrivals before, want about %.0f", tc.name, got, tc.want)
		}
	}
}

// Past the complete counts, the arrivals are carried on at their pace over the second
// before them, and never taken as fewer than the counts that landed.
func TestProgressArrivalsPastTheCompleteCounts(t *testing.T) {
	base := int64(1_800_000_000_000)
	tenths := map[int64]tenthCounts{}
	for i := range int64(10) { // 100 a second up to base
		tenths[base/100-10+i] = tenthCounts{10, 0}
	}
	v := newProgressView(tenths, [2]int64{}, time.UnixMilli(base+500))
	if got := v.arrivedBefore(base+300, base); got < 129 || got > 131 {
		t.Fatalf("carried on: %.1f, want 130 (100, and 30 in 0.3 s at 100/s)", got)
	}
	// A burst after the complete counts: what landed of it stands.
	tenths[base/100+1] = tenthCounts{80, 0}
	v = newProgressView(tenths, [2]int64{}, time.UnixMilli(base+500))
	if got := v.arrivedBefore(base+300, base); got < 179 || got > 181 {
		t.Fatalf("a burst past the complete counts: %.1f, want the 180 landed", got)
	}
}

// A node's lag rises to what it measured at once and falls towards it by a fifth a
// flush; the complete moments of arrivals and of requests finished follow their own.
func TestProgressLagMeasured(t *testing.T) {
	c := &Client{opts: Options{ProgressEvery: 200 * time.Millisecond}}
	c.progress = &progressMeter{c: c}
	c.progress.measured(300, 20)
	if a, f := c.progressLags(); a != 320+progressLagMargin.Milliseconds() || f != 20+progressLagMargin.Milliseconds() {
		t.Fatalf("lags %d, %d after one flush", a, f)
	}
	c.progress.measured(0, 20)
	if a, _ := c.progressLags(); a != 320-(320-20)/5+progressLagMargin.Milliseconds() {
		t.Fatalf("arrivals' lag %d after a quick flush, want a fifth less", a)
	}
	// Read 95 ms after a flush: its writes (45 ms with the margin, taken twice for the
	// nodes slower than this one) have landed, so the requests finished are complete
	// up to it, the arrivals up to it less the time an arrival took to be counted
	// (240 ms, and the margin).
	v := &progressView{readAt: time.UnixMilli(1_800_000_000_095)}
	la, lf := c.progressLags()
	a, f := c.progressComplete(v)
	if f != 1_800_000_000_000 || a != f-(la-lf)-progressLagMargin.Milliseconds() || la-lf != 240 {
		t.Fatalf("complete up to %d (arrivals) and %d (finished)", a, f)
	}
	// Read 60 ms after it: it may still be landing on a slower node, so the flush
	// before it.
	v.readAt = time.UnixMilli(1_800_000_000_060)
	if _, f := c.progressComplete(v); f != 1_800_000_000_000-200 {
		t.Fatalf("complete up to %d before the last flush landed", f)
	}
}

// Every node flushes at the multiples of ProgressEvery on its clock, whatever the
// moment of its first count: a reader knows what a flush covered.
func TestProgressFlushesAtTheMultiples(t *testing.T) {
	for _, tc := range []struct {
		now   int64
		every time.Duration
		want  time.Duration
	}{
		{1_800_000_000_000, 200 * time.Millisecond, 200 * time.Millisecond},
		{1_800_000_000_001, 200 * time.Millisecond, 199 * time.Millisecond},
		{1_800_000_000_199, 200 * time.Millisecond, time.Millisecond},
		{1_800_000_000_250, time.Second, 750 * time.Millisecond},
	} {
		if got := untilFlush(tc.now, tc.every); got != tc.want {
			t.Errorf("untilFlush(%d, %v) = %v, want %v", tc.now, tc.every, got, tc.want)
		}
	}
	if got := lastFlush(-250, 200*time.Millisecond); got != -400 {
		t.Errorf("lastFlush(-250) = %d, want -400 (a clock before 1970)", got)
	}
	// A poll's refresh is due once the writes of the last flush have landed (twice
	// this client's lag after it).
	c := &Client{opts: Options{ProgressEvery: 200 * time.Millisecond}}
	c.progress = &progressMeter{c: c}
	c.progress.measured(0, 20) // lands 45 ms after its flush, with the margin
	if got := c.landedAt(time.UnixMilli(1_800_000_000_095)); !got.Equal(time.UnixMilli(1_800_000_000_090)) {
		t.Fatalf("landed at %v, want 90 ms after the flush", got.UnixMilli())
	}
	if got := c.landedAt(time.UnixMilli(1_800_000_000_080)); !got.Equal(time.UnixMilli(1_800_000_000_090 - 200)) {
		t.Fatalf("landed at %v, want the flush before's", got.UnixMilli())
	}
}

// A node up to twice as slow as the reader, whose last flush has not landed by the
// read: the counts are taken as complete up to the flush before, not read as stopped.
func TestProgressASlowNodesLastFlush(t *testing.T) {
	const F = int64(1_800_000_000_000)
	c := &Client{opts: Options{ProgressEvery: 200 * time.Millisecond}}
	c.progress = &progressMeter{c: c}
	c.progress.measured(0, 20) // lags 45 ms with the margin
	start, burst, readAt := F-5000, int64(330), F+45
	tenths := map[int64]tenthCounts{start/100 - 1: {burst, 0}}
	for t := start / 100; t < F/100; t++ {
		n := tenths[t]
		n[finished] += 3 // a node whose flush at F landed
		if (t+1)*100 <= F-200 {
			n[finished] += 3 // a node whose flush at F lands at F+50
		}
		tenths[t] = n
	}
	v := newProgressView(tenths, [2]int64{}, time.UnixMilli(readAt))
	e := c.estimate(v, EpochMillis(start), time.UnixMilli(readAt))
	if truth := float64(burst) - 60*float64(readAt-start)/1000; math.Abs(float64(e.Ahead)-truth) > 2 {
		t.Fatalf("ahead %d (rate %.1f), truly %.1f", e.Ahead, e.Rate, truth)
	}
}

// Workers that stop: the estimate carries them on from the last flush landed, so a
// stall is told within ProgressEvery and twice the lag of its start, not later.
func TestProgressAStallInTheLastPeriod(t *testing.T) {
	const F = int64(1_800_000_000_000)
	c := &Client{opts: Options{ProgressEvery: 200 * time.Millisecond}}
	c.progress = &progressMeter{c: c}
	c.progress.measured(0, 20) // lags 45 ms with the margin
	start := F - 5000
	tenths := map[int64]tenthCounts{start/100 - 1: {400, 0}}
	for t := start / 100; t < (F-200)/100; t++ {
		tenths[t] = tenthCounts{0, 5} // 50 a second, then nothing from F − 200
	}
	readAt := F + 195
	v := newProgressView(tenths, [2]int64{}, time.UnixMilli(readAt))
	e := c.estimate(v, EpochMillis(start), time.UnixMilli(readAt))
	truth := 400 - 50*4.8
	if bound := 50 * (0.2 + 2*0.045); float64(e.Ahead) < truth-bound {
		t.Fatalf("ahead %d (rate %.1f), truly %.0f: the stall hidden beyond %.1f", e.Ahead, e.Rate, truth, bound)
	}
}

// A second wave after an idle spell longer than the view: the tenths before the
// wave's first decision are not its workers' first.
func TestProgressRateOfASecondWave(t *testing.T) {
	const s = int64(1_800_000_000)
	tenths := map[int64]tenthCounts{s * 10: {0, 0}, s*10 + 1: {300, 0}}
	for i := int64(2); i < 10; i++ {
		tenths[s*10+i] = tenthCounts{0, 5}
	}
	v := newProgressView(tenths, [2]int64{1000, 1000}, time.UnixMilli(s*1000+900))
	if got := v.rate(s*1000 + 600); got != 50 {
		t.Fatalf("rate %v of a second wave, want 50", got)
	}
}

// An explicit flush with nothing pending (the timer's, after FlushProgress took the
// counts) measures nothing: the lags stay what the writes took.
func TestProgressEmptyFlushesMeasureNothing(t *testing.T) {
	c := &Client{opts: Options{ProgressEvery: 200 * time.Millisecond, Clock: time.Now}}
	c.progress = newProgressMeter(c, 200*time.Millisecond)
	c.progress.measured(30, 40)
	la, lf := c.progressLags()
	for range 3 {
		if err := c.FlushProgress(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if a, f := c.progressLags(); a != la || f != lf {
		t.Fatalf("lags %d/%d after empty flushes, were %d/%d", a, f, la, lf)
	}
}

// On a steady line the workers keep up with, a request just queued has none ahead
// and the line no depth: the workers carried on past the counts reach no further
// than the arrivals carried on (review 50).
func TestProgressALineTheWorkersKeepUpWith(t *testing.T) {
	base := int64(1_800_000_000_000)
	tenths := map[int64]tenthCounts{}
	for i := range int64(32) { // 100 a second arrived and decided, landed up to base+200
		tenths[base/100-30+i] = tenthCounts{10, 10}
	}
	c := &Client{opts: Options{ProgressEvery: 200 * time.Millisecond}}
	now := time.UnixMilli(base + 400)
	v := newProgressView(tenths, [2]int64{}, now)
	if e := c.estimate(v, EpochMillis(now.UnixMilli()-10), now); e.Ahead > 1 {
		t.Errorf("a request queued 10 ms ago is told %d ahead, none truly are", e.Ahead)
	}
	if st := c.queueStats(v, now); st.Depth > 1 {
		t.Errorf("depth %d of a line the workers keep up with", st.Depth)
	}
}

// Once a burst has ended and its counts have landed, the depth counts no arrival
// that never came: it is of the counts landed, not carried on (review 50).
func TestProgressDepthAfterABurst(t *testing.T) {
	base := int64(1_800_000_000_000)
	tenths := map[int64]tenthCounts{}
	for i := range int64(10) { // 1,000 a second, ended at base
		tenths[base/100-10+i] = tenthCounts{100, 0}
	}
	for i := range int64(5) { // then the workers at 50 a second, and no arrival
		tenths[base/100+i] = tenthCounts{0, 5}
	}
	c := &Client{opts: Options{ProgressEvery: 200 * time.Millisecond}}
	now := time.UnixMilli(base + 600)
	v := newProgressView(tenths, [2]int64{}, now)
	st := c.queueStats(v, now)
	if truth := v.total(arrivals) - v.total(finished) - 10; float64(st.Depth) > 1.05*float64(truth) { // 10 more decided by now
		t.Fatalf("depth %d, true about %d", st.Depth, truth)
	}
}

// A flush's lateness leaves out its latest hundredth when it counted a hundred or
// more: one put retried for seconds does not move the complete arrivals back.
func TestProgressLatenessLeavesOutTheLatestHundredth(t *testing.T) {
	var l lateness
	for range 10 {
		l.add(35)
	}
	l.add(2000)
	if got := l.high(); got != 2000 {
		t.Fatalf("11 counts: %d, want the latest, 2000", got)
	}
	for range 189 {
		l.add(35)
	}
	if got := l.high(); got != 40 {
		t.Fatalf("200 counts, one 2 s late: %d, want 40 (the hundredth that holds the 99th percentile)", got)
	}
	for range 2 {
		l.add(1500)
	}
	if got := l.high(); got != 2000 {
		t.Fatalf("3 of 202 late: %d, want the latest", got)
	}
	var quick lateness
	for range 150 {
		quick.add(3)
	}
	if got := quick.high(); got != 3 {
		t.Fatalf("%d, want the latest count's 3 (within its hundredth)", got)
	}
}

// Review 41: "Parse… refuses text no builder could have produced". NewProgressKey
// writes the second as 10 digits; ParseProgressKey reads it with strconv.ParseInt,
// which takes a leading '+', so T#+000000001 parses (and Key.Entity calls it a
// Progress item) though no builder writes it: the key rebuilt from it differs.
func TestParseProgressKeyRefusesASign(t *testing.T) {
	key := Key{PK: "EVENT#e#PROGRESS#0", SK: "T#+000000001"}
	if k, err := ParseProgressKey(key); err == nil {
		t.Errorf("ParseProgressKey(%v) accepted it, rebuilt as %v", key, k.Key())
	}
	if kind, err := key.Entity(); err == nil {
		t.Errorf("Key.Entity(%v) = %s, want ErrMalformedKey", key, kind)
	}
}

// The lateness a flush measures is Submit's, of the arrivals alone: a request
// finished is counted at its own moment, and on a node that ingests and works its
// counts must not fill the hundredth left out (review 51).
func TestLatenessIsOfTheArrivals(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_050)
	c := &Client{opts: Options{Clock: func() time.Time { return now }}}
	m := newProgressMeter(c, 10*time.Minute)
	defer func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.timer != nil {
			m.timer.Stop()
		}
	}()
	for range 200 {
		m.reached("e", MillisOf(now)) // the workers' decisions, counted as made
	}
	for range 2 {
		m.arrived("e", MillisOf(now)-80) // every arrival's puts took 80 ms
	}
	m.mu.Lock()
	got := m.late.high()
	m.mu.Unlock()
	if got < 80 {
		t.Fatalf("lateness %d ms; every arrival of the flush came 80 ms late", got)
	}
}

// With nothing pending and no flush under way, FlushDueProgress and FlushProgress
// have nothing to write or wait for, whatever their context (review 51).
func TestFlushDueProgressIdleWithADoneContext(t *testing.T) {
	c := &Client{opts: Options{Clock: time.Now}}
	c.progress = newProgressMeter(c, 10*time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 100 {
		if err := c.FlushDueProgress(ctx); err != nil {
			t.Fatalf("call %d: nothing pending, no flush under way: %v", i, err)
		}
		if err := c.FlushProgress(ctx); err != nil {
			t.Fatalf("call %d: FlushProgress, nothing pending: %v", i, err)
		}
	}
}
