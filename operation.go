package asyncevent

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/aws/smithy-go"

	"github.com/asyncevent/asyncevent/entity"
)

// Controls of an event's seats that a retry does not apply twice.
//
// AddCapacity and CancelRequest move seats, and the answer of their transaction can
// be lost after DynamoDB applied it (a connection reset, a timeout after the SDK's
// retries, the caller's deadline): the caller cannot tell, and a retry would add the
// seats again. So each call runs as an operation under an idempotency key, the
// caller's (AddCapacityInput.IdempotencyKey, CancelRequestInput.IdempotencyKey) or,
// without one, a key of the call's own, kept across its own attempts; and its
// transaction puts the operation's marker (PK EVENT#<eventId>, SK
// OP#<action>#<idempotencyKey>) on condition attribute_not_exists(PK). Of the
// attempts under one key, whichever call makes them, at most one applies; a later
// one is refused, on the marker if on nothing else, and its call reads the marker
// and answers applied (EventUpdate.Replayed). The marker records who asked for what
// (actor, target): the key of one operation given to another is an
// ErrInvalidOptions error, never a replay. A marker is kept a day (operationTTL);
// a refused operation writes none, so its key may be given again.

// operationTTL is how long an operation's marker is kept: a retry within it applies
// nothing twice. DynamoDB's TTL deletes the marker some time after, not at once.
const operationTTL = 24 * time.Hour

// operationResends bounds the times a call sends an operation again after an
// attempt whose answer was lost (unanswered); the marker makes that safe.
const operationResends = 2

// operationMarker is the record of an operation applied under its idempotency key
// (PK EVENT#<eventId>, SK OP#<action>#<idempotencyKey>), written in the operation's
// own transaction.
type operationMarker struct {
	EntityType entity.Type `dynamodbav:"entityType"` // OPERATION
	EventID    string      `dynamodbav:"eventId"`
	Action     string      `dynamodbav:"action"` // ADD_CAPACITY, CANCEL
	Actor      string      `dynamodbav:"actor"`
	Target     string      `dynamodbav:"target"` // what the call asked: "5 seats, spread", "request <requestId>"
	At         EpochMillis `dynamodbav:"at"`
	TTL        int64       `dynamodbav:"ttl"`
}

type operationItem struct {
	Key
	operationMarker
}

// operationRow is the marker's put: it fails when an attempt under the same key
// applied before.
var operationRow = row{
	name: "operation marker", method: "AddCapacity, CancelRequest", item: entity.Operation, op: opPut, cond: notExists,
}

// operation is one call of a control of an event's seats: what it asks, by whom,
// under which idempotency key.
type operation struct {
	action, actor, target, key string
}

// newOperation returns the operation of a call; key "" makes a key of its own.
func newOperation(action, actor, target, key string) (operation, error) {
	if key == "" {
		key = rand.Text()
	}
	if err := ValidateID("idempotencyKey", key); err != nil {
		return operation{}, err
	}
	return operation{action: action, actor: actor, target: target, key: key}, nil
}

// marker is the put of the operation's marker on eventID, at now.
func (o operation) marker(eventID string, now EpochMillis) (write, error) {
	k, err := NewOperationKey(eventID, o.action, o.key)
	if err != nil {
		return write{}, err
	}
	return write{row: &operationRow, item: operationItem{Key: k.Key(), operationMarker: operationMarker{
		EntityType: entity.Operation, EventID: eventID, Action: o.action, Actor: o.actor, Target: o.target,
		At: now, TTL: expiry(now, operationTTL),
	}}}, nil
}

// appliedBefore reads the operation's marker on eventID (GetItem, strongly
// consistent): true when an attempt under its key applied. A marker of another
// operation under the key is an ErrInvalidOptions error.
func (c *Client) appliedBefore(ctx context.Context, o operation, eventID string) (bool, error) {
	k, err := NewOperationKey(eventID, o.action, o.key)
	if err != nil {
		return false, err
	}
	var it operationItem
	found, err := c.getItem(ctx, k.Key(), true, &it)
	switch {
	case err != nil:
		return false, fmt.Errorf("%s %s: read the marker of idempotency key %s: %w", o.action, eventID, o.key, err)
	case !found:
		return false, nil
	case it.Actor != o.actor || it.Target != o.target:
		return false, fmt.Errorf("%w: idempotency key %s was given to another %s of %s (%s by %s), not to %s by %s",
			ErrInvalidOptions, o.key, o.action, eventID, it.Target, it.Actor, o.target, o.actor)
	}
	return true, nil
}

// replayed turns up, an attempt of o refused, into the answer of an operation
// applied before under its key, when its marker says so.
func (c *Client) replayed(ctx context.Context, o operation, up EventUpdate) (EventUpdate, error) {
	done, err := c.appliedBefore(ctx, o, up.Event.EventID)
	if err != nil || !done {
		return up, err
	}
	up.Applied, up.Replayed, up.lost = true, true, nil
	up.Reason = "applied before, by an earlier attempt under idempotency key " + o.key + ": nothing was written again"
	return up, nil
}

// unanswered reports a call whose answer never came (the connection failed or was
// reset, a timeout after the SDK's retries, a server error): it may or may not have
// been applied. An answer (a refusal, a condition lost) is not, and neither is a
// call whose ctx ended, which cannot be sent again under it.
func unanswered(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorFault() == smithy.FaultServer
	}
	var netErr net.Error
	var opErr *smithy.OperationError
	return errors.As(err, &netErr) || errors.As(err, &opErr)
}
