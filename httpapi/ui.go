package httpapi

// The admin web UI: server-rendered pages under /admin/ui/ for operators, built
// from the same access patterns as the admin API (GetItem and Query, never Scan).
// html/template escapes everything the pages show; templates and assets are
// embedded, and nothing is loaded from anywhere else (the Content-Security-Policy
// says so to the browser). Sign-in, the session cookie and CSRF are in ui_session.go.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/asyncevent/asyncevent"
)

//go:embed ui/templates/*.html ui/static/*
var uiFiles embed.FS

// uiPrefix is where the UI is mounted.
const uiPrefix = "/admin/ui/"

// AdminUIOptions configures the admin web UI. The zero value is valid.
type AdminUIOptions struct {
	// SessionSecret signs the session cookies and CSRF tokens: at least
	// MinSecretBytes bytes, kept secret. Default: derived from the secret of the
	// server's Authenticator when it is a JWTAuthenticator; required otherwise.
	SessionSecret []byte

	// SessionTTL bounds a session; a session also ends when the token it was made
	// from expires. Default: DefaultSessionTTL (8 hours).
	SessionTTL time.Duration

	// ChartRequests is the most requests the event page's outcome chart reads, in
	// queue order (pages of 500); an event with more shows its first ChartRequests.
	// Default: DefaultChartRequests (2000).
	ChartRequests int

	// Deprecated: the draw button follows the Client's own
	// Options.DrawSettleWindow (Client.DrawOpensAt); this field is ignored.
	DrawSettleWindow time.Duration

	// Clock tells the time for session expiry, for enabling the draw button and for
	// the time left on a hold; it should agree with the Client's. Default: the
	// server's ServerOptions.Clock.
	Clock func() time.Time
}

// The defaults of AdminUIOptions.
const (
	DefaultSessionTTL    = 8 * time.Hour
	DefaultChartRequests = 2000
)

// defaultPageSize is the request table's page size when the URL names none.
const defaultPageSize = 50

// adminUI serves the pages.
type adminUI struct {
	srv        *Server
	client     *asyncevent.Client
	keys       sessionKeys
	sessionTTL time.Duration
	chartMax   int
	now        func() time.Time
	pages      map[string]*template.Template
	static     fs.FS
	assetHash  map[string]string // file name → short content hash, for cache busting
	counts     requestCounts     // the home page's request counts
}

// MountAdminUI adds the admin web UI under /admin/ui/, behind the server's timeout
// and access log. Its pages authenticate with a session cookie obtained at
// /admin/ui/login with an admin token (checked by the server's Authenticator), not
// with a bearer token, so they are mounted as Public routes and check the session
// themselves. A service that wants the API without the UI does not call it.
func (s *Server) MountAdminUI(opts AdminUIOptions) error {
	u, err := newAdminUI(s, opts)
	if err != nil {
		return err
	}
	s.Mount("GET /admin/ui", Public, http.RedirectHandler(uiPrefix, http.StatusMovedPermanently))
	s.Mount("GET /admin/ui/{$}", Public, u.authed(u.home))
	s.Mount("GET /admin/ui/login", Public, u.public(u.loginForm))
	s.Mount("POST /admin/ui/login", Public, u.public(u.login))
	s.Mount("POST /admin/ui/logout", Public, u.authed(u.logout))
	s.Mount("GET /admin/ui/events", Public, u.authed(u.findEvent))
	s.Mount("POST /admin/ui/events", Public, u.authed(u.createEvent))
	s.Mount("GET /admin/ui/events/{eventId}", Public, u.authed(u.event))
	s.Mount("POST /admin/ui/events/{eventId}/draw", Public, u.authed(u.draw))
	s.Mount("POST /admin/ui/events/{eventId}/close", Public, u.authed(u.control(asyncevent.ActionClose)))
	s.Mount("POST /admin/ui/events/{eventId}/pause", Public, u.authed(u.control(asyncevent.ActionPause)))
	s.Mount("POST /admin/ui/events/{eventId}/resume", Public, u.authed(u.control(asyncevent.ActionResume)))
	s.Mount("POST /admin/ui/events/{eventId}/extend", Public, u.authed(u.extend))
	s.Mount("POST /admin/ui/events/{eventId}/capacity", Public, u.authed(u.addSeats))
	s.Mount("GET /admin/ui/requests", Public, u.authed(u.findRequest))
	s.Mount("GET /admin/ui/requests/{requestId}", Public, u.authed(u.request))
	s.Mount("POST /admin/ui/requests/{requestId}/cancel", Public, u.authed(u.cancel))
	s.Mount("GET /admin/ui/static/{file}", Public, http.HandlerFunc(u.serveStatic))
	s.Mount("GET /admin/ui/", Public, u.public(u.notFound))
	return nil
}

