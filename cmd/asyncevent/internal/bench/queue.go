package bench

import (
	"context"
	"sync/atomic"

	"github.com/asyncevent/asyncevent/queue"
)

// CountingQueue counts the sends through a queue. The bench and the demo use it.
type CountingQueue struct {
	queue.Queue
	sends atomic.Int64
}

// NewCountingQueue returns a CountingQueue around q.
func NewCountingQueue(q queue.Queue) *CountingQueue { return &CountingQueue{Queue: q} }

// Send implements queue.Queue.
func (q *CountingQueue) Send(ctx context.Context, m queue.OutgoingMessage) error {
	q.sends.Add(1)
	return q.Queue.Send(ctx, m)
}

// Sends is the number of sends so far, failed ones included.
func (q *CountingQueue) Sends() int64 { return q.sends.Load() }

// newQueue returns a CountingQueue around a new in-memory queue, and that queue.
func newQueue() *CountingQueue {
	return NewCountingQueue(queue.NewMemory(queue.MemoryOptions{}))
}

// memory returns the in-memory queue under a queue made by newQueue.
func memory(q *CountingQueue) *queue.Memory { return q.Queue.(*queue.Memory) }
