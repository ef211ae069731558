// Package firstcome is a worker's step for one delivery of a FIRST_COME request, once
// the delivery's gates (a pre-queue, a ranked admission) let it through: first the
// home claim, without a lease (docs/design.md, "The home claim"), then, when that
// does not decide it, the leased way: the start, the service's handler, the seat
// claim (package seatclaim), and the request's end.
//
// The home claim sends the request's seat claim to its home shard at epoch 0 before
// anything is written on the request, then binds the request to the seat (SUCCEEDED,
// or HELD on an event with holds): two writes and no lease. The claim records the
// request's token with the seat, so any later delivery that claims on the home shard
// finds its seat instead of taking another; and every rule that leaves the home shard
// or ends the request without a seat closes the home shard to it first, or finds it
// empty. So a home claim that wins finds its request still at home, and nothing is
// ever given back.
//
// The package knows no table: the reads, the writes and the worker's results are a
// Delivery's, which package asyncevent implements with its rows. It decides; safety
// rests on those rows' conditions.
package firstcome

import (
	"context"
	"log/slog"
	"time"

	"github.com/asyncevent/asyncevent/internal/seatcache"
	"github.com/asyncevent/asyncevent/internal/seatclaim"
)

// Request is a request as a write's failed condition found it, as far as the step
// reads it.
type Request struct {
	Status     string
	ResultCode string
	// Decided: a status no worker moves it from (final, HELD or WAITLISTED).
	Decided    bool
	Processing bool
	// SeatShard is the place its claims go; nil before its first start.
	SeatShard *int
	// LeaseExpiresAt is when its lease runs out (epoch milliseconds).
	LeaseExpiresAt int64
	// Ours: its lease is the delivery's.
	Ours bool
	// BoundToSeat: it won the seat of its seatShard (SUCCEEDED, HELD), or held it
	// and gave it back since (released, expired, cancelled).
	BoundToSeat bool
}

// Answer is what a conditional write of the request did.
type Answer struct {
	Applied bool
	Missing bool    // there is no such request (its put has not landed)
	Current Request // neither: the request as the condition found it
}

// Started is what the leased way's start did.
type Started struct {
	Applied bool
	Missing bool
	// Inherited: a claim of the request may be on its place at its epoch already
	// (a takeover, our own start whose answer was lost, or claims without a lease on
	// a home shard that is not clear).
	Inherited bool
}

// Config is the event's config as the step reads it (the client's cached copy).
type Config struct {
	Shards int           // its capacity shards, at least 1
	Empty  []int         // the shards recorded empty
	Hold   time.Duration // EventSettings.HoldFor: 0 for no holds
}

// Shard is a capacity shard as the home shard's look reads it.
type Shard struct {
	HoldsSeat   bool // it records the request's seat
	Closed      bool // it is closed to the request's claims at epoch 0
	Remaining   int64
	SoldOut     bool // it carries the event's sold-out mark
	Hold        time.Duration
	PoolVersion int64
}

// Claimed is what the leased seat claim did.
type Claimed struct {
	Applied bool // the request ended with its seat
	SoldOut bool // no seat is left for it; nothing was written
}

// Outcome is how the step ended.
type Outcome int

// The outcomes a Verdict names.
const (
	Pending    Outcome = iota // none yet: the step goes on
	Won                       // the request won its seat: SUCCEEDED, or HELD with holds (Hold)
	NotFound                  // the message names no request on the table
	Duplicate                 // another delivery decided it (Code)
	Waitlisted                // WAITLISTED
	Refused                   // refused for want of a seat (the delivery's refusal code)
	LeaseHeld                 // a live lease of another delivery holds it: come back after Delay
	Left                      // another delivery holds it: leave the message to it
	Made                      // the Delivery made the result (Failed, Mismatch, LostLease, a start not applied)
)

// Verdict is how the step ended, and what its Outcome carries.
type Verdict struct {
	Outcome Outcome
	Code    string        // Duplicate: its result code
	Delay   time.Duration // LeaseHeld
	Hold    time.Duration // Won: the event's holds
}

