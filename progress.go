package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/asyncevent/asyncevent/entity"
)

// An event's progress: how many of its requests arrived, and how many the workers
// reached, in each tenth of a second, so that a poll of a request that waits in line
// can say how many wait before it and for how long (docs/design.md, "A place in
// line").
//
// Every node counts what it does in memory and writes its counts at each multiple of
// Options.ProgressEvery on its clock: one UpdateItem per second of counts (ADD of ten
// tenths of arrivals, a0 … a9, of ten tenths of requests reached, d0 … d9, and of the
// arrivals again by hundredth, h00 … h99) on one of the event's progress partitions,
// EVENT#<eventId>#PROGRESS#<p>, SK T#<unix second>; the node's p is fixed at random,
// so that the nodes spread over the event's progressShards partitions. A reader
// queries each partition and keeps what it read for Options.ProgressCacheTTL, and
// for the polls it would place poorly until the nodes' next flush has landed, so
// thousands of polls a second cost a node a few reads of each partition a second, and
// each poll about the GetItem of its request.

// progressSlots is the tenths of a second of a progress item.
const progressSlots = 10

// progressParts is the hundredths of a tenth by which the arrivals are counted as
// well: a request near the front is placed among the arrivals of its own tenth
// (tens of them in a burst, and not evenly spread) by the hundredth they came in.
const progressParts = 10

// progressShardsPer is the index shards of an event per progress partition: the
// progress partitions take a write per node a second, not per click.
const progressShardsPer = 8

// progressShards is the number of the event's progress partitions.
func progressShards(cfg *eventItem) int {
	return max(1, (max(cfg.IndexShards, 1)+progressShardsPer-1)/progressShardsPer)
}

// The defaults of the progress options.
const (
	defaultProgressEvery    = 200 * time.Millisecond
	defaultProgressCacheTTL = time.Second
	// progressTTL is how long a progress item is kept.
	progressTTL = 7 * 24 * time.Hour
)

// The params of the progress row: a0 … a9 and d0 … d9, the counts of each tenth,
// and h00 … h99, the arrivals of each hundredth (a tenth whose hundredths do not sum
// to its count was written without them: its arrivals are taken as spread over it).
var (
	arrivedSlots         = slotNames("a")
	reachedSlots         = slotNames("d")
	hundredthSlots       = hundredthNames("h")
	pProgressTTL   param = "progressTtl"
)

func slotNames(prefix string) [progressSlots]string {
	var names [progressSlots]string
	for i := range names {
		names[i] = prefix + strconv.Itoa(i)
	}
	return names
}

func hundredthNames(prefix string) [progressSlots * progressParts]string {
	var names [progressSlots * progressParts]string
	for i := range names {
		names[i] = fmt.Sprintf("%s%02d", prefix, i)
	}
	return names
}

// progressRow adds a node's counts of one second to its progress item.
var progressRow = row{
	name: "progress counted", method: "FlushProgress", item: entity.Progress, op: opUpdate,
	sets: []set{setIfMissing(attrEntityType, entity.Progress), setIfMissing(attrEventID, pEventID), setIfMissing(attrTTL, pProgressTTL)},
	adds: progressAdds(),
}

func progressAdds() []set {
	var adds []set
	for _, names := range [][]string{arrivedSlots[:], reachedSlots[:], hundredthSlots[:]} {
		for _, n := range names {
			adds = append(adds, addTo(n, param(n)))
		}
	}
	return adds
}

// progressCounts is what a node counted of one second of one event.
type progressCounts struct {
	arrived, reached [progressSlots]int64
	hundredths       [progressSlots * progressParts]int64 // the arrivals again, by hundredth
}

// progressSecond names one second of one event's counts.
type progressSecond struct {
	eventID string
	second  int64
}

// progressMeter counts what a node does for each event and writes it.
type progressMeter struct {
	c     *Client
	every time.Duration
	node  int // the node's progress partition, modulo the event's progressShards

	mu      sync.Mutex
	pending map[progressSecond]*progressCounts
	late    lateness    // how long after their moments the counts pending came
	armed   bool        // counts are pending, and timer will write them
	timer   *time.Timer // the flush at due
	due     int64       // when they are due (unix ms): the multiple of every after the first
	wrote   int64       // when a flush last took counts to write (unix ms)
	gen     int64       // the arming of timer

	flushing chan struct{} // one flush at a time: held while a flush runs

	// lag is how long after its moment a count of this node lands on the table, less
	// the wait for the next flush (ms), smoothed over the flushes, rising at once:
	// for an arrival, the time from its queuedAt to its count (Submit's puts) and a
	// flush's write; for a request finished (counted when its result was written),
	// the flush's write alone (writeLag).
	lag, writeLag atomic.Int64
}

func newProgressMeter(c *Client, every time.Duration) *progressMeter {
	return &progressMeter{c: c, every: every, node: rand.IntN(1 << 20), pending: map[progressSecond]*progressCounts{}, flushing: make(chan struct{}, 1)}
}

// arrived counts a request of eventID queued at.
func (m *progressMeter) arrived(eventID string, at EpochMillis) {
	m.count(eventID, at, true, func(p *progressCounts, slot int) {
		p.arrived[slot]++
		p.hundredths[int64(at)%1000/(1000/(progressSlots*progressParts))]++
	})
}

