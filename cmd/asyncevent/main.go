// Command asyncevent is the operator CLI of the asyncevent library: it starts a
// DynamoDB Local for development (local), creates and checks the table, creates, reads and lists events, closes, pauses, resumes and
// extends them, adds seats to a running first-come event and shows their audit
// trail, reads requests, lists and status logs, cancels a seat won, confirms and
// releases the HELD requests of an event with holds and runs its hold sweep,
// computes an event's statistics, runs and verifies a lottery draw, re-drives stuck
// requests, and runs the spike demo and the benchmark against a raw-SDK baseline.
//
//	asyncevent [global flags] <command> [flags] [arguments]
//
// Run "asyncevent help" for the commands and flags. Exit codes: 0 success, 1 failure,
// 2 usage error.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
