// Package sqslocal finds or starts a local SQS for tests and demos, so that
// they run against an SQS implementation without an AWS account.
//
// Start looks, in order, for:
//
//  1. an endpoint named by the SQS_ENDPOINT environment variable (for CI
//     services, or a local SQS the developer already runs);
//  2. Node.js 20+ and npm, with which it installs the SQS emulator fauxqs
//     (npm package fauxqs, pinned with its dependencies by the lock file in
//     npm/) once into a cache directory and runs it as a child process that
//     dies with the calling process.
//
// fauxqs speaks the SQS JSON protocol of aws-sdk-go-v2: standard and FIFO
// queues, visibility timeouts, batches and dead-letter redrive. It keeps
// everything in memory; every Start gets empty queues.
//
// Start is meant to be called once per process (keep the *Instance behind a
// sync.Once): every call starts another fauxqs.
package sqslocal

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/asyncevent/asyncevent/internal/localproc"
)

// EnvEndpoint is the environment variable that, when set, names a running
// SQS implementation (for example http://localhost:4566) that Start returns
// instead of starting one.
const EnvEndpoint = "SQS_ENDPOINT"

// Values of Instance.Source.
const (
	SourceEnv    = "env"    // taken from SQS_ENDPOINT
	SourceFauxqs = "fauxqs" // fauxqs run by the local node
)

// Region is the AWS region NewClient uses unless an option overrides it;
// fauxqs puts it into queue URLs and ARNs.
const Region = localproc.Region

// The npm package run here. 1.9.2 runs on Node.js 20; fauxqs 2.x needs
// Node.js 22. The install directory's name carries the version, so a bump
// installs afresh beside the old one.
const (
	npmPackage = "fauxqs"
	npmVersion = "1.9.2"
)

// npmProject is the package.json and package-lock.json that pin fauxqs and
// every dependency, installed with npm ci: fauxqs asks for its dependencies
// with caret ranges, and a later release of one of them could drop Node.js
// 20.
//
//go:embed npm/package.json npm/package-lock.json
var npmProject embed.FS

// markerFile, inside a finished install, holds "fauxqs@<version>". It is
// written last before the install is renamed into place.
const markerFile = ".sqslocal-installed"

// cliPath is fauxqs's command line entry point, relative to the install.
const cliPath = "node_modules/fauxqs/dist/cli.js"

// startTimeout bounds the wait for fauxqs to answer; it takes about a
// second.
const startTimeout = 30 * time.Second

// Options configures Start. The zero value is ready to use; CacheDir
// defaults to os.UserCacheDir()/asyncevent/fauxqs.
type Options = localproc.Options

// Instance is a local SQS that Start found or started. Its Source is
// SourceEnv or SourceFauxqs. Stop stops fauxqs and returns once its port is
// closed; for an endpoint from SQS_ENDPOINT it does nothing.
type Instance = localproc.Instance

// Start finds or starts a local SQS: the endpoint in SQS_ENDPOINT if that is
// set, else fauxqs run by node (installed from npm into opts.CacheDir on
// first use) on a free loopback port. When neither can be had the error says
// what to install or set.
//
// ctx bounds only the start (npm install, waiting for the port); fauxqs keeps
// running after ctx ends, until Stop is called or the calling process exits,
// whichever comes first.
func Start(ctx context.Context, opts Options) (*Instance, error) {
	logf := localproc.Logf(opts.Logf, "sqslocal: ")
	if ep, ok := localproc.EndpointFromEnv(EnvEndpoint); ok {
		logf("using %s=%s", EnvEndpoint, ep)
		return localproc.NewInstance(ep, SourceEnv, nil), nil
	}
	cacheDir := opts.CacheDir
	if cacheDir == "" {
		cacheDir = localproc.CacheDir("fauxqs")
	}
	inst, err := startFauxqs(ctx, cacheDir, logf)
	if err != nil && ctx.Err() == nil {
		err = fmt.Errorf("sqslocal: no local SQS could be had. Do one of: "+
			"set %s to the URL of a running SQS implementation (e.g. http://localhost:4566); "+
			"or install Node.js 20+ with npm (node and npm on PATH; the npm package %s@%s is installed once into %s).\n  %w",
			EnvEndpoint, npmPackage, npmVersion, cacheDir, err)
	}
	return inst, err
}

