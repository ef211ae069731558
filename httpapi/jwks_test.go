package httpapi

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
)

// idp is an identity provider of the tests: its keys, and its JWK set served over
// HTTP (the public halves only), counting the reads.
type idp struct {
	t      *testing.T
	mu     sync.Mutex
	keys   map[string]crypto.Signer // by kid
	served []string                 // the kids the set publishes
	noAlg  map[string]bool          // kids published without alg (as Entra ID's are)
	use    map[string]jwkset.USE    // kids published with another use than sig
	delay  time.Duration            // how long a read of the set takes
	reads  atomic.Int64
	ts     *httptest.Server
}

const (
	testIssuer   = "https://idp.example.test/pool-1"
	testAudience = "asyncevent-api"
)

func newIDP(t *testing.T) *idp {
	p := &idp{t: t, keys: map[string]crypto.Signer{}, noAlg: map[string]bool{}, use: map[string]jwkset.USE{}}
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	p.keys["rsa-1"], p.keys["ec-1"] = rk, ek
	p.served = []string{"rsa-1", "ec-1"}
	p.ts = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.ts.Close)
	return p
}

// serve answers the JWK set, made with jwkset from the public keys.
func (p *idp) serve(w http.ResponseWriter, r *http.Request) {
	p.reads.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	time.Sleep(p.delay)
	set := jwkset.NewMemoryStorage()
	for _, kid := range p.served {
		alg := jwkset.AlgRS256
		if _, ok := p.keys[kid].(*ecdsa.PrivateKey); ok {
			alg = jwkset.AlgES256
		}
		if p.noAlg[kid] {
			alg = ""
		}
		use := jwkset.UseSig
		if u, ok := p.use[kid]; ok {
			use = u
		}
		k, err := jwkset.NewJWKFromKey(p.keys[kid].Public(), jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: kid, ALG: alg, USE: use}, Validate: jwkset.JWKValidateOptions{SkipAll: true}})
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		if err := set.KeyWrite(r.Context(), k); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
	}
	raw, err := set.JSONPublic(r.Context())
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(raw)
}

// rotate adds a key under kid to the set (RSA).
func (p *idp) rotate(kid string) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(p.t, err)
	p.add(kid, k)
}

// add publishes key under kid.
func (p *idp) add(kid string, key crypto.Signer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys[kid] = key
	p.served = append(p.served, kid)
}

