package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/asyncevent/asyncevent/internal/seatclaim"
)

// The home claim's rows: a first-come seat in two writes, without a lease.
//
// A worker with no Handler sends a first-come request's seat claim to the request's
// home shard (shardOf its ID), at epoch 0, before it writes anything on the request,
// then binds the request to the seat: SUCCEEDED in one more write. Any delivery may
// send such a claim at any time, so every rule that leaves the home shard or ends the
// request without a seat closes the home shard to it first, or finds it empty
// (seat.go). When a delivery sends these rows, and what their answers mean, is the
// first-come step's (internal/firstcome, bound to a delivery in delivery.go).

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
func (c *Client) claimHome(ctx context.Context, ref RequestRef, n, home int) (seatclaim.Outcome, *seatclaim.Claim, error) {
	sc := &seatclaim.Claim{Place: home}
	res, err := seatclaim.ClaimOn(ctx, &seatStore{c: c, ref: ref, n: n}, sc)
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
	t, err := c.applyWhileThrottled(ctx, key, w, txOptions{})
	if err != nil {
		return t, fmt.Errorf("bind the seat of %s: %w", ref.RequestID, err)
	}
	return t, nil
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

// boundToSeat reports whether a request was bound to the seat of its seatShard: it
// won it (SUCCEEDED), holds it (HELD), or held it and gave it to the pool (released,
// expired, cancelled), which is why the seat is no longer on its shard.
func boundToSeat(r *storedRequest) bool {
	switch {
	case r.Status == StatusSucceeded, r.Status == StatusHeld:
		return true
	case r.Status == StatusRejected:
		return r.ResultCode == ResultReleased || r.ResultCode == ResultHoldExpired || r.ResultCode == ResultCancelled
	}
	return false
}
