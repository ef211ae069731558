package asyncevent

import "testing"

// The moment by which a request is counted on the waitlist: a pre-queue's entries in
// a second before the start's, whatever the start's milliseconds, so that every
// request queued from the start on, in the start's own second too, is counted after
// them.
func TestWaitlistAt(t *testing.T) {
	e := EventSettings{EventType: FirstCome, PrequeueOpensAt: 1_000_000, StartsAt: 2_000_250}
	for _, tc := range []struct {
		queuedAt, want EpochMillis
	}{
		{1_500_000, 1_500_000}, // an entry in a second before the start's
		{2_000_100, 1_999_999}, // an entry in the start's second: into the second before
		{2_000_250, 2_000_250}, // from the start on: as queued
		{2_000_300, 2_000_300},
	} {
		if got := e.waitlistAt(tc.queuedAt); got != tc.want {
			t.Errorf("waitlistAt(%d) = %d, want %d", tc.queuedAt, got, tc.want)
		}
	}
	plain := EventSettings{EventType: FirstCome}
	if got := plain.waitlistAt(2_000_100); got != 2_000_100 {
		t.Errorf("an event without a pre-queue: %d", got)
	}
}
