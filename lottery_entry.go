package asyncevent

import (
	"context"
	"errors"
)

// lotteryEntry processes a LOTTERY message: the entry is queued (the worker fills
// queuedAt from the send time if ingest has not yet), checked by the service's
// handler, and kept QUEUED with uiPhase COLLECTING for the draw; an entry queued after
// the cutoff, or reaching the table after the draw froze its entries, ends
// REJECTED_CLOSED.
func (p *Processor) lotteryEntry(ctx context.Context, m Message, d Delivery) result {
	queuedAt := p.sentAt(d)
	t, err := p.c.MarkQueued(ctx, m.Ref())
	if errors.Is(err, ErrNotFound) {
		return notFound()
	}
	if err != nil {
		return p.failed(ctx, m, d, nil, err)
	}
	if !t.Applied {
		switch cur := t.Current; {
		case cur.Status.IsTerminal():
			return result{action: actDelete, outcome: Outcome{Kind: OutcomeDuplicate, ResultCode: cur.ResultCode}}
		case cur.Status != StatusQueued:
			return p.notStarted(m, cur)
		default:
			queuedAt = cur.QueuedAt
		}
	}
	if err := p.handle(ctx, m); err != nil {
		return p.failed(ctx, m, d, nil, err)
	}
	event, err := p.c.cachedEvent(ctx, m.EventID)
	if err != nil {
		return p.failed(ctx, m, d, nil, err)
	}
	inTime := queuedAt <= event.LotteryCutoffAt
	if inTime && p.c.now() > event.LotteryCutoffAt {
		// Past the cutoff the draw may have frozen its entries already: an entry that
		// reaches the table after that is too late for it.
		record, err := p.c.getDraw(ctx, m.EventID)
		if err != nil {
			return p.failed(ctx, m, d, nil, err)
		}
		inTime = record.Phase == PhaseCollecting
	}
	if inTime {
		return result{action: actDelete, outcome: Outcome{Kind: OutcomeCollected}}
	}
	t, err = p.c.MarkClosed(ctx, m.RequestID)
	switch {
	case err != nil:
		return p.failed(ctx, m, d, nil, err)
	case !t.Applied && !t.Current.Status.IsTerminal():
		return p.notStarted(m, t.Current)
	case !t.Applied:
		return result{action: actDelete, outcome: Outcome{Kind: OutcomeDuplicate, ResultCode: t.Current.ResultCode}}
	}
	return result{action: actDelete, outcome: Outcome{Kind: OutcomeRejected, ResultCode: ResultRejectedClosed}}
}
