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

// The rules of hold.go's rows, a case each, where a write lands after another
// changed its item.
func TestHoldRules(t *testing.T) {
	t.Parallel()
	// A release read the request HELD, and its write lands after the confirm: the
	// "hold released" row leaves HELD only, so the paid seat stays the buyer's and
	// nothing is given back to the waitlist.
	t.Run("a release landing after the confirm", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		clock := asynceventtest.NewClock(t0)
		hb := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(t))
		c := asynceventtest.NewTableOn(t, hb, asyncevent.Options{Clock: clock.Now})
		holdsEvent(t, c, "pay", 1, 1, time.Minute, 0)
		q := queue.NewMemory(queue.MemoryOptions{})
		id := submitAll(t, c, clock, q, "pay", 1)[0]
		drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)
		r, err := c.GetRequest(ctx, id)
		require.NoError(t, err)
		require.Equal(t, asyncevent.StatusHeld, r.Status)

		held := hb.Hold(func(op string, _ any) bool { return op == "TransactWriteItems" }, 1, asynceventtest.CallerWaits)
		released := make(chan asyncevent.Transition, 1)
		go func() {
			tr, err := c.Release(ctx, id)
			assert.NoError(t, err)
			released <- tr
		}()
		require.NoError(t, held.Caught(ctx))
		paid, err := c.Confirm(ctx, id)
		require.NoError(t, err)
		require.True(t, paid.Applied)
		require.NoError(t, held.Land(ctx))

		assert.False(t, (<-released).Applied, "the release of a confirmed request")
		r, err = c.GetRequest(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, asyncevent.StatusSucceeded, r.Status)
		asynceventtest.CheckEvent(t, c, "pay", asynceventtest.CheckOptions{})
	})
}
