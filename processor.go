package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/aws/smithy-go"

	"github.com/asyncevent/asyncevent/internal/ctxsleep"
	"github.com/asyncevent/asyncevent/internal/seatcache"
	"github.com/asyncevent/asyncevent/internal/workloop"
	"github.com/asyncevent/asyncevent/queue"
)

// The worker: the Processor decides what becomes of each message (a first-come
// request, a lottery entry, a failure), and the Worker is the loop that feeds it from a
// queue.

// Handler is the service's own step for a request, run by the worker once it holds the
// request's lease and before the outcome is decided (for FIRST_COME, before a seat is
// spent; for LOTTERY, before the entry is accepted): an eligibility check, say. Return
// nil to go on; an error wrapped with Permanent to end the request FAILED_FINAL
// (FAILED_VALIDATION) at once; any other error to try again later (FAILED_WORKER once
// the message has used up its receives). A panic ends the request FAILED_FINAL
// (FAILED_WORKER); the worker goes on.
//
// A LOTTERY entry is the draw's from the entries' fence on (the cutoff plus
// Options.DrawSettleWindow, less up to a second): an entry met then is not handed to
// the handler, and a failure the handler asks for then is not written (the outcome is
// OutcomeLeftToDraw), so the draw decides it like any other entry.
type Handler interface {
	Handle(ctx context.Context, m Message) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, m Message) error

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, m Message) error { return f(ctx, m) }

// ProcessOptions configures how messages are processed, by a Processor or a Worker. The
// zero value is valid.
type ProcessOptions struct {
	// Handler is the service's own step for each request. Default: none. Without one,
	// a first-come message takes the home claim: its seat on the request's home shard,
	// then SUCCEEDED, two writes and no lease (docs/design.md, "The home claim"); with
	// one, the request is held under a lease while the Handler runs. All the workers
	// of an event should share this setting: a worker without a Handler claims a seat
	// without running one.
	Handler Handler

	// WorkerID names this process in the leases it takes. Default: host name, process
	// ID and a random suffix.
	WorkerID string

	// LeaseDuration is how long a request stays PROCESSING under this worker's lease
	// before another delivery may take it over. Default: 30 seconds.
	LeaseDuration time.Duration

	// MaxReceives is the queue's receive limit before it dead-letters a message (SQS
	// redrive maxReceiveCount; queue.MemoryOptions.MaxReceives). On the last receive a
	// retryable failure ends the request FAILED_FINAL before the queue moves the
	// message. Default: 5.
	//
	// A throttle counts as a retryable failure (OutcomeThrottled): in a spike, a
	// request whose event's keys stay over their share for all its receives ends
	// FAILED_FINAL (FAILED_WORKER, errorCode THROTTLED) on its last one, never stuck,
	// but lost to the user. Set MaxReceives (and the queue's redrive policy with it)
	// high enough to outlast the spikes the service expects, counting that a throttled
	// delivery that held the request's lease comes back only after LeaseDuration.
	MaxReceives int

	// Backoff returns how long a message that failed retryably stays hidden before its
	// next delivery. A throttled message that held the request's lease stays hidden
	// at least LeaseDuration (with jitter) besides. Default: 1s doubled per receive,
	// at most 2 minutes, with jitter.
	Backoff func(receiveCount int) time.Duration

	// OnOutcome, if set, is called after each message with what became of it, for
	// metrics. It must not block.
	OnOutcome func(Outcome)

	// Logger receives the processing logs. Default: the client's logger.
	Logger *slog.Logger
}

// The defaults of ProcessOptions.
const (
	defaultLeaseDuration = 30 * time.Second
	DefaultMaxReceives   = 5
)

func (o *ProcessOptions) setDefaults(c *Client) {
	if o.WorkerID == "" {
		host, _ := os.Hostname()
		o.WorkerID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), randomHex(3))
	}
	o.LeaseDuration = orDefault(o.LeaseDuration, defaultLeaseDuration)
	if o.MaxReceives <= 0 {
		o.MaxReceives = DefaultMaxReceives
	}
	if o.Backoff == nil {
		o.Backoff = defaultBackoff
	}
	if o.Logger == nil {
		o.Logger = c.opts.Logger
	}
}

