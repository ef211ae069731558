package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

// tableState is every item of the env's table, each as JSON, sorted: two states
// are equal when nothing was written in between (the event's CONFIG and its audit
// trail included). The progress the client counted before is written first, so
// that a state holds it whether or not the client's own flush came yet.
func (e *env) tableState() []string {
	e.t.Helper()
	require.NoError(e.t, e.client.FlushProgress(context.Background()))
	var out []string
	for _, raw := range asynceventtest.ScanTable(e.t, e.client.TableName()) {
		var item map[string]any
		require.NoError(e.t, attributevalue.UnmarshalMap(raw, &item))
		b, err := json.Marshal(item)
		require.NoError(e.t, err)
		out = append(out, string(b))
	}
	slices.Sort(out)
	return out
}

// refusedControl posts body to path as tok, wants 409 control_refused whose detail
// holds reason and whose event is in state, checks that nothing was written, and
// returns the problem.
func (e *env) refusedControl(path, tok string, body any, state asyncevent.EventState, reason string) Problem {
	e.t.Helper()
	before := e.tableState()
	r := e.do("POST", path, tok, body)
	require.Equal(e.t, http.StatusConflict, r.status, "%s: %s", path, r.body)
	p := r.problem(e.t)
	assert.Equal(e.t, CodeControlRefused, p.Code, path)
	assert.Contains(e.t, p.Detail, reason, path)
	require.NotNil(e.t, p.Event, "%s: the problem carries the event: %s", path, r.body)
	assert.Equal(e.t, state, p.Event.State, path)
	assert.Equal(e.t, before, e.tableState(), "%s: a refused control writes nothing, on the event or its audit trail", path)
	return p
}

// applied posts body to path as tok, wants 200, and returns the event.
func (e *env) applied(path, tok string, body any) EventView {
	e.t.Helper()
	r := e.do("POST", path, tok, body)
	require.Equal(e.t, http.StatusOK, r.status, "%s: %s", path, r.body)
	return decode[EventView](e.t, r)
}

// refusedClick posts user's click on eventID, wants 409 code, and checks that
// nothing was written or queued.
func (e *env) refusedClick(eventID, user, code string) {
	e.t.Helper()
	before, queued := e.tableState(), e.queue.Len()
	r := e.do("POST", "/events/"+eventID+"/participations", token(e.t, user, RoleUser), nil)
	require.Equal(e.t, http.StatusConflict, r.status, "body: %s", r.body)
	assert.Equal(e.t, code, r.problem(e.t).Code)
	assert.Equal(e.t, before, e.tableState(), "a refused click writes nothing")
	assert.Equal(e.t, queued, e.queue.Len(), "a refused click queues nothing")
}

