package stats

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestCount(t *testing.T) {
	t.Parallel()
	w := func(ms int64) Entry { return Entry{QueuedAt: ms, Role: Winner} }
	l := func(ms int64) Entry { return Entry{QueuedAt: ms, Role: Loser} }
	for _, tc := range []struct {
		name    string
		entries []Entry
		want    Fairness
	}{
		{name: "none", want: Fairness{}},
		{name: "in order", entries: []Entry{w(0), w(1), l(2), l(3)}},
		{name: "three losers before one winner", entries: []Entry{l(0), l(1), l(2), w(5)},
			want: Fairness{Inversions: 3, MaxGap: 5 * time.Millisecond, LateWinners: 1, LateWinnerMaxGap: 5 * time.Millisecond}},
		{name: "one loser before three winners", entries: []Entry{l(0), w(1), w(2), w(4)},
			want: Fairness{Inversions: 1, MaxGap: 4 * time.Millisecond, LateWinners: 3, LateWinnerMaxGap: 4 * time.Millisecond}},
		{name: "late and other entries are neither", entries: []Entry{w(0), {QueuedAt: 1, Role: Late}, {QueuedAt: 2, Role: Other}, {QueuedAt: 3, Role: Late}, l(4)},
			want: Fairness{Late: 2}},
		{name: "the latest winner is not the last one ranked", entries: []Entry{l(0), w(9), w(9)},
			want: Fairness{Inversions: 1, MaxGap: 9 * time.Millisecond, LateWinners: 2, LateWinnerMaxGap: 9 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Count(tc.entries)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, got.Inversions == 0, got.LateWinners == 0)
			assert.Equal(t, got.MaxGap, got.LateWinnerMaxGap)
		})
	}
}

func TestSummarise(t *testing.T) {
	t.Parallel()
	assert.Equal(t, Durations{}, Summarise(nil))
	ds := make([]time.Duration, 0, 100)
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	assert.Equal(t, Durations{Count: 100, P50: 50 * time.Millisecond, P95: 95 * time.Millisecond, Max: 100 * time.Millisecond}, Summarise(ds))
	assert.Equal(t, Durations{Count: 1, P50: time.Second, P95: time.Second, Max: time.Second}, Summarise([]time.Duration{time.Second}))
}
