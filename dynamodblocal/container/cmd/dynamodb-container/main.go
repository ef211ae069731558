// Command dynamodb-container is the starter program of dynamodblocal.Program: it
// starts DynamoDB Local in a container through package dynamodblocal/container (on a
// loopback-only engine, as that package's doc says), prints "endpoint URL" as the
// first line of its standard output, and keeps the container until its standard input
// closes (the process that ran it stopped it, or died), or it gets SIGINT or SIGTERM;
// then it stops and removes the container. Either of those during the start cancels
// the start, and a container it made all the same is removed. Its progress goes to
// standard error.
//
// scripts/container-engine.sh builds it and names it in DYNAMODB_LOCAL_STARTER, so
// that the test kit (asynceventtest) starts its containers through it without
// building testcontainers-go into the library's own module.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/asyncevent/asyncevent/dynamodblocal"
	"github.com/asyncevent/asyncevent/dynamodblocal/container"
)

// startTimeout bounds the container's start.
const startTimeout = 3 * time.Minute

func main() {
	logger := log.New(os.Stderr, "dynamodb-container: ", 0)
	// Watched before the start, so that a stop during it cancels it.
	stop, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel() // the input closed: stop
	}()
	ctx, cancelStart := context.WithTimeout(stop, startTimeout)
	inst, err := dynamodblocal.Start(ctx, dynamodblocal.Options{Logf: logger.Printf, Container: container.Engine{}, RequireContainer: true})
	cancelStart()
	if err != nil {
		logger.Fatal(err)
	}
	if stop.Err() == nil {
		if _, err := fmt.Printf("endpoint %s\n", inst.Endpoint); err == nil {
			<-stop.Done()
		}
	}
	if err := inst.Stop(); err != nil {
		logger.Fatal(err)
	}
}
