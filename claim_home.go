package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/asyncevent/asyncevent/entity"
)

// The home claim: a first-come seat in two writes, without a lease.
//
// A worker with no Handler sends a first-come request's seat claim to the request's
// home shard (shardOf its ID) before it writes anything on the request, then binds
// the request to the seat: SUCCEEDED in one more write. The claim records the
// request's token with the seat, so any later delivery of the request that claims on
// the home shard finds its seat instead of taking another, and every decision that
// ends a request without a seat looks at the home shard first (docs/design.md, "The
// home claim"). Three rules keep a request to one seat:
//
//   - a claim without a lease goes to the home shard only;
//   - a claim without a lease is sent only while the sender's copy of the event's
//     config, read less than homeFreshness before, does not list the home shard as
//     left (EventConfig.LeftShards);
//   - a request's claim leaves its home shard (seatShard ≠ home, under a lease) only
//     once no claim without a lease can take a seat there any more: the shard was
//     seen empty without the request's token (capacity never grows back), or it was
//     listed left at L and a strongly consistent read after L + homeFreshness +
//     claimFence shows no token there.

// homeFreshness is how old the copy of an event's config may be (from the moment its
// read began) when a claim without a lease is sent on its strength.
const homeFreshness = 5 * time.Second

// leftFence is how long after a shard was listed left a claim without a lease may
// still land there: sent by homeFreshness after it, landed by claimFence after that.
const leftFence = homeFreshness + claimFence

// The params of the home claim's rows.
const (
	pLeft      param = "left"      // a one-element string set: "<shard>@<epoch millis>"
	pStartedAt param = "startedAt" // when the delivery that bound a seat began
)

var (
	// homeSeat: a PROCESSING request whose lease ran out and named no shard, or its
	// home: a live lease is its holder's to end, and it finds the seat there.
	homeSeat = func(v values) expression.ConditionBuilder {
		return expression.AttributeNotExists(expression.Name(attrSeatShard)).
			Or(expression.Name(attrSeatShard).Equal(v.value(pSeatShard))).
			And(leaseExpired(v))
	}
	capacityExists = fixed(expression.AttributeExists(expression.Name(attrPK)))
	// notHeldHere: the shard exists and records no seat of the request.
	notHeldHere = all(capacityExists, notHolder)
	// heldAndLeft: the request's token is on the shard, and the shard has a seat
	// left. A seat never goes back to an empty shard: "empty" is for good, and every
	// rule that leaves or rejects on it relies on that.
	heldAndLeft = all(holder, seatLeft)

	bindSeatRow = row{
		name: "first-come seat bound", method: "Processor.ProcessOne", item: entity.Request, op: opUpdate,
		from: []leave{
			{status: StatusQueued}, {status: StatusReceived}, {status: StatusProcessing, when: homeSeat},
		},
		to: StatusSucceeded,
		sets: append(finalSets(UISuccess, ResultSuccess),
			setIfMissing(attrStartedAt, pStartedAt), setIfMissing(attrSeatShard, pSeatShard)),
		removes: []string{attrLeaseOwner, attrLeaseExpiresAt}, // no lease ended it
	}
	giveBackRow = row{
		name: "first-come seat given back", method: "Processor.ProcessOne", item: entity.Capacity, op: opUpdate, cond: heldAndLeft,
		sets: []set{
			setTo(attrCapacityRemaining, expression.Name(attrCapacityRemaining).Plus(expression.Value(1))),
			setTo(attrUpdatedAt, pNow),
		},
		deletes: []set{addTo(attrHolders, pSeatTokens)},
	}
	voidSeatRow = row{
		name: "first-come seat voided", method: "Processor.ProcessOne", item: entity.Capacity, op: opUpdate, cond: notHeldHere,
		adds: []set{addTo(attrVoid, pSeatTokens)},
	}
	shardLeftRow = row{
		name: "capacity shard left", method: "ClaimSeat", item: entity.Config, op: opUpdate, cond: configExists,
		adds: []set{addTo(attrLeftShards, pLeft)},
	}
	shardSoldOutRow = row{
		name: "capacity shard sold out", method: "ClaimSeat", item: entity.Capacity, op: opUpdate, cond: capacityExists,
		sets: []set{setTo(attrSoldOut, true)},
	}
)

