package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/asyncevent/asyncevent/httpapi"
)

// printDevTokens prints a day's admin and user token, ready to paste into a shell.
func printDevTokens(w io.Writer, cfg config) {
	exp := time.Now().Add(24 * time.Hour)
	admin, err1 := httpapi.MintToken(cfg.jwtSecret, "admin-1", httpapi.RoleAdmin, exp)
	user, err2 := httpapi.MintToken(cfg.jwtSecret, "user-1", httpapi.RoleUser, exp)
	if err := errors.Join(err1, err2); err != nil {
		fmt.Fprintln(w, "dev: cannot mint tokens:", err)
		return
	}
	if cfg.generatedSecret {
		fmt.Fprintln(w, "dev: made up a JWT secret; tokens signed with it die with this process")
		fmt.Fprintf(w, "export ASYNCEVENT_JWT_SECRET=%s\n", cfg.jwtSecret)
	}
	fmt.Fprintf(w, "dev: tokens valid until %s:\nexport ADMIN_TOKEN=%s\nexport USER_TOKEN=%s\n",
		exp.UTC().Format(time.RFC3339), admin, user)
	fmt.Fprintf(w, "dev: curl -s -X POST localhost%s/events/spring-sale/participations -H \"Authorization: Bearer $USER_TOKEN\"\n", portOf(cfg.addr))
	fmt.Fprintln(w, "dev: a token for another user: go run ./examples/httpapi token -user NAME [-admin] (with ASYNCEVENT_JWT_SECRET as above)")
	fmt.Fprintf(w, "dev: admin web UI at http://localhost%s/admin/ui/ (sign in with $ADMIN_TOKEN)\n", portOf(cfg.addr))
	fmt.Fprintf(w, "dev: a request's page in a browser on this machine: http://localhost%s/dev/sign-in?user=user-1&next=/requests/REQUEST_ID/page (signs in by a cookie, dev only)\n", portOf(cfg.addr))
}

// portOf is addr's ":port" for the printed URLs; :8080 when addr has no numeric
// port.
func portOf(addr string) string {
	if _, port, err := net.SplitHostPort(addr); err == nil {
		if _, err := strconv.Atoi(port); err == nil {
			return ":" + port
		}
	}
	return ":8080"
}
