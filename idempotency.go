package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/internal/ingest"
)

// IdempotencyLock is the IdempotencyLock item (PK IDEMP#<eventId>#<userId>, SK LOCK):
// the guard that gives one (event, user) exactly one request. It is written only
// when absent, just before the request it names.
type IdempotencyLock struct {
	EntityType entity.Type `dynamodbav:"entityType"` // IDEMPOTENCY
	EventID    string      `dynamodbav:"eventId"`
	UserID     string      `dynamodbav:"userId"`
	RequestID  string      `dynamodbav:"requestId"` // the first request of the user
	CreatedAt  EpochMillis `dynamodbav:"createdAt"`

	// TTL is the expiry in epoch seconds: the event's end plus Options.LockTTL.
	TTL int64 `dynamodbav:"ttl,omitempty"`
}

type lockItem struct {
	Key
	IdempotencyLock
}

// The lock's rows.
var (
	participateRow = row{name: "participate", method: "Rows.Participate", item: entity.Idempotency, op: opPut, cond: notExists}

	lockNamesRequest = compare(expression.Name(attrRequestID).Equal, pRequestID)
	releaseLockRow   = row{
		name: "release lock", method: "Rows.MarkEnqueueFailed", item: entity.Idempotency, op: opDelete, cond: lockNamesRequest,
	}
	// requestAbsentRow goes with a release of the lock whose request's put was
	// refused: the lock goes only if the request is not there after all.
	lockOfRequestRow = row{
		name: "message's request: lock", method: "Processor.ProcessOne", item: entity.Idempotency, op: opCheck, cond: lockNamesRequest,
	}
)

// Participation is the answer to a participation: the request that stands for the
// (event, user) pair.
type Participation struct {
	// RequestID is the request of the pair: the new one, or for a duplicate the first.
	RequestID string
	// Duplicate is true when the pair had a request already; nothing new was written.
	Duplicate bool
	// ParticipatedAt is when the pair's request was made (the lock's createdAt).
	ParticipatedAt EpochMillis
	// Request is the request as this call last wrote or read it: the new request, or
	// for a duplicate the first request when the call had to read it (Submit after
	// Options.RedriveAfter); otherwise nil.
	Request *Request
}

// participateAttempts bounds the attempts of Participate whose lock did not land: a
// duplicate's lock that vanished before it could be read (its request's enqueue
// failed and released it), a lost call whose lock is not there.
const participateAttempts = 3

// Participate is a row method of the worker's layer, Submit's first step: a service
// leaves it to Submit (see "Two layers" in the package doc).
//
// Participate accepts one user into one event with the design's own two writes, no
// transaction:
//
//  1. the "participate" row: PutItem of the IdempotencyLock, PK
//     IDEMP#<eventId>#<userId>, SK LOCK, naming a new requestId; condition
//     attribute_not_exists(PK) AND attribute_not_exists(SK);
//  2. the "create request" row: PutItem of the Request, PK REQ#<requestId>, SK META,
//     status RECEIVED, requestedAt = the lock's createdAt, queuedAt = the time just
//     before this put, and the index keys GSI1PK/GSI1SK/GSI2PK/GSI2SK from queuedAt
//     in the event's layout (written once, never changed); the same condition.
//
// When the lock exists the pair has participated already: the result names the first
// requestId with Duplicate set, read from the failed put's old item (ALL_OLD), so a
// duplicate click costs that one failed put and nothing else. An unknown event is
// ErrEventNotFound, one outside its window ErrEventNotOpen or ErrEventClosed, one an
// operator paused ErrEventPaused, a bad
// ID ErrInvalidID; in each case nothing is written.
//
// Between the two puts a lock can be left without its request: the process died, or
// the request's put failed for certain and the lock could not be released (a put that
// failed for certain releases it, so the user may click again: the "release lock:
// request absent" row, one transaction of a DeleteItem of the lock, condition
// requestId = this request, and a ConditionCheck of REQ#<requestId> / META,
// attribute_not_exists(PK): a lock whose request landed after all is kept). Submit heals such a lock on the user's next click once
// Options.RedriveAfter has passed: it writes the request from the lock and sends it.
// A put whose answer was lost is settled within the call: a lock or request found
// holding this call's own requestId is recognised as its own, not a duplicate. A
// throttled put is an ErrThrottled error.
//
// Once ctx has let the call begin writing, the two puts run to completion whatever
// ctx does afterwards (a client that hung up must not leave a lock without its
// request), under the deadline of ingestDeadline; a ctx that has ended before the
// lock's put writes nothing.
//
// Participate does not send the request's message; Submit does the whole ingest.
func (r *Rows) Participate(ctx context.Context, eventID, userID string) (Participation, error) {
	c := r.c
	lock, err := NewLockKey(eventID, userID)
	if err != nil {
		return Participation{}, err
	}
	event, err := c.openEvent(ctx, eventID)
	if err != nil {
		return Participation{}, err
	}
	if err := ctx.Err(); err != nil {
		return Participation{}, err
	}
	ctx, cancel := c.ingestContext(ctx, event)
	defer cancel()
	return c.participateIn(ctx, event, lock)
}

