package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

// sign signs claims with method and key, for tokens MintToken would never make.
func sign(t *testing.T, method jwt.SigningMethod, key any, claims jwt.Claims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(method, claims).SignedString(key)
	require.NoError(t, err)
	return s
}

func claimsFor(sub string, role Role, exp time.Time) Claims {
	return Claims{Role: role, RegisteredClaims: jwt.RegisteredClaims{Subject: sub, ExpiresAt: jwt.NewNumericDate(exp)}}
}

func TestTokensAreChecked(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createFirstCome("sale", 5)
	hour := time.Now().Add(time.Hour)
	valid := token(t, "ann", RoleAdmin)
	header, payload, _ := strings.Cut(valid, ".")
	payload, _, _ = strings.Cut(payload, ".")

	for _, c := range []struct {
		name          string
		authorization string
		challenge     string
	}{
		{"no token", "", `Bearer realm="asyncevent"`},
		{"basic auth", "Basic YWRtaW46YWRtaW4=", `Bearer realm="asyncevent"`},
		{"empty bearer", "Bearer ", `Bearer realm="asyncevent"`},
		{"garbage", "Bearer not.a.jwt", `Bearer realm="asyncevent", error="invalid_token"`},
		{"forged", "Bearer " + sign(t, jwt.SigningMethodHS256, []byte("some-other-secret-0123456789abcdef"), claimsFor("ann", RoleAdmin, hour)), `Bearer realm="asyncevent", error="invalid_token"`},
		{"tampered payload", "Bearer " + header + "." + strings.TrimRight(payload, "A") + "B." + strings.Split(valid, ".")[2], `Bearer realm="asyncevent", error="invalid_token"`},
		{"expired", "Bearer " + mustMint(t, "ann", RoleAdmin, time.Now().Add(-time.Minute)), `Bearer realm="asyncevent", error="invalid_token"`},
		{"alg none", "Bearer " + sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, claimsFor("ann", RoleAdmin, hour)), `Bearer realm="asyncevent", error="invalid_token"`},
		{"alg HS384, same secret", "Bearer " + sign(t, jwt.SigningMethodHS384, testSecret, claimsFor("ann", RoleAdmin, hour)), `Bearer realm="asyncevent", error="invalid_token"`},
		{"alg HS512, same secret", "Bearer " + sign(t, jwt.SigningMethodHS512, testSecret, claimsFor("ann", RoleAdmin, hour)), `Bearer realm="asyncevent", error="invalid_token"`},
		{"no exp", "Bearer " + sign(t, jwt.SigningMethodHS256, testSecret, Claims{Role: RoleAdmin, RegisteredClaims: jwt.RegisteredClaims{Subject: "ann"}}), `Bearer realm="asyncevent", error="invalid_token"`},
		{"not yet valid", "Bearer " + sign(t, jwt.SigningMethodHS256, testSecret, Claims{Role: RoleAdmin, RegisteredClaims: jwt.RegisteredClaims{Subject: "ann", ExpiresAt: jwt.NewNumericDate(hour), NotBefore: jwt.NewNumericDate(time.Now().Add(30 * time.Minute))}}), `Bearer realm="asyncevent", error="invalid_token"`},
		{"iat in the future", "Bearer " + sign(t, jwt.SigningMethodHS256, testSecret, Claims{Role: RoleAdmin, RegisteredClaims: jwt.RegisteredClaims{Subject: "ann", ExpiresAt: jwt.NewNumericDate(hour), IssuedAt: jwt.NewNumericDate(time.Now().Add(30 * time.Minute))}}), `Bearer realm="asyncevent", error="invalid_token"`},
		{"exp a numeric string", "Bearer " + sign(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"sub": "ann", "role": "admin", "exp": strconv.FormatInt(hour.Unix(), 10)}), `Bearer realm="asyncevent", error="invalid_token"`},
		{"iat a numeric string", "Bearer " + sign(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"sub": "ann", "role": "admin", "exp": hour.Unix(), "iat": strconv.FormatInt(time.Now().Unix(), 10)}), `Bearer realm="asyncevent", error="invalid_token"`},
		{"no sub", "Bearer " + sign(t, jwt.SigningMethodHS256, testSecret, claimsFor("", RoleAdmin, hour)), `Bearer realm="asyncevent", error="invalid_token"`},
		{"sub with #", "Bearer " + sign(t, jwt.SigningMethodHS256, testSecret, claimsFor("ann#1", RoleAdmin, hour)), `Bearer realm="asyncevent", error="invalid_token"`},
		{"sub too long", "Bearer " + sign(t, jwt.SigningMethodHS256, testSecret, claimsFor(strings.Repeat("a", 500), RoleAdmin, hour)), `Bearer realm="asyncevent", error="invalid_token"`},
	} {
		for _, path := range []string{"/me/participations", "/admin/events/sale"} {
			req, err := http.NewRequest("GET", e.ts.URL+path, nil)
			require.NoError(t, err)
			if c.authorization != "" {
				req.Header.Set("Authorization", c.authorization)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s on %s", c.name, path)
			assert.Equal(t, ProblemContentType, resp.Header.Get("Content-Type"), c.name)
			assert.Equal(t, c.challenge, resp.Header.Get("WWW-Authenticate"), c.name)
		}
	}

	// Within the leeway an expired token still passes; the leeway is small.
	r := e.do("GET", "/me/participations", mustMint(t, "ann", RoleUser, time.Now().Add(-3*time.Second)), nil)
	assert.Equal(t, http.StatusOK, r.status, "3s after exp, within the 10s leeway")
	r = e.do("GET", "/me/participations", mustMint(t, "ann", RoleUser, time.Now().Add(-30*time.Second)), nil)
	assert.Equal(t, http.StatusUnauthorized, r.status, "30s after exp")
	assert.Equal(t, CodeUnauthorized, r.problem(t).Code)

	// A lower-case scheme is fine (RFC 7235: case-insensitive).
	req, err := http.NewRequest("GET", e.ts.URL+"/me/participations", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "bearer "+valid)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

func mustMint(t *testing.T, user string, role Role, exp time.Time) string {
	t.Helper()
	tok, err := MintToken(testSecret, user, role, exp)
	require.NoError(t, err)
	return tok
}

func TestUserTokenOnAdminRoutesIs403(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createFirstCome("sale", 5)
	_, p := e.participate("sale", "ann")
	for _, role := range []Role{RoleUser, "", "superuser", "Admin"} {
		tok := mustMint(t, "ann", role, time.Now().Add(time.Hour))
		for _, route := range []string{
			"POST /admin/events",
			"GET /admin/events/sale",
			"GET /admin/events/sale/requests",
			"GET /admin/events/sale/stats",
			"POST /admin/events/sale/draw",
			"GET /admin/events/sale/draw/verify",
			"GET /admin/requests/" + p.RequestID,
			"GET /admin/requests/" + p.RequestID + "/logs",
		} {
			method, path, _ := strings.Cut(route, " ")
			r := e.do(method, path, tok, `{"eventId":"x","eventType":"FIRST_COME","capacityTotal":1}`)
			assert.Equal(t, http.StatusForbidden, r.status, "role %q: %s", role, route)
			assert.Equal(t, CodeForbidden, r.problem(t).Code)
		}
	}
	r := e.do("GET", "/admin/events/sale", e.admin(), nil)
	assert.Equal(t, http.StatusOK, r.status)
	_, err := e.client.GetEvent(t.Context(), "x")
	assert.Error(t, err, "the refused create wrote nothing")
}

func TestMintToken(t *testing.T) {
	t.Parallel()
	_, err := MintToken(testSecret, "a#b", RoleUser, time.Now().Add(time.Hour))
	assert.Error(t, err, "a sub that the server would refuse is not minted")

	tok, err := MintToken(testSecret, "ann", RoleAdmin, time.Now().Add(time.Hour))
	require.NoError(t, err)
	var c Claims
	parsed, err := jwt.ParseWithClaims(tok, &c, func(*jwt.Token) (any, error) { return testSecret, nil })
	require.NoError(t, err)
	assert.Equal(t, "HS256", parsed.Method.Alg())
	assert.Equal(t, "ann", c.Subject)
	assert.Equal(t, RoleAdmin, c.Role)
	require.NotNil(t, c.ExpiresAt)
	require.NotNil(t, c.IssuedAt)
}

func TestJWTAuthenticatorOptions(t *testing.T) {
	t.Parallel()
	_, err := NewJWTAuthenticator([]byte("short"), JWTOptions{})
	assert.ErrorContains(t, err, "want at least 32")
	_, err = NewJWTAuthenticator(testSecret, JWTOptions{Leeway: time.Hour})
	assert.ErrorContains(t, err, "leeway")

	// A numeric exp passes and tells the principal's expiry.
	a := testAuth(t)
	exp := time.Now().Add(time.Hour).Truncate(time.Second)
	tok, err := a.Mint("ann", RoleAdmin, exp)
	require.NoError(t, err)
	p, err := a.Authenticate(&http.Request{Header: http.Header{"Authorization": {"Bearer " + tok}}})
	require.NoError(t, err)
	assert.Equal(t, Principal{UserID: "ann", Role: RoleAdmin, ExpiresAt: exp}, p)
	_, err = a.Authenticate(&http.Request{Header: http.Header{}})
	assert.ErrorIs(t, err, ErrNoCredentials)
}

// headerAuth trusts an X-User header: a service's own identity layer, for the test.
type headerAuth struct{}

func (headerAuth) Authenticate(r *http.Request) (Principal, error) {
	switch u := r.Header.Get("X-User"); u {
	case "":
		return Principal{}, ErrNoCredentials
	case "mallory":
		return Principal{}, errors.New("revoked: internal detail")
	case "root":
		return Principal{UserID: u, Role: RoleAdmin}, nil
	default:
		return Principal{UserID: u}, nil
	}
}

func TestAnAuthenticatorOfTheService(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(_ *asyncevent.Options, so *ServerOptions) { so.Authenticator = headerAuth{} })
	_, err := e.client.CreateEvent(context.Background(), asyncevent.EventSettings{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 5})
	require.NoError(t, err)
	get := func(path, user string) *http.Response {
		req, err := http.NewRequest("GET", e.ts.URL+path, nil)
		require.NoError(t, err)
		if user != "" {
			req.Header.Set("X-User", user)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	assert.Equal(t, http.StatusUnauthorized, get("/me/participations", "").StatusCode)
	assert.Equal(t, http.StatusUnauthorized, get("/me/participations", "mallory").StatusCode)
	assert.Equal(t, http.StatusOK, get("/me/participations", "ann").StatusCode)
	assert.Equal(t, http.StatusForbidden, get("/admin/events/sale", "ann").StatusCode)
	assert.Equal(t, http.StatusOK, get("/admin/events/sale", "root").StatusCode)

	// The admin UI needs a session secret when the authenticator has none.
	assert.ErrorContains(t, e.srv.MountAdminUI(AdminUIOptions{}), "session secret")
	assert.NoError(t, e.srv.MountAdminUI(AdminUIOptions{SessionSecret: testSecret}))
}

// testCookie is the cookie the tests' sign-in would set.
const testCookie = "asyncevent_token"

// withCookie makes the server's authenticator read the token from testCookie too.
func withCookie(_ *asyncevent.Options, so *ServerOptions) {
	a, err := NewJWTAuthenticator(testSecret, JWTOptions{CookieName: testCookie})
	if err != nil {
		panic(err) // testSecret is long enough
	}
	so.Authenticator = a
}

// send sends a request without a body as a browser would: authorization, if not
// empty, as the Authorization header, cookie, if not empty, as testCookie, then
// headers as name, value pairs.
func (e *env) send(method, path, authorization, cookie string, headers ...string) response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.ts.URL+path, nil)
	require.NoError(e.t, err)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: testCookie, Value: cookie})
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	var body strings.Builder
	_, err = io.Copy(&body, resp.Body)
	require.NoError(e.t, err)
	return response{status: resp.StatusCode, header: resp.Header, body: []byte(body.String())}
}

