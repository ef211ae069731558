package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/asyncevent/asyncevent/draw"
	"github.com/asyncevent/asyncevent/internal/drawrun"
	"github.com/asyncevent/asyncevent/queue"
)

// The pre-queue of a FIRST_COME event (EventSettings.PrequeueOpensAt).
//
// The clicks between PrequeueOpensAt and StartsAt are its entries: accepted, queued,
// and decided by nobody before the start. CreateEvent commits to a secret seed as a
// lottery's does (the event's Draw record, seedCommitment). From StartsAt plus
// Options.DrawSettleWindow, ServePrequeue freezes the entries (the requests queued
// before StartsAt), records their count and draw.EntriesHash, reveals the seed, and
// serves them in draw.Order: each by the seat claim every first-come request takes,
// never more at once than the seats left, so that an entry wins only when every entry
// before it in the order has been decided. Only then do the workers decide the clicks
// of the sale (queued from StartsAt on), in queue order, with the seats left.
//
// Whose request may be an entry is fixed by its queuedAt, written with the request's
// put and never changed; which ones are is fixed by the record (the entries by name,
// EntriesKey): a request queued before the start whose put lands after the record is
// a late arrival, which joins the sale's line after the drawn order. Ingest's writes
// of a click queued before the start end by the entries' fence (entryFence), and the
// freeze reads after the settle window, so that late arrivals are rare; no clock
// decides what the record holds.

// prequeueLease is the lease of an entry the serve takes the leased way (its home
// shard empty): no worker delivers an entry's message, so a lease here only keeps two
// serves running at once apart, and a short one lets a serve that resumes after a
// crash take over soon.
const prequeueLease = 5 * time.Second

// prequeueUntil returns the start of a FIRST_COME event with a pre-queue: the
// requests queued before it are the pre-queue's entries; 0 for an event without one.
func (e *EventSettings) prequeueUntil() EpochMillis {
	if e.EventType != FirstCome || e.PrequeueOpensAt == 0 {
		return 0
	}
	return e.StartsAt
}

// isPrequeueEntry reports whether r is an entry of its event's pre-queue.
func (e *EventSettings) isPrequeueEntry(queuedAt EpochMillis) bool {
	until := e.prequeueUntil()
	return until != 0 && queuedAt < until
}

// entriesCutoff is the last queuedAt of an entry of the event's draw or pre-queue;
// 0 when it has neither.
func (e *EventSettings) entriesCutoff() EpochMillis {
	switch {
	case e.EventType == Lottery:
		return e.LotteryCutoffAt
	case e.prequeueUntil() != 0:
		return e.prequeueUntil() - 1
	}
	return 0
}

// PrequeueResult is what ServePrequeue did.
type PrequeueResult struct {
	// Record is the event's Draw record: the seed revealed, the entries' count and
	// hash.
	Record DrawRecord
	// Order is the entries' request IDs in the order they were served: draw.Order of
	// the revealed seed and the entries.
	Order []string
	// Winners are the entries that won a seat (SUCCEEDED, or HELD with holds), in
	// the order; Served counts the requests decided by this call.
	Winners []string
	Served  int
	// Late are the requests queued before the start that the record does not name
	// (their put reached the table after the entries were read), as this call found
	// them. They are no entries; each joins the sale's line after the drawn order:
	// those the serve finds it decides, in queue order, after the last entry and
	// ahead of the sale's clicks; one that lands later the workers decide with the
	// sale's clicks once the pre-queue is served.
	Late []string
}

