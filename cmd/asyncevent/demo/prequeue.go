package demo

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
)

// prequeueOptions are the flags of the demo's pre-queued drop.
type prequeueOptions struct {
	skip    bool
	seats   int
	entries int // users who click in the pre-queue
	sale    int // users who click once the sale started
}

// The default pre-queued drop: a few hundred users waiting before the start for a
// tenth as many seats, and latecomers who find them gone.
const (
	defaultPrequeueSeats   = 50
	defaultPrequeueEntries = 500
	defaultPrequeueSale    = 100
)

func (p *prequeueOptions) register(fs *flag.FlagSet) {
	fs.BoolVar(&p.skip, "skip-prequeue", false, "run no pre-queued drop")
	fs.IntVar(&p.seats, "prequeue-seats", defaultPrequeueSeats, "seats of the pre-queued drop")
	fs.IntVar(&p.entries, "prequeue-entries", defaultPrequeueEntries, "users clicking in the pre-queue, before the start")
	fs.IntVar(&p.sale, "prequeue-sale", defaultPrequeueSale, "users clicking once the drop started")
}

func (p *prequeueOptions) check() error {
	if !p.skip && (p.seats < 1 || p.entries < 1 || p.sale < 0) {
		return clikit.Usagef("-prequeue-seats and -prequeue-entries must be at least 1, -prequeue-sale at least 0 (or -skip-prequeue)")
	}
	return nil
}

// prequeueReport is what the pre-queued drop did.
type prequeueReport struct {
	EventID          string       `json:"eventId"`
	Seats            int          `json:"seats"`
	Entered          int          `json:"entered"` // new participations in the pre-queue
	SaleClicks       int          `json:"saleClicks"`
	IngestErrors     int          `json:"ingestErrors"`
	FirstIngestError string       `json:"firstIngestError,omitempty"`
	LeftToServe      int          `json:"leftToServe"` // entry messages the workers left to the serve
	HeldBack         int          `json:"heldBack"`    // sale messages the workers held back before the serve
	EntryCount       int          `json:"entryCount"`
	Winners          int          `json:"winners"`
	FirstServed      []string     `json:"firstServed"` // the head of the drawn order
	SaleWinners      int          `json:"saleWinners"`
	SeedCommitment   string       `json:"seedCommitment"`
	Seed             string       `json:"seed"`
	EntriesHash      string       `json:"entriesHash"`
	ServeSeconds     float64      `json:"serveSeconds"`
	Verified         bool         `json:"verified"`
	Verification     string       `json:"verification"`
	Problems         []string     `json:"problems"`
	Stats            clikit.Stats `json:"stats"`
}

// prequeue runs a pre-queued first-come drop: users click in the pre-queue (the
// workers leave each entry to the serve), the clock skips the start and the settle
// window, latecomers click (the workers hold them back), ServePrequeue serves the
// entries in their drawn order, the workers then decide the latecomers, and
// VerifyPrequeue re-checks it all.
func (d *demo) prequeue(ctx context.Context) (*prequeueReport, error) {
	o := d.o.prequeue
	eventID := "demo-prequeue-" + d.runID
	opens := d.clock.now()
	start := opens.Add(10 * time.Minute)
	cfg, err := d.admin.CreateEvent(ctx, asyncevent.EventSettings{
		EventID: eventID, EventType: asyncevent.FirstCome, Name: fmt.Sprintf("Demo: %d seats, pre-queued", o.seats),
		CapacityTotal: int64(o.seats), PrequeueOpensAt: asyncevent.MillisOf(opens), StartsAt: asyncevent.MillisOf(start),
	})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(d.e.Stderr, "pre-queue %s: %s users before the start, %s after, %s seats (the clock skips past the start and its settle window before the sale's clicks)\n",
		eventID, clikit.FormatInt(o.entries), clikit.FormatInt(o.sale), clikit.FormatInt(o.seats))

	t := newTracker(time.Now())
	stopWorkers, err := d.startWorkers(ctx, t)
	if err != nil {
		return nil, err
	}
	defer func() {
		if stopWorkers != nil {
			_ = stopWorkers()
		}
	}()
	early, late := newClicks(), newClicks()
	var phase atomic.Value // what the phase is doing, for its progress line
	phase.Store("entries")
	stopProgress := startProgress(d.e.Stderr, func() status {
		t.mu.Lock()
		left := t.kinds[asyncevent.OutcomeLeftToDraw]
		t.mu.Unlock()
		entered, sale, final := int(early.submitted.Load()), int(late.submitted.Load()), int(t.finals.Load())
		total := 2*o.entries + 2*o.sale
		return status{label: "pre-queue", fraction: float64(entered+left+sale+final) / float64(max(total, 1)),
			detail: fmt.Sprintf("%s · entries %s/%s · left to the serve %s · sale clicks %s/%s · final %s",
				phase.Load(), clikit.FormatInt(entered), clikit.FormatInt(o.entries), clikit.FormatInt(left),
				clikit.FormatInt(sale), clikit.FormatInt(o.sale), clikit.FormatInt(final))}
	})
	defer stopProgress()
	d.submitAll(ctx, early, eventID, usersNamed("early", o.entries), time.Now())
	if err := waitKind(ctx, t, asyncevent.OutcomeLeftToDraw, int(early.newOne.Load())); err != nil {
		return nil, fmt.Errorf("pre-queue: %w", err)
	}
	phase.Store("the sale's clicks")
	// The start, and the settle window after it, pass before the sale's clicks: a
	// worker holds a sale's click on the queue, whose clock is the real one, until
	// the serve may begin by the demo's clock, so a click met within the window
	// would wait the window out in real time.
	d.clock.skip(start.Sub(d.clock.now()) + asyncevent.DefaultDrawSettleWindow + time.Second)
	d.submitAll(ctx, late, eventID, usersNamed("late", o.sale), time.Now())

	phase.Store("serving the drawn order")
	serveStart := time.Now()
	res, err := d.admin.ServePrequeue(ctx, eventID)
	if err != nil {
		return nil, err
	}
	serve := time.Since(serveStart)
	d.clock.skip(10 * time.Second) // past the workers' cached config: they see it served
	phase.Store("deciding the sale's clicks")
	werr := waitFinal(ctx, t, int(late.newOne.Load()))
	stopProgress()
	err = stopWorkers()
	stopWorkers = nil
	if err := errors.Join(werr, err); err != nil {
		return nil, err
	}
	v, err := d.admin.VerifyPrequeue(ctx, eventID)
	if err != nil {
		return nil, err
	}
	st, err := d.admin.EventStats(ctx, eventID)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	left, held := t.kinds[asyncevent.OutcomeLeftToDraw], t.kinds[asyncevent.OutcomeWaitingForPrequeue]
	t.mu.Unlock()
	r := &prequeueReport{
		EventID: eventID, Seats: o.seats, Entered: int(early.newOne.Load()), SaleClicks: int(late.newOne.Load()),
		IngestErrors: early.errs + late.errs, LeftToServe: left, HeldBack: held,
		EntryCount: int(res.Record.EntryCount), Winners: len(res.Winners), FirstServed: res.Order[:min(5, len(res.Order))],
		SaleWinners: int(t.won.Load()), SeedCommitment: cfg.SeedCommitment, Seed: res.Record.Seed,
		EntriesHash: res.Record.EntriesHash, ServeSeconds: serve.Seconds(),
		Verified: v.OK(), Verification: v.String(), Problems: append([]string{}, v.Problems...), Stats: clikit.StatsOf(st),
	}
	for _, c := range []*clicks{early, late} {
		if c.firstErr != nil && r.FirstIngestError == "" {
			r.FirstIngestError = c.firstErr.Error()
		}
	}
	return r, nil
}

