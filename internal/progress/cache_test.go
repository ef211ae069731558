package progress

import (
	"testing"
	"time"
)

// A long event: what a node holds by tenth stays within the Span, the counts before
// it are kept as sums, and the line's depth, rate and series come out as if it held
// everything.
func TestALongEventIsBounded(t *testing.T) {
	var e Entry
	start := time.Unix(1_800_000_000, 0)
	// Two hours: 30 arrivals and 30 finished a second, read a minute at a time.
	for minute := int64(1); minute <= 120; minute++ {
		fresh := Tenths{}
		since := start.Unix() + (minute-2)*60
		for sec := max(since, start.Unix()); sec < start.Unix()+minute*60; sec++ {
			for slot := range int64(Slots) {
				fresh[sec*Slots+slot] = Tenth{3, 3}
			}
		}
		e.merge(fresh, since, start.Add(time.Duration(minute)*time.Minute))
	}
	v := e.view.Load()
	if n := len(v.cum[arrivals]); n > int(Span/(100*time.Millisecond))+1 {
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
	l := v.Line(Timing{Every: time.Second}, v.readAt)
	if len(l.Series) > int(Span/time.Second)+1 {
		t.Fatalf("series of %d seconds, want at most the span's", len(l.Series))
	}
	if l.Depth != 0 {
		t.Fatalf("depth %d, want 0", l.Depth)
	}
}

// A node whose clock runs ahead writes tenths that have not happened: a reader
// leaves them out until they come near, so its view stays within the span.
func TestAClockAheadIsLeftOutUntilItComes(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	var e Entry
	tenth := now.UnixMilli() / 100
	e.merge(Tenths{tenth: {5, 0}, tenth + 30*24*3600*10: {1, 0}}, now.Unix()-60, now)
	v := e.view.Load()
	if n := len(v.cum[arrivals]); n > int(Span/(100*time.Millisecond))+1 {
		t.Fatalf("the view holds %d tenths, beyond the span's", n)
	}
	if got := v.total(arrivals); got != 5 {
		t.Fatalf("arrivals %d, want the 5 of now", got)
	}
}