func rfc(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// TestControlsOverHTTP takes a FIRST_COME event through every control over the
// API, each in a state that allows it (200 with the event) and in states that
// refuse it (409 control_refused, nothing written); a click on the paused and on
// the closed event is refused with nothing written; the audit trail names who did
// what, when.
func TestControlsOverHTTP(t *testing.T) {
	t.Parallel()
	clock := asynceventtest.NewClock(time.Now().Truncate(time.Second))
	e := newEnv(t, withClock(clock))
	ann, bob := e.admin(), token(t, "ops-bob", RoleAdmin)
	t0 := clock.Now()
	r := e.do("POST", "/admin/events", ann, map[string]any{"eventId": "ctl", "name": "Control sale", "eventType": "FIRST_COME",
		"capacityTotal": 5, "endsAt": rfc(t0.Add(time.Hour))})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	assert.Equal(t, asyncevent.StateOpen, decode[EventView](t, r).State)
	e.participate("ctl", "u0")
	step := func() { clock.Advance(time.Millisecond) } // the trail's order is its entries' times

	// Pause: clicks refused, nothing written; a second pause refused.
	ev := e.applied("/admin/events/ctl/pause", ann, nil)
	assert.Equal(t, asyncevent.StatePaused, ev.State)
	assert.True(t, ev.Paused)
	e.refusedControl("/admin/events/ctl/pause", ann, nil, asyncevent.StatePaused, "paused already")
	e.refusedClick("ctl", "u1", CodeEventPaused)
	e.refusedControl("/admin/events/ctl/extend", ann, map[string]any{"lotteryCutoffAt": rfc(t0.Add(2 * time.Hour))}, asyncevent.StatePaused, "only a LOTTERY")

	// Extend the end, paused or not: later only.
	step()
	ev = e.applied("/admin/events/ctl/extend", ann, map[string]any{"endsAt": rfc(t0.Add(2 * time.Hour))})
	assert.Equal(t, Timestamp(asyncevent.MillisOf(t0.Add(2*time.Hour))), ev.EndsAt)
	e.refusedControl("/admin/events/ctl/extend", ann, map[string]any{"endsAt": rfc(t0.Add(90 * time.Minute))}, asyncevent.StatePaused, "not before the new one")

	// Resume, by another admin: clicks taken again.
	step()
	ev = e.applied("/admin/events/ctl/resume", bob, nil)
	assert.Equal(t, asyncevent.StateOpen, ev.State)
	assert.False(t, ev.Paused)
	e.refusedControl("/admin/events/ctl/resume", ann, nil, asyncevent.StateOpen, "not paused")
	status, _ := e.participate("ctl", "u1")
	assert.Equal(t, http.StatusAccepted, status)

	// Close: now, for good.
	step()
	closedAt := Timestamp(asyncevent.MillisOf(clock.Now()))
	ev = e.applied("/admin/events/ctl/close", ann, nil)
	assert.Equal(t, closedAt, ev.ClosedAt)
	assert.Equal(t, closedAt, ev.EndsAt, "closing moves the end to now")
	step()
	r = e.do("GET", "/admin/events/ctl", ann, nil)
	require.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, asyncevent.StateClosed, decode[EventView](t, r).State)
	e.refusedClick("ctl", "u2", CodeEventClosed)
	e.refusedControl("/admin/events/ctl/close", ann, nil, asyncevent.StateClosed, "closed already")
	e.refusedControl("/admin/events/ctl/pause", ann, nil, asyncevent.StateClosed, "the event is closed")
	e.refusedControl("/admin/events/ctl/resume", ann, nil, asyncevent.StateClosed, "the event is closed")
	e.refusedControl("/admin/events/ctl/extend", ann, map[string]any{"endsAt": rfc(t0.Add(3 * time.Hour))}, asyncevent.StateClosed, "the end has passed")

	// The trail: who did what, when, oldest first; refusals left no entry.
	r = e.do("GET", "/admin/events/ctl/audit", ann, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	trail := decode[AuditView](t, r)
	assert.Equal(t, "ctl", trail.EventID)
	ms := func(d time.Duration) Timestamp { return Timestamp(asyncevent.MillisOf(t0.Add(d))) }
	assert.Equal(t, []AuditEntryView{
		{At: ms(0), Actor: "admin-1", Action: asyncevent.ActionPause},
		{At: ms(time.Millisecond), Actor: "admin-1", Action: asyncevent.ActionExtendEnd, Detail: "to " + t0.Add(2*time.Hour).UTC().Format(time.RFC3339)},
		{At: ms(2 * time.Millisecond), Actor: "ops-bob", Action: asyncevent.ActionResume},
		{At: ms(3 * time.Millisecond), Actor: "admin-1", Action: asyncevent.ActionClose},
	}, trail.Entries)
}

// TestLotteryCutoffOverHTTP moves a lottery's entry cutoff later, and is refused a
// cutoff that is earlier or past the event's end.
func TestLotteryCutoffOverHTTP(t *testing.T) {
	t.Parallel()
	clock := asynceventtest.NewClock(time.Now().Truncate(time.Second))
	e := newEnv(t, withClock(clock))
	admin := e.admin()
	t0 := clock.Now()
	r := e.do("POST", "/admin/events", admin, map[string]any{"eventId": "lot", "eventType": "LOTTERY", "winnerCount": 2,
		"lotteryCutoffAt": rfc(t0.Add(time.Hour)), "endsAt": rfc(t0.Add(3 * time.Hour))})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)

	ev := e.applied("/admin/events/lot/extend", admin, map[string]any{"lotteryCutoffAt": rfc(t0.Add(2 * time.Hour))})
	assert.Equal(t, Timestamp(asyncevent.MillisOf(t0.Add(2*time.Hour))), ev.LotteryCutoffAt)
	assert.Equal(t, asyncevent.StateOpen, ev.State)
	e.refusedControl("/admin/events/lot/extend", admin, map[string]any{"lotteryCutoffAt": rfc(t0.Add(90 * time.Minute))}, asyncevent.StateOpen, "not before the new one")
	e.refusedControl("/admin/events/lot/extend", admin, map[string]any{"lotteryCutoffAt": rfc(t0.Add(4 * time.Hour))}, asyncevent.StateOpen, "past the event's end")
	clock.Advance(2*time.Hour - 5*time.Second)
	e.refusedControl("/admin/events/lot/extend", admin, map[string]any{"lotteryCutoffAt": rfc(t0.Add(150 * time.Minute))}, asyncevent.StateOpen, "less than 10 s away")

	r = e.do("GET", "/admin/events/lot/audit", admin, nil)
	require.Equal(t, http.StatusOK, r.status)
	entries := decode[AuditView](t, r).Entries
	require.Len(t, entries, 1)
	assert.Equal(t, asyncevent.ActionExtendCutoff, entries[0].Action)
}

