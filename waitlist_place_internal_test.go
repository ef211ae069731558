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

// An entry's place on its pre-queue's waitlist: by its drawn place, less the seats
// the serve gave and the waitlist was served, kept within what the counts allow.
func TestEntryAhead(t *testing.T) {
	for _, tc := range []struct {
		name                               string
		p, n, entries, seats, served, want int64
	}{
		{"after the serve: 10 entries, 3 seats, the 5th", 5, 10, 7, 3, 0, 1},
		{"during the serve: those after it not yet waitlisted", 5, 10, 2, 3, 0, 1},
		{"a seat given back served the 4th", 5, 10, 6, 3, 1, 0},
		{"one before it released: one too many", 6, 10, 5, 3, 0, 2},
		{"every other entry taken: the counts cap it", 9, 10, 2, 3, 0, 1},
		{"the first waitlisted", 4, 10, 7, 3, 0, 0},
		{"counts lost: never below zero", 9, 10, 0, 3, 0, 0},
	} {
		if got := entryAhead(tc.p, tc.n, tc.entries, tc.seats, tc.served); got != tc.want {
			t.Errorf("%s: entryAhead = %d, want %d", tc.name, got, tc.want)
		}
	}
}
