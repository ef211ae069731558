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

// drawOpens is when eventID can be drawn (Client.DrawOpensAt), in RFC 3339, with the
// cutoff it follows and the settle window between them.
func drawOpens(ctx context.Context, c *asyncevent.Client, eventID string) (opens, cutoff string, settle time.Duration, err error) {
	cfg, err := c.GetEvent(ctx, eventID)
	if err != nil {
		return "", "", 0, err
	}
	end, last := cfg.LotteryCutoffAt, cfg.LotteryCutoffAt
	if hasPrequeue(cfg) {
		end, last = cfg.StartsAt, cfg.StartsAt-1 // its entries are queued before the start
	}
	at, _ := c.DrawOpensAt(cfg)
	return formatMillis(at), formatMillis(end), at.Time().Sub(last.Time()), nil
}

// hasPrequeue reports whether an event is a FIRST_COME one with a pre-queue, whose
// serve the draw command runs.
func hasPrequeue(e *asyncevent.Event) bool {
	return e.EventType == asyncevent.FirstCome && e.PrequeueOpensAt != 0
}

// tooEarly explains an ErrDrawTooEarly of eventID: what the draw waits for, and from
// when it can run.
func tooEarly(ctx context.Context, c *asyncevent.Client, eventID, what string) error {
	opens, cutoff, settle, err := drawOpens(ctx, c, eventID)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%s: entries close at %s and the draw waits %s more for enqueues still in flight; "+
		"run 'asyncevent draw %s' from %s", what, cutoff, settle, eventID, opens)
}

func drawCmd() *command {
	var (
		quiet  bool
		settle time.Duration
	)
	draw := withID("EVENT_ID", func(ctx context.Context, e *env, c *asyncevent.Client, eventID string) error {
		if ev, err := c.GetEvent(ctx, eventID); err == nil && hasPrequeue(ev) {
			return servePrequeue(ctx, e, c, eventID, quiet)
		}
		res, err := c.Draw(ctx, eventID)
		if errors.Is(err, asyncevent.ErrDrawTooEarly) {
			return tooEarly(ctx, c, eventID, "too early to draw "+eventID)
		}
		if errors.Is(err, asyncevent.ErrNoSeedSource) || errors.Is(err, asyncevent.ErrSeedMismatch) {
			return fmt.Errorf("%w; the CLI takes the secret the event was created with from %s", err, clikit.EnvDrawSecret)
		}
		if err != nil {
			return err
		}
		if e.JSON {
			return e.PrintJSON(clikit.Draw{DrawResultView: httpapi.NewDrawResultView(res), Item: drawItem(&res.Record)})
		}
		rec := res.Record
		tw := newTable(e.Stdout)
		fmt.Fprintf(tw, "event\t%s\n", rec.EventID)
		fmt.Fprintf(tw, "phase\t%s\n", rec.Phase)
		fmt.Fprintf(tw, "entries\t%s (entries hash %s)\n", clikit.FormatInt(int(rec.EntryCount)), rec.EntriesHash)
		fmt.Fprintf(tw, "winners\t%s of %s drawn\n", clikit.FormatInt(len(res.Winners)), clikit.FormatInt(int(rec.WinnerCount)))
		fmt.Fprintf(tw, "seed\t%s (commitment %s)\n", rec.Seed, rec.SeedCommitment)
		fmt.Fprintf(tw, "seed mode\t%s\n", clikit.SeedModeText(rec.SeedMode))
		fmt.Fprintf(tw, "drawn at\t%s\n", formatMillis(rec.DrawnAt))
		fmt.Fprintf(tw, "announced at\t%s\n", formatMillis(rec.AnnouncedAt))
		if err := tw.Flush(); err != nil {
			return err
		}
		if !quiet {
			fmt.Fprintln(e.Stdout, "\nwinners, best score first:")
			for i, id := range res.Winners {
				fmt.Fprintf(e.Stdout, "%5d  %s\n", i+1, id)
			}
		}
		return nil
	})
	return &command{
		name: "draw",
		args: "EVENT_ID",
		summary: "run a LOTTERY event's draw, from the settle window (-settle, default 30s) after its cutoff, for enqueues in flight, " +
			"or serve a FIRST_COME event's pre-queue, from the settle window after its start; idempotent, resumable; a SEALED seed needs " + clikit.EnvDrawSecret,
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&quiet, "quiet", false, "print the summary without the winners' request IDs")
			fs.DurationVar(&settle, "settle", 0, "the settle window (Options.DrawSettleWindow): the draw, or the serve, waits this long after "+
				"the cutoff (the start); every process of the event must use the same window (default 30s, at least 1s)")
		},
		run: func(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
			if settle != 0 && settle < time.Second {
				return clikit.Usagef("-settle %s: at least 1s", settle)
			}
			e.DrawSettleWindow = settle
			return draw(ctx, e, fs, args)
		},
	}
}

