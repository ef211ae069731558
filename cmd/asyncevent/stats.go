package main

import (
	"context"
	"fmt"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
)

func statsCmd() *command {
	return &command{
		name: "stats",
		args: "EVENT_ID",
		summary: "an event's statistics: requests by status and result, capacity, holds and waitlist, queue wait, fairness (Query GSI2); " +
			"of a first-come event its line: depth, rate, drain time (Query of its progress)",
		run: withID("EVENT_ID", func(ctx context.Context, e *env, c *asyncevent.Client, eventID string) error {
			st, err := c.EventStats(ctx, eventID)
			if err != nil {
				return err
			}
			if e.JSON {
				return e.PrintJSON(clikit.StatsOf(st))
			}
			tw := newTable(e.Stdout)
			fmt.Fprintf(tw, "event\t%s (%s)\n", st.EventID, st.EventType)
			fmt.Fprintf(tw, "requests\t%s\n", clikit.FormatInt(st.Requests))
			fmt.Fprintf(tw, "by status\t%s\n", clikit.FormatCounts(st.ByStatus))
			fmt.Fprintf(tw, "by result\t%s\n", clikit.FormatCounts(st.ByResultCode))
			if st.EventType == asyncevent.FirstCome {
				fmt.Fprintf(tw, "capacity\t%s total, %s remaining\n", clikit.FormatInt(int(st.CapacityTotal)), clikit.FormatInt(int(st.CapacityRemaining)))
			}
			if h := st.Holds; h != nil {
				fmt.Fprintf(tw, "holds\t%s each: %s held, %s confirmed, %s released, %s expired\n",
					h.HoldFor, clikit.FormatInt(h.Held), clikit.FormatInt(h.Confirmed), clikit.FormatInt(h.Released), clikit.FormatInt(h.Expired))
				fmt.Fprintf(tw, "waitlist\t%s waiting\n", clikit.FormatInt(h.Waitlisted))
				fmt.Fprintf(tw, "seats given back\t%s: %s handed to the waitlist, %s not yet\n",
					clikit.FormatInt(int(h.SeatsReturned)), clikit.FormatInt(int(h.SeatsServed)), clikit.FormatInt(int(h.SeatsWaiting)))
			}
			if st.Queue != nil {
				fmt.Fprintf(tw, "queue\t%s\n", formatQueue(st.Queue))
			}
			fmt.Fprintf(tw, "queue wait\t%s\n", clikit.FormatDurations(st.QueueWait))
			fmt.Fprintf(tw, "processing\t%s\n", clikit.FormatDurations(st.Processing))
			if st.EventType == asyncevent.FirstCome {
				fmt.Fprintf(tw, "fairness\t%s\n", clikit.FormatFairness(st.Fairness))
			}
			return tw.Flush()
		}),
	}
}
