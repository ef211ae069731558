package asyncevent

import (
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
	want := v.readAt.UnixMilli() - defaultProgressEvery.Milliseconds() - progressWriteTime.Milliseconds()
	if a, d := c.progressComplete(v); a != want || d != want {
		t.Fatalf("complete up to %d and %d, want %d", a, d, want)
	}
}
