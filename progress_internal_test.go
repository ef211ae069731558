package asyncevent

import (
	"context"
	"testing"
	"time"
)

// A client that counts nothing (ProgressEvery < 0) takes the writers' default period
// for when the counts are complete, never a moment after the read.
func TestProgressCompleteWithoutCounting(t *testing.T) {
	c := &Client{opts: Options{ProgressEvery: -10 * time.Second}}
	readAt := time.Unix(1_800_000_000, 0)
	want := readAt.UnixMilli() - 200                                             // the last flush 200 ms (twice the default write's lag) before
	if a, d := c.progressTiming().Complete(readAt); a != want-100 || d != want { // arrivals: less the default write's lag
		t.Fatalf("complete up to %d and %d, want %d and %d", a, d, want-100, want)
	}
}

// An explicit flush with nothing pending (the timer's, after FlushProgress took the
// counts) measures nothing: the lags stay what the writes took.
func TestProgressEmptyFlushesMeasureNothing(t *testing.T) {
	c := &Client{opts: Options{ProgressEvery: 200 * time.Millisecond, Clock: time.Now}}
	c.progress = newProgressMeter(c, 200*time.Millisecond)
	c.progress.meter.Measured(30, 40)
	timing := c.progressTiming()
	if timing.Lag != 70 || timing.WriteLag != 40 {
		t.Fatalf("lags %d/%d, want the meter's 70/40", timing.Lag, timing.WriteLag)
	}
	for range 3 {
		if err := c.FlushProgress(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if after := c.progressTiming(); after != timing {
		t.Fatalf("lags %d/%d after empty flushes, were %d/%d", after.Lag, after.WriteLag, timing.Lag, timing.WriteLag)
	}
}

// Parse… refuses text no builder could have produced. NewProgressKey
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

// With nothing pending and no flush under way, FlushDueProgress and FlushProgress
// have nothing to write or wait for, whatever their context.
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
