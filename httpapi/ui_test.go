package httpapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

// uiEnv is an env with the admin UI mounted and a browser-like client: a cookie
// jar, and redirects left to the test.
type uiEnv struct {
	*env
	hc *http.Client
}

func withStatusLog(o *asyncevent.Options, _ *ServerOptions) { o.StatusLog = true }

func newUIEnv(t *testing.T, opts ...envOption) *uiEnv {
	t.Helper()
	e := newEnv(t, append([]envOption{withStatusLog}, opts...)...)
	require.NoError(t, e.srv.MountAdminUI(AdminUIOptions{}))
	return &uiEnv{env: e, hc: newBrowserClient(t)}
}

func newBrowserClient(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (u *uiEnv) get(path string) response {
	u.t.Helper()
	return u.getWith(u.hc, path)
}

func (u *uiEnv) getWith(hc *http.Client, path string) response {
	u.t.Helper()
	resp, err := hc.Get(u.ts.URL + path)
	require.NoError(u.t, err)
	return readResponse(u.t, resp)
}

func (u *uiEnv) post(path string, form url.Values) response {
	u.t.Helper()
	return u.postWith(u.hc, path, form)
}

func (u *uiEnv) postWith(hc *http.Client, path string, form url.Values) response {
	u.t.Helper()
	resp, err := hc.PostForm(u.ts.URL+path, form)
	require.NoError(u.t, err)
	return readResponse(u.t, resp)
}

func readResponse(t testing.TB, resp *http.Response) response {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// cookies are the cookies a response sets.
func (r response) cookies() map[string]*http.Cookie {
	m := map[string]*http.Cookie{}
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		m[c.Name] = c
	}
	return m
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf returns the CSRF token of the page's first form.
func csrf(t testing.TB, r response) string {
	t.Helper()
	m := csrfInput.FindSubmatch(r.body)
	require.NotNil(t, m, "no csrf field in: %s", r.body)
	return string(m[1])
}

// login signs hc in with tok through the login form and returns the POST's answer.
func (u *uiEnv) loginWith(hc *http.Client, tok, next string) response {
	u.t.Helper()
	path := "/admin/ui/login"
	if next != "" {
		path += "?next=" + url.QueryEscape(next)
	}
	form := u.getWith(hc, path)
	require.Equal(u.t, http.StatusOK, form.status, "body: %s", form.body)
	return u.postWith(hc, "/admin/ui/login", url.Values{"csrf": {csrf(u.t, form)}, "token": {tok}, "next": {next}})
}

// signIn signs the env's client in as admin-1.
func (u *uiEnv) signIn() {
	u.t.Helper()
	r := u.loginWith(u.hc, u.admin(), "")
	require.Equal(u.t, http.StatusSeeOther, r.status, "body: %s", r.body)
}

// processN processes up to n messages of the queue.
func (u *uiEnv) processN(n int) {
	u.t.Helper()
	ctx := context.Background()
	p := asyncevent.NewProcessor(u.client, asyncevent.ProcessOptions{})
	for n > 0 {
		ds, err := u.queue.Receive(ctx, min(10, n), 0, time.Minute)
		require.NoError(u.t, err)
		if len(ds) == 0 {
			return
		}
		require.Empty(u.t, asynceventtest.Process(ctx, p, ds))
		var receipts []string
		for _, d := range ds {
			receipts = append(receipts, d.Receipt)
		}
		require.NoError(u.t, u.queue.Delete(ctx, receipts...))
		n -= len(ds)
	}
}

func TestUILoginFlow(t *testing.T) {
	t.Parallel()
	u := newUIEnv(t)

	r := u.get("/admin/ui/events/spring-sale?order=desc")
	assert.Equal(t, http.StatusSeeOther, r.status, "signed out: to the login form")
	assert.Equal(t, "/admin/ui/login?next="+url.QueryEscape("/admin/ui/events/spring-sale?order=desc"), r.header.Get("Location"))
	r = u.get("/admin/ui/")
	assert.Equal(t, http.StatusSeeOther, r.status)
	assert.Equal(t, "/admin/ui/login", r.header.Get("Location"))

	form := u.get("/admin/ui/login?next=" + url.QueryEscape("/admin/ui/events/spring-sale?order=desc"))
	require.Equal(t, http.StatusOK, form.status)
	assert.Equal(t, "text/html; charset=utf-8", form.header.Get("Content-Type"))
	assert.Contains(t, string(form.body), `id="login-form"`)
	lc := form.cookies()[loginCookieName]
	require.NotNil(t, lc, "the login form sets the cookie its CSRF token is bound to")
	assert.True(t, lc.HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, lc.SameSite)
	assert.Equal(t, "/admin/ui/", lc.Path)

	exp := time.Now().Add(30 * time.Minute)
	tok, err := MintToken(testSecret, "admin-1", RoleAdmin, exp)
	require.NoError(t, err)
	r = u.post("/admin/ui/login", url.Values{"csrf": {csrf(t, form)}, "token": {tok}, "next": {"/admin/ui/events/spring-sale?order=desc"}})
	require.Equal(t, http.StatusSeeOther, r.status, "body: %s", r.body)
	assert.Equal(t, "/admin/ui/events/spring-sale?order=desc", r.header.Get("Location"), "back where the login was asked for")
	sc := r.cookies()[sessionCookieName]
	require.NotNil(t, sc)
	assert.True(t, sc.HttpOnly, "scripts never see the session")
	assert.Equal(t, http.SameSiteStrictMode, sc.SameSite)
	assert.False(t, sc.Secure, "plain HTTP here: a Secure cookie would never come back")
	assert.Equal(t, "/admin/ui/", sc.Path, "the API never gets the cookie")
	assert.WithinDuration(t, exp, sc.Expires, 2*time.Second, "the session ends with its token")
	assert.NotContains(t, sc.Value, tok, "the token is not kept")
	assert.Equal(t, -1, r.cookies()[loginCookieName].MaxAge, "the login cookie is spent")

	r = u.get("/admin/ui/")
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	assert.Contains(t, string(r.body), `<strong id="signed-in-as">admin-1</strong>`)
	r = u.get("/admin/ui/login")
	assert.Equal(t, http.StatusSeeOther, r.status, "signed in: the login form goes on")

	r = u.get("/admin/ui/events?eventId=spring-sale")
	assert.Equal(t, http.StatusSeeOther, r.status)
	assert.Equal(t, "/admin/ui/events/spring-sale", r.header.Get("Location"))

	home := u.get("/admin/ui/")
	r = u.post("/admin/ui/logout", url.Values{"csrf": {csrf(t, home)}})
	require.Equal(t, http.StatusSeeOther, r.status, "body: %s", r.body)
	assert.Equal(t, "/admin/ui/login", r.header.Get("Location"))
	assert.Equal(t, -1, r.cookies()[sessionCookieName].MaxAge, "logout deletes the session cookie")
	r = u.get("/admin/ui/")
	assert.Equal(t, http.StatusSeeOther, r.status, "signed out again")

	logs := u.logs.accessLogs(t)
	var patterns []string
	for _, l := range logs {
		patterns = append(patterns, fmt.Sprint(l["pattern"]))
		if l["pattern"] == "GET /admin/ui/events" {
			assert.Equal(t, "admin-1", l["userId"], "the access log names the session's admin")
		}
	}
	assert.Contains(t, patterns, "POST /admin/ui/login")
	assert.NotContains(t, u.logs.String(), tok, "tokens are never logged")
}

func TestUISessionLength(t *testing.T) {
	t.Parallel()
	u := newUIEnv(t)
	r := u.loginWith(u.hc, token(t, "admin-1", RoleAdmin), "")
	require.Equal(t, http.StatusSeeOther, r.status)
	sc := r.cookies()[sessionCookieName]
	assert.WithinDuration(t, time.Now().Add(time.Hour), sc.Expires, 2*time.Second, "an hour's token: an hour's session")

	long, err := MintToken(testSecret, "admin-1", RoleAdmin, time.Now().Add(30*24*time.Hour))
	require.NoError(t, err)
	r = u.loginWith(newBrowserClient(t), long, "")
	require.Equal(t, http.StatusSeeOther, r.status)
	assert.WithinDuration(t, time.Now().Add(DefaultSessionTTL), r.cookies()[sessionCookieName].Expires, 2*time.Second, "at most SessionTTL")
}

func TestUISecureCookieOverTLS(t *testing.T) {
	t.Parallel()
	u := newUIEnv(t)
	h := u.srv.Handler()
	for _, viaProxy := range []bool{false, true} {
		target := "https://admin.example/admin/ui/login"
		if viaProxy {
			target = "http://admin.example/admin/ui/login"
		}
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", target, nil)
		if viaProxy {
			req.Header.Set("X-Forwarded-Proto", "https")
		}
		h.ServeHTTP(rec, req)
		form := response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
		require.Equal(t, http.StatusOK, form.status)
		lc := form.cookies()[loginCookieName]
		require.NotNil(t, lc)
		assert.True(t, lc.Secure)

		body := url.Values{"csrf": {csrf(t, form)}, "token": {u.admin()}}.Encode()
		req = httptest.NewRequest("POST", target, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if viaProxy {
			req.Header.Set("X-Forwarded-Proto", "https")
		}
		req.AddCookie(lc)
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		r := response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
		require.Equal(t, http.StatusSeeOther, r.status, "body: %s", r.body)
		sc := r.cookies()[sessionCookieName]
		require.NotNil(t, sc)
		assert.True(t, sc.Secure, "over TLS the session cookie is Secure (proxy: %v)", viaProxy)
		assert.True(t, sc.HttpOnly)
		assert.Equal(t, http.SameSiteStrictMode, sc.SameSite)
	}
}

func TestUILoginRefusals(t *testing.T) {
	t.Parallel()
	u := newUIEnv(t)
	expired, err := MintToken(testSecret, "admin-1", RoleAdmin, time.Now().Add(-time.Hour))
	require.NoError(t, err)
	forged, err := MintToken([]byte("another-secret-0123456789abcdefghij"), "admin-1", RoleAdmin, time.Now().Add(time.Hour))
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		token  string
		status int
		text   string
	}{
		{"user token", token(t, "ann", RoleUser), http.StatusForbidden, "not an admin"},
		{"expired", expired, http.StatusUnauthorized, "not valid"},
		{"forged", forged, http.StatusUnauthorized, "not valid"},
		{"garbage", "not-a-jwt", http.StatusUnauthorized, "not valid"},
		{"empty", "", http.StatusUnauthorized, "Paste an admin token"},
	} {
		hc := newBrowserClient(t)
		r := u.loginWith(hc, tc.token, "")
		assert.Equal(t, tc.status, r.status, tc.name)
		assert.Contains(t, string(r.body), `id="login-error"`, tc.name)
		assert.Contains(t, string(r.body), tc.text, tc.name)
		assert.NotContains(t, r.cookies(), sessionCookieName, tc.name)
		r = u.getWith(hc, "/admin/ui/")
		assert.Equal(t, http.StatusSeeOther, r.status, "%s: still signed out", tc.name)
	}

	// A bearer token on a UI page is not a session.
	r := doURL(t, newBrowserClient(t), u.ts.URL, "GET", "/admin/ui/", u.admin(), nil)
	assert.Equal(t, http.StatusSeeOther, r.status)
}

func TestUICSRF(t *testing.T) {
	t.Parallel()
	var offset atomicDuration
	u := newUIEnv(t, func(o *asyncevent.Options, _ *ServerOptions) { o.Clock = offset.clock() })
	ctx := context.Background()
	_, err := u.client.CreateEvent(ctx, asyncevent.EventSettings{EventID: "lot", EventType: asyncevent.Lottery, WinnerCount: 1,
		LotteryCutoffAt: asyncevent.MillisOf(time.Now().Add(time.Hour))})
	require.NoError(t, err)
	u.participate("lot", "ann")
	u.processN(10)
	offset.add(time.Hour + asyncevent.DefaultDrawSettleWindow + time.Second)

	// The login form: no login cookie, or a wrong token.
	r := u.postWith(newBrowserClient(t), "/admin/ui/login", url.Values{"token": {u.admin()}})
	assert.Equal(t, http.StatusForbidden, r.status, "a login POST without the login form's cookie")
	hc := newBrowserClient(t)
	form := u.getWith(hc, "/admin/ui/login")
	r = u.postWith(hc, "/admin/ui/login", url.Values{"csrf": {"x" + csrf(t, form)}, "token": {u.admin()}})
	assert.Equal(t, http.StatusForbidden, r.status, "a login POST with a wrong CSRF token")
	assert.NotContains(t, r.cookies(), sessionCookieName)

	u.signIn()
	page := u.get("/admin/ui/events/lot")
	require.Equal(t, http.StatusOK, page.status, "body: %s", page.body)
	good := csrf(t, page)

	other := newBrowserClient(t)
	require.Equal(t, http.StatusSeeOther, u.loginWith(other, u.admin(), "").status)
	otherToken := csrf(t, u.getWith(other, "/admin/ui/"))
	require.NotEqual(t, good, otherToken, "each session has its own CSRF token")

	for name, form := range map[string]url.Values{
		"no token":                {},
		"empty token":             {"csrf": {""}},
		"wrong token":             {"csrf": {strings.Repeat("A", len(good))}},
		"another session's token": {"csrf": {otherToken}},
	} {
		r := u.post("/admin/ui/events/lot/draw", form)
		assert.Equal(t, http.StatusForbidden, r.status, name)
		assert.Contains(t, string(r.body), "CSRF token", name)
		r = u.post("/admin/ui/logout", form)
		assert.Equal(t, http.StatusForbidden, r.status, name)
	}
	// The token must come in the form body, not in the URL.
	r = u.post("/admin/ui/events/lot/draw?csrf="+url.QueryEscape(good), url.Values{})
	assert.Equal(t, http.StatusForbidden, r.status, "a token in the query string")

	d, err := u.client.GetDraw(ctx, "lot")
	require.NoError(t, err)
	assert.Equal(t, asyncevent.PhaseCollecting, d.Phase, "no refused POST drew")
	assert.Equal(t, http.StatusOK, u.get("/admin/ui/").status, "no refused POST signed out")

	r = u.post("/admin/ui/events/lot/draw", url.Values{"csrf": {good}})
	require.Equal(t, http.StatusSeeOther, r.status, "body: %s", r.body)
	assert.Equal(t, "/admin/ui/events/lot#draw", r.header.Get("Location"))
	d, err = u.client.GetDraw(ctx, "lot")
	require.NoError(t, err)
	assert.Equal(t, asyncevent.PhaseAnnounced, d.Phase)

	// Signed out, a POST is 401 whatever it carries.
	r = u.postWith(newBrowserClient(t), "/admin/ui/events/lot/draw", url.Values{"csrf": {good}})
	assert.Equal(t, http.StatusUnauthorized, r.status)
}

func TestUIForgedSessions(t *testing.T) {
	t.Parallel()
	u := newUIEnv(t)
	keys := newSessionKeys(testSecret)
	exp := time.Now().Add(time.Hour).Unix()
	good := keys.seal(session{UserID: "admin-1", Role: RoleAdmin, Expiry: exp, Nonce: "n"})
	payload, sig, _ := strings.Cut(good, ".")
	tampered := b64.EncodeToString([]byte(`{"sub":"mallory","role":"admin","exp":`+fmt.Sprint(exp)+`,"n":"n"}`)) + "." + sig

	for name, value := range map[string]string{
		"tampered payload":  tampered,
		"no signature":      payload,
		"another secret":    newSessionKeys([]byte("another-secret-0123456789abcdefghij")).seal(session{UserID: "admin-1", Role: RoleAdmin, Expiry: exp}),
		"expired":           keys.seal(session{UserID: "admin-1", Role: RoleAdmin, Expiry: time.Now().Add(-time.Second).Unix()}),
		"user role":         keys.seal(session{UserID: "ann", Role: RoleUser, Expiry: exp}),
		"invalid user ID":   keys.seal(session{UserID: "a#b", Role: RoleAdmin, Expiry: exp}),
		"a bearer JWT":      u.admin(),
		"garbage":           "!!!.???",
		"signature of CSRF": payload + "." + keys.csrfFor(payload),
	} {
		req, err := http.NewRequest("GET", u.ts.URL+"/admin/ui/", nil)
		require.NoError(t, err)
		req.AddCookie(&http.Cookie{Name: sessionCookieName, Value: value})
		resp, err := u.hc.Do(req)
		require.NoError(t, err)
		r := readResponse(t, resp)
		assert.Equal(t, http.StatusSeeOther, r.status, name)
	}
	req, err := http.NewRequest("GET", u.ts.URL+"/admin/ui/", nil)
	require.NoError(t, err)
	req.AddCookie(&http.Cookie{Name: sessionCookieName, Value: good})
	resp, err := u.hc.Do(req)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, readResponse(t, resp).status, "the untouched cookie works")
}

func TestUIEventPage(t *testing.T) {
	t.Parallel()
	u := newUIEnv(t)
	u.createFirstCome("sale", 5)
	for i := range 12 {
		u.participate("sale", fmt.Sprintf("user-%02d", i))
	}
	u.processN(8) // 5 SUCCEEDED, 3 REJECTED, 4 QUEUED
	u.signIn()

	r := u.get("/admin/ui/events/sale")
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	body := string(r.body)
	for id, value := range map[string]string{
		"stat-requests":  "12",
		"stat-succeeded": "5",
		"stat-rejected":  "3",
		"stat-inflight":  "4",
		"stat-failed":    "0",
		"stat-capacity":  "0 / 5",
	} {
		assert.Regexp(t, `id="`+id+`">\s*<div class="label">[^<]*</div>\s*<div class="value">`+regexp.QuoteMeta(value)+`</div>`, body, id)
	}
	assert.Contains(t, body, `id="stat-queue-wait"`)
	assert.Contains(t, body, `id="stat-inversions"`)
	// Beside the losers queued before a winner, the winners queued after a loser:
	// the same pairs, so zero together.
	value := func(id string) string {
		m := regexp.MustCompile(`id="` + id + `">\s*<div class="label">[^<]*</div>\s*<div class="value">(\d+)</div>`).FindStringSubmatch(body)
		require.Len(t, m, 2, id)
		return m[1]
	}
	assert.Contains(t, body, `<div class="label">Late winners</div>`)
	assert.Equal(t, value("stat-inversions") == "0", value("stat-late-winners") == "0")
	chart := regexp.MustCompile(`(?s)<svg id="outcome-chart".*?</svg>`).FindString(body)
	assert.Equal(t, 12, strings.Count(chart, `<g class="col">`), "one chart column per request")
	assert.Equal(t, 5, strings.Count(chart, `<rect class="o-success"`), "five green columns")
	assert.Equal(t, 3, strings.Count(chart, `<rect class="o-rejected"`))
	assert.Equal(t, 4, strings.Count(chart, `<rect class="o-waiting"`))
	assert.Contains(t, body, `>capacity 5</text>`)
	assert.Equal(t, 12, strings.Count(body, "<tr data-status="))
	assert.Contains(t, body, `id="last-page"`)

	ids := rowIDs(body)
	r = u.get("/admin/ui/events/sale?order=desc")
	require.Equal(t, http.StatusOK, r.status)
	desc := rowIDs(string(r.body))
	require.Len(t, desc, 12)
	for i := range ids {
		assert.Equal(t, ids[i], desc[len(desc)-1-i], "newest first is the reverse")
	}

	// Paging: 5 a page, forward with the cursor.
	var paged []string
	next := "/admin/ui/events/sale?limit=5"
	for pages := 0; next != ""; pages++ {
		require.Less(t, pages, 5)
		r = u.get(next)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		paged = append(paged, rowIDs(string(r.body))...)
		next = ""
		if m := regexp.MustCompile(`href="([^"]+)" id="next-page"`).FindSubmatch(r.body); m != nil {
			next = strings.ReplaceAll(string(m[1]), "&amp;", "&")
		}
	}
	assert.Equal(t, ids, paged)
	assert.Contains(t, string(r.body), "#11–#12", "the last page knows its positions")

	r = u.get("/admin/ui/events/sale?status=QUEUED")
	require.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, 4, strings.Count(string(r.body), `<tr data-status="QUEUED"`))
	assert.Equal(t, 4, strings.Count(string(r.body), `<tr data-status=`))
	assert.Contains(t, string(r.body), `<option value="QUEUED" selected>QUEUED (4)</option>`)

	for path, status := range map[string]int{
		"/admin/ui/events/nope":                http.StatusNotFound,
		"/admin/ui/events/sale?status=WINNING": http.StatusBadRequest,
		"/admin/ui/events/sale?order=random":   http.StatusBadRequest,
		"/admin/ui/events/sale?cursor=garbage": http.StatusBadRequest,
		"/admin/ui/events/sale?limit=x":        http.StatusBadRequest,
		"/admin/ui/events/a%23b":               http.StatusBadRequest,
		"/admin/ui/events?eventId=":            http.StatusBadRequest,
		"/admin/ui/nothing-here":               http.StatusNotFound,
	} {
		r = u.get(path)
		assert.Equal(t, status, r.status, path)
		assert.Equal(t, "text/html; charset=utf-8", r.header.Get("Content-Type"), path)
		assert.Contains(t, string(r.body), `id="error-detail"`, path)
	}
}

