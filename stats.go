package asyncevent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/asyncevent/asyncevent/internal/stats"
)

// EventStats sums up an event's requests for the operator's screen.
type EventStats struct {
	EventID   string
	EventType EventType
	Requests  int // every request of the event: each is on GSI2 from its put, RECEIVED included

	ByStatus     map[Status]int
	ByResultCode map[ResultCode]int

	// FIRST_COME: the event's capacity (seats added included), the seats its
	// capacity shards hold, and the seats on its pool (PoolRemaining: seats added
	// once the shards were empty, or given back by a release, an expiry or a
	// cancel, and not yet taken).
	CapacityTotal     int64
	CapacityRemaining int64
	PoolRemaining     int64

	// QueueWait is the time from queuedAt until a worker reached the request: its
	// startedAt (for a loser of an event known to be sold out, ended in one write,
	// its finishedAt too). A request that ended at ingest (FAILED_INGEST_ENQUEUE) was
	// never reached and is not counted. Processing is finishedAt − startedAt of the
	// requests a worker held under a lease (PROCESSING) before they finished, and of
	// the first-come winners of a home claim (from the delivery's start to its
	// SUCCEEDED); the one-write rejections of a sold-out event are not processing.
	QueueWait  Durations
	Processing Durations

	// Fairness compares processing order with queue order (FIRST_COME).
	Fairness Fairness

	// Queue, of a FIRST_COME event whose progress is counted (Options.ProgressEvery),
	// is its line: depth (here counted from the requests read: RECEIVED, QUEUED and
	// PROCESSING), the workers' rate, the time to drain it, second by second
	// (QueueStats). Nil when it could not be read, or for a LOTTERY.
	Queue *QueueStats

	// Holds, of a FIRST_COME event with holds (EventSettings.HoldFor), says how its
	// seats moved; nil for other events.
	Holds *HoldStats
}

// HoldStats says how the seats of an event with holds moved: held, confirmed, given
// back (released or expired), and handed on to the waitlist.
//
// It is two reads, not one snapshot: the requests (Held, Confirmed, Waitlisted…),
// then the event's Returns item (the Seats… counts). A hold sweep that hands seats on
// between them shows them handed on (SeatsWaiting 0) while the requests that took
// them are not yet counted HELD; a caller that waits for "no hold and no seat
// waiting" looks at the HELD requests once more after it.
type HoldStats struct {
	HoldFor    time.Duration
	Held       int // HELD now
	Confirmed  int // SUCCEEDED: paid
	Released   int // REJECTED_RELEASED: gave up a hold, or left the waitlist
	Expired    int // REJECTED_HOLD_EXPIRED: the hold ran out
	Waitlisted int // WAITLISTED now
	// SeatsReturned counts the seats given back (released or expired holds),
	// SeatsServed those handed on to the waitlist, SeatsWaiting those not handed on
	// yet: the Returns item's figures.
	SeatsReturned, SeatsServed, SeatsWaiting int64
}

// Durations summarises a set of durations.
type Durations struct {
	Count         int
	P50, P95, Max time.Duration
}

// Fairness reports how far a FIRST_COME event's outcomes strayed from queue order,
// counted over its requests ranked by (queuedAt, requestId), the GSI2SK order. A
// winner is a request that won a seat (SUCCEEDED, or with holds HELD or with a
// holdExpiresAt: confirmed, released, expired); a loser one rejected for capacity
// (or, with holds, left WAITLISTED). A pre-queue's entries are left out: they are
// served in their drawn order (VerifyPrequeue checks it), the clicks of the sale
// after them in queue order.
//
// Inversions counts losers, LateWinners counts winners, of the same pairs (a loser
// ranked before a winner): three losers before one winner are three inversions and
// one late winner. They are zero together, and both gaps span the same pair, the
// earliest such loser and the latest such winner, so MaxGap and LateWinnerMaxGap
// are equal.
type Fairness struct {
	// Inversions counts the losers ranked before at least one winner: each is a
	// request that lost while a request queued after it won.
	Inversions int
	// MaxGap is the largest such distance in queue time: the last winner's queuedAt
	// minus the inverted loser's queuedAt.
	MaxGap time.Duration
	// LateWinners counts the winners ranked after at least one loser: each won
	// while a request queued before it lost. A ranked admission
	// (AdmissionRanked) promises none.
	LateWinners int
	// LateWinnerMaxGap is the largest winner's queuedAt minus the queuedAt of the
	// earliest-ranked loser before it.
	LateWinnerMaxGap time.Duration
	// Late counts the requests answered ResultLate (REJECTED_LATE): the ranked
	// admission passed their place without seeing them. They are not losers of the
	// line and count in neither Inversions nor LateWinners.
	Late int
}

