package main

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
	"github.com/asyncevent/asyncevent/queue"
)

// queueUp submits n users to a FIRST_COME event through c, one at a time (so that
// queue order is click order) with between after each (which keeps their queuedAt
// apart), lets a worker finish the first done of them, writes
// the client's progress and returns the request IDs.
func queueUp(t *testing.T, c *asyncevent.Client, eventID string, n, done int, between func()) []string {
	t.Helper()
	ctx := context.Background()
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: eventID, EventType: asyncevent.FirstCome, CapacityTotal: 5})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := make([]string, n)
	for i := range ids {
		p, err := c.Submit(ctx, q, eventID, fmt.Sprintf("user-%d", i))
		require.NoError(t, err)
		ids[i] = p.RequestID
		between()
	}
	if done > 0 {
		ds, err := q.Receive(ctx, done, 0, time.Minute)
		require.NoError(t, err)
		require.Len(t, ds, done)
		require.Empty(t, asynceventtest.Process(ctx, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), ds))
	}
	require.NoError(t, c.FlushProgress(ctx))
	return ids
}

// request get tells a waiting request its place in line and its wait, and -json
// carries them as "queue"; a final request has none. stats tells the line's depth,
// the workers' rate and the time to drain it.
func TestPlaceInLineAndQueueStats(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.ok(t, "table", "create")
	// The clicks and the worker's results 1.5s in the past: the CLI, on the real
	// clock, reads them as complete (a node's counts are, up to Options.ProgressEvery
	// and a tenth of a second before they are read: 0.3s) and within the 3s before
	// that, which give the rate, for as long as its reads come within 1.8s of the
	// worker's.
	ids := queueUp(t, f.client(t, asyncevent.Options{Clock: pastClock(1500 * time.Millisecond)}), "line", 30, 10, func() { time.Sleep(2 * time.Millisecond) })

	var last map[string]any
	f.json(t, &last, "request", "get", ids[29])
	assert.Equal(t, "QUEUED", last["status"])
	require.Contains(t, last, "queue")
	place := last["queue"].(map[string]any)
	assert.Greater(t, place["ahead"], 0.0, "the workers stopped: the estimate carries them on at their rate only up to now")
	assert.LessOrEqual(t, place["ahead"], 19.0, "10 of the 29 queued before it were finished")
	assert.Greater(t, place["ratePerSec"], 0.0)
	assert.Greater(t, place["waitMs"], 0.0)
	assert.Greater(t, place["asOf"], 0.0)

	out := f.ok(t, "request", "get", ids[29])
	assert.Regexp(t, regexp.MustCompile(`^place in line: [\d,]+ requests? ahead, its turn in about \S+ at the workers' [\d.]+ requests/s \(the line as of \S+Z; an estimate`), out)
	assert.Regexp(t, regexp.MustCompile(`(?m)^status\s+QUEUED$`), out)

	var first map[string]any
	f.json(t, &first, "request", "get", ids[0])
	assert.Contains(t, []any{"SUCCEEDED", "REJECTED"}, first["status"])
	assert.NotContains(t, first, "queue", "a final request waits in no line")
	assert.NotContains(t, f.ok(t, "request", "get", ids[0]), "place in line")

	var st clikit.Stats
	f.json(t, &st, "stats", "line")
	require.NotNil(t, st.Queue)
	assert.Positive(t, st.Queue.Depth)
	assert.LessOrEqual(t, st.Queue.Depth, int64(20))
	assert.Positive(t, st.Queue.RatePerSec)
	require.NotNil(t, st.Queue.DrainTimeMs)
	assert.Positive(t, *st.Queue.DrainTimeMs)
	require.NotEmpty(t, st.Queue.Series)
	assert.Equal(t, int64(20), st.Queue.Series[len(st.Queue.Series)-1].Depth, "30 arrived, 10 finished")
	out = f.ok(t, "stats", "line")
	assert.Regexp(t, regexp.MustCompile(`(?m)^queue\s+[\d,]+ requests? waiting · the workers finish [\d.]+ requests/s · drained in about \S+ \(as of \S+Z\)$`), out)
	assert.Regexp(t, regexp.MustCompile(`(?m)^queue wait\s+`), out)
}