// claims are a valid token's, for sub.
func (p *idp) claims(sub string, groups ...string) jwt.MapClaims {
	now := time.Now()
	c := jwt.MapClaims{"iss": testIssuer, "aud": testAudience, "sub": sub, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	if groups != nil {
		c["cognito:groups"] = groups
	}
	return c
}

// sign signs claims with the key kid under alg, the kid in the header.
func (p *idp) sign(kid string, alg jwt.SigningMethod, claims jwt.MapClaims) string {
	tok := jwt.NewWithClaims(alg, claims)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(p.keys[kid])
	require.NoError(p.t, err)
	return s
}

func (p *idp) auth(opts JWKSOptions) *JWKSAuthenticator {
	opts.URL, opts.Issuer, opts.Audience = p.ts.URL+"/.well-known/jwks.json", testIssuer, testAudience
	if opts.RoleClaim == "" {
		opts.RoleClaim = "cognito:groups"
	}
	a, err := NewJWKSAuthenticator(context.Background(), opts)
	require.NoError(p.t, err)
	p.t.Cleanup(a.Close)
	return a
}

// Tokens of an identity provider: RS256 and ES256 pass with the issuer and audience
// configured, roles from cognito:groups; every forgery and every token out of its
// time or meant for another issuer or API is 401 and writes nothing.
func TestJWKSTokens(t *testing.T) {
	t.Parallel()
	p := newIDP(t)
	a := p.auth(JWKSOptions{UnknownKIDRefresh: time.Hour})
	e := newEnv(t, func(_ *asyncevent.Options, so *ServerOptions) { so.Authenticator = a })
	_, err := e.client.CreateEvent(context.Background(), asyncevent.EventSettings{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 5})
	require.NoError(t, err)

	rsaPub, err := x509.MarshalPKIXPublicKey(p.keys["rsa-1"].Public())
	require.NoError(t, err)
	pemPub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: rsaPub})
	hsWithPublic := jwt.NewWithClaims(jwt.SigningMethodHS256, p.claims("mallory"))
	hsWithPublic.Header["kid"] = "rsa-1"
	hsForged, err := hsWithPublic.SignedString(pemPub)
	require.NoError(t, err)
	none := jwt.NewWithClaims(jwt.SigningMethodNone, p.claims("mallory"))
	none.Header["kid"] = "rsa-1"
	noneForged, err := none.SignedString(jwt.UnsafeAllowNoneSignatureType)
	require.NoError(t, err)
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	foreign := jwt.NewWithClaims(jwt.SigningMethodRS256, p.claims("mallory"))
	foreign.Header["kid"] = "rsa-1"
	foreignSigned, err := foreign.SignedString(other)
	require.NoError(t, err)
	with := func(k string, v any) jwt.MapClaims { c := p.claims("mallory"); c[k] = v; return c }
	without := func(k string) jwt.MapClaims { c := p.claims("mallory"); delete(c, k); return c }

	for name, tok := range map[string]string{
		"wrong issuer":                  p.sign("rsa-1", jwt.SigningMethodRS256, with("iss", "https://evil.example.test/")),
		"no issuer":                     p.sign("rsa-1", jwt.SigningMethodRS256, without("iss")),
		"wrong audience":                p.sign("rsa-1", jwt.SigningMethodRS256, with("aud", "another-api")),
		"no audience":                   p.sign("rsa-1", jwt.SigningMethodRS256, without("aud")),
		"unknown kid":                   signUnknown(t, p),
		"no kid":                        signNoKID(t, p),
		"alg HS256 with the public key": hsForged,
		"alg none":                      noneForged,
		"signed by another key":         foreignSigned,
		"RS256 key, ES256 alg":          signWrongAlg(t, p),
		"expired":                       p.sign("rsa-1", jwt.SigningMethodRS256, with("exp", time.Now().Add(-time.Hour).Unix())),
		"no exp":                        p.sign("rsa-1", jwt.SigningMethodRS256, without("exp")),
		"not yet valid":                 p.sign("rsa-1", jwt.SigningMethodRS256, with("nbf", time.Now().Add(time.Hour).Unix())),
		"issued in the future":          p.sign("ec-1", jwt.SigningMethodES256, with("iat", time.Now().Add(time.Hour).Unix())),
		"exp a numeric string":          p.sign("rsa-1", jwt.SigningMethodRS256, with("exp", "99999999999")),
		"RS384 with the RSA key":        p.sign("rsa-1", jwt.SigningMethodRS384, p.claims("mallory")),
	} {
		r := e.do("POST", "/events/sale/participations", tok, nil)
		assert.Equal(t, http.StatusUnauthorized, r.status, "%s: %s", name, r.body)
		assert.Contains(t, r.header.Get("WWW-Authenticate"), `error="invalid_token"`, name)
	}
	_, err = e.client.LookupParticipation(context.Background(), "sale", "mallory")
	assert.ErrorIs(t, err, asyncevent.ErrNotFound, "no refused token wrote anything")

	for name, c := range map[string]struct {
		tok    string
		status int
	}{
		"RS256 user":           {p.sign("rsa-1", jwt.SigningMethodRS256, p.claims("ann")), http.StatusAccepted},
		"ES256 user":           {p.sign("ec-1", jwt.SigningMethodES256, p.claims("bob")), http.StatusAccepted},
		"RS256 admin on admin": {p.sign("rsa-1", jwt.SigningMethodRS256, p.claims("root", "staff", "admin")), http.StatusOK},
		"RS256 user on admin":  {p.sign("rsa-1", jwt.SigningMethodRS256, p.claims("ann", "staff")), http.StatusForbidden},
	} {
		path, method := "/events/sale/participations", "POST"
		if c.status != http.StatusAccepted {
			path, method = "/admin/events/sale", "GET"
		}
		r := e.do(method, path, c.tok, nil)
		assert.Equal(t, c.status, r.status, "%s: %s", name, r.body)
	}
}