// ServePrequeue serves the pre-queue of a FIRST_COME event, with the draw's rows ("draw:
// freeze the entries", "event: drawing", "draw: entries chunk", "draw: record the
// entries", "draw: announce", "event: announced") and a worker's delivery's for each
// entry it serves. It is allowed once StartsAt plus
// Options.DrawSettleWindow has passed (ErrDrawTooEarly before); an event without a
// pre-queue is ErrNoPrequeue. It
//
//  1. freezes the entries: a TransactWriteItems that moves the Draw record (PK
//     EVENT#<eventId>, SK DRAW) and the config from COLLECTING to DRAWING, condition
//     phase = COLLECTING;
//  2. reads the entries from GSI2 (Query GSI2PK = EVENT#<eventId>, GSI2SK <
//     QAT#<startsAt>, each index shard, never a Scan): every request queued before
//     StartsAt, whatever its status (one whose enqueue failed is passed over when
//     served, winning nothing);
//  3. records them by name and reveals the seed, as Draw does (the "draw: entries
//     chunk" puts, then UpdateItem of the Draw record, condition phase = DRAWING AND
//     attribute_not_exists(entriesHash));
//  4. serves the recorded entries in draw.Order(seed, entries): each one's message
//     processed as a worker without a Handler would (the home claim, or the leased
//     claim when its home shard is empty; REJECTED_CAPACITY once every seat is
//     taken), at most min(Options.DrawConcurrency, the seats left) at once, so that
//     no entry takes a seat an entry before it in the order needs; once no seat is
//     left the rest are refused 4 × DrawConcurrency at once. Then the late arrivals
//     it found (queued before StartsAt, not in the record; the requests queued in
//     the last Options.DrawSettleWindow plus 10 s before the start are read again
//     once the record is written) in queue order, the head of the sale's line
//     (PrequeueResult.Late);
//  5. announces: Draw record and config from DRAWING to ANNOUNCED, after which the
//     workers decide the sale's clicks, and any late arrival that lands later, as
//     the sale's.
//
// The record is the truth: run again after a crash, it reads the recorded set back
// (a chunk missing or altered, or a recorded entry gone from the table, is
// ErrDrawMismatch), draws the same order, skips the requests already decided and
// serves the rest, whatever landed since. Seats an operator adds (or a cancel gives
// back) while it runs go to the entries not yet served: in the order when they
// arrive before a wave of claims (the serve reads the seats before each wave); one
// that arrives while a wave of refusals is in flight goes to whichever entry of it
// asks first, as it would to any request after a refusal.
func (c *Client) ServePrequeue(ctx context.Context, eventID string) (*PrequeueResult, error) {
	o, err := c.openDraw(ctx, eventID, drawrun.Prequeue)
	if err != nil {
		return nil, err
	}
	record := o.record
	res := &PrequeueResult{Order: draw.Order(o.run.Seed, o.run.IDs), Late: o.run.Late()}
	if record.Phase != PhaseAnnounced {
		o.store.p = NewProcessor(c, ProcessOptions{LeaseDuration: prequeueLease})
		o.store.p.serving = true
		// The late arrivals join the sale's line after the drawn order, in queue
		// order, ahead of the sale's clicks (queued from the start on).
		if res.Served, err = drawrun.Serve(ctx, o.store, o.conf, o.run, append(slices.Clone(res.Order), res.Late...)); err != nil {
			return nil, err
		}
		if record, err = c.announceDraw(ctx, o.store.cfg); err != nil {
			return nil, err
		}
	}
	res.Record = *record
	if res.Winners, err = drawrun.Winners(ctx, o.store, o.run.Before, res.Order); err != nil {
		return nil, err
	}
	return res, nil
}

// prequeueEntries reads every request of the event queued before its start from GSI2,
// in queue order.
func (c *Client) prequeueEntries(ctx context.Context, cfg *eventItem) ([]drawEntry, error) {
	return c.queueOrder(ctx, cfg.EventID, cfg.prequeueUntil(), true)
}

// SeatsLeft reads the seats an entry's claim may take (seatsLeft).
func (s *drawStore) SeatsLeft(ctx context.Context) (int64, error) {
	return s.c.seatsLeft(ctx, s.cfg)
}

// ServeWave serves a wave of the pre-queue's entries with ServePrequeue's processor
// (serveWave).
func (s *drawStore) ServeWave(ctx context.Context, wave []drawrun.Entry, at int) error {
	entries := make([]drawEntry, len(wave))
	for i, e := range wave {
		entries[i] = drawEntry{RequestID: e.RequestID, UserID: e.UserID, RequestedAt: EpochMillis(e.RequestedAt), QueuedAt: EpochMillis(e.QueuedAt)}
	}
	return s.c.serveWave(ctx, s.p, s.cfg, entries, at)
}

