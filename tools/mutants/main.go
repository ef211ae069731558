// Command mutants is the guard of issue 56: before a rule's code is moved, it proves
// that the tests still catch the rule weakened. Each mutant of the table (table.go)
// is one edit that weakens one rule, planted alone in a copy of the module (the
// working tree's files that git tracks or would track; the tree itself is never
// touched), after which the tests named for it run: a mutant is caught when the
// package compiles with the edit and a test fails (its output holds "--- FAIL").
// A mutant whose edit text is not found exactly once, or that does not compile, is
// an error of the table, not a catch. The tests first run on the copy unchanged,
// where each must pass.
//
//	go run ./tools/mutants                # make mutants: every mutant, exit 1 unless all are caught
//	go run ./tools/mutants -only seat     # the mutants whose name matches a regexp
//
// One DynamoDB Local serves the whole run, handed to the tests in DYNAMODB_ENDPOINT:
// the one DYNAMODB_ENDPOINT names, else the jar that package dynamodblocal runs (no
// container: a runtime package builds no testcontainers-go). The tests run without -race, each
// mutant's by a narrow -run pattern, so that the run takes minutes.
//
// To find the tests of a new mutant, run it against a whole package and read which
// tests fail: go run ./tools/mutants -only NAME -run . -v
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"syscall"
	"time"

	"github.com/asyncevent/asyncevent/dynamodblocal"
)

// options are the command's flags.
type options struct {
	only    *regexp.Regexp // the mutants to run, by name
	run     string         // replaces every mutant's -run pattern when set
	skip    string         // a -skip pattern for every run, with -run
	base    bool           // run the tests on the unchanged copy first
	goCmd   string         // the go command
	verbose bool           // print the tests that failed, and a failed run's output
	timeout time.Duration  // bounds one run of a test binary
}

func main() {
	opts, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutants:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ok, err := run(ctx, opts, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutants:", err)
	}
	if err != nil || !ok {
		stop()
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("mutants", flag.ContinueOnError)
	only := fs.String("only", "", "run only the mutants whose name matches this regexp")
	var opts options
	fs.StringVar(&opts.run, "run", "", "run this -run pattern for every mutant instead of its own (to find the tests that catch one)")
	fs.StringVar(&opts.skip, "skip", "", "with -run, the tests to leave out (go test -skip)")
	fs.BoolVar(&opts.base, "baseline", true, "first run each mutant's tests on the unchanged copy, where they must pass")
	fs.StringVar(&opts.goCmd, "go", "go", "the go command")
	fs.BoolVar(&opts.verbose, "v", false, "print the tests that failed for each mutant, and the output of a run that failed otherwise")
	fs.DurationVar(&opts.timeout, "timeout", 5*time.Minute, "bound on one run of a test binary")
	if err := fs.Parse(args); err != nil {
		return opts, err
	}
	if fs.NArg() > 0 {
		return opts, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	re, err := regexp.Compile(*only)
	if err != nil {
		return opts, fmt.Errorf("-only: %w", err)
	}
	opts.only = re
	return opts, nil
}

// run plants the chosen mutants one at a time and reports whether every one was
// caught; an error means the run could not judge (no DynamoDB Local, no copy, tests
// that fail unmutated).
func run(ctx context.Context, opts options, out io.Writer) (bool, error) {
	chosen := choose(mutants, opts)
	if len(chosen) == 0 {
		return false, fmt.Errorf("no mutant matches -only %q", opts.only)
	}
	started := time.Now()
	db, err := dynamodblocal.Start(ctx, dynamodblocal.Options{Logf: func(format string, args ...any) {
		fmt.Fprintf(out, "mutants: "+format+"\n", args...)
	}})
	if err != nil {
		return false, fmt.Errorf("no DynamoDB Local: %w", err)
	}
	defer func() { _ = db.Stop() }()
	w, err := newWorkspace(ctx, opts, db.Endpoint)
	if err != nil {
		return false, err
	}
	defer w.remove()
	if err := w.build(ctx, chosen); err != nil {
		return false, err
	}
	if opts.base {
		if err := w.baseline(ctx, chosen, out); err != nil {
			return false, err
		}
	}
	var results []result
	for _, m := range chosen {
		r := w.try(ctx, m)
		results = append(results, r)
		printResult(out, r, opts.verbose)
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
	}
	return summarize(out, results, time.Since(started)), nil
}

// choose returns the mutants opts selects, with opts.run as their pattern if set.
func choose(all []mutant, opts options) []mutant {
	var chosen []mutant
	for _, m := range all {
		if !opts.only.MatchString(m.name) {
			continue
		}
		if opts.run != "" {
			m.run = opts.run
		}
		chosen = append(chosen, m)
	}
	return chosen
}

// printResult prints a mutant's line: name, tests run, verdict, seconds.
func printResult(out io.Writer, r result, verbose bool) {
	fmt.Fprintf(out, "%-24s %s -run '%s'  %s  %.1fs\n", r.mutant.name, r.mutant.pkg, r.mutant.run, r.verdict, r.elapsed.Seconds())
	if r.verdict == verdictError {
		fmt.Fprintf(out, "    %v\n", r.err)
	}
	if !verbose {
		return
	}
	for _, name := range r.failed {
		fmt.Fprintf(out, "    --- FAIL: %s\n", name)
	}
	if r.verdict == verdictError && r.output != "" {
		fmt.Fprintln(out, indent(r.output))
	}
}

// summarize prints the run's summary and reports whether every mutant was caught.
func summarize(out io.Writer, results []result, elapsed time.Duration) bool {
	counts := map[verdict]int{}
	for _, r := range results {
		counts[r.verdict]++
	}
	all := counts[verdictCaught] == len(results)
	word := "FAIL"
	if all {
		word = "ok"
	}
	fmt.Fprintf(out, "mutants: %s: %d of %d caught, %d survived, %d errors, in %s\n",
		word, counts[verdictCaught], len(results), counts[verdictSurvived], counts[verdictError], elapsed.Round(time.Second))
	return all
}
