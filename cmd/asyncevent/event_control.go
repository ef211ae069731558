package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/httpapi"
)

// The operator's controls of an event: close it now, pause and resume its ingest,
// move its end or its lottery's cutoff later, and the audit trail they leave. Each
// control names who does it (-actor, required: the audit trail records it, and a
// default such as $USER would record the shared account a script or a jump host runs
// as). A control the event's state refuses writes nothing; the CLI prints why and
// exits 1, as request confirm does, so that a script branches on it.

// nodesLearn is what every applied control of an event's CONFIG says of the nodes
// that serve the event.
const nodesLearn = "every node learns of it within its EventCacheTTL (5s by default)"

// eventControl is close, pause or resume: the library call, and what an applied one
// prints.
type eventControl struct {
	name, done string            // "close", "closed"
	action     asyncevent.Action // asyncevent.ActionClose
	summary    string
	call       func(c *asyncevent.Client, ctx context.Context, eventID string, in asyncevent.ControlInput) (asyncevent.EventUpdate, error)
	appliedFmt string // the line printed when applied, of the event ID and its state
}

var (
	closeControl = eventControl{
		name: "close", done: "closed", action: asyncevent.ActionClose,
		summary:    "close an event now: its end becomes now (a lottery takes no more entries; its draw still waits for its cutoff); else not applied, exit 1",
		call:       (*asyncevent.Client).CloseEvent,
		appliedFmt: "closed: %s is %s: ingest refuses its clicks from now on",
	}
	pauseControl = eventControl{
		name: "pause", done: "paused", action: asyncevent.ActionPause,
		summary:    "pause an open event's ingest (its clicks are refused, nothing written; the workers go on with what is queued); else not applied, exit 1",
		call:       (*asyncevent.Client).PauseEvent,
		appliedFmt: "paused: %s is %s: ingest refuses its clicks until 'asyncevent event resume'",
	}
	resumeControl = eventControl{
		name: "resume", done: "resumed", action: asyncevent.ActionResume,
		summary:    "resume a paused event's ingest; else not applied, exit 1",
		call:       (*asyncevent.Client).ResumeEvent,
		appliedFmt: "resumed: %s is %s: ingest takes its clicks again",
	}
)

func eventCloseCmd() *command  { return closeControl.command() }
func eventPauseCmd() *command  { return pauseControl.command() }
func eventResumeCmd() *command { return resumeControl.command() }

// actorFlag registers the -actor flag of a control.
func actorFlag(fs *flag.FlagSet, actor *string) {
	fs.StringVar(actor, "actor", "", "who does this: the `NAME` the event's audit trail records (required, no default: your login, or an admin's sub)")
}

func (ctl eventControl) command() *command {
	var actor string
	return &command{
		name:    "event " + ctl.name,
		args:    "EVENT_ID -actor NAME",
		summary: ctl.summary,
		flags:   func(fs *flag.FlagSet) { actorFlag(fs, &actor) },
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, args []string) error {
			if err := controlArgs(args, "EVENT_ID", actor); err != nil {
				return err
			}
			c, err := e.client(ctx)
			if err != nil {
				return err
			}
			u, err := ctl.call(c, ctx, args[0], asyncevent.ControlInput{Actor: actor})
			return printControl(e, args[0], ctl.action, ctl.done, u, err, func(state asyncevent.EventState) string {
				return fmt.Sprintf(ctl.appliedFmt, args[0], state)
			})
		},
	}
}

// controlArgs checks what every control needs: the ID of what it controls (named
// what: EVENT_ID, REQUEST_ID) and an actor.
func controlArgs(args []string, what, actor string) error {
	if err := clikit.WantArgs(args, 1, what); err != nil {
		return err
	}
	if actor == "" {
		return clikit.Usagef("-actor is required: who does this, for the event's audit trail")
	}
	return nil
}

func eventExtendCmd() *command {
	var (
		actor                string
		ends, cutoff, starts timeFlag
	)
	ends.now, cutoff.now, starts.now = time.Now, time.Now, time.Now
	return &command{
		name: "event extend",
		args: "EVENT_ID -actor NAME (-ends TIME | -cutoff TIME | -starts TIME)",
		summary: "move an event's end (-ends TIME), a lottery's entry cutoff (-cutoff TIME) or a pre-queued event's start (-starts TIME) later, while the old one is over 10s away " +
			"(a cutoff or a start only before the draw or the serve began); else not applied, exit 1",
		flags: func(fs *flag.FlagSet) {
			actorFlag(fs, &actor)
			fs.Var(&ends, "ends", "the new end: a `time` (RFC 3339, epoch ms, or +duration from now) after the present end")
			fs.Var(&cutoff, "cutoff", "LOTTERY: the new entry cutoff: a `time` after the present one and not after the event's end")
			fs.Var(&starts, "starts", "FIRST_COME with a pre-queue: the new start, until which the pre-queue takes clicks: a `time` after the present one and before the event's end")
		},
		run: func(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
			if err := controlArgs(args, "EVENT_ID", actor); err != nil {
				return err
			}
			set := map[string]bool{}
			fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
			var (
				what asyncevent.Action
				done string
				to   asyncevent.EpochMillis
			)
			switch {
			case len(set) > 2 || len(set) == 2 && !set["actor"]:
				return clikit.Usagef("-ends, -cutoff and -starts: give one of them, one extension at a time")
			case set["ends"]:
				what, done, to = asyncevent.ActionExtendEnd, "extended", ends.at
			case set["cutoff"]:
				what, done, to = asyncevent.ActionExtendCutoff, "extended", cutoff.at
			case set["starts"]:
				what, done, to = asyncevent.ActionExtendStart, "extended", starts.at
			default:
				return clikit.Usagef("missing -ends TIME, -cutoff TIME or -starts TIME: what to move later")
			}
			c, err := e.client(ctx)
			if err != nil {
				return err
			}
			u, err := c.ExtendEvent(ctx, args[0], asyncevent.ExtendEventInput{Actor: actor, Action: what, To: to})
			return printControl(e, args[0], what, done, u, err, func(asyncevent.EventState) string {
				if what == asyncevent.ActionExtendCutoff {
					return fmt.Sprintf("extended: %s takes lottery entries until %s", args[0], formatMillis(u.Event.LotteryCutoffAt))
				}
				if what == asyncevent.ActionExtendStart {
					return fmt.Sprintf("extended: %s takes pre-queue clicks until %s", args[0], formatMillis(u.Event.StartsAt))
				}
				return fmt.Sprintf("extended: %s ends at %s", args[0], formatMillis(u.Event.EndsAt))
			})
		},
	}
}

