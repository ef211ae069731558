// Command dynamodb-container is the starter program of dynamodblocal.Program: it
// starts DynamoDB Local in a container through package dynamodblocal/container (on a
// loopback-only engine, as that package's doc says), prints "endpoint URL" as the
// first line of its standard output, and keeps the container until its standard input
// closes (the process that ran it stopped it, or died), or it gets SIGINT or SIGTERM;
// then it stops and removes the container. Its progress goes to standard error.
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

func main() {
	logger := log.New(os.Stderr, "dynamodb-container: ", 0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	inst, err := dynamodblocal.Start(ctx, dynamodblocal.Options{Logf: logger.Printf, Container: container.Engine{}, RequireContainer: true})
	cancel()
	if err != nil {
		logger.Fatal(err)
	}
	if _, err := fmt.Printf("endpoint %s\n", inst.Endpoint); err != nil {
		_ = inst.Stop()
		logger.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(done)
	}()
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	select {
	case <-done:
	case <-signals:
	}
	if err := inst.Stop(); err != nil {
		logger.Fatal(err)
	}
}
