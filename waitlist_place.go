package asyncevent

import (
	"context"
	"fmt"
	"time"

	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/internal/progress"
)

// A waitlisted request's place: how many wait before it on its event's waitlist
// (docs/design.md, "A place on the waitlist"). Every node counts the requests that
// its writes put on a waitlist and took off it (served a seat given back, released,
// closed at the event's end),
// by the second of their queuedAt, and writes the counts of each minute of queuedAt
// at its flushes, the "waitlist counted" row, on the event's progress partitions. A
// reader sums an event's waitlist items: the waitlist is served in queue order (a
// pre-queue's entries first, in their drawn order), so the requests on it queued
// before a request are the ones ahead of it.

// WaitlistPlace is where a WAITLISTED request stands on its event's waitlist.
type WaitlistPlace struct {
	// Ahead is the requests on the waitlist before it: the next seat given back goes
	// to the first of them, and a request with none ahead gets the next one. It is
	// counted from the nodes' counts as of AsOf, which land at each node's next
	// flush (Options.ProgressEvery). It is exact by the second of queuedAt: of the
	// requests queued in its own second it takes the share its moment in the second
	// gives. An entry of a pre-queue is placed by its drawn place: the entries drawn
	// before it, less the seats the serve gave them and those the waitlist was
	// served since (an entry before it that was released or failed makes Ahead one
	// more than it is), within what the counts allow.
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

// The attributes and params of the waitlist row: w00 … w59 and l00 … l59, the
// requests queued in each second of the minute that joined the waitlist and that
// left it.
var (
	waitlistAttrs       = progress.NewWaitNames("w", "l")
	pWaitlistTTL  param = "waitlistTtl"
)

// waitlistCountedRow adds a node's counts of one minute of queuedAt to its waitlist
// item.
var waitlistCountedRow = row{
	name: "waitlist counted", method: "FlushProgress", item: entity.Waitlist, op: opUpdate,
	sets: []set{setIfMissing(attrEntityType, entity.Waitlist), setIfMissing(attrEventID, pEventID), setTo(attrTTL, pWaitlistTTL)},
	adds: countAdds(waitlistAttrs.Joined[:], waitlistAttrs.Left[:]),
}

// writeWaitlist adds one minute's waitlist counts to the node's waitlist item of the
// event, the "waitlist counted" row. The item is kept for progressTTL after the
// event's end or the write, whichever is later: its counts place requests as long as
// the waitlist lasts.
func (m *progressMeter) writeWaitlist(ctx context.Context, cfg *eventItem, shard int, k progress.Second, p *progress.Counts) error {
	key := WaitlistKey{eventID: k.EventID, shard: shard, second: k.Second}
	kept := max(m.c.now(), cfg.closesAt()).Time().Add(progressTTL).Unix()
	a := args{pEventID: k.EventID, pWaitlistTTL: kept}
	for i := range progress.WaitSlots {
		a[param(waitlistAttrs.Joined[i])] = p.Joined[i]
		a[param(waitlistAttrs.Left[i])] = p.Left[i]
	}
	if err := m.c.do(ctx, txOptions{answered: true}, []write{{row: &waitlistCountedRow, key: key.Key(), args: a}}); err != nil {
		return fmt.Errorf("waitlist counts of %s: %w", k.EventID, err)
	}
	return nil
}

// waitlistCounts is an event's waitlist as a client read it: its counts and, of a
// pre-queue's event, the seats the waitlist was served (its Returns item's served).
type waitlistCounts struct {
	on     progress.Waitlist
	served int64
	readAt time.Time
}

// waitlistCacheTTLs is how many Options.ProgressCacheTTL a client keeps an event's
// waitlist counts: a read is of every waitlist item of the event, and a waitlist
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
	place := &WaitlistPlace{Ahead: w.on.Ahead(int64(cfg.waitlistAt(r.QueuedAt))), EndsAt: cfg.EndsAt, AsOf: MillisOf(w.readAt)}
	if cfg.isPrequeueEntry(r.QueuedAt) {
		view, err := c.prequeueOrder(ctx, cfg)
		frozen, p, n := view.Order != nil, view.Places[r.RequestID], int64(len(view.Order))
		view.Unlock()
		entries := w.on.Before(int64(cfg.prequeueUntil())) // the waitlisted queued before the start
		switch {
		case err != nil || !frozen:
			return // no order to place it by
		case p == 0:
			// Late (its put reached the table after the entries were recorded): behind
			// every entry, and taken as behind every late one too.
			place.Ahead = max(entries-1, 0)
		default:
			place.Ahead = entryAhead(p, n, entries, cfg.CapacityTotal, w.served)
		}
	}
	r.Waitlist = place
}

// entryAhead is how many wait before the entry drawn p-th of n on its pre-queue's
// waitlist, of entries waitlisted now (itself too), when the serve gave seats seats
// in the drawn order and the waitlist was served served seats since (the entries
// first, in the drawn order): those drawn before it less the seats given to them,
// which a release or a failure before it makes one too many; never more than the
// other entries waitlisted, nor fewer than them less every entry drawn after it
// (all taken as waiting, which during the serve they are not yet).
func entryAhead(p, n, entries, seats, served int64) int64 {
	ahead := p - 1 - min(seats, p-1) - served
	most := max(entries-1, 0)
	least := min(max(entries-1-(n-p), 0), most)
	return min(max(ahead, least), most)
}

