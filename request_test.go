package asyncevent_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// The rules of request.go's rows, a case each.
func TestRequestRules(t *testing.T) {
	t.Parallel()
	// A worker that believes the event sold out ends its losers without a lease (the
	// "first-come sold out" row), but never a request another delivery holds
	// PROCESSING under a live lease: that delivery's claim may be taking a seat, and
	// it alone decides the request.
	t.Run("sold out leaves a request processing under a lease", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		clock := asynceventtest.NewClock(t0)
		c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
		_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 1})
		require.NoError(t, err)
		p, err := c.Submit(ctx, queue.NewMemory(queue.MemoryOptions{}), "sale", "u1")
		require.NoError(t, err)
		ref := asyncevent.RequestRef{RequestID: p.RequestID, EventID: "sale", UserID: "u1"}
		lease := asyncevent.Lease{Owner: "worker-1", Duration: time.Minute}
		started, err := c.Rows().StartProcessing(ctx, ref, lease)
		require.NoError(t, err)
		require.True(t, started.Applied)

		rejected, err := c.Rows().RejectSoldOut(ctx, ref)
		require.NoError(t, err)
		assert.False(t, rejected.Applied, "a sold-out rejection of a request under a live lease")
		won, err := c.Rows().ClaimSeat(ctx, ref, lease)
		require.NoError(t, err)
		assert.True(t, won.Applied, "the lease holder claims its seat")
		r, err := c.GetRequest(ctx, p.RequestID)
		require.NoError(t, err)
		assert.Equal(t, asyncevent.StatusSucceeded, r.Status)
		asynceventtest.CheckEvent(t, c, "sale", asynceventtest.CheckOptions{})
	})
	// A final failure without a lease (an operator's, a sweeper's) never ends a
	// first-come request: a claim of it without a lease may hold its seat on its home
	// shard before any write on the request, so only a lease holder, having closed
	// the places its claims go to, ends one without a seat.
	t.Run("a final failure without a lease leaves a first-come request", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		clock := asynceventtest.NewClock(t0)
		c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
		_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 1})
		require.NoError(t, err)
		q := queue.NewMemory(queue.MemoryOptions{})
		p, err := c.Submit(ctx, q, "sale", "u1")
		require.NoError(t, err)

		failed, err := c.Rows().MarkFailed(ctx, asyncevent.RequestRef{RequestID: p.RequestID, EventID: "sale", UserID: "u1"},
			asyncevent.Failure{Class: asyncevent.NonRetryable, Code: asyncevent.ResultFailedWorker, Cause: errors.New("given up")})
		require.NoError(t, err)
		assert.False(t, failed.Applied, "a first-come request failed without its lease")
		drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)
		r, err := c.GetRequest(ctx, p.RequestID)
		require.NoError(t, err)
		assert.Equal(t, asyncevent.StatusSucceeded, r.Status, "its worker decides it")
		asynceventtest.CheckEvent(t, c, "sale", asynceventtest.CheckOptions{})
	})
}
