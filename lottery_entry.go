package asyncevent

import (
	"context"
	"errors"

	"github.com/asyncevent/asyncevent/queue"
)

// A lottery entry in the worker. The entries of a draw are the requests queued by the
// cutoff, fixed when their put lands (queuedAt and the index keys are written then), so
// the worker never decides whether a request is an entry, only what it does before the
// draw takes over:
//
//   - a request queued after the cutoff ends REJECTED_CLOSED (the row's condition
//     holds queuedAt > lotteryCutoffAt, so an entry cannot be closed as late);
//   - an entry met while the event is COLLECTING runs the service's handler and is
//     collected (startedAt written, once: a redelivered collected entry is a
//     duplicate);
//   - an entry met from the entries' fence on (entryFence: the moment the draw may
//     begin, less a margin), or once the event is DRAWING, is left to the draw, its
//     message acknowledged: the draw finalises it like any other, collected or not,
//     or, when its put landed after the draw recorded the entries, ends it
//     REJECTED_NOT_DRAWN;
//   - a request queued by the cutoff met once the event is ANNOUNCED and still
//     waiting is no recorded entry (the draw finalised all of those before it
//     announced): it ends REJECTED_NOT_DRAWN (the Sweep sends such a request again);
//   - an entry's final failure (the handler refused it, its receives ran out) is
//     sent only before the entries' fence, under that deadline, so that it rarely
//     meets a draw under way; what keeps a failure that lands later out of the draw
//     is no clock but the "entry failure" row's condition, attribute_not_exists
//     (startedAt): the draw collects every entry it records before it records it.

// lotteryEntry processes a LOTTERY message.
func (p *Processor) lotteryEntry(ctx context.Context, m Message, d queue.Delivery, extend *extender) result {
	r, err := p.c.getRequest(ctx, m.RequestID, true)
	if errors.Is(err, ErrNotFound) {
		return notFound()
	}
	if err != nil {
		return p.failed(ctx, m, d, nil, err)
	}
	switch {
	case r.Status.IsTerminal():
		return result{action: actDelete, outcome: Outcome{Kind: OutcomeDuplicate, ResultCode: r.ResultCode}}
	case r.Status != StatusReceived && r.Status != StatusQueued:
		return p.notStarted(m, r)
	case r.QueuedAt > r.LotteryCutoffAt:
		return p.rejectEntry(ctx, m, d, p.c.closeEntry, ResultRejectedClosed)
	}
	event, err := p.c.cachedEvent(ctx, m.EventID)
	if err != nil {
		return p.failed(ctx, m, d, nil, err)
	}
	switch {
	case event.Phase == PhaseAnnounced:
		// The draw finalised every entry it recorded before it announced: one still
		// waiting is not in the record (its put landed after it).
		return p.rejectEntry(ctx, m, d, p.c.markNotDrawn, ResultNotDrawn)
	case r.StartedAt != 0:
		return result{action: actDelete, outcome: Outcome{Kind: OutcomeDuplicate}}
	case event.Phase == PhaseDrawing || !p.c.opts.Clock().Before(p.c.entryFence(event)):
		return leftToDraw()
	}
	stop := p.keepVisible(ctx, m, extend)
	err = p.handle(ctx, m)
	stop()
	if err != nil {
		return p.failed(ctx, m, d, nil, err)
	}
	t, err := p.c.collectEntry(ctx, m.RequestID)
	switch {
	case err != nil:
		return p.failed(ctx, m, d, nil, err)
	case !t.Applied && t.current.Status.IsTerminal():
		return result{action: actDelete, outcome: Outcome{Kind: OutcomeDuplicate, ResultCode: t.current.ResultCode}}
	case !t.Applied && t.current.StartedAt != 0:
		return result{action: actDelete, outcome: Outcome{Kind: OutcomeDuplicate}}
	case !t.Applied:
		return p.notStarted(m, t.current)
	}
	return result{action: actDelete, outcome: Outcome{Kind: OutcomeCollected}}
}

// rejectEntry ends a lottery request REJECTED with code by end (MarkClosed, for one
// queued after the cutoff; markNotDrawn, for one queued by it that an announced draw
// did not record).
func (p *Processor) rejectEntry(ctx context.Context, m Message, d queue.Delivery, end func(context.Context, string) (Transition, error), code ResultCode) result {
	t, err := end(ctx, m.RequestID)
	switch {
	case err != nil:
		return p.failed(ctx, m, d, nil, err)
	case !t.Applied && !t.current.Status.IsTerminal():
		return p.notStarted(m, t.current)
	case !t.Applied:
		return result{action: actDelete, outcome: Outcome{Kind: OutcomeDuplicate, ResultCode: t.current.ResultCode}}
	}
	return result{action: actDelete, outcome: Outcome{Kind: OutcomeRejected, ResultCode: code}}
}
