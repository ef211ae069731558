package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
)

func requestGetCmd() *command {
	return &command{
		name: "request get",
		args: "REQUEST_ID",
		summary: "show one request (GetItem REQ#<requestId> / META); of a waiting one, its place in line and wait " +
			"(from the event's progress); of a HELD one, the time left on its hold; of a WAITLISTED one, its place on the waitlist",
		run: withID("REQUEST_ID", func(ctx context.Context, e *env, c *asyncevent.Client, requestID string) error {
			r, err := c.GetRequest(ctx, requestID)
			if err != nil {
				return err
			}
			key, err := asyncevent.NewRequestKey(requestID)
			if err != nil {
				return err
			}
			fs := e.withStored(ctx, key.Key(), fieldsOf(r))
			if e.JSON {
				m := fieldsJSON(fs)
				if p := clikit.PlaceOf(r.Queue); p != nil {
					m["queue"] = p
				}
				if p := clikit.PrequeuePlaceOf(r.Prequeue); p != nil {
					m["prequeue"] = p
				}
				if p := clikit.WaitlistPlaceOf(r.Waitlist); p != nil {
					m["waitlist"] = p
				}
				return e.PrintJSON(m)
			}
			for _, line := range []string{placeLine(r.Queue), prequeueLine(r.Prequeue), holdLine(r, time.Now()), waitlistLine(r.Waitlist)} {
				if line != "" {
					fmt.Fprintf(e.Stdout, "%s\n\n", line)
				}
			}
			return printFields(e.Stdout, fs)
		}),
	}
}

// requestsListOptions are the flags of requests list.
type requestsListOptions struct {
	order, status, cursor, user string
	limit, maxRead              int
}

func (o *requestsListOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&o.order, "order", "asc", "queue `order`: asc (oldest first) or desc (latest first)")
	fs.StringVar(&o.status, "status", "", "only requests in this `status` (RECEIVED, QUEUED, PROCESSING, SUCCEEDED, REJECTED, FAILED_FINAL; with holds HELD, WAITLISTED)")
	fs.IntVar(&o.limit, "limit", 0, "at most `N` requests (default 50 for an event, at most 500; 20 for a user, at most 100)")
	fs.IntVar(&o.maxRead, "max-read", 0, "with -status: read at most `N` requests to fill the page (default 10 × limit)")
	fs.StringVar(&o.cursor, "cursor", "", "continue from the `cursor` a previous page printed")
	fs.StringVar(&o.user, "user", "", "list this `user`'s requests instead (newest first, no EVENT_ID)")
}

func requestsListCmd() *command {
	var o requestsListOptions
	return &command{
		name:    "requests list",
		args:    "EVENT_ID",
		summary: "list an event's requests in queue order (Query GSI2), or a user's with -user (GSI1)",
		flags:   o.register,
		run: func(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
			opts, err := o.check(fs, args)
			if err != nil {
				return err
			}
			c, err := e.client(ctx)
			if err != nil {
				return err
			}
			page, err := o.list(ctx, c, args, opts)
			if err != nil {
				return err
			}
			return printRequests(e, page)
		},
	}
}

// check checks the command line of requests list before anything is read, and
// returns the options of an event's list.
func (o *requestsListOptions) check(fs *flag.FlagSet, args []string) (asyncevent.EventListOptions, error) {
	if err := o.checkArgs(fs, args); err != nil {
		return asyncevent.EventListOptions{}, err
	}
	opts := asyncevent.EventListOptions{
		PageOptions: asyncevent.PageOptions{Limit: o.limit, Cursor: o.cursor}, Order: asyncevent.Order(strings.ToLower(o.order)),
		Status: asyncevent.Status(strings.ToUpper(o.status)), MaxRead: o.maxRead,
	}
	switch {
	case opts.Order != asyncevent.Ascending && opts.Order != asyncevent.Descending:
		return asyncevent.EventListOptions{}, clikit.Usagef("-order %q: want asc or desc", o.order)
	case o.status != "" && !opts.Status.Valid():
		return asyncevent.EventListOptions{}, clikit.Usagef("-status %q: want one of RECEIVED, QUEUED, PROCESSING, HELD, WAITLISTED, SUCCEEDED, REJECTED, FAILED_FINAL (in any case)", o.status)
	case o.limit < 0 || o.maxRead < 0:
		return asyncevent.EventListOptions{}, clikit.Usagef("-limit and -max-read must not be negative")
	}
	return opts, nil
}

// checkArgs checks the arguments of requests list: an EVENT_ID, or none with -user,
// which takes none of the flags of an event's list.
func (o *requestsListOptions) checkArgs(fs *flag.FlagSet, args []string) error {
	if o.user == "" {
		return clikit.WantArgs(args, 1, "EVENT_ID (or -user USER_ID)")
	}
	if err := clikit.WantArgs(args, 0, ""); err != nil {
		return err
	}
	if err := checkID("-user", o.user); err != nil {
		return err
	}
	var bad []string
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "order" || f.Name == "status" || f.Name == "max-read" {
			bad = append(bad, "-"+f.Name)
		}
	})
	if len(bad) > 0 {
		return clikit.Usagef("%s: only for an event's list", strings.Join(bad, ", "))
	}
	return nil
}

