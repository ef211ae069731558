package demo

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/bench"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
	"github.com/asyncevent/asyncevent/internal/metered"
	"github.com/asyncevent/asyncevent/seed"
)

// demoReport is what the demo found, printed as text, JSON (-json) or HTML (-report).
type demoReport struct {
	StartedAt      time.Time        `json:"startedAt"`
	Table          string           `json:"table"`
	DynamoDB       string           `json:"dynamodb"`
	DynamoDBSource string           `json:"dynamodbSource,omitempty"` // how the embedded DynamoDB Local was started
	Queue          string           `json:"queue"`
	FirstCome      *firstComeReport `json:"firstCome"`
	Holds          *holdsReport     `json:"holds,omitempty"` // the sale with holds
	Prequeue       *prequeueReport  `json:"prequeue,omitempty"`
	Lottery        *lotteryReport   `json:"lottery,omitempty"`
	Total          time.Duration    `json:"-"`
	TotalSeconds   float64          `json:"totalSeconds"`
}

type firstComeReport struct {
	EventID          string `json:"eventId"`
	Capacity         int    `json:"capacity"`
	Clicks           int    `json:"clicks"`
	Clients          int    `json:"clients"`
	Workers          int    `json:"workers"`
	ScheduledRepeats int    `json:"scheduledRepeats"` // clicks of a user who clicks more than once, after the first

	NewParticipations int    `json:"newParticipations"`
	DuplicatesBlocked int    `json:"duplicatesBlocked"`
	IngestErrors      int    `json:"ingestErrors"`
	FirstIngestError  string `json:"firstIngestError,omitempty"`

	Winners         int `json:"winners"`
	ExpectedWinners int `json:"expectedWinners"` // min(capacity, new participations)
	// Inversions counts the requests rejected while one queued after them won a seat,
	// LateWinners the winners queued after a request that was rejected: the losers
	// and the winners of the same pairs, zero together. Processing order allows some,
	// on a FIFO queue too (StrictOrder: it keeps send order, not queuedAt's); a ranked
	// admission (Ranked) promises none.
	Inversions        int          `json:"inversions"`
	LateWinners       int          `json:"lateWinners"`
	StrictOrder       bool         `json:"strictOrder"` // a FIFO queue: one message group per event
	Ranked            bool         `json:"ranked"`      // the event's admission is ranked
	CapacityRemaining int64        `json:"capacityRemaining"`
	Stats             clikit.Stats `json:"stats"`

	Latency    latencyJSON `json:"ingestLatency"` // every click, as the client saw it
	NewLatency latencyJSON `json:"newParticipationLatency"`
	DupLatency latencyJSON `json:"duplicateLatency"`

	IngestSeconds   float64 `json:"ingestSeconds"`   // first click to last click answered
	EndToEndSeconds float64 `json:"endToEndSeconds"` // first click to last request final

	PerParticipation clikit.CostJSON `json:"perParticipation"`
	PerDuplicate     clikit.CostJSON `json:"perDuplicate"`
	PerMessage       clikit.CostJSON `json:"perMessage"`
	Messages         int             `json:"messages"` // deliveries the workers processed
	Outcomes         map[string]int  `json:"outcomes"`
	CapacityWrites   int             `json:"capacityWrites"` // write requests on the CAPACITY item, failed conditions included
	// Heat is the event's hottest partition key and the ceilings it puts on the event
	// on DynamoDB, as bench reports them.
	Heat bench.LayoutHeat `json:"heat"`
	// Line is the place in line the waiting users were told, against the truth.
	Line *lineReport `json:"line,omitempty"`

	fairness   asyncevent.Fairness
	queueWait  asyncevent.Durations
	processing asyncevent.Durations
	chart      *chart
}

type lotteryReport struct {
	EventID          string       `json:"eventId"`
	Entrants         int          `json:"entrants"`
	WinnerCount      int          `json:"winnerCount"`
	Entered          int          `json:"entered"`
	IngestErrors     int          `json:"ingestErrors"`
	FirstIngestError string       `json:"firstIngestError,omitempty"`
	Collected        int          `json:"collected"`
	EntryCount       int          `json:"entryCount"`
	EntriesHash      string       `json:"entriesHash"`
	Seed             string       `json:"seed"`
	SeedCommitment   string       `json:"seedCommitment"`
	SeedMode         seed.Mode    `json:"seedMode"`
	Winners          int          `json:"winners"`
	Stats            clikit.Stats `json:"stats"`
	Latency          latencyJSON  `json:"ingestLatency"`
	CollectSeconds   float64      `json:"collectSeconds"`
	DrawSeconds      float64      `json:"drawSeconds"`
	Verified         bool         `json:"verified"`
	Verification     string       `json:"verification"`
	Problems         []string     `json:"problems"`
}

