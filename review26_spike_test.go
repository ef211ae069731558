package asyncevent_test

import (
	"context"
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

// Cancels during a spike, on DynamoDB's limits (asynceventtest.NewLimitedClient: a
// transaction holds its items 25 ms, a single write on a held item is refused with
// TransactionConflictException). CancelRequest's transaction names every capacity
// shard (the pool version), so while it commits every home claim on every shard is
// refused; a claim refused three times leaves its home shard for throughput and
// lists it left on the CONFIG, for good (docs/design.md, "The home claim"): from
// then on every request homed there goes the leased way. The operator's cancel
// should not cost the sale its cheap path.
func TestReview26CancelsDuringASpikeLeaveNoShard(t *testing.T) {
	for _, withCancels := range []bool{false, true} {
		t.Run(fmt.Sprintf("cancels=%v", withCancels), func(t *testing.T) { review26SpikeWithCancels(t, withCancels) })
	}
}

func review26SpikeWithCancels(t *testing.T, withCancels bool) {
	ctx := context.Background()
	limited, limits := asynceventtest.NewLimitedClient(asynceventtest.DynamoDB(t), asynceventtest.Limits{})
	c := asynceventtest.NewTableOn(t, limited, asyncevent.Options{})
	clean, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName()})
	require.NoError(t, err)
	_, err = c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "busy", EventType: asyncevent.FirstCome, CapacityTotal: 1500, CapacityShards: 4})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	const users = 600
	var wg sync.WaitGroup
	work := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range work {
				_, err := c.Submit(ctx, q, "busy", fmt.Sprintf("u%05d", i))
				assert.NoError(t, err)
			}
		})
	}
	for i := range users {
		work <- i
	}
	close(work)
	wg.Wait()

	w, err := asyncevent.NewWorker(c, q, asyncevent.WorkerOptions{Concurrency: 32, WaitTime: 20 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	cancels := 0
	deadline := time.Now().Add(time.Minute)
	for l := q.Len(); l.Visible+l.InFlight > 0 && time.Now().Before(deadline); l = q.Len() {
		page, err := clean.ListEventRequests(ctx, "busy", asyncevent.EventListOptions{Status: asyncevent.StatusSucceeded, Limit: 1})
		require.NoError(t, err)
		if withCancels && len(page.Requests) > 0 {
			up, err := c.CancelRequest(ctx, page.Requests[0].RequestID, asyncevent.CancelRequestInput{Actor: "ops"})
			if err == nil && up.Applied {
				cancels++
			}
		}
		time.Sleep(30 * time.Millisecond)
	}
	asynceventtest.WaitDrained(t, q, time.Minute)
	require.NoError(t, w.Stop(ctx))
	t.Logf("%d cancels applied; limits: %d conflicts, %d throttled", cancels, limits.Counts().Conflicts, limits.Counts().Throttled)
	if withCancels {
		require.Positive(t, cancels)
	}
	asynceventtest.CheckEvent(t, clean, "busy", asynceventtest.CheckOptions{})
}
