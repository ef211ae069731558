// Package reliability holds the chaos suite: ingest and workers of asyncevent run
// under injected DynamoDB faults, duplicated and reordered deliveries, dropped deletes
// and killed workers (and, for the draws and the pre-queues, request puts that land
// late, ingest clocks that lag, and draws killed and resumed), and the invariants of
// the design are checked afterwards.
//
// Replay a run with CHAOS_SEED=<seed>; scale it with CHAOS_USERS=<n>.
package reliability

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

func TestMain(m *testing.M) { asynceventtest.Main(m) }

// chaosConfig is one run's scenario.
type chaosConfig struct {
	seed      int64
	users     int
	workers   int
	dupClicks float64 // share of users who click again
	crashes   float64 // share of users whose first click's ingest dies between lock and request; half of them never come back
	faultRate float64 // share of DynamoDB calls disturbed, half of them lost responses
	wireRate  float64 // share disturbed beneath the SDK, which retries them: refused, lost, throttled
	maxCopies int     // extra deliveries of each message
	// lateRate is the share of a worker's writes held back on the wire: the worker is
	// told the connection reset, and the write lands up to lateBy later, whatever
	// became of the worker, its lease or the request meanwhile.
	lateRate float64
	lateBy   time.Duration
	// skew bounds each worker's clock offset from the others (uniform in ±skew): a
	// lease may be taken over early, or late.
	skew time.Duration
}

func envInt(name string, def int64) int64 {
	if v, err := strconv.ParseInt(os.Getenv(name), 10, 64); err == nil {
		return v
	}
	return def
}

// chaosUsers is the users of the suite's largest event: CHAOS_USERS, or 500 (what
// make test runs, within CI's time; make chaos runs 5,000, seed after seed).
func chaosUsers() int { return int(envInt("CHAOS_USERS", 500)) }

// atScale is n, a count of seats, winners or users sized for events of 1,000 users
// or more, scaled down with a smaller chaosUsers(): so a smaller run sells out, holds
// and draws in the same proportions (CHAOS_USERS=1000 and above run the sizes as they
// are).
func atScale(n int) int { return max(1, n*min(chaosUsers(), 1000)/1000) }

func newConfig(t *testing.T, users int) chaosConfig {
	seed := envInt("CHAOS_SEED", time.Now().UnixNano()%1_000_000)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replay this run with: CHAOS_SEED=%d CHAOS_USERS=%d go test -race -run '%s' ./reliability", seed, chaosUsers(), t.Name())
		}
	})
	t.Logf("chaos seed %d, %d users", seed, users)
	return chaosConfig{seed: seed, users: users, workers: 8, dupClicks: 0.2, crashes: 0.01, faultRate: 0.1, wireRate: 0.06, maxCopies: 2,
		lateRate: 0.03, lateBy: 3 * time.Second, skew: 3 * time.Second}
}

// skipClock is the real clock plus an offset that can jump forward: over a lottery's
// hour of entries, past the leases before a sweep, past the holds.
type skipClock struct{ offset atomic.Int64 }

func (c *skipClock) Now() time.Time       { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *skipClock) Skip(d time.Duration) { c.offset.Add(int64(d)) }

// world is the system under test: a table, a queue, and worker processes that die.
type world struct {
	t      *testing.T
	cfg    chaosConfig
	clock  *skipClock // every client's clock (each worker's skewed from it)
	opts   asyncevent.Options
	table  string
	db     *dynamodb.Client // the run's own DynamoDB Local
	queue  *queue.Memory
	clean  *asyncevent.Client               // a client without faults, for checks and the sweeper
	ingest *asyncevent.Client               // ingest under faults
	faults *asynceventtest.FaultyDynamoDB   // ingest's, above the SDK
	wired  *asynceventtest.FaultyHTTPClient // ingest's, beneath the SDK
	users  []string

	mu        sync.Mutex
	procs     []*process
	every     []*process     // every worker process started, killed ones too: their late writes land all the same
	abandoned []string       // users whose ingest died between lock and request, never back
	dying     sync.WaitGroup // the Submit calls of ingest processes that died, still running on their dead clients
	nextID    int
	kills     int
	faulted   atomic.Int64
	handler   asyncevent.Handler // the workers' handler; nil for none
	mixed     bool               // every other worker runs a no-op handler: a lease for each of its requests
}