// startFauxqs installs fauxqs into cacheDir if needed and runs it.
func startFauxqs(ctx context.Context, cacheDir string, logf func(string, ...any)) (*Instance, error) {
	if !localproc.Supported {
		return nil, errors.New("running fauxqs is supported only on Unix systems here")
	}
	// Look for node before installing, so a machine without it does not
	// download first.
	if _, err := exec.LookPath("node"); err != nil {
		return nil, fmt.Errorf("node not found on PATH: %w", err)
	}
	dir, _, err := localproc.Install{
		CacheDir: cacheDir,
		Name:     npmPackage + "-" + npmVersion,
		Marker:   markerFile,
		Package:  npmPackage + "@" + npmVersion,
		Fill:     fillInstall,
		Check:    checkInstall,
		Logf:     logf,
	}.Ensure(ctx)
	if err != nil {
		return nil, err
	}
	p, err := localproc.Start(ctx, localproc.Server{
		What:    "fauxqs",
		Program: "node",
		Args:    func(int) []string { return []string{filepath.Join(dir, filepath.FromSlash(cliPath))} },
		Env: func(port int) []string {
			return []string{"FAUXQS_PORT=" + strconv.Itoa(port), "FAUXQS_LOGGER=false", "FAUXQS_DEFAULT_REGION=" + Region}
		},
		Hint:         "fauxqs " + npmVersion + " needs Node.js 20+",
		Ready:        answersHealth,
		ReadyTimeout: startTimeout,
		PortTaken:    func(out string) bool { return strings.Contains(out, "EADDRINUSE") },
		Logf:         logf,
	})
	if err != nil {
		return nil, err
	}
	return localproc.NewInstance(p.Endpoint, SourceFauxqs, p.Stop), nil
}

// answersHealth tells whether fauxqs answers its health check, which
// replies {"status":"ok"}.
func answersHealth(endpoint string) bool {
	return localproc.ProbeHTTP(endpoint+"/health", func(r *http.Response) bool {
		var health struct{ Status string }
		return r.StatusCode == http.StatusOK &&
			json.NewDecoder(r.Body).Decode(&health) == nil && health.Status == "ok"
	})
}

// fillInstall installs fauxqs into dir with npm ci from the embedded
// package.json and package-lock.json. Install scripts are not run: none of
// the packages needs one.
func fillInstall(ctx context.Context, npm localproc.NPM, dir string) (string, error) {
	for _, name := range []string{"package.json", "package-lock.json"} {
		b, err := npmProject.ReadFile("npm/" + name)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return "", err
		}
	}
	if err := npm.Run(ctx, dir, "ci", "--ignore-scripts", "--omit=dev", "--no-audit", "--no-fund"); err != nil {
		return "", err
	}
	return npmPackage + "@" + npmVersion, nil
}

// checkInstall checks an install: the marker names the pinned version, and
// fauxqs's entry point is a file.
func checkInstall(dir, marker string) error {
	if want := npmPackage + "@" + npmVersion; marker != want {
		return fmt.Errorf("install in %s is %q, want %q", dir, marker, want)
	}
	if fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(cliPath))); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("%s missing in %s", cliPath, dir)
	}
	return nil
}

// NewClient returns an SQS client for a local SQS at endpoint, with static
// dummy credentials and region us-east-1 (override with optFns). The
// configuration is localproc.AWSConfig's: nothing is read from the
// developer's ~/.aws files or AWS_* variables. ctx is accepted for symmetry
// with the SDK's constructors and is not used today.
func NewClient(ctx context.Context, endpoint string, optFns ...func(*sqs.Options)) (*sqs.Client, error) {
	_ = ctx
	cfg, err := localproc.AWSConfig(endpoint, "sqslocal")
	if err != nil {
		return nil, fmt.Errorf("sqslocal: NewClient: %w", err)
	}
	return sqs.NewFromConfig(cfg, optFns...), nil
}
