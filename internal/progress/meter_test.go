package progress

import (
	"context"
	"testing"
	"time"
)

// Every node flushes at the multiples of its period on its clock, whatever the
// moment of its first count: a reader knows what a flush covered.
func TestFlushesAtTheMultiples(t *testing.T) {
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
}

// stopTimer stops m's timer, if armed, at the test's end: its flush never runs.
func stopTimer(t *testing.T, m *Meter) {
	t.Cleanup(func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.timer != nil {
			m.timer.Stop()
		}
	})
}

// A flush takes every count pending, in the slot and hundredth of its moment; a
// done context leaves them pending, unsent; a timer whose counts a flush took takes
// nothing; counts put back after a flush in the multiple are due at the next one.
func TestTakeAndPutBack(t *testing.T) {
	now := int64(1_800_000_000_050)
	every := 10 * time.Minute
	m := NewMeter(every, func() int64 { return now }, func(int64) {})
	stopTimer(t, m)
	m.Arrived("e", now-10) // 1_800_000_000_040: slot 0, hundredth 4
	m.Reached("e", now+200)
	m.Reached("e", 0) // no moment: not counted
	gen := m.gen
	if !m.Due() {
		t.Fatal("no flush took counts since the last multiple: due at once")
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := m.Take(done, 0); err == nil || len(m.pending) != 1 {
		t.Fatalf("a done context: %v, %d seconds pending", err, len(m.pending))
	}
	batch, late, err := m.Take(context.Background(), 0)
	k := Second{EventID: "e", Second: now / 1000}
	if err != nil || len(batch) != 1 || late != 10 {
		t.Fatalf("took %d seconds, %d ms late, %v", len(batch), late, err)
	}
	if p := batch[k]; p.Arrived[0] != 1 || p.Hundredths[4] != 1 || p.Reached[2] != 1 {
		t.Fatalf("counts %+v", *p)
	}
	if again, _, _ := m.Take(context.Background(), gen); again != nil {
		t.Fatalf("the timer took %d seconds a flush had taken", len(again))
	}
	m.PutBack(k, batch[k])
	m.PutBack(k, batch[k])
	if p := m.pending[k]; p.Arrived[0] != 2 || p.Reached[2] != 2 || !m.armed || m.gen == gen {
		t.Fatalf("put back: %+v, armed %v", *p, m.armed)
	}
	if m.Due() {
		t.Fatal("put back after a flush in this multiple: due only at the next")
	}
	now += every.Milliseconds()
	if !m.Due() {
		t.Fatal("not due at its multiple")
	}
}

// A flush's lateness leaves out its latest hundredth when it counted a hundred or
// more: one put retried for seconds does not move the complete arrivals back.
func TestLatenessLeavesOutTheLatestHundredth(t *testing.T) {
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

// The lateness a flush measures is Submit's, of the arrivals alone: a request
// finished is counted at its own moment, and on a node that ingests and works its
// counts must not fill the hundredth left out.
func TestLatenessIsOfTheArrivals(t *testing.T) {
	now := int64(1_800_000_000_050)
	m := NewMeter(10*time.Minute, func() int64 { return now }, func(int64) {})
	stopTimer(t, m)
	for range 200 {
		m.Reached("e", now) // the workers' decisions, counted as made
	}
	for range 2 {
		m.Arrived("e", now-80) // every arrival's puts took 80 ms
	}
	m.mu.Lock()
	got := m.late.high()
	m.mu.Unlock()
	if got < 80 {
		t.Fatalf("lateness %d ms; every arrival of the flush came 80 ms late", got)
	}
}
