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

	"github.com/asyncevent/asyncevent/internal/firstcome"
	"github.com/asyncevent/asyncevent/internal/seatclaim"
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

// firstCome processes a FIRST_COME message: its gates, then its step
// (internal/firstcome): the home claim without a Handler (the seat on the request's
// home shard, then SUCCEEDED, two writes and no lease; once the event is known to be
// sold out, a look at the home shard and one write reject it), and the rest (a
// Handler, a home shard empty or refusing the claim for throughput, a request an
// earlier delivery started) the leased way: start, the service's handler, then the
// seat claim.
func (p *Processor) firstCome(ctx context.Context, m Message, d queue.Delivery, l *lease, extend *extender) result {
	if r, gated := p.prequeueGate(ctx, m, d); gated {
		return r
	}
	r, gated, late := p.rankedGate(ctx, m, d, extend)
	if gated {
		return r
	}
	m.late = late
	f := &firstComeDelivery{p: p, m: m, d: d, l: l, extend: extend}
	f.step = firstcome.Step{D: f, Seats: p.seats, EventID: m.EventID, RequestID: m.RequestID,
		Handler: p.opts.Handler != nil, Late: late, Clock: p.c.opts.Clock, Logger: p.opts.Logger}
	return f.result(f.step.Settle(ctx))
}

// firstComeDelivery is one delivery of a first-come request as its step sees it: the
// rows it sends, under the delivery's lease once the start took it, and the worker's
// results.
type firstComeDelivery struct {
	p      *Processor
	m      Message
	d      queue.Delivery
	l      *lease
	extend *extender
	step   firstcome.Step
	made   result // the result a Verdict{Outcome: firstcome.Made} stands for
}

func (f *firstComeDelivery) Shards(ctx context.Context) (n, home int, err error) {
	if n, err = f.p.shards(ctx, f.m); err != nil {
		return 0, 0, err
	}
	return n, shardOf(f.m.RequestID, n), nil
}

func (f *firstComeDelivery) Config(ctx context.Context) (firstcome.Config, error) {
	cfg, err := f.p.c.cachedEvent(ctx, f.m.EventID)
	if err != nil {
		return firstcome.Config{}, err
	}
	return firstcome.Config{Shards: max(cfg.CapacityShards, 1), Empty: cfg.EmptyShards, Hold: cfg.HoldFor}, nil
}

func (f *firstComeDelivery) ConfigCached() bool {
	_, _, cached := f.p.c.events.Peek(f.m.EventID)
	return cached
}

func (f *firstComeDelivery) HoldFor(ctx context.Context) (time.Duration, error) {
	return f.p.c.holdFor(ctx, f.m.EventID)
}

func (f *firstComeDelivery) WaveSeat() bool {
	_, taken := f.p.waveSeats.LoadAndDelete(f.m.RequestID)
	return taken
}

func (f *firstComeDelivery) SawHolds() { f.p.holds.Store(f.m.EventID, struct{}{}) }

func (f *firstComeDelivery) ReadShard(ctx context.Context, n, shard int) (firstcome.Shard, error) {
	item, err := f.p.c.readShard(ctx, f.m.EventID, n, shard)
	if err != nil {
		return firstcome.Shard{}, err
	}
	sh := firstcome.Shard{HoldsSeat: holds(item, f.m.RequestID), Remaining: item.CapacityRemaining, SoldOut: item.SoldOut,
		Hold: item.HoldFor, PoolVersion: item.PoolVersion}
	sh.Closed = !sh.HoldsSeat && closedHere(item, f.m.RequestID)
	return sh, nil
}

func (f *firstComeDelivery) ClaimHome(ctx context.Context, n, home int) (seatclaim.Outcome, *seatclaim.Claim, error) {
	return f.p.c.claimHome(ctx, f.m.Ref(), n, home)
}

func (f *firstComeDelivery) Bind(ctx context.Context, n, home int, began time.Time, hold time.Duration) (firstcome.Answer, error) {
	return f.answer(f.p.c.bindSeat(ctx, f.m.Ref(), home, MillisOf(began), n, hold))
}

