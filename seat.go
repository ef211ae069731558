package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/asyncevent/asyncevent/internal/ctxsleep"
	"github.com/asyncevent/asyncevent/internal/seatcache"
)

// The seat rules, in one place (docs/design.md, "The seat claim").
//
// A first-come seat is taken from a seat place: one of the event's C capacity shards
// (places 0 … C−1) or its seat pool (the Returns item, place C: seats an operator
// added once every shard was empty, and seats of cancelled winners). A claim is one
// conditional write of the place that takes the seat and records the request's seat
// token there (holders), so a seat is never spent without a record of whose it is,
// and a later claim of the request there finds its seat instead of taking another.
//
// Every claim is sent at an epoch of its request: 0 for a claim without a lease (on
// the home shard) and the first leased one, then raised by one each time the request's
// claim moves. Its condition: capacityRemaining > 0 AND NOT contains(holders,
// seatToken) AND NOT contains(void, fenceToken), the fence token being the seat token
// at that epoch.
//
// The one fence is closeTo: the "seat closed" write of a place, ADD void fenceToken,
// condition NOT contains(holders, seatToken). It either finds the request's seat
// there (the request then takes that seat and goes no further) or makes every claim
// of the request at that epoch fail there from then on, however late it lands. Two
// places may hold a claim of a request on its way: its home shard at epoch 0 (any
// delivery may send a claim without a lease there, at any time), and the place and
// epoch its seatShard and seatEpoch name (written under a lease before any claim
// there). A request's claim leaves a place only once no claim of it can land there
// any more (closed, or a shard found empty without its token: a shard never gets a
// seat back once empty), and a request ends without a seat (REJECTED, WAITLISTED,
// FAILED_FINAL) only once its home shard and its seatShard are closed to it or empty.
// No rule reads a clock: a lease decides which delivery goes on (liveness), never
// whether a seat may be spent.

// The params of the seat rows.
const (
	pSeatToken           param = "seatToken"   // a request's seat token, as a string
	pSeatTokens          param = "seatTokens"  // the same, as a one-element string set
	pFenceToken          param = "fenceToken"  // the seat token at a claim's epoch
	pFenceTokens         param = "fenceTokens" // the same, as a one-element string set
	pSeatShard           param = "seatShard"   // a seat place: a capacity shard, or C for the pool
	pSeatEpoch           param = "seatEpoch"   // the epoch of a request's claim
	pSeatEpochLeft       param = "epochLeft"   // the epoch a move leaves
	pShards              param = "shards"      // capacity shards, as a number set
	seatEpochNone              = 0             // the epoch of the claims without a lease
	maxSeatEpoch               = 1 << 20       // a bound on an epoch read back from an item
	fenceEpochSeparator        = "@"           // seat token @ epoch, for epochs above 0
	closeBackoffCap            = 4             // doublings of closeTo's wait
	closeBackoffFirst          = 20 * time.Millisecond
	claimAttempts              = 3 // sends of a claim refused for throughput before it moves on
	claimBackoffFirst          = 20 * time.Millisecond
	claimBackoffDoubling       = 4
)

var (
	seatLeft = fixed(expression.Name(attrCapacityRemaining).GreaterThan(expression.Value(0)))
	// holder: the request's token is on the place.
	holder = func(v values) expression.ConditionBuilder {
		return expression.Contains(expression.Name(attrHolders), v.Arg(pSeatToken))
	}
	notHolder = not(holder)
	// notClosed: the place is not closed to the claims of the request at this epoch.
	notClosed = not(func(v values) expression.ConditionBuilder {
		return expression.Contains(expression.Name(attrVoid), v.Arg(pFenceToken))
	})
	seatFree    = all(seatLeft, notHolder, notClosed)
	placeExists = fixed(expression.AttributeExists(expression.Name(attrPK)))
	// notHeldHere: the place exists and records no seat of the request.
	notHeldHere = all(placeExists, notHolder)

	// A claim takes a seat and records whose it is; a close records a fence token.
	claimSets = []set{setTo(attrCapacityRemaining, expression.Name(attrCapacityRemaining).Minus(expression.Value(1))), setTo(attrUpdatedAt, pNow)}
	claimAdds = []set{addTo(attrHolders, pSeatTokens)}
	fenceAdds = []set{addTo(attrVoid, pFenceTokens)}
	closedBy  = "ClaimSeat, MarkEnqueueFailed"
)

