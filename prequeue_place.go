package asyncevent

import (
	"context"

	"github.com/asyncevent/asyncevent/internal/drawrun"
	"github.com/asyncevent/asyncevent/internal/progress"
)

// prequeueOrder returns the client's view of the event's pre-queue, with its Draw
// record read at most once per Options.ProgressCacheTTL until it is frozen, and then
// its order, computed once (progress.Prequeue's Refresh: the recorded entries read
// back, and draw.Order). The view's order is nil until the freeze recorded the
// entries. The caller holds the view's lock.
func (c *Client) prequeueOrder(ctx context.Context, cfg *eventItem) (*progress.Prequeue, error) {
	v, _ := c.prequeues.LoadOrStore(cfg.EventID, &progress.Prequeue{})
	view := v.(*progress.Prequeue)
	view.Lock()
	return view, view.Refresh(ctx, progress.PrequeueRead{Table: &drawStore{c: c, cfg: cfg},
		Config: c.drawRun(cfg.EventID, drawrun.Lottery), Until: int64(cfg.prequeueUntil()),
		Now: c.opts.Clock(), TTL: c.opts.ProgressCacheTTL})
}

// placeDecidedEntry sets the Prequeue of r, a decided first-come request (not RECEIVED
// or QUEUED: placeInLine places those), when it is an entry of its event's pre-queue:
// the place its result came from. A failed read leaves it unset.
func (c *Client) placeDecidedEntry(ctx context.Context, r *Request) {
	if r.EventType != FirstCome || r.Status == StatusReceived || r.Status == StatusQueued || r.QueuedAt == 0 {
		return
	}
	if cfg, err := c.cachedEvent(ctx, r.EventID); err == nil && cfg.isPrequeueEntry(r.QueuedAt) {
		c.placeInPrequeue(ctx, cfg, r)
	}
}

// placeInPrequeue sets r's Prequeue: frozen or not, and once frozen its place in the
// drawn order (prequeueOrder). A failed read leaves it unset: the request is still
// the answer.
func (c *Client) placeInPrequeue(ctx context.Context, cfg *eventItem, r *Request) {
	view, err := c.prequeueOrder(ctx, cfg)
	defer view.Unlock()
	if err != nil {
		c.opts.Logger.WarnContext(ctx, "the pre-queue of an event could not be read", "eventId", cfg.EventID, "error", err)
		return
	}
	r.Prequeue = &PrequeuePlace{Seats: cfg.CapacityTotal, StartsAt: cfg.StartsAt, AsOf: MillisOf(view.ReadAt)}
	if view.Order != nil {
		r.Prequeue.Frozen, r.Prequeue.Entries, r.Prequeue.Place = true, view.Record.EntryCount, view.Places[r.RequestID]
		r.Prequeue.Late = r.Prequeue.Place == 0
	}
}
