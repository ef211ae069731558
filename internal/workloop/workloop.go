// Package workloop is the Worker's machinery: the receive loop that holds one slot
// for each message, the in-order runs of a FIFO group with their waiting deliveries
// kept hidden, the give-back of deliveries not started, the batched deletes and the
// hold-sweep ticker. It owns no row: it processes a delivery through the Process
// it is given and sweeps through a HoldSweeper, and it talks to the queue only.
package workloop

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/asyncevent/asyncevent/internal/ctxsleep"
	"github.com/asyncevent/asyncevent/queue"
)

// Action is what the queue should do with a message once it was processed.
type Action int

const (
	Delete Action = iota // done: delete it
	Retry                // leave it, visible again after Verdict.Delay
	Leave                // leave it as it is (another delivery has it)
)

// Verdict is the result of processing one delivery.
type Verdict struct {
	Action    Action
	Delay     time.Duration // Retry's
	RequestID string        // for the log of a visibility change that failed
}

// Process runs one delivery to its verdict. It never panics. It keeps the message
// hidden itself while its work goes on.
type Process func(ctx context.Context, d queue.Delivery) Verdict

// Config is the loop's settings, defaults applied by the caller.
type Config struct {
	Concurrency       int
	BatchSize         int
	WaitTime          time.Duration
	VisibilityTimeout time.Duration
	HoldSweepEvery    time.Duration // negative: never
	// Bookkeeping bounds each queue call made for a message already decided (a
	// give-back, a visibility change, a delete), after a cancelled context too.
	Bookkeeping time.Duration
	Logger      *slog.Logger
}

// maxVisibility is SQS's limit on a message's visibility timeout.
const maxVisibility = 12 * time.Hour

// Loop receives q's messages and processes them with bounded concurrency. Run it
// once.
type Loop struct {
	q       queue.Queue
	cfg     Config
	process Process
	holds   HoldSweeper

	inflight sync.WaitGroup
	slots    chan struct{}
	deletes  chan string
	deleted  chan struct{} // closed when the delete batcher has flushed and returned
}

// New returns a loop over q; holds may be nil when HoldSweepEvery is negative.
func New(q queue.Queue, cfg Config, process Process, holds HoldSweeper) *Loop {
	return &Loop{
		q: q, cfg: cfg, process: process, holds: holds,
		slots:   make(chan struct{}, cfg.Concurrency),
		deletes: make(chan string, cfg.Concurrency*2),
		deleted: make(chan struct{}),
	}
}

// Run receives and processes messages until stopCtx ends, then gives back what it
// holds unstarted, lets the work in flight finish under workCtx, flushes the
// deletes and returns. Cancelling workCtx cancels the work in flight and a receive
// in flight.
func (l *Loop) Run(stopCtx, workCtx context.Context) {
	// A long poll that is cancelled may still be handed messages that nobody then
	// holds a receipt of, so it is let run to its end unless the queue says that
	// cancelling it is safe; an abort ends it either way.
	receiveCtx := workCtx
	if cs, ok := l.q.(queue.CancelSafeQueue); ok && cs.ReceiveIsCancelSafe() {
		receiveCtx = stopCtx
	}
	go l.batchDeletes()
	swept := make(chan struct{})
	go l.sweepHolds(stopCtx, swept)
	l.receive(stopCtx, receiveCtx, workCtx)
	<-swept
	l.inflight.Wait()
	close(l.deletes)
	<-l.deleted
}

// receive asks for as many messages as there are free slots, one slot for each
// message held, until stopCtx ends.
func (l *Loop) receive(stopCtx, receiveCtx, workCtx context.Context) {
	for {
		select {
		case l.slots <- struct{}{}:
		case <-stopCtx.Done():
			return
		}
		n := 1
	fill:
		for n < l.cfg.BatchSize {
			select {
			case l.slots <- struct{}{}:
				n++
			default:
				break fill
			}
		}
		ds, err := l.q.Receive(receiveCtx, n, l.cfg.WaitTime, l.cfg.VisibilityTimeout)
		for range n - len(ds) {
			<-l.slots
		}
		if stopCtx.Err() != nil {
			l.giveBack(workCtx, ds)
			return
		}
		if err != nil {
			l.cfg.Logger.WarnContext(stopCtx, "receive failed", slog.Any("error", err))
			if ctxsleep.Sleep(stopCtx, time.Second) != nil {
				return
			}
			continue
		}
		for _, run := range queue.Groups(ds) {
			held := make([]queue.Delivery, len(run))
			for i, at := range run {
				held[i] = ds[at]
			}
			l.inflight.Add(1)
			go func() {
				defer l.inflight.Done()
				l.runInOrder(stopCtx, workCtx, held)
			}()
		}
	}
}

// runInOrder processes a run of queue.Groups one delivery after another. It starts none
// once the loop is stopping, nor any after one that is not done: those it gives
// back. The deliveries that wait are kept hidden meanwhile.
func (l *Loop) runInOrder(stopCtx, ctx context.Context, ds []queue.Delivery) {
	var h *hider
	if len(ds) > 1 {
		h = l.hide(ctx, ds[1:])
	}
	for i, d := range ds {
		if stopCtx.Err() != nil {
			h.end()
			l.giveBack(ctx, ds[i:])
			return
		}
		h.starting(d)
		done := l.handle(ctx, d)
		<-l.slots
		if !done {
			h.end()
			l.giveBack(ctx, ds[i+1:])
			return
		}
	}
	h.end()
}

// giveBack makes held deliveries that were not started visible again at once, for
// any worker, and frees their slots. A FIFO queue keeps them in their group's order.
func (l *Loop) giveBack(ctx context.Context, ds []queue.Delivery) {
	if len(ds) == 0 {
		return
	}
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.Bookkeeping)
	defer cancel()
	var wg sync.WaitGroup
	for _, d := range ds {
		wg.Go(func() {
			defer func() { <-l.slots }()
			if err := l.q.ChangeVisibility(bctx, d.Receipt, 0); err != nil {
				l.cfg.Logger.WarnContext(ctx, "giving back a message failed", slog.String("messageId", d.MessageID), slog.Any("error", err))
			}
		})
	}
	wg.Wait()
}

// handle processes one delivery, does what its verdict asks of the queue, and reports
// whether the message is done.
func (l *Loop) handle(ctx context.Context, d queue.Delivery) (done bool) {
	v := l.process(ctx, d)
	switch v.Action {
	case Delete:
		l.deletes <- d.Receipt
		return true
	case Retry:
		// After a cancelled context too: the message is released for another worker.
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.Bookkeeping)
		defer cancel()
		if err := l.q.ChangeVisibility(bctx, d.Receipt, min(v.Delay, maxVisibility)); err != nil {
			l.cfg.Logger.WarnContext(ctx, "changing visibility failed", slog.String("requestId", v.RequestID), slog.Any("error", err))
		}
	}
	return false
}