// Delivery is one delivery of a first-come request: its rows, as the step sends
// them, and the worker's results that write (a failure's, a lost lease's).
type Delivery interface {
	// Shards returns the event's capacity shards (from the message, else the
	// config) and the request's home shard among them.
	Shards(ctx context.Context) (n, home int, err error)
	// Config returns the event's config, cached; ConfigCached reports whether the
	// client holds a copy.
	Config(ctx context.Context) (Config, error)
	ConfigCached() bool
	// HoldFor returns the event's holds, from its config.
	HoldFor(ctx context.Context) (time.Duration, error)
	// WaveSeat reports (once) whether a ranked admission's wave took the request's
	// home seat already.
	WaveSeat() bool
	// SawHolds notes that the event has holds (for the hold sweep).
	SawHolds()

	// ReadShard reads the request's home shard, strongly consistent.
	ReadShard(ctx context.Context, n, shard int) (Shard, error)
	// ClaimHome sends the request's claim without a lease to its home shard.
	ClaimHome(ctx context.Context, n, home int) (seatclaim.Outcome, *seatclaim.Claim, error)
	// Bind binds the request to its seat on the home shard: the "first-come seat
	// bound" row (the "first-come seat held" row with holds).
	Bind(ctx context.Context, n, home int, began time.Time, hold time.Duration) (Answer, error)
	// PutRequest writes the request from the message when its put has not landed,
	// under a check that its user's lock names it: named is false when no lock does.
	PutRequest(ctx context.Context) (named bool, err error)
	// ShardEmpty records that a shard has no seat left, as how says.
	ShardEmpty(ctx context.Context, shard, n int, how seatclaim.Record)
	// HealEmpty reads the event's record of empty shards and completes it.
	HealEmpty(ctx context.Context)
	// Waitlists reports whether a loser of the event is WAITLISTED, not REJECTED.
	Waitlists(ctx context.Context, hold time.Duration) bool
	// RejectSoldOut ends the request, which holds no seat on its home shard, in one
	// write without a lease (WAITLISTED when waitlist).
	RejectSoldOut(ctx context.Context, waitlist bool) (Answer, error)

	// OtherShard returns the first shard of the request's order, other than home,
	// not known empty; -1 when there is none.
	OtherShard(n, home int) int
	// Start starts the request under the delivery's lease, its claim on first when
	// it has no place yet (home and homeClear tell what its home shard may hold). A
	// start that lost its condition (neither Applied nor Missing) made the delivery's
	// result, as Failed does.
	Start(ctx context.Context, first, home int, homeClear bool, hold time.Duration) (Started, error)
	// KeepAlive keeps the message and the lease alive until stop.
	KeepAlive(ctx context.Context) (stop func())
	// Handle runs the service's handler, if any.
	Handle(ctx context.Context) error
	// ClaimSeat claims the request's seat under the lease and ends it with it.
	ClaimSeat(ctx context.Context) (Claimed, error)
	// MarkRejected ends the request under the lease, without a seat (WAITLISTED
	// when waitlist).
	MarkRejected(ctx context.Context, waitlist bool) (Answer, error)

	// Failed makes the result of an error: retried, or the request's final failure
	// (leased: under the delivery's lease). It returns Verdict{Outcome: Made}, as
	// do Mismatch and LostLease.
	Failed(ctx context.Context, err error, leased bool) Verdict
	// Mismatch makes the result of a message whose capacity shards (n) are not the
	// event's (got).
	Mismatch(ctx context.Context, n, got int) Verdict
	// LostLease makes the result of a delivery whose lease another took over.
	LostLease(ctx context.Context) Verdict
}

// Step is one delivery's step.
type Step struct {
	D         Delivery
	Seats     *seatcache.Shards // what the worker knows of the event's capacity shards
	EventID   string
	RequestID string
	Handler   bool             // the worker runs a Handler: no home claim
	Late      bool             // a ranked event's late arrival: no waitlist for it
	Clock     func() time.Time // the client's clock
	Logger    *slog.Logger
}

// home is what a delivery knows of its request's home shard.
type home struct {
	shard  int
	began  time.Time // when the step began
	looked bool      // the delivery read it
	leased bool      // the request goes the leased way: a lease holds it
	clear  bool      // no seat of the request is on it, nor can be: found empty without its token, or closed to it
	// hold is the event's EventSettings.HoldFor (0: no holds), as the home shard or the
	// config read for the home claim says, once holdKnown.
	hold      time.Duration
	holdKnown bool
}

