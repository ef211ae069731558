package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/asyncevent/asyncevent/internal/ctxsleep"
	"github.com/asyncevent/asyncevent/queue"
)

// WorkerOptions configures a Worker. The zero value is valid.
type WorkerOptions struct {
	ProcessOptions

	// Concurrency is how many received messages the worker holds at once, at work
	// or waiting behind an earlier message of their FIFO group (which are processed
	// one after another, in receive order). Default: 8.
	Concurrency int

	// BatchSize is the most messages one receive asks for (SQS allows 10).
	// Default: 10.
	BatchSize int

	// WaitTime is the long-poll wait of a receive. It also bounds how long Stop waits
	// for a receive in flight on a queue that is not a [queue.CancelSafeQueue], such
	// as SQS.
	// Default: 20 seconds.
	WaitTime time.Duration

	// VisibilityTimeout hides a received message from other receivers while it is
	// processed; the worker extends it while the work goes on. Default: 60 seconds.
	VisibilityTimeout time.Duration

	// HoldSweepEvery is how often the worker runs the hold sweep (SweepHolds) of each
	// event with holds whose messages it has processed, and of each the hold registry
	// lists (HoldEvents, read every 10 seconds), under the event's sweep lease
	// so that the workers of an event sweep it one at a time: a hold that ran out
	// ends, and a seat given back goes to the waitlist, within about this long (plus
	// the lease of a sweeper that died, 10 seconds). Default: 1 second; negative: never
	// (sweep some other way: the CLI, a scheduled function).
	HoldSweepEvery time.Duration
}

// The defaults of WorkerOptions.
const (
	defaultConcurrency       = 8
	defaultBatchSize         = 10
	defaultWaitTime          = 20 * time.Second
	defaultVisibilityTimeout = 60 * time.Second
	defaultHoldSweepEvery    = time.Second
	holdSweepLease           = 10 * time.Second
	holdRegistryEvery        = 10 * time.Second
)

// union2 returns the strings of a and b, each once.
func union2(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// deleteBatchDelay is how long a finished message's delete waits for others to share
// its DeleteMessageBatch call.
const deleteBatchDelay = 20 * time.Millisecond

// Worker long-polls a queue and processes its messages with bounded concurrency:
// it extends a message's visibility while its work goes on, deletes what is done (in
// batches), leaves retryable failures for redelivery with backoff, and ends
// non-retryable ones FAILED_FINAL. The messages of one FIFO group ([queue.Delivery].GroupID)
// are processed one after another in receive order, the others at once; once one of
// a group is not done, the group's later messages of that receive are made visible
// again unstarted, behind it. Start it once; Stop stops it gracefully.
type Worker struct {
	p    *Processor
	q    queue.Queue
	opts WorkerOptions

	mu      sync.Mutex
	started bool
	stop    context.CancelFunc // stops receiving and starting messages
	abort   context.CancelFunc // cancels in-flight work, and a receive in flight
	fetched chan struct{}      // closed when the receive loop has returned
	done    chan struct{}      // closed when the worker has stopped

	inflight sync.WaitGroup
	slots    chan struct{}
	deletes  chan string
	deleted  chan struct{} // closed when the delete batcher has flushed and returned
}

// NewWorker returns a Worker that processes q's messages on c's table.
func NewWorker(c *Client, q queue.Queue, opts WorkerOptions) (*Worker, error) {
	if c == nil || q == nil {
		return nil, fmt.Errorf("%w: NewWorker needs a client and a queue", ErrInvalidOptions)
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = defaultConcurrency
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = defaultBatchSize
	}
	opts.WaitTime = orDefault(opts.WaitTime, defaultWaitTime)
	opts.VisibilityTimeout = orDefault(opts.VisibilityTimeout, defaultVisibilityTimeout)
	opts.HoldSweepEvery = orDefault(opts.HoldSweepEvery, defaultHoldSweepEvery)
	p := NewProcessor(c, opts.ProcessOptions)
	opts.ProcessOptions = p.opts
	return &Worker{
		p: p, q: q, opts: opts,
		fetched: make(chan struct{}),
		done:    make(chan struct{}),
		slots:   make(chan struct{}, opts.Concurrency),
		deletes: make(chan string, opts.Concurrency*2),
		deleted: make(chan struct{}),
	}, nil
}

// Start starts receiving and processing in the background and returns at once. The
// work runs under ctx's values; cancelling ctx stops the worker as Stop would, but
// without waiting. Start may be called once.
func (w *Worker) Start(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return errors.New("asyncevent: worker already started")
	}
	w.started = true
	workCtx, abort := context.WithCancel(context.WithoutCancel(ctx))
	stopCtx, stop := context.WithCancel(ctx)
	w.stop, w.abort = stop, abort
	// A long poll that is cancelled may still be handed messages that nobody then
	// holds a receipt of, so it is let run to its end unless the queue says that
	// cancelling it is safe; an abort ends it either way.
	receiveCtx := workCtx
	if cs, ok := w.q.(queue.CancelSafeQueue); ok && cs.ReceiveIsCancelSafe() {
		receiveCtx = stopCtx
	}
	go w.batchDeletes()
	go w.receive(stopCtx, receiveCtx, workCtx)
	swept := make(chan struct{})
	go w.sweepHolds(stopCtx, swept)
	go func() {
		<-w.fetched
		<-swept
		w.inflight.Wait()
		close(w.deletes)
		<-w.deleted
		abort()
		close(w.done)
	}()
	return nil
}

