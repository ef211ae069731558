package asyncevent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/internal/control"
)

// Operator controls: close an event now, pause and resume its ingest, move its end or
// its lottery's cutoff later. Each is one TransactWriteItems of a conditional update
// of the event's CONFIG and an AuditEntry saying who did it, so a refused control
// writes nothing and every applied one is on record. The nodes learn of a change
// when their copy of the config expires (Options.EventCacheTTL, 5 s by default).
//
// The library sends each of these once: each attempt is a single send that the SDK
// does not repeat, and the library sends it again only after an answer saying it was
// not written (a transaction conflict). A write that got no answer (a reset
// connection, a timeout) is an error wrapping ErrOutcomeUnknown, never a refusal nor
// a throttle of a resend of it: the write may have applied, or may land later, when
// DynamoDB reads its condition with the values the call bound (its now, and now +
// 10 s) against the CONFIG as it stands then, and applies it, its audit entry with
// it, if the condition holds. So a refusal is always the answer of the call's own
// write: nothing of the call applied, and nothing of it is left to land. A call
// again is a call of its own, answered as the event then stands; the write left on
// its way lands as the row's condition says (see each control).

// AuditEntry records an operator's control of an event (PK EVENT#<eventId>, SK
// AUDIT#<at>#<suffix>), written in the control's own transaction.
type AuditEntry struct {
	EventID string      `dynamodbav:"eventId"`
	At      EpochMillis `dynamodbav:"at"`
	Actor   string      `dynamodbav:"actor"`  // who: an admin's sub
	Action  Action      `dynamodbav:"action"` // what: CLOSE, PAUSE, RESUME, EXTEND_END, EXTEND_CUTOFF, EXTEND_START, ADD_CAPACITY, CANCEL
	Detail  string      `dynamodbav:"detail,omitempty"`
}

// auditItem is an AuditEntry as stored: its key and the item's bookkeeping.
type auditItem struct {
	Key
	EntityType entity.Type `dynamodbav:"entityType"` // AUDIT
	AuditEntry
}

// ControlInput says who applies a control that takes nothing else: CloseEvent,
// PauseEvent, ResumeEvent.
type ControlInput struct {
	// Actor names who applies it, on the event's audit trail: 1 to MaxIDLength bytes.
	// Required.
	Actor string
}

// ExtendEventInput is what ExtendEvent moves later, where to, and who asks for it.
type ExtendEventInput struct {
	// Actor names who moves it, on the event's audit trail: 1 to MaxIDLength bytes.
	// Required.
	Actor string
	// Action is the time moved: ActionExtendEnd (the event's end), ActionExtendCutoff
	// (a LOTTERY's entry cutoff) or ActionExtendStart (a pre-queued FIRST_COME event's
	// start). Any other is an ErrInvalidOptions error. Required.
	Action Action
	// To is the new time, later than the one it moves. Required.
	To EpochMillis
}

// controlLead is how far ahead of now a time must still be for a control to move it:
// every node's copy of the config (Options.EventCacheTTL, 5 s by default) learns of
// the move before the old time comes.
const controlLead = 10 * time.Second

var (
	auditRow = row{
		name: "audit entry", method: "CloseEvent, PauseEvent, ResumeEvent, ExtendEvent, AddCapacity, CancelRequest", item: entity.Audit, op: opPut, cond: notExists,
	}
)

// EventUpdate is the outcome of an operator's control. A refused control is an
// outcome, not an error: Applied is false, Event is the event as the refusal found
// it, and Reason says why in a sentence for the operator (of a replayed control, that
// it was applied before).
type EventUpdate struct {
	Applied bool
	Event   *Event
	Reason  string
	// Request, of CancelRequest, is the request as it stands after the cancel, or as
	// the refusal found it (a strongly consistent read); nil for the other controls.
	Request *Request
	// Replayed, of AddCapacity and CancelRequest, reports a control applied before,
	// by an earlier attempt under the same idempotency key whose answer was lost (the
	// call's own, or the caller's under AddCapacityInput.IdempotencyKey or
	// CancelRequestInput.IdempotencyKey): Applied is true, nothing was written again,
	// Event (and Request) are as they stand now, and Reason says so.
	Replayed bool

	lost    *row // the write whose condition refused the control
	unknown bool // the control's write got no answer: it may have applied, or apply yet
}

