package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

// holdFor is the hold of the tests' events with holds.
const holdFor = 10 * time.Minute

// withClock runs the client and the server on clock.
func withClock(clock *asynceventtest.Clock) envOption {
	return func(o *asyncevent.Options, so *ServerOptions) {
		o.Clock, so.Clock = clock.Now, clock.Now
	}
}

// holdsSale is a FIRST_COME event "sale" with holds of holdFor and capacity seats,
// created through the API, and one request of each of users u0, u1…, processed one
// at a time in queue order: the first capacity are HELD, the rest WAITLISTED.
type holdsSale struct {
	*env
	clock      *asynceventtest.Clock
	held       []string // request IDs, in queue order
	waitlisted []string
	users      map[string]string // request ID → user
}

func newHoldsSale(t *testing.T, e *env, clock *asynceventtest.Clock, capacity int64, users int) *holdsSale {
	t.Helper()
	r := e.do("POST", "/admin/events", e.admin(), map[string]any{
		"eventId": "sale", "eventType": "FIRST_COME", "capacityTotal": capacity, "holdForSeconds": int64(holdFor / time.Second),
		"endsAt": "2099-01-01T00:00:00Z",
	})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	require.EqualValues(t, holdFor/time.Second, decode[EventView](t, r).HoldForSeconds)
	s := &holdsSale{env: e, clock: clock, users: map[string]string{}}
	var ids []string
	for i := range users {
		user := fmt.Sprintf("u%d", i)
		_, p := e.participate("sale", user)
		ids = append(ids, p.RequestID)
		s.users[p.RequestID] = user
		clock.Advance(time.Millisecond)
	}
	ctx := context.Background()
	proc := asyncevent.NewProcessor(e.client, asyncevent.ProcessOptions{})
	for {
		ds, err := e.queue.Receive(ctx, 1, 0, time.Minute)
		require.NoError(t, err)
		if len(ds) == 0 {
			break
		}
		require.Empty(t, asynceventtest.Process(ctx, proc, ds))
	}
	for _, id := range ids {
		req, err := e.client.GetRequest(ctx, id)
		require.NoError(t, err)
		switch req.Status {
		case asyncevent.StatusHeld:
			s.held = append(s.held, id)
		case asyncevent.StatusWaitlisted:
			s.waitlisted = append(s.waitlisted, id)
		default:
			t.Fatalf("request %s is %s after processing", id, req.Status)
		}
	}
	require.Len(t, s.held, int(capacity))
	return s
}

// owner is a token of the user of request id.
func (s *holdsSale) owner(id string) string { return token(s.t, s.users[id], RoleUser) }

// state is what the table holds of a request: its admin view and its status log.
func (s *holdsSale) state(id string) string {
	s.t.Helper()
	r := s.do("GET", "/admin/requests/"+id, s.admin(), nil)
	require.Equal(s.t, http.StatusOK, r.status, "body: %s", r.body)
	logs := s.do("GET", "/admin/requests/"+id+"/logs", s.admin(), nil)
	require.Equal(s.t, http.StatusOK, logs.status, "body: %s", logs.body)
	return string(r.body) + string(logs.body)
}

// stats is the event's holds stats.
func (s *holdsSale) stats() HoldStatsView {
	s.t.Helper()
	r := s.do("GET", "/admin/events/sale/stats", s.admin(), nil)
	require.Equal(s.t, http.StatusOK, r.status, "body: %s", r.body)
	st := decode[StatsView](s.t, r)
	require.NotNil(s.t, st.Holds, "body: %s", r.body)
	return *st.Holds
}

// refused posts path with tok, wants 409 status_conflict with the request in
// status and resultCode, and checks that nothing was written.
func (s *holdsSale) refused(path, tok, id string, status asyncevent.Status, rc asyncevent.ResultCode, detail string) {
	s.t.Helper()
	before, seats := s.state(id), s.stats()
	r := s.do("POST", path, tok, nil)
	require.Equal(s.t, http.StatusConflict, r.status, "%s: %s", path, r.body)
	p := r.problem(s.t)
	assert.Equal(s.t, CodeStatusConflict, p.Code)
	assert.Contains(s.t, p.Detail, detail)
	require.NotNil(s.t, p.Request, "the problem carries the request: %s", r.body)
	assert.Equal(s.t, id, p.Request.RequestID)
	assert.Equal(s.t, status, p.Request.Status)
	assert.Equal(s.t, rc, p.Request.ResultCode)
	assert.Equal(s.t, before, s.state(id), "%s: nothing written on the request or its status log", path)
	assert.Equal(s.t, seats, s.stats(), "%s: nothing written on the seats", path)
}

