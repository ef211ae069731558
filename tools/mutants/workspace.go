package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// A verdict is what became of a mutant.
type verdict string

const (
	verdictCaught   verdict = "caught"
	verdictSurvived verdict = "SURVIVED" // the tests passed with the rule weakened
	verdictError    verdict = "ERROR"    // not judged: the edit or its build failed, or the tests failed otherwise
)

// result is one mutant's run.
type result struct {
	mutant  mutant
	verdict verdict
	failed  []string // the tests that failed
	output  string   // the test binary's output
	err     error    // verdictError: why
	elapsed time.Duration
}

// workspace is the copy of the module the mutants are planted in, one at a time.
type workspace struct {
	dir      string // the copy's root
	bin      string // where test binaries are built
	opts     options
	endpoint string // the DynamoDB Local of every test run
}

// newWorkspace copies the module around the current directory into a temporary
// directory.
func newWorkspace(ctx context.Context, opts options, endpoint string) (*workspace, error) {
	root, err := gitOutput(ctx, ".", "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "asyncevent-mutants-")
	if err != nil {
		return nil, err
	}
	w := &workspace{dir: filepath.Join(dir, "module"), bin: filepath.Join(dir, "bin"), opts: opts, endpoint: endpoint}
	if err := copyTree(ctx, strings.TrimSpace(root), w.dir); err != nil {
		w.remove()
		return nil, err
	}
	return w, os.MkdirAll(w.bin, 0o755)
}

// remove deletes the copy.
func (w *workspace) remove() { _ = os.RemoveAll(filepath.Dir(w.dir)) }

// copyTree copies the files of root that git tracks, or would track (not ignored),
// as the working tree holds them, to dst.
func copyTree(ctx context.Context, root, dst string) error {
	list, err := gitOutput(ctx, root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	if err != nil {
		return err
	}
	for _, name := range strings.Split(list, "\x00") {
		if name == "" {
			continue
		}
		if err := copyFile(filepath.Join(root, name), filepath.Join(dst, name)); err != nil {
			return err
		}
	}
	return nil
}

// copyFile copies a regular file or a symbolic link; a file git lists that is gone
// from the working tree (deleted, not yet committed) is left out.
func copyFile(from, to string) error {
	info, err := os.Lstat(from)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	if info.Mode()&os.ModeSymlink != 0 {
		target, err := os.Readlink(from)
		if err != nil {
			return err
		}
		return os.Symlink(target, to)
	}
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, info.Mode().Perm())
}

// build compiles the test binaries of the chosen mutants' packages, unchanged.
func (w *workspace) build(ctx context.Context, chosen []mutant) error {
	built := map[string]bool{}
	for _, m := range chosen {
		if built[m.pkg] {
			continue
		}
		if msg, err := w.compile(ctx, m.pkg); err != nil {
			return fmt.Errorf("the unchanged copy does not build %s: %w\n%s", m.pkg, err, indent(msg))
		}
		built[m.pkg] = true
	}
	return nil
}

// baseline runs each chosen mutant's tests on the unchanged copy (built): every one
// must pass, or its failure under a mutant would prove nothing.
func (w *workspace) baseline(ctx context.Context, chosen []mutant, out io.Writer) error {
	started := time.Now()
	ran := map[[2]string]bool{}
	for _, m := range chosen {
		if ran[[2]string{m.pkg, m.run}] {
			continue
		}
		ran[[2]string{m.pkg, m.run}] = true
		output, err := w.test(ctx, m)
		if err == nil && strings.Contains(output, noTests) {
			return fmt.Errorf("the -run pattern of mutant %s, %q, names no test of %s", m.name, m.run, m.pkg)
		}
		if err != nil || strings.Contains(output, "--- FAIL") {
			return fmt.Errorf("the tests of mutant %s fail on the unchanged copy (%v): %v\n%s", m.name, err, failedTests(output), indent(output))
		}
	}
	fmt.Fprintf(out, "baseline: the tests of %d mutants pass unmutated, %.1fs\n", len(chosen), time.Since(started).Seconds())
	return nil
}

// try plants m, builds its package, runs its tests, and takes m out again.
func (w *workspace) try(ctx context.Context, m mutant) (r result) {
	started := time.Now()
	r.mutant = m
	defer func() { r.elapsed = time.Since(started) }()
	restore, err := plant(w.dir, m)
	if err != nil {
		r.verdict, r.err = verdictError, err
		return r
	}
	defer func() {
		if err := restore(); err != nil && r.err == nil {
			r.verdict, r.err = verdictError, err
		}
	}()
	if msg, err := w.compile(ctx, m.pkg); err != nil {
		r.verdict, r.err, r.output = verdictError, fmt.Errorf("does not compile: %w", err), msg
		return r
	}
	r.output, r.err = w.test(ctx, m)
	r.failed = failedTests(r.output)
	r.verdict = judge(r.output, r.err)
	if r.verdict != verdictError {
		r.err = nil
	}
	return r
}

// judge reads a test run: caught when a test failed, survived when the run passed,
// an error when it failed without a failing test (a timeout, a crash before the tests).
func judge(output string, err error) verdict {
	switch {
	case strings.Contains(output, "--- FAIL"):
		return verdictCaught
	case err == nil:
		return verdictSurvived
	}
	return verdictError
}

// noTests is what a test binary prints when its -run pattern matches no test.
const noTests = "testing: warning: no tests to run"

var failLine = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)

// failedTests returns the names of the tests that failed in output.
func failedTests(output string) []string {
	var names []string
	for _, m := range failLine.FindAllStringSubmatch(output, -1) {
		names = append(names, m[1])
	}
	return names
}

// plant applies m's edit to its file under dir, and returns what takes it out.
func plant(dir string, m mutant) (restore func() error, err error) {
	path := filepath.Join(dir, filepath.FromSlash(m.file))
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if n := strings.Count(string(data), m.old); n != 1 {
		return nil, fmt.Errorf("%s: the edit's text is found %d times, not once", m.file, n)
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	planted := strings.Replace(string(data), m.old, m.new, 1)
	if err := os.WriteFile(path, []byte(planted), info.Mode().Perm()); err != nil {
		return nil, err
	}
	return func() error { return os.WriteFile(path, data, info.Mode().Perm()) }, nil
}

// binary is the path of pkg's test binary.
func (w *workspace) binary(pkg string) string {
	return filepath.Join(w.bin, strings.NewReplacer("/", "_", ".", "root").Replace(pkg)+".test")
}

// compile builds pkg's test binary, and returns the compiler's output when it fails.
func (w *workspace) compile(ctx context.Context, pkg string) (string, error) {
	cmd := exec.CommandContext(ctx, w.opts.goCmd, "test", "-c", "-o", w.binary(pkg), "./"+strings.TrimPrefix(pkg, "./"))
	cmd.Dir = w.dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// test runs m's tests from pkg's test binary, in the package's directory, against the
// run's DynamoDB Local.
func (w *workspace) test(ctx context.Context, m mutant) (string, error) {
	args := []string{"-test.run", m.run, "-test.count", "1", "-test.timeout", w.opts.timeout.String()}
	if w.opts.skip != "" {
		args = append(args, "-test.skip", w.opts.skip)
	}
	cmd := exec.CommandContext(ctx, w.binary(m.pkg), args...)
	cmd.Dir = filepath.Join(w.dir, filepath.FromSlash(m.pkg))
	cmd.Env = append(os.Environ(), "DYNAMODB_ENDPOINT="+w.endpoint)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// gitOutput runs git in dir and returns its standard output.
func gitOutput(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, exit.Stderr)
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}

// indent indents each line of s by four spaces.
func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
