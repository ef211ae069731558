package asyncevent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// decideAll runs a worker over q until every message is done.
func decideAll(ctx context.Context, client *asyncevent.Client, q *queue.Memory, opts asyncevent.ProcessOptions) {
	worker, err := asyncevent.NewWorker(client, q, asyncevent.WorkerOptions{WaitTime: 50 * time.Millisecond, ProcessOptions: opts})
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
}

// submitClicks submits each user's click to event, one at a time, and returns their
// request IDs.
func submitClicks(ctx context.Context, client *asyncevent.Client, q queue.Queue, event string, users ...string) []string {
	ids := make([]string, len(users))
	for i, user := range users {
		p, err := client.Submit(ctx, q, event, user)
		if err != nil {
			panic(err)
		}
		ids[i] = p.RequestID
	}
	return ids
}

// A seat held for its payment (EventSettings.HoldFor): the service confirms it once
// paid. The Transition carries the request as the write left it.
func ExampleClient_Confirm() {
	ctx := context.Background()
	client := exampleClient(asyncevent.Options{})
	if _, err := client.CreateEvent(ctx, asyncevent.EventSettings{
		EventID: "concert", EventType: asyncevent.FirstCome, CapacityTotal: 1, HoldFor: 10 * time.Minute,
		EndsAt: asyncevent.MillisOf(time.Now().Add(24 * time.Hour)),
	}); err != nil {
		panic(err)
	}
	q := queue.NewMemory(queue.MemoryOptions{})
	id := submitClicks(ctx, client, q, "concert", "ann")[0]
	decideAll(ctx, client, q, asyncevent.ProcessOptions{})
	held, err := client.GetRequest(ctx, id)
	if err != nil {
		panic(err)
	}
	fmt.Println(held.Status, "for", time.Until(held.HoldExpiresAt.Time()).Round(time.Minute))

	// The payment went through: the seat is ann's.
	t, err := client.Confirm(ctx, id)
	if err != nil {
		panic(err)
	}
	fmt.Println("applied:", t.Applied, t.Current.Status, t.Current.ResultCode)

	// Confirmed twice (a retry of the payment's callback): not applied, the request
	// as the condition found it.
	t, err = client.Confirm(ctx, id)
	if err != nil {
		panic(err)
	}
	fmt.Println("applied:", t.Applied, t.Current.Status)
	// Output:
	// HELD for 10m0s
	// applied: true SUCCEEDED SUCCESS
	// applied: false SUCCEEDED
}

// A held seat given up: Release ends the request REJECTED_RELEASED, and the hold
// sweep gives the seat to the first request on the waitlist.
func ExampleClient_Release() {
	ctx := context.Background()
	client := exampleClient(asyncevent.Options{})
	if _, err := client.CreateEvent(ctx, asyncevent.EventSettings{
		EventID: "concert", EventType: asyncevent.FirstCome, CapacityTotal: 1, HoldFor: 10 * time.Minute,
		EndsAt: asyncevent.MillisOf(time.Now().Add(24 * time.Hour)),
	}); err != nil {
		panic(err)
	}
	q := queue.NewMemory(queue.MemoryOptions{})
	var ids []string
	for _, user := range []string{"ann", "bob"} { // one at a time, for a fixed output
		ids = append(ids, submitClicks(ctx, client, q, "concert", user)...)
		decideAll(ctx, client, q, asyncevent.ProcessOptions{})
	}
	show := func() {
		for _, id := range ids {
			r, err := client.GetRequest(ctx, id)
			if err != nil {
				panic(err)
			}
			fmt.Println(strings.TrimRight(fmt.Sprint("  ", r.UserID, " ", r.Status, " ", r.ResultCode), " "))
		}
	}
	fmt.Println("after the clicks:")
	show()

	t, err := client.Release(ctx, ids[0]) // ann gives her seat up
	if err != nil {
		panic(err)
	}
	fmt.Println("released:", t.Applied, t.Current.ResultCode)
	if _, err := client.SweepHolds(ctx, "concert", asyncevent.HoldSweepOptions{}); err != nil { // a Worker runs it every second
		panic(err)
	}
	fmt.Println("after the hold sweep:")
	show()
	// Output:
	// after the clicks:
	//   ann HELD
	//   bob WAITLISTED
	// released: true REJECTED_RELEASED
	// after the hold sweep:
	//   ann REJECTED REJECTED_RELEASED
	//   bob HELD
}