// Stop stops the worker gracefully and returns once it has stopped. From the call on,
// the worker starts no message: it receives no more, and every message it holds but
// has not started (one waiting behind an earlier message of its FIFO group, or one
// that a receive in flight returns) is made visible again at once, for another
// worker. A receive in flight on a [queue.CancelSafeQueue] ([queue.Memory]) is cancelled; on any
// other queue, such as SQS, it is let run to its end, at most WaitTime plus the
// round trip, since SQS may hand messages to a long poll that its client has given
// up on, and they would stay hidden for the visibility timeout. The messages in
// flight are let finish.
//
// So Stop takes about the longer of WaitTime (plus a round trip) and the longest work
// in flight, unless ctx ends first: then the work in flight is cancelled, each such message is
// released (its lease ended, the message visible again) for another worker, a
// receive in flight is cancelled too (what SQS hands to it then stays hidden until
// its VisibilityTimeout ends), and Stop returns ctx's error after the worker has
// stopped. Give ctx more than WaitTime to leave no message hidden.
func (w *Worker) Stop(ctx context.Context) error {
	w.mu.Lock()
	if !w.started {
		w.started = true
		close(w.done)
		w.mu.Unlock()
		return nil
	}
	w.mu.Unlock()
	w.stop()
	select {
	case <-w.done:
		_ = w.p.c.FlushProgress(ctx) // its last counts: a flush that fails is tried again later
		return nil
	case <-ctx.Done():
		w.abort()
		<-w.done
		return ctx.Err()
	}
}

// Done is closed when the worker has stopped.
func (w *Worker) Done() <-chan struct{} { return w.done }

// Run starts the worker and blocks until ctx ends, then stops it gracefully within
// grace (see Stop: a grace longer than WaitTime leaves no message hidden).
func (w *Worker) Run(ctx context.Context, grace time.Duration) error {
	if err := w.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	return w.Stop(stopCtx)
}

