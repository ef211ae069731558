package progress

import (
	"context"
	"testing"
	"time"
)

// A waitlist read from its items: the requests on it queued before one are ahead of
// it, those of its own second by their expected share of it.
func TestWaitlistPlaces(t *testing.T) {
	names := NewWaitNames("w", "l")
	if names.Joined[0] != "w00" || names.Left[59] != "l59" {
		t.Fatalf("names %v %v", names.Joined, names.Left)
	}
	w := Waitlist{}
	w.AddItem(600, map[string]int64{"w00": 3, "l00": 1, "w05": 4, "a5": 9}, &names) // seconds 600 (2 on) and 605 (4 on)
	w.AddItem(660, map[string]int64{"w00": 1, "l00": 1, "w02": 2}, &names)          // 660 (none on), 662 (2 on)
	for _, tc := range []struct {
		name     string
		queuedAt int64
		want     int64
	}{
		{"the first second's first", 600_000, 0},
		{"the first second's last", 600_999, 1},                // the second of two
		{"in a second of four, at its middle", 605_500, 2 + 2}, // 2 before, the third of four
		{"after every other second", 662_250, 2 + 4 + 0},
		{"a second where none is", 609_950, 6},
	} {
		if got := w.Ahead(tc.queuedAt); got != tc.want {
			t.Errorf("%s: Ahead(%d) = %d, want %d", tc.name, tc.queuedAt, got, tc.want)
		}
	}
	if got := w.Before(661_000); got != 6 {
		t.Errorf("Before = %d, want 6", got)
	}
	w.AddItem(540, map[string]int64{"l00": 9}, &names) // more left than counted joined (a node's counts lost)
	if got := w.Ahead(662_250); got != 0 {
		t.Errorf("a waitlist counted below zero places at %d", got)
	}
}

// A waitlist's counts are kept by minute, apart from the line's, and written
// however old their second: a waitlist lasts until its event ends.
func TestFlushWritesOldWaitlistCounts(t *testing.T) {
	now := int64(1_800_000_000_050)
	m := NewMeter(10*time.Minute, func() int64 { return now }, func(int64) {})
	stopTimer(t, m)
	old := now - Span.Milliseconds() - 60_000
	m.Arrived("sale", old)
	m.Waitlisted("sale", old, true)
	m.Waitlisted("sale", old+1000, false)
	wrote := map[Second]*Counts{}
	var dropped []Second
	err := m.Flush(context.Background(), 0, &Flusher{
		Write:   func(_ context.Context, k Second, c *Counts) error { wrote[k] = c; return nil },
		Refused: func(error) bool { return false },
		Dropped: func(_ context.Context, k Second, _ error) { dropped = append(dropped, k) },
	})
	if err != nil {
		t.Fatal(err)
	}
	minute := Second{EventID: "sale", Second: old / 60_000 * 60, Waitlist: true}
	c := wrote[minute]
	if len(wrote) != 1 || c == nil || c.Joined[old/1000%60] != 1 || c.Left[(old/1000+1)%60] != 1 {
		t.Fatalf("wrote %v", wrote)
	}
	if len(dropped) != 1 || dropped[0].Waitlist {
		t.Fatalf("dropped %v: want the old second of the line alone", dropped)
	}
}
