// Command quickstart is the shortest complete asyncevent program: a first-come event with
// 3 seats on a DynamoDB Local, 5 users clicking (ann twice), a worker, the outcome.
package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/dynamodblocal"
)

func main() {
	if err := run(context.Background()); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) error {
	local, err := dynamodblocal.Start(ctx, dynamodblocal.Options{}) // DYNAMODB_ENDPOINT, Docker, or java
	if err != nil {
		return err
	}
	defer local.Stop()
	client, err := asyncevent.New(local.Client, asyncevent.Options{TableName: fmt.Sprint("quickstart-", time.Now().UnixNano())})
	if err == nil {
		err = client.CreateTable(ctx)
	}
	if err == nil {
		_, err = client.CreateEvent(ctx, asyncevent.EventConfig{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 3})
	}
	if err != nil {
		return err
	}
	queue := asyncevent.NewMemoryQueue(asyncevent.MemoryQueueOptions{})
	worker, err := asyncevent.NewWorker(client, queue, asyncevent.WorkerOptions{})
	if err != nil || worker.Start(ctx) != nil {
		return fmt.Errorf("worker: %v", err)
	}
	defer worker.Stop(ctx)
	for _, user := range []string{"ann", "bob", "cid", "ann", "dan", "eve"} {
		p, err := client.Submit(ctx, queue, "sale", user) // 202 Accepted, or 200 for a duplicate
		if err != nil {
			return err
		}
		fmt.Printf("%s clicks: request %s, duplicate %t\n", user, p.RequestID, p.Duplicate)
	}
	queue.WaitIdle(ctx) // every message done: every request decided
	page, err := client.ListEventRequests(ctx, "sale", asyncevent.EventListOptions{})
	if err != nil {
		return err
	}
	for _, r := range page.Requests { // in queue order
		fmt.Printf("%s: %s %s\n", r.UserID, r.Status, r.ResultCode)
	}
	return nil
}
