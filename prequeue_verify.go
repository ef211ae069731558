package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/asyncevent/asyncevent/draw"
)

// Verifying a pre-queue: anyone holding the DRAW record, its recorded entries and the
// requests can check that the seats went in the drawn order, no more than there were
// (VerifyPrequeue), whatever landed after the record.

// checkServed holds the results of a served pre-queue's entries, each as state gives
// it, to its order: the winners, in the order, and the problems.
func (c *Client) checkServed(ctx context.Context, cfg *eventItem, record *DrawRecord, order, late []string, state func(string) (*storedRequest, error)) (winners, problems []string, err error) {
	problem := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	// A seat on the pool (added by an operator, or given back by a cancel) reached it
	// after the requests refused before were turned away: taking it breaks no order.
	// With holds, the pool serves the waitlist, in the drawn order.
	pool := max(cfg.CapacityShards, 1)
	fromPool := func(seat *int) bool { return cfg.HoldFor == 0 && seat != nil && *seat == pool }
	refused := "" // the first entry of the order refused for want of a seat
	for _, id := range order {
		r, err := state(id)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case wonSeat(r):
			winners = append(winners, id)
			if refused != "" && !fromPool(r.SeatShard) {
				problem("entry %s won a seat after entry %s, before it in the order, was refused", id, refused)
			}
		case r.Status == StatusRejected && r.ResultCode == ResultRejectedCapacity, r.Status == StatusWaitlisted:
			if refused == "" {
				refused = id
			}
		case !r.Status.IsTerminal() && record.Phase == PhaseAnnounced:
			problem("entry %s is %s after the pre-queue was served", id, r.Status)
		}
	}
	if refused != "" {
		// The late arrivals and the sale's clicks come after the drawn order.
		for _, id := range late {
			r, err := c.getRequest(ctx, id, true)
			if err != nil {
				return nil, nil, err
			}
			if wonSeat(r) && !fromPool(r.SeatShard) {
				problem("late arrival %s won a seat while entry %s was refused", id, refused)
			}
		}
		sale, err := c.queueOrder(ctx, cfg.EventID, cfg.prequeueUntil(), false)
		if err != nil {
			return nil, nil, err
		}
		for _, e := range sale {
			r := e.stored()
			if !r.Status.IsTerminal() && r.Status != StatusHeld && r.Status != StatusWaitlisted {
				// Undecided on GSI2, which is read eventually consistent: it may have
				// won a moment ago; the request itself says.
				if r, err = c.getRequest(ctx, e.RequestID, true); err != nil {
					return nil, nil, err
				}
			}
			if wonSeat(r) && !fromPool(r.SeatShard) {
				problem("click %s of the sale won a seat while entry %s was refused", e.RequestID, refused)
			}
		}
	}
	return winners, problems, nil
}

// checkSeated tells problem when more requests of the event hold a seat (SUCCEEDED
// or HELD) than it has seats (capacityTotal, seats added included): entries are the
// requests queued before the start, as GSI2 showed them; the sale's are read here.
// A count over the seats as GSI2 shows it is counted again from strongly consistent
// reads of the requests it counted, as the index may show a hold given back and its
// seat's next holder both HELD.
func (c *Client) checkSeated(ctx context.Context, cfg *eventItem, entries []drawEntry, problem func(format string, args ...any)) error {
	sale, err := c.queueOrder(ctx, cfg.EventID, cfg.prequeueUntil(), false)
	if err != nil {
		return err
	}
	var seated []string
	for _, e := range append(slices.Clone(entries), sale...) {
		if e.Status == StatusSucceeded || e.Status == StatusHeld {
			seated = append(seated, e.RequestID)
		}
	}
	if int64(len(seated)) <= cfg.CapacityTotal {
		return nil
	}
	n := 0
	for _, id := range seated {
		r, err := c.getRequest(ctx, id, true)
		if err != nil {
			return err
		}
		if r.Status == StatusSucceeded || r.Status == StatusHeld {
			n++
		}
	}
	if int64(n) > cfg.CapacityTotal {
		problem("%d requests hold a seat (SUCCEEDED or HELD), the event has %d", n, cfg.CapacityTotal)
	}
	return nil
}

// PrequeueVerification is what VerifyPrequeue found.
type PrequeueVerification struct {
	EventID    string
	EntryCount int
	Order      []string // recomputed from the revealed seed and the entries
	Winners    []string // the entries that won a seat, in the order
	// Late are the requests queued before the start that the record does not name
	// (their put reached the table after it), in queue order: no entries, each shown
	// absent from the recorded set; they join the sale's line after the drawn order.
	Late     []string
	Problems []string // empty when the pre-queue checks out
	// Served reports whether the serve is done (the pre-queue ANNOUNCED); before, the
	// entries not decided yet are no problem, and Winners are those so far.
	Served bool
}

