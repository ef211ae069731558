package demo

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/bench"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
)

// holdsOptions are the flags of the demo's sale with holds.
type holdsOptions struct {
	skip     bool
	capacity int
	submits  int
	holdFor  time.Duration
	pay      float64 // the share of the spike's holds paid for
	release  float64 // the share given up; the rest lapse
}

// The default sale with holds: small enough that its holds run out and their seats
// reach the waitlist in about 15 seconds.
const (
	defaultHoldsCapacity = 100
	defaultHoldsSubmits  = 1000
	defaultHoldsPay      = 0.6
	defaultHoldsRelease  = 0.15
)

func (h *holdsOptions) register(fs *flag.FlagSet) {
	fs.BoolVar(&h.skip, "skip-holds", false, "run no sale with holds")
	fs.IntVar(&h.capacity, "holds-capacity", defaultHoldsCapacity, "seats of the sale with holds")
	fs.IntVar(&h.submits, "holds-submits", defaultHoldsSubmits, "clicks on the sale with holds, repeat clicks (-repeat) included")
	fs.DurationVar(&h.holdFor, "hold-for", asyncevent.MinHoldFor, "how long a seat of the sale with holds is held for its payment (EventSettings.HoldFor)")
	fs.Float64Var(&h.pay, "holds-pay", defaultHoldsPay,
		"`fraction` of the spike's holds paid for (Confirm); every hold handed on from the waitlist is paid for")
	fs.Float64Var(&h.release, "holds-release", defaultHoldsRelease, "`fraction` of the spike's holds given up (Release); the rest lapse")
}

func (h *holdsOptions) check() error {
	switch {
	case h.skip:
		return nil
	case h.capacity < 1 || h.submits < 1:
		return clikit.Usagef("-holds-capacity and -holds-submits must be at least 1 (or -skip-holds)")
	case h.holdFor < asyncevent.MinHoldFor || h.holdFor > asyncevent.MaxHoldFor:
		return clikit.Usagef("-hold-for must be from %s to %s", asyncevent.MinHoldFor, asyncevent.MaxHoldFor)
	case h.pay < 0 || h.release < 0 || h.pay+h.release > 1:
		return clikit.Usagef("-holds-pay and -holds-release must be fractions that add up to at most 1")
	}
	return nil
}

// holdFate is what the user of a hold does with it.
type holdFate int

const (
	fatePay     holdFate = iota // Confirm
	fateRelease                 // Release
	fateLapse                   // nothing: the hold runs out
)

// fates returns the fate of each of n holds in the order they are taken: the shares of
// the flags, rounded, in an order shuffled by rng.
func fates(n int, pay, release float64, rng *rand.Rand) []holdFate {
	payN := min(int(math.Round(float64(n)*pay)), n)
	releaseN := min(int(math.Round(float64(n)*release)), n-payN)
	plan := make([]holdFate, n)
	for i := range plan {
		switch {
		case i < payN:
			plan[i] = fatePay
		case i < payN+releaseN:
			plan[i] = fateRelease
		default:
			plan[i] = fateLapse
		}
	}
	rng.Shuffle(n, func(i, j int) { plan[i], plan[j] = plan[j], plan[i] })
	return plan
}

// holdsSale is the demo's sale with holds as it runs: the users of its holds decide
// while the workers claim seats and sweep.
type holdsSale struct {
	d       *demo
	eventID string
	plan    []holdFate

	mu      sync.Mutex
	taken   []string            // held by the spike's claims, not yet decided
	decided map[string]holdFate // by request
	next    int                 // the plan's next fate

	page *requestPageReport // of the first request seen HELD; set by settle

	spikeOver                              atomic.Bool // every message reached its worker outcome
	held, waitlisted                       atomic.Int64
	paid, released, lapsing                atomic.Int64
	servedPaid, lateConfirms, lateReleases atomic.Int64
}

// onFinal takes the outcome of a message of the sale: a hold taken by the spike waits
// for its user's decision.
func (s *holdsSale) onFinal(o asyncevent.Outcome) {
	if o.Kind == asyncevent.OutcomeWaitlisted {
		s.waitlisted.Add(1)
	}
	if o.Kind != asyncevent.OutcomeHeld {
		return
	}
	s.held.Add(1)
	s.mu.Lock()
	s.taken = append(s.taken, o.RequestID)
	s.mu.Unlock()
}

// takeDecisions returns the holds taken by the spike since the last call, each with
// its fate from the plan.
func (s *holdsSale) takeDecisions() (pay, release []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range s.taken {
		fate := fatePay
		if s.next < len(s.plan) {
			fate = s.plan[s.next]
		}
		s.next++
		s.decided[id] = fate
		switch fate {
		case fatePay:
			pay = append(pay, id)
		case fateRelease:
			release = append(release, id)
		default:
			s.lapsing.Add(1)
		}
	}
	s.taken = s.taken[:0]
	return pay, release
}