func defaultBackoff(receiveCount int) time.Duration {
	d := time.Second << min(max(receiveCount-1, 0), 7)
	d = min(d, 2*time.Minute)
	return d/2 + mrand.N(d/2+1)
}

// action is what the queue should do with a message after processing.
type action int

const (
	actDelete action = iota // done: delete it
	actRetry                // leave it, visible again after delay
	actLeave                // leave it as it is (another delivery has it)
)

type result struct {
	action  action
	delay   time.Duration
	outcome Outcome
}

// Processor runs the worker's part of the access patterns on messages, one message at
// a time, without owning a queue: Worker uses it in its loop, and an AWS Lambda SQS
// handler calls ProcessOne for each message (package awslambda). It is safe for concurrent use.
type Processor struct {
	c    *Client
	opts ProcessOptions

	seats *seatcache.Shards // what it knows of the capacity shards of FIRST_COME events

	serving bool // ServePrequeue's: it decides a pre-queue's entries

	holds sync.Map // event ID → struct{}: the events with holds it has met, for the hold sweep

	admitting    bool       // a ranked admission's: it decides the requests of a wave
	admissions   sync.Map   // event ID → *admission: the ranked events it has met
	admitterOnce sync.Once  // makes admitter
	admitter     *Processor // decides the waves of the admissions it runs
	waveSeats    sync.Map   // the admitter's: request ID → struct{}, its home seat taken by its wave's write
}

// holdEvents returns the events with holds the processor has met.
func (p *Processor) holdEvents() []string {
	var evs []string
	p.holds.Range(func(k, _ any) bool {
		evs = append(evs, k.(string))
		return true
	})
	return evs
}

// NewProcessor returns a Processor of c's table.
func NewProcessor(c *Client, opts ProcessOptions) *Processor {
	opts.setDefaults(c)
	return &Processor{c: c, opts: opts, seats: seatcache.New()}
}

// lease is this delivery's claim on a request.
type lease struct {
	Lease
	held bool // the start took the request under this lease
	// writing is held by the heartbeat's lease write and by the write that ends the
	// lease, so that the two never overlap on the request.
	writing sync.Mutex
	ended   bool // set under writing by the write that ends the lease: no heartbeat after it
	// claim is the delivery's seat claim, once it has started a first-come request.
	claim *seatClaim
}

// end runs write, the call that ends the lease (a release, a final write; nil for
// none), under the lease's write mutex and marks the lease ended, so that no
// heartbeat rewrites a lease that write has just released or finalised. l may be nil
// (a delivery that holds no lease).
func (l *lease) end(write func()) {
	if l == nil {
		if write != nil {
			write()
		}
		return
	}
	l.writing.Lock()
	defer l.writing.Unlock()
	l.ended = true
	if write != nil {
		write()
	}
}

// extender keeps a delivery alive while its work goes on: the Worker extends the
// message's visibility by its visibility timeout; nil for callers without a queue.
type extender struct {
	visibility time.Duration
	extend     func(ctx context.Context) error
}

func (p *Processor) report(ctx context.Context, o Outcome) {
	log := p.opts.Logger.With(slog.String("requestId", o.RequestID), slog.String("eventId", o.EventID),
		slog.String("outcome", string(o.Kind)), slog.Int("receiveCount", o.ReceiveCount))
	if o.Err != nil {
		log.WarnContext(ctx, "message processed", slog.Any("error", o.Err))
	} else {
		log.DebugContext(ctx, "message processed")
	}
	if p.opts.OnOutcome != nil {
		p.opts.OnOutcome(o)
	}
}

// notFound: the message names no request (its ingest could not tell whether the
// request was written, sent the message anyway, and the write had not landed).
func notFound() result {
	return result{action: actDelete, outcome: Outcome{Kind: OutcomeNotFound}}
}

// handle runs the service's handler, if any.
func (p *Processor) handle(ctx context.Context, m Message) error {
	if p.opts.Handler == nil {
		return nil
	}
	return p.opts.Handler.Handle(ctx, m)
}

