package drawrun

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Finalise writes every recorded entry's result, and answers what the record does not
// name: not drawn when queued by the cutoff, closed when queued after it.
func TestFinalise(t *testing.T) {
	ctx := context.Background()
	opened := func(t *testing.T) (*store, *Opened) {
		st := lotteryTable()
		st.onRecord = func(st *store) { st.put(waiting("late", cutoff-500)) }
		o, err := Open(ctx, st, testConfig(Lottery))
		require.NoError(t, err)
		st.calls = nil
		return st, o
	}

	t.Run("every entry, and what landed since", func(t *testing.T) {
		st, o := opened(t)
		require.NoError(t, Finalise(ctx, st, testConfig(Lottery), o, []string{"r4", "r1"}))
		calls := slices.Clone(st.calls)
		slices.Sort(calls[1:])
		assert.Equal(t, []string{"from 1000001",
			"close after", "finalise r1 true", "finalise r2 false", "finalise r4 true", "finalise r5 false", "not drawn late"}, calls)
		assert.Equal(t, Won, st.requests["r4"].State)
		assert.Equal(t, Lost, st.requests["r2"].State)
		assert.Equal(t, Final, st.requests["r3"].State, "failed before the draw: no entry")

		st.calls = nil
		require.NoError(t, Finalise(ctx, st, testConfig(Lottery), o, []string{"r4", "r1"}), "run again: the same results")
		assert.Equal(t, 4, st.count("finalise"))
	})

	t.Run("another result is a mismatch", func(t *testing.T) {
		st, o := opened(t)
		err := Finalise(ctx, st, testConfig(Lottery), o, []string{"r2"})
		require.NoError(t, err)
		err = Finalise(ctx, st, testConfig(Lottery), o, []string{"r1"})
		assert.ErrorIs(t, err, errMismatch)
		assert.ErrorContains(t, err, "draw ev: entries not finalised, run Draw again")
	})

	// A recorded entry GSI2 does not show is read again: it must be a request of the
	// event queued by the cutoff.
	tests := []struct {
		name   string
		change func(e *Entry)
		gone   bool
		want   string
	}{
		{name: "shown again by its item"},
		{name: "gone from the table", gone: true, want: "recorded entry r5 is gone from the table"},
		{name: "of another event", change: func(e *Entry) { e.EventID = "other" }, want: "recorded entry r5 is no request of ev queued by its cutoff"},
		{name: "queued after the cutoff", change: func(e *Entry) { e.QueuedAt = cutoff + 1 }, want: "recorded entry r5 is no request of ev queued by its cutoff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, o := opened(t)
			o.OnTable = slices.DeleteFunc(o.OnTable, func(e Entry) bool { return e.RequestID == "r5" })
			switch {
			case tt.gone:
				delete(st.requests, "r5")
			case tt.change != nil:
				tt.change(st.requests["r5"])
			}
			err := Finalise(ctx, st, testConfig(Lottery), o, nil)
			assert.Equal(t, 1, st.count("request r5"))
			if tt.want == "" {
				require.NoError(t, err)
				assert.Equal(t, Lost, st.requests["r5"].State)
				return
			}
			assert.ErrorIs(t, err, errMismatch)
			assert.ErrorContains(t, err, tt.want)
			assert.Zero(t, st.count("finalise r5"))
		})
	}
}