// statsRow is what EventStats reads of a request.
type statsRow struct {
	GSI2SK     string      `dynamodbav:"GSI2SK"` // its place in queue order
	Status     Status      `dynamodbav:"status"`
	ResultCode ResultCode  `dynamodbav:"resultCode"`
	QueuedAt   EpochMillis `dynamodbav:"queuedAt"`
	StartedAt  EpochMillis `dynamodbav:"startedAt"`
	FinishedAt EpochMillis `dynamodbav:"finishedAt"`
	LeaseOwner string      `dynamodbav:"leaseOwner"` // set when a worker held it PROCESSING
	SeatShard  *int        `dynamodbav:"seatShard"`  // set when a first-come claim took it on (home claim included)
	// HoldExpiresAt is set on a request that held a seat (an event with holds): its
	// finishedAt is a person's decision (a confirm, a release) or its hold's end.
	HoldExpiresAt EpochMillis `dynamodbav:"holdExpiresAt"`
}

// EventStats computes an event's statistics from its requests: the "event
// requests" row with the server-side counting it asks for, Query GSI2 GSI2PK =
// EVENT#<eventId> in queue order, all pages, projecting only the status, result code
// and times; for a FIRST_COME event also GetItem of its CAPACITY item. Its cost grows
// with the event: it reads every request once (about 0.5 RCU per 4 KB of projected
// data, eventually consistent), so call it for a screen, not per click. An unknown
// event is ErrEventNotFound.
func (c *Client) EventStats(ctx context.Context, eventID string) (*EventStats, error) {
	cfg, err := c.getEvent(ctx, eventID)
	if err != nil {
		return nil, err
	}
	st := &EventStats{EventID: eventID, EventType: cfg.EventType, ByStatus: map[Status]int{}, ByResultCode: map[ResultCode]int{}}
	if cfg.EventType == FirstCome {
		capacity, err := c.GetCapacity(ctx, eventID)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return nil, err
		}
		if capacity != nil {
			st.CapacityTotal, st.CapacityRemaining = cfg.CapacityTotal, capacity.CapacityRemaining
		}
		if st.PoolRemaining, err = c.poolSeats(ctx, cfg); err != nil {
			return nil, err
		}
	}
	rows, err := c.statsRows(ctx, eventID)
	if err != nil {
		return nil, err
	}
	st.Requests = len(rows)
	var waits, runs []time.Duration
	for _, r := range rows {
		st.ByStatus[r.Status]++
		if r.ResultCode != "" {
			st.ByResultCode[r.ResultCode]++
		}
		if reached := cmp.Or(r.StartedAt, r.FinishedAt); reached != 0 && r.QueuedAt != 0 && r.ResultCode != ResultFailedIngestEnqueue {
			waits = append(waits, reached.Time().Sub(r.QueuedAt.Time()))
		}
		if r.FinishedAt != 0 && r.StartedAt != 0 && (r.LeaseOwner != "" || r.SeatShard != nil) && r.HoldExpiresAt == 0 {
			runs = append(runs, r.FinishedAt.Time().Sub(r.StartedAt.Time()))
		}
	}
	st.QueueWait, st.Processing = Durations(stats.Summarise(waits)), Durations(stats.Summarise(runs))
	if cfg.EventType == FirstCome && cfg.HoldFor > 0 {
		if st.Holds, err = c.holdStats(ctx, cfg, st); err != nil {
			return nil, err
		}
	}
	if cfg.EventType == FirstCome && c.progress != nil {
		if v, err := c.eventProgress(ctx, cfg, c.opts.ProgressCacheTTL, time.Time{}); err == nil {
			q := c.queueStats(v, c.opts.Clock())
			// The requests read just now say the depth exactly; the progress, the rate.
			q.Depth = int64(st.ByStatus[StatusReceived] + st.ByStatus[StatusQueued] + st.ByStatus[StatusProcessing])
			q.DrainTime = 0
			if q.Rate > 0 {
				q.DrainTime = time.Duration(float64(q.Depth) / q.Rate * float64(time.Second))
			}
			st.Queue = &q
		}
	}
	if cfg.EventType == FirstCome {
		pool := -1 // the seatShard of a claim on the pool, left out (no holds: no waitlist orders it)
		if cfg.HoldFor == 0 {
			pool = max(cfg.CapacityShards, 1)
		}
		sale := rows // a pre-queue's entries go in their drawn order, not queue order: VerifyPrequeue checks them
		if until := cfg.prequeueUntil(); until != 0 {
			sale = slices.DeleteFunc(slices.Clone(rows), func(r statsRow) bool { return r.QueuedAt < until })
		}
		st.Fairness = fairness(sale, pool)
	}
	return st, nil
}

