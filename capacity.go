package asyncevent

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/internal/ctxsleep"
)

// EventCapacity is the EventCapacity item of a FIRST_COME event (PK EVENT#<eventId>,
// SK CAPACITY), or one of its C shards (PK EVENT#<eventId>#CAPACITY#<shard>, SK
// CAPACITY), whose capacities sum to the event's. capacityRemaining goes down by one
// per seat, under the condition capacityRemaining > 0, so the event has at most
// capacityTotal winners; it goes up only when a seat taken for a request that ended
// without it goes back, never from 0 (an empty item stays empty).
type EventCapacity struct {
	EntityType        entity.Type `dynamodbav:"entityType"` // CAPACITY
	EventID           string      `dynamodbav:"eventId"`
	CapacityTotal     int64       `dynamodbav:"capacityTotal"`
	CapacityRemaining int64       `dynamodbav:"capacityRemaining"`
	UpdatedAt         EpochMillis `dynamodbav:"updatedAt"`

	// Holders are the seat tokens of the requests that won a seat on the item, one per
	// seat spent: the claim that takes a seat adds its request's token in the same
	// write, so that any later claim of the request here finds its seat instead of
	// taking another. A token is 8 bytes of SHA-256 of the request ID, base64 (about
	// 12 bytes a winner on the item). Empty on a sum of shards.
	Holders []string `dynamodbav:"holders,omitempty,stringset"`

	// SoldOut is set on every shard of an event with capacity shards once all of them
	// are empty, so that a worker new to the event learns the sell-out from the one
	// shard it reads.
	SoldOut bool `dynamodbav:"soldOut,omitempty"`

	// PoolVersion is the version of the event's seat pool (its Returns item) this shard
	// was told of: 0 while no seat was ever added to the pool (AddCapacity after a
	// sell-out, CancelRequest); each change of the pool's seats by an operator raises
	// it on every shard, so that a worker that reads a request's home shard, or meets
	// it empty, learns that the pool may hold seats.
	PoolVersion int64 `dynamodbav:"poolVersion,omitempty"`

	// HoldFor is the event's EventConfig.HoldFor (0: no holds), written with the item,
	// so that a worker that reads only a request's home shard knows whether its seat
	// is held (HELD) or won, and its loser waitlisted or rejected.
	HoldFor time.Duration `dynamodbav:"holdFor,omitempty"`

	// Void are the seat tokens of requests that end without a seat (a final failure):
	// written on the request's home shard before the failure, so that no claim of it
	// takes a seat there afterwards.
	Void []string `dynamodbav:"void,omitempty,stringset"`

	// Shards, for an event with capacity shards (EventConfig.CapacityShards > 1), are
	// its shard items, in shard order; the fields above are then their sum (UpdatedAt
	// the latest). Not stored.
	Shards []EventCapacity `dynamodbav:"-"`
}

// The attribute names of an EventCapacity item that its rows name.
const (
	attrCapacityRemaining = "capacityRemaining"
	attrUpdatedAt         = "updatedAt"
	attrHolders           = "holders"
	attrSoldOut           = "soldOut"
	attrVoid              = "void"
	attrPoolVersion       = "poolVersion"
	attrCapacityTotal     = "capacityTotal"
)

type capacityItem struct {
	Key
	EventCapacity
}

// The params of the capacity rows.
const (
	pSeatToken  param = "seatToken"  // a request's seat token, as a string
	pSeatTokens param = "seatTokens" // the same, as a one-element string set
	pSeatShard  param = "seatShard"  // a capacity shard
	pShards     param = "shards"     // capacity shards, as a number set
)

// The capacity rows. A seat is one conditional write of one capacity item, no
// transaction: it takes the seat and records the request's token together, so that a
// seat is never spent without a record of whose it is (docs/design.md, "The seat
// claim").
var (
	seatLeft  = fixed(expression.Name(attrCapacityRemaining).GreaterThan(expression.Value(0)))
	notHolder = not(holder)
	notVoid   = not(func(v values) expression.ConditionBuilder {
		return expression.Contains(expression.Name(attrVoid), v.arg(pSeatToken))
	})
	seatFree = all(seatLeft, notHolder, notVoid)
	// holder: the request's token is on the shard.
	holder = func(v values) expression.ConditionBuilder {
		return expression.Contains(expression.Name(attrHolders), v.arg(pSeatToken))
	}

	configExists = fixed(expression.AttributeExists(expression.Name(attrPK)))

	claimSeatRow = row{
		name: "first-come capacity", method: "ClaimSeat", item: entity.Capacity, op: opUpdate, cond: seatFree,
		sets: []set{
			setTo(attrCapacityRemaining, expression.Name(attrCapacityRemaining).Minus(expression.Value(1))),
			setTo(attrUpdatedAt, pNow),
		},
		adds: []set{addTo(attrHolders, pSeatTokens)},
	}
	takeSeatRow = row{
		name: "first-come success", method: "ClaimSeat", item: entity.Request, op: opUpdate,
		from: []leave{{status: StatusProcessing}}, guard: leaseHeld, to: StatusSucceeded,
		sets: finalSets(UISuccess, ResultSuccess),
	}
	moveSeatRow = row{
		name: "first-come seat moved", method: "ClaimSeat", item: entity.Request, op: opUpdate, cond: heldUnderLease,
		sets: []set{setTo(attrSeatShard, pSeatShard)},
	}
	shardEmptyRow = row{
		name: "capacity shard empty", method: "ClaimSeat", item: entity.Config, op: opUpdate, cond: configExists,
		adds: []set{addTo(attrEmptyShards, pShards)},
	}
)

