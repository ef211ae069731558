// Package demo is the traffic-spike demo of the asyncevent CLI (asyncevent demo): a
// first-come event hit by concurrent clicks and repeat clicks, a sale with holds and
// a waitlist, a drop whose pre-queue is served in a drawn order, then a lottery drawn
// and verified, reported as text, JSON or an HTML page. The CLI runs it through
// Options: its flags (Register) and its run (Run).
package demo

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/bench"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/internal/metered"
	"github.com/asyncevent/asyncevent/queue"
)

// Summary is the demo's line in the CLI's help.
const Summary = "the traffic-spike demo: a first-come event hit by concurrent clicks and repeat clicks, " +
	"a sale with holds and a waitlist, a drop whose pre-queue is served in a drawn order, then a lottery drawn and verified; prints a report (and -report FILE.html)"

// Options are the demo's flags, which Register declares. The defaults are the issue's
// scenario.
type Options struct {
	capacity       int
	submits        int
	clients        int
	repeat         float64
	workers        int
	lotteryEntries int
	lotteryWinners int
	skipLottery    bool
	ranked         bool
	report         string
	seed           uint64
	sqs            clikit.SQSFlags
	holds          holdsOptions
	prequeue       prequeueOptions
}

// The default scenario: issue 9's, with 12,000 clicks instead of 20,000 and 3,000
// lottery entries instead of 5,000 so that it ends in two to three minutes on a
// 2-core machine, where DynamoDB Local writes a few hundred items a second. The
// flags scale it back up: -submits 20000 -lottery-entries 5000.
const (
	defaultDemoCapacity = 1000
	defaultDemoSubmits  = 12000
	defaultDemoClients  = 16
	defaultDemoRepeat   = 0.2
	defaultDemoWorkers  = 8
	defaultDemoEntries  = 3000
	defaultDemoWinners  = 100
)

// stallTimeout ends a phase that makes no progress at all for this long.
const stallTimeout = 2 * time.Minute

// Register declares the demo's flags on fs; -sqs-endpoint defaults to SQS_ENDPOINT.
func (o *Options) Register(fs *flag.FlagSet) {
	o.sqs.Endpoint = clikit.EnvOr(clikit.EnvSQSEndpoint, "")
	fs.IntVar(&o.capacity, "capacity", defaultDemoCapacity, "first-come capacity `N` (the winners)")
	fs.IntVar(&o.submits, "submits", defaultDemoSubmits, "first-come clicks, repeat clicks included")
	fs.IntVar(&o.clients, "clients", defaultDemoClients, "concurrent clients clicking")
	fs.Float64Var(&o.repeat, "repeat", defaultDemoRepeat, "`fraction` of the clicks that are repeat clicks by a user who clicked already")
	fs.IntVar(&o.workers, "workers", defaultDemoWorkers, "workers, each processing one message at a time")
	fs.IntVar(&o.lotteryEntries, "lottery-entries", defaultDemoEntries, "users entering the lottery")
	fs.IntVar(&o.lotteryWinners, "lottery-winners", defaultDemoWinners, "lottery winners `K`")
	fs.BoolVar(&o.skipLottery, "skip-lottery", false, "run the first-come event only")
	fs.BoolVar(&o.ranked, "ranked", false, "decide the first-come event by rank (Admission: AdmissionRanked): no late winner, promised")
	fs.StringVar(&o.report, "report", "", "also write a self-contained HTML report to this `file`")
	fs.Uint64Var(&o.seed, "seed", 0, "seed of the click order and of the fates of the holds (default: random)")
	o.holds.register(fs)
	o.prequeue.register(fs)
	o.sqs.Register(fs, false)
}