// sweepHolds runs the hold sweep of the events with holds the worker has met, every
// HoldSweepEvery, until ctx ends; then it closes done.
func (w *Worker) sweepHolds(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	if w.opts.HoldSweepEvery < 0 {
		return
	}
	tick := time.NewTicker(w.opts.HoldSweepEvery)
	defer tick.Stop()
	var listed []string // the hold registry's events, read every holdRegistryEvery
	var read time.Time
	othersUntil := map[string]EpochMillis{} // event → when the lease another worker holds on its sweep runs out
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if time.Since(read) >= holdRegistryEvery {
			if evs, err := w.p.c.HoldEvents(ctx); err == nil {
				listed, read = listed[:0], time.Now()
				for _, ev := range evs {
					listed = append(listed, ev.EventID)
				}
			} else if ctx.Err() == nil {
				w.opts.Logger.WarnContext(ctx, "reading the hold registry failed", slog.Any("error", err))
			}
		}
		for _, ev := range union2(w.p.holdEvents(), listed) {
			if w.p.c.now() < othersUntil[ev] {
				continue // another worker sweeps it: look again once its lease has run out
			}
			rep, err := w.p.c.SweepHolds(ctx, ev, HoldSweepOptions{Owner: w.opts.WorkerID, LeaseFor: holdSweepLease})
			if err == nil && rep.Skipped {
				othersUntil[ev] = rep.leaseUntil
			}
			switch {
			case err != nil && ctx.Err() == nil:
				w.opts.Logger.WarnContext(ctx, "the hold sweep failed; it runs again", slog.String("eventId", ev), slog.Any("error", err))
			case err == nil && rep.Expired+rep.Served+rep.Closed > 0:
				w.opts.Logger.InfoContext(ctx, "hold sweep", slog.String("eventId", ev), slog.Int("expired", rep.Expired),
					slog.Int("served", rep.Served), slog.Int("closed", rep.Closed))
			}
		}
	}
}

// receive is the receive loop: it asks for as many messages as there are free slots,
// one slot for each message held, and ends once stopCtx ends.
func (w *Worker) receive(stopCtx, receiveCtx, workCtx context.Context) {
	defer close(w.fetched)
	log := w.opts.Logger
	for {
		// Wait for one free slot, then take what else is free, up to a batch.
		select {
		case w.slots <- struct{}{}:
		case <-stopCtx.Done():
			return
		}
		n := 1
	fill:
		for n < w.opts.BatchSize {
			select {
			case w.slots <- struct{}{}:
				n++
			default:
				break fill
			}
		}
		ds, err := w.q.Receive(receiveCtx, n, w.opts.WaitTime, w.opts.VisibilityTimeout)
		for range n - len(ds) {
			<-w.slots
		}
		if stopCtx.Err() != nil {
			w.giveBack(workCtx, ds)
			return
		}
		if err != nil {
			log.WarnContext(stopCtx, "receive failed", slog.Any("error", err))
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
			w.inflight.Add(1)
			go func() {
				defer w.inflight.Done()
				w.runInOrder(stopCtx, workCtx, held)
			}()
		}
	}
}

// runInOrder processes a run of queue.Groups one delivery after another. It starts none
// once the worker is stopping, nor any after one that is not done: those it gives
// back. The deliveries that wait are kept hidden meanwhile.
func (w *Worker) runInOrder(stopCtx, ctx context.Context, ds []queue.Delivery) {
	var h *hider
	if len(ds) > 1 {
		h = w.hide(ctx, ds[1:])
	}
	for i, d := range ds {
		if stopCtx.Err() != nil {
			h.end()
			w.giveBack(ctx, ds[i:])
			return
		}
		h.starting(d)
		done := w.handle(ctx, d)
		<-w.slots
		if !done {
			h.end()
			w.giveBack(ctx, ds[i+1:])
			return
		}
	}
	h.end()
}

// giveBack makes held deliveries that were not started visible again at once, for
// any worker, and frees their slots. A FIFO queue keeps them in their group's order.
func (w *Worker) giveBack(ctx context.Context, ds []queue.Delivery) {
	if len(ds) == 0 {
		return
	}
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, d := range ds {
		wg.Go(func() {
			defer func() { <-w.slots }()
			if err := w.q.ChangeVisibility(bctx, d.Receipt, 0); err != nil {
				w.opts.Logger.WarnContext(ctx, "giving back a message failed", slog.String("messageId", d.MessageID), slog.Any("error", err))
			}
		})
	}
	wg.Wait()
}

