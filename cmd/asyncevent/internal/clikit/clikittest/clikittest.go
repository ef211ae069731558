// Package clikittest runs the CLI's commands that live in packages of their own
// (demo, bench) in their tests as the CLI runs them: on a fresh table of the test
// binary's DynamoDB Local (package asynceventtest), with what they print captured.
package clikittest

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
)

// Fixture is a fresh table on the test binary's DynamoDB Local.
type Fixture struct {
	Table string
}

// New returns a fixture whose table is deleted when the test ends.
func New(t *testing.T) *Fixture {
	t.Helper()
	name := asynceventtest.UniqueTableName(t)
	t.Cleanup(func() { asynceventtest.DeleteTable(t, name) })
	return &Fixture{Table: name}
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
		Globals: clikit.Globals{Table: f.Table, Endpoint: asynceventtest.Endpoint(t), JSON: json},
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
