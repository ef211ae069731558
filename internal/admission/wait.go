package admission

import (
	"context"
	"errors"
	"slices"
	"time"
)

// Kind is what becomes of a waiting delivery.
type Kind int

// The kinds of Verdict.
const (
	// Proceed: the worker's own path decides the request (ranked after every wave
	// once the admission refuses: refused as any request after the last seat).
	Proceed Kind = iota
	// ProceedLate: the worker's own path decides the request, a late arrival met
	// once the admission refuses.
	ProceedLate
	// Decided: the request is decided (by the admission, or found so); the message is
	// done with.
	Decided
	// Missing: the request is not on the table, on the message's last receive.
	Missing
	// Retry: the message comes back after the worker's backoff (Err says why).
	Retry
	// Slow: the delivery waited its whole GiveUp for the admission; the message
	// comes back.
	Slow
)

// Verdict is how a delivery's wait on the admission ended.
type Verdict struct {
	Kind Kind
	// ResultCode is a Decided request's result code, when it was read decided (none
	// when its wave was recorded decided).
	ResultCode string
	Err        error // a Retry's cause
}

// retry is the Verdict of a wait that failed with err.
func retry(err error) Verdict { return Verdict{Kind: Retry, Err: err} }

// Wait is a delivery of a ranked event's message waiting on its admission, until the
// admission decided the request, passed it without seeing it (a late arrival, which
// joins the record's late set while seats may be left) or began refusing.
type Wait struct {
	Admission *Admission
	RequestID string
	// RankOf is the rank (GSI2SK) of the request queued at queuedAt (epoch
	// milliseconds).
	RankOf func(queuedAt int64) (string, error)
	// LastReceive: the delivery is the message's last; a request not on the table
	// then ends Missing.
	LastReceive bool
	// GiveUp is how long the delivery waits before its message comes back (Slow).
	GiveUp time.Duration

	rank   string   // the request's rank, as the message or the request last said
	stored *Request // the request as last read; nil until then
	asked  bool     // this delivery added the request to the record's late set
}

// Run waits until the admission decided the request, passed it without seeing it (a
// late arrival) or began refusing, or the wait ends otherwise (Verdict), queuedAt
// being the request's queuedAt as its message names it (0: none). While it waits on
// the admission, the delivery is counted (Join) and keepHidden keeps its message
// hidden until the stop it returns is called.
func (w *Wait) Run(ctx context.Context, queuedAt int64, keepHidden func() (stop func())) Verdict {
	if v, done := w.place(ctx, queuedAt); done {
		return v
	}
	w.Admission.Join(ctx)
	defer w.Admission.Leave()
	defer keepHidden()()
	return w.await(ctx)
}

// place sets the request's rank from queuedAt, the one the message names; a message
// that names none (0) has its request read (strongly consistent) for it. It reports
// whether that read decided the delivery. The rank the message names lets a delivery
// wait without a read; every decision rests on the rank the request itself holds (a
// message may name another queuedAt: a put whose answer was lost, then healed by a
// later click).
func (w *Wait) place(ctx context.Context, queuedAt int64) (Verdict, bool) {
	if queuedAt == 0 {
		var v Verdict
		var done bool
		if w.stored, v, done = w.look(ctx); done {
			return v, true
		}
		queuedAt = w.stored.QueuedAt
	}
	rank, err := w.RankOf(queuedAt)
	if err != nil {
		return retry(err), true
	}
	w.rank = rank
	return Verdict{}, false
}

// await waits until the admission decided the request, passed it without seeing it
// (a late arrival) or began refusing, the record read each tick by the admission's
// loop; it gives the message back after GiveUp.
func (w *Wait) await(ctx context.Context) Verdict {
	giveUp := time.NewTimer(w.GiveUp)
	defer giveUp.Stop()
	for {
		rec, changed := w.Admission.View()
		tick := (<-chan time.Time)(nil)
		inWave := rec != nil && slices.Contains(rec.Wave, w.RequestID)
		switch {
		case inWave && rec.WaveDone:
			// Its wave is recorded decided: the admission decided it.
			return Verdict{Kind: Decided}
		case inWave:
			// Its wave is being decided: wait for the record to say so.
		case rec != nil && (rec.Refusing || w.rank <= rec.Through):
			if v, done := w.passed(ctx, rec); done {
				return v
			}
			// Waiting for the next wave (a late arrival): the request is read
			// again each tick.
			tick = time.After(Tick)
		}
		select {
		case <-changed:
		case <-tick:
		case <-giveUp.C:
			return Verdict{Kind: Slow}
		case <-ctx.Done():
			return retry(ctx.Err())
		}
	}
}

// look reads the request as it stands (strongly consistent), and reports whether
// that decided the delivery: the request decided, missing on the last receive, or
// the read failed.
func (w *Wait) look(ctx context.Context) (*Request, Verdict, bool) {
	r, err := w.Admission.store.Request(ctx, w.RequestID)
	var missing *NotFoundError
	switch {
	case errors.As(err, &missing) && w.LastReceive:
		// Its put never landed (or lands later still: it is then on GSI2 for the
		// admission, or for Sweep once passed).
		return nil, Verdict{Kind: Missing}, true
	case err != nil:
		return nil, retry(err), true
	case r.Decided:
		return nil, Verdict{Kind: Decided, ResultCode: r.ResultCode}, true
	}
	return &r, Verdict{}, false
}

// passed handles a request the record has passed, or every one once it refuses:
// the request itself, read, says whether it was decided, is refused (the worker's
// own path), or is a late arrival that joins the record's late set while seats may
// be left. done is false while the delivery goes on waiting.
func (w *Wait) passed(ctx context.Context, rec *Record) (v Verdict, done bool) {
	r, v, decided := w.look(ctx)
	if decided {
		return v, true
	}
	if w.stored == nil || r.QueuedAt != w.stored.QueuedAt {
		rank, err := w.RankOf(r.QueuedAt)
		if err != nil {
			return retry(err), true
		}
		w.rank = rank
	}
	w.stored = r
	switch {
	case rec.Refusing && w.rank > rec.Through:
		// Ranked after every wave, once no seat was left: refused as any request
		// after the last seat.
		return Verdict{Kind: Proceed}, true
	case rec.Refusing:
		return Verdict{Kind: ProceedLate}, true // a late arrival, once no seat is left
	case w.rank > rec.Through:
		return Verdict{}, false // the message named an older rank: wait for the admission
	case rec.Passed(w.rank, w.RequestID) && !w.asked && !slices.Contains(rec.Late, w.RequestID):
		// A late arrival while seats may be left: the admission's next wave takes it
		// first. A refusal of the write means the admission began refusing
		// meanwhile: the next read of the record says so.
		if _, err := w.Admission.store.AddLate(ctx, w.RequestID); err != nil {
			return retry(err), true
		}
		w.asked = true
	}
	return Verdict{}, false
}