// leftAt returns when the shard was first listed left, if it is.
func (e *EventConfig) leftAt(shard int) (EpochMillis, bool) {
	var first EpochMillis
	found := false
	for _, s := range e.LeftShards {
		n, at, ok := parseLeft(s)
		if ok && n == shard && (!found || at < first) {
			first, found = at, true
		}
	}
	return first, found
}

func parseLeft(s string) (shard int, at EpochMillis, ok bool) {
	a, b, found := strings.Cut(s, "@")
	n, err1 := strconv.Atoi(a)
	ms, err2 := strconv.ParseInt(b, 10, 64)
	return n, EpochMillis(ms), found && err1 == nil && err2 == nil
}

// readShard reads one capacity item strongly consistently.
func (c *Client) readShard(ctx context.Context, eventID string, n, shard int) (*EventCapacity, error) {
	keys, err := capacityKeys(eventID, n)
	if err != nil {
		return nil, err
	}
	if shard < 0 || shard >= len(keys) {
		return nil, fmt.Errorf("%w: shard %d of %d", ErrMalformedMessage, shard, n)
	}
	var item capacityItem
	if err := c.getFound(ctx, keys[shard].key(), true, &item, "read capacity", eventID, func() error {
		return fmt.Errorf("%w: %s (%s)", errNoCapacity, eventID, keys[shard].key().PK)
	}); err != nil {
		return nil, err
	}
	return &item.EventCapacity, nil
}

// freshEvent returns the event's config from a read that began less than
// homeFreshness ago (the client's cache, a read under way, or a read of its own), with
// when that read began: the copy and its time come from one read.
func (c *Client) freshEvent(ctx context.Context, eventID string) (*EventConfig, time.Time, error) {
	return c.events.getAged(ctx, eventID, homeFreshness, func(ctx context.Context) (*EventConfig, error) {
		return c.GetEvent(ctx, eventID)
	})
}

// claimHome sends a claim without a lease on the request's home shard, never after
// deadline (errLeaseRanOut: the caller's config copy aged; nothing was sent after
// it).
func (c *Client) claimHome(ctx context.Context, ref RequestRef, n, home int, deadline time.Time) (claimResult, *seatClaim, error) {
	keys, err := capacityKeys(ref.EventID, n)
	if err != nil {
		return 0, nil, err
	}
	sc := &seatClaim{seatStart: seatStart{shard: home}, ref: ref, until: func() time.Time { return deadline }}
	res, err := c.claimOn(ctx, keys[home].key(), sc)
	return res, sc, err
}

// bindSeat writes SUCCEEDED for a request that holds a seat on its home shard,
// without a lease: the "first-come seat bound" row, UpdateItem PK REQ#<requestId>, SK
// META, SET status = SUCCEEDED, uiResult SUCCESS, resultCode SUCCESS, finishedAt,
// startedAt (began, when the delivery began) and seatShard where missing, REMOVE
// leaseOwner and leaseExpiresAt (a lease that ran out did not end it); condition:
// status = QUEUED OR status = RECEIVED OR (status = PROCESSING AND
// (attribute_not_exists(seatShard) OR seatShard = home) AND leaseExpiresAt ≤ now). A
// refusal for throughput is sent again for up to bookkeepingTimeout: the seat is
// spent, and the request must not be left without its result.
//
// For an event with holds (hold > 0 of n capacity shards) it writes the hold's Hold
// item first (the "hold recorded" row), then the "first-come seat held" row: SET
// status = HELD, uiResult HELD, holdExpiresAt = now + hold, under the same condition.
func (c *Client) bindSeat(ctx context.Context, ref RequestRef, home int, began EpochMillis, n int, hold time.Duration) (Transition, error) {
	key, err := newRequestKey(ref.RequestID)
	if err != nil {
		return Transition{}, err
	}
	w := write{row: &bindSeatRow, args: args{pNow: c.now(), pStartedAt: began, pSeatShard: home}, note: "won a seat"}
	if hold > 0 {
		expires := c.holdExpiry(hold)
		if err := c.recordHold(ctx, ref, n, expires); err != nil {
			return Transition{}, fmt.Errorf("bind the seat of %s: %w", ref.RequestID, err)
		}
		w = write{row: &bindHoldRow, args: args{pNow: c.now(), pStartedAt: began, pSeatShard: home, pHoldExpiresAt: expires}, note: "holds a seat"}
	}
	t, err := c.applyWhileThrottled(ctx, key, w)
	if err != nil {
		return t, fmt.Errorf("bind the seat of %s: %w", ref.RequestID, err)
	}
	return t, nil
}

