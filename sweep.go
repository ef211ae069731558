package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/asyncevent/asyncevent/internal/holdsweep"
	"github.com/asyncevent/asyncevent/queue"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The sweeps: passes over an event that a Worker, the CLI or a scheduled function
// runs. Sweep sends the message of a request that seems stuck again, and writes
// nothing; SweepHolds ends the holds that ran out and hands the seats given back on to
// the waitlist, its algorithm in internal/holdsweep, run over holdSweeper: the event's
// table as the hold sweep sees it, each method the rows it names (hold.go's and the
// Returns item's in seat_pool.go).

// SweepOptions configures Sweep. The zero value is valid.
type SweepOptions struct {
	// StuckAfter is how long a request may sit RECEIVED or QUEUED (since its
	// queuedAt), or PROCESSING past its lease, before the sweeper sends its message
	// again. Default: 5 minutes.
	StuckAfter time.Duration

	// RatePerSecond bounds the messages sent per second. Default: 50.
	RatePerSecond float64
}

// The defaults of SweepOptions.
const (
	DefaultSweepStuckAfter = 5 * time.Minute
	DefaultSweepRate       = 50
)

// SweepReport is what Sweep did.
type SweepReport struct {
	Examined int               // requests read
	Resent   map[Status]int    // messages sent again, by the status the request had
	Skipped  int               // requests in flight or done
	Failed   map[string]string // request ID → why its message could not be sent
}

// sweepRow is what Sweep reads of a request.
type sweepRow struct {
	RequestID      string      `dynamodbav:"requestId"`
	UserID         string      `dynamodbav:"userId"`
	EventType      EventType   `dynamodbav:"eventType"`
	Status         Status      `dynamodbav:"status"`
	RequestedAt    EpochMillis `dynamodbav:"requestedAt"`
	QueuedAt       EpochMillis `dynamodbav:"queuedAt"`
	LeaseExpiresAt EpochMillis `dynamodbav:"leaseExpiresAt"`
}

// Sweep re-drives an event's requests whose message seems lost: it walks the event on
// GSI2 (Query GSI2PK = EVENT#<eventId>, or each EVENT#<eventId>#<shard>, all pages,
// projecting the fields it needs; no Scan) and sends the message again, at most
// opts.RatePerSecond a second, for each request of either event type still RECEIVED
// with a queuedAt more than opts.StuckAfter ago (its ingest died between the put and
// the send, or its send failed and so did recording it: every request is on GSI2 from
// its put), each FIRST_COME request QUEUED for longer than that, and each request
// PROCESSING whose lease expired more than opts.StuckAfter ago (a worker died and its
// message went to the dead-letter queue). A LOTTERY entry waiting QUEUED for its draw
// is not stuck until the draw is announced (one still QUEUED then landed after the
// draw recorded its entries, and the worker answers it REJECTED_NOT_DRAWN), nor is an entry of a pre-queue not served yet (the event's config,
// cached, says so). Sweep writes nothing: what becomes of a re-sent request, after its
// event closed too, is the worker's decision. Sending again is always safe: the
// worker's start is conditional, so a request that was only slow is not processed
// twice; several sweepers may run at once. A lock left without its request is not on
// an index; the user's next click heals it (Submit).
func (c *Client) Sweep(ctx context.Context, q queue.Queue, eventID string, opts SweepOptions) (*SweepReport, error) {
	if _, err := NewEventPartition(eventID); err != nil {
		return nil, err
	}
	if opts.StuckAfter <= 0 {
		opts.StuckAfter = DefaultSweepStuckAfter
	}
	if opts.RatePerSecond <= 0 {
		opts.RatePerSecond = DefaultSweepRate
	}
	report := &SweepReport{Resent: map[Status]int{}, Failed: map[string]string{}}
	// The entries of a pre-queue not served yet wait for ServePrequeue, which finds
	// them on GSI2: none of them is stuck.
	var prequeue EpochMillis
	drawn := false
	if cfg, err := c.cachedEvent(ctx, eventID); err == nil && cfg.Phase != PhaseAnnounced {
		prequeue = cfg.prequeueUntil()
	} else if err == nil {
		drawn = cfg.EventType == Lottery
	}
	pace := time.NewTicker(time.Duration(float64(time.Second) / opts.RatePerSecond))
	defer pace.Stop()
	err := eachEventPage(ctx, c, eventID, nil, []string{attrRequestID, attrUserID, attrEventType, attrStatus, attrRequestedAt, attrQueuedAt, attrLeaseExpiresAt},
		func(rows []sweepRow) error {
			for _, r := range rows {
				report.Examined++
				if !c.stuck(r, opts.StuckAfter, drawn) || r.QueuedAt < prequeue {
					report.Skipped++
					continue
				}
				select {
				case <-pace.C:
				case <-ctx.Done():
					return ctx.Err()
				}
				if err := c.resend(ctx, q, eventID, r); err != nil {
					report.Failed[r.RequestID] = err.Error()
					continue
				}
				report.Resent[r.Status]++
				c.opts.Logger.InfoContext(ctx, "sweeper sent a stuck request again",
					slog.String("requestId", r.RequestID), slog.String("eventId", eventID), slog.String("status", string(r.Status)))
			}
			return nil
		})
	if err != nil {
		return report, fmt.Errorf("sweep %s: %w", eventID, err)
	}
	return report, nil
}

