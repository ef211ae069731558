package seatclaim

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/asyncevent/asyncevent/internal/seatcache"
)

// Walk is what a claim's walk over its event's seat places knows of its request and
// the event.
type Walk struct {
	RequestID string
	EventID   string
	Shards    int   // the event's capacity shards: place Shards is its pool
	Home      int   // the request's home shard
	Order     []int // the shards in the order the request tries them, its home first
	// Holds: the event has holds. The seats of its pool go to its waitlist, never to
	// a claim.
	Holds  bool
	Seats  *seatcache.Shards // what the worker knows of the event's shards and pool
	Logger *slog.Logger
}

// End is how a walk ended.
type End int

// The ends of a walk.
const (
	Failed        End = iota // an error ended it
	Seated                   // it took the request's seat (Store.Take; its error, if any, is returned)
	SoldOut                  // no seat is left for the request: every place is empty or closed to it
	Unmoved                  // a move was not applied (the lease is lost) or failed (its error is returned)
	ShardsRefused            // every shard with seats refused the claim for throughput
	PoolRefused              // the pool refused the claim for throughput
)

// walk is one Run: the shards tried, and what they answered.
type walk struct {
	*Walk
	st      Store
	c       *Claim
	passed  map[int]bool // the shards this walk tried
	refused bool         // a shard with seats refused the claim for throughput
	// reopen are shards closed to the request at the epoch it met them with, seats
	// left on them: the claim comes back to one at a later epoch, which no claim sent
	// before can use, rather than refuse the request while they hold seats.
	reopen []int
}

// Run claims a seat for c's request, with what w.Seats knows of the event's shards,
// and tells w.Seats what it finds: it claims on c's place and, while a place is
// empty, closed to the request, or refuses it for throughput, moves the claim (under
// the lease) to the next shard with seats, then to the event's pool. c's place is a
// shard or the pool.
func (w *Walk) Run(ctx context.Context, st Store, c *Claim) (End, error) {
	s := &walk{Walk: w, st: st, c: c, passed: map[int]bool{}}
	if err := s.closeHomeOfAnOlderVersion(ctx); err != nil {
		return Failed, s.failed(err)
	}
	for {
		if c.Place == w.Shards {
			return s.claimPool(ctx)
		}
		res, err := s.tryShard(ctx)
		if err != nil {
			return Failed, s.failed(err)
		}
		if res == Won || res == Held {
			return s.take(ctx)
		}
		s.note(ctx, res)
		next, end := s.next()
		if next < 0 {
			return end, nil
		}
		held, err := s.leave(ctx, res)
		switch {
		case err != nil:
			return Failed, s.failed(err)
		case held:
			return s.take(ctx)
		}
		if moved, err := st.Move(ctx, next, c.Epoch, c.Epoch+1); err != nil || !moved {
			return Unmoved, err
		}
		c.moveTo(next, c.Epoch+1)
	}
}

func (s *walk) failed(err error) error {
	return fmt.Errorf("claim seat %s: %w", s.RequestID, err)
}

// closeHomeOfAnOlderVersion closes the home shard at epoch 0 to a request taken over
// off its home shard at epoch 0: a worker of a version before epochs moved such a
// request off its home shard without closing it (it fenced with time), so a claim
// without a lease may still take a seat there. When the close finds the request's
// seat there, the claim moves back to the home shard (at the next epoch) and takes
// it. (A request of this version started off its home shard only once the home shard
// was clear: the close is then one more write on a takeover, and finds nothing.)
func (s *walk) closeHomeOfAnOlderVersion(ctx context.Context) error {
	c := s.c
	if !c.Inherited || c.Place == s.Home || c.Epoch != EpochNone {
		return nil
	}
	held, err := Close(ctx, s.st, s.Home, EpochNone, LeaveCloseTries)
	if err != nil || !held {
		return s.closing(s.Home, err)
	}
	// Leaving its place for the home shard: that place is closed to the request first.
	if heldThere, err := Close(ctx, s.st, c.Place, c.Epoch, LeaveCloseTries); err != nil || heldThere {
		if heldThere {
			s.Logger.ErrorContext(ctx, "a request taken over holds a seat on its place and one on its home shard (an older version's claims): the home one stays unused",
				slog.String("requestId", s.RequestID), slog.Int("home", s.Home), slog.Int("seatShard", c.Place))
		}
		return s.closing(c.Place, err)
	}
	s.Logger.WarnContext(ctx, "a request taken over off its home shard holds a seat there (an older version's claim): the claim moves back to it",
		slog.String("requestId", s.RequestID), slog.Int("home", s.Home), slog.Int("seatShard", c.Place))
	moved, err := s.st.Move(ctx, s.Home, c.Epoch, c.Epoch+1)
	switch {
	case err != nil:
		return err
	case !moved:
		return fmt.Errorf("the lease of %s was taken over", s.RequestID)
	}
	c.moveTo(s.Home, c.Epoch+1)
	return nil
}

// closing names the place of a close that failed and the request; nil stays nil.
func (s *walk) closing(place int, err error) error {
	if err == nil {
		return nil
	}
	item, request := s.st.Name(place)
	return fmt.Errorf("close %s to %s: %w", item, request, err)
}

