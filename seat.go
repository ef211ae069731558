package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/asyncevent/asyncevent/internal/seatcache"
	"github.com/asyncevent/asyncevent/internal/seatclaim"
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
// The one fence is the close (closeTo, seatclaim.Close): the "seat closed" write of
// a place, ADD void fenceToken, condition NOT contains(holders, seatToken). It either
// finds the request's seat there (the request then takes that seat and goes no
// further) or makes every claim of the request at that epoch fail there from then
// on, however late it lands. Two places may hold a claim of a request on its way:
// its home shard at epoch 0 (any delivery may send a claim without a lease there, at
// any time), and the place and epoch its seatShard and seatEpoch name (written under
// a lease before any claim there). A request's claim leaves a place only once no
// claim of it can land there any more (closed, or a shard found empty without its
// token: a shard never gets a seat back once empty), and a request ends without a
// seat (REJECTED, WAITLISTED, FAILED_FINAL) only once its home shard and its
// seatShard are closed to it or empty. No rule reads a clock: a lease decides which
// delivery goes on (liveness), never whether a seat may be spent.
//
// The walk that applies these rules (which place next, when to close, when to move,
// when the pool, the sends again and their waits, what each answer means) is
// internal/seatclaim, over seatStore: the rows below, one write each.

// The bounds of a seat epoch and its text in a fence token.
const (
	maxSeatEpoch        = 1 << 20 // a bound on an epoch read back from an item
	fenceEpochSeparator = "@"     // seat token @ epoch, for epochs above 0
)

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