// stuck reports whether a request's message seems lost; drawn, that its event is a
// lottery whose draw was announced (a request still QUEUED then landed after the
// draw's record, and waits for a worker to answer it).
func (c *Client) stuck(r sweepRow, after time.Duration, drawn bool) bool {
	limit := MillisOf(c.opts.Clock().Add(-after))
	switch r.Status {
	case StatusReceived:
		return r.QueuedAt != 0 && r.QueuedAt < limit
	case StatusQueued:
		return (r.EventType == FirstCome || drawn) && r.QueuedAt != 0 && r.QueuedAt < limit
	case StatusProcessing:
		return r.LeaseExpiresAt < limit
	}
	return false
}

// resend sends a request's message again. On a FIFO queue the deduplication ID
// differs from the first send's, or the queue would drop it.
func (c *Client) resend(ctx context.Context, q queue.Queue, eventID string, r sweepRow) error {
	body, err := EncodeMessage(c.messageOf(&Request{
		RequestID: r.RequestID, EventID: eventID, UserID: r.UserID, EventType: r.EventType, RequestedAt: r.RequestedAt,
	}))
	if err != nil {
		return err
	}
	return c.sendMessage(ctx, q, queue.OutgoingMessage{
		Body: body, GroupID: eventID,
		DeduplicationID: requestToken(r.RequestID, "sweep", int(c.now())),
	})
}

// HoldSweepOptions configures SweepHolds. The zero value is valid.
type HoldSweepOptions struct {
	// MaxWrites bounds the requests one call moves: holds expired, waitlisted requests
	// served a seat, waitlisted requests closed. Default: 500.
	MaxWrites int

	// Owner, if set, makes the call take the event's sweep lease first (the "hold
	// sweep lease" row, on the Returns item) for LeaseFor, and do nothing when another
	// owner holds it: the workers of an event then sweep it one at a time. Default:
	// no lease (a sweep run by hand, or by one scheduled function).
	Owner    string
	LeaseFor time.Duration // default: 30 seconds
}

// DefaultHoldSweepWrites is HoldSweepOptions.MaxWrites's default.
const DefaultHoldSweepWrites = 500

// HoldSweepReport is what one SweepHolds call did.
type HoldSweepReport struct {
	Expired int   // holds that ran out, their seats given to the waitlist
	Served  int   // waitlisted requests now HELD on a seat given back
	Closed  int   // waitlisted requests ended REJECTED_CAPACITY: the event closed
	Cleared int   // Hold items of holds that had ended otherwise, deleted
	Waiting int64 // seats given back and not yet handed on (no one waitlisted)
	More    bool  // MaxWrites was reached: call again
	Skipped bool  // another owner holds the sweep lease: nothing was done

	leaseUntil EpochMillis // Skipped: when the other owner's lease runs out, as read
}

