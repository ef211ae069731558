package asyncevent_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// With the status log on, every entry names the status the request left, also for
// the transitions allowed from several (StartProcessing, MarkFailed): the likeliest
// costs one call, another one two.
func TestStatusLogNamesTheStatusLeft(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	counter := asynceventtest.NewCounter(asynceventtest.DynamoDB(t))
	c := asynceventtest.NewTableOn(t, counter, asyncevent.Options{ProgressEvery: -1, Clock: clock.Now, StatusLog: true})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 5})
	require.NoError(t, err)
	message := func(requestID, user string) asyncevent.Message {
		return asyncevent.Message{RequestID: requestID, EventID: "sale", UserID: user, EventType: asyncevent.FirstCome}
	}
	calls := func(do func() (asyncevent.Transition, error)) (asyncevent.Transition, int) {
		t.Helper()
		before := counter.Snapshot().Calls["TransactWriteItems"]
		tr, err := do()
		require.NoError(t, err)
		return tr, counter.Snapshot().Calls["TransactWriteItems"] - before
	}
	steps := func(requestID string) [][2]asyncevent.Status {
		t.Helper()
		logs, err := c.ListStatusLogs(ctx, requestID)
		require.NoError(t, err)
		var out [][2]asyncevent.Status
		for _, l := range logs {
			out = append(out, [2]asyncevent.Status{l.FromStatus, l.ToStatus})
		}
		return out
	}

	// ann: QUEUED → PROCESSING (A), taken over after A's lease (B), failed by B.
	queued, err := c.Submit(ctx, queue.NewMemory(queue.MemoryOptions{}), "sale", "ann")
	require.NoError(t, err)
	ann := message(queued.RequestID, "ann")
	tr, n := calls(func() (asyncevent.Transition, error) {
		return c.Rows().StartProcessing(ctx, ann.Ref(), asyncevent.Lease{Owner: "A", Duration: time.Minute})
	})
	assert.True(t, tr.Applied)
	assert.Equal(t, 1, n, "QUEUED, the likeliest, in one call")
	clock.Advance(time.Millisecond)
	tr, n = calls(func() (asyncevent.Transition, error) {
		return c.Rows().StartProcessing(ctx, ann.Ref(), asyncevent.Lease{Owner: "C", Duration: time.Minute})
	})
	assert.False(t, tr.Applied, "A's lease is live")
	assert.Equal(t, 2, n)
	clock.Advance(2 * time.Minute)
	tr, n = calls(func() (asyncevent.Transition, error) {
		return c.Rows().StartProcessing(ctx, ann.Ref(), asyncevent.Lease{Owner: "B", Duration: time.Minute})
	})
	assert.True(t, tr.Applied, "B takes A's expired lease over")
	assert.Equal(t, 2, n)
	clock.Advance(time.Millisecond)
	tr, n = calls(func() (asyncevent.Transition, error) {
		return c.Rows().MarkFailed(ctx, ann.Ref(), asyncevent.Failure{Lease: asyncevent.Lease{Owner: "B"}, Code: asyncevent.ResultFailedWorker, Cause: errors.New("boom")})
	})
	assert.True(t, tr.Applied)
	assert.Equal(t, 1, n, "PROCESSING, the likeliest, in one call")
	tr, n = calls(func() (asyncevent.Transition, error) {
		return c.Rows().StartProcessing(ctx, ann.Ref(), asyncevent.Lease{Owner: "D", Duration: time.Minute})
	})
	assert.False(t, tr.Applied, "a duplicate delivery of a final request")
	assert.Equal(t, 1, n, "a final status is not tried again")
	assert.Equal(t, [][2]asyncevent.Status{
		{"", asyncevent.StatusReceived}, {asyncevent.StatusReceived, asyncevent.StatusQueued},
		{asyncevent.StatusQueued, asyncevent.StatusProcessing}, {asyncevent.StatusProcessing, asyncevent.StatusProcessing},
		{asyncevent.StatusProcessing, asyncevent.StatusFailedFinal},
	}, steps(ann.RequestID))

	// bob: the QUEUED race, RECEIVED → PROCESSING. cat: a final failure without a
	// lease, which a first-come request refuses (it may hold a seat from its home
	// claim): both statuses tried, nothing logged.
	received, err := c.Rows().Participate(ctx, "sale", "bob")
	require.NoError(t, err)
	bob := message(received.RequestID, "bob")
	clock.Advance(time.Millisecond)
	tr, n = calls(func() (asyncevent.Transition, error) {
		return c.Rows().StartProcessing(ctx, bob.Ref(), asyncevent.Lease{Owner: "A", Duration: time.Minute})
	})
	assert.True(t, tr.Applied)
	assert.Equal(t, 2, n)
	assert.Equal(t, [][2]asyncevent.Status{
		{"", asyncevent.StatusReceived}, {asyncevent.StatusReceived, asyncevent.StatusProcessing},
	}, steps(bob.RequestID))

	queued, err = c.Submit(ctx, queue.NewMemory(queue.MemoryOptions{}), "sale", "cat")
	require.NoError(t, err)
	cat := message(queued.RequestID, "cat")
	clock.Advance(time.Millisecond)
	tr, n = calls(func() (asyncevent.Transition, error) {
		return c.Rows().MarkFailed(ctx, cat.Ref(), asyncevent.Failure{Code: asyncevent.ResultFailedSerde, Cause: errors.New("unreadable")})
	})
	assert.False(t, tr.Applied)
	assert.Equal(t, asyncevent.StatusQueued, tr.Current.Status)
	assert.Equal(t, 2, n)
	assert.Equal(t, [][2]asyncevent.Status{
		{"", asyncevent.StatusReceived}, {asyncevent.StatusReceived, asyncevent.StatusQueued},
	}, steps(cat.RequestID))

	asynceventtest.CheckEvent(t, c, "sale", asynceventtest.CheckOptions{Users: []string{"ann", "bob", "cat"}, Unsettled: true})
}

