package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/queue"
)

// The flows of an event with holds (EventSettings.HoldFor), in the order Run measures
// them, on the library only: the raw-SDK baseline has no holds.
const (
	// FlowHoldsWinner is FlowWorkerWin's winner on an event with holds: HELD, after
	// the PutItem of its Hold item.
	FlowHoldsWinner = "holds: worker, first-come winner (HELD, its Hold item)"
	// FlowHoldsLoser is FlowWorkerSoldOut's loser on an event with holds: WAITLISTED
	// in the one write that would have rejected it.
	FlowHoldsLoser = "holds: worker, after sold out (WAITLISTED)"
	// FlowHoldsConfirm is one Confirm call: HELD → SUCCEEDED.
	FlowHoldsConfirm = "holds: Confirm (HELD → SUCCEEDED)"
	// FlowHoldsRelease is one Release call of a HELD request: REJECTED_RELEASED, its
	// seat given to the waitlist.
	FlowHoldsRelease = "holds: Release (HELD → REJECTED, the seat to the waitlist)"
	// FlowHoldsExpire is a SweepHolds pass that expires holds, per hold expired.
	FlowHoldsExpire = "holds: SweepHolds, per hold expired"
	// FlowHoldsServe is a SweepHolds pass that hands the seats given back on to the
	// earliest WAITLISTED requests, per seat handed on.
	FlowHoldsServe = "holds: SweepHolds, per seat handed on to the waitlist"
)

// HoldFor is the hold of the bench's events with holds: longer than a round takes on
// a loaded machine, so that no hold lapses before the bench's clock skips past it
// (rather than waiting for it) to measure the expiry.
const HoldFor = 5 * time.Minute

// Holds is what Run measured of an event with holds, on the library only.
type Holds struct {
	HoldForSeconds float64    `json:"holdForSeconds"`
	Flows          []HoldFlow `json:"flows"`
}

// HoldFlow is one operation of an event with holds.
type HoldFlow struct {
	Name string `json:"name"`
	// Unit is what one operation is: "message", "call", "hold expired", "seat handed on".
	Unit    string `json:"unit"`
	Library Side   `json:"library"`
	// WritesPerOp counts the write requests of one operation by the kind of item they
	// name (REQUEST, HOLD, RETURNS, CAPACITY…), failed conditions included.
	WritesPerOp map[entity.Type]float64 `json:"writesPerOp"`
	// Versus compares the flow with the same flow on an event without holds, where
	// there is one (FlowHoldsWinner, FlowHoldsLoser).
	Versus *Versus `json:"versus,omitempty"`
}

// Versus is what a flow of an event with holds costs beyond the same flow without
// holds, per operation, both measured on the library in the same rounds.
type Versus struct {
	Flow string `json:"flow"`
	// ExtraCalls is the difference of the DynamoDB calls, each net of its cached CONFIG
	// reads.
	ExtraCalls float64 `json:"extraCalls"`
	ExtraWCU   float64 `json:"extraWcu"`
	ExtraRCU   float64 `json:"extraRcu"`
}

// holdFlows pairs each flow of an event with holds with its unit and the flow without
// holds it compares with.
var holdFlows = []struct{ name, unit, versus string }{
	{FlowHoldsWinner, "message", FlowWorkerWin},
	{FlowHoldsLoser, "message", FlowWorkerSoldOut},
	{FlowHoldsConfirm, "call", ""},
	{FlowHoldsRelease, "call", ""},
	{FlowHoldsExpire, "hold expired", ""},
	{FlowHoldsServe, "seat handed on", ""},
}

// holdsReport is the Holds of the library side's results, nil if none was recorded.
func holdsReport(lib *side) *Holds {
	h := &Holds{HoldForSeconds: HoldFor.Seconds()}
	for _, f := range holdFlows {
		m := lib.results[f.name]
		if m == nil {
			continue
		}
		hf := HoldFlow{Name: f.name, Unit: f.unit, Library: sideOf(m), WritesPerOp: map[entity.Type]float64{}}
		for kind, k := range m.counts.Writes {
			hf.WritesPerOp[kind] = float64(k) / float64(m.ops)
		}
		if w := lib.results[f.versus]; w != nil {
			a, b := hf.Library.PerOp, sideOf(w).PerOp
			hf.Versus = &Versus{
				Flow: f.versus, ExtraCalls: (a.DynamoDBCalls - a.ConfigReads) - (b.DynamoDBCalls - b.ConfigReads),
				ExtraWCU: a.WCU - b.WCU, ExtraRCU: a.RCU - b.RCU,
			}
		}
		h.Flows = append(h.Flows, hf)
	}
	if len(h.Flows) == 0 {
		return nil
	}
	return h
}