// seatToken is the token a request's seat claim records on its capacity item: 8
// bytes of SHA-256 of the request ID, base64. Two requests of one shard share a token
// with a chance of about S²/2⁶⁵ for S seats on the shard (10⁻¹⁴ for 1,000).
func seatToken(requestID string) string {
	sum := sha256.Sum256([]byte("seat\x00" + requestID))
	return base64.RawStdEncoding.EncodeToString(sum[:8])
}

// GetCapacity reads a FIRST_COME event's EventCapacity: GetItem PK EVENT#<eventId>,
// SK CAPACITY, a strongly consistent read; for an event with capacity shards, GetItem
// of each shard (PK EVENT#<eventId>#CAPACITY#<shard>, SK CAPACITY), summed, with the
// shards in Shards. An event without one
// (unknown, or a LOTTERY) is ErrNotFound.
func (c *Client) GetCapacity(ctx context.Context, eventID string) (*EventCapacity, error) {
	if err := ValidateID("eventId", eventID); err != nil {
		return nil, err
	}
	shards, err := c.capacityShards(ctx, eventID)
	if err != nil {
		return nil, err
	}
	keys, err := capacityKeys(eventID, shards)
	if err != nil {
		return nil, err
	}
	sum := &EventCapacity{EntityType: entity.Capacity, EventID: eventID}
	for _, key := range keys {
		var item capacityItem
		found, err := c.getItem(ctx, key.key(), true, &item)
		switch {
		case err != nil:
			return nil, fmt.Errorf("get capacity %s: %w", eventID, err)
		case !found:
			return nil, fmt.Errorf("%w: capacity of %s (%s)", ErrNotFound, eventID, key.key().SK)
		case len(keys) == 1:
			return &item.EventCapacity, nil
		}
		sum.CapacityTotal += item.CapacityTotal
		sum.CapacityRemaining += item.CapacityRemaining
		sum.UpdatedAt = max(sum.UpdatedAt, item.UpdatedAt)
		sum.Shards = append(sum.Shards, item.EventCapacity)
	}
	return sum, nil
}

// capacityItems returns the capacity items of a new FIRST_COME event: one CAPACITY
// item, or C shards holding capacityTotal ÷ C seats each, the first capacityTotal mod
// C of them one more.
func capacityItems(cfg EventConfig, now EpochMillis) []capacityItem {
	keys, _ := capacityKeys(cfg.EventID, cfg.CapacityShards) // the ID is checked
	items := make([]capacityItem, len(keys))
	n := int64(len(keys))
	for i, key := range keys {
		seats := cfg.CapacityTotal / n
		if int64(i) < cfg.CapacityTotal%n {
			seats++
		}
		items[i] = capacityItem{Key: key.key(), EventCapacity: EventCapacity{
			EntityType: entity.Capacity, EventID: cfg.EventID,
			CapacityTotal: seats, CapacityRemaining: seats, UpdatedAt: now, HoldFor: cfg.HoldFor,
		}}
	}
	return items
}

// claimFence is how long after a lease ran out a seat claim it sent may still land:
// a delivery sends no claim once its lease has run out (by its own clock), so from
// claimFence after that no claim of it can take a seat any more. It covers the
// network's delay and the clocks' skew between workers; a write delayed longer than
// this is the one case the design does not cover (docs/design.md).
const claimFence = 5 * time.Second

// claimAttempts bounds the sends of a seat claim on one capacity item that DynamoDB
// refuses for throughput (or answers in a way that leaves unknown whether it was
// applied) before the claim moves to another shard (or, with none, gives up).
const claimAttempts = 3

// errLeaseRanOut: the delivery's lease ran out before its seat claim was sent.
var errLeaseRanOut = errors.New("asyncevent: the lease ran out before the seat claim")

// seatStart is what a delivery's start tells its seat claim.
type seatStart struct {
	shard int // the request's seatShard after the start
	// inherited: an earlier delivery started the request, so it may hold a seat on
	// shard already, or (its lease run out while it still works) send a claim there
	// until fenceAt. The claim then tries shard first whatever it knows, and leaves
	// it for throughput only after fenceAt, once a strongly consistent read shows no
	// seat of the request on it.
	inherited bool
	fenceAt   time.Time
	// homeClear: no seat of the request is on its home shard, nor can be (found empty
	// without its token). Else a delivery without a lease may hold one there, or be
	// claiming one, so the claim leaves the home shard for throughput only once it is
	// listed left and the leftFence after that has passed.
	homeClear bool
	// homeLeftAt is when the home shard was listed left (EventConfig.LeftShards), if
	// the delivery's copy of the config said so: no claim without a lease lands there
	// from leftFence after it on.
	homeLeftAt EpochMillis
}

// onHome makes a start on the request's home shard careful of the home claims of
// deliveries without a lease: they may hold a seat there, or send a claim until the
// shard is listed left (and leftFence after).
func (st *seatStart) onHome(home int, now time.Time) {
	if st.shard != home || st.homeClear || st.inherited {
		return
	}
	st.inherited, st.fenceAt = true, now.Add(claimFence)
	if st.homeLeftAt != 0 {
		st.fenceAt = st.homeLeftAt.Time().Add(leftFence)
	}
}