// A token may come in the cookie of JWTOptions.CookieName when no Authorization
// header comes, checked as strictly as the header's; the header wins; without a
// CookieName, cookies are not read.
func TestTokenCookie(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withCookie)
	e.createFirstCome("sale", 5)
	e.participate("sale", "ann")
	ann, bob := token(t, "ann", RoleUser), token(t, "bob", RoleUser)
	noToken, invalid := `Bearer realm="asyncevent"`, `Bearer realm="asyncevent", error="invalid_token"`

	for _, c := range []struct {
		name, authorization, cookie string
		status                      int
		challenge                   string // of a 401
		requests                    int    // of a 200: the caller's, ann has one
	}{
		{name: "the cookie alone", cookie: ann, status: http.StatusOK, requests: 1},
		{name: "the header wins over the cookie", authorization: "Bearer " + bob, cookie: ann, status: http.StatusOK, requests: 0},
		{name: "a header of another scheme wins too", authorization: "Basic YW5uOmFubg==", cookie: ann, status: http.StatusUnauthorized, challenge: noToken},
		{name: "an empty cookie", cookie: "", status: http.StatusUnauthorized, challenge: noToken},
		{name: "garbage", cookie: "not.a.jwt", status: http.StatusUnauthorized, challenge: invalid},
		{name: "a Bearer prefix in the cookie", cookie: "Bearer " + ann, status: http.StatusUnauthorized, challenge: invalid},
		{name: "forged", cookie: sign(t, jwt.SigningMethodHS256, []byte("some-other-secret-0123456789abcdef"), claimsFor("ann", RoleUser, time.Now().Add(time.Hour))), status: http.StatusUnauthorized, challenge: invalid},
		{name: "alg none", cookie: sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, claimsFor("ann", RoleUser, time.Now().Add(time.Hour))), status: http.StatusUnauthorized, challenge: invalid},
		{name: "expired", cookie: mustMint(t, "ann", RoleUser, time.Now().Add(-time.Minute)), status: http.StatusUnauthorized, challenge: invalid},
		{name: "exp a numeric string", cookie: sign(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"sub": "ann", "exp": strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)}), status: http.StatusUnauthorized, challenge: invalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.send("GET", "/me/participations", c.authorization, c.cookie)
			require.Equal(t, c.status, r.status, "body: %s", r.body)
			if c.status == http.StatusUnauthorized {
				assert.Equal(t, CodeUnauthorized, r.problem(t).Code)
				assert.Equal(t, c.challenge, r.header.Get("WWW-Authenticate"))
				return
			}
			assert.Len(t, decode[PageView](t, r).Requests, c.requests)
		})
	}

	t.Run("a cookie of another name", func(t *testing.T) {
		req, err := http.NewRequest("GET", e.ts.URL+"/me/participations", nil)
		require.NoError(t, err)
		req.AddCookie(&http.Cookie{Name: "session", Value: ann})
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	})
	t.Run("no CookieName reads no cookie", func(t *testing.T) {
		plain := newEnv(t)
		assert.Equal(t, http.StatusUnauthorized, plain.send("GET", "/me/participations", "", ann).status)
		assert.Equal(t, http.StatusOK, plain.send("GET", "/me/participations", "Bearer "+ann, "").status)
	})
	t.Run("JWKSAuthenticator", func(t *testing.T) {
		p := newIDP(t)
		tok := p.sign("rsa-1", jwt.SigningMethodRS256, p.claims("ann"))
		withCookie := func(value string) *http.Request {
			r := &http.Request{Header: http.Header{}}
			r.AddCookie(&http.Cookie{Name: testCookie, Value: value})
			return r
		}
		got, err := p.auth(JWKSOptions{CookieName: testCookie}).Authenticate(withCookie(tok))
		require.NoError(t, err)
		assert.Equal(t, "ann", got.UserID)
		r := withCookie(tok)
		r.Header.Set("Authorization", "Bearer "+p.sign("ec-1", jwt.SigningMethodES256, p.claims("bob")))
		got, err = p.auth(JWKSOptions{CookieName: testCookie}).Authenticate(r)
		require.NoError(t, err)
		assert.Equal(t, "bob", got.UserID, "the header wins")
		_, err = p.auth(JWKSOptions{CookieName: testCookie}).Authenticate(withCookie("not.a.jwt"))
		var he *httpError
		require.ErrorAs(t, err, &he)
		assert.Equal(t, http.StatusUnauthorized, he.status)
		_, err = p.auth(JWKSOptions{}).Authenticate(withCookie(tok))
		assert.ErrorIs(t, err, ErrNoCredentials, "no CookieName: the cookie is not read")
	})
}