// SweepHolds runs one pass of an event's hold sweep: the holds that ran out end, their
// seats go to the waitlist, the seats given back go to the earliest WAITLISTED
// requests, and once the event has closed its waitlist ends. Expiry is this bounded
// sweep, not DynamoDB's TTL (which deletes within days): a Worker runs it for the
// events with holds it meets, and the CLI (`asyncevent holds sweep`) and a scheduled
// function can run it too; several sweeps at once are safe (every write is
// conditional), only wasteful.
//
//  1. For each of the event's hold partitions (one per capacity shard), Query PK
//     EVENT#<eventId>#HOLDS#<shard>, SK < EXP#<now + 1 ms>: the holds that ran out.
//     Each is one TransactWriteItems of the "hold expired" row (condition status =
//     HELD AND holdExpiresAt = the Hold item's AND holdExpiresAt ≤ now), the "seat
//     given to the waitlist" row and the "hold cleared" row. A Hold item whose request
//     holds no such hold (confirmed, released, or held again with a later expiry) is
//     deleted (the "hold cleared" row); one whose request is not yet HELD (its claim
//     is being bound) is left for the next pass.
//  2. Unless the event has closed, a strongly consistent GetItem of the Returns item
//     (PK EVENT#<eventId>#RETURNS, SK RETURNS); while it holds seats, the event's
//     WAITLISTED requests are read in queue order (ListEventRequests; those of a
//     pre-queue first, in their drawn order, each by a strongly consistent GetItem)
//     and each of the earliest gets one in a TransactWriteItems of the "returned
//     seat taken" row (SET capacityRemaining = capacityRemaining − 1, ADD served 1,
//     condition capacityRemaining > 0), the "waitlist served" row (SET status =
//     HELD, uiResult HELD, holdExpiresAt = now + HoldFor, servedAt; condition status
//     = WAITLISTED) and the "hold recorded" row (its Hold item).
//  3. Once the event has closed (EventSettings.EndsAt passed), its WAITLISTED requests
//     end REJECTED_CAPACITY, the "waitlist closed" row (condition status =
//     WAITLISTED), and a seat given back stays on the Returns item.
//
// An event without holds is ErrInvalidOptions; an unknown one ErrEventNotFound.
func (c *Client) SweepHolds(ctx context.Context, eventID string, opts HoldSweepOptions) (*HoldSweepReport, error) {
	cfg, err := c.cachedEvent(ctx, eventID)
	if err != nil {
		return nil, err
	}
	if cfg.EventType != FirstCome || cfg.HoldFor <= 0 {
		return nil, fmt.Errorf("%w: event %s has no holds (EventSettings.HoldFor)", ErrInvalidOptions, eventID)
	}
	if opts.MaxWrites <= 0 {
		opts.MaxWrites = DefaultHoldSweepWrites
	}
	n := max(cfg.CapacityShards, 1)
	r, err := holdsweep.Run(ctx, &holdSweeper{c: c, cfg: cfg, n: n}, holdsweep.Pass{
		Event: holdsweep.Event{
			ID: cfg.EventID, Shards: n, EndsAt: int64(cfg.EndsAt),
			Prequeue: cfg.prequeueUntil() != 0, Announced: cfg.Phase == PhaseAnnounced,
		},
		MaxWrites: opts.MaxWrites,
		Owner:     opts.Owner, LeaseFor: orDefault(opts.LeaseFor, defaultSweepLease),
		Clock: c.opts.Clock, Starts: &c.waitFrom,
	})
	return &HoldSweepReport{
		Expired: r.Expired, Served: r.Served, Closed: r.Closed, Cleared: r.Cleared, Waiting: r.Waiting,
		More: r.More, Skipped: r.Skipped, leaseUntil: EpochMillis(r.LeaseUntil),
	}, err
}

// defaultSweepLease is HoldSweepOptions.LeaseFor's default.
const defaultSweepLease = 30 * time.Second

// holdSweeper is the table of an event with holds as its hold sweep sees it: each of
// its methods is the row, or the rows, that it names (holdsweep.Store).
type holdSweeper struct {
	c   *Client
	cfg *eventItem
	n   int // the event's capacity shards
}

// Lease reads the event's Returns item (eventually consistent) for its sweep lease.
func (s *holdSweeper) Lease(ctx context.Context) (string, int64, error) {
	key, err := NewReturnsKey(s.cfg.EventID)
	if err != nil {
		return "", 0, err
	}
	var r seatReturns
	if _, err := s.c.getItem(ctx, key.Key(), false, &r); err != nil {
		return "", 0, fmt.Errorf("read the hold sweep lease of %s: %w", s.cfg.EventID, err)
	}
	return r.SweepOwner, int64(r.SweepUntil), nil
}

// TakeLease takes or renews the event's sweep lease for owner: the "hold sweep
// lease" row, UpdateItem PK EVENT#<eventId>#RETURNS, SK RETURNS, SET sweepOwner,
// sweepUntil = now + d; condition attribute_not_exists(sweepUntil) OR sweepUntil ≤
// now OR sweepOwner = owner. It reports false when another owner holds it.
func (s *holdSweeper) TakeLease(ctx context.Context, owner string, d time.Duration) (bool, error) {
	key, err := NewReturnsKey(s.cfg.EventID)
	if err != nil {
		return false, err
	}
	now := s.c.now()
	w := write{row: &sweepLeaseRow, key: key.Key(), args: args{
		pNow: now, pSweepOwner: owner, pSweepUntil: MillisOf(now.Time().Add(d)), pEventID: s.cfg.EventID,
	}}
	err = s.c.do(ctx, txOptions{}, []write{w})
	var lost *conditionLost
	switch {
	case errors.As(err, &lost):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("take the hold sweep lease of %s: %w", s.cfg.EventID, err)
	}
	return true, nil
}

