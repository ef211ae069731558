package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/internal/ctxsleep"
)

// Holds and the waitlist (EventSettings.HoldFor): a seat held until it is paid for.
//
// A seat claim of an event with holds makes its request HELD until holdExpiresAt
// instead of SUCCEEDED, and records the hold's expiry in a Hold item beforehand, so
// that the hold sweep finds every hold that ran out with a Query, never a Scan.
// Confirm makes a HELD request SUCCEEDED; Release, or the sweep once the hold ran
// out, ends it REJECTED and gives its seat back, in one transaction, onto the event's
// Returns item, never onto a capacity shard (an empty shard stays empty: the seat
// claim's rules rely on it). Once the event is sold out its losers are WAITLISTED, in
// the one write that would have rejected them; the sweep hands each seat on the
// Returns item to the earliest WAITLISTED request in queue order, in one transaction
// that takes the seat and makes the request HELD. At every moment the seats left on
// the shards and on the Returns item, the seats claimed but not yet bound, and the
// HELD and SUCCEEDED requests add up to the event's capacity (docs/design.md, "Holds
// and the waitlist").
//
// The hold sweep, SweepHolds, is in sweep.go, its algorithm in internal/holdsweep.

// holdRecord is a Hold item: the expiry of a HELD request's hold, for the hold sweep (PK
// EVENT#<eventId>#HOLDS#<shard>, SK EXP#<expiresAt>#REQ#<requestId>). It is written
// before the request is HELD, and deleted by the write that ends the hold (a confirm,
// a release, an expiry), or by the sweep once the request shows it is no longer the
// request's hold.
type holdRecord struct {
	EntityType entity.Type `dynamodbav:"entityType"` // HOLD
	EventID    string      `dynamodbav:"eventId"`
	RequestID  string      `dynamodbav:"requestId"`
	ExpiresAt  EpochMillis `dynamodbav:"expiresAt"`
	TTL        int64       `dynamodbav:"ttl,omitempty"`
}

type holdItem struct {
	Key
	holdRecord
}

// The rows of the Hold item.
var (
	holdRecordRow = row{
		name: "hold recorded", method: "Processor.ProcessOne, SweepHolds", item: entity.Hold, op: opPut, cond: notExists,
	}
	holdClearedRow = row{
		name: "hold cleared", method: "SweepHolds, Confirm, Release", item: entity.Hold, op: opDelete,
	}
	holdEventEndRow = row{
		name: "hold registry: end moved", method: "ExtendEvent", item: entity.HoldEvent, op: opUpdate, cond: configExists,
		sets: []set{setTo(attrEndsAt, pEndsAt)},
	}
)

// HoldEvent is an event's entry in the hold registry (PK HOLD_EVENTS, SK
// EVENT#<eventId>), written by CreateEvent with an event with holds, so that the hold
// sweep finds every such event without a Scan: a Worker sweeps the events listed
// here as well as those it meets, and a scheduled sweep can take them all.
type HoldEvent struct {
	EventID   string        `dynamodbav:"eventId"`
	HoldFor   time.Duration `dynamodbav:"holdFor"`
	EndsAt    EpochMillis   `dynamodbav:"endsAt,omitempty"`
	CreatedAt EpochMillis   `dynamodbav:"createdAt"`
}

// holdEventItem is a HoldEvent as stored: its key and the item's bookkeeping.
type holdEventItem struct {
	Key
	EntityType entity.Type `dynamodbav:"entityType"` // HOLD_EVENT
	HoldEvent
}

func newHoldEventItem(cfg *eventItem) (holdEventItem, error) {
	key, err := NewHoldEventKey(cfg.EventID)
	if err != nil {
		return holdEventItem{}, err
	}
	return holdEventItem{Key: key.Key(), EntityType: entity.HoldEvent, HoldEvent: HoldEvent{
		EventID: cfg.EventID, HoldFor: cfg.HoldFor, EndsAt: cfg.EndsAt, CreatedAt: cfg.CreatedAt,
	}}, nil
}

// holdSweepAfterEnd is how long after an event's end the hold registry still offers
// it to the sweep: its last holds run out by the end plus HoldFor (a claim of the
// backlog after the end, plus its hold), and the sweep ends its waitlist.
const holdSweepAfterEnd = time.Hour

// HoldEvents lists the events with holds that may still need the hold sweep: the
// "hold registry" row, Query PK HOLD_EVENTS (all pages), keeping those without an
// end or whose end, plus their HoldFor and an hour, has not passed. It returns the
// whole list, not a page (it takes no PageOptions): the registry holds one entry per
// event created with holds.
func (c *Client) HoldEvents(ctx context.Context) ([]HoldEvent, error) {
	expr, err := expression.NewBuilder().WithKeyCondition(expression.Key(attrPK).Equal(expression.Value(pkHoldEvents))).Build()
	if err != nil {
		return nil, err
	}
	now := c.opts.Clock()
	var out []HoldEvent
	for pages := dynamodb.NewQueryPaginator(c.db, c.query("", expr)); pages.HasMorePages(); {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("read the hold registry: %w", err)
		}
		var items []holdEventItem
		if err := attributevalue.UnmarshalListOfMaps(page.Items, &items); err != nil {
			return nil, fmt.Errorf("read the hold registry: %w", err)
		}
		for _, it := range items {
			if it.EndsAt == 0 || now.Before(it.EndsAt.Time().Add(it.HoldFor+holdSweepAfterEnd)) {
				out = append(out, it.HoldEvent)
			}
		}
	}
	return out, nil
}