// holdsClock is the clock of the library's client for events with holds: the real
// clock plus an offset that skips forward, so that a hold runs out at once.
type holdsClock struct{ offset atomic.Int64 }

func (c *holdsClock) now() time.Time       { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *holdsClock) skip(d time.Duration) { c.offset.Add(int64(d)) }

// holdsRound is one round of the flows of an event with holds.
type holdsRound struct {
	n       int
	eventID string
	winners *CountingQueue
	losers  *CountingQueue

	mu   sync.Mutex
	held []string // the requests HELD by the winners' claims, in the order they were taken
}

// workerHolds measures the flows of an event with holds, on the library side only (the
// baseline has no holds), with the library's client for them, whose clock skips. Its
// event is FlowWorkerWin's with HoldFor: n winners processed by a Worker (HELD, each
// after its Hold item), then n more users by a processor that has seen the sell-out
// (WAITLISTED). A third of the holds are confirmed and a third released, each from
// Clients goroutines; the clock then skips past HoldFor and one SweepHolds pass,
// bounded by MaxWrites to the holds left, expires them; last, SweepHolds hands every
// seat given back on to the waitlist. Each Worker runs no hold sweep of its own
// (HoldSweepEvery < 0), so that only the sweeps measured sweep.
func workerHolds(ctx context.Context, cfg Config, sd *side, st *roundState, record bool) error {
	if sd.holds == nil {
		return nil
	}
	hr := &holdsRound{n: st.n, eventID: st.eventID + "-holds", winners: newQueue(), losers: newQueue()}
	_, err := sd.holds.CreateEvent(ctx, asyncevent.EventSettings{
		EventID: hr.eventID, EventType: asyncevent.FirstCome, CapacityTotal: int64(hr.n),
		CapacityShards: min((hr.n+seatsPerShard-1)/seatsPerShard, ShardedSeats), HoldFor: HoldFor,
		EndsAt: asyncevent.MillisOf(sd.holdsClock.now().Add(24 * time.Hour)),
	})
	if err != nil {
		return err
	}
	for _, f := range []func(context.Context, Config, *side, *holdsRound, bool) error{holdWinners, holdLosers, holdDecisions, holdSweeps} {
		if err := f(ctx, cfg, sd, hr, record); err != nil {
			return err
		}
	}
	return nil
}

// holdWinners processes the first n users of the event with holds: every one HELD.
func holdWinners(ctx context.Context, cfg Config, sd *side, hr *holdsRound, record bool) error {
	if err := submitAll(ctx, cfg, hr.n, 0, holdsSubmitter(sd, hr, hr.winners)); err != nil {
		return err
	}
	var held atomic.Int64
	w, err := asyncevent.NewWorker(sd.holds, hr.winners, asyncevent.WorkerOptions{
		Concurrency: cfg.Workers, WaitTime: 50 * time.Millisecond, HoldSweepEvery: -1,
		ProcessOptions: asyncevent.ProcessOptions{OnOutcome: func(o asyncevent.Outcome) {
			if o.Kind == asyncevent.OutcomeHeld {
				held.Add(1)
				hr.mu.Lock()
				hr.held = append(hr.held, o.RequestID)
				hr.mu.Unlock()
			}
		}},
	})
	if err != nil {
		return err
	}
	err = measure(sd, FlowHoldsWinner, nil, hr.n, record, func() error {
		if err := w.Start(ctx); err != nil {
			return err
		}
		return errors.Join(waitEmpty(ctx, memory(hr.winners)), w.Stop(ctx))
	})
	if err != nil {
		return err
	}
	if got := held.Load(); got != int64(hr.n) {
		return fmt.Errorf("%s: %d holds of %d messages, want all", FlowHoldsWinner, got, hr.n)
	}
	return nil
}

// holdLosers processes users n..2n-1 of the sold-out event with holds, as
// workerSoldOut does: one message first, unmeasured, then the rest. Every one is
// WAITLISTED.
func holdLosers(ctx context.Context, cfg Config, sd *side, hr *holdsRound, record bool) error {
	if err := submitAll(ctx, cfg, hr.n, hr.n, holdsSubmitter(sd, hr, hr.losers)); err != nil {
		return err
	}
	var done, waitlisted atomic.Int64
	p := asyncevent.NewProcessor(sd.holds, asyncevent.ProcessOptions{OnOutcome: func(o asyncevent.Outcome) {
		done.Add(1)
		if o.Kind == asyncevent.OutcomeWaitlisted {
			waitlisted.Add(1)
		}
	}})
	handle := func(ctx context.Context, d queue.Delivery) error {
		if _, done, _ := p.ProcessOne(ctx, d, 0, nil); !done {
			return fmt.Errorf("message %s failed", d.MessageID)
		}
		return nil
	}
	if err := drainN(ctx, memory(hr.losers), 1, handle); err != nil {
		return err
	}
	if err := measure(sd, FlowHoldsLoser, nil, hr.n-1, record, func() error {
		return drain(ctx, memory(hr.losers), cfg.Workers, handle)
	}); err != nil {
		return err
	}
	if got, all := waitlisted.Load(), done.Load(); got != int64(hr.n) || all != int64(hr.n) {
		return fmt.Errorf("%s: %d waitlisted among %d of %d messages", FlowHoldsLoser, got, all, hr.n)
	}
	return nil
}