// notStarted turns a start that lost its condition into a result.
func (p *Processor) notStarted(m Message, cur *storedRequest) result {
	now := p.c.now()
	switch {
	case cur.Status.decided():
		return result{action: actDelete, outcome: Outcome{Kind: OutcomeDuplicate, ResultCode: cur.ResultCode}}
	case cur.Status == StatusProcessing && cur.LeaseExpiresAt > now:
		// Another delivery of the same request is at work: come back after its lease.
		wait := cur.LeaseExpiresAt.Time().Sub(now.Time()) + time.Second
		return result{action: actRetry, delay: wait, outcome: Outcome{Kind: OutcomeLeaseHeld}}
	}
	// The request moved between our read and write (a lease just expired, a lottery
	// entry): try again shortly.
	return result{action: actRetry, delay: time.Second, outcome: Outcome{Kind: OutcomeRetry,
		Err: fmt.Errorf("request %s is %s: not startable", m.RequestID, cur.Status)}}
}

// lostLease: another delivery took the request over after our lease expired. Unless
// the request is final under our own lease (a response lost after it was applied),
// the message is left to the delivery that holds it.
func (p *Processor) lostLease(ctx context.Context, m Message, l Lease) result {
	cur, err := p.c.getRequest(ctx, m.RequestID, true)
	if err == nil && finalUnder(cur, l.Owner) {
		kind := OutcomeRejected
		switch cur.Status {
		case StatusSucceeded:
			kind = OutcomeSucceeded
		case StatusHeld:
			kind = OutcomeHeld
		case StatusWaitlisted:
			kind = OutcomeWaitlisted
		}
		return result{action: actDelete, outcome: Outcome{Kind: kind, ResultCode: cur.ResultCode}}
	}
	return result{action: actLeave, outcome: Outcome{Kind: OutcomeLostLease}}
}

// failed handles an error of the processing: retry later, or end the request
// FAILED_FINAL when the error is not worth retrying or the message is on its last
// receive.
//
// A call DynamoDB refused for throughput after every retry (ErrThrottled) is
// OutcomeThrottled, and leaves the lease this delivery holds to expire rather than
// release it: the release is one more write on the request, whose index key (the
// event's GSI2 key) is the one over its share. The message then stays hidden until
// the lease has ended, so that its next delivery takes the request over instead of
// finding it held, and for a random part of a lease more, so that the messages
// throttled together do not come back together. Its last receive ends it
// FAILED_FINAL like any retryable failure.
func (p *Processor) failed(ctx context.Context, m Message, d queue.Delivery, l *lease, err error) result {
	err = throttled(err) // a throttled read or handler call too
	class, code, errorCode := classify(err)
	if class == NonRetryable {
		return p.failFinal(ctx, m, d, l, class, code, errorCode, err)
	}
	if d.ReceiveCount >= p.opts.MaxReceives {
		res := p.failFinal(ctx, m, d, l, class, code, errorCode, fmt.Errorf("after %d receives: %w", d.ReceiveCount, err))
		if res.outcome.Kind == OutcomeFailed {
			// Final now. Visible again at once, the message has used up its receives,
			// so the queue moves it to its dead-letter queue.
			res.action, res.delay, res.outcome.Kind = actRetry, 0, OutcomeDeadLetter
		}
		return res
	}
	if errors.Is(err, ErrThrottled) {
		l.end(nil)
		delay := p.opts.Backoff(d.ReceiveCount)
		if l != nil {
			delay = max(delay, l.Duration+mrand.N(l.Duration/2+1))
		}
		return result{action: actRetry, delay: delay, outcome: Outcome{Kind: OutcomeThrottled, Err: err}}
	}
	if l != nil {
		// Let the next delivery take over at once instead of waiting out our lease.
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
		defer cancel()
		l.end(func() {
			if rerr := p.c.releaseLease(bctx, m.RequestID, l.Owner); rerr != nil {
				p.opts.Logger.WarnContext(ctx, "releasing a lease failed; it will expire", slog.String("requestId", m.RequestID), slog.Any("error", rerr))
			}
		})
	}
	return result{action: actRetry, delay: p.opts.Backoff(d.ReceiveCount), outcome: Outcome{Kind: OutcomeRetry, Err: err}}
}

