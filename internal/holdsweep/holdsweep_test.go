package holdsweep

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// store is a Store in memory: the requests of one event in queue order, its holds by
// shard, its pool and its lease, with the calls made on it.
type store struct {
	owner      string
	until      int64
	requests   []*Request
	holds      map[int][]Hold
	pool       int64
	stale      int64    // seats SeatsLeft reads that the pool no longer holds
	order      []string // the pre-queue's drawn order; nil: not drawn
	settled    int
	failExpire map[string]bool
	calls      []string
	limits     []int    // the limits the holds were read with
	afters     []*Place // where each walk began
}

func (st *store) call(format string, a ...any) {
	st.calls = append(st.calls, fmt.Sprintf(format, a...))
}

func (st *store) find(id string) *Request {
	for _, r := range st.requests {
		if r.ID == id {
			return r
		}
	}
	return nil
}

func (st *store) Lease(context.Context) (string, int64, error) {
	st.call("lease")
	return st.owner, st.until, nil
}

func (st *store) TakeLease(_ context.Context, owner string, d time.Duration) (bool, error) {
	st.call("take lease")
	if st.owner != owner && st.until > now.UnixMilli() {
		return false, nil
	}
	st.owner, st.until = owner, now.Add(d).UnixMilli()
	return true, nil
}

func (st *store) DueHolds(shard int, by int64) (Pages[Hold], error) {
	var due []Hold
	for _, h := range st.holds[shard] {
		if h.ExpiresAt <= by {
			due = append(due, h)
		}
	}
	return func(_ context.Context, limit int) ([]Hold, bool, error) {
		st.limits = append(st.limits, limit)
		page := due[:min(limit, len(due))]
		due = due[len(page):]
		return page, len(due) > 0, nil
	}, nil
}

func (st *store) Expire(_ context.Context, h Hold) (bool, Request, error) {
	st.call("expire %s", h.RequestID)
	if st.failExpire[h.RequestID] {
		return false, Request{}, errors.New("throttled")
	}
	r := st.find(h.RequestID)
	switch {
	case r == nil:
		return false, Request{State: Final}, nil
	case r.State == Held && r.HoldExpiresAt == h.ExpiresAt:
		r.State = Final
		st.pool++
		return true, Request{}, nil
	}
	return false, *r, nil
}

func (st *store) Clear(_ context.Context, h Hold) error {
	st.call("clear %s", h.RequestID)
	return nil
}

func (st *store) SeatsLeft(context.Context) (int64, error) {
	st.call("seats left")
	return st.pool + st.stale, nil
}

func (st *store) Queue(after *Place) (Pages[Request], error) {
	st.afters = append(st.afters, after)
	next := 0
	if after != nil {
		next = len(st.requests)
		for i, r := range st.requests {
			if cmp.Or(cmp.Compare(r.QueuedAt, after.QueuedAt), cmp.Compare(r.ID, after.RequestID)) > 0 {
				next = i
				break
			}
		}
	}
	return func(_ context.Context, limit int) ([]Request, bool, error) {
		var page []Request
		for ; next < len(st.requests) && len(page) < limit; next++ {
			page = append(page, *st.requests[next])
		}
		return page, next < len(st.requests), nil
	}, nil
}

func (st *store) Drawn(_ context.Context, f func([]string, *int) (bool, error)) (bool, error) {
	if st.order == nil {
		return false, nil
	}
	return f(st.order, &st.settled)
}

func (st *store) Request(_ context.Context, id string) (Request, error) {
	return *st.find(id), nil
}

func (st *store) Serve(_ context.Context, of Request) (bool, bool, error) {
	st.call("serve %s", of.ID)
	r := st.find(of.ID)
	switch {
	case st.pool <= 0:
		return false, true, nil
	case r.State != Waitlisted:
		return false, false, nil
	}
	st.pool--
	r.State, r.HoldExpiresAt = Held, now.Add(time.Hour).UnixMilli()
	return true, false, nil
}

