package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/asyncevent/asyncevent/queue"
)

// Submit is the whole ingest of one click: Participate (the lock, then the request,
// which fixes the request's queuedAt and puts it on both indexes), send the request's
// message to q (FIFO queues: group = eventId, deduplication = requestId), then
// MarkQueued. q is a parameter, not an input, because a service may route its
// events to several queues, and eventID and userID stay two parameters because
// together they are the participation's key. Each step keeps the design's promises:
//
//   - Once the lock's put has begun, the writes run to completion, or to a clean
//     release of the lock, whatever ctx does: they run under a context of their own
//     that ctx cannot cancel, bounded by ingestDeadline (10 s, or ctx's deadline if later; for a LOTTERY event
//     never past the moment its draw may begin). A ctx that has ended before the
//     lock's put writes nothing.
//   - A duplicate writes and sends nothing and returns the first requestId: without
//     a call on a client that saw the pair's request queued (Options.DuplicateCacheSize),
//     else by the lock's failed put (after the event's config, which the client
//     caches for Options.EventCacheTTL). Once Options.RedriveAfter has passed since the
//     lock was written, it reads the request too: a request still RECEIVED (a crash
//     between its write and its send) is sent again, and a lock without its request
//     (a crash between the two puts) gets its request written (queuedAt = now) and
//     sent. A double send is harmless, as the worker's start is conditional.
//   - A click on an event an operator paused (PauseEvent) writes nothing: it reads
//     the pair's lock (one strongly consistent GetItem), and is ErrEventPaused
//     without one, the participation as it stands with one (on every node alike).
//   - A click after the event closed (FIRST_COME past endsAt, LOTTERY past its
//     cutoff) reads the pair's lock (one strongly consistent GetItem): without one it
//     is ErrEventClosed, as before; with one it is the duplicate it is, never
//     ErrEventClosed. Once Options.RedriveAfter has passed, a lock left without its
//     request gets it written FAILED_FINAL at once (resultCode FAILED_INGEST_ENQUEUE,
//     errorCode INGEST_INCOMPLETE), so that the user sees a final answer and it is
//     never an entry of a draw; a request still RECEIVED is sent again (of a LOTTERY
//     event, the message only: no write past the cutoff, the worker decides).
//   - A failed send (after the queue client's own retries) ends the request
//     FAILED_FINAL with FAILED_INGEST_ENQUEUE and releases the lock
//     (MarkEnqueueFailed): the error matches ErrEnqueueFailed, and the user may click
//     again.
//   - MarkQueued losing its condition means a worker already started the request:
//     not an error. MarkQueued is sent once, without retries: refused (a throttle,
//     say), the request stays RECEIVED for the worker, which starts it as it would a
//     QUEUED one (its queuedAt and index keys came with its put); the participation
//     stands.
//   - A request put whose outcome is unknown (its answer lost) still sends its
//     message, so a request that did land is not left RECEIVED; the participation
//     stands if MarkQueued then finds the request, else the error is returned (the
//     worker drops the message of a request that does not exist, and the user's next
//     click heals the lock).
//   - DynamoDB refusing throughput is an ErrThrottled error (an HTTP service answers
//     503 with Retry-After); nothing half-written stays but, at worst, a lock that the
//     next click heals.
//
// A request left RECEIVED with no message on its way (its ingest died, or its send
// failed and so did recording it) is on GSI2 from its put: Sweep finds it and sends
// it again, whether or not the user clicks again.
//
// The Participation's Request, when set, is the request as Submit left it.
func (c *Client) Submit(ctx context.Context, q queue.Queue, eventID, userID string) (Participation, error) {
	if c.opts.Observer == nil {
		return c.submit(ctx, q, eventID, userID)
	}
	return c.observeSubmit(ctx, eventID, userID, func(ctx context.Context) (Participation, error) {
		return c.submit(ctx, q, eventID, userID)
	})
}

func (c *Client) submit(ctx context.Context, q queue.Queue, eventID, userID string) (Participation, error) {
	lock, err := NewLockKey(eventID, userID)
	if err != nil {
		return Participation{}, err
	}
	if p, ok := c.queued.Get(lock.IdempotencyKey()); ok {
		return p, nil // a repeat click of a request seen queued: its lock stays for good
	}
	event, err := c.cachedEvent(ctx, eventID)
	if err != nil {
		return Participation{}, err
	}
	if err := event.checkOpen(c.now()); err != nil {
		if errors.Is(err, ErrEventClosed) || errors.Is(err, ErrEventPaused) {
			return c.submitRefused(ctx, q, event, lock, err)
		}
		return Participation{}, err
	}
	if err := ctx.Err(); err != nil {
		return Participation{}, err
	}
	ctx, cancel := c.ingestContext(ctx, event)
	defer cancel()
	p, err := c.participateIn(ctx, event, lock)
	var uncertain *uncertainError
	if errors.As(err, &uncertain) {
		return c.enqueueUncertain(ctx, q, uncertain)
	}
	if err != nil {
		return p, err
	}
	if !p.Duplicate {
		if event.EventType == FirstCome {
			c.progress.arrived(event.EventID, p.Request.QueuedAt)
		}
		if p.Request.Status == StatusReceived { // else a heal of another click wrote it first
			p.Request, err = c.enqueue(ctx, q, p.Request)
		}
		c.rememberQueued(p)
		return p, err
	}
	return c.redrive(ctx, q, event, lock, p, false)
}