func (o *Options) check() error {
	switch {
	case o.capacity < 1:
		return clikit.Usagef("-capacity must be at least 1")
	case o.submits < 1:
		return clikit.Usagef("-submits must be at least 1")
	case o.clients < 1 || o.workers < 1:
		return clikit.Usagef("-clients and -workers must be at least 1")
	case o.repeat < 0 || o.repeat >= 1:
		return clikit.Usagef("-repeat must be in [0, 1)")
	case !o.skipLottery && (o.lotteryEntries < 1 || o.lotteryWinners < 1):
		return clikit.Usagef("-lottery-entries and -lottery-winners must be at least 1 (or -skip-lottery)")
	}
	return errors.Join(o.holds.check(), o.prequeue.check())
}

// Run runs the scenario on e's DynamoDB (an embedded DynamoDB Local without
// -endpoint) and prints its report: text, JSON (-json), and an HTML page with
// -report. It fails when the report shows a promise broken.
func (o *Options) Run(ctx context.Context, e *clikit.Env) error {
	if err := o.check(); err != nil {
		return err
	}
	stopLocal, err := e.StartLocal(ctx)
	if err != nil {
		return err
	}
	defer stopLocal()
	d, err := newDemo(ctx, e, o)
	if err != nil {
		return err
	}
	defer d.close()
	rep, err := d.run(ctx)
	if err != nil {
		return err
	}
	if o.report != "" {
		if err := writeHTMLReport(o.report, rep); err != nil {
			return err
		}
		fmt.Fprintf(e.Stderr, "HTML report written to %s\n", o.report)
		if h := rep.Holds; h != nil && h.Page != nil {
			fmt.Fprintf(e.Stderr, "the page of request %s written to %s\n", h.Page.RequestID, h.Page.File)
		}
	}
	if e.JSON {
		err = e.PrintJSON(rep)
	} else {
		err = rep.writeText(e.Stdout)
	}
	if err != nil {
		return err
	}
	return rep.failure()
}

// skipClock is the real clock plus an offset that can jump forward, so that a
// lottery's hour of entry time passes at once.
type skipClock struct{ offset atomic.Int64 }

func (c *skipClock) now() time.Time       { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *skipClock) skip(d time.Duration) { c.offset.Add(int64(d)) }

// demo is one run of the scenario.
type demo struct {
	e     *clikit.Env
	o     *Options
	clock *skipClock
	runID string

	admin   *asyncevent.Client // unmetered: set-up, statistics, draw
	ingest  *asyncevent.Client // through ingestMeter
	workers *asyncevent.Client // through workerMeter
	polls   *asyncevent.Client // the node answering the users' polls of their request, through pollMeter

	ingestMeter, workerMeter, pollMeter *metered.Counter
	heat                                *metered.Heat // under both meters

	queue     *bench.CountingQueue
	queueDesc string
	// strictOrder is true on a FIFO queue: ingest's one message group per event
	// makes the workers follow queue order exactly.
	strictOrder bool
	cleanup     []func()
}

func newDemo(ctx context.Context, e *clikit.Env, o *Options) (*demo, error) {
	db, err := e.DynamoDB(ctx)
	if err != nil {
		return nil, err
	}
	d := &demo{e: e, o: o, clock: &skipClock{}, runID: time.Now().UTC().Format("20060102-150405")}
	opts, err := e.Options()
	if err != nil {
		return nil, err
	}
	opts.Clock = d.clock.now
	d.heat = metered.NewHeat(db, bench.ItemKind)
	d.ingestMeter, d.workerMeter = metered.NewCounter(d.heat, bench.ItemKind), metered.NewCounter(d.heat, bench.ItemKind)
	if d.admin, err = asyncevent.New(db, opts); err != nil {
		return nil, err
	}
	if d.ingest, err = asyncevent.New(d.ingestMeter, opts); err != nil {
		return nil, err
	}
	if d.workers, err = asyncevent.New(d.workerMeter, opts); err != nil {
		return nil, err
	}
	d.pollMeter = metered.NewCounter(db, bench.ItemKind)
	if d.polls, err = asyncevent.New(d.pollMeter, opts); err != nil {
		return nil, err
	}
	if err := d.admin.CreateTable(ctx); err != nil {
		return nil, err
	}
	q, desc, err := d.openQueue(ctx)
	if err != nil {
		return nil, err
	}
	d.queue, d.queueDesc = bench.NewCountingQueue(q), desc
	return d, nil
}

