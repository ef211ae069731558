package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
	"github.com/asyncevent/asyncevent/queue"
)

func sweepCmd() *command {
	var (
		q          clikit.SQSFlags
		stuckAfter time.Duration
		rate       float64
		every      time.Duration
	)
	q.Endpoint = clikit.EnvOr(clikit.EnvSQSEndpoint, "")
	return &command{
		name:    "sweep",
		args:    "EVENT_ID",
		summary: "send again the messages of an event's requests stuck RECEIVED, QUEUED, or PROCESSING past their lease (once, or -every DURATION)",
		flags: func(fs *flag.FlagSet) {
			q.Register(fs, true)
			fs.DurationVar(&stuckAfter, "stuck-after", asyncevent.DefaultSweepStuckAfter, "how long a request may sit RECEIVED or QUEUED, or PROCESSING past its lease, before it counts as stuck")
			fs.Float64Var(&rate, "rate", asyncevent.DefaultSweepRate, "at most this many messages sent per second")
			fs.DurationVar(&every, "every", 0, "sweep again every DURATION until interrupted, reporting each round (a failed round does not stop it); 0 sweeps once")
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, args []string) error {
			if err := clikit.WantArgs(args, 1, "EVENT_ID"); err != nil {
				return err
			}
			if q.QueueURL == "" {
				return clikit.Usagef("-queue-url is required: the queue the workers read")
			}
			if stuckAfter <= 0 || rate <= 0 || every < 0 {
				return clikit.Usagef("-stuck-after and -rate must be positive, -every not negative")
			}
			c, err := e.client(ctx)
			if err != nil {
				return err
			}
			sc, err := q.Client(ctx, e.Region)
			if err != nil {
				return err
			}
			sq, err := queue.NewSQS(sc, q.QueueURL)
			if err != nil {
				return clikit.Usagef("%v", err)
			}
			opts := asyncevent.SweepOptions{StuckAfter: stuckAfter, RatePerSecond: rate}
			if every == 0 {
				return sweepOnce(ctx, e, c, sq, args[0], opts)
			}
			// Several sweepers may run at once, so a periodic one needs no lock.
			tick := time.NewTicker(every)
			defer tick.Stop()
			for {
				if err := sweepOnce(ctx, e, c, sq, args[0], opts); err != nil && ctx.Err() == nil {
					fmt.Fprintf(e.Stderr, "asyncevent: sweep: %v\n", err)
				}
				select {
				case <-ctx.Done():
					return nil // interrupted: a clean stop
				case <-tick.C:
				}
			}
		},
	}
}

// sweepOnce runs one sweep of eventID and prints its report.
func sweepOnce(ctx context.Context, e *env, c *asyncevent.Client, q queue.Queue, eventID string, opts asyncevent.SweepOptions) error {
	rep, err := c.Sweep(ctx, q, eventID, opts)
	if rep == nil {
		return err
	}
	var perr error
	if e.JSON {
		perr = e.PrintJSON(clikit.SweepReportOf(eventID, rep))
	} else {
		tw := newTable(e.Stdout)
		fmt.Fprintf(tw, "event\t%s\n", eventID)
		fmt.Fprintf(tw, "examined\t%s\n", clikit.Plural(int64(rep.Examined), "request"))
		fmt.Fprintf(tw, "sent again\t%s\n", clikit.FormatCounts(rep.Resent))
		fmt.Fprintf(tw, "skipped\t%s (in flight or done)\n", clikit.FormatInt(rep.Skipped))
		fmt.Fprintf(tw, "failed\t%s\n", clikit.FormatInt(len(rep.Failed)))
		for _, id := range slices.Sorted(maps.Keys(rep.Failed)) {
			fmt.Fprintf(tw, "\t%s: %s\n", id, rep.Failed[id])
		}
		perr = tw.Flush()
	}
	switch {
	case err != nil:
		return err
	case perr != nil:
		return perr
	case len(rep.Failed) > 0:
		return fmt.Errorf("%d messages could not be sent", len(rep.Failed))
	}
	return nil
}