// submitRefused answers a click on a closed or paused event: the pair's participation
// if it has one (after a close healed, or ended, as redrive does once the event
// closed; while paused as it stands, nothing written), else the refusal. So a repeat
// click gets its participation on every node, whether or not the node remembers it.
func (c *Client) submitRefused(ctx context.Context, q queue.Queue, event *eventItem, lock LockKey, refusal error) (Participation, error) {
	p, err := c.LookupParticipation(ctx, event.EventID, lock.userID)
	switch {
	case errors.Is(err, ErrNotFound):
		return Participation{}, refusal
	case err != nil:
		return Participation{}, err
	case errors.Is(refusal, ErrEventPaused):
		return p, nil // as it stands: a paused event's clicks write nothing
	}
	// Not an entry of a draw whatever it writes (see redrive): bookkeepingTimeout alone.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
	defer cancel()
	return c.redrive(ctx, q, event, lock, p, true)
}

// redrive finishes the ingest of a duplicate's first request, once
// Options.RedriveAfter has passed since its lock: a lock without its request gets it
// (RECEIVED and sent while the event is open; FAILED_FINAL once it closed), and a
// request still RECEIVED is sent again.
func (c *Client) redrive(ctx context.Context, q queue.Queue, event *eventItem, lock LockKey, p Participation, closed bool) (Participation, error) {
	if c.opts.Clock().Sub(p.ParticipatedAt.Time()) < c.opts.RedriveAfter {
		return p, nil
	}
	r, err := viewOf(c.getRequest(ctx, p.RequestID, true))
	if errors.Is(err, ErrNotFound) && closed && event.EventType == FirstCome {
		// A message of the request may have gone out (after a put whose answer was
		// lost) and won its seat: the home shard is closed to it before it is ended
		// without one, and a seat found there heals it as if the event were open (its
		// message, or the one sent now, binds it).
		held, cerr := c.closeHome(ctx, RequestRef{RequestID: p.RequestID, EventID: event.EventID, UserID: lock.userID}, max(event.CapacityShards, 1))
		if cerr != nil {
			return p, cerr
		}
		closed = !held
	}
	if errors.Is(err, ErrNotFound) {
		var uncertain *uncertainError
		switch r, err = c.healLock(ctx, event, lock, p, closed); {
		case errors.As(err, &uncertain) && !closed:
			return c.enqueueUncertain(ctx, q, uncertain)
		case errors.As(err, &uncertain):
			return p, uncertain.err // the next click reads what landed
		}
	}
	if err != nil {
		return p, err
	}
	p.Request = r
	switch {
	case r.Status != StatusReceived:
	case closed && event.EventType == Lottery:
		// Past the cutoff ingest writes nothing of a lottery request: the draw may be
		// reading its entries. The message alone goes; the worker decides.
		c.opts.Logger.InfoContext(ctx, "re-sending a lottery request stuck in RECEIVED after the cutoff",
			slog.String("requestId", r.RequestID), slog.String("eventId", r.EventID))
		if err := c.sendRequest(ctx, q, r); err != nil {
			return p, fmt.Errorf("%w: %s: %w", ErrEnqueueFailed, r.RequestID, err)
		}
	default:
		c.opts.Logger.InfoContext(ctx, "re-sending a request stuck in RECEIVED",
			slog.String("requestId", r.RequestID), slog.String("eventId", r.EventID))
		p.Request, err = c.enqueue(ctx, q, r)
	}
	c.rememberQueued(p)
	return p, err
}

// healLock writes the request of a lock left without one (its ingest died between
// the lock and the request, or the request's put failed and the lock could not be
// released), from the lock's requestId and createdAt, with queuedAt = now. While the
// event is open the request is RECEIVED and Submit then sends it; once it closed, it
// is written FAILED_FINAL (endIncomplete). Each heal's put has a ClientRequestToken
// of its own.
func (c *Client) healLock(ctx context.Context, event *eventItem, lock LockKey, p Participation, closed bool) (*Request, error) {
	if closed {
		c.opts.Logger.InfoContext(ctx, "ending the request of a lock left without one, after the event closed",
			slog.String("requestId", p.RequestID), slog.String("eventId", event.EventID))
		return c.endIncomplete(ctx, event, lock, p)
	}
	c.opts.Logger.InfoContext(ctx, "writing the request of a lock left without one",
		slog.String("requestId", p.RequestID), slog.String("eventId", event.EventID))
	return c.createRequest(ctx, event, lock, p.RequestID, p.ParticipatedAt, fmt.Sprintf("heal@%d", c.now()))
}