// TestControlRoutesRefusals: the controls and the reads are an admin's; an
// unknown event or request is 404 and a bad ID or body 400, with nothing written.
func TestControlRoutesRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createFirstCome("sale", 3)
	admin, user := e.admin(), token(t, "ann", RoleUser)
	later := map[string]any{"endsAt": rfc(time.Now().Add(time.Hour))}
	before := e.tableState()

	routes := []struct {
		method, path string
		body         any
	}{
		{"POST", "/admin/events/sale/close", nil},
		{"POST", "/admin/events/sale/pause", nil},
		{"POST", "/admin/events/sale/resume", nil},
		{"POST", "/admin/events/sale/extend", later},
		{"POST", "/admin/events/sale/capacity", map[string]any{"seats": 1}},
		{"POST", "/admin/requests/r1/cancel", nil},
		{"GET", "/admin/events/sale/audit", nil},
		{"GET", "/admin/events", nil},
	}
	for _, rt := range routes {
		r := e.do(rt.method, rt.path, "", rt.body)
		assert.Equal(t, http.StatusUnauthorized, r.status, "%s %s without a token", rt.method, rt.path)
		assert.Equal(t, CodeUnauthorized, r.problem(t).Code)
		r = e.do(rt.method, rt.path, user, rt.body)
		assert.Equal(t, http.StatusForbidden, r.status, "%s %s as a user", rt.method, rt.path)
		assert.Equal(t, CodeForbidden, r.problem(t).Code)
	}

	for _, c := range []struct {
		method, path string
		body         any
		status       int
		code         string
	}{
		{"POST", "/admin/events/nope/close", nil, http.StatusNotFound, CodeEventNotFound},
		{"POST", "/admin/events/nope/pause", nil, http.StatusNotFound, CodeEventNotFound},
		{"POST", "/admin/events/nope/resume", nil, http.StatusNotFound, CodeEventNotFound},
		{"POST", "/admin/events/nope/extend", later, http.StatusNotFound, CodeEventNotFound},
		{"GET", "/admin/events/nope/audit", nil, http.StatusNotFound, CodeEventNotFound},
		{"POST", "/admin/events/a%23b/pause", nil, http.StatusBadRequest, CodeInvalidID},
		{"GET", "/admin/events/a%23b/audit", nil, http.StatusBadRequest, CodeInvalidID},
		{"POST", "/admin/events/sale/extend", map[string]any{}, http.StatusBadRequest, CodeInvalidBody},
		{"POST", "/admin/events/sale/extend", map[string]any{"endsAt": nil}, http.StatusBadRequest, CodeInvalidBody},
		{"POST", "/admin/events/sale/extend", map[string]any{"endsAt": rfc(time.Now().Add(time.Hour)), "lotteryCutoffAt": rfc(time.Now().Add(time.Hour))}, http.StatusBadRequest, CodeInvalidBody},
		{"POST", "/admin/events/sale/extend", map[string]any{"endsAt": 1767225600000}, http.StatusBadRequest, CodeInvalidBody},
		{"POST", "/admin/events/sale/extend", map[string]any{"endsAt": "tomorrow"}, http.StatusBadRequest, CodeInvalidBody},
		{"POST", "/admin/events/sale/extend", map[string]any{"startsAt": rfc(time.Now())}, http.StatusConflict, CodeControlRefused}, // a start moves on a pre-queued event only
		{"POST", "/admin/events/sale/extend", `{"endsAt":`, http.StatusBadRequest, CodeMalformedJSON},
		{"POST", "/admin/events/sale/extend", nil, http.StatusBadRequest, CodeMalformedJSON},
		{"GET", "/admin/events/sale/close", nil, http.StatusMethodNotAllowed, CodeMethodNotAllowed},
		{"POST", "/admin/events/nope/capacity", map[string]any{"seats": 1}, http.StatusNotFound, CodeEventNotFound},
		{"POST", "/admin/events/nope/capacity", map[string]any{"seats": 1, "shard": 0}, http.StatusNotFound, CodeEventNotFound},
		{"POST", "/admin/events/a%23b/capacity", map[string]any{"seats": 1}, http.StatusBadRequest, CodeInvalidID},
		{"POST", "/admin/events/sale/capacity", map[string]any{}, http.StatusBadRequest, CodeInvalidBody},
		{"POST", "/admin/events/sale/capacity", map[string]any{"seats": nil}, http.StatusBadRequest, CodeInvalidBody},
		{"POST", "/admin/events/sale/capacity", map[string]any{"shard": 0}, http.StatusBadRequest, CodeInvalidBody},
		{"POST", "/admin/events/sale/capacity", map[string]any{"seats": 0}, http.StatusBadRequest, CodeInvalidBody},
		{"POST", "/admin/events/sale/capacity", map[string]any{"seats": -3}, http.StatusBadRequest, CodeInvalidBody},
		{"POST", "/admin/events/sale/capacity", map[string]any{"seats": 1_000_001}, http.StatusBadRequest, CodeInvalidBody},
		{"POST", "/admin/events/sale/capacity", map[string]any{"seats": 1, "shard": -1}, http.StatusBadRequest, CodeInvalidBody},
		{"POST", "/admin/events/sale/capacity", map[string]any{"seats": 1, "shard": 1}, http.StatusBadRequest, CodeInvalidBody},
		{"POST", "/admin/events/sale/capacity", map[string]any{"seats": "3"}, http.StatusBadRequest, CodeInvalidBody},
		{"POST", "/admin/events/sale/capacity", map[string]any{"seats": 1.5}, http.StatusBadRequest, CodeInvalidBody},
		{"POST", "/admin/events/sale/capacity", map[string]any{"seats": 1, "shards": 1}, http.StatusBadRequest, CodeUnknownField},
		{"POST", "/admin/events/sale/capacity", `{"seats":`, http.StatusBadRequest, CodeMalformedJSON},
		{"POST", "/admin/events/sale/capacity", nil, http.StatusBadRequest, CodeMalformedJSON},
		{"GET", "/admin/events/sale/capacity", nil, http.StatusMethodNotAllowed, CodeMethodNotAllowed},
		{"POST", "/admin/requests/nope/cancel", nil, http.StatusNotFound, CodeRequestNotFound},
		{"POST", "/admin/requests/a%23b/cancel", nil, http.StatusBadRequest, CodeInvalidID},
		{"GET", "/admin/requests/nope/cancel", nil, http.StatusMethodNotAllowed, CodeMethodNotAllowed},
	} {
		r := e.do(c.method, c.path, admin, c.body)
		assert.Equal(t, c.status, r.status, "%s %s %v: %s", c.method, c.path, c.body, r.body)
		assert.Equal(t, c.code, r.problem(t).Code, "%s %s %v", c.method, c.path, c.body)
	}
	assert.Equal(t, before, e.tableState(), "no refusal wrote anything")
}

