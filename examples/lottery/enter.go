package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/queue"
)

// enteringClients is how many users enter at once.
const enteringClients = 16

// enter has entries users enter the event while a worker collects the entries,
// and returns once every entry is collected and the worker has stopped.
func enter(ctx context.Context, out io.Writer, client *asyncevent.Client, eventID string, entries int) error {
	p := newProgress(out, entries)
	var collected atomic.Int64
	q := queue.NewMemory(queue.MemoryOptions{})
	worker, err := asyncevent.NewWorker(client, q, asyncevent.WorkerOptions{WaitTime: 100 * time.Millisecond,
		ProcessOptions: asyncevent.ProcessOptions{OnOutcome: func(o asyncevent.Outcome) {
			if o.Kind == asyncevent.OutcomeCollected {
				p.count(collected.Add(1), "entries collected by the workers")
			}
		}}})
	if err != nil {
		return err
	}
	if err := worker.Start(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "%d users enter through %d clients while a worker collects the entries…\n", entries, enteringClients)
	err = submitAll(ctx, client, q, eventID, entries, p)
	if err == nil {
		err = q.WaitIdle(ctx) // every entry collected
	}
	if err := errors.Join(err, worker.Stop(ctx)); err != nil {
		return err
	}
	fmt.Fprintf(out, "%d entries collected\n", collected.Load())
	return nil
}

// submitAll has users user-00000, user-00001, … enter the event, enteringClients
// at once. The first Submit that fails stops the others, and the example
// with it (a service would answer that click with the error instead).
func submitAll(ctx context.Context, client *asyncevent.Client, q queue.Queue, eventID string, entries int, p *progress) error {
	clients, cctx := errgroup.WithContext(ctx)
	clients.SetLimit(enteringClients)
	var entered atomic.Int64
	for i := range entries {
		clients.Go(func() error {
			user := fmt.Sprintf("user-%05d", i)
			if _, err := client.Submit(cctx, q, eventID, user); err != nil {
				return fmt.Errorf("%s enters: %w", user, err)
			}
			p.count(entered.Add(1), "users entered")
			return nil
		})
	}
	return clients.Wait()
}

// progress prints a line at every tenth of the entries, from any goroutine: the
// run takes half a minute or so on DynamoDB Local.
type progress struct {
	mu      sync.Mutex
	out     io.Writer
	entries int
	step    int64
}

func newProgress(out io.Writer, entries int) *progress {
	return &progress{out: out, entries: entries, step: int64(max(entries/10, 1))}
}

// count prints "  n/entries what" when n is a multiple of the step.
func (p *progress) count(n int64, what string) {
	if n%p.step != 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.out, "  %d/%d %s\n", n, p.entries, what)
}
