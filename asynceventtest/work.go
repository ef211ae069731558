package asynceventtest

import (
	"context"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/queue"
)

// WorkResult is what became of a message that Work processed.
type WorkResult struct {
	// Outcome is the one ProcessOptions.OnOutcome was given.
	asyncevent.Outcome

	// Redeliver tells that the Processor wants the message back (ProcessOne did not
	// finish it): a retry, a lease held by another worker, a body left for the
	// dead-letter queue. false: the message is done and a queue would delete it.
	Redeliver bool
}

// Work processes m as one delivery through asyncevent.NewProcessor(c, opts), the way
// a worker that received it would (Processor.ProcessOne: a request held is kept under
// its lease, renewed at half of it), and returns its outcome. The delivery is a first
// receive under a made-up message ID and receipt, sent now by c's clock (a zero
// SentAt, which the Processor takes for c's clock). An OnOutcome in opts is called as
// well. Work fails the test when m does not encode.
func Work(ctx context.Context, t testing.TB, c *asyncevent.Client, m asyncevent.Message, opts asyncevent.ProcessOptions) WorkResult {
	t.Helper()
	body, err := asyncevent.EncodeMessage(m)
	if err != nil {
		t.Fatalf("asynceventtest: work: %v", err)
	}
	return WorkDelivery(ctx, t, c, queue.Delivery{Body: body}, opts)
}

// WorkDelivery is Work on a delivery of the caller's: a later receive, a given send
// time, a body that does not decode. An empty MessageID or Receipt is made up, and a
// zero ReceiveCount is 1.
func WorkDelivery(ctx context.Context, t testing.TB, c *asyncevent.Client, d queue.Delivery, opts asyncevent.ProcessOptions) WorkResult {
	t.Helper()
	if d.MessageID == "" {
		d.MessageID = uuid.NewString()
	}
	if d.Receipt == "" {
		d.Receipt = "receipt-" + uuid.NewString()
	}
	d.ReceiveCount = max(d.ReceiveCount, 1)
	var outcome *asyncevent.Outcome
	callerHook := opts.OnOutcome
	opts.OnOutcome = func(o asyncevent.Outcome) {
		if callerHook != nil {
			callerHook(o)
		}
		outcome = &o
	}
	_, done, _ := asyncevent.NewProcessor(c, opts).ProcessOne(ctx, d, 0, nil)
	if outcome == nil {
		t.Fatalf("asynceventtest: work: message %s ended without an outcome", d.MessageID)
	}
	return WorkResult{Outcome: *outcome, Redeliver: !done}
}

// Process processes a received batch through p as a worker would (Processor.ProcessOne
// each, without keeping them hidden; a request held is kept under its lease, renewed
// at half of it), and returns the IDs of the messages that must
// come back: those not finished. The runs of queue.Groups go at once; a FIFO group's
// deliveries go one after another in receive order, and once one of them is not
// finished the group's later ones are not started and come back with it.
func Process(ctx context.Context, p *asyncevent.Processor, ds []queue.Delivery) (notDone []string) {
	done := make([]bool, len(ds))
	var wg sync.WaitGroup
	for _, run := range queue.Groups(ds) {
		wg.Go(func() {
			for _, i := range run {
				if _, done[i], _ = p.ProcessOne(ctx, ds[i], 0, nil); !done[i] {
					return
				}
			}
		})
	}
	wg.Wait()
	for i, d := range ds {
		if !done[i] {
			notDone = append(notDone, d.MessageID)
		}
	}
	return notDone
}
