package asyncevent

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/smithy-go"
)

// IdempotencyLock is the IdempotencyLock item (PK IDEMP#<eventId>#<userId>, SK LOCK):
// the guard that gives one (event, user) exactly one request. It is written only
// when absent, in the same transaction as the request it names.
type IdempotencyLock struct {
	EntityType EntityType  `dynamodbav:"entityType"` // IDEMPOTENCY
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
	participateRow = row{name: "participate", method: "Participate", item: EntityIdempotency, op: opPut, cond: &notExists}

	lockNamesRequest = expression.Name(attrRequestID).Equal(expression.Value(pRequestID))
	releaseLockRow   = row{
		name: "release lock", method: "MarkEnqueueFailed", item: EntityIdempotency, op: opDelete, cond: &lockNamesRequest,
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

// participateAttempts bounds the attempts of Participate whose writes did not land:
// a duplicate's lock that vanished before it could be read (its request's enqueue
// failed and released it), a conflict with a concurrent click, a lost call.
const participateAttempts = 3

// Participate accepts one user into one event: the "participate" row, the
// conditional PutItem of the IdempotencyLock (PK IDEMP#<eventId>#<userId>, SK LOCK,
// condition attribute_not_exists(PK) AND attribute_not_exists(SK)), together with the
// "create request" row, the PutItem of the Request (PK REQ#<requestId>, SK META,
// status RECEIVED, requestedAt = now; condition attribute_not_exists), in one
// TransactWriteItems, so no request is ever written without its lock and no lock
// without its request.
//
// When the lock exists the pair has participated already: the result names the first
// requestId with Duplicate set, read from the failed condition's old item (ALL_OLD),
// without a second round trip, and nothing is written. An unknown event is
// ErrEventNotFound, one outside its window ErrEventNotOpen or ErrEventClosed, a bad
// ID ErrInvalidID; in each case nothing is written.
//
// A call whose answer is lost is settled within the call: the transaction carries a
// ClientRequestToken (the SDK's retry of it returns success), and a lock found holding
// the requestId this call tried to write is recognised as its own, not a duplicate.
//
// Participate does not send the request's message; Submit does the whole ingest.
func (c *Client) Participate(ctx context.Context, eventID, userID string) (Participation, error) {
	lock, err := NewLockKey(eventID, userID)
	if err != nil {
		return Participation{}, err
	}
	event, err := c.openEvent(ctx, eventID)
	if err != nil {
		return Participation{}, err
	}
	for range participateAttempts {
		p, err := c.participate(ctx, event, lock)
		if !errors.Is(err, errRetryParticipate) {
			return p, err
		}
	}
	return Participation{}, fmt.Errorf("participate %s/%s: the lock kept changing under the call", eventID, userID)
}

// errRetryParticipate: the attempt wrote nothing and may be tried again (a duplicate's
// lock released before it could be read, a conflict with a concurrent click, a write
// that did not land).
var errRetryParticipate = errors.New("retry participate")

func (c *Client) participate(ctx context.Context, event *EventConfig, lock LockKey) (Participation, error) {
	requestID := c.opts.NewRequestID()
	reqKey, err := NewRequestKey(requestID)
	if err != nil {
		return Participation{}, fmt.Errorf("Options.NewRequestID: %w", err)
	}
	now := c.now()
	req := Request{
		EntityType: EntityRequest, RequestID: requestID, EventID: event.EventID, UserID: lock.UserID(),
		EventType: event.EventType, Status: StatusReceived, UIResult: UIPending,
		RequestedAt: now, IdempotencyKey: lock.IdempotencyKey(), TTL: expiry(now, c.opts.RequestTTL),
	}
	if event.EventType == Lottery {
		req.UIPhase, req.LotteryCutoffAt = PhaseCollecting, event.LotteryCutoffAt
	}
	var lockTTL int64
	if end := event.closesAt(); end != 0 {
		lockTTL = expiry(end, c.opts.LockTTL)
	}
	lockWrite := write{row: &participateRow, item: lockItem{Key: lock.Key(), IdempotencyLock: IdempotencyLock{
		EntityType: EntityIdempotency, EventID: event.EventID, UserID: lock.UserID(),
		RequestID: requestID, CreatedAt: now, TTL: lockTTL,
	}}}
	ws := []write{lockWrite, {row: &createRequestRow, item: requestItem{Key: reqKey.Key(), Request: req}}}
	if c.opts.StatusLog {
		entry, err := c.statusLogEntry(requestID, "", StatusReceived, "participated", now)
		if err != nil {
			return Participation{}, err
		}
		ws = append(ws, entry)
	}
	// The token makes the SDK's retry of a call whose response was lost return
	// success instead of failing on the lock it wrote itself.
	err = c.do(ctx, txOptions{token: func(attempt int) string { return requestToken(requestID, "participate", attempt) }}, ws)
	mine := Participation{RequestID: requestID, ParticipatedAt: now, Request: &req}
	var lost *conditionLost
	isLost := errors.As(err, &lost)
	switch {
	case err == nil:
		return mine, nil
	case isLost && lost.index == 0:
		var first Participation
		if lost.old != nil {
			var item lockItem
			if err := attributevalue.UnmarshalMap(lost.old, &item); err != nil {
				return Participation{}, fmt.Errorf("participate %s: %w", lock.IdempotencyKey(), err)
			}
			first = Participation{RequestID: item.RequestID, Duplicate: true, ParticipatedAt: item.CreatedAt}
		} else {
			// Without the old item (a store that does not return it), ask for it.
			p, err := c.LookupParticipation(ctx, event.EventID, lock.UserID())
			if errors.Is(err, ErrNotFound) {
				return Participation{}, errRetryParticipate
			}
			if err != nil {
				return Participation{}, err
			}
			first = p
		}
		if first.RequestID == requestID {
			return mine, nil // our own write, met again by a retried call
		}
		return first, nil
	case isLost && lost.index == 1:
		return Participation{}, fmt.Errorf("participate %s: request ID %s is taken: Options.NewRequestID must return unique IDs", lock.IdempotencyKey(), requestID)
	case cancellationReasons(err) == nil && !isInvalid(err):
		// No answer: the write may or may not have landed. The lock tells.
		p, lerr := c.LookupParticipation(ctx, event.EventID, lock.UserID())
		switch {
		case lerr == nil && p.RequestID == requestID:
			return mine, nil
		case lerr == nil:
			return p, nil
		case errors.Is(lerr, ErrNotFound):
			return Participation{}, errRetryParticipate
		}
		return Participation{}, &uncertainError{request: &req, err: fmt.Errorf("participate %s: %w", lock.IdempotencyKey(), err)}
	}
	return Participation{}, fmt.Errorf("participate %s: %w", lock.IdempotencyKey(), err)
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

// isInvalid reports an error that says the call itself was wrong (it was refused
// before anything was written), as opposed to one that leaves its effect unknown.
func isInvalid(err error) bool {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode() {
		case "ValidationException", "SerializationException", "ResourceNotFoundException", "AccessDeniedException":
			return true
		}
	}
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// LookupParticipation finds the request of an (event, user) pair: the
// "participate (duplicate)" row, GetItem PK IDEMP#<eventId>#<userId>, SK LOCK, a
// strongly consistent read; it returns the first requestId with Duplicate set. A pair
// that has not participated (or whose request's enqueue failed, which releases the
// lock) is ErrNotFound.
func (c *Client) LookupParticipation(ctx context.Context, eventID, userID string) (Participation, error) {
	lock, err := NewLockKey(eventID, userID)
	if err != nil {
		return Participation{}, err
	}
	var item lockItem
	found, err := c.getItem(ctx, lock.Key(), true, &item)
	switch {
	case err != nil:
		return Participation{}, fmt.Errorf("lookup participation %s: %w", lock.IdempotencyKey(), err)
	case !found:
		return Participation{}, fmt.Errorf("%w: no participation %s", ErrNotFound, lock.IdempotencyKey())
	}
	return Participation{RequestID: item.RequestID, Duplicate: true, ParticipatedAt: item.CreatedAt}, nil
}