// seatClaim is one delivery's claim of a seat for its request.
type seatClaim struct {
	seatStart
	ref   RequestRef
	owner string           // the delivery's lease
	until func() time.Time // when the delivery's lease runs out: no claim is sent after
	// end runs the write that ends the lease (the request's SUCCEEDED), so that no
	// heartbeat rewrites it afterwards; nil runs it as it is.
	end func(write func())
	// hold is the event's EventConfig.HoldFor: the seat makes the request HELD for
	// it, not SUCCEEDED; 0 for an event without holds.
	hold time.Duration

	// poolVersion is the highest PoolVersion of a capacity item this claim met.
	poolVersion int64

	// unsureAt is when a claim of this delivery last went unanswered (a timeout, a
	// server error): it may still land, until claimFence after it.
	unsureAt time.Time
	sent     bool // this delivery sent a claim
	emptied  bool // this delivery's claim took the shard's last seat
	soldOut  bool // the last item that refused the claim empty carries the sold-out mark
}

// The answers of one capacity item to a seat claim.
type claimResult int

const (
	claimWon     claimResult = iota // the claim took a seat
	claimHeld                       // the request holds a seat on the item already
	claimEmpty                      // no seat is left on the item, none of them the request's
	claimRefused                    // DynamoDB refused every send for throughput: nothing written
	claimVoid                       // the request's token is void there: it ends without a seat
)

// ClaimSeat is the "first-come capacity" and "first-come success" rows, two single
// writes and no transaction. First UpdateItem of the request's capacity item (PK
// EVENT#<eventId>, SK CAPACITY; with capacity shards the shard its seatShard names, PK
// EVENT#<eventId>#CAPACITY#<seatShard>): SET capacityRemaining = capacityRemaining - 1,
// updatedAt, ADD holders the request's seat token, condition capacityRemaining > 0 AND
// NOT contains(holders, token) AND NOT contains(void, token). Then UpdateItem PK
// REQ#<requestId>, SK META, SET status
// = SUCCEEDED, uiResult SUCCESS, resultCode SUCCESS, finishedAt, condition status =
// PROCESSING AND leaseOwner = lease.Owner; with the status log entry. The seat and the
// record of whose it is are one write; a claim that finds the request's token there
// (its own send applied but unanswered, or an earlier delivery's claim before it
// died) has its seat already and goes on to SUCCEEDED: a request never takes two.
//
// A shard that is empty, or that refuses the claim for throughput three times, is
// left for the next shard of the request's order that is not known empty: the "first-come
// seat moved" row, UpdateItem PK REQ#<requestId>, SK META, SET seatShard, condition
// status = PROCESSING AND leaseOwner = lease.Owner, first, so that every later
// delivery claims where this one does. With capacity shards, the claim that takes a
// shard's last seat (capacityRemaining was 1, ReturnValues UPDATED_OLD) adds it to
// the event's emptyShards (the "capacity shard empty" row, UpdateItem PK
// EVENT#<eventId>, SK CONFIG, ADD emptyShards), for the workers that have not met it;
// with one, the claim that finds it empty does. Leaving the request's home shard for
// throughput lists it left first (the "capacity shard left" row, UpdateItem PK
// EVENT#<eventId>, SK CONFIG, ADD leftShards "<shard>@<now>", unless listed already)
// and waits until 10 s after the listing (leftFence) before a strongly consistent
// read shows no token there; a home shard listed left is claimed last. The request
// is refused (SoldOut) only when every shard is empty, and the error matches
// ErrThrottled only when every shard that holds seats refused it.
//
// ClaimSeat does not know what the request's start found, so it treats the request
// as one an earlier delivery may still be claiming for: it leaves a shard for
// throughput only claimFence (5 s) after its call began. Call it after
// StartProcessing, under the lease it took. A lost condition is not an error: when
// the request is not PROCESSING under this lease the Transition is not applied and
// holds the request as it is; when no seat is left SoldOut is set. An event without
// a CAPACITY item is errNoCapacity.
func (c *Client) ClaimSeat(ctx context.Context, ref RequestRef, lease Lease) (Transition, error) {
	if _, err := newRequestKey(ref.RequestID); err != nil {
		return Transition{}, err
	}
	if err := ValidateID("eventId", ref.EventID); err != nil {
		return Transition{}, err
	}
	req, err := c.getRequest(ctx, ref.RequestID, true)
	if err != nil {
		return Transition{}, fmt.Errorf("claim seat %s: %w", ref.RequestID, err)
	}
	if req.Status != StatusProcessing || req.LeaseOwner != lease.Owner || c.now() >= req.LeaseExpiresAt {
		return Transition{Current: req}, nil // not held under a live lease of the caller's
	}
	st := seatStart{inherited: true, fenceAt: c.opts.Clock().Add(claimFence)}
	if req.SeatShard != nil {
		st.shard = *req.SeatShard
	} else {
		n, err := c.capacityShards(ctx, ref.EventID)
		if err != nil {
			return Transition{}, err
		}
		st.shard = shardOf(ref.RequestID, n)
	}
	expires := req.LeaseExpiresAt.Time()
	hold, err := c.holdFor(ctx, ref.EventID)
	if err != nil {
		return Transition{}, err
	}
	return c.claimSeat(ctx, &seatClaim{seatStart: st, ref: ref, owner: lease.Owner, until: func() time.Time { return expires }, hold: hold}, newSeatShards())
}

