package asyncevent

import (
	"context"
	"fmt"
	"strings"

	"github.com/asyncevent/asyncevent/internal/drawproof"
	"github.com/asyncevent/asyncevent/internal/drawrun"
)

// Verifying a draw: anyone holding the DRAW record, its recorded entries and the
// requests can recompute the winners (VerifyDraw, internal/drawproof), whatever
// landed after the record.

// Verification is what VerifyDraw found.
type Verification struct {
	EventID    string
	EntryCount int
	Winners    []string // recomputed from the revealed seed and the recorded entries
	// Late are the requests queued by the cutoff whose put reached the table after
	// the draw recorded its entries: absent from the recorded set, so no entries of
	// the draw; each ends REJECTED_NOT_DRAWN. They are no problem of the draw.
	Late     []string
	Problems []string // empty when the draw checks out
}

// VerifyDraw re-checks a drawn lottery from what is on the table, as anyone holding
// the revealed seed and the entry list could, without a seed source: the seed
// against the commitment the config published; the recorded entries (the chunks, PK
// EVENT#<eventId>#ENTRIES#<n>, SK SET#<entriesHash>, read strongly consistent)
// against the count and hash the Draw record holds; every recorded entry's result,
// as GSI2 shows it, against the winners recomputed from the seed and the recorded
// entries (draw.Winners), an entry whose result differs (or that GSI2 does not show)
// being read again with a strongly consistent GetItem before it is reported; and no
// request the record does not name holding a result only the draw gives
// (SUCCEEDED, REJECTED_LOTTERY_LOSE). The requests queued by the cutoff that are not
// in the record and did not fail are listed apart (Verification.Late): they landed
// after the record, which still verifies. Each difference is one of
// Verification.Problems. A draw whose entries are not recorded yet is
// ErrDrawTooEarly.
func (c *Client) VerifyDraw(ctx context.Context, eventID string) (*Verification, error) {
	cfg, err := c.getEvent(ctx, eventID)
	if err != nil {
		return nil, err
	}
	record, err := c.getDraw(ctx, eventID)
	if err != nil {
		return nil, err
	}
	if record.Phase == PhaseCollecting || record.EntriesHash == "" {
		return nil, fmt.Errorf("%w: %s has not been drawn", ErrDrawTooEarly, eventID)
	}
	all, err := c.queueOrder(ctx, eventID, cfg.LotteryCutoffAt+1, true)
	if err != nil {
		return nil, err
	}
	rows := make([]drawproof.Row, len(all))
	for i, e := range all {
		rows[i] = drawproof.Row{Entry: e.run(), Failed: e.Status == StatusFailedFinal,
			DrawnResult: e.Status == StatusSucceeded || e.ResultCode == ResultLotteryLose}
	}
	p, err := drawproof.Verify(ctx, &drawStore{c: c, cfg: cfg}, drawproof.Lottery{
		Config: c.drawRun(eventID, drawrun.Lottery), Record: record.run(), OnTable: rows,
		Published: cfg.SeedCommitment, Recorded: record.SeedCommitment, WinnerCount: int(record.WinnerCount),
		Cutoff: int64(cfg.LotteryCutoffAt), Announced: record.Phase == PhaseAnnounced,
	})
	if err != nil {
		return nil, err
	}
	return &Verification{EventID: eventID, EntryCount: p.EntryCount, Winners: p.Winners, Late: p.Late, Problems: p.Problems}, nil
}

// OK reports whether the draw checks out.
func (v *Verification) OK() bool { return len(v.Problems) == 0 }

// String is a human summary.
func (v *Verification) String() string {
	late := ""
	if len(v.Late) > 0 {
		late = fmt.Sprintf(" (%d late arrivals, absent from the record: %s)", len(v.Late), strings.Join(v.Late, ", "))
	}
	if v.OK() {
		return fmt.Sprintf("draw of %s verified: %d entries, %d winners%s", v.EventID, v.EntryCount, len(v.Winners), late)
	}
	return fmt.Sprintf("draw of %s does NOT verify: %s%s", v.EventID, strings.Join(v.Problems, "; "), late)
}
