package main

import (
	"context"
	"errors"
	"fmt"
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

// MinSecretBytes is the shortest JWT secret the server accepts: HS256 wants a key
// at least as long as its 256-bit hash.
const MinSecretBytes = 32

// DefaultTokenLeeway is ServerOptions.TokenLeeway's default: the clock skew allowed
// between the token's issuer and this server.
const DefaultTokenLeeway = 10 * time.Second

// Claims are the claims of an API token: sub is the user ID (it must pass
// asyncevent.ValidateID), role is "admin" for the admin routes, exp is required.
type Claims struct {
	Role Role `json:"role,omitempty"`
	jwt.RegisteredClaims
}

// Principal is the caller of a request, as its token says.
type Principal struct {
	UserID string
	Role   Role
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

// authenticator verifies bearer tokens.
type authenticator struct {
	secret []byte
	parser *jwt.Parser
}

func newAuthenticator(secret []byte, leeway time.Duration, clock func() time.Time) *authenticator {
	return &authenticator{
		secret: secret,
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}), // never none, never another alg
			jwt.WithExpirationRequired(),
			jwt.WithLeeway(leeway),
			jwt.WithTimeFunc(clock),
		),
	}
}

// authenticate returns the caller of r, or a 401 or 403 error for a route that needs
// access.
func (a *authenticator) authenticate(r *http.Request, access Access) (Principal, error) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return Principal{}, unauthorized("", "a bearer token is required")
	}
	var claims Claims
	_, err := a.parser.ParseWithClaims(strings.TrimSpace(token), &claims, func(*jwt.Token) (any, error) { return a.secret, nil })
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return Principal{}, unauthorized("invalid_token", "the token has expired")
	case err != nil:
		return Principal{}, unauthorized("invalid_token", "the token is not valid")
	}
	if err := asyncevent.ValidateID("sub", claims.Subject); err != nil {
		return Principal{}, unauthorized("invalid_token", "the token's sub is not a valid user ID")
	}
	p := Principal{UserID: claims.Subject, Role: claims.Role}
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
