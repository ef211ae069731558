// Package clikit is what the asyncevent CLI shares with its commands that live in
// packages of their own (demo, bench): the global flags and the environment a
// command runs with, its usage errors, the DynamoDB and SQS clients the flags name,
// and the wording of the figures its reports print.
package clikit

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/asyncevent/asyncevent/dynamodblocal"
)

// Environment variables that give the global flags their defaults.
const (
	EnvTable       = "ASYNCEVENT_TABLE"
	EnvRegion      = "AWS_REGION"
	EnvEndpoint    = "DYNAMODB_ENDPOINT"
	EnvSQSEndpoint = "SQS_ENDPOINT"
	EnvQueueURL    = "ASYNCEVENT_QUEUE_URL"

	// EnvDrawSecret holds the secret that seals lottery seeds (seed.HMAC),
	// in hex. An environment variable rather than a flag, so that it shows in no
	// process listing or shell history.
	EnvDrawSecret = "ASYNCEVENT_DRAW_SECRET"
)

// Globals are the flags every command takes, before or after its name.
type Globals struct {
	Table    string
	Region   string
	Endpoint string
	JSON     bool
}

// Register declares the global flags on fs, with g's values as their defaults.
func (g *Globals) Register(fs *flag.FlagSet) {
	fs.StringVar(&g.Table, "table", g.Table, "DynamoDB table `name` (env "+EnvTable+")")
	fs.StringVar(&g.Region, "region", g.Region, "AWS `region` (env "+EnvRegion+"; default: the AWS config's, us-east-1 with -endpoint)")
	fs.StringVar(&g.Endpoint, "endpoint", g.Endpoint, "DynamoDB endpoint `URL`, e.g. a DynamoDB Local (env "+EnvEndpoint+"); empty: AWS")
	fs.BoolVar(&g.JSON, "json", g.JSON, "print JSON instead of tables, for scripts")
}

// Env is what a command runs with: the global flags and where it prints.
type Env struct {
	Globals
	Stdout, Stderr io.Writer
	LocalSource    string // how StartLocal got the DynamoDB Local: container, jar; "" if not started here
	DrawSecret     string // hex, from ASYNCEVENT_DRAW_SECRET; "" for unsealed seeds
	// DrawSettleWindow is the clients' Options.DrawSettleWindow (the draw command's
	// -settle); 0 for the library's default.
	DrawSettleWindow time.Duration

	// StartDynamoDBLocal is how StartLocal starts a DynamoDB Local. The CLI sets
	// dynamodblocal/container's Start (a container first, else the jar), so that
	// testcontainers-go is built into the CLI only, not into the packages that share
	// this one. Default (nil): dynamodblocal.Start, the jar.
	StartDynamoDBLocal func(ctx context.Context, opts dynamodblocal.Options) (*dynamodblocal.Instance, error)
}

// Runner is a command that lives in a package of its own: it declares its flags,
// and runs with them on an Env.
type Runner interface {
	Register(fs *flag.FlagSet)
	Run(ctx context.Context, e *Env) error
}

// UsageError is a mistake in the command line: exit code 2.
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

// Usagef is a UsageError with a message formatted as fmt.Sprintf does.
func Usagef(format string, args ...any) error {
	return &UsageError{msg: fmt.Sprintf(format, args...)}
}

// WantArgs checks the number of positional arguments.
func WantArgs(args []string, n int, what string) error {
	switch {
	case len(args) < n:
		return Usagef("missing %s", what)
	case len(args) > n:
		return Usagef("unexpected argument %q", args[n])
	}
	return nil
}

// EnvOr is the environment variable name, or def when it is unset or empty.
func EnvOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// PrintJSON writes v as indented JSON, one document per command.
func (e *Env) PrintJSON(v any) error {
	enc := json.NewEncoder(e.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