// atEpoch: the request's claim is at the epoch a move leaves. A move is a
// compare-and-set on the epoch, so that a copy of it landing late (an attempt the
// SDK gave up on, then retried) cannot set back a claim its own delivery moved on
// since: the epoch only grows.
var atEpoch = compare(expression.Name(attrSeatEpoch).Equal, pSeatEpochLeft)

// fenceToken is the token that closes a place to the claims of a request at epoch:
// its seat token, with "@epoch" above epoch 0 (so that a void written before epochs
// existed closes epoch 0).
func fenceToken(requestID string, epoch int) string {
	if epoch == seatEpochNone {
		return seatToken(requestID)
	}
	return seatToken(requestID) + fenceEpochSeparator + strconv.Itoa(epoch)
}

// seatPlace is one place a seat can be claimed on: capacity shard index (0 … n−1),
// or the event's pool (index n).
type seatPlace struct {
	index int
	key   Key
	pool  bool
}

// seatPlaceOf returns place index of an event of n capacity shards.
func seatPlaceOf(eventID string, n, index int) (seatPlace, error) {
	if index == n {
		key, err := NewReturnsKey(eventID)
		return seatPlace{index: index, key: key.Key(), pool: true}, err
	}
	keys, err := CapacityKeys(eventID, n)
	if err != nil {
		return seatPlace{}, err
	}
	if index < 0 || index >= len(keys) {
		return seatPlace{}, fmt.Errorf("%w: seat place %d of an event of %d shards", ErrMalformedMessage, index, n)
	}
	return seatPlace{index: index, key: keys[index].Key()}, nil
}

// The answers of a seat place to a claim.
type claimResult int

const (
	claimWon     claimResult = iota // the claim took a seat
	claimHeld                       // the request holds a seat on the place already
	claimEmpty                      // no seat is left on the place, none of them the request's
	claimRefused                    // DynamoDB refused every send for throughput: nothing written
	claimClosed                     // the place is closed to the request's claims at this epoch
)

// seatStart is what a delivery's start tells its seat claim: where the request's
// claims go, and whether one may be there already.
type seatStart struct {
	place int // the request's seatShard: a capacity shard, or n for the pool
	epoch int // its seatEpoch
	// inherited: a claim of the request may be on place at epoch already, sent by an
	// earlier delivery (a takeover, or our own start whose answer was lost) or, on
	// the home shard at epoch 0, by any delivery without a lease. The walk then
	// claims there first whatever it knows of the place, and closes it before it
	// leaves it.
	inherited bool
	// homeClear: no claim of the request can take a seat on its home shard at epoch
	// 0 any more (closed, or found empty without its token).
	homeClear bool
}

// settle completes what a start knows from its request's home shard: a request on
// its home shard at epoch 0 may have claims without a lease there, unless the home
// is clear; one whose claim left the home shard (another place, a later epoch)
// closed it first.
func (st *seatStart) settle(home int, homeClear bool) {
	st.homeClear = homeClear || st.place != home || st.epoch != seatEpochNone
	if !st.homeClear {
		st.inherited = true
	}
}

// seatClaim is one delivery's claim of a seat for its request, under its lease.
type seatClaim struct {
	seatStart
	ref   RequestRef
	owner string // the delivery's lease
	// end runs the write that ends the lease (the request's SUCCEEDED), so that no
	// heartbeat rewrites it afterwards; nil runs it as it is.
	end func(write func())
	// hold is the event's EventSettings.HoldFor: the seat makes the request HELD for
	// it, not SUCCEEDED; 0 for an event without holds.
	hold time.Duration

	poolVersion int64 // the highest PoolVersion of a capacity item this claim met
	seatsMet    int64 // the seats left on the last place that refused the claim
	sent        bool  // this delivery sent a claim at its place and epoch
	emptied     bool  // this delivery's claim took the shard's last seat
	soldOut     bool  // the last item that refused the claim empty carries the sold-out mark
}