// claimSeat claims a seat for sc's request, with what seats knows of the event's
// shards, and tells seats what it finds: it tries sc's shard, and while a shard is
// empty, void for the request or refuses it for throughput, moves the claim (under
// the lease) to the next one with seats, then to the event's seat pool.
func (c *Client) claimSeat(ctx context.Context, sc *seatClaim, seats *seatShards) (Transition, error) {
	w, err := c.newSeatWalk(ctx, sc, seats)
	if err != nil {
		return Transition{}, err
	}
	if sc.shard == w.n && sc.inherited {
		// An earlier delivery claimed on the event's seat pool (every shard was
		// empty, and stays so): its seat may be there.
		return c.claimPool(ctx, w.reqKey, sc, seats, w.n)
	}
	if sc.shard < 0 || sc.shard >= w.n {
		sc.shard = w.home
	}
	for {
		res, passing, err := c.tryShard(ctx, w)
		if errors.Is(err, errLeaseRanOut) {
			return Transition{}, nil // not applied: the lease is another delivery's to take
		}
		if err != nil {
			return Transition{}, fmt.Errorf("claim seat %s: %w", sc.ref.RequestID, err)
		}
		if res == claimWon || res == claimHeld {
			return c.takeWalkSeat(ctx, w)
		}
		c.noteShard(ctx, w, res, passing)
		next, end, t, err := c.nextShard(ctx, w)
		if end {
			return t, err
		}
		if next < 0 {
			continue // the home shard, tried last
		}
		if res == claimRefused {
			held, err := c.leaveRefused(ctx, w)
			if err != nil {
				return Transition{}, fmt.Errorf("claim seat %s: %w", sc.ref.RequestID, err)
			}
			if held {
				return c.takeSeat(ctx, w.reqKey, sc)
			}
		}
		if t, err := c.moveSeat(ctx, sc, next); err != nil || !t.Applied {
			return t, err
		}
	}
}

// seatWalk is one claim's walk over its event's capacity shards.
type seatWalk struct {
	sc     *seatClaim
	seats  *seatShards
	reqKey requestKey
	keys   []eventKey   // the capacity shards' keys
	n      int          // the event's capacity shards
	order  []int        // the shards in the order this request tries them
	home   int          // the request's home shard
	left   map[int]bool // shards this claim left for throughput
	voided map[int]bool // shards where the request's token is void
	// passedHome: the home shard, listed left, was passed over; homeLast: it is
	// being tried last.
	passedHome, homeLast bool
}

func (c *Client) newSeatWalk(ctx context.Context, sc *seatClaim, seats *seatShards) (*seatWalk, error) {
	reqKey, err := newRequestKey(sc.ref.RequestID)
	if err != nil {
		return nil, err
	}
	n, err := c.capacityShards(ctx, sc.ref.EventID)
	if err != nil {
		return nil, err
	}
	keys, err := capacityKeys(sc.ref.EventID, n)
	if err != nil {
		return nil, err
	}
	return &seatWalk{
		sc: sc, seats: seats, reqKey: reqKey, keys: keys, n: n,
		order: claimOrder(sc.ref.RequestID, n), home: shardOf(sc.ref.RequestID, n),
		left: map[int]bool{}, voided: map[int]bool{},
	}, nil
}

// tryShard claims on the walk's current shard, unless the shard is known empty (and
// the claim inherited no seat that may be there) or is the home shard listed left
// (passed over, and tried last; passing).
func (c *Client) tryShard(ctx context.Context, w *seatWalk) (res claimResult, passing bool, err error) {
	sc := w.sc
	switch {
	case sc.shard == w.home && !sc.homeClear && sc.homeLeftAt != 0 && !w.homeLast:
		// Listed left: passed over (read after the left fence and left), and tried
		// last.
		w.passedHome = true
		return claimRefused, true, nil
	case sc.inherited || !w.seats.isEmpty(sc.ref.EventID, sc.shard):
		res, err := c.claimOn(ctx, w.keys[sc.shard].key(), sc)
		return res, false, err
	}
	return claimEmpty, false, nil
}

// takeWalkSeat ends the walk with the seat it won.
func (c *Client) takeWalkSeat(ctx context.Context, w *seatWalk) (Transition, error) {
	t, err := c.takeSeat(ctx, w.reqKey, w.sc)
	if w.sc.emptied && w.n > 1 {
		// The last seat of a shard: the workers that have not met it learn from the
		// event that it is empty, so a sell-out costs a worker new to the event one
		// read rather than a failed write per shard. (With one shard that failed write
		// is a single one per worker: no record.)
		c.shardEmpty(ctx, w.sc.ref.EventID, w.sc.shard, w.n, w.seats, recordAlways)
	}
	return t, err
}

// noteShard records what the claim met on its shard, other than a seat.
func (c *Client) noteShard(ctx context.Context, w *seatWalk, res claimResult, passing bool) {
	sc := w.sc
	switch res {
	case claimVoid:
		// A final failure of an earlier delivery voided the request's token here and
		// died before writing it: no seat of it here, nor ever; try the others.
		w.voided[sc.shard] = true
		sc.homeClear = sc.homeClear || sc.shard == w.home
	case claimEmpty:
		// With capacity shards the claim that took the shard's last seat records it:
		// the workers that meet it empty after that record it only when the CONFIG,
		// read at most once a second, still lacks it (that record lost), or the CONFIG
		// item would take a write per shard and worker at the sell-out, all at once.
		record := recordIfUnlisted
		if w.n == 1 {
			record = recordIfNew
		}
		c.shardEmpty(ctx, sc.ref.EventID, sc.shard, w.n, w.seats, record)
	case claimRefused:
		if !passing {
			w.left[sc.shard] = true
		}
	}
}

