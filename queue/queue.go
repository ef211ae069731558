// Package queue carries asyncevent's messages from ingest to the workers, with
// at-least-once delivery: Queue is what the library needs of a queue, SQS is the real
// one, and Memory serves examples, tests and a single process.
package queue

import (
	"context"
	"errors"
	"time"
)

// Queue carries one message per request from ingest to the workers, with
// at-least-once delivery. SQS is the real one; Memory serves examples and
// unit tests.
type Queue interface {
	// Send puts one message on the queue. It returns only once the queue has it.
	Send(ctx context.Context, m OutgoingMessage) error

	// Receive waits up to wait for at most max messages and hides each one it returns
	// from other receivers for visibility (zero: the queue's default). It returns an
	// empty slice, not an error, when nothing came in time.
	Receive(ctx context.Context, max int, wait, visibility time.Duration) ([]Delivery, error)

	// Delete removes delivered messages by their receipts, once their work is done.
	Delete(ctx context.Context, receipts ...string) error

	// ChangeVisibility hides a delivered message for timeout from now: longer while its
	// work goes on, or zero to make it visible again at once. A receipt that no longer
	// holds its message in flight is ErrStaleReceipt.
	ChangeVisibility(ctx context.Context, receipt string, timeout time.Duration) error
}

// CancelSafeQueue is a Queue whose Receive takes no message that it does not return,
// even when its ctx ends during a long poll: Memory is one. A stopping Worker
// cancels such a receive at once. An SQS long poll is not one: SQS (and fauxqs) may
// hand messages to a request whose client has gone, and they stay hidden for their
// visibility timeout under receipts nobody holds; so a stopping Worker lets any other
// queue's receive run out its wait and releases what it returns.
type CancelSafeQueue interface {
	Queue
	// ReceiveIsCancelSafe reports whether cancelling Receive's ctx can leave no
	// message hidden.
	ReceiveIsCancelSafe() bool
}

// Groups splits a received batch into the runs that keep a FIFO queue's order:
// the deliveries of one message group, in receive order, form one run; each delivery
// without a group is a run of its own. It returns indexes into ds, the runs in the
// order of their first delivery. The asyncevent Worker and package
// awslambda process the runs at once and each run's deliveries one after another,
// and do not start a run's later deliveries once one of them is not done: they come
// back, behind it, in order.
func Groups(ds []Delivery) [][]int {
	var runs [][]int
	at := map[string]int{} // group → its run in runs
	for i, d := range ds {
		if d.GroupID == "" {
			runs = append(runs, []int{i})
			continue
		}
		r, ok := at[d.GroupID]
		if !ok {
			r = len(runs)
			at[d.GroupID] = r
			runs = append(runs, nil)
		}
		runs[r] = append(runs[r], i)
	}
	return runs
}

// OutgoingMessage is a message to send.
type OutgoingMessage struct {
	Body []byte
	// GroupID and DeduplicationID are used by FIFO queues (MessageGroupId and
	// MessageDeduplicationId) and ignored by standard ones. Ingest sets them to the
	// eventId and the requestId.
	GroupID         string
	DeduplicationID string
	// Attributes travel with the message beside its body, as string message
	// attributes on SQS (which allows at most 10 a message, counted in its size) and
	// unchanged on a Memory. Ingest sends none of its own; an Options.Observer
	// may add some, such as a W3C traceparent. Default: none.
	Attributes map[string]string
}

// Delivery is one receipt of a message. The same message can be delivered more than
// once; each delivery has its own receipt.
type Delivery struct {
	MessageID    string
	Receipt      string
	Body         []byte
	ReceiveCount int       // 1 on the first delivery
	SentAt       time.Time // when the queue accepted the message (SQS SentTimestamp)
	// GroupID is the message group of a FIFO queue's message (SQS MessageGroupId);
	// empty on a standard queue. Deliveries of one group are processed one after
	// another, in receive order (see Groups).
	GroupID string
	// Attributes are the message's OutgoingMessage.Attributes (SQS: its String
	// message attributes); nil when it has none.
	Attributes map[string]string
}

// ErrStaleReceipt reports a receipt that no longer holds its message in
// flight: the message was deleted, delivered again (each delivery has a new
// receipt), moved to the dead letters, or its visibility timeout ran out.
// ChangeVisibility returns it, from both Memory and SQS; a worker
// that gets it while extending a lease has lost the message to another
// delivery.
var ErrStaleReceipt = errors.New("queue: stale receipt")

// ErrInvalidOptions reports an argument a queue cannot be made with.
var ErrInvalidOptions = errors.New("queue: invalid options")
