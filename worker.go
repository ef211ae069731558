package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// ProcessMessages processes a batch of deliveries, one goroutine each, and returns
// the IDs of the messages that must come back (the rest are done and may be deleted):
// the shape of an AWS Lambda SQS handler's partial batch response.
func (p *Processor) ProcessMessages(ctx context.Context, ds []Delivery) (failedIDs []string) {
	results := make([]result, len(ds))
	var wg sync.WaitGroup
	for i, d := range ds {
		wg.Go(func() { results[i] = p.process(ctx, d, nil) })
	}
	wg.Wait()
	for i, r := range results {
		if r.action != actDelete {
			failedIDs = append(failedIDs, ds[i].MessageID)
		}
	}
	return failedIDs
}

// WorkerOptions configures a Worker. The zero value is valid.
type WorkerOptions struct {
	ProcessOptions

	// Concurrency is how many messages are processed at once. Default: 8.
	Concurrency int

	// BatchSize is the most messages one receive asks for (SQS allows 10).
	// Default: 10.
	BatchSize int

	// WaitTime is the long-poll wait of a receive. Default: 20 seconds.
	WaitTime time.Duration

	// VisibilityTimeout hides a received message from other receivers while it is
	// processed; the worker extends it while the work goes on. Default: 60 seconds.
	VisibilityTimeout time.Duration
}

// The defaults of WorkerOptions.
const (
	defaultConcurrency       = 8
	defaultBatchSize         = 10
	defaultWaitTime          = 20 * time.Second
	defaultVisibilityTimeout = 60 * time.Second
)

// deleteBatchDelay is how long a finished message's delete waits for others to share
// its DeleteMessageBatch call.
const deleteBatchDelay = 20 * time.Millisecond

// Worker long-polls a queue and processes its messages with bounded concurrency:
// it extends a message's visibility while its work goes on, deletes what is done (in
// batches), leaves retryable failures for redelivery with backoff, and ends
// non-retryable ones FAILED_FINAL. Start it once; Stop stops it gracefully.
type Worker struct {
	p    *Processor
	q    Queue
	opts WorkerOptions

	mu      sync.Mutex
	started bool
	cancel  context.CancelFunc // stops receiving
	abort   context.CancelFunc // cancels in-flight work
	fetched chan struct{}      // closed when the receive loop has returned
	done    chan struct{}      // closed when the worker has stopped

	inflight sync.WaitGroup
	slots    chan struct{}
	deletes  chan string
	deleted  chan struct{} // closed when the delete batcher has flushed and returned
}

// NewWorker returns a Worker that processes q's messages on c's table.
func NewWorker(c *Client, q Queue, opts WorkerOptions) (*Worker, error) {
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
	fetchCtx, cancel := context.WithCancel(ctx)
	w.cancel, w.abort = cancel, abort
	go w.batchDeletes()
	go w.receive(fetchCtx, workCtx)
	go func() {
		<-w.fetched
		w.inflight.Wait()
		close(w.deletes)
		<-w.deleted
		abort()
		close(w.done)
	}()
	return nil
}

// Stop stops receiving, lets the messages in flight finish, and returns once the
// worker has stopped. When ctx ends first, the work in flight is cancelled: each such
// message is released (its lease ended, the message visible again) for another
// worker, and Stop returns ctx's error after the worker has stopped.
func (w *Worker) Stop(ctx context.Context) error {
	w.mu.Lock()
	if !w.started {
		w.started = true
		close(w.done)
		w.mu.Unlock()
		return nil
	}
	w.mu.Unlock()
	w.cancel()
	select {
	case <-w.done:
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
// grace.
func (w *Worker) Run(ctx context.Context, grace time.Duration) error {
	if err := w.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	return w.Stop(stopCtx)
}

// receive is the receive loop: it asks for as many messages as there are free slots.
func (w *Worker) receive(fetchCtx, workCtx context.Context) {
	defer close(w.fetched)
	log := w.opts.Logger
	for {
		// Wait for one free slot, then take what else is free, up to a batch.
		select {
		case w.slots <- struct{}{}:
		case <-fetchCtx.Done():
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
		ds, err := w.q.Receive(fetchCtx, n, w.opts.WaitTime, w.opts.VisibilityTimeout)
		for range n - len(ds) {
			<-w.slots
		}
		if err != nil {
			if fetchCtx.Err() != nil {
				return
			}
			log.WarnContext(fetchCtx, "receive failed", slog.Any("error", err))
			if sleep(fetchCtx, time.Second) != nil {
				return
			}
			continue
		}
		for _, d := range ds {
			w.inflight.Add(1)
			go func() {
				defer func() { <-w.slots }()
				defer w.inflight.Done()
				w.handle(workCtx, d)
			}()
		}
	}
}

// handle processes one delivery and does what its result asks of the queue.
func (w *Worker) handle(ctx context.Context, d Delivery) {
	extend := &extender{visibility: w.opts.VisibilityTimeout, extend: func(ctx context.Context) error {
		return w.q.ChangeVisibility(ctx, d.Receipt, w.opts.VisibilityTimeout)
	}}
	res := w.p.process(ctx, d, extend)
	switch res.action {
	case actDelete:
		w.deletes <- d.Receipt
	case actRetry:
		// After a cancelled context too: the message is released for another worker.
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
		defer cancel()
		if err := w.q.ChangeVisibility(bctx, d.Receipt, min(res.delay, maxVisibility)); err != nil {
			w.opts.Logger.WarnContext(ctx, "changing visibility failed", slog.String("requestId", res.outcome.RequestID), slog.Any("error", err))
		}
	}
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

// ProcessOne processes one delivery as the Worker does, for a caller that owns the
// queue itself, such as an AWS Lambda SQS handler (package awslambda). done reports
// whether the message is finished: delete it (or leave it out of a batch's
// failures). When it is not, retryAfter is how long it should stay hidden before its
// next delivery (the backoff, or the wait for another worker's lease; 0: at once),
// and a negative retryAfter means leave its visibility as it is (another delivery
// holds the request). The outcome is also passed to ProcessOptions.OnOutcome.
//
// While a FIRST_COME request is held, every half of the shorter of the lease and
// visibility (the lease alone when visibility is 0), keepAlive, if not nil, is
// called to keep the message hidden for another visibility, and the request's lease
// is renewed once half of it has passed.
func (p *Processor) ProcessOne(ctx context.Context, d Delivery, visibility time.Duration, keepAlive func(context.Context) error) (o Outcome, done bool, retryAfter time.Duration) {
	extend := &extender{visibility: visibility, extend: keepAlive}
	if visibility <= 0 {
		extend.visibility = p.opts.LeaseDuration
	}
	if keepAlive == nil {
		extend.extend = func(context.Context) error { return nil }
	}
	res := p.process(ctx, d, extend)
	switch res.action {
	case actDelete:
		return res.outcome, true, 0
	case actRetry:
		return res.outcome, false, max(res.delay, 0)
	}
	return res.outcome, false, -1
}
