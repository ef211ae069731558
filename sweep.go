package asyncevent

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/asyncevent/asyncevent/queue"
)

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
