// Scenario suite: the place in line on a real clock (issue 42). A burst of clicks
// over three ingest nodes reaches two paced workers through a queue in a standard
// queue's best-effort order, and every user polls its request; each poll is then
// judged against the truth read from the requests. It proves that the place and the
// wait told are within the bar (make line, LINE_STRICT=1, on a quiet
// machine), and, under make test, that the rig's races and plumbing hold.

package asyncevent_test

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// The place in line on a real clock, as users meet it (issue 42): a burst of clicks
// as fast as the machine ingests them, spread over three ingest nodes, reaches two
// workers through a queue that delivers in a standard queue's best-effort order
// (roughQueue; LINE_HELD_ONE_IN and LINE_HELD_MS set its disorder); the
// workers decide 50 requests a second; every user polls its request when the 202's
// Retry-After says (one in four sooner: eager) and then every second, each poll on
// any node. Afterwards the truth of each poll is read from the requests: the requests
// queued before it whose decision had not yet been acknowledged at the poll (and a
// place told up to those and the undecided of its own millisecond is right: queuedAt
// ranks none of one millisecond before another). The
// errors counted are of the polls with at least 20 truly ahead (issue 42's bar);
// the eager polls' are reported, not held to a bar, and so are the floors the truth
// sets (the wait told from the exact place and pace; the place told from exact counts
// a tenth of a second old). make line runs it on the issue's
// bar without -race; make test holds it to what holds beside every other package.
// With -v it breaks the errors down (by place, by phase of the run, and the place
// told from the exact arrivals before each request with the estimate's decisions,
// and the reverse: which of the two counts a place's error comes from); LINE_LOG=place or
// LINE_LOG=wait logs the polls told far off; LINE_EVERY_MS sets the nodes'
// ProgressEvery.
func TestPlaceInLineOnARealClock(t *testing.T) {
	for _, layout := range []struct {
		name   string
		shards int
	}{{"single keys", 1}, {"the 20,000 clicks/s layout", 0}} {
		t.Run(layout.name, func(t *testing.T) { // alone: the clock is real, and so is the load
			settings := asyncevent.EventSettings{EventID: "burst", EventType: asyncevent.FirstCome, CapacityTotal: 100}
			if layout.shards == 0 {
				settings.ShardForPeak(20_000)
			}
			// The bar (LINE_STRICT=1, make line: a quiet machine, no -race, the
			// workers deciding from the first click), or make test's run under -race
			// beside another package, where the burst may be slower than the workers:
			// they start once it is in, so that a line forms.
			strict := os.Getenv("LINE_STRICT") != ""
			rig := lineRig{clicks: envInt("LINE_CLICKS", 600), nodes: 3, workers: 2, perSecond: 50, afterBurst: !strict}
			rep := runLine(t, settings, rig)
			t.Log(rep)
			assert.Greater(t, rep.first.n, 50, "first polls with at least 20 ahead")
			assert.Greater(t, rep.all.n, 200, "polls with at least 20 ahead")
			if !strict {
				// make test's machine is loaded by another package's tests and -race
				// (the burst takes 2–8 s, DynamoDB Local stalls for seconds): the errors
				// measured there (4% to over 100% at p90) are the machine's, so it runs
				// the rig for its races and its plumbing, and make line holds the bar.
				return
			}
			bar := lineBar{firstP90: 0.05, firstMax: 0.15, firstWaitP90: 0.10, laterP90: 0.05, laterMax: 0.15}
			assert.LessOrEqual(t, rep.first.p90, bar.firstP90, "first polls: p90 error of the place")
			assert.LessOrEqual(t, rep.firstWait.p90, bar.firstWaitP90, "first polls: p90 error of the wait")
			assert.LessOrEqual(t, rep.all.p90, bar.laterP90, "every poll: p90 error of the place")
			assert.LessOrEqual(t, rep.allWait.p90, bar.firstWaitP90, "every poll: p90 error of the wait")
			if bar.firstMax > 0 {
				assert.LessOrEqual(t, rep.first.max, bar.firstMax, "first polls: max error of the place")
				assert.LessOrEqual(t, rep.all.max, bar.laterMax, "every poll: max error of the place")
			}
		})
	}
}

// lineBar is the errors a run of the rig may have.
type lineBar struct {
	firstP90, firstMax, firstWaitP90, laterP90, laterMax float64
}

// lineRig is a burst: clicks over nodes ingest nodes, decided by workers at
// perSecond.
type lineRig struct {
	clicks, nodes, workers int
	perSecond              float64
	afterBurst             bool // the workers start once every click is in
}

