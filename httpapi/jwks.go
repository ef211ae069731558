package httpapi

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
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

	// Issuer is the token's required iss (Cognito: https://cognito-idp.<region>.
	// amazonaws.com/<poolId>). Required.
	Issuer string

	// Audience is a value the token's aud must hold (Cognito's ID tokens: the app
	// client ID; Auth0 and Okta: the API's identifier). Required.
	Audience string

	// RoleClaim names the claim that carries the caller's roles: a string or an array
	// of strings (Cognito puts its groups in "cognito:groups"). Default: "role".
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

	// HTTPClient reads the key set. Default: a client with a 10 s timeout.
	HTTPClient *http.Client

	// Clock tells the time for the token checks. Default: time.Now.
	Clock func() time.Time
}

// JWKSAuthenticator verifies bearer tokens signed by an identity provider's keys
// (RS256 with an RSA key, ES256 with a P-256 key) published at a JWKS URL, with the
// golang-jwt parser and the keyfunc key set: the key is the one the token's kid names
// and its type fixes the algorithm (an RSA key verifies RS256 only, so a token that
// says HS256 or none is refused whatever it carries); iss and aud are required and
// checked, exp is required, nbf and iat are checked with the leeway. The key set is
// read at start, every Refresh, and again for a kid it does not hold (rate-limited).
type JWKSAuthenticator struct {
	keys       keyfunc.Keyfunc
	set        jwkset.Storage // the keys as last read, without a refresh
	unknownKID *rate.Limiter  // the refreshes for a kid the set lacks
	parser     *jwt.Parser
	opts       JWKSOptions
	cancel     context.CancelFunc
}

// NewJWKSAuthenticator reads the key set at opts.URL and returns an authenticator of
// the tokens its keys sign. Close stops its refreshes.
func NewJWKSAuthenticator(ctx context.Context, opts JWKSOptions) (*JWKSAuthenticator, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	refreshCtx, cancel := context.WithCancel(context.Background())
	// The key set's own storage, read at start and every Refresh; the client over it
	// reads it again for a kid it lacks, which key lets through at most once per
	// UnknownKIDRefresh (a token of an unknown kid never waits for that).
	set, err := jwkset.NewStorageFromHTTP(opts.URL, jwkset.HTTPClientStorageOptions{
		Client:          opts.HTTPClient,
		Ctx:             refreshCtx,
		HTTPTimeout:     opts.HTTPClient.Timeout,
		RefreshInterval: opts.Refresh,
		// A refresh that fails leaves the last key set read standing.
		RefreshErrorHandler: func(context.Context, error) {},
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("httpapi: read the JWK set at %s: %w", opts.URL, err)
	}
	client, err := jwkset.NewHTTPClient(jwkset.HTTPClientOptions{
		HTTPURLs:          map[string]jwkset.Storage{opts.URL: set},
		RefreshUnknownKID: rate.NewLimiter(rate.Inf, 1), // gated by unknownKID
		RateLimitWaitMax:  opts.HTTPClient.Timeout,      // the refresh's own deadline
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("httpapi: the JWK set at %s: %w", opts.URL, err)
	}
	keys, err := keyfunc.New(keyfunc.Options{Ctx: refreshCtx, Storage: client})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("httpapi: the JWK set at %s: %w", opts.URL, err)
	}
	if ks, err := set.KeyReadAll(ctx); err != nil || len(ks) == 0 {
		cancel()
		return nil, fmt.Errorf("httpapi: the JWK set at %s holds no key (%v)", opts.URL, err)
	}
	return &JWKSAuthenticator{
		keys: keys, set: set, unknownKID: rate.NewLimiter(rate.Every(opts.UnknownKIDRefresh), 1), opts: opts, cancel: cancel,
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
	return nil
}

func isLoopback(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

// Close stops the key set's refreshes.
func (a *JWKSAuthenticator) Close() { a.cancel() }

// Authenticate implements Authenticator.
func (a *JWKSAuthenticator) Authenticate(r *http.Request) (Principal, error) {
	raw, err := bearer(r)
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
// algorithm is not the one that key's type fixes.
func (a *JWKSAuthenticator) key(ctx context.Context) jwt.Keyfunc {
	return func(t *jwt.Token) (any, error) {
		kid, ok := t.Header[jwkset.HeaderKID].(string)
		if !ok || kid == "" {
			return nil, errors.New("the token names no key (kid)")
		}
		if _, err := a.set.KeyRead(ctx, kid); errors.Is(err, jwkset.ErrKeyNotFound) && !a.unknownKID.Allow() {
			return nil, fmt.Errorf("no key %q in the JWK set (read again at most once per %s)", kid, a.opts.UnknownKIDRefresh)
		}
		k, err := a.keys.KeyfuncCtx(ctx)(t)
		if err != nil {
			return nil, err
		}
		want := ""
		switch k := k.(type) {
		case *rsa.PublicKey:
			want = jwt.SigningMethodRS256.Alg()
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

// claimStrings reads a claim that is a string or an array of strings.
func claimStrings(v any) []string {
	switch v := v.(type) {
	case string:
		return strings.Fields(v) // a space-separated list, as OAuth's scope
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