// VerifyPrequeue re-checks a served pre-queue from what is on the table, as anyone
// holding the revealed seed and the entries could (draw.Order needs no table): the
// seed against the commitment the event published, the recorded entries (the chunks,
// PK EVENT#<eventId>#ENTRIES#<n>, SK SET#<entriesHash>, read strongly consistent)
// against the count and hash the freeze recorded, and the results against the order
// recomputed from them: the entries that won a seat are the first ones of the order
// (an entry whose enqueue failed, never in the running, is passed over), and neither a
// late arrival nor a click of the sale won while an entry was refused for want of a
// seat. The requests queued before the start that the record does not name are
// listed apart (PrequeueVerification.Late): they landed after the record, which
// still verifies. Each entry is read as GSI2 shows it, and again with a strongly
// consistent GetItem when that shows a problem. Each difference is one of Problems.
// A pre-queue not frozen yet is ErrDrawTooEarly.
func (c *Client) VerifyPrequeue(ctx context.Context, eventID string) (*PrequeueVerification, error) {
	cfg, err := c.getEvent(ctx, eventID)
	if err != nil {
		return nil, err
	}
	if cfg.prequeueUntil() == 0 {
		return nil, fmt.Errorf("%w: %s", ErrNoPrequeue, eventID)
	}
	record, err := c.getDraw(ctx, eventID)
	if err != nil {
		return nil, err
	}
	if record.Phase == PhaseCollecting || record.EntriesHash == "" {
		return nil, fmt.Errorf("%w: the pre-queue of %s has not been frozen", ErrDrawTooEarly, eventID)
	}
	v := &PrequeueVerification{EventID: eventID, Served: record.Phase == PhaseAnnounced}
	problem := func(format string, args ...any) { v.Problems = append(v.Problems, fmt.Sprintf(format, args...)) }
	entries, err := c.prequeueEntries(ctx, cfg)
	if err != nil {
		return nil, err
	}
	every := func(drawEntry) bool { return true }
	ids, err := c.verifiedSet(ctx, cfg, record, entries, every, problem)
	if err != nil {
		return nil, err
	}
	v.EntryCount = len(ids)
	v.Order = draw.Order(checkSeed(cfg, record, problem), ids)
	v.Late = lateArrivals(ids, entries, every)
	// The results as GSI2 shows them (eventually consistent) first; only when they
	// show a problem is every entry read again, strongly consistent, and that says.
	onIndex := make(map[string]*storedRequest, len(entries))
	for _, e := range entries {
		onIndex[e.RequestID] = e.stored()
	}
	shown := func(id string) (*storedRequest, error) {
		if r, ok := onIndex[id]; ok {
			return r, nil
		}
		return c.getRequest(ctx, id, true) // a recorded entry GSI2 does not show
	}
	winners, problems, err := c.checkServed(ctx, cfg, record, v.Order, v.Late, shown)
	if err == nil && len(problems) > 0 {
		winners, problems, err = c.checkServed(ctx, cfg, record, v.Order, v.Late, func(id string) (*storedRequest, error) { return c.getRequest(ctx, id, true) })
	}
	if errors.Is(err, ErrNotFound) {
		problem("a recorded entry is not on the table: %v", err)
		err = nil
	}
	if err == nil {
		err = c.checkSeated(ctx, cfg, entries, problem)
	}
	if err != nil {
		return nil, err
	}
	v.Winners, v.Problems = winners, append(v.Problems, problems...)
	return v, nil
}

// OK reports whether the pre-queue checks out.
func (v *PrequeueVerification) OK() bool { return len(v.Problems) == 0 }

// String is a human summary.
func (v *PrequeueVerification) String() string {
	late := ""
	if len(v.Late) > 0 {
		late = fmt.Sprintf(" (%d late arrivals, absent from the record: %s)", len(v.Late), strings.Join(v.Late, ", "))
	}
	if v.OK() && !v.Served {
		return fmt.Sprintf("pre-queue of %s verified so far (its serve is not done): %d entries, the first %d in the order won%s", v.EventID, v.EntryCount, len(v.Winners), late)
	}
	if v.OK() {
		return fmt.Sprintf("pre-queue of %s verified: %d entries, the first %d in the order won%s", v.EventID, v.EntryCount, len(v.Winners), late)
	}
	return fmt.Sprintf("pre-queue of %s does NOT verify: %s%s", v.EventID, strings.Join(v.Problems, "; "), late)
}
