package asyncevent_test

import (
	"context"
	"fmt"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// exampleClient returns a Client on a fresh table of the test binary's DynamoDB Local.
func exampleClient(opts asyncevent.Options) *asyncevent.Client {
	db, err := asynceventtest.LocalDynamoDB()
	if err != nil {
		panic(err)
	}
	opts.TableName = fmt.Sprintf("example-%d", time.Now().UnixNano())
	client, err := asyncevent.New(db, opts)
	if err != nil {
		panic(err)
	}
	if err := client.CreateTable(context.Background()); err != nil {
		panic(err)
	}
	return client
}

// A first-come event with three seats: clicks, a worker, the outcomes.
func Example() {
	ctx := context.Background()
	client := exampleClient(asyncevent.Options{}) // asyncevent.New and CreateTable on a DynamoDB Local
	if _, err := client.CreateEvent(ctx, asyncevent.EventSettings{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 3}); err != nil {
		panic(err)
	}
	q := queue.NewMemory(queue.MemoryOptions{}) // queue.SQS in production
	worker, err := asyncevent.NewWorker(client, q, asyncevent.WorkerOptions{WaitTime: 50 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	if err := worker.Start(ctx); err != nil {
		panic(err)
	}
	var ids []string
	for _, user := range []string{"ann", "bob", "ann", "cid", "dan"} { // ann clicks twice
		p, err := client.Submit(ctx, q, "sale", user) // the whole ingest of a click
		if err != nil {
			panic(err)
		}
		if !p.Duplicate {
			ids = append(ids, p.RequestID)
		}
		if err := q.WaitIdle(ctx); err != nil { // one at a time, for a fixed output
			panic(err)
		}
	}
	if err := worker.Stop(ctx); err != nil {
		panic(err)
	}
	for _, id := range ids {
		r, err := client.GetRequest(ctx, id)
		if err != nil {
			panic(err)
		}
		fmt.Println(r.UserID, r.Status, r.ResultCode)
	}
	// Output:
	// ann SUCCEEDED SUCCESS
	// bob SUCCEEDED SUCCESS
	// cid SUCCEEDED SUCCESS
	// dan REJECTED REJECTED_CAPACITY
}

func ExampleClient_Submit() {
	ctx := context.Background()
	client := exampleClient(asyncevent.Options{})
	q := queue.NewMemory(queue.MemoryOptions{})
	if _, err := client.CreateEvent(ctx, asyncevent.EventSettings{
		EventID: "spring-sale", EventType: asyncevent.FirstCome, CapacityTotal: 100,
	}); err != nil {
		panic(err)
	}

	first, err := client.Submit(ctx, q, "spring-sale", "user-7")
	if err != nil {
		panic(err)
	}
	fmt.Println(first.Duplicate, first.Request.Status)

	again, err := client.Submit(ctx, q, "spring-sale", "user-7") // a second click
	if err != nil {
		panic(err)
	}
	fmt.Println(again.Duplicate, again.RequestID == first.RequestID)
	fmt.Println("messages on the queue:", q.Len().Visible)

	_, err = client.Submit(ctx, q, "no-such-event", "user-7")
	fmt.Println(err)
	// Output:
	// false QUEUED
	// true true
	// messages on the queue: 1
	// asyncevent: event not found: no-such-event
}

func ExampleWorker() {
	ctx := context.Background()
	client := exampleClient(asyncevent.Options{})
	q := queue.NewMemory(queue.MemoryOptions{})
	if _, err := client.CreateEvent(ctx, asyncevent.EventSettings{
		EventID: "flash", EventType: asyncevent.FirstCome, CapacityTotal: 2,
	}); err != nil {
		panic(err)
	}
	for _, user := range []string{"ann", "bob", "cid", "dee", "eve"} {
		if _, err := client.Submit(ctx, q, "flash", user); err != nil {
			panic(err)
		}
	}

	worker, err := asyncevent.NewWorker(client, q, asyncevent.WorkerOptions{WaitTime: 50 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	if err := worker.Start(ctx); err != nil {
		panic(err)
	}
	if err := q.WaitIdle(ctx); err != nil {
		panic(err)
	}
	if err := worker.Stop(ctx); err != nil {
		panic(err)
	}

	stats, err := client.EventStats(ctx, "flash")
	if err != nil {
		panic(err)
	}
	fmt.Println("won:", stats.ByStatus[asyncevent.StatusSucceeded], "lost:", stats.ByResultCode[asyncevent.ResultRejectedCapacity])
	fmt.Println("seats left:", stats.CapacityRemaining)
	// Output:
	// won: 2 lost: 3
	// seats left: 0
}

func ExampleClient_Draw() {
	ctx := context.Background()
	now := time.Now()
	clock := func() time.Time { return now }
	client := exampleClient(asyncevent.Options{Clock: func() time.Time { return clock() }})
	event, err := client.CreateEvent(ctx, asyncevent.EventSettings{
		EventID: "lucky", EventType: asyncevent.Lottery, WinnerCount: 3,
		LotteryCutoffAt: asyncevent.MillisOf(now.Add(time.Hour)),
	})
	if err != nil {
		panic(err)
	}
	q := queue.NewMemory(queue.MemoryOptions{})
	for i := range 10 {
		if _, err := client.Submit(ctx, q, "lucky", fmt.Sprintf("user-%d", i)); err != nil {
			panic(err)
		}
	}

	later := now.Add(2 * time.Hour) // past the cutoff and the settle window
	clock = func() time.Time { return later }
	result, err := client.Draw(ctx, "lucky")
	if err != nil {
		panic(err)
	}
	fmt.Println("entries:", result.Record.EntryCount, "winners:", len(result.Winners))
	fmt.Println("seed matches the published commitment:", result.Record.SeedCommitment == event.SeedCommitment)

	check, err := client.VerifyDraw(ctx, "lucky")
	if err != nil {
		panic(err)
	}
	fmt.Println(check)
	// Output:
	// entries: 10 winners: 3
	// seed matches the published commitment: true
	// draw of lucky verified: 10 entries, 3 winners
}