// usersNamed returns n user IDs with prefix.
func usersNamed(prefix string, n int) []string {
	users := make([]string, n)
	for i := range users {
		users[i] = fmt.Sprintf("%s-%06d", prefix, i)
	}
	return users
}

// waitKind waits until the workers reported want outcomes of kind, failing when
// nothing moves for stallTimeout.
func waitKind(ctx context.Context, t *tracker, kind asyncevent.OutcomeKind, want int) error {
	last, lastMove := -1, time.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		t.mu.Lock()
		n := t.kinds[kind]
		t.mu.Unlock()
		if n >= want {
			return nil
		}
		if n != last {
			last, lastMove = n, time.Now()
		} else if time.Since(lastMove) > stallTimeout {
			return fmt.Errorf("stalled: %d of %d messages %s after %s without progress", n, want, kind, stallTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// failures are the promises the pre-queued drop broke.
func (p *prequeueReport) failures() []error {
	var errs []error
	if !p.Verified {
		errs = append(errs, fmt.Errorf("pre-queue: %s", p.Verification))
	}
	if got, want := p.Winners+p.SaleWinners, min(p.Seats, p.Entered+p.SaleClicks); got != want {
		errs = append(errs, fmt.Errorf("pre-queue: %d winners, want %d", got, want))
	}
	if p.Entered >= p.Seats && p.SaleWinners > 0 {
		errs = append(errs, fmt.Errorf("pre-queue: %d clicks of the sale won while the pre-queue had an entry per seat", p.SaleWinners))
	}
	if p.IngestErrors > 0 {
		errs = append(errs, fmt.Errorf("pre-queue: %d clicks failed, the first: %s", p.IngestErrors, p.FirstIngestError))
	}
	return errs
}

// writeText prints the pre-queued drop's part of the report.
func (p *prequeueReport) writeText(w io.Writer) error {
	verdict := "OK"
	if !p.Verified {
		verdict = "FAILED"
	}
	fmt.Fprintf(w, "\nFIRST_COME WITH A PRE-QUEUE %s: %s seats, the pre-queue served in a drawn order before the sale\n", p.EventID, clikit.FormatInt(p.Seats))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  pre-queue\t%s entered before the start; the workers left %s of their messages to the serve, decided none\n",
		clikit.FormatInt(p.Entered), clikit.FormatInt(p.LeftToServe))
	fmt.Fprintf(tw, "  sale\t%s clicked once the pre-queue's serve may begin; held back %s times until it was served\n", clikit.FormatInt(p.SaleClicks), clikit.FormatInt(p.HeldBack))
	fmt.Fprintf(tw, "  serve\t%s entries frozen, served in the drawn order in %s: %s won, the first of the order\n",
		clikit.FormatInt(p.EntryCount), clikit.FormatSeconds(p.ServeSeconds), clikit.FormatInt(p.Winners))
	fmt.Fprintf(tw, "  head of the order\t%v\n", p.FirstServed)
	fmt.Fprintf(tw, "  sale winners\t%s (the seats the pre-queue left)\n", clikit.FormatInt(p.SaleWinners))
	fmt.Fprintf(tw, "  requests by status\t%s\n", clikit.FormatCounts(p.Stats.ByStatus))
	fmt.Fprintf(tw, "  seed commitment\t%s (published at creation)\n", p.SeedCommitment)
	fmt.Fprintf(tw, "  revealed seed\t%s\n", p.Seed)
	fmt.Fprintf(tw, "  entries hash\t%s\n", p.EntriesHash)
	fmt.Fprintf(tw, "  verification\t%s: %s\n", verdict, p.Verification)
	return tw.Flush()
}