// A request's place in line while it waits: the requests ahead of it and, once the
// workers have decided some, the wait.
func ExampleClient_GetRequest() {
	ctx := context.Background()
	client := exampleClient(asyncevent.Options{})
	if _, err := client.CreateEvent(ctx, asyncevent.EventSettings{
		EventID: "drop", EventType: asyncevent.FirstCome, CapacityTotal: 100,
	}); err != nil {
		panic(err)
	}
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := submitClicks(ctx, client, q, "drop", "ann", "bob", "cid")
	if err := client.FlushProgress(ctx); err != nil { // written by every node each ProgressEvery; now, for the example
		panic(err)
	}
	r, err := client.GetRequest(ctx, ids[2])
	if err != nil {
		panic(err)
	}
	fmt.Println(r.UserID, r.Status)
	fmt.Println("ahead of it:", r.Queue.Ahead)
	fmt.Println("wait known:", r.Queue.Rate > 0) // no worker has decided a request yet
	// Output:
	// cid QUEUED
	// ahead of it: 2
	// wait known: false
}

// A first-come event with a pre-queue: the clicks from PrequeueOpensAt until the start
// wait, and ServePrequeue serves them in an order drawn from the seed committed at
// the event's creation; VerifyPrequeue, or anyone with the revealed seed and the
// recorded entries, recomputes it.
func ExampleClient_ServePrequeue() {
	ctx := context.Background()
	now := time.Now()
	clock := asynceventtest.NewClock(now) // a clock the example moves past the start
	client := exampleClient(asyncevent.Options{Clock: clock.Now})
	start := now.Add(time.Hour)
	event, err := client.CreateEvent(ctx, asyncevent.EventSettings{
		EventID: "drop", EventType: asyncevent.FirstCome, CapacityTotal: 2,
		PrequeueOpensAt: asyncevent.MillisOf(now), StartsAt: asyncevent.MillisOf(start),
	})
	if err != nil {
		panic(err)
	}
	q := queue.NewMemory(queue.MemoryOptions{})
	submitClicks(ctx, client, q, "drop", "ann", "bob", "cid", "dan", "eve") // before the start: they wait

	clock.Advance(time.Hour + asyncevent.DefaultDrawSettleWindow + time.Second) // the start and its settle window passed
	result, err := client.ServePrequeue(ctx, "drop")
	if err != nil {
		panic(err)
	}
	fmt.Println("entries:", result.Record.EntryCount, "served a seat:", len(result.Winners))
	fmt.Println("seed matches the published commitment:", result.Record.SeedCommitment == event.SeedCommitment)
	check, err := client.VerifyPrequeue(ctx, "drop")
	if err != nil {
		panic(err)
	}
	fmt.Println("verified:", check.OK())
	// Output:
	// entries: 5 served a seat: 2
	// seed matches the published commitment: true
	// verified: true
}

// A service's own step for each request (ProcessOptions.Handler), run before a seat
// is spent: a Permanent error ends the request FAILED_FINAL (FAILED_VALIDATION), any
// other error is tried again later.
func ExampleHandlerFunc() {
	ctx := context.Background()
	client := exampleClient(asyncevent.Options{})
	if _, err := client.CreateEvent(ctx, asyncevent.EventSettings{
		EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 10,
	}); err != nil {
		panic(err)
	}
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := submitClicks(ctx, client, q, "sale", "ann", "bot-7")
	eligible := asyncevent.HandlerFunc(func(ctx context.Context, m asyncevent.Message) error {
		if m.UserID == "bot-7" { // the service's own rule: a user it refuses
			return asyncevent.Permanent(errors.New("not eligible"))
		}
		return nil
	})
	decideAll(ctx, client, q, asyncevent.ProcessOptions{Handler: eligible})
	for _, id := range ids {
		r, err := client.GetRequest(ctx, id)
		if err != nil {
			panic(err)
		}
		fmt.Println(strings.TrimSpace(fmt.Sprint(r.UserID, " ", r.Status, " ", r.ResultCode, " ", r.ErrorMessage)))
	}
	// Output:
	// ann SUCCEEDED SUCCESS
	// bot-7 FAILED_FINAL FAILED_VALIDATION not eligible
}
