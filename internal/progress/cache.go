package progress

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Cache keeps each event's progress a node read, for a poll to take while it is
// fresh enough. Its zero value is empty and ready.
type Cache struct {
	mu     sync.Mutex
	events map[string]*Entry
}

// Entry is one event's progress in a Cache: the counts read of the last Span by
// tenth, the sums before them, and the View they make.
type Entry struct {
	mu       sync.Mutex           // one refresh at a time
	view     atomic.Pointer[View] // the last view made: read without mu
	used     atomic.Int64         // when a poll last asked (unix ms), for eviction
	failedAt time.Time            // when the last refresh failed, if it did
	failure  error
	tenths   Tenths    // the counts read of the last Span, by tenth
	base     [2]int64  // the counts before them
	fullAt   time.Time // when the whole span was last read
	minuteAt time.Time // when the last reread was last read
}

// reread is how far back a refresh reads again: a node writes a second's counts
// within its period of it, so older seconds are kept as read, and each refresh reads
// about this many seconds, whatever the event's age. Once every reread a refresh
// reads the whole Span again instead, so that counts that landed later than that (a
// node throttled for a while, a Lambda worker thawed after a pause, a clock behind)
// are read within a minute.
const reread = time.Minute

// recent is what a poll's refresh between two reads of the last minute reads again:
// the seconds whose counts may still be landing.
const recent = 5 * time.Second

// ahead is how far past the read a count's tenth may be and still be taken: a node
// whose clock runs ahead writes tenths that have not happened yet, which are read
// again when they have.
const ahead = time.Minute

// Entry returns the cache's entry of the event, made if new; making one evicts the
// entries no poll asked for over the last Span.
func (pc *Cache) Entry(eventID string, now time.Time) *Entry {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.events == nil {
		pc.events = map[string]*Entry{}
	}
	e := pc.events[eventID]
	if e == nil {
		for id, old := range pc.events {
			if now.UnixMilli()-old.used.Load() > Span.Milliseconds() {
				delete(pc.events, id)
			}
		}
		e = &Entry{}
		pc.events[eventID] = e
	}
	e.used.Store(now.UnixMilli())
	return e
}

// Refresh is what a poll asks of an Entry: how fresh a view, and how to read one.
type Refresh struct {
	// MaxAge is the age of the oldest view taken, at most TTL; a view read at or after
	// Landed, if it is not zero, is taken as well.
	MaxAge time.Duration
	Landed time.Time
	// TTL is the longest a view is kept, and how long a failed read is not tried
	// again.
	TTL time.Duration
	// Read reads the event's counts from the second since (unix) on.
	Read func(ctx context.Context, since int64) (Tenths, error)
	// Stale is told of a read that failed while the view before stands.
	Stale func(ctx context.Context, err error)
}

// View returns the event's progress at now, as fresh as r asks. While one poll
// refreshes it the others take the view before; a refresh that failed is not tried
// again for r.TTL (the view before stands meanwhile, if there is one).
func (e *Entry) View(ctx context.Context, now time.Time, r Refresh) (*View, error) {
	maxAge := min(r.MaxAge, r.TTL)
	fresh := func(v *View) bool {
		return v != nil && (now.Sub(v.readAt) < maxAge || (!r.Landed.IsZero() && !v.readAt.Before(r.Landed)))
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
	if e.failure != nil && now.Sub(e.failedAt) < r.TTL {
		if v := e.view.Load(); v != nil {
			return v, nil
		}
		return nil, e.failure
	}
	since, full, minute := e.toRead(now, r.TTL)
	read, err := r.Read(ctx, since)
	if err != nil {
		e.failure, e.failedAt = err, now
		if v := e.view.Load(); v != nil {
			r.Stale(ctx, err)
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

// toRead returns the second from which a refresh at now reads, and whether it reads
// the whole Span again (full) or the last reread (minute); the caller holds e.mu.
func (e *Entry) toRead(now time.Time, ttl time.Duration) (since int64, full, minute bool) {
	since, full, minute = 0, true, true
	if v := e.view.Load(); v != nil {
		since, full = v.readAt.Add(-reread).Unix(), false
		switch {
		case now.Sub(e.fullAt) >= reread:
			since, full = now.Add(-Span).Unix()+1, true // within the span: nothing summed is read again
		case now.Sub(e.minuteAt) < ttl:
			since, minute = now.Add(-recent).Unix(), false // a poll's refresh between two of the minute
		}
	}
	return since, full, minute
}

// merge takes in the counts read from the second since on at now: they replace what
// was read of those seconds before, and the tenths that fall out of the Span are
// added to the sums before it. Tenths more than ahead past now are left out until
// they come near.
func (e *Entry) merge(fresh Tenths, since int64, now time.Time) {
	if e.tenths == nil {
		e.tenths = Tenths{}
	}
	for t := range e.tenths {
		if t >= since*Slots {
			delete(e.tenths, t) // read again
		}
	}
	latest := now.Add(ahead).UnixMilli() / 100
	for t, n := range fresh {
		if t <= latest {
			e.tenths[t] = n
		}
	}
	horizon := now.Add(-Span).UnixMilli() / 100
	for t, n := range e.tenths {
		if t < horizon { // kept as sums: a later refresh reads after them
			e.base[arrivals] += n[arrivals]
			e.base[finished] += n[finished]
			delete(e.tenths, t)
		}
	}
	e.view.Store(NewView(e.tenths, e.base, now))
}
