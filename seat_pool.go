package asyncevent

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/asyncevent/asyncevent/entity"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The seat pool: the event's Returns item (PK EVENT#<eventId>#RETURNS, SK RETURNS),
// where the seats that come back wait. A hold that ended unpaid gives its seat back
// here (returnSeat), an operator adds seats here (AddCapacity), a cancel frees one here
// (CancelRequest). Seats leave it to the waitlist, earliest first (the hold sweep's
// serve), or to a claim on the pool (seat.go's claimPool).

// seatReturns is an event's Returns item (PK EVENT#<eventId>#RETURNS, SK RETURNS):
// the seats given back by holds that ended unpaid and not yet handed to the waitlist
// (capacityRemaining), with the counts of seats given back and handed on, and the
// lease of the worker that sweeps the event's holds. Written first by the first seat
// given back, or the first sweep lease.
type seatReturns struct {
	Key
	EntityType        entity.Type `dynamodbav:"entityType"` // RETURNS
	EventID           string      `dynamodbav:"eventId"`
	CapacityRemaining int64       `dynamodbav:"capacityRemaining"`
	Returned          int64       `dynamodbav:"returned"`
	Served            int64       `dynamodbav:"served"`
	Added             int64       `dynamodbav:"added,omitempty"`     // seats an operator added to the pool
	Cancelled         int64       `dynamodbav:"cancelled,omitempty"` // seats of cancelled participations
	Holders           []string    `dynamodbav:"holders,omitempty,stringset"`
	SweepOwner        string      `dynamodbav:"sweepOwner,omitempty"`
	SweepUntil        EpochMillis `dynamodbav:"sweepUntil,omitempty"`
	UpdatedAt         EpochMillis `dynamodbav:"updatedAt,omitempty"`
}

// The attribute names of the Returns item that its rows name.
const (
	attrReturned   = "returned"
	attrServed     = "served"
	attrAdded      = "added"
	attrCancelled  = "cancelled"
	attrSweepOwner = "sweepOwner"
	attrSweepUntil = "sweepUntil"
	attrEntityType = "entityType"
	attrEventID    = "eventId"
)

var (
	// returnsSets name the Returns item on its first write.
	returnsSets = []set{
		setIfMissing(attrEntityType, entity.Returns), setIfMissing(attrEventID, pEventID), setTo(attrUpdatedAt, pNow),
	}
	seatReturnedRow = row{
		name: "seat given to the waitlist", method: "Release", item: entity.Returns, op: opUpdate,
		sets: returnsSets,
		adds: []set{addTo(attrCapacityRemaining, 1), addTo(attrReturned, 1)},
	}
	returnedSeatTakenRow = row{
		name: "returned seat taken", method: "SweepHolds", item: entity.Returns, op: opUpdate, cond: seatLeft,
		sets: []set{
			setTo(attrCapacityRemaining, expression.Name(attrCapacityRemaining).Minus(expression.Value(1))),
			setTo(attrUpdatedAt, pNow),
		},
		adds: []set{addTo(attrServed, 1)},
	}
	poolSeatsAddedRow = row{
		name: "capacity added to the pool", method: "AddCapacity", item: entity.Returns, op: opUpdate,
		sets: append(slices.Clone(returnsSets), setTo(attrPoolVersion, pPoolVersion)),
		adds: []set{addTo(attrCapacityRemaining, pSeats), addTo(attrAdded, pSeats)},
	}
	poolCancelledRow = row{
		name: "seat of a cancel to the pool", method: "CancelRequest", item: entity.Returns, op: opUpdate,
		sets: append(slices.Clone(returnsSets), setTo(attrPoolVersion, pPoolVersion)),
		adds: []set{addTo(attrCapacityRemaining, 1), addTo(attrCancelled, 1)},
	}
)

// The hold sweep's walk of an event's requests reads pages of walkPage requests, and
// moves its starting point only past requests queued more than walkSettle ago: a
// request's put shows on the index a moment after it lands.
const (
	walkPage   = 500
	walkSettle = time.Minute
	// walkReads bounds the requests one walk reads past its starting point: with a
	// seat given back and no one waitlisted behind a backlog still QUEUED, a pass
	// reads this much and no more; the seat waits until the backlog's head settles.
	walkReads = 4 * walkPage
	// walkRestart is how long a walk's starting point is kept before a walk reads
	// the event from its first request again, so that a request that showed on the
	// index long after its queuedAt (a put delayed past walkSettle) is not passed
	// over for good.
	walkRestart = 5 * time.Minute
)

