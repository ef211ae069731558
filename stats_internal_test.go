package asyncevent

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fairness over requests in rank order, (queuedAt, requestId): inversions count the
// losers ranked before a winner, late winners the winners ranked after a loser.
func TestFairness(t *testing.T) {
	t.Parallel()
	const pool = 2 // the seatShard of a claim on the pool of an event with 2 capacity shards
	// row is a request queued ms milliseconds after t0Internal; its GSI2SK is built as
	// the request's put builds it.
	row := func(t *testing.T, ms int, id string, status Status, code ResultCode) statsRow {
		key, err := NewQueuedAtSortKey(MillisOf(t0Internal.Add(time.Duration(ms)*time.Millisecond)), id)
		require.NoError(t, err)
		return statsRow{GSI2SK: key.String(), Status: status, ResultCode: code, QueuedAt: key.QueuedAt()}
	}
	onShard := func(r statsRow, shard int) statsRow { r.SeatShard = &shard; return r }
	won := func(t *testing.T, ms int, id string) statsRow {
		return onShard(row(t, ms, id, StatusSucceeded, ResultSuccess), 0)
	}
	lost := func(t *testing.T, ms int, id string) statsRow {
		return row(t, ms, id, StatusRejected, ResultRejectedCapacity)
	}
	late := func(t *testing.T, ms int, id string) statsRow {
		return row(t, ms, id, StatusRejected, ResultLate)
	}
	held := func(r statsRow) statsRow { r.HoldExpiresAt = r.QueuedAt + 60_000; return r }

	for _, tc := range []struct {
		name string
		pool int // -1 for an event with holds
		rows func(t *testing.T) []statsRow
		want Fairness
	}{
		{
			name: "in queue order: every winner before every loser",
			pool: pool,
			rows: func(t *testing.T) []statsRow {
				return []statsRow{won(t, 0, "a"), won(t, 1, "b"), lost(t, 2, "c"), lost(t, 3, "d")}
			},
		},
		{
			name: "a late winner is counted once, however many losers were ranked before it",
			pool: pool,
			rows: func(t *testing.T) []statsRow {
				return []statsRow{lost(t, 0, "a"), lost(t, 1, "b"), lost(t, 2, "c"), won(t, 5, "d")}
			},
			want: Fairness{Inversions: 3, MaxGap: 5 * time.Millisecond, LateWinners: 1, LateWinnerMaxGap: 5 * time.Millisecond},
		},
		{
			name: "one loser before three winners: one inversion, three late winners",
			pool: pool,
			rows: func(t *testing.T) []statsRow {
				return []statsRow{lost(t, 0, "a"), won(t, 1, "b"), won(t, 2, "c"), won(t, 4, "d")}
			},
			want: Fairness{Inversions: 1, MaxGap: 4 * time.Millisecond, LateWinners: 3, LateWinnerMaxGap: 4 * time.Millisecond},
		},
		{
			name: "interleaved: the gap runs from the earliest loser to the latest late winner",
			pool: pool,
			rows: func(t *testing.T) []statsRow {
				return []statsRow{
					won(t, 0, "a"), lost(t, 1, "b"), lost(t, 2, "c"), won(t, 3, "d"),
					lost(t, 4, "e"), won(t, 6, "f"), lost(t, 9, "g"),
				}
			},
			want: Fairness{Inversions: 3, MaxGap: 5 * time.Millisecond, LateWinners: 2, LateWinnerMaxGap: 5 * time.Millisecond},
		},
		{
			name: "ties on queuedAt are ranked by requestId",
			pool: pool,
			rows: func(t *testing.T) []statsRow {
				// Read out of order; ranked r-a (won), r-b (lost), r-c (won): r-c is a
				// late winner 0 ms after r-b, r-a is not.
				return []statsRow{won(t, 7, "r-c"), lost(t, 7, "r-b"), won(t, 7, "r-a")}
			},
			want: Fairness{Inversions: 1, LateWinners: 1},
		},
		{
			name: "a winner on the pool is neither winner nor loser",
			pool: pool,
			rows: func(t *testing.T) []statsRow {
				// r-b's seat reached the pool after r-a was turned away; r-c's came from
				// its home shard, as r-a's would have.
				return []statsRow{lost(t, 0, "r-a"), onShard(won(t, 1, "r-b"), pool), onShard(won(t, 3, "r-c"), 1)}
			},
			want: Fairness{Inversions: 1, MaxGap: 3 * time.Millisecond, LateWinners: 1, LateWinnerMaxGap: 3 * time.Millisecond},
		},
		{
			name: "a winner on the pool alone after a loser is no late winner",
			pool: pool,
			rows: func(t *testing.T) []statsRow {
				return []statsRow{won(t, 0, "a"), lost(t, 1, "b"), onShard(won(t, 2, "c"), pool)}
			},
		},
		{
			name: "REJECTED_LATE counts in Late only: not a loser of the line",
			pool: pool,
			rows: func(t *testing.T) []statsRow {
				return []statsRow{won(t, 0, "a"), late(t, 1, "b"), won(t, 2, "c"), late(t, 3, "d"), lost(t, 4, "e")}
			},
			want: Fairness{Late: 2},
		},
		{
			name: "holds: a WAITLISTED request loses, a HELD one or one that held a seat wins",
			pool: -1,
			rows: func(t *testing.T) []statsRow {
				return []statsRow{
					held(row(t, 0, "a", StatusHeld, "")),
					row(t, 1, "b", StatusWaitlisted, ""),
					held(row(t, 2, "c", StatusHeld, "")),
					held(row(t, 3, "d", StatusRejected, ResultReleased)),
					held(row(t, 4, "e", StatusRejected, ResultHoldExpired)),
					held(onShard(row(t, 6, "f", StatusSucceeded, ResultSuccess), pool)), // no pool to leave out: the waitlist orders its seats
					row(t, 8, "g", StatusWaitlisted, ""),
				}
			},
			want: Fairness{Inversions: 1, MaxGap: 5 * time.Millisecond, LateWinners: 4, LateWinnerMaxGap: 5 * time.Millisecond},
		},
		{
			name: "nothing decided: no winner, no loser",
			pool: pool,
			rows: func(t *testing.T) []statsRow {
				return []statsRow{
					row(t, 0, "a", StatusQueued, ""), row(t, 1, "b", StatusProcessing, ""),
					row(t, 2, "c", StatusFailedFinal, ResultFailedIngestEnqueue), row(t, 3, "d", StatusRejected, ResultRejectedDuplicate),
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rows := tc.rows(t)
			slices.SortStableFunc(rows, inQueueRank) // as EventStats reads them
			got := fairness(rows, tc.pool)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, got.Inversions == 0, got.LateWinners == 0, "inversions and late winners are zero together")
			assert.Equal(t, got.MaxGap, got.LateWinnerMaxGap, "both gaps span the earliest loser before a winner and the latest winner after a loser")
		})
	}
}