// Settle runs the step: the home claim (without a Handler), and when that does not
// decide the request, which it does not for one an earlier delivery started, or for
// a home shard empty or refusing the claim for throughput, the leased way: start,
// the service's handler, the seat claim.
func (s *Step) Settle(ctx context.Context) Verdict {
	n, shard, err := s.D.Shards(ctx)
	if err != nil {
		return s.D.Failed(ctx, err, false)
	}
	h := home{shard: shard, began: s.Clock()}
	v, done := s.home(ctx, n, &h)
	if h.hold > 0 {
		s.D.SawHolds()
	}
	if done {
		return v
	}
	// The leased way: the event's holds from its config (the home shard's look, or
	// the home claim's read, told h already when they ran).
	hold := h.hold
	if !h.holdKnown {
		if hold, err = s.D.HoldFor(ctx); err != nil {
			return s.D.Failed(ctx, err, false)
		}
		if hold > 0 {
			s.D.SawHolds()
		}
	}
	first := h.shard
	if h.clear {
		if next := s.D.OtherShard(n, h.shard); next >= 0 {
			first = next
		}
	}
	st, err := s.D.Start(ctx, first, h.shard, h.clear, hold)
	switch {
	case err != nil:
		return s.D.Failed(ctx, err, false)
	case st.Missing:
		return Verdict{Outcome: NotFound}
	case !st.Applied:
		return Verdict{Outcome: Made}
	}
	stop := s.D.KeepAlive(ctx)
	defer stop()
	if err := s.D.Handle(ctx); err != nil {
		return s.D.Failed(ctx, err, true)
	}
	if !st.Inherited && s.soldOut(ctx) && !s.poolOpen(hold) {
		return s.reject(ctx, hold)
	}
	c, err := s.D.ClaimSeat(ctx)
	switch {
	case err != nil:
		return s.D.Failed(ctx, err, true)
	case c.SoldOut:
		return s.reject(ctx, hold)
	case !c.Applied:
		return s.D.LostLease(ctx)
	}
	return Verdict{Outcome: Won, Hold: hold}
}

// reject ends the request without a seat, under the delivery's lease.
func (s *Step) reject(ctx context.Context, hold time.Duration) Verdict {
	waitlist := s.D.Waitlists(ctx, hold)
	a, err := s.D.MarkRejected(ctx, waitlist)
	switch {
	case err != nil:
		return s.D.Failed(ctx, err, true)
	case !a.Applied && a.Current.Decided && a.Current.Ours:
		// Our own end, whose answer was lost.
		return Verdict{Outcome: Duplicate, Code: a.Current.ResultCode}
	case !a.Applied:
		return Verdict{Outcome: Left}
	case waitlist && !s.Late:
		return Verdict{Outcome: Waitlisted}
	}
	return Verdict{Outcome: Refused}
}

