// Package idempotent runs a control of an event's seats as an operation under an
// idempotency key: its attempts, tried again while another change of the seats came
// first or while an attempt got no answer, and the fence of its refusal, the marker
// put alone so that no attempt under the key still on its way applies after the
// answer "not applied". The root package makes the attempts, reads and puts the
// operation's marker (its rows); the loops here decide what to do next.
package idempotent

import (
	"context"
	"time"

	"github.com/asyncevent/asyncevent/internal/ctxsleep"
)

// Answer is what the loops read of an attempt's answer.
type Answer struct {
	Applied bool
	Refused bool // not applied, with the event as the refusal found it
	Unknown bool // a write of the attempt got no answer: it may apply yet
}

// Operation is one call of a control under its key. U is the control's answer.
type Operation[U any] interface {
	// Once makes one attempt; retry reports a refusal by another change of the seats
	// made at the same moment.
	Once(ctx context.Context) (up U, retry bool, err error)
	Answer(up U) Answer
	// Recorded turns up, a refusal, into the answer the operation's marker records,
	// when there is one (settled).
	Recorded(ctx context.Context, up U) (U, bool, error)
	// Fence answers up, a refusal, once no attempt under the key can apply (Fence).
	Fence(ctx context.Context, up U) (U, error)
}

// Policy bounds the loops and names the errors they tell apart.
type Policy struct {
	Callers  bool // the key is the caller's: a call under it may follow one whose attempt may land yet
	Attempts int  // tries of a refusal by another change of the seats
	Resends  int  // sends again of an attempt, or of the fence's put, that got no answer
	Backoff  func(attempt int) time.Duration
	// Unanswered reports an error that leaves the write's outcome unknown.
	Unanswered func(ctx context.Context, err error) bool
	Invalid    func(err error) bool // the caller's mistake: no outcome is unknown
	Unknown    func(err error) error
}

// Run tries o until it applies, is refused for a reason other than another change of
// the seats (retry false), or has been tried p.Attempts times, waiting p.Backoff
// between tries. A refusal whose marker is there answers as the marker records. An
// attempt left unanswered is tried again, p.Resends times at most; the error of a
// call that never learned its outcome (its sends unanswered, its ctx ended, or an
// error after a write that got no answer) is p.Unknown's. A refusal after a write of
// the call that got no answer, or under the caller's key, is answered once fenced.
func Run[U any](ctx context.Context, o Operation[U], p Policy) (U, error) {
	resent := 0
	unsure := false
	for attempt := 1; ; attempt++ {
		up, retry, err := o.Once(ctx)
		unsure = unsure || o.Answer(up).Unknown
		if err == nil && o.Answer(up).Refused {
			var settled bool
			if up, settled, err = o.Recorded(ctx, up); err != nil || settled {
				return up, err
			}
		}
		switch {
		case p.Unanswered(ctx, err) && resent < p.Resends:
			resent++
		case p.Unanswered(ctx, err) || err != nil && (ctx.Err() != nil || unsure && !p.Invalid(err)):
			return up, p.Unknown(err)
		case err == nil && o.Answer(up).Refused && (unsure || p.Callers) && (!retry || attempt >= p.Attempts):
			return o.Fence(ctx, up)
		case !retry || attempt >= p.Attempts:
			return up, err
		}
		if err := ctxsleep.Sleep(ctx, p.Backoff(attempt)); err != nil {
			if unsure {
				err = p.Unknown(err)
			}
			return up, err
		}
	}
}

// Fence answers up, a refusal of o, once no attempt under its key can apply: put
// puts the operation's marker alone, outcome REFUSED, and reports lost when a marker
// is there already; fenced is up answered after a put that applied. A marker there
// answers as it records (o.Recorded); one gone meanwhile (its ttl) is put again. A
// put that gets no answer is sent again, p.Resends times at most; the error of one
// never answered is p.Unknown's.
func Fence[U any](ctx context.Context, o Operation[U], p Policy, up U, put func(context.Context) (lost bool, err error), fenced func(U) U) (U, error) {
	var zero U
	for sent := 0; ; sent++ {
		lost, err := put(ctx)
		switch {
		case err == nil:
			return fenced(up), nil
		case lost:
			answer, settled, rerr := o.Recorded(ctx, up)
			switch {
			case rerr != nil && p.Invalid(rerr):
				return zero, rerr
			case rerr != nil:
				return zero, p.Unknown(rerr)
			case settled:
				return answer, nil
			}
		case !p.Unanswered(ctx, err):
			return zero, p.Unknown(err)
		}
		if sent >= p.Resends {
			return zero, p.Unknown(err)
		}
	}
}
