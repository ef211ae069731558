package httpapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

// adminRequest is the admin view of a request.
func (e *env) adminRequest(id string) RequestView {
	e.t.Helper()
	r := e.do("GET", "/admin/requests/"+id, e.admin(), nil)
	require.Equal(e.t, http.StatusOK, r.status, "body: %s", r.body)
	return decode[RequestView](e.t, r)
}

// clicks posts a participation of each user on eventID, a millisecond of clock
// apart, and returns the request IDs in that order.
func (e *env) clicks(clock *asynceventtest.Clock, eventID string, users ...string) []string {
	e.t.Helper()
	var ids []string
	for _, u := range users {
		_, p := e.participate(eventID, u)
		ids = append(ids, p.RequestID)
		clock.Advance(time.Millisecond)
	}
	return ids
}

// served posts a participation of each user on eventID as clicks does, and
// processes each before the next: processing order is queue order.
func (e *env) served(clock *asynceventtest.Clock, eventID string, users ...string) []string {
	e.t.Helper()
	var ids []string
	for _, u := range users {
		ids = append(ids, e.clicks(clock, eventID, u)...)
		e.process()
	}
	return ids
}

// byStatus sorts the requests ids by their status now.
func (e *env) byStatus(ids []string) map[asyncevent.Status][]string {
	e.t.Helper()
	out := map[asyncevent.Status][]string{}
	for _, id := range ids {
		st := e.adminRequest(id).Status
		out[st] = append(out[st], id)
	}
	return out
}

// seats are the event's seats by its stats: its capacity, the seats its shards
// hold, and those on its pool.
func (e *env) seats(eventID string) [3]int64 {
	e.t.Helper()
	r := e.do("GET", "/admin/events/"+eventID+"/stats", e.admin(), nil)
	require.Equal(e.t, http.StatusOK, r.status, "body: %s", r.body)
	st := decode[StatsView](e.t, r)
	require.NotNil(e.t, st.PoolRemaining, "body: %s", r.body)
	return [3]int64{*st.CapacityTotal, *st.CapacityRemaining, *st.PoolRemaining}
}

// auditOf is the event's audit trail, read over the API.
func (e *env) auditOf(eventID string) []AuditEntryView {
	e.t.Helper()
	r := e.do("GET", "/admin/events/"+eventID+"/audit", e.admin(), nil)
	require.Equal(e.t, http.StatusOK, r.status, "body: %s", r.body)
	return decode[AuditView](e.t, r).Entries
}