// holdTTL is how long a Hold item is kept after its hold ran out, should no sweep
// delete it: DynamoDB's TTL then does, within days.
const holdTTL = 7 * 24 * time.Hour

// holdWrite returns the put of a Hold item for a request of an event of n capacity
// shards whose hold runs out at expiresAt. Its partition is the request's home shard's.
func (c *Client) holdWrite(ref RequestRef, n int, expiresAt EpochMillis) (write, error) {
	key, err := NewHoldKey(ref.EventID, shardOf(ref.RequestID, max(n, 1)), expiresAt, ref.RequestID)
	if err != nil {
		return write{}, err
	}
	item := holdItem{Key: key.Key(), holdRecord: holdRecord{
		EntityType: entity.Hold, EventID: ref.EventID, RequestID: ref.RequestID, ExpiresAt: expiresAt,
		TTL: expiry(expiresAt, holdTTL),
	}}
	return write{row: &holdRecordRow, key: item.Key, item: item}, nil
}

// holdClear returns the delete of the Hold item of a hold.
func holdClear(ref RequestRef, n int, expiresAt EpochMillis) (write, error) {
	key, err := NewHoldKey(ref.EventID, shardOf(ref.RequestID, max(n, 1)), expiresAt, ref.RequestID)
	if err != nil {
		return write{}, err
	}
	return write{row: &holdClearedRow, key: key.Key()}, nil
}

// recordHold writes the Hold item of a hold about to be taken, the "hold recorded"
// row (PutItem PK EVENT#<eventId>#HOLDS#<home shard>, SK
// EXP#<expiresAt>#REQ#<requestId>, condition attribute_not_exists(PK)), sending it
// again while DynamoDB refuses it for throughput, for up to bookkeepingTimeout: the
// seat is spent, and the hold must be findable before it is taken. A Hold item
// already there (the same millisecond) is the same record.
func (c *Client) recordHold(ctx context.Context, ref RequestRef, n int, expiresAt EpochMillis) error {
	w, err := c.holdWrite(ref, n, expiresAt)
	if err != nil {
		return err
	}
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		err := c.do(bctx, txOptions{}, []write{w})
		var lost *conditionLost
		switch {
		case err == nil, errors.As(err, &lost):
			return nil
		case !errors.Is(throttled(err), ErrThrottled) || ctxsleep.Sleep(bctx, finalWriteBackoff(attempt)) != nil:
			return fmt.Errorf("record the hold of %s: %w", ref.RequestID, err)
		}
	}
}

// holdFor returns an event's EventSettings.HoldFor, from the client's cache; 0 for an
// event without a config.
func (c *Client) holdFor(ctx context.Context, eventID string) (time.Duration, error) {
	cfg, err := c.cachedEvent(ctx, eventID)
	switch {
	case errors.Is(err, ErrEventNotFound):
		return 0, nil
	case err != nil:
		return 0, err
	}
	return cfg.HoldFor, nil
}

