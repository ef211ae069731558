package seatclaim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/asyncevent/asyncevent/internal/ctxsleep"
)

const (
	// claimAttempts is how many times a claim refused for throughput (or held up by
	// transactions) is sent on one place before the walk moves on.
	claimAttempts        = 3
	claimBackoffFirst    = 20 * time.Millisecond
	claimBackoffDoubling = 4
	closeBackoffFirst    = 20 * time.Millisecond
	closeBackoffCap      = 4 // doublings of Close's wait
	// LeaveCloseTries bounds the sends of a close that lets a claim leave a place that
	// refuses it for throughput (about 3 s of backoff): a shard refusing every write
	// keeps the request, whose message comes back later, rather than a worker.
	LeaveCloseTries = 12
)

// ClaimOn sends the claim of a seat on c's place at its epoch, again while DynamoDB
// refuses it for throughput or a transaction holds the item, at most claimAttempts
// times, and records on c what it met. An error leaves unknown whether the claim was
// applied: it stays on the place (the next delivery claims there again and finds its
// token), or its request's end closes the place first.
func ClaimOn(ctx context.Context, p Places, c *Claim) (Outcome, error) {
	send, err := p.Claim(c.Place, c.Epoch)
	if err != nil {
		return 0, err
	}
	var busy error
	refused := false
	for attempt := range claimAttempts {
		if attempt > 0 {
			if err := ctxsleep.Sleep(ctx, Backoff(attempt-1)); err != nil {
				return 0, err
			}
		}
		c.Sent = true
		a, err := send(ctx)
		switch {
		case err != nil:
			return 0, err
		case a.Reply == Applied:
			c.Emptied = c.Emptied || a.LastSeat
			return Won, nil
		case a.Reply == Lost:
			return c.met(a), nil
		case a.Reply == Busy:
			// The item is in an operator's transaction (an add, a cancel): it ends
			// in tens of milliseconds. Not a refusal for throughput.
			busy = a.Err
		case a.Reply == Throttled:
			refused = true
		case ctx.Err() != nil:
			return 0, ctx.Err()
		default:
			return 0, a.Err // unanswered: the claim may still land
		}
	}
	if !refused {
		item, request := p.Name(c.Place)
		return 0, fmt.Errorf("claim seat %s on %s: the item stayed in other transactions: %w", request, item, busy)
	}
	return Refused, nil
}

// met reads what a claim whose condition failed met on its place.
func (c *Claim) met(a Answer) Outcome {
	m := a.Met
	switch {
	case m.Missing:
		return Empty // no seat was ever added to the pool
	case m.Holder:
		c.Emptied = c.Emptied || a.LastSeat
		return Held
	}
	c.SoldOut = m.SoldOut
	c.PoolVersion = max(c.PoolVersion, m.PoolVersion)
	c.SeatsMet = m.Left
	if m.Closed {
		return Closed
	}
	return Empty
}

// Close is the fence: it closes place to the request's claims at epoch and reports
// whether the request holds a seat there after all (the close's condition failed on
// its token). A closed place takes no claim of the request at that epoch, however
// late the claim lands. The close is idempotent: it is sent again while refused for
// throughput or left unanswered, until ctx ends or, with tries > 0, tries sends were
// refused for throughput (then the error wraps the last refusal: the place stays
// open, and the request's claim stays on it).
func Close(ctx context.Context, p Places, place, epoch, tries int) (held bool, err error) {
	send, err := p.Close(place, epoch)
	if err != nil {
		return false, err
	}
	for attempt := 0; ; attempt++ {
		a, err := send(ctx)
		switch {
		case err != nil:
			return false, err
		case a.Reply == Applied:
			return false, nil
		case a.Reply == Lost:
			return a.Met.Holder, nil // a pool without an item holds no seat of the request
		case ctx.Err() != nil:
			return false, ctx.Err()
		case a.Reply == Throttled:
			if tries > 0 && attempt+1 >= tries {
				return false, fmt.Errorf("refused %d times: %w", tries, a.Err)
			}
		case a.Reply != Unanswered:
			return false, a.Err
		}
		if err := ctxsleep.Sleep(ctx, closeBackoff(attempt)); err != nil {
			return false, err
		}
	}
}

// Backoff is the wait before sending a claim on the same place again, after attempt
// (0 first): 20 ms doubled per attempt, with jitter. Short: a shard that keeps
// refusing is left for another.
func Backoff(attempt int) time.Duration {
	d := claimBackoffFirst << min(attempt, claimBackoffDoubling)
	return d/2 + rand.N(d/2+1)
}

// closeBackoff is Close's wait before sending again, after attempt (0 first): 20 ms
// doubled per attempt, at most 320 ms, with jitter.
func closeBackoff(attempt int) time.Duration {
	d := closeBackoffFirst << min(attempt, closeBackoffCap)
	return d/2 + rand.N(d/2+1)
}