// TestAddCapacityOverHTTP adds seats to a sold-out event (they go to its pool, and
// the next participations win them) and to one shard of a sharded event; a LOTTERY
// and a closed event refuse seats with nothing written; a shard the event does not
// have is 400; the audit trail names who added what.
func TestAddCapacityOverHTTP(t *testing.T) {
	t.Parallel()
	clock := asynceventtest.NewClock(time.Now().Truncate(time.Second))
	e := newEnv(t, withClock(clock))
	ann, bob := e.admin(), token(t, "ops-bob", RoleAdmin)
	t0 := clock.Now()
	for _, body := range []map[string]any{
		{"eventId": "grow", "eventType": "FIRST_COME", "capacityTotal": 2, "endsAt": rfc(t0.Add(time.Hour))},
		{"eventId": "two", "eventType": "FIRST_COME", "capacityTotal": 4, "capacityShards": 2},
		{"eventId": "lot", "eventType": "LOTTERY", "winnerCount": 1, "lotteryCutoffAt": rfc(t0.Add(time.Hour))},
	} {
		r := e.do("POST", "/admin/events", ann, body)
		require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	}

	// Sold out: 2 seats, 3 requests.
	first := e.served(clock, "grow", "u0", "u1", "u2")
	require.Equal(t, map[asyncevent.Status][]string{asyncevent.StatusSucceeded: first[:2], asyncevent.StatusRejected: first[2:]}, e.byStatus(first))

	// Two seats more: the next two participations win them, the third does not.
	ev := e.applied("/admin/events/grow/capacity", ann, map[string]any{"seats": 2})
	assert.EqualValues(t, 4, ev.CapacityTotal)
	assert.Equal(t, asyncevent.StateOpen, ev.State)
	assert.Equal(t, [3]int64{4, 0, 2}, e.seats("grow"), "the shards are empty: the seats are on the pool")
	later := e.served(clock, "grow", "u3", "u4", "u5")
	assert.Equal(t, map[asyncevent.Status][]string{asyncevent.StatusSucceeded: later[:2], asyncevent.StatusRejected: later[2:]}, e.byStatus(later),
		"the next two win the seats added")
	assert.Equal(t, asyncevent.ResultRejectedCapacity, e.adminRequest(later[2]).ResultCode)
	assert.Equal(t, [3]int64{4, 0, 0}, e.seats("grow"))

	// Onto one shard of a sharded event; a shard it does not have is the body's fault.
	clock.Advance(time.Millisecond)
	e.applied("/admin/events/two/capacity", bob, map[string]any{"seats": 3, "shard": 1})
	r := e.do("GET", "/admin/events/two", ann, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	shards := decode[EventView](t, r).Capacity.Shards
	require.Len(t, shards, 2)
	assert.EqualValues(t, []int64{2, 5}, []int64{shards[0].Total, shards[1].Total})
	before := e.tableState()
	r = e.do("POST", "/admin/events/two/capacity", ann, map[string]any{"seats": 1, "shard": 2})
	require.Equal(t, http.StatusBadRequest, r.status, "body: %s", r.body)
	p := r.problem(t)
	assert.Equal(t, CodeInvalidBody, p.Code)
	assert.Equal(t, "shard 2: event two has 2 capacity shard(s), 0 to 1; leave shard out to spread the seats over the shards that hold seats", p.Detail)
	assert.Equal(t, before, e.tableState(), "a bad shard writes nothing")

	// Refused: a LOTTERY has no seats; a closed event takes none.
	e.refusedControl("/admin/events/lot/capacity", ann, map[string]any{"seats": 1}, asyncevent.StateOpen, "only a FIRST_COME event has seats")
	clock.Advance(time.Millisecond)
	e.applied("/admin/events/grow/close", ann, nil)
	clock.Advance(time.Millisecond)
	e.refusedControl("/admin/events/grow/capacity", ann, map[string]any{"seats": 1}, asyncevent.StateClosed, "the event is closed")

	trail := e.auditOf("grow")
	require.Len(t, trail, 2, "refusals left no entry")
	assert.Equal(t, AuditEntryView{At: Timestamp(asyncevent.MillisOf(t0.Add(3 * time.Millisecond))), Actor: "admin-1",
		Action: asyncevent.ActionAddCapacity, Detail: "2 seats: 0 on shards, 2 on the pool"}, trail[0])
	assert.Equal(t, asyncevent.ActionClose, trail[1].Action)
	trail = e.auditOf("two")
	require.Len(t, trail, 1)
	assert.Equal(t, "ops-bob", trail[0].Actor)
	assert.Equal(t, "3 seats: 3 on shards, 0 on the pool", trail[0].Detail)
	assert.Empty(t, e.auditOf("lot"))
}

// TestCancelRequestOverHTTP cancels a won seat: the request ends
// REJECTED_CANCELLED and the next participation wins the seat. A request that holds
// no seat (REJECTED, QUEUED, cancelled already, a LOTTERY's) is refused with the
// request in the problem and nothing written. The trail names who cancelled what.
func TestCancelRequestOverHTTP(t *testing.T) {
	t.Parallel()
	clock := asynceventtest.NewClock(time.Now().Truncate(time.Second))
	e := newEnv(t, withClock(clock))
	bob := token(t, "ops-bob", RoleAdmin)
	e.createFirstCome("sale", 1)
	first := e.served(clock, "sale", "u0", "u1")
	winner, loser := first[0], first[1]
	require.Equal(t, asyncevent.StatusSucceeded, e.adminRequest(winner).Status)
	require.Equal(t, asyncevent.StatusRejected, e.adminRequest(loser).Status)

	r := e.do("POST", "/admin/requests/"+winner+"/cancel", bob, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	c := decode[CancellationView](t, r)
	assert.Equal(t, winner, c.Request.RequestID)
	assert.Equal(t, asyncevent.StatusRejected, c.Request.Status)
	assert.Equal(t, asyncevent.UIRejected, c.Request.UIResult)
	assert.Equal(t, asyncevent.ResultCancelled, c.Request.ResultCode)
	assert.Equal(t, "sale", c.Event.EventID)
	assert.Equal(t, asyncevent.StateOpen, c.Event.State)
	assert.Equal(t, asyncevent.ResultCancelled, e.adminRequest(winner).ResultCode)
	assert.Equal(t, [3]int64{1, 0, 1}, e.seats("sale"), "the seat is on the pool")

	// The seat is back: the next participation wins it, the one after does not.
	later := e.served(clock, "sale", "u2", "u3")
	assert.Equal(t, map[asyncevent.Status][]string{asyncevent.StatusSucceeded: later[:1], asyncevent.StatusRejected: later[1:]}, e.byStatus(later))
	assert.Equal(t, [3]int64{1, 0, 0}, e.seats("sale"))

	// Refused: no seat to cancel.
	queued := e.clicks(clock, "sale", "u4")[0]
	for _, c := range []struct {
		id     string
		status asyncevent.Status
		result asyncevent.ResultCode
	}{
		{loser, asyncevent.StatusRejected, asyncevent.ResultRejectedCapacity},
		{winner, asyncevent.StatusRejected, asyncevent.ResultCancelled},
		{queued, asyncevent.StatusQueued, ""},
	} {
		p := e.refusedControl("/admin/requests/"+c.id+"/cancel", bob, nil, asyncevent.StateOpen, "holds no seat")
		assert.Contains(t, p.Detail, string(c.status))
		require.NotNil(t, p.Request, "the problem carries the request")
		assert.Equal(t, c.id, p.Request.RequestID)
		assert.Equal(t, c.status, p.Request.Status)
		assert.Equal(t, c.result, p.Request.ResultCode)
	}
	r = e.do("POST", "/admin/events", e.admin(), map[string]any{"eventId": "lot", "eventType": "LOTTERY", "winnerCount": 1,
		"lotteryCutoffAt": rfc(clock.Now().Add(time.Hour))})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	entry := e.clicks(clock, "lot", "u0")[0]
	e.refusedControl("/admin/requests/"+entry+"/cancel", bob, nil, asyncevent.StateOpen, "only a FIRST_COME seat can be cancelled")

	trail := e.auditOf("sale")
	require.Len(t, trail, 1, "refusals left no entry")
	assert.Equal(t, "ops-bob", trail[0].Actor)
	assert.Equal(t, asyncevent.ActionCancel, trail[0].Action)
	assert.Equal(t, "request "+winner, trail[0].Detail)
}

// TestCancelWithHoldsServesTheWaitlist: the cancelled seat of a confirmed (paid)
// hold goes to the earliest WAITLISTED request at the next sweep; a HELD request is
// a release's, not a cancel's.
func TestCancelWithHoldsServesTheWaitlist(t *testing.T) {
	t.Parallel()
	clock := asynceventtest.NewClock(time.Now().Truncate(time.Second))
	e := newEnv(t, withClock(clock))
	s := newHoldsSale(t, e, clock, 2, 4)
	admin := e.admin()
	r := e.do("POST", "/requests/"+s.held[0]+"/confirm", admin, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)

	e.refusedControl("/admin/requests/"+s.held[1]+"/cancel", admin, nil, asyncevent.StateOpen, "the request is HELD: Release ends it")
	e.refusedControl("/admin/requests/"+s.waitlisted[0]+"/cancel", admin, nil, asyncevent.StateOpen, "the request is WAITLISTED: Release ends it")

	r = e.do("POST", "/admin/requests/"+s.held[0]+"/cancel", admin, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	assert.Equal(t, asyncevent.ResultCancelled, decode[CancellationView](t, r).Request.ResultCode)
	r = e.do("POST", "/admin/events/sale/holds/sweep", admin, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	assert.Equal(t, asyncevent.StatusHeld, e.adminRequest(s.waitlisted[0]).Status, "the earliest waitlisted request got the seat")
	assert.Equal(t, asyncevent.StatusWaitlisted, e.adminRequest(s.waitlisted[1]).Status)
	assert.Equal(t, []asyncevent.Action{asyncevent.ActionCancel}, actions(e.auditOf("sale")))
}

// actions are the trail's actions, in order.
func actions(trail []AuditEntryView) []asyncevent.Action {
	var out []asyncevent.Action
	for _, a := range trail {
		out = append(out, a.Action)
	}
	return out
}
