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
	"github.com/asyncevent/asyncevent/queue"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// maxSubmitUsers bounds -users: the CLI drives a small event, not a spike (demo and
// bench do that).
const maxSubmitUsers = 100_000

// clickJSON is one click of submit, for scripts.
type clickJSON struct {
	UserID     string `json:"userId"`
	RequestID  string `json:"requestId,omitempty"`
	Duplicate  bool   `json:"duplicate"`
	Status     string `json:"status,omitempty"`
	ResultCode string `json:"resultCode,omitempty"`
	Error      string `json:"error,omitempty"`
}

// submitJSON is submit's output for scripts.
type submitJSON struct {
	EventID  string         `json:"eventId"`
	Queue    string         `json:"queue"` // "sqs" or "memory"
	Clicks   []clickJSON    `json:"clicks"`
	ByStatus map[string]int `json:"byStatus"`
	Failed   int            `json:"failed"`
}

func submitCmd() *command {
	var (
		q        sqsFlags
		users    string
		count    int
		prefix   string
		parallel int
	)
	q.endpoint = envOr(envSQSEndpoint, "")
	return &command{
		name: "submit",
		args: "EVENT_ID (-user NAME[,NAME…] | -users N)",
		summary: "click on an event as its users would (Submit: one request per user, a repeated click is a duplicate); " +
			"with -queue-url the requests go to the workers' SQS queue, else a worker in the CLI decides them and their outcomes are printed",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&users, "user", "", "the `NAMES` of the users who click, comma-separated, in order (a name twice clicks twice)")
			fs.IntVar(&count, "users", 0, "`N` users click, named by -prefix and a number (user-0001 …)")
			fs.StringVar(&prefix, "prefix", "user-", "the name `PREFIX` of -users")
			fs.IntVar(&parallel, "parallel", 1, "`clicks` at once (1: one after another, in order; the workers decide in about that order)")
			fs.StringVar(&q.queueURL, "queue-url", "", "the workers' SQS queue `URL` (env "+envQueueURL+"); empty: an in-memory queue and a worker in the CLI")
			fs.StringVar(&q.endpoint, "sqs-endpoint", q.endpoint, "SQS endpoint `URL` of a local SQS such as fauxqs (env "+envSQSEndpoint+"); empty: AWS")
		},
		run: func(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
			if err := wantArgs(args, 1, "EVENT_ID"); err != nil {
				return err
			}
			if q.queueURL == "" {
				q.queueURL = envOr(envQueueURL, "")
			}
			set := map[string]bool{}
			fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
			switch {
			case set["prefix"] && !set["users"]:
				return usagef("-prefix names the users of -users N")
			case set["users"] && count < 1:
				return usagef("-users %d: want 1 to %s", count, formatInt(maxSubmitUsers))
			}
			who, err := clickers(users, count, prefix)
			if err != nil {
				return err
			}
			if parallel < 1 {
				return usagef("-parallel %d: want 1 or more", parallel)
			}
			c, err := e.client(ctx)
			if err != nil {
				return err
			}
			if _, err := c.GetEvent(ctx, args[0]); err != nil { // an unknown event: one error, not one per click
				return err
			}
			out := submitJSON{EventID: args[0], Queue: "memory", ByStatus: map[string]int{}}
			if q.queueURL != "" {
				out.Queue = "sqs"
				sc, err := q.sqsClient(ctx, e.region)
				if err != nil {
					return err
				}
				queue, err := queue.NewSQS(sc, q.queueURL)
				if err != nil {
					return usagef("-queue-url: %v", err)
				}
				// A queue that is not there would fail every click's send, each request
				// ending FAILED_FINAL: look first.
				if _, err := sc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &q.queueURL}); err != nil {
					return fmt.Errorf("-queue-url %s: %w", q.queueURL, err)
				}
				out.Clicks = clickAll(ctx, c, queue, args[0], who, parallel)
			} else {
				if out.Clicks, err = clickAndDecide(ctx, c, args[0], who, parallel); err != nil {
					return err
				}
			}
			if err := c.FlushProgress(ctx); err != nil { // the place in line of what waits
				fmt.Fprintf(e.stderr, "note: the event's progress counts were not written: %v\n", err)
			}
			for _, k := range out.Clicks {
				switch {
				case k.Error != "":
					out.Failed++
				case !k.Duplicate && k.Status != "":
					out.ByStatus[k.Status]++
				}
			}
			if err := printClicks(e, out); err != nil {
				return err
			}
			if out.Failed > 0 {
				return fmt.Errorf("%s of %s failed", plural(int64(out.Failed), "click"), plural(int64(len(out.Clicks)), "click"))
			}
			return nil
		},
	}
}