// home runs the part of the step that needs no lease: a look at the home shard when
// the worker knows it empty, knows the event sold out, or knows nothing of the event
// yet; then, without a Handler, the home claim. It reports whether it decided the
// request.
func (s *Step) home(ctx context.Context, n int, h *home) (v Verdict, done bool) {
	ev := s.EventID
	if s.D.WaveSeat() {
		// Its wave's write took its home seat (a home claim of it that won): bind it.
		cfg, err := s.D.Config(ctx)
		if err != nil {
			return s.D.Failed(ctx, err, false), true
		}
		h.hold, h.holdKnown = cfg.Hold, true
		return s.bind(ctx, n, h)
	}
	if s.newToEvent() || s.Seats.IsEmpty(ev, h.shard) || s.Seats.SoldOut(ev) {
		if v, done := s.lookHome(ctx, n, h); done || h.clear || h.leased {
			return v, done
		}
	}
	if s.Handler {
		return v, false
	}
	cfg, err := s.D.Config(ctx)
	if err != nil {
		return s.D.Failed(ctx, err, false), true
	}
	if cfg.Shards != n {
		return s.D.Mismatch(ctx, n, cfg.Shards), true
	}
	h.hold, h.holdKnown = cfg.Hold, true
	s.Seats.Know(ev, n, cfg.Empty)
	if !h.looked && s.Seats.IsEmpty(ev, h.shard) {
		// The config lists the home shard empty (or all): a read, not a failed write.
		if v, done := s.lookHome(ctx, n, h); done || h.clear || h.leased {
			return v, done
		}
	}
	res, sc, err := s.D.ClaimHome(ctx, n, h.shard)
	if err != nil {
		// Unanswered: the claim may still land, and the next delivery's claim on the
		// home shard finds it, or the request's end closes the shard to it first.
		return s.D.Failed(ctx, err, false), true
	}
	switch res {
	case seatclaim.Won, seatclaim.Held:
		v, done := s.bind(ctx, n, h)
		if sc.Emptied && n > 1 {
			s.D.ShardEmpty(ctx, h.shard, n, seatclaim.Always)
		}
		return v, done
	case seatclaim.Closed:
		h.clear = true // closed to the request by an earlier delivery: the leased way sorts it out
	case seatclaim.Empty:
		h.clear = true
		record := seatclaim.IfUnlisted
		if n == 1 {
			record = seatclaim.IfNew
		}
		s.D.ShardEmpty(ctx, h.shard, n, record)
		if sc.SoldOut {
			s.Seats.AllEmpty(ev, n)
		}
		s.Seats.LearnPool(ev, sc.PoolVersion)
		if s.soldOut(ctx) && !s.poolOpen(h.hold) {
			return s.rejectSoldOut(ctx, h.hold)
		}
	}
	return v, false // empty, closed, or refused for throughput: the leased claim goes on
}

// newToEvent reports whether the worker meets the event for the first time and its
// client holds no copy of the event's config: a worker new to the event, which learns
// more from the home shard (its seat, the sell-out's mark) than from the config.
func (s *Step) newToEvent() bool {
	return s.Seats.FirstLook(s.EventID) && !s.D.ConfigCached()
}

// lookHome reads the request's home shard: its seat there binds it; an empty shard
// clears it, and rejects it when the event is sold out.
func (s *Step) lookHome(ctx context.Context, n int, h *home) (v Verdict, done bool) {
	ev := s.EventID
	item, err := s.D.ReadShard(ctx, n, h.shard)
	if err != nil {
		return s.D.Failed(ctx, err, false), true
	}
	h.looked = true
	h.hold, h.holdKnown = item.Hold, true
	s.Seats.LearnPool(ev, item.PoolVersion)
	if item.HoldsSeat {
		v, done := s.bind(ctx, n, h)
		h.leased = !done
		return v, done
	}
	if item.Closed {
		h.clear = true // closed to the request by an earlier delivery: the leased way sorts it out
		return v, false
	}
	if item.Remaining > 0 {
		return v, false
	}
	h.clear = true
	if item.SoldOut || n == 1 {
		s.Seats.Add(ev, h.shard, n)
		s.Seats.AllEmpty(ev, n)
	} else {
		// Empty without the sell-out's mark: news to this worker is checked against
		// the event's emptyShards (at most once a second), and recorded there when a
		// record was lost, which completes the list and marks the sell-out.
		s.D.ShardEmpty(ctx, h.shard, n, seatclaim.IfUnlistedNow)
	}
	if s.soldOut(ctx) && !s.poolOpen(h.hold) {
		return s.rejectSoldOut(ctx, h.hold)
	}
	return v, false // the leased way: seats elsewhere, or on the pool
}

// poolOpen reports whether a request of a sold-out event without holds may still find
// a seat on the event's pool (seats an operator added, or a cancel gave back), as the
// capacity items the worker met say: it then goes the leased way, which claims there.
// An event with holds hands its pool to its waitlist instead.
func (s *Step) poolOpen(hold time.Duration) bool {
	return hold == 0 && s.Seats.PoolOpen(s.EventID, 0)
}