var rowID = regexp.MustCompile(`<tr data-status="[A-Z_]+" data-request-id="([^"]+)"`)

func rowIDs(body string) []string {
	var ids []string
	for _, m := range rowID.FindAllStringSubmatch(body, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

func TestUIRequestPage(t *testing.T) {
	t.Parallel()
	u := newUIEnv(t)
	u.createFirstCome("sale", 1)
	_, won := u.participate("sale", "ann")
	u.processN(1) // ann's first: the one seat is hers
	_, lost := u.participate("sale", "bob")
	u.processN(1)
	u.signIn()

	r := u.get("/admin/ui/requests/" + won.RequestID)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	body := string(r.body)
	assert.Contains(t, body, `<span class="badge st-succeeded" id="request-status">SUCCEEDED</span>`)
	assert.Contains(t, body, `<dd id="field-user">ann</dd>`)
	assert.Contains(t, body, "IDEMP#sale#ann")
	for _, step := range []string{"requested", "queued", "started", "finished"} {
		assert.Contains(t, body, `<li class="step done" data-step="`+step+`">`, step)
	}
	assert.Equal(t, 3, strings.Count(body, `<li class="gap known">`), "ingest, queue wait, processing")
	for _, to := range []string{"RECEIVED", "QUEUED", "SUCCEEDED"} { // a home claim: no PROCESSING
		assert.Contains(t, body, `<li data-to="`+to+`">`, "status log: %s", to)
	}

	r = u.get("/admin/ui/requests/" + lost.RequestID)
	require.Equal(t, http.StatusOK, r.status)
	assert.Contains(t, string(r.body), "REJECTED_CAPACITY")

	r = u.get("/admin/ui/requests?requestId=" + won.RequestID)
	assert.Equal(t, http.StatusSeeOther, r.status)
	assert.Equal(t, "/admin/ui/requests/"+won.RequestID, r.header.Get("Location"))
	r = u.get("/admin/ui/requests/no-such-request")
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.Contains(t, string(r.body), "request no-such-request not found")
}

func TestUIDrawRefusedAndDone(t *testing.T) {
	t.Parallel()
	var offset atomicDuration
	u := newUIEnv(t, func(o *asyncevent.Options, _ *ServerOptions) { o.Clock = offset.clock() })
	ctx := context.Background()
	cutoff := asyncevent.MillisOf(time.Now().Add(time.Hour))
	_, err := u.client.CreateEvent(ctx, asyncevent.EventSettings{EventID: "lot", Name: "Spring lottery", EventType: asyncevent.Lottery,
		WinnerCount: 2, LotteryCutoffAt: cutoff})
	require.NoError(t, err)
	for i := range 6 {
		u.participate("lot", fmt.Sprintf("user-%d", i))
	}
	u.processN(10)
	u.signIn()

	page := u.get("/admin/ui/events/lot")
	require.Equal(t, http.StatusOK, page.status)
	opens := time.UnixMilli(int64(cutoff)).Add(asyncevent.DefaultDrawSettleWindow).UTC().Format(timestampLayout)
	assert.Contains(t, string(page.body), `id="draw-button" disabled>Run the draw</button>`, "disabled before the cutoff")
	assert.Contains(t, string(page.body), "available from "+opens)
	assert.Contains(t, string(page.body), "revealed by the draw")
	assert.Contains(t, string(page.body), `id="draw-seed-mode"><strong>UNSEALED</strong>`, "the development default says so")
	assert.NotContains(t, string(page.body), `id="verification"`)

	// Posted anyway (a page left open): the refusal names the time in RFC 3339, in
	// the API's words.
	r := u.post("/admin/ui/events/lot/draw", url.Values{"csrf": {csrf(t, page)}})
	assert.Equal(t, http.StatusConflict, r.status, "before the cutoff")
	assert.Contains(t, string(r.body), `id="draw-error"`)
	assert.Contains(t, string(r.body), "can be drawn from "+opens)
	assert.NotContains(t, string(r.body), "asyncevent:")
	assert.NotContains(t, string(r.body), "+0000 UTC")

	offset.add(time.Hour + asyncevent.DefaultDrawSettleWindow + time.Second)
	r = u.post("/admin/ui/events/lot/draw", url.Values{"csrf": {csrf(t, page)}})
	require.Equal(t, http.StatusSeeOther, r.status, "body: %s", r.body)
	r = u.get("/admin/ui/events/lot")
	require.Equal(t, http.StatusOK, r.status)
	body := string(r.body)
	assert.Contains(t, body, `id="verification" data-ok="true"`)
	assert.Contains(t, body, `<dd id="draw-phase">ANNOUNCED</dd>`)
	assert.Contains(t, body, `<dd id="draw-entries">6</dd>`)
	assert.Contains(t, body, `id="draw-seed"`)
	assert.NotContains(t, body, `id="draw-button"`, "nothing left to draw")
	assert.Regexp(t, `id="stat-succeeded">\s*<div class="label">Succeeded</div>\s*<div class="value">2</div>`, body)

	u.createFirstCome("sale", 1)
	r = u.post("/admin/ui/events/sale/draw", url.Values{"csrf": {csrf(t, page)}})
	assert.Equal(t, http.StatusConflict, r.status, "a first-come event has no draw")
}

// TestUIEscapesUserData puts markup into every field a user or an admin can
// choose (event ID and name, user IDs) and checks that each page shows it as
// text: html/template escapes it, and the raw markup never reaches the browser.
func TestUIEscapesUserData(t *testing.T) {
	t.Parallel()
	u := newUIEnv(t)
	const (
		script  = `<script>alert(1)</script>`
		bold    = `<b>x</b>`
		img     = `"><img/src=x/onerror=alert(1)>`
		eventID = `<i>ev</i>`
	)
	for _, id := range []string{script, bold, img, eventID} {
		require.NoError(t, asyncevent.ValidateID("id", id), "the test's IDs must be valid IDs")
	}
	_, err := u.client.CreateEvent(context.Background(), asyncevent.EventSettings{EventID: eventID, Name: script, EventType: asyncevent.FirstCome, CapacityTotal: 1})
	require.NoError(t, err)
	var requests []string
	for _, user := range []string{script, bold, img} {
		p, err := u.client.Submit(context.Background(), u.queue, eventID, user)
		require.NoError(t, err)
		requests = append(requests, p.RequestID)
	}
	u.processN(10)
	u.signIn()

	pages := []string{
		"/admin/ui/",
		"/admin/ui/events/" + url.PathEscape(eventID),
		"/admin/ui/events/" + url.PathEscape(eventID) + "?order=desc&status=REJECTED",
		"/admin/ui/events/" + url.PathEscape(eventID+"x"), // 404: the ID is in the error's detail
	}
	for _, id := range requests {
		pages = append(pages, "/admin/ui/requests/"+id)
	}
	var all strings.Builder
	for _, p := range pages {
		r := u.get(p)
		require.Contains(t, []int{http.StatusOK, http.StatusNotFound}, r.status, "%s: %s", p, r.body)
		body := string(r.body)
		all.WriteString(body)
		for _, raw := range []string{script, bold, img, eventID, "<img", "<i>"} {
			assert.False(t, strings.Contains(body, raw), "%s shows %s raw", p, raw)
		}
		assert.Equal(t, 1, strings.Count(strings.ToLower(body), "<script"), "%s: only the page's own script tag", p)
	}
	page := all.String()
	assert.Contains(t, page, `&lt;script&gt;alert(1)&lt;/script&gt;`, "the event name and a user ID, escaped")
	assert.Contains(t, page, `&lt;b&gt;x&lt;/b&gt;`)
	assert.Contains(t, page, `&#34;&gt;&lt;img/src=x/onerror=alert(1)&gt;`)
	assert.Contains(t, page, `&lt;i&gt;ev&lt;/i&gt;`)
	assert.Contains(t, page, `href="/admin/ui/events/%3Ci%3Eev%3C%2Fi%3E"`, "IDs in links are path-escaped")
	assert.Contains(t, page, `<h1 id="event-name">&lt;script&gt;alert(1)&lt;/script&gt;</h1>`)
	assert.Contains(t, page, `<dd id="field-user">&lt;b&gt;x&lt;/b&gt;</dd>`)

	// A redirect target built from user input is escaped too.
	r := u.get("/admin/ui/events?eventId=" + url.QueryEscape(script))
	assert.Equal(t, http.StatusSeeOther, r.status)
	assert.Equal(t, "/admin/ui/events/%3Cscript%3Ealert%281%29%3C%2Fscript%3E", r.header.Get("Location"))
	// And the login form's next, which must also stay on the UI.
	r = u.getWith(newBrowserClient(t), "/admin/ui/login?next="+url.QueryEscape(`/admin/ui/"><script>alert(1)</script>`))
	assert.NotContains(t, string(r.body), script)
}

func TestUIHeadersAndAssets(t *testing.T) {
	t.Parallel()
	u := newUIEnv(t)
	r := u.get("/admin/ui/login")
	csp := r.header.Get("Content-Security-Policy")
	assert.Contains(t, csp, "default-src 'none'")
	assert.Contains(t, csp, "script-src 'self'")
	assert.Contains(t, csp, "frame-ancestors 'none'")
	assert.Equal(t, "no-store", r.header.Get("Cache-Control"))
	assert.Equal(t, "nosniff", r.header.Get("X-Content-Type-Options"))
	assert.NotRegexp(t, `(src|href)="(https?:)?//`, string(r.body), "nothing is loaded from elsewhere")

	for _, m := range regexp.MustCompile(`(?:src|href)="(/admin/ui/static/[^"]+)"`).FindAllStringSubmatch(string(r.body), -1) {
		asset := u.get(strings.ReplaceAll(m[1], "&amp;", "&"))
		assert.Equal(t, http.StatusOK, asset.status, m[1])
		assert.NotEmpty(t, asset.body, m[1])
		assert.NotRegexp(t, `(url\(|@import|src=|href=)\s*["']?(https?:)?//`, string(asset.body), m[1])
	}
	assert.Equal(t, "text/css; charset=utf-8", u.get("/admin/ui/static/admin.css").header.Get("Content-Type"))
	assert.Equal(t, http.StatusNotFound, u.get("/admin/ui/static/nope.css").status)
	r = u.get("/admin/ui")
	assert.Equal(t, http.StatusMovedPermanently, r.status)
	assert.Equal(t, "/admin/ui/", r.header.Get("Location"))
}

func TestSafeNext(t *testing.T) {
	t.Parallel()
	for next, want := range map[string]string{
		"":                                "/admin/ui/",
		"/admin/ui/events/x?order=desc":   "/admin/ui/events/x?order=desc",
		"/admin/ui/requests/r":            "/admin/ui/requests/r",
		"https://evil.example/admin/ui/":  "/admin/ui/",
		"//evil.example/admin/ui/":        "/admin/ui/",
		"/admin/ui//evil.example":         "/admin/ui/",
		"/admin/ui/\\evil":                "/admin/ui/",
		"/admin/events":                   "/admin/ui/",
		"/admin/ui/login?next=/admin/ui/": "/admin/ui/",
		"javascript:alert(1)":             "/admin/ui/",
	} {
		assert.Equal(t, want, safeNext(next), next)
	}
}

func TestFmtDuration(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		0:                         "0 ms",
		840 * time.Millisecond:    "840 ms",
		1250 * time.Millisecond:   "1.25 s",
		185 * time.Second:         "3m05s",
		2*time.Hour + time.Minute: "2h01m",
		-5 * time.Millisecond:     "−5 ms",
	} {
		assert.Equal(t, want, fmtDuration(d), d)
	}
}

// atomicDuration is a clock offset the test moves while the server runs: the
// library's clock keeps real time (so durations are real) and jumps ahead on
// demand (past a lottery's cutoff).
type atomicDuration struct{ ns atomic.Int64 }

func (a *atomicDuration) add(d time.Duration) { a.ns.Add(int64(d)) }
func (a *atomicDuration) clock() func() time.Time {
	return func() time.Time { return time.Now().Add(time.Duration(a.ns.Load())) }
}

func TestLayoutChart(t *testing.T) {
	t.Parallel()
	assert.Empty(t, layoutChart(nil, 0).Columns, "no requests, no columns")

	classes := make([]string, 1000)
	for i := range classes {
		classes[i] = "rejected"
		if i < 300 || i%7 == 0 {
			classes[i] = "success"
		}
	}
	c := layoutChart(classes, 1000)
	require.Len(t, c.Columns, maxColumns, "past maxColumns a column stacks several requests")
	assert.Contains(t, c.PerColumn, "about 4 consecutive requests")
	assert.Equal(t, "#1–#4: 4 succeeded", c.Columns[0].Title)
	for i, col := range c.Columns {
		total := 0.0
		for _, seg := range col.Segs {
			h, err := strconv.ParseFloat(seg.H, 64)
			require.NoError(t, err)
			total += h
		}
		assert.InDelta(t, chartBars, total, 0.2, "column %d fills the bar height", i)
	}
	assert.Equal(t, []legendItem{{Class: "success", Label: "succeeded", Count: 300 + 100}, {Class: "rejected", Label: "rejected", Count: 600}},
		c.Legend, "the first 300, then every 7th")
	assert.Equal(t, "#1000", c.Ticks[len(c.Ticks)-1].Label)
}

// A page that runs out of time shows the API's 503 and logs the cause at warn, as
// the API does.
func TestUITimeoutIsLogged(t *testing.T) {
	t.Parallel()
	u := newUIEnv(t, func(_ *asyncevent.Options, so *ServerOptions) { so.RequestTimeout = time.Nanosecond })
	u.signIn()
	r := u.get("/admin/ui/events/spring-sale")
	assert.Equal(t, http.StatusServiceUnavailable, r.status, "body: %s", r.body)
	assert.Contains(t, u.logs.String(), `"msg":"request ran out of time"`)
	assert.Contains(t, u.logs.String(), `"requestTimeoutPassed":true`)
}

// A pre-queued first-come drop on the admin page: its window and its commitment
// before the start, the serve button disabled until the start plus the settle
// window; once served, the seed, the verification and the head of the drawn order
// with its winners marked.
func TestUIPrequeue(t *testing.T) {
	t.Parallel()
	var offset atomicDuration
	u := newUIEnv(t, func(o *asyncevent.Options, so *ServerOptions) { o.Clock = offset.clock() })
	ctx := context.Background()
	start := asyncevent.MillisOf(time.Now().Add(time.Hour))
	_, err := u.client.CreateEvent(ctx, asyncevent.EventSettings{EventID: "drop", Name: "Drop", EventType: asyncevent.FirstCome,
		CapacityTotal: 2, PrequeueOpensAt: asyncevent.MillisOf(time.Now()), StartsAt: start})
	require.NoError(t, err)
	for i := range 5 {
		u.participate("drop", fmt.Sprintf("user-%d", i))
	}
	u.processN(10)
	u.signIn()

	page := u.get("/admin/ui/events/drop")
	require.Equal(t, http.StatusOK, page.status)
	body := string(page.body)
	assert.Contains(t, body, "<h2>Pre-queue</h2>")
	assert.Contains(t, body, `id="prequeue-window"`)
	assert.Contains(t, body, `id="draw-button" disabled>Serve the pre-queue</button>`)
	assert.Contains(t, body, "the start plus the settle window")
	assert.Contains(t, body, "revealed by the draw")

	offset.add(time.Hour + asyncevent.DefaultDrawSettleWindow + time.Second)
	r := u.post("/admin/ui/events/drop/draw", url.Values{"csrf": {csrf(t, page)}})
	require.Equal(t, http.StatusSeeOther, r.status, "body: %s", r.body)
	r = u.get("/admin/ui/events/drop")
	require.Equal(t, http.StatusOK, r.status)
	body = string(r.body)
	assert.Contains(t, body, `id="verification" data-ok="true"`)
	assert.Contains(t, body, `<dd id="draw-entries">5</dd>`)
	assert.Contains(t, body, `id="draw-seed"`)
	assert.Contains(t, body, `id="prequeue-head"`)
	assert.Equal(t, 2, strings.Count(body, `<span class="badge o-success">won</span>`), "the first two of the order won")
	assert.NotContains(t, body, `id="draw-button"`, "nothing left to serve")
}