// hider keeps the deliveries of a run hidden for the worker's visibility timeout
// while they wait behind the run's earlier ones. A nil hider does nothing.
type hider struct {
	mu      sync.Mutex
	waiting []queue.Delivery
	quit    chan struct{}
	exited  chan struct{}
}

// hide starts keeping ds hidden, every half of the visibility timeout.
func (w *Worker) hide(ctx context.Context, ds []queue.Delivery) *hider {
	h := &hider{waiting: ds, quit: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		defer close(h.exited)
		tick := time.NewTicker(w.opts.VisibilityTimeout / 2)
		defer tick.Stop()
		for {
			select {
			case <-h.quit:
				return
			case <-tick.C:
			}
			h.mu.Lock()
			for _, d := range h.waiting {
				bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
				if err := w.q.ChangeVisibility(bctx, d.Receipt, w.opts.VisibilityTimeout); err != nil {
					w.opts.Logger.WarnContext(ctx, "keeping a waiting message hidden failed", slog.String("messageId", d.MessageID), slog.Any("error", err))
				}
				cancel()
			}
			h.mu.Unlock()
		}
	}()
	return h
}

// starting stops keeping d, the first of those waiting, hidden: its work now does.
func (h *hider) starting(d queue.Delivery) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.waiting) > 0 && h.waiting[0].Receipt == d.Receipt {
		h.waiting = h.waiting[1:]
	}
}

// end stops the hider and returns once it changes no visibility any more, so that
// a message given back after it stays visible.
func (h *hider) end() {
	if h == nil {
		return
	}
	close(h.quit)
	<-h.exited
}

// handle processes one delivery, does what its result asks of the queue, and reports
// whether the message is done.
func (w *Worker) handle(ctx context.Context, d queue.Delivery) (done bool) {
	extend := &extender{visibility: w.opts.VisibilityTimeout, extend: func(ctx context.Context) error {
		return w.q.ChangeVisibility(ctx, d.Receipt, w.opts.VisibilityTimeout)
	}}
	res := w.p.process(ctx, d, extend)
	switch res.action {
	case actDelete:
		w.deletes <- d.Receipt
		return true
	case actRetry:
		// After a cancelled context too: the message is released for another worker.
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
		defer cancel()
		if err := w.q.ChangeVisibility(bctx, d.Receipt, min(res.delay, maxVisibility)); err != nil {
			w.opts.Logger.WarnContext(ctx, "changing visibility failed", slog.String("requestId", res.outcome.RequestID), slog.Any("error", err))
		}
	}
	return false
}

// maxVisibility is SQS's limit on a message's visibility timeout.
const maxVisibility = 12 * time.Hour

// batchDeletes deletes finished messages in batches of up to ten, waiting at most
// deleteBatchDelay for a batch to fill.
func (w *Worker) batchDeletes() {
	defer close(w.deleted)
	var batch []string
	flush := func() {
		if len(batch) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), bookkeepingTimeout)
		defer cancel()
		if err := w.q.Delete(ctx, batch...); err != nil {
			// The messages come back and are deleted then as duplicates.
			w.opts.Logger.Warn("deleting messages failed", slog.Int("count", len(batch)), slog.Any("error", err))
		}
		batch = batch[:0]
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case r, ok := <-w.deletes:
			if !ok {
				flush()
				return
			}
			batch = append(batch, r)
			if len(batch) == 1 {
				timer.Reset(deleteBatchDelay)
			}
			if len(batch) >= 10 {
				timer.Stop()
				flush()
			}
		case <-timer.C:
			flush()
		}
	}
}
