package asynceventtest_test

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

// In a bubble a table is made, written and deleted through the bubble's client; the
// calls to DynamoDB Local take none of the bubble's time, and a wait on it (a message
// hidden for an hour) passes on it.
func TestInBubble(t *testing.T) {
	t.Parallel()
	asynceventtest.InBubble(t, func(t *testing.T) {
		ctx := context.Background()
		start := time.Now()
		c := asynceventtest.NewTable(t)
		_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "ev", EventType: asyncevent.FirstCome, CapacityTotal: 1})
		require.NoError(t, err)
		assert.Equal(t, start, time.Now(), "calls to DynamoDB Local take none of the bubble's time")

		q := queue.NewMemory(queue.MemoryOptions{})
		require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte("x")}))
		ds, err := q.Receive(ctx, 1, 0, time.Hour)
		require.NoError(t, err)
		require.Len(t, ds, 1)
		for range 1000 { // long polls of 20 s, until it is back
			if ds, err = q.Receive(ctx, 1, 20*time.Second, time.Hour); err != nil || len(ds) > 0 {
				break
			}
		}
		require.NoError(t, err)
		assert.Len(t, ds, 1, "back once its hour of visibility ran out")
		assert.GreaterOrEqual(t, time.Since(start), time.Hour)
	})
}
