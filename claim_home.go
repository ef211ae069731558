package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
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
// home shard (shardOf its ID), at epoch 0, before it writes anything on the request,
// then binds the request to the seat: SUCCEEDED in one more write. The claim records
// the request's token with the seat, so any later delivery of the request that claims
// on the home shard finds its seat instead of taking another. Any delivery may send
// such a claim at any time, so every rule that leaves the home shard or ends the
// request without a seat closes the home shard to it first, or finds it empty
// (seat.go). So a home claim that wins finds its request still at home: RECEIVED,
// QUEUED, or PROCESSING with seatShard the home shard, and the bind makes it
// SUCCEEDED, or leaves it to a live lease's holder, whose claim there finds the seat;
// nothing is ever given back.

// The params of the home claim's rows.
const (
	pStartedAt  param = "startedAt"  // when the delivery that bound a seat began
	pWaveSeats  param = "waveSeats"  // the seats a wave's write takes
	pSeatsTaken param = "seatsTaken" // the same, negated: ADD to capacityRemaining
	pWaveTokens param = "waveTokens" // the seat tokens of a wave's write, as a string set
)

// maxWaveClaim is the most home seats one "first-come wave seats" write takes: its
// condition has two terms a seat, which keeps it well within DynamoDB's 4 KB
// expression.
const maxWaveClaim = 25

// waveTokenParam is the param of the seat token of a wave write's i-th request.
func waveTokenParam(i int) param { return param("seatToken" + strconv.Itoa(i+1)) }

// waveClaimRows[k] is the "first-come wave seats" row of k requests (2 ≤ k ≤
// maxWaveClaim; rows()'s entry is k = 2): k home claims at epoch 0 in one write,
// all or none. Each request's pair of terms is a home claim's own condition (its
// token not yet on the shard, the shard not closed to it: the fence token at epoch 0
// is the seat token), so the write takes exactly the seats those k claims would;
// any delivery may send such a claim at any time (seat.go), so the rules hold as
// they are.
var waveClaimRows = func() (rs [maxWaveClaim + 1]*row) {
	for k := 2; k <= maxWaveClaim; k++ {
		conds := []cond{compare(expression.Name(attrCapacityRemaining).GreaterThanEqual, pWaveSeats)}
		for i := range k {
			token := waveTokenParam(i)
			conds = append(conds,
				not(func(v values) expression.ConditionBuilder {
					return expression.Contains(expression.Name(attrHolders), v.Arg(token))
				}),
				not(func(v values) expression.ConditionBuilder {
					return expression.Contains(expression.Name(attrVoid), v.Arg(token))
				}))
		}
		rs[k] = &row{
			name: "first-come wave seats", method: "Processor.ProcessOne", item: entity.Capacity, op: opUpdate, cond: all(conds...),
			sets: []set{setTo(attrUpdatedAt, pNow)},
			adds: []set{addTo(attrCapacityRemaining, pSeatsTaken), addTo(attrHolders, pWaveTokens)},
		}
	}
	return rs
}()

var (
	// atHome: a PROCESSING request whose claims go to its home shard (none moved
	// elsewhere: a move closes the home shard first), under a lease run out. A live
	// lease is its holder's to end: its claim at home finds the seat (as does its
	// failure's close, or a takeover's claim), so the seat is the request's whoever
	// writes SUCCEEDED, and the lease's clock decides only who does (liveness).
	atHome = func(v values) expression.ConditionBuilder {
		return expression.AttributeNotExists(expression.Name(attrSeatShard)).
			Or(expression.Name(attrSeatShard).Equal(v.Value(pSeatShard))).
			And(leaseExpired(v))
	}
	capacityExists = fixed(expression.AttributeExists(expression.Name(attrPK)))

	bindSeatRow = row{
		name: "first-come seat bound", method: "Processor.ProcessOne", item: entity.Request, op: opUpdate,
		from: []leave{
			{status: StatusQueued}, {status: StatusReceived}, {status: StatusProcessing, when: atHome},
		},
		to: StatusSucceeded,
		sets: append(finalSets(UISuccess, ResultSuccess),
			setIfMissing(attrStartedAt, pStartedAt), setIfMissing(attrSeatShard, pSeatShard)),
		removes: []string{attrLeaseOwner, attrLeaseExpiresAt}, // no lease ended it
	}
	shardSoldOutRow = row{
		name: "capacity shard sold out", method: "ClaimSeat", item: entity.Capacity, op: opUpdate, cond: capacityExists,
		sets: []set{setTo(attrSoldOut, true)},
	}
)

// readShard reads one capacity item strongly consistently.
func (c *Client) readShard(ctx context.Context, eventID string, n, shard int) (*capacityItem, error) {
	keys, err := CapacityKeys(eventID, n)
	if err != nil {
		return nil, err
	}
	if shard < 0 || shard >= len(keys) {
		return nil, fmt.Errorf("%w: shard %d of %d", ErrMalformedMessage, shard, n)
	}
	var item capacityItem
	if err := c.getFound(ctx, keys[shard].Key(), true, &item, "read capacity", eventID, func() error {
		return fmt.Errorf("%w: %s (%s)", errNoCapacity, eventID, keys[shard].Key().PK)
	}); err != nil {
		return nil, err
	}
	return &item, nil
}

