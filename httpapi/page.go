package httpapi

// The page a waiting user sees of their own request: server-rendered at
// GET /requests/{requestId}/page, refreshing itself at the pace the API asks of a
// poll (pollEvery), in English or Korean by the browser's Accept-Language, with a
// Release form protected against cross-site requests. It reads what GET
// /requests/{requestId} reads (the request, its place), and a finished draw's record
// for its verification. The states and their words are in page_view.go and
// page_text.go.

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/asyncevent/asyncevent"
)

// RequestPageOptions configures the page of a user's own request. The zero value is
// valid when the server's Authenticator is a JWTAuthenticator.
type RequestPageOptions struct {
	// Secret signs the Release form's token: at least MinSecretBytes bytes, kept
	// secret. Default: derived from the secret of the server's Authenticator when it
	// is a JWTAuthenticator; required otherwise.
	Secret []byte

	// ConfirmURL is the service's page where the user pays for a held seat, its
	// "{requestId}" replaced by the request's ID, escaped for where it stands (in
	// the path, or in the query). Empty: the page shows no payment link.
	ConfirmURL string

	// StyleURL is a stylesheet of the service's own origin (a path, such as
	// "/static/brand.css") that the page loads after its own, to brand it: its
	// colours, fonts and layout. Empty: none.
	StyleURL string

	// Texts replaces the page's words, by language ("en", "ko") and then by the key
	// of each text (PageTextKeys lists them; docs/http.md shows where each
	// appears). A key the service does not give keeps the page's own.
	Texts map[string]map[string]string

	// Location is the time zone the page shows its times in. Default: UTC.
	Location *time.Location

	// SignInURL is where the service's users sign in (a path of its origin, or an
	// http(s) URL): the page of a caller without a valid identity links to it.
	// Empty: that page says to sign in, with no link.
	SignInURL string
}

// pagePath is the path of a request's page, after /requests/{requestId}.
const pagePath = "/page"

// requestPage serves the pages.
type requestPage struct {
	srv     *Server
	key     []byte // the Release form tokens' key
	confirm string
	style   string
	texts   map[string]map[string]string
	loc     *time.Location
	tmpl    *template.Template
	script  string // the page script's URL, with its content's hash
	signIn  string
	proofs  proofCache
}

// pageScriptPath is where the page's script is served: ui/static/page.js, which
// fetches the page again at its Refresh and updates it in place.
const pageScriptPath = "/request-page/page.js"

// MountRequestPage adds the page a user sees of their own request:
// GET /requests/{requestId}/page, and POST /requests/{requestId}/page/release, its
// Release button. They authenticate with the server's Authenticator as the API's
// user routes do (a service whose users sign in with a cookie gives the server an
// Authenticator that reads it), and answer with a page, never a problem document: a
// missing or expired identity is 401, a request that is not the caller's, or
// unknown, 404, a malformed ID 400, each a plain page that tells nothing more.
func (s *Server) MountRequestPage(opts RequestPageOptions) error {
	secret := opts.Secret
	if secret == nil {
		if j, ok := s.auth.(*JWTAuthenticator); ok {
			secret = j.secret
		}
	}
	if len(secret) < MinSecretBytes {
		return fmt.Errorf("%w: RequestPageOptions.Secret needs at least %d bytes (or a JWTAuthenticator to derive it from)", asyncevent.ErrInvalidOptions, MinSecretBytes)
	}
	if err := checkPageOptions(opts); err != nil {
		return err
	}
	loc := opts.Location
	if loc == nil {
		loc = time.UTC
	}
	tmpl, err := template.New("page.html").Funcs(template.FuncMap{
		"fill": func(text, name string, value any) string { return fill(text, name, fmt.Sprint(value)) },
	}).ParseFS(uiFiles, "ui/templates/page.html")
	if err != nil {
		return err
	}
	script, err := fs.ReadFile(uiFiles, "ui/static/page.js")
	if err != nil {
		return err
	}
	sum := sha256.Sum256(script)
	p := &requestPage{srv: s, key: deriveKey(secret, "asyncevent request-page release v1"), confirm: opts.ConfirmURL,
		style: opts.StyleURL, texts: opts.Texts, loc: loc, tmpl: tmpl, script: pageScriptPath + "?v=" + hex.EncodeToString(sum[:6]),
		signIn: opts.SignInURL}
	s.route("GET "+pageScriptPath, Public, func(w http.ResponseWriter, _ *http.Request, _ Principal) error {
		h := w.Header()
		h.Set("Content-Type", "text/javascript; charset=utf-8")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "public, max-age=86400") // its URL changes with its content
		_, err := w.Write(script)
		return err
	})
	// Public to the server's routing (its timeout and access log): the page
	// authenticates itself, to answer with a page rather than a problem document.
	release := p.serve(p.release)
	for pattern, h := range map[string]http.HandlerFunc{
		"GET /requests/{requestId}" + pagePath: p.serve(p.show),
		"POST /requests/{requestId}" + pagePath + "/release": func(w http.ResponseWriter, r *http.Request) {
			if !sameOrigin(r) { // before the token's check and the read: a cross-site post costs nothing
				p.plain(w, r, pageLanguage(r.Header.Get("Accept-Language")), http.StatusForbidden, "forbidden")
				return
			}
			release(w, r)
		},
	} {
		s.route(pattern, Public, func(w http.ResponseWriter, r *http.Request, _ Principal) error { h(w, r); return nil })
	}
	s.pages = true
	return nil
}

