package progress

import (
	"context"
	"testing"
	"time"
)

// A waitlist read from progress items: the requests on it queued before one are
// ahead of it, those of its own tenth by their share of it.
func TestWaitlistPlaces(t *testing.T) {
	names := NewNames("a", "d", "h", "w", "l")
	w := Waitlist{}
	w.AddItem(100, map[string]int64{"w0": 3, "l0": 1, "w5": 4, "a5": 9}, &names) // tenths 1000 (2 on) and 1005 (4 on)
	w.AddItem(101, map[string]int64{"w0": 1, "l0": 1, "w2": 2}, &names)          // 1010 (none on), 1012 (2 on)
	for _, tc := range []struct {
		name     string
		queuedAt int64
		want     int64
	}{
		{"the first tenth's first", 100_000, 0},
		{"the first tenth's last", 100_099, 0},                       // 1 other in the tenth, 99/100 of it before: 0
		{"in a tenth of four, at its middle", 100_550, 2 + 3*50/100}, // 2 before, 3 others spread
		{"after every other tenth", 101_250, 2 + 4 + 1*50/100},
		{"a tenth where none is", 100_950, 6},
	} {
		if got := w.Ahead(tc.queuedAt); got != tc.want {
			t.Errorf("%s: Ahead(%d) = %d, want %d", tc.name, tc.queuedAt, got, tc.want)
		}
	}
	if got := w.Before(101_000); got != 6 {
		t.Errorf("Before = %d, want 6", got)
	}
	w.AddItem(102, map[string]int64{"l0": 9}, &names) // more left than counted joined (a node's counts lost)
	if got := w.Ahead(102_500); got != 0 {
		t.Errorf("a waitlist counted below zero places at %d", got)
	}
}

// The waitlist's counts of a second older than Span are written, its line counts
// dropped: a waitlist lasts until its event ends.
func TestFlushWritesOldWaitlistCounts(t *testing.T) {
	now := int64(1_800_000_000_050)
	m := NewMeter(10*time.Minute, func() int64 { return now }, func(int64) {})
	stopTimer(t, m)
	old := now - Span.Milliseconds() - 60_000
	m.Arrived("sale", old)
	m.Waitlisted("sale", old, true)
	m.Waitlisted("sale", old+100, false)
	var wrote *Counts
	var dropped int
	err := m.Flush(context.Background(), 0, &Flusher{
		Write:   func(_ context.Context, _ Second, c *Counts) error { wrote = c; return nil },
		Refused: func(error) bool { return false },
		Dropped: func(context.Context, Second, error) { dropped++ },
	})
	if err != nil {
		t.Fatal(err)
	}
	if wrote == nil || wrote.line() || wrote.Joined[0] != 1 || wrote.Left[1] != 1 {
		t.Fatalf("wrote %+v", wrote)
	}
	if dropped != 1 {
		t.Fatalf("the old line counts: dropped %d times, want once", dropped)
	}
}