// holdsSubmitter returns the ingest of one new click on the event with holds.
func holdsSubmitter(sd *side, hr *holdsRound, q queue.Queue) func(context.Context, string) error {
	return func(ctx context.Context, userID string) error {
		p, err := sd.holds.Submit(ctx, q, hr.eventID, userID)
		if err == nil && p.Duplicate {
			err = fmt.Errorf("click of %s: a duplicate", userID)
		}
		return err
	}
}

// thirds splits the holds: the first third is confirmed, the second released, the
// rest left to run out.
func (hr *holdsRound) thirds() (confirm, release, lapse []string) {
	hr.mu.Lock()
	defer hr.mu.Unlock()
	k := len(hr.held) / 3
	return hr.held[:k], hr.held[k : 2*k], hr.held[2*k:]
}

// holdDecisions confirms the first third of the holds and releases the second, from
// Clients goroutines; every call must apply.
func holdDecisions(ctx context.Context, cfg Config, sd *side, hr *holdsRound, record bool) error {
	confirm, release, _ := hr.thirds()
	for _, step := range []struct {
		flow string
		ids  []string
		call func(context.Context, string) (asyncevent.Transition, error)
	}{
		{FlowHoldsConfirm, confirm, sd.holds.Confirm},
		{FlowHoldsRelease, release, sd.holds.Release},
	} {
		err := measure(sd, step.flow, nil, len(step.ids), record && len(step.ids) > 0, func() error {
			return EachOf(ctx, cfg.Clients, step.ids, func(ctx context.Context, id string) error {
				t, err := step.call(ctx, id)
				if err == nil && !t.Applied {
					err = fmt.Errorf("%s of %s not applied: %s", step.flow, id, t.Current.Status)
				}
				return err
			})
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// holdSweeps skips the clock past HoldFor, expires the holds left in one SweepHolds
// pass bounded to them, then hands every seat given back on to the waitlist.
func holdSweeps(ctx context.Context, _ Config, sd *side, hr *holdsRound, record bool) error {
	_, release, lapse := hr.thirds()
	sd.holdsClock.skip(HoldFor + time.Second)
	if len(lapse) > 0 {
		var rep *asyncevent.HoldSweepReport
		if err := measure(sd, FlowHoldsExpire, nil, len(lapse), record, func() (err error) {
			rep, err = sd.holds.SweepHolds(ctx, hr.eventID, asyncevent.HoldSweepOptions{MaxWrites: len(lapse)})
			return err
		}); err != nil {
			return err
		}
		if rep.Expired != len(lapse) || rep.Served != 0 {
			return fmt.Errorf("%s: %d expired and %d served, want %d expired", FlowHoldsExpire, rep.Expired, rep.Served, len(lapse))
		}
	}
	given := len(release) + len(lapse)
	served := 0
	if err := measure(sd, FlowHoldsServe, nil, given, record && given > 0, func() error {
		for {
			rep, err := sd.holds.SweepHolds(ctx, hr.eventID, asyncevent.HoldSweepOptions{})
			if err != nil {
				return err
			}
			served += rep.Served
			if !rep.More {
				return nil
			}
		}
	}); err != nil {
		return err
	}
	if served != given {
		return fmt.Errorf("%s: %d seats handed on of %d given back", FlowHoldsServe, served, given)
	}
	return nil
}

// EachOf runs call for every id from clients goroutines (at most one per id),
// stopping at the first error, which it returns.
func EachOf(ctx context.Context, clients int, ids []string, call func(context.Context, string) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	work := make(chan string)
	var wg sync.WaitGroup
	for range min(clients, len(ids)) {
		wg.Go(func() {
			for id := range work {
				if err := call(ctx, id); err != nil {
					cancel(err)
				}
			}
		})
	}
feed:
	for _, id := range ids {
		select {
		case work <- id:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	return context.Cause(ctx)
}