func newAdminUI(s *Server, opts AdminUIOptions) (*adminUI, error) {
	if len(opts.SessionSecret) == 0 {
		if j, ok := s.auth.(*JWTAuthenticator); ok {
			opts.SessionSecret = j.secret
		}
	}
	if len(opts.SessionSecret) < MinSecretBytes {
		return nil, fmt.Errorf("httpapi: MountAdminUI: the session secret has %d bytes, want at least %d", len(opts.SessionSecret), MinSecretBytes)
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = DefaultSessionTTL
	}
	if opts.ChartRequests <= 0 {
		opts.ChartRequests = DefaultChartRequests
	}
	if opts.Clock == nil {
		opts.Clock = s.now
	}
	static, err := fs.Sub(uiFiles, "ui/static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	u := &adminUI{
		srv:        s,
		client:     s.client,
		keys:       newSessionKeys(opts.SessionSecret),
		sessionTTL: opts.SessionTTL,
		chartMax:   opts.ChartRequests,
		now:        opts.Clock,
		pages:      map[string]*template.Template{},
		static:     static,
		assetHash:  map[string]string{},
	}
	entries, _ := fs.ReadDir(static, ".")
	for _, e := range entries {
		b, _ := fs.ReadFile(static, e.Name())
		sum := sha256.Sum256(b)
		u.assetHash[e.Name()] = hex.EncodeToString(sum[:6])
	}
	for _, name := range []string{"login", "home", "event", "request", "error"} {
		t := template.New("layout.html").Funcs(u.funcs())
		u.pages[name] = template.Must(t.ParseFS(uiFiles, "ui/templates/layout.html", "ui/templates/"+name+".html"))
	}
	return u, nil
}

// uiSession is the signed-in operator of a request, and the CSRF token of the
// forms of the page.
type uiSession struct {
	UserID string
	CSRF   string
}

// uiFunc is a page's handler: it answers, or returns the error to show.
type uiFunc func(w http.ResponseWriter, r *http.Request, sess *uiSession) error

// page is what every template gets: the layout's fields and the page's own.
type page struct {
	Title   string
	Session *uiSession // nil when signed out
	Data    any
}

// setUIHeaders sends the headers of every UI answer: nothing but our own origin may
// supply scripts, styles, images or form targets, and no page may be framed or
// cached (they show live data behind a session).
func setUIHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// public serves a page that needs no session (the login form).
func (u *adminUI) public(h uiFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setUIHeaders(w)
		if err := h(w, r, nil); err != nil {
			u.fail(w, r, nil, err)
		}
	})
}

// authed serves a page for a signed-in admin. Without a valid session a GET is sent
// to the login form (and back after it), anything else is 401. A POST must carry
// the session's CSRF token in its form, else 403 before anything is done.
func (u *adminUI) authed(h uiFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setUIHeaders(w)
		var (
			sess session
			ok   bool
		)
		c, err := r.Cookie(sessionCookieName)
		if err == nil {
			sess, ok = u.keys.open(c.Value, u.now())
		}
		if !ok {
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				http.Redirect(w, r, loginURL(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			u.fail(w, r, nil, newHTTPError(http.StatusUnauthorized, CodeUnauthorized, "you are not signed in, or your session has ended: sign in again"))
			return
		}
		if info := infoFrom(r.Context()); info != nil {
			info.userID = sess.UserID
		}
		r = r.WithContext(context.WithValue(r.Context(), principalKey{}, Principal{UserID: sess.UserID, Role: RoleAdmin}))
		cur := &uiSession{UserID: sess.UserID, CSRF: u.keys.csrfFor(c.Value)}
		if r.Method == http.MethodPost {
			if err := u.parseForm(w, r); err != nil {
				u.fail(w, r, cur, err)
				return
			}
			if !checkToken(r.PostFormValue(csrfFieldName), cur.CSRF) {
				u.fail(w, r, cur, newHTTPError(http.StatusForbidden, CodeForbidden, "the form's CSRF token is missing or wrong: reload the page and try again"))
				return
			}
		}
		if err := h(w, r, cur); err != nil {
			u.fail(w, r, cur, err)
		}
	})
}