// seatStart is what a delivery's start tells its seat claim (the seatclaim.Claim it
// begins): where the request's claims go, and whether one may be there already.
type seatStart struct {
	place int // the request's seatShard: a capacity shard, or n for the pool
	epoch int // its seatEpoch
	// inherited: a claim of the request may be on place at epoch already, sent by an
	// earlier delivery (a takeover, or our own start whose answer was lost) or, on
	// the home shard at epoch 0, by any delivery without a lease.
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

// claim is the seat claim st begins.
func (st *seatStart) claim() seatclaim.Claim {
	return seatclaim.Claim{Place: st.place, Epoch: st.epoch, Inherited: st.inherited}
}

// seatClaim is one delivery's claim of a seat for its request, under its lease: where
// its claims go and what they met (the walk's), and what its writes need.
type seatClaim struct {
	seatclaim.Claim
	ref   RequestRef
	owner string // the delivery's lease
	// end runs the write that ends the lease (the request's SUCCEEDED), so that no
	// heartbeat rewrites it afterwards; nil runs it as it is.
	end func(write func())
	// hold is the event's EventSettings.HoldFor: the seat makes the request HELD for
	// it, not SUCCEEDED; 0 for an event without holds.
	hold time.Duration
	// written asks the request's write for the request as it left it (ClaimSeat's
	// Transition carries it).
	written bool
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
func (r *Rows) ClaimSeat(ctx context.Context, ref RequestRef, lease Lease) (Transition, error) {
	c := r.c
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
	t, err := c.claimSeat(ctx, &seatClaim{Claim: st.claim(), ref: ref, owner: lease.Owner, hold: hold, written: true}, seatcache.New())
	return c.written(ctx, ref.RequestID, t, err)
}

// claimSeat claims a seat for sc's request, with what seats knows of the event's
// shards, and tells seats what it finds (seatclaim.Walk.Run): it claims on sc's place
// and, while a place is empty, closed to the request, or refuses it for throughput,
// moves the claim (under the lease) to the next shard with seats, then to the
// event's pool.
func (c *Client) claimSeat(ctx context.Context, sc *seatClaim, seats *seatcache.Shards) (Transition, error) {
	reqKey, err := NewRequestKey(sc.ref.RequestID)
	if err != nil {
		return Transition{}, err
	}
	n, err := c.capacityShards(ctx, sc.ref.EventID)
	if err != nil {
		return Transition{}, err
	}
	if sc.Place < 0 || sc.Place > n {
		return Transition{}, Permanent(fmt.Errorf("claim seat %s: %w: seatShard %d of an event of %d shards", sc.ref.RequestID, ErrMalformedMessage, sc.Place, n))
	}
	st := &seatStore{c: c, ref: sc.ref, n: n, sc: sc, reqKey: reqKey, seats: seats}
	w := seatclaim.Walk{
		RequestID: sc.ref.RequestID, EventID: sc.ref.EventID, Shards: n, Home: shardOf(sc.ref.RequestID, n),
		Order: claimOrder(sc.ref.RequestID, n), Holds: sc.hold != 0, Seats: seats, Logger: c.opts.Logger,
	}
	end, err := w.Run(ctx, st, &sc.Claim)
	switch end {
	case seatclaim.Seated, seatclaim.Unmoved:
		return st.t, err
	case seatclaim.SoldOut:
		return Transition{SoldOut: true}, nil
	case seatclaim.ShardsRefused:
		return Transition{}, fmt.Errorf("claim seat %s: every shard with seats refused it for throughput: %w", sc.ref.RequestID, ErrThrottled)
	case seatclaim.PoolRefused:
		return Transition{}, fmt.Errorf("claim seat %s on the pool: refused for throughput: %w", sc.ref.RequestID, ErrThrottled)
	}
	return Transition{}, err
}

// seatHeld closes the place a claim of the request may still land on before the
// request ends without a seat (a final failure), and reports whether it holds a seat
// there after all. With no claim there (none sent, none inherited) there is nothing
// to close.
func (c *Client) seatHeld(ctx context.Context, sc *seatClaim) (bool, error) {
	if !sc.MayLand() {
		return false, nil
	}
	n, err := c.capacityShards(ctx, sc.ref.EventID)
	if err != nil {
		return false, err
	}
	return c.closeTo(ctx, sc.ref, n, sc.Place, sc.Epoch)
}

// closeHome closes a request's home shard to its claims without a lease, for a
// request that ends without a seat and was never started (a send that failed): it
// reports whether the request holds its seat there after all.
func (c *Client) closeHome(ctx context.Context, ref RequestRef, n int) (bool, error) {
	return c.closeTo(ctx, ref, n, shardOf(ref.RequestID, n), seatEpochNone)
}

// closeTo is the fence (seatclaim.Close): it closes place, of an event of n capacity
// shards, to the claims of ref's request at epoch, and reports whether the request
// holds a seat there after all. It is sent until ctx ends.
func (c *Client) closeTo(ctx context.Context, ref RequestRef, n, place, epoch int) (bool, error) {
	held, err := seatclaim.Close(ctx, &seatStore{c: c, ref: ref, n: n}, place, epoch, 0)
	if err != nil {
		st := &seatStore{c: c, ref: ref, n: n}
		item, request := st.Name(place)
		return false, fmt.Errorf("close %s to %s: %w", item, request, err)
	}
	return held, nil
}

// seatStore is a request's seat places and its delivery's claim, as the walk of
// internal/seatclaim sees them: each method is one row's write, and tells what
// DynamoDB answered (Claim and Close prepare theirs, which the walk sends as often as
// it decides). sc is nil for a close without a claim (closeTo).
type seatStore struct {
	c      *Client
	ref    RequestRef
	n      int // the event's capacity shards: place n is its pool
	sc     *seatClaim
	reqKey RequestKey
	seats  *seatcache.Shards
	// t is the request as the move or the take that ended a walk left it.
	t Transition
}

// Name names place, in an error, by its item's key, and the request by its ID.
func (s *seatStore) Name(place int) (item, request string) {
	if at, err := seatPlaceOf(s.ref.EventID, s.n, place); err == nil {
		return at.key.PK, s.ref.RequestID
	}
	return fmt.Sprintf("place %d", place), s.ref.RequestID
}

// Claim prepares the "first-come capacity" row on a shard, or "pool seat claimed" on
// the pool: SET capacityRemaining = capacityRemaining - 1, updatedAt, ADD holders the
// request's seat token; condition seatFree at the fence token of epoch. It is sent
// once (ReturnValues UPDATED_OLD, to tell a shard's last seat).
func (s *seatStore) Claim(place, epoch int) (seatclaim.Send, error) {
	at, err := seatPlaceOf(s.ref.EventID, s.n, place)
	if err != nil {
		return nil, err
	}
	token := seatToken(s.ref.RequestID)
	claim := &claimSeatRow
	if at.pool {
		claim = &poolClaimRow
	}
	w := write{row: claim, key: at.key, args: args{
		pNow: s.c.now(), pSeatToken: token, pSeatTokens: setOf[string]{token}, pFenceToken: fenceToken(s.ref.RequestID, epoch),
	}}
	return func(ctx context.Context) (seatclaim.Answer, error) {
		var before map[string]types.AttributeValue
		err := s.c.do(ctx, txOptions{once: true, old: &before}, []write{w})
		var lost *conditionLost
		switch {
		case err == nil:
			var was struct {
				Remaining *int64 `dynamodbav:"capacityRemaining"`
			}
			last := !at.pool && attributevalue.UnmarshalMap(before, &was) == nil && was.Remaining != nil && *was.Remaining == 1
			return seatclaim.Answer{Reply: seatclaim.Applied, LastSeat: last}, nil
		case errors.As(err, &lost):
			return s.claimLost(lost, at, epoch)
		case isTransactionConflict(err):
			return seatclaim.Answer{Reply: seatclaim.Busy, Err: err}, nil
		case isThrottle(err):
			return seatclaim.Answer{Reply: seatclaim.Throttled, Err: err}, nil
		}
		return seatclaim.Answer{Reply: seatclaim.Unanswered, Err: err}, nil
	}, nil
}

// claimLost reads what a claim at epoch whose condition failed met on its place.
func (s *seatStore) claimLost(lost *conditionLost, at seatPlace, epoch int) (seatclaim.Answer, error) {
	if lost.old == nil {
		if at.pool {
			return seatclaim.Answer{Reply: seatclaim.Lost, Met: seatclaim.Met{Missing: true}}, nil
		}
		return seatclaim.Answer{}, fmt.Errorf("%w: %s (%s)", errNoCapacity, s.ref.EventID, at.key.PK)
	}
	var item capacityItem
	if err := attributevalue.UnmarshalMap(lost.old, &item); err != nil {
		return seatclaim.Answer{}, err
	}
	if slices.Contains(item.Holders, seatToken(s.ref.RequestID)) {
		// The shard's last seat may be this claim's, its answer lost.
		last := !at.pool && item.CapacityRemaining == 0
		return seatclaim.Answer{Reply: seatclaim.Lost, LastSeat: last, Met: seatclaim.Met{Holder: true}}, nil
	}
	return seatclaim.Answer{Reply: seatclaim.Lost, Met: seatclaim.Met{
		Closed: slices.Contains(item.Void, fenceToken(s.ref.RequestID, epoch)), Left: item.CapacityRemaining,
		PoolVersion: item.PoolVersion, SoldOut: item.SoldOut,
	}}, nil
}

// Close prepares the "first-come seat closed" row, or "pool seat closed" on the pool:
// UpdateItem of the place, ADD void the fence token of epoch; condition
// attribute_exists(PK) AND NOT contains(holders, seatToken).
func (s *seatStore) Close(place, epoch int) (seatclaim.Send, error) {
	at, err := seatPlaceOf(s.ref.EventID, s.n, place)
	if err != nil {
		return nil, err
	}
	token := seatToken(s.ref.RequestID)
	r := &seatClosedRow
	if at.pool {
		r = &poolSeatClosedRow
	}
	w := write{row: r, key: at.key, args: args{pSeatToken: token, pFenceTokens: setOf[string]{fenceToken(s.ref.RequestID, epoch)}}}
	return func(ctx context.Context) (seatclaim.Answer, error) {
		err := s.c.do(ctx, txOptions{}, []write{w})
		var lost *conditionLost
		switch {
		case err == nil:
			return seatclaim.Answer{Reply: seatclaim.Applied}, nil
		case errors.As(err, &lost):
			if lost.old == nil {
				if at.pool {
					return seatclaim.Answer{Reply: seatclaim.Lost, Met: seatclaim.Met{Missing: true}}, nil // no pool yet
				}
				return seatclaim.Answer{}, fmt.Errorf("%w: %s", errNoCapacity, at.key.PK)
			}
			var item capacityItem
			if err := attributevalue.UnmarshalMap(lost.old, &item); err != nil {
				return seatclaim.Answer{}, err
			}
			return seatclaim.Answer{Reply: seatclaim.Lost, Met: seatclaim.Met{Holder: slices.Contains(item.Holders, token)}}, nil
		case errors.Is(throttled(err), ErrThrottled):
			return seatclaim.Answer{Reply: seatclaim.Throttled, Err: throttled(err)}, nil
		case !isUnanswered(err):
			return seatclaim.Answer{Reply: seatclaim.Invalid, Err: err}, nil
		}
		return seatclaim.Answer{Reply: seatclaim.Unanswered, Err: err}, nil
	}, nil
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

// Move is the "first-come seat moved" row: SET seatShard = place, seatEpoch = to;
// condition status = PROCESSING AND leaseOwner = the claim's lease AND seatEpoch =
// from. A move met as already made (an earlier attempt of it landed, its answer
// lost) is moved.
func (s *seatStore) Move(ctx context.Context, place, from, to int) (bool, error) {
	owner := s.sc.owner
	t, err := s.c.applyTo(ctx, "move the seat claim of", s.ref.RequestID, write{row: &moveSeatRow,
		args: args{pLeaseOwner: owner, pSeatShard: place, pSeatEpoch: to, pSeatEpochLeft: from}}, txOptions{})
	if err != nil {
		s.t = t
		return false, err
	}
	if cur := t.current; !t.Applied && cur != nil && cur.Status == StatusProcessing && cur.LeaseOwner == owner &&
		cur.SeatEpoch == to && cur.SeatShard != nil && *cur.SeatShard == place {
		t.Applied = true
	}
	if !t.Applied {
		s.t = t
	}
	return t.Applied, nil
}

// Take is takeSeat: the request's SUCCEEDED, or HELD on an event with holds.
func (s *seatStore) Take(ctx context.Context) error {
	t, err := s.c.takeSeat(ctx, s.reqKey, s.sc)
	s.t = t
	return err
}

// ShardEmpty is shardEmpty: the "capacity shard empty" row, as how says.
func (s *seatStore) ShardEmpty(ctx context.Context, shard int, how seatclaim.Record) {
	s.c.shardEmpty(ctx, s.ref.EventID, shard, s.n, s.seats, recordOf[how])
}

// recordOf is a seatclaim.Record as shardEmpty takes it.
var recordOf = [...]recordEmpty{seatclaim.IfUnlisted: recordIfUnlisted, seatclaim.IfNew: recordIfNew, seatclaim.Always: recordAlways,
	seatclaim.IfUnlistedNow: recordIfUnlistedNow}

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
		t, err = c.applyWhileThrottled(ctx, reqKey, w, txOptions{written: sc.written})
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
