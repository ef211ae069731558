package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/asyncevent/asyncevent/internal/seatclaim"
	"github.com/asyncevent/asyncevent/queue"
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
	t, err := c.applyWhileThrottled(ctx, key, w)
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

// homeState is what a delivery knows of its request's home shard.
type homeState struct {
	shard  int
	began  time.Time // when the delivery began
	looked bool      // the delivery read it
	leased bool      // the request goes the leased way: a lease holds it
	clear  bool      // no seat of the request is on it, nor can be: found empty without its token, or closed to it
	// hold is the event's EventSettings.HoldFor (0: no holds), as the home shard or the
	// config read for the home claim says, once holdKnown.
	hold      time.Duration
	holdKnown bool
}

// home runs the part of a first-come message that needs no lease: a look at the home
// shard when the worker knows it empty, knows the event sold out, or knows nothing of
// the event yet; then, without a Handler, the home claim. It reports whether it
// decided the message.
func (p *Processor) home(ctx context.Context, m Message, d queue.Delivery, n int, h *homeState) (result, bool) {
	ev := m.EventID
	if _, taken := p.waveSeats.LoadAndDelete(m.RequestID); taken {
		// Its wave's write took its home seat (a home claim of it that won): bind it.
		cfg, err := p.c.cachedEvent(ctx, ev)
		if err != nil {
			return p.failed(ctx, m, d, nil, err), true
		}
		h.hold, h.holdKnown = cfg.HoldFor, true
		return p.bind(ctx, m, d, n, h)
	}
	if p.newTo(ev) || p.seats.IsEmpty(ev, h.shard) || p.seats.SoldOut(ev) {
		if r, done := p.lookHome(ctx, m, d, n, h); done || h.clear || h.leased {
			return r, done
		}
	}
	if p.opts.Handler != nil {
		return result{}, false
	}
	cfg, err := p.c.cachedEvent(ctx, ev)
	if err != nil {
		return p.failed(ctx, m, d, nil, err), true
	}
	if got := max(cfg.CapacityShards, 1); got != n {
		return p.malformed(ctx, m, d, fmt.Errorf("%w: capacityShards %d, the event has %d", ErrMalformedMessage, n, got)), true
	}
	h.hold, h.holdKnown = cfg.HoldFor, true
	p.seats.Know(ev, n, cfg.EmptyShards)
	if !h.looked && p.seats.IsEmpty(ev, h.shard) {
		// The config lists the home shard empty (or all): a read, not a failed write.
		if r, done := p.lookHome(ctx, m, d, n, h); done || h.clear || h.leased {
			return r, done
		}
	}
	res, sc, err := p.c.claimHome(ctx, m.Ref(), n, h.shard)
	if err != nil {
		// Unanswered: the claim may still land, and the next delivery's claim on the
		// home shard finds it, or the request's end closes the shard to it first.
		return p.failed(ctx, m, d, nil, err), true
	}
	switch res {
	case seatclaim.Won, seatclaim.Held:
		r, done := p.bind(ctx, m, d, n, h)
		if sc.Emptied && n > 1 {
			p.c.shardEmpty(ctx, ev, h.shard, n, p.seats, recordAlways)
		}
		return r, done
	case seatclaim.Closed:
		h.clear = true // closed to the request by an earlier delivery: the leased way sorts it out
	case seatclaim.Empty:
		h.clear = true
		record := recordIfUnlisted
		if n == 1 {
			record = recordIfNew
		}
		p.c.shardEmpty(ctx, ev, h.shard, n, p.seats, record)
		if sc.SoldOut {
			p.seats.Know(ev, n, allShards(n))
		}
		p.seats.LearnPool(ev, sc.PoolVersion)
		if p.soldOut(ctx, ev) && !p.poolOpen(ev, h.hold) {
			return p.rejectSoldOut(ctx, m, d, h.hold)
		}
	}
	return result{}, false // empty, closed, or refused for throughput: the leased claim goes on
}

