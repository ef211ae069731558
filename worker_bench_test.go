package asyncevent_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// queueUsers submits n users of a fresh FIRST_COME event and returns its queue.
func queueUsers(b *testing.B, c *asyncevent.Client, eventID string, capacity int64, n int) *queue.Memory {
	b.Helper()
	ctx := context.Background()
	settings := asyncevent.EventSettings{EventID: eventID, EventType: asyncevent.FirstCome, CapacityTotal: capacity}
	settings.CapacityShards = int((capacity + asyncevent.MaxSeatsPerShard - 1) / asyncevent.MaxSeatsPerShard) // a shard's seats are bounded
	_, err := c.CreateEvent(ctx, settings)
	require.NoError(b, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	work := make(chan int)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range work {
				if _, err := c.Submit(ctx, q, eventID, fmt.Sprintf("u%d", i)); err != nil {
					b.Error(err)
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	return q
}

// BenchmarkProcessMessage measures one FIRST_COME message against DynamoDB Local:
// a winner, and a loser once the processor knows the event is sold out.
func BenchmarkProcessMessage(b *testing.B) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		capacity func(n int) int64
	}{
		{"winner", func(n int) int64 { return int64(n) + 1 }},
		{"loser-after-sold-out", func(int) int64 { return 1 }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			counter := asynceventtest.NewCounter(asynceventtest.DynamoDB(b))
			c := asynceventtest.NewTableOn(b, counter, asyncevent.Options{})
			q := queueUsers(b, c, "ev", tc.capacity(b.N), b.N+1)
			p := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
			ds, err := q.Receive(ctx, 1, 0, time.Hour)
			require.NoError(b, err)
			asynceventtest.Process(ctx, p, ds) // the first winner; the sold-out case learns it next
			before := counter.Snapshot()
			b.ResetTimer()
			for range b.N {
				ds, err := q.Receive(ctx, 1, 0, time.Hour)
				if err != nil || len(ds) != 1 {
					b.Fatal(err, len(ds))
				}
				if failed := asynceventtest.Process(ctx, p, ds); len(failed) != 0 {
					b.Fatal("message failed")
				}
			}
			reportCosts(b, counter.Snapshot().Sub(before))
		})
	}
}

// BenchmarkWorkers measures messages per second through Worker loops on one DynamoDB
// Local, with 1, 4 and 16 messages in flight.
func BenchmarkWorkers(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("concurrency=%d", n), func(b *testing.B) {
			c := asynceventtest.NewTable(b)
			q := queueUsers(b, c, "ev", int64(b.N/2+1), b.N)
			b.ResetTimer()
			start := time.Now()
			w, err := asyncevent.NewWorker(c, q, asyncevent.WorkerOptions{Concurrency: n, WaitTime: 10 * time.Millisecond})
			require.NoError(b, err)
			require.NoError(b, w.Start(ctx))
			asynceventtest.WaitDrained(b, q, 10*time.Minute)
			elapsed := time.Since(start)
			b.StopTimer()
			require.NoError(b, w.Stop(ctx))
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
		})
	}
}
