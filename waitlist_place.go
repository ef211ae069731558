package asyncevent

import (
	"context"
	"fmt"
	"time"

	"github.com/asyncevent/asyncevent/internal/progress"
)

// A waitlisted request's place: how many wait before it on its event's waitlist
// (docs/design.md, "The waitlist"). Every node counts the requests that join a
// waitlist and those that leave it (served a seat given back, released, closed at
// the event's end) by the tenth of their queuedAt, with its progress counts, and
// writes them on the same progress items (the "progress counted" row: ADD w0 … w9,
// l0 … l9), whatever the second's age. A reader sums an event's items: the waitlist
// is served in queue order (a pre-queue's entries first, in their drawn order), so
// the requests on it queued before a request are the ones ahead of it.

// WaitlistPlace is where a WAITLISTED request stands on its event's waitlist.
type WaitlistPlace struct {
	// Ahead is the requests on the waitlist before it: the next seat given back goes
	// to the first of them, and a request with none ahead gets the next one. It is
	// counted from the nodes' counts as of AsOf, which land at each node's next
	// flush (Options.ProgressEvery); the requests queued in its own tenth of a
	// second are taken as spread evenly over it; an entry of a pre-queue is placed
	// by its drawn place, every entry drawn after it taken as waiting too (one that
	// left the waitlist makes Ahead one less than it is).
	Ahead int64
	// EndsAt is when the waitlist ends: the event's end (EventSettings.EndsAt, or
	// the moment CloseEvent closed it). The hold sweep then ends every request
	// still WAITLISTED REJECTED_CAPACITY. An event with holds has an end
	// (CreateEvent requires one); 0 only on an event created without one before
	// that rule, whose waitlist ends when CloseEvent closes it.
	EndsAt EpochMillis
	// AsOf is when the counts behind Ahead were read.
	AsOf EpochMillis
}

// waitlistCounts is an event's waitlist as a client read it.
type waitlistCounts struct {
	on     progress.Waitlist
	readAt time.Time
}

// waitlistCacheTTLs is how many Options.ProgressCacheTTL a client keeps an event's
// waitlist counts: a read is of every progress item of the event, and a waitlist
// moves when seats come back, not at a spike's pace.
const waitlistCacheTTLs = 5

// placeOnWaitlist sets r's Waitlist when it is WAITLISTED, with progress counted. A
// failed read leaves it unset: the request is still the answer.
func (c *Client) placeOnWaitlist(ctx context.Context, r *Request) {
	if c.progress == nil || r.Status != StatusWaitlisted || r.QueuedAt == 0 {
		return
	}
	cfg, err := c.cachedEvent(ctx, r.EventID)
	if err != nil {
		return
	}
	w, err := c.waitlistCounts.Get(ctx, cfg.EventID, func(ctx context.Context) (*waitlistCounts, error) {
		return c.readWaitlist(ctx, cfg)
	})
	if err != nil {
		c.opts.Logger.WarnContext(ctx, "the waitlist of an event could not be read", "eventId", r.EventID, "error", err)
		return
	}
	place := &WaitlistPlace{Ahead: w.on.Ahead(int64(r.QueuedAt)), EndsAt: cfg.EndsAt, AsOf: MillisOf(w.readAt)}
	if cfg.isPrequeueEntry(r.QueuedAt) {
		view, err := c.prequeueOrder(ctx, cfg)
		frozen, p, n := view.Order != nil, view.Places[r.RequestID], int64(len(view.Order))
		view.Unlock()
		before := w.on.Before(int64(cfg.prequeueUntil())) // the waitlisted queued before the start
		switch {
		case err != nil || !frozen:
			return // no order to place it by
		case p == 0:
			// Late (its put reached the table after the entries were recorded): behind
			// every entry, and taken as behind every late one too.
			place.Ahead = max(before-1, 0)
		default:
			// The waitlisted entries, less those drawn after it (taken as waiting too).
			place.Ahead = min(max(before-1-(n-p), 0), p-1)
		}
	}
	r.Waitlist = place
}

// readWaitlist reads an event's waitlist counts: a Query of each of its progress
// partitions, every item (the "event progress" read).
func (c *Client) readWaitlist(ctx context.Context, cfg *eventItem) (*waitlistCounts, error) {
	w := &waitlistCounts{on: progress.Waitlist{}, readAt: c.opts.Clock()}
	from := ProgressKey{eventID: cfg.EventID}.Key().SK
	for shard := range progress.Shards(cfg.IndexShards) {
		err := c.eachProgressItem(ctx, progressPartition(cfg.EventID, shard), from, func(second int64, counts map[string]int64) {
			w.on.AddItem(second, counts, &progressAttrs)
		})
		if err != nil {
			return nil, fmt.Errorf("read the waitlist of %s: %w", cfg.EventID, err)
		}
	}
	return w, nil
}

// countWaitlist counts r, whose write made it join its event's waitlist, or, joined
// false, leave it, for the waitlist's places. r may be nil: a write whose
// request was not read back (a transaction's) reads it (eventually consistent: its
// queuedAt came with its put and never changes).
func (c *Client) countWaitlist(ctx context.Context, requestID string, r *storedRequest, joined bool) {
	if c.progress == nil {
		return
	}
	if r == nil {
		var err error
		if r, err = c.getRequest(ctx, requestID, false); err != nil {
			c.opts.Logger.WarnContext(ctx, "a request that joined or left a waitlist could not be read; its event's waitlist places are off by one", "requestId", requestID, "error", err)
			return
		}
	}
	c.progress.waitlisted(r.EventID, r.QueuedAt, joined)
}
