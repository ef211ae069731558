package asyncevent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// poll is one answer of GetRequest to a request waiting in line.
type poll struct {
	id  string
	at  time.Time
	est asyncevent.QueueEstimate
}

// A known backlog drained at a known rate: after the first seconds, the place in
// line a poll is told is within 10% of the true one (the requests queued before it
// that no worker had finished at that moment), and the wait within 20% of the time
// it actually waited. The client's clock is the test's, so that the rate is the
// test's and not the machine's: 600 clicks, one every 5 ms (so that the arrivals of a
// tenth of a second are spread evenly over it, as the estimate takes them, and no two
// share a queuedAt; clicks at once from many clients would bunch them by the order
// their goroutines happened to read the clock), then the workers finish
// five requests every 200 ms (25 a second) in queue order, writing their counts as
// they go, and a poll every 400 ms asks five requests spread over the line.
func TestPlaceInLineIsHonest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now, ProgressEvery: 500 * time.Millisecond, ProgressCacheTTL: 200 * time.Millisecond})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "line", EventType: asyncevent.FirstCome, CapacityTotal: 10, IndexShards: 16})
	require.NoError(t, err)
	// The messages reach the workers' queue in queue order (queuedAt), which a
	// standard queue keeps only roughly: the test is of the estimate's math, and
	// docs/design.md says what the queue's order costs it.
	const backlog = 600
	sent := &sentMessages{byRequest: map[string]queue.OutgoingMessage{}}
	for i := range backlog {
		clock.Advance(5 * time.Millisecond)
		_, err := c.Submit(ctx, sent, "line", fmt.Sprintf("user-%05d", i))
		require.NoError(t, err)
	}
	require.NoError(t, c.FlushProgress(ctx))
	q := queue.NewMemory(queue.MemoryOptions{Clock: clock.Now}) // no message comes back: they are not deleted
	var ids []string
	for cursor := ""; ; {
		page, err := c.ListEventRequests(ctx, "line", asyncevent.EventListOptions{Limit: 500, Cursor: cursor})
		require.NoError(t, err)
		for _, r := range page.Requests {
			ids = append(ids, r.RequestID)
			require.NoError(t, q.Send(ctx, sent.byRequest[r.RequestID]))
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	require.Len(t, ids, backlog)

	began := clock.Now()
	proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	var polls []poll
	for step := 1; ; step++ {
		clock.Advance(200 * time.Millisecond)
		ds, err := q.Receive(ctx, 5, 0, time.Minute)
		require.NoError(t, err)
		if len(ds) == 0 {
			break
		}
		require.Empty(t, asynceventtest.Process(ctx, proc, ds), "every message done")
		require.NoError(t, c.FlushProgress(ctx))
		if step%2 != 0 {
			continue
		}
		for k := 1; k <= 5; k++ {
			id := ids[k*backlog/6]
			r, err := c.GetRequest(ctx, id)
			require.NoError(t, err)
			if r.Queue != nil {
				polls = append(polls, poll{id: id, at: clock.Now(), est: *r.Queue})
			}
		}
	}
	require.NoError(t, c.FlushProgress(ctx))

	final := map[string]*asyncevent.Request{}
	for _, id := range ids {
		r, err := c.GetRequest(ctx, id)
		require.NoError(t, err)
		require.NotEqual(t, asyncevent.StatusQueued, r.Status)
		assert.Nil(t, r.Queue, "a final request has no place in line")
		final[id] = r
	}
	checked := 0
	for _, p := range polls {
		if p.at.Sub(began) < 5*time.Second {
			continue // the first seconds: the rate is measured over too little yet
		}
		me := final[p.id]
		ahead := 0
		for _, r := range final {
			if r.QueuedAt < me.QueuedAt && r.FinishedAt.Time().After(p.at) {
				ahead++
			}
		}
		wait := me.FinishedAt.Time().Sub(p.at)
		if ahead < 60 {
			continue // near the front a few requests either way are more than 10%
		}
		checked++
		assert.InDelta(t, ahead, p.est.Ahead, 0.1*float64(ahead), "%s polled at +%v: %d ahead", p.id, p.at.Sub(began), ahead)
		assert.InDelta(t, wait.Seconds(), p.est.Wait.Seconds(), 0.2*wait.Seconds(), "%s polled at +%v: waited %v (rate %.1f/s)", p.id, p.at.Sub(began), wait, p.est.Rate)
	}
	assert.Greater(t, checked, 10, "polls checked")
	t.Logf("%d polls, %d checked", len(polls), checked)

	st, err := c.QueueStats(ctx, "line")
	require.NoError(t, err)
	assert.Zero(t, st.Depth, "drained")
	assert.NotEmpty(t, st.Series)
	peak := slices.MaxFunc(st.Series, func(a, b asyncevent.QueuePoint) int { return int(a.Depth - b.Depth) })
	assert.LessOrEqual(t, peak.Depth, int64(backlog))
	assert.Greater(t, peak.Depth, int64(backlog-50), "the line's deepest second is the backlog, less what the workers took in that second")
	assert.InDelta(t, 25, st.Series[len(st.Series)/2].Rate, 1, "the rate in the middle of the drain")
}

// sentMessages is a queue that only keeps what was sent to it, by request.
type sentMessages struct {
	queue.Queue
	mu        sync.Mutex
	byRequest map[string]queue.OutgoingMessage
}

func (s *sentMessages) Send(_ context.Context, m queue.OutgoingMessage) error {
	var body asyncevent.Message
	if err := json.Unmarshal(m.Body, &body); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byRequest[body.RequestID] = m
	return nil
}
