package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
	"github.com/asyncevent/asyncevent/queue"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// maxSubmitUsers bounds -users: the CLI drives a small event, not a spike (demo and
// bench do that).
const maxSubmitUsers = 100_000

// submitOptions are the flags of submit.
type submitOptions struct {
	q        clikit.SQSFlags
	users    string
	count    int
	prefix   string
	parallel int
}

func (o *submitOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&o.users, "user", "", "the `NAMES` of the users who click, comma-separated, in order (a name twice clicks twice)")
	fs.IntVar(&o.count, "users", 0, "`N` users click, named by -prefix and a number (user-0001 …)")
	fs.StringVar(&o.prefix, "prefix", "user-", "the name `PREFIX` of -users")
	fs.IntVar(&o.parallel, "parallel", 1, "`clicks` at once, and messages the CLI's worker decides at once (1: one after another, decided in click order)")
	fs.StringVar(&o.q.QueueURL, "queue-url", "", "the workers' SQS queue `URL` (env "+clikit.EnvQueueURL+"); empty: an in-memory queue and a worker in the CLI")
	fs.StringVar(&o.q.Endpoint, "sqs-endpoint", o.q.Endpoint, "SQS endpoint `URL` of a local SQS such as fauxqs (env "+clikit.EnvSQSEndpoint+"); empty: AWS")
}

func submitCmd() *command {
	var o submitOptions
	o.q.Endpoint = clikit.EnvOr(clikit.EnvSQSEndpoint, "")
	return &command{
		name: "submit",
		args: "EVENT_ID (-user NAME[,NAME…] | -users N)",
		summary: "click on an event as its users would (Submit: one request per user, a repeated click is a duplicate); " +
			"with -queue-url the requests go to the workers' SQS queue, else a worker in the CLI decides them and their outcomes are printed",
		flags: o.register,
		run: func(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
			who, err := o.check(fs, args)
			if err != nil {
				return err
			}
			if o.q.QueueURL == "" {
				o.q.QueueURL = clikit.EnvOr(clikit.EnvQueueURL, "")
			}
			c, err := e.client(ctx)
			if err != nil {
				return err
			}
			if _, err := c.GetEvent(ctx, args[0]); err != nil { // an unknown event: one error, not one per click
				return err
			}
			out := clikit.Clicks{EventID: args[0], Queue: "memory", ByStatus: map[string]int{}}
			if o.q.QueueURL != "" {
				out.Queue = "sqs"
			}
			if out.Clicks, err = o.click(ctx, e, c, args[0], who); err != nil {
				return err
			}
			if err := c.FlushProgress(ctx); err != nil { // the place in line of what waits
				fmt.Fprintf(e.Stderr, "note: the event's progress counts were not written: %v\n", err)
			}
			out.Tally()
			if err := printClicks(e, out); err != nil {
				return err
			}
			if out.Failed > 0 {
				return fmt.Errorf("%s of %s failed", clikit.Plural(int64(out.Failed), "click"), clikit.Plural(int64(len(out.Clicks)), "click"))
			}
			return nil
		},
	}
}

// check checks the command line of submit before anything is read, and returns the
// users who click, in order.
func (o *submitOptions) check(fs *flag.FlagSet, args []string) ([]string, error) {
	if err := clikit.WantArgs(args, 1, "EVENT_ID"); err != nil {
		return nil, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case set["prefix"] && !set["users"]:
		return nil, clikit.Usagef("-prefix names the users of -users N")
	case set["users"] && o.count < 1:
		return nil, clikit.Usagef("-users %d: want 1 to %s", o.count, clikit.FormatInt(maxSubmitUsers))
	}
	who, err := clickers(o.users, o.count, o.prefix)
	if err != nil {
		return nil, err
	}
	if o.parallel < 1 {
		return nil, clikit.Usagef("-parallel %d: want 1 or more", o.parallel)
	}
	return who, nil
}

// click makes the click of each user: sent to the workers' SQS queue with -queue-url,
// else decided by a worker of the CLI.
func (o *submitOptions) click(ctx context.Context, e *env, c *asyncevent.Client, eventID string, who []string) ([]clikit.Click, error) {
	if o.q.QueueURL == "" {
		return clickAndDecide(ctx, c, eventID, who, o.parallel)
	}
	sc, err := o.q.Client(ctx, e.Region)
	if err != nil {
		return nil, err
	}
	q, err := queue.NewSQS(sc, o.q.QueueURL)
	if err != nil {
		return nil, clikit.Usagef("-queue-url: %v", err)
	}
	// A queue that is not there would fail every click's send, each request ending
	// FAILED_FINAL: look first.
	if _, err := sc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &o.q.QueueURL}); err != nil {
		return nil, fmt.Errorf("-queue-url %s: %w", o.q.QueueURL, err)
	}
	return clickAll(ctx, c, q, eventID, who, o.parallel), nil
}

