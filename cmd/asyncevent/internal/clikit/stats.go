package clikit

import (
	"fmt"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/httpapi"
	"github.com/asyncevent/asyncevent/seed"
)

// Stats is an event's statistics as stats -json and the demo's report print them:
// the HTTP API's view (httpapi.StatsView) with two fields in the form the CLI printed
// them before the view had them, which take the view's place (in encoding/json the
// shallower field wins): capacityRemaining, which the CLI prints of a LOTTERY too (0),
// and the line of a FIRST_COME event, its Line, whose times are epoch milliseconds
// where the view writes the same names (asOf, at) in RFC 3339. Both forms are
// promised.
type Stats struct {
	httpapi.StatsView
	CapacityRemaining int64 `json:"capacityRemaining"`
	Queue             *Line `json:"queue,omitempty"`
}

// StatsOf is st as the CLI prints it.
func StatsOf(st *asyncevent.EventStats) Stats {
	return Stats{StatsView: httpapi.NewStatsView(st), CapacityRemaining: st.CapacityRemaining, Queue: lineOf(st.Queue)}
}

// FormatFairness is the fairness line of a FIRST_COME event: its inversions (the
// losers queued before a winner) beside its late winners (the winners queued after
// a loser), and its REJECTED_LATE requests, which are neither.
func FormatFairness(f asyncevent.Fairness) string {
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
			FormatInt(f.Inversions), what, FormatDuration(f.MaxGap), FormatInt(f.LateWinners), winners, FormatDuration(f.LateWinnerMaxGap))
	}
	if f.Late > 0 {
		s += fmt.Sprintf("; %s REJECTED_LATE (passed unseen by the ranked admission, in neither count)", FormatInt(f.Late))
	}
	return s
}

// SeedModeText says what a lottery's seed mode means for its draw.
func SeedModeText(m seed.Mode) string {
	if m == seed.Sealed {
		return "SEALED: the table held only its commitment until the draw"
	}
	return "UNSEALED: the seed was on the table from the event's creation (development only)"
}