// checkPageOptions refuses the options a page could not use as meant: a stylesheet
// from elsewhere (the page's policy would block it), a link that is not a path or
// an http(s) URL, a text of no language or key of the page's.
func checkPageOptions(opts RequestPageOptions) error {
	if opts.StyleURL != "" && !sameOriginPath(opts.StyleURL) {
		return fmt.Errorf("%w: RequestPageOptions.StyleURL %q is not a path of the service's own origin", asyncevent.ErrInvalidOptions, opts.StyleURL)
	}
	for name, u := range map[string]string{"ConfirmURL": opts.ConfirmURL, "SignInURL": opts.SignInURL} {
		if u != "" && !sameOriginPath(u) && !webURL(u) {
			return fmt.Errorf("%w: RequestPageOptions.%s %q is neither a path nor an http(s) URL", asyncevent.ErrInvalidOptions, name, u)
		}
	}
	for lang, texts := range opts.Texts {
		if _, ok := pageTexts[lang]; !ok {
			return fmt.Errorf("%w: RequestPageOptions.Texts: language %q, want en or ko", asyncevent.ErrInvalidOptions, lang)
		}
		for key := range texts {
			if _, ok := pageTexts["en"][key]; !ok {
				return fmt.Errorf("%w: RequestPageOptions.Texts[%q]: no text %q (PageTextKeys)", asyncevent.ErrInvalidOptions, lang, key)
			}
		}
	}
	return nil
}

// sameOriginPath reports whether u is a path on the page's own origin. A
// backslash is refused: browsers read /\host as //host, another origin.
func sameOriginPath(u string) bool {
	parsed, err := url.Parse(u)
	return err == nil && parsed.Scheme == "" && parsed.Host == "" && strings.HasPrefix(u, "/") &&
		!strings.HasPrefix(u, "//") && !strings.Contains(u, `\`)
}

// webURL reports whether u is an absolute http or https URL.
func webURL(u string) bool {
	parsed, err := url.Parse(u)
	return err == nil && (parsed.Scheme == "https" || parsed.Scheme == "http") && parsed.Host != ""
}

// pageFunc answers a page's request for the caller p, of the request ID in its path.
type pageFunc func(w http.ResponseWriter, r *http.Request, lang string, p Principal, req *asyncevent.Request) error

// serve authenticates the caller, reads their request and hands it to f; a caller
// without a valid identity, a malformed ID, a request that is not theirs (or none)
// and a failure get a plain page of their own.
func (p *requestPage) serve(f pageFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		lang := pageLanguage(r.Header.Get("Accept-Language"))
		id := r.PathValue("requestId")
		if asyncevent.ValidateID("requestId", id) != nil {
			p.plain(w, r, lang, http.StatusBadRequest, "badLink")
			return
		}
		who, err := p.srv.authenticate(r, UserOnly)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="asyncevent"`)
			p.plain(w, r, lang, http.StatusUnauthorized, "signIn")
			return
		}
		req, err := p.srv.client.GetRequest(r.Context(), id)
		switch {
		case errors.Is(err, asyncevent.ErrNotFound) || err == nil && req.UserID != who.UserID:
			p.plain(w, r, lang, http.StatusNotFound, "notFound")
			return
		case err != nil:
			p.srv.logger.ErrorContext(r.Context(), "request page: the request could not be read", slog.String("requestId", id), slog.Any("error", err))
			p.unavailable(w, r, lang, id)
			return
		}
		if err := f(w, r, lang, who, req); err != nil {
			p.srv.logger.ErrorContext(r.Context(), "request page", slog.String("requestId", id), slog.Any("error", err))
			p.unavailable(w, r, lang, id)
		}
	}
}

// show is GET /requests/{requestId}/page: the request's state in words, refreshing
// itself at its poll interval (none once it is final).
func (p *requestPage) show(w http.ResponseWriter, r *http.Request, lang string, who Principal, req *asyncevent.Request) error {
	now := p.srv.now()
	s := seenOf(r.URL.Query())
	v := p.view(lang, req, now, s)
	if req.Prequeue != nil && req.Prequeue.Frozen && req.Prequeue.Place > 0 ||
		req.EventType == asyncevent.Lottery && req.UIPhase == asyncevent.PhaseAnnounced && req.ResultCode != asyncevent.ResultNotDrawn {
		if d := p.proof(r, req.EventID); d != nil {
			v.Verify = verifyOf(d, req.RequestID)
		}
	}
	if v.Release != nil {
		v.Release.Token = p.token(who.UserID, req.RequestID)
	}
	if after := pollEvery(req, now); after > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(after/time.Second)))
		v.updating(int(after/time.Second), s.paused)
	}
	return p.render(w, http.StatusOK, v)
}