// Before any worker finished a request of the event, the place in line is known and
// the wait is not: request get and stats say so.
func TestPlaceInLineWithoutRate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.ok(t, "table", "create")
	// A click at the start of each tenth of a second, 5s ago: the estimate takes a
	// tenth's arrivals as spread evenly over it, so each request has exactly the clicks
	// before it ahead.
	clock := asynceventtest.NewClock(time.Now().Add(-5 * time.Second).Truncate(100 * time.Millisecond))
	ids := queueUp(t, f.client(t, asyncevent.Options{Clock: clock.Now}), "cold", 3, 0, func() { clock.Advance(100 * time.Millisecond) })

	var req map[string]any
	f.json(t, &req, "request", "get", ids[2])
	require.Contains(t, req, "queue")
	place := req["queue"].(map[string]any)
	assert.Equal(t, 2.0, place["ahead"])
	assert.Equal(t, 0.0, place["ratePerSec"])
	assert.NotContains(t, place, "waitMs", "unknown")
	assert.Regexp(t, `^place in line: 2 requests ahead; its wait is unknown: the workers have not finished requests for half a second of the last 5s\n`,
		f.ok(t, "request", "get", ids[2]))
	assert.Regexp(t, `^place in line: 0 requests ahead;`, f.ok(t, "request", "get", ids[0]))

	var st clikit.Stats
	f.json(t, &st, "stats", "cold")
	require.NotNil(t, st.Queue)
	assert.Equal(t, int64(3), st.Queue.Depth)
	assert.Nil(t, st.Queue.DrainTimeMs)
	assert.Regexp(t, `(?m)^queue\s+3 requests waiting · the workers finish 0\.00 requests/s · drain time unknown: the workers have not finished requests for half a second of the last 5s`,
		f.ok(t, "stats", "cold"))
}

// A lottery has no line: stats prints none.
func TestLotteryStatsHaveNoQueue(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.ok(t, "table", "create")
	f.ok(t, "event", "create", "-type", "lottery", "-winners", "2", "-cutoff", "+1h", "lot")
	var st clikit.Stats
	f.json(t, &st, "stats", "lot")
	assert.Nil(t, st.Queue)
	assert.NotContains(t, f.ok(t, "stats", "lot"), "waiting")
}

func TestFormatQueueFigures(t *testing.T) {
	t.Parallel()
	asOf := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		q    asyncevent.QueueStats
		want string
	}{
		{asyncevent.QueueStats{Depth: 1234, Rate: 98.46, DrainTime: 12530 * time.Millisecond, AsOf: asyncevent.MillisOf(asOf)},
			"1,234 requests waiting · the workers finish 98.5 requests/s · drained in about 12.53s (as of 2026-11-27T09:00:00.000Z)"},
		{asyncevent.QueueStats{Depth: 1, Rate: 250, DrainTime: 4 * time.Millisecond, AsOf: asyncevent.MillisOf(asOf)},
			"1 request waiting · the workers finish 250 requests/s · drained in about 4ms (as of 2026-11-27T09:00:00.000Z)"},
		{asyncevent.QueueStats{AsOf: asyncevent.MillisOf(asOf)},
			"0 requests waiting · the workers finish 0.00 requests/s · nothing to drain (as of 2026-11-27T09:00:00.000Z)"},
	} {
		assert.Equal(t, c.want, formatQueue(&c.q))
	}
	assert.Equal(t, "place in line: 1 request ahead, its turn in about 400ms at the workers' 2.50 requests/s (the line as of 2026-11-27T09:00:00.000Z; "+
		"an estimate, as a standard queue keeps order only roughly)",
		placeLine(&asyncevent.QueueEstimate{Ahead: 1, Wait: 400 * time.Millisecond, Rate: 2.5, AsOf: asyncevent.MillisOf(asOf)}))
	assert.Empty(t, placeLine(nil))
}