// clickers returns the users who click, in order: -user's names or -users N.
func clickers(users string, count int, prefix string) ([]string, error) {
	switch {
	case users != "" && count != 0:
		return nil, usagef("-user and -users: give one of them")
	case users != "":
		names := strings.Split(users, ",")
		for i, n := range names {
			names[i] = strings.TrimSpace(n)
			if err := asyncevent.ValidateID("userId", names[i]); err != nil {
				return nil, usagef("-user %q: %v", names[i], err)
			}
		}
		return names, nil
	case count < 0 || count > maxSubmitUsers:
		return nil, usagef("-users %d: want 1 to %s", count, formatInt(maxSubmitUsers))
	case count > 0:
		width := len(fmt.Sprint(count))
		names := make([]string, count)
		for i := range names {
			names[i] = fmt.Sprintf("%s%0*d", prefix, max(width, 4), i+1)
		}
		if err := asyncevent.ValidateID("userId", names[0]); err != nil {
			return nil, usagef("-prefix %q: %v", prefix, err)
		}
		return names, nil
	}
	return nil, usagef("missing -user NAME or -users N")
}

// clickAll submits a click of each user to queue, parallel at once, and returns them
// in the users' order.
func clickAll(ctx context.Context, c *asyncevent.Client, q queue.Queue, eventID string, who []string, parallel int) []clickJSON {
	clicks := make([]clickJSON, len(who))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(parallel, len(who)) {
		wg.Go(func() {
			for i := range next {
				k := clickJSON{UserID: who[i]}
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
// drains, and returns them with each request's outcome.
func clickAndDecide(ctx context.Context, c *asyncevent.Client, eventID string, who []string, parallel int) ([]clickJSON, error) {
	queue := queue.NewMemory(queue.MemoryOptions{})
	w, err := asyncevent.NewWorker(c, queue, asyncevent.WorkerOptions{WaitTime: 50 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	if err := w.Start(ctx); err != nil {
		return nil, fmt.Errorf("start the worker: %w", err)
	}
	clicks := clickAll(ctx, c, queue, eventID, who, parallel)
	err = queue.WaitIdle(ctx) // every message done: every request decided
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

func printClicks(e *env, out submitJSON) error {
	if e.json {
		return e.printJSON(out)
	}
	tw := newTable(e.stdout)
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
		parts = append(parts, fmt.Sprintf("%s %s", st, formatInt(out.ByStatus[st])))
	}
	dups := 0
	for _, k := range out.Clicks {
		if k.Duplicate {
			dups++
		}
	}
	line := fmt.Sprintf("%s: %s, %s", plural(int64(len(out.Clicks)), "click"), plural(int64(len(out.Clicks)-dups-out.Failed), "new request"), plural(int64(dups), "duplicate"))
	if len(parts) > 0 {
		line += " · " + strings.Join(parts, " · ")
	}
	if out.Queue == "sqs" {
		line += " (sent to the workers' queue: 'asyncevent request get ID' shows what they decide)"
	}
	fmt.Fprintln(e.stdout, line)
	return nil
}