// linePollResult is one poll that was told a place.
type linePollResult struct {
	id    string
	at    time.Time
	first bool
	eager bool // polled before the 202's Retry-After
	est   asyncevent.QueueEstimate
}

// spread is the errors of a set of polls.
type spread struct {
	n        int
	p50, p90 float64
	max      float64
	bias     float64 // mean signed error: below 0, told too few ahead
}

func (s spread) String() string {
	return fmt.Sprintf("n=%d p50=%.1f%% p90=%.1f%% max=%.1f%% bias=%+.1f%%", s.n, 100*s.p50, 100*s.p90, 100*s.max, 100*s.bias)
}

func spreadOfErrors(signed []float64) spread {
	if len(signed) == 0 {
		return spread{}
	}
	abs := make([]float64, len(signed))
	var sum float64
	for i, e := range signed {
		abs[i], sum = math.Abs(e), sum+e
	}
	slices.Sort(abs)
	q := func(p float64) float64 { return abs[min(len(abs)-1, int(p*float64(len(abs))))] }
	return spread{n: len(abs), p50: q(0.5), p90: q(0.9), max: abs[len(abs)-1], bias: sum / float64(len(abs))}
}

type lineRunReport struct {
	clicks             int
	ingest             time.Duration
	first, all         spread
	firstWait, allWait spread
	eager              spread // first polls before the 202's Retry-After
	// What the queue's disorder alone makes of an estimate from exact counts at the
	// poll's moment and the workers' exact pace.
	floorFirst, floorFirstWait, floorAll, floorAllWait spread
	// What the decisions' own jitter makes of an estimate from exact counts a tenth
	// of a second before the poll, carried on at the workers' exact pace.
	staleFirst, staleAll spread
}