func (f *firstComeDelivery) PutRequest(ctx context.Context) (named bool, err error) {
	err = f.p.c.putRequestOf(ctx, f.m)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

func (f *firstComeDelivery) ShardEmpty(ctx context.Context, shard, n int, how seatclaim.Record) {
	f.p.c.shardEmpty(ctx, f.m.EventID, shard, n, f.p.seats, recordOf[how])
}

func (f *firstComeDelivery) HealEmpty(ctx context.Context) {
	if n, err := f.p.c.capacityShards(ctx, f.m.EventID); err == nil {
		f.p.c.healEmpty(ctx, f.m.EventID, n, f.p.seats, false)
	}
}

func (f *firstComeDelivery) Waitlists(ctx context.Context, hold time.Duration) bool {
	return f.p.waitlists(ctx, f.m.EventID, hold)
}

func (f *firstComeDelivery) RejectSoldOut(ctx context.Context, waitlist bool) (firstcome.Answer, error) {
	return f.answer(f.p.c.rejectSoldOut(ctx, f.m.Ref(), waitlist, f.m.late, txOptions{}))
}

func (f *firstComeDelivery) OtherShard(n, home int) int {
	return f.p.seats.Next(f.m.EventID, claimOrder(f.m.RequestID, n), n, map[int]bool{home: true})
}

func (f *firstComeDelivery) Start(ctx context.Context, first, home int, homeClear bool, hold time.Duration) (firstcome.Started, error) {
	t, st, err := f.p.c.startProcessing(ctx, f.m.Ref(), f.l.Lease, first)
	switch {
	case errors.Is(err, ErrNotFound):
		return firstcome.Started{Missing: true}, nil
	case err != nil:
		return firstcome.Started{}, err
	case !t.Applied:
		f.made = f.p.notStarted(f.m, t.current)
		return firstcome.Started{}, nil
	}
	st.settle(home, homeClear)
	f.l.held = true
	f.l.claim = &seatClaim{Claim: st.claim(), ref: f.m.Ref(), owner: f.l.Owner, end: f.l.end, hold: hold}
	return firstcome.Started{Applied: true, Inherited: st.inherited}, nil
}

func (f *firstComeDelivery) KeepAlive(ctx context.Context) (stop func()) {
	if f.extend == nil {
		return func() {}
	}
	return f.p.heartbeat(ctx, f.m, f.l, f.extend)
}

func (f *firstComeDelivery) Handle(ctx context.Context) error { return f.p.handle(ctx, f.m) }

func (f *firstComeDelivery) ClaimSeat(ctx context.Context) (firstcome.Claimed, error) {
	t, err := f.p.c.claimSeat(ctx, f.l.claim, f.p.seats)
	return firstcome.Claimed{Applied: t.Applied, SoldOut: t.SoldOut}, err
}

func (f *firstComeDelivery) MarkRejected(ctx context.Context, waitlist bool) (firstcome.Answer, error) {
	var (
		t   Transition
		err error
	)
	f.l.end(func() {
		t, err = f.p.c.markCapacityRejected(ctx, f.m.Ref(), f.l.Lease, waitlist, f.m.late, txOptions{})
	})
	if err != nil {
		return firstcome.Answer{}, err
	}
	return firstcome.Answer{Applied: t.Applied, Current: f.request(t.current)}, nil
}

// result is the worker's result of the step's verdict.
func (f *firstComeDelivery) result(v firstcome.Verdict) result {
	switch v.Outcome {
	case firstcome.Made:
		return f.made
	case firstcome.Won:
		return won(v.Hold)
	case firstcome.NotFound:
		return notFound()
	case firstcome.Duplicate:
		return result{action: actDelete, outcome: Outcome{Kind: OutcomeDuplicate, ResultCode: ResultCode(v.Code)}}
	case firstcome.Waitlisted:
		return result{action: actDelete, outcome: Outcome{Kind: OutcomeWaitlisted}}
	case firstcome.Refused:
		return result{action: actDelete, outcome: Outcome{Kind: OutcomeRejected, ResultCode: seatRefusal(f.m)}}
	case firstcome.LeaseHeld:
		return result{action: actRetry, delay: v.Delay, outcome: Outcome{Kind: OutcomeLeaseHeld}}
	}
	return result{action: actLeave, outcome: Outcome{Kind: OutcomeLostLease}} // firstcome.Left (Settle never ends Pending)
}

func (f *firstComeDelivery) Failed(ctx context.Context, err error, leased bool) firstcome.Verdict {
	if leased {
		return f.make(f.p.failed(ctx, f.m, f.d, f.l, err))
	}
	return f.make(f.p.failed(ctx, f.m, f.d, nil, err))
}

func (f *firstComeDelivery) Mismatch(ctx context.Context, n, got int) firstcome.Verdict {
	return f.make(f.p.malformed(ctx, f.m, f.d, fmt.Errorf("%w: capacityShards %d, the event has %d", ErrMalformedMessage, n, got)))
}

func (f *firstComeDelivery) LostLease(ctx context.Context) firstcome.Verdict {
	return f.make(f.p.lostLease(ctx, f.m, f.l.Lease))
}

// make keeps r as the result of the step's Verdict{Outcome: firstcome.Made}.
func (f *firstComeDelivery) make(r result) firstcome.Verdict {
	f.made = r
	return firstcome.Verdict{Outcome: firstcome.Made}
}

// answer is a write of the request without a lease as the step reads it: a missing
// request is no error.
func (f *firstComeDelivery) answer(t Transition, err error) (firstcome.Answer, error) {
	switch {
	case errors.Is(err, ErrNotFound):
		return firstcome.Answer{Missing: true}, nil
	case err != nil:
		return firstcome.Answer{}, err
	case !t.Applied && t.current == nil:
		return firstcome.Answer{}, fmt.Errorf("asyncevent: request %s: a lost condition returned no item", f.m.RequestID)
	}
	return firstcome.Answer{Applied: t.Applied, Current: f.request(t.current)}, nil
}

// request is r as the step reads it; nil is the zero Request.
func (f *firstComeDelivery) request(r *storedRequest) firstcome.Request {
	if r == nil {
		return firstcome.Request{}
	}
	return firstcome.Request{Status: string(r.Status), ResultCode: string(r.ResultCode), Decided: r.Status.decided(),
		Processing: r.Status == StatusProcessing, SeatShard: r.SeatShard, LeaseExpiresAt: int64(r.LeaseExpiresAt),
		Ours: r.LeaseOwner == f.l.Owner, BoundToSeat: boundToSeat(r)}
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