// clickers returns the users who click, in order: -user's names or -users N.
func clickers(users string, count int, prefix string) ([]string, error) {
	switch {
	case users != "" && count != 0:
		return nil, clikit.Usagef("-user and -users: give one of them")
	case users != "":
		names := strings.Split(users, ",")
		for i, n := range names {
			names[i] = strings.TrimSpace(n)
			if err := checkID("-user", names[i]); err != nil {
				return nil, err
			}
		}
		return names, nil
	case count < 0 || count > maxSubmitUsers:
		return nil, clikit.Usagef("-users %d: want 1 to %s", count, clikit.FormatInt(maxSubmitUsers))
	case count > 0:
		width := len(fmt.Sprint(count))
		names := make([]string, count)
		for i := range names {
			names[i] = fmt.Sprintf("%s%0*d", prefix, max(width, 4), i+1)
		}
		if err := asyncevent.ValidateID("userId", names[0]); err != nil {
			if perr := checkID("-prefix", prefix); perr != nil {
				return nil, perr
			}
			var bad *asyncevent.InvalidIDError
			if errors.As(err, &bad) { // the prefix is a valid ID, the names it makes are not (too long)
				return nil, clikit.Usagef("invalid -prefix %q: the user IDs it makes (%s) are not: %s", prefix, names[0], bad.Reason)
			}
			return nil, clikit.Usagef("-prefix %q: %v", prefix, err)
		}
		return names, nil
	}
	return nil, clikit.Usagef("missing -user NAME or -users N")
}

// clickAll submits a click of each user to queue, parallel at once, and returns them
// in the users' order.
func clickAll(ctx context.Context, c *asyncevent.Client, q queue.Queue, eventID string, who []string, parallel int) []clikit.Click {
	clicks := make([]clikit.Click, len(who))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(parallel, len(who)) {
		wg.Go(func() {
			for i := range next {
				k := clikit.Click{UserID: who[i]}
				if p, err := c.Submit(ctx, q, eventID, who[i]); err != nil {
					k.Error = err.Error()
				} else {
					k.RequestID, k.Duplicate = p.RequestID, p.Duplicate
					if p.Request != nil { // as this click wrote or read it; a duplicate's may be unread
						k.Status = string(p.Request.Status)
					}
				}
				clicks[i] = k
			}
		})
	}
	// Two clicks of one user may run at once, as a double click does: one makes the
	// request, the other is its duplicate.
	for i := range who {
		next <- i
	}
	close(next)
	wg.Wait()
	return clicks
}

// clickAndDecide submits the clicks to an in-memory queue that a worker of the CLI
// drains, parallel messages at once (one at a time: in click order, the queue's),
// and returns them with each request's outcome.
func clickAndDecide(ctx context.Context, c *asyncevent.Client, eventID string, who []string, parallel int) ([]clikit.Click, error) {
	mq := queue.NewMemory(queue.MemoryOptions{})
	w, err := asyncevent.NewWorker(c, mq, asyncevent.WorkerOptions{WaitTime: 50 * time.Millisecond, Concurrency: parallel})
	if err != nil {
		return nil, err
	}
	if err := w.Start(ctx); err != nil {
		return nil, fmt.Errorf("start the worker: %w", err)
	}
	clicks := clickAll(ctx, c, mq, eventID, who, parallel)
	err = mq.WaitIdle(ctx) // every message done: every request decided
	if err := errors.Join(err, w.Stop(ctx)); err != nil {
		return nil, err
	}
	for i, k := range clicks {
		if k.RequestID == "" {
			continue
		}
		r, err := c.GetRequest(ctx, k.RequestID)
		if err != nil {
			return nil, err
		}
		clicks[i].Status, clicks[i].ResultCode = string(r.Status), string(r.ResultCode)
	}
	return clicks, nil
}

func printClicks(e *env, out clikit.Clicks) error {
	if e.JSON {
		return e.PrintJSON(out)
	}
	tw := newTable(e.Stdout)
	fmt.Fprintln(tw, "USER\tREQUEST ID\tDUPLICATE\tSTATUS\tRESULT")
	for _, k := range out.Clicks {
		if k.Error != "" {
			fmt.Fprintf(tw, "%s\t-\t-\tfailed: %s\t-\n", k.UserID, k.Error)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%t\t%s\t%s\n", k.UserID, k.RequestID, k.Duplicate, orDash(k.Status), orDash(k.ResultCode))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var parts []string
	for _, st := range slices.Sorted(maps.Keys(out.ByStatus)) {
		parts = append(parts, fmt.Sprintf("%s %s", st, clikit.FormatInt(out.ByStatus[st])))
	}
	dups := 0
	for _, k := range out.Clicks {
		if k.Duplicate {
			dups++
		}
	}
	line := fmt.Sprintf("%s: %s, %s", clikit.Plural(int64(len(out.Clicks)), "click"), clikit.Plural(int64(len(out.Clicks)-dups-out.Failed), "new request"), clikit.Plural(int64(dups), "duplicate"))
	if len(parts) > 0 {
		line += " · " + strings.Join(parts, " · ")
	}
	if out.Queue == "sqs" {
		line += " (sent to the workers' queue: 'asyncevent request get ID' shows what they decide)"
	}
	fmt.Fprintln(e.Stdout, line)
	return nil
}