func (r lineRunReport) String() string {
	return fmt.Sprintf("%d clicks ingested in %v\nfirst polls: place %v; wait %v\nevery poll: place %v; wait %v\neager first polls (before Retry-After): place %v\nthe queue's disorder alone: first polls: place %v; wait %v; every poll: place %v; wait %v\nexact counts a tenth of a second old: first polls: place %v; every poll: place %v", r.clicks, r.ingest.Round(time.Millisecond), r.first, r.firstWait, r.all, r.allWait, r.eager, r.floorFirst, r.floorFirstWait, r.floorAll, r.floorAllWait, r.staleFirst, r.staleAll)
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// runLine runs rig on an event made with settings and measures every poll that
// was told a place against the truth.
func runLine(t *testing.T, settings asyncevent.EventSettings, rig lineRig) lineRunReport {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := asynceventtest.NewTable(t)
	_, err := first.CreateEvent(ctx, settings)
	require.NoError(t, err)
	node := func() *asyncevent.Client {
		c, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: first.TableName(), ProgressEvery: time.Duration(envInt("LINE_EVERY_MS", 200)) * time.Millisecond})
		require.NoError(t, err)
		return c
	}
	nodes := make([]*asyncevent.Client, rig.nodes)
	for i := range nodes {
		nodes[i] = node()
	}
	mem := queue.NewMemory(queue.MemoryOptions{})
	q := newRoughQueue(mem, envInt("LINE_HELD_ONE_IN", 10), time.Duration(envInt("LINE_HELD_MS", 100))*time.Millisecond)

	var (
		mu      sync.Mutex
		decided = map[string]time.Time{}
		polls   []linePollResult
		pending sync.WaitGroup
		open    atomic.Int64
	)
	// The workers: each takes perSecond/workers requests a second, one at a time.
	var workers sync.WaitGroup
	burstIn := make(chan struct{}) // closed once every click is in
	for w := range rig.workers {
		wc := node()
		proc := asyncevent.NewProcessor(wc, asyncevent.ProcessOptions{OnOutcome: func(o asyncevent.Outcome) {
			if o.ResultCode != "" {
				mu.Lock()
				decided[o.RequestID] = time.Now()
				mu.Unlock()
			}
		}})
		every := time.Duration(float64(time.Second) / (rig.perSecond / float64(rig.workers)))
		workers.Go(func() {
			if rig.afterBurst {
				select {
				case <-ctx.Done():
					return
				case <-burstIn:
				}
			}
			tick := time.NewTicker(every)
			defer tick.Stop()
			_ = w
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				ds, err := mem.Receive(ctx, 1, 0, time.Minute)
				if err != nil {
					return
				}
				if len(ds) > 0 { // at the pace, however long a message takes
					workers.Go(func() { asynceventtest.Process(ctx, proc, ds) })
				}
			}
		})
	}

	// A user polls after the 202's Retry-After (1 s, and up to half a second more),
	// or, one in four, at once or within that second (eager), and then every second,
	// on any node, until its request is final.
	pollUser := func(id string) {
		defer pending.Done()
		defer open.Add(-1)
		eager := rand.IntN(4) == 0
		if eager {
			time.Sleep(rand.N(time.Second))
		} else {
			time.Sleep(time.Second + rand.N(500*time.Millisecond))
		}
		for firstPoll := true; ctx.Err() == nil; firstPoll = false {
			r, err := nodes[rand.IntN(len(nodes))].GetRequest(ctx, id)
			if err != nil {
				return
			}
			if r.Status != asyncevent.StatusReceived && r.Status != asyncevent.StatusQueued {
				return
			}
			if r.Queue != nil {
				mu.Lock()
				polls = append(polls, linePollResult{id: id, at: time.Now(), first: firstPoll, eager: eager && firstPoll, est: *r.Queue})
				mu.Unlock()
			}
			time.Sleep(time.Second)
		}
	}

	began := time.Now()
	var lags []float64
	defer func() {
		if testing.Verbose() {
			slices.Sort(lags)
			t.Logf("Submit's time from queuedAt to its answer: p50 %.0f ms, p90 %.0f ms, max %.0f ms", 1000*lags[len(lags)/2], 1000*lags[len(lags)*9/10], 1000*lags[len(lags)-1])
		}
	}()
	var clicks sync.WaitGroup
	var next atomic.Int64
	ids := make([]string, rig.clicks)
	for g := range 24 {
		clicks.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= rig.clicks {
					return
				}
				p, err := nodes[(i+g)%len(nodes)].Submit(ctx, q, settings.EventID, fmt.Sprintf("user-%05d", i))
				if !assert.NoError(t, err) {
					return
				}
				ids[i] = p.RequestID
				mu.Lock()
				lags = append(lags, time.Since(p.Request.QueuedAt.Time()).Seconds())
				mu.Unlock()
				pending.Add(1)
				open.Add(1)
				go pollUser(p.RequestID)
			}
		})
	}
	clicks.Wait()
	close(burstIn)
	ingest := time.Since(began)
	workersFrom := began // when the workers began taking messages
	if rig.afterBurst {
		workersFrom = began.Add(ingest)
	}
	pending.Wait()
	cancel()
	workers.Wait()
	q.Wait()

	// The truth: each request's queuedAt, from the table, and when its decision was
	// acknowledged.
	run := lineRun{rig: rig, began: began, workersFrom: workersFrom, ingest: ingest, polls: polls, decided: decided, queuedAt: map[string]asyncevent.EpochMillis{}}
	for _, id := range ids {
		r, err := first.GetRequest(context.Background(), id)
		require.NoError(t, err)
		run.queuedAt[id] = r.QueuedAt
	}
	run.order = slices.Clone(ids)
	slices.SortFunc(run.order, func(a, b string) int { return cmp.Compare(run.queuedAt[a], run.queuedAt[b]) })
	if testing.Verbose() {
		diagnose(t, &run)
	}
	return run.score()
}

// lineRun is what a run of the rig saw: the polls, and the truth to hold them to.
type lineRun struct {
	rig         lineRig
	began       time.Time
	workersFrom time.Time // when the workers began
	ingest      time.Duration
	polls       []linePollResult
	decided     map[string]time.Time // when each request's decision was acknowledged
	queuedAt    map[string]asyncevent.EpochMillis
	order       []string // the requests in queuedAt order
}

// pollTruth is a poll held to what happened.
type pollTruth struct {
	ahead      int     // queued before it and not yet decided at the poll
	ties       int     // queued in its millisecond, not yet decided: ahead of it or not
	rank, done int     // queued before it; decided, of any place, by the poll
	place      float64 // the place's error, signed, of ahead
	wait       float64 // the wait's error, signed, of the true wait (0: no rate told)
	trueWait   float64 // seconds until its decision (0: not decided)
	stale      float64 // the place's error told from exact counts staleFor old
}

// offBy returns the error of a place told, signed, of the true place: the requests
// queued before it not yet decided, and any of those queued in its own millisecond
// (queuedAt ranks none of them before another; the queue took them in some order),
// so that telling 21 where 20 were before it and one beside it is no error.
func (pt pollTruth) offBy(told float64) float64 {
	var off float64
	switch {
	case told < float64(pt.ahead):
		off = told - float64(pt.ahead)
	case told > float64(pt.ahead+pt.ties):
		off = told - float64(pt.ahead+pt.ties)
	}
	return off / float64(max(pt.ahead, 1))
}