// A write with no bearer token (a cookie's, which the browser attaches whatever page
// makes the request) from another site is 403 cross_site and writes nothing; with a
// bearer token, from the server's own origin, or from a client that is not a
// browser, it goes through; reads go through from anywhere.
func TestCrossSiteWrites(t *testing.T) {
	t.Parallel()
	clock := asynceventtest.NewClock(time.Now().Truncate(time.Second))
	const rows = 12
	s := newHoldsSale(t, newEnv(t, withStatusLog, withClock(clock), withCookie), clock, rows, rows)
	own := strings.TrimPrefix(s.ts.URL, "http://")

	for i, c := range []struct {
		name    string
		bearer  bool     // the token in the Authorization header rather than the cookie
		headers []string // what the browser tells
		refused bool
	}{
		{name: "Sec-Fetch-Site cross-site", headers: []string{"Sec-Fetch-Site", "cross-site"}, refused: true},
		{name: "Sec-Fetch-Site same-site", headers: []string{"Sec-Fetch-Site", "same-site"}, refused: true},
		{name: "Origin of another host", headers: []string{"Origin", "https://evil.example"}, refused: true},
		{name: "Origin of another port", headers: []string{"Origin", "http://" + strings.Split(own, ":")[0] + ":1"}, refused: true},
		{name: "Origin null", headers: []string{"Origin", "null"}, refused: true},
		{name: "Sec-Fetch-Site wins over Origin", headers: []string{"Sec-Fetch-Site", "cross-site", "Origin", s.ts.URL}, refused: true},
		{name: "a bearer token from another site", bearer: true, headers: []string{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"}},
		{name: "Sec-Fetch-Site same-origin", headers: []string{"Sec-Fetch-Site", "same-origin"}},
		{name: "Sec-Fetch-Site none", headers: []string{"Sec-Fetch-Site", "none"}},
		{name: "Origin of this server", headers: []string{"Origin", s.ts.URL}},
		{name: "Origin of this server by another scheme", headers: []string{"Origin", "https://" + own}},
		{name: "neither: not a browser"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// tok as the Authorization header, or as the cookie.
			credentials := func(tok string) (authorization, cookie string) {
				if c.bearer {
					return "Bearer " + tok, ""
				}
				return "", tok
			}
			id, user := s.held[i], fmt.Sprintf("cross-%d", i)
			before := s.state(id)
			authorization, cookie := credentials(s.owner(id))
			release := s.send("POST", "/requests/"+id+"/release", authorization, cookie, c.headers...)
			authorization, cookie = credentials(token(t, user, RoleUser))
			participation := s.send("POST", "/events/sale/participations", authorization, cookie, c.headers...)
			_, lookup := s.client.LookupParticipation(t.Context(), "sale", user)
			if c.refused {
				for _, r := range []response{release, participation} {
					require.Equal(t, http.StatusForbidden, r.status, "body: %s", r.body)
					assert.Equal(t, CodeCrossSite, r.problem(t).Code)
				}
				assert.Equal(t, before, s.state(id), "the release wrote nothing")
				assert.ErrorIs(t, lookup, asyncevent.ErrNotFound, "the participation wrote nothing")
				return
			}
			require.Equal(t, http.StatusOK, release.status, "body: %s", release.body)
			assert.Equal(t, asyncevent.StatusRejected, decode[RequestView](t, release).Status)
			require.Equal(t, http.StatusAccepted, participation.status, "body: %s", participation.body)
			assert.NoError(t, lookup)
		})
	}

	t.Run("reads from another site", func(t *testing.T) {
		id := s.held[0]
		r := s.send("GET", "/requests/"+id, "", s.owner(id), "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")
		assert.Equal(t, http.StatusOK, r.status, "a link from another site opens: body: %s", r.body)
	})
	t.Run("refused before authentication", func(t *testing.T) {
		r := s.send("POST", "/events/sale/participations", "", "", "Sec-Fetch-Site", "cross-site")
		assert.Equal(t, http.StatusForbidden, r.status)
		assert.Equal(t, CodeCrossSite, r.problem(t).Code)
	})
	t.Run("HTTP Basic is ambient too", func(t *testing.T) {
		// A browser sends the Basic credentials it remembers by itself: only a
		// Bearer header is exempt.
		r := s.send("POST", "/events/sale/participations", "Basic YW5uOmFubg==", "", "Origin", "https://evil.example")
		assert.Equal(t, http.StatusForbidden, r.status)
		assert.Equal(t, CodeCrossSite, r.problem(t).Code)
	})
}