// returnSeat returns the write that puts one seat on the event's Returns item.
func (c *Client) returnSeat(eventID string) (write, error) {
	key, err := NewReturnsKey(eventID)
	if err != nil {
		return write{}, err
	}
	return write{row: &seatReturnedRow, key: key.Key(), args: args{pNow: c.now(), pEventID: eventID}}, nil
}

// returns reads the event's Returns item strongly consistently; none is zero seats.
func (s *holdSweep) returns(ctx context.Context) (*seatReturns, error) {
	key, err := NewReturnsKey(s.cfg.EventID)
	if err != nil {
		return nil, err
	}
	var r seatReturns
	if _, err := s.c.getItem(ctx, key.Key(), true, &r); err != nil {
		return nil, fmt.Errorf("read the seats given back of %s: %w", s.cfg.EventID, err)
	}
	return &r, nil
}

// serve hands the seats given back to the earliest waitlisted requests.
func (s *holdSweep) serve(ctx context.Context) error {
	r, err := s.returns(ctx)
	if err != nil {
		return err
	}
	left := r.CapacityRemaining
	if left > 0 && s.budget > 0 && s.cfg.prequeueUntil() != 0 {
		// A pre-queue's entries come first, in their drawn order; the sale's
		// clicks, waitlisted only once the pre-queue was served, after them.
		done, err := s.serveDrawn(ctx, &left)
		if err != nil || !done || s.cfg.Phase != PhaseAnnounced {
			s.report.Waiting = max(left, 0)
			return err
		}
	}
	if left > 0 && s.budget > 0 {
		err = s.walk(ctx, func(req *Request) (settled, stop bool, err error) {
			if req.Status != StatusWaitlisted {
				return false, false, nil
			}
			served, gone, err := s.serveOne(ctx, req)
			switch {
			case err != nil:
				return false, true, err
			case gone:
				left = 0
			case served:
				left--
				s.budget--
				s.report.Served++
			}
			return served, left <= 0 || s.budget <= 0, nil
		})
	}
	s.report.Waiting = max(left, 0)
	return err
}

// serveDrawn hands the seats given back to the pre-queue's waitlisted entries in
// their drawn order, from past the entries this client found settled for good, up to
// the first entry the serve has not decided yet, and reports whether every entry is
// settled (the sale's waitlist comes next). Each
// entry's status is read strongly consistent; the "waitlist served" row's condition
// (WAITLISTED) decides.
func (s *holdSweep) serveDrawn(ctx context.Context, left *int64) (bool, error) {
	view, err := s.c.prequeueOrder(ctx, s.cfg)
	defer view.mu.Unlock()
	if err != nil || view.order == nil {
		return false, err // not frozen yet: nobody of the pre-queue is waitlisted
	}
	moving := true
	for i := view.settled; i < len(view.order); i++ {
		if *left <= 0 || s.budget <= 0 {
			return false, nil
		}
		req, err := s.c.getRequest(ctx, view.order[i], true)
		if err != nil {
			return false, err
		}
		if req.Status == StatusWaitlisted {
			served, gone, err := s.serveOne(ctx, &req.Request)
			switch {
			case err != nil:
				return false, err
			case gone:
				*left = 0
				return false, nil
			case served:
				*left--
				s.budget--
				s.report.Served++
				req.Status = StatusHeld
			}
		}
		if moving = moving && (req.Status.IsTerminal() || req.Status == StatusHeld); moving {
			view.settled = i + 1
		}
		if !req.Status.IsTerminal() && req.Status != StatusHeld && req.Status != StatusWaitlisted {
			return false, nil // undecided yet (the serve runs): no entry after it goes first
		}
	}
	return moving, nil
}