// staleFor is how old the exact counts of the stale floor are.
const staleFor = 100 * time.Millisecond

func (r *lineRun) truthOf(p linePollResult) pollTruth {
	me := r.queuedAt[p.id]
	var pt pollTruth
	for _, id := range r.order {
		d, ok := r.decided[id]
		decidedBy := ok && !d.After(p.at)
		if decidedBy {
			pt.done++
		}
		switch {
		case r.queuedAt[id] < me:
			pt.rank++
			if !decidedBy {
				pt.ahead++
			}
		case r.queuedAt[id] == me && id != p.id && !decidedBy:
			pt.ties++
		}
	}
	pt.place = pt.offBy(float64(p.est.Ahead))
	doneThen := 0
	for _, d := range r.decided {
		if d.Before(p.at.Add(-staleFor)) {
			doneThen++
		}
	}
	// carried on at the workers' pace over staleFor, or over the part of it they ran
	carried := min(staleFor, max(p.at.Sub(r.workersFrom), 0))
	told := float64(pt.rank) - (float64(doneThen) + r.rig.perSecond*carried.Seconds())
	pt.stale = pt.offBy(max(told, 0))
	if d, ok := r.decided[p.id]; ok {
		pt.trueWait = d.Sub(p.at).Seconds()
		if p.est.Rate > 0 {
			pt.wait = (p.est.Wait.Seconds() - pt.trueWait) / pt.trueWait
		}
	}
	return pt
}

// floorWait is the error of a wait told from the exact place and the workers' exact
// pace: what the queue's order and the decisions' latency leave to any estimate.
func (r *lineRun) floorWait(pt pollTruth) float64 {
	return (float64(pt.ahead+1)/r.rig.perSecond - pt.trueWait) / pt.trueWait
}

// score measures the polls with at least 20 truly ahead (issue 42's bar).
func (r *lineRun) score() lineRunReport {
	var firstErrs, allErrs, firstWait, allWait, eagerErrs, floorFirst, floorFirstWait, floorAll, floorAllWait, staleFirst, staleAll []float64
	for _, p := range r.polls {
		pt := r.truthOf(p)
		if pt.ahead < 20 {
			continue
		}
		if p.eager {
			eagerErrs = append(eagerErrs, pt.place)
			continue
		}
		fifo := (float64(max(pt.rank-pt.done, 0)) - float64(pt.ahead)) / float64(pt.ahead)
		allErrs, floorAll, staleAll = append(allErrs, pt.place), append(floorAll, fifo), append(staleAll, pt.stale)
		if p.est.Rate > 0 {
			allWait = append(allWait, pt.wait)
		}
		if pt.trueWait > 0 {
			floorAllWait = append(floorAllWait, r.floorWait(pt))
		}
		if !p.first {
			continue
		}
		firstErrs, floorFirst, staleFirst = append(firstErrs, pt.place), append(floorFirst, fifo), append(staleFirst, pt.stale)
		if p.est.Rate > 0 {
			firstWait = append(firstWait, pt.wait)
		}
		if pt.trueWait > 0 {
			floorFirstWait = append(floorFirstWait, r.floorWait(pt))
		}
	}
	return lineRunReport{clicks: r.rig.clicks, ingest: r.ingest, first: spreadOfErrors(firstErrs), all: spreadOfErrors(allErrs), eager: spreadOfErrors(eagerErrs),
		firstWait: spreadOfErrors(firstWait), allWait: spreadOfErrors(allWait),
		floorFirst: spreadOfErrors(floorFirst), floorFirstWait: spreadOfErrors(floorFirstWait), floorAll: spreadOfErrors(floorAll),
		floorAllWait: spreadOfErrors(floorAllWait), staleFirst: spreadOfErrors(staleFirst), staleAll: spreadOfErrors(staleAll)}
}