// participateIn is Participate's writes for an open event, under ctx (an ingest
// context).
func (c *Client) participateIn(ctx context.Context, event *eventItem, lock LockKey) (Participation, error) {
	for range participateAttempts {
		p, err := c.participate(ctx, event, lock)
		if !errors.Is(err, errRetryParticipate) {
			return p, err
		}
	}
	return Participation{}, fmt.Errorf("participate %s: the lock kept changing under the call", lock.IdempotencyKey())
}

// errRetryParticipate: the attempt wrote nothing and may be tried again (a duplicate's
// lock released before it could be read, a lost put whose lock is not there).
var errRetryParticipate = errors.New("retry participate")

// newRequestID returns the ID of a new request of event: Options.NewRequestID's, or by
// default a UUIDv7 on the event's next index shard in turn.
func (c *Client) newRequestID(event *eventItem) string {
	if c.turns == nil {
		return c.opts.NewRequestID()
	}
	return c.turns.NewRequestID(event.EventID, event.IndexShards, shardOf)
}

func (c *Client) participate(ctx context.Context, event *eventItem, lock LockKey) (Participation, error) {
	requestID := c.newRequestID(event)
	if err := ValidateID("requestId", requestID); err != nil {
		return Participation{}, fmt.Errorf("Options.NewRequestID: %w", err)
	}
	now := c.now()
	var lockTTL int64
	if end := event.closesAt(); end != 0 {
		lockTTL = expiry(end, c.opts.LockTTL)
	}
	err := c.do(ctx, txOptions{}, []write{{row: &participateRow, item: lockItem{Key: lock.Key(), IdempotencyLock: IdempotencyLock{
		EntityType: entity.Idempotency, EventID: event.EventID, UserID: lock.userID,
		RequestID: requestID, CreatedAt: now, TTL: lockTTL,
	}}}})
	var lost *conditionLost
	switch {
	case errors.As(err, &lost):
		first, err := c.firstParticipation(ctx, event, lock, lost.old)
		if err != nil || first.RequestID != requestID {
			return first, err
		}
		// Our own lock, met again by the SDK's retry of a put whose answer was lost.
	case err != nil && !ingest.Invalid(err) && !isThrottle(err):
		// No answer: the lock may or may not have landed. The lock tells.
		p, lerr := c.LookupParticipation(ctx, event.EventID, lock.userID)
		switch {
		case errors.Is(lerr, ErrNotFound):
			return Participation{}, errRetryParticipate
		case lerr != nil:
			// A lock that did land is healed on the user's next click.
			return Participation{}, fmt.Errorf("participate %s: %w", lock.IdempotencyKey(), err)
		case p.RequestID != requestID:
			return p, nil
		}
	case err != nil:
		return Participation{}, fmt.Errorf("participate %s: %w", lock.IdempotencyKey(), throttled(err))
	}
	r, err := c.createRequest(ctx, event, lock, requestID, now, "participate")
	if err != nil {
		return Participation{}, err
	}
	return Participation{RequestID: requestID, ParticipatedAt: now, Request: r}, nil
}

// firstParticipation reads the pair's first participation from the lock a failed
// put returned (old), or from the table when the store returned none.
func (c *Client) firstParticipation(ctx context.Context, event *eventItem, lock LockKey, old map[string]types.AttributeValue) (Participation, error) {
	if old == nil {
		p, err := c.LookupParticipation(ctx, event.EventID, lock.userID)
		if errors.Is(err, ErrNotFound) {
			return Participation{}, errRetryParticipate
		}
		return p, err
	}
	var item lockItem
	if err := attributevalue.UnmarshalMap(old, &item); err != nil {
		return Participation{}, fmt.Errorf("participate %s: %w", lock.IdempotencyKey(), err)
	}
	return Participation{RequestID: item.RequestID, Duplicate: true, ParticipatedAt: item.CreatedAt}, nil
}