// claimOn sends the claim of a seat on one place, at the claim's epoch, again while
// DynamoDB refuses it for throughput, at most claimAttempts times. An answer that
// leaves unknown whether it was applied is an error: the claim stays on the place
// (the next delivery claims there again and finds its token), or its request's end
// closes the place first.
func (c *Client) claimOn(ctx context.Context, at seatPlace, sc *seatClaim) (claimResult, error) {
	token := seatToken(sc.ref.RequestID)
	claim := &claimSeatRow
	if at.pool {
		claim = &poolClaimRow
	}
	w := write{row: claim, key: at.key, args: args{
		pNow: c.now(), pSeatToken: token, pSeatTokens: setOf[string]{token}, pFenceToken: fenceToken(sc.ref.RequestID, sc.epoch),
	}}
	var conflict error
	refused := false
	for attempt := range claimAttempts {
		if attempt > 0 {
			if err := ctxsleep.Sleep(ctx, claimBackoff(attempt-1)); err != nil {
				return 0, err
			}
		}
		sc.sent = true
		var before map[string]types.AttributeValue
		err := c.do(ctx, txOptions{once: true, old: &before}, []write{w})
		var lost *conditionLost
		switch {
		case err == nil:
			var was struct {
				Remaining *int64 `dynamodbav:"capacityRemaining"`
			}
			if !at.pool && attributevalue.UnmarshalMap(before, &was) == nil && was.Remaining != nil && *was.Remaining == 1 {
				sc.emptied = true
			}
			return claimWon, nil
		case errors.As(err, &lost):
			return c.claimLost(lost, at, sc)
		case isTransactionConflict(err):
			// The item is in an operator's transaction (an add, a cancel): it ends
			// in tens of milliseconds. Not a refusal for throughput.
			conflict = err
		case isThrottle(err):
			refused = true
		case ctx.Err() != nil:
			return 0, ctx.Err()
		default:
			return 0, err // unanswered: the claim may still land
		}
	}
	if !refused {
		return 0, fmt.Errorf("claim seat %s on %s: the item stayed in other transactions: %w", sc.ref.RequestID, at.key.PK, conflict)
	}
	return claimRefused, nil
}

// claimLost reads what a claim whose condition failed met on its place.
func (c *Client) claimLost(lost *conditionLost, at seatPlace, sc *seatClaim) (claimResult, error) {
	if lost.old == nil {
		if at.pool {
			return claimEmpty, nil // no seat was ever added to the pool
		}
		return 0, fmt.Errorf("%w: %s (%s)", errNoCapacity, sc.ref.EventID, at.key.PK)
	}
	var item capacityItem
	if err := attributevalue.UnmarshalMap(lost.old, &item); err != nil {
		return 0, err
	}
	if slices.Contains(item.Holders, seatToken(sc.ref.RequestID)) {
		// The shard's last seat may be this claim's, its answer lost.
		sc.emptied = sc.emptied || (!at.pool && item.CapacityRemaining == 0)
		return claimHeld, nil
	}
	sc.soldOut = item.SoldOut
	sc.poolVersion = max(sc.poolVersion, item.PoolVersion)
	sc.seatsMet = item.CapacityRemaining
	if slices.Contains(item.Void, fenceToken(sc.ref.RequestID, sc.epoch)) {
		return claimClosed, nil
	}
	return claimEmpty, nil
}

// closeTo is the fence: it closes a place to the claims of a request at epoch (the
// "first-come seat closed" row, or "pool seat closed": UpdateItem of the place, ADD
// void the fence token; condition attribute_exists(PK) AND NOT contains(holders,
// seatToken)), and reports whether the request holds a seat there after all (the
// condition failed on its token). A closed place takes no claim of the request at
// that epoch, however late the claim lands. The write is idempotent: it is sent
// again while refused for throughput or left unanswered, until ctx ends or, with
// tries > 0, tries sends were refused for throughput (then the error matches
// ErrThrottled: the place stays open, and the request's claim stays on it).
func (c *Client) closeTo(ctx context.Context, at seatPlace, requestID string, epoch, tries int) (held bool, err error) {
	token := seatToken(requestID)
	r := &seatClosedRow
	if at.pool {
		r = &poolSeatClosedRow
	}
	w := write{row: r, key: at.key, args: args{pSeatToken: token, pFenceTokens: setOf[string]{fenceToken(requestID, epoch)}}}
	for attempt := 0; ; attempt++ {
		err := c.do(ctx, txOptions{}, []write{w})
		var lost *conditionLost
		switch {
		case err == nil:
			return false, nil
		case errors.As(err, &lost):
			if lost.old == nil {
				if at.pool {
					return false, nil // no pool yet: it can hold no seat of the request
				}
				return false, fmt.Errorf("%w: %s", errNoCapacity, at.key.PK)
			}
			var item capacityItem
			if err := attributevalue.UnmarshalMap(lost.old, &item); err != nil {
				return false, err
			}
			return slices.Contains(item.Holders, token), nil
		case ctx.Err() != nil:
			return false, fmt.Errorf("close %s to %s: %w", at.key.PK, requestID, ctx.Err())
		case errors.Is(throttled(err), ErrThrottled):
			if tries > 0 && attempt+1 >= tries {
				return false, fmt.Errorf("close %s to %s: refused %d times: %w", at.key.PK, requestID, tries, throttled(err))
			}
		case !isUnanswered(err):
			return false, fmt.Errorf("close %s to %s: %w", at.key.PK, requestID, err)
		}
		if err := ctxsleep.Sleep(ctx, closeBackoff(attempt)); err != nil {
			return false, fmt.Errorf("close %s to %s: %w", at.key.PK, requestID, err)
		}
	}
}

