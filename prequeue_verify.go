package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/asyncevent/asyncevent/internal/drawproof"
	"github.com/asyncevent/asyncevent/internal/drawrun"
)

// Verifying a pre-queue: anyone holding the DRAW record, its recorded entries and the
// requests can check that the seats went in the drawn order, no more than there were
// (VerifyPrequeue, internal/drawproof), whatever landed after the record.

// prequeueProof is an event's table as a pre-queue's verifier reads it
// (drawproof.PrequeueSource), under cfg, the event's config.
type prequeueProof struct {
	entryChunks
	cfg *eventItem
}

// Seat reads a request: GetItem PK REQ#<requestId>, SK META, strongly consistent.
func (s prequeueProof) Seat(ctx context.Context, id string) (drawproof.Seat, error) {
	r, err := s.c.getRequest(ctx, id, true)
	switch {
	case errors.Is(err, ErrNotFound):
		return drawproof.Seat{}, &drawrun.NotFoundError{Err: err}
	case err != nil:
		return drawproof.Seat{}, err
	}
	return s.cfg.seat(r), nil
}

// Sale reads the sale's clicks, queued at the start or later, from GSI2 (queueOrder).
func (s prequeueProof) Sale(ctx context.Context) ([]drawproof.Seat, error) {
	rows, err := s.c.queueOrder(ctx, s.cfg.EventID, s.cfg.prequeueUntil(), false)
	if err != nil {
		return nil, err
	}
	return s.cfg.seats(rows), nil
}

// seat is r as a pre-queue's verifier reads it, under the event's config cfg (a
// seat on the pool is the one after the shards).
func (cfg *eventItem) seat(r *storedRequest) drawproof.Seat {
	pool, final := max(cfg.CapacityShards, 1), r.Status.IsTerminal()
	return drawproof.Seat{RequestID: r.RequestID, Status: string(r.Status), Won: wonSeat(r),
		FromPool: cfg.HoldFor == 0 && r.SeatShard != nil && *r.SeatShard == pool,
		Refused:  r.Status == StatusRejected && r.ResultCode == ResultRejectedCapacity || r.Status == StatusWaitlisted,
		Final:    final, Decided: final || r.Status == StatusHeld || r.Status == StatusWaitlisted,
		Holding: r.Status == StatusSucceeded || r.Status == StatusHeld}
}

// seats are rows of GSI2 as a pre-queue's verifier reads them.
func (cfg *eventItem) seats(rows []drawEntry) []drawproof.Seat {
	seats := make([]drawproof.Seat, len(rows))
	for i, e := range rows {
		seats[i] = cfg.seat(e.stored())
	}
	return seats
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
	entries, err := c.prequeueEntries(ctx, cfg)
	if err != nil {
		return nil, err
	}
	served := record.Phase == PhaseAnnounced
	p, err := drawproof.VerifyPrequeue(ctx, prequeueProof{entryChunks{c: c, eventID: eventID}, cfg}, drawproof.Prequeue{
		Config: c.drawRun(eventID, drawrun.Lottery), Record: record.run(),
		Published: cfg.SeedCommitment, Recorded: record.SeedCommitment,
		Seats: cfg.CapacityTotal, Announced: served, OnTable: cfg.seats(entries),
	})
	if err != nil {
		return nil, err
	}
	return &PrequeueVerification{EventID: eventID, EntryCount: p.EntryCount, Order: p.Order, Winners: p.Winners,
		Late: p.Late, Problems: p.Problems, Served: served}, nil
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