// printControl prints a control of the event's CONFIG: the line applied gives it,
// and what every node learns, or "not applied" and why, which is an error (exit 1)
// after the outcome is printed.
func printControl(e *env, eventID string, action asyncevent.Action, done string, u asyncevent.EventUpdate, err error, applied func(asyncevent.EventState) string) error {
	out, err := controlOutcome(eventID, action, u, err)
	if err != nil {
		return err
	}
	if e.JSON {
		out.Config = e.storedEventJSON(context.Background(), u.Event)
	}
	return e.reportControl(out, func() string { return applied(out.State) + "; " + nodesLearn },
		fmt.Errorf("%s was not %s: it is %s", eventID, done, out.State))
}

// controlOutcome is a control's outcome: the event's view after it or as the refusal
// found it, with the control's own fields and the event's CONFIG item. A control the
// library finds invalid is a usage error; an outcome without the event, which the
// library does not return, a failure.
func controlOutcome(what string, action asyncevent.Action, u asyncevent.EventUpdate, err error) (clikit.Control, error) {
	switch {
	case errors.Is(err, asyncevent.ErrInvalidOptions) || errors.Is(err, asyncevent.ErrInvalidID):
		return clikit.Control{}, clikit.Usagef("%v", err)
	case err != nil:
		return clikit.Control{}, err
	case u.Event == nil:
		return clikit.Control{}, fmt.Errorf("%s of %s: an outcome without the event", action, what)
	}
	now := time.Now()
	if u.Applied && action == asyncevent.ActionClose {
		// A close sets the end to its own now: closed from the next millisecond,
		// whatever this machine's clock says.
		now = later(now, u.Event.EndsAt.Time().Add(time.Millisecond))
	}
	return clikit.Control{EventView: httpapi.NewEventView(u.Event, now), Action: action, Applied: u.Applied, Replayed: u.Replayed, Reason: u.Reason,
		Config: itemJSON(u.Event)}, nil
}

// reportControl prints a control's outcome: as JSON, as the line applied gives, or as
// "not applied" and the reason; a refusal then returns notApplied (exit 1), so that a
// script branches on it.
func (e *env) reportControl(out clikit.Control, applied func() string, notApplied error) error {
	var err error
	switch {
	case e.JSON:
		err = e.PrintJSON(out)
	case out.Applied:
		_, err = fmt.Fprintln(e.Stdout, applied())
	default:
		_, err = fmt.Fprintf(e.Stdout, "not applied: %s\n", out.Reason)
	}
	if err == nil && !out.Applied {
		return notApplied
	}
	return err
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func eventAuditCmd() *command {
	return &command{
		name:    "event audit",
		args:    "EVENT_ID",
		summary: "show an event's audit trail, oldest first: when, who (-actor) and what each control did",
		run: withID("EVENT_ID", func(ctx context.Context, e *env, c *asyncevent.Client, eventID string) error {
			trail, err := c.ListAudit(ctx, eventID)
			if err != nil {
				return err
			}
			if len(trail) == 0 {
				// No trail: an event nobody controlled, or no event.
				if _, err := c.GetEvent(ctx, eventID); err != nil {
					return err
				}
			}
			if e.JSON {
				out := []clikit.Row{}
				for i := range trail {
					out = append(out, fieldsJSON(withEntity(fieldsOf(&trail[i]), entity.Audit)))
				}
				return e.PrintJSON(out)
			}
			if len(trail) == 0 {
				_, err := fmt.Fprintf(e.Stdout, "no audit entries for %s: no operator has closed, paused, resumed or extended it, added seats to it or cancelled a seat of it\n", eventID)
				return err
			}
			tw := newTable(e.Stdout)
			fmt.Fprintln(tw, "AT\tACTOR\tACTION\tDETAIL")
			for _, a := range trail {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", formatMillis(a.At), a.Actor, a.Action, orDash(a.Detail))
			}
			return tw.Flush()
		}),
	}
}
