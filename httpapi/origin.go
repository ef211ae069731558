package httpapi

// Cross-site requests. A browser attaches a cookie (and HTTP Basic credentials it
// remembers) to a request whatever page makes it, so a page of another site could
// write as the signed-in user; a bearer token it never sends by itself. The browser
// tells where a request comes from (Sec-Fetch-Site, Origin), and the server refuses
// a write from elsewhere that carries no bearer token.

import (
	"net/http"
	"net/url"
)

// crossSite is the 403 cross_site of r when it is a write (any method but GET,
// HEAD and OPTIONS) with no bearer token, from another origin as far as the browser
// tells (sameOrigin); nil when r may go on to authentication.
func crossSite(r *http.Request) error {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	if _, err := bearer(r.Header.Get("Authorization")); err == nil || sameOrigin(r) {
		return nil
	}
	return newHTTPError(http.StatusForbidden, CodeCrossSite, "a write from another site needs a bearer token: a cookie is not enough")
}

// sameOrigin reports whether r came from a page of the server's own origin, as far
// as the browser says: Sec-Fetch-Site, else Origin against the Host (host and port;
// not the scheme, which a proxy in front may have changed); a client that sends
// neither, not a browser, passes.
func sameOrigin(r *http.Request) bool {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "same-origin", "none":
		return true
	case "":
	default:
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host
}