// process is one worker process: its own faulty DynamoDB client and queue view.
type process struct {
	db     *asynceventtest.FaultyDynamoDB
	wire   *asynceventtest.FaultyHTTPClient
	q      *asynceventtest.ChaosQueue
	worker *asyncevent.Worker
}

// faults counts the faults injected into p's DynamoDB calls, above and beneath the SDK.
func (p *process) faults() int64 {
	above, beneath := p.db.Counts(), p.wire.Counts()
	return int64(above.Failed + above.Lost + beneath.Failed + beneath.Lost + beneath.Throttled)
}

func newWorld(t *testing.T, cfg chaosConfig) *world {
	w := &world{t: t, cfg: cfg, clock: &skipClock{}, queue: queue.NewMemory(queue.MemoryOptions{MaxReceives: 12})}
	w.opts = asyncevent.Options{StatusLog: true, RedriveAfter: 300 * time.Millisecond, Clock: w.clock.Now}
	// A DynamoDB Local of the run's own: its writes do not queue behind other tests'.
	w.db = asynceventtest.OwnDynamoDB(t)
	t.Cleanup(w.dying.Wait) // before the DynamoDB Local stops
	var wire *dynamodb.Client
	wire, w.wired = w.wire(cfg.seed)
	w.faults = asynceventtest.NewFaultyDynamoDB(wire, w.plan(cfg.seed))
	w.ingest = asynceventtest.NewTableOn(t, w.faults, w.opts)
	w.table = w.ingest.TableName()
	opts := w.opts
	opts.TableName = w.table
	var err error
	w.clean, err = asyncevent.New(w.db, opts)
	require.NoError(t, err)
	for i := range cfg.users {
		w.users = append(w.users, fmt.Sprintf("user-%05d", i))
	}
	return w
}

func (w *world) plan(seed int64) asynceventtest.FaultPlan {
	return asynceventtest.FaultPlan{Seed: seed, FailRate: w.cfg.faultRate / 2, LoseRate: w.cfg.faultRate / 2}
}

// wire is a client of the run's DynamoDB Local with faults beneath the SDK: its
// retries meet them first, and only what three attempts cannot mend reaches the
// library (through the faults of plan, above).
func (w *world) wire(seed int64) (*dynamodb.Client, *asynceventtest.FaultyHTTPClient) {
	r := w.cfg.wireRate / 3
	return asynceventtest.NewFaultyClient(w.db, asynceventtest.FaultPlan{Seed: ^seed, FailRate: r, LoseRate: r, ThrottleRate: r})
}

// startWorker starts one more worker process.
func (w *world) startWorker() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.nextID++
	seed := w.cfg.seed + int64(w.nextID)*7919
	wire, wireFaults := w.wire(seed)
	plan := w.plan(seed)
	plan.LateRate, plan.LateBy = w.cfg.lateRate, w.cfg.lateBy
	db := asynceventtest.NewFaultyDynamoDB(wire, plan)
	q := asynceventtest.NewChaosQueue(w.queue, asynceventtest.QueueFaultPlan{
		Seed: w.cfg.seed + int64(w.nextID), DropDeleteRate: 0.05, ExtraVisibility: 100 * time.Millisecond, Shuffle: true,
	})
	opts := w.opts
	opts.TableName = w.table
	if w.cfg.skew > 0 {
		// The worker's own clock: up to skew ahead of or behind the others.
		offset := time.Duration(rand.New(rand.NewPCG(uint64(seed), 3)).Int64N(int64(2*w.cfg.skew))) - w.cfg.skew
		base := opts.Clock
		opts.Clock = func() time.Time { return base().Add(offset) }
	}
	handler := w.handler
	if w.mixed && w.nextID%2 == 0 {
		handler = asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error { return nil })
	}
	c, err := asyncevent.New(db, opts)
	require.NoError(w.t, err)
	worker, err := asyncevent.NewWorker(c, q, asyncevent.WorkerOptions{
		Concurrency: 4, WaitTime: 100 * time.Millisecond, VisibilityTimeout: 2 * time.Second,
		ProcessOptions: asyncevent.ProcessOptions{
			WorkerID: fmt.Sprintf("w%d", w.nextID), LeaseDuration: 2 * time.Second, MaxReceives: 12, Handler: handler,
			Backoff: func(n int) time.Duration { return time.Duration(n) * 50 * time.Millisecond },
		},
	})
	require.NoError(w.t, err)
	require.NoError(w.t, worker.Start(context.Background()))
	p := &process{db: db, wire: wireFaults, q: q, worker: worker}
	w.procs = append(w.procs, p)
	w.every = append(w.every, p)
}

