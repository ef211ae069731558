package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
	"github.com/asyncevent/asyncevent/httpapi"
)

// The commands of an event with holds (EventSettings.HoldFor): a HELD request is
// confirmed when paid or released when given up, and the hold sweep ends the holds
// that ran out and hands the seats given back to the waitlist.

// holdAction is confirm or release: the library call, and what an applied one
// leaves, as its doc comment states.
type holdAction struct {
	name, done string // "confirm", "confirmed"
	call       func(c *asyncevent.Client, ctx context.Context, requestID string) (asyncevent.Transition, error)
	status     asyncevent.Status
	result     asyncevent.ResultCode
	appliedFmt string // the line printed when applied, of the request ID
	whyNot     func(r *asyncevent.Request, now time.Time) string
}

var (
	confirmAction = holdAction{
		name: "confirm", done: "confirmed",
		call:   (*asyncevent.Client).Confirm,
		status: asyncevent.StatusSucceeded, result: asyncevent.ResultSuccess,
		appliedFmt: "confirmed: %s is SUCCEEDED (SUCCESS): the seat is the user's",
		whyNot:     whyNotConfirmed,
	}
	releaseAction = holdAction{
		name: "release", done: "released",
		call:   (*asyncevent.Client).Release,
		status: asyncevent.StatusRejected, result: asyncevent.ResultReleased,
		appliedFmt: "released: %s is REJECTED (REJECTED_RELEASED); a seat it held goes to the earliest WAITLISTED request at the next hold sweep",
		whyNot:     whyNotReleased,
	}
)

func requestConfirmCmd() *command {
	return &command{
		name:    "request confirm",
		args:    "REQUEST_ID",
		summary: "confirm a HELD request once paid: SUCCEEDED while its hold runs; else not applied, exit 1 (too late: refund)",
		run:     withID("REQUEST_ID", confirmAction.run),
	}
}

func requestReleaseCmd() *command {
	return &command{
		name:    "request release",
		args:    "REQUEST_ID",
		summary: "release a HELD request (its seat goes to the waitlist) or take a WAITLISTED one off it: REJECTED_RELEASED; else not applied, exit 1",
		run:     withID("REQUEST_ID", releaseAction.run),
	}
}

// run applies the action to one request and prints the outcome. A lost condition is
// an outcome the library returns, not an error; the CLI reports it with exit code 1,
// as a check that fails, so that a script branches on it.
func (a holdAction) run(ctx context.Context, e *env, c *asyncevent.Client, requestID string) error {
	t, err := a.call(c, ctx, requestID)
	if err != nil {
		return err
	}
	out := clikit.Transition{RequestID: requestID, Action: a.name, Applied: t.Applied}
	cur := t.Current
	if t.Applied {
		out.Status, out.ResultCode = string(a.status), string(a.result)
	} else if cur != nil {
		out.Status, out.ResultCode, out.Request = string(cur.Status), string(cur.ResultCode), e.storedRequestJSON(ctx, cur)
	}
	if e.JSON {
		err = e.PrintJSON(out)
	} else if t.Applied {
		_, err = fmt.Fprintf(e.Stdout, a.appliedFmt+"\n", requestID)
	} else {
		_, err = fmt.Fprintf(e.Stdout, "not applied: the request is %s: %s\n", statusText(cur), a.whyNot(cur, time.Now()))
	}
	switch {
	case err != nil:
		return err
	case !t.Applied:
		return fmt.Errorf("%s was not %s", requestID, a.done) // what it is, and why, went to stdout
	}
	return nil
}

// statusText is a request's status with its result code: "REJECTED
// (REJECTED_HOLD_EXPIRED)".
func statusText(r *asyncevent.Request) string {
	switch {
	case r == nil:
		return "unknown"
	case r.ResultCode == "":
		return string(r.Status)
	}
	return fmt.Sprintf("%s (%s)", r.Status, r.ResultCode)
}

// whyNotConfirmed says what a confirm that was not applied means for the payment.
func whyNotConfirmed(r *asyncevent.Request, now time.Time) string {
	switch {
	case r == nil:
		return "only a HELD request can be confirmed"
	case r.Status == asyncevent.StatusSucceeded && r.HoldExpiresAt == 0:
		return "it won its seat without a hold (its event has none): there is nothing to confirm"
	case r.Status == asyncevent.StatusSucceeded:
		return "it was confirmed already"
	case r.Status == asyncevent.StatusRejected && (r.ResultCode == asyncevent.ResultHoldExpired || r.ResultCode == asyncevent.ResultReleased):
		return "its hold ended before the confirm: refund the payment"
	case r.Status == asyncevent.StatusHeld && !r.HoldExpiresAt.Time().After(now):
		return fmt.Sprintf("its hold ran out at %s, too late to confirm: refund the payment (the next hold sweep ends it %s)",
			formatMillis(r.HoldExpiresAt), asyncevent.ResultHoldExpired)
	case r.Status == asyncevent.StatusWaitlisted:
		return "it holds no seat: it waits for one given back"
	}
	return "only a HELD request can be confirmed"
}

