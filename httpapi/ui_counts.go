package httpapi

import (
	"context"
	"sync"
	"time"

	"github.com/asyncevent/asyncevent"
)

// The home page's request counts: asyncevent.Client.CountRequests reads every request
// of an event (Select COUNT: nothing comes back, the read units are spent), so the
// page keeps each count for a while rather than read it per view. An event that
// takes clicks changes fast; one that does not, hardly.
const (
	liveCountTTL    = 15 * time.Second
	settledCountTTL = 5 * time.Minute
)

// requestCounts caches the request count of each event the home page lists.
type requestCounts struct {
	mu     sync.Mutex
	counts map[string]requestCount
}

type requestCount struct {
	n       int
	expires time.Time
}

// get returns the event's request count, from the cache while it is fresh, false
// when it could not be counted (the page shows it unknown rather than fail).
func (rc *requestCounts) get(ctx context.Context, c *asyncevent.Client, e *asyncevent.Event, state asyncevent.EventState, now time.Time) (int, bool) {
	rc.mu.Lock()
	got, ok := rc.counts[e.EventID]
	rc.mu.Unlock()
	if ok && now.Before(got.expires) {
		return got.n, true
	}
	n, err := c.CountRequests(ctx, e.EventID)
	if err != nil {
		return 0, false
	}
	ttl := settledCountTTL
	if state == asyncevent.StateOpen || state == asyncevent.StatePaused || state == asyncevent.StateScheduled {
		ttl = liveCountTTL
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.counts == nil {
		rc.counts = map[string]requestCount{}
	}
	rc.counts[e.EventID] = requestCount{n: n, expires: now.Add(ttl)}
	return n, true
}