// TestEventListOverHTTP lists events newest first, a page at a time with the
// cursor, each with its type, state, seats left, name and times.
func TestEventListOverHTTP(t *testing.T) {
	t.Parallel()
	clock := asynceventtest.NewClock(time.Now().Truncate(time.Second))
	e := newEnv(t, withClock(clock))
	admin := e.admin()

	r := e.do("GET", "/admin/events", admin, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	assert.JSONEq(t, `{"events":[]}`, string(r.body), "no event yet")

	t0 := clock.Now()
	var created []string
	for i, body := range []map[string]any{
		{"eventType": "FIRST_COME", "capacityTotal": 3, "name": "Sale 0", "endsAt": rfc(t0.Add(time.Hour))},
		{"eventType": "LOTTERY", "winnerCount": 2, "name": "Lottery 1", "lotteryCutoffAt": rfc(t0.Add(time.Hour))},
		{"eventType": "FIRST_COME", "capacityTotal": 7, "capacityShards": 2, "startsAt": rfc(t0.Add(time.Hour))},
		{"eventType": "FIRST_COME", "capacityTotal": 2},
		{"eventType": "FIRST_COME", "capacityTotal": 4},
	} {
		body["eventId"] = fmt.Sprintf("ev-%d", i)
		r := e.do("POST", "/admin/events", admin, body)
		require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
		created = append(created, body["eventId"].(string))
		clock.Advance(time.Millisecond)
	}
	e.participate("ev-0", "u0")
	e.participate("ev-0", "u1")
	e.process()
	e.applied("/admin/events/ev-4/pause", admin, nil)

	var listed []EventSummaryView
	var raw []map[string]any
	pages := 0
	for cursor := ""; ; pages++ {
		require.Less(t, pages, 10)
		path := "/admin/events?limit=2"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		r := e.do("GET", path, admin, nil)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		page := decode[EventListView](t, r)
		assert.LessOrEqual(t, len(page.Events), 2)
		listed = append(listed, page.Events...)
		raw = append(raw, decode[struct{ Events []map[string]any }](t, r).Events...)
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	assert.GreaterOrEqual(t, pages, 2, "paged")
	var ids []string
	for _, s := range listed {
		ids = append(ids, s.EventID)
	}
	slices.Reverse(created)
	require.Equal(t, created, ids, "each event once, newest first")

	byID := map[string]EventSummaryView{}
	for _, s := range listed {
		byID[s.EventID] = s
	}
	seats := func(id string) int64 {
		require.NotNil(t, byID[id].SeatsLeft, id)
		return *byID[id].SeatsLeft
	}
	assert.Equal(t, asyncevent.FirstCome, byID["ev-0"].EventType)
	assert.Equal(t, "Sale 0", byID["ev-0"].Name)
	assert.Equal(t, Timestamp(asyncevent.MillisOf(t0.Add(time.Hour))), byID["ev-0"].EndsAt)
	assert.Equal(t, Timestamp(asyncevent.MillisOf(t0)), byID["ev-0"].CreatedAt)
	assert.Equal(t, asyncevent.StateOpen, byID["ev-0"].State)
	assert.EqualValues(t, 1, seats("ev-0"), "3 seats, 2 taken")
	assert.Equal(t, asyncevent.Lottery, byID["ev-1"].EventType)
	assert.Nil(t, byID["ev-1"].SeatsLeft, "a lottery has no seats left")
	assert.NotContains(t, raw[3], "seatsLeft", "absent, not null, for a lottery")
	assert.Equal(t, "ev-1", raw[3]["eventId"])
	assert.Equal(t, Timestamp(asyncevent.MillisOf(t0.Add(time.Hour))), byID["ev-1"].LotteryCutoffAt)
	assert.Equal(t, asyncevent.StateScheduled, byID["ev-2"].State)
	assert.EqualValues(t, 7, seats("ev-2"), "summed over its 2 capacity shards")
	assert.Equal(t, 2, byID["ev-2"].CapacityShards)
	assert.Contains(t, raw[0], "seatsLeft", "present for a first-come event")
	assert.Equal(t, asyncevent.StatePaused, byID["ev-4"].State)
	assert.True(t, byID["ev-4"].Paused)
	assert.Nil(t, byID["ev-4"].Capacity, "the list reads no capacity view")

	// A cursor of another listing, a limit out of range.
	mine := decode[PageView](t, e.do("GET", "/me/participations?limit=1", token(t, "u0", RoleUser), nil))
	require.NotEmpty(t, mine.NextCursor)
	for path, code := range map[string]string{
		"/admin/events?limit=101":                   CodeInvalidParameter,
		"/admin/events?limit=-1":                    CodeInvalidParameter,
		"/admin/events?limit=x":                     CodeInvalidParameter,
		"/admin/events?cursor=garbage":              CodeInvalidCursor,
		"/admin/events?cursor=" + mine.NextCursor:   CodeInvalidCursor,
		"/admin/events?limit=2&cursor=%zz":          CodeInvalidParameter,
		"/admin/events?limit=100&cursor=" + "AAAA=": CodeInvalidCursor,
	} {
		r := e.do("GET", path, admin, nil)
		assert.Equal(t, http.StatusBadRequest, r.status, "%s: %s", path, r.body)
		assert.Equal(t, code, r.problem(t).Code, path)
	}
}

// Over HTTP, a resume of an event that an operator paused and then closed is 200
// with a RESUME entry on its audit trail, though the event is CLOSED and takes no
// click: it should be 409 control_refused with nothing written.
func TestResumeAfterCloseOverHTTP(t *testing.T) {
	t.Parallel()
	clock := asynceventtest.NewClock(time.Now().Truncate(time.Second))
	e := newEnv(t, withClock(clock))
	admin := e.admin()
	e.createFirstCome("pc", 3)
	e.applied("/admin/events/pc/pause", admin, nil)
	clock.Advance(time.Millisecond)
	e.applied("/admin/events/pc/close", admin, nil)
	clock.Advance(time.Millisecond)
	e.refusedControl("/admin/events/pc/resume", admin, nil, asyncevent.StateClosed, "closed")
}

// Over HTTP, a LOTTERY past its cutoff is CLOSED (the event view says so, a click
// is 409 event_closed), yet a pause and a close of it are 200, each with an audit
// entry.
func TestControlsOfALotteryPastItsCutoffOverHTTP(t *testing.T) {
	t.Parallel()
	clock := asynceventtest.NewClock(time.Now().Truncate(time.Second))
	e := newEnv(t, withClock(clock))
	admin := e.admin()
	r := e.do("POST", "/admin/events", admin, map[string]any{"eventId": "lot", "eventType": "LOTTERY", "winnerCount": 1,
		"lotteryCutoffAt": rfc(clock.Now().Add(time.Minute))})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	clock.Advance(2 * time.Minute)
	e.refusedClick("lot", "late", CodeEventClosed)
	e.refusedControl("/admin/events/lot/pause", admin, nil, asyncevent.StateClosed, "closed")
	e.refusedControl("/admin/events/lot/close", admin, nil, asyncevent.StateClosed, "closed")
}