// servedHolds returns the holds of held handed on from the waitlist and not yet paid
// for: their users pay.
func (s *holdsSale) servedHolds(held []asyncevent.Request) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for _, r := range held {
		if _, ok := s.decided[r.RequestID]; !ok && r.ServedAt != 0 {
			s.decided[r.RequestID] = fatePay
			ids = append(ids, r.RequestID)
		}
	}
	return ids
}

// settleEvery is how often the users of the holds look for holds handed on to them.
const settleEvery = 500 * time.Millisecond

// settle plays the users of the holds until the sale has settled: the spike is over,
// no request is HELD, and no seat given back waits while someone is waitlisted. A hold
// the spike took is paid for, given up or left to lapse as the plan says; a hold
// handed on from the waitlist is paid for.
func (s *holdsSale) settle(ctx context.Context, holdFor time.Duration) error {
	deadline := time.Now().Add(3*holdFor + stallTimeout)
	tick := time.NewTicker(settleEvery)
	defer tick.Stop()
	for {
		pay, release := s.takeDecisions()
		held, err := s.heldNow(ctx)
		if err != nil {
			return err
		}
		if err := s.showPage(ctx, held); err != nil {
			return err
		}
		served := s.servedHolds(held)
		if err := errors.Join(s.confirm(ctx, pay, &s.paid), s.confirm(ctx, served, &s.servedPaid), s.release(ctx, release)); err != nil {
			return err
		}
		if done, err := s.settled(ctx, len(held)); done || err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the holds of %s did not settle within %s", s.eventID, 3*holdFor+stallTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// showPage renders the page of the first of held, once: before this look's
// decisions are applied, so that the request is still HELD.
func (s *holdsSale) showPage(ctx context.Context, held []asyncevent.Request) error {
	if s.page != nil || len(held) == 0 {
		return nil
	}
	page, err := s.d.renderRequestPage(ctx, held[0])
	s.page = page
	return err
}

// settled reports whether the sale has settled, heldNow requests having been HELD at
// the last look.
func (s *holdsSale) settled(ctx context.Context, heldNow int) (bool, error) {
	s.mu.Lock()
	undecided := len(s.taken)
	s.mu.Unlock()
	if !s.spikeOver.Load() || undecided > 0 || heldNow > 0 {
		return false, nil
	}
	st, err := s.d.admin.EventStats(ctx, s.eventID)
	if err != nil {
		return false, err
	}
	h := st.Holds
	if h == nil || h.Held != 0 || h.SeatsWaiting != 0 && h.Waitlisted != 0 {
		return false, nil
	}
	// The statistics read the requests, then the seats given back: a sweep that hands
	// seats on between the two reads leaves them looking settled with holds just
	// taken. A last look at the HELD requests, after both, catches those.
	held, err := s.heldNow(ctx)
	return len(held) == 0, err
}

// heldNow lists the sale's HELD requests.
func (s *holdsSale) heldNow(ctx context.Context) ([]asyncevent.Request, error) {
	var held []asyncevent.Request
	cursor := ""
	for {
		page, err := s.d.admin.ListEventRequests(ctx, s.eventID, asyncevent.EventListOptions{
			PageOptions: asyncevent.PageOptions{Limit: 500, Cursor: cursor}, Status: asyncevent.StatusHeld, MaxRead: 5000,
		})
		if err != nil {
			return nil, err
		}
		held = append(held, page.Requests...)
		if page.NextCursor == "" {
			return held, nil
		}
		cursor = page.NextCursor
	}
}

// confirm pays for the holds ids, counting the confirms applied in n and the others,
// too late (a refund), in lateConfirms.
func (s *holdsSale) confirm(ctx context.Context, ids []string, n *atomic.Int64) error {
	return bench.EachOf(ctx, s.d.o.clients, ids, func(ctx context.Context, id string) error {
		t, err := s.d.admin.Confirm(ctx, id)
		switch {
		case err != nil:
			return err
		case t.Applied:
			n.Add(1)
		default:
			s.lateConfirms.Add(1)
		}
		return nil
	})
}

// release gives up the holds ids.
func (s *holdsSale) release(ctx context.Context, ids []string) error {
	return bench.EachOf(ctx, s.d.o.clients, ids, func(ctx context.Context, id string) error {
		t, err := s.d.admin.Release(ctx, id)
		switch {
		case err != nil:
			return err
		case t.Applied:
			s.released.Add(1)
		default:
			s.lateReleases.Add(1)
		}
		return nil
	})
}

// holds runs the sale with holds: a FIRST_COME event whose winners hold their seat for
// HoldFor until they pay, and whose losers wait on its waitlist; its users pay, give up
// or let their holds lapse while the workers claim seats and, every second, sweep the
// holds that ran out and hand the seats given back on to the waitlist. Once it has
// settled, the clock skips past the event's end and one sweep closes its waitlist.
func (d *demo) holds(ctx context.Context) (*holdsReport, error) {
	o := d.o.holds
	eventID := "demo-holds-" + d.runID
	endsAt := d.clock.now().Add(time.Hour)
	if _, err := d.admin.CreateEvent(ctx, asyncevent.EventSettings{
		EventID: eventID, EventType: asyncevent.FirstCome, CapacityTotal: int64(o.capacity), HoldFor: o.holdFor,
		EndsAt: asyncevent.MillisOf(endsAt),
		Name:   fmt.Sprintf("Demo: %s seats held %s each until paid, then a waitlist", clikit.FormatInt(o.capacity), o.holdFor),
	}); err != nil {
		return nil, err
	}
	users, distinct, rng := scheduleClicks(o.submits, d.o.repeat, d.o.seed)
	s := &holdsSale{d: d, eventID: eventID, plan: fates(o.capacity, o.pay, o.release, rng), decided: map[string]holdFate{}}
	payN, releaseN := countFates(s.plan)
	fmt.Fprintf(d.e.Stderr, "holds %s: capacity %s, each seat held %s, %s clicks (%s users); of the spike's holds %s paid for, %s given up, %s left to lapse\n",
		eventID, clikit.FormatInt(o.capacity), o.holdFor, clikit.FormatInt(o.submits), clikit.FormatInt(distinct),
		clikit.FormatInt(payN), clikit.FormatInt(releaseN), clikit.FormatInt(len(s.plan)-payN-releaseN))

	start := time.Now()
	t := newTracker(start)
	t.onFinal = s.onFinal
	stopWorkers, err := d.startWorkers(ctx, t)
	if err != nil {
		return nil, err
	}
	c := newClicks()
	stopProgress := startProgress(d.e.Stderr, func() status {
		return status{label: "holds", fraction: -1, detail: fmt.Sprintf("clicks %s/%s · held %s · paid %s · given up %s · lapsing %s · paid from the waitlist %s",
			clikit.FormatInt(int(c.submitted.Load())), clikit.FormatInt(o.submits), clikit.FormatInt(int(s.held.Load())), clikit.FormatInt(int(s.paid.Load())),
			clikit.FormatInt(int(s.released.Load())), clikit.FormatInt(int(s.lapsing.Load())), clikit.FormatInt(int(s.servedPaid.Load())))}
	})
	settleCtx, stopSettling := context.WithCancel(ctx)
	defer stopSettling()
	settled := make(chan error, 1)
	go func() { settled <- s.settle(settleCtx, o.holdFor) }()
	d.submitAll(ctx, c, eventID, users, start)
	ingest := time.Since(start)
	werr := waitFinal(ctx, t, int(c.newOne.Load()))
	spike := time.Since(start)
	if werr != nil {
		stopSettling()
	}
	s.spikeOver.Store(true)
	serr := <-settled
	settle := time.Since(start)
	stopProgress()
	if err := errors.Join(werr, serr, stopWorkers(), d.flushProgress(ctx)); err != nil {
		return nil, err
	}
	if c.errs > 0 && c.newOne.Load() == 0 {
		return nil, c.firstErr
	}
	before, err := d.admin.EventStats(ctx, eventID)
	if err != nil {
		return nil, err
	}
	closed, err := d.closeSale(ctx, eventID, endsAt)
	if err != nil {
		return nil, err
	}
	after, err := d.admin.EventStats(ctx, eventID)
	if err != nil {
		return nil, err
	}
	r := s.report(o, c, before, after)
	r.Clicks, r.ScheduledRepeats, r.ClosedWaitlist = o.submits, o.submits-distinct, closed
	r.IngestSeconds, r.SpikeSeconds, r.SettleSeconds = ingest.Seconds(), spike.Seconds(), settle.Seconds()
	return r, nil
}

// closeSale skips the clock past the sale's end and sweeps its holds until its
// waitlist is closed; it returns the waitlisted requests it ended.
func (d *demo) closeSale(ctx context.Context, eventID string, endsAt time.Time) (int, error) {
	d.clock.skip(endsAt.Sub(d.clock.now()) + time.Second)
	closed := 0
	for {
		rep, err := d.admin.SweepHolds(ctx, eventID, asyncevent.HoldSweepOptions{})
		if err != nil {
			return closed, err
		}
		closed += rep.Closed
		if !rep.More {
			return closed, nil
		}
	}
}

func countFates(plan []holdFate) (pay, release int) {
	for _, f := range plan {
		switch f {
		case fatePay:
			pay++
		case fateRelease:
			release++
		}
	}
	return pay, release
}