// newTo reports whether the processor meets the event for the first time and its
// client holds no copy of the event's config: a worker new to the event, which learns
// more from the home shard (its seat, the sell-out's mark) than from the config.
func (p *Processor) newTo(eventID string) bool {
	if !p.seats.FirstLook(eventID) {
		return false
	}
	_, _, cached := p.c.events.Peek(eventID)
	return !cached
}

// lookHome reads the request's home shard: its seat there binds it; an empty shard
// clears it, and rejects it when the event is sold out.
func (p *Processor) lookHome(ctx context.Context, m Message, d queue.Delivery, n int, h *homeState) (result, bool) {
	item, err := p.c.readShard(ctx, m.EventID, n, h.shard)
	if err != nil {
		return p.failed(ctx, m, d, nil, err), true
	}
	h.looked = true
	h.hold, h.holdKnown = item.HoldFor, true
	p.seats.LearnPool(m.EventID, item.PoolVersion)
	if holds(item, m.RequestID) {
		r, done := p.bind(ctx, m, d, n, h)
		h.leased = !done
		return r, done
	}
	if closedHere(item, m.RequestID) {
		h.clear = true // closed to the request by an earlier delivery: the leased way sorts it out
		return result{}, false
	}
	if item.CapacityRemaining > 0 {
		return result{}, false
	}
	h.clear = true
	if item.SoldOut || n == 1 {
		p.seats.Add(m.EventID, h.shard, n)
		p.seats.Know(m.EventID, n, allShards(n))
	} else {
		// Empty without the sell-out's mark: news to this worker is checked against
		// the event's emptyShards (at most once a second), and recorded there when a
		// record was lost, which completes the list and marks the sell-out.
		p.c.shardEmpty(ctx, m.EventID, h.shard, n, p.seats, recordIfUnlistedNow)
	}
	if p.soldOut(ctx, m.EventID) && !p.poolOpen(m.EventID, h.hold) {
		return p.rejectSoldOut(ctx, m, d, h.hold)
	}
	return result{}, false // the leased way: seats elsewhere, or on the pool
}

// poolOpen reports whether a request of a sold-out event without holds may still find
// a seat on the event's pool (seats an operator added, or a cancel gave back), as the
// capacity items the processor met say: it then goes the leased way, which claims
// there. An event with holds hands its pool to its waitlist instead.
func (p *Processor) poolOpen(eventID string, hold time.Duration) bool {
	return hold == 0 && p.seats.PoolOpen(eventID, 0)
}

