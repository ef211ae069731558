package asynceventtest

import (
	"sync"
	"time"
)

// Clock is a clock that moves only when told, for Options.Clock. It is safe for
// concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock set to start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// SkewedClock returns base moved by offset, for Options.Clock: the clock of a worker
// whose host runs offset ahead of the others (behind, for a negative offset), so that
// two clients of one table, each with its clock, disagree about the time as two hosts
// may. With an asynceventtest.Clock as base (its Now), the skewed clock moves when it
// is advanced.
func SkewedClock(base func() time.Time, offset time.Duration) func() time.Time {
	return func() time.Time { return base().Add(offset) }
}