// close ends the waitlist of an event that closed.
func (s *holdSweep) close(ctx context.Context) error {
	if s.budget <= 0 {
		return nil
	}
	return s.walk(ctx, func(req *Request) (settled, stop bool, err error) {
		if req.Status != StatusWaitlisted {
			return false, false, nil
		}
		key, err := NewRequestKey(req.RequestID)
		if err != nil {
			return false, true, err
		}
		t, err := s.c.apply(ctx, key, write{row: &waitlistClosedRow, args: args{pNow: s.c.now()}, note: "the event closed"}, txOptions{})
		if err != nil {
			return false, true, fmt.Errorf("close the waitlist of %s: %w", s.cfg.EventID, err)
		}
		if t.Applied {
			s.budget--
			s.report.Closed++
		}
		return t.Applied, s.budget <= 0, nil
	})
}

// walkFrom is where a client's walks of an event begin, and since when.
type walkFrom struct {
	after QueuedAtSortKey
	since time.Time
}

// walk hands the event's requests to visit in queue order, from after the last
// request that this client's walks found settled for good with every request before it
// (final or HELD: neither becomes WAITLISTED again; and queued over walkSettle
// before), until visit says stop or the requests end. visit reports whether the
// request it was handed is settled now (it served or closed it). Every index shard is
// read afresh from that point each time, so a pass reads the waitlist's head and what
// came after it, not the winners ahead of it, and a walk of a settled event reads
// nothing. A walk reads at most walkReads requests, and every walkRestart the walk
// begins again at the event's first request.
func (s *holdSweep) walk(ctx context.Context, visit func(*Request) (settled, stop bool, err error)) error {
	parts, err := EventPartitions(s.cfg.EventID, max(s.cfg.IndexShards, 1))
	if err != nil {
		return err
	}
	cursor := ""
	now := s.c.opts.Clock()
	since := now
	if v, known := s.c.waitFrom.Load(s.cfg.EventID); known && now.Sub(v.(walkFrom).since) < walkRestart {
		from := v.(walkFrom)
		since = from.since
		if cursor, err = cursorAfter(parts, from.after); err != nil {
			return err
		}
	}
	recent := MillisOf(now.Add(-walkSettle))
	moving := true
	for read := 0; read < walkReads; {
		page, err := s.c.ListEventRequests(ctx, s.cfg.EventID, EventListOptions{Limit: walkPage, Cursor: cursor})
		if err != nil {
			return err
		}
		read += len(page.Requests)
		for i := range page.Requests {
			req := &page.Requests[i]
			done, stop, err := visit(req)
			if moving = moving && (done || req.Status.IsTerminal() || req.Status == StatusHeld) && req.QueuedAt < recent; moving {
				if k, kerr := NewQueuedAtSortKey(req.QueuedAt, req.RequestID); kerr == nil {
					s.c.waitFrom.Store(s.cfg.EventID, walkFrom{after: k, since: since})
				}
			}
			if err != nil || stop {
				return err
			}
		}
		if page.NextCursor == "" {
			return nil
		}
		cursor = page.NextCursor
	}
	return nil
}

// serveOne gives one seat from the Returns item to a waitlisted request, and reports
// whether it did, or whether no seat is left there.
func (s *holdSweep) serveOne(ctx context.Context, req *Request) (served, gone bool, err error) {
	key, err := NewRequestKey(req.RequestID)
	if err != nil {
		return false, false, err
	}
	rk, err := NewReturnsKey(req.EventID)
	if err != nil {
		return false, false, err
	}
	expires := s.c.holdExpiry(s.cfg.HoldFor)
	record, err := s.c.holdWrite(req.Ref(), s.n, expires)
	if err != nil {
		return false, false, err
	}
	take := write{row: &returnedSeatTakenRow, key: rk.Key(), args: args{pNow: s.c.now()},
		lost: func(map[string]types.AttributeValue) (Transition, error) { return Transition{SoldOut: true}, nil }}
	w := write{row: &serveRow, args: args{pNow: s.c.now(), pHoldExpiresAt: expires}, note: "served from the waitlist"}
	t, err := s.c.apply(ctx, key, w, txOptions{}, take, record)
	switch {
	case err != nil:
		return false, false, fmt.Errorf("serve %s from the waitlist: %w", req.RequestID, err)
	case t.SoldOut:
		return false, true, nil
	}
	return t.Applied, false, nil
}