// TestHoldsConfirmAndReleaseOverHTTP takes a sale with holds through the API: the
// views of HELD (with the time left) and WAITLISTED requests, confirms and releases
// that apply (200 with the request), refusals that write nothing (409 with the
// request as it is, 403 for a user's confirm, 404 for an unknown request or another
// user's), and sweeps that hand the seats given back to the waitlist and expire a
// hold that ran out.
func TestHoldsConfirmAndReleaseOverHTTP(t *testing.T) {
	t.Parallel()
	clock := asynceventtest.NewClock(time.Now().Truncate(time.Second))
	s := newHoldsSale(t, newEnv(t, withStatusLog, withClock(clock)), clock, 2, 5)
	admin := s.admin()
	heldA, heldB := s.held[0], s.held[1]
	require.Len(t, s.waitlisted, 3)

	// The views.
	r := s.do("GET", "/requests/"+heldA, s.owner(heldA), nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	held := decode[RequestView](t, r)
	assert.Equal(t, asyncevent.StatusHeld, held.Status)
	assert.Equal(t, asyncevent.UIHeld, held.UIResult)
	require.NotZero(t, held.HoldExpiresAt)
	left := asyncevent.EpochMillis(held.HoldExpiresAt).Time().Sub(clock.Now())
	assert.InDelta(t, holdFor, left, float64(10*time.Millisecond), "held for holdFor from its claim")
	require.NotNil(t, held.HoldSecondsLeft)
	assert.EqualValues(t, int64(left/time.Second), *held.HoldSecondsLeft)
	clock.Advance(90*time.Second + 500*time.Millisecond)
	r = s.do("GET", "/requests/"+heldA, s.owner(heldA), nil)
	require.Equal(t, http.StatusOK, r.status)
	assert.EqualValues(t, int64((left-90500*time.Millisecond)/time.Second), *decode[RequestView](t, r).HoldSecondsLeft,
		"counted down by the server's clock, rounded down")

	r = s.do("GET", "/requests/"+s.waitlisted[0], s.owner(s.waitlisted[0]), nil)
	require.Equal(t, http.StatusOK, r.status)
	wl := decode[map[string]any](t, r)
	assert.Equal(t, "WAITLISTED", wl["status"])
	assert.Equal(t, "WAITLISTED", wl["uiResult"])
	assert.NotContains(t, wl, "holdExpiresAt")
	assert.NotContains(t, wl, "holdSecondsLeft")
	if place, ok := wl["waitlist"].(map[string]any); assert.True(t, ok, "a WAITLISTED request has its place on the waitlist: %v", wl) {
		assert.EqualValues(t, 0, place["ahead"], "the first of the waitlist")
		assert.Contains(t, place, "endsAt")
	}
	r = s.do("GET", "/requests/"+heldA, s.owner(heldA), nil)
	assert.NotContains(t, decode[map[string]any](t, r), "waitlist", "a HELD request is on no waitlist")

	r = s.do("GET", "/admin/requests/"+heldA, admin, nil)
	require.Equal(t, http.StatusOK, r.status)
	adminView := decode[map[string]any](t, r)
	assert.Contains(t, adminView, "holdSecondsLeft")
	assert.NotContains(t, adminView, "leaseOwner", "no lease once the worker is done with it")
	assert.NotContains(t, adminView, "leaseExpiresAt")
	mine := s.listAll("/me/participations", s.owner(heldA))
	require.Len(t, mine, 1)
	assert.NotNil(t, mine[0].HoldSecondsLeft, "the listings show the time left too")
	listed := s.listAll("/admin/events/sale/requests?status=HELD", admin)
	assert.Len(t, listed, 2)

	// Refusals that write nothing.
	r = s.do("POST", "/requests/"+heldA+"/confirm", s.owner(heldA), nil)
	assert.Equal(t, http.StatusForbidden, r.status, "payment is confirmed by the service, not by the user")
	assert.Equal(t, CodeForbidden, r.problem(t).Code)
	for _, path := range []string{"/requests/no-such-request/confirm", "/requests/no-such-request/release"} {
		r = s.do("POST", path, admin, nil)
		assert.Equal(t, http.StatusNotFound, r.status, path)
		assert.Equal(t, CodeRequestNotFound, r.problem(t).Code, path)
	}
	before := s.state(heldB)
	r = s.do("POST", "/requests/"+heldB+"/release", s.owner(heldA), nil)
	assert.Equal(t, http.StatusNotFound, r.status, "another user's request is not found, as for GET")
	assert.Equal(t, CodeRequestNotFound, r.problem(t).Code)
	assert.Equal(t, before, s.state(heldB))
	r = s.do("POST", "/requests/"+heldB+"/release", "", nil)
	assert.Equal(t, http.StatusUnauthorized, r.status)
	s.refused("/requests/"+s.waitlisted[0]+"/confirm", admin, s.waitlisted[0], asyncevent.StatusWaitlisted, "", "not HELD")

	// Confirmed: paid.
	r = s.do("POST", "/requests/"+heldA+"/confirm", admin, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	paid := decode[map[string]any](t, r)
	assert.Equal(t, "SUCCEEDED", paid["status"])
	assert.Equal(t, "SUCCESS", paid["uiResult"])
	assert.Equal(t, "SUCCESS", paid["resultCode"])
	assert.NotContains(t, paid, "holdSecondsLeft")
	s.refused("/requests/"+heldA+"/confirm", admin, heldA, asyncevent.StatusSucceeded, asyncevent.ResultSuccess, "SUCCEEDED already")
	s.refused("/requests/"+heldA+"/release", s.owner(heldA), heldA, asyncevent.StatusSucceeded, asyncevent.ResultSuccess, "only a HELD or WAITLISTED")

	// Released by its user: the seat goes to the waitlist at the next sweep.
	r = s.do("POST", "/requests/"+heldB+"/release", s.owner(heldB), nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	gaveUp := decode[RequestView](t, r)
	assert.Equal(t, asyncevent.StatusRejected, gaveUp.Status)
	assert.Equal(t, asyncevent.ResultReleased, gaveUp.ResultCode)
	assert.Nil(t, gaveUp.HoldSecondsLeft)
	assert.Equal(t, held.HoldExpiresAt, gaveUp.HoldExpiresAt, "the ended hold's expiry is kept")
	s.refused("/requests/"+heldB+"/release", s.owner(heldB), heldB, asyncevent.StatusRejected, asyncevent.ResultReleased, "only a HELD or WAITLISTED")
	s.refused("/requests/"+heldB+"/confirm", admin, heldB, asyncevent.StatusRejected, asyncevent.ResultReleased, "was released")

	// The last waitlisted leaves the waitlist, by an admin's hand.
	last := s.waitlisted[2]
	r = s.do("POST", "/requests/"+last+"/release", admin, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	assert.Equal(t, asyncevent.ResultReleased, decode[RequestView](t, r).ResultCode)

	// A sweep hands the seat given back to the earliest waitlisted.
	r = s.do("POST", "/admin/events/sale/holds/sweep", admin, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	assert.Equal(t, HoldSweepView{EventID: "sale", Passes: 1, Served: 1}, decode[HoldSweepView](t, r))
	served := s.waitlisted[0]
	r = s.do("GET", "/requests/"+served, s.owner(served), nil)
	require.Equal(t, http.StatusOK, r.status)
	now := decode[RequestView](t, r)
	assert.Equal(t, asyncevent.StatusHeld, now.Status)
	assert.NotZero(t, now.ServedAt)
	assert.EqualValues(t, int64(holdFor/time.Second), *now.HoldSecondsLeft)

	// Its hold runs out: too late to confirm, before the sweep and after it.
	clock.Advance(holdFor + time.Second)
	s.refused("/requests/"+served+"/confirm", admin, served, asyncevent.StatusHeld, "", "ran out")
	r = s.do("GET", "/requests/"+served, s.owner(served), nil)
	assert.EqualValues(t, 0, *decode[RequestView](t, r).HoldSecondsLeft, "0 once it ran out")
	r = s.do("POST", "/admin/events/sale/holds/sweep?maxWrites=10", admin, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	assert.Equal(t, HoldSweepView{EventID: "sale", Passes: 1, Expired: 1, Served: 1}, decode[HoldSweepView](t, r))
	s.refused("/requests/"+served+"/confirm", admin, served, asyncevent.StatusRejected, asyncevent.ResultHoldExpired, "expired")

	assert.Equal(t, HoldStatsView{
		HoldForSeconds: int64(holdFor / time.Second), HoldForMs: holdFor.Milliseconds(),
		Held: 1, Confirmed: 1, Released: 2, Expired: 1, Waitlisted: 0,
		SeatsReturned: 2, SeatsServed: 2, SeatsWaiting: 0,
	}, s.stats())
	asynceventtest.CheckEvent(t, s.client, "sale", asynceventtest.CheckOptions{})
}

// TestHoldSweepRefusals: the sweep is an admin's, of an event with holds.
func TestHoldSweepRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createFirstCome("plain", 3)
	for path, want := range map[string]struct {
		tok    string
		status int
		code   string
	}{
		"/admin/events/plain/holds/sweep":              {e.admin(), http.StatusConflict, CodeNoHolds},
		"/admin/events/nope/holds/sweep":               {e.admin(), http.StatusNotFound, CodeEventNotFound},
		"/admin/events/plain/holds/sweep?maxWrites=-1": {e.admin(), http.StatusBadRequest, CodeInvalidParameter},
		"/admin/events/plain/holds/sweep?maxWrites=x":  {e.admin(), http.StatusBadRequest, CodeInvalidParameter},
		"/admin/events/a%23b/holds/sweep":              {e.admin(), http.StatusBadRequest, CodeInvalidID},
		"/admin/events/plain/holds/sweep?":             {token(t, "ann", RoleUser), http.StatusForbidden, CodeForbidden},
	} {
		r := e.do("POST", path, want.tok, nil)
		assert.Equal(t, want.status, r.status, "%s: %s", path, r.body)
		assert.Equal(t, want.code, r.problem(t).Code, path)
	}
}

// TestCreateEventWithHoldFor creates events with holds through the API and the
// admin page's form; a hold out of range is refused the usual way and stores
// nothing.
func TestCreateEventWithHoldFor(t *testing.T) {
	t.Parallel()
	u := newUIEnv(t)
	ctx := context.Background()
	admin := u.admin()

	r := u.do("POST", "/admin/events", admin, `{"eventId":"held","eventType":"FIRST_COME","capacityTotal":5,"holdForSeconds":900,"endsAt":"2099-01-01T00:00:00Z"}`)
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	assert.EqualValues(t, 900, decode[map[string]any](t, r)["holdForSeconds"])
	r = u.do("GET", "/admin/events/held", admin, nil)
	require.Equal(t, http.StatusOK, r.status)
	assert.EqualValues(t, 900, decode[EventView](t, r).HoldForSeconds)
	ev, err := u.client.GetEvent(ctx, "held")
	require.NoError(t, err)
	assert.Equal(t, 15*time.Minute, ev.HoldFor)
	r = u.do("GET", "/admin/events/held/stats", admin, nil)
	require.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, &HoldStatsView{HoldForSeconds: 900, HoldForMs: 900_000}, decode[StatsView](t, r).Holds)

	u.createFirstCome("plain", 5)
	r = u.do("GET", "/admin/events/plain", admin, nil)
	assert.NotContains(t, decode[map[string]any](t, r), "holdForSeconds", "no holds, no field")
	r = u.do("GET", "/admin/events/plain/stats", admin, nil)
	assert.NotContains(t, decode[map[string]any](t, r), "holds")

	for i, c := range []struct {
		body string
		code string
	}{
		{`{"eventType":"FIRST_COME","capacityTotal":5,"holdForSeconds":5}`, CodeInvalidEvent},
		{`{"eventType":"FIRST_COME","capacityTotal":5,"holdForSeconds":600}`, CodeInvalidEvent}, // holds need an end
		{`{"eventType":"FIRST_COME","capacityTotal":5,"holdForSeconds":86401}`, CodeInvalidEvent},
		{`{"eventType":"FIRST_COME","capacityTotal":5,"holdForSeconds":-60}`, CodeInvalidEvent},
		{`{"eventType":"FIRST_COME","capacityTotal":5,"holdForSeconds":9223372036854775807}`, CodeInvalidEvent},
		{`{"eventType":"FIRST_COME","capacityTotal":5,"holdForSeconds":"600"}`, CodeInvalidBody},
		{`{"eventType":"FIRST_COME","capacityTotal":5,"holdForSeconds":60.5}`, CodeInvalidBody},
		{`{"eventType":"LOTTERY","winnerCount":1,"lotteryCutoffAt":"2099-01-01T00:00:00Z","holdForSeconds":600}`, CodeInvalidEvent},
	} {
		id := fmt.Sprintf("bad-%d", i)
		r := u.do("POST", "/admin/events", admin, `{"eventId":"`+id+`",`+c.body[1:])
		assert.Equal(t, http.StatusBadRequest, r.status, "%s: %s", c.body, r.body)
		assert.Equal(t, c.code, r.problem(t).Code, c.body)
		_, err := u.client.GetEvent(ctx, id)
		assert.ErrorIs(t, err, asyncevent.ErrEventNotFound, "%s: nothing stored", c.body)
	}

	// The admin page's form.
	u.signIn()
	home := u.get("/admin/ui/")
	require.Equal(t, http.StatusOK, home.status)
	assert.Contains(t, string(home.body), `name="holdForSeconds" id="create-hold"`)
	tok := csrf(t, home)
	create := func(id, holdFor string) response {
		t.Helper()
		return u.post("/admin/ui/events", map[string][]string{"csrf": {tok}, "eventId": {id}, "eventType": {"FIRST_COME"},
			"capacityTotal": {"3"}, "holdForSeconds": {holdFor}, "endsAt": {"2099-01-01T00:00"}})
	}
	r = create("form-held", "120")
	require.Equal(t, http.StatusSeeOther, r.status, "body: %s", r.body)
	ev, err = u.client.GetEvent(ctx, "form-held")
	require.NoError(t, err)
	assert.Equal(t, 2*time.Minute, ev.HoldFor)
	page := u.get("/admin/ui/events/form-held")
	require.Equal(t, http.StatusOK, page.status, "body: %s", page.body)
	assert.Contains(t, string(page.body), `id="holds"`)
	assert.Contains(t, string(page.body), "HELD for 2m00s")
	for holdFor, detail := range map[string]string{"soon": "holdForSeconds must be a whole number", "5": "holdFor 5s"} {
		r = create("form-bad", holdFor)
		assert.Equal(t, http.StatusBadRequest, r.status, holdFor)
		assert.Contains(t, string(r.body), `id="create-error"`, holdFor)
		assert.Contains(t, string(r.body), detail, holdFor)
		assert.Contains(t, string(r.body), `value="`+holdFor+`"`, "what was typed is kept")
		_, err = u.client.GetEvent(ctx, "form-bad")
		assert.ErrorIs(t, err, asyncevent.ErrEventNotFound)
	}
	r = create("form-plain", "")
	require.Equal(t, http.StatusSeeOther, r.status, "body: %s", r.body)
	page = u.get("/admin/ui/events/form-plain")
	assert.NotContains(t, string(page.body), `id="holds"`, "no holds, no section")
	assert.NotContains(t, string(page.body), `<option value="HELD"`, "nor a filter for them")
}

// TestUIEventPageWithHolds reads a sale with holds on the admin pages: the counts
// of held, confirmed, released, expired and waitlisted requests and of the seats
// given back, the seats' bar, the outcome chart's colours, the request table
// filtered by HELD (with the time left) and WAITLISTED, and a HELD request's page.
func TestUIEventPageWithHolds(t *testing.T) {
	t.Parallel()
	clock := asynceventtest.NewClock(time.Now().Truncate(time.Second))
	u := newUIEnv(t, withClock(clock))
	s := newHoldsSale(t, u.env, clock, 3, 7)
	admin := u.admin()
	post := func(path, tok string) {
		t.Helper()
		r := u.do("POST", path, tok, nil)
		require.Equal(t, http.StatusOK, r.status, "%s: %s", path, r.body)
	}
	post("/requests/"+s.held[0]+"/confirm", admin)
	post("/requests/"+s.held[1]+"/release", s.owner(s.held[1]))
	clock.Advance(time.Minute)
	post("/admin/events/sale/holds/sweep", admin) // the released seat: waitlisted[0] holds it until +11m
	clock.Advance(holdFor - time.Minute + time.Second)
	post("/admin/events/sale/holds/sweep", admin) // held[2] ran out: waitlisted[1] holds its seat for 10m
	u.signIn()

	r := u.get("/admin/ui/events/sale")
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	body := string(r.body)
	for id, value := range map[string]string{
		"stat-held":           "2",
		"stat-confirmed":      "1",
		"stat-released":       "1",
		"stat-expired":        "1",
		"stat-waitlisted":     "2",
		"stat-seats-returned": "2",
		"stat-seats-served":   "2",
		"stat-seats-waiting":  "0",
		"stat-succeeded":      "1",
		"stat-rejected":       "2",
	} {
		assert.Regexp(t, `id="`+id+`">\s*<div class="label">[^<]*</div>\s*<div class="value">`+value+`</div>`, body, id)
	}
	assert.Contains(t, body, "HELD for 10m00s")
	seats := regexp.MustCompile(`(?s)<svg id="seat-chart".*?</svg>`).FindString(body)
	assert.Regexp(t, `data-seats="success" x="0.0" width="33.3"`, seats, "one seat confirmed of three")
	assert.Regexp(t, `data-seats="held" x="33.3" width="66.7"`, seats, "two held")
	assert.NotContains(t, seats, `data-seats="processing"`, "none being bound")
	chart := regexp.MustCompile(`(?s)<svg id="outcome-chart".*?</svg>`).FindString(body)
	for class, n := range map[string]int{"success": 1, "released": 1, "expired": 1, "held": 2, "waitlisted": 2, "rejected": 0} {
		assert.Equal(t, n, strings.Count(chart, `<rect class="o-`+class+`"`), "chart: %s", class)
	}
	assert.Contains(t, body, `<span class="swatch o-held"></span>held <b>2</b>`)
	assert.Contains(t, body, `<code>REJECTED_HOLD_EXPIRED</code>`)

	r = u.get("/admin/ui/events/sale?status=HELD")
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	body = string(r.body)
	assert.Equal(t, 2, strings.Count(body, `<tr data-status="HELD"`))
	assert.Equal(t, 2, strings.Count(body, `<tr data-status=`))
	assert.Contains(t, body, `<option value="HELD" selected>HELD (2)</option>`)
	assert.Contains(t, body, `<option value="WAITLISTED">WAITLISTED (2)</option>`)
	assert.Contains(t, body, `>59 s left</td>`, "waitlisted[0]: served a minute after the first holds")
	assert.Contains(t, body, `>10m00s left</td>`, "waitlisted[1]: served just now")
	assert.Equal(t, []string{s.waitlisted[0], s.waitlisted[1]}, rowIDs(body))

	r = u.get("/admin/ui/events/sale?status=WAITLISTED")
	require.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, []string{s.waitlisted[2], s.waitlisted[3]}, rowIDs(string(r.body)))
	assert.NotContains(t, string(r.body), " left</td>", "no time left on a waitlisted request")

	r = u.get("/admin/ui/requests/" + s.waitlisted[0])
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	body = string(r.body)
	assert.Contains(t, body, `<span class="badge st-held" id="request-status">HELD</span>`)
	assert.Contains(t, body, `<span class="muted" id="field-hold-left">59 s left</span>`)
	assert.Contains(t, body, "servedAt")
}