// poolSeats returns the seats on a FIRST_COME event's pool: GetItem PK
// EVENT#<eventId>#RETURNS, SK RETURNS, when the event has one (holds, or a
// poolVersion: seats added to it, or a cancel), eventually consistent.
func (c *Client) poolSeats(ctx context.Context, cfg *eventItem) (int64, error) {
	if cfg.HoldFor == 0 && cfg.PoolVersion == 0 {
		return 0, nil
	}
	key, err := NewReturnsKey(cfg.EventID)
	if err != nil {
		return 0, err
	}
	var r seatReturns
	if _, err := c.getItem(ctx, key.Key(), false, &r); err != nil {
		return 0, fmt.Errorf("the pool of %s: %w", cfg.EventID, err)
	}
	return r.CapacityRemaining, nil
}

// holdStats reads the Returns item of an event with holds (GetItem PK
// EVENT#<eventId>#RETURNS, SK RETURNS) and sums up its seats' moves.
func (c *Client) holdStats(ctx context.Context, cfg *eventItem, st *EventStats) (*HoldStats, error) {
	key, err := NewReturnsKey(cfg.EventID)
	if err != nil {
		return nil, err
	}
	var r seatReturns
	if _, err := c.getItem(ctx, key.Key(), false, &r); err != nil {
		return nil, fmt.Errorf("stats of %s: %w", cfg.EventID, err)
	}
	return &HoldStats{
		HoldFor: cfg.HoldFor, Held: st.ByStatus[StatusHeld], Confirmed: st.ByStatus[StatusSucceeded],
		Released: st.ByResultCode[ResultReleased], Expired: st.ByResultCode[ResultHoldExpired],
		Waitlisted:    st.ByStatus[StatusWaitlisted],
		SeatsReturned: r.Returned, SeatsServed: r.Served, SeatsWaiting: r.CapacityRemaining,
	}, nil
}

// statsRows reads an event's requests from GSI2, in queue order over all its shards.
func (c *Client) statsRows(ctx context.Context, eventID string) ([]statsRow, error) {
	rows, err := allEventRows[statsRow](ctx, c, eventID, nil, attrGSI2SK, attrStatus, attrResultCode, attrQueuedAt, attrStartedAt, attrFinishedAt, attrLeaseOwner, attrSeatShard, attrHoldExpiresAt)
	slices.SortStableFunc(rows, inQueueRank)
	return rows, err
}

// inQueueRank orders requests by rank, (queuedAt, requestId): their GSI2SK's order.
func inQueueRank(a, b statsRow) int { return strings.Compare(a.GSI2SK, b.GSI2SK) }

// fairness counts the inversions and the late winners of rows, in queue order (see
// Fairness). A winner whose seatShard is pool took a seat that reached the event's
// pool after the losers before it were turned away (seats added, or a cancel's),
// which is no inversion: it is neither winner nor loser.
func fairness(rows []statsRow, pool int) Fairness {
	entries := make([]stats.Entry, len(rows))
	for i, r := range rows {
		entries[i] = stats.Entry{QueuedAt: int64(r.QueuedAt), Role: lineRoleOf(r, pool)}
	}
	return Fairness(stats.Count(entries))
}

// lineRoleOf returns r's role in its event's line; pool is the seatShard of a claim
// on the pool (-1 for an event with holds, whose waitlist orders the pool's seats).
func lineRoleOf(r statsRow, pool int) stats.Role {
	switch {
	case r.ResultCode == ResultLate:
		return stats.Late
	case r.SeatShard != nil && *r.SeatShard == pool:
		return stats.Other
	case r.Status == StatusSucceeded, r.Status == StatusHeld, r.HoldExpiresAt != 0:
		return stats.Winner
	case r.ResultCode == ResultRejectedCapacity, r.Status == StatusWaitlisted:
		return stats.Loser
	}
	return stats.Other
}