// rememberQueued caches a participation whose request is past RECEIVED and whose lock
// stays for good (all but a failed enqueue's, which releases it), so later clicks are
// duplicates of it.
func (c *Client) rememberQueued(p Participation) {
	lockStays := p.Request != nil && (p.Request.ResultCode != ResultFailedIngestEnqueue || p.Request.ErrorCode == errorIngestIncomplete)
	if r := p.Request; lockStays && r.Status != StatusReceived {
		if lock, err := NewLockKey(r.EventID, r.UserID); err == nil { // the IDs of a request written
			c.queued.Put(lock.IdempotencyKey(), Participation{RequestID: r.RequestID, Duplicate: true, ParticipatedAt: p.ParticipatedAt})
		}
	}
}

// enqueueUncertain sends the message of a request whose write may not have landed: a
// message without its request is dropped by the worker (NOT_FOUND), while a request
// that did land is not left RECEIVED without a message. The participation stands only
// if the request is then found.
func (c *Client) enqueueUncertain(ctx context.Context, q queue.Queue, u *uncertainError) (Participation, error) {
	r, err := c.enqueue(ctx, q, u.request)
	if err != nil || r == u.request {
		// Not found, or not known: the caller learns that the participation failed;
		// if it did land, the message on its way finishes it.
		return Participation{}, u.err
	}
	return Participation{RequestID: r.RequestID, ParticipatedAt: u.request.RequestedAt, Request: r}, nil
}

// sendRequest sends the message of a request, and nothing else.
func (c *Client) sendRequest(ctx context.Context, q queue.Queue, r *Request) error {
	body, err := EncodeMessage(c.messageOf(r))
	if err != nil {
		return err
	}
	return c.sendMessage(ctx, q, queue.OutgoingMessage{Body: body, GroupID: r.EventID, DeduplicationID: r.RequestID})
}

// enqueue sends the message of a RECEIVED request and records the outcome, under ctx
// (an ingest context: the caller's end does not cut it short). It returns the request
// as it now stands.
func (c *Client) enqueue(ctx context.Context, q queue.Queue, r *Request) (*Request, error) {
	m := c.messageOf(r)
	body, err := EncodeMessage(m)
	if err != nil {
		return r, fmt.Errorf("enqueue %s: %w", r.RequestID, err)
	}
	sendErr := c.sendMessage(ctx, q, queue.OutgoingMessage{Body: body, GroupID: r.EventID, DeduplicationID: r.RequestID})
	log := c.opts.Logger.With(slog.String("requestId", r.RequestID), slog.String("eventId", r.EventID))
	if sendErr != nil {
		t, err := c.markEnqueueFailed(ctx, r.Ref(), sendErr)
		switch {
		case err != nil:
			// The request stays RECEIVED; a later click or the sweeper sends it again.
			log.ErrorContext(ctx, "send failed and so did recording it", slog.Any("sendError", sendErr), slog.Any("error", err))
			return r, fmt.Errorf("%w: %s: %w", ErrEnqueueFailed, r.RequestID, sendErr)
		case !t.Applied:
			// The send failed for us but reached the queue: a worker has the request.
			log.WarnContext(ctx, "send reported a failure but the message got through", slog.Any("sendError", sendErr))
			return t.Current, nil
		}
		if r.EventType == FirstCome {
			c.progress.reached(r.EventID, c.now()) // it leaves the line: no worker will
		}
		failed := *r
		failed.Status, failed.UIResult, failed.ResultCode = StatusFailedFinal, UIFailed, ResultFailedIngestEnqueue
		return &failed, fmt.Errorf("%w: %s: %w", ErrEnqueueFailed, r.RequestID, sendErr)
	}
	// Sent once, not retried: when DynamoDB refuses it (a throttle, most likely, on
	// the event's index key in a spike), the message is on the queue already and the
	// worker starts a RECEIVED request as a QUEUED one (its queuedAt and index keys
	// came with its put), so a retry would only spend the key's units and the click's
	// time.
	t, err := c.markQueued(ctx, r.Ref(), r.QueuedAt, txOptions{once: true})
	switch {
	case err != nil:
		log.WarnContext(ctx, "message sent but marking it queued failed", slog.Any("error", err))
		return r, nil
	case !t.Applied:
		return t.Current, nil
	}
	queued := *r
	queued.Status = StatusQueued
	return &queued, nil
}
