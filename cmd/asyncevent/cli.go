package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/benchcmd"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/demo"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
	"github.com/asyncevent/asyncevent/dynamodblocal/container"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// env is what a command runs with: what every command shares, and the CLI's own.
type env struct {
	clikit.Env
	cmd     *command             // the command running
	rows    *dynamodb.Client     // withStored's reader of rows, made on its first read
	clients []*asyncevent.Client // the clients the command made, whose counts it writes before it ends
}

// command is one subcommand: "stats", or a group's "table create".
type command struct {
	name    string // as typed: "table create"
	args    string // the positional arguments, for the usage line
	summary string
	flags   func(fs *flag.FlagSet) // the command's own flags; nil: none
	run     func(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error
}

// commands returns every command, in the order help lists them.
func commands() []*command {
	cmds := []*command{
		localCmd(), tableCreateCmd(), tableCheckCmd(),
		eventCreateCmd(), eventGetCmd(), eventListCmd(),
		eventCloseCmd(), eventPauseCmd(), eventResumeCmd(), eventExtendCmd(), eventAddCapacityCmd(), eventAuditCmd(),
		requestGetCmd(), requestConfirmCmd(), requestReleaseCmd(), requestCancelCmd(), requestsListCmd(), logsCmd(),
		submitCmd(), statsCmd(), drawCmd(), verifyCmd(), sweepCmd(), holdsSweepCmd(), planCmd(),
		demoCmd(), benchCmd(),
	}
	return cmds
}

// demoCmd is the spike demo, package demo.
func demoCmd() *command { return packaged("demo", demo.Summary, &demo.Options{}) }

// benchCmd is the benchmark against a raw-SDK baseline, package benchcmd.
func benchCmd() *command { return packaged("bench", benchcmd.Summary, &benchcmd.Options{}) }

// packaged is a command whose flags and run live in a package of their own (demo,
// bench); it takes no positional argument.
func packaged(name, summary string, r clikit.Runner) *command {
	return &command{name: name, summary: summary, flags: r.Register,
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, args []string) error {
			if err := clikit.WantArgs(args, 0, ""); err != nil {
				return err
			}
			return r.Run(ctx, &e.Env)
		}}
}

// libraryPrefix begins the text of the library's errors.
const libraryPrefix = "asyncevent: "

// run is the CLI: it parses args (without the program name), runs the command and
// returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	e := &env{Env: clikit.Env{Stdout: stdout, Stderr: stderr, DrawSecret: os.Getenv(clikit.EnvDrawSecret), Globals: clikit.Globals{
		Table:    clikit.EnvOr(clikit.EnvTable, asyncevent.DefaultTableName),
		Region:   os.Getenv(clikit.EnvRegion),
		Endpoint: os.Getenv(clikit.EnvEndpoint),
	}, StartDynamoDBLocal: container.Start}}
	e.JSON = wantsJSON(args) // before any parse, so that every error heeds it
	top := flag.NewFlagSet("asyncevent", flag.ContinueOnError)
	top.SetOutput(io.Discard)
	e.Register(top)
	if err := top.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(stdout)
			return exitOK
		}
		if misplaced, hint := misplacedFlag(top, args); misplaced != nil {
			return e.failf("asyncevent", "", misplaced, hint, exitUsage)
		}
		return e.failf("asyncevent", "", err, "Run 'asyncevent help' for usage.", exitUsage)
	}
	rest := top.Args()
	if len(rest) == 0 {
		if e.JSON {
			return e.failf("asyncevent", "", errors.New("missing command"), "", exitUsage)
		}
		printUsage(stderr)
		return exitUsage
	}
	if rest[0] == "help" {
		return e.help(rest[1:])
	}

	cmd, n := lookup(rest)
	if cmd == nil && n == 1 {
		if misplaced, hint := flagInGroup(rest); misplaced != nil {
			return e.failf("asyncevent", "", misplaced, hint, exitUsage)
		}
		if len(rest) == 1 { // a group alone: its commands
			var usage strings.Builder
			printGroupUsage(&usage, rest[0])
			return e.failf("asyncevent", "", fmt.Errorf("missing command after %q", rest[0]), strings.TrimSpace(usage.String()), exitUsage)
		}
	}
	if cmd == nil {
		hint := "Run 'asyncevent help' for usage."
		if n == 1 {
			hint = fmt.Sprintf("Run 'asyncevent help %s' for its commands.", rest[0])
		}
		if near := nearestCommand(rest); near != "" && (n == 0 || len(rest) > 1) {
			hint = fmt.Sprintf("Did you mean 'asyncevent %s'?\n%s", near, hint)
		}
		return e.failf("asyncevent", "", fmt.Errorf("unknown command %q", strings.Join(rest[:min(n+1, len(rest))], " ")), hint, exitUsage)
	}
	return e.runCommand(ctx, cmd, rest[n:])
}

