package asyncevent_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
)

func TestSweepRedrivesStuckRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, clock := newIngest(t, asyncevent.Options{}) // FIRST_COME "ev", capacity 10
	_, err := c.CreateEvent(ctx, asyncevent.EventConfig{EventID: "lotto", EventType: asyncevent.Lottery,
		WinnerCount: 1, LotteryCutoffAt: asyncevent.MillisOf(t0.Add(time.Hour))})
	require.NoError(t, err)

	// Three requests whose messages are lost, one whose worker died mid-message, one
	// lottery entry waiting for its draw.
	lost := asyncevent.NewMemoryQueue(asyncevent.MemoryQueueOptions{})
	var stuck []string
	for _, u := range []string{"a", "b", "c", "d"} {
		p, err := c.Submit(ctx, lost, "ev", u)
		require.NoError(t, err)
		stuck = append(stuck, p.RequestID)
	}
	_, err = c.Submit(ctx, lost, "lotto", "e")
	require.NoError(t, err)
	ds, err := lost.Receive(ctx, 10, 0, time.Hour)
	require.NoError(t, err)
	require.Len(t, ds, 5)
	m, err := asyncevent.DecodeMessage(ds[3].Body)
	require.NoError(t, err)
	tr, err := c.StartProcessing(ctx, m, asyncevent.MillisOf(clock.Now()), "dead-worker", time.Minute)
	require.NoError(t, err)
	require.True(t, tr.Applied)

	q := asyncevent.NewMemoryQueue(asyncevent.MemoryQueueOptions{})
	opts := asyncevent.SweepOptions{StuckAfter: 5 * time.Minute, RatePerSecond: 1000}
	report, err := c.Sweep(ctx, q, "ev", opts)
	require.NoError(t, err)
	assert.Empty(t, report.Resent, "nothing is stuck yet")
	assert.Equal(t, 4, report.Examined)

	clock.Advance(6*time.Minute + time.Second)
	report, err = c.Sweep(ctx, q, "ev", opts)
	require.NoError(t, err)
	assert.Equal(t, map[asyncevent.Status]int{asyncevent.StatusQueued: 3, asyncevent.StatusProcessing: 1}, report.Resent)
	report, err = c.Sweep(ctx, q, "lotto", opts)
	require.NoError(t, err)
	assert.Empty(t, report.Resent, "a lottery entry waits for its draw")

	// Two sweepers at once only make duplicates, which the worker recognises.
	_, err = c.Sweep(ctx, q, "ev", opts)
	require.NoError(t, err)
	p := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	for q.Len().Visible > 0 {
		ds, err := q.Receive(ctx, 1, 0, time.Minute)
		require.NoError(t, err)
		assert.Empty(t, p.ProcessMessages(ctx, ds))
		require.NoError(t, q.Delete(ctx, ds[0].Receipt))
	}
	for _, id := range stuck {
		r, err := c.GetRequest(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, asyncevent.StatusSucceeded, r.Status, id)
	}
	capacity, err := c.GetCapacity(ctx, "ev")
	require.NoError(t, err)
	assert.Equal(t, int64(6), capacity.CapacityRemaining)

	_, err = c.Sweep(ctx, q, "bad#id", opts)
	assert.ErrorIs(t, err, asyncevent.ErrInvalidID)
}
