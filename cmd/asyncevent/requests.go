package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/asyncevent/asyncevent"
)

func requestGetCmd() *command {
	return &command{
		name: "request get",
		args: "REQUEST_ID",
		summary: "show one request (GetItem REQ#<requestId> / META); of a waiting one, its place in line and wait " +
			"(from the event's progress); of a HELD one, the time left on its hold",
		run: withID("REQUEST_ID", func(ctx context.Context, e *env, c *asyncevent.Client, requestID string) error {
			r, err := c.GetRequest(ctx, requestID)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(requestJSON(r))
			}
			for _, line := range []string{placeLine(r.Queue), holdLine(r, time.Now())} {
				if line != "" {
					fmt.Fprintf(e.stdout, "%s\n\n", line)
				}
			}
			return printItem(e.stdout, r)
		}),
	}
}

// pageJSON is one page of requests for scripts.
type pageJSON struct {
	Requests   []map[string]any `json:"requests"`
	NextCursor string           `json:"nextCursor,omitempty"`
}

func requestsListCmd() *command {
	var (
		order, status, cursor, user string
		limit, maxRead              int
	)
	return &command{
		name:    "requests list",
		args:    "EVENT_ID",
		summary: "list an event's requests in queue order (Query GSI2), or a user's with -user (GSI1)",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&order, "order", "asc", "queue `order`: asc (oldest first) or desc (latest first)")
			fs.StringVar(&status, "status", "", "only requests in this `status` (RECEIVED, QUEUED, PROCESSING, SUCCEEDED, REJECTED, FAILED_FINAL; with holds HELD, WAITLISTED)")
			fs.IntVar(&limit, "limit", 0, "at most `N` requests (default 50 for an event, at most 500; 20 for a user, at most 100)")
			fs.IntVar(&maxRead, "max-read", 0, "with -status: read at most `N` requests to fill the page (default 10 × limit)")
			fs.StringVar(&cursor, "cursor", "", "continue from the `cursor` a previous page printed")
			fs.StringVar(&user, "user", "", "list this `user`'s requests instead (newest first, no EVENT_ID)")
		},
		run: func(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
			var listUser bool
			if user != "" {
				listUser = true
				if err := wantArgs(args, 0, ""); err != nil {
					return err
				}
				var bad []string
				fs.Visit(func(f *flag.Flag) {
					if f.Name == "order" || f.Name == "status" || f.Name == "max-read" {
						bad = append(bad, "-"+f.Name)
					}
				})
				if len(bad) > 0 {
					return usagef("%s: only for an event's list", strings.Join(bad, ", "))
				}
			} else if err := wantArgs(args, 1, "EVENT_ID (or -user USER_ID)"); err != nil {
				return err
			}
			o := asyncevent.Order(strings.ToLower(order))
			if o != asyncevent.Ascending && o != asyncevent.Descending {
				return usagef("-order %q: want asc or desc", order)
			}
			st := asyncevent.Status(strings.ToUpper(status))
			if status != "" && !st.Valid() {
				return usagef("-status %q: want one of RECEIVED, QUEUED, PROCESSING, HELD, WAITLISTED, SUCCEEDED, REJECTED, FAILED_FINAL (in any case)", status)
			}
			if limit < 0 || maxRead < 0 {
				return usagef("-limit and -max-read must not be negative")
			}
			c, err := e.client(ctx)
			if err != nil {
				return err
			}
			var page *asyncevent.RequestPage
			if listUser {
				page, err = c.ListUserRequests(ctx, user, asyncevent.PageOptions{Limit: limit, Cursor: cursor})
			} else {
				page, err = c.ListEventRequests(ctx, args[0], asyncevent.EventListOptions{
					Order: o, Limit: limit, Cursor: cursor, Status: st, MaxRead: maxRead,
				})
			}
			if errors.Is(err, asyncevent.ErrInvalidCursor) || errors.Is(err, asyncevent.ErrInvalidOptions) {
				return usagef("%v", err)
			}
			if err != nil {
				return err
			}
			if !listUser && len(page.Requests) == 0 && cursor == "" {
				// No request: say so of an event the table does not hold, as stats does.
				if _, err := c.GetEvent(ctx, args[0]); err != nil {
					return err
				}
			}
			if e.json {
				out := pageJSON{Requests: []map[string]any{}, NextCursor: page.NextCursor}
				for i := range page.Requests {
					out.Requests = append(out.Requests, itemJSON(&page.Requests[i]))
				}
				return e.printJSON(out)
			}
			tw := newTable(e.stdout)
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
			fmt.Fprint(e.stdout, plural(int64(len(page.Requests)), "request"))
			if page.NextCursor != "" {
				fmt.Fprintf(e.stdout, "; next page: -cursor %s", page.NextCursor)
			}
			fmt.Fprintln(e.stdout)
			return nil
		},
	}
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
			if e.json {
				out := []map[string]any{}
				for i := range logs {
					out = append(out, itemJSON(&logs[i]))
				}
				return e.printJSON(out)
			}
			if len(logs) == 0 {
				_, err := fmt.Fprintf(e.stdout, "no status log for %s (the status log is written only by clients with Options.StatusLog)\n", requestID)
				return err
			}
			tw := newTable(e.stdout)
			fmt.Fprintln(tw, "OCCURRED AT\tFROM\tTO\tMESSAGE")
			for _, l := range logs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", formatMillis(l.OccurredAt), orDash(string(l.FromStatus)), l.ToStatus, l.Message)
			}
			return tw.Flush()
		}),
	}
}