// help is "asyncevent help" followed by words: the usage of the CLI, of a command or
// of a group of commands.
func (e *env) help(words []string) int {
	if len(words) == 0 {
		printUsage(e.Stdout)
		return exitOK
	}
	switch cmd, n := lookup(words); {
	case cmd != nil && n == len(words):
		printCommandUsage(e.Stdout, cmd)
		return exitOK
	case n == 1 && len(words) == 1:
		printGroupUsage(e.Stdout, words[0])
		return exitOK
	}
	hint := "Run 'asyncevent help' for the commands."
	if near := nearestCommand(words); near != "" {
		hint = fmt.Sprintf("Did you mean 'asyncevent help %s'?\n%s", near, hint)
	}
	return e.failf("asyncevent help", "", fmt.Errorf("no help for %q", strings.Join(words, " ")), hint, exitUsage)
}

// runCommand parses cmd's flags and arguments, runs it and returns the exit code.
func (e *env) runCommand(ctx context.Context, cmd *command, args []string) int {
	e.cmd = cmd
	fs := flag.NewFlagSet("asyncevent "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	e.Register(fs)
	if cmd.flags != nil {
		cmd.flags(fs)
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printCommandUsage(e.Stdout, cmd)
			return exitOK
		}
		return e.fail(cmd, err, exitUsage)
	}
	if err := checkIDs(cmd, pos); err != nil {
		return e.fail(cmd, err, exitUsage)
	}
	err = cmd.run(ctx, e, fs, pos)
	// What the command's clients counted (the waitlist's joins and leaves of a
	// release or a sweep, the arrivals of a submit) is written before the process ends.
	for _, c := range e.clients {
		if ferr := c.FlushProgress(context.WithoutCancel(ctx)); ferr != nil {
			fmt.Fprintf(e.Stderr, "asyncevent: the progress counts were not written: %v\n", ferr)
		}
	}
	var ue *clikit.UsageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		return e.fail(cmd, err, exitUsage)
	}
	if msg, hint, ok := e.tableTrouble(err); ok {
		return e.failf("asyncevent "+cmd.name, "", msg, hint, exitFailure)
	}
	return e.fail(cmd, err, exitFailure)
}

// fail tells of a command's error on stderr (failf), with the command's usage for a
// usage error, and returns the exit code.
func (e *env) fail(cmd *command, err error, code int) int {
	usage, hint := "", ""
	if code == exitUsage {
		usage = "asyncevent " + cmdLine(cmd)
		hint = fmt.Sprintf("usage: %s\nRun 'asyncevent help %s' for its flags.", usage, cmd.name)
	}
	return e.failf("asyncevent "+cmd.name, usage, err, hint, code)
}

// failf tells of an error on stderr, with a hint for people, or as one JSON object
// under -json ({"command", "error", "exit", "usage"}), and returns the exit code.
// The library's prefix "asyncevent: " is left out of the message: the command's name
// comes first already.
func (e *env) failf(command, usage string, err error, hint string, code int) int {
	msg := strings.ReplaceAll(err.Error(), libraryPrefix, "")
	if e.JSON {
		v := clikit.Failure{Command: strings.TrimPrefix(strings.TrimPrefix(command, "asyncevent"), " "), Error: msg, Exit: code, Usage: usage, Hint: hint}
		enc := json.NewEncoder(e.Stderr)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(v)
		return code
	}
	fmt.Fprintf(e.Stderr, "%s: %s\n", command, msg)
	if hint != "" {
		fmt.Fprintln(e.Stderr, hint)
	}
	return code
}

// wantsJSON reports whether args ask for JSON anywhere (-json, --json, -json=true).
func wantsJSON(args []string) bool {
	for _, a := range args {
		if a == "--" {
			break
		}
		switch strings.TrimPrefix(a, "-") {
		case "json", "-json", "json=true", "-json=true":
			return true
		}
	}
	return false
}

// lookup finds the command named by the first one or two words of args and returns
// how many words its name took. For an unknown name it returns nil and the number of
// words that matched a group.
func lookup(args []string) (*command, int) {
	cmds := commands()
	if len(args) >= 2 {
		for _, group := range []string{args[0], otherNumber(args[0])} {
			for _, c := range cmds {
				if c.name == group+" "+args[1] {
					return c, 2
				}
			}
		}
	}
	for _, c := range cmds {
		if c.name == args[0] {
			return c, 1
		}
	}
	for _, c := range cmds {
		if strings.HasPrefix(c.name, args[0]+" ") || strings.HasPrefix(c.name, otherNumber(args[0])+" ") {
			return nil, 1 // a group with a missing or unknown subcommand
		}
	}
	return nil, 0
}

// otherNumber is a group's name in the other number, so that "events list" finds
// "event list" and "request list" finds "requests list": event, events; holds, hold.
func otherNumber(group string) string {
	if trimmed, ok := strings.CutSuffix(group, "s"); ok {
		return trimmed
	}
	return group + "s"
}