// createRequest writes the request a lock names, RECEIVED at requestedAt (the lock's
// createdAt), with its status-log entry in the same transaction when the log is on.
// Its place in line is fixed here: queuedAt is the time just before the put (never
// before requestedAt), and the put writes the index keys from it in the event's
// layout, so the request is on both indexes (its user's listing, the event's queue
// order, the sweeper) from the moment it exists; nothing rewrites them. tokenOwner
// names the writer in the transaction's ClientRequestToken (with the status log):
// a heal's put differs from the first put's (its queuedAt, its log entry), so it must
// not reuse that put's token, which DynamoDB would refuse within ten minutes as an
// IdempotentParameterMismatch.
// A request already there under this lock (a retried put whose answer was lost, or a
// concurrent heal) is returned as it is. A refused put releases the lock, so that the
// user may click again, in one transaction with a check that the request is not there
// (an earlier attempt of the SDK's retries may have landed); a put whose outcome is
// unknown is an *uncertainError, so that Submit sends the message all the same.
func (c *Client) createRequest(ctx context.Context, event *eventItem, lock LockKey, requestID string, requestedAt EpochMillis, tokenOwner string) (*Request, error) {
	key, err := NewRequestKey(requestID)
	if err != nil {
		return nil, err
	}
	item, err := c.newRequest(event, lock, requestID, requestedAt)
	if err != nil {
		return nil, err
	}
	req := item.Request
	ws := []write{{row: &createRequestRow, item: item}}
	if c.opts.StatusLog {
		entry, err := c.statusLogEntry(requestID, "", StatusReceived, "participated", requestedAt)
		if err != nil {
			return nil, err
		}
		ws = append(ws, entry)
	}
	err = c.do(ctx, txOptions{token: func(attempt int) string { return requestToken(requestID, tokenOwner, attempt) }}, ws)
	var lost *conditionLost
	switch {
	case err == nil:
		return &req, nil
	case errors.As(err, &lost) && lost.index == 0:
		var item requestItem
		if err := attributevalue.UnmarshalMap(lost.old, &item); err != nil {
			return nil, err
		}
		if item.IdempotencyKey != lock.IdempotencyKey() {
			return nil, fmt.Errorf("participate %s: request ID %s is taken: Options.NewRequestID must return unique IDs", lock.IdempotencyKey(), requestID)
		}
		return &item.Request, nil
	case refused(err):
		// Refused, by the last attempt at least: an earlier attempt of the SDK's
		// retries may have landed and lost its answer. The lock goes, in one
		// transaction, only if it still names this request and the request is not
		// there, so that the user may click again.
		rerr := c.do(ctx, txOptions{}, []write{
			{row: &releaseLockRow, key: lock.Key(), args: args{pRequestID: requestID}},
			{row: &requestAbsentRow, key: key.Key()},
		})
		switch {
		case errors.As(rerr, &lost) && lost.index == 1:
			return viewOf(c.getRequest(ctx, requestID, true)) // it landed
		case rerr != nil && !errors.As(rerr, &lost):
			c.opts.Logger.WarnContext(ctx, "the request's put failed and so did releasing its lock; the next click heals it",
				slog.String("requestId", requestID), slog.String("eventId", event.EventID), slog.Any("error", rerr))
		}
		return nil, fmt.Errorf("participate %s: %w", lock.IdempotencyKey(), throttled(err))
	}
	return nil, &uncertainError{request: &req, err: fmt.Errorf("participate %s: %w", lock.IdempotencyKey(), err)}
}

