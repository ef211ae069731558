package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/asyncevent/asyncevent"
)

// drawJSON is a draw's result for scripts.
type drawJSON struct {
	Draw    map[string]any `json:"draw"`
	Winners []string       `json:"winners"`
}

func drawCmd() *command {
	var quiet bool
	return &command{
		name:    "draw",
		args:    "EVENT_ID",
		summary: "run a LOTTERY event's draw after its cutoff (idempotent and resumable) and print the winners",
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&quiet, "quiet", false, "print the summary without the winners' request IDs")
		},
		run: withID("EVENT_ID", func(ctx context.Context, e *env, c *asyncevent.Client, eventID string) error {
			res, err := c.Draw(ctx, eventID)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(drawJSON{Draw: itemJSON(&res.Record), Winners: append([]string{}, res.Winners...)})
			}
			rec := res.Record
			tw := newTable(e.stdout)
			fmt.Fprintf(tw, "event\t%s\n", rec.EventID)
			fmt.Fprintf(tw, "phase\t%s\n", rec.Phase)
			fmt.Fprintf(tw, "entries\t%s (entries hash %s)\n", formatInt(int(rec.EntryCount)), rec.EntriesHash)
			fmt.Fprintf(tw, "winners\t%s of %s drawn\n", formatInt(len(res.Winners)), formatInt(int(rec.WinnerCount)))
			fmt.Fprintf(tw, "seed\t%s (commitment %s)\n", rec.Seed, rec.SeedCommitment)
			fmt.Fprintf(tw, "drawn at\t%s\n", formatMillis(rec.DrawnAt))
			fmt.Fprintf(tw, "announced at\t%s\n", formatMillis(rec.AnnouncedAt))
			if err := tw.Flush(); err != nil {
				return err
			}
			if !quiet {
				fmt.Fprintln(e.stdout, "\nwinners, best score first:")
				for i, id := range res.Winners {
					fmt.Fprintf(e.stdout, "%5d  %s\n", i+1, id)
				}
			}
			return nil
		}),
	}
}

// verifyJSON is asyncevent.Verification for scripts.
type verifyJSON struct {
	EventID    string   `json:"eventId"`
	OK         bool     `json:"ok"`
	EntryCount int      `json:"entryCount"`
	Winners    []string `json:"winners"`
	Problems   []string `json:"problems"`
}

func verifyCmd() *command {
	return &command{
		name:    "verify",
		args:    "EVENT_ID",
		summary: "re-check a drawn lottery from the table: seed against commitment, entries, every result (exit 1 if it fails)",
		run: withID("EVENT_ID", func(ctx context.Context, e *env, c *asyncevent.Client, eventID string) error {
			v, err := c.VerifyDraw(ctx, eventID)
			if err != nil {
				return err
			}
			if e.json {
				err = e.printJSON(verifyJSON{EventID: v.EventID, OK: v.OK(), EntryCount: v.EntryCount,
					Winners: append([]string{}, v.Winners...), Problems: append([]string{}, v.Problems...)})
			} else {
				_, err = fmt.Fprintln(e.stdout, v)
			}
			if err != nil {
				return err
			}
			if !v.OK() {
				return fmt.Errorf("verification of %s failed: %d problems", v.EventID, len(v.Problems))
			}
			return nil
		}),
	}
}
