package asyncevent

import (
	"context"
	"testing"
	"time"
)

// The lateness a flush measures is Submit's, of the arrivals alone: a request
// finished is counted at its own moment, and on a node that ingests and works its
// counts must not fill the hundredth left out (review 51).
func TestReview51LatenessIsOfTheArrivals(t *testing.T) {
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
func TestReview51FlushDueProgressIdleWithADoneContext(t *testing.T) {
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