// parseInterleaved parses flags that may come before, between or after the positional
// arguments, and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// fs.Parse stops at the first positional argument, or after "--".
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func cmdLine(c *command) string {
	s := c.name + " [flags]"
	if c.args != "" {
		s += " " + c.args
	}
	return s
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, `asyncevent is the operator CLI of the asyncevent library: one DynamoDB table
for first-come and lottery participation events, with a queue between ingest and
workers.

Usage:
  asyncevent [global flags] <command> [flags] [arguments]

Commands:
`)
	for _, c := range commands() {
		listLine(w, c)
	}
	fmt.Fprint(w, `
Global flags (before or after the command):
`)
	fs := flag.NewFlagSet("asyncevent", flag.ContinueOnError)
	g := clikit.Globals{Table: asyncevent.DefaultTableName}
	g.Register(fs)
	printFlags(w, fs)
	fmt.Fprint(w, `
Without -endpoint the CLI talks to AWS with the default credential chain. With
-endpoint it uses the static dummy credentials of package dynamodblocal (access
key ddblocal, region us-east-1), as the test kit and the demo do: a DynamoDB Local
without -sharedDb keeps tables per access key and region, so 'aws dynamodb
list-tables' sees them only with AWS_ACCESS_KEY_ID=ddblocal. demo and bench
without -endpoint start an embedded DynamoDB Local (a container through
testcontainers-go on a loopback-only engine, or Java and npm) and stop it on exit;
'asyncevent local' starts one the same way for the other commands, prints the
export line of its endpoint and keeps it until Ctrl-C.

Lottery seeds: with `+clikit.EnvDrawSecret+` set (a secret of at least 32 bytes, in hex:
openssl rand -hex 32), the events the CLI creates get a sealed seed (seedMode
SEALED), derived from the secret, and their draw needs the same secret. Without it
the seed is stored on the DRAW item (seedMode UNSEALED): anyone who can read the
table can read it before the draw, so use that for development only.

Exit codes: 0 success, 1 failure (including a check or verification that fails),
2 usage error. Run 'asyncevent help <command>' for a command's flags.
`)
}

// printGroupUsage lists the commands of a group: "event create", "event list"….
func printGroupUsage(w io.Writer, group string) {
	fmt.Fprintf(w, "The %s commands:\n", group)
	for _, c := range commands() {
		if strings.HasPrefix(c.name, group+" ") || strings.HasPrefix(c.name, otherNumber(group)+" ") {
			listLine(w, c)
		}
	}
	fmt.Fprintf(w, "\nRun 'asyncevent help %s <command>' for a command's flags.\n", group)
}

// helpWidth is the width of the help's lines: a command's summary is wrapped to it.
const helpWidth = 100

// listLine prints c's line of a list of commands: its usage, then its summary
// wrapped to helpWidth, indented under the summary's column.
func listLine(w io.Writer, c *command) {
	const column = 2 + 44 + 1
	lines := wrap(c.summary, helpWidth-column)
	if usage := cmdLine(c); len(usage) > 44 {
		fmt.Fprintf(w, "  %s\n", usage) // too long for its column: the summary goes under it
	} else {
		fmt.Fprintf(w, "  %-44s %s\n", usage, lines[0])
		lines = lines[1:]
	}
	for _, l := range lines {
		fmt.Fprintf(w, "%*s%s\n", column, "", l)
	}
}

// printFlags is fs.PrintDefaults with each flag's text wrapped to helpWidth, a tab
// counted as the 8 columns it takes.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	var b strings.Builder
	fs.SetOutput(&b)
	fs.PrintDefaults()
	const indent = "    \t"
	for _, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		text, ok := strings.CutPrefix(line, indent)
		if !ok {
			fmt.Fprintln(w, line)
			continue
		}
		for _, l := range wrap(text, helpWidth-8) {
			fmt.Fprintln(w, indent+l)
		}
	}
}

// wrap breaks text into lines of at most width characters, at spaces (a word longer
// than width stands alone).
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		switch {
		case line == "":
			line = word
		case len(line)+1+len(word) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	return append(lines, line)
}

func printCommandUsage(w io.Writer, c *command) {
	fmt.Fprintf(w, "usage: asyncevent %s\n\n%s\n", cmdLine(c), strings.Join(wrap(c.summary, helpWidth), "\n"))
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	if c.flags != nil {
		c.flags(fs)
	}
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		fmt.Fprintln(w, "\nFlags:")
		printFlags(w, fs)
	}
	fmt.Fprintln(w, "\nGlobal flags: -table, -region, -endpoint, -json (see 'asyncevent help').")
}

// withID is the run of a subcommand that takes one ID (named what in usage errors)
// and a connected client.
func withID(what string, run func(ctx context.Context, e *env, c *asyncevent.Client, id string) error) func(context.Context, *env, *flag.FlagSet, []string) error {
	return func(ctx context.Context, e *env, _ *flag.FlagSet, args []string) error {
		if err := clikit.WantArgs(args, 1, what); err != nil {
			return err
		}
		c, err := e.client(ctx)
		if err != nil {
			return err
		}
		return run(ctx, e, c, args[0])
	}
}
