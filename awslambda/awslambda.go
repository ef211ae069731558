// Package awslambda processes the asyncevent queue in an AWS Lambda function: an SQS
// event source mapping delivers batches, and the handler answers with the records
// that must come back as partial batch failures (enable ReportBatchItemFailures on
// the mapping). The processing is the long-running Worker's (asyncevent.Processor).
//
//	client, err := asyncevent.New(dynamodb.NewFromConfig(cfg), asyncevent.Options{TableName: table})
//	...
//	q, err := queue.NewSQS(sqs.NewFromConfig(cfg), queueURL)
//	...
//	h, err := awslambda.New(client, awslambda.Options{
//		ProcessOptions:    asyncevent.ProcessOptions{MaxReceives: 5}, // the redrive policy's maxReceiveCount
//		Queue:             q,
//		VisibilityTimeout: 6 * time.Minute, // the queue's
//	})
//	...
//	lambda.Start(h.Handle)
//
// A batch's records run at most Options.Concurrency at a time. The records of one
// FIFO message group (a FIFO queue's batch may hold several groups) run one after
// another in batch order, and once one of them is not done, the group's later records
// are not started and are reported with it, so that they come back behind it, in
// order. Records are started only until Options.DeadlineMargin before the function's
// deadline; the rest are reported.
//
// With Options.Queue set, a record that failed retryably is hidden for the worker's
// backoff (ChangeMessageVisibility) before it is reported, instead of coming back
// after the queue's whole visibility timeout; a record reported without being started
// is made visible again at once (behind the failed one of its group, which holds the
// group); and a record whose work outlasts half the visibility timeout is kept
// hidden. Without it, a reported record comes back when its visibility timeout ends:
// Lambda itself neither deletes nor releases reported records. Either way the
// request's lease is renewed while its record runs, so no other delivery takes over
// a request that is still at work.
//
// A Handler does not run the hold sweep of an event with holds
// (asyncevent.EventSettings.HoldFor), as a long-running Worker does: without a sweep, a
// hold that ran out is never ended and a seat given back never reaches the waitlist.
// A HoldSweeper runs it in a second function, invoked by an EventBridge schedule
// (rate(1 minute): holds then end, and seats given back are handed on, within about
// a minute):
//
//	s, err := awslambda.NewHoldSweeper(client, awslambda.SweepOptions{
//		Events: []string{"spring-sale"}, // the events with holds
//	})
//	...
//	lambda.Start(s.Handle)
//
// Each invocation runs asyncevent.Client.SweepHolds for every event in turn, and
// again for those it left more to do (HoldSweepOptions.MaxWrites reached), until none
// has or SweepOptions.DeadlineMargin before the function's deadline; the next
// invocation goes on. An event whose sweep fails does not stop the others, and the
// invocation then fails with its error. The function's timeout bounds an invocation,
// and schedules that overlap are safe: every write of the sweep is conditional, and
// with SweepOptions.Owner the function and the Workers take the event's sweep lease
// in turn.
package awslambda

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/queue"
)

// Queue is the part of the event source's queue the handler uses:
// queue.SQS (ChangeMessageVisibility) and queue.Memory have it.
type Queue interface {
	// ChangeVisibility hides a delivered message for timeout from now (0: visible
	// at once).
	ChangeVisibility(ctx context.Context, receipt string, timeout time.Duration) error
}

// Options configures a Handler. The zero value is valid.
type Options struct {
	// ProcessOptions configures the processing, as for a Worker. MaxReceives must
	// equal the queue's redrive policy maxReceiveCount. Its Logger also receives
	// the handler's own warnings (a visibility change that failed); default: the
	// processing logs go to the client's logger, the handler's are discarded.
	asyncevent.ProcessOptions

	// Concurrency is how many records of a batch are processed at once. Default: 10.
	Concurrency int

	// Queue, if set, is the event source's queue: the backoff of a retryable failure,
	// the release of a record reported without being started, and the keep-alive of a
	// long record go through its ChangeVisibility. Default: none.
	Queue Queue

	// DeadlineMargin is how long before the function's deadline (Handle's ctx's) the
	// handler stops starting records, leaving time to report the rest and, with
	// Queue, to make them visible again. Default: 1 second.
	DeadlineMargin time.Duration

	// VisibilityTimeout is the queue's visibility timeout (at least the function's
	// timeout, as AWS requires of an event source). With Queue, a record still at work
	// after half of it is hidden for another VisibilityTimeout. Default: 30 seconds,
	// SQS's default.
	VisibilityTimeout time.Duration
}

// The defaults of Options.
const (
	DefaultConcurrency       = 10
	DefaultVisibilityTimeout = 30 * time.Second
	DefaultDeadlineMargin    = time.Second
)

// maxVisibility is SQS's limit on a message's visibility timeout.
const maxVisibility = 12 * time.Hour

// Handler processes SQS batches of the asyncevent queue. It is safe for concurrent
// use.
type Handler struct {
	c    *asyncevent.Client
	p    *asyncevent.Processor
	opts Options
	log  *slog.Logger
}

