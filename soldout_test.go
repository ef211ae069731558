package asyncevent_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// A loser rejected in one write once the event is known to be sold out (RejectSoldOut)
// gets its startedAt in that write, equal to its finishedAt, so that its detail shows
// queuedAt → startedAt → finishedAt like every finished request; the statistics do not
// count it as processing.
func TestSoldOutLoserHasStartedAt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now, StatusLog: true})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 1})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	var ids []string
	for _, u := range []string{"ann", "bob", "cat"} {
		p, err := c.Submit(ctx, q, "sale", u)
		require.NoError(t, err)
		ids = append(ids, p.RequestID)
		clock.Advance(time.Millisecond)
	}
	proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	for range ids { // one at a time: a winner, a loser that finds the seat gone, a sold-out loser
		clock.Advance(time.Second)
		ds, err := q.Receive(ctx, 1, 0, time.Minute)
		require.NoError(t, err)
		require.Len(t, ds, 1)
		require.Empty(t, asynceventtest.Process(ctx, proc, ds))
	}

	last, err := asyncevent.ReadStoredRequest(ctx, c, ids[2])
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusRejected, last.Status)
	assert.Equal(t, asyncevent.ResultRejectedCapacity, last.ResultCode)
	assert.Empty(t, last.LeaseOwner, "never held PROCESSING: rejected in one write")
	assert.Equal(t, asyncevent.MillisOf(clock.Now()), last.StartedAt)
	assert.Equal(t, last.FinishedAt, last.StartedAt)
	assert.Less(t, last.QueuedAt, last.StartedAt)
	logs, err := c.ListStatusLogs(ctx, ids[2])
	require.NoError(t, err)
	require.Len(t, logs, 3, "RECEIVED, QUEUED, REJECTED")
	assert.Equal(t, asyncevent.StatusRejected, logs[2].ToStatus)

	st, err := c.EventStats(ctx, "sale")
	require.NoError(t, err)
	assert.Equal(t, 3, st.QueueWait.Count)
	assert.Equal(t, 1, st.Processing.Count, "the winner, from its delivery's start to its SUCCEEDED; both losers ended in one write")
	asynceventtest.CheckEvent(t, c, "sale", asynceventtest.CheckOptions{Users: []string{"ann", "bob", "cat"}})
}