// failFinal ends a request FAILED_FINAL. The write runs even if ctx has ended, and
// is tried again while DynamoDB refuses it for throughput (it writes the same hot
// index key as the call that failed), for up to bookkeepingTimeout: on the last
// receive it is what keeps the request from being left unfinished.
func (p *Processor) failFinal(ctx context.Context, m Message, d queue.Delivery, l *lease, class FailureClass, code ResultCode, errorCode string, cause error) result {
	if ValidateID("requestId", m.RequestID) != nil {
		return result{action: actRetry, delay: p.opts.Backoff(d.ReceiveCount), outcome: Outcome{Kind: OutcomeMalformed, Err: cause}}
	}
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
	defer cancel()
	var held Lease
	if l != nil {
		held = l.Lease
		if l.claim != nil {
			// A first-come request ends FAILED_FINAL only when no seat is spent for it.
			seated, err := p.c.seatHeld(bctx, l.claim)
			if err != nil {
				return result{action: actRetry, delay: p.opts.Backoff(d.ReceiveCount), outcome: Outcome{Kind: OutcomeRetry, Err: errors.Join(cause, err)}}
			}
			if seated {
				return p.seated(ctx, m, l)
			}
		}
	}
	f := Failure{Lease: held, Class: class, Code: code, ErrorCode: errorCode, Cause: cause}
	var (
		t   Transition
		err error
	)
	l.end(func() {
		t, err = p.c.markFailed(bctx, m.Ref(), f, txOptions{})
		for attempt := 0; errors.Is(err, ErrThrottled); attempt++ {
			if ctxsleep.Sleep(bctx, finalWriteBackoff(attempt)) != nil {
				break
			}
			t, err = p.c.markFailed(bctx, m.Ref(), f, txOptions{})
		}
	})
	if err == nil && !t.Applied && inTimeEntry(t.current) {
		// An entry of a draw leaves the running only while the draw is COLLECTING.
		t, err = p.c.failEntry(bctx, t.current.Ref(), f)
		if errors.Is(err, errDrawBegan) {
			return leftToDraw()
		}
	}
	switch {
	case err != nil:
		// Could not record it: let the message come back and try again.
		kind := OutcomeRetry
		if errors.Is(err, ErrThrottled) {
			kind = OutcomeThrottled
		}
		return result{action: actRetry, delay: p.opts.Backoff(d.ReceiveCount), outcome: Outcome{Kind: kind, Err: errors.Join(cause, err)}}
	case !t.Applied && t.current.Status.decided():
		return result{action: actDelete, outcome: Outcome{Kind: OutcomeDuplicate, ResultCode: t.current.ResultCode}}
	case !t.Applied && held.Owner == "" && t.current.EventType == FirstCome:
		// A first-come request: it may hold a seat (its home claim, or the claim of
		// a delivery that started it), so only a lease holder may fail it, after a
		// look at its shard.
		return p.takeOverToFail(ctx, m, d, t.current, class, code, errorCode, cause)
	case !t.Applied:
		return result{action: actLeave, outcome: Outcome{Kind: OutcomeLostLease, Err: cause}}
	}
	return result{action: actDelete, outcome: Outcome{Kind: OutcomeFailed, ResultCode: code, Err: cause}}
}

