// Command quickstart is the shortest complete asyncevent program: a first-come event with
// 3 seats on a DynamoDB Local, 5 users clicking (ann twice), a worker, the outcome.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/dynamodblocal"
	"github.com/asyncevent/asyncevent/queue"
)

func main() {
	if err := run(context.Background()); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) (err error) {
	local, err := dynamodblocal.Start(ctx, dynamodblocal.Options{}) // DYNAMODB_ENDPOINT, or java (container.Start adds a container)
	if err != nil {
		return fmt.Errorf("start DynamoDB Local: %w", err)
	}
	defer func() { err = errors.Join(err, local.Stop()) }()
	client, err := asyncevent.New(local.Client, asyncevent.Options{TableName: fmt.Sprint("quickstart-", time.Now().UnixNano())})
	if err != nil {
		return err
	}
	if err := client.CreateTable(ctx); err != nil {
		return fmt.Errorf("create the table: %w", err)
	}
	if _, err := client.CreateEvent(ctx, asyncevent.EventSettings{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 3}); err != nil {
		return fmt.Errorf("create the event: %w", err)
	}

	// The winners are decided in processing order: under a burst of clicks a loser can
	// have queued before a winner (measured: 16 bursts of 20 with 30 users for 5
	// seats, up to 83 ms; a FIFO queue too). EventSettings.Admission AdmissionRanked
	// decides by queue order; EventStats' Fairness counts the inversions.
	q := queue.NewMemory(queue.MemoryOptions{})
	worker, err := asyncevent.NewWorker(client, q, asyncevent.WorkerOptions{})
	if err != nil {
		return err
	}
	if err := worker.Start(ctx); err != nil {
		return fmt.Errorf("start the worker: %w", err)
	}
	defer func() { err = errors.Join(err, worker.Stop(ctx)) }() // before local.Stop: defers run last first

	for _, user := range []string{"ann", "bob", "cid", "ann", "dan", "eve"} {
		p, err := client.Submit(ctx, q, "sale", user) // 202 Accepted, or 200 for a duplicate
		if err != nil {
			return fmt.Errorf("%s clicks: %w", user, err)
		}
		fmt.Printf("%s clicks: request %s, duplicate %t\n", user, p.RequestID, p.Duplicate)
	}
	if err := q.WaitIdle(ctx); err != nil { // every message done: every request decided
		return err
	}
	page, err := client.ListEventRequests(ctx, "sale", asyncevent.EventListOptions{})
	if err != nil {
		return err
	}
	for _, r := range page.Requests { // in queue order
		fmt.Printf("%s: %s %s\n", r.UserID, r.Status, r.ResultCode)
	}
	return nil
}