// isUnanswered reports whether err leaves unknown whether a call was applied (a
// timeout, a reset, a server error): an idempotent write may be sent again.
func isUnanswered(err error) bool {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorFault() != smithy.FaultClient
	}
	return !errors.Is(err, ErrInvalidID)
}

// closeBackoff is closeTo's wait before sending again, after attempt (0 first): 20
// ms doubled per attempt, at most 320 ms, with jitter.
func closeBackoff(attempt int) time.Duration {
	d := closeBackoffFirst << min(attempt, closeBackoffCap)
	return d/2 + rand.N(d/2+1)
}

// claimBackoff is the wait before sending a claim on the same place again, after
// attempt (0 first): 20 ms doubled per attempt, with jitter. Short: a shard that
// keeps refusing is left for another.
func claimBackoff(attempt int) time.Duration {
	d := claimBackoffFirst << min(attempt, claimBackoffDoubling)
	return d/2 + rand.N(d/2+1)
}

// ClaimSeat is a row method of the worker's layer, the worker's seat claim under a
// lease: a service leaves it to the Worker (see "Two layers" in the package doc).
//
// ClaimSeat is the "first-come capacity" and "first-come success" rows, two single
// writes and no transaction. First UpdateItem of the request's seat place (PK
// EVENT#<eventId>, SK CAPACITY; with capacity shards the shard its seatShard names,
// PK EVENT#<eventId>#CAPACITY#<seatShard>; the pool, PK EVENT#<eventId>#RETURNS, once
// every shard is empty): SET capacityRemaining = capacityRemaining - 1, updatedAt,
// ADD holders the request's seat token, condition capacityRemaining > 0 AND NOT
// contains(holders, seatToken) AND NOT contains(void, fenceToken) (the seat token at
// the request's seatEpoch); on the pool it is the "pool seat claimed" row, the same
// update of PK EVENT#<eventId>#RETURNS, SK RETURNS. Then UpdateItem PK REQ#<requestId>,
// SK META, SET status = SUCCEEDED, uiResult SUCCESS, resultCode SUCCESS, finishedAt,
// condition status = PROCESSING AND leaseOwner = lease.Owner; on an event with holds
// the "first-come held" row instead, SET status = HELD, uiResult HELD, holdExpiresAt,
// the same condition (and the hold's items: EventSettings.HoldFor); with the status
// log entry. A claim that
// finds the request's token there (its own send applied but unanswered, or an
// earlier delivery's claim before it died) has its seat already and goes on to
// SUCCEEDED: a request never takes two.
//
// A place that is empty, closed to the request, or that refuses the claim for
// throughput three times is left for the next shard of the request's order that is
// not known empty, then the pool: a place a claim of the request may still land on is
// closed to it first (the "first-come seat closed" row, or "pool seat closed" on the
// pool: UpdateItem of the place, ADD void fenceToken, condition attribute_exists(PK)
// AND NOT contains(holders, seatToken); when that finds the request's seat, the
// request takes it), then the
// "first-come seat moved" row, UpdateItem PK REQ#<requestId>, SK META, SET seatShard,
// seatEpoch (the claim's epoch + 1: one delivery holds the lease, so one writes it),
// condition status = PROCESSING AND leaseOwner = lease.Owner. With capacity shards, the claim that takes a shard's last seat
// (capacityRemaining was 1, ReturnValues UPDATED_OLD) adds it to the event's
// emptyShards (the "capacity shard empty" row, UpdateItem PK EVENT#<eventId>, SK
// CONFIG, ADD emptyShards), and once every shard is empty the claim that finds so
// sets soldOut on each (the "capacity shard sold out" row: UpdateItem of the shard,
// SET soldOut = true, condition attribute_exists(PK)). The request is refused
// (SoldOut) only when every shard is empty and the pool is empty and closed to it; the
// error matches ErrThrottled when a shard that holds seats refused it and no other
// has any.
//
// Call it after StartProcessing, under the lease it took. A lost condition is not an
// error: when the request is not PROCESSING under this lease the Transition is not
// applied and holds the request as it is; when no seat is left SoldOut is set. An
// event without a CAPACITY item is an error that names the event and the key it
// looked for.
func (c *Client) ClaimSeat(ctx context.Context, ref RequestRef, lease Lease) (Transition, error) {
	if _, err := NewRequestKey(ref.RequestID); err != nil {
		return Transition{}, err
	}
	if err := ValidateID("eventId", ref.EventID); err != nil {
		return Transition{}, err
	}
	req, err := c.getRequest(ctx, ref.RequestID, true)
	if err != nil {
		return Transition{}, fmt.Errorf("claim seat %s: %w", ref.RequestID, err)
	}
	if req.Status != StatusProcessing || req.LeaseOwner != lease.Owner {
		return found(req), nil // not held under the caller's lease
	}
	n, err := c.capacityShards(ctx, ref.EventID)
	if err != nil {
		return Transition{}, err
	}
	home := shardOf(ref.RequestID, n)
	st := seatStart{place: home, epoch: req.SeatEpoch, inherited: true}
	if req.SeatShard != nil {
		st.place = *req.SeatShard
	}
	st.settle(home, false)
	hold, err := c.holdFor(ctx, ref.EventID)
	if err != nil {
		return Transition{}, err
	}
	return c.claimSeat(ctx, &seatClaim{seatStart: st, ref: ref, owner: lease.Owner, hold: hold}, seatcache.New())
}