// nextShard picks the shard the claim moves to. When there is none it ends the walk
// (end, with its outcome): refused for throughput, a void token with no seat
// elsewhere, a claim on the event's seat pool, or sold out; or, once, it moves the
// claim back to the home shard it passed over, to be tried last (next < 0, not end).
func (c *Client) nextShard(ctx context.Context, w *seatWalk) (next int, end bool, t Transition, err error) {
	sc := w.sc
	skip := union(w.left, w.voided)
	if w.passedHome && !w.homeLast {
		skip[w.home] = true
	}
	next = w.seats.next(sc.ref.EventID, w.order, w.n, skip)
	switch {
	case next >= 0:
		return next, false, Transition{}, nil
	case w.passedHome && !w.homeLast:
		// Nowhere else to go: the home shard, listed left but never refused to this
		// claim, is claimed after all (under the lease; its token keeps it to one
		// seat, and no fence applies to a claim that comes back).
		w.homeLast = true
		if sc.shard != w.home {
			if t, err := c.moveSeat(ctx, sc, w.home); err != nil || !t.Applied {
				return -1, true, t, err
			}
		}
		return -1, false, Transition{}, nil
	case len(w.left) > 0:
		return -1, true, Transition{}, fmt.Errorf("claim seat %s: every shard with seats refused it for throughput: %w", sc.ref.RequestID, ErrThrottled)
	case len(w.voided) > 0:
		// A final failure of the request began (its token is void on its home shard)
		// and no other shard has a seat: it ends as that failure would have.
		return -1, true, Transition{}, Permanent(fmt.Errorf("claim seat %s: a final failure voided its seat token and no other shard has seats", sc.ref.RequestID))
	case w.seats.poolOpen(sc.ref.EventID, sc.poolVersion) && sc.hold == 0:
		// Every shard is empty; the event's pool may hold seats an operator added or a
		// cancel gave back: the claim moves there, under the lease.
		if t, err := c.moveSeat(ctx, sc, w.n); err != nil || !t.Applied {
			return -1, true, t, err
		}
		t, err := c.claimPool(ctx, w.reqKey, sc, w.seats, w.n)
		return -1, true, t, err
	}
	return -1, true, Transition{SoldOut: true}, nil
}

// leaveRefused readies the move off a shard that refused the claim for throughput:
// leaving the home shard lists it left (from then no claim without a lease is sent
// there; leftFence after it none can land). held reports that the request's seat is
// on the shard after all (a claim of its that landed before the fence).
func (c *Client) leaveRefused(ctx context.Context, w *seatWalk) (held bool, err error) {
	sc := w.sc
	if sc.shard == w.home && !sc.homeClear {
		if err := c.leaveHome(ctx, sc); err != nil {
			return false, err
		}
	}
	return c.seatHeldAfterFence(ctx, w.keys[sc.shard].key(), sc)
}

// claimOn sends the claim of a seat on one capacity item, again while DynamoDB
// refuses it for throughput or leaves unknown whether it applied it, at most
// claimAttempts times, never after the lease has run out.
func (c *Client) claimOn(ctx context.Context, key Key, sc *seatClaim) (claimResult, error) {
	token := seatToken(sc.ref.RequestID)
	claim := &claimSeatRow
	if _, err := parseReturnsKey(key); err == nil {
		claim = &poolClaimRow
	}
	w := write{row: claim, key: key, args: args{pNow: c.now(), pSeatToken: token, pSeatTokens: setOf[string]{token}}}
	var unsure, conflict error
	refused := false
	for attempt := range claimAttempts {
		if attempt > 0 {
			if err := ctxsleep.Sleep(ctx, claimBackoff(attempt-1)); err != nil {
				return 0, err
			}
		}
		until := sc.until()
		if !c.opts.Clock().Before(until) {
			return 0, errLeaseRanOut
		}
		actx, cancel := context.WithTimeout(ctx, until.Sub(c.opts.Clock()))
		sc.sent = true
		var before map[string]types.AttributeValue
		err := c.do(actx, txOptions{once: true, old: &before}, []write{w})
		cancel()
		var lost *conditionLost
		switch {
		case err == nil:
			var was struct {
				Remaining *int64 `dynamodbav:"capacityRemaining"`
			}
			if attributevalue.UnmarshalMap(before, &was) == nil && was.Remaining != nil && *was.Remaining == 1 {
				sc.emptied = true
			}
			return claimWon, nil
		case errors.As(err, &lost):
			var item capacityItem
			if lost.old == nil {
				return 0, fmt.Errorf("%w: %s (%s)", errNoCapacity, sc.ref.EventID, key.PK)
			}
			if err := attributevalue.UnmarshalMap(lost.old, &item); err != nil {
				return 0, err
			}
			if slices.Contains(item.Holders, token) {
				// The shard's last seat may be this claim's, its answer lost.
				sc.emptied = sc.emptied || item.CapacityRemaining == 0
				return claimHeld, nil
			}
			sc.soldOut = item.SoldOut
			sc.poolVersion = max(sc.poolVersion, item.PoolVersion)
			if slices.Contains(item.Void, token) {
				return claimVoid, nil
			}
			return claimEmpty, nil
		case isTransactionConflict(err):
			// The item is in an operator's transaction (an add, a cancel): it ends
			// in tens of milliseconds. Not a refusal for throughput: the shard is not
			// left for it.
			conflict = err
		case isThrottle(err):
			refused = true
		case ctx.Err() != nil:
			return 0, ctx.Err()
		default:
			sc.unsureAt, unsure = c.opts.Clock(), err
		}
	}
	if !refused && unsure == nil && conflict != nil {
		return 0, fmt.Errorf("claim seat %s on %s: the item stayed in other transactions: %w", sc.ref.RequestID, key.PK, conflict)
	}
	if !refused {
		// Never a definite answer: the next delivery claims on this shard again.
		return 0, unsure
	}
	return claimRefused, nil // an unanswered send among them is left to seatHeldAfterFence
}

