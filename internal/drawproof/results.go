package drawproof

import (
	"context"
	"errors"
	"fmt"

	"github.com/asyncevent/asyncevent/internal/drawrun"
)

// checkResults tells problem each recorded entry (ids) whose result is not the one
// the draw gives it, winners having won: as GSI2 shows it (l.OnTable) first, and,
// when that differs or GSI2 does not show it, as a strongly consistent read of the
// entry has it, which must be a request of the event queued by its cutoff.
func checkResults(ctx context.Context, src drawrun.Requests, l Lottery, winners, ids []string, problem Problem) error {
	won := make(map[string]bool, len(winners))
	for _, id := range winners {
		won[id] = true
	}
	byID := make(map[string]drawrun.Entry, len(l.OnTable))
	for _, e := range l.OnTable {
		byID[e.RequestID] = e.Entry
	}
	for _, id := range ids {
		e, shown := byID[id]
		if p := resultProblem(l.Announced, id, won[id], e); shown && p == "" {
			continue
		}
		// GSI2 is read eventually consistent: the entry itself has the last word.
		r, err := src.Request(ctx, id)
		var missing *drawrun.NotFoundError
		switch {
		case errors.As(err, &missing):
			problem("recorded entry %s is not on the table", id)
			continue
		case err != nil:
			return err
		case r.EventID != l.Config.EventID || r.QueuedAt == 0 || r.QueuedAt > l.Cutoff:
			problem("recorded entry %s is no request of %s queued by its cutoff (event %s, queued at %d)", id, l.Config.EventID, r.EventID, r.QueuedAt)
			continue
		}
		if p := resultProblem(l.Announced, id, won[id], r); p != "" {
			problem("%s", p)
		}
	}
	return nil
}

// resultProblem says what is wrong with entry e (id), which won or lost the draw;
// "" when nothing is. An entry still waiting is a problem only once the draw is
// announced.
func resultProblem(announced bool, id string, won bool, e drawrun.Entry) string {
	switch {
	case e.State == drawrun.Waiting && announced:
		return fmt.Sprintf("entry %s has no result", id)
	case e.State == drawrun.Waiting:
	case won && e.State != drawrun.Won:
		return fmt.Sprintf("entry %s won but is %s (%s)", id, e.Status, e.ResultCode)
	case !won && e.State != drawrun.Lost:
		return fmt.Sprintf("entry %s lost but is %s (%s)", id, e.Status, e.ResultCode)
	}
	return ""
}

// checkUnrecorded tells problem each request of onTable that the recorded entries
// (ids) do not name and that holds a result only the draw gives.
func checkUnrecorded(ids []string, onTable []Row, problem Problem) {
	inRecord := make(map[string]bool, len(ids))
	for _, id := range ids {
		inRecord[id] = true
	}
	for _, e := range onTable {
		if !inRecord[e.RequestID] && e.DrawnResult {
			problem("request %s is %s (%s) but is not a recorded entry", e.RequestID, e.Status, e.ResultCode)
		}
	}
}