// A token signed with a key the provider has just published is taken after one read
// of the set; tokens of kids still unknown read it at most once per
// UnknownKIDRefresh, however many come.
func TestJWKSKeyRotation(t *testing.T) {
	t.Parallel()
	p := newIDP(t)
	a := p.auth(JWKSOptions{UnknownKIDRefresh: time.Hour})
	read := p.reads.Load()
	p.rotate("rsa-2")
	req := func(tok string) *http.Request {
		r := httptest.NewRequest("GET", "/me/participations", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		return r
	}
	who, err := a.Authenticate(req(p.sign("rsa-2", jwt.SigningMethodRS256, p.claims("ann"))))
	require.NoError(t, err, "the new key is read")
	assert.Equal(t, "ann", who.UserID)
	assert.Equal(t, read+1, p.reads.Load())
	for range 50 {
		_, err := a.Authenticate(req(signUnknown(t, p)))
		require.Error(t, err)
	}
	assert.Equal(t, read+1, p.reads.Load(), "unknown kids read the set at most once an UnknownKIDRefresh")
}

func TestJWKSOptions(t *testing.T) {
	t.Parallel()
	p := newIDP(t)
	base := JWKSOptions{URL: p.ts.URL, Issuer: testIssuer, Audience: testAudience}
	for name, o := range map[string]JWKSOptions{
		"no URL":             {Issuer: testIssuer, Audience: testAudience},
		"http, not loopback": {URL: "http://idp.example.test/jwks.json", Issuer: testIssuer, Audience: testAudience},
		"no issuer":          {URL: p.ts.URL, Audience: testAudience},
		"no audience":        {URL: p.ts.URL, Issuer: testIssuer},
		"leeway of an hour":  {URL: p.ts.URL, Issuer: testIssuer, Audience: testAudience, Leeway: time.Hour},
	} {
		_, err := NewJWKSAuthenticator(context.Background(), o)
		assert.Error(t, err, name)
	}
	dead := base
	dead.URL = "http://127.0.0.1:1/jwks.json"
	_, err := NewJWKSAuthenticator(context.Background(), dead)
	assert.Error(t, err, "a key set that cannot be read at start")
	a, err := NewJWKSAuthenticator(context.Background(), base)
	require.NoError(t, err)
	a.Close()
}

// signUnknown signs with a key the set does not publish.
func signUnknown(t *testing.T, p *idp) string {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, p.claims("mallory"))
	tok.Header["kid"] = "nobody-knows"
	s, err := tok.SignedString(k)
	require.NoError(t, err)
	return s
}

func signNoKID(t *testing.T, p *idp) string {
	s, err := jwt.NewWithClaims(jwt.SigningMethodRS256, p.claims("mallory")).SignedString(p.keys["rsa-1"])
	require.NoError(t, err)
	return s
}

// signWrongAlg signs with the EC key but names the RSA key's kid.
func signWrongAlg(t *testing.T, p *idp) string {
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, p.claims("mallory"))
	tok.Header["kid"] = "rsa-1"
	s, err := tok.SignedString(p.keys["ec-1"])
	require.NoError(t, err)
	return s
}