// takeOverToFail takes over a first-come request that no delivery holds under a live
// lease (never started, or its lease run out), for a delivery that holds no lease but
// must end it (its own start or home claim failed, on its last receive, or it met a
// permanent error): the start,
// under a lease of its own and retried while throttled, then failFinal under that
// lease, which ends it SUCCEEDED instead when its shard holds its seat. A lease still
// held by another delivery is left to it.
func (p *Processor) takeOverToFail(ctx context.Context, m Message, d queue.Delivery, cur *storedRequest, class FailureClass, code ResultCode, errorCode string, cause error) result {
	leave := func(err error) result {
		return result{action: actLeave, outcome: Outcome{Kind: OutcomeLostLease, Err: errors.Join(cause, err)}}
	}
	if cur.LeaseExpiresAt > p.c.now() {
		return leave(nil) // the delivery that holds it ends it
	}
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
	defer cancel()
	l := &lease{Lease: Lease{Owner: p.opts.WorkerID + "/" + randomHex(4), Duration: p.opts.LeaseDuration}}
	if m.EventID != cur.EventID || m.UserID != cur.UserID {
		// A malformed message: the request says what it is.
		m = Message{V: MessageVersion, RequestID: cur.RequestID, EventID: cur.EventID, UserID: cur.UserID,
			EventType: cur.EventType, RequestedAt: cur.RequestedAt}
	}
	m.CapacityShards = 0 // the event's own count, whatever the message said
	n, err := p.shards(bctx, m)
	if err != nil {
		return leave(err)
	}
	home := shardOf(m.RequestID, n)
	shard := home
	if cur.SeatShard != nil {
		shard = *cur.SeatShard
	}
	t, st, err := p.c.startProcessing(bctx, m.Ref(), l.Lease, shard)
	for attempt := 0; errors.Is(throttled(err), ErrThrottled); attempt++ {
		if ctxsleep.Sleep(bctx, finalWriteBackoff(attempt)) != nil {
			break
		}
		t, st, err = p.c.startProcessing(bctx, m.Ref(), l.Lease, shard)
	}
	switch {
	case err != nil:
		return leave(err)
	case !t.Applied && t.current.Status.decided():
		return result{action: actDelete, outcome: Outcome{Kind: OutcomeDuplicate, ResultCode: t.current.ResultCode}}
	case !t.Applied:
		return leave(nil)
	}
	st.settle(home, false)
	l.held = true
	hold, err := p.c.holdFor(bctx, m.EventID)
	if err != nil {
		return leave(err)
	}
	l.claim = &seatClaim{Claim: st.claim(), ref: m.Ref(), owner: l.Owner, end: l.end, hold: hold}
	return p.failFinal(ctx, m, d, l, class, code, errorCode, cause)
}

// seated ends a request that holds its seat SUCCEEDED, under our lease, where a
// failure would have ended it.
func (p *Processor) seated(ctx context.Context, m Message, l *lease) result {
	reqKey, _ := NewRequestKey(m.RequestID) // checked by the start
	t, err := p.c.takeSeat(ctx, reqKey, l.claim)
	switch {
	case err != nil:
		return result{action: actRetry, delay: p.opts.Backoff(1), outcome: Outcome{Kind: OutcomeRetry, Err: err}}
	case !t.Applied:
		return p.lostLease(ctx, m, l.Lease)
	}
	return won(l.claim.hold)
}

// malformed handles a body that does not decode: the request, if the body names one,
// ends FAILED_SERDE; the message is left for the queue to dead-letter.
func (p *Processor) malformed(ctx context.Context, m Message, d queue.Delivery, err error) result {
	if ValidateID("requestId", m.RequestID) == nil {
		res := p.failFinal(ctx, m, d, nil, NonRetryable, ResultFailedSerde, "SERDE_ERROR", err)
		if res.outcome.Kind == OutcomeRetry {
			return res
		}
	}
	return result{action: actRetry, delay: p.opts.Backoff(d.ReceiveCount), outcome: Outcome{Kind: OutcomeMalformed, Err: err}}
}

// keepVisible keeps a message hidden while the service's handler runs on a request
// that holds no lease (a lottery entry, a ranked request waiting for its admission):
// every half visibility it extends the message's visibility. The returned function
// stops it.
func (p *Processor) keepVisible(ctx context.Context, m Message, extend *extender) (stop func()) {
	if extend == nil || extend.visibility <= 0 {
		return func() {}
	}
	return workloop.Every(ctx, extend.visibility/2, func(ctx context.Context) bool {
		p.extendVisibility(ctx, m, extend)
		return true
	})
}