// DueHolds queries a hold partition, PK EVENT#<eventId>#HOLDS#<shard>, SK <
// EXP#<by + 1 ms>, a page at a time.
func (s *holdSweeper) DueHolds(shard int, by int64) (holdsweep.Pages[holdsweep.Hold], error) {
	bound, err := expiresBy(EpochMillis(by))
	if err != nil {
		return nil, err
	}
	expr, err := expression.NewBuilder().WithKeyCondition(
		expression.Key(attrPK).Equal(expression.Value(holdPartition(s.cfg.EventID, shard))).
			And(expression.Key(attrSK).LessThan(expression.Value(bound)))).Build()
	if err != nil {
		return nil, err
	}
	in := s.c.query("", expr)
	return func(ctx context.Context, limit int) ([]holdsweep.Hold, bool, error) {
		in.Limit = aws.Int32(int32(limit))
		out, err := s.c.db.Query(ctx, in)
		if err != nil {
			return nil, false, fmt.Errorf("read the holds of %s: %w", s.cfg.EventID, err)
		}
		var items []holdItem
		if err := attributevalue.UnmarshalListOfMaps(out.Items, &items); err != nil {
			return nil, false, err
		}
		holds := make([]holdsweep.Hold, len(items))
		for i, h := range items {
			holds[i] = holdsweep.Hold{PK: h.PK, SK: h.SK, EventID: h.EventID, RequestID: h.RequestID, ExpiresAt: int64(h.ExpiresAt)}
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
		return holds, len(out.LastEvaluatedKey) != 0, nil
	}, nil
}

// Expire ends a hold that ran out: one TransactWriteItems of the "hold expired",
// "seat given to the waitlist" and "hold cleared" rows (endHold).
func (s *holdSweeper) Expire(ctx context.Context, h holdsweep.Hold) (bool, holdsweep.Request, error) {
	key, err := NewRequestKey(h.RequestID)
	if err != nil {
		return false, holdsweep.Request{}, err
	}
	req := &Request{RequestID: h.RequestID, EventID: h.EventID, HoldExpiresAt: EpochMillis(h.ExpiresAt)}
	t, err := s.c.endHold(ctx, key, req, &expireRow, "hold expired")
	switch {
	case errors.Is(err, ErrNotFound):
		return false, holdsweep.Request{State: holdsweep.Final}, nil // no request: a stray record
	case err != nil:
		return false, holdsweep.Request{}, fmt.Errorf("expire the hold of %s: %w", h.RequestID, err)
	case t.Applied:
		return true, holdsweep.Request{}, nil
	}
	return false, sweptRequest(&t.current.Request), nil
}

// Clear deletes a Hold item by the key it was read under: the "hold cleared" row.
func (s *holdSweeper) Clear(ctx context.Context, h holdsweep.Hold) error {
	w := write{row: &holdClearedRow, key: Key{PK: h.PK, SK: h.SK}}
	if err := s.c.do(ctx, txOptions{}, []write{w}); err != nil {
		return fmt.Errorf("clear the hold of %s: %w", h.RequestID, err)
	}
	return nil
}

// sweptRequest is what the hold sweep reads of a request.
func sweptRequest(r *Request) holdsweep.Request {
	state := holdsweep.Pending
	switch {
	case r.Status.IsTerminal():
		state = holdsweep.Final
	case r.Status == StatusHeld:
		state = holdsweep.Held
	case r.Status == StatusWaitlisted:
		state = holdsweep.Waitlisted
	}
	return holdsweep.Request{ID: r.RequestID, State: state, QueuedAt: int64(r.QueuedAt), HoldExpiresAt: int64(r.HoldExpiresAt)}
}

// SeatsLeft reads the seats on the event's Returns item, strongly consistently; none
// is zero seats.
func (s *holdSweeper) SeatsLeft(ctx context.Context) (int64, error) {
	key, err := NewReturnsKey(s.cfg.EventID)
	if err != nil {
		return 0, err
	}
	var r seatReturns
	if _, err := s.c.getItem(ctx, key.Key(), true, &r); err != nil {
		return 0, fmt.Errorf("read the seats given back of %s: %w", s.cfg.EventID, err)
	}
	return r.CapacityRemaining, nil
}

// Queue reads the event's requests in queue order, ListEventRequests a page at a
// time, every index shard from just after the place after when it is set.
func (s *holdSweeper) Queue(after *holdsweep.Place) (holdsweep.Pages[holdsweep.Request], error) {
	parts, err := EventPartitions(s.cfg.EventID, max(s.cfg.IndexShards, 1))
	if err != nil {
		return nil, err
	}
	cursor := ""
	if after != nil {
		k := QueuedAtSortKey{queuedAt: EpochMillis(after.QueuedAt), requestID: after.RequestID}
		if cursor, err = cursorAfter(parts, k); err != nil {
			return nil, err
		}
	}
	return func(ctx context.Context, limit int) ([]holdsweep.Request, bool, error) {
		page, err := s.c.ListEventRequests(ctx, s.cfg.EventID, EventListOptions{PageOptions: PageOptions{Limit: limit, Cursor: cursor}})
		if err != nil {
			return nil, false, err
		}
		reqs := make([]holdsweep.Request, len(page.Requests))
		for i := range page.Requests {
			reqs[i] = sweptRequest(&page.Requests[i])
		}
		cursor = page.NextCursor
		return reqs, cursor != "", nil
	}, nil
}

// Drawn hands f the pre-queue's drawn order (prequeueOrder) under the client's lock
// of it, once it is frozen.
func (s *holdSweeper) Drawn(ctx context.Context, f func(order []string, settled *int) (bool, error)) (bool, error) {
	view, err := s.c.prequeueOrder(ctx, s.cfg)
	defer view.Unlock()
	if err != nil || view.Order == nil {
		return false, err // not frozen yet: nobody of the pre-queue is waitlisted
	}
	return f(view.Order, &view.Settled)
}

// Request reads a request, strongly consistently.
func (s *holdSweeper) Request(ctx context.Context, id string) (holdsweep.Request, error) {
	req, err := s.c.getRequest(ctx, id, true)
	if err != nil {
		return holdsweep.Request{}, err
	}
	return sweptRequest(&req.Request), nil
}

// Serve gives one seat from the Returns item to a waitlisted request: one
// TransactWriteItems of the "returned seat taken", "waitlist served" and "hold
// recorded" rows. gone reports that no seat was left there.
func (s *holdSweeper) Serve(ctx context.Context, r holdsweep.Request) (served, gone bool, err error) {
	id := r.ID
	key, err := NewRequestKey(id)
	if err != nil {
		return false, false, err
	}
	rk, err := NewReturnsKey(s.cfg.EventID)
	if err != nil {
		return false, false, err
	}
	expires := s.c.holdExpiry(s.cfg.HoldFor)
	record, err := s.c.holdWrite(RequestRef{RequestID: id, EventID: s.cfg.EventID}, s.n, expires)
	if err != nil {
		return false, false, err
	}
	take := write{row: &returnedSeatTakenRow, key: rk.Key(), args: args{pNow: s.c.now()},
		lost: func(map[string]types.AttributeValue) (Transition, error) { return Transition{SoldOut: true}, nil }}
	w := write{row: &serveRow, args: args{pNow: s.c.now(), pHoldExpiresAt: expires}, note: "served from the waitlist"}
	t, err := s.c.apply(ctx, key, w, txOptions{}, take, record)
	switch {
	case err != nil:
		return false, false, fmt.Errorf("serve %s from the waitlist: %w", id, err)
	case t.SoldOut:
		return false, true, nil
	case t.Applied:
		s.c.countWaitlist(ctx, s.cfg.EventID, EpochMillis(r.QueuedAt), false)
	}
	return t.Applied, false, nil
}

// Close ends a waitlisted request of an event that closed: the "waitlist closed" row.
func (s *holdSweeper) Close(ctx context.Context, r holdsweep.Request) (bool, error) {
	key, err := NewRequestKey(r.ID)
	if err != nil {
		return false, err
	}
	t, err := s.c.apply(ctx, key, write{row: &waitlistClosedRow, args: args{pNow: s.c.now()}, note: "the event closed"}, txOptions{})
	if err != nil {
		return false, fmt.Errorf("close the waitlist of %s: %w", s.cfg.EventID, err)
	}
	if t.Applied {
		// Counted too: a worker whose copy of the config is older than the close may
		// still waitlist a loser, whose place the closed are not ahead of.
		s.c.countWaitlist(ctx, s.cfg.EventID, EpochMillis(r.QueuedAt), false)
	}
	return t.Applied, nil
}
