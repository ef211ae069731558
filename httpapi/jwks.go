package httpapi

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"
)

// The defaults of JWKSOptions.
const (
	DefaultJWKSRefresh           = time.Hour
	DefaultJWKSUnknownKIDRefresh = time.Minute
	DefaultRoleClaim             = "role"
)

// JWKSOptions configures a JWKSAuthenticator: the tokens of an identity provider
// (Cognito, Auth0, Okta, Entra ID) signed with RS256 or ES256 by keys it publishes at
// a JWKS URL.
type JWKSOptions struct {
	// URL is the identity provider's JWK Set (Cognito:
	// https://cognito-idp.<region>.amazonaws.com/<poolId>/.well-known/jwks.json).
	// Required; https unless the host is a loopback address (tests).
	URL string

	// Issuer is the token's required iss, compared exactly (Cognito:
	// https://cognito-idp.<region>.amazonaws.com/<poolId>; Auth0's ends in "/").
	// Required.
	Issuer string

	// Audience is a value the token's aud must hold (Cognito's ID tokens: the app
	// client ID; Auth0 and Okta: the API's identifier). Required. Cognito's access
	// tokens carry no aud (client_id instead), so with Cognito the API takes ID tokens.
	Audience string

	// RoleClaim names the top-level claim that carries the caller's roles: a string
	// (one role, compared whole) or an array of strings (Cognito puts its groups in
	// "cognito:groups"); a nested claim (Keycloak's realm_access.roles) is not read.
	// Default: "role".
	RoleClaim string

	// AdminRole is the value of RoleClaim that makes a caller an admin (RoleAdmin).
	// Default: "admin".
	AdminRole string

	// Leeway is the clock skew allowed on exp, nbf and iat. Default:
	// DefaultTokenLeeway; at most a minute.
	Leeway time.Duration

	// Refresh is how often the key set is read again. Default: DefaultJWKSRefresh.
	Refresh time.Duration

	// UnknownKIDRefresh bounds how often a token signed with a key the set does not
	// hold (the provider rotated its keys) makes the authenticator read the set again:
	// at most once per UnknownKIDRefresh; a token whose kid is still unknown is 401.
	// Default: DefaultJWKSUnknownKIDRefresh.
	UnknownKIDRefresh time.Duration

	// HTTPClient reads the key set; a set over MaxJWKSBytes is refused. Default: a
	// client with a 10 s timeout.
	HTTPClient *http.Client

	// Clock tells the time for the token checks. Default: time.Now.
	Clock func() time.Time

	// Logger is told of a refresh of the key set that failed. Default: discard.
	Logger *slog.Logger

	// CookieName names a cookie the token may come in when the request has no
	// Authorization header, as JWTOptions.CookieName does. Default: empty, no
	// cookie; the token comes in the header only.
	CookieName string
}

// timeout bounds a read of the key set: the HTTP client's, or 10 seconds.
func (o *JWKSOptions) timeout() time.Duration {
	if o.HTTPClient.Timeout > 0 {
		return o.HTTPClient.Timeout
	}
	return 10 * time.Second
}

// JWKSAuthenticator verifies bearer tokens (or the cookie of JWKSOptions.CookieName)
// signed by an identity provider's keys (RS256 with an RSA key of 2048 bits or more,
// ES256 with a P-256 key) published at a JWKS URL, with the golang-jwt parser over a
// jwkset key set: the key is the one the token's kid names, and the JWK's alg and
// its type fix the algorithm (an RSA key verifies RS256 only, so a token that says
// HS256 or none is refused whatever it carries); iss and aud are required and
// checked, exp is required, nbf and iat are checked with the leeway. The key set is
// read at start, every Refresh, and again for a kid it does not hold: at most once
// per UnknownKIDRefresh, off the request, the requests that come meanwhile waiting
// for that read.
type JWKSAuthenticator struct {
	set        jwkset.Storage // the keys as last read
	refresher  jwkset.Storage // over set: a KeyRead of a kid set lacks reads the set again
	unknownKID *rate.Limiter  // the refreshes for a kid the set lacks
	parser     *jwt.Parser
	opts       JWKSOptions
	cancel     context.CancelFunc

	mu       sync.Mutex
	inflight chan struct{} // closed when the refresh under way ends; nil: none
}