// Keys as identity providers publish them, and tokens that misuse them: a key without
// alg still fixes the algorithm by its type, and a weak RSA key, a P-384 key, a key
// for encryption and a token with a crit header are refused.
func TestJWKSKeysWithoutAlgAndWeakKeys(t *testing.T) {
	t.Parallel()
	p := newIDP(t)
	weak, err := rsa.GenerateKey(rand.Reader, 1024)
	require.NoError(t, err)
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	require.NoError(t, err)
	enc, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	plain, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	p.add("weak", weak)
	p.add("p384", p384)
	p.add("enc", enc)
	p.add("plain", plain)
	p.add("plain-ec", ec)
	p.mu.Lock()
	for _, kid := range []string{"weak", "p384", "enc", "plain", "plain-ec"} {
		p.noAlg[kid] = true
	}
	p.use["enc"] = jwkset.UseEnc
	p.mu.Unlock()
	a := p.auth(JWKSOptions{UnknownKIDRefresh: time.Hour})
	req := func(tok string) *http.Request {
		r := httptest.NewRequest("GET", "/me/participations", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		return r
	}
	crit := jwt.NewWithClaims(jwt.SigningMethodRS256, p.claims("mallory"))
	crit.Header["kid"], crit.Header["crit"] = "plain", []string{"exp"}
	critSigned, err := crit.SignedString(plain)
	require.NoError(t, err)
	for name, tok := range map[string]string{
		"RSA key of 1024 bits": p.sign("weak", jwt.SigningMethodRS256, p.claims("mallory")),
		"P-384 key":            p.sign("p384", jwt.SigningMethodES384, p.claims("mallory")),
		"a key for encryption": p.sign("enc", jwt.SigningMethodRS256, p.claims("mallory")),
		"ES256 naming an RSA key, no alg": func() string {
			t := jwt.NewWithClaims(jwt.SigningMethodES256, p.claims("mallory"))
			t.Header["kid"] = "plain"
			s, _ := t.SignedString(ec)
			return s
		}(),
		"a crit header": critSigned,
	} {
		_, err := a.Authenticate(req(tok))
		assert.Error(t, err, name)
	}
	for name, tok := range map[string]string{
		"RS256, a key without alg": p.sign("plain", jwt.SigningMethodRS256, p.claims("ann")),
		"ES256, a key without alg": p.sign("plain-ec", jwt.SigningMethodES256, p.claims("ann")),
	} {
		who, err := a.Authenticate(req(tok))
		if assert.NoError(t, err, name) {
			assert.Equal(t, "ann", who.UserID)
		}
	}
}

// A rotation under load: the requests that come while the set is read again wait
// for that one read and pass; a client that hangs up does not stop the read.
func TestJWKSRotationUnderLoad(t *testing.T) {
	t.Parallel()
	p := newIDP(t)
	a := p.auth(JWKSOptions{UnknownKIDRefresh: time.Hour})
	read := p.reads.Load()
	p.rotate("rsa-2")
	p.mu.Lock()
	p.delay = 300 * time.Millisecond
	p.mu.Unlock()
	tok := p.sign("rsa-2", jwt.SigningMethodRS256, p.claims("ann"))
	gone, hangUp := context.WithCancel(context.Background())
	hangUp()
	r := httptest.NewRequestWithContext(gone, "GET", "/me/participations", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	_, err := a.Authenticate(r)
	require.Error(t, err, "its client hung up")
	var wg sync.WaitGroup
	var passed atomic.Int64
	for range 100 {
		wg.Go(func() {
			r := httptest.NewRequest("GET", "/me/participations", nil)
			r.Header.Set("Authorization", "Bearer "+tok)
			if _, err := a.Authenticate(r); err == nil {
				passed.Add(1)
			}
		})
	}
	wg.Wait()
	assert.EqualValues(t, 100, passed.Load(), "every request waited for the one read")
	assert.Equal(t, read+1, p.reads.Load(), "one read of the set")
}

// The first read of the key set follows the caller's ctx (a provider that hangs does
// not hold up start past it), and a set over MaxJWKSBytes is refused, whether its
// length is told or not.
func TestJWKSFirstReadBounds(t *testing.T) {
	t.Parallel()
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(hang.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := NewJWKSAuthenticator(ctx, JWKSOptions{URL: hang.URL, Issuer: testIssuer, Audience: testAudience})
	require.Error(t, err)
	assert.Less(t, time.Since(start), 5*time.Second, "the caller's ctx ended the read, not the client's 10 s timeout")

	pad := strings.Repeat(" ", MaxJWKSBytes)
	for name, h := range map[string]http.HandlerFunc{
		"told": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(len(pad)+2))
			_, _ = io.WriteString(w, "{"+pad+"}")
		},
		"streamed": func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, `{"keys":[]`)
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, pad+"}")
		},
	} {
		big := httptest.NewServer(h)
		_, err := NewJWKSAuthenticator(context.Background(), JWKSOptions{URL: big.URL, Issuer: testIssuer, Audience: testAudience})
		big.Close()
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "over", name)
	}
}
