package asyncevent

// The worker's step for one delivery: the gates a message passes (a pre-queue, a ranked
// admission, a lottery entry), then a first-come request's claim and its result. The
// Processor, its failure paths and its lease are in processor.go; the seat in seat*.go.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/asyncevent/asyncevent/queue"
)

// process runs one delivery to its outcome. It never panics.
func (p *Processor) process(ctx context.Context, d queue.Delivery, extend *extender) result {
	if p.c.opts.Observer == nil {
		return p.processDelivery(ctx, d, extend)
	}
	return p.observeProcess(ctx, d, func(ctx context.Context) result { return p.processDelivery(ctx, d, extend) })
}

func (p *Processor) processDelivery(ctx context.Context, d queue.Delivery, extend *extender) (res result) {
	began := time.Now()
	var m Message
	l := &lease{Lease: Lease{Owner: p.opts.WorkerID + "/" + randomHex(4), Duration: p.opts.LeaseDuration}}
	defer func() {
		if v := recover(); v != nil {
			err := fmt.Errorf("panic: %v", v)
			p.opts.Logger.ErrorContext(ctx, "panic while processing a message", slog.String("requestId", m.RequestID), slog.Any("panic", v))
			held := l
			if !l.held {
				held = nil
			}
			res = p.failFinal(ctx, m, d, held, NonRetryable, ResultFailedWorker, "PANIC", err)
		}
		res.outcome.MessageID, res.outcome.RequestID, res.outcome.EventID = d.MessageID, m.RequestID, m.EventID
		res.outcome.ReceiveCount, res.outcome.Duration = d.ReceiveCount, time.Since(began)
		if m.EventType == FirstCome && res.outcome.Kind.leftTheLine() {
			p.c.progress.reached(m.EventID, p.c.now())
		}
		p.report(ctx, res.outcome)
	}()

	m, err := DecodeMessage(d.Body)
	if err != nil {
		return p.malformed(ctx, m, d, err)
	}
	switch m.EventType {
	case FirstCome:
		return p.firstCome(ctx, m, d, l, extend)
	case Lottery:
		return p.lotteryEntry(ctx, m, d, extend)
	}
	return p.malformed(ctx, m, d, fmt.Errorf("%w: eventType %q", ErrMalformedMessage, m.EventType))
}

// firstCome processes a FIRST_COME message. The home claim first (without a
// Handler): the seat on the request's home shard, then SUCCEEDED, two writes and no
// lease; once the event is known to be sold out, a look at the home shard and one
// write reject it. The rest (a Handler, a home shard empty or refusing the claim for
// throughput, a request an earlier delivery started) goes the leased way: start, the
// service's handler, then the seat claim.
func (p *Processor) firstCome(ctx context.Context, m Message, d queue.Delivery, l *lease, extend *extender) result {
	if r, gated := p.prequeueGate(ctx, m, d); gated {
		return r
	}
	r, gated, late := p.rankedGate(ctx, m, d, extend)
	if gated {
		return r
	}
	m.late = late
	n, err := p.shards(ctx, m)
	if err != nil {
		return p.failed(ctx, m, d, nil, err)
	}
	h := homeState{shard: shardOf(m.RequestID, n), began: p.c.opts.Clock()}
	r, done := p.home(ctx, m, d, n, &h)
	if h.hold > 0 {
		p.holds.Store(m.EventID, struct{}{})
	}
	if done {
		return r
	}
	// The leased way: the event's holds from its config (the home shard's look, or
	// the home claim's read, told h already when they ran).
	hold := h.hold
	if !h.holdKnown {
		if hold, err = p.c.holdFor(ctx, m.EventID); err != nil {
			return p.failed(ctx, m, d, nil, err)
		}
		if hold > 0 {
			p.holds.Store(m.EventID, struct{}{})
		}
	}
	first := h.shard
	if h.clear {
		if next := p.seats.Next(m.EventID, claimOrder(m.RequestID, n), n, map[int]bool{h.shard: true}); next >= 0 {
			first = next
		}
	}
	t, st, err := p.c.startProcessing(ctx, m.Ref(), l.Lease, first)
	if errors.Is(err, ErrNotFound) {
		return notFound()
	}
	if err != nil {
		return p.failed(ctx, m, d, nil, err)
	}
	if !t.Applied {
		return p.notStarted(m, t.current)
	}
	st.settle(h.shard, h.clear)
	l.held = true
	l.claim = &seatClaim{Claim: st.claim(), ref: m.Ref(), owner: l.Owner, end: l.end, hold: hold}
	if extend != nil {
		stop := p.heartbeat(ctx, m, l, extend)
		defer stop()
	}
	if err := p.handle(ctx, m); err != nil {
		return p.failed(ctx, m, d, l, err)
	}
	if !st.inherited && p.soldOut(ctx, m.EventID) && !p.poolOpen(m.EventID, hold) {
		return p.reject(ctx, m, d, l, hold)
	}
	t, err = p.c.claimSeat(ctx, l.claim, p.seats)
	switch {
	case err != nil:
		return p.failed(ctx, m, d, l, err)
	case t.SoldOut:
		return p.reject(ctx, m, d, l, hold)
	case !t.Applied:
		return p.lostLease(ctx, m, l.Lease)
	}
	return won(hold)
}