// readWaitlist reads an event's waitlist counts: a Query of each of its progress
// partitions for its waitlist items (SK between W#0000000000 and W#9999999960), all
// pages; and of a pre-queue's event, its Returns item (GetItem PK
// EVENT#<eventId>#RETURNS, SK RETURNS, eventually consistent).
func (c *Client) readWaitlist(ctx context.Context, cfg *eventItem) (*waitlistCounts, error) {
	w := &waitlistCounts{on: progress.Waitlist{}, readAt: c.opts.Clock()}
	first, last := WaitlistKey{}.Key().SK, WaitlistKey{second: maxSeconds / 60 * 60}.Key().SK
	for shard := range progress.Shards(cfg.IndexShards) {
		err := c.countItems(ctx, progressPartition(cfg.EventID, shard), first, last, func(head Key, counts map[string]int64) error {
			k, err := ParseWaitlistKey(head)
			if err == nil {
				w.on.AddItem(k.second, counts, &waitlistAttrs)
			}
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("read the waitlist of %s: %w", cfg.EventID, err)
		}
	}
	if cfg.prequeueUntil() != 0 {
		key, err := NewReturnsKey(cfg.EventID)
		if err != nil {
			return nil, err
		}
		var r seatReturns
		if _, err := c.getItem(ctx, key.Key(), false, &r); err != nil {
			return nil, fmt.Errorf("read the waitlist of %s: %w", cfg.EventID, err)
		}
		w.served = r.Served
	}
	return w, nil
}

// waitlistAt is the moment by which a request queued at is counted on the
// waitlist: its queuedAt, or, for an entry of a pre-queue, a moment in a second
// before the start's, so that every entry is counted before every request queued
// from the start on (which the waitlist serves after them).
func (e *EventSettings) waitlistAt(queuedAt EpochMillis) EpochMillis {
	if !e.isPrequeueEntry(queuedAt) {
		return queuedAt
	}
	start := e.prequeueUntil()
	return min(queuedAt, start-start%1000-1)
}

// joinWaitlist applies w, a row that makes the request WAITLISTED, and counts it for
// the waitlist's places: when its write applied, or when its condition failed on a
// request its own write made WAITLISTED (the call's waitlistedBy, whatever happened
// to it since: served, released), which a write whose answer was lost and that the
// SDK sent again finds. Its answer carries the request
// (ALL_NEW, no extra call); with the status log, a transaction answers nothing, and
// the request is read back, eventually consistent (its queuedAt came with its put
// and never changes).
func (c *Client) joinWaitlist(ctx context.Context, what string, ref RequestRef, w write, tx txOptions) (Transition, error) {
	by := randomHex(8)
	w.args[pWaitlistedBy] = by
	tx.written = true
	t, err := c.applyTo(ctx, what, ref.RequestID, w, tx)
	if err != nil {
		return t, err
	}
	mine := t.Applied || t.current != nil && t.current.WaitlistedBy == by
	if !mine {
		return t, nil
	}
	r := t.current
	if r == nil {
		if r, err = c.getRequest(ctx, ref.RequestID, false); err != nil {
			c.opts.Logger.WarnContext(ctx, "a request that joined a waitlist could not be read; the places behind it are one short", "requestId", ref.RequestID, "error", err)
			return t, nil
		}
	}
	c.countWaitlist(ctx, r.EventID, r.QueuedAt, true)
	return t, nil
}

// leaveWaitlist takes req, WAITLISTED, off the waitlist for its user (the "waitlist
// left" row) and counts it. A condition that failed on a request its own write took
// off (leftBy), that write applied with its answer lost, is the write's: applied.
func (c *Client) leaveWaitlist(ctx context.Context, key RequestKey, req *Request) (Transition, error) {
	by := randomHex(8)
	t, err := c.apply(ctx, key, write{row: &waitlistLeftRow, args: args{pNow: c.now(), pLeftBy: by}, note: "left the waitlist"}, txOptions{written: true})
	if err != nil {
		return t, err
	}
	if !t.Applied && t.current != nil && t.current.LeftBy == by {
		t.Applied = true // the request as found is as this call's write left it
	}
	if t.Applied {
		c.countWaitlist(ctx, req.EventID, req.QueuedAt, false)
	}
	return t, nil
}

// countWaitlist counts a request of eventID queued at that joined its waitlist, or,
// joined false, left it.
func (c *Client) countWaitlist(ctx context.Context, eventID string, queuedAt EpochMillis, joined bool) {
	if c.progress == nil {
		return
	}
	if cfg, err := c.cachedEvent(ctx, eventID); err == nil {
		queuedAt = cfg.waitlistAt(queuedAt)
	}
	c.progress.waitlisted(eventID, queuedAt, joined)
}