// waitLate waits until every late write of every worker process has landed, before
// the event is checked: a write still on the wire could change it afterwards.
func (w *world) waitLate() {
	w.mu.Lock()
	every := slices.Clone(w.every)
	w.mu.Unlock()
	for _, p := range every {
		p.db.WaitLate()
	}
}

// killOne kills a random worker process mid-work: its DynamoDB and queue calls fail
// from now on, so it can neither finish nor release what it holds, and it is
// replaced.
func (w *world) killOne(rng *rand.Rand) {
	w.mu.Lock()
	i := rng.IntN(len(w.procs))
	p := w.procs[i]
	w.procs = append(w.procs[:i], w.procs[i+1:]...)
	w.kills++
	w.mu.Unlock()
	p.db.Kill()
	p.q.Kill()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no grace: the work in flight is abandoned
	_ = p.worker.Stop(ctx)
	w.faulted.Add(p.faults())
	w.startWorker()
}

func (w *world) stopWorkers() {
	defer w.waitLate() // after the unlock
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.procs {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		require.NoError(w.t, p.worker.Stop(ctx))
		cancel()
		w.faulted.Add(p.faults())
	}
	w.procs = nil
}

// click submits a user through the faulty ingest until the library answers without
// error (clickOn).
func (w *world) click(ctx context.Context, eventID, user string) error {
	return w.clickOn(ctx, w.ingest, eventID, user)
}

// clickOn submits a user through ingest until the library answers without error, as
// a user who sees an error clicks again; and as a user who polls the answer's request
// and does not find it (its ingest died, or failed, between the lock and the
// request), clicks again once Options.RedriveAfter has passed, which heals the lock.
func (w *world) clickOn(ctx context.Context, ingest *asyncevent.Client, eventID, user string) error {
	var err error
	for attempt := range 12 {
		var p asyncevent.Participation
		if p, err = ingest.Submit(ctx, w.queue, eventID, user); err == nil {
			if _, err = w.clean.GetRequest(ctx, p.RequestID); err == nil {
				return nil
			}
			if !errors.Is(err, asyncevent.ErrNotFound) {
				return err
			}
			time.Sleep(w.opts.RedriveAfter)
			continue
		}
		if errors.Is(err, asyncevent.ErrEventClosed) {
			return err
		}
		time.Sleep(time.Duration(attempt+1) * 100 * time.Millisecond)
	}
	return err
}