// reject ends a request REJECTED_CAPACITY (WAITLISTED with holds), under our lease.
func (p *Processor) reject(ctx context.Context, m Message, d queue.Delivery, l *lease, hold time.Duration) result {
	var (
		t   Transition
		err error
	)
	waitlist := p.waitlists(ctx, m.EventID, hold)
	l.end(func() { t, err = p.c.markCapacityRejected(ctx, m.Ref(), l.Lease, waitlist, m.late) })
	switch {
	case err != nil:
		return p.failed(ctx, m, d, l, err)
	case !t.Applied && finalUnder(t.current, l.Owner):
		return result{action: actDelete, outcome: Outcome{Kind: OutcomeDuplicate, ResultCode: t.current.ResultCode}}
	case !t.Applied:
		return result{action: actLeave, outcome: Outcome{Kind: OutcomeLostLease}}
	case waitlist && !m.late:
		return result{action: actDelete, outcome: Outcome{Kind: OutcomeWaitlisted}}
	}
	return result{action: actDelete, outcome: Outcome{Kind: OutcomeRejected, ResultCode: seatRefusal(m)}}
}

// ProcessOne processes one delivery as the Worker does, for a caller that owns the
// queue itself, such as an AWS Lambda SQS handler (package awslambda). done reports
// whether the message is finished: delete it (or leave it out of a batch's
// failures). When it is not, retryAfter is how long it should stay hidden before its
// next delivery (the backoff, or the wait for another worker's lease; 0: at once),
// and a negative retryAfter means leave its visibility as it is (another delivery
// holds the request). The outcome is also passed to ProcessOptions.OnOutcome.
//
// While a FIRST_COME request is held, every half of the shorter of the lease and
// visibility (the lease alone when visibility is 0), keepAlive, if not nil, is
// called to keep the message hidden for another visibility, and the request's lease
// is renewed once half of it has passed.
//
// Without a Handler a FIRST_COME message takes the home claim (docs/design.md, "The
// home claim"): the "first-come capacity" row on the request's home shard, then the
// "first-come seat bound" row, UpdateItem PK REQ#<requestId>, SK META, SET status =
// SUCCEEDED, uiResult and resultCode SUCCESS, finishedAt, startedAt and seatShard
// where missing, REMOVE leaseOwner and leaseExpiresAt; condition status = QUEUED OR
// status = RECEIVED OR (status = PROCESSING AND (attribute_not_exists(seatShard) OR
// seatShard = the home shard) AND leaseExpiresAt ≤ now). A home claim's condition
// includes NOT contains(void, the request's seat token): every rule that moves a
// request's claim off its home shard, or ends it without a seat, closes the home
// shard to it first (the "first-come seat closed" row), so a seat is never given back
// (docs/design.md, "The seat claim").
func (p *Processor) ProcessOne(ctx context.Context, d queue.Delivery, visibility time.Duration, keepAlive func(context.Context) error) (o Outcome, done bool, retryAfter time.Duration) {
	extend := &extender{visibility: visibility, extend: keepAlive}
	if visibility <= 0 {
		extend.visibility = p.opts.LeaseDuration
	}
	if keepAlive == nil {
		extend.extend = func(context.Context) error { return nil }
	}
	res := p.process(ctx, d, extend)
	switch res.action {
	case actDelete:
		return res.outcome, true, 0
	case actRetry:
		return res.outcome, false, max(res.delay, 0)
	}
	return res.outcome, false, -1
}
