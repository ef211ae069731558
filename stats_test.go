package asyncevent_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

func TestEventStats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, clock := newIngest(t, asyncevent.Options{}) // capacity 10
	_, q := queuedOneByOne(t, c, clock, "ev", 30)
	ds, err := q.Receive(ctx, 10, 0, time.Minute)
	require.NoError(t, err)
	for range 2 {
		more, err := q.Receive(ctx, 10, 0, time.Minute)
		require.NoError(t, err)
		ds = append(ds, more...)
	}
	require.Len(t, ds, 30)
	// Process in reverse queue order, one at a time, 5 ms each: the last ten queued
	// win, and the twenty queued before them lose — twenty inversions.
	p := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	clock.Advance(time.Second)
	for i := len(ds) - 1; i >= 0; i-- {
		require.Empty(t, asynceventtest.Process(ctx, p, ds[i:i+1]))
		clock.Advance(5 * time.Millisecond)
	}
	_, err = c.Submit(ctx, &sendQueue{fail: fmt.Errorf("down")}, "ev", "unlucky")
	require.Error(t, err)

	st, err := c.EventStats(ctx, "ev")
	require.NoError(t, err)
	assert.Equal(t, 31, st.Requests)
	assert.Equal(t, map[asyncevent.Status]int{asyncevent.StatusSucceeded: 10, asyncevent.StatusRejected: 20, asyncevent.StatusFailedFinal: 1}, st.ByStatus)
	assert.Equal(t, map[asyncevent.ResultCode]int{asyncevent.ResultSuccess: 10, asyncevent.ResultRejectedCapacity: 20, asyncevent.ResultFailedIngestEnqueue: 1}, st.ByResultCode)
	assert.Equal(t, int64(10), st.CapacityTotal)
	assert.Zero(t, st.CapacityRemaining)
	assert.Equal(t, 20, st.Fairness.Inversions)
	assert.Equal(t, 29*time.Millisecond, st.Fairness.MaxGap, "the first queued lost to the last queued")
	assert.Equal(t, 30, st.QueueWait.Count)
	assert.Equal(t, 10, st.Processing.Count, "the ten winners; the loser that found the seats gone and the 19 after it were rejected in one write, never started")
	assert.Zero(t, st.Processing.Max, "the stopped clock: no time passes within a message")
	// The first queued (at +0 ms) started last: the clock stood at +30 ms, moved 1 s,
	// then 5 ms for each of the 29 before it.
	assert.Equal(t, time.Second+30*time.Millisecond+29*5*time.Millisecond, st.QueueWait.Max)

	_, err = c.EventStats(ctx, "nope")
	assert.ErrorIs(t, err, asyncevent.ErrEventNotFound)
}