// tryShard claims on the claim's shard, unless the shard is known empty and no claim
// of the request may be on it already.
func (s *walk) tryShard(ctx context.Context) (Outcome, error) {
	c := s.c
	s.passed[c.Place] = true
	if !c.Inherited && s.Seats.IsEmpty(s.EventID, c.Place) {
		return Empty, nil
	}
	return ClaimOn(ctx, s.st, c)
}

// take ends the walk with the seat the request holds.
func (s *walk) take(ctx context.Context) (End, error) {
	err := s.st.Take(ctx)
	if s.c.Emptied && s.Shards > 1 {
		// The last seat of a shard: the workers that have not met it learn from the
		// event that it is empty, so a sell-out costs a worker new to the event one
		// read rather than a failed write per shard. (With one shard that failed write
		// is a single one per worker: no record.)
		s.st.ShardEmpty(ctx, s.c.Place, Always)
	}
	return Seated, err
}

// note records what the claim met on its shard, other than a seat.
func (s *walk) note(ctx context.Context, res Outcome) {
	c := s.c
	switch res {
	case Empty:
		// With capacity shards the claim that took the shard's last seat records it:
		// the workers that meet it empty after that record it only when the event's
		// list, read at most once a second, still lacks it (that record lost), or the
		// event's item would take a write per shard and worker at the sell-out, all at
		// once.
		how := IfUnlisted
		if s.Shards == 1 {
			how = IfNew
		}
		s.st.ShardEmpty(ctx, c.Place, how)
		s.Seats.LearnPool(s.EventID, c.PoolVersion)
		if c.SoldOut {
			s.Seats.AllEmpty(s.EventID, s.Shards)
		}
	case Refused:
		s.refused = true
	case Closed:
		if c.SeatsMet > 0 {
			s.reopen = append(s.reopen, c.Place)
		}
	}
}

// next picks the place the claim moves to: the next shard of its order not known
// empty and not tried, else one it found closed to it with seats left (at the next
// epoch), else the pool when it may hold seats. When there is none (next < 0) the
// walk ends: refused for throughput while a shard holds seats, or sold out (the place
// the claim stands on is empty or closed to it, as is its home).
func (s *walk) next() (next int, end End) {
	next = s.Seats.Next(s.EventID, s.Order, s.Shards, s.passed)
	switch {
	case next >= 0:
		return next, 0
	case len(s.reopen) > 0:
		next, s.reopen = s.reopen[0], s.reopen[1:]
		return next, 0
	case s.refused:
		return -1, ShardsRefused
	case s.Seats.PoolOpen(s.EventID, s.c.PoolVersion) && !s.Holds:
		// Every shard is empty; the event's pool may hold seats an operator added or
		// a cancel gave back: the claim moves there, under the lease.
		return s.Shards, 0
	}
	return -1, SoldOut
}

// leave makes sure that no claim of the request lands on the place the walk leaves:
// a shard found empty takes none, nor does a place closed to the request already; a
// shard that refused this delivery's claims for throughput, each a definite answer,
// holds none of them, unless an earlier delivery's (or one without a lease on the
// home shard) may be there (inherited): then the place is closed to the request. held
// reports that its seat is there after all.
func (s *walk) leave(ctx context.Context, res Outcome) (held bool, err error) {
	c := s.c
	if res != Refused || !c.Inherited {
		return false, nil
	}
	held, err = Close(ctx, s.st, c.Place, c.Epoch, LeaveCloseTries)
	return held, s.closing(c.Place, err)
}

// claimPool claims a seat on the event's pool under the claim's lease (the claim's
// place is the pool already), and takes it. A pool found empty is closed to the
// request before the request is refused: it may get seats again (an add, a cancel),
// and no claim of the request sent before may take one then.
func (s *walk) claimPool(ctx context.Context) (End, error) {
	c := s.c
	for {
		res, err := ClaimOn(ctx, s.st, c)
		if err != nil {
			return Failed, s.onThePool(err)
		}
		switch res {
		case Won, Held:
			return Seated, s.st.Take(ctx)
		case Refused:
			return PoolRefused, nil
		case Closed:
			// An earlier delivery found the pool empty and closed it, then ended
			// before the request did: the pool may have seats again, for a claim at
			// the next epoch.
			if moved, err := s.st.Move(ctx, s.Shards, c.Epoch, c.Epoch+1); err != nil || !moved {
				return Unmoved, err
			}
			c.moveTo(s.Shards, c.Epoch+1)
			continue
		}
		held, err := Close(ctx, s.st, c.Place, c.Epoch, LeaveCloseTries)
		switch {
		case err != nil:
			return Failed, s.onThePool(err)
		case held:
			return Seated, s.st.Take(ctx)
		}
		s.Seats.PoolDry(s.EventID, c.PoolVersion)
		return SoldOut, nil
	}
}

func (s *walk) onThePool(err error) error {
	return fmt.Errorf("claim seat %s on the pool: %w", s.RequestID, err)
}