// list reads the page asked for: the user's requests with -user (by -limit and
// -cursor alone), else the event's by opts.
func (o *requestsListOptions) list(ctx context.Context, c *asyncevent.Client, args []string, opts asyncevent.EventListOptions) (*asyncevent.RequestPage, error) {
	var (
		page *asyncevent.RequestPage
		err  error
	)
	if o.user != "" {
		page, err = c.ListUserRequests(ctx, o.user, asyncevent.PageOptions{Limit: o.limit, Cursor: o.cursor})
	} else {
		page, err = c.ListEventRequests(ctx, args[0], opts)
	}
	if errors.Is(err, asyncevent.ErrInvalidCursor) || errors.Is(err, asyncevent.ErrInvalidOptions) {
		return nil, clikit.Usagef("%v", err)
	}
	if err != nil {
		return nil, err
	}
	if o.user == "" && len(page.Requests) == 0 && o.cursor == "" {
		// No request: say so of an event the table does not hold, as stats does.
		if _, err := c.GetEvent(ctx, args[0]); err != nil {
			return nil, err
		}
	}
	return page, nil
}

// printRequests prints a page of requests in the order read, and the cursor of the
// next page.
func printRequests(e *env, page *asyncevent.RequestPage) error {
	if e.JSON {
		out := clikit.RequestPage{Requests: []clikit.Row{}, NextCursor: page.NextCursor}
		rs := make([]*asyncevent.Request, len(page.Requests))
		for i := range page.Requests {
			rs[i] = &page.Requests[i]
		}
		out.Requests = append(out.Requests, e.storedRequestsJSON(context.Background(), rs)...)
		return e.PrintJSON(out)
	}
	tw := newTable(e.Stdout)
	fmt.Fprintln(tw, "QUEUED AT\tREQUEST ID\tEVENT\tUSER\tSTATUS\tRESULT")
	for _, r := range page.Requests {
		at := r.QueuedAt
		if at == 0 {
			at = r.RequestedAt
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", formatMillis(at), r.RequestID, r.EventID, r.UserID, r.Status, orDash(string(r.ResultCode)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	pageFooter(e.Stdout, len(page.Requests), "request", page.NextCursor)
	return nil
}

// pageFooter ends a listed page: how many items it held, and the cursor of the next
// page when there is one.
func pageFooter(w io.Writer, n int, noun, cursor string) {
	fmt.Fprint(w, clikit.Plural(int64(n), noun))
	if cursor != "" {
		fmt.Fprintf(w, "; next page: -cursor %s", cursor)
	}
	fmt.Fprintln(w)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func logsCmd() *command {
	return &command{
		name:    "logs",
		args:    "REQUEST_ID",
		summary: "show a request's status log, oldest first (needs Options.StatusLog on the writers)",
		run: withID("REQUEST_ID", func(ctx context.Context, e *env, c *asyncevent.Client, requestID string) error {
			logs, err := c.ListStatusLogs(ctx, requestID)
			if err != nil {
				return err
			}
			if len(logs) == 0 {
				// No log: a request written without Options.StatusLog, or no request.
				if _, err := c.GetRequest(ctx, requestID); err != nil {
					return err
				}
			}
			if e.JSON {
				return e.PrintJSON(append([]clikit.Row{}, e.statusLogsJSON(ctx, requestID, logs)...))
			}
			if len(logs) == 0 {
				_, err := fmt.Fprintf(e.Stdout, "no status log for %s (the status log is written only by clients with Options.StatusLog)\n", requestID)
				return err
			}
			tw := newTable(e.Stdout)
			fmt.Fprintln(tw, "OCCURRED AT\tFROM\tTO\tMESSAGE")
			for _, l := range logs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", formatMillis(l.OccurredAt), orDash(string(l.FromStatus)), l.ToStatus, l.Message)
			}
			return tw.Flush()
		}),
	}
}

// prequeueLine says where a waiting entry of a pre-queue stands; "" for others.
// waitlistLine is a WAITLISTED request's place on the waitlist, as request get prints it.
func waitlistLine(w *asyncevent.WaitlistPlace) string {
	if w == nil {
		return ""
	}
	line := fmt.Sprintf("on the waitlist: %s ahead (the next seat given back goes to the first)", clikit.FormatInt(int(w.Ahead)))
	if w.EndsAt != 0 {
		line += ", until " + w.EndsAt.Time().UTC().Format(time.RFC3339)
	}
	return line
}

func prequeueLine(p *asyncevent.PrequeuePlace) string {
	switch {
	case p == nil:
		return ""
	case !p.Frozen:
		return fmt.Sprintf("in the pre-queue: its order is drawn at the start, %s seats", clikit.FormatInt(int(p.Seats)))
	case p.Late:
		return fmt.Sprintf("reached the table after the pre-queue's %s entries were recorded: in the sale's line, after the drawn order", clikit.FormatInt(int(p.Entries)))
	}
	return fmt.Sprintf("in the pre-queue: place %s of %s in the drawn order, %s seats", clikit.FormatInt(int(p.Place)), clikit.FormatInt(int(p.Entries)), clikit.FormatInt(int(p.Seats)))
}