// claimBackoff is the wait before sending a claim on the same shard again, after
// attempt (0 first): 20 ms doubled per attempt, with jitter. Short: a shard that
// keeps refusing is left for another.
func claimBackoff(attempt int) time.Duration {
	d := 20 * time.Millisecond << min(attempt, 4)
	return d/2 + rand.N(d/2+1)
}

// seatHeldAfterFence reports whether the request holds a seat on a capacity item the
// claim is about to leave for throughput, when a claim of it may still land there:
// an earlier delivery's (sc.inherited) or one of this delivery's that went
// unanswered. It waits for the fence, then reads the item strongly consistently
// (reads draw on units of their own, so a shard refusing writes still answers). With
// neither, no claim of the request can be under way there and it reports false at
// once.
func (c *Client) seatHeldAfterFence(ctx context.Context, key Key, sc *seatClaim) (bool, error) {
	var fence time.Time
	if sc.inherited {
		fence = sc.fenceAt
	}
	if !sc.unsureAt.IsZero() {
		fence = later(fence, sc.unsureAt.Add(claimFence))
	}
	if fence.IsZero() {
		return false, nil
	}
	if err := ctxsleep.Sleep(ctx, fence.Sub(c.opts.Clock())); err != nil {
		return false, err
	}
	var item capacityItem
	found, err := c.getItem(ctx, key, true, &item)
	if err != nil || !found {
		return false, err
	}
	return slices.Contains(item.Holders, seatToken(sc.ref.RequestID)), nil
}

// seatHeld reports whether the request of a claim that is about to end without a
// seat (a final failure) holds one all the same: sent by this delivery (its
// SUCCEEDED then failed) or by an earlier one. With no claim of either there is none;
// else it waits for the fence and reads the request's shard strongly consistently.
func (c *Client) seatHeld(ctx context.Context, sc *seatClaim) (bool, error) {
	if !sc.inherited && !sc.sent {
		return false, nil
	}
	n, err := c.capacityShards(ctx, sc.ref.EventID)
	if err != nil {
		return false, err
	}
	keys, err := capacityKeys(sc.ref.EventID, n)
	if err != nil || sc.shard < 0 || sc.shard > n {
		return false, err
	}
	probe := *sc
	if !probe.inherited { // read even when no fence is ahead
		probe.inherited, probe.fenceAt = true, c.opts.Clock()
	}
	if sc.shard == n { // the claim was on the event's pool: its seat token says
		rk, err := returnsKey(sc.ref.EventID)
		if err != nil {
			return false, err
		}
		return c.seatHeldAfterFence(ctx, rk, &probe)
	}
	if sc.shard == shardOf(sc.ref.RequestID, n) && !sc.homeClear {
		if sc.until != nil && !c.opts.Clock().Before(sc.until()) {
			return false, errLeaseRanOut // the request is another delivery's to end
		}
		// The request ends without a seat: its token is voided on its home shard, in
		// one conditional write that finds its seat there instead if it has one, so
		// that no claim of it (without a lease, or an earlier delivery's still under
		// way) takes a seat there afterwards. No fence to wait.
		return c.voidHome(ctx, keys[sc.shard], sc.ref.RequestID)
	}
	return c.seatHeldAfterFence(ctx, keys[sc.shard].key(), &probe)
}

// voidHome voids a request's seat token on its home shard, the "first-come seat
// voided" row (UpdateItem of the shard, ADD void the token; condition
// attribute_exists(PK) AND NOT contains(holders, token)), and reports whether the
// request holds a seat there after all (the condition failed on its token). A
// refusal for throughput is sent again until ctx ends.
func (c *Client) voidHome(ctx context.Context, key eventKey, requestID string) (bool, error) {
	token := seatToken(requestID)
	w := write{row: &voidSeatRow, key: key.key(), args: args{pSeatToken: token, pSeatTokens: setOf[string]{token}}}
	for attempt := 0; ; attempt++ {
		err := c.do(ctx, txOptions{}, []write{w})
		var lost *conditionLost
		switch {
		case err == nil:
			return false, nil
		case errors.As(err, &lost):
			var item capacityItem
			if lost.old == nil {
				return false, fmt.Errorf("%w: %s", errNoCapacity, key.key().PK)
			}
			if err := attributevalue.UnmarshalMap(lost.old, &item); err != nil {
				return false, err
			}
			return slices.Contains(item.Holders, token), nil
		case !errors.Is(throttled(err), ErrThrottled):
			return false, err
		}
		if err := ctxsleep.Sleep(ctx, finalWriteBackoff(attempt)); err != nil {
			return false, err
		}
	}
}

// leaveHome makes sure the claim's home shard is listed left (reading the client's
// copy of the config first: a listing is for good, so one is enough) and sets the
// claim's fence to leftFence after the listing, from when no claim without a lease can
// land there.
func (c *Client) leaveHome(ctx context.Context, sc *seatClaim) error {
	leftAt := sc.homeLeftAt
	if leftAt == 0 {
		cfg, err := c.cachedEvent(ctx, sc.ref.EventID)
		if err != nil {
			return err
		}
		at, listed := cfg.leftAt(sc.shard)
		if !listed {
			if at, err = c.recordLeft(ctx, sc.ref.EventID, sc.shard); err != nil {
				return err
			}
		}
		leftAt = at
		sc.homeLeftAt = at
	}
	sc.inherited, sc.fenceAt = true, later(sc.fenceAt, leftAt.Time().Add(leftFence))
	return nil
}