// Each entry of the status log carries its transition's own time, and ingest takes
// queuedAt before it sends, so across ingest and several workers racing on 600
// requests every log lists oldest first in lifecycle order: each entry leaves the
// status the one before it entered, no later than it.
func TestStatusLogReadsInLifecycleOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTableWith(t, asyncevent.Options{StatusLog: true})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 500})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	var workers []*asyncevent.Worker
	for range 4 {
		w, err := asyncevent.NewWorker(c, q, asyncevent.WorkerOptions{Concurrency: 4, WaitTime: 20 * time.Millisecond})
		require.NoError(t, err)
		require.NoError(t, w.Start(ctx))
		workers = append(workers, w)
	}
	const users = 600
	ids := make([]string, users)
	var wg sync.WaitGroup
	clicks := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range clicks {
				p, err := c.Submit(ctx, q, "sale", fmt.Sprintf("user-%04d", i))
				if assert.NoError(t, err) {
					ids[i] = p.RequestID
				}
			}
		})
	}
	for i := range users {
		clicks <- i
	}
	close(clicks)
	wg.Wait()
	asynceventtest.WaitDrained(t, q, 5*time.Minute)
	for _, w := range workers {
		require.NoError(t, w.Stop(ctx))
	}

	logs := make([][]asyncevent.StatusLog, users)
	read := make(chan int)
	var rg sync.WaitGroup
	for range 8 {
		rg.Go(func() {
			for i := range read {
				l, err := c.ListStatusLogs(ctx, ids[i])
				assert.NoError(t, err)
				logs[i] = l
			}
		})
	}
	for i := range users {
		read <- i
	}
	close(read)
	rg.Wait()
	disordered := 0
	for i, l := range logs {
		ok := len(l) >= 2 && l[0].FromStatus == "" && l[0].ToStatus == asyncevent.StatusReceived && l[len(l)-1].ToStatus.IsTerminal()
		for j := 1; ok && j < len(l); j++ {
			ok = l[j].FromStatus == l[j-1].ToStatus && l[j].OccurredAt >= l[j-1].OccurredAt
		}
		if !ok {
			disordered++
			if disordered <= 5 {
				t.Errorf("the log of %s is out of lifecycle order: %+v", ids[i], l)
			}
		}
	}
	assert.Zero(t, disordered, "logs out of lifecycle order among %d", users)
	asynceventtest.CheckEvent(t, c, "sale", asynceventtest.CheckOptions{})
}
