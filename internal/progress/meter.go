package progress

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Meter is a node's counts of what it does for each event, pending until a flush
// takes them, and the bookkeeping of its flushes: every node flushes at each multiple
// of its period on its clock, one flush at a time, and measures how late its counts
// land. What a flush writes, and how, is its owner's: the Meter holds no client.
type Meter struct {
	every time.Duration
	now   func() int64    // the clock, in unix ms
	onDue func(gen int64) // the timer's flush of the arming gen
	node  int             // the node's progress partition, modulo the event's Shards

	mu      sync.Mutex
	pending map[Second]*Counts
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

// NewMeter returns a meter that flushes at the multiples of every on the clock now
// (unix ms): when counts are due, its timer calls onDue with the arming it was set
// for, which the flush passes on to Take. The node's partition is drawn at random,
// so that the nodes spread over an event's progress partitions.
func NewMeter(every time.Duration, now func() int64, onDue func(gen int64)) *Meter {
	return &Meter{every: every, now: now, onDue: onDue, node: rand.IntN(1 << 20), pending: map[Second]*Counts{}, flushing: make(chan struct{}, 1)}
}

// Arrived counts a request of eventID queued at (unix ms).
func (m *Meter) Arrived(eventID string, at int64) {
	m.count(eventID, at, true, func(p *Counts, slot int) {
		p.Arrived[slot]++
		p.Hundredths[at%1000/(1000/(Slots*Parts))]++
	})
}

// Reached counts a request of eventID a worker finished at (unix ms).
func (m *Meter) Reached(eventID string, at int64) {
	m.count(eventID, at, false, func(p *Counts, slot int) { p.Reached[slot]++ })
}

// Waitlisted counts a request of eventID queued at (unix ms) that joined the event's
// waitlist, or, joined false, that left it, by the second of queuedAt on the key of
// its minute.
func (m *Meter) Waitlisted(eventID string, queuedAt int64, joined bool) {
	if queuedAt <= 0 {
		return
	}
	k := Second{EventID: eventID, Second: queuedAt / 60_000 * 60, Waitlist: true}
	slot := queuedAt / 1000 % WaitSlots
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.pendingOf(k)
	if joined {
		p.Joined[slot]++
	} else {
		p.Left[slot]++
	}
}

func (m *Meter) count(eventID string, at int64, arrival bool, add func(*Counts, int)) {
	if at <= 0 {
		return
	}
	k := Second{EventID: eventID, Second: at / 1000}
	late := m.now() - at
	m.mu.Lock()
	defer m.mu.Unlock()
	if arrival {
		m.late.add(late)
	}
	add(m.pendingOf(k), int(at%1000)/(1000/Slots))
}

// pendingOf returns the counts pending of k, made if new, and arms the next flush;
// the caller holds m.mu.
func (m *Meter) pendingOf(k Second) *Counts {
	p := m.pending[k]
	if p == nil {
		p = &Counts{}
		m.pending[k] = p
	}
	if !m.armed {
		m.armed = true
		// At the next multiple of every on the clock, as on every node: a reader then
		// knows which moments every node's counts cover once the writes of that flush
		// have had time to land, whatever its nodes' phases (Timing.Complete).
		now := m.now()
		wait := untilFlush(now, m.every)
		m.due = now + wait.Milliseconds()
		m.gen++
		gen := m.gen
		m.timer = time.AfterFunc(wait, func() { m.onDue(gen) })
	}
	return p
}

// Partition returns the node's progress partition of an event with shards of them.
func (m *Meter) Partition(shards int) int { return m.node % shards }

// Lock waits for the flush under way, if one is, or for ctx, and holds the flush
// until Unlock. A free flush is taken whatever ctx.
func (m *Meter) Lock(ctx context.Context) error {
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

// Unlock lets the next flush run.
func (m *Meter) Unlock() { <-m.flushing }

// Take takes every count pending for a flush, which the caller holds (Lock), and
// how late the latest of them came (ms, lateness.high). gen is the arming of the
// timer that flushes (onDue's), zero for an explicit flush: a timer takes nothing
// when a flush took its counts while it waited. Under a done ctx the counts pending
// are left to the timer, unsent.
func (m *Meter) Take(ctx context.Context, gen int64) (map[Second]*Counts, int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if gen != 0 && (!m.armed || m.gen != gen) {
		return nil, 0, nil // a flush took this timer's counts while it waited
	}
	if len(m.pending) > 0 && ctx.Err() != nil {
		return nil, 0, fmt.Errorf("progress: %w", ctx.Err())
	}
	batch, late := m.pending, m.late.high()
	m.pending, m.late = map[Second]*Counts{}, lateness{}
	if m.armed {
		m.armed = false
		m.timer.Stop() // its counts are these: a timer that has fired finds them taken (gen)
		// A timer that fired a multiple late (a thawed process's) wrote a pause's
		// counts: the invocation that thawed it still writes its own at its end.
		if now := m.now(); gen == 0 || now < m.due+m.every.Milliseconds() {
			m.wrote = now
		}
	}
	return batch, late, nil
}

// PutBack returns counts a write could not store to the pending ones, and arms the
// next flush.
func (m *Meter) PutBack(k Second, p *Counts) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := m.pendingOf(k)
	for i := range Slots {
		cur.Arrived[i] += p.Arrived[i]
		cur.Reached[i] += p.Reached[i]
	}
	for i := range WaitSlots {
		cur.Joined[i] += p.Joined[i]
		cur.Left[i] += p.Left[i]
	}
	for i, n := range p.Hundredths {
		cur.Hundredths[i] += n
	}
}

// Due reports whether the counts pending are due: their multiple of every has come
// (a timer should have written them, and a frozen process runs none), or no flush
// took counts since the last multiple (a process invoked less often than every
// writes each invocation's counts at its end, rather than at its next invocation; a
// timer that fired a multiple or more late, a thawed process's, is not such a
// flush).
func (m *Meter) Due() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	return m.armed && (now >= m.due || m.wrote < lastFlush(now, m.every))
}

// Measured takes in the lags of a flush's counts (ms): its latest count came late
// after its moment, and its writes took write. Each lag rises to what was measured
// at once and falls towards it by a fifth a flush.
func (m *Meter) Measured(late, write int64) {
	smooth := func(lag *atomic.Int64, now int64) {
		old := lag.Load()
		lag.Store(max(now, old-(old-now)/5))
	}
	smooth(&m.lag, late+write)
	smooth(&m.writeLag, write)
}

// Lags returns the lags measured (ms): of an arrival, and of a flush's write alone;
// zero while none was.
func (m *Meter) Lags() (arrived, written int64) { return m.lag.Load(), m.writeLag.Load() }

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
// every reader's complete arrivals back by as much (Timing.Complete), for the
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
