package asyncevent

import (
	"context"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/asyncevent/asyncevent/draw"
)

// prequeueView is what a client read of a pre-queue: its Draw record, and once it is
// frozen the entries' drawn order and places, which never change.
type prequeueView struct {
	mu      sync.Mutex
	readAt  time.Time
	triedAt time.Time // when the entries were last read for the order
	record  *DrawRecord
	order   []string
	places  map[string]int64
	// settled, for the hold sweep, is how many entries at the head of the order are
	// settled for good (final, or HELD: neither is WAITLISTED again).
	settled int
}

// prequeueOrder returns the client's view of the event's pre-queue, with its Draw
// record read at most once per Options.ProgressCacheTTL until it is frozen, and then
// its order, computed once (the recorded entries read back, recordedEntries, and
// draw.Order). The view's order is nil until the freeze recorded the entries. The
// caller holds the view's lock.
func (c *Client) prequeueOrder(ctx context.Context, cfg *eventItem) (*prequeueView, error) {
	v, _ := c.prequeues.LoadOrStore(cfg.EventID, &prequeueView{})
	view := v.(*prequeueView)
	view.mu.Lock()
	now := c.opts.Clock()
	if view.record == nil || view.record.EntriesHash == "" && now.Sub(view.readAt) >= c.opts.ProgressCacheTTL {
		record, err := c.getDraw(ctx, cfg.EventID)
		if err != nil {
			return view, err
		}
		view.record, view.readAt = record, now
	}
	if view.order != nil || view.record.EntriesHash == "" || view.record.Seed == "" {
		return view, nil
	}
	if !view.triedAt.IsZero() && now.Sub(view.triedAt) < c.opts.ProgressCacheTTL {
		return view, nil // the index lagged the freeze a moment ago: not read again so soon
	}
	view.triedAt = now
	seed, err := hex.DecodeString(view.record.Seed)
	if err != nil {
		return view, err
	}
	ids, err := c.recordedEntries(ctx, cfg.EventID, view.record)
	if errors.Is(err, errRecordedBefore) {
		// Recorded by count and hash only: the entries GSI2 shows, once they hash so.
		var entries []drawEntry
		if entries, err = c.prequeueEntries(ctx, cfg); err != nil {
			return view, err
		}
		ids = make([]string, len(entries))
		for i, e := range entries {
			ids[i] = e.RequestID
		}
		if draw.EntriesHash(ids) != view.record.EntriesHash {
			return view, nil
		}
	}
	if err != nil {
		return view, err
	}
	view.order = draw.Order(seed, ids)
	view.places = make(map[string]int64, len(ids))
	for i, id := range view.order {
		view.places[id] = int64(i + 1)
	}
	return view, nil
}

// placeInPrequeue sets r's Prequeue: frozen or not, and once frozen its place in the
// drawn order (prequeueOrder). A failed read leaves it unset: the request is still
// the answer.
func (c *Client) placeInPrequeue(ctx context.Context, cfg *eventItem, r *Request) {
	view, err := c.prequeueOrder(ctx, cfg)
	defer view.mu.Unlock()
	if err != nil {
		c.opts.Logger.WarnContext(ctx, "the pre-queue of an event could not be read", "eventId", cfg.EventID, "error", err)
		return
	}
	r.Prequeue = &PrequeuePlace{Seats: cfg.CapacityTotal, AsOf: MillisOf(view.readAt)}
	if view.order != nil {
		r.Prequeue.Frozen, r.Prequeue.Entries, r.Prequeue.Place = true, view.record.EntryCount, view.places[r.RequestID]
		r.Prequeue.Late = r.Prequeue.Place == 0
	}
}