// seatWalk is one claim's walk over its event's seat places.
type seatWalk struct {
	sc      *seatClaim
	seats   *seatcache.Shards
	reqKey  RequestKey
	n       int          // the event's capacity shards; place n is the pool
	order   []int        // the shards in the order this request tries them
	home    int          // the request's home shard
	passed  map[int]bool // the shards this walk tried
	refused bool         // a shard with seats refused the claim for throughput
	// reopen are shards closed to the request at the epoch it met them with, seats
	// left on them: the claim comes back to one at a later epoch, which no claim sent
	// before can use, rather than refuse the request while they hold seats.
	reopen []int
}

func (c *Client) newSeatWalk(ctx context.Context, sc *seatClaim, seats *seatcache.Shards) (*seatWalk, error) {
	reqKey, err := NewRequestKey(sc.ref.RequestID)
	if err != nil {
		return nil, err
	}
	n, err := c.capacityShards(ctx, sc.ref.EventID)
	if err != nil {
		return nil, err
	}
	return &seatWalk{
		sc: sc, seats: seats, reqKey: reqKey, n: n,
		order: claimOrder(sc.ref.RequestID, n), home: shardOf(sc.ref.RequestID, n), passed: map[int]bool{},
	}, nil
}

// claimSeat claims a seat for sc's request, with what seats knows of the event's
// shards, and tells seats what it finds: it claims on sc's place and, while a place
// is empty, closed to the request, or refuses it for throughput, moves the claim
// (under the lease) to the next shard with seats, then to the event's pool.
func (c *Client) claimSeat(ctx context.Context, sc *seatClaim, seats *seatcache.Shards) (Transition, error) {
	w, err := c.newSeatWalk(ctx, sc, seats)
	if err != nil {
		return Transition{}, err
	}
	if sc.place < 0 || sc.place > w.n {
		return Transition{}, Permanent(fmt.Errorf("claim seat %s: %w: seatShard %d of an event of %d shards", sc.ref.RequestID, ErrMalformedMessage, sc.place, w.n))
	}
	if err := c.closeHomeOfAnOlderVersion(ctx, w); err != nil {
		return Transition{}, fmt.Errorf("claim seat %s: %w", sc.ref.RequestID, err)
	}
	for {
		if sc.place == w.n {
			return c.claimPool(ctx, w)
		}
		res, err := c.tryShard(ctx, w)
		if err != nil {
			return Transition{}, fmt.Errorf("claim seat %s: %w", sc.ref.RequestID, err)
		}
		if res == claimWon || res == claimHeld {
			return c.takeWalkSeat(ctx, w)
		}
		c.noteShard(ctx, w, res)
		next, end, t, err := c.nextPlace(w)
		if end {
			return t, err
		}
		held, err := c.leave(ctx, w, res)
		switch {
		case err != nil:
			return Transition{}, fmt.Errorf("claim seat %s: %w", sc.ref.RequestID, err)
		case held:
			return c.takeWalkSeat(ctx, w)
		}
		if t, err := c.moveSeat(ctx, sc, next); err != nil || !t.Applied {
			return t, err
		}
	}
}

