package asyncevent_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// TestDrawOverABacklog draws a lottery while its workers still hold most of its
// messages: 300 entries queued before the cutoff, 2 workers handling one message at a
// time with a 60 ms handler, started one second before the cutoff, and Draw called as
// soon as it is allowed (settle window 1 s). The set of entries the draw freezes is
// the set it finalises: it ends ANNOUNCED with exactly K winners, VerifyDraw finds
// nothing, no request queued by the cutoff is closed as late, and the workers leave
// to the draw the entries they meet after it began. On single keys and on 4 index
// shards; and with MarkQueued refused (throttled) for about a third of the entries,
// so that some are still RECEIVED when the draw freezes them.
func TestDrawOverABacklog(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		shards          int
		markQueuedFault float64
	}{
		{"single keys", 1, 0},
		{"4 index shards", 4, 0},
		{"MarkQueued throttled", 4, 0.3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			drawOverABacklog(t, tc.shards, tc.markQueuedFault)
		})
	}
}

func drawOverABacklog(t *testing.T, shards int, markQueuedFault float64) {
	const (
		entries = 300
		winners = 40
		settle  = time.Second
	)
	ctx := context.Background()
	var db asyncevent.DynamoDB = asynceventtest.DynamoDB(t)
	var faulty *asynceventtest.FaultyDynamoDB
	if markQueuedFault > 0 {
		// UpdateItem of requests: MarkQueued is sent once, so a refusal leaves its
		// request RECEIVED; every other write of a request retries a throttle.
		faulty = asynceventtest.NewFaultyDynamoDB(db, asynceventtest.FaultPlan{
			Seed: 23, ThrottleRate: markQueuedFault, Operations: []string{"UpdateItem"}, KeyPrefix: "REQ#",
		})
		db = faulty
	}
	// The event's time is the test's clock, so that the scenario does not depend on
	// how fast the machine submits; the workers' handler takes real time.
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableOn(t, db, asyncevent.Options{DrawSettleWindow: settle, Clock: clock.Now})
	cutoff := t0.Add(time.Hour)
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{
		EventID: "lotto", EventType: asyncevent.Lottery, WinnerCount: winners,
		LotteryCutoffAt: asyncevent.MillisOf(cutoff), IndexShards: shards,
	})
	require.NoError(t, err)

	q := queue.NewMemory(queue.MemoryOptions{})
	work := make(chan int)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range work {
				_, err := c.Submit(ctx, q, "lotto", fmt.Sprintf("user-%03d", i))
				assert.NoError(t, err)
			}
		})
	}
	for i := range entries {
		work <- i
	}
	close(work)
	wg.Wait()

	var left, collected atomic.Int64
	handler := asyncevent.HandlerFunc(func(ctx context.Context, m asyncevent.Message) error {
		time.Sleep(60 * time.Millisecond) // the service's own step: the backlog's cause
		return nil
	})
	clock.Advance(cutoff.Sub(clock.Now()) - time.Second) // the workers start a second before the cutoff
	var workers []*asyncevent.Worker
	for range 2 {
		w, err := asyncevent.NewWorker(c, q, asyncevent.WorkerOptions{
			Concurrency: 1, WaitTime: 100 * time.Millisecond,
			ProcessOptions: asyncevent.ProcessOptions{Handler: handler, Backoff: fastRetry, OnOutcome: func(o asyncevent.Outcome) {
				switch o.Kind {
				case asyncevent.OutcomeLeftToDraw, asyncevent.OutcomeDuplicate:
					// Met once the draw began: left to it, or found collected (the draw
					// collects the entries no worker reached) or decided by it.
					left.Add(1)
				case asyncevent.OutcomeCollected:
					collected.Add(1)
				}
			}},
		})
		require.NoError(t, err)
		require.NoError(t, w.Start(ctx))
		workers = append(workers, w)
	}

	// Draw as soon as it is allowed: the cutoff plus the settle window, on the
	// event's clock and in real time alike.
	time.Sleep(time.Second + settle)
	clock.Advance(time.Second)
	_, err = c.Draw(ctx, "lotto")
	require.ErrorIs(t, err, asyncevent.ErrDrawTooEarly)
	clock.Advance(settle)
	res, err := c.Draw(ctx, "lotto")
	for range 10 {
		// Throttled writes of the draw (the injected faults) leave it to be run again,
		// as its error says; it resumes where it stopped.
		if !errors.Is(err, asyncevent.ErrThrottled) {
			break
		}
		res, err = c.Draw(ctx, "lotto")
	}
	require.NoError(t, err)
	assert.Equal(t, asyncevent.PhaseAnnounced, res.Record.Phase)
	assert.Len(t, res.Winners, winners)
	assert.Equal(t, int64(entries), res.Record.EntryCount, "every request queued by the cutoff is an entry")
	backlog := entries - collected.Load()
	t.Logf("at the draw: %d entries collected by the workers, a backlog of %d", collected.Load(), backlog)
	assert.Greater(t, backlog, int64(entries/2), "the scenario needs the draw to meet a backlog")

	v, err := c.VerifyDraw(ctx, "lotto")
	require.NoError(t, err)
	assert.True(t, v.OK(), "%s", v)

	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	require.NoError(t, q.WaitIdle(waitCtx), "the workers finish the backlog")
	for _, w := range workers {
		require.NoError(t, w.Stop(ctx))
	}
	assert.Positive(t, left.Load(), "workers met entries after the draw began and left them to it (or found them the draw's)")

	v, err = c.VerifyDraw(ctx, "lotto")
	require.NoError(t, err)
	assert.True(t, v.OK(), "after the backlog: %s", v)
	rs := requestsOf(t, c, "lotto")
	require.Len(t, rs, entries)
	codes := countBy(rs, func(r asyncevent.Request) asyncevent.ResultCode { return r.ResultCode })
	assert.Equal(t, map[asyncevent.ResultCode]int{
		asyncevent.ResultSuccess: winners, asyncevent.ResultLotteryLose: entries - winners,
	}, codes, "no entry closed as late or failed")
	if faulty != nil {
		t.Logf("faults: %+v", faulty.Counts())
		assert.Positive(t, faulty.Counts().Throttled)
	}
}