// CloseEvent closes an event now: ingest refuses its clicks from then on
// (ErrEventClosed), on every node once its copy of the config has expired. The "event
// closed" row, UpdateItem PK EVENT#<eventId>, SK CONFIG, SET endsAt = now, closedAt =
// now; condition attribute_exists(PK) AND attribute_not_exists(closedAt) AND
// (attribute_not_exists(endsAt) OR endsAt ≥ now) AND
// (attribute_not_exists(lotteryCutoffAt) OR lotteryCutoffAt ≥ now); with an audit
// entry (PK EVENT#<eventId>, SK AUDIT#<now>#<suffix>) naming in.Actor, in one
// TransactWriteItems. The event is open through the millisecond of its end and
// closed from the millisecond of its close. A LOTTERY's cutoff does not move: its
// entries queued by then are drawn. An event already closed is not applied.
//
// A close whose write got no answer is an error that says its outcome is unknown
// (sent once, see above). If the write lands later, it applies unless the event has
// a closedAt by then or its end (a LOTTERY's cutoff) came before the call's time,
// and then closes the event as of the call's time: endsAt and closedAt set to it, a
// time already past. So a close again that finds the event closed ("closed
// already") is a true answer whatever the first write does: that write can only
// record an earlier close of an event that is closed.
func (c *Client) CloseEvent(ctx context.Context, eventID string, in ControlInput) (EventUpdate, error) {
	return sentOnce(c.control(ctx, eventID, in.Actor, ActionClose, "", write{row: &eventClosedRow, args: args{pNow: c.now()}}))
}

// PauseEvent stops an event's ingest until ResumeEvent: a click gets ErrEventPaused and
// writes nothing; the workers go on with what is queued. The "event paused" row,
// UpdateItem PK EVENT#<eventId>, SK CONFIG, SET paused = true; condition
// attribute_exists(PK) AND attribute_not_exists(closedAt) AND
// (attribute_not_exists(endsAt) OR endsAt ≥ now) AND
// (attribute_not_exists(lotteryCutoffAt) OR lotteryCutoffAt ≥ now) AND
// (attribute_not_exists(paused) OR paused = false); with its audit entry. A pause
// whose write got no answer is an error that says its outcome is unknown (sent once,
// see above); if the write lands later, it pauses the event whenever it finds it not
// paused and, as of the call's time, open: after a resume made meanwhile too. Read
// the audit trail before a resume that must stand.
func (c *Client) PauseEvent(ctx context.Context, eventID string, in ControlInput) (EventUpdate, error) {
	return sentOnce(c.control(ctx, eventID, in.Actor, ActionPause, "", write{row: &eventPausedRow, args: args{pNow: c.now()}}))
}

// ResumeEvent takes a paused event's clicks again: the "event resumed" row, UpdateItem
// PK EVENT#<eventId>, SK CONFIG, SET paused = false; condition attribute_exists(PK)
// AND attribute_not_exists(closedAt) AND (attribute_not_exists(endsAt) OR endsAt ≥
// now) AND (attribute_not_exists(lotteryCutoffAt) OR lotteryCutoffAt ≥ now) AND
// paused = true; with its audit entry. A resume whose write got no answer is
// an error that says its outcome is unknown (sent once, see above); if the write
// lands later, it resumes the event whenever it finds it paused and, as of the
// call's time, open: after a pause made meanwhile too.
func (c *Client) ResumeEvent(ctx context.Context, eventID string, in ControlInput) (EventUpdate, error) {
	return sentOnce(c.control(ctx, eventID, in.Actor, ActionResume, "", write{row: &eventResumedRow, args: args{pNow: c.now()}}))
}

