package asyncevent

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/internal/idempotent"
	"github.com/asyncevent/asyncevent/internal/seatclaim"
)

// Controls of an event's seats that a retry does not apply twice, and whose "not
// applied" stays true.
//
// AddCapacity and CancelRequest move seats, and the answer of their transaction can
// be lost after DynamoDB applied it (a connection reset, a timeout after the SDK's
// retries, the caller's deadline): the caller cannot tell, and a retry would add the
// seats again. So each call runs as an operation under an idempotency key, the
// caller's (AddCapacityInput.IdempotencyKey, CancelRequestInput.IdempotencyKey) or,
// without one, a key of the call's own, kept across its own attempts; and its
// transaction puts the operation's marker (PK EVENT#<eventId>, SK
// OP#<action>#<idempotencyKey>, outcome APPLIED) on condition
// attribute_not_exists(PK). Of the attempts under one key, whichever call makes
// them, at most one applies; a later one is refused, on the marker if on nothing
// else, and its call reads the marker and answers applied (EventUpdate.Replayed).
// The marker records who asked for what (actor, target): the key of one operation
// given to another is an ErrInvalidOptions error, never a replay. A marker is kept a
// day (operationTTL).
//
// An attempt that got no answer may also land later and apply: DynamoDB reads its
// condition when it lands, with the values its sender bound (an add sent in the
// event's last millisecond, landing after the end, still finds the event open as of
// its own :now). So a refusal is answered "not applied" only once no attempt under
// the key can apply any more. A call refused after one of its own writes got no
// answer, or refused under a key of the caller's (it may be a call again after one
// that never learned its outcome), first puts the operation's marker itself, with
// outcome REFUSED and the reason (the same "operation marker" row, PutItem on
// condition attribute_not_exists(PK)): every attempt under the key puts the marker
// in its own transaction, so none applies after it. A marker there already answers
// as it records: applied (Replayed), or refused, with its reason. A key so refused
// stays refused while its marker is kept: a call again under it answers not applied
// with the recorded reason and applies nothing, whatever the event's state then (a
// new add or cancel takes a new key). A refusal under a key of the call's own, whose
// writes were all answered, writes no marker: no attempt of it is left to land.

// operationTTL is how long an operation's marker is kept: a retry within it applies
// nothing twice. DynamoDB's TTL deletes the marker some time after, not at once.
const operationTTL = 24 * time.Hour

// operationResends bounds the times a call sends an operation again after an
// attempt whose answer was lost (unanswered); the marker makes that safe.
const operationResends = 2

// The outcomes an operation's marker records.
const (
	outcomeApplied = "APPLIED" // written in the operation's own transaction
	outcomeRefused = "REFUSED" // put alone, after a refusal, so that no attempt applies later
)

// operationMarker is the record of an operation under its idempotency key (PK
// EVENT#<eventId>, SK OP#<action>#<idempotencyKey>): applied, written in the
// operation's own transaction, or refused, put after its refusal (fence).
type operationMarker struct {
	EntityType entity.Type `dynamodbav:"entityType"` // OPERATION
	EventID    string      `dynamodbav:"eventId"`
	Action     Action      `dynamodbav:"action"` // ADD_CAPACITY, CANCEL
	Actor      string      `dynamodbav:"actor"`
	Target     string      `dynamodbav:"target"` // what the call asked: "5 seats, spread", "request <requestId>"
	// Outcome is APPLIED or REFUSED; a marker without one (written before outcomes
	// were recorded) is APPLIED.
	Outcome string      `dynamodbav:"outcome,omitempty"`
	Reason  string      `dynamodbav:"reason,omitempty"` // of a REFUSED operation: why, as its call answered
	At      EpochMillis `dynamodbav:"at"`
	TTL     int64       `dynamodbav:"ttl"`
}

type operationItem struct {
	Key
	operationMarker
}

// operationRow is the marker's put, in the operation's transaction (APPLIED) or
// alone (REFUSED): it fails when a marker under the key is there, whatever its
// outcome.
var operationRow = row{
	name: "operation marker", method: "AddCapacity, CancelRequest", item: entity.Operation, op: opPut, cond: notExists,
}

// operation is one call of a control of an event's seats: what it asks, by whom,
// under which idempotency key.
type operation struct {
	action             Action
	actor, target, key string
	// callers: the key is the caller's, so a call under it may follow one whose
	// attempt got no answer and may land yet.
	callers bool
}

// newOperation returns the operation of a call; key "" makes a key of its own.
func newOperation(action Action, actor, target, key string) (operation, error) {
	callers := key != ""
	if !callers {
		key = rand.Text()
	}
	if err := ValidateID("idempotencyKey", key); err != nil {
		return operation{}, err
	}
	return operation{action: action, actor: actor, target: target, key: key, callers: callers}, nil
}

// marker is the put of the operation's marker on eventID, at now, in the
// operation's transaction: outcome APPLIED.
func (o operation) marker(eventID string, now EpochMillis) (write, error) {
	return o.markerOf(eventID, now, outcomeApplied, "")
}

// refusal is the put of the operation's marker on eventID, at now, alone: outcome
// REFUSED, for reason.
func (o operation) refusal(eventID string, now EpochMillis, reason string) (write, error) {
	return o.markerOf(eventID, now, outcomeRefused, reason)
}

