package progress

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Flusher is how a Meter's owner writes the counts a flush took: one Write per event
// and second, all at once.
type Flusher struct {
	Write func(ctx context.Context, k Second, c *Counts) error
	// Refused reports whether a write's error says nothing was applied (refused for
	// throughput): its counts are put back for the next flush. After any other error
	// they are dropped, since the write may have been applied with its answer lost,
	// and an ADD sent again would count them twice.
	Refused func(err error) bool
	// Dropped is told of counts not written: of the line, older than Span (err
	// nil), or whose write failed with err and was not Refused.
	Dropped func(ctx context.Context, k Second, err error)
}

// Flush writes every count pending with f, and measures how late they landed
// (Measured). gen is the arming of the timer that flushes (onDue's), zero for an
// explicit flush. Counts of the line older than Span are dropped: no reader looks
// there; a waitlist's are written whatever their age.
func (m *Meter) Flush(ctx context.Context, gen int64, f *Flusher) error {
	if err := m.Lock(ctx); err != nil {
		return err
	}
	defer m.Unlock()
	batch, late, err := m.Take(ctx, gen)
	if err != nil {
		return err
	}
	if len(batch) == 0 {
		return nil // an explicit flush took them before the timer: nothing to measure
	}
	began := time.Now()
	defer func() { m.Measured(late, time.Since(began).Milliseconds()) }()
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	stale := time.UnixMilli(m.now()).Add(-Span).Unix()
	for k, p := range batch { // at once: a late write makes every reader's rate too low
		if k.Second < stale && !k.Waitlist { // a waitlist lasts until its event ends
			f.Dropped(ctx, k, nil)
			continue
		}
		wg.Go(func() {
			err := f.Write(ctx, k, p)
			if err == nil {
				return
			}
			if f.Refused(err) {
				m.PutBack(k, p)
			} else {
				f.Dropped(ctx, k, err)
			}
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// FlushDue flushes with flush if the counts pending are due (Due). Otherwise it waits
// (for ctx at most) for a flush under way: a thawed process's timer fires at once,
// and the process should not be frozen in its writes.
func (m *Meter) FlushDue(ctx context.Context, flush func(context.Context) error) error {
	if m.Due() {
		return flush(ctx)
	}
	if err := m.Lock(ctx); err != nil {
		return err
	}
	m.Unlock()
	return nil
}
