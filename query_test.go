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
			page, err := c.ListEventRequests(ctx, "ev", asyncevent.EventListOptions{PageOptions: asyncevent.PageOptions{Limit: limit, Cursor: cursor}, Order: order})
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
	page, err := c.ListEventRequests(ctx, "ev", asyncevent.EventListOptions{PageOptions: asyncevent.PageOptions{Limit: 5}})
	require.NoError(t, err)
	_, err = c.ListEventRequests(ctx, "other", asyncevent.EventListOptions{PageOptions: asyncevent.PageOptions{Cursor: page.NextCursor}})
	assert.ErrorIs(t, err, asyncevent.ErrInvalidCursor)
	// A user-list cursor is no event-list cursor.
	userPage, err := c.ListUserRequests(ctx, "u001", asyncevent.PageOptions{Limit: 1})
	require.NoError(t, err)
	if userPage.NextCursor != "" {
		_, err = c.ListEventRequests(ctx, "ev", asyncevent.EventListOptions{PageOptions: asyncevent.PageOptions{Cursor: userPage.NextCursor}})
		assert.ErrorIs(t, err, asyncevent.ErrInvalidCursor)
	}
	for _, bad := range []asyncevent.EventListOptions{
		{PageOptions: asyncevent.PageOptions{Limit: 501}}, {PageOptions: asyncevent.PageOptions{Limit: -1}}, {Order: "up"}, {Status: "DONE"},
		{PageOptions: asyncevent.PageOptions{Limit: 10}, MaxRead: 5},
	} {
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
			PageOptions: asyncevent.PageOptions{Limit: 5, Cursor: cursor}, Order: asyncevent.Descending, Status: asyncevent.StatusSucceeded, MaxRead: 8})
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