// whyNotReleased says why a release was not applied.
func whyNotReleased(r *asyncevent.Request, _ time.Time) string {
	switch {
	case r == nil:
		return "only a HELD or WAITLISTED request can be released"
	case r.Status == asyncevent.StatusSucceeded:
		return "its seat is the user's: confirmed (paid), or won by an event without holds"
	case r.Status == asyncevent.StatusRejected:
		return "it has ended already"
	case r.Status == asyncevent.StatusHeld:
		return "its hold changed meanwhile: run the release again"
	}
	return "only a HELD or WAITLISTED request can be released"
}

// holdLine is what request get says first of a request of an event with holds: a
// HELD request's time left, or what a WAITLISTED request waits for; "" otherwise.
func holdLine(r *asyncevent.Request, now time.Time) string {
	switch {
	case r.Status == asyncevent.StatusHeld && r.HoldExpiresAt != 0:
		left := r.HoldExpiresAt.Time().Sub(now)
		if left <= 0 {
			return fmt.Sprintf("HELD, but its hold ran out at %s (%s ago): too late to confirm; the next hold sweep ends it %s",
				formatMillis(r.HoldExpiresAt), clikit.FormatDuration(-left), asyncevent.ResultHoldExpired)
		}
		return fmt.Sprintf("HELD until %s (%s left): 'asyncevent request confirm %s' once paid, 'asyncevent request release %s' to give it up",
			formatMillis(r.HoldExpiresAt), clikit.FormatDuration(left), r.RequestID, r.RequestID)
	case r.Status == asyncevent.StatusWaitlisted:
		return fmt.Sprintf("WAITLISTED: waits for a seat given back, which the hold sweep hands on in queue order, until the event closes; "+
			"'asyncevent request release %s' takes it off the waitlist", r.RequestID)
	}
	return ""
}

func holdsSweepCmd() *command {
	var (
		once      bool
		maxWrites int
	)
	return &command{
		name: "holds sweep",
		args: "EVENT_ID",
		summary: "run the hold sweep of an event with holds: expire the holds that ran out, hand the seats given back " +
			"to the earliest WAITLISTED requests, end the waitlist once the event closed (as the workers do); passes until nothing is left, or -once",
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&once, "once", false, "run one pass even if it leaves more to do (it says so)")
			fs.IntVar(&maxWrites, "max-writes", 0, fmt.Sprintf("at most `N` requests moved by one pass (default %d)", asyncevent.DefaultHoldSweepWrites))
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, args []string) error {
			if err := clikit.WantArgs(args, 1, "EVENT_ID"); err != nil {
				return err
			}
			if maxWrites < 0 {
				return clikit.Usagef("-max-writes must not be negative")
			}
			c, err := e.client(ctx)
			if err != nil {
				return err
			}
			out := httpapi.NewHoldSweepView(args[0])
			for {
				// Each pass that reports More has moved MaxWrites requests, so the
				// passes end.
				rep, err := c.SweepHolds(ctx, args[0], asyncevent.HoldSweepOptions{MaxWrites: maxWrites})
				if errors.Is(err, asyncevent.ErrInvalidOptions) {
					return fmt.Errorf("%w; an event gets holds at its creation (event create -hold-for DURATION)", err)
				}
				if rep != nil {
					out.Add(rep)
				}
				if err != nil {
					if out.Passes > 0 {
						_ = printHoldSweep(e, out) // what was done before the failure
					}
					return err
				}
				if !rep.More || once {
					break
				}
			}
			return printHoldSweep(e, out)
		},
	}
}

// printHoldSweep prints the passes of a hold sweep, summed (the last pass's More: it
// reached -max-writes, only with -once).
func printHoldSweep(e *env, s httpapi.HoldSweepView) error {
	if e.JSON {
		return e.PrintJSON(s)
	}
	tw := newTable(e.Stdout)
	fmt.Fprintf(tw, "event\t%s\n", s.EventID)
	fmt.Fprintf(tw, "passes\t%s\n", clikit.FormatInt(s.Passes))
	fmt.Fprintf(tw, "expired\t%s holds that ran out, their seats given back\n", clikit.FormatInt(s.Expired))
	fmt.Fprintf(tw, "served\t%s WAITLISTED requests now HELD on a seat given back\n", clikit.FormatInt(s.Served))
	fmt.Fprintf(tw, "closed\t%s WAITLISTED requests ended %s: the event closed\n", clikit.FormatInt(s.Closed), asyncevent.ResultRejectedCapacity)
	fmt.Fprintf(tw, "cleared\t%s records of holds that had ended otherwise\n", clikit.FormatInt(s.Cleared))
	fmt.Fprintf(tw, "waiting\t%s seats given back and not handed on yet\n", clikit.FormatInt(int(s.Waiting)))
	if s.More {
		fmt.Fprintf(tw, "more\tthe pass reached -max-writes: run it again\n")
	}
	return tw.Flush()
}