// closeHomeOfAnOlderVersion closes the home shard at epoch 0 to a request taken over
// off its home shard at epoch 0: a worker of a version before epochs moved such a
// request off its home shard without closing it (it fenced with time), so a claim
// without a lease may still take a seat there. When the close finds the request's
// seat there, the claim moves back to the home shard (at the next epoch) and takes
// it. (A request of this version started off its home shard only once the home shard
// was clear: the close is then one more write on a takeover, and finds nothing.)
func (c *Client) closeHomeOfAnOlderVersion(ctx context.Context, w *seatWalk) error {
	sc := w.sc
	if !sc.inherited || sc.place == w.home || sc.epoch != seatEpochNone {
		return nil
	}
	at, err := seatPlaceOf(sc.ref.EventID, w.n, w.home)
	if err != nil {
		return err
	}
	held, err := c.closeTo(ctx, at, sc.ref.RequestID, seatEpochNone, leaveCloseTries)
	if err != nil || !held {
		return err
	}
	// Leaving its place for the home shard: that place is closed to the request first.
	there, err := seatPlaceOf(sc.ref.EventID, w.n, sc.place)
	if err != nil {
		return err
	}
	if heldThere, err := c.closeTo(ctx, there, sc.ref.RequestID, sc.epoch, leaveCloseTries); err != nil || heldThere {
		if heldThere {
			c.opts.Logger.ErrorContext(ctx, "a request taken over holds a seat on its place and one on its home shard (an older version's claims): the home one stays unused",
				slog.String("requestId", sc.ref.RequestID), slog.Int("home", w.home), slog.Int("seatShard", sc.place))
		}
		return err
	}
	c.opts.Logger.WarnContext(ctx, "a request taken over off its home shard holds a seat there (an older version's claim): the claim moves back to it",
		slog.String("requestId", sc.ref.RequestID), slog.Int("home", w.home), slog.Int("seatShard", sc.place))
	t, err := c.moveSeat(ctx, sc, w.home)
	if err == nil && !t.Applied {
		err = fmt.Errorf("the lease of %s was taken over", sc.ref.RequestID)
	}
	return err
}

// tryShard claims on the walk's current shard, unless the shard is known empty and
// no claim of the request may be on it already.
func (c *Client) tryShard(ctx context.Context, w *seatWalk) (claimResult, error) {
	sc := w.sc
	w.passed[sc.place] = true
	if !sc.inherited && w.seats.IsEmpty(sc.ref.EventID, sc.place) {
		return claimEmpty, nil
	}
	at, err := seatPlaceOf(sc.ref.EventID, w.n, sc.place)
	if err != nil {
		return 0, err
	}
	return c.claimOn(ctx, at, sc)
}

// takeWalkSeat ends the walk with the seat it won.
func (c *Client) takeWalkSeat(ctx context.Context, w *seatWalk) (Transition, error) {
	t, err := c.takeSeat(ctx, w.reqKey, w.sc)
	if w.sc.emptied && w.n > 1 {
		// The last seat of a shard: the workers that have not met it learn from the
		// event that it is empty, so a sell-out costs a worker new to the event one
		// read rather than a failed write per shard. (With one shard that failed write
		// is a single one per worker: no record.)
		c.shardEmpty(ctx, w.sc.ref.EventID, w.sc.place, w.n, w.seats, recordAlways)
	}
	return t, err
}

// noteShard records what the claim met on its shard, other than a seat.
func (c *Client) noteShard(ctx context.Context, w *seatWalk, res claimResult) {
	sc := w.sc
	switch res {
	case claimEmpty:
		// With capacity shards the claim that took the shard's last seat records it:
		// the workers that meet it empty after that record it only when the CONFIG,
		// read at most once a second, still lacks it (that record lost), or the CONFIG
		// item would take a write per shard and worker at the sell-out, all at once.
		record := recordIfUnlisted
		if w.n == 1 {
			record = recordIfNew
		}
		c.shardEmpty(ctx, sc.ref.EventID, sc.place, w.n, w.seats, record)
		w.seats.LearnPool(sc.ref.EventID, sc.poolVersion)
		if sc.soldOut {
			w.seats.Know(sc.ref.EventID, w.n, allShards(w.n))
		}
	case claimRefused:
		w.refused = true
	case claimClosed:
		if sc.seatsMet > 0 {
			w.reopen = append(w.reopen, sc.place)
		}
	}
}