func (d *demo) close() {
	for _, f := range slices.Backward(d.cleanup) {
		f()
	}
}

// openQueue returns the demo's queue: in memory, the SQS queue of -queue-url, or a
// new queue on -sqs-endpoint (deleted at the end).
func (d *demo) openQueue(ctx context.Context) (queue.Queue, string, error) {
	s := d.o.sqs
	if s.QueueURL == "" && s.Endpoint == "" {
		return queue.NewMemory(queue.MemoryOptions{}), "in-memory queue", nil
	}
	sc, err := s.Client(ctx, d.e.Region)
	if err != nil {
		return nil, "", err
	}
	url := s.QueueURL
	if url == "" {
		out, err := sc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("asyncevent-demo-" + d.runID)})
		if err != nil {
			return nil, "", fmt.Errorf("create a demo queue on %s: %w", s.Endpoint, err)
		}
		url = aws.ToString(out.QueueUrl)
		d.cleanup = append(d.cleanup, func() {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			_, _ = sc.DeleteQueue(dctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
		})
	}
	q, err := queue.NewSQS(sc, url)
	if err != nil {
		return nil, "", clikit.Usagef("%v", err)
	}
	d.strictOrder = q.FIFO()
	return q, "SQS queue " + url, nil
}

// tracker follows the messages of one event through the workers.
type tracker struct {
	start time.Time
	// onFinal, if set, is told each request's first final outcome, under the
	// tracker's lock: it must not block.
	onFinal func(asyncevent.Outcome)

	mu         sync.Mutex
	final      map[string]bool // requests that reached a final outcome
	kinds      map[asyncevent.OutcomeKind]int
	wins       []time.Duration // since start
	rejections []time.Duration
	lastFinal  time.Time

	finals, won atomic.Int64
}

func newTracker(start time.Time) *tracker {
	return &tracker{start: start, final: map[string]bool{}, kinds: map[asyncevent.OutcomeKind]int{}}
}

func (t *tracker) onOutcome(o asyncevent.Outcome) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.kinds[o.Kind]++
	switch o.Kind {
	case asyncevent.OutcomeSucceeded, asyncevent.OutcomeRejected, asyncevent.OutcomeCollected,
		asyncevent.OutcomeFailed, asyncevent.OutcomeDeadLetter, asyncevent.OutcomeNotFound,
		asyncevent.OutcomeHeld, asyncevent.OutcomeWaitlisted: // with holds, the workers' part ends there
	default:
		return
	}
	if t.final[o.RequestID] {
		return
	}
	t.final[o.RequestID] = true
	if t.onFinal != nil {
		t.onFinal(o)
	}
	t.lastFinal = now
	t.finals.Add(1)
	switch o.Kind {
	case asyncevent.OutcomeSucceeded:
		t.won.Add(1)
		t.wins = append(t.wins, now.Sub(t.start))
	case asyncevent.OutcomeRejected:
		t.rejections = append(t.rejections, now.Sub(t.start))
	}
}

func (t *tracker) messages() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, k := range t.kinds {
		n += k
	}
	return n
}

// startWorkers starts the demo's workers on the queue; the returned function stops
// them gracefully.
func (d *demo) startWorkers(ctx context.Context, t *tracker) (stop func() error, err error) {
	var ws []*asyncevent.Worker
	stopAll := func() error {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		var errs []error
		for _, w := range ws {
			errs = append(errs, w.Stop(sctx))
		}
		return errors.Join(errs...)
	}
	for i := range d.o.workers {
		w, err := asyncevent.NewWorker(d.workers, d.queue, asyncevent.WorkerOptions{
			Concurrency: 1, WaitTime: time.Second,
			ProcessOptions: asyncevent.ProcessOptions{
				WorkerID:  fmt.Sprintf("demo-worker-%d", i+1),
				OnOutcome: t.onOutcome,
			},
		})
		if err == nil {
			err = w.Start(ctx)
		}
		if err != nil {
			return nil, errors.Join(err, stopAll())
		}
		ws = append(ws, w)
	}
	return stopAll, nil
}

