package asyncevent

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/asyncevent/asyncevent/draw"
	"github.com/asyncevent/asyncevent/internal/drawrun"
)

// Verifying a draw: anyone holding the DRAW record, its recorded entries and the
// requests can recompute the winners (VerifyDraw), whatever landed after the record.

// checkSeed checks the seed a draw or a pre-queue's freeze revealed against the
// commitment the event published, telling problem what differs, and returns it.
func checkSeed(cfg *eventItem, record *DrawRecord, problem func(format string, args ...any)) []byte {
	revealed, err := hex.DecodeString(record.Seed)
	if err != nil {
		problem("the revealed seed is not hex")
	}
	if got := seedCommitment(revealed); got != cfg.SeedCommitment || got != record.SeedCommitment {
		problem("SHA-256 of the revealed seed is %s, the published commitment %s", got, cfg.SeedCommitment)
	}
	return revealed
}

// verifiedSet reads back the set a draw or a pre-queue's freeze recorded, for a
// verifier: the recorded chunks, checked against the record's count and hash. When
// they cannot be read back as recorded (a chunk missing or altered), problem says so
// and the set is taken from onTable, the requests GSI2 shows (keep picks the
// entries), as is the set of a record from before the chunks, checked against the
// record's count and hash.
func (c *Client) verifiedSet(ctx context.Context, cfg *eventItem, record *DrawRecord, onTable []drawEntry, keep func(drawEntry) bool, problem func(format string, args ...any)) ([]string, error) {
	ids, err := c.recordedEntries(ctx, cfg.EventID, record)
	switch {
	case err == nil:
		return ids, nil
	case errors.Is(err, ErrDrawMismatch):
		problem("%v", err)
	case !errors.Is(err, errRecordedBefore):
		return nil, err
	}
	ids = nil
	for _, e := range onTable {
		if keep(e) {
			ids = append(ids, e.RequestID)
		}
	}
	if int64(len(ids)) != record.EntryCount {
		problem("%d entries on the table, the freeze recorded %d", len(ids), record.EntryCount)
	}
	if h := draw.EntriesHash(ids); h != record.EntriesHash {
		problem("the entries hash to %s, the freeze recorded %s", h, record.EntriesHash)
	}
	return ids, nil
}

// lateArrivals returns the requests of onTable that are not in the recorded set ids
// and that keep takes for what would have been entries: they reached the table after
// the record, and the record shows them absent.
func lateArrivals(ids []string, onTable []drawEntry, keep func(drawEntry) bool) []string {
	var kept []string
	for _, e := range onTable {
		if keep(e) {
			kept = append(kept, e.RequestID)
		}
	}
	return drawrun.Late(ids, kept)
}

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
	v := &Verification{EventID: eventID}
	problem := func(format string, args ...any) { v.Problems = append(v.Problems, fmt.Sprintf(format, args...)) }

	all, err := c.queueOrder(ctx, eventID, cfg.LotteryCutoffAt+1, true)
	if err != nil {
		return nil, err
	}
	ids, err := c.verifiedSet(ctx, cfg, record, all, drawEntry.isEntry, problem)
	if err != nil {
		return nil, err
	}
	revealed := checkSeed(cfg, record, problem)
	v.EntryCount = len(ids)
	v.Winners = draw.Winners(revealed, ids, int(record.WinnerCount))
	v.Late = lateArrivals(ids, all, func(e drawEntry) bool { return e.Status != StatusFailedFinal })
	if err := c.checkDrawnResults(ctx, cfg, record, v, ids, all, problem); err != nil {
		return nil, err
	}
	checkUnrecordedResults(ids, all, problem)
	return v, nil
}

// checkDrawnResults tells problem each recorded entry (ids) whose result is not the
// one the draw gives it, v.Winners having won: as GSI2 shows it (onTable) first, and,
// when that differs or GSI2 does not show it, as a strongly consistent read of the
// entry has it, which must be a request of v.EventID queued by its cutoff.
func (c *Client) checkDrawnResults(ctx context.Context, cfg *eventItem, record *DrawRecord, v *Verification, ids []string, onTable []drawEntry, problem func(format string, args ...any)) error {
	won := map[string]bool{}
	for _, id := range v.Winners {
		won[id] = true
	}
	byID := make(map[string]drawEntry, len(onTable))
	for _, e := range onTable {
		byID[e.RequestID] = e
	}
	for _, id := range ids {
		e, shown := byID[id]
		if p := drawnResultProblem(record.Phase, id, won[id], e.Status, e.ResultCode); shown && p == "" {
			continue
		}
		// GSI2 is read eventually consistent: the entry itself has the last word.
		r, err := c.getRequest(ctx, id, true)
		switch {
		case errors.Is(err, ErrNotFound):
			problem("recorded entry %s is not on the table", id)
			continue
		case err != nil:
			return err
		case r.EventID != v.EventID || r.QueuedAt == 0 || r.QueuedAt > cfg.LotteryCutoffAt:
			problem("recorded entry %s is no request of %s queued by its cutoff (event %s, queued at %d)", id, v.EventID, r.EventID, r.QueuedAt)
			continue
		}
		if p := drawnResultProblem(record.Phase, id, won[id], r.Status, r.ResultCode); p != "" {
			problem("%s", p)
		}
	}
	return nil
}

// drawnResultProblem says what is wrong with the status and code of entry id, which
// won or lost the draw, at the draw's phase; "" when nothing is. An entry still
// waiting is a problem only once the draw is announced.
func drawnResultProblem(phase UIPhase, id string, won bool, status Status, code ResultCode) string {
	waiting := status == StatusQueued || status == StatusReceived
	wantStatus, wantCode := drawnResult(won)
	switch {
	case waiting && phase == PhaseAnnounced:
		return fmt.Sprintf("entry %s has no result", id)
	case waiting:
	case won && (status != wantStatus || code != wantCode):
		return fmt.Sprintf("entry %s won but is %s (%s)", id, status, code)
	case !won && (status != wantStatus || code != wantCode):
		return fmt.Sprintf("entry %s lost but is %s (%s)", id, status, code)
	}
	return ""
}

// checkUnrecordedResults tells problem each request of onTable that the recorded
// entries (ids) do not name and that holds a result only the draw gives (SUCCEEDED,
// REJECTED_LOTTERY_LOSE).
func checkUnrecordedResults(ids []string, onTable []drawEntry, problem func(format string, args ...any)) {
	inRecord := make(map[string]bool, len(ids))
	for _, id := range ids {
		inRecord[id] = true
	}
	for _, e := range onTable {
		if inRecord[e.RequestID] {
			continue
		}
		if e.Status == StatusSucceeded || e.ResultCode == ResultLotteryLose {
			problem("request %s is %s (%s) but is not a recorded entry", e.RequestID, e.Status, e.ResultCode)
		}
	}
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
