package main

import (
	"context"
	"fmt"

	"github.com/asyncevent/asyncevent"
)

// statsJSON is asyncevent.EventStats for scripts.
type statsJSON struct {
	EventID           string         `json:"eventId"`
	EventType         string         `json:"eventType"`
	Requests          int            `json:"requests"`
	ByStatus          map[string]int `json:"byStatus"`
	ByResultCode      map[string]int `json:"byResultCode"`
	CapacityTotal     int64          `json:"capacityTotal,omitempty"`
	CapacityRemaining int64          `json:"capacityRemaining"`
	QueueWait         durationsJSON  `json:"queueWait"`
	Processing        durationsJSON  `json:"processing"`
	Fairness          fairnessJSON   `json:"fairness"`
	Holds             *holdStatsJSON `json:"holds,omitempty"`
	// Queue is the line of a FIRST_COME event from its progress: depth, rate, drain time.
	Queue *queueJSON `json:"queue,omitempty"`
}

// holdStatsJSON is asyncevent.HoldStats for scripts.
type holdStatsJSON struct {
	HoldForMs     int64 `json:"holdForMs"`
	Held          int   `json:"held"`
	Confirmed     int   `json:"confirmed"`
	Released      int   `json:"released"`
	Expired       int   `json:"expired"`
	Waitlisted    int   `json:"waitlisted"`
	SeatsReturned int64 `json:"seatsReturned"`
	SeatsServed   int64 `json:"seatsServed"`
	SeatsWaiting  int64 `json:"seatsWaiting"`
}

// fairnessJSON is asyncevent.Fairness for scripts: inversions count losers,
// lateWinners winners, of the same pairs; late counts REJECTED_LATE, in neither.
type fairnessJSON struct {
	Inversions         int     `json:"inversions"`
	MaxGapMs           float64 `json:"maxGapMs"`
	LateWinners        int     `json:"lateWinners"`
	LateWinnerMaxGapMs float64 `json:"lateWinnerMaxGapMs"`
	Late               int     `json:"late"`
}

func fairnessOf(f asyncevent.Fairness) fairnessJSON {
	return fairnessJSON{
		Inversions: f.Inversions, MaxGapMs: ms(f.MaxGap),
		LateWinners: f.LateWinners, LateWinnerMaxGapMs: ms(f.LateWinnerMaxGap), Late: f.Late,
	}
}

func statsOf(st *asyncevent.EventStats) statsJSON {
	out := statsJSON{
		EventID: st.EventID, EventType: string(st.EventType), Requests: st.Requests,
		ByStatus: map[string]int{}, ByResultCode: map[string]int{},
		CapacityTotal: st.CapacityTotal, CapacityRemaining: st.CapacityRemaining,
		QueueWait: durationsOf(st.QueueWait), Processing: durationsOf(st.Processing),
		Fairness: fairnessOf(st.Fairness),
		Queue:    queueOf(st.Queue),
	}
	for s, n := range st.ByStatus {
		out.ByStatus[string(s)] = n
	}
	for r, n := range st.ByResultCode {
		out.ByResultCode[string(r)] = n
	}
	if h := st.Holds; h != nil {
		out.Holds = &holdStatsJSON{
			HoldForMs: h.HoldFor.Milliseconds(), Held: h.Held, Confirmed: h.Confirmed, Released: h.Released,
			Expired: h.Expired, Waitlisted: h.Waitlisted,
			SeatsReturned: h.SeatsReturned, SeatsServed: h.SeatsServed, SeatsWaiting: h.SeatsWaiting,
		}
	}
	return out
}

// formatFairness is the fairness line of a FIRST_COME event: its inversions (the
// losers queued before a winner) beside its late winners (the winners queued after
// a loser), and its REJECTED_LATE requests, which are neither.
func formatFairness(f asyncevent.Fairness) string {
	s := "0 inversions, 0 late winners: no request lost its seat to one queued after it"
	if f.Inversions > 0 || f.LateWinners > 0 {
		what := "inversions: requests"
		if f.Inversions == 1 {
			what = "inversion: a request"
		}
		winners := "late winners"
		if f.LateWinners == 1 {
			winners = "late winner"
		}
		s = fmt.Sprintf("%s %s rejected while one queued up to %s later won a seat; %s %s queued after a refused request, up to %s later",
			formatInt(f.Inversions), what, formatDuration(f.MaxGap), formatInt(f.LateWinners), winners, formatDuration(f.LateWinnerMaxGap))
	}
	if f.Late > 0 {
		s += fmt.Sprintf("; %s REJECTED_LATE (passed unseen by the ranked admission, in neither count)", formatInt(f.Late))
	}
	return s
}

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
			if e.json {
				return e.printJSON(statsOf(st))
			}
			tw := newTable(e.stdout)
			fmt.Fprintf(tw, "event\t%s (%s)\n", st.EventID, st.EventType)
			fmt.Fprintf(tw, "requests\t%s\n", formatInt(st.Requests))
			fmt.Fprintf(tw, "by status\t%s\n", formatCounts(st.ByStatus))
			fmt.Fprintf(tw, "by result\t%s\n", formatCounts(st.ByResultCode))
			if st.EventType == asyncevent.FirstCome {
				fmt.Fprintf(tw, "capacity\t%s total, %s remaining\n", formatInt(int(st.CapacityTotal)), formatInt(int(st.CapacityRemaining)))
			}
			if h := st.Holds; h != nil {
				fmt.Fprintf(tw, "holds\t%s each: %s held, %s confirmed, %s released, %s expired\n",
					h.HoldFor, formatInt(h.Held), formatInt(h.Confirmed), formatInt(h.Released), formatInt(h.Expired))
				fmt.Fprintf(tw, "waitlist\t%s waiting\n", formatInt(h.Waitlisted))
				fmt.Fprintf(tw, "seats given back\t%s: %s handed to the waitlist, %s not yet\n",
					formatInt(int(h.SeatsReturned)), formatInt(int(h.SeatsServed)), formatInt(int(h.SeatsWaiting)))
			}
			if st.Queue != nil {
				fmt.Fprintf(tw, "queue\t%s\n", formatQueue(st.Queue))
			}
			fmt.Fprintf(tw, "queue wait\t%s\n", formatDurations(st.QueueWait))
			fmt.Fprintf(tw, "processing\t%s\n", formatDurations(st.Processing))
			if st.EventType == asyncevent.FirstCome {
				fmt.Fprintf(tw, "fairness\t%s\n", formatFairness(st.Fairness))
			}
			return tw.Flush()
		}),
	}
}