// newRequest returns a new RECEIVED request of the pair lock names, as its put writes
// it: queuedAt is now (never before requestedAt), and its index keys follow from it in
// the event's layout.
func (c *Client) newRequest(event *eventItem, lock LockKey, requestID string, requestedAt EpochMillis) (requestItem, error) {
	key, err := NewRequestKey(requestID)
	if err != nil {
		return requestItem{}, err
	}
	queuedAt := max(c.now(), requestedAt)
	index, err := event.RequestIndexKeys(lock.userID, requestID, queuedAt)
	if err != nil {
		return requestItem{}, err
	}
	req := storedRequest{
		EntityType: entity.Request,
		Request: Request{
			RequestID: requestID, EventID: event.EventID, UserID: lock.userID,
			EventType: event.EventType, Status: StatusReceived, UIResult: UIPending,
			RequestedAt: requestedAt, QueuedAt: queuedAt,
		},
		IdempotencyKey: lock.IdempotencyKey(), TTL: expiry(requestedAt, c.opts.RequestTTL),
	}
	if event.EventType == Lottery {
		req.UIPhase, req.LotteryCutoffAt = PhaseCollecting, event.LotteryCutoffAt
	}
	return requestItem{Key: key.Key(), IndexKeys: index, storedRequest: req}, nil
}

// errorIngestIncomplete is the errorCode of a request written FAILED_FINAL by
// Submit's heal of a lock left without its request after the event closed
// (resultCode FAILED_INGEST_ENQUEUE): its ingest stopped between the lock and the
// request, and it came too late to take part.
const errorIngestIncomplete = "INGEST_INCOMPLETE"

// endIncomplete writes the request of a lock left without one after its event
// closed, final at once: the "end incomplete request" row, PutItem of the
// Request, PK REQ#<requestId>, SK META, status FAILED_FINAL, uiResult FAILED,
// resultCode FAILED_INGEST_ENQUEUE, failureClass NON_RETRYABLE, errorCode
// INGEST_INCOMPLETE, requestedAt = the lock's createdAt, queuedAt = finishedAt = now
// (after the close: never an entry of a draw), and its index keys from queuedAt, so
// that it shows in the lists; condition attribute_not_exists(PK) AND
// attribute_not_exists(SK); with Options.StatusLog, in one TransactWriteItems with
// two entries, RECEIVED at requestedAt and FAILED_FINAL at now. The lock stays,
// naming it: the user's later clicks are its duplicates. A request already there (its first put landed after all) is
// returned as it is.
func (c *Client) endIncomplete(ctx context.Context, event *eventItem, lock LockKey, p Participation) (*Request, error) {
	item, err := c.newRequest(event, lock, p.RequestID, p.ParticipatedAt)
	if err != nil {
		return nil, err
	}
	now := item.QueuedAt
	item.Status, item.UIResult, item.ResultCode = StatusFailedFinal, UIFailed, ResultFailedIngestEnqueue
	item.FailureClass, item.ErrorCode, item.FinishedAt = NonRetryable, errorIngestIncomplete, now
	item.ErrorMessage = "the click's ingest stopped between its lock and its request, and the event closed before it was completed"
	ws := []write{{row: &incompleteRequestRow, item: item}}
	if c.opts.StatusLog {
		// The click was received when its lock was written; the log says so, then how
		// it ended, so that it reads as a path of the lifecycle.
		received, err := c.statusLogEntry(p.RequestID, "", StatusReceived, "participated", p.ParticipatedAt)
		if err != nil {
			return nil, err
		}
		ended, err := c.statusLogEntry(p.RequestID, StatusReceived, StatusFailedFinal, "ingest incomplete at the close", now)
		if err != nil {
			return nil, err
		}
		ws = append(ws, received, ended)
	}
	err = c.do(ctx, txOptions{token: func(attempt int) string {
		return requestToken(p.RequestID, fmt.Sprintf("incomplete@%d", now), attempt)
	}}, ws)
	var lost *conditionLost
	switch {
	case err == nil:
		return &item.Request, nil
	case errors.As(err, &lost) && lost.index == 0:
		var found requestItem
		if err := attributevalue.UnmarshalMap(lost.old, &found); err != nil {
			return nil, err
		}
		return &found.Request, nil
	case err != nil && !refused(err):
		return nil, &uncertainError{request: &item.Request, err: fmt.Errorf("end incomplete %s: %w", p.RequestID, err)}
	}
	return nil, fmt.Errorf("end incomplete %s: %w", p.RequestID, throttled(err))
}

// uncertainError is a Participate whose write may or may not have landed: its answer
// was lost and the lock could not be read either. Submit sends the request's message
// all the same, so that a request that did land is not left RECEIVED without one.
type uncertainError struct {
	request *Request
	err     error
}

