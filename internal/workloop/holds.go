package workloop

import (
	"context"
	"log/slog"
	"slices"
	"time"
)

// registryEvery is how often the sweep ticker reads the hold registry.
const registryEvery = 10 * time.Second

// HoldSweeper is what the hold-sweep ticker needs of the table.
type HoldSweeper interface {
	// Registry reads the events the hold registry lists.
	Registry(ctx context.Context) ([]string, error)
	// Met returns the events with holds whose messages were processed.
	Met() []string
	// Now is the table's clock, in epoch milliseconds.
	Now() int64
	// Sweep runs one pass of an event's hold sweep under its sweep lease.
	Sweep(ctx context.Context, eventID string) (Swept, error)
}

// Swept is what one pass of a hold sweep did.
type Swept struct {
	Expired, Served, Closed int
	Skipped                 bool  // another owner holds the sweep lease
	LeaseUntil              int64 // Skipped: when that lease runs out, epoch milliseconds
}

// sweepHolds runs the hold sweep of the events with holds the loop has met and of
// those the registry lists, every HoldSweepEvery, until ctx ends; then it closes done.
func (l *Loop) sweepHolds(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	if l.cfg.HoldSweepEvery < 0 {
		return
	}
	tick := time.NewTicker(l.cfg.HoldSweepEvery)
	defer tick.Stop()
	var listed []string
	var read time.Time
	othersUntil := map[string]int64{} // event → when the lease another worker holds on its sweep runs out
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if time.Since(read) >= registryEvery {
			if evs, err := l.holds.Registry(ctx); err == nil {
				listed, read = evs, time.Now()
			} else if ctx.Err() == nil {
				l.cfg.Logger.WarnContext(ctx, "reading the hold registry failed", slog.Any("error", err))
			}
		}
		for _, ev := range union2(l.holds.Met(), listed) {
			if l.holds.Now() < othersUntil[ev] {
				continue // another worker sweeps it: look again once its lease has run out
			}
			rep, err := l.holds.Sweep(ctx, ev)
			if err == nil && rep.Skipped {
				othersUntil[ev] = rep.LeaseUntil
			}
			switch {
			case err != nil && ctx.Err() == nil:
				l.cfg.Logger.WarnContext(ctx, "the hold sweep failed; it runs again", slog.String("eventId", ev), slog.Any("error", err))
			case err == nil && rep.Expired+rep.Served+rep.Closed > 0:
				l.cfg.Logger.InfoContext(ctx, "hold sweep", slog.String("eventId", ev), slog.Int("expired", rep.Expired),
					slog.Int("served", rep.Served), slog.Int("closed", rep.Closed))
			}
		}
	}
}

// union2 returns the strings of a and b, each once.
func union2(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
