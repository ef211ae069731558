package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/asyncevent/asyncevent"
)

// Role is what a token allows. Only RoleAdmin has a meaning of its own: a token
// whose role is anything else (or none) is a user's.
type Role string

// The roles.
const (
	RoleUser  Role = "user"
	RoleAdmin Role = "admin"
)

// Access is what a route asks of its caller.
type Access int

// The access levels of a route.
const (
	Public    Access = iota // no token needed
	UserOnly                // any valid token; the caller is the token's sub
	AdminOnly               // a valid token with role admin
)

// MinSecretBytes is the shortest JWT secret NewJWTAuthenticator accepts: HS256 wants
// a key at least as long as its 256-bit hash.
const MinSecretBytes = 32

// DefaultTokenLeeway is JWTOptions.Leeway's default: the clock skew allowed between
// the token's issuer and this server, on exp, nbf and iat.
const DefaultTokenLeeway = 10 * time.Second

// Claims are the claims of an API token: sub is the user ID (it must pass
// asyncevent.ValidateID), role is "admin" for the admin routes, exp is required and
// iat, if present, must not lie in the future; both are JSON numbers.
type Claims struct {
	Role Role `json:"role,omitempty"`
	jwt.RegisteredClaims
}

// Principal is the caller of a request, as its credentials say.
type Principal struct {
	UserID string
	Role   Role

	// ExpiresAt is when the credentials end (a token's exp); zero when unknown. An
	// admin UI session made from them ends then at the latest.
	ExpiresAt time.Time
}

// IsAdmin reports whether the caller may use the admin routes.
func (p Principal) IsAdmin() bool { return p.Role == RoleAdmin }

type principalKey struct{}

// PrincipalFrom returns the caller of a request that passed authentication; handlers
// mounted with Server.Mount read it from the request's context.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// Authenticator tells who sent a request: the Server asks it on every route that is
// not Public, and checks the role itself. JWTAuthenticator is the one provided; a
// service with its own identity provider implements its own.
type Authenticator interface {
	// Authenticate returns the caller of r. An error answers 401: ErrNoCredentials
	// when r carries none, any other error when they are not valid (its text is not
	// shown to the caller, except for this package's own errors).
	Authenticate(r *http.Request) (Principal, error)
}

// ErrNoCredentials is what an Authenticator returns for a request without
// credentials.
var ErrNoCredentials = errors.New("httpapi: no credentials")

// JWTOptions configures a JWTAuthenticator. The zero value is valid.
type JWTOptions struct {
	// Leeway is the clock skew allowed on a token's exp, nbf and iat. Default:
	// DefaultTokenLeeway (10 seconds); at most a minute.
	Leeway time.Duration

	// Clock tells the time for the token checks. Default: time.Now.
	Clock func() time.Time

	// CookieName names a cookie the token may come in when the request has no
	// Authorization header: the one the service's sign-in sets (HttpOnly, Secure,
	// SameSite=Lax or Strict), so that a browser following a link can open the
	// request page. The Server refuses a write that comes with no bearer token from
	// another site (403 cross_site). Default: empty, no cookie; the token comes in
	// the header only.
	CookieName string
}

// JWTAuthenticator verifies HS256 bearer tokens (Authorization: Bearer <JWT>, or
// the cookie of JWTOptions.CookieName) with the golang-jwt parser in its strict
// settings: only HS256, exp required, iat checked (a token issued in the future is
// refused), the leeway of JWTOptions, and exp, nbf and iat must be JSON numbers (a
// numeric string is refused).
type JWTAuthenticator struct {
	secret []byte
	parser *jwt.Parser
	cookie string // JWTOptions.CookieName
}

// maxLeeway bounds JWTOptions.Leeway: a larger skew is a misconfigured clock.
const maxLeeway = time.Minute

// NewJWTAuthenticator returns an authenticator of tokens signed with secret, which
// must have at least MinSecretBytes bytes.
func NewJWTAuthenticator(secret []byte, opts JWTOptions) (*JWTAuthenticator, error) {
	if len(secret) < MinSecretBytes {
		return nil, fmt.Errorf("httpapi: the JWT secret has %d bytes, want at least %d", len(secret), MinSecretBytes)
	}
	if opts.Leeway <= 0 {
		opts.Leeway = DefaultTokenLeeway
	}
	if opts.Leeway > maxLeeway {
		return nil, fmt.Errorf("httpapi: JWT leeway %s is more than %s", opts.Leeway, maxLeeway)
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	return &JWTAuthenticator{
		secret: append([]byte(nil), secret...),
		cookie: opts.CookieName,
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}), // never none, never another alg
			jwt.WithExpirationRequired(),
			jwt.WithIssuedAt(),
			jwt.WithLeeway(opts.Leeway),
			jwt.WithTimeFunc(opts.Clock),
		),
	}, nil
}

// Mint returns a token for userID with role, valid until expiresAt, signed with the
// authenticator's secret (see MintToken).
func (a *JWTAuthenticator) Mint(userID string, role Role, expiresAt time.Time) (string, error) {
	return MintToken(a.secret, userID, role, expiresAt)
}

