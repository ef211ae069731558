// Command quickstart creates the asyncevent table on a DynamoDB Local and prints the
// keys a sample request is stored and indexed under.
//
// Without -dynamodb-endpoint (or DYNAMODB_ENDPOINT) it starts an embedded DynamoDB
// Local the way the test kit does, and stops it on exit.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/internal/ddblocal"
)

func main() {
	table := flag.String("table", envOr("ASYNCEVENT_TABLE", asyncevent.DefaultTableName), "DynamoDB table name (env ASYNCEVENT_TABLE)")
	endpoint := flag.String("dynamodb-endpoint", os.Getenv("DYNAMODB_ENDPOINT"), "DynamoDB Local endpoint (env DYNAMODB_ENDPOINT); empty: start an embedded one")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *table, *endpoint); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, table, endpoint string) error {
	if endpoint == "" {
		inst, err := ddblocal.Start(ctx, ddblocal.Options{Logf: log.Printf})
		if err != nil {
			return err
		}
		defer inst.Stop()
		endpoint = inst.Endpoint
	}
	db, err := ddblocal.NewClient(ctx, endpoint)
	if err != nil {
		return err
	}
	client, err := asyncevent.New(db, asyncevent.Options{TableName: table})
	if err != nil {
		return err
	}
	if err := client.CreateTable(ctx); err != nil {
		return err
	}
	fmt.Printf("table %s is ready on %s (GSI1, GSI2, TTL on ttl)\n\n", client.TableName(), endpoint)

	const eventID, userID = "spring-sale", "user-7"
	requestID := "0193a3c2-7f1e-7cc1-9f5b-2b1d3c4e5f60"
	queuedAt := asyncevent.MillisOf(time.Now())

	req, err := asyncevent.NewRequestKey(requestID)
	if err != nil {
		return err
	}
	lock, err := asyncevent.NewLockKey(eventID, userID)
	if err != nil {
		return err
	}
	capacity, err := asyncevent.NewEventKey(eventID, asyncevent.EventItemCapacity)
	if err != nil {
		return err
	}
	index, err := asyncevent.NewIndexKeys(eventID, userID, requestID, queuedAt)
	if err != nil {
		return err
	}
	fmt.Printf("a request of %s in %s:\n", userID, eventID)
	row := func(item, pk, sk string) { fmt.Printf("  %-16s %-42s %s\n", item, pk, sk) }
	row("item", "PK", "SK")
	row("Request", req.Key().PK, req.Key().SK)
	row("IdempotencyLock", lock.Key().PK, lock.Key().SK)
	row("EventCapacity", capacity.Key().PK, capacity.Key().SK)
	row("GSI1 (user)", index.GSI1PK, index.GSI1SK)
	row("GSI2 (event)", index.GSI2PK, index.GSI2SK)

	_, err = asyncevent.NewLockKey(eventID, "user#7")
	fmt.Printf("\nan ID with '#' is refused: %v\n", err)
	return nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