// ExtendEvent moves an event's end later (in.Action ActionExtendEnd, the "event end
// extended" row: UpdateItem PK EVENT#<eventId>, SK CONFIG, SET endsAt = in.To;
// condition endsAt > now + 10 s AND endsAt < in.To), or a LOTTERY's entry cutoff later
// (ActionExtendCutoff, the "lottery cutoff extended" row: SET lotteryCutoffAt = in.To;
// condition eventType = LOTTERY AND lotteryCutoffAt > now + 10 s AND lotteryCutoffAt <
// in.To AND (attribute_not_exists(endsAt) OR endsAt ≥ in.To), with a ConditionCheck of
// its Draw record, phase = COLLECTING: a cutoff never moves once the draw began), with
// its audit entry naming in.Actor, in one TransactWriteItems. The 10 s ahead are so
// that every node's copy of the config learns of the move before the old time comes.
// An event with holds has its hold registry entry's end moved in the same transaction
// (the "hold registry: end moved" row), so the sweep goes on to the new end. No time
// moves past the first close plus Options.LockTTL (locksKeptUntil on the EventConfig
// item, fixed at CreateEvent). ActionExtendStart moves a pre-queued FIRST_COME event's
// start later, so that its pre-queue takes clicks longer (the "pre-queue start
// extended" row: SET startsAt = in.To; condition attribute_exists(prequeueOpensAt) AND
// startsAt > now + 10 s AND startsAt < in.To AND (attribute_not_exists(endsAt) OR
// endsAt > in.To), with a ConditionCheck of its Draw record, phase = COLLECTING). The
// requests queued before the new start are the pre-queue's entries; a worker holds
// back the messages of the clicks between the two starts, whatever their message
// says, until the pre-queue is served, which decides them. Another in.Action, or an
// in.To outside 13 digits of milliseconds, is an ErrInvalidOptions error before any
// read or write.
//
// An extend whose write got no answer is an error that says its outcome is unknown
// (sent once, see above). If the write lands later, its condition is read with the
// call's now + 10 s, not with the time it lands: it applies whenever the time it
// moves was more than 10 s after the call's now and is still before in.To (and, for
// a cutoff or a start, the draw has not begun), so a time that has passed meanwhile
// is moved on: an end that passed, and the event takes clicks again; a cutoff that
// passed, while the draw has not begun. An extend again that is refused ("the end
// has passed…") does not stop that write; read the event and its audit trail.
func (c *Client) ExtendEvent(ctx context.Context, eventID string, in ExtendEventInput) (EventUpdate, error) {
	actor, what, at := in.Actor, in.Action, in.To
	if what != ActionExtendEnd && what != ActionExtendCutoff && what != ActionExtendStart {
		return EventUpdate{}, fmt.Errorf("%w: extend %q, want %s, %s or %s", ErrInvalidOptions, what, ActionExtendEnd, ActionExtendCutoff, ActionExtendStart)
	}
	if _, err := formatMillis(at); err != nil {
		return EventUpdate{}, fmt.Errorf("%w: extend %s: %w", ErrInvalidOptions, eventID, err)
	}
	cfg, err := c.getEvent(ctx, eventID)
	if err != nil {
		return EventUpdate{}, err
	}
	if cfg.LocksKeptUntil != 0 && at > cfg.LocksKeptUntil {
		return EventUpdate{Event: &cfg.Event, Reason: "no time moves past " + cfg.LocksKeptUntil.Time().UTC().Format(time.RFC3339) +
			": DynamoDB's TTL would then delete the locks of the event's clicks while it is open (Options.LockTTL after its first end)"}, nil
	}
	lead := MillisOf(c.opts.Clock().Add(controlLead))
	detail := "to " + at.Time().Format(time.RFC3339)
	if what == ActionExtendEnd {
		var extra []write
		if cfg.HoldFor > 0 { // the hold registry keeps the end, for when to stop sweeping
			key, err := NewHoldEventKey(eventID)
			if err != nil {
				return EventUpdate{}, err
			}
			extra = append(extra, write{row: &holdEventEndRow, key: key.Key(), args: args{pEndsAt: at}})
		}
		return sentOnce(c.control(ctx, eventID, actor, what, detail, write{row: &endExtendedRow, args: args{pEndsAt: at, pLead: lead}}, extra...))
	}
	// A cutoff or a start moves only while the draw has not begun: a ConditionCheck of the Draw record.
	draw, err := NewEventKey(eventID, EventItemDraw)
	if err != nil {
		return EventUpdate{}, err
	}
	check := write{row: &drawNotBegunRow, key: draw.Key()}
	w := write{row: &cutoffExtendedRow, args: args{pCutoff: at, pLead: lead}}
	if what == ActionExtendStart {
		w = write{row: &startExtendedRow, args: args{pStart: at, pLead: lead}}
	}
	return sentOnce(c.control(ctx, eventID, actor, what, detail, w, check))
}

