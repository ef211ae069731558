package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
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