func (st *store) Close(_ context.Context, of Request) (bool, error) {
	st.call("close %s", of.ID)
	r := st.find(of.ID)
	if r.State != Waitlisted {
		return false, nil
	}
	r.State = Final
	return true, nil
}

// now is the tests' clock.
var now = time.UnixMilli(1_900_000_000_000)

// queued returns requests of the given states, queued a second apart from an hour
// before now, r0 first.
func queued(states ...State) []*Request {
	rs := make([]*Request, len(states))
	for i, s := range states {
		rs[i] = &Request{ID: fmt.Sprintf("r%d", i), State: s, QueuedAt: now.Add(-time.Hour + time.Duration(i)*time.Second).UnixMilli()}
	}
	return rs
}

// pass returns a Pass over an open event of one shard with a budget of 10.
func pass() Pass {
	return Pass{Event: Event{ID: "e"}, MaxWrites: 10, LeaseFor: 30 * time.Second,
		Clock: func() time.Time { return now }, Starts: &sync.Map{}}
}

// held returns the IDs of the Held requests.
func held(st *store) []string {
	var ids []string
	for _, r := range st.requests {
		if r.State == Held {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

func TestLease(t *testing.T) {
	live, half := now.Add(20*time.Second).UnixMilli(), now.Add(10*time.Second).UnixMilli()
	for _, tc := range []struct {
		name         string
		owner        string
		until        int64
		skipped      bool
		takes        bool
		reportsUntil int64
	}{
		{name: "none yet: taken", takes: true},
		{name: "another owner's live lease: skipped, with its end", owner: "b", until: live, skipped: true, reportsUntil: live},
		{name: "another owner's lease ran out: taken", owner: "b", until: now.UnixMilli(), takes: true},
		{name: "its own, over half left: no write", owner: "a", until: live},
		{name: "its own, half left: renewed", owner: "a", until: half, takes: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &store{owner: tc.owner, until: tc.until}
			p := pass()
			p.Owner = "a"
			rep, err := Run(context.Background(), st, p)
			require.NoError(t, err)
			assert.Equal(t, tc.skipped, rep.Skipped)
			assert.Equal(t, tc.reportsUntil, rep.LeaseUntil)
			assert.Equal(t, tc.takes, slices.Contains(st.calls, "take lease"), "calls %v", st.calls)
			if tc.skipped {
				assert.Equal(t, []string{"lease"}, st.calls, "a skipped pass reads nothing else")
			}
		})
	}
	t.Run("no owner: no lease", func(t *testing.T) {
		st := &store{}
		_, err := Run(context.Background(), st, pass())
		require.NoError(t, err)
		assert.NotContains(t, st.calls, "lease")
	})
}

func TestExpire(t *testing.T) {
	at := now.Add(-time.Minute).UnixMilli()
	hold := func(id string, expires int64) Hold { return Hold{RequestID: id, ExpiresAt: expires} }
	t.Run("a hold that ran out ends, one that runs later stays", func(t *testing.T) {
		st := &store{requests: queued(Held, Held), holds: map[int][]Hold{0: {hold("r0", at), hold("r1", now.Add(time.Minute).UnixMilli())}}}
		st.requests[0].HoldExpiresAt, st.requests[1].HoldExpiresAt = at, now.Add(time.Minute).UnixMilli()
		rep, err := Run(context.Background(), st, pass())
		require.NoError(t, err)
		assert.Equal(t, 1, rep.Expired)
		assert.Equal(t, []string{"r1"}, held(st))
	})
	t.Run("a record that is no longer its request's hold is cleared; one being bound stays", func(t *testing.T) {
		st := &store{requests: queued(Final, Held, Held, Pending), holds: map[int][]Hold{
			0: {hold("r0", at), hold("r1", at), hold("r2", at), hold("r3", at), hold("gone", at)},
		}}
		st.requests[1].HoldExpiresAt = at + 1 // held again, with a later expiry
		st.requests[2].HoldExpiresAt = at     // this hold, by a clock ahead of ours: it expires
		rep, err := Run(context.Background(), st, pass())
		require.NoError(t, err)
		assert.Equal(t, 1, rep.Expired)
		assert.Equal(t, 3, rep.Cleared)
		assert.Equal(t, []string{"clear r0", "clear r1", "clear gone"}, filter(st.calls, "clear"))
	})
	t.Run("a hold that fails does not hold up the others of its page", func(t *testing.T) {
		st := &store{requests: queued(Held, Held), holds: map[int][]Hold{0: {hold("r0", at), hold("r1", at)}},
			failExpire: map[string]bool{"r0": true}}
		st.requests[0].HoldExpiresAt, st.requests[1].HoldExpiresAt = at, at
		rep, err := Run(context.Background(), st, pass())
		require.Error(t, err)
		assert.Equal(t, 1, rep.Expired)
		assert.NotContains(t, st.calls, "seats left", "the waitlist waits for the next pass")
	})
	t.Run("every shard, a page of at most the budget left, up to MaxWrites", func(t *testing.T) {
		st := &store{holds: map[int][]Hold{}}
		for shard := range 3 {
			for i := range 3 {
				st.holds[shard] = append(st.holds[shard], hold(fmt.Sprintf("s%d-%d", shard, i), at))
			}
		}
		p := pass()
		p.Event.Shards, p.MaxWrites = 3, 7
		rep, err := Run(context.Background(), st, p)
		require.NoError(t, err)
		assert.Equal(t, 7, rep.Cleared)
		assert.True(t, rep.More)
		assert.Equal(t, []int{7, 4, 1}, st.limits)
		assert.Empty(t, st.afters, "no budget left for the waitlist")
	})
}

func filter(calls []string, prefix string) []string {
	var out []string
	for _, c := range calls {
		if len(c) >= len(prefix) && c[:len(prefix)] == prefix {
			out = append(out, c)
		}
	}
	return out
}

func TestServe(t *testing.T) {
	t.Run("the earliest waitlisted requests get the seats, in queue order", func(t *testing.T) {
		st := &store{requests: queued(Final, Waitlisted, Pending, Waitlisted, Waitlisted), pool: 2}
		rep, err := Run(context.Background(), st, pass())
		require.NoError(t, err)
		assert.Equal(t, []string{"r1", "r3"}, held(st))
		assert.Equal(t, 2, rep.Served)
		assert.Zero(t, rep.Waiting)
	})
	t.Run("seats with no one waitlisted wait", func(t *testing.T) {
		st := &store{requests: queued(Final, Held), pool: 3}
		rep, err := Run(context.Background(), st, pass())
		require.NoError(t, err)
		assert.EqualValues(t, 3, rep.Waiting)
	})
	t.Run("an empty pool reads no request", func(t *testing.T) {
		st := &store{requests: queued(Waitlisted)}
		_, err := Run(context.Background(), st, pass())
		require.NoError(t, err)
		assert.Empty(t, st.afters)
	})
	t.Run("a pool found empty by the serve stops the walk", func(t *testing.T) {
		st := &store{requests: queued(Waitlisted, Waitlisted), stale: 2} // taken by claims since it was read
		rep, err := Run(context.Background(), st, pass())
		require.NoError(t, err)
		assert.Equal(t, []string{"serve r0"}, filter(st.calls, "serve"))
		assert.Zero(t, rep.Waiting)
	})
}

func TestServePrequeue(t *testing.T) {
	prequeue := func(states ...State) (*store, Pass) {
		st := &store{requests: queued(states...), pool: 1}
		// The drawn order is the queue order reversed.
		for i := len(st.requests) - 1; i >= 0; i-- {
			st.order = append(st.order, st.requests[i].ID)
		}
		p := pass()
		p.Event.Prequeue = true
		return st, p
	}
	t.Run("the drawn order, not the queue order", func(t *testing.T) {
		st, p := prequeue(Waitlisted, Waitlisted, Waitlisted)
		_, err := Run(context.Background(), st, p)
		require.NoError(t, err)
		assert.Equal(t, []string{"r2"}, held(st))
		assert.Equal(t, 1, st.settled)
	})
	t.Run("an undecided entry stops the serve: no entry after it goes first", func(t *testing.T) {
		st, p := prequeue(Waitlisted, Pending, Final)
		p.Event.Announced = true
		rep, err := Run(context.Background(), st, p)
		require.NoError(t, err)
		assert.Empty(t, held(st))
		assert.EqualValues(t, 1, rep.Waiting)
		assert.Equal(t, 1, st.settled, "the settled head moves up to the undecided entry")
		assert.Empty(t, st.afters, "nor does the sale's waitlist")
	})
	t.Run("the sale's waitlist once every entry is settled and the pre-queue announced", func(t *testing.T) {
		st, p := prequeue(Final, Held)
		st.requests = append(st.requests, &Request{ID: "sale", State: Waitlisted, QueuedAt: now.Add(-time.Second).UnixMilli()})
		_, err := Run(context.Background(), st, p)
		require.NoError(t, err)
		assert.Empty(t, st.afters, "not announced yet: no sale's waitlist")
		p.Event.Announced = true
		_, err = Run(context.Background(), st, p)
		require.NoError(t, err)
		assert.Equal(t, []string{"r1", "sale"}, held(st))
		assert.Equal(t, 2, st.settled)
	})
	t.Run("not drawn yet: nobody of the pre-queue is served", func(t *testing.T) {
		st, p := prequeue(Waitlisted)
		st.order = nil
		p.Event.Announced = true
		_, err := Run(context.Background(), st, p)
		require.NoError(t, err)
		assert.Empty(t, held(st))
	})
}

func TestClose(t *testing.T) {
	st := &store{requests: queued(Held, Waitlisted, Pending, Waitlisted), pool: 2}
	p := pass()
	p.Event.EndsAt = now.Add(-time.Second).UnixMilli()
	rep, err := Run(context.Background(), st, p)
	require.NoError(t, err)
	assert.Equal(t, 2, rep.Closed)
	assert.Equal(t, []string{"close r1", "close r3"}, st.calls, "a closed event's seats stay in the pool")
}

func TestWalkStart(t *testing.T) {
	t.Run("a later walk begins after the settled head queued over walkSettle ago", func(t *testing.T) {
		st := &store{requests: queued(Final, Held, Waitlisted, Final), pool: 1}
		st.requests[3].QueuedAt = now.Add(-time.Second).UnixMilli() // too recent to move past
		p := pass()
		_, err := Run(context.Background(), st, p)
		require.NoError(t, err)
		st.pool = 1
		_, err = Run(context.Background(), st, p)
		require.NoError(t, err)
		require.Len(t, st.afters, 2)
		assert.Nil(t, st.afters[0])
		assert.Equal(t, &Place{QueuedAt: st.requests[2].QueuedAt, RequestID: "r2"}, st.afters[1],
			"past r2, served by the first walk, not past r3, queued a second ago")
	})
	t.Run("every walkRestart a walk begins at the first request again", func(t *testing.T) {
		st := &store{requests: queued(Final, Waitlisted), pool: 1}
		p := pass()
		_, err := Run(context.Background(), st, p)
		require.NoError(t, err)
		later := now.Add(walkRestart)
		p.Clock = func() time.Time { return later }
		st.pool = 1
		_, err = Run(context.Background(), st, p)
		require.NoError(t, err)
		assert.Equal(t, []*Place{nil, nil}, st.afters)
	})
	t.Run("a walk reads at most walkReads requests", func(t *testing.T) {
		states := make([]State, walkReads+walkPage)
		for i := range states {
			states[i] = Pending
		}
		st := &store{requests: queued(append(states, Waitlisted)...), pool: 1}
		rep, err := Run(context.Background(), st, pass())
		require.NoError(t, err)
		assert.Zero(t, rep.Served)
		assert.EqualValues(t, 1, rep.Waiting)
	})
}
