package progress

import (
	"testing"
	"time"
)

// The workers' rate is their pace over the tenths the line was not empty.
func TestRate(t *testing.T) {
	tenths := Tenths{0: {1000, 0}}
	for i := int64(10); i < 100; i++ {
		c := tenths[i]
		c[1] = 6
		tenths[i] = c
	}
	v := NewView(tenths, [2]int64{}, time.UnixMilli(10_500))
	if got := v.rate(8000); got < 59 || got > 61 {
		t.Fatalf("rate %v, want 60", got)
	}
	// An idle line: 10 finished, then nobody waits for 5 s, then 6 a tenth again.
	idle := Tenths{0: {10, 0}, 1: {0, 10}, 60: {100, 6}}
	for i := int64(61); i < 70; i++ {
		idle[i] = Tenth{0, 6}
	}
	v = NewView(idle, [2]int64{}, time.UnixMilli(7000))
	if got := v.rate(7000); got < 59 || got > 101 {
		t.Fatalf("rate %v over an idle line, want the busy tenths' pace", got)
	}
	// Workers that begin late in a tenth a burst filled: their first tenth holds one
	// decision, the next ones five, their pace (50 a second), not 43.
	start := Tenths{0: {300, 1}}
	for i := int64(1); i < 6; i++ {
		start[i] = Tenth{0, 5}
	}
	v = NewView(start, [2]int64{}, time.UnixMilli(900))
	if got := v.rate(600); got != 50 {
		t.Fatalf("rate %v as the workers begin, want 50", got)
	}
	// A batch of 10 in the workers' first tenth, then nothing while 20 wait: the
	// batch is their work over the tenths since (10 a second), not a partial tenth.
	batch := Tenths{0: {30, 10}}
	v = NewView(batch, [2]int64{}, time.UnixMilli(1500))
	if got := v.rate(1000); got != 10 {
		t.Fatalf("rate %v after a batch, want 10", got)
	}
}

// A second wave after an idle spell longer than the view: the tenths before the
// wave's first decision are not its workers' first.
func TestRateOfASecondWave(t *testing.T) {
	const s = int64(1_800_000_000)
	tenths := Tenths{s * 10: {0, 0}, s*10 + 1: {300, 0}}
	for i := int64(2); i < 10; i++ {
		tenths[s*10+i] = Tenth{0, 5}
	}
	v := NewView(tenths, [2]int64{1000, 1000}, time.UnixMilli(s*1000+900))
	if got := v.rate(s*1000 + 600); got != 50 {
		t.Fatalf("rate %v of a second wave, want 50", got)
	}
}

// The tenth a burst ends in holds its arrivals in its first part only, and a
// burst's arrivals come in clumps: a request queued in a tenth is placed among its
// arrivals by the hundredth they came in, not as if they were spread over the whole
// tenth (issue 42: 33 arrivals in the first 55 ms put the last of them 16 too few
// ahead; clumps inside a tenth put requests 4–6 off at 20 ahead).
func TestArrivalsInsideATenth(t *testing.T) {
	at := int64(1_800_000_000_000) // a tenth's start
	var end, start, even, clumps Tenth
	count := func(c *Tenth, ms int64) {
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
		counts Tenth
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
		{"written without hundredths", Tenth{40}, 25, 10},
	} {
		v := NewView(Tenths{tenth: tc.counts}, [2]int64{}, time.UnixMilli(at+1000))
		if got := v.at(arrivals, at+tc.ms); got < tc.want-1.5 || got > tc.want+1.5 {
			t.Errorf("%s: %.1f arrivals before, want about %.0f", tc.name, got, tc.want)
		}
	}
}

// Past the complete counts, the arrivals are carried on at their pace over the second
// before them, and never taken as fewer than the counts that landed.
func TestArrivalsPastTheCompleteCounts(t *testing.T) {
	base := int64(1_800_000_000_000)
	tenths := Tenths{}
	for i := range int64(10) { // 100 a second up to base
		tenths[base/100-10+i] = Tenth{10, 0}
	}
	v := NewView(tenths, [2]int64{}, time.UnixMilli(base+500))
	if got := v.arrivedBefore(base+300, base); got < 129 || got > 131 {
		t.Fatalf("carried on: %.1f, want 130 (100, and 30 in 0.3 s at 100/s)", got)
	}
	// A burst after the complete counts: what landed of it stands.
	tenths[base/100+1] = Tenth{80, 0}
	v = NewView(tenths, [2]int64{}, time.UnixMilli(base+500))
	if got := v.arrivedBefore(base+300, base); got < 179 || got > 181 {
		t.Fatalf("a burst past the complete counts: %.1f, want the 180 landed", got)
	}
}