// bind writes SUCCEEDED for a request whose seat is on its home shard, and reports
// whether that decided the message. A home claim wins only while no rule closed the
// home shard to the request, so its request is at home (RECEIVED, QUEUED, or
// PROCESSING claiming there: a live lease's holder finds the seat and ends it) or
// bound to that seat already (seat.go); a request found
// otherwise is logged as an error and its seat left where it is (the event sells one
// fewer): a seat is never given back on the strength of a view of the request.
func (p *Processor) bind(ctx context.Context, m Message, d queue.Delivery, n int, h *homeState) (r result, done bool) {
	home := h.shard
	t, err := p.c.bindSeat(ctx, m.Ref(), home, MillisOf(h.began), n, h.hold)
	if errors.Is(err, ErrNotFound) {
		// The seat is the request's, but its put has not landed (ingest sent the
		// message after a put whose answer was lost, and it may never land): the
		// request is written from the message at once, under a check that its
		// user's lock names it, and bound; so the seat is spent on no request only
		// if every receive dies between the claim and this put (the user's next
		// click, or the dead-letter queue's message sent back, then heals it). A
		// late put of ingest's fails its condition against this one.
		if err = p.c.putRequestOf(ctx, m); err == nil {
			t, err = p.c.bindSeat(ctx, m.Ref(), home, MillisOf(h.began), n, h.hold)
		} else if errors.Is(err, ErrNotFound) {
			// No lock names the request: it will never be written (a message sent
			// without a participation). Its seat stays taken, for no one.
			p.opts.Logger.ErrorContext(ctx, "a seat was taken for a message whose user's lock does not name its request: the seat stays unused",
				slog.String("requestId", m.RequestID), slog.String("eventId", m.EventID))
		}
	}
	switch {
	case errors.Is(err, ErrNotFound):
		return notFound(), true
	case err != nil:
		return p.failed(ctx, m, d, nil, err), true
	case t.Applied:
		return won(h.hold), true
	}
	cur := t.current
	atHome := cur.SeatShard == nil || *cur.SeatShard == home
	if cur.Status == StatusProcessing && atHome {
		// A live lease at home: its holder's claim there finds the seat, as does its
		// failure's close or a takeover's claim. Come back after it.
		wait := max(cur.LeaseExpiresAt.Time().Sub(p.c.now().Time())+time.Second, time.Second)
		return result{action: actRetry, delay: wait, outcome: Outcome{Kind: OutcomeLeaseHeld}}, true
	}
	if !(cur.SeatShard != nil && *cur.SeatShard == home && boundToSeat(cur)) {
		p.opts.Logger.ErrorContext(ctx, "a request holds a seat on its home shard that its state does not account for: the seat stays unused",
			slog.String("requestId", m.RequestID), slog.String("status", string(cur.Status)),
			slog.String("resultCode", string(cur.ResultCode)), slog.Int("home", home))
	}
	if !cur.Status.decided() {
		h.leased = true
		return result{}, false // the leased way: the start takes the request over once its lease ran out
	}
	return result{action: actDelete, outcome: Outcome{Kind: OutcomeDuplicate, ResultCode: cur.ResultCode}}, true
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

// rejectSoldOut ends a request of a sold-out event whose home shard holds no seat of
// it in one write (WAITLISTED with holds); it reports false when another delivery
// started the request.
func (p *Processor) rejectSoldOut(ctx context.Context, m Message, d queue.Delivery, hold time.Duration) (result, bool) {
	waitlist := p.waitlists(ctx, m.EventID, hold)
	t, err := p.c.rejectSoldOut(ctx, m.Ref(), waitlist, m.late)
	switch {
	case errors.Is(err, ErrNotFound):
		return notFound(), true
	case err != nil:
		return p.failed(ctx, m, d, nil, err), true
	case t.Applied && waitlist && !m.late:
		return result{action: actDelete, outcome: Outcome{Kind: OutcomeWaitlisted}}, true
	case t.Applied:
		return result{action: actDelete, outcome: Outcome{Kind: OutcomeRejected, ResultCode: seatRefusal(m)}}, true
	case t.current.Status.decided():
		return result{action: actDelete, outcome: Outcome{Kind: OutcomeDuplicate, ResultCode: t.current.ResultCode}}, true
	}
	return result{}, false // PROCESSING: the start sorts out which delivery holds it
}

// allShards returns 0 … n−1.
func allShards(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// soldOut reports whether every capacity shard of the event is known empty: found so
// by this processor, or listed in the event's emptyShards as its cached config shows
// them (a worker new to the event learns a sell-out from one read of the config).
func (p *Processor) soldOut(ctx context.Context, eventID string) bool {
	if p.seats.SoldOut(eventID) {
		if p.seats.HasUnrecorded(eventID) { // a shard the CONFIG may lack
			if n, err := p.c.capacityShards(ctx, eventID); err == nil {
				p.c.healEmpty(ctx, eventID, n, p.seats, false)
			}
		}
		return true
	}
	cfg, err := p.c.cachedEvent(ctx, eventID)
	if err != nil || len(cfg.EmptyShards) == 0 {
		return false
	}
	p.seats.Know(eventID, max(cfg.CapacityShards, 1), cfg.EmptyShards)
	return p.seats.SoldOut(eventID)
}
