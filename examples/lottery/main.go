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
	"sync/atomic"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/dynamodblocal"
)

// entryTime is how long the event takes entries.
const entryTime = time.Hour

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

// run creates a LOTTERY event of winners winners on a table of its own, has
// entries users enter, jumps the clock past the cutoff, draws, and verifies the
// draw, telling out each step.
func run(ctx context.Context, out io.Writer, endpoint string, entries int, winners int64) error {
	clock := &skipClock{}
	client, err := newClient(ctx, endpoint, clock)
	if err != nil {
		return err
	}
	event, err := createEvent(ctx, out, client, clock.now().Add(entryTime), winners)
	if err != nil {
		return err
	}
	if err := enter(ctx, out, client, event.EventID, entries); err != nil {
		return err
	}
	fmt.Fprintf(out, "the clock jumps past the cutoff and the settle window (%s); drawing…\n", asyncevent.DefaultDrawSettleWindow)
	clock.skip(entryTime + asyncevent.DefaultDrawSettleWindow)
	if err := draw(ctx, out, client, event.EventID); err != nil {
		return err
	}
	return verify(ctx, out, client, event.EventID)
}

// skipClock is the real clock plus an offset that can jump forward.
type skipClock struct{ offset atomic.Int64 }

func (c *skipClock) now() time.Time       { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *skipClock) skip(d time.Duration) { c.offset.Add(int64(d)) }

// newClient returns a client on a new table of its own, on the DynamoDB at
// endpoint, with time from clock.
func newClient(ctx context.Context, endpoint string, clock *skipClock) (*asyncevent.Client, error) {
	db, err := dynamodblocal.NewClient(endpoint)
	if err != nil {
		return nil, err
	}
	client, err := asyncevent.New(db, asyncevent.Options{
		TableName: fmt.Sprintf("lottery-example-%d", time.Now().UnixNano()),
		Clock:     clock.now,
	})
	if err != nil {
		return nil, err
	}
	if err := client.CreateTable(ctx); err != nil {
		return nil, err
	}
	return client, nil
}

// createEvent creates the LOTTERY event, open for entries until cutoff, and prints
// what it publishes before the draw: the seed's commitment and where the seed is
// kept.
func createEvent(ctx context.Context, out io.Writer, client *asyncevent.Client, cutoff time.Time, winners int64) (*asyncevent.Event, error) {
	event, err := client.CreateEvent(ctx, asyncevent.EventSettings{
		EventID: "spring-lottery", EventType: asyncevent.Lottery, Name: "Spring lottery",
		WinnerCount: winners, LotteryCutoffAt: asyncevent.MillisOf(cutoff),
	})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "event %s: %d winners, entries until %s\n", event.EventID, winners, cutoff.Format(time.RFC3339))
	fmt.Fprintf(out, "published seed commitment: %s\n", event.SeedCommitment)
	// Without Options.Seeds the seed is the development default: stored on the
	// table, where any reader of the table sees it before the draw.
	fmt.Fprintf(out, "seed mode: %s (set Options.Seeds, e.g. seed.HMAC, for a sealed one)\n", event.SeedMode)
	return event, nil
}

// draw draws the event and prints the entries it drew from, the revealed seed and
// the winners.
func draw(ctx context.Context, out io.Writer, client *asyncevent.Client, eventID string) error {
	res, err := client.Draw(ctx, eventID)
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
	return nil
}

// verify checks the draw again from what it revealed, prints the verdict, and fails
// when the draw does not verify.
func verify(ctx context.Context, out io.Writer, client *asyncevent.Client, eventID string) error {
	v, err := client.VerifyDraw(ctx, eventID)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, v)
	if !v.OK() {
		return errors.New("verification failed")
	}
	return nil
}