// union returns the shards in a or b.
func union(a, b map[int]bool) map[int]bool {
	u := maps.Clone(a)
	maps.Copy(u, b)
	return u
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// moveSeat moves the request's claim to another shard, under the lease, before it
// claims there. From then on no earlier delivery can be claiming on the new shard,
// and none of this one on the old.
func (c *Client) moveSeat(ctx context.Context, sc *seatClaim, shard int) (Transition, error) {
	t, err := c.applyTo(ctx, "move the seat claim of", sc.ref.RequestID, write{row: &moveSeatRow, args: args{pLeaseOwner: sc.owner, pSeatShard: shard}}, txOptions{})
	if err != nil {
		return t, err
	}
	if t.Applied {
		sc.shard, sc.inherited, sc.unsureAt = shard, false, time.Time{}
	}
	return t, nil
}

// takeSeat writes SUCCEEDED for a request that holds its seat; for an event with
// holds, its Hold item and then HELD (the "first-come held" row). A refusal for
// throughput is sent again for up to bookkeepingTimeout: the seat is spent, and the
// request must not be left without its result.
func (c *Client) takeSeat(ctx context.Context, reqKey requestKey, sc *seatClaim) (Transition, error) {
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

// applyWhileThrottled applies a write that must follow a seat already spent (its
// SUCCEEDED), sending it again while DynamoDB refuses it for throughput, for up to
// bookkeepingTimeout whatever ctx does.
func (c *Client) applyWhileThrottled(ctx context.Context, key requestKey, w write) (Transition, error) {
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		t, err := c.apply(bctx, key, w, txOptions{})
		if !errors.Is(throttled(err), ErrThrottled) || ctxsleep.Sleep(bctx, finalWriteBackoff(attempt)) != nil {
			return t, err
		}
	}
}

// Whether shardEmpty records an empty shard on the event's config.
type recordEmpty int

const (
	recordIfUnlisted    recordEmpty = iota // when the CONFIG, read at most once a second, lacks it
	recordIfNew                            // when seats did not know it
	recordAlways                           // the claim that emptied it: another claim of the worker may have met it empty first
	recordIfUnlistedNow                    // as recordIfUnlisted, the list read at once when the shard is news to the worker
)

// shardEmpty records that a shard has no seat left: in seats, and as record says on
// the event's config for the workers that have not met it; and, at most once a
// second, reads the shards the others recorded (healEmpty).
func (c *Client) shardEmpty(ctx context.Context, eventID string, shard, n int, seats *seatShards, record recordEmpty) {
	news := seats.add(eventID, shard, n)
	switch {
	case record == recordAlways, record == recordIfNew && news:
		c.recordEmpty(ctx, eventID, n, []int{shard})
	case (record == recordIfUnlisted || record == recordIfUnlistedNow) && news:
		seats.unrecorded(eventID, shard)
	}
	c.healEmpty(ctx, eventID, n, seats, news && record == recordIfUnlistedNow)
}

// healEmpty reads the event's emptyShards (at most once a second per Processor, or
// now: a worker's look found its home shard empty, news to it), into
// seats, and records there the shards seats found empty that it still lacks: the
// record of the claim that emptied one was lost (a crash between the two writes, a
// throttle), and the workers new to the event would otherwise pay a failed claim on
// it each, for good.
func (c *Client) healEmpty(ctx context.Context, eventID string, n int, seats *seatShards, now bool) {
	if !now && !seats.refreshDue(eventID, c.opts.Clock()) {
		return // a read at once does not spend the once-a-second one
	}
	cfg, err := c.GetEvent(ctx, eventID)
	if err != nil {
		return
	}
	seats.know(eventID, n, cfg.EmptyShards)
	if missing := seats.takeUnrecorded(eventID, cfg.EmptyShards); len(missing) > 0 {
		c.recordEmpty(ctx, eventID, n, missing)
	}
}

// recordEmpty adds shards to the event's emptyShards: the "capacity shard empty" row.
// Sent once: the record saves other workers a failed claim each, no more, and the
// CONFIG item takes C of them at the sell-out, all at once.
//
// The record that completes the list (every one of the event's n shards) marks them
// all sold out (markSoldOut).
func (c *Client) recordEmpty(ctx context.Context, eventID string, n int, shards []int) {
	key, _ := newEventKey(eventID, eventItemConfig) // the ID is checked
	w := write{row: &shardEmptyRow, key: key.key(), args: args{pShards: setOf[int](shards)}}
	var old map[string]types.AttributeValue
	if err := c.do(ctx, txOptions{once: true, old: &old}, []write{w}); err != nil {
		c.opts.Logger.WarnContext(ctx, "recording an empty capacity shard failed", slog.String("eventId", eventID), slog.Any("shards", shards), slog.Any("error", err))
		return
	}
	var was struct {
		Empty []int `dynamodbav:"emptyShards,numberset"`
	}
	_ = attributevalue.UnmarshalMap(old, &was) // none: the first record
	all := map[int]bool{}
	for _, s := range append(was.Empty, shards...) {
		all[s] = true
	}
	if n > 1 && len(all) >= n && len(was.Empty) < n {
		c.markSoldOut(ctx, eventID, n)
	}
}

// claimOrder is the order in which a request tries n capacity shards: from the shard
// its ID picks, then on in an order of its own, so that the claims that find a shard
// empty spread over the others instead of all falling on its neighbour.
func claimOrder(requestID string, n int) []int {
	if n <= 1 {
		return []int{0}
	}
	h := fnv.New64a()
	h.Write([]byte(requestID))
	order := rand.New(rand.NewPCG(h.Sum64(), 0)).Perm(n)
	first := slices.Index(order, shardOf(requestID, n))
	order[0], order[first] = order[first], order[0]
	return order
}

// seatShards is what a Processor knows of the capacity shards of FIRST_COME events:
// the shards found empty, by its own claims or read off the event's emptyShards
// (capacity never grows back; once every shard of an event is, the event is sold
// out). It is safe for concurrent use.
type seatShards struct {
	mu      sync.Mutex
	byEvent map[string]*eventShards
	looked  map[string]bool // the events firstLook was asked about
	pools   map[string]*seatPool
}

type eventShards struct {
	n          int
	empty      map[int]bool
	unrecorded map[int]bool // found empty by a claim, not yet seen on the event's emptyShards
	refreshed  time.Time    // when the event's emptyShards was last read
}

func newSeatShards() *seatShards { return &seatShards{byEvent: map[string]*eventShards{}} }

// event returns what s knows of the n shards of eventID. s.mu is held.
func (s *seatShards) event(eventID string, n int) *eventShards {
	e := s.byEvent[eventID]
	if e == nil || e.n != n {
		e = &eventShards{n: n, empty: map[int]bool{}}
		s.byEvent[eventID] = e
	}
	return e
}

// add records that shard of eventID (of n shards) is empty, and reports whether it
// was news.
func (s *seatShards) add(eventID string, shard, n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.event(eventID, n)
	if e.empty[shard] {
		return false
	}
	e.empty[shard] = true
	return true
}

// unrecorded notes a shard of eventID that a claim found empty, for healEmpty.
func (s *seatShards) unrecorded(eventID string, shard int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.byEvent[eventID]; e != nil {
		if e.unrecorded == nil {
			e.unrecorded = map[int]bool{}
		}
		e.unrecorded[shard] = true
	}
}

// takeUnrecorded returns the shards noted unrecorded that listed lacks, and forgets
// them all.
func (s *seatShards) takeUnrecorded(eventID string, listed []int) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byEvent[eventID]
	if e == nil {
		return nil
	}
	var missing []int
	for shard := range e.unrecorded {
		if !slices.Contains(listed, shard) {
			missing = append(missing, shard)
		}
	}
	e.unrecorded = nil
	slices.Sort(missing)
	return missing
}

