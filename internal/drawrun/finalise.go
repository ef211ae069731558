package drawrun

import (
	"context"
	"errors"
	"fmt"
)

// Finalise writes the result of each entry a lottery recorded, winners the draw's
// winners among them, Concurrency at a time: an entry GSI2 did not show is read
// again, strongly consistent, and must be a request of the event queued by the
// cutoff. Then it answers the requests that are not in the record and still wait:
// those queued by the cutoff (their put landed after the record) end not drawn, those
// queued after it closed. Run again, it finds the finalised entries final with the
// same results and finishes the rest.
func Finalise(ctx context.Context, st Results, cfg Config, o *Opened, winners []string) error {
	won := make(map[string]bool, len(winners))
	for _, id := range winners {
		won[id] = true
	}
	inRecord := make(map[string]bool, len(o.IDs))
	for _, id := range o.IDs {
		inRecord[id] = true
	}
	byID := make(map[string]Entry, len(o.OnTable))
	for _, e := range o.OnTable {
		byID[e.RequestID] = e
	}
	late, err := st.QueuedFrom(ctx, o.Before)
	if err != nil {
		return err
	}
	var jobs []func() error
	for _, id := range o.IDs {
		jobs = append(jobs, func() error {
			e, ok := byID[id]
			if !ok {
				var err error
				if e, err = recordedEntry(ctx, st, cfg, o.Before, id); err != nil {
					return err
				}
			}
			return st.Finalise(ctx, e, won[id])
		})
	}
	for _, e := range o.OnTable {
		if !inRecord[e.RequestID] && e.State == Waiting {
			jobs = append(jobs, func() error { return st.NotDrawn(ctx, e.RequestID) })
		}
	}
	for _, e := range late {
		if e.State == Waiting {
			jobs = append(jobs, func() error { return st.Close(ctx, e.RequestID) })
		}
	}
	if err := each(ctx, cfg.Concurrency, len(jobs), func(i int) error { return jobs[i]() }); err != nil {
		return fmt.Errorf("draw %s: entries not finalised, run Draw again: %w", cfg.EventID, err)
	}
	return nil
}

// recordedEntry reads a recorded entry that GSI2 did not show, strongly consistent:
// one gone from the table, or that is no request of the event queued before the
// bound, wraps Config.Mismatch.
func recordedEntry(ctx context.Context, st Requests, cfg Config, before int64, id string) (Entry, error) {
	e, err := st.Request(ctx, id)
	var gone *NotFoundError
	switch {
	case errors.As(err, &gone):
		return Entry{}, fmt.Errorf("%w: recorded entry %s is gone from the table", cfg.Mismatch, id)
	case err != nil:
		return Entry{}, err
	case e.EventID != cfg.EventID || e.QueuedAt == 0 || e.QueuedAt >= before:
		queued := "queued by its cutoff"
		if cfg.Kind == Prequeue {
			queued = "queued before its start"
		}
		return Entry{}, fmt.Errorf("%w: recorded entry %s is no request of %s %s", cfg.Mismatch, id, cfg.EventID, queued)
	}
	return e, nil
}
