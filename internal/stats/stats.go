// Package stats is the arithmetic of an event's statistics: how far its outcomes
// strayed from queue order, and the summary of a set of durations. It reads nothing;
// the root package reads the requests and says what each one is to the line.
package stats

import (
	"slices"
	"time"
)

// Role is what a request is to the fairness counts.
type Role int

// The roles.
const (
	Other  Role = iota // not decided, failed, a duplicate, or a pool seat
	Winner             // won a seat
	Loser              // turned away for capacity, or left waiting for a seat
	Late               // passed unseen by the ranked admission: neither winner nor loser
)

// Entry is a request in queue order: when it was queued (unix ms) and its role.
type Entry struct {
	QueuedAt int64
	Role     Role
}

// Fairness is what Count finds: the losers ranked before at least one winner
// (Inversions) and the winners ranked after at least one loser (LateWinners), each
// with the largest gap in queue time, and the Late entries.
type Fairness struct {
	Inversions       int
	MaxGap           time.Duration
	LateWinners      int
	LateWinnerMaxGap time.Duration
	Late             int
}

// Count counts the inversions and the late winners of entries, in queue order.
// Both gaps span the same pair, the earliest loser before a winner and the latest
// winner after a loser, so they are equal.
func Count(entries []Entry) Fairness {
	var f Fairness
	gap := func(from, to int64) time.Duration { return time.Duration(to-from) * time.Millisecond }
	firstLoss := -1
	for i, e := range entries {
		switch e.Role {
		case Late:
			f.Late++
		case Loser:
			if firstLoss < 0 {
				firstLoss = i
			}
		case Winner:
			if firstLoss >= 0 {
				f.LateWinners++
				f.LateWinnerMaxGap = max(f.LateWinnerMaxGap, gap(entries[firstLoss].QueuedAt, e.QueuedAt))
			}
		}
	}
	lastWin := -1 // the winner with the latest queuedAt after the current entry
	for i := len(entries) - 1; i >= 0; i-- {
		switch e := entries[i]; e.Role {
		case Winner:
			if lastWin < 0 || e.QueuedAt > entries[lastWin].QueuedAt {
				lastWin = i
			}
		case Loser:
			if lastWin >= 0 {
				f.Inversions++
				f.MaxGap = max(f.MaxGap, gap(e.QueuedAt, entries[lastWin].QueuedAt))
			}
		}
	}
	return f
}

// Durations summarises a set of durations.
type Durations struct {
	Count         int
	P50, P95, Max time.Duration
}

// Summarise returns the count, median, 95th percentile (nearest rank) and maximum of
// ds, which it sorts.
func Summarise(ds []time.Duration) Durations {
	if len(ds) == 0 {
		return Durations{}
	}
	slices.Sort(ds)
	rank := func(p int) time.Duration { return ds[(len(ds)*p+99)/100-1] }
	return Durations{Count: len(ds), P50: rank(50), P95: rank(95), Max: ds[len(ds)-1]}
}