// nextPlace picks the place the claim moves to: the next shard of its order not known
// empty and not tried, else one it found closed to it with seats left (at the next
// epoch). When there is none it ends the walk (end, with its outcome): refused for
// throughput while a shard holds seats, or sold out (the place the claim stands on
// is empty or closed to it, as is its home).
func (c *Client) nextPlace(w *seatWalk) (next int, end bool, t Transition, err error) {
	sc := w.sc
	next = w.seats.Next(sc.ref.EventID, w.order, w.n, w.passed)
	switch {
	case next >= 0:
		return next, false, Transition{}, nil
	case len(w.reopen) > 0:
		next, w.reopen = w.reopen[0], w.reopen[1:]
		return next, false, Transition{}, nil
	case w.refused:
		return -1, true, Transition{}, fmt.Errorf("claim seat %s: every shard with seats refused it for throughput: %w", sc.ref.RequestID, ErrThrottled)
	case w.seats.PoolOpen(sc.ref.EventID, sc.poolVersion) && sc.hold == 0:
		// Every shard is empty; the event's pool may hold seats an operator added or
		// a cancel gave back: the claim moves there, under the lease.
		return w.n, false, Transition{}, nil
	}
	return -1, true, Transition{SoldOut: true}, nil
}

// leave makes sure that no claim of the request lands on the place the walk leaves:
// a shard found empty takes none, nor does a place closed to the request already; a
// shard that refused this delivery's claims for throughput, each a definite answer,
// holds none of them, unless an earlier delivery's (or one without a lease on the
// home shard) may be there (inherited): then the place is closed to the request. held
// reports that its seat is there after all.
func (c *Client) leave(ctx context.Context, w *seatWalk, res claimResult) (held bool, err error) {
	sc := w.sc
	if res != claimRefused || !sc.inherited {
		return false, nil
	}
	at, err := seatPlaceOf(sc.ref.EventID, w.n, sc.place)
	if err != nil {
		return false, err
	}
	return c.closeTo(ctx, at, sc.ref.RequestID, sc.epoch, leaveCloseTries)
}

// leaveCloseTries bounds the sends of the close that lets a claim leave a shard that
// refuses it for throughput (about 3 s of backoff): a shard refusing every write
// keeps the request, whose message comes back later, rather than a worker.
const leaveCloseTries = 12

// moveSeat moves the request's claim to another place at the next epoch, under the
// lease, before it claims there: every later delivery claims where this one does,
// and no claim of the place left can land any more.
func (c *Client) moveSeat(ctx context.Context, sc *seatClaim, place int) (Transition, error) {
	epoch := sc.epoch + 1
	t, err := c.applyTo(ctx, "move the seat claim of", sc.ref.RequestID, write{row: &moveSeatRow,
		args: args{pLeaseOwner: sc.owner, pSeatShard: place, pSeatEpoch: epoch, pSeatEpochLeft: sc.epoch}}, txOptions{})
	if err != nil {
		return t, err
	}
	if cur := t.current; !t.Applied && cur != nil && cur.Status == StatusProcessing && cur.LeaseOwner == sc.owner &&
		cur.SeatEpoch == epoch && cur.SeatShard != nil && *cur.SeatShard == place {
		t.Applied = true // an earlier attempt of this move landed, its answer lost
	}
	if t.Applied {
		sc.place, sc.epoch, sc.inherited, sc.sent = place, epoch, false, false
	}
	return t, nil
}

