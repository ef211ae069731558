package httpapi

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

// TestUIAddSeats works the event page's add-seats form: shown for a first-come
// event that takes clicks, with a choice of shard when it has several; applied
// (back to the page, which shows the new capacity and the audit entry) and refused
// (the page with the reason and the API's status, nothing written), behind the
// CSRF check.
func TestUIAddSeats(t *testing.T) {
	t.Parallel()
	clock := asynceventtest.NewClock(time.Now().Truncate(time.Second))
	u := newUIEnv(t, withClock(clock))
	t0 := clock.Now()
	ctx := t.Context()
	for _, cfg := range []asyncevent.EventSettings{
		{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 2, CapacityShards: 2, EndsAt: asyncevent.MillisOf(t0.Add(time.Hour))},
		{EventID: "lot", EventType: asyncevent.Lottery, WinnerCount: 1, LotteryCutoffAt: asyncevent.MillisOf(t0.Add(time.Hour))},
	} {
		_, err := u.client.CreateEvent(ctx, cfg)
		require.NoError(t, err)
	}
	u.signIn()

	page := u.get(eventURL("sale"))
	require.Equal(t, http.StatusOK, page.status, "body: %s", page.body)
	body := string(page.body)
	assert.Contains(t, body, `id="add-seats-form"`)
	assert.Contains(t, body, `<option value="1">shard #1</option>`, "a choice of the 2 shards")
	assert.Contains(t, body, `id="capacity-total">2</b>`)
	assert.NotContains(t, u.page("lot"), `id="add-seats-form"`, "a lottery has no seats")
	tok := csrf(t, page)

	u.forgedForm("/admin/ui/events/sale/capacity", tok, url.Values{"seats": {"1"}})

	const path = "/admin/ui/events/sale/capacity"
	for _, c := range []struct {
		form   url.Values
		status int
		reason string
	}{
		{url.Values{}, http.StatusBadRequest, "give seats"},
		{url.Values{"seats": {"many"}}, http.StatusBadRequest, `seats must be a whole number of seats, not "many"`},
		{url.Values{"seats": {"0"}}, http.StatusBadRequest, "0 seats"},
		{url.Values{"seats": {"1"}, "shard": {"x"}}, http.StatusBadRequest, "shard must be the number of a capacity shard"},
		{url.Values{"seats": {"1"}, "shard": {"2"}}, http.StatusBadRequest, "shard 2: event sale has 2 capacity shard(s), 0 to 1"},
	} {
		body := u.refusedForm(path, tok, c.form, c.status, "control-error", c.reason)
		assert.Contains(t, body, `id="add-seats-form"`, "%v: the form again", c.form)
	}
	u.refusedForm("/admin/ui/events/lot/capacity", tok, url.Values{"seats": {"1"}}, http.StatusConflict, "control-error", "only a FIRST_COME event has seats")

	u.appliedForm(path, tok, url.Values{"seats": {"3"}, "shard": {""}}, "sale")
	clock.Advance(time.Millisecond)
	u.appliedForm(path, tok, url.Values{"seats": {"1"}, "shard": {"1"}}, "sale")
	body = u.page("sale")
	assert.Contains(t, body, `id="capacity-total">6</b>`)
	assert.Contains(t, body, `<li class="shard " data-shard="1" data-remaining="3">`, "1 seat + 1 of the 3 spread + the one onto shard 1")
	assert.Equal(t, []auditRow{
		{action: string(asyncevent.ActionAddCapacity), when: fmtTime(asyncevent.MillisOf(t0)), actor: "admin-1", detail: "3 seats: 3 on shards, 0 on the pool"},
		{action: string(asyncevent.ActionAddCapacity), when: fmtTime(asyncevent.MillisOf(t0.Add(time.Millisecond))), actor: "admin-1", detail: "1 seat: 1 on shards, 0 on the pool"},
	}, auditRows(body))

	// Closed: no seats to add.
	u.appliedForm("/admin/ui/events/sale/close", tok, url.Values{"confirm": {"yes"}}, "sale")
	body = u.page("sale")
	assert.NotContains(t, body, `id="add-seats-form"`)
	assert.Contains(t, body, `id="controls-over"`)
	u.refusedForm(path, tok, url.Values{"seats": {"1"}}, http.StatusConflict, "control-error", "the event is closed")
}

// TestUICancel works the request page's cancel: shown for a SUCCEEDED first-come
// request only, with a box to tick; applied (to the event page, whose trail names
// the admin and whose table shows the request REJECTED; the next click wins the
// seat) and refused (the request page with the reason and the API's status,
// nothing written).
func TestUICancel(t *testing.T) {
	t.Parallel()
	clock := asynceventtest.NewClock(time.Now().Truncate(time.Second))
	u := newUIEnv(t, withClock(clock))
	u.createFirstCome("sale", 1)
	ids := u.served(clock, "sale", "u0", "u1")
	winner, loser := ids[0], ids[1]
	u.signIn()
	cancelPath := func(id string) string { return requestURL(id) + "/cancel" }

	page := u.get(requestURL(winner))
	require.Equal(t, http.StatusOK, page.status, "body: %s", page.body)
	assert.Contains(t, string(page.body), `id="cancel-confirm" required`)
	tok := csrf(t, page)
	assert.NotContains(t, string(u.get(requestURL(loser)).body), `id="cancel-form"`, "a REJECTED request holds no seat")

	u.forgedForm(cancelPath(winner), tok, url.Values{"confirm": {"yes"}})
	body := u.refusedForm(cancelPath(winner), tok, url.Values{}, http.StatusBadRequest, "cancel-error", "tick the box to confirm the cancel")
	assert.Contains(t, body, `id="request-id">`+winner+`</code>`, "on the request page")
	assert.Contains(t, body, `id="cancel-form"`, "the form again")
	body = u.refusedForm(cancelPath(loser), tok, url.Values{"confirm": {"yes"}}, http.StatusConflict, "cancel-error", "holds no seat")
	assert.NotContains(t, body, `id="cancel-form"`)

	u.appliedForm(cancelPath(winner), tok, url.Values{"confirm": {"yes"}}, "sale")
	body = u.page("sale")
	assert.Equal(t, []auditRow{{action: string(asyncevent.ActionCancel), when: fmtTime(asyncevent.MillisOf(clock.Now())), actor: "admin-1", detail: "request " + winner}}, auditRows(body))
	assert.Contains(t, body, `<tr data-status="REJECTED" data-request-id="`+winner+`">`)
	body = string(u.get(requestURL(winner)).body)
	assert.Contains(t, body, `id="request-resultcode">REJECTED_CANCELLED</code>`)
	assert.NotContains(t, body, `id="cancel-form"`)
	u.refusedForm(cancelPath(winner), tok, url.Values{"confirm": {"yes"}}, http.StatusConflict, "cancel-error", "holds no seat")

	next := u.served(clock, "sale", "u2")[0]
	assert.Equal(t, asyncevent.StatusSucceeded, u.adminRequest(next).Status, "the seat cancelled is won again")

	r := u.post(cancelPath("nope"), url.Values{"csrf": {tok}, "confirm": {"yes"}})
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.Contains(t, string(r.body), `id="error-detail"`)
}
