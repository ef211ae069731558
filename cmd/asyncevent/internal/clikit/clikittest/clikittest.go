// Package clikittest runs the CLI's commands that live in packages of their own
// (demo, bench) in their tests as the CLI runs them, with -endpoint and -table, and
// captures what they print. The tests name the DynamoDB Local and the table (from
// package asynceventtest), so that this package builds no container path.
package clikittest

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
)

// Fixture is a table on a DynamoDB Local.
type Fixture struct {
	Endpoint string
	Table    string
}

// New returns the fixture of table at the DynamoDB Local at endpoint.
func New(endpoint, table string) *Fixture {
	return &Fixture{Endpoint: endpoint, Table: table}
}

// Run runs r with args (its flags) as "asyncevent -endpoint … -table … <command>
// args" does, with -json when json is set, and returns what it printed and its error.
func (f *Fixture) Run(t *testing.T, r clikit.Runner, json bool, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	fs := flag.NewFlagSet("clikittest", flag.ContinueOnError)
	r.Register(fs)
	require.NoError(t, fs.Parse(args))
	require.Empty(t, fs.Args(), "the command takes flags only")
	var out, errb bytes.Buffer
	e := &clikit.Env{
		Globals: clikit.Globals{Table: f.Table, Endpoint: f.Endpoint, JSON: json},
		Stdout:  &out, Stderr: &errb,
	}
	err = r.Run(context.Background(), e)
	return out.String(), errb.String(), err
}

// OK runs r and requires it to succeed; it returns what r printed on stdout.
func (f *Fixture) OK(t *testing.T, r clikit.Runner, args ...string) string {
	t.Helper()
	out, errOut, err := f.Run(t, r, false, args...)
	require.NoError(t, err, "%s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), out, errOut)
	return out
}

// JSON runs r with -json, requires it to succeed and decodes stdout into v.
func (f *Fixture) JSON(t *testing.T, v any, r clikit.Runner, args ...string) {
	t.Helper()
	out, errOut, err := f.Run(t, r, true, args...)
	require.NoError(t, err, "%s\nstderr:\n%s", strings.Join(args, " "), errOut)
	require.NoError(t, json.Unmarshal([]byte(out), v), out)
}