// MintToken returns an HS256 token for userID with role, valid until expiresAt
// (a time in the past mints an expired token, for tests). It is what an identity
// service would issue; the server only verifies.
func MintToken(secret []byte, userID string, role Role, expiresAt time.Time) (string, error) {
	if err := asyncevent.ValidateID("sub", userID); err != nil {
		return "", err
	}
	now := time.Now()
	if expiresAt.Before(now) {
		now = expiresAt.Add(-time.Minute) // keep iat before exp
	}
	claims := Claims{
		Role: role,
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   userID,
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(expiresAt),
		},
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
}

// Authenticate implements Authenticator.
func (a *JWTAuthenticator) Authenticate(r *http.Request) (Principal, error) {
	raw, err := credential(r, a.cookie)
	if err != nil {
		return Principal{}, err
	}
	var claims Claims
	t, err := a.parser.ParseWithClaims(raw, &claims, func(*jwt.Token) (any, error) { return a.secret, nil })
	if p := tokenProblem(err); p != nil {
		return Principal{}, p
	}
	if !numericTimes(t) {
		return Principal{}, unauthorized("invalid_token", "the token's exp, nbf and iat must be JSON numbers")
	}
	return Principal{UserID: claims.Subject, Role: claims.Role, ExpiresAt: claims.ExpiresAt.Time}, nil
}

// credential returns the token r carries, for the parser to check whatever its
// source: its Authorization: Bearer header's or, when r has no Authorization header,
// the value of the cookie cookieName (none when cookieName is empty). A header wins
// over the cookie, even one of another scheme: the caller chose it. ErrNoCredentials
// when r carries no token.
func credential(r *http.Request, cookieName string) (string, error) {
	if h := r.Header.Get("Authorization"); h != "" || cookieName == "" {
		return bearer(h)
	}
	c, err := r.Cookie(cookieName)
	if err != nil || c.Value == "" {
		return "", ErrNoCredentials // an empty value is a signed-out browser's
	}
	return c.Value, nil
}

// bearer returns the token of an Authorization header's value; ErrNoCredentials
// when it is not a Bearer token.
func bearer(authorization string) (string, error) {
	scheme, token, ok := strings.Cut(authorization, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return "", ErrNoCredentials
	}
	return strings.TrimSpace(token), nil
}

// tokenProblem is the 401 of a token the parser refused, nil if it passed. The
// detail names the check that failed only where that tells an honest client what to
// do (get a new token); else it says the token is not valid.
func tokenProblem(err error) *httpError {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jwt.ErrTokenExpired):
		return unauthorized("invalid_token", "the token has expired")
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return unauthorized("invalid_token", "the token is not valid yet (nbf)")
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return unauthorized("invalid_token", "the token's iat lies in the future")
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return unauthorized("invalid_token", "the token's issuer is not the one this API trusts")
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return unauthorized("invalid_token", "the token is not meant for this API (aud)")
	}
	return unauthorized("invalid_token", "the token is not valid")
}

// numericTimes reports whether the verified token's exp, nbf and iat, where present,
// are JSON numbers: the parser's NumericDate also takes "1700000000", a string.
func numericTimes(t *jwt.Token) bool {
	parts := strings.Split(t.Raw, ".")
	if len(parts) != 3 {
		return false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return false
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(payload, &fields); err != nil {
		return false
	}
	for _, name := range []string{"exp", "nbf", "iat"} {
		if v, ok := fields[name]; ok {
			var n json.Number
			if len(v) == 0 || v[0] == '"' || json.Unmarshal(v, &n) != nil {
				return false
			}
		}
	}
	return true
}

// authenticate returns the caller of r, or a 401 or 403 error for a route that needs
// access.
func (s *Server) authenticate(r *http.Request, access Access) (Principal, error) {
	p, err := s.auth.Authenticate(r)
	var he *httpError
	switch {
	case errors.As(err, &he):
		return Principal{}, he
	case errors.Is(err, ErrNoCredentials):
		return Principal{}, unauthorized("", "a bearer token is required")
	case err != nil:
		s.logger.DebugContext(r.Context(), "authentication failed", slog.Any("error", err))
		return Principal{}, unauthorized("invalid_token", "the credentials are not valid")
	}
	if err := asyncevent.ValidateID("sub", p.UserID); err != nil {
		return Principal{}, unauthorized("invalid_token", "the token's sub is not a valid user ID")
	}
	if access == AdminOnly && !p.IsAdmin() {
		e := newHTTPError(http.StatusForbidden, CodeForbidden, "this route needs the admin role")
		e.header = http.Header{"Www-Authenticate": {`Bearer realm="asyncevent", error="insufficient_scope"`}}
		return p, e
	}
	return p, nil
}

// unauthorized is a 401 with the RFC 6750 challenge; reason is the challenge's error
// attribute, empty when no token came.
func unauthorized(reason, detail string) *httpError {
	challenge := `Bearer realm="asyncevent"`
	if reason != "" {
		challenge += fmt.Sprintf(", error=%q", reason)
	}
	e := newHTTPError(http.StatusUnauthorized, CodeUnauthorized, detail)
	e.header = http.Header{"Www-Authenticate": {challenge}}
	return e
}