// recordLeft lists a shard as left on the event's config, the "capacity shard left"
// row (UpdateItem PK EVENT#<eventId>, SK CONFIG, ADD leftShards "<shard>@<now>"),
// and returns when it was first listed so: this record's time, or an earlier one's.
func (c *Client) recordLeft(ctx context.Context, eventID string, shard int) (EpochMillis, error) {
	key, err := newEventKey(eventID, eventItemConfig)
	if err != nil {
		return 0, err
	}
	now := c.now()
	entry := strconv.Itoa(shard) + "@" + strconv.FormatInt(int64(now), 10)
	var old map[string]types.AttributeValue
	w := write{row: &shardLeftRow, key: key.key(), args: args{pLeft: setOf[string]{entry}}}
	if err := c.do(ctx, txOptions{old: &old}, []write{w}); err != nil {
		return 0, fmt.Errorf("list shard %d of %s left: %w", shard, eventID, err)
	}
	c.events.forget(eventID)
	var was struct {
		Left []string `dynamodbav:"leftShards,stringset"`
	}
	_ = attributevalue.UnmarshalMap(old, &was) // none: this record is the first
	if earlier, listed := (&EventConfig{LeftShards: was.Left}).leftAt(shard); listed {
		return earlier, nil
	}
	// This listing counts from when its write was answered: a copy read before that
	// may lack it, however long the write took.
	return c.now(), nil
}

// markSoldOut sets soldOut on every capacity shard of an event whose shards are all
// empty, the "capacity shard sold out" row (UpdateItem of each shard, SET soldOut =
// true), so that a worker new to the event that reads a request's home shard learns
// the sell-out from that read alone. A mark that fails is left: such a worker reads
// the event's config instead.
func (c *Client) markSoldOut(ctx context.Context, eventID string, n int) {
	keys, err := capacityKeys(eventID, n)
	if err != nil {
		return
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			w := write{row: &shardSoldOutRow, key: k.key()}
			if err := c.do(ctx, txOptions{once: true}, []write{w}); err != nil {
				c.opts.Logger.WarnContext(ctx, "marking a capacity shard sold out failed", slog.String("eventId", eventID), slog.String("pk", k.key().PK), slog.Any("error", err))
			}
		}()
	}
	wg.Wait()
}

// giveBack returns the seat of a request that ended without it to its home shard:
// the "first-come seat given back" row, UpdateItem of the shard, SET
// capacityRemaining = capacityRemaining + 1, updatedAt, DELETE holders the request's
// token; condition contains(holders, token) AND capacityRemaining > 0. It reports
// whether the seat went back: not when it was given back already, nor when the shard
// has no seat left (an empty shard stays empty, so that seat is lost to the event;
// docs/design.md, "The home claim").
func (c *Client) giveBack(ctx context.Context, ref RequestRef, n, home int) (bool, error) {
	keys, err := capacityKeys(ref.EventID, n)
	if err != nil {
		return false, err
	}
	token := seatToken(ref.RequestID)
	w := write{row: &giveBackRow, key: keys[home].key(), args: args{pNow: c.now(), pSeatToken: token, pSeatTokens: setOf[string]{token}}}
	err = c.do(ctx, txOptions{}, []write{w})
	var lost *conditionLost
	switch {
	case errors.As(err, &lost):
		var item capacityItem
		if lost.old != nil && attributevalue.UnmarshalMap(lost.old, &item) == nil && slices.Contains(item.Holders, token) {
			c.opts.Logger.ErrorContext(ctx, "a seat taken for a request that ended without it cannot go back: its shard is empty; the event sells one seat fewer",
				slog.String("requestId", ref.RequestID), slog.String("pk", keys[home].key().PK))
		}
		return false, nil
	case err != nil:
		return false, fmt.Errorf("give back the seat of %s: %w", ref.RequestID, err)
	}
	return true, nil
}

// holds reports whether a capacity item records the request's seat.
func holds(item *EventCapacity, requestID string) bool {
	return slices.Contains(item.Holders, seatToken(requestID))
}
