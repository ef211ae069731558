package drawrun

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// prequeueTable: n requests queued before the start, in ID order of their queuedAt,
// and seats seats.
func prequeueTable(n int, seats int64) *store {
	st := newStore()
	for i := range n {
		st.put(waiting(fmt.Sprintf("e%02d", i), int64(10*(i+1))))
	}
	st.seats = seats
	return st
}

// The serve's rule: waves never larger than the seats left (read before each) nor
// than Concurrency, in the order given; once no seat is left, refusals
// 4 × Concurrency at once.
func TestServe(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		n     int
		seats int64
		waves []int // the size of each wave
		ats   []int
	}{
		{name: "fewer seats than Concurrency", n: 12, seats: 1, waves: []int{1, 8, 3}, ats: []int{2, 8, 8}},
		{name: "seats for some waves", n: 12, seats: 5, waves: []int{2, 2, 1, 7}, ats: []int{2, 2, 2, 8}},
		{name: "more seats than entries", n: 3, seats: 10, waves: []int{2, 1}, ats: []int{2, 2}},
		{name: "no seat", n: 3, seats: 0, waves: []int{3}, ats: []int{8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := prequeueTable(tt.n, tt.seats)
			o, err := Open(ctx, st, testConfig(Prequeue))
			require.NoError(t, err)
			order := slices.Clone(o.IDs)
			slices.Reverse(order) // a drawn order, not the queue's
			served, err := Serve(ctx, st, testConfig(Prequeue), o, order)
			require.NoError(t, err)
			assert.Equal(t, tt.n, served)
			var sizes []int
			var got []string
			for _, w := range st.waves {
				sizes = append(sizes, len(w))
				got = append(got, w...)
			}
			assert.Equal(t, tt.waves, sizes)
			assert.Equal(t, tt.ats, st.ats)
			assert.Equal(t, order, got, "served in the order given")
			assert.Equal(t, len(tt.waves), st.count("seats left"), "the seats read before each wave")

			winners, err := Winners(ctx, st, o.Before, order)
			require.NoError(t, err)
			if won := order[:min(int64(tt.n), tt.seats)]; len(won) > 0 {
				assert.Equal(t, won, winners, "the first of the order won")
			} else {
				assert.Empty(t, winners)
			}
		})
	}

	// Run again: the entries final already are skipped; a recorded entry GSI2 does not
	// show is read by its item.
	t.Run("resumed", func(t *testing.T) {
		st := prequeueTable(6, 2)
		o, err := Open(ctx, st, testConfig(Prequeue))
		require.NoError(t, err)
		o.OnTable[1].State = Final   // e01, decided before the crash
		o.OnTable[4].State = Decided // e04, waitlisted
		o.OnTable = slices.DeleteFunc(o.OnTable, func(e Entry) bool { return e.RequestID == "e05" })
		served, err := Serve(ctx, st, testConfig(Prequeue), o, o.IDs)
		require.NoError(t, err)
		assert.Equal(t, 5, served, "e04, waitlisted, is decided again as a worker would")
		assert.Equal(t, [][]string{{"e00", "e02"}, {"e03", "e04", "e05"}}, st.waves)
		assert.Equal(t, 1, st.count("request e05"))
	})

	t.Run("a recorded entry gone", func(t *testing.T) {
		st := prequeueTable(3, 1)
		o, err := Open(ctx, st, testConfig(Prequeue))
		require.NoError(t, err)
		o.OnTable = o.OnTable[1:]
		delete(st.requests, "e00")
		_, err = Serve(ctx, st, testConfig(Prequeue), o, o.IDs)
		assert.ErrorIs(t, err, errMismatch)
		assert.ErrorContains(t, err, "recorded entry e00 is gone from the table")
		assert.Zero(t, st.count("wave"))
	})

	t.Run("a wave not decided", func(t *testing.T) {
		st := prequeueTable(3, 1)
		o, err := Open(ctx, st, testConfig(Prequeue))
		require.NoError(t, err)
		st.waveErr = errors.New("cut off")
		served, err := Serve(ctx, st, testConfig(Prequeue), o, o.IDs)
		assert.ErrorIs(t, err, st.waveErr)
		assert.Zero(t, served)
		assert.Equal(t, 1, st.count("wave"), "no wave after one not decided")
	})
}

// Winners reads again, strongly consistent, only what GSI2 shows undecided.
func TestWinners(t *testing.T) {
	ctx := context.Background()
	st := prequeueTable(4, 0)
	st.requests["e00"].State, st.requests["e00"].Seated = Final, true
	st.requests["e01"].State, st.requests["e01"].Seated = Decided, true // HELD
	st.requests["e02"].State = Decided                                  // WAITLISTED
	st.hidden["e03"] = true
	st.requests["e03"].State, st.requests["e03"].Seated = Final, true
	winners, err := Winners(ctx, st, cutoff+1, []string{"e03", "e02", "e01", "e00"})
	require.NoError(t, err)
	assert.Equal(t, []string{"e03", "e01", "e00"}, winners)
	assert.Equal(t, 1, st.count("request"), "only e03, not on the index")
}
