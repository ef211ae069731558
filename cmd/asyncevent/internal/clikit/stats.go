package clikit

import (
	"fmt"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/seed"
)

// StatsJSON is asyncevent.EventStats for scripts.
type StatsJSON struct {
	EventID           string         `json:"eventId"`
	EventType         string         `json:"eventType"`
	Requests          int            `json:"requests"`
	ByStatus          map[string]int `json:"byStatus"`
	ByResultCode      map[string]int `json:"byResultCode"`
	CapacityTotal     int64          `json:"capacityTotal,omitempty"`
	CapacityRemaining int64          `json:"capacityRemaining"`
	QueueWait         DurationsJSON  `json:"queueWait"`
	Processing        DurationsJSON  `json:"processing"`
	Fairness          FairnessJSON   `json:"fairness"`
	Holds             *HoldStatsJSON `json:"holds,omitempty"`
	// Queue is the line of a FIRST_COME event from its progress: depth, rate, drain time.
	Queue *QueueJSON `json:"queue,omitempty"`
}

// HoldStatsJSON is asyncevent.HoldStats for scripts.
type HoldStatsJSON struct {
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

// FairnessJSON is asyncevent.Fairness for scripts: inversions count losers,
// lateWinners winners, of the same pairs; late counts REJECTED_LATE, in neither.
type FairnessJSON struct {
	Inversions         int     `json:"inversions"`
	MaxGapMs           float64 `json:"maxGapMs"`
	LateWinners        int     `json:"lateWinners"`
	LateWinnerMaxGapMs float64 `json:"lateWinnerMaxGapMs"`
	Late               int     `json:"late"`
}

func fairnessOf(f asyncevent.Fairness) FairnessJSON {
	return FairnessJSON{
		Inversions: f.Inversions, MaxGapMs: Ms(f.MaxGap),
		LateWinners: f.LateWinners, LateWinnerMaxGapMs: Ms(f.LateWinnerMaxGap), Late: f.Late,
	}
}

// StatsOf is st for scripts.
func StatsOf(st *asyncevent.EventStats) StatsJSON {
	out := StatsJSON{
		EventID: st.EventID, EventType: string(st.EventType), Requests: st.Requests,
		ByStatus: map[string]int{}, ByResultCode: map[string]int{},
		CapacityTotal: st.CapacityTotal, CapacityRemaining: st.CapacityRemaining,
		QueueWait: DurationsOf(st.QueueWait), Processing: DurationsOf(st.Processing),
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
		out.Holds = &HoldStatsJSON{
			HoldForMs: h.HoldFor.Milliseconds(), Held: h.Held, Confirmed: h.Confirmed, Released: h.Released,
			Expired: h.Expired, Waitlisted: h.Waitlisted,
			SeatsReturned: h.SeatsReturned, SeatsServed: h.SeatsServed, SeatsWaiting: h.SeatsWaiting,
		}
	}
	return out
}

// QueueJSON is asyncevent.QueueStats for scripts.
type QueueJSON struct {
	Depth      int64   `json:"depth"`
	RatePerSec float64 `json:"ratePerSec"`
	// DrainTimeMs is absent when unknown: no worker finished a request lately.
	DrainTimeMs *float64               `json:"drainTimeMs,omitempty"`
	AsOf        asyncevent.EpochMillis `json:"asOf"`
	Series      []QueuePointJSON       `json:"series"`
}

// QueuePointJSON is one second of the line: its depth at the second's end and the
// requests the workers finished in it.
type QueuePointJSON struct {
	At         asyncevent.EpochMillis `json:"at"`
	Depth      int64                  `json:"depth"`
	RatePerSec float64                `json:"ratePerSec"`
}

func queueOf(q *asyncevent.QueueStats) *QueueJSON {
	if q == nil {
		return nil
	}
	out := &QueueJSON{Depth: q.Depth, RatePerSec: q.Rate, AsOf: asyncevent.MillisOf(q.AsOf), Series: []QueuePointJSON{}}
	if q.Rate > 0 {
		drain := Ms(q.DrainTime)
		out.DrainTimeMs = &drain
	}
	for _, p := range q.Series {
		out.Series = append(out.Series, QueuePointJSON{At: asyncevent.MillisOf(p.At), Depth: p.Depth, RatePerSec: p.Rate})
	}
	return out
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