func verifyCmd() *command {
	return &command{
		name:    "verify",
		args:    "EVENT_ID",
		summary: "re-check a drawn lottery, or a served pre-queue, from the table: seed against commitment, entries, every result (exit 1 if it fails)",
		run: withID("EVENT_ID", func(ctx context.Context, e *env, c *asyncevent.Client, eventID string) error {
			if ev, err := c.GetEvent(ctx, eventID); err == nil && hasPrequeue(ev) {
				return verifyPrequeue(ctx, e, c, eventID)
			}
			v, err := c.VerifyDraw(ctx, eventID)
			if errors.Is(err, asyncevent.ErrDrawTooEarly) {
				return tooEarly(ctx, c, eventID, eventID+" has not been drawn yet, so there is nothing to verify")
			}
			if err != nil {
				return err
			}
			return printVerification(e, httpapi.NewVerificationView(v), v, v.OK(), v.EventID, len(v.Problems))
		}),
	}
}

// drawItem is a draw's DRAW item, which the draw command prints beside the view.
func drawItem(rec *asyncevent.DrawRecord) clikit.Row {
	return fieldsJSON(withEntity(fieldsOf(rec), entity.Draw))
}

// servePrequeue runs the draw command on a FIRST_COME event with a pre-queue.
func servePrequeue(ctx context.Context, e *env, c *asyncevent.Client, eventID string, quiet bool) error {
	res, err := c.ServePrequeue(ctx, eventID)
	if errors.Is(err, asyncevent.ErrDrawTooEarly) {
		opens, start, settle, oerr := drawOpens(ctx, c, eventID)
		if oerr != nil {
			return fmt.Errorf("too early to serve the pre-queue of %s: %w", eventID, oerr)
		}
		return fmt.Errorf("too early to serve the pre-queue of %s: it starts at %s and the serve waits %s more for enqueues still in flight; "+
			"run 'asyncevent draw %s' from %s", eventID, start, settle, eventID, opens)
	}
	if errors.Is(err, asyncevent.ErrNoSeedSource) || errors.Is(err, asyncevent.ErrSeedMismatch) {
		return fmt.Errorf("%w; the CLI takes the secret the event was created with from %s", err, clikit.EnvDrawSecret)
	}
	if err != nil {
		return err
	}
	if e.JSON {
		return e.PrintJSON(clikit.PrequeueServe{PrequeueServeView: httpapi.NewPrequeueServeView(res), Item: drawItem(&res.Record)})
	}
	rec := res.Record
	tw := newTable(e.Stdout)
	fmt.Fprintf(tw, "event\t%s (pre-queue)\n", rec.EventID)
	fmt.Fprintf(tw, "phase\t%s\n", rec.Phase)
	fmt.Fprintf(tw, "entries\t%s (entries hash %s)\n", clikit.FormatInt(int(rec.EntryCount)), rec.EntriesHash)
	fmt.Fprintf(tw, "winners\t%s, the first of the order\n", clikit.FormatInt(len(res.Winners)))
	fmt.Fprintf(tw, "served now\t%s\n", clikit.FormatInt(res.Served))
	fmt.Fprintf(tw, "seed\t%s (commitment %s)\n", rec.Seed, rec.SeedCommitment)
	fmt.Fprintf(tw, "seed mode\t%s\n", clikit.SeedModeText(rec.SeedMode))
	fmt.Fprintf(tw, "frozen at\t%s\n", formatMillis(rec.DrawnAt))
	fmt.Fprintf(tw, "served at\t%s\n", formatMillis(rec.AnnouncedAt))
	if err := tw.Flush(); err != nil {
		return err
	}
	if !quiet {
		fmt.Fprintln(e.Stdout, "\nthe order served (the winners first):")
		for i, id := range res.Order {
			fmt.Fprintf(e.Stdout, "%5d  %s\n", i+1, id)
		}
	}
	return nil
}

// verifyPrequeue runs the verify command on a FIRST_COME event with a pre-queue.
func verifyPrequeue(ctx context.Context, e *env, c *asyncevent.Client, eventID string) error {
	v, err := c.VerifyPrequeue(ctx, eventID)
	if errors.Is(err, asyncevent.ErrDrawTooEarly) {
		return fmt.Errorf("the pre-queue of %s has not been served yet, so there is nothing to verify", eventID)
	}
	if err != nil {
		return err
	}
	return printVerification(e, httpapi.NewPrequeueVerificationView(v), v, v.OK(), v.EventID, len(v.Problems))
}

// printVerification prints a verification, as its view with -json, else as text, and
// fails (exit 1) when it found problems.
func printVerification(e *env, view any, text fmt.Stringer, ok bool, eventID string, problems int) error {
	var err error
	if e.JSON {
		err = e.PrintJSON(view)
	} else {
		_, err = fmt.Fprintln(e.Stdout, text)
	}
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("verification of %s failed: %d problems", eventID, problems)
	}
	return nil
}
