package asyncevent_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// gatedQueue holds each Receive until the test opens its gate, and tells when one
// is waiting there. Past the gate, a receive on a CancelSafeQueue goes on as usual;
// on any other it behaves as an SQS long poll does: the queue answers it whether or
// not its caller has given up, and what a caller who has given up is handed stays
// hidden for the visibility timeout.
type gatedQueue struct {
	queue.Queue
	polling chan struct{}
	gate    chan struct{}
}

func newGatedQueue(q queue.Queue) gatedQueue {
	return gatedQueue{Queue: q, polling: make(chan struct{}, 1), gate: make(chan struct{})}
}

func (q gatedQueue) Receive(ctx context.Context, max int, wait, visibility time.Duration) ([]queue.Delivery, error) {
	select {
	case q.polling <- struct{}{}:
	default:
	}
	<-q.gate
	if q.ReceiveIsCancelSafe() {
		return q.Queue.Receive(ctx, max, wait, visibility)
	}
	ds, err := q.Queue.Receive(context.WithoutCancel(ctx), max, wait, visibility)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return ds, err
}

func (q gatedQueue) ReceiveIsCancelSafe() bool {
	cs, ok := q.Queue.(queue.CancelSafeQueue)
	return ok && cs.ReceiveIsCancelSafe()
}

// testQueue returns a queue.Memory or a queue on the local SQS (fauxqs).
func testQueue(t *testing.T, kind string, fifo bool) queue.Queue {
	t.Helper()
	if kind == "memory" {
		return queue.NewMemory(queue.MemoryOptions{FIFO: fifo})
	}
	return asynceventtest.NewSQSQueue(t, asynceventtest.SQSQueueOptions{FIFO: fifo})
}

// hidden is longer than any wait of these tests: a message left hidden by a stopping
// worker would come back only after the test has failed.
const hidden = 2 * time.Minute

// TestStoppingWorkerGivesBackItsLastReceive stops a worker while its long poll is in
// flight, then the first user clicks and the poll is answered: her message, which an
// SQS poll is handed after the stop began, is not started and not left hidden, and
// she wins against the users who click after her on the restarted worker.
func TestStoppingWorkerGivesBackItsLastReceive(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"memory", "sqs"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			c := newSale(t, 3)
			q := newGatedQueue(testQueue(t, kind, false))
			log := &processingLog{}
			old, err := asyncevent.NewWorker(c, q, asyncevent.WorkerOptions{WaitTime: 5 * time.Second, VisibilityTimeout: hidden,
				ProcessOptions: asyncevent.ProcessOptions{OnOutcome: log.onOutcome}})
			require.NoError(t, err)
			startCtx, stop := context.WithCancel(ctx)
			require.NoError(t, old.Start(startCtx))
			select {
			case <-q.polling:
			case <-time.After(30 * time.Second):
				t.Fatal("the worker never polled")
			}
			stop() // the stop begins: Start's ctx ends
			sent := submitInOrder(t, c, q, 1)
			close(q.gate)
			stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			require.NoError(t, old.Stop(stopCtx), "the poll in flight ends within WaitTime")
			assert.Empty(t, log.requests(), "nothing started after the stop began")

			for _, u := range []string{"u001", "u002", "u003", "u004"} {
				p, err := c.Submit(ctx, q, "sale", u)
				require.NoError(t, err)
				sent = append(sent, p.RequestID)
			}
			runWorker(t, c, q.Queue, asyncevent.WorkerOptions{Concurrency: 1, VisibilityTimeout: hidden})
			won := winnersOnceFinal(t, c, len(sent))
			assert.True(t, won[sent[0]], "the first to click wins")
			if kind == "memory" { // a queue.Memory delivers in the order messages became visible
				assert.Equal(t, map[string]bool{sent[0]: true, sent[1]: true, sent[2]: true}, won)
			}
		})
	}
}

// TestWorkerRestartedMidSpikeKeepsStrictOrder restarts the only worker of a strict
// first-come event in the middle of its spike, while it holds a batch of the event's
// group: what it has not started goes back at once, in order, and the new worker
// carries on from there. Processing follows send order exactly across the restart,
// and the winners are the first N sent.
func TestWorkerRestartedMidSpikeKeepsStrictOrder(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"memory", "sqs"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			const capacity, users = 5, 30
			c := newSale(t, capacity)
			q := testQueue(t, kind, true)
			sent := submitInOrder(t, c, q, users)

			log := &processingLog{}
			reached, proceed := make(chan struct{}), make(chan struct{})
			var once sync.Once
			blockAtThird := asyncevent.HandlerFunc(func(_ context.Context, m asyncevent.Message) error {
				if m.RequestID == sent[2] {
					once.Do(func() { close(reached) })
					<-proceed
				}
				return nil
			})
			old, err := asyncevent.NewWorker(c, q, asyncevent.WorkerOptions{Concurrency: 10, WaitTime: time.Second, VisibilityTimeout: hidden,
				ProcessOptions: asyncevent.ProcessOptions{Handler: blockAtThird, OnOutcome: log.onOutcome}})
			require.NoError(t, err)
			startCtx, stop := context.WithCancel(ctx)
			require.NoError(t, old.Start(startCtx))
			select {
			case <-reached:
			case <-time.After(30 * time.Second):
				t.Fatal("the worker never reached the third request")
			}
			stop()
			close(proceed)
			stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			require.NoError(t, old.Stop(stopCtx))
			assert.Equal(t, sent[:3], log.requests(), "the stopping worker finished what it had started and started nothing more")

			runWorker(t, c, q, asyncevent.WorkerOptions{Concurrency: 10, VisibilityTimeout: hidden,
				ProcessOptions: asyncevent.ProcessOptions{OnOutcome: log.onOutcome}})
			won := winnersOnceFinal(t, c, users)
			assert.Equal(t, sent, log.requests(), "processed in send order across the restart")
			want := map[string]bool{}
			for _, id := range sent[:capacity] {
				want[id] = true
			}
			assert.Equal(t, want, won)
		})
	}
}