// hasUnrecorded reports whether a shard of eventID is noted unrecorded.
func (s *seatShards) hasUnrecorded(eventID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byEvent[eventID]
	return e != nil && len(e.unrecorded) > 0
}

// know records shards of eventID (of n shards) that others found empty.
func (s *seatShards) know(eventID string, n int, shards []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.event(eventID, n)
	for _, shard := range shards {
		if shard >= 0 && shard < n {
			e.empty[shard] = true
		}
	}
}

// refreshDue reports whether the event's emptyShards was last read a second or more
// before now, and if so counts it read now.
func (s *seatShards) refreshDue(eventID string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byEvent[eventID]
	if e == nil || now.Sub(e.refreshed) < time.Second {
		return false
	}
	e.refreshed = now
	return true
}

func (s *seatShards) isEmpty(eventID string, shard int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byEvent[eventID]
	return e != nil && e.empty[shard]
}

// next returns the first shard of order (of an event of n shards) neither known
// empty nor in skip; -1 when there is none.
func (s *seatShards) next(eventID string, order []int, n int, skip map[int]bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.event(eventID, n)
	for _, shard := range order {
		if !e.empty[shard] && !skip[shard] {
			return shard
		}
	}
	return -1
}

// firstLook reports whether this is the first time s is asked about eventID: a worker
// new to the event.
func (s *seatShards) firstLook(eventID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.looked == nil {
		s.looked = map[string]bool{}
	}
	first := !s.looked[eventID]
	s.looked[eventID] = true
	return first
}

// soldOut reports whether every shard of the event is known empty.
func (s *seatShards) soldOut(eventID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byEvent[eventID]
	return e != nil && len(e.empty) == e.n
}

// requestToken derives a ClientRequestToken (at most 36 characters) from a request,
// a lease and an attempt.
func requestToken(requestID, owner string, attempt int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%d", requestID, owner, attempt))
	return hex.EncodeToString(sum[:18])
}

// refusalBackoff is the wait before sending again, after attempt (0 first), a call
// refused for throughput alone by err. A conflict ends as soon as the other call on
// the item does: 5 ms doubled per attempt, at most 320 ms. A throttle ends only once
// the key's units have refilled, as the SDK's retryer assumes of the throttles it
// retries: 1 s doubled per attempt, at most 4 s. Both with jitter (half of it at
// random), so that the calls refused together do not all come back together.
func refusalBackoff(err error, attempt int) time.Duration {
	d := 5 * time.Millisecond << min(attempt, 6)
	for _, r := range cancellationReasons(err) {
		if aws.ToString(r.Code) == "ThrottlingError" {
			d = time.Second << min(attempt, 2)
			break
		}
	}
	return d/2 + rand.N(d/2+1)
}