// bind ends a request whose seat is on its home shard with it, and reports whether
// that decided the request. A home claim wins only while no rule closed the home
// shard to the request, so its request is at home (RECEIVED, QUEUED, or PROCESSING
// claiming there: a live lease's holder finds the seat and ends it) or bound to that
// seat already; a request found otherwise is logged as an error and its seat left
// where it is (the event sells one fewer): a seat is never given back on the strength
// of a view of the request.
func (s *Step) bind(ctx context.Context, n int, h *home) (v Verdict, done bool) {
	a, err := s.D.Bind(ctx, n, h.shard, h.began, h.hold)
	if err == nil && a.Missing {
		// The seat is the request's, but its put has not landed (ingest sent the
		// message after a put whose answer was lost, and it may never land): the
		// request is written from the message at once, under a check that its
		// user's lock names it, and bound; so the seat is spent on no request only
		// if every receive dies between the claim and this put (the user's next
		// click, or the dead-letter queue's message sent back, then heals it). A
		// late put of ingest's fails its condition against this one.
		var named bool
		if named, err = s.D.PutRequest(ctx); err == nil && named {
			a, err = s.D.Bind(ctx, n, h.shard, h.began, h.hold)
		} else if err == nil {
			// No lock names the request: it will never be written (a message sent
			// without a participation). Its seat stays taken, for no one.
			s.Logger.ErrorContext(ctx, "a seat was taken for a message whose user's lock does not name its request: the seat stays unused",
				slog.String("requestId", s.RequestID), slog.String("eventId", s.EventID))
		}
	}
	switch {
	case err != nil:
		return s.D.Failed(ctx, err, false), true
	case a.Missing:
		return Verdict{Outcome: NotFound}, true
	case a.Applied:
		return Verdict{Outcome: Won, Hold: h.hold}, true
	}
	cur := a.Current
	atHome := cur.SeatShard == nil || *cur.SeatShard == h.shard
	if cur.Processing && atHome {
		// A live lease at home: its holder's claim there finds the seat, as does its
		// failure's close or a takeover's claim. Come back after it.
		left := time.UnixMilli(cur.LeaseExpiresAt).Sub(time.UnixMilli(s.Clock().UnixMilli()))
		return Verdict{Outcome: LeaseHeld, Delay: max(left+time.Second, time.Second)}, true
	}
	if !(cur.SeatShard != nil && *cur.SeatShard == h.shard && cur.BoundToSeat) {
		s.Logger.ErrorContext(ctx, "a request holds a seat on its home shard that its state does not account for: the seat stays unused",
			slog.String("requestId", s.RequestID), slog.String("status", cur.Status),
			slog.String("resultCode", cur.ResultCode), slog.Int("home", h.shard))
	}
	if !cur.Decided {
		h.leased = true
		return v, false // the leased way: the start takes the request over once its lease ran out
	}
	return Verdict{Outcome: Duplicate, Code: cur.ResultCode}, true
}

// rejectSoldOut ends a request of a sold-out event whose home shard holds no seat of
// it in one write (WAITLISTED with holds); it reports false when another delivery
// started the request.
func (s *Step) rejectSoldOut(ctx context.Context, hold time.Duration) (v Verdict, done bool) {
	waitlist := s.D.Waitlists(ctx, hold)
	a, err := s.D.RejectSoldOut(ctx, waitlist)
	switch {
	case err != nil:
		return s.D.Failed(ctx, err, false), true
	case a.Missing:
		return Verdict{Outcome: NotFound}, true
	case a.Applied && waitlist && !s.Late:
		return Verdict{Outcome: Waitlisted}, true
	case a.Applied:
		return Verdict{Outcome: Refused}, true
	case a.Current.Decided:
		return Verdict{Outcome: Duplicate, Code: a.Current.ResultCode}, true
	}
	return v, false // PROCESSING: the start sorts out which delivery holds it
}

// soldOut reports whether every capacity shard of the event is known empty: found so
// by this worker, or listed in the event's emptyShards as its cached config shows
// them (a worker new to the event learns a sell-out from one read of the config).
func (s *Step) soldOut(ctx context.Context) bool {
	ev := s.EventID
	if s.Seats.SoldOut(ev) {
		if s.Seats.HasUnrecorded(ev) { // a shard the CONFIG may lack
			s.D.HealEmpty(ctx)
		}
		return true
	}
	cfg, err := s.D.Config(ctx)
	if err != nil || len(cfg.Empty) == 0 {
		return false
	}
	s.Seats.Know(ev, cfg.Shards, cfg.Empty)
	return s.Seats.SoldOut(ev)
}
