package asyncevent

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// DrawRecord is the Draw record of a LOTTERY event (PK EVENT#<eventId>, SK DRAW). It
// is created with the event, holding the secret seed whose SHA-256 the event's config
// publishes as seedCommitment; the draw reveals the seed and records the entries it
// drew from, so anyone can recompute the winners.
type DrawRecord struct {
	EntityType     EntityType `dynamodbav:"entityType"` // DRAW
	EventID        string     `dynamodbav:"eventId"`
	Phase          UIPhase    `dynamodbav:"phase"`
	WinnerCount    int64      `dynamodbav:"winnerCount"`
	SeedCommitment string     `dynamodbav:"seedCommitment"` // hex SHA-256 of the seed

	// Seed is the secret seed, hex. The library reveals it only once the draw starts.
	Seed string `dynamodbav:"seed"`

	// Set by the draw: how many entries it drew from, SHA-256 (hex) of their sorted
	// request IDs, and when it ran and was announced.
	EntryCount  int64       `dynamodbav:"entryCount,omitempty"`
	EntriesHash string      `dynamodbav:"entriesHash,omitempty"`
	DrawnAt     EpochMillis `dynamodbav:"drawnAt,omitempty"`
	AnnouncedAt EpochMillis `dynamodbav:"announcedAt,omitempty"`
}

type drawItem struct {
	Key
	DrawRecord
}

// seedBytes is the length of a lottery seed.
const seedBytes = 32

func newSeed() ([]byte, error) {
	seed := make([]byte, seedBytes)
	if _, err := rand.Read(seed); err != nil {
		return nil, fmt.Errorf("lottery seed: %w", err)
	}
	return seed, nil
}

// seedCommitment is the hex SHA-256 of a seed, published before the draw.
func seedCommitment(seed []byte) string {
	sum := sha256.Sum256(seed)
	return hex.EncodeToString(sum[:])
}

// lotteryEntry processes a LOTTERY message: the entry is queued (the worker fills
// queuedAt from the send time if ingest has not yet), checked by the service's
// handler, and kept QUEUED with uiPhase COLLECTING for the draw; an entry queued after
// the cutoff, or reaching the table after the draw froze its entries, ends
// REJECTED_CLOSED.
func (p *Processor) lotteryEntry(ctx context.Context, m Message, d Delivery) result {
	queuedAt := p.sentAt(d)
	t, err := p.c.MarkQueued(ctx, m, queuedAt)
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
	t, err = p.c.MarkClosed(ctx, m)
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

// MarkClosed ends a lottery entry queued after the cutoff, a case of seed 003's
// "lottery result" row: UpdateItem PK REQ#<requestId>, SK META, SET status = REJECTED,
// uiResult REJECTED, resultCode REJECTED_CLOSED, finishedAt; condition status =
// QUEUED. A lost condition is not an error: the Transition holds the request as it is.
func (c *Client) MarkClosed(ctx context.Context, m Message) (Transition, error) {
	key, err := NewRequestKey(m.RequestID)
	if err != nil {
		return Transition{}, err
	}
	t, err := c.apply(ctx, transition{
		key: key, from: []Status{StatusQueued}, to: StatusRejected,
		update: finish(UIRejected, ResultRejectedClosed, c.now()), note: "queued after the cutoff",
	})
	if err != nil {
		return t, fmt.Errorf("close entry %s: %w", m.RequestID, err)
	}
	return t, nil
}