// waitlists reports whether a sold-out loser of the event is WAITLISTED: the event
// has holds and has not closed, as the client's copy of its config shows.
func (c *Client) waitlists(ctx context.Context, eventID string) (bool, error) {
	cfg, err := c.cachedEvent(ctx, eventID)
	switch {
	case errors.Is(err, ErrEventNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return cfg.HoldFor > 0 && (cfg.EndsAt == 0 || c.now() <= cfg.EndsAt), nil
}

// holdExpiry is when a hold of d taken now runs out.
func (c *Client) holdExpiry(d time.Duration) EpochMillis {
	return MillisOf(c.opts.Clock().Add(d))
}

// Confirm makes a HELD request SUCCEEDED, when the service has its payment: after a
// strongly consistent read of the request, one TransactWriteItems of the "hold
// confirmed" row (UpdateItem PK REQ#<requestId>, SK META, SET status = SUCCEEDED,
// uiResult SUCCESS, resultCode SUCCESS, finishedAt; condition status = HELD AND
// holdExpiresAt > now) and the "hold cleared" row (DeleteItem of
// its Hold item), so the sweep never meets a confirmed hold.
//
// A confirm and the hold's expiry race on the request's own condition, so exactly
// one of them applies: a confirm before holdExpiresAt (by the confirming client's
// clock) wins over any sweep, which expires only holds whose holdExpiresAt has passed
// by its own. A lost condition is not an error: the Transition is not applied and
// holds the request as it is: REJECTED with REJECTED_HOLD_EXPIRED or
// REJECTED_RELEASED when the hold ended first (the payment must then be refunded),
// SUCCEEDED when it was confirmed already, HELD when its hold ran out and the sweep
// has not come yet (too late all the same), or any other status, with nothing
// written. An unknown request is ErrNotFound. Applied, the Transition carries the
// request as the confirm left it, read after the transaction (one more strongly
// consistent GetItem: a transaction returns nothing).
func (c *Client) Confirm(ctx context.Context, requestID string) (Transition, error) {
	req, err := c.getRequest(ctx, requestID, true)
	if err != nil {
		return Transition{}, fmt.Errorf("confirm %s: %w", requestID, err)
	}
	if req.Status != StatusHeld {
		return found(req), nil
	}
	n, err := c.capacityShards(ctx, req.EventID)
	if err != nil {
		return Transition{}, fmt.Errorf("confirm %s: %w", requestID, err)
	}
	clear, err := holdClear(req.Ref(), n, req.HoldExpiresAt)
	if err != nil {
		return Transition{}, fmt.Errorf("confirm %s: %w", requestID, err)
	}
	t, err := c.applyTo(ctx, "confirm", requestID, write{row: &confirmRow, args: args{pNow: c.now()}, note: "confirmed"}, txOptions{token: c.callToken(requestID, "confirm")}, clear)
	return c.written(ctx, requestID, t, err)
}

// callToken returns the ClientRequestToken of each attempt of one call of a request's
// transaction, so that the SDK's retry of an attempt whose answer was lost finds it
// applied; a later call, whose params differ, has tokens of its own.
func (c *Client) callToken(requestID, what string) func(int) string {
	call := fmt.Sprintf("%s@%d@%s", what, c.now(), randomHex(4))
	return func(attempt int) string { return requestToken(requestID, call, attempt) }
}

// Release gives up a HELD request's seat, or a WAITLISTED request's place: the user
// gave up, or an admin decided. For a HELD request it is one TransactWriteItems of
// the "hold released" row (UpdateItem PK REQ#<requestId>, SK META, SET status =
// REJECTED, uiResult REJECTED, resultCode REJECTED_RELEASED, finishedAt; condition
// status = HELD AND holdExpiresAt = the hold's), the "seat given to the waitlist" row
// (UpdateItem PK EVENT#<eventId>#RETURNS, SK RETURNS, ADD capacityRemaining 1,
// returned 1) and the "hold cleared" row (DeleteItem of its Hold item), after a
// strongly consistent read of the request; the seat then goes to the earliest
// WAITLISTED request at the sweep's next pass. For a WAITLISTED request it is the
// "waitlist left" row (UpdateItem PK REQ#<requestId>, SK META, SET status =
// REJECTED, uiResult REJECTED, resultCode REJECTED_RELEASED, finishedAt, leftBy, the
// call's token; condition status = WAITLISTED); a resend of it after a lost answer
// that finds the call's token answers applied. A lost condition is not an
// error: the Transition is not applied and holds the request as it is (a confirm or
// the expiry came first; a request in any other status is returned as it is, with
// nothing written). An unknown request is ErrNotFound. Applied, the Transition
// carries the request as the release left it: a hold's read after its transaction
// (one more strongly consistent GetItem), a waitlisted request's from its UpdateItem.
func (c *Client) Release(ctx context.Context, requestID string) (Transition, error) {
	req, err := c.getRequest(ctx, requestID, true)
	if err != nil {
		return Transition{}, fmt.Errorf("release %s: %w", requestID, err)
	}
	key, _ := NewRequestKey(requestID) // checked by the read
	var t Transition
	switch req.Status {
	case StatusHeld:
		t, err = c.endHold(ctx, key, &req.Request, &releaseRow, "released")
	case StatusWaitlisted:
		t, err = c.leaveWaitlist(ctx, key, &req.Request)
	default:
		return found(req), nil
	}
	if err != nil {
		return t, fmt.Errorf("release %s: %w", requestID, err)
	}
	return c.written(ctx, requestID, t, nil)
}

// endHold ends a HELD request's hold with row (released or expired) and gives its
// seat to the waitlist, in one transaction that also deletes its Hold item.
func (c *Client) endHold(ctx context.Context, key RequestKey, req *Request, r *row, note string) (Transition, error) {
	n, err := c.capacityShards(ctx, req.EventID)
	if err != nil {
		return Transition{}, err
	}
	clear, err := holdClear(req.Ref(), n, req.HoldExpiresAt)
	if err != nil {
		return Transition{}, err
	}
	back, err := c.returnSeat(req.EventID)
	if err != nil {
		return Transition{}, err
	}
	w := write{row: r, args: args{pNow: c.now(), pHoldExpiresAt: req.HoldExpiresAt}, note: note}
	return c.apply(ctx, key, w, txOptions{token: c.callToken(req.RequestID, note)}, back, clear)
}