// heartbeat keeps a long message alive while its work goes on: every half of the
// shorter of the lease and the visibility timeout it extends the message's
// visibility, and the request's lease once half the lease has passed since it was
// last written. Most messages finish before the first tick and write no heartbeat;
// each lease write also rewrites the request's entries on both indexes. The returned
// function stops it.
func (p *Processor) heartbeat(ctx context.Context, m Message, l *lease, extend *extender) (stop func()) {
	leaseWritten := time.Now()
	return workloop.Every(ctx, min(l.Duration, extend.visibility)/2, func(ctx context.Context) bool {
		p.extendVisibility(ctx, m, extend)
		if time.Since(leaseWritten) < l.Duration/2 {
			return true
		}
		l.writing.Lock()
		if l.ended {
			l.writing.Unlock()
			return false
		}
		held, err := p.c.extendLease(ctx, m.RequestID, l.Owner, l.Duration)
		if err == nil && !held {
			// Taken over (or final): the heartbeat stops. A claim this delivery
			// still sends lands on a place the new holder closes before it
			// leaves it, or meets the request's token (seat.go).
			l.ended = true
		}
		l.writing.Unlock()
		switch {
		case err != nil:
			p.opts.Logger.WarnContext(ctx, "extending the lease failed", slog.String("requestId", m.RequestID), slog.Any("error", err))
			return true
		case !held:
			return false
		}
		leaseWritten = time.Now()
		return true
	})
}

// extendVisibility keeps m hidden for another visibility; a failure is logged, and
// the next tick tries again.
func (p *Processor) extendVisibility(ctx context.Context, m Message, extend *extender) {
	if err := extend.extend(ctx); err != nil && ctx.Err() == nil {
		p.opts.Logger.WarnContext(ctx, "extending visibility failed", slog.String("requestId", m.RequestID), slog.Any("error", err))
	}
}

// classify sorts an error into retryable or not, with the result and error codes a
// FAILED_FINAL request gets for it.
func classify(err error) (FailureClass, ResultCode, string) {
	var perm *permanentError
	var apiErr smithy.APIError
	switch {
	case errors.As(err, &perm), errors.Is(err, ErrInvalidID), errors.Is(err, ErrEventNotFound), errors.Is(err, errNoCapacity):
		return NonRetryable, ResultFailedValidation, "VALIDATION_FAILED"
	case errors.Is(err, ErrMalformedMessage):
		return NonRetryable, ResultFailedSerde, "SERDE_ERROR"
	case errors.Is(err, ErrThrottled), isThrottle(err):
		return Retryable, ResultFailedWorker, "THROTTLED"
	case errors.As(err, &apiErr):
		switch apiErr.ErrorCode() {
		case "ValidationException", "SerializationException":
			return NonRetryable, ResultFailedWorker, apiErr.ErrorCode()
		}
		return Retryable, ResultFailedWorker, apiErr.ErrorCode()
	}
	return Retryable, ResultFailedWorker, "WORKER_ERROR"
}

// finalUnder reports whether r is decided (final, HELD or WAITLISTED) and was
// decided under the lease owner.
func finalUnder(r *storedRequest, owner string) bool {
	return r != nil && r.Status.decided() && r.LeaseOwner == owner
}

// observeProcess runs the processing of d through the observer.
func (p *Processor) observeProcess(ctx context.Context, d queue.Delivery, process func(context.Context) result) result {
	var (
		res    result
		called bool
	)
	next := func(ctx context.Context) Outcome {
		if !called {
			called = true
			res = process(ctx)
		}
		return res.outcome
	}
	p.c.opts.Observer.Process(ctx, d, next)
	next(ctx)
	return res
}

// seatRefusal is the result code of a request refused for want of a seat: ResultLate
// for a late arrival of a ranked event, REJECTED_CAPACITY otherwise.
func seatRefusal(m Message) ResultCode {
	if m.late {
		return ResultLate
	}
	return ResultRejectedCapacity
}

// waitlists reports whether a sold-out event's loser is WAITLISTED rather than
// REJECTED: the event has holds and, as far as the client's copy of its config
// shows, has not closed (a waitlisted request of a closed event is ended by the hold
// sweep).
func (p *Processor) waitlists(ctx context.Context, eventID string, hold time.Duration) bool {
	if hold <= 0 {
		return false
	}
	cfg, _, ok := p.c.events.Peek(eventID)
	return !ok || cfg.EndsAt == 0 || p.c.now() <= cfg.EndsAt
}