// reached counts a request of eventID a worker finished at.
func (m *progressMeter) reached(eventID string, at EpochMillis) {
	m.count(eventID, at, false, func(p *progressCounts, slot int) { p.reached[slot]++ })
}

func (m *progressMeter) count(eventID string, at EpochMillis, arrival bool, add func(*progressCounts, int)) {
	if m == nil || at <= 0 {
		return
	}
	k := progressSecond{eventID: eventID, second: int64(at) / 1000}
	late := int64(m.c.now() - at)
	m.mu.Lock()
	defer m.mu.Unlock()
	if arrival {
		m.late.add(late)
	}
	add(m.pendingOf(k), int(int64(at)%1000)/(1000/progressSlots))
}

// pendingOf returns the counts pending of k, made if new, and arms the next flush;
// the caller holds m.mu.
func (m *progressMeter) pendingOf(k progressSecond) *progressCounts {
	p := m.pending[k]
	if p == nil {
		p = &progressCounts{}
		m.pending[k] = p
	}
	if !m.armed {
		m.armed = true
		// At the next multiple of every on the clock, as on every node: a reader then
		// knows which moments every node's counts cover once the writes of that flush
		// have had time to land, whatever its nodes' phases (progressComplete).
		now := int64(m.c.now())
		wait := untilFlush(now, m.every)
		m.due = now + wait.Milliseconds()
		m.gen++
		gen := m.gen
		m.timer = time.AfterFunc(wait, func() { _ = m.flushOf(context.Background(), gen) })
	}
	return p
}

// flush writes every count pending, a write per event and second. Counts a write
// could not store stay pending for the next flush when DynamoDB refused them for
// throughput (not applied); after any other error they are dropped, since the write
// may have been applied with its answer lost, and an ADD sent again would count them
// twice. Counts older than progressSpan are dropped as well: no reader looks there.
func (m *progressMeter) flush(ctx context.Context) error { return m.flushOf(ctx, 0) }