func (o operation) markerOf(eventID string, now EpochMillis, outcome, reason string) (write, error) {
	k, err := NewOperationKey(eventID, o.action, o.key)
	if err != nil {
		return write{}, err
	}
	return write{row: &operationRow, item: operationItem{Key: k.Key(), operationMarker: operationMarker{
		EntityType: entity.Operation, EventID: eventID, Action: o.action, Actor: o.actor, Target: o.target,
		Outcome: outcome, Reason: reason, At: now, TTL: expiry(now, operationTTL),
	}}}, nil
}

// readMarker reads the operation's marker on eventID (GetItem, strongly
// consistent): nil when there is none. A marker of another operation under the key
// is an ErrInvalidOptions error.
func (c *Client) readMarker(ctx context.Context, o operation, eventID string) (*operationMarker, error) {
	k, err := NewOperationKey(eventID, o.action, o.key)
	if err != nil {
		return nil, err
	}
	var it operationItem
	found, err := c.getItem(ctx, k.Key(), true, &it)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s %s: read the marker of idempotency key %s: %w", o.action, eventID, o.key, err)
	case !found:
		return nil, nil
	case it.Actor != o.actor || it.Target != o.target:
		return nil, fmt.Errorf("%w: idempotency key %s was given to another %s of %s (%s by %s), not to %s by %s",
			ErrInvalidOptions, o.key, o.action, eventID, it.Target, it.Actor, o.target, o.actor)
	}
	return &it.operationMarker, nil
}

// recorded turns up, an attempt of o refused, into the answer the operation's
// marker records, when there is one (settled): applied before (Replayed), or
// refused before, with the reason recorded.
func (c *Client) recorded(ctx context.Context, o operation, up EventUpdate) (EventUpdate, bool, error) {
	m, err := c.readMarker(ctx, o, up.Event.EventID)
	if err != nil || m == nil {
		return up, false, err
	}
	up.lost = nil
	if m.Outcome == outcomeRefused {
		up.Reason = m.Reason + " (refused before under idempotency key " + o.key + ", " + refusedKey
		return up, true, nil
	}
	up.Applied, up.Replayed = true, true
	up.Reason = "applied before, by an earlier attempt under idempotency key " + o.key + ": nothing was written again"
	return up, true, nil
}

// refusedKey ends the reason of a refusal recorded under its key.
const refusedKey = "recorded so that no attempt under it still on its way applies: the key stays refused for a day at least; another call takes another key)"

// fence answers up, a refusal of o, once no attempt under o's key can apply: it
// puts the marker alone (the "operation marker" row: PutItem PK EVENT#<eventId>, SK
// OP#<action>#<idempotencyKey>, outcome REFUSED and up.Reason; condition
// attribute_not_exists(PK)) and answers not applied. A marker there already (an
// attempt applied meanwhile, another call's refusal) answers as it records; the
// loop is idempotent.Fence.
func (s *seatsOperation) Fence(ctx context.Context, up EventUpdate) (EventUpdate, error) {
	c, o := s.c, s.op
	w, err := o.refusal(up.Event.EventID, c.now(), up.Reason)
	if err != nil {
		return EventUpdate{}, err
	}
	put := func(ctx context.Context) (bool, error) {
		err := c.do(ctx, txOptions{answered: true}, []write{w})
		if err == nil {
			return false, nil
		}
		var lost *conditionLost
		return errors.As(err, &lost), fmt.Errorf("%s %s: record its refusal (%s): %w", o.action, up.Event.EventID, up.Reason, err)
	}
	return idempotent.Fence(ctx, s, s.policy(), up, put, func(up EventUpdate) EventUpdate {
		up.Reason += " (under idempotency key " + o.key + ", " + refusedKey
		return up
	})
}

// seatsOperation is a call of a control of an event's seats under its operation, as
// package internal/idempotent runs it: once makes one attempt.
type seatsOperation struct {
	c    *Client
	op   operation
	once func() (EventUpdate, bool, error)
}

func (s *seatsOperation) Once(context.Context) (EventUpdate, bool, error) { return s.once() }

func (s *seatsOperation) Answer(up EventUpdate) idempotent.Answer {
	return idempotent.Answer{Applied: up.Applied, Refused: !up.Applied && up.Event != nil, Unknown: up.unknown}
}

func (s *seatsOperation) Recorded(ctx context.Context, up EventUpdate) (EventUpdate, bool, error) {
	return s.c.recorded(ctx, s.op, up)
}

func (s *seatsOperation) policy() idempotent.Policy {
	return idempotent.Policy{
		Callers: s.op.callers, Attempts: seatsControlAttempts, Resends: operationResends, Backoff: seatclaim.Backoff,
		Unanswered: unanswered, Invalid: func(err error) bool { return errors.Is(err, ErrInvalidOptions) }, Unknown: s.op.unknown,
	}
}

// unknown is err of a call of o that never learned its outcome.
func (o operation) unknown(err error) error {
	return fmt.Errorf("%w: %w (a call again under idempotency key %s applies it once at most, and its answer stands)", ErrOutcomeUnknown, err, o.key)
}

// seatsControlAttempts bounds the tries of a control of an event's seats that lost to
// another change of them (an add, a cancel) made at the same moment.
const seatsControlAttempts = 6