func leftToDraw() result {
	return result{action: actDelete, outcome: Outcome{Kind: OutcomeLeftToDraw}}
}

// errDrawBegan: an entry's failure came at or past the entries' fence; the entry is
// the draw's.
var errDrawBegan = errors.New("asyncevent: the draw may have begun")

// failEntry ends a lottery entry queued by the cutoff FAILED_FINAL: the "entry
// failure" row, UpdateItem PK REQ#<requestId>, SK META, as MarkFailed's, condition
// (status = QUEUED OR status = RECEIVED) AND queuedAt ≤ lotteryCutoffAt. It is sent
// only before the entries' fence (entryFence: the moment Draw may begin, less a
// margin) and runs under that deadline, so that it lands before any draw reads the
// entries; at or past the fence, or cut off by it, the error is errDrawBegan and the
// entry is the draw's. No item but the request is written: a mass of refusals does not
// meet on one hot item.
func (c *Client) failEntry(ctx context.Context, ref RequestRef, f Failure) (Transition, error) {
	key, err := NewRequestKey(ref.RequestID)
	if err != nil {
		return Transition{}, err
	}
	event, err := c.cachedEvent(ctx, ref.EventID)
	if err != nil {
		return Transition{}, err
	}
	now := c.opts.Clock()
	fence := c.entryFence(event)
	if !now.Before(fence) {
		return Transition{}, errDrawBegan
	}
	fctx, cancel := context.WithTimeout(ctx, fence.Sub(now))
	defer cancel()
	t, err := c.apply(fctx, key, write{row: &entryFailureRow, args: failureArgs(MillisOf(now), f), note: f.ErrorCode}, txOptions{})
	switch {
	case err != nil && fctx.Err() != nil && ctx.Err() == nil:
		return t, errDrawBegan
	case err != nil:
		return t, fmt.Errorf("fail entry %s: %w", ref.RequestID, err)
	}
	return t, nil
}

// inTimeEntry reports whether r is a lottery request queued by its cutoff that no
// draw has finalised: one whose failure only failEntry may write.
func inTimeEntry(r *storedRequest) bool {
	return r != nil && r.EventType == Lottery && !r.Status.IsTerminal() && r.QueuedAt <= r.LotteryCutoffAt
}

// won is the result of a request that won its seat: SUCCEEDED, or HELD with holds.
func won(hold time.Duration) result {
	if hold > 0 {
		return result{action: actDelete, outcome: Outcome{Kind: OutcomeHeld}}
	}
	return result{action: actDelete, outcome: Outcome{Kind: OutcomeSucceeded, ResultCode: ResultSuccess}}
}

// shards returns the capacity shards of a first-come message's event: from the
// message, else the event's config.
func (p *Processor) shards(ctx context.Context, m Message) (int, error) {
	if m.CapacityShards <= 0 {
		return p.c.capacityShards(ctx, m.EventID)
	}
	if cfg, _, ok := p.c.events.Peek(m.EventID); ok && max(cfg.CapacityShards, 1) != m.CapacityShards {
		return 0, Permanent(fmt.Errorf("%w: capacityShards %d, the event has %d", ErrMalformedMessage, m.CapacityShards, max(cfg.CapacityShards, 1)))
	}
	return m.CapacityShards, nil
}

// entryFence is the moment after which nothing may write a lottery's entries but its
// draw: the moment Draw may begin (the cutoff plus Options.DrawSettleWindow) less a
// margin, the smaller of one second and a quarter of the window, for a call cut off
// at the fence to reach DynamoDB. Ingest's writes of a request and a worker's failure
// of an entry end by it, so that the entries a draw reads from GSI2 are all the
// entries there will be, each with its last status before the draw (Draw confirms the
// status of those not yet collected with a strongly consistent read). Every process
// of an event must use the same window.
func (c *Client) entryFence(e *eventItem) time.Time {
	window := c.opts.DrawSettleWindow
	return e.entriesCutoff().Time().Add(window - min(time.Second, window/4))
}
