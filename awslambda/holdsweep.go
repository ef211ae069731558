package awslambda

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/asyncevent/asyncevent"
)

// SweepOptions configures a HoldSweeper. The zero value is valid.
type SweepOptions struct {
	// Events are the IDs of the events with holds (EventSettings.HoldFor) to sweep.
	// Default: every event the hold registry offers at each invocation
	// (asyncevent.Client.HoldEvents: the events with holds until an hour after their
	// end and hold). An event without holds, or unknown, fails its sweep at every
	// invocation, and the invocation reports it.
	Events []string

	// HoldSweepOptions configures each pass (asyncevent.Client.SweepHolds). MaxWrites
	// bounds the requests one pass moves (default 500). Owner, if set, makes each pass
	// take the event's sweep lease, as the Workers do, so that the function and the
	// Workers sweep an event one at a time; an event whose lease another owner holds
	// is skipped until the next invocation. Default: no lease (several sweeps at once
	// are safe, only wasteful).
	asyncevent.HoldSweepOptions

	// DeadlineMargin is how long before the function's deadline (Handle's ctx's) the
	// sweeper stops starting passes: a pass of MaxWrites transactions takes seconds.
	// Default: 5 seconds.
	DeadlineMargin time.Duration

	// Logger receives a line per event swept and per sweep that failed. Default:
	// discard.
	Logger *slog.Logger
}

// DefaultSweepDeadlineMargin is SweepOptions.DeadlineMargin's default.
const DefaultSweepDeadlineMargin = 5 * time.Second

// HoldSweeper runs the hold sweep of events with holds, for a function
// invoked on a schedule: it ends the holds that ran out, hands the seats given back
// to the waitlist and ends the waitlist of an event that closed. It is safe for
// concurrent use.
type HoldSweeper struct {
	c    *asyncevent.Client
	opts SweepOptions
	log  *slog.Logger
}

// NewHoldSweeper returns a HoldSweeper of opts.Events (default: the hold registry's)
// on c's table.
func NewHoldSweeper(c *asyncevent.Client, opts SweepOptions) (*HoldSweeper, error) {
	switch {
	case c == nil:
		return nil, fmt.Errorf("%w: awslambda.NewHoldSweeper needs a client", asyncevent.ErrInvalidOptions)
	}
	for _, id := range opts.Events {
		if id == "" {
			return nil, fmt.Errorf("%w: an empty event ID in SweepOptions.Events", asyncevent.ErrInvalidOptions)
		}
	}
	opts.Events = append([]string(nil), opts.Events...)
	if opts.DeadlineMargin <= 0 {
		opts.DeadlineMargin = DefaultSweepDeadlineMargin
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &HoldSweeper{c: c, opts: opts, log: log}, nil
}

// SweepResult is what one invocation of a HoldSweeper did: one EventSweep per event,
// in the order of SweepOptions.Events (or of the hold registry).
type SweepResult struct {
	Events []EventSweep
}

// EventSweep is what one invocation did for one event.
type EventSweep struct {
	EventID string
	Passes  int // the SweepHolds calls made
	// The counts summed over the passes; Waiting, More and Skipped as the last pass
	// left them. More is also true of an event whose passes the function's deadline
	// cut short, or never began: the next invocation goes on with it.
	asyncevent.HoldSweepReport
	Error string // the error of the pass that failed and ended the event's passes; "" when none did
}

// Handle runs the sweep of every event, for an EventBridge schedule (or rule) that
// invokes the function; it does not read the event. It makes rounds: each round
// runs one pass of every event that still has more to do, so that an event with a
// long backlog does not hold up the others, until none has, or DeadlineMargin before
// ctx's deadline (the function's). An event whose sweep fails is left until the next
// invocation and the others go on; Handle then returns their errors joined, with the
// result, so that the invocation counts as failed (an asynchronous invocation that
// fails is retried, which is safe: every write of the sweep is conditional). Last
// it writes the waitlists' counts (Client.FlushProgress).
func (h *HoldSweeper) Handle(ctx context.Context, _ events.EventBridgeEvent) (SweepResult, error) {
	startCtx := ctx // passes are started only while it lasts
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		startCtx, cancel = context.WithDeadline(ctx, deadline.Add(-h.opts.DeadlineMargin))
		defer cancel()
	}
	ids := h.opts.Events
	if len(ids) == 0 {
		listed, err := h.c.HoldEvents(ctx)
		if err != nil {
			return SweepResult{}, fmt.Errorf("hold sweep: %w", err)
		}
		for _, ev := range listed {
			ids = append(ids, ev.EventID)
		}
	}
	res := SweepResult{Events: make([]EventSweep, len(ids))}
	pending := make([]int, len(ids)) // the events with more to do, in turn
	for i, id := range ids {
		res.Events[i].EventID = id
		pending[i] = i
	}
	var errs []error
	for len(pending) > 0 && startCtx.Err() == nil {
		i := pending[0]
		pending = pending[1:]
		if err := h.pass(ctx, &res.Events[i]); err != nil {
			errs = append(errs, err)
			continue
		}
		if res.Events[i].More {
			pending = append(pending, i) // behind the others: the next round
		}
	}
	for _, i := range pending {
		res.Events[i].More = true // cut short by the deadline, or never begun
	}
	// The waitlists' counts of the requests served and closed, for their places, now:
	// the sandbox is frozen once the invocation returns.
	if err := h.c.FlushProgress(context.WithoutCancel(ctx)); err != nil {
		errs = append(errs, fmt.Errorf("hold sweep: %w", err))
	}
	for _, s := range res.Events {
		h.log.InfoContext(ctx, "hold sweep", slog.String("eventId", s.EventID), slog.Int("passes", s.Passes),
			slog.Int("expired", s.Expired), slog.Int("served", s.Served), slog.Int("closed", s.Closed),
			slog.Int("cleared", s.Cleared), slog.Int64("waiting", s.Waiting), slog.Bool("more", s.More), slog.Bool("skipped", s.Skipped))
	}
	return res, errors.Join(errs...)
}

// pass runs one SweepHolds of s's event and adds its report to s.
func (h *HoldSweeper) pass(ctx context.Context, s *EventSweep) error {
	rep, err := h.c.SweepHolds(ctx, s.EventID, h.opts.HoldSweepOptions)
	s.Passes++
	if rep != nil {
		s.Expired += rep.Expired
		s.Served += rep.Served
		s.Closed += rep.Closed
		s.Cleared += rep.Cleared
		s.Waiting, s.More, s.Skipped = rep.Waiting, rep.More, rep.Skipped
	}
	if err != nil {
		s.Error = err.Error()
		h.log.ErrorContext(ctx, "hold sweep failed", slog.String("eventId", s.EventID), slog.Any("error", err))
		return fmt.Errorf("sweep the holds of %s: %w", s.EventID, err)
	}
	return nil
}
