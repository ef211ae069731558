package httpapi

// The admin UI's sign-in. A browser cannot hold a bearer token for every request,
// so the UI exchanges one for a cookie:
//
//   - POST /admin/ui/login takes an API token (the same HS256 JWT as the API). It is
//     verified exactly as the API verifies a bearer token; one without role admin is
//     403, an invalid or expired one 401. The token itself is not kept.
//   - The session cookie is self-contained and signed: base64url(JSON {sub, role,
//     exp, n}) "." base64url(HMAC-SHA256(K_session, payload)), where n is a random
//     nonce and exp is the earlier of the token's exp and now + SessionTTL. Nothing is
//     stored on the server, so a session cannot be revoked before its exp except by
//     changing the JWT secret (which ends every session and token at once); logout
//     deletes the cookie.
//   - The cookie is HttpOnly, SameSite=Strict, Path=/admin/ui/, and Secure when the
//     request came over TLS (or through a proxy that says X-Forwarded-Proto: https).
//   - Every POST form carries a CSRF token, checked before anything else:
//     HMAC-SHA256(K_csrf, "session|" + cookie value), so it is bound to the session
//     and changes with every sign-in. The login form, which has no session yet, is
//     bound the same way to a random nonce in a short-lived login cookie.
//
// K_session and K_csrf are derived from the JWT secret with HMAC-SHA256 and distinct
// labels, so no token, session or CSRF value can be replayed as another.

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/asyncevent/asyncevent"
)

// The cookies of the admin UI.
const (
	sessionCookieName = "asyncevent_admin_session"
	loginCookieName   = "asyncevent_admin_login"
	csrfFieldName     = "csrf"
	uiCookiePath      = uiPrefix // the cookies go to the UI's paths only, never to the API
	loginCookieTTL    = time.Hour
)

// session is the payload of the session cookie.
type session struct {
	UserID string `json:"sub"`
	Role   Role   `json:"role"`
	Expiry int64  `json:"exp"` // unix seconds
	Nonce  string `json:"n"`
}

// sessionKeys signs sessions and CSRF tokens.
type sessionKeys struct {
	session []byte
	csrf    []byte
}

func newSessionKeys(secret []byte) sessionKeys {
	return sessionKeys{
		session: deriveKey(secret, "asyncevent admin-ui session v1"),
		csrf:    deriveKey(secret, "asyncevent admin-ui csrf v1"),
	}
}

func deriveKey(secret []byte, label string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(label))
	return m.Sum(nil)
}

func mac(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

var b64 = base64.RawURLEncoding

// seal returns the cookie value of s.
func (k sessionKeys) seal(s session) string {
	payload, _ := json.Marshal(s) // a session always marshals
	p := b64.EncodeToString(payload)
	return p + "." + b64.EncodeToString(mac(k.session, p))
}

// open returns the session of a cookie value whose signature holds, that has not
// expired at now, and that names an admin with a valid user ID.
func (k sessionKeys) open(value string, now time.Time) (session, bool) {
	p, sig, ok := strings.Cut(value, ".")
	if !ok {
		return session{}, false
	}
	got, err := b64.DecodeString(sig)
	if err != nil || !hmac.Equal(got, mac(k.session, p)) {
		return session{}, false
	}
	payload, err := b64.DecodeString(p)
	if err != nil {
		return session{}, false
	}
	var s session
	if err := json.Unmarshal(payload, &s); err != nil {
		return session{}, false
	}
	if s.Role != RoleAdmin || now.Unix() >= s.Expiry || asyncevent.ValidateID("sub", s.UserID) != nil {
		return session{}, false
	}
	return s, true
}

// csrfFor returns the CSRF token of the forms of the session whose cookie value
// is sessionValue.
func (k sessionKeys) csrfFor(sessionValue string) string {
	return b64.EncodeToString(mac(k.csrf, "session|"+sessionValue))
}

// loginCSRF returns the CSRF token of the login form for the login cookie's nonce.
func (k sessionKeys) loginCSRF(nonce string) string {
	return b64.EncodeToString(mac(k.csrf, "login|"+nonce))
}

// checkToken reports whether got (a form's csrf field) is want, in constant time.
func checkToken(got, want string) bool {
	return got != "" && hmac.Equal([]byte(got), []byte(want))
}

func randomNonce() string {
	b := make([]byte, 18)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return b64.EncodeToString(b)
}

// isTLS reports whether the browser reached us over TLS, directly or through a
// proxy that says so. It only decides the cookie's Secure flag, which the header
// can make stricter but never weaker.
func isTLS(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

func uiCookie(r *http.Request, name, value string, expires time.Time, now time.Time) *http.Cookie {
	c := &http.Cookie{
		Name:     name,
		Value:    value,
		Path:     uiCookiePath,
		HttpOnly: true,
		Secure:   isTLS(r),
		SameSite: http.SameSiteStrictMode,
	}
	if expires.IsZero() {
		c.MaxAge = -1 // delete
	} else {
		c.Expires = expires.UTC()
		c.MaxAge = max(1, int(expires.Sub(now).Seconds()))
	}
	return c
}

// verifyLoginToken verifies an API token as the API would for an admin route and
// returns its caller and expiry (zero when the Authenticator does not know it): a
// 401 error for an invalid or expired token, 403 for a valid one without role admin.
func (u *adminUI) verifyLoginToken(tok string) (Principal, time.Time, error) {
	req := &http.Request{Header: http.Header{"Authorization": {"Bearer " + strings.TrimSpace(tok)}}}
	p, err := u.srv.authenticate(req, AdminOnly)
	if err != nil {
		return p, time.Time{}, err
	}
	return p, p.ExpiresAt, nil
}
