package asyncevent_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

// The ranked admission's write of a wave's home seats is the home claims of its
// requests applied at once: it takes a seat for each and records each token, or takes
// nothing when any one of them would have failed (a token already there, a shard
// closed to one), and a shard short of seats takes the first requests it can seat.
func TestWaveSeats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTableWith(t, asyncevent.Options{})
	const shards = 2
	var events atomic.Int32
	event := func(t *testing.T, seats int64) string {
		id := fmt.Sprintf("wave-%d", events.Add(1))
		_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: id, EventType: asyncevent.FirstCome, CapacityTotal: seats, CapacityShards: shards})
		require.NoError(t, err)
		return id
	}
	// ids returns k request IDs whose home is shard 0.
	ids := func(prefix string, k int) []string {
		var out []string
		for i := 0; len(out) < k; i++ {
			if id := fmt.Sprintf("%s-%d", prefix, i); homeOf(id, shards) == 0 {
				out = append(out, id)
			}
		}
		return out
	}
	lost := func(t *testing.T, err error) {
		t.Helper()
		require.Error(t, err)
		assert.Contains(t, err.Error(), `the condition of "first-come wave seats" failed`)
	}

	t.Run("takes a seat for each request and records each token", func(t *testing.T) {
		ev := event(t, 40) // 20 seats on each shard
		wave := ids("a", 5)
		taken, emptied, err := asyncevent.ClaimWaveSeats(ctx, c, ev, shards, 0, wave)
		require.NoError(t, err)
		assert.Equal(t, 5, taken)
		assert.False(t, emptied)
		s := shardItem(t, c, ev, 0)
		assert.EqualValues(t, 15, s.CapacityRemaining)
		for _, id := range wave {
			assert.Contains(t, s.Holders, tokenOf(id))
		}
	})

	t.Run("a request already holding its seat there: nothing taken", func(t *testing.T) {
		ev := event(t, 40)
		wave := ids("b", 4)
		_, _, err := asyncevent.ClaimWaveSeats(ctx, c, ev, shards, 0, wave[1:3])
		require.NoError(t, err)
		taken, _, err := asyncevent.ClaimWaveSeats(ctx, c, ev, shards, 0, wave)
		lost(t, err)
		assert.Zero(t, taken)
		assert.EqualValues(t, 18, shardItem(t, c, ev, 0).CapacityRemaining, "only the first write's two seats")
	})

	t.Run("a shard closed to one request: nothing taken", func(t *testing.T) {
		ev := event(t, 40)
		// A request whose send failed: its home shard is closed to it.
		var closed string
		for i := 0; closed == ""; i++ {
			user := fmt.Sprintf("user-%d", i)
			p, err := c.Participate(ctx, ev, user)
			require.NoError(t, err)
			if homeOf(p.RequestID, shards) == 0 {
				closed = p.RequestID
				tr, err := c.MarkEnqueueFailed(ctx, asyncevent.RequestRef{RequestID: closed, EventID: ev, UserID: user}, errors.New("send: refused"))
				require.NoError(t, err)
				require.True(t, tr.Applied)
			}
		}
		require.Contains(t, shardItem(t, c, ev, 0).Void, tokenOf(closed))
		taken, _, err := asyncevent.ClaimWaveSeats(ctx, c, ev, shards, 0, append(ids("c", 3), closed))
		lost(t, err)
		assert.Zero(t, taken)
		s := shardItem(t, c, ev, 0)
		assert.EqualValues(t, 20, s.CapacityRemaining)
		assert.Empty(t, s.Holders)
	})

	t.Run("a shard short of seats takes the first requests it can seat", func(t *testing.T) {
		ev := event(t, 6) // 3 seats on each shard
		wave := ids("d", 5)
		taken, emptied, err := asyncevent.ClaimWaveSeats(ctx, c, ev, shards, 0, wave)
		require.NoError(t, err)
		assert.Equal(t, 3, taken)
		assert.True(t, emptied, "the shard's last seats")
		s := shardItem(t, c, ev, 0)
		assert.Zero(t, s.CapacityRemaining)
		assert.ElementsMatch(t, []string{tokenOf(wave[0]), tokenOf(wave[1]), tokenOf(wave[2])}, s.Holders)
	})

	t.Run("one seat left, or fewer than two requests: nothing taken", func(t *testing.T) {
		ev := event(t, 2) // 1 seat on each shard
		taken, _, err := asyncevent.ClaimWaveSeats(ctx, c, ev, shards, 0, ids("e", 3))
		lost(t, err)
		assert.Zero(t, taken)
		_, _, err = asyncevent.ClaimWaveSeats(ctx, c, ev, shards, 0, ids("e", 1))
		require.Error(t, err)
		_, _, err = asyncevent.ClaimWaveSeats(ctx, c, ev, shards, 0, ids("e", asyncevent.MaxWaveClaim+1))
		require.Error(t, err)
		assert.EqualValues(t, 1, shardItem(t, c, ev, 0).CapacityRemaining)
	})

	t.Run("the widest write is accepted", func(t *testing.T) {
		ev := event(t, 2*asyncevent.MaxWaveClaim)
		taken, emptied, err := asyncevent.ClaimWaveSeats(ctx, c, ev, shards, 0, ids("f", asyncevent.MaxWaveClaim))
		require.NoError(t, err)
		assert.Equal(t, asyncevent.MaxWaveClaim, taken)
		assert.True(t, emptied)
	})
}