// diagnose logs the errors of the polls with at least 20 truly ahead broken down: by
// place, by the poll's age and phase of the run, the wait told with the true pace and
// with the true place; LINE_LOG=place or LINE_LOG=wait logs each poll told far off.
func diagnose(t *testing.T, r *lineRun) {
	bucket := func(n int) int { return min(max(int(math.Log2(float64(n)/20)), 0), 6) } // 20–39, 40–79, …
	var place, wait, floor, byPhase [7][]float64
	var withPace, withPlace, withArrivals, withDecided []float64
	for _, p := range r.polls {
		pt := r.truthOf(p)
		if pt.ahead < 20 || p.eager {
			continue
		}
		b := bucket(pt.ahead)
		place[b] = append(place[b], pt.place)
		ea, ed := asyncevent.EstimateParts(p.est)
		withArrivals = append(withArrivals, pt.offBy(float64(int64(max(float64(pt.rank)-ed, 0))))) // whole requests, as Ahead
		withDecided = append(withDecided, pt.offBy(float64(int64(max(ea-float64(pt.done), 0)))))
		if p.est.Rate > 0 && pt.trueWait > 0 {
			wait[b] = append(wait[b], pt.wait)
			phase := min(int(p.at.Sub(r.began)/time.Second), 6)
			byPhase[phase] = append(byPhase[phase], pt.wait)
			if p.first {
				floor[b] = append(floor[b], r.floorWait(pt))
				withPace = append(withPace, (float64(p.est.Ahead+1)/r.rig.perSecond-pt.trueWait)/pt.trueWait)
				withPlace = append(withPlace, (float64(pt.ahead+1)/p.est.Rate-pt.trueWait)/pt.trueWait)
			}
		}
		switch log := os.Getenv("LINE_LOG"); {
		case log == "place" && math.Abs(pt.place) > 0.15:
			cut, dc := asyncevent.EstimateCut(p.est)
			trueAt := func(ms int64) (n int) {
				for _, d := range r.decided {
					if d.UnixMilli() < ms {
						n++
					}
				}
				return n
			}
			t.Logf("  cut %v before the poll: counted %.1f, true %d; true 300ms before cut %d", p.at.Sub(time.UnixMilli(cut)).Round(time.Millisecond), dc, trueAt(cut), trueAt(cut-300))
			t.Logf("poll at +%v: told %d ahead, %d true (arrived before it %d, told %.1f; decided %d, told %.1f; rate %.1f, read %v before)",
				p.at.Sub(r.began).Round(time.Millisecond), p.est.Ahead, pt.ahead, pt.rank, ea, pt.done, ed, p.est.Rate, p.at.Sub(p.est.AsOf.Time()).Round(time.Millisecond))
		case log == "wait" && math.Abs(pt.wait) > 0.3:
			t.Logf("poll at +%v: told %d ahead (%d true), wait %v (true %.3fs), rate %.1f",
				p.at.Sub(r.began).Round(time.Millisecond), p.est.Ahead, pt.ahead, p.est.Wait.Round(time.Millisecond), pt.trueWait, p.est.Rate)
		}
	}
	for b := range place {
		t.Logf("  polls %d+ ahead: place %v; wait %v; first polls' floor of the wait %v", 20<<b, spreadOfErrors(place[b]), spreadOfErrors(wait[b]), spreadOfErrors(floor[b]))
	}
	for b, errs := range byPhase {
		t.Logf("  waits told %ds into the run: %v", b, spreadOfErrors(errs))
	}
	t.Logf("  places told with the exact arrivals before them: %v; with the exact decisions: %v", spreadOfErrors(withArrivals), spreadOfErrors(withDecided))
	t.Logf("  first polls' wait told with the workers' true pace: %v; with the true place: %v", spreadOfErrors(withPace), spreadOfErrors(withPlace))
}

// roughQueue is a standard queue's best-effort order: messages generally come out
// in the order they were sent, and occasionally not (AWS's words): one message in
// oneIn is held back by a random delay up to within, and comes out after the ones
// sent in that time. LINE_HELD_ONE_IN=1 holds every message back (each by its own
// delay): most of a burst then comes out of order, and the wait of a request near
// the front is as uncertain as that delay (the report's "queue's disorder alone").
type roughQueue struct {
	queue.Queue
	oneIn  int
	within time.Duration
	wg     sync.WaitGroup
}

func newRoughQueue(q queue.Queue, oneIn int, within time.Duration) *roughQueue {
	return &roughQueue{Queue: q, oneIn: oneIn, within: within}
}

func (r *roughQueue) Send(ctx context.Context, m queue.OutgoingMessage) error {
	if rand.IntN(r.oneIn) != 0 {
		return r.Queue.Send(ctx, m)
	}
	r.wg.Add(1)
	time.AfterFunc(rand.N(r.within), func() {
		defer r.wg.Done()
		_ = r.Queue.Send(context.WithoutCancel(ctx), m)
	})
	return nil
}

// Wait waits until every message was sent on.
func (r *roughQueue) Wait() { r.wg.Wait() }
