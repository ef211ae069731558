package main

import (
	"cmp"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/asyncevent/asyncevent/httpapi"
)

// devCookie is the cookie of the dev sign-in: with -dev, the authenticator reads
// the token from it when a request has no Authorization header, so that a browser
// opens the request page (GET /requests/{requestId}/page).
const devCookie = "asyncevent_token"

// devSignIn is GET /dev/sign-in?user=ID[&next=/path], with -dev only: it signs a
// browser on this machine in as user ID (user-1 by default) with no password, by
// an HttpOnly, SameSite=Strict cookie holding a day's user token, and sends it on
// to next, a path of this server (its own requests by default). A service signs
// its users in through its identity provider instead.
func devSignIn(secret []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// Anyone who reaches it is anyone they like: a loopback address only.
		if host, _, err := net.SplitHostPort(r.RemoteAddr); err != nil || !net.ParseIP(host).IsLoopback() {
			http.Error(w, "the dev sign-in answers this machine only", http.StatusForbidden)
			return
		}
		q := r.URL.Query()
		exp := time.Now().Add(24 * time.Hour)
		tok, err := httpapi.MintToken(secret, cmp.Or(q.Get("user"), "user-1"), httpapi.RoleUser, exp)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: devCookie, Value: tok, Path: "/", Expires: exp,
			HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
		next := q.Get("next")
		if !localPath(next) {
			next = "/me/participations"
		}
		http.Redirect(w, r, next, http.StatusSeeOther)
	}
}

// localPath reports whether p is a path of this server: never a URL of another
// site, nor what a browser reads as one ("//host", "/\\host", a tab inside).
func localPath(p string) bool {
	u, err := url.Parse(p)
	return err == nil && u.Scheme == "" && u.Host == "" && strings.HasPrefix(p, "/") &&
		!strings.HasPrefix(p, "//") && !strings.HasPrefix(p, "/\\")
}
