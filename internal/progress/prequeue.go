package progress

import (
	"context"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/asyncevent/asyncevent/draw"
	"github.com/asyncevent/asyncevent/internal/drawrun"
)

// Prequeue is what a client read of a pre-queue: its Draw record, and once it is
// frozen the entries' drawn order and places, which never change. Its zero value is
// ready; whoever reads or refreshes it holds its lock.
type Prequeue struct {
	sync.Mutex
	ReadAt  time.Time      // when Record was read
	Record  drawrun.Record // the Draw record as last read
	read    bool           // Record was read once
	triedAt time.Time      // when the entries were last read for the order
	// Order is the drawn order, nil until the freeze recorded the entries; Places
	// are the entries' places in it, from 1.
	Order  []string
	Places map[string]int64
	// Settled, for the hold sweep, is how many entries at the head of the order are
	// settled for good (final, or HELD: neither is WAITLISTED again).
	Settled int
}

// PrequeueTable is the event's table as a Prequeue reads it: the Draw record, the
// chunks of its recorded set, and the requests GSI2 shows.
type PrequeueTable interface {
	drawrun.Chunks
	// Record reads the Draw record.
	Record(ctx context.Context) (drawrun.Record, error)
	// QueuedBefore reads the requests queued before t (epoch ms) from GSI2, in queue order.
	QueuedBefore(ctx context.Context, t int64) ([]drawrun.Entry, error)
}

// PrequeueRead is one refresh of a Prequeue: from Table, at Now, keeping what it
// read for TTL.
type PrequeueRead struct {
	Table  PrequeueTable
	Config drawrun.Config // the run's configuration the recorded set is read back under
	Until  int64          // the start (epoch ms): the entries were queued before it
	Now    time.Time
	TTL    time.Duration
}

// Refresh brings v up to date: its Draw record read at most once per TTL until it
// is frozen, and then its order, computed once (the recorded set read back,
// drawrun.ReadBack, and draw.Order). A set recorded by count and hash only is the
// requests GSI2 shows, once they hash so; entries that do not, or that could not be
// read, are not read again for TTL.
func (v *Prequeue) Refresh(ctx context.Context, r PrequeueRead) error {
	if !v.read || v.Record.EntriesHash == "" && r.Now.Sub(v.ReadAt) >= r.TTL {
		record, err := r.Table.Record(ctx)
		if err != nil {
			return err
		}
		v.Record, v.ReadAt, v.read = record, r.Now, true
	}
	if v.Order != nil || v.Record.EntriesHash == "" || v.Record.Seed == "" {
		return nil
	}
	if !v.triedAt.IsZero() && r.Now.Sub(v.triedAt) < r.TTL {
		return nil // the index lagged the freeze a moment ago: not read again so soon
	}
	v.triedAt = r.Now
	seed, err := hex.DecodeString(v.Record.Seed)
	if err != nil {
		return err
	}
	ids, err := drawrun.ReadBack(ctx, r.Table, r.Config, v.Record)
	if errors.Is(err, drawrun.ErrCountOnly) {
		// Recorded by count and hash only: the entries GSI2 shows, once they hash so.
		var entries []drawrun.Entry
		if entries, err = r.Table.QueuedBefore(ctx, r.Until); err != nil {
			return err
		}
		ids = make([]string, len(entries))
		for i, e := range entries {
			ids[i] = e.RequestID
		}
		if draw.EntriesHash(ids) != v.Record.EntriesHash {
			return nil
		}
	}
	if err != nil {
		return err
	}
	v.Order = draw.Order(seed, ids)
	v.Places = make(map[string]int64, len(ids))
	for i, id := range v.Order {
		v.Places[id] = int64(i + 1)
	}
	return nil
}