// crashClick is a click whose ingest process dies right after it wrote the user's
// lock, before the request: the lock is left without its request until the user's
// next click. The user does not wait for the dead process: its Submit goes on (every
// call of its dead client failing, so it writes nothing) until the ingest's deadline
// ends it, and the test waits for it at its end.
func (w *world) crashClick(ctx context.Context, eventID, user string) {
	doomed := asynceventtest.NewFaultyDynamoDB(w.db, asynceventtest.FaultPlan{
		CrashAfterRate: 1, Operations: []string{"PutItem"}, KeyPrefix: "IDEMP#",
	})
	opts := w.opts
	opts.TableName = w.table
	c, err := asyncevent.New(doomed, opts)
	require.NoError(w.t, err)
	deadQueue := asynceventtest.NewChaosQueue(w.queue, asynceventtest.QueueFaultPlan{})
	deadQueue.Kill() // the process is gone by the time it would send
	ended := make(chan error, 1)
	w.dying.Go(func() {
		_, err := c.Submit(ctx, deadQueue, eventID, user)
		if err == nil {
			w.t.Errorf("%s: a click whose ingest died after the lock succeeded", user)
		}
		ended <- err
	})
	for doomed.Counts().Crashed == 0 { // the process dies once its lock's put applied
		select {
		case err := <-ended:
			if doomed.Counts().Crashed == 0 {
				w.t.Errorf("%s: the ingest ended, and never died after its lock's put: %v", user, err)
			}
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// visit is a user's visit: a click, or a click that dies between the lock and the
// request, after which the user either clicks again (healing the lock) or is never
// seen again (abandoned).
type visit struct {
	user      string
	crash     bool
	abandoned bool
}

// ingestAll has 16 clients submit every user, a share of them twice, while worker
// processes run and get killed.
func (w *world) ingestAll(eventID string, rng *rand.Rand) {
	w.submitAll(eventID, rng)()
}

// submitAll is ingestAll up to the last click: it returns with the workers still at
// the queue and still being killed, and the function it returns is the rest of
// ingestAll (the queue drained, the kills stopped).
func (w *world) submitAll(eventID string, rng *rand.Rand) (drain func()) {
	ctx := context.Background()
	for range w.cfg.workers {
		w.startWorker()
	}
	clicks := make(chan visit)
	var wg sync.WaitGroup
	var failures atomic.Int64
	for range 16 {
		wg.Go(func() {
			for v := range clicks {
				if v.crash {
					w.crashClick(ctx, eventID, v.user)
					if v.abandoned {
						w.mu.Lock()
						w.abandoned = append(w.abandoned, v.user)
						w.mu.Unlock()
						continue
					}
				}
				if err := w.click(ctx, eventID, v.user); err != nil {
					failures.Add(1)
					w.t.Logf("%s gave up: %v", v.user, err)
				}
			}
		})
	}
	stopKills := make(chan struct{})
	killed := make(chan struct{})
	go func() {
		defer close(killed)
		krng := rand.New(rand.NewPCG(uint64(w.cfg.seed), 3))
		for {
			select {
			case <-stopKills:
				return
			case <-time.After(time.Duration(500+krng.IntN(1000)) * time.Millisecond):
				w.killOne(krng)
			}
		}
	}()
	for _, u := range w.users {
		if rng.Float64() < w.cfg.crashes {
			clicks <- visit{user: u, crash: true, abandoned: rng.IntN(2) == 0}
			continue
		}
		clicks <- visit{user: u}
		if rng.Float64() < w.cfg.dupClicks {
			clicks <- visit{user: u}
		}
	}
	close(clicks)
	wg.Wait()
	require.Zero(w.t, failures.Load(), "users who could not participate after 12 clicks")
	return func() {
		asynceventtest.WaitDrained(w.t, w.queue, 3*time.Minute)
		close(stopKills)
		<-killed
	}
}

// settle runs the sweeper until no FIRST_COME request is left in flight. Before each
// sweep the writes still on the wire land, and the clocks skip past the leases: the
// queue is drained, so no message is in flight to a worker either.
func (w *world) settle(eventID string) {
	ctx := context.Background()
	for round := 0; ; round++ {
		require.Less(w.t, round, 20, "requests still in flight after 20 sweeps")
		w.waitLate()
		w.clock.Skip(2*time.Second + w.cfg.skew + 500*time.Millisecond) // the leases run out, on every worker's clock too
		report, err := w.clean.Sweep(ctx, w.queue, eventID, asyncevent.SweepOptions{StuckAfter: 2 * time.Second, RatePerSecond: 1000})
		require.NoError(w.t, err)
		resent := 0
		for _, n := range report.Resent {
			resent += n
		}
		w.t.Logf("sweep %d: examined %d, resent %v", round, report.Examined, report.Resent)
		if resent == 0 {
			return
		}
		asynceventtest.WaitDrained(w.t, w.queue, 3*time.Minute)
	}
}

// TestChaosFirstCome runs the first-come spike on the design's single keys, and on
// an event with 8 index shards and 4 capacity shards (half the users); the workers
// take the home claim (no handler), or, in the mixed run, every other one holds each
// request under a lease (a no-op handler), so that both claims meet under faults.
func TestChaosFirstCome(t *testing.T) {
	t.Parallel()
	users := chaosUsers()
	for _, layout := range []struct {
		name                string
		indexShards, shards int
		users               int
		mixed               bool
		admission           asyncevent.Admission
	}{
		{"one shard", 1, 1, users, false, asyncevent.AdmissionProcessing},
		{"K=8 C=4", 8, 4, users / 2, false, asyncevent.AdmissionProcessing},
		{"K=8 C=4 mixed workers", 8, 4, users / 2, true, asyncevent.AdmissionProcessing},
		// Ranked: CheckEvent finds no winner ranked after a request refused for want
		// of a seat, whatever the faults, kills and late writes.
		{"ranked K=4 C=2 mixed workers", 4, 2, users / 2, true, asyncevent.AdmissionRanked},
	} {
		t.Run(layout.name, func(t *testing.T) {
			t.Parallel()
			cfg := newConfig(t, layout.users)
			w := newWorld(t, cfg)
			w.mixed = layout.mixed
			capacity := atScale(300)
			_, err := w.clean.CreateEvent(context.Background(), asyncevent.EventSettings{
				EventID: "chaos-sale", EventType: asyncevent.FirstCome, CapacityTotal: int64(capacity),
				IndexShards: layout.indexShards, CapacityShards: layout.shards, Admission: layout.admission,
			})
			require.NoError(t, err)

			lap := phases(t)
			w.ingestAll("chaos-sale", rand.New(rand.NewPCG(uint64(cfg.seed), 1)))
			lap("ingest and workers")
			w.startWorker() // one healthy worker for what the sweeper finds
			w.settle("chaos-sale")
			w.stopWorkers()
			lap("sweeps")

			rep := asynceventtest.CheckEvent(t, w.clean, "chaos-sale", asynceventtest.CheckOptions{Users: w.users, Abandoned: w.abandoned})
			lap("check")
			t.Logf("%d requests: %v %v; %d worker kills, %d injected faults in workers; ingest faults %+v above the SDK, %+v beneath; %d abandoned locks",
				rep.Requests, rep.ByStatus, rep.ByCode, w.kills, w.faulted.Load(), w.faults.Counts(), w.wired.Counts(), rep.Abandoned)
			require.Equal(t, capacity, rep.ByStatus[asyncevent.StatusSucceeded])
		})
	}
}

// TestChaosHolds runs a sale with holds under the same faults and kills: while the
// spike is ingested and for a while after, a payer confirms half the holds it meets,
// releases a quarter and lets a quarter lapse, each call under faults and tried again
// until it answers; the workers' own hold sweeps (killed mid-sweep with the workers)
// end the lapsed holds and hand the seats given back to the waitlist. Afterwards the
// seats add up (CheckEvent), no more than the capacity is ever confirmed, and every
// seat given back was handed on while anyone waited.
func TestChaosHolds(t *testing.T) {
	t.Parallel()
	cfg := newConfig(t, chaosUsers()/2)
	w := newWorld(t, cfg)
	capacity := atScale(200)
	ctx := context.Background()
	_, err := w.clean.CreateEvent(ctx, asyncevent.EventSettings{
		EventID: "chaos-holds", EventType: asyncevent.FirstCome, CapacityTotal: int64(capacity),
		IndexShards: 8, CapacityShards: 4, HoldFor: asyncevent.MinHoldFor,
		EndsAt: asyncevent.MillisOf(time.Now().Add(24 * time.Hour)),
	})
	require.NoError(t, err)

	lap := phases(t)
	stop := make(chan struct{})
	paid := make(chan int)
	go func() { paid <- w.pay(ctx, "chaos-holds", stop) }()
	w.ingestAll("chaos-holds", rand.New(rand.NewPCG(uint64(cfg.seed), 4)))
	lap("ingest and workers")
	w.startWorker()
	w.settle("chaos-holds")
	lap("sweeps")
	// Two more rounds of holds: those met lapse, their seats reach the waitlist.
	for range 2 {
		w.clock.Skip(asyncevent.MinHoldFor + w.cfg.skew + time.Second)
		w.waitHoldsLapsed(ctx, "chaos-holds")
	}
	close(stop)
	confirmed := <-paid
	// The workers stop (and every late write of theirs lands: a hold's end landing
	// late gives its seat back) before the last sweeps, which hand it on.
	w.stopWorkers()
	// The last sweeps, without faults, then no more payments: what is left HELD waits.
	// A pass that serves seats makes holds of MinHoldFor, which a later pass that
	// comes after them (a slow machine) expires and serves on: the passes go on
	// until one finds nothing to do.
	settled := false
	for pass := 0; pass < 30 && !settled; pass++ {
		rep, err := w.clean.SweepHolds(ctx, "chaos-holds", asyncevent.HoldSweepOptions{})
		require.NoError(t, err)
		t.Logf("last sweep %d: %+v", pass, rep)
		settled = rep.Expired+rep.Served == 0 && !rep.More
	}
	require.True(t, settled, "the last sweeps found nothing more to do")
	lap("holds")
	rep := asynceventtest.CheckEvent(t, w.clean, "chaos-holds", asynceventtest.CheckOptions{Users: w.users, Abandoned: w.abandoned})
	st, err := w.clean.EventStats(ctx, "chaos-holds")
	require.NoError(t, err)
	t.Logf("%d requests: %v %v; holds %+v; %d worker kills", rep.Requests, rep.ByStatus, rep.ByCode, *st.Holds, w.kills)
	require.Equal(t, confirmed, rep.ByStatus[asyncevent.StatusSucceeded], "every confirm the payer saw applied, and no other")
	require.LessOrEqual(t, rep.ByStatus[asyncevent.StatusSucceeded]+rep.ByStatus[asyncevent.StatusHeld], capacity)
	require.Positive(t, st.Holds.Expired, "some holds lapsed")
	require.Positive(t, st.Holds.SeatsServed, "seats given back reached the waitlist")
}

// waitHoldsLapsed waits until the workers' hold sweeps have ended every hold that ran
// out on every worker's clock.
func (w *world) waitHoldsLapsed(ctx context.Context, eventID string) {
	lapsed := func() int {
		page, err := w.clean.ListEventRequests(ctx, eventID, asyncevent.EventListOptions{PageOptions: asyncevent.PageOptions{Limit: 500}, Status: asyncevent.StatusHeld, MaxRead: 5000})
		if err != nil {
			return -1
		}
		n := 0
		for _, r := range page.Requests {
			if r.HoldExpiresAt <= asyncevent.MillisOf(w.clock.Now().Add(-w.cfg.skew)) {
				n++
			}
		}
		return n
	}
	require.Eventually(w.t, func() bool { return lapsed() == 0 }, time.Minute, 200*time.Millisecond, "holds run out that no sweep ended")
}

// pay plays the service that takes payments, until stop: every half second it lists
// the event's HELD requests and decides each new one by its ID: confirm (half), release
// (a quarter) or nothing (a quarter: the hold lapses). Each call goes through the
// faulty ingest client and is tried again until it answers. It returns how many
// confirms applied.
func (w *world) pay(ctx context.Context, eventID string, stop <-chan struct{}) int {
	decided := map[string]bool{}
	confirmed := 0
	for {
		select {
		case <-stop:
			return confirmed
		case <-time.After(500 * time.Millisecond):
		}
		page, err := w.clean.ListEventRequests(ctx, eventID, asyncevent.EventListOptions{PageOptions: asyncevent.PageOptions{Limit: 500}, Status: asyncevent.StatusHeld, MaxRead: 5000})
		if err != nil {
			continue
		}
		for _, r := range page.Requests {
			if decided[r.RequestID] {
				continue
			}
			decided[r.RequestID] = true
			var call func(context.Context, string) (asyncevent.Transition, error)
			switch h := fnv32(r.RequestID) % 4; h {
			case 0, 1:
				call = w.ingest.Confirm
			case 2:
				call = w.ingest.Release
			default:
				continue
			}
			for attempt := 0; ; attempt++ {
				require.Less(w.t, attempt, 50, "a payment call that never answered")
				tr, err := call(ctx, r.RequestID)
				if err != nil {
					continue
				}
				if tr.Applied && fnv32(r.RequestID)%4 < 2 {
					confirmed++
				}
				if !tr.Applied && tr.Current != nil && tr.Current.Status == asyncevent.StatusSucceeded && fnv32(r.RequestID)%4 < 2 {
					confirmed++ // its answer was lost, and the retry found it confirmed
				}
				break
			}
		}
	}
}

func fnv32(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

func TestChaosLottery(t *testing.T) {
	t.Parallel()
	cfg := newConfig(t, chaosUsers())
	// Skewed workers and their late writes too: no clock decides the entries
	// (docs/design.md, "The draw's entries"); TestChaosLotteryLateArrivals adds late
	// clicks and a killed draw.
	w := newWorld(t, cfg)
	clock := w.clock
	winners := atScale(100)
	ctx := context.Background()
	_, err := w.clean.CreateEvent(ctx, asyncevent.EventSettings{
		EventID: "chaos-lottery", EventType: asyncevent.Lottery, WinnerCount: int64(winners),
		LotteryCutoffAt: asyncevent.MillisOf(clock.Now().Add(time.Hour))})
	require.NoError(t, err)

	lap := phases(t)
	// The workers take their time over each entry (the service's own step), so that
	// the draw meets a backlog: it runs while they still work through the queue, and
	// are killed, under faults.
	w.handler = asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error {
		time.Sleep(50 * time.Millisecond)
		return nil
	})
	drain := w.submitAll("chaos-lottery", rand.New(rand.NewPCG(uint64(cfg.seed), 2)))
	lap("ingest")
	clock.Skip(time.Hour + asyncevent.DefaultDrawSettleWindow)
	backlog := w.queue.Len()
	t.Logf("the draw begins with the queue holding %+v", backlog)

	// The draw itself runs under faults, and is run again until it finishes.
	var res *asyncevent.DrawResult
	for attempt := 0; ; attempt++ {
		require.Less(t, attempt, 30, "the draw did not finish")
		if res, err = w.ingest.Draw(ctx, "chaos-lottery"); err == nil {
			break
		}
		t.Logf("draw attempt %d: %v", attempt, firstLine(err))
	}
	lap("draw")
	v, err := w.clean.VerifyDraw(ctx, "chaos-lottery")
	require.NoError(t, err)
	require.True(t, v.OK(), "%s", v)
	drain()
	w.stopWorkers()
	lap("the workers finish the backlog")
	rep := asynceventtest.CheckEvent(t, w.clean, "chaos-lottery", asynceventtest.CheckOptions{Users: w.users, Abandoned: w.abandoned})
	lap("check")
	t.Logf("%d requests: %v %v; %d worker kills", rep.Requests, rep.ByStatus, rep.ByCode, w.kills)
	require.Len(t, res.Winners, winners)
	require.Equal(t, winners, rep.ByStatus[asyncevent.StatusSucceeded])
	require.Zero(t, rep.ByCode[asyncevent.ResultRejectedClosed], "no entry queued by the cutoff is closed as late")
	v, err = w.clean.VerifyDraw(ctx, "chaos-lottery")
	require.NoError(t, err)
	require.True(t, v.OK(), "after the backlog: %s", v)
}

// phases returns a function that logs how long the phase just ended took.
func phases(t *testing.T) func(phase string) {
	last := time.Now()
	return func(phase string) {
		t.Logf("%s: %s", phase, time.Since(last).Round(100*time.Millisecond))
		last = time.Now()
	}
}

func firstLine(err error) string {
	s := err.Error()
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