// sentOnce is the answer of a control the library sends once (close, pause, resume,
// extend): the error of a write that got no answer says that its outcome is unknown.
func sentOnce(up EventUpdate, err error) (EventUpdate, error) {
	if up.unknown {
		err = fmt.Errorf("%w: %w (the write may have applied, or may apply when it lands, its condition read with this call's time; "+
			"the event's audit trail shows it once it has; a call again is answered as the event then stands)", ErrOutcomeUnknown, err)
	}
	return up, err
}

// control applies a control of the event's CONFIG with its audit entry. The error
// of a write that got no answer (or whose ctx ended) comes with up.unknown.
func (c *Client) control(ctx context.Context, eventID, actor string, action Action, detail string, w write, extra ...write) (EventUpdate, error) {
	key, err := NewEventKey(eventID, EventItemConfig)
	if err != nil {
		return EventUpdate{}, err
	}
	if actor == "" || len(actor) > MaxIDLength {
		return EventUpdate{}, fmt.Errorf("%w: a control needs its actor (1 to %d bytes)", ErrInvalidOptions, MaxIDLength)
	}
	now := c.now()
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	ak, err := NewAuditKey(eventID, now, hex.EncodeToString(suffix[:]))
	if err != nil {
		return EventUpdate{}, err
	}
	entry := write{row: &auditRow, key: ak.Key(), item: auditItem{Key: ak.Key(), EntityType: entity.Audit, AuditEntry: AuditEntry{
		EventID: eventID, At: now, Actor: actor, Action: action, Detail: detail,
	}}}
	w.key = key.Key()
	if w.args == nil {
		w.args = args{}
	}
	if _, ok := w.args[pNow]; !ok {
		w.args[pNow] = now
	}
	err = c.do(ctx, txOptions{answered: true}, append([]write{w, entry}, extra...))
	c.events.Forget(eventID)
	var lost *conditionLost
	switch {
	case errors.As(err, &lost) && lost.index != 1:
		cur, rerr := c.getEvent(ctx, eventID)
		if rerr != nil {
			return EventUpdate{}, rerr
		}
		return EventUpdate{Event: &cur.Event, Reason: refusal(action, cur, c.now()), lost: lost.row}, nil
	case err != nil:
		return EventUpdate{unknown: unanswered(ctx, err) || ctx.Err() != nil}, fmt.Errorf("%s %s: %w", action, eventID, err)
	}
	cur, err := c.getEvent(ctx, eventID)
	if err != nil {
		return EventUpdate{Applied: true}, err
	}
	return EventUpdate{Applied: true, Event: &cur.Event}, nil
}

// refusal says why a control found the event in no state to take it.
func refusal(action Action, e *eventItem, now EpochMillis) string {
	return control.Refusal(string(action), control.Event{
		Ended:  e.ClosedAt != 0 || e.closesAt() != 0 && e.closesAt() < now,
		HasEnd: e.EndsAt != 0, Lottery: e.EventType == Lottery, Prequeue: e.prequeueUntil() != 0,
	})
}

// ListAudit returns an event's audit trail, oldest first: the "audit trail" row,
// Query PK EVENT#<eventId>, begins_with(SK, "AUDIT#"), all pages. It returns the whole
// trail, not a page (it takes no PageOptions): the trail holds one entry per control
// an operator applied to the event.
func (c *Client) ListAudit(ctx context.Context, eventID string) ([]AuditEntry, error) {
	if err := ValidateID("eventId", eventID); err != nil {
		return nil, err
	}
	expr, err := expression.NewBuilder().WithKeyCondition(
		expression.Key(attrPK).Equal(expression.Value(eventPK(eventID))).
			And(expression.Key(attrSK).BeginsWith(prefixAudit + sep))).Build()
	if err != nil {
		return nil, err
	}
	in := c.query("", expr)
	var out []AuditEntry
	for {
		page, err := c.db.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("audit trail of %s: %w", eventID, err)
		}
		var items []auditItem
		if err := attributevalue.UnmarshalListOfMaps(page.Items, &items); err != nil {
			return nil, err
		}
		for _, it := range items {
			out = append(out, it.AuditEntry)
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}