// NewJWKSAuthenticator reads the key set at opts.URL and returns an authenticator of
// the tokens its keys sign. Close stops its refreshes.
func NewJWKSAuthenticator(ctx context.Context, opts JWKSOptions) (*JWKSAuthenticator, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	refreshCtx, cancel := context.WithCancel(context.Background())
	// The first read follows ctx; the refreshes, refreshCtx alone.
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	// The key set's storage, read at start and every Refresh; the refresher over it
	// reads it again for a kid it lacks, which lookup lets through at most once per
	// UnknownKIDRefresh, one refresh at a time.
	limited := *opts.HTTPClient
	limited.Transport = maxBody{base: opts.HTTPClient.Transport}
	set, err := jwkset.NewStorageFromHTTP(opts.URL, jwkset.HTTPClientStorageOptions{
		Client:          &limited,
		Ctx:             refreshCtx,
		HTTPTimeout:     opts.timeout(),
		RefreshInterval: opts.Refresh,
		// A refresh that fails leaves the last key set read standing, and says so.
		RefreshErrorHandler: func(ctx context.Context, err error) {
			opts.Logger.WarnContext(ctx, "the JWK set could not be read again; the keys read before stand", slog.String("url", opts.URL), slog.Any("error", err))
		},
	})
	if err == nil && !stop() {
		err = context.Cause(ctx) // ctx ended as the read did: the refreshes would not run
	}
	if err != nil {
		cancel()
		return nil, fmt.Errorf("httpapi: read the JWK set at %s: %w", opts.URL, err)
	}
	refresher, err := jwkset.NewHTTPClient(jwkset.HTTPClientOptions{
		HTTPURLs:          map[string]jwkset.Storage{opts.URL: set},
		RefreshUnknownKID: rate.NewLimiter(rate.Inf, 1), // gated by lookup
		RateLimitWaitMax:  opts.timeout(),               // the refresh's own deadline
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("httpapi: the JWK set at %s: %w", opts.URL, err)
	}
	if ks, err := set.KeyReadAll(ctx); err != nil || len(ks) == 0 {
		cancel()
		return nil, fmt.Errorf("httpapi: the JWK set at %s holds no key (%v)", opts.URL, err)
	}
	return &JWKSAuthenticator{
		set: set, refresher: refresher, unknownKID: rate.NewLimiter(rate.Every(opts.UnknownKIDRefresh), 1), opts: opts, cancel: cancel,
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{jwt.SigningMethodRS256.Alg(), jwt.SigningMethodES256.Alg()}),
			jwt.WithIssuer(opts.Issuer),
			jwt.WithAudience(opts.Audience),
			jwt.WithExpirationRequired(),
			jwt.WithIssuedAt(),
			jwt.WithLeeway(opts.Leeway),
			jwt.WithTimeFunc(opts.Clock),
		),
	}, nil
}

