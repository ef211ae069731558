package httpapi

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

var eventRowOf = regexp.MustCompile(`<tr data-event-id="([^"]+)" data-state="([A-Z]+)">`)

// eventRows are the home page's listed events: ID → state, and the IDs in order.
func eventRows(body string) (ids []string, states map[string]string) {
	states = map[string]string{}
	for _, m := range eventRowOf.FindAllStringSubmatch(body, -1) {
		ids = append(ids, m[1])
		states[m[1]] = m[2]
	}
	return ids, states
}

// link returns the href of the element with id, unescaped, or "".
func link(body, id string) string {
	m := regexp.MustCompile(`href="([^"]+)" id="` + regexp.QuoteMeta(id) + `"`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return strings.ReplaceAll(m[1], "&amp;", "&")
}

// auditRow is one entry of the event page's audit trail.
type auditRow struct{ action, when, actor, detail string }

var (
	auditTable = regexp.MustCompile(`(?s)<table class="breakdown audit" id="audit-trail">.*?</table>`)
	auditEntry = regexp.MustCompile(`<tr data-action="([A-Z_]+)"><td class="when">([^<]+)</td><td class="actor">([^<]+)</td><td><code>[A-Z_]+</code></td><td>([^<]*)</td></tr>`)
)

// auditRows are the entries of the audit trail on the event page body, oldest
// first.
func auditRows(body string) []auditRow {
	var rows []auditRow
	for _, m := range auditEntry.FindAllStringSubmatch(auditTable.FindString(body), -1) {
		rows = append(rows, auditRow{action: m[1], when: m[2], actor: m[3], detail: html.UnescapeString(m[4])})
	}
	return rows
}

// page is the event page of eventID.
func (u *uiEnv) page(eventID string) string {
	u.t.Helper()
	r := u.get(eventURL(eventID))
	require.Equal(u.t, http.StatusOK, r.status, "body: %s", r.body)
	return string(r.body)
}

// refusedForm posts form with the CSRF token tok to path, wants status and the page
// whose alert (the element with id alert) says "Not done:" with reason, and checks
// that nothing was written; it returns the page.
func (u *uiEnv) refusedForm(path, tok string, form url.Values, status int, alert, reason string) string {
	u.t.Helper()
	before := u.tableState()
	form.Set("csrf", tok)
	r := u.post(path, form)
	require.Equal(u.t, status, r.status, "%s: %s", path, r.body)
	assert.Regexp(u.t, `id="`+alert+`" role="alert">Not done: [^<]*`+regexp.QuoteMeta(html.EscapeString(reason)), string(r.body), path)
	assert.Equal(u.t, before, u.tableState(), "%s: nothing written", path)
	return string(r.body)
}

// forgedForm posts form to path with a wrong CSRF token: 403, nothing written.
func (u *uiEnv) forgedForm(path, tok string, form url.Values) {
	u.t.Helper()
	before := u.tableState()
	form.Set("csrf", "x"+tok)
	r := u.post(path, form)
	assert.Equal(u.t, http.StatusForbidden, r.status, path)
	assert.Equal(u.t, before, u.tableState(), "%s: nothing written", path)
}

// appliedForm posts form with the CSRF token tok to path and wants to be sent back
// to the controls of eventID's page.
func (u *uiEnv) appliedForm(path, tok string, form url.Values, eventID string) {
	u.t.Helper()
	form.Set("csrf", tok)
	r := u.post(path, form)
	require.Equal(u.t, http.StatusSeeOther, r.status, "%s: %s", path, r.body)
	assert.Equal(u.t, eventURL(eventID)+"#controls", r.header.Get("Location"))
}

// TestUIEventList: the home page lists the events newest first, with their type,
// state, seats left and requests, a page at a time with the cursor.
func TestUIEventList(t *testing.T) {
	t.Parallel()
	clock := asynceventtest.NewClock(time.Now().Truncate(time.Second))
	u := newUIEnv(t, withClock(clock))
	u.signIn()
	r := u.get("/admin/ui/")
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	assert.Contains(t, string(r.body), `id="no-events"`)
	assert.NotContains(t, string(r.body), "Scan of the table", "the home page lists the events now")

	for i := range 5 {
		u.createFirstCome(fmt.Sprintf("sale-%d", i), int64(10+i))
		clock.Advance(time.Millisecond)
	}
	u.participate("sale-4", "ann")
	u.process()
	u.applied("/admin/events/sale-3/pause", u.admin(), nil)

	var ids []string
	states := map[string]string{}
	next := "/admin/ui/?limit=2"
	for pages := 0; next != ""; pages++ {
		require.Less(t, pages, 5)
		r = u.get(next)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		body := string(r.body)
		got, st := eventRows(body)
		assert.LessOrEqual(t, len(got), 2)
		ids = append(ids, got...)
		for k, v := range st {
			states[k] = v
		}
		if pages > 0 {
			assert.Equal(t, "/admin/ui/?limit=2", link(body, "events-first"), "back to the newest")
		}
		next = link(body, "events-next")
	}
	assert.Equal(t, []string{"sale-4", "sale-3", "sale-2", "sale-1", "sale-0"}, ids)
	assert.Equal(t, "PAUSED", states["sale-3"])
	assert.Equal(t, "OPEN", states["sale-4"])

	r = u.get("/admin/ui/")
	require.Equal(t, http.StatusOK, r.status)
	body := string(r.body)
	row := regexp.MustCompile(`(?s)<tr data-event-id="sale-4".*?</tr>`).FindString(body)
	assert.Contains(t, row, `href="/admin/ui/events/sale-4"`)
	assert.Contains(t, row, `<span class="tag">FIRST_COME</span>`)
	assert.Contains(t, row, `>13 / 14</td>`, "seats left of the capacity")
	assert.Contains(t, row, `<td class="num requests">1</td>`, "the event's requests")
	u.participate("sale-4", "bob")
	r = u.get("/admin/ui/")
	row = regexp.MustCompile(`(?s)<tr data-event-id="sale-4".*?</tr>`).FindString(string(r.body))
	assert.Contains(t, row, `<td class="num requests">1</td>`, "the count is kept for a while")
	clock.Advance(16 * time.Second)
	r = u.get("/admin/ui/")
	row = regexp.MustCompile(`(?s)<tr data-event-id="sale-4".*?</tr>`).FindString(string(r.body))
	assert.Contains(t, row, `<td class="num requests">2</td>`, "and counted again once it is older than 15 s")
	assert.Empty(t, link(body, "events-next"), "5 events: one page of 20")
	assert.Contains(t, body, `id="create-form"`, "the create form is still there")

	r = u.get("/admin/ui/?cursor=garbage")
	assert.Equal(t, http.StatusBadRequest, r.status)
	assert.Contains(t, string(r.body), `id="error-detail"`)
	r = u.get("/admin/ui/?limit=500")
	assert.Equal(t, http.StatusBadRequest, r.status)
}

// TestUIControls works the event page's control forms: each one applied (back to
// the page, which shows the new state and the audit trail) and refused (the page
// with the reason and the API's status, nothing written), behind the CSRF check.
func TestUIControls(t *testing.T) {
	t.Parallel()
	clock := asynceventtest.NewClock(time.Now().Truncate(time.Second))
	u := newUIEnv(t, withClock(clock))
	t0 := clock.Now()
	ctx := t.Context()
	_, err := u.client.CreateEvent(ctx, asyncevent.EventSettings{EventID: "sale", Name: "Sale", EventType: asyncevent.FirstCome,
		CapacityTotal: 5, EndsAt: asyncevent.MillisOf(t0.Add(time.Hour))})
	require.NoError(t, err)
	u.signIn()

	page := u.get("/admin/ui/events/sale")
	require.Equal(t, http.StatusOK, page.status, "body: %s", page.body)
	body := string(page.body)
	assert.Contains(t, body, `id="event-state">OPEN</span>`)
	assert.Contains(t, body, `id="pause-form"`)
	assert.NotContains(t, body, `id="resume-form"`)
	assert.Contains(t, body, `id="close-confirm" required`)
	assert.Contains(t, body, `value="`+t0.Add(time.Hour).UTC().Format(formTimeLayout)+`"`, "the end's form shows the end")
	assert.NotContains(t, body, `id="extend-cutoff-form"`, "a first-come event has no cutoff")
	assert.Contains(t, body, `id="no-audit"`)
	tok := csrf(t, page)

	u.forgedForm("/admin/ui/events/sale/pause", tok, url.Values{})

	// refused posts a form and wants the event page with status and reason, and
	// nothing written.
	refused := func(path string, form url.Values, status int, reason string) {
		t.Helper()
		u.refusedForm(path, tok, form, status, "control-error", reason) // beside the event page's controls
	}
	applied := func(path string, form url.Values) string {
		t.Helper()
		u.appliedForm(path, tok, form, "sale")
		clock.Advance(time.Millisecond)
		return u.page("sale")
	}

	body = applied("/admin/ui/events/sale/pause", url.Values{})
	assert.Contains(t, body, `id="event-state">PAUSED</span>`)
	assert.Contains(t, body, `id="resume-form"`)
	assert.NotContains(t, body, `id="pause-form"`)
	refused("/admin/ui/events/sale/pause", url.Values{}, http.StatusConflict, "the event is paused already")
	u.refusedClick("sale", "ann", CodeEventPaused)

	later := t0.Add(2 * time.Hour).UTC()
	body = applied("/admin/ui/events/sale/extend", url.Values{"endsAt": {later.Format(formTimeLayout)}})
	assert.Contains(t, body, `value="`+later.Format(formTimeLayout)+`"`)
	ev, err := u.client.GetEvent(ctx, "sale")
	require.NoError(t, err)
	assert.Equal(t, asyncevent.MillisOf(later), ev.EndsAt, "a datetime-local value is UTC")
	refused("/admin/ui/events/sale/extend", url.Values{"endsAt": {t0.Add(90 * time.Minute).UTC().Format(formTimeLayout)}}, http.StatusConflict, "not before the new one")
	refused("/admin/ui/events/sale/extend", url.Values{"lotteryCutoffAt": {later.Format(time.RFC3339)}}, http.StatusConflict, "only a LOTTERY has a cutoff")
	refused("/admin/ui/events/sale/extend", url.Values{"endsAt": {"next tuesday"}}, http.StatusBadRequest, "endsAt must be a time")
	refused("/admin/ui/events/sale/extend", url.Values{}, http.StatusBadRequest, "exactly one")

	body = applied("/admin/ui/events/sale/resume", url.Values{})
	assert.Contains(t, body, `id="event-state">OPEN</span>`)
	refused("/admin/ui/events/sale/resume", url.Values{}, http.StatusConflict, "the event is not paused")

	refused("/admin/ui/events/sale/close", url.Values{}, http.StatusBadRequest, "tick the box")
	body = applied("/admin/ui/events/sale/close", url.Values{"confirm": {"yes"}})
	assert.Contains(t, body, `id="event-state">CLOSED</span>`)
	assert.Contains(t, body, `id="event-closed-at"`)
	assert.Contains(t, body, `id="controls-over"`, "nothing left to control")
	assert.NotContains(t, body, `id="close-form"`)
	refused("/admin/ui/events/sale/close", url.Values{"confirm": {"yes"}}, http.StatusConflict, "closed already")

	ms := func(d time.Duration) string { return fmtTime(asyncevent.MillisOf(t0.Add(d))) }
	assert.Equal(t, []auditRow{
		{string(asyncevent.ActionPause), ms(0), "admin-1", ""},
		{string(asyncevent.ActionExtendEnd), ms(time.Millisecond), "admin-1", "to " + later.Format(time.RFC3339)},
		{string(asyncevent.ActionResume), ms(2 * time.Millisecond), "admin-1", ""},
		{string(asyncevent.ActionClose), ms(3 * time.Millisecond), "admin-1", ""},
	}, auditRows(body), "who did what (the session's admin), when, oldest first")

	r := u.post("/admin/ui/events/nope/pause", url.Values{"csrf": {tok}})
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.Contains(t, string(r.body), `id="error-detail"`)
}

// TestUILotteryCutoffForm: a lottery's page has the cutoff's form, and it moves
// the cutoff.
func TestUILotteryCutoffForm(t *testing.T) {
	t.Parallel()
	clock := asynceventtest.NewClock(time.Now().Truncate(time.Second))
	u := newUIEnv(t, withClock(clock))
	t0 := clock.Now()
	_, err := u.client.CreateEvent(t.Context(), asyncevent.EventSettings{EventID: "lot", EventType: asyncevent.Lottery, WinnerCount: 1,
		LotteryCutoffAt: asyncevent.MillisOf(t0.Add(time.Hour))})
	require.NoError(t, err)
	u.signIn()
	page := u.get("/admin/ui/events/lot")
	require.Equal(t, http.StatusOK, page.status, "body: %s", page.body)
	assert.Contains(t, string(page.body), `id="extend-cutoff-form"`)
	assert.Contains(t, string(page.body), `id="no-end"`, "no end to move")

	later := t0.Add(2 * time.Hour).UTC()
	r := u.post("/admin/ui/events/lot/extend", url.Values{"csrf": {csrf(t, page)}, "lotteryCutoffAt": {later.Format(formTimeLayout)}})
	require.Equal(t, http.StatusSeeOther, r.status, "body: %s", r.body)
	ev, err := u.client.GetEvent(t.Context(), "lot")
	require.NoError(t, err)
	assert.Equal(t, asyncevent.MillisOf(later), ev.LotteryCutoffAt)
}