// serveWave serves entries, at most at a time at once.
func (c *Client) serveWave(ctx context.Context, p *Processor, cfg *eventItem, entries []drawEntry, at int) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	work := make(chan drawEntry)
	for range min(at, len(entries)) {
		wg.Go(func() {
			for e := range work {
				if err := c.serveEntry(ctx, p, cfg, e); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for _, e := range entries {
		work <- e
	}
	close(work)
	wg.Wait()
	if len(errs) > 0 {
		if p.admitting {
			return fmt.Errorf("ranked admission of %s: %d requests of the wave not decided (the admission resumes the wave): %w", cfg.EventID, len(errs), errors.Join(errs...))
		}
		return fmt.Errorf("pre-queue %s: %d entries not served, run ServePrequeue again: %w", cfg.EventID, len(errs), errors.Join(errs...))
	}
	return nil
}

// serveEntry processes an entry's message until it is decided, as the queue would
// deliver it again after each retry, but never as its last receive: a retryable
// failure never ends an entry (only a final one, such as its handler's refusal). An
// entry not decided when ctx ends is an error: no entry after it may be served before
// it.
func (c *Client) serveEntry(ctx context.Context, p *Processor, cfg *eventItem, e drawEntry) error {
	body, err := EncodeMessage(Message{V: MessageVersion, RequestID: e.RequestID, EventID: cfg.EventID, UserID: e.UserID,
		EventType: FirstCome, RequestedAt: e.RequestedAt, CapacityShards: max(cfg.CapacityShards, 1), PrequeueUntil: cfg.prequeueUntil()})
	if err != nil {
		return fmt.Errorf("entry %s: %w", e.RequestID, err)
	}
	for receive := 1; ; receive++ {
		// Never the queue's last receive: an entry is not failed for a run of
		// retryable errors (its retries go on until it is decided, or ctx ends and a
		// later serve resumes it), which would hand its seat to the next entry.
		d := queue.Delivery{MessageID: "prequeue-" + e.RequestID, Body: body, ReceiveCount: min(receive, p.opts.MaxReceives-1), SentAt: e.QueuedAt.Time()}
		if p.admitting {
			// A ranked admission's wave: its retries count as receives, so that a
			// request whose Handler keeps failing ends FAILED_FINAL on the last, as
			// from a queue, and the line goes on.
			d.MessageID, d.ReceiveCount = "admission-"+e.RequestID, receive
		}
		o, done, retryAfter := p.ProcessOne(ctx, d, 0, nil)
		if done || o.Kind == OutcomeDeadLetter {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("entry %s: %w", e.RequestID, ctx.Err())
		case <-time.After(min(max(retryAfter, 10*time.Millisecond), 5*time.Second)):
		}
	}
}

// seatsLeft returns the seats an entry's claim may take: those of a FIRST_COME
// event's capacity shards and, without holds, of its pool (seats added, or given back
// by a cancel), each read strongly consistent. With holds the pool's seats go to the
// waitlist (the hold sweep, in the drawn order), never to a claim.
func (c *Client) seatsLeft(ctx context.Context, cfg *eventItem) (int64, error) {
	capacity, err := c.GetCapacity(ctx, cfg.EventID)
	if err != nil {
		return 0, err
	}
	if cfg.HoldFor > 0 {
		return capacity.CapacityRemaining, nil
	}
	key, err := NewReturnsKey(cfg.EventID)
	if err != nil {
		return 0, err
	}
	var pool seatReturns
	if _, err := c.getItem(ctx, key.Key(), true, &pool); err != nil {
		return 0, fmt.Errorf("the pool of %s: %w", cfg.EventID, err)
	}
	return capacity.CapacityRemaining + pool.CapacityRemaining, nil
}

// stored is what e tells of its request, as the request item would.
func (e drawEntry) stored() *storedRequest {
	return &storedRequest{Request: Request{RequestID: e.RequestID, Status: e.Status, ResultCode: e.ResultCode, HoldExpiresAt: e.HoldExpiresAt}, SeatShard: e.SeatShard}
}

// wonSeat reports whether a first-come request won a seat, whatever became of it
// since (held, confirmed, released, expired, cancelled).
func wonSeat(r *storedRequest) bool {
	held := r.HoldExpiresAt != 0 // a released request that was HELD, not one that left the waitlist
	return r.Status == StatusHeld || r.Status == StatusSucceeded || r.Status == StatusRejected &&
		(r.ResultCode == ResultReleased && held || r.ResultCode == ResultHoldExpired || r.ResultCode == ResultCancelled)
}

// prequeueGate holds back what a worker must not decide while a pre-queue waits to
// be served: an entry's message met before the serve may begin (the config says
// COLLECTING, and the entries' fence, the moment the serve may begin less a margin,
// has not come) is acknowledged (the serve reads the entry from GSI2 and decides it),
// and every other message (a sale's click, or a request queued before the start met
// from the fence on, which is the serve's if its record names it and a late arrival
// otherwise) comes back later, until the event's config says the pre-queue was served
// (ANNOUNCED). The fence, not the config alone, decides when an entry is left to the
// serve: the config a worker holds may be Options.EventCacheTTL old, and an entry
// whose put lands after the serve recorded its entries is a late arrival, which only
// a later delivery decides. ServePrequeue's own processor passes. It reports whether
// it decided the message.
func (p *Processor) prequeueGate(ctx context.Context, m Message, d queue.Delivery) (result, bool) {
	if p.serving {
		return result{}, false
	}
	// A failure here is retried, never made final: the message may be an entry's,
	// which only the serve decides (and a sale's click waits anyway).
	retry := func(err error) (result, bool) {
		return result{action: actRetry, delay: p.opts.Backoff(d.ReceiveCount), outcome: Outcome{Kind: OutcomeRetry, Err: err}}, true
	}
	until := m.PrequeueUntil
	if until == 0 && m.CapacityShards <= 0 { // a sender that did not know the event
		cfg, err := p.c.cachedEvent(ctx, m.EventID)
		if errors.Is(err, ErrEventNotFound) {
			return result{}, false // the worker's own path says what becomes of it
		}
		if err != nil {
			return retry(err)
		}
		until = cfg.prequeueUntil()
	}
	if until == 0 {
		return result{}, false
	}
	cfg, err := p.c.cachedEvent(ctx, m.EventID)
	if err != nil {
		return retry(err)
	}
	if cfg.Phase == PhaseAnnounced {
		return result{}, false
	}
	if m.RequestedAt < until { // queuedAt ≥ requestedAt: only such a request may be an entry
		r, err := p.c.getRequest(ctx, m.RequestID, true)
		switch {
		case errors.Is(err, ErrNotFound):
			return notFound(), true
		case err != nil:
			return retry(err)
		case r.QueuedAt < until && cfg.Phase == PhaseCollecting && p.c.opts.Clock().Before(p.c.entryFence(cfg)):
			return result{action: actDelete, outcome: Outcome{Kind: OutcomeLeftToDraw}}, true
		}
		// Met from the fence on: a recorded entry is the serve's, and
		// a late arrival's turn comes after the drawn order, as a click of the sale.
		// Either way it comes back, as a sale's click does: a recorded entry is
		// decided by then (a duplicate), a late arrival decided then.
	}
	// A click of the sale, before the pre-queue was served: it comes back once the
	// serve may have begun, and later each time it finds it not done yet.
	return result{action: actRetry, delay: prequeueHold(cfg.drawOpensAt(p.c.opts.DrawSettleWindow), p.c.now(), d.ReceiveCount),
		outcome: Outcome{Kind: OutcomeWaitingForPrequeue}}, true
}

// prequeueHolds are how long a sale's click waits, receive after receive, once its
// pre-queue's serve may begin: a queue dead-letters a message after its receive
// limit (SQS's maxReceiveCount, 5 in the project's template), so the receives are
// spent after the serve may begin, not during the settle window before it. With 5,
// the last comes 51 s after the serve may begin; a click still waiting then is
// dead-lettered with its request QUEUED, which Sweep sends again.
var prequeueHolds = []time.Duration{time.Second, 5 * time.Second, 15 * time.Second, 30 * time.Second, time.Minute}

// prequeueHold is how long a sale's click waits on its receive-th receive at now,
// when its pre-queue's serve may begin at opens.
func prequeueHold(opens, now EpochMillis, receive int) time.Duration {
	wait := max(opens.Time().Sub(now.Time()), 0)
	return wait + prequeueHolds[min(max(receive-1, 0), len(prequeueHolds)-1)]
}