// check validates the options and fills in the defaults.
func (o *JWKSOptions) check() error {
	u, err := url.Parse(o.URL)
	switch {
	case o.URL == "" || err != nil || u.Host == "":
		return fmt.Errorf("httpapi: JWKSOptions.URL %q is not a URL", o.URL)
	case u.Scheme != "https" && !(u.Scheme == "http" && isLoopback(u.Hostname())):
		return fmt.Errorf("httpapi: JWKSOptions.URL %q must be https (http only on a loopback address)", o.URL)
	case o.Issuer == "":
		return errors.New("httpapi: JWKSOptions.Issuer is required: a token of another issuer would pass")
	case o.Audience == "":
		return errors.New("httpapi: JWKSOptions.Audience is required: a token meant for another API would pass")
	}
	if o.Leeway <= 0 {
		o.Leeway = DefaultTokenLeeway
	}
	if o.Leeway > maxLeeway {
		return fmt.Errorf("httpapi: JWT leeway %s is more than %s", o.Leeway, maxLeeway)
	}
	if o.RoleClaim == "" {
		o.RoleClaim = DefaultRoleClaim
	}
	if o.AdminRole == "" {
		o.AdminRole = string(RoleAdmin)
	}
	if o.Refresh <= 0 {
		o.Refresh = DefaultJWKSRefresh
	}
	if o.UnknownKIDRefresh <= 0 {
		o.UnknownKIDRefresh = DefaultJWKSUnknownKIDRefresh
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// MaxJWKSBytes bounds the JWK set a JWKSAuthenticator reads: a provider's set is a
// few kilobytes, and one that is not should not fill the server's memory.
const MaxJWKSBytes = 1 << 20

// maxBody is a RoundTripper whose response bodies fail past MaxJWKSBytes.
type maxBody struct{ base http.RoundTripper }

func (m maxBody) RoundTrip(r *http.Request) (*http.Response, error) {
	base := m.base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > MaxJWKSBytes {
		resp.Body.Close()
		return nil, fmt.Errorf("the JWK set is %d bytes, over %d", resp.ContentLength, MaxJWKSBytes)
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, left: MaxJWKSBytes}
	return resp, nil
}

// limitedBody fails a read past its limit rather than cut the set short.
type limitedBody struct {
	io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("the JWK set is over %d bytes", MaxJWKSBytes)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left == 0 && err == nil {
		// Exactly at the limit: one more byte would be over it.
		var one [1]byte
		if k, _ := b.ReadCloser.Read(one[:]); k > 0 {
			return n, fmt.Errorf("the JWK set is over %d bytes", MaxJWKSBytes)
		}
		return n, io.EOF
	}
	return n, err
}

func isLoopback(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

// Close stops the key set's refreshes.
func (a *JWKSAuthenticator) Close() { a.cancel() }

// Authenticate implements Authenticator.
func (a *JWKSAuthenticator) Authenticate(r *http.Request) (Principal, error) {
	raw, err := credential(r, a.opts.CookieName)
	if err != nil {
		return Principal{}, err
	}
	claims := jwt.MapClaims{}
	t, err := a.parser.ParseWithClaims(raw, claims, a.key(r.Context()))
	if p := tokenProblem(err); p != nil {
		return Principal{}, p
	}
	if !numericTimes(t) {
		return Principal{}, unauthorized("invalid_token", "the token's exp, nbf and iat must be JSON numbers")
	}
	sub, _ := claims.GetSubject()
	exp, _ := claims.GetExpirationTime()
	p := Principal{UserID: sub, Role: RoleUser, ExpiresAt: exp.Time}
	if slices.Contains(claimStrings(claims[a.opts.RoleClaim]), a.opts.AdminRole) {
		p.Role = RoleAdmin
	}
	return p, nil
}

// key returns the verification key the token's kid names, and refuses a token whose
// algorithm is not the one that key fixes: the JWK's alg if it has one, and its type
// (RS256 for an RSA key of 2048 bits or more, ES256 for a P-256 key); a key for
// encryption (use enc), and a token with a crit header, are refused.
func (a *JWKSAuthenticator) key(ctx context.Context) jwt.Keyfunc {
	return func(t *jwt.Token) (any, error) {
		if _, ok := t.Header["crit"]; ok {
			return nil, errors.New("the token has a crit header")
		}
		kid, ok := t.Header[jwkset.HeaderKID].(string)
		if !ok || kid == "" {
			return nil, errors.New("the token names no key (kid)")
		}
		jwk, err := a.lookup(ctx, kid)
		if err != nil {
			return nil, err
		}
		m := jwk.Marshal()
		if m.ALG != "" && m.ALG.String() != t.Method.Alg() {
			return nil, fmt.Errorf("the token's alg %s is not its key's (%s)", t.Method.Alg(), m.ALG)
		}
		if m.USE != "" && m.USE != jwkset.UseSig {
			return nil, fmt.Errorf("key %q is not for signatures (use %s)", kid, m.USE)
		}
		k := jwk.Key()
		if pk, ok := k.(interface{ Public() crypto.PublicKey }); ok {
			k = pk.Public()
		}
		want := ""
		switch k := k.(type) {
		case *rsa.PublicKey:
			if k.N.BitLen() >= 2048 {
				want = jwt.SigningMethodRS256.Alg()
			}
		case *ecdsa.PublicKey:
			if k.Curve == elliptic.P256() {
				want = jwt.SigningMethodES256.Alg()
			}
		}
		if want == "" || t.Method.Alg() != want {
			return nil, fmt.Errorf("the token's alg %s is not its key's (%s)", t.Method.Alg(), want)
		}
		return k, nil
	}
}

// lookup returns the key kid names. A kid the set lacks makes it read the set again,
// at most once per UnknownKIDRefresh and one read at a time, off the request (a
// client that hangs up does not stop it); the requests that come meanwhile wait for
// that read, within their own context.
func (a *JWKSAuthenticator) lookup(ctx context.Context, kid string) (jwkset.JWK, error) {
	if k, err := a.set.KeyRead(ctx, kid); !errors.Is(err, jwkset.ErrKeyNotFound) {
		return k, err
	}
	a.mu.Lock()
	done := a.inflight
	if done == nil {
		if !a.unknownKID.Allow() {
			a.mu.Unlock()
			// A refresh may have ended between the first look and the lock: look again.
			if k, err := a.set.KeyRead(ctx, kid); !errors.Is(err, jwkset.ErrKeyNotFound) {
				return k, err
			}
			return jwkset.JWK{}, fmt.Errorf("no key %q in the JWK set (read again at most once per %s)", kid, a.opts.UnknownKIDRefresh)
		}
		done = make(chan struct{})
		a.inflight = done
		go func() {
			rctx, cancel := context.WithTimeout(context.Background(), a.opts.timeout())
			defer cancel()
			if _, err := a.refresher.KeyRead(rctx, kid); err != nil && !errors.Is(err, jwkset.ErrKeyNotFound) {
				a.opts.Logger.WarnContext(rctx, "the JWK set could not be read again for an unknown kid", slog.String("url", a.opts.URL), slog.Any("error", err))
			}
			a.mu.Lock()
			a.inflight = nil
			a.mu.Unlock()
			close(done)
		}()
	}
	a.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		return jwkset.JWK{}, ctx.Err()
	}
	return a.set.KeyRead(ctx, kid)
}

// claimStrings reads a claim that is a string (one role, compared whole) or an array
// of strings.
func claimStrings(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
