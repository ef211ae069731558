// Package container starts DynamoDB Local in a container through testcontainers-go,
// as the second of dynamodblocal.Start's three ways (after DYNAMODB_ENDPOINT, before
// the jar). It is a package of its own so that a program that needs only the jar does
// not build testcontainers-go and the Docker client it brings; the test kit
// asynceventtest and the CLI import it.
//
//	db, err := container.Start(ctx, dynamodblocal.Options{Logf: log.Printf})
//	if err != nil {
//		return err
//	}
//	defer db.Stop()
//
// # Loopback only
//
// Tests here talk to loopback addresses only, so a container runs on the host's
// network (DynamoDB Local with -port on a free port we pick, reached at 127.0.0.1),
// and Engine refuses to start one unless the engine and testcontainers-go are set up
// so that nothing else can happen (LoopbackOnly): the engine is a local one with no
// bridge network and no bridge interface on the host, a config-only network named
// reaper_default exists (else testcontainers-go creates a bridge network by that
// name), TESTCONTAINERS_HOST_OVERRIDE names a loopback address (else, where
// /.dockerenv exists, it takes the default gateway for the engine's host),
// TESTCONTAINERS_RYUK_DISABLED is true (its reaper's image would be pulled), and the
// image is already on the engine: nothing is ever pulled. scripts/container-engine.sh
// starts such an engine, builds the image without a registry and sets the variables;
// `make test` runs the suite inside it. On any other engine, such as a Docker
// Desktop with its default bridge, Start says in one line why it passes the
// container over, and the jar runs.
//
// # Clean-up
//
// Instance.Stop terminates and removes the container. Nothing reaps a container
// whose process died before Stop (the reaper is off); every container started here
// carries the label com.github.asyncevent.asyncevent=dynamodblocal, and
// scripts/container-engine.sh removes those that are left when it stops the engine.
package container

import (
	"context"

	"github.com/asyncevent/asyncevent/dynamodblocal"
)

// Environment variables read by Start.
const (
	// EnvMode is "off" to skip the container path, "require" to make a container
	// the only way after DYNAMODB_ENDPOINT (a run that must prove the container
	// path: scripts/container-engine.sh sets it), or empty: try a container, then
	// the jar (dynamodblocal.EnvContainerMode).
	EnvMode = dynamodblocal.EnvContainerMode

	// EnvImage names the image when Engine.Image is empty (scripts/container-engine.sh
	// sets it to the image it built).
	EnvImage = "DYNAMODB_LOCAL_IMAGE"
)

// DefaultImage is the image when neither Engine.Image nor DYNAMODB_LOCAL_IMAGE names
// one: Amazon's, at the DynamoDB Local version of the jar that package dynamodblocal
// installs, so both paths run the same DynamoDB Local. It is never pulled here.
const DefaultImage = "amazon/dynamodb-local:3.3.0"

// Start is dynamodblocal.Start with the container path: DYNAMODB_ENDPOINT, then a
// container started by an Engine (opts.Container when set), then the jar. The
// variable DYNAMODB_LOCAL_CONTAINER ("off", "require") turns the container path off
// or makes it the only one after DYNAMODB_ENDPOINT.
func Start(ctx context.Context, opts dynamodblocal.Options) (*dynamodblocal.Instance, error) {
	if opts.Container == nil {
		opts.Container = Engine{}
	}
	return dynamodblocal.StartFromEnv(ctx, opts)
}
