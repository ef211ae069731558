package asyncevent

import (
	"context"
	"encoding/hex"
	"sync"
	"time"

	"github.com/asyncevent/asyncevent/draw"
)

// PrequeuePlace is where an entry of a pre-queue stands while it waits.
type PrequeuePlace struct {
	// Frozen reports whether the pre-queue's entries are frozen and its order drawn
	// (from the start plus the settle window, when ServePrequeue runs); before then
	// no place exists yet, and Place and Entries are 0.
	Frozen bool
	// Place is the entry's position in the drawn order, 1 for the first served, and
	// Entries the entries frozen; Seats is the event's capacity, so a Place up to
	// Seats wins unless an entry before it fails.
	Place, Entries, Seats int64
	// AsOf is when the Draw record behind it was read.
	AsOf time.Time
}

// prequeueView is what a client read of a pre-queue: its Draw record, and once it is
// frozen the entries' places in the order, which never change.
type prequeueView struct {
	mu     sync.Mutex
	readAt time.Time
	record *DrawRecord
	places map[string]int64
}

// placeInPrequeue sets r's Prequeue: frozen or not, from the event's Draw record read
// at most once per Options.ProgressCacheTTL by this client; once frozen, its place,
// from the order this client computes once for the event (a Query of the entries on
// GSI2, the serve's own read, and draw.Order). A failed read leaves it unset: the
// request is still the answer.
func (c *Client) placeInPrequeue(ctx context.Context, cfg *eventItem, r *Request) {
	v, _ := c.prequeues.LoadOrStore(cfg.EventID, &prequeueView{})
	view := v.(*prequeueView)
	view.mu.Lock()
	defer view.mu.Unlock()
	now := c.opts.Clock()
	if view.record == nil || view.record.EntriesHash == "" && now.Sub(view.readAt) >= c.opts.ProgressCacheTTL {
		record, err := c.getDraw(ctx, cfg.EventID)
		if err != nil {
			c.opts.Logger.WarnContext(ctx, "the pre-queue of an event could not be read", "eventId", cfg.EventID, "error", err)
			return
		}
		view.record, view.readAt = record, now
	}
	place := &PrequeuePlace{Seats: cfg.CapacityTotal, AsOf: view.readAt}
	r.Prequeue = place
	if view.record.EntriesHash == "" || view.record.Seed == "" {
		return
	}
	if view.places == nil {
		seed, err := hex.DecodeString(view.record.Seed)
		if err != nil {
			return
		}
		entries, err := c.prequeueEntries(ctx, cfg)
		if err != nil {
			c.opts.Logger.WarnContext(ctx, "the pre-queue's entries could not be read", "eventId", cfg.EventID, "error", err)
			return
		}
		ids := make([]string, len(entries))
		for i, e := range entries {
			ids[i] = e.RequestID
		}
		if draw.EntriesHash(ids) != view.record.EntriesHash {
			return // GSI2 not caught up with the freeze yet: no place until it is
		}
		view.places = make(map[string]int64, len(ids))
		for i, id := range draw.Order(seed, ids) {
			view.places[id] = int64(i + 1)
		}
	}
	place.Frozen, place.Entries, place.Place = true, view.record.EntryCount, view.places[r.RequestID]
}