// proof is the event's Draw record once its seed is revealed, read once per event
// and kept (the record never changes after its freeze), so that a poll of a page
// costs what the API's does; nil while it cannot be read or shows no seed yet.
func (p *requestPage) proof(r *http.Request, eventID string) *asyncevent.DrawRecord {
	if d := p.proofs.get(eventID); d != nil {
		return d
	}
	d, err := p.srv.client.GetDraw(r.Context(), eventID)
	if err != nil || d.Seed == "" || d.EntriesHash == "" {
		return nil
	}
	p.proofs.put(eventID, d)
	return d
}

// proofCache keeps the draws' records the pages show, at most maxProofs of them: a
// server that outlives many events forgets them all at once, and reads each again
// when a page next asks.
type proofCache struct {
	mu    sync.Mutex
	draws map[string]*asyncevent.DrawRecord
}

const maxProofs = 1024

func (c *proofCache) get(eventID string) *asyncevent.DrawRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.draws[eventID]
}

func (c *proofCache) put(eventID string, d *asyncevent.DrawRecord) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.draws == nil || len(c.draws) >= maxProofs {
		c.draws = map[string]*asyncevent.DrawRecord{}
	}
	c.draws[eventID] = d
}

// release is POST /requests/{requestId}/page/release: the Release button of a HELD
// or WAITLISTED request, with the form's token (bound to the caller and the
// request) and, when the browser tells it, from the page's own origin (checked
// first, at its route); then back to the page (303).
func (p *requestPage) release(w http.ResponseWriter, r *http.Request, lang string, who Principal, req *asyncevent.Request) error {
	if !hmac.Equal([]byte(r.PostFormValue(releaseField)), []byte(p.token(who.UserID, req.RequestID))) {
		p.plain(w, r, lang, http.StatusForbidden, "forbidden")
		return nil
	}
	if _, err := p.srv.client.Release(r.Context(), req.RequestID); err != nil {
		return err
	}
	http.Redirect(w, r, "/requests/"+url.PathEscape(req.RequestID)+pagePath, http.StatusSeeOther)
	return nil
}

// releaseField is the Release form's token field.
const releaseField = "token"

// token is the Release form's token of user's request: it proves the form came from
// a page this server rendered for them.
func (p *requestPage) token(userID, requestID string) string {
	return base64.RawURLEncoding.EncodeToString(mac(p.key, userID+"\x00"+requestID))
}

// unavailableRetry is when the page that could not read a request tries again.
const unavailableRetry = 5

// unavailable answers 503 with a page that asks for request id's page again by
// itself (whether a view or a Release failed): a read refused at a sale's peak must
// not leave the user on a page that never moves.
func (p *requestPage) unavailable(w http.ResponseWriter, r *http.Request, lang, id string) {
	w.Header().Set("Retry-After", strconv.Itoa(unavailableRetry))
	v := p.plainView(lang, "unavailable")
	v.Next = "/requests/" + url.PathEscape(id) + pagePath
	v.updating(unavailableRetry, false)
	p.write(w, r, http.StatusServiceUnavailable, v)
}

// plain answers a page of one message (text key), with status.
func (p *requestPage) plain(w http.ResponseWriter, r *http.Request, lang string, status int, key string) {
	v := p.plainView(lang, key)
	if status == http.StatusUnauthorized {
		v.SignIn = p.signIn
	}
	p.write(w, r, status, v)
}

func (p *requestPage) plainView(lang, key string) *pageView {
	v := &pageView{Lang: lang, T: p.textsOf(lang), Style: p.style, State: "plain", Script: p.script}
	v.Heading, v.Live = v.T[key+".title"], v.T[key+".body"]
	return v
}

// write renders a plain page, logging a failure (the answer has begun).
func (p *requestPage) write(w http.ResponseWriter, r *http.Request, status int, v *pageView) {
	if err := p.render(w, status, v); err != nil {
		p.srv.logger.ErrorContext(r.Context(), "request page: a plain page failed", slog.Any("error", err))
	}
}

// render writes v with status and the page's headers: nothing but its own inline
// style and its script (by nonce), the service's stylesheet, fonts and images, and
// fetches from its own origin; no framing, no cache.
func (p *requestPage) render(w http.ResponseWriter, status int, v *pageView) error {
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce)
	v.Nonce = base64.RawURLEncoding.EncodeToString(nonce) // no character html/template escapes
	var buf bytes.Buffer
	if err := p.tmpl.Execute(&buf, v); err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+v.Nonce+"'; connect-src 'self'; style-src 'self' 'nonce-"+v.Nonce+"'; "+
		"font-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Language", v.Lang)
	h.Set("Vary", "Accept-Language")
	w.WriteHeader(status)
	_, err := w.Write(buf.Bytes())
	return err
}

// textsOf returns the page's words in lang, the service's own over them.
func (p *requestPage) textsOf(lang string) map[string]string {
	t := make(map[string]string, len(pageTexts[lang]))
	for k, v := range pageTexts[lang] {
		t[k] = v
	}
	for k, v := range p.texts[lang] {
		t[k] = v
	}
	return t
}
