package drawproof

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/asyncevent/asyncevent/draw"
	"github.com/asyncevent/asyncevent/internal/drawrun"
)

// Seat is a request of a first-come event as a pre-queue's verifier reads it: a row
// of GSI2, or the request item.
type Seat struct {
	RequestID string
	Status    string // as read, for the problems' text
	// Won: the request won a seat, whatever became of it since (held, confirmed,
	// released, expired, cancelled).
	Won bool
	// FromPool: the seat it won is the pool's, and the event has no holds. A seat on
	// the pool (added by an operator, or given back by a cancel) reached it after the
	// requests refused before were turned away: taking it breaks no order. With
	// holds, the pool serves the waitlist, in the drawn order.
	FromPool bool
	// Refused: turned away for want of a seat (REJECTED_CAPACITY), or WAITLISTED.
	Refused bool
	// Final: the status never changes again; Decided: final, HELD or WAITLISTED.
	Final, Decided bool
	// Holding: the request holds a seat now (SUCCEEDED or HELD).
	Holding bool
}

// PrequeueSource is the event's table as a pre-queue's verifier reads it: the
// chunks of the recorded set, the requests one by one, the sale's clicks.
type PrequeueSource interface {
	drawrun.Chunks
	// Seat reads a request strongly consistent; one not on the table is a
	// *drawrun.NotFoundError.
	Seat(ctx context.Context, id string) (Seat, error)
	// Sale reads the sale's clicks (queued at the start or later) from GSI2, in
	// queue order.
	Sale(ctx context.Context) ([]Seat, error)
}

// Prequeue is a frozen pre-queue of a FIRST_COME event as its verifier reads it.
type Prequeue struct {
	// Config is the run's configuration the recorded set is read back under.
	Config drawrun.Config
	// Record is the Draw record: its revealed seed and recorded set.
	Record drawrun.Record
	// Published and Recorded are the seed's commitments, the config's and the Draw
	// record's.
	Published, Recorded string
	Seats               int64 // capacityTotal, seats added included
	// Announced: the pre-queue was served, so every entry must be decided.
	Announced bool
	// OnTable are the requests queued before the start as GSI2 shows them, in queue
	// order.
	OnTable []Seat
}

// PrequeueVerification is what VerifyPrequeue found.
type PrequeueVerification struct {
	EntryCount int
	Order      []string
	Winners    []string
	Late       []string
	Problems   []string
}

// VerifyPrequeue re-checks a frozen pre-queue p: the recorded set (Set) against the
// requests GSI2 shows, the revealed seed against its commitments, the results
// against the order recomputed from them (checkServed), as GSI2 shows them first
// and, when that shows a problem, as strongly consistent reads have them, and the
// seats held against the event's (checkSeated). The requests queued before the
// start that the set does not name are listed apart (Late).
func VerifyPrequeue(ctx context.Context, src PrequeueSource, p Prequeue) (*PrequeueVerification, error) {
	v := &PrequeueVerification{}
	problem := func(format string, args ...any) { v.Problems = append(v.Problems, fmt.Sprintf(format, args...)) }
	var onTable []string
	onIndex := make(map[string]Seat, len(p.OnTable))
	for _, e := range p.OnTable {
		onTable = append(onTable, e.RequestID)
		onIndex[e.RequestID] = e
	}
	ids, err := Set(ctx, src, p.Config, p.Record, onTable, problem)
	if err != nil {
		return nil, err
	}
	v.EntryCount = len(ids)
	v.Order = draw.Order(Seed(p.Record.Seed, p.Published, p.Recorded, problem), ids)
	v.Late = drawrun.Late(ids, onTable)
	// The results as GSI2 shows them (eventually consistent) first; only when they
	// show a problem is every entry read again, strongly consistent, and that says.
	shown := func(ctx context.Context, id string) (Seat, error) {
		if r, ok := onIndex[id]; ok {
			return r, nil
		}
		return src.Seat(ctx, id) // a recorded entry GSI2 does not show
	}
	winners, problems, err := checkServed(ctx, src, p, v.Order, v.Late, shown)
	if err == nil && len(problems) > 0 {
		winners, problems, err = checkServed(ctx, src, p, v.Order, v.Late, src.Seat)
	}
	var missing *drawrun.NotFoundError
	if errors.As(err, &missing) {
		problem("a recorded entry is not on the table: %v", err)
		err = nil
	}
	if err == nil {
		err = checkSeated(ctx, src, p, problem)
	}
	if err != nil {
		return nil, err
	}
	v.Winners, v.Problems = winners, append(v.Problems, problems...)
	return v, nil
}

// checkServed holds the results of a served pre-queue's entries, each as state gives
// it, to its order: the winners, in the order, and the problems.
func checkServed(ctx context.Context, src PrequeueSource, p Prequeue, order, late []string, state func(context.Context, string) (Seat, error)) (winners, problems []string, err error) {
	problem := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	refused := "" // the first entry of the order refused for want of a seat
	for _, id := range order {
		r, err := state(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case r.Won:
			winners = append(winners, id)
			if refused != "" && !r.FromPool {
				problem("entry %s won a seat after entry %s, before it in the order, was refused", id, refused)
			}
		case r.Refused:
			if refused == "" {
				refused = id
			}
		case !r.Final && p.Announced:
			problem("entry %s is %s after the pre-queue was served", id, r.Status)
		}
	}
	if refused != "" {
		if err := checkAfterOrder(ctx, src, late, refused, problem); err != nil {
			return nil, nil, err
		}
	}
	return winners, problems, nil
}

// checkAfterOrder tells problem each late arrival and each click of the sale that
// won a seat (not the pool's) while entry refused was refused: they come after the
// drawn order.
func checkAfterOrder(ctx context.Context, src PrequeueSource, late []string, refused string, problem Problem) error {
	for _, id := range late {
		r, err := src.Seat(ctx, id)
		if err != nil {
			return err
		}
		if r.Won && !r.FromPool {
			problem("late arrival %s won a seat while entry %s was refused", id, refused)
		}
	}
	sale, err := src.Sale(ctx)
	if err != nil {
		return err
	}
	for _, e := range sale {
		r := e
		if !r.Decided {
			// Undecided on GSI2, which is read eventually consistent: it may have
			// won a moment ago; the request itself says.
			if r, err = src.Seat(ctx, e.RequestID); err != nil {
				return err
			}
		}
		if r.Won && !r.FromPool {
			problem("click %s of the sale won a seat while entry %s was refused", e.RequestID, refused)
		}
	}
	return nil
}

// checkSeated tells problem when more requests of the event hold a seat (SUCCEEDED
// or HELD) than it has seats (p.Seats): p.OnTable are the requests queued before
// the start, as GSI2 showed them; the sale's are read here. A count over the seats
// as GSI2 shows it is counted again from strongly consistent reads of the requests
// it counted, as the index may show a hold given back and its seat's next holder
// both HELD.
func checkSeated(ctx context.Context, src PrequeueSource, p Prequeue, problem Problem) error {
	sale, err := src.Sale(ctx)
	if err != nil {
		return err
	}
	var seated []string
	for _, e := range append(slices.Clone(p.OnTable), sale...) {
		if e.Holding {
			seated = append(seated, e.RequestID)
		}
	}
	if int64(len(seated)) <= p.Seats {
		return nil
	}
	n := 0
	for _, id := range seated {
		r, err := src.Seat(ctx, id)
		if err != nil {
			return err
		}
		if r.Holding {
			n++
		}
	}
	if int64(n) > p.Seats {
		problem("%d requests hold a seat (SUCCEEDED or HELD), the event has %d", n, p.Seats)
	}
	return nil
}
