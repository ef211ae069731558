package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// bookkeepingTimeout bounds the writes that follow a send. They run even when the
// caller's context ends (a client that hung up), since the message is on its way
// either way and the request must say so.
const bookkeepingTimeout = 10 * time.Second

// Submit is the whole ingest of one click: Participate (the lock, then the request),
// send the request's message to q (FIFO queues: group = eventId, deduplication =
// requestId), then MarkQueued. Each step keeps
// the design's promises:
//
//   - A duplicate writes and sends nothing and returns the first requestId, answered
//     by the lock's failed put alone. Once Options.RedriveAfter has passed since the
//     lock was written, it reads the request too: a request still RECEIVED (a crash
//     between its write and its send) is sent again, and a lock without its request
//     (a crash between the two puts) gets its request written and sent. A double
//     send is harmless, as the worker's start is conditional.
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
// The Participation's Request, when set, is the request as Submit left it.
func (c *Client) Submit(ctx context.Context, q Queue, eventID, userID string) (Participation, error) {
	if c.opts.Observer == nil {
		return c.submit(ctx, q, eventID, userID)
	}
	return c.observeSubmit(ctx, eventID, userID, func(ctx context.Context) (Participation, error) {
		return c.submit(ctx, q, eventID, userID)
	})
}

func (c *Client) submit(ctx context.Context, q Queue, eventID, userID string) (Participation, error) {
	if p, ok := c.knownDuplicate(ctx, eventID, userID); ok {
		return p, nil
	}
	p, err := c.Participate(ctx, eventID, userID)
	var uncertain *uncertainError
	if errors.As(err, &uncertain) {
		return c.enqueueUncertain(ctx, q, uncertain)
	}
	if err != nil {
		return p, err
	}
	if !p.Duplicate {
		p.Request, err = c.enqueue(ctx, q, p.Request)
		c.rememberQueued(p)
		return p, err
	}
	if c.opts.Clock().Sub(p.ParticipatedAt.Time()) < c.opts.RedriveAfter {
		return p, nil
	}
	r, err := c.getRequest(ctx, p.RequestID, true)
	if errors.Is(err, ErrNotFound) {
		r, err = c.healLock(ctx, eventID, userID, p)
		if errors.As(err, &uncertain) {
			return c.enqueueUncertain(ctx, q, uncertain)
		}
	}
	if err != nil {
		return p, err
	}
	p.Request = r
	if r.Status == StatusReceived {
		c.opts.Logger.InfoContext(ctx, "re-sending a request stuck in RECEIVED",
			slog.String("requestId", r.RequestID), slog.String("eventId", r.EventID))
		p.Request, err = c.enqueue(ctx, q, r)
	}
	c.rememberQueued(p)
	return p, err
}

// healLock writes the request of a lock left without one (its ingest died between
// the lock and the request, or the request's put failed and the lock could not be
// released), from the lock's requestId and createdAt. The request is RECEIVED; Submit
// then sends it.
func (c *Client) healLock(ctx context.Context, eventID, userID string, p Participation) (*Request, error) {
	lock, err := NewLockKey(eventID, userID)
	if err != nil {
		return nil, err
	}
	event, err := c.cachedEvent(ctx, eventID)
	if err != nil {
		return nil, err
	}
	c.opts.Logger.InfoContext(ctx, "writing the request of a lock left without one",
		slog.String("requestId", p.RequestID), slog.String("eventId", eventID))
	return c.createRequest(ctx, event, lock, p.RequestID, p.ParticipatedAt)
}

// knownDuplicate answers a repeat click from the client's cache of queued requests:
// no call, once the event is known to be open.
func (c *Client) knownDuplicate(ctx context.Context, eventID, userID string) (Participation, bool) {
	lock, err := NewLockKey(eventID, userID)
	if err != nil {
		return Participation{}, false
	}
	p, ok := c.queued.get(lock.IdempotencyKey())
	if !ok {
		return Participation{}, false
	}
	if _, err := c.openEvent(ctx, eventID); err != nil {
		return Participation{}, false // let Participate give the error
	}
	return p, true
}

// rememberQueued caches a participation whose request is past RECEIVED: its lock
// stays for good, so later clicks are duplicates of it.
func (c *Client) rememberQueued(p Participation) {
	if r := p.Request; r != nil && r.Status != StatusReceived && r.ResultCode != ResultFailedIngestEnqueue {
		c.queued.put(r.IdempotencyKey, Participation{RequestID: r.RequestID, Duplicate: true, ParticipatedAt: p.ParticipatedAt})
	}
}

// queuedCache is a bounded map from a lock's key to the participation it holds,
// dropping the oldest entry when full. It is safe for concurrent use.
type queuedCache struct {
	mu    sync.Mutex
	m     map[string]Participation
	order []string // ring of keys, oldest at next
	next  int
	size  int
}

func newQueuedCache(size int) *queuedCache {
	return &queuedCache{m: map[string]Participation{}, size: size}
}

func (qc *queuedCache) get(key string) (Participation, bool) {
	if qc.size <= 0 {
		return Participation{}, false
	}
	qc.mu.Lock()
	defer qc.mu.Unlock()
	p, ok := qc.m[key]
	return p, ok
}

func (qc *queuedCache) put(key string, p Participation) {
	if qc.size <= 0 {
		return
	}
	qc.mu.Lock()
	defer qc.mu.Unlock()
	if _, ok := qc.m[key]; ok {
		return
	}
	if len(qc.order) < qc.size {
		qc.order = append(qc.order, key)
	} else {
		delete(qc.m, qc.order[qc.next])
		qc.order[qc.next] = key
		qc.next = (qc.next + 1) % qc.size
	}
	qc.m[key] = p
}

// enqueueUncertain sends the message of a request whose write may not have landed: a
// message without its request is dropped by the worker (NOT_FOUND), while a request
// that did land is not left RECEIVED without a message. The participation stands only
// if the request is then found.
func (c *Client) enqueueUncertain(ctx context.Context, q Queue, u *uncertainError) (Participation, error) {
	r, err := c.enqueue(ctx, q, u.request)
	if err != nil || r == u.request {
		// Not found, or not known: the caller learns that the participation failed;
		// if it did land, the message on its way finishes it.
		return Participation{}, u.err
	}
	return Participation{RequestID: r.RequestID, ParticipatedAt: u.request.RequestedAt, Request: r}, nil
}

// enqueue sends the message of a RECEIVED request and records the outcome. It returns
// the request as it now stands.
func (c *Client) enqueue(ctx context.Context, q Queue, r *Request) (*Request, error) {
	m := messageOf(r)
	body, err := EncodeMessage(m)
	if err != nil {
		return r, fmt.Errorf("enqueue %s: %w", r.RequestID, err)
	}
	sendErr := c.sendMessage(ctx, q, OutgoingMessage{Body: body, GroupID: r.EventID, DeduplicationID: r.RequestID})

	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
	defer cancel()
	log := c.opts.Logger.With(slog.String("requestId", r.RequestID), slog.String("eventId", r.EventID))
	if sendErr != nil {
		t, err := c.MarkEnqueueFailed(ctx, r.Ref(), sendErr)
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