// claimPool claims a seat on the event's pool under the claim's lease (its seatShard
// names the pool already), and takes it. A pool found empty is closed to the
// request before the request is refused: it may get seats again (an add, a cancel),
// and no claim of the request sent before may take one then.
func (c *Client) claimPool(ctx context.Context, w *seatWalk) (Transition, error) {
	sc := w.sc
	at, err := seatPlaceOf(sc.ref.EventID, w.n, w.n)
	if err != nil {
		return Transition{}, err
	}
	for {
		res, err := c.claimOn(ctx, at, sc)
		if err != nil {
			return Transition{}, fmt.Errorf("claim seat %s on the pool: %w", sc.ref.RequestID, err)
		}
		switch res {
		case claimWon, claimHeld:
			return c.takeSeat(ctx, w.reqKey, sc)
		case claimRefused:
			return Transition{}, fmt.Errorf("claim seat %s on the pool: refused for throughput: %w", sc.ref.RequestID, ErrThrottled)
		case claimClosed:
			// An earlier delivery found the pool empty and closed it, then ended
			// before the request did: the pool may have seats again, for a claim at
			// the next epoch.
			if t, err := c.moveSeat(ctx, sc, w.n); err != nil || !t.Applied {
				return t, err
			}
			continue
		}
		held, err := c.closeTo(ctx, at, sc.ref.RequestID, sc.epoch, leaveCloseTries)
		switch {
		case err != nil:
			return Transition{}, fmt.Errorf("claim seat %s on the pool: %w", sc.ref.RequestID, err)
		case held:
			return c.takeSeat(ctx, w.reqKey, sc)
		}
		w.seats.PoolDry(sc.ref.EventID, sc.poolVersion)
		return Transition{SoldOut: true}, nil
	}
}

// seatHeld closes the place a claim of the request may still land on before the
// request ends without a seat (a final failure), and reports whether it holds a seat
// there after all. With no claim there (none sent, none inherited) there is nothing
// to close.
func (c *Client) seatHeld(ctx context.Context, sc *seatClaim) (bool, error) {
	if !sc.inherited && !sc.sent {
		return false, nil
	}
	n, err := c.capacityShards(ctx, sc.ref.EventID)
	if err != nil {
		return false, err
	}
	at, err := seatPlaceOf(sc.ref.EventID, n, sc.place)
	if err != nil {
		return false, err
	}
	return c.closeTo(ctx, at, sc.ref.RequestID, sc.epoch, 0)
}

// closeHome closes a request's home shard to its claims without a lease, for a
// request that ends without a seat and was never started (a send that failed): it
// reports whether the request holds its seat there after all.
func (c *Client) closeHome(ctx context.Context, ref RequestRef, n int) (bool, error) {
	at, err := seatPlaceOf(ref.EventID, n, shardOf(ref.RequestID, n))
	if err != nil {
		return false, err
	}
	return c.closeTo(ctx, at, ref.RequestID, seatEpochNone, 0)
}

// takeSeat writes SUCCEEDED for a request that holds its seat; for an event with
// holds, its Hold item and then HELD (the "first-come held" row). A refusal for
// throughput is sent again for up to bookkeepingTimeout: the seat is spent, and the
// request must not be left without its result.
func (c *Client) takeSeat(ctx context.Context, reqKey RequestKey, sc *seatClaim) (Transition, error) {
	var (
		t   Transition
		err error
	)
	w := write{row: &takeSeatRow, args: args{pNow: c.now(), pLeaseOwner: sc.owner}, note: "won a seat"}
	if sc.hold > 0 {
		n, nerr := c.capacityShards(ctx, sc.ref.EventID)
		if nerr != nil {
			return Transition{}, fmt.Errorf("claim seat %s: %w", sc.ref.RequestID, nerr)
		}
		expires := c.holdExpiry(sc.hold)
		if err := c.recordHold(ctx, sc.ref, n, expires); err != nil {
			return Transition{}, fmt.Errorf("claim seat %s: %w", sc.ref.RequestID, err)
		}
		w = write{row: &takeHoldRow, args: args{pNow: c.now(), pLeaseOwner: sc.owner, pHoldExpiresAt: expires}, note: "holds a seat"}
	}
	write := func() {
		t, err = c.applyWhileThrottled(ctx, reqKey, w)
	}
	if sc.end != nil {
		sc.end(write)
	} else {
		write()
	}
	if err != nil {
		return t, fmt.Errorf("claim seat %s: %w", sc.ref.RequestID, err)
	}
	return t, nil
}

// readSeatEpoch decodes a request's seatShard and seatEpoch from attributes a write
// returned; known is false unless both are there (a write that did not return them,
// or an item of a version before epochs: the caller reads the request).
func readSeatEpoch(old map[string]types.AttributeValue) (shard *int, epoch int, known bool) {
	var was struct {
		SeatShard *int `dynamodbav:"seatShard"`
		SeatEpoch *int `dynamodbav:"seatEpoch"`
	}
	_ = attributevalue.UnmarshalMap(old, &was)
	if was.SeatShard == nil || was.SeatEpoch == nil {
		return nil, 0, false
	}
	return was.SeatShard, min(max(*was.SeatEpoch, 0), maxSeatEpoch), true
}
