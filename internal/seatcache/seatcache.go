// Package seatcache is what a worker process knows of the capacity shards of
// FIRST_COME events and of their seat pools: the shards found empty (by its own
// claims, or read off the event's emptyShards) and the pool versions met. It only
// saves calls: a seat is never spent or refused on what it says alone, since every
// claim is a conditional write on the capacity item.
package seatcache

import (
	"slices"
	"sync"
	"time"
)

// Shards is what a Processor knows of the capacity shards of FIRST_COME events:
// the shards found empty, by its own claims or read off the event's emptyShards
// (capacity never grows back; once every shard of an event is, the event is sold
// out). It is safe for concurrent use.
type Shards struct {
	mu      sync.Mutex
	byEvent map[string]*eventShards
	looked  map[string]bool // the events FirstLook was asked about
	pools   map[string]*pool
}

// eventShards is what Shards knows of one event's n shards.
type eventShards struct {
	n          int
	empty      map[int]bool
	unrecorded map[int]bool // found empty by a claim, not yet seen on the event's emptyShards
	refreshed  time.Time    // when the event's emptyShards was last read
}

// New returns Shards that know nothing yet.
func New() *Shards { return &Shards{byEvent: map[string]*eventShards{}} }

// event returns what s knows of the n shards of eventID. s.mu is held.
func (s *Shards) event(eventID string, n int) *eventShards {
	e := s.byEvent[eventID]
	if e == nil || e.n != n {
		e = &eventShards{n: n, empty: map[int]bool{}}
		s.byEvent[eventID] = e
	}
	return e
}

// Add records that shard of eventID (of n shards) is empty, and reports whether it
// was news.
func (s *Shards) Add(eventID string, shard, n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.event(eventID, n)
	if e.empty[shard] {
		return false
	}
	e.empty[shard] = true
	return true
}

// Unrecorded notes a shard of eventID that a claim found empty, for the worker to
// record on the event (TakeUnrecorded).
func (s *Shards) Unrecorded(eventID string, shard int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.byEvent[eventID]; e != nil {
		if e.unrecorded == nil {
			e.unrecorded = map[int]bool{}
		}
		e.unrecorded[shard] = true
	}
}

// TakeUnrecorded returns the shards noted unrecorded that listed lacks, and forgets
// them all.
func (s *Shards) TakeUnrecorded(eventID string, listed []int) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byEvent[eventID]
	if e == nil {
		return nil
	}
	var missing []int
	for shard := range e.unrecorded {
		if !slices.Contains(listed, shard) {
			missing = append(missing, shard)
		}
	}
	e.unrecorded = nil
	slices.Sort(missing)
	return missing
}

// HasUnrecorded reports whether a shard of eventID is noted unrecorded.
func (s *Shards) HasUnrecorded(eventID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byEvent[eventID]
	return e != nil && len(e.unrecorded) > 0
}

// Know records shards of eventID (of n shards) that others found empty.
func (s *Shards) Know(eventID string, n int, shards []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.event(eventID, n)
	for _, shard := range shards {
		if shard >= 0 && shard < n {
			e.empty[shard] = true
		}
	}
}

// AllEmpty records every shard of eventID (of n shards) empty: the event is sold
// out.
func (s *Shards) AllEmpty(eventID string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.event(eventID, n)
	for shard := range n {
		e.empty[shard] = true
	}
}

// RefreshDue reports whether the event's emptyShards was last read a second or more
// before now, and if so counts it read now.
func (s *Shards) RefreshDue(eventID string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byEvent[eventID]
	if e == nil || now.Sub(e.refreshed) < time.Second {
		return false
	}
	e.refreshed = now
	return true
}

// IsEmpty reports whether shard of eventID is known empty.
func (s *Shards) IsEmpty(eventID string, shard int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byEvent[eventID]
	return e != nil && e.empty[shard]
}

// Next returns the first shard of order (of an event of n shards) neither known
// empty nor in skip; -1 when there is none.
func (s *Shards) Next(eventID string, order []int, n int, skip map[int]bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.event(eventID, n)
	for _, shard := range order {
		if !e.empty[shard] && !skip[shard] {
			return shard
		}
	}
	return -1
}

// FirstLook reports whether this is the first time s is asked about eventID: a worker
// new to the event.
func (s *Shards) FirstLook(eventID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.looked == nil {
		s.looked = map[string]bool{}
	}
	first := !s.looked[eventID]
	s.looked[eventID] = true
	return first
}

// SoldOut reports whether every shard of the event is known empty.
func (s *Shards) SoldOut(eventID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byEvent[eventID]
	return e != nil && len(e.empty) == e.n
}

// pool is what Shards knows of an event's seat pool.
type pool struct {
	version int64 // the highest version met on a capacity item
	dry     int64 // the version at which a claim found the pool empty
}

// LearnPool records the pool version a capacity item showed.
func (s *Shards) LearnPool(eventID string, version int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pools == nil {
		s.pools = map[string]*pool{}
	}
	p := s.pools[eventID]
	if p == nil {
		p = &pool{}
		s.pools[eventID] = p
	}
	p.version = max(p.version, version)
}

// PoolOpen reports whether the event's pool may hold seats: a version is known (from
// the processor's capacity items, or met) that no claim found dry.
func (s *Shards) PoolOpen(eventID string, met int64) bool {
	s.LearnPool(eventID, met)
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pools[eventID]
	return p.version > 0 && p.dry < p.version
}

// PoolDry records that a claim found the pool empty at version.
func (s *Shards) PoolDry(eventID string, version int64) {
	s.LearnPool(eventID, version)
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pools[eventID]
	p.dry = max(p.dry, version)
}