// New returns a Handler that processes messages on c's table.
func New(c *asyncevent.Client, opts Options) (*Handler, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: awslambda.New needs a client", asyncevent.ErrInvalidOptions)
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.VisibilityTimeout <= 0 {
		opts.VisibilityTimeout = DefaultVisibilityTimeout
	}
	if opts.DeadlineMargin <= 0 {
		opts.DeadlineMargin = DefaultDeadlineMargin
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Handler{c: c, p: asyncevent.NewProcessor(c, opts.ProcessOptions), opts: opts, log: log}, nil
}

// Handle processes one SQS batch and returns the records that must come back, and
// then writes the progress it counted (Client.FlushProgress: one UpdateItem per
// event and second of the batch, for the place in line), since a frozen Lambda
// sandbox runs no timer. It
// never returns an error: a record that could not be processed is a batch item
// failure, and so is every record not started: one behind a record of its FIFO
// group that is not done, and every record not started by DeadlineMargin before
// ctx's deadline (the function's). With Options.Queue, those not started are made
// visible again at once.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	startCtx := ctx // records are started only while it lasts
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		startCtx, cancel = context.WithDeadline(ctx, deadline.Add(-h.opts.DeadlineMargin))
		defer cancel()
	}
	ds := make([]queue.Delivery, len(ev.Records))
	for i, r := range ev.Records {
		ds[i] = Delivery(r)
	}
	done := make([]bool, len(ds))
	slots := make(chan struct{}, h.opts.Concurrency)
	var wg sync.WaitGroup
	runs := queue.Groups(ds)
	for n, run := range runs {
		// A run holds one slot: its records go one at a time.
		select {
		case slots <- struct{}{}:
		case <-startCtx.Done():
		}
		if startCtx.Err() != nil {
			for _, later := range runs[n:] {
				h.giveBack(ctx, ds, later)
			}
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			for k, i := range run {
				if startCtx.Err() != nil {
					h.giveBack(ctx, ds, run[k:])
					return
				}
				if done[i] = h.record(ctx, ds[i]); !done[i] {
					h.giveBack(ctx, ds, run[k+1:])
					return
				}
			}
		})
	}
	wg.Wait()
	// The event's progress (the place in line) counts what this batch finished: a
	// frozen sandbox runs no timer, so the counts are written before it is frozen.
	if err := h.c.FlushProgress(ctx); err != nil {
		h.log.WarnContext(ctx, "the progress counts of the batch were not written", slog.Any("error", err))
	}
	var resp events.SQSEventResponse
	for i, r := range ev.Records {
		if !done[i] {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
		}
	}
	return resp, nil
}

// giveBack makes the records at the indexes visible again at once, with a Queue;
// they are reported without being started.
func (h *Handler) giveBack(ctx context.Context, ds []queue.Delivery, indexes []int) {
	if h.opts.Queue == nil || len(indexes) == 0 {
		return
	}
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, i := range indexes {
		wg.Go(func() {
			if err := h.opts.Queue.ChangeVisibility(bctx, ds[i].Receipt, 0); err != nil {
				h.log.WarnContext(ctx, "giving back a record failed", slog.String("messageId", ds[i].MessageID), slog.Any("error", err))
			}
		})
	}
	wg.Wait()
}

// bookkeepingTimeout bounds a visibility change made after the record's work.
const bookkeepingTimeout = 5 * time.Second

// record processes one record and reports whether it is done.
func (h *Handler) record(ctx context.Context, d queue.Delivery) bool {
	var keepAlive func(context.Context) error
	visibility := time.Duration(0) // the lease alone paces the heartbeat
	if h.opts.Queue != nil {
		visibility = h.opts.VisibilityTimeout
		keepAlive = func(ctx context.Context) error {
			return h.opts.Queue.ChangeVisibility(ctx, d.Receipt, min(h.opts.VisibilityTimeout, maxVisibility))
		}
	}
	o, done, retryAfter := h.p.ProcessOne(ctx, d, visibility, keepAlive)
	if done || h.opts.Queue == nil || retryAfter < 0 {
		return done
	}
	// After a cancelled ctx too: the record comes back after its backoff, not after
	// the whole visibility timeout.
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
	defer cancel()
	if err := h.opts.Queue.ChangeVisibility(bctx, d.Receipt, min(retryAfter, maxVisibility)); err != nil {
		h.log.WarnContext(ctx, "changing visibility failed", slog.String("requestId", o.RequestID), slog.Any("error", err))
	}
	return false
}

// Delivery converts a Lambda SQS record into the delivery the Processor takes: its
// ApproximateReceiveCount (1 when missing) and its SentTimestamp, the enqueue time a
// request gets when the worker reaches it before ingest marks it QUEUED; its
// MessageGroupId (a FIFO queue's), which keeps a group's records in order; and its
// String and Number message attributes, which carry an asyncevent.Options.Observer's
// trace context from ingest.
func Delivery(r events.SQSMessage) queue.Delivery {
	d := queue.Delivery{MessageID: r.MessageId, Receipt: r.ReceiptHandle, Body: []byte(r.Body), ReceiveCount: 1}
	if n, err := strconv.Atoi(r.Attributes["ApproximateReceiveCount"]); err == nil && n > 0 {
		d.ReceiveCount = n
	}
	if ms, err := strconv.ParseInt(r.Attributes["SentTimestamp"], 10, 64); err == nil {
		d.SentAt = time.UnixMilli(ms)
	}
	d.GroupID = r.Attributes["MessageGroupId"]
	for name, a := range r.MessageAttributes {
		if a.StringValue == nil || strings.HasPrefix(a.DataType, "Binary") {
			continue
		}
		if d.Attributes == nil {
			d.Attributes = make(map[string]string, len(r.MessageAttributes))
		}
		d.Attributes[name] = *a.StringValue
	}
	return d
}
