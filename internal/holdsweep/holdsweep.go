// Package holdsweep is the hold sweep's algorithm: one pass over an event with holds
// ends the holds that ran out, hands the seats given back to the event's pool on to
// its waitlist (a pre-queue's entries in their drawn order first, then earliest
// first), and once the event has closed ends its waitlist. The pass decides what to
// read and in which order; every read and write is the Store's, and every write is
// conditional on the item it changes, so what the pass believes (its clock, the
// starting points it remembers, a lease it holds) decides only how much it reads and
// when, never whether a seat is spent: several passes at once are safe, only
// wasteful.
package holdsweep

import (
	"context"
	"sync"
	"time"
)

// Store is what a pass needs of the table, for one event. Each method is one row of
// the event's access patterns (or a page of one); a condition that fails is an
// outcome it reports, not an error.
type Store interface {
	// Lease reads who holds the event's sweep lease and until when (epoch ms), with
	// an eventually consistent read: an empty owner when none ever did.
	Lease(ctx context.Context) (owner string, until int64, err error)
	// TakeLease takes or renews the event's sweep lease for owner, for d from now,
	// in one conditional write, and reports false when another owner's lease is live.
	TakeLease(ctx context.Context, owner string, d time.Duration) (bool, error)

	// DueHolds returns the pages of the records of one capacity shard's holds that
	// ran out by by (epoch ms), earliest expiry first.
	DueHolds(shard int, by int64) (Pages[Hold], error)
	// Expire ends a hold that ran out and gives its seat back to the pool, in one
	// write conditional on the request holding this hold, and reports whether it did;
	// when it did not, the request as it stands (Final when there is none).
	Expire(ctx context.Context, h Hold) (expired bool, now Request, err error)
	// Clear deletes the record of a hold that is not its request's hold any more.
	Clear(ctx context.Context, h Hold) error

	// SeatsLeft reads the seats in the event's pool (strongly consistent): none when
	// no seat ever came back.
	SeatsLeft(ctx context.Context) (int64, error)
	// Queue returns the pages of the event's requests in queue order (queuedAt, then
	// ID), from just after after, or from the first when after is nil.
	Queue(after *Place) (Pages[Request], error)
	// Drawn calls f with the event's pre-queue entries in their drawn order and how
	// many at its head are settled for good, which f may raise: the store keeps it
	// between passes, and no other pass of this store's client runs f meanwhile. It
	// calls f only once the order is drawn, and reports what f reports (false before).
	Drawn(ctx context.Context, f func(order []string, settled *int) (bool, error)) (bool, error)
	// Request reads one request (strongly consistent).
	Request(ctx context.Context, id string) (Request, error)
	// Serve gives one seat of the pool to a waitlisted request as a hold, in one
	// write conditional on the request being waitlisted and on a seat being left; it
	// reports whether the request was served, or that no seat is left (gone).
	Serve(ctx context.Context, r Request) (served, gone bool, err error)
	// Close ends a waitlisted request of an event that closed, in one write
	// conditional on it being waitlisted, and reports whether it did.
	Close(ctx context.Context, r Request) (bool, error)
}

// Pages reads a list page by page: each call returns the next page of at most limit
// items, and whether more follow.
type Pages[T any] func(ctx context.Context, limit int) (page []T, more bool, err error)

// Hold is the record of a hold, as a shard's holds list it.
type Hold struct {
	PK, SK    string // the record's key, for Clear
	EventID   string
	RequestID string
	ExpiresAt int64 // when the hold runs out (epoch ms)
}

// State is where a request stands for the waitlist.
type State int

// The states of a request.
const (
	Pending    State = iota // not decided yet: received, queued or being processed
	Waitlisted              // waits for a seat given back
	Held                    // holds a seat: never waitlisted again
	Final                   // ended: never changes again
)

// Request is what a pass reads of a request.
type Request struct {
	ID            string
	State         State
	QueuedAt      int64 // epoch ms
	HoldExpiresAt int64 // when its hold runs out (epoch ms), while Held
}

// settled reports whether r never waits for a seat again.
func (r *Request) settled() bool { return r.State == Final || r.State == Held }

// Place is a request's place in queue order.
type Place struct {
	QueuedAt  int64 // epoch ms
	RequestID string
}

// Event is what a pass knows of its event, from its config.
type Event struct {
	ID        string
	Shards    int   // capacity shards, each with a partition of holds; 0 is 1
	Prequeue  bool  // it opens with a pre-queue, whose entries are served in drawn order
	Announced bool  // its pre-queue was served: the sale's waitlist comes after it
	EndsAt    int64 // when it closes (epoch ms); 0: never
}

// Pass configures one pass.
type Pass struct {
	Event     Event
	MaxWrites int // the requests the pass moves at most: expired, cleared, served, closed
	// Owner, if set, makes the pass hold the event's sweep lease for LeaseFor first,
	// and do nothing while another owner's lease is live.
	Owner    string
	LeaseFor time.Duration
	Clock    func() time.Time
	// Starts holds, by event ID, where the walks of the waitlist of the pass's client
	// begin; the client keeps it between passes. Its values are this package's.
	Starts *sync.Map
}

// Report is what one pass did.
type Report struct {
	Expired, Served, Closed, Cleared int
	Waiting                          int64 // seats left in the pool with no one served
	More                             bool  // MaxWrites was reached: the pass stopped short
	Skipped                          bool  // another owner holds the sweep lease: nothing was done
	LeaseUntil                       int64 // Skipped: when the other owner's lease runs out, as read (epoch ms)
}

// Run runs one pass over st's event: the lease (when p.Owner is set), the holds that
// ran out on each shard, then the waitlist: served from the pool while the event is
// open, closed once it has ended.
func Run(ctx context.Context, st Store, p Pass) (*Report, error) {
	if p.Owner != "" {
		held, until, err := lease(ctx, st, p)
		if err != nil || !held {
			return &Report{Skipped: !held, LeaseUntil: until}, err
		}
	}
	s := &sweep{st: st, p: p, budget: p.MaxWrites, report: &Report{}}
	if err := s.expire(ctx); err != nil {
		return s.report, err
	}
	var err error
	if closed := p.Event.EndsAt != 0 && p.Clock().UnixMilli() > p.Event.EndsAt; closed {
		err = s.close(ctx)
	} else {
		err = s.serve(ctx)
	}
	s.report.More = s.budget <= 0
	return s.report, err
}

// sweep is one pass.
type sweep struct {
	st     Store
	p      Pass
	budget int
	report *Report
}

// lease reports whether p.Owner holds the event's sweep lease for this pass: it skips
// while another owner's lease is live, goes on without a write while its own has more
// than half of p.LeaseFor left, and takes or renews it otherwise. So the owners that
// do not hold it read once a pass, and the one that does writes once every half lease.
func lease(ctx context.Context, st Store, p Pass) (held bool, othersUntil int64, err error) {
	owner, until, err := st.Lease(ctx)
	if err != nil {
		return false, 0, err
	}
	now := p.Clock().UnixMilli()
	switch {
	case owner != p.Owner && until > now:
		return false, until, nil
	case owner == p.Owner && time.Duration(until-now)*time.Millisecond > p.LeaseFor/2:
		return true, 0, nil
	}
	held, err = st.TakeLease(ctx, p.Owner, p.LeaseFor)
	return held, 0, err
}
