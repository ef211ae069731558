package demo

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
	"github.com/asyncevent/asyncevent/internal/metered"
)

// The users of the first-come spike poll their place in line while they wait, as an
// app would (GetRequest on a node of its own, whose copy of the event's progress is
// at most a second old); once every request is final the report holds what each poll
// was told against what happened.

const (
	// pollEvery and pollsPerTick: every pollEvery, pollsPerTick users still waiting,
	// spread over the line, poll their request at once.
	pollEvery    = 250 * time.Millisecond
	pollsPerTick = 20
	// minAhead is the fewest requests truly ahead of a poll whose errors the report
	// counts: nearer the front a few requests either way are a large share.
	minAhead = 50
)

// linePoll is one answer that told a waiting request its place in line.
type linePoll struct {
	requestID string
	at        time.Time // when the answer came
	first     bool      // the request's first answer with a place
	told      asyncevent.QueueEstimate
}

// lineSample is the line as a whole, as the polling node's QueueStats told it.
type lineSample struct {
	at    time.Time
	stats asyncevent.QueueStats
}

// lineWatch polls a first-come event's line as its users would and keeps what it
// takes to judge the answers afterwards: when each request was queued and finished.
type lineWatch struct {
	node    *asyncevent.Client // the users' node: an HTTP node answering the polls
	eventID string

	mu         sync.Mutex
	order      []string // the new participations, in the order ingest answered them
	queuedAt   map[string]asyncevent.EpochMillis
	finishedAt map[string]time.Time // when a worker finished each request
	calls      int                  // GetRequest calls
	errs       int
	polls      []linePoll
	placed     map[string]bool // the requests told a place already
	samples    []lineSample
	// cost is what the polling node spent on the polls, set once they stopped.
	cost metered.Counts
}

func newLineWatch(node *asyncevent.Client, eventID string) *lineWatch {
	return &lineWatch{node: node, eventID: eventID, queuedAt: map[string]asyncevent.EpochMillis{}, finishedAt: map[string]time.Time{}}
}

// queued takes a new participation: its user now waits in line.
func (l *lineWatch) queued(p asyncevent.Participation) {
	if p.Request == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.order = append(l.order, p.RequestID)
	l.queuedAt[p.RequestID] = p.Request.QueuedAt
}

// finish takes a request's first final outcome (tracker.onFinal): it must not block.
func (l *lineWatch) finish(o asyncevent.Outcome) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.finishedAt[o.RequestID] = now
}

// start polls every pollEvery until the returned function is called.
func (l *lineWatch) start(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(pollEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				l.tick(ctx)
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// tick polls pollsPerTick waiting requests at once, and the line as a whole.
func (l *lineWatch) tick(ctx context.Context) {
	ids := l.waiting(pollsPerTick)
	if len(ids) == 0 {
		return
	}
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() { l.poll(ctx, id) })
	}
	wg.Go(func() {
		if st, err := l.node.QueueStats(ctx, l.eventID); err == nil {
			l.mu.Lock()
			l.samples = append(l.samples, lineSample{at: time.Now(), stats: st})
			l.mu.Unlock()
		}
	})
	wg.Wait()
}

// waiting returns n requests not yet finished, spread evenly over those.
func (l *lineWatch) waiting(n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var all []string
	for _, id := range l.order {
		if _, done := l.finishedAt[id]; !done {
			all = append(all, id)
		}
	}
	if len(all) <= n {
		return all
	}
	picked := make([]string, n)
	for k := range picked {
		picked[k] = all[(2*k+1)*len(all)/(2*n)]
	}
	return picked
}

// poll asks for one request as its user's app would, and keeps a place-in-line answer.
func (l *lineWatch) poll(ctx context.Context, id string) {
	r, err := l.node.GetRequest(ctx, id)
	at := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if ctx.Err() != nil {
		return // stopped mid-call: not a poll
	}
	l.calls++
	switch {
	case err != nil:
		l.errs++
	case r.Queue != nil:
		if l.placed == nil {
			l.placed = map[string]bool{}
		}
		l.polls = append(l.polls, linePoll{requestID: id, at: at, first: !l.placed[id], told: *r.Queue})
		l.placed[id] = true
	}
}

// lineTruth is what happened to the event's requests: when each was queued and when a
// worker finished it, in queue order.
type lineTruth struct {
	queuedAt []asyncevent.EpochMillis
	finished []time.Time
}

func (l *lineWatch) truth() lineTruth {
	var ids []string
	for id := range l.finishedAt {
		if _, ok := l.queuedAt[id]; ok {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(l.queuedAt[a], l.queuedAt[b]) })
	tr := lineTruth{queuedAt: make([]asyncevent.EpochMillis, len(ids)), finished: make([]time.Time, len(ids))}
	for i, id := range ids {
		tr.queuedAt[i], tr.finished[i] = l.queuedAt[id], l.finishedAt[id]
	}
	return tr
}

// queuedBefore is how many requests were queued before q.
func (tr lineTruth) queuedBefore(q asyncevent.EpochMillis) int {
	n, _ := slices.BinarySearch(tr.queuedAt, q)
	return n
}

// ahead is how many requests queued before q were still unfinished at at.
func (tr lineTruth) ahead(q asyncevent.EpochMillis, at time.Time) int {
	n := 0
	for _, f := range tr.finished[:tr.queuedBefore(q)] {
		if f.After(at) {
			n++
		}
	}
	return n
}

// drained is how long after at the last of the requests then in line (queued by at,
// unfinished) was finished; 0 if none was.
func (tr lineTruth) drained(at time.Time) time.Duration {
	var last time.Duration
	for _, f := range tr.finished[:tr.queuedBefore(asyncevent.MillisOf(at)+1)] {
		last = max(last, f.Sub(at))
	}
	return last
}

// report judges the polls against the truth; st is the line as the event's
// statistics tell it once the spike is over, start the first click.
func (l *lineWatch) report(st *asyncevent.QueueStats, start time.Time) *lineReport {
	l.mu.Lock()
	defer l.mu.Unlock()
	tr := l.truth()
	r := &lineReport{
		Polls: l.calls, Placed: len(l.polls), PollErrors: l.errs, PollEveryMs: clikit.Ms(pollEvery), PollsPerTick: pollsPerTick,
		PerPoll: clikit.CostOf(l.cost, l.calls, 0), MinAhead: minAhead,
	}
	var aheadErrs, waitErrs, firstErrs []float64
	for _, p := range l.polls {
		fin, ok := l.finishedAt[p.requestID]
		truly := tr.ahead(l.queuedAt[p.requestID], p.at)
		if !ok || truly < minAhead {
			continue
		}
		aheadErrs = append(aheadErrs, relErr(float64(p.told.Ahead), float64(truly)))
		if p.first {
			firstErrs = append(firstErrs, relErr(float64(p.told.Ahead), float64(truly)))
		}
		if p.told.Rate == 0 {
			r.WaitUnknown++
			continue
		}
		waitErrs = append(waitErrs, relErr(p.told.Wait.Seconds(), fin.Sub(p.at).Seconds()))
	}
	r.Ahead, r.Wait, r.FirstAhead = spreadOf(aheadErrs), spreadOf(waitErrs), spreadOf(firstErrs)
	r.series(st, start)
	r.drain(l.samples, tr, start)
	return r
}

// relErr is the absolute error of told as a fraction of truth.
func relErr(told, truth float64) float64 {
	if told > truth {
		return (told - truth) / truth
	}
	return (truth - told) / truth
}