func (e *uncertainError) Error() string { return e.err.Error() }
func (e *uncertainError) Unwrap() error { return e.err }

// refused reports a call that DynamoDB answered with a refusal, so that nothing of it
// was applied: the call was wrong, or throttled.
func refused(err error) bool { return isThrottle(err) || ingest.Rejected(err) }

// LookupParticipation finds the request of an (event, user) pair: the
// "lookup participation" row, GetItem PK IDEMP#<eventId>#<userId>, SK LOCK, a
// strongly consistent read; it returns the first requestId with Duplicate set. A pair
// that has not participated (or whose request's enqueue failed, which releases the
// lock) is ErrNotFound.
func (c *Client) LookupParticipation(ctx context.Context, eventID, userID string) (Participation, error) {
	lock, err := NewLockKey(eventID, userID)
	if err != nil {
		return Participation{}, err
	}
	var item lockItem
	key := lock.Key() // its PK is the idempotency key
	if err := c.getFound(ctx, key, true, &item, "lookup participation", key.PK, func() error {
		return fmt.Errorf("%w: no participation %s", ErrNotFound, key.PK)
	}); err != nil {
		return Participation{}, err
	}
	return Participation{RequestID: item.RequestID, Duplicate: true, ParticipatedAt: item.CreatedAt}, nil
}

// shardTurns deals the request IDs a client makes round the index shards of each
// event (ingest.ShardTurns).
type shardTurns = ingest.ShardTurns

// putRequestOf writes the request a first-come message names, RECEIVED, as ingest's
// put would have (queuedAt from the message's requestedAt or now, its index keys from
// it), for a message whose home claim won a seat while the request was never written
// (ingest sent it after a put whose answer was lost, and the put never landed): the
// "create request" row with the "message's request: lock" check (ConditionCheck
// PK IDEMP#<eventId>#<userId>, SK LOCK, condition requestId = the message's), in one
// TransactWriteItems, so that it is written only while the user's lock still names it.
// A request there already (ingest's put landed after all) is no error.
func (c *Client) putRequestOf(ctx context.Context, m Message) error {
	event, err := c.cachedEvent(ctx, m.EventID)
	if err != nil {
		return err
	}
	lock, err := NewLockKey(m.EventID, m.UserID)
	if err != nil {
		return err
	}
	item, err := c.newRequest(event, lock, m.RequestID, m.RequestedAt)
	if err != nil {
		return err
	}
	ws := []write{
		{row: &createRequestRow, item: item},
		{row: &lockOfRequestRow, key: lock.Key(), args: args{pRequestID: m.RequestID}},
	}
	if c.opts.StatusLog {
		entry, err := c.statusLogEntry(m.RequestID, "", StatusReceived, "participated (written from its message)", m.RequestedAt)
		if err != nil {
			return err
		}
		ws = append(ws, entry)
	}
	err = c.do(ctx, txOptions{}, ws)
	var lost *conditionLost
	switch {
	case errors.As(err, &lost) && lost.index == 0:
		return nil // written already
	case errors.As(err, &lost):
		return fmt.Errorf("%w: request %s: its user's lock names another request, or none", ErrNotFound, m.RequestID)
	}
	return err
}

// ingestDeadline is ingest.Deadline for an ingest of event that begins at now: at
// least bookkeepingTimeout, fenced for a LOTTERY event (and a pre-queue's entry) by
// the moment Draw (or the serve) may begin, the cutoff plus Options.DrawSettleWindow,
// less a margin, the smaller of one second and a quarter of the window.
func (c *Client) ingestDeadline(event *eventItem, now, callerDeadline time.Time) time.Time {
	if event.EventType == Lottery && event.LotteryCutoffAt != 0 || event.isPrequeueEntry(MillisOf(now)) {
		return ingest.Deadline(now, callerDeadline, bookkeepingTimeout, c.entryFence(event), true)
	}
	return ingest.Deadline(now, callerDeadline, bookkeepingTimeout, time.Time{}, false)
}

// ingestContext returns the context of an ingest's writes: ctx's values without its
// cancellation, ending at ingestDeadline (measured on the library's clock).
func (c *Client) ingestContext(ctx context.Context, event *eventItem) (context.Context, context.CancelFunc) {
	now := c.opts.Clock()
	return ingest.Context(ctx, now, c.ingestDeadline(event, now, ingest.CallerDeadline(ctx, now)))
}