// flushOf is flush; a timer's (gen, its arming) flushes only if its arming stands.
func (m *progressMeter) flushOf(ctx context.Context, gen int64) error {
	if m == nil {
		return nil // progress not counted
	}
	if err := m.lockFlush(ctx); err != nil {
		return err
	}
	defer func() { <-m.flushing }()
	m.mu.Lock()
	if gen != 0 && (!m.armed || m.gen != gen) {
		m.mu.Unlock()
		return nil // a flush took this timer's counts while it waited
	}
	if len(m.pending) > 0 && ctx.Err() != nil { // leave them to the timer, unsent
		m.mu.Unlock()
		return fmt.Errorf("progress: %w", ctx.Err())
	}
	batch, late := m.pending, m.late.high()
	m.pending, m.late = map[progressSecond]*progressCounts{}, lateness{}
	if m.armed {
		m.armed = false
		m.timer.Stop() // its counts are these: a timer that has fired finds them taken (gen)
		// A timer that fired a multiple late (a thawed process's) wrote a pause's
		// counts: the invocation that thawed it still writes its own at its end.
		if now := int64(m.c.now()); gen == 0 || now < m.due+m.every.Milliseconds() {
			m.wrote = now
		}
	}
	m.mu.Unlock()
	if len(batch) == 0 {
		return nil // an explicit flush took them before the timer: nothing to measure
	}
	began := time.Now()
	defer func() { m.measured(late, time.Since(began).Milliseconds()) }()
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	stale := m.c.opts.Clock().Add(-progressSpan).Unix()
	for k, p := range batch { // at once: a late write makes every reader's rate too low
		if k.second < stale {
			m.c.opts.Logger.WarnContext(ctx, "progress counts older than the span a reader holds are dropped (their process was frozen or stalled)", "eventId", k.eventID, "second", k.second)
			continue
		}
		wg.Go(func() {
			err := m.write(ctx, k, p)
			if err == nil {
				return
			}
			if errors.Is(throttled(err), ErrThrottled) {
				m.putBack(k, p)
			} else {
				m.c.opts.Logger.WarnContext(ctx, "a write of the progress counts failed; its counts are dropped, as it may have applied", "eventId", k.eventID, "error", err)
			}
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// measured takes in the lags of a flush's counts (ms): its latest count came late
// after its moment, and its writes took write. Each lag rises to what was measured
// at once and falls towards it by a fifth a flush.
func (m *progressMeter) measured(late, write int64) {
	smooth := func(lag *atomic.Int64, now int64) {
		old := lag.Load()
		lag.Store(max(now, old-(old-now)/5))
	}
	smooth(&m.lag, late+write)
	smooth(&m.writeLag, write)
}

// lateness is how long after their moments a flush's counts came (ms), by
// hundredth of a second, to a second and more.
type lateness struct {
	n     int
	parts [101]int // parts[i]: the counts i hundredths late; the last, a second or more
	most  int64
}

func (l *lateness) add(ms int64) {
	l.n++
	l.parts[min(max(ms, 0)/10, int64(len(l.parts)-1))]++
	l.most = max(l.most, ms)
}

// high returns how late the counts came, leaving out the latest hundredth of them
// when there are a hundred or more: one put retried for seconds should not move
// every reader's complete arrivals back by as much (progressComplete), for the
// flushes the lag takes to fall, for the sake of one request. It is the end of the
// hundredth of a second that holds the 99th percentile (at most the latest count),
// or the latest count when that is a second or more.
func (l *lateness) high() int64 {
	if l.n < 100 {
		return l.most
	}
	keep, seen := l.n-l.n/100, 0 // the counts it covers
	for i, c := range l.parts[:len(l.parts)-1] {
		if seen += c; seen >= keep {
			return min(int64(i+1)*10, l.most)
		}
	}
	return l.most
}

// putBack returns counts a write could not store to the pending ones, and arms the
// next flush.
func (m *progressMeter) putBack(k progressSecond, p *progressCounts) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := m.pendingOf(k)
	for i := range progressSlots {
		cur.arrived[i] += p.arrived[i]
		cur.reached[i] += p.reached[i]
	}
	for i, n := range p.hundredths {
		cur.hundredths[i] += n
	}
}

// write adds one second's counts to the node's progress item of the event.
func (m *progressMeter) write(ctx context.Context, k progressSecond, p *progressCounts) error {
	cfg, err := m.c.cachedEvent(ctx, k.eventID)
	if err != nil {
		return err
	}
	key := ProgressKey{eventID: k.eventID, shard: m.node % progressShards(cfg), second: k.second}
	a := args{pEventID: k.eventID, pProgressTTL: time.Unix(k.second, 0).Add(progressTTL).Unix()}
	for i := range progressSlots {
		a[param(arrivedSlots[i])] = p.arrived[i]
		a[param(reachedSlots[i])] = p.reached[i]
	}
	for i, n := range p.hundredths {
		a[param(hundredthSlots[i])] = n
	}
	if err := m.c.do(ctx, txOptions{}, []write{{row: &progressRow, key: key.Key(), args: a}}); err != nil {
		return fmt.Errorf("progress of %s: %w", k.eventID, err)
	}
	return nil
}

// lockFlush waits for the flush under way, if one is, or for ctx.
func (m *progressMeter) lockFlush(ctx context.Context) error {
	select {
	case m.flushing <- struct{}{}:
		return nil
	default:
	}
	select {
	case m.flushing <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("progress: waiting for the flush under way: %w", ctx.Err())
	}
}

// flushDue writes the counts pending if their multiple of every has come (a timer
// should have written them, and a frozen process runs none), or if no flush took
// counts since the last multiple (a process invoked less often than every writes
// each invocation's counts at its end, rather than at its next invocation; a timer
// that fired a multiple or more late, a thawed process's, is not such a flush).
func (m *progressMeter) flushDue(ctx context.Context) error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	now := int64(m.c.now())
	due := m.armed && (now >= m.due || m.wrote < lastFlush(now, m.every))
	m.mu.Unlock()
	if due {
		return m.flush(ctx)
	}
	// A timer's flush may be writing now (a thawed process's timer fires at once):
	// wait for it, so that the process is not frozen in its writes.
	if err := m.lockFlush(ctx); err != nil {
		return err
	}
	<-m.flushing
	return nil
}

// FlushDueProgress is FlushProgress when the counts this client holds are due: the
// multiple of Options.ProgressEvery after the first of them has come (readers take
// them as written by then), or no flush has written counts since the last multiple.
// A process frozen between invocations (an AWS Lambda sandbox) runs no timer:
// calling it at the end of each invocation writes an invocation's counts at once
// when the invocations come less often than ProgressEvery (a thawed timer's write of
// the counts a pause held does not count), and otherwise at the first invocation
// after each multiple: at most one write per event and second counted a multiple
// (one more after a thaw), not one a click. It writes nothing otherwise, but waits
// (for ctx at most) for a flush its timer began, since a thawed process's timer
// fires at once, so that the process is not frozen in its writes.
func (c *Client) FlushDueProgress(ctx context.Context) error {
	return c.progress.flushDue(ctx)
}

// FlushProgress writes the counts of the event's progress this client holds now,
// rather than at the next multiple of Options.ProgressEvery: the "progress counted" row, one
// UpdateItem per event and second counted (PK EVENT#<eventId>#PROGRESS#<p>, SK
// T#<unix second>, ADD a0 … a9, d0 … d9 and h00 … h99: the arrivals and the requests
// reached in each tenth of the second, and the arrivals in each hundredth; no
// condition). Call it before a process that counted
// (ingest, a worker) ends, such as at the end of a Lambda invocation.
func (c *Client) FlushProgress(ctx context.Context) error {
	return c.progress.flush(ctx)
}

// progressView is what a node read of one event's progress: the counts by tenth of
// a second over the last progressSpan at most, cumulative, on top of the counts
// before it.
type progressView struct {
	readAt time.Time
	first  int64                  // the first tenth held (unix tenths of a second)
	base   [2]int64               // the arrivals and the requests reached before first
	cum    [2][]int64             // cum[k][i]: the count k (arrived, reached) before tenth first+i+1
	parts  [][progressParts]int64 // parts[i]: tenth first+i's arrivals by hundredth
}

// tenthCounts is one tenth of a second of an event's progress as read: its
// arrivals, its requests reached, and then its arrivals by hundredth (from
// firstPart on).
type tenthCounts [2 + progressParts]int64

// firstPart is the index of a tenthCounts' arrivals in its first hundredth.
const firstPart = 2

// The counts of a view.
const (
	arrivals = 0
	finished = 1
)

// progressSpan is the span of an event's progress a node holds by tenth of a second:
// the line's last quarter of an hour, which bounds what a refresh rebuilds and what
// QueueStats.Series holds, however long the event runs. The counts before it are
// kept as two sums; a request that has waited longer than the span is placed as if it
// had arrived at the span's start, which can only say more ahead than there are.
const progressSpan = 15 * time.Minute

// readProgress reads the progress items of the event from the second since on: a
// Query of each of its progress partitions (SK ≥ T#<since>), all pages, the
// partitions at once (a refresh's age is the slowest Query's, not their sum).
func (c *Client) readProgress(ctx context.Context, cfg *eventItem, since int64) (map[int64]tenthCounts, error) {
	from := ProgressKey{eventID: cfg.EventID, second: since}.Key().SK
	shards := progressShards(cfg)
	read := make([]map[int64]tenthCounts, shards)
	g, gctx := errgroup.WithContext(ctx)
	for shard := range shards {
		g.Go(func() (err error) {
			read[shard], err = c.readProgressPartition(gctx, cfg.EventID, progressPartition(cfg.EventID, shard), from)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("read the progress of %s: %w", cfg.EventID, err)
	}
	tenths := read[0]
	for _, part := range read[1:] {
		for t, n := range part {
			sum := tenths[t]
			for i := range sum {
				sum[i] += n[i]
			}
			tenths[t] = sum
		}
	}
	return tenths, nil
}

// readProgressPartition reads one progress partition from the sort key from on.
func (c *Client) readProgressPartition(ctx context.Context, eventID, partition, from string) (map[int64]tenthCounts, error) {
	tenths := map[int64]tenthCounts{}
	key := expression.Key(attrPK).Equal(expression.Value(partition)).
		And(expression.Key(attrSK).GreaterThanEqual(expression.Value(from)))
	expr, err := expression.NewBuilder().WithKeyCondition(key).Build()
	if err != nil {
		return nil, err
	}
	for pages := dynamodb.NewQueryPaginator(c.db, c.query("", expr)); pages.HasMorePages(); {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, raw := range page.Items {
			var head Key
			if err := attributevalue.UnmarshalMap(raw, &head); err != nil {
				return nil, err
			}
			k, err := ParseProgressKey(head)
			if err != nil {
				return nil, err
			}
			slots := slotCounts(raw)
			for i := range progressSlots {
				t := tenths[k.second*progressSlots+int64(i)]
				t[arrivals] += slots[arrivedSlots[i]]
				t[finished] += slots[reachedSlots[i]]
				for h := range progressParts {
					t[firstPart+h] += slots[hundredthSlots[i*progressParts+h]]
				}
				tenths[k.second*progressSlots+int64(i)] = t
			}
		}
	}
	return tenths, nil
}

// slotCounts reads the counts of a progress item's tenths: its number attributes.
func slotCounts(raw map[string]types.AttributeValue) map[string]int64 {
	counts := map[string]int64{}
	for name, v := range raw {
		if n, ok := v.(*types.AttributeValueMemberN); ok {
			if x, err := strconv.ParseInt(n.Value, 10, 64); err == nil {
				counts[name] = x
			}
		}
	}
	return counts
}

// newProgressView makes the cumulative view of the counts by tenth, on top of the
// counts before them (base).
func newProgressView(tenths map[int64]tenthCounts, base [2]int64, readAt time.Time) *progressView {
	v := &progressView{readAt: readAt, base: base, first: readAt.UnixMilli() / 100}
	if len(tenths) == 0 {
		return v
	}
	first, last := int64(-1), int64(-1)
	for t := range tenths {
		if first < 0 || t < first {
			first = t
		}
		last = max(last, t)
	}
	v.first = first
	n := int(last-first) + 1
	sum := base
	for k := range v.cum {
		v.cum[k] = make([]int64, n)
	}
	v.parts = make([][progressParts]int64, n)
	for i := range n {
		c := tenths[first+int64(i)]
		for k := range v.cum {
			sum[k] += c[k]
			v.cum[k][i] = sum[k]
		}
		v.parts[i] = [progressParts]int64(c[firstPart:])
	}
	return v
}

// total returns the count k over the whole event.
func (v *progressView) total(k int) int64 {
	if n := len(v.cum[k]); n > 0 {
		return v.cum[k][n-1]
	}
	return v.base[k]
}

// at returns the count k before time t (unix milliseconds): every tenth before t's,
// and the part of t's own tenth up to t (within).
func (v *progressView) at(k int, t int64) float64 {
	cum := v.cum[k]
	i := int(t/100 - v.first)
	switch {
	case len(cum) == 0 || i < 0:
		return float64(v.base[k])
	case i >= len(cum):
		return float64(cum[len(cum)-1])
	}
	before := v.base[k]
	if i > 0 {
		before = cum[i-1]
	}
	return float64(before) + v.within(k, i, t%100, cum[i]-before)*float64(cum[i]-before)
}

// within returns the share of tenth i's n counts k that came before millisecond ms
// of it. The requests reached are taken as spread evenly over the tenth; the
// arrivals by the hundredth they came in, spread evenly over it: a burst's tenth
// holds tens of arrivals, not evenly (the tenth a burst ends in is filled only in
// its first part), and a request queued there is placed among them by that. A tenth
// written without its hundredths (their sum is not its count) is taken as even.
func (v *progressView) within(k, i int, ms int64, n int64) float64 {
	even := float64(ms) / 100
	if k != arrivals || n <= 0 || v.parts == nil {
		return even
	}
	const width = 100 / progressParts // ms
	var sum, before int64
	for h, c := range v.parts[i] {
		sum += c
		if int64(h) < ms/width {
			before += c
		}
	}
	if sum != n {
		return even
	}
	part := float64(v.parts[i][ms/width]) * float64(ms%width) / width
	return (float64(before) + part) / float64(n)
}

// arrivedBefore returns A(q), the requests queued before q (unix ms), when the
// view's counts of arrivals are complete up to cut. Past cut some nodes' counts have
// not landed yet: the arrivals there are carried on at their pace over the second
// before cut, as the requests finished are at the workers' rate, and never taken as
// fewer than the counts that landed already (a burst that began after that second).
func (v *progressView) arrivedBefore(q, cut int64) float64 {
	if q <= cut {
		return v.at(arrivals, q)
	}
	complete := v.at(arrivals, cut)
	pace := (complete - v.at(arrivals, cut-progressPaceWindow.Milliseconds())) / float64(progressPaceWindow.Milliseconds())
	return complete + max(v.at(arrivals, q)-complete, pace*float64(q-cut))
}

// progressPaceWindow is the span before the complete counts over which
// arrivedBefore measures the pace of arrivals it carries on.
const progressPaceWindow = time.Second

// QueueEstimate is where a request that waits in line (RECEIVED or QUEUED, of a
// FIRST_COME event) stands, estimated from the event's progress: the requests queued
// before it that no worker has finished, and the time until the workers reach it at
// the rate they finish requests now. It assumes the workers take requests in queue
// order, which a standard queue does only roughly (docs/design.md, "A place in line").
type QueueEstimate struct {
	Ahead int64
	// Wait is the time until a worker has decided it: Ahead and then its own turn,
	// at Rate; zero when Rate is zero (no worker has finished a request
	// of the event lately: the wait is unknown).
	Wait time.Duration
	// Rate is the requests the workers finished a second over the last 3 seconds
	// that the counts cover.
	Rate float64
	// AsOf is when the counts behind the estimate were read; they are complete up to
	// the nodes' last flush whose writes had landed by then (0.1 to 0.3 s before
	// it; the arrivals less Submit's puts), and the estimate carries the workers on
	// at Rate, and the arrivals at their pace, from there.
	AsOf time.Time

	// The estimate's parts, for the rig's diagnosis: the arrivals before the request
	// and the requests finished it took, the moment up to which the finished were
	// counted in full (unix ms), and their count then.
	arrived, done float64
	doneCut       int64
	doneCounted   float64
}

// QueueStats is an event's line as a whole, from its progress (FIRST_COME).
type QueueStats struct {
	// Depth is the requests that arrived and no worker has finished: the arrivals
	// whose counts have landed (not carried on past them, as a request's Ahead is:
	// a request queued in a burst's last moments can be told more ahead than Depth,
	// and Depth does not count arrivals that never came once a burst has ended).
	Depth int64
	// Rate is the requests the workers finish a second (over the last 3 seconds).
	Rate float64
	// DrainTime is Depth at Rate; zero when Depth is zero, and when Rate is zero
	// (the time is then unknown if Depth is not zero).
	DrainTime time.Duration
	// Series is the line second by second, from the first arrival or over the last 15
	// minutes, whichever is shorter, up to the last second whose counts are complete
	// (the nodes' last flush landed by AsOf, less Submit's puts): its depth at the second's end, and
	// the requests the workers finished in that second.
	Series []QueuePoint
	AsOf   time.Time
}

// QueuePoint is one second of an event's line.
type QueuePoint struct {
	At    time.Time
	Depth int64
	Rate  float64
}

// rateWindow is the span the workers' rate is measured over.
const rateWindow = 3 * time.Second

// progressComplete returns the moments (unix ms) up to which the view's counts of
// arrivals and of requests finished are taken as complete. Each node writes its
// counts at the multiples of Options.ProgressEvery on its clock (this client's, taken
// as every node's): the last flush landed by the read (flushLanded) covers every
// request finished before its moment, and every arrival before it less the time an
// arrival takes to be counted (Submit's puts: this client's, measured, with
// progressLagMargin; progressWriteTime before it measured any).
func (c *Client) progressComplete(v *progressView) (arrived, finished int64) {
	flushed := c.flushLanded(v.readAt)
	late := progressWriteTime.Milliseconds()
	if c.progress != nil && c.progress.lag.Load() > 0 {
		la, lf := c.progressLags()
		late = max(la-lf, 0) + progressLagMargin.Milliseconds()
	}
	return flushed - late, flushed
}

// flushLanded returns the moment (unix ms) of the nodes' last flush whose writes
// have landed by t: the last multiple of ProgressEvery at least twice this client's
// write lag (measured, with progressLagMargin) before t. Twice: a node whose write
// or timer is slower than this client's, or whose clock is behind, lands later, and
// a flush read before it landed hides a whole ProgressEvery of its counts.
func (c *Client) flushLanded(t time.Time) int64 {
	_, lf := c.progressLags()
	return lastFlush(t.UnixMilli()-2*lf, c.progressEvery())
}

// lastFlush returns the last multiple of every at or before t (unix ms): the moment
// of the nodes' last flush by t.
func lastFlush(t int64, every time.Duration) int64 {
	e := max(every.Milliseconds(), 1)
	return t - ((t%e)+e)%e
}

// untilFlush returns the time from now (unix ms) to the next flush: the next
// multiple of every after it.
func untilFlush(now int64, every time.Duration) time.Duration {
	next := lastFlush(now, every) + max(every.Milliseconds(), 1)
	return time.Duration(next-now) * time.Millisecond
}

// landedAt returns when the writes of the nodes' last flush by now are taken to
// have landed: a view read since then holds every flush a read could hold now.
func (c *Client) landedAt(now time.Time) time.Time {
	_, lf := c.progressLags()
	return time.UnixMilli(c.flushLanded(now) + 2*lf)
}

// progressRefreshGap is the least time between two reads of an event's progress by
// a node for the polls it would place poorly.
const progressRefreshGap = 100 * time.Millisecond

// progressLags returns how long after its moment a node's count of an arrival and
// of a request finished lands on the table, less the wait for its flush (ms): this
// client's own, measured (taken as every node's), plus progressLagMargin;
// progressWriteTime while it has measured none.
func (c *Client) progressLags() (arrived, finished int64) {
	arrived, finished = progressWriteTime.Milliseconds(), progressWriteTime.Milliseconds()
	if c.progress != nil {
		if lag := c.progress.lag.Load(); lag > 0 {
			arrived = lag + progressLagMargin.Milliseconds()
		}
		if lag := c.progress.writeLag.Load(); lag > 0 {
			finished = lag + progressLagMargin.Milliseconds()
		}
	}
	return arrived, finished
}

// progressLagMargin is what progressLag adds to the lag a client measured: other
// nodes' lag is not the same.
const progressLagMargin = 25 * time.Millisecond

// progressEvery is the period at which the nodes write their counts: this client's,
// or the default when it counts nothing.
func (c *Client) progressEvery() time.Duration {
	if every := c.opts.ProgressEvery; every > 0 {
		return every
	}
	return defaultProgressEvery
}

// progressWriteTime is the time a node's count may take to land after its moment,
// less the wait for the next flush, when the client has measured none (with
// room: a late write makes the rate, and so every estimate, too low).
const progressWriteTime = 100 * time.Millisecond

// rate returns the requests finished a second over the tenths of the rateWindow
// before cut (unix ms), from the first request finished, in which the line was not
// empty: the workers' pace while they had work, not diluted by the moments they
// waited for it. Zero when the line had less than 0.3 s of work in the window.
func (v *progressView) rate(cut int64) float64 {
	from := cut/100 - rateWindow.Milliseconds()/100
	began := v.firstDone() / 100
	var busy, done, first float64
	counted := false // the tenth the workers began in is among the busy ones
	for t := max(from, began); (t+1)*100 <= cut; t++ {
		start, end := t*100, (t+1)*100
		if v.at(arrivals, start)-v.at(finished, start) < 1 && v.at(finished, end) == v.at(finished, start) {
			continue // nobody waited, and nobody was finished
		}
		n := v.at(finished, end) - v.at(finished, start)
		busy, done = busy+1, done+n
		if t == began {
			first, counted = n, true
		}
	}
	if busy < 3 {
		return 0
	}
	// The workers began inside the window: the tenth of their first decision holds
	// only the part after it. Fewer decisions than their later tenths' mean there
	// dilute their pace (read 5–10% low for their first 3 s), so it is left out; as
	// many or more (a batch, then nothing) are their work, and stay in.
	if counted && began >= from && busy > 3 {
		if later := (done - first) / (busy - 1); first < later {
			return later * 10
		}
	}
	return done / (busy / 10)
}

// doneBy returns the requests reached by now (unix ms): the complete counts up to
// cut, carried on at rate, no more than the arrivals by now (arrived).
func (v *progressView) doneBy(now, cut int64, arrived, rate float64) float64 {
	d := v.at(finished, cut) + rate*float64(max(now-cut, 0))/1000
	return min(d, arrived)
}

// firstDone returns the start of the first tenth with a request finished (unix ms),
// the view's start when one was before it, or the view's end when none.
func (v *progressView) firstDone() int64 {
	done := v.cum[finished]
	if v.base[finished] > 0 {
		return v.first * 100
	}
	for i, d := range done {
		if d > 0 {
			return (v.first + int64(i)) * 100
		}
	}
	return (v.first + int64(len(done))) * 100
}

// estimate places a request queued at (unix ms) in line at now.
func (c *Client) estimate(v *progressView, queuedAt EpochMillis, now time.Time) *QueueEstimate {
	cutA, cutD := c.progressComplete(v)
	rate := v.rate(cutD)
	// The request's own arrival is in its tenth's count: the requests before it are
	// the whole ones below A(queuedAt).
	// The workers carried on reach no further than the arrivals carried on by now:
	// on a line they keep up with, a request just queued has none ahead.
	arrivedByNow := max(float64(v.total(arrivals)), v.arrivedBefore(now.UnixMilli(), cutA))
	a, d := v.arrivedBefore(int64(queuedAt), cutA), v.doneBy(now.UnixMilli(), cutD, arrivedByNow, rate)
	ahead := max(a-d, 0)
	e := &QueueEstimate{Ahead: int64(ahead), Rate: rate, AsOf: v.readAt, arrived: a, done: d, doneCut: cutD, doneCounted: v.at(finished, cutD)}
	if rate > 0 {
		e.Wait = time.Duration((ahead + 1) / rate * float64(time.Second)) // those ahead, then its own turn
	}
	return e
}

// queueStats sums up the event's line at now.
func (c *Client) queueStats(v *progressView, now time.Time) QueueStats {
	cutA, cutD := c.progressComplete(v)
	cut := min(cutA, cutD)
	st := QueueStats{Rate: v.rate(cutD), AsOf: v.readAt}
	if v.total(arrivals) == 0 {
		return st
	}
	landed := float64(v.total(arrivals))
	st.Depth = int64(max(landed-v.doneBy(now.UnixMilli(), cutD, landed, st.Rate), 0) + 0.5)
	if st.Rate > 0 {
		st.DrainTime = time.Duration(float64(st.Depth) / st.Rate * float64(time.Second))
	}
	for s := v.first / progressSlots; (s+1)*1000 <= cut; s++ { // the seconds counted in full
		end := (s + 1) * 1000
		st.Series = append(st.Series, QueuePoint{
			At:    time.UnixMilli(end),
			Depth: int64(max(v.at(arrivals, end)-v.at(finished, end), 0)), // counts of nodes that land apart
			Rate:  v.at(finished, end) - v.at(finished, end-1000),
		})
	}
	return st
}

// progressCache keeps each event's progress a node read, for
// Options.ProgressCacheTTL.
type progressCache struct {
	mu     sync.Mutex
	events map[string]*progressEntry
}

type progressEntry struct {
	mu       sync.Mutex                   // one refresh at a time
	view     atomic.Pointer[progressView] // the last view made: read without mu
	used     atomic.Int64                 // when a poll last asked (unix ms), for eviction
	failedAt time.Time                    // when the last refresh failed, if it did
	failure  error
	tenths   map[int64]tenthCounts // the counts read of the last progressSpan, by tenth
	base     [2]int64              // the counts before them
	fullAt   time.Time             // when the whole span was last read
	minuteAt time.Time             // when the last progressReread was last read
}

// progressReread is how far back a refresh reads again: a node writes a second's
// counts within ProgressEvery of it, so older seconds are kept as read, and each
// refresh reads about this many seconds, whatever the event's age. Once every
// progressReread a refresh reads the whole progressSpan again instead, so that counts
// that landed later than that (a node throttled for a while, a Lambda worker thawed
// after a pause, a clock behind) are read within a minute.
const progressReread = time.Minute

// progressRecent is what a poll's refresh between two reads of the last minute reads
// again: the seconds whose counts may still be landing.
const progressRecent = 5 * time.Second

// progressAhead is how far past the read a count's tenth may be and still be
// taken: a node whose clock runs ahead writes tenths that have not happened yet,
// which are read again when they have.
const progressAhead = time.Minute

// eventProgress returns the event's progress, read less than maxAge ago (at most
// ProgressCacheTTL), or, if landed is not zero, at or after landed. While one poll
// refreshes it the others take the view before; a
// refresh that failed is not tried again for ProgressCacheTTL (the view before
// stands meanwhile, if there is one).
func (c *Client) eventProgress(ctx context.Context, cfg *eventItem, maxAge time.Duration, landed time.Time) (*progressView, error) {
	now := c.opts.Clock()
	e := c.progressReads.entry(cfg.EventID, now)
	maxAge = min(maxAge, c.opts.ProgressCacheTTL)
	fresh := func(v *progressView) bool {
		return v != nil && (now.Sub(v.readAt) < maxAge || (!landed.IsZero() && !v.readAt.Before(landed)))
	}
	if v := e.view.Load(); fresh(v) {
		return v, nil
	}
	if !e.mu.TryLock() {
		if v := e.view.Load(); v != nil {
			return v, nil // another poll refreshes it
		}
		e.mu.Lock()
	}
	defer e.mu.Unlock()
	if v := e.view.Load(); fresh(v) {
		return v, nil
	}
	if e.failure != nil && now.Sub(e.failedAt) < c.opts.ProgressCacheTTL {
		if v := e.view.Load(); v != nil {
			return v, nil
		}
		return nil, e.failure
	}
	since, full, minute := int64(0), true, true
	if v := e.view.Load(); v != nil {
		since, full = v.readAt.Add(-progressReread).Unix(), false
		switch {
		case now.Sub(e.fullAt) >= progressReread:
			since, full = now.Add(-progressSpan).Unix()+1, true // within the span: nothing summed is read again
		case now.Sub(e.minuteAt) < c.opts.ProgressCacheTTL:
			since, minute = now.Add(-progressRecent).Unix(), false // a poll's refresh between two of the minute
		}
	}
	read, err := c.readProgress(ctx, cfg, since)
	if err != nil {
		e.failure, e.failedAt = err, now
		if v := e.view.Load(); v != nil {
			c.opts.Logger.WarnContext(ctx, "the progress of an event could not be read; the copy read before stands", "eventId", cfg.EventID, "error", err)
			return v, nil
		}
		return nil, err
	}
	e.failure = nil
	if full {
		e.fullAt = now
	}
	if full || minute {
		e.minuteAt = now
	}
	e.merge(read, since, now)
	return e.view.Load(), nil
}

// entry returns the cache's entry of the event, made if new; making one evicts the
// entries no poll asked for over the last progressSpan.
func (pc *progressCache) entry(eventID string, now time.Time) *progressEntry {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.events == nil {
		pc.events = map[string]*progressEntry{}
	}
	e := pc.events[eventID]
	if e == nil {
		for id, old := range pc.events {
			if now.UnixMilli()-old.used.Load() > progressSpan.Milliseconds() {
				delete(pc.events, id)
			}
		}
		e = &progressEntry{}
		pc.events[eventID] = e
	}
	e.used.Store(now.UnixMilli())
	return e
}

// merge takes in the counts read from the second since on at now: they replace what
// was read of those seconds before, and the tenths that fall out of the
// progressSpan are added to the sums before it. Tenths more than progressAhead past
// now are left out until they come near.
func (e *progressEntry) merge(fresh map[int64]tenthCounts, since int64, now time.Time) {
	if e.tenths == nil {
		e.tenths = map[int64]tenthCounts{}
	}
	for t := range e.tenths {
		if t >= since*progressSlots {
			delete(e.tenths, t) // read again
		}
	}
	ahead := now.Add(progressAhead).UnixMilli() / 100
	for t, n := range fresh {
		if t <= ahead {
			e.tenths[t] = n
		}
	}
	horizon := now.Add(-progressSpan).UnixMilli() / 100
	for t, n := range e.tenths {
		if t < horizon { // kept as sums: a later refresh reads after them
			e.base[arrivals] += n[arrivals]
			e.base[finished] += n[finished]
			delete(e.tenths, t)
		}
	}
	e.view.Store(newProgressView(e.tenths, e.base, now))
}

// placeInLine sets r's Queue when it waits in line: RECEIVED or QUEUED, of a
// FIRST_COME event, with progress counted. A failed read of the progress leaves it
// unset: the request is still the answer.
func (c *Client) placeInLine(ctx context.Context, r *Request) {
	if c.progress == nil || r.EventType != FirstCome || (r.Status != StatusReceived && r.Status != StatusQueued) || r.QueuedAt == 0 {
		return
	}
	cfg, err := c.cachedEvent(ctx, r.EventID)
	if err != nil {
		return
	}
	if cfg.isPrequeueEntry(r.QueuedAt) {
		c.placeInPrequeue(ctx, cfg, r)
		return
	}
	v, err := c.eventProgress(ctx, cfg, c.opts.ProgressCacheTTL, time.Time{})
	if err != nil {
		c.opts.Logger.WarnContext(ctx, "the progress of an event could not be read", "eventId", r.EventID, "error", err)
		return
	}
	now := c.opts.Clock()
	r.Queue = c.estimate(v, r.QueuedAt, now)
	if c.wantsFresher(v, r.Queue, r.QueuedAt, now) {
		if v, err := c.eventProgress(ctx, cfg, progressRefreshGap, c.landedAt(now)); err == nil {
			r.Queue = c.estimate(v, r.QueuedAt, c.opts.Clock()) // as of the answer, not of before the read
		}
	}
}

// wantsFresher reports whether a poll of a request queued at q, placed by e from v,
// would be placed better from a read of the progress since the nodes' last flush
// landed (one read per flush at most, and at most every progressRefreshGap): the
// arrivals before it are still being written (q
// past the complete counts), or the requests the estimate takes as finished since
// the complete counts, carried on at the workers' rate, are a tenth of those it
// says are ahead or more (near the front, where a second of the workers is much of
// the place).
func (c *Client) wantsFresher(v *progressView, e *QueueEstimate, q EpochMillis, now time.Time) bool {
	cutA, cutD := c.progressComplete(v)
	carried := e.Rate * float64(now.UnixMilli()-cutD) / 1000
	return int64(q) > cutA || (carried > 0 && carried >= 0.1*float64(e.Ahead))
}

// QueueStats returns the FIRST_COME event's line as a whole from its progress: a
// Query of each of its progress partitions (the "event progress" row), or this
// client's copy of them if read less than Options.ProgressCacheTTL ago. A LOTTERY
// is ErrInvalidEvent (its entries wait for the draw, not in a line), and so is any
// event on a client that does not count progress (Options.ProgressEvery < 0).
func (c *Client) QueueStats(ctx context.Context, eventID string) (QueueStats, error) {
	cfg, err := c.cachedEvent(ctx, eventID)
	if err != nil {
		return QueueStats{}, err
	}
	switch {
	case cfg.EventType != FirstCome:
		return QueueStats{}, fmt.Errorf("%w: %s is a %s event: its entries wait for the draw, not in a line", ErrInvalidEvent, eventID, cfg.EventType)
	case c.progress == nil:
		return QueueStats{}, fmt.Errorf("%w: this client does not count progress (Options.ProgressEvery < 0)", ErrInvalidEvent)
	}
	v, err := c.eventProgress(ctx, cfg, c.opts.ProgressCacheTTL, time.Time{})
	if err != nil {
		return QueueStats{}, err
	}
	return c.queueStats(v, c.opts.Clock()), nil
}
