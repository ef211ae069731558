package asyncevent_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// queuedOneByOne submits users 1 ms apart on a stopped clock and returns their
// request IDs in queue order, with the queue holding their messages.
func queuedOneByOne(t *testing.T, c *asyncevent.Client, clock *asynceventtest.Clock, eventID string, n int) ([]string, *queue.Memory) {
	t.Helper()
	q := queue.NewMemory(queue.MemoryOptions{Clock: clock.Now})
	var ids []string
	for i := range n {
		p, err := c.Submit(context.Background(), q, eventID, fmt.Sprintf("u%03d", i))
		require.NoError(t, err)
		ids = append(ids, p.RequestID)
		clock.Advance(time.Millisecond)
	}
	return ids, q
}

func TestListEventRequestsPagesInBothOrders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, clock := newIngest(t, asyncevent.Options{})
	ids, _ := queuedOneByOne(t, c, clock, "ev", 120)

	collect := func(order asyncevent.Order, limit int) []string {
		var got []string
		cursor := ""
		for pages := 0; ; pages++ {
			require.Less(t, pages, 100)
			page, err := c.ListEventRequests(ctx, "ev", asyncevent.EventListOptions{Order: order, Limit: limit, Cursor: cursor})
			require.NoError(t, err)
			assert.LessOrEqual(t, len(page.Requests), limit)
			for _, r := range page.Requests {
				got = append(got, r.RequestID)
			}
			if page.NextCursor == "" {
				return got
			}
			cursor = page.NextCursor
		}
	}
	assert.Equal(t, ids, collect(asyncevent.Ascending, 7))
	assert.Equal(t, ids, collect("", 50))
	desc := slices.Clone(ids)
	slices.Reverse(desc)
	assert.Equal(t, desc, collect(asyncevent.Descending, 13))
	assert.Equal(t, desc[:20], collect(asyncevent.Descending, 500)[:20], "latest N")

	// A cursor of another event is refused.
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "other", EventType: asyncevent.FirstCome, CapacityTotal: 1})
	require.NoError(t, err)
	page, err := c.ListEventRequests(ctx, "ev", asyncevent.EventListOptions{Limit: 5})
	require.NoError(t, err)
	_, err = c.ListEventRequests(ctx, "other", asyncevent.EventListOptions{Cursor: page.NextCursor})
	assert.ErrorIs(t, err, asyncevent.ErrInvalidCursor)
	// A user-list cursor is no event-list cursor.
	userPage, err := c.ListUserRequests(ctx, "u001", asyncevent.PageOptions{Limit: 1})
	require.NoError(t, err)
	if userPage.NextCursor != "" {
		_, err = c.ListEventRequests(ctx, "ev", asyncevent.EventListOptions{Cursor: userPage.NextCursor})
		assert.ErrorIs(t, err, asyncevent.ErrInvalidCursor)
	}
	for _, bad := range []asyncevent.EventListOptions{{Limit: 501}, {Limit: -1}, {Order: "up"}, {Status: "DONE"}, {Limit: 10, MaxRead: 5}} {
		_, err := c.ListEventRequests(ctx, "ev", bad)
		assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions, "%+v", bad)
	}
}

func TestListEventRequestsFiltersByStatusWithinABound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, clock := newIngest(t, asyncevent.Options{}) // capacity 10
	ids, q := queuedOneByOne(t, c, clock, "ev", 40)
	p := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	ds, err := q.Receive(ctx, 10, 0, time.Minute)
	require.NoError(t, err)
	require.Empty(t, asynceventtest.Process(ctx, p, ds)) // the first ten win; thirty stay QUEUED

	var won []string
	cursor := ""
	calls := 0
	for {
		page, err := c.ListEventRequests(ctx, "ev", asyncevent.EventListOptions{
			Order: asyncevent.Descending, Status: asyncevent.StatusSucceeded, Limit: 5, MaxRead: 8, Cursor: cursor})
		require.NoError(t, err)
		calls++
		for _, r := range page.Requests {
			assert.Equal(t, asyncevent.StatusSucceeded, r.Status)
			won = append(won, r.RequestID)
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	want := slices.Clone(ids[:10])
	slices.Reverse(want)
	assert.Equal(t, want, won)
	assert.GreaterOrEqual(t, calls, 40/8, "each call read at most 8 requests")
}

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

// TestStrictModeKeepsQueueOrder: with a FIFO queue and one message group per event
// (the strict mode), the winners are exactly the first N in queue order: no
// inversions, however many workers.
func TestStrictModeKeepsQueueOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, clock := newIngest(t, asyncevent.Options{}) // capacity 10
	q := queue.NewMemory(queue.MemoryOptions{FIFO: true})
	var ids []string
	for i := range 40 {
		p, err := c.Submit(ctx, q, "ev", fmt.Sprintf("u%02d", i))
		require.NoError(t, err)
		ids = append(ids, p.RequestID)
		clock.Advance(time.Millisecond)
	}
	for range 4 {
		w, err := asyncevent.NewWorker(c, q, asyncevent.WorkerOptions{Concurrency: 4, WaitTime: 20 * time.Millisecond})
		require.NoError(t, err)
		require.NoError(t, w.Start(ctx))
		t.Cleanup(func() { assert.NoError(t, w.Stop(ctx)) })
	}
	asynceventtest.WaitDrained(t, q, time.Minute)
	st, err := c.EventStats(ctx, "ev")
	require.NoError(t, err)
	assert.Equal(t, 10, st.ByStatus[asyncevent.StatusSucceeded])
	assert.Zero(t, st.Fairness.Inversions)
	for i, id := range ids {
		r, err := c.GetRequest(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, i < 10, r.Status == asyncevent.StatusSucceeded, "request %d", i)
	}
}