// clicks is what the ingest of one event saw.
type clicks struct {
	mu                sync.Mutex
	newLat, dupLat    []time.Duration
	arrivals          []time.Duration // since start, of the new participations
	newCost, dupCost  metered.Counts
	errs              int
	firstErr          error
	submitted, newOne atomic.Int64
	// onNew, if set, is told each new participation.
	onNew func(asyncevent.Participation)
}

func newClicks() *clicks { return &clicks{newCost: metered.Counts{}, dupCost: metered.Counts{}} }

// submitAll clicks for users[i] from d.o.clients goroutines, in order, recording into c.
func (d *demo) submitAll(ctx context.Context, c *clicks, eventID string, users []string, start time.Time) {
	work := make(chan string)
	var wg sync.WaitGroup
	for range d.o.clients {
		wg.Go(func() {
			for user := range work {
				tctx, tally := metered.Track(ctx)
				t0 := time.Now()
				p, err := d.ingest.Submit(tctx, d.queue, eventID, user)
				lat := time.Since(t0)
				cost := tally()
				c.submitted.Add(1)
				c.mu.Lock()
				switch {
				case err != nil:
					c.errs++
					if c.firstErr == nil {
						c.firstErr = fmt.Errorf("click of %s: %w", user, err)
					}
				case p.Duplicate:
					c.dupLat = append(c.dupLat, lat)
					c.dupCost = c.dupCost.Add(cost)
				default:
					c.newOne.Add(1)
					c.newLat = append(c.newLat, lat)
					c.newCost = c.newCost.Add(cost)
					c.arrivals = append(c.arrivals, time.Since(start))
				}
				c.mu.Unlock()
				if err == nil && !p.Duplicate && c.onNew != nil {
					c.onNew(p)
				}
			}
		})
	}
	for _, u := range users {
		if ctx.Err() != nil {
			break
		}
		work <- u
	}
	close(work)
	wg.Wait()
}

