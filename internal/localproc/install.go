package localproc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// npmTimeout caps an npm run when the caller's ctx has no deadline, so an
// unreachable registry ends in an error, not a hang.
const npmTimeout = 5 * time.Minute

// Install is an npm package installed once into a cache directory that all
// the user's processes share, and reused from there.
type Install struct {
	// CacheDir holds the install, its lock file and nothing else of ours.
	CacheDir string
	// Name is the install's directory under CacheDir. It should carry the
	// package version, so that a bump installs afresh beside the old one.
	Name string
	// Marker is the name of the file that Ensure writes last into a
	// complete install, with the content Fill returned.
	Marker string
	// Package is the npm package, "name@version", for messages.
	Package string
	// Fill puts the package into dir, an empty directory that becomes the
	// install once Fill returns, and returns the marker's content. It runs
	// npm through npm.
	Fill func(ctx context.Context, npm NPM, dir string) (marker string, err error)
	// Check tells whether dir, with the marker's content, is a usable
	// install; Ensure redoes an install that fails it.
	Check func(dir, marker string) error
	// Logf receives progress lines. Default: discard.
	Logf func(format string, args ...any)
}

// Ensure returns the finished install's directory and its marker's content,
// running Fill first when there is none (or a broken one).
//
// Several test binaries of one `go test ./...` may get here at once, so: a
// finished install is only ever created by renaming a complete temp dir
// (with its marker) into place, so no reader sees a half-written one;
// installers take an exclusive lock on CacheDir/.lock so only one of them
// downloads; and should the rename still lose a race (no lock on this OS),
// the winner's install is used.
func (in Install) Ensure(ctx context.Context) (dir, marker string, err error) {
	logf := Logf(in.Logf, "")
	final := filepath.Join(in.CacheDir, in.Name)
	if marker, err := in.read(final); err == nil {
		logf("reusing %s", final)
		return final, marker, nil
	}
	// Look for npm before taking the lock, so its absence is reported at
	// once.
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", "", fmt.Errorf("npm not found on PATH (install Node.js with npm; it fetches %s once): %w", in.Package, err)
	}
	if err := os.MkdirAll(in.CacheDir, 0o755); err != nil {
		return "", "", fmt.Errorf("cache dir: %w", err)
	}
	unlock, locked, err := lockFile(ctx, filepath.Join(in.CacheDir, ".lock"), logf)
	if err != nil {
		return "", "", err
	}
	defer unlock()
	// Another process may have finished while we waited for the lock.
	if marker, err := in.read(final); err == nil {
		logf("reusing %s", final)
		return final, marker, nil
	}
	if locked {
		// Holding the lock, every temp or broken dir is a crashed
		// installer's leftover.
		removeLeftovers(in.CacheDir)
	}
	if _, err := os.Lstat(final); err == nil {
		// Present but incomplete (a file deleted by hand, say): move it
		// aside atomically, then delete.
		aside, err := os.MkdirTemp(in.CacheDir, ".broken-")
		if err != nil {
			return "", "", err
		}
		if err := os.Rename(final, filepath.Join(aside, "old")); err != nil {
			return "", "", fmt.Errorf("move aside broken install: %w", err)
		}
		_ = os.RemoveAll(aside)
	}

	tmp, err := os.MkdirTemp(in.CacheDir, ".tmp-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(tmp)
	pkg := filepath.Join(tmp, "install")
	if err := os.Mkdir(pkg, 0o755); err != nil {
		return "", "", err
	}
	logf("installing npm package %s into %s", in.Package, final)
	marker, err = in.Fill(ctx, NPM{path: npm}, pkg)
	if err != nil {
		return "", "", err
	}
	if err := in.Check(pkg, marker); err != nil {
		return "", "", fmt.Errorf("npm package %s: %w", in.Package, err)
	}
	if err := os.WriteFile(filepath.Join(pkg, in.Marker), []byte(marker+"\n"), 0o644); err != nil {
		return "", "", err
	}
	if err := os.Rename(pkg, final); err != nil {
		if marker, err2 := in.read(final); err2 == nil {
			return final, marker, nil // lost the race to an equally good install
		}
		return "", "", fmt.Errorf("move install into place: %w", err)
	}
	logf("installed %s", final)
	return final, marker, nil
}

// read returns the marker of a finished install that passes Check.
func (in Install) read(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, in.Marker))
	if err != nil {
		return "", err
	}
	marker := strings.TrimSpace(string(b))
	if err := in.Check(dir, marker); err != nil {
		return "", err
	}
	return marker, nil
}

// removeLeftovers deletes temp and broken dirs of installers that died.
func removeLeftovers(cacheDir string) {
	entries, _ := os.ReadDir(cacheDir)
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, ".tmp-") || strings.HasPrefix(n, ".broken-") {
			_ = os.RemoveAll(filepath.Join(cacheDir, n))
		}
	}
}

// NPM runs the npm that Install.Ensure found.
type NPM struct {
	path string
}

// Run runs npm with args in dir, quietly (no update notifier, funding or
// audit messages), and returns an error carrying npm's last output lines
// when it fails. When ctx has no deadline, the run is capped at five
// minutes.
func (n NPM) Run(ctx context.Context, dir string, args ...string) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, npmTimeout)
		defer cancel()
	}
	out := NewTailBuffer(8 << 10)
	cmd := exec.CommandContext(ctx, n.path, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(),
		"npm_config_update_notifier=false", "npm_config_fund=false",
		"npm_config_audit=false", "npm_config_loglevel=error")
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("npm %s: %w\n%s", strings.Join(args, " "), err, out.LastLines(20))
	}
	return nil
}