type latencyJSON struct {
	Count int     `json:"count"`
	P50Ms float64 `json:"p50Ms"`
	P99Ms float64 `json:"p99Ms"`
	MaxMs float64 `json:"maxMs"`
}

// latencyOf is the median, the 99th percentile (nearest rank) and the maximum.
func latencyOf(ds []time.Duration) latencyJSON {
	if len(ds) == 0 {
		return latencyJSON{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(p int) time.Duration { return s[(len(s)*p+99)/100-1] }
	return latencyJSON{Count: len(s), P50Ms: clikit.Ms(rank(50)), P99Ms: clikit.Ms(rank(99)), MaxMs: clikit.Ms(s[len(s)-1])}
}

func (l latencyJSON) String() string {
	if l.Count == 0 {
		return "-"
	}
	return fmt.Sprintf("p50 %s · p99 %s", formatMs(l.P50Ms), formatMs(l.P99Ms))
}

func formatMs(v float64) string {
	return clikit.FormatDuration(time.Duration(v * float64(time.Millisecond)))
}

// failure says why the demo did not show what it promises, or nil.
func (r *demoReport) failure() error {
	var errs []error
	if fc := r.FirstCome; fc != nil {
		if fc.Winners != fc.ExpectedWinners {
			errs = append(errs, fmt.Errorf("first-come: %d winners, want %d", fc.Winners, fc.ExpectedWinners))
		}
		if fc.IngestErrors > 0 {
			errs = append(errs, fmt.Errorf("first-come: %d clicks failed, the first: %s", fc.IngestErrors, fc.FirstIngestError))
		}
		if fc.Ranked && fc.LateWinners > 0 {
			errs = append(errs, fmt.Errorf("first-come: %d late winners in a ranked admission, which promises none", fc.LateWinners))
		}
	}
	if h := r.Holds; h != nil {
		errs = append(errs, h.failures()...)
	}
	if p := r.Prequeue; p != nil {
		errs = append(errs, p.failures()...)
	}
	if l := r.Lottery; l != nil {
		if !l.Verified {
			errs = append(errs, fmt.Errorf("lottery: %s", l.Verification))
		}
		if want := min(l.WinnerCount, l.EntryCount); l.Winners != want {
			errs = append(errs, fmt.Errorf("lottery: %d winners, want %d", l.Winners, want))
		}
		if l.IngestErrors > 0 {
			errs = append(errs, fmt.Errorf("lottery: %d entries failed, the first: %s", l.IngestErrors, l.FirstIngestError))
		}
	}
	return errors.Join(errs...)
}

// verdict is the report's one-line judgement: the broken promises, if any; else what
// held, with the inversions a standard queue allows named as such, never promised away.
func (r *demoReport) verdict() string {
	if err := r.failure(); err != nil {
		return err.Error()
	}
	fc := r.FirstCome
	if fc == nil || fc.Inversions == 0 {
		return "every promise held"
	}
	return fmt.Sprintf("the promises held; %s of queue order, which processing order allows and this report counts (a ranked admission, -ranked, decides by rank)",
		inversions(fc.Inversions))
}

// inversions counts inversions in words.
func inversions(n int) string {
	if n == 1 {
		return "1 inversion"
	}
	return clikit.FormatInt(n) + " inversions"
}

// writeText prints the final report.
func (r *demoReport) writeText(w io.Writer) error {
	fmt.Fprintf(w, "asyncevent demo · %s · table %s · DynamoDB %s", r.StartedAt.Format("2006-01-02 15:04 MST"), r.Table, r.DynamoDB)
	if r.DynamoDBSource != "" {
		fmt.Fprintf(w, " (embedded, %s)", r.DynamoDBSource)
	}
	fmt.Fprintf(w, " · %s\n\n", r.Queue)
	if fc := r.FirstCome; fc != nil {
		if err := fc.writeText(w); err != nil {
			return err
		}
	}
	if h := r.Holds; h != nil {
		if err := h.writeText(w); err != nil {
			return err
		}
	}
	if p := r.Prequeue; p != nil {
		if err := p.writeText(w); err != nil {
			return err
		}
	}
	if l := r.Lottery; l != nil {
		verdict := "OK"
		if !l.Verified {
			verdict = "FAILED"
		}
		fmt.Fprintf(w, "\nLOTTERY %s: %s winners among %s entrants\n", l.EventID, clikit.FormatInt(l.WinnerCount), clikit.FormatInt(l.Entrants))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  entries\t%s entered, %s collected by the workers in %s (ingest latency %s)\n",
			clikit.FormatInt(l.Entered), clikit.FormatInt(l.Collected), clikit.FormatSeconds(l.CollectSeconds), l.Latency)
		fmt.Fprintf(tw, "  draw\t%s entries frozen, %s winners in %s\n", clikit.FormatInt(l.EntryCount), clikit.FormatInt(l.Winners), clikit.FormatSeconds(l.DrawSeconds))
		fmt.Fprintf(tw, "  requests by status\t%s\n", clikit.FormatCounts(l.Stats.ByStatus))
		fmt.Fprintf(tw, "  seed commitment\t%s (published at creation)\n", l.SeedCommitment)
		fmt.Fprintf(tw, "  revealed seed\t%s\n", l.Seed)
		fmt.Fprintf(tw, "  seed mode\t%s\n", clikit.SeedModeText(l.SeedMode))
		fmt.Fprintf(tw, "  entries hash\t%s\n", l.EntriesHash)
		fmt.Fprintf(tw, "  verification\t%s: %s\n", verdict, l.Verification)
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "\nverdict: %s\ntotal %s\n", r.verdict(), clikit.FormatSeconds(r.TotalSeconds))
	return err
}

// writeText prints the first-come event's part of the report.
func (fc *firstComeReport) writeText(w io.Writer) error {
	fmt.Fprintf(w, "FIRST_COME %s: capacity %s\n", fc.EventID, clikit.FormatInt(fc.Capacity))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	verdict := "= capacity"
	if fc.ExpectedWinners < fc.Capacity {
		verdict = "= every participant, fewer than the capacity"
	}
	if fc.Winners != fc.ExpectedWinners {
		verdict = fmt.Sprintf("WRONG: want %s", clikit.FormatInt(fc.ExpectedWinners))
	}
	fmt.Fprintf(tw, "  clicks\t%s from %d clients, %s of them repeat clicks by the same user\n", clikit.FormatInt(fc.Clicks), fc.Clients, clikit.FormatInt(fc.ScheduledRepeats))
	fmt.Fprintf(tw, "  new participations\t%s\n", clikit.FormatInt(fc.NewParticipations))
	fmt.Fprintf(tw, "  duplicates blocked\t%s (answered with the user's first requestId)\n", clikit.FormatInt(fc.DuplicatesBlocked))
	if fc.IngestErrors > 0 {
		fmt.Fprintf(tw, "  failed clicks\t%s (first: %s)\n", clikit.FormatInt(fc.IngestErrors), fc.FirstIngestError)
	}
	fmt.Fprintf(tw, "  winners\t%s %s (capacityRemaining %s)\n", clikit.FormatInt(fc.Winners), verdict, clikit.FormatInt(int(fc.CapacityRemaining)))
	fmt.Fprintf(tw, "  requests by status\t%s\n", clikit.FormatCounts(fc.Stats.ByStatus))
	fmt.Fprintf(tw, "  result codes\t%s\n", clikit.FormatCounts(fc.Stats.ByResultCode))
	fmt.Fprintf(tw, "  ingest latency\t%s (new %s; duplicate %s)\n", fc.Latency, fc.NewLatency, fc.DupLatency)
	fmt.Fprintf(tw, "  queue wait\t%s\n", clikit.FormatDurations(fc.queueWait))
	fmt.Fprintf(tw, "  processing\t%s\n", clikit.FormatDurations(fc.processing))
	if rest := fc.NewParticipations - fc.processing.Count; rest > 0 && fc.processing.Count > 0 {
		fmt.Fprintf(tw, "  \t(the requests a worker worked on: the seats' winners, and any it leased; the other %s, the sold-out event's losers, were rejected in one write each, after a failed try at a seat or without one)\n",
			clikit.FormatInt(rest))
	}
	fmt.Fprintf(tw, "  end to end\t%s from the first click to the last result (clicks answered in %s)\n",
		clikit.FormatSeconds(fc.EndToEndSeconds), clikit.FormatSeconds(fc.IngestSeconds))
	fmt.Fprintf(tw, "  per new participation\t%s\n", fc.PerParticipation)
	fmt.Fprintf(tw, "  per duplicate click\t%s\n", fc.PerDuplicate)
	fmt.Fprintf(tw, "  \t(here the node that took a user's first click answers the repeat from its memory, without a call; on another node it is the lock's failed conditional PutItem, 1 call and 1 WCU: the bench's \"duplicate click\")\n")
	fmt.Fprintf(tw, "  per message\t%s (%s messages, %d workers)\n", fc.PerMessage, clikit.FormatInt(fc.Messages), fc.Workers)
	fmt.Fprintf(tw, "  CAPACITY writes\t%s: %s seats + %s tries by workers that had not yet seen the sell-out\n",
		clikit.FormatInt(fc.CapacityWrites), clikit.FormatInt(fc.Winners), clikit.FormatInt(fc.CapacityWrites-fc.Winners))
	fmt.Fprintf(tw, "  fairness\t%s\n", clikit.FormatFairness(fc.fairness))
	fmt.Fprintf(tw, "  hottest keys\t%s\n", formatHottest(fc.Heat))
	fmt.Fprintf(tw, "  on DynamoDB\t%s\n", ceilingSentence(fc.Heat))
	if l := fc.Line; l != nil {
		fmt.Fprintf(tw, "  place in line\tas the waiting users polled it, against what happened:\n")
		for _, row := range l.rows() {
			fmt.Fprintf(tw, "    %s\t%s\n", row.Label, row.Value)
		}
	}
	return tw.Flush()
}

// formatHottest lists the hottest key of the table and of each GSI with its WCU per
// new participation and its peak WCU in one second of the run.
func formatHottest(h bench.LayoutHeat) string {
	c := h.Ceiling
	var parts []string
	for _, index := range append([]string{metered.TableIndex}, metered.Indexes()...) {
		if k, ok := c.Hottest[index]; ok {
			parts = append(parts, fmt.Sprintf("%s %s %.2f WCU/participation (peak %.0f WCU/s)", index, k.Key, c.PerParticipation(k), k.PeakWCU))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " · ")
}

// ceilingSentence says in one sentence what the heat means on DynamoDB.
func ceilingSentence(h bench.LayoutHeat) string {
	if h.CeilingParticipationsPerSec == 0 {
		return "no write was measured"
	}
	s := fmt.Sprintf("this event would throttle above about %s clicks/s: each new participation writes %.1f units to one partition key (%s), and DynamoDB gives one key %s a second",
		clikit.FormatInt(roughly(h.CeilingParticipationsPerSec)), h.HottestWCUPerParticipation, h.HottestKey, clikit.FormatInt(metered.KeyWCULimit))
	if h.CeilingWinnersPerSec > 0 {
		c := h.Ceiling
		s += fmt.Sprintf("; its seats could go at most about %s winners/s: %s × about %s claims/s",
			clikit.FormatInt(roughly(h.CeilingWinnersPerSec)), clikit.PluralShards(c.CapacityShards), clikit.FormatInt(roughly(c.ClaimsPerSecPerShard)))
		switch {
		case c.WinnersBound == metered.BoundSerial:
			s += fmt.Sprintf(", one transaction at a time per item (%s ms each)", clikit.FormatFloat(metered.TransactionHold.Seconds()*1000))
		case c.ClaimsPerSecSerial > 0:
			s += fmt.Sprintf(", %.1f units per claim on %s", c.WCUPerClaim, c.CapacityKey)
		default:
			s += fmt.Sprintf(", %.1f units per claim on %s (no transaction holds it)", c.WCUPerClaim, c.CapacityKey)
		}
	}
	return s
}

// roughly rounds a rate to two significant digits: an estimate, not a measurement.
func roughly(v float64) int {
	if v < 100 {
		return int(math.Round(v))
	}
	p := math.Pow(10, math.Floor(math.Log10(v))-1)
	return int(math.Round(v/p) * p)
}