// waitFinal waits until want requests have reached a final outcome, failing when
// nothing moves for stallTimeout.
func waitFinal(ctx context.Context, t *tracker, want int) error {
	last, lastMove := int64(-1), time.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		n := t.finals.Load()
		if n >= int64(want) {
			return nil
		}
		if n != last {
			last, lastMove = n, time.Now()
		} else if time.Since(lastMove) > stallTimeout {
			return fmt.Errorf("stalled: %d of %d requests final after %s without progress", n, want, stallTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// schedule returns the users of the first-come clicks in click order: submits clicks,
// of which round(submits × repeat) repeat a user who clicks more than once, shuffled.
func (o *Options) schedule() (users []string, distinct int) {
	users, distinct, _ = scheduleClicks(o.submits, o.repeat, o.seed)
	return users, distinct
}

// scheduleClicks returns the users of submits clicks in click order, of which
// round(submits × repeat) repeat a user who clicks more than once, shuffled by an rng
// of seed (0: a random seed), and that rng.
func scheduleClicks(submits int, repeat float64, seed uint64) (users []string, distinct int, rng *rand.Rand) {
	repeats := min(int(float64(submits)*repeat+0.5), submits-1) // someone clicks first
	distinct = submits - repeats
	if seed == 0 {
		seed = rand.Uint64()
	}
	rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	users = make([]string, 0, submits)
	for i := range distinct {
		users = append(users, fmt.Sprintf("user-%06d", i))
	}
	for range repeats {
		users = append(users, users[rng.IntN(distinct)])
	}
	rng.Shuffle(len(users), func(i, j int) { users[i], users[j] = users[j], users[i] })
	return users, distinct, rng
}

// run runs the scenario and returns its report.
func (d *demo) run(ctx context.Context) (*demoReport, error) {
	began := time.Now()
	rep := &demoReport{
		StartedAt: began.UTC(), Table: d.e.Table, DynamoDB: d.e.Endpoint, Queue: d.queueDesc,
		DynamoDBSource: d.e.LocalSource,
	}
	if rep.DynamoDB == "" {
		rep.DynamoDB = "AWS"
	}
	fc, err := d.firstCome(ctx)
	if err != nil {
		return nil, err
	}
	rep.FirstCome = fc
	if !d.o.holds.skip {
		if rep.Holds, err = d.holds(ctx); err != nil {
			return nil, err
		}
	}
	if !d.o.prequeue.skip {
		if rep.Prequeue, err = d.prequeue(ctx); err != nil {
			return nil, err
		}
	}
	if !d.o.skipLottery {
		lot, err := d.lottery(ctx)
		if err != nil {
			return nil, err
		}
		rep.Lottery = lot
	}
	rep.Total = time.Since(began)
	rep.TotalSeconds = rep.Total.Seconds()
	return rep, nil
}

func (d *demo) firstCome(ctx context.Context) (*firstComeReport, error) {
	o := d.o
	eventID := "demo-first-come-" + d.runID
	if _, err := d.admin.CreateEvent(ctx, asyncevent.EventSettings{
		EventID: eventID, EventType: asyncevent.FirstCome, Name: "Demo: the first " + clikit.FormatInt(o.capacity) + " win",
		CapacityTotal: int64(o.capacity), Admission: clikit.AdmissionOf(o.ranked),
	}); err != nil {
		return nil, err
	}
	users, distinct := o.schedule()
	fmt.Fprintf(d.e.Stderr, "first-come %s: capacity %s, %s clicks (%s users, %s repeat clicks) from %d clients, %d workers, %s\n",
		eventID, clikit.FormatInt(o.capacity), clikit.FormatInt(o.submits), clikit.FormatInt(distinct), clikit.FormatInt(o.submits-distinct), o.clients, o.workers, d.queueDesc)
	sp, err := d.spike(ctx, eventID, users, distinct)
	if err != nil {
		return nil, err
	}
	return d.firstComeReport(ctx, sp)
}

// spikeRun is what the first-come spike leaves for its report.
type spikeRun struct {
	eventID    string
	distinct   int
	start      time.Time
	ingestTime time.Duration
	t          *tracker
	c          *clicks
	line       *lineWatch
	workerCost metered.Counts
	sends      int64
}

// spike runs the first-come clicks against the workers while the waiting users poll
// their place in line, until every new participation is final.
func (d *demo) spike(ctx context.Context, eventID string, users []string, distinct int) (*spikeRun, error) {
	o := d.o
	sp := &spikeRun{eventID: eventID, distinct: distinct, start: time.Now(), c: newClicks(), line: newLineWatch(d.polls, eventID)}
	t, c := newTracker(sp.start), sp.c
	t.onFinal, c.onNew, sp.t = sp.line.finish, sp.line.queued, t
	d.heat.Reset()
	workerBefore, sendsBefore, pollsBefore := d.workerMeter.Snapshot(), d.queue.Sends(), d.pollMeter.Snapshot()
	stopWorkers, err := d.startWorkers(ctx, t)
	if err != nil {
		return nil, err
	}
	var ingestDone atomic.Bool
	stopProgress := startProgress(d.e.Stderr, func() status {
		submitted, final, expected := int(c.submitted.Load()), int(t.finals.Load()), distinct
		if ingestDone.Load() {
			expected = int(c.newOne.Load())
		}
		total := o.submits + expected
		return status{label: "first-come", fraction: float64(submitted+final) / float64(max(total, 1)),
			detail: fmt.Sprintf("clicks %s/%s · final %s/%s · winners %s", clikit.FormatInt(submitted), clikit.FormatInt(o.submits),
				clikit.FormatInt(final), clikit.FormatInt(expected), clikit.FormatInt(int(t.won.Load())))}
	})
	stopPolls := sp.line.start(ctx)
	d.submitAll(ctx, c, eventID, users, sp.start)
	sp.ingestTime = time.Since(sp.start)
	ingestDone.Store(true)
	ferr := d.ingest.FlushProgress(ctx) // the last arrivals, for the polls, now rather than in a second
	werr := waitFinal(ctx, t, int(c.newOne.Load()))
	stopPolls()
	stopProgress()
	if err := errors.Join(werr, ferr, stopWorkers(), d.flushProgress(ctx)); err != nil {
		return nil, err
	}
	if c.errs > 0 && c.newOne.Load() == 0 {
		return nil, c.firstErr
	}
	sp.workerCost, sp.sends = d.workerMeter.Snapshot().Sub(workerBefore), d.queue.Sends()-sendsBefore
	sp.line.cost = d.pollMeter.Snapshot().Sub(pollsBefore)
	return sp, nil
}

// flushProgress writes the progress the ingest, the workers and the admin (its
// releases and sweeps of the waitlist) counted, now rather than at their next
// Options.ProgressEvery, so that the statistics read next are complete.
func (d *demo) flushProgress(ctx context.Context) error {
	return errors.Join(d.ingest.FlushProgress(ctx), d.workers.FlushProgress(ctx), d.admin.FlushProgress(ctx))
}

// firstComeReport sums up the first-come spike from what it left and the event's
// statistics.
func (d *demo) firstComeReport(ctx context.Context, sp *spikeRun) (*firstComeReport, error) {
	o, t, c := d.o, sp.t, sp.c
	t.mu.Lock()
	endToEnd := t.lastFinal.Sub(sp.start)
	t.mu.Unlock()
	st, err := d.admin.EventStats(ctx, sp.eventID)
	if err != nil {
		return nil, err
	}
	newN, dupN := int(c.newOne.Load()), len(c.dupLat)
	all := append(slices.Clone(c.newLat), c.dupLat...)
	r := &firstComeReport{
		EventID: sp.eventID, Capacity: o.capacity, Clicks: o.submits, Clients: o.clients, Workers: o.workers,
		ScheduledRepeats:  o.submits - sp.distinct,
		NewParticipations: newN, DuplicatesBlocked: dupN, IngestErrors: c.errs,
		Winners: st.ByStatus[asyncevent.StatusSucceeded], ExpectedWinners: min(o.capacity, newN),
		CapacityRemaining: st.CapacityRemaining,
		Stats:             clikit.StatsOf(st), fairness: st.Fairness, queueWait: st.QueueWait, processing: st.Processing,
		Inversions: st.Fairness.Inversions, LateWinners: st.Fairness.LateWinners, StrictOrder: d.strictOrder, Ranked: o.ranked,
		Latency: latencyOf(all), NewLatency: latencyOf(c.newLat), DupLatency: latencyOf(c.dupLat),
		IngestSeconds: sp.ingestTime.Seconds(), EndToEndSeconds: endToEnd.Seconds(),
		PerParticipation: clikit.CostOf(c.newCost, newN, int(sp.sends)), PerDuplicate: clikit.CostOf(c.dupCost, dupN, 0),
		Messages: t.messages(), Outcomes: map[string]int{},
		CapacityWrites: sp.workerCost.Writes[entity.Capacity],
		Line:           sp.line.report(st.Queue, sp.start),
	}
	r.Heat = bench.LayoutHeatOf(bench.DefaultLayout, metered.CeilingOf(d.heat.Keys(), newN, r.Winners))
	if c.firstErr != nil {
		r.FirstIngestError = c.firstErr.Error()
	}
	r.PerMessage = clikit.CostOf(sp.workerCost, r.Messages, 0)
	t.mu.Lock()
	for k, n := range t.kinds {
		r.Outcomes[string(k)] = n
	}
	r.chart = newChart(c.arrivals, t.wins, t.rejections, endToEnd)
	t.mu.Unlock()
	return r, nil
}

func (d *demo) lottery(ctx context.Context) (*lotteryReport, error) {
	o := d.o
	eventID := "demo-lottery-" + d.runID
	cutoff := d.clock.now().Add(time.Hour)
	cfg, err := d.admin.CreateEvent(ctx, asyncevent.EventSettings{
		EventID: eventID, EventType: asyncevent.Lottery, Name: fmt.Sprintf("Demo: %d winners drawn", o.lotteryWinners),
		WinnerCount: int64(o.lotteryWinners), LotteryCutoffAt: asyncevent.MillisOf(cutoff),
	})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(d.e.Stderr, "lottery %s: %s entries, %s winners, entries until %s (the clock skips the hour)\n",
		eventID, clikit.FormatInt(o.lotteryEntries), clikit.FormatInt(o.lotteryWinners), cutoff.UTC().Format(time.RFC3339))
	users := make([]string, o.lotteryEntries)
	for i := range users {
		users[i] = fmt.Sprintf("entrant-%06d", i)
	}

	start := time.Now()
	t := newTracker(start)
	stopWorkers, err := d.startWorkers(ctx, t)
	if err != nil {
		return nil, err
	}
	c := newClicks()
	stopProgress := startProgress(d.e.Stderr, func() status {
		submitted := int(c.submitted.Load())
		final := int(t.finals.Load())
		return status{label: "lottery", fraction: float64(submitted+final) / float64(2*o.lotteryEntries),
			detail: fmt.Sprintf("entries %s/%s · collected %s", clikit.FormatInt(submitted), clikit.FormatInt(o.lotteryEntries), clikit.FormatInt(final))}
	})
	d.submitAll(ctx, c, eventID, users, start)
	werr := waitFinal(ctx, t, int(c.newOne.Load()))
	stopProgress()
	if err := errors.Join(werr, stopWorkers()); err != nil {
		return nil, err
	}
	collect := time.Since(start)

	d.clock.skip(time.Hour + asyncevent.DefaultDrawSettleWindow + time.Second)
	drawStart := time.Now()
	stopProgress = startProgress(d.e.Stderr, func() status {
		return status{label: "draw", fraction: -1, detail: "freezing the entries, revealing the seed, finalising each entry…"}
	})
	res, err := d.admin.Draw(ctx, eventID)
	stopProgress()
	if err != nil {
		return nil, err
	}
	drawTime := time.Since(drawStart)
	v, err := d.admin.VerifyDraw(ctx, eventID)
	if err != nil {
		return nil, err
	}
	st, err := d.admin.EventStats(ctx, eventID)
	if err != nil {
		return nil, err
	}
	r := &lotteryReport{
		EventID: eventID, Entrants: o.lotteryEntries, WinnerCount: o.lotteryWinners,
		Entered: int(c.newOne.Load()), IngestErrors: c.errs, Collected: int(t.finals.Load()),
		EntryCount: int(res.Record.EntryCount), EntriesHash: res.Record.EntriesHash,
		Seed: res.Record.Seed, SeedCommitment: cfg.SeedCommitment, SeedMode: res.Record.SeedMode,
		Winners: len(res.Winners), Stats: clikit.StatsOf(st),
		CollectSeconds: collect.Seconds(), DrawSeconds: drawTime.Seconds(),
		Verified: v.OK(), Verification: v.String(), Problems: append([]string{}, v.Problems...),
		Latency: latencyOf(c.newLat),
	}
	if c.firstErr != nil {
		r.FirstIngestError = c.firstErr.Error()
	}
	return r, nil
}
