package asyncevent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// EventCapacity is the EventCapacity item of a FIRST_COME event (PK EVENT#<eventId>,
// SK CAPACITY). capacityRemaining only goes down, by one per winner, under the
// condition capacityRemaining > 0, so the event has at most capacityTotal winners.
type EventCapacity struct {
	EntityType        EntityType  `dynamodbav:"entityType"` // CAPACITY
	EventID           string      `dynamodbav:"eventId"`
	CapacityTotal     int64       `dynamodbav:"capacityTotal"`
	CapacityRemaining int64       `dynamodbav:"capacityRemaining"`
	UpdatedAt         EpochMillis `dynamodbav:"updatedAt"`
}

// The attribute names of an EventCapacity item that its rows name.
const (
	attrCapacityRemaining = "capacityRemaining"
	attrUpdatedAt         = "updatedAt"
)

type capacityItem struct {
	Key
	EventCapacity
}

// The capacity rows: a seat is spent only together with its winner.
var (
	seatLeft = expression.Name(attrCapacityRemaining).GreaterThan(expression.Value(0))

	claimSeatRow = row{
		name: "first-come capacity", method: "ClaimSeat", item: EntityCapacity, op: opUpdate, cond: &seatLeft,
		sets: []set{
			{attrCapacityRemaining, expression.Name(attrCapacityRemaining).Minus(expression.Value(1))},
			setTo(attrUpdatedAt, pNow),
		},
	}
	takeSeatRow = row{
		name: "first-come success", method: "ClaimSeat", item: EntityRequest, op: opUpdate,
		from: []leave{{status: StatusProcessing}}, guard: &leaseHeld, to: StatusSucceeded,
		sets: finalSets(UISuccess, ResultSuccess),
	}
)

// GetCapacity reads a FIRST_COME event's EventCapacity: GetItem PK EVENT#<eventId>,
// SK CAPACITY, a strongly consistent read. An event without one (unknown, or a
// LOTTERY) is ErrNotFound.
func (c *Client) GetCapacity(ctx context.Context, eventID string) (*EventCapacity, error) {
	key, err := NewEventKey(eventID, EventItemCapacity)
	if err != nil {
		return nil, err
	}
	var item capacityItem
	found, err := c.getItem(ctx, key.Key(), true, &item)
	switch {
	case err != nil:
		return nil, fmt.Errorf("get capacity %s: %w", eventID, err)
	case !found:
		return nil, fmt.Errorf("%w: capacity of %s", ErrNotFound, eventID)
	}
	return &item.EventCapacity, nil
}

// ClaimSeat is the "first-come capacity" and "first-come success" rows in one
// TransactWriteItems: UpdateItem PK EVENT#<eventId>, SK CAPACITY, SET
// capacityRemaining = capacityRemaining - 1, updatedAt, condition capacityRemaining >
// 0; and UpdateItem PK REQ#<requestId>, SK META, SET status = SUCCEEDED, uiResult
// SUCCESS, resultCode SUCCESS, finishedAt, condition status = PROCESSING AND
// leaseOwner = lease.Owner; with the status log entry. A seat is therefore spent only
// together with a SUCCEEDED request.
//
// A lost condition is not an error. When the request is not PROCESSING under this
// lease (another delivery took it over, or it is final) the Transition is not applied
// and holds the request as it is; when no seat is left it is not applied and SoldOut
// is set; in both cases nothing was written. An event without a CAPACITY item is
// ErrNoCapacity.
//
// A transaction cancelled for throughput alone, TransactionConflict on the hot
// CAPACITY item (another claim under way on it) or ThrottlingError (the CAPACITY
// key, or the request's key on an index, over its share), wrote nothing and is sent
// again as it is, after a jittered backoff, at most 8 attempts in all; when they run
// out the error matches ErrThrottled, nothing was written, and the caller may claim
// again later (the Processor leaves the message for redelivery). The
// ClientRequestToken of each attempt is derived from the request, the lease and the
// attempt, so the SDK's retry of a call whose response was lost returns success
// rather than a lost condition (the conditions alone already keep it from being
// applied twice).
func (c *Client) ClaimSeat(ctx context.Context, ref RequestRef, lease Lease) (Transition, error) {
	capKey, err := NewEventKey(ref.EventID, EventItemCapacity)
	if err != nil {
		return Transition{}, err
	}
	reqKey, err := NewRequestKey(ref.RequestID)
	if err != nil {
		return Transition{}, err
	}
	now := c.now()
	seat := write{row: &claimSeatRow, key: capKey.Key(), args: args{pNow: now},
		lost: func(old map[string]types.AttributeValue) (Transition, error) {
			if old == nil {
				return Transition{}, fmt.Errorf("%w: %s", ErrNoCapacity, ref.EventID)
			}
			return Transition{SoldOut: true}, nil
		}}
	t, err := c.apply(ctx, reqKey,
		write{row: &takeSeatRow, args: args{pNow: now, pLeaseOwner: lease.Owner}, note: "won a seat"},
		txOptions{token: func(attempt int) string { return requestToken(ref.RequestID, lease.Owner, attempt) }},
		seat)
	if err != nil {
		return t, fmt.Errorf("claim seat %s: %w", ref.RequestID, err)
	}
	return t, nil
}

// requestToken derives a ClientRequestToken (at most 36 characters) from a request,
// a lease and an attempt.
func requestToken(requestID, owner string, attempt int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%d", requestID, owner, attempt))
	return hex.EncodeToString(sum[:18])
}

// conflictBackoff is the wait before sending again a call refused for throughput
// alone, after attempt (0 first): 5 ms doubled per attempt, at most 320 ms, with
// jitter (half of it at random) so that the claims refused together do not all come
// back together.
func conflictBackoff(attempt int) time.Duration {
	d := 5 * time.Millisecond << min(attempt, 6)
	return d/2 + rand.N(d/2+1)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
