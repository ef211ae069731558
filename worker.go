package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/asyncevent/asyncevent/internal/workloop"
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
)

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
	done    chan struct{}      // closed when the worker has stopped
	loop    *workloop.Loop
}

// NewWorker returns a Worker that processes q's messages on c's table.
//
// A first-come event's winners are decided in the order the Worker processes the
// messages, not in queue order (queuedAt): with 30 users clicking at once for 5 seats
// and the default options, 16 runs of 20 on a standard queue had losers queued before
// a winner (about 10 a run, up to 83 ms before), 19 of 20 on a FIFO queue (it keeps
// send order, which the request's put reorders; up to 31 ms), none with
// EventSettings.Admission AdmissionRanked (TestFairnessOfEachQueue, FAIRNESS_RUNS=20).
// EventStats' Fairness counts them for an event.
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
	w := &Worker{p: p, q: q, opts: opts, done: make(chan struct{})}
	var holds workloop.HoldSweeper
	if opts.HoldSweepEvery >= 0 {
		holds = workerHolds{w}
	}
	w.loop = workloop.New(q, workloop.Config{
		Concurrency: opts.Concurrency, BatchSize: opts.BatchSize, WaitTime: opts.WaitTime,
		VisibilityTimeout: opts.VisibilityTimeout, HoldSweepEvery: opts.HoldSweepEvery,
		Bookkeeping: bookkeepingTimeout, Logger: opts.Logger,
	}, w.process, holds)
	return w, nil
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
	go func() {
		w.loop.Run(stopCtx, workCtx)
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

// process binds the loop's Process to the Processor: the extender keeps the message
// hidden while its work goes on.
func (w *Worker) process(ctx context.Context, d queue.Delivery) workloop.Verdict {
	extend := &extender{visibility: w.opts.VisibilityTimeout, extend: func(ctx context.Context) error {
		return w.q.ChangeVisibility(ctx, d.Receipt, w.opts.VisibilityTimeout)
	}}
	res := w.p.process(ctx, d, extend)
	return workloop.Verdict{Action: workloop.Action(res.action), Delay: res.delay, RequestID: res.outcome.RequestID}
}

// The Processor's actions are the loop's, value for value: the build fails otherwise.
var (
	_ = [1]struct{}{}[actDelete-action(workloop.Delete)]
	_ = [1]struct{}{}[actRetry-action(workloop.Retry)]
	_ = [1]struct{}{}[actLeave-action(workloop.Leave)]
)

// workerHolds binds the loop's hold-sweep ticker to the worker's client.
type workerHolds struct{ w *Worker }

func (h workerHolds) Registry(ctx context.Context) ([]string, error) {
	evs, err := h.w.p.c.HoldEvents(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(evs))
	for i, ev := range evs {
		ids[i] = ev.EventID
	}
	return ids, nil
}

func (h workerHolds) Met() []string { return h.w.p.holdEvents() }
func (h workerHolds) Now() int64    { return int64(h.w.p.c.now()) }

func (h workerHolds) Sweep(ctx context.Context, eventID string) (workloop.Swept, error) {
	rep, err := h.w.p.c.SweepHolds(ctx, eventID, HoldSweepOptions{Owner: h.w.opts.WorkerID, LeaseFor: holdSweepLease})
	if err != nil {
		return workloop.Swept{}, err
	}
	return workloop.Swept{Expired: rep.Expired, Served: rep.Served, Closed: rep.Closed,
		Skipped: rep.Skipped, LeaseUntil: int64(rep.leaseUntil)}, nil
}