// claimHome sends a claim without a lease on the request's home shard, at epoch 0.
func (c *Client) claimHome(ctx context.Context, ref RequestRef, n, home int) (claimResult, *seatClaim, error) {
	at, err := seatPlaceOf(ref.EventID, n, home)
	if err != nil {
		return 0, nil, err
	}
	sc := &seatClaim{seatStart: seatStart{place: home}, ref: ref}
	res, err := c.claimOn(ctx, at, sc)
	return res, sc, err
}

// claimWaveSeats takes the home seats of requests whose home is shard, in one write:
// the "first-come wave seats" row, UpdateItem PK EVENT#<eventId> (or
// EVENT#<eventId>#CAPACITY#<shard>), SK CAPACITY, ADD capacityRemaining −k, holders
// the k seat tokens, SET updatedAt; condition capacityRemaining ≥ k AND, for each
// request, NOT contains(holders, seatToken) AND NOT contains(void, seatToken). It
// takes 2 to maxWaveClaim requests. A shard found with fewer seats than requests,
// and none of theirs, is sent again the first of them it can seat. It returns how
// many of ids (the first ones) hold their seat, and whether the write took the
// shard's last seats. A lost condition took nothing; an error may have landed: each
// request's own home claim then finds its seat, or takes one.
func (c *Client) claimWaveSeats(ctx context.Context, eventID string, n, shard int, ids []string) (taken int, emptied bool, err error) {
	if len(ids) < 2 || len(ids) > maxWaveClaim {
		return 0, false, fmt.Errorf("asyncevent: a wave's write takes 2 to %d seats, not %d", maxWaveClaim, len(ids))
	}
	at, err := seatPlaceOf(eventID, n, shard)
	if err != nil || at.pool {
		return 0, false, err
	}
	for {
		tokens := make(setOf[string], len(ids))
		v := args{pNow: c.now(), pWaveSeats: len(ids), pSeatsTaken: -len(ids), pWaveTokens: tokens}
		for i, id := range ids {
			tokens[i] = seatToken(id)
			v[waveTokenParam(i)] = tokens[i]
		}
		var before map[string]types.AttributeValue
		err := c.do(ctx, txOptions{once: true, old: &before}, []write{{row: waveClaimRows[len(ids)], key: at.key, args: v}})
		var lost *conditionLost
		if errors.As(err, &lost) && lost.old != nil {
			var item capacityItem
			if attributevalue.UnmarshalMap(lost.old, &item) != nil || item.CapacityRemaining < 2 || item.CapacityRemaining >= int64(len(ids)) ||
				slices.ContainsFunc(tokens, func(t string) bool { return slices.Contains(item.Holders, t) || slices.Contains(item.Void, t) }) {
				return 0, false, err
			}
			ids = ids[:item.CapacityRemaining] // short of seats alone: the first it can seat
			continue
		}
		if err != nil {
			return 0, false, err
		}
		var was struct {
			Remaining *int64 `dynamodbav:"capacityRemaining"`
		}
		err = attributevalue.UnmarshalMap(before, &was)
		return len(ids), err == nil && was.Remaining != nil && *was.Remaining == int64(len(ids)), nil
	}
}

// bindSeat writes SUCCEEDED for a request that holds a seat on its home shard,
// without a lease: the "first-come seat bound" row, UpdateItem PK REQ#<requestId>, SK
// META, SET status = SUCCEEDED, uiResult SUCCESS, resultCode SUCCESS, finishedAt,
// startedAt (began, when the delivery began) and seatShard where missing, REMOVE
// leaseOwner and leaseExpiresAt (a lease that ran out did not end it); condition:
// status = QUEUED OR status = RECEIVED OR (status = PROCESSING AND
// (attribute_not_exists(seatShard) OR seatShard = home) AND leaseExpiresAt ≤ now). A refusal for throughput is sent again for up to
// bookkeepingTimeout: the seat is spent, and the request must not be left without
// its result.
//
// For an event with holds (hold > 0 of n capacity shards) it writes the hold's Hold
// item first (the "hold recorded" row), then the "first-come seat held" row: SET
// status = HELD, uiResult HELD, holdExpiresAt = now + hold, under the same condition.
func (c *Client) bindSeat(ctx context.Context, ref RequestRef, home int, began EpochMillis, n int, hold time.Duration) (Transition, error) {
	key, err := NewRequestKey(ref.RequestID)
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

// markSoldOut sets soldOut on every capacity shard of an event whose shards are all
// empty, the "capacity shard sold out" row (UpdateItem of each shard, SET soldOut =
// true), so that a worker new to the event that reads a request's home shard learns
// the sell-out from that read alone. A mark that fails is left: such a worker reads
// the event's config instead.
func (c *Client) markSoldOut(ctx context.Context, eventID string, n int) {
	keys, err := CapacityKeys(eventID, n)
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
			w := write{row: &shardSoldOutRow, key: k.Key()}
			if err := c.do(ctx, txOptions{once: true}, []write{w}); err != nil {
				c.opts.Logger.WarnContext(ctx, "marking a capacity shard sold out failed", slog.String("eventId", eventID), slog.String("pk", k.Key().PK), slog.Any("error", err))
			}
		}()
	}
	wg.Wait()
}

// holds reports whether a capacity item records the request's seat.
func holds(item *capacityItem, requestID string) bool {
	return slices.Contains(item.Holders, seatToken(requestID))
}

// closedHere reports whether a capacity item is closed to the request's claims at
// epoch 0 (its claims without a lease).
func closedHere(item *capacityItem, requestID string) bool {
	return slices.Contains(item.Void, fenceToken(requestID, seatEpochNone))
}
