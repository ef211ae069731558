package asyncevent

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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

// participateAttempts bounds the retries of Participate when a duplicate's lock
// vanishes between the failed condition and the lookup (its request's enqueue failed
// and released it).
const participateAttempts = 3

// Participate accepts one user into one event: seed 003's "participate" row, the
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
		if !errors.Is(err, errLockVanished) {
			return p, err
		}
	}
	return Participation{}, fmt.Errorf("participate %s/%s: the lock kept changing under the call", eventID, userID)
}

// errLockVanished: a duplicate's lock was released before it could be read.
var errLockVanished = errors.New("lock vanished")

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
	lockPut, err := c.putIfAbsent(lockItem{Key: lock.Key(), IdempotencyLock: IdempotencyLock{
		EntityType: EntityIdempotency, EventID: event.EventID, UserID: lock.UserID(),
		RequestID: requestID, CreatedAt: now, TTL: lockTTL,
	}})
	if err != nil {
		return Participation{}, err
	}
	reqPut, err := c.putIfAbsent(requestItem{Key: reqKey.Key(), Request: req})
	if err != nil {
		return Participation{}, err
	}
	items := []types.TransactWriteItem{{Put: lockPut}, {Put: reqPut}}
	if c.opts.StatusLog {
		logPut, err := c.statusLogPut(requestID, "", StatusReceived, "participated")
		if err != nil {
			return Participation{}, err
		}
		items = append(items, types.TransactWriteItem{Put: logPut})
	}
	_, err = c.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	reasons := cancellationReasons(err)
	switch {
	case err == nil:
		return Participation{RequestID: requestID, ParticipatedAt: now, Request: &req}, nil
	case conditionFailed(reasons, 0):
		if old := reasons[0].Item; old != nil {
			var first lockItem
			if err := attributevalue.UnmarshalMap(old, &first); err != nil {
				return Participation{}, fmt.Errorf("participate %s: %w", lock.IdempotencyKey(), err)
			}
			return Participation{RequestID: first.RequestID, Duplicate: true, ParticipatedAt: first.CreatedAt}, nil
		}
		// Without the old item (a store that does not return it), ask for it.
		p, err := c.LookupParticipation(ctx, event.EventID, lock.UserID())
		if errors.Is(err, ErrNotFound) {
			return Participation{}, errLockVanished
		}
		return p, err
	case conditionFailed(reasons, 1):
		return Participation{}, fmt.Errorf("participate %s: request ID %s is taken: Options.NewRequestID must return unique IDs", lock.IdempotencyKey(), requestID)
	}
	return Participation{}, fmt.Errorf("participate %s: %w", lock.IdempotencyKey(), err)
}

// LookupParticipation finds the request of an (event, user) pair: seed 003's
// "participate (duplicate click)" row, GetItem PK IDEMP#<eventId>#<userId>, SK LOCK, a
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
