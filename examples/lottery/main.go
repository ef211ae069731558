// Command lottery runs a LOTTERY event end to end on an embedded DynamoDB Local:
// users enter, workers collect the entries, the cutoff passes, the draw picks the
// winners, and the draw is verified as anyone holding the revealed seed could.
//
//	go run ./examples/lottery -entries 2000 -winners 20
//
// The event's hour of entry time passes at once: the example's clock jumps over it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/dynamodblocal"
	"github.com/asyncevent/asyncevent/queue"
)

func main() {
	entries := flag.Int("entries", 1000, "how many users enter")
	winners := flag.Int64("winners", 10, "how many win")
	endpoint := flag.String("dynamodb-endpoint", os.Getenv("DYNAMODB_ENDPOINT"), "DynamoDB endpoint (env DYNAMODB_ENDPOINT); empty: start an embedded DynamoDB Local")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := runLocal(ctx, *endpoint, *entries, *winners); err != nil {
		stop()
		log.Fatal(err) // after the DynamoDB Local it started has stopped
	}
}

// runLocal is run on the DynamoDB Local at endpoint, or on one it starts and stops
// when endpoint is empty.
func runLocal(ctx context.Context, endpoint string, entries int, winners int64) (err error) {
	if endpoint == "" {
		inst, serr := dynamodblocal.Start(ctx, dynamodblocal.Options{Logf: log.Printf})
		if serr != nil {
			return fmt.Errorf("start DynamoDB Local: %w", serr)
		}
		defer func() { err = errors.Join(err, inst.Stop()) }()
		endpoint = inst.Endpoint
	}
	return run(ctx, os.Stdout, endpoint, entries, winners)
}

// skipClock is the real clock plus an offset that can jump forward.
type skipClock struct{ offset atomic.Int64 }

func (c *skipClock) now() time.Time       { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *skipClock) skip(d time.Duration) { c.offset.Add(int64(d)) }

func run(ctx context.Context, out io.Writer, endpoint string, entries int, winners int64) error {
	db, err := dynamodblocal.NewClient(endpoint)
	if err != nil {
		return err
	}
	clock := &skipClock{}
	client, err := asyncevent.New(db, asyncevent.Options{
		TableName: fmt.Sprintf("lottery-example-%d", time.Now().UnixNano()),
		Clock:     clock.now,
	})
	if err != nil {
		return err
	}
	if err := client.CreateTable(ctx); err != nil {
		return err
	}
	cutoff := clock.now().Add(time.Hour)
	event, err := client.CreateEvent(ctx, asyncevent.EventConfig{
		EventID: "spring-lottery", EventType: asyncevent.Lottery, Name: "Spring lottery",
		WinnerCount: winners, LotteryCutoffAt: asyncevent.MillisOf(cutoff),
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "event %s: %d winners, entries until %s\n", event.EventID, winners, cutoff.Format(time.RFC3339))
	fmt.Fprintf(out, "published seed commitment: %s\n", event.SeedCommitment)
	// Without Options.Seeds the seed is the development default: stored on the
	// table, where any reader of the table sees it before the draw.
	fmt.Fprintf(out, "seed mode: %s (set Options.Seeds, e.g. asyncevent.HMACSeeds, for a sealed one)\n", event.SeedMode)

	// Progress, at every tenth of the entries: the run takes half a minute or so on
	// DynamoDB Local.
	step := max(entries/10, 1)
	var mu sync.Mutex
	progress := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format, args...)
	}
	var collected atomic.Int64
	queue := queue.NewMemory(queue.MemoryOptions{})
	worker, err := asyncevent.NewWorker(client, queue, asyncevent.WorkerOptions{WaitTime: 100 * time.Millisecond,
		ProcessOptions: asyncevent.ProcessOptions{OnOutcome: func(o asyncevent.Outcome) {
			if o.Kind == asyncevent.OutcomeCollected {
				if n := collected.Add(1); n%int64(step) == 0 {
					progress("  %d/%d entries collected by the workers\n", n, entries)
				}
			}
		}}})
	if err != nil {
		return err
	}
	if err := worker.Start(ctx); err != nil {
		return err
	}
	// 16 clients at once; the first Submit that fails stops the others, and the
	// example with it (a service would answer that click with the error instead).
	clients, cctx := errgroup.WithContext(ctx)
	clients.SetLimit(16)
	var entered atomic.Int64
	fmt.Fprintf(out, "%d users enter through 16 clients while a worker collects the entries…\n", entries)
	for i := range entries {
		clients.Go(func() error {
			user := fmt.Sprintf("user-%05d", i)
			if _, err := client.Submit(cctx, queue, event.EventID, user); err != nil {
				return fmt.Errorf("%s enters: %w", user, err)
			}
			if n := entered.Add(1); n%int64(step) == 0 {
				progress("  %d/%d users entered\n", n, entries)
			}
			return nil
		})
	}
	err = clients.Wait()
	if err == nil {
		err = queue.WaitIdle(ctx) // every entry collected
	}
	if err := errors.Join(err, worker.Stop(ctx)); err != nil {
		return err
	}
	fmt.Fprintf(out, "%d entries collected\n", collected.Load())

	fmt.Fprintf(out, "the clock jumps past the cutoff and the settle window (%s); drawing…\n", asyncevent.DefaultDrawSettleWindow)
	clock.skip(time.Hour + asyncevent.DefaultDrawSettleWindow)
	res, err := client.Draw(ctx, event.EventID)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "drawn from %d entries (entries hash %s)\n", res.Record.EntryCount, res.Record.EntriesHash)
	fmt.Fprintf(out, "revealed seed: %s\n", res.Record.Seed)
	for i, id := range res.Winners {
		r, err := client.GetRequest(ctx, id)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "  winner %2d: %s (request %s, %s)\n", i+1, r.UserID, id, r.Status)
	}
	v, err := client.VerifyDraw(ctx, event.EventID)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, v)
	if !v.OK() {
		return fmt.Errorf("verification failed")
	}
	return nil
}