// parseForm reads a POST's urlencoded form, bounded by the server's MaxBodyBytes.
func (u *adminUI) parseForm(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, u.srv.maxBody)
	if err := r.ParseForm(); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return err
		}
		return newHTTPError(http.StatusBadRequest, CodeInvalidBody, "the form is malformed")
	}
	return nil
}

// render executes page name into a buffer first, so a template error is a clean
// 500 rather than half a page.
func (u *adminUI) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	var buf bytes.Buffer
	if err := u.pages[name].Execute(&buf, p); err != nil {
		u.srv.logger.LogAttrs(r.Context(), slog.LevelError, "admin ui template", slog.String("page", name), slog.Any("error", err))
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// errorView is the error page.
type errorView struct {
	Status   int
	Title    string
	Detail   string
	Instance string
	Login    bool // offer the login form
}

// fail shows err as an error page with the status the API would answer with; an
// unexpected error is logged in full and shown as "internal error" only, a request
// out of time is logged as the API's are (Server.logFailure).
func (u *adminUI) fail(w http.ResponseWriter, r *http.Request, sess *uiSession, err error) {
	p, _, internal := problemFor(err)
	if info := infoFrom(r.Context()); info != nil {
		p.Instance = info.instance
	}
	u.srv.logFailure(r, p, internal, err)
	u.render(w, r, p.Status, "error", page{
		Title:   p.Title,
		Session: sess,
		Data:    errorView{Status: p.Status, Title: p.Title, Detail: p.Detail, Instance: p.Instance, Login: p.Status == http.StatusUnauthorized},
	})
}

func (u *adminUI) notFound(w http.ResponseWriter, r *http.Request, _ *uiSession) error {
	return newHTTPError(http.StatusNotFound, CodeRouteNotFound, "there is no page at "+r.URL.EscapedPath())
}

// serveStatic serves the embedded assets. Their URLs carry a content hash
// (?v=…), so they may be cached for long.
func (u *adminUI) serveStatic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	b, err := fs.ReadFile(u.static, name)
	if err != nil {
		setUIHeaders(w)
		u.fail(w, r, nil, newHTTPError(http.StatusNotFound, CodeRouteNotFound, "no asset "+name))
		return
	}
	ct := map[string]string{".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".svg": "image/svg+xml"}[path.Ext(name)]
	if ct == "" {
		ct = "application/octet-stream"
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "public, max-age=86400")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

// The pages' URLs. IDs are path-escaped: an ID may hold any printable character
// but '#' and space, '/' and '?' included.

func eventURL(eventID string) string     { return uiPrefix + "events/" + url.PathEscape(eventID) }
func requestURL(requestID string) string { return uiPrefix + "requests/" + url.PathEscape(requestID) }

func loginURL(next string) string {
	if next == "" || next == uiPrefix {
		return uiPrefix + "login"
	}
	return uiPrefix + "login?next=" + url.QueryEscape(next)
}

// safeNext returns next when it is a path of the UI, else the UI's home: the login
// form must never send a browser elsewhere.
func safeNext(next string) string {
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil ||
		!strings.HasPrefix(next, uiPrefix) || strings.Contains(next, "//") || strings.ContainsAny(next, "\\\r\n") ||
		strings.HasPrefix(next, uiPrefix+"login") {
		return uiPrefix
	}
	return next
}

// loginView is the login form.
type loginView struct {
	Next  string
	CSRF  string
	Error string
}

// loginForm is GET /admin/ui/login. It sets the login cookie whose nonce the
// form's CSRF token is bound to; a signed-in admin goes straight on.
func (u *adminUI) loginForm(w http.ResponseWriter, r *http.Request, _ *uiSession) error {
	next := safeNext(r.URL.Query().Get("next"))
	if c, err := r.Cookie(sessionCookieName); err == nil {
		if _, ok := u.keys.open(c.Value, u.now()); ok {
			http.Redirect(w, r, next, http.StatusSeeOther)
			return nil
		}
	}
	u.showLogin(w, r, http.StatusOK, next, "")
	return nil
}

// showLogin renders the login form with a fresh login nonce.
func (u *adminUI) showLogin(w http.ResponseWriter, r *http.Request, status int, next, message string) {
	now := u.now()
	nonce := randomNonce()
	http.SetCookie(w, uiCookie(r, loginCookieName, nonce, now.Add(loginCookieTTL), now))
	u.render(w, r, status, "login", page{Title: "Sign in", Data: loginView{Next: next, CSRF: u.keys.loginCSRF(nonce), Error: message}})
}

// login is POST /admin/ui/login: exchanges an admin token for a session cookie.
func (u *adminUI) login(w http.ResponseWriter, r *http.Request, _ *uiSession) error {
	if err := u.parseForm(w, r); err != nil {
		return err
	}
	c, err := r.Cookie(loginCookieName)
	if err != nil || !checkToken(r.PostFormValue(csrfFieldName), u.keys.loginCSRF(c.Value)) {
		return newHTTPError(http.StatusForbidden, CodeForbidden, "the login form's CSRF token is missing or wrong: reload the login page and try again")
	}
	next := safeNext(r.PostFormValue("next"))
	tok := r.PostFormValue("token")
	if strings.TrimSpace(tok) == "" {
		u.showLogin(w, r, http.StatusUnauthorized, next, "Paste an admin token.")
		return nil
	}
	p, exp, err := u.verifyLoginToken(tok)
	if err != nil {
		status, message := http.StatusUnauthorized, "This token is not valid (wrong signature, malformed or expired)."
		var he *httpError
		if errors.As(err, &he) && he.status == http.StatusForbidden {
			status, message = http.StatusForbidden, "This token is valid but not an admin's: the admin pages need role admin."
		}
		if info := infoFrom(r.Context()); info != nil {
			info.userID = p.UserID
		}
		u.showLogin(w, r, status, next, message)
		return nil
	}
	now := u.now()
	expires := now.Add(u.sessionTTL)
	if !exp.IsZero() && exp.Before(expires) {
		expires = exp
	}
	value := u.keys.seal(session{UserID: p.UserID, Role: RoleAdmin, Expiry: expires.Unix(), Nonce: randomNonce()})
	if info := infoFrom(r.Context()); info != nil {
		info.userID = p.UserID
	}
	http.SetCookie(w, uiCookie(r, sessionCookieName, value, expires, now))
	http.SetCookie(w, uiCookie(r, loginCookieName, "", time.Time{}, now))
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
}

// logout is POST /admin/ui/logout: deletes the session cookie.
func (u *adminUI) logout(w http.ResponseWriter, r *http.Request, _ *uiSession) error {
	http.SetCookie(w, uiCookie(r, sessionCookieName, "", time.Time{}, u.now()))
	http.Redirect(w, r, uiPrefix+"login", http.StatusSeeOther)
	return nil
}

// home is GET /admin/ui/?limit=&cursor=: the events, newest first, a page at a
// time (asyncevent.Client.ListEvents: a Query of the event list, never a Scan); the
// forms that open an event or a request; the form that creates an event.
func (u *adminUI) home(w http.ResponseWriter, r *http.Request, sess *uiSession) error {
	q, err := query(r)
	if err != nil {
		return err
	}
	return u.renderHome(w, r, sess, q, http.StatusOK, newCreateForm(nil), "")
}

// findEvent is GET /admin/ui/events?eventId=: the home form's target.
func (u *adminUI) findEvent(w http.ResponseWriter, r *http.Request, _ *uiSession) error {
	q, err := query(r)
	if err != nil {
		return err
	}
	id := strings.TrimSpace(q.Get("eventId"))
	if err := asyncevent.ValidateID("eventId", id); err != nil {
		return err
	}
	http.Redirect(w, r, eventURL(id), http.StatusSeeOther)
	return nil
}

// findRequest is GET /admin/ui/requests?requestId=.
func (u *adminUI) findRequest(w http.ResponseWriter, r *http.Request, _ *uiSession) error {
	q, err := query(r)
	if err != nil {
		return err
	}
	id := strings.TrimSpace(q.Get("requestId"))
	if err := asyncevent.ValidateID("requestId", id); err != nil {
		return err
	}
	http.Redirect(w, r, requestURL(id), http.StatusSeeOther)
	return nil
}

// draw is POST /admin/ui/events/{eventId}/draw: runs (or resumes) the draw, or
// serves a first-come event's pre-queue, then shows the event (its verification
// included). A refusal, such as a draw before
// the cutoff, is shown on the event page.
func (u *adminUI) draw(w http.ResponseWriter, r *http.Request, sess *uiSession) error {
	eventID, err := pathID(r, "eventId")
	if err != nil {
		return err
	}
	run := func() error { _, err := u.client.Draw(r.Context(), eventID); return err }
	if ev, err := u.client.GetEvent(r.Context(), eventID); err == nil && ev.EventType == asyncevent.FirstCome && ev.PrequeueOpensAt != 0 {
		run = func() error { _, err := u.client.ServePrequeue(r.Context(), eventID); return err }
	}
	if err := run(); err != nil {
		p, _, internal := problemFor(err)
		if internal || p.Status == http.StatusNotFound {
			return err
		}
		return u.renderEvent(w, r, sess, eventID, url.Values{}, p.Status, eventNotice{Draw: p.Detail})
	}
	http.Redirect(w, r, eventURL(eventID)+"#draw", http.StatusSeeOther)
	return nil
}

// funcs are the templates' helpers. None of them returns template.HTML: every
// value a page shows goes through html/template's escaping.
func (u *adminUI) funcs() template.FuncMap {
	return template.FuncMap{
		"asset": func(name string) string {
			return uiPrefix + "static/" + name + "?v=" + u.assetHash[name]
		},
		"eventURL":   eventURL,
		"requestURL": requestURL,
		"time":       fmtTime,
		"rfc3339":    rfc3339,
		"clock":      fmtClock,
		"between":    between,
		"dur":        fmtDuration,
		"f2":         func(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) },
		"statusClass": func(s asyncevent.Status) string {
			return "st-" + strings.ToLower(strings.ReplaceAll(string(s), "_", "-"))
		},
		"stateClass": func(s asyncevent.EventState) string { return "state-" + strings.ToLower(string(s)) },
		"pct": func(n, total int) string {
			if total <= 0 {
				return "0"
			}
			return strconv.FormatFloat(100*float64(n)/float64(total), 'f', 1, 64)
		},
		"csrfField": func() string { return csrfFieldName },
	}
}

// fmtTime writes a stored time in UTC with milliseconds; "—" when unset.
func fmtTime(m asyncevent.EpochMillis) string {
	if m == 0 {
		return "—"
	}
	return m.Time().Format("2006-01-02 15:04:05.000")
}

// fmtClock is fmtTime without the date, for the table.
func fmtClock(m asyncevent.EpochMillis) string {
	if m == 0 {
		return "—"
	}
	return m.Time().Format("15:04:05.000")
}

// between is the time from a to b; "—" when either is unset.
func between(a, b asyncevent.EpochMillis) string {
	if a == 0 || b == 0 {
		return "—"
	}
	return fmtDuration(time.Duration(b-a) * time.Millisecond)
}

// fmtDuration writes d for a human: "0 ms", "840 ms", "1.25 s", "3m05s".
func fmtDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "−" + fmtDuration(-d)
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + " s"
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}
