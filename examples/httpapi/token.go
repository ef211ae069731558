package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/asyncevent/asyncevent/httpapi"
)

// mintCmd is the token subcommand: it prints a bearer token for a user, signed with
// the server's secret (-jwt-secret or ASYNCEVENT_JWT_SECRET).
func mintCmd(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("httpapi token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	user := fs.String("user", "", "the user ID (the token's sub); required")
	admin := fs.Bool("admin", false, "role admin, for /admin/* and the admin web UI")
	ttl := fs.Duration("ttl", 24*time.Hour, "how long the token is valid")
	secret := fs.String("jwt-secret", getenv("ASYNCEVENT_JWT_SECRET"), "HS256 secret of the server (env ASYNCEVENT_JWT_SECRET)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	case *user == "":
		return errors.New("-user is required")
	case *ttl <= 0:
		return fmt.Errorf("-ttl %s: want a positive duration", *ttl)
	}
	auth, err := httpapi.NewJWTAuthenticator([]byte(*secret), httpapi.JWTOptions{})
	if err != nil {
		return fmt.Errorf("%w (-jwt-secret or ASYNCEVENT_JWT_SECRET: the server's secret)", err)
	}
	role := httpapi.RoleUser
	if *admin {
		role = httpapi.RoleAdmin
	}
	tok, err := auth.Mint(*user, role, time.Now().Add(*ttl))
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, tok)
	return err
}
