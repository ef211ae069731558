package demo

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
)

// holdsReport is what the sale with holds showed: how its seats moved.
type holdsReport struct {
	EventID          string  `json:"eventId"`
	Capacity         int     `json:"capacity"`
	HoldForSeconds   float64 `json:"holdForSeconds"`
	Clicks           int     `json:"clicks"`
	Clients          int     `json:"clients"`
	Workers          int     `json:"workers"`
	ScheduledRepeats int     `json:"scheduledRepeats"`

	NewParticipations int    `json:"newParticipations"`
	DuplicatesBlocked int    `json:"duplicatesBlocked"`
	IngestErrors      int    `json:"ingestErrors"`
	FirstIngestError  string `json:"firstIngestError,omitempty"`

	// Held counts the holds the spike's claims took (HELD), ExpectedHeld what they must
	// be (min(capacity, new participations)), Waitlisted the spike's losers.
	Held         int `json:"held"`
	ExpectedHeld int `json:"expectedHeld"`
	Waitlisted   int `json:"waitlisted"`

	// What the users did with the spike's holds: paid for (Confirm applied), given up
	// (Release applied), left to lapse; ServedPaid counts the holds handed on from the
	// waitlist, all paid for. LateConfirms and LateReleases count the calls that found
	// the hold ended already (a confirm too late is a refund).
	Paid         int `json:"paid"`
	Released     int `json:"released"`
	Lapsed       int `json:"lapsed"`
	ServedPaid   int `json:"servedPaid"`
	LateConfirms int `json:"lateConfirms"`
	LateReleases int `json:"lateReleases"`

	// The event once the sale had settled, before its close (asyncevent.HoldStats):
	// Expired holds ended by the workers' sweep; seats given back (released or
	// expired), handed on to the waitlist, and left waiting for no one; Confirmed
	// (SUCCEEDED), HeldLeft (HELD) and WaitlistedLeft (WAITLISTED) requests;
	// CapacityRemaining, the seats never claimed.
	Expired           int   `json:"expired"`
	SeatsReturned     int64 `json:"seatsReturned"`
	SeatsServed       int64 `json:"seatsServed"`
	SeatsWaiting      int64 `json:"seatsWaiting"`
	Confirmed         int   `json:"confirmed"`
	HeldLeft          int   `json:"heldLeft"`
	WaitlistedLeft    int   `json:"waitlistedLeft"`
	CapacityRemaining int64 `json:"capacityRemaining"`
	// ClosedWaitlist counts the waitlisted requests the sweep ended REJECTED_CAPACITY
	// once the event closed.
	ClosedWaitlist int `json:"closedWaitlist"`
	// Stats is the event's statistics after the close.
	Stats clikit.Stats `json:"stats"`
	// Page is what the user of a HELD request saw on the request page.
	Page *requestPageReport `json:"requestPage,omitempty"`

	IngestSeconds float64 `json:"ingestSeconds"` // first click to last click answered
	SpikeSeconds  float64 `json:"spikeSeconds"`  // first click to the last message's outcome
	SettleSeconds float64 `json:"settleSeconds"` // first click to the sale settled
}

// report sums up the sale, with the event's statistics before its close and after.
func (s *holdsSale) report(o holdsOptions, c *clicks, before, after *asyncevent.EventStats) *holdsReport {
	newN := int(c.newOne.Load())
	r := &holdsReport{
		EventID: s.eventID, Capacity: o.capacity, HoldForSeconds: o.holdFor.Seconds(), Clients: s.d.o.clients, Workers: s.d.o.workers,
		NewParticipations: newN, DuplicatesBlocked: len(c.dupLat), IngestErrors: c.errs,
		Held: int(s.held.Load()), ExpectedHeld: min(o.capacity, newN), Waitlisted: int(s.waitlisted.Load()),
		Paid: int(s.paid.Load()), Released: int(s.released.Load()), Lapsed: int(s.lapsing.Load()),
		ServedPaid: int(s.servedPaid.Load()), LateConfirms: int(s.lateConfirms.Load()), LateReleases: int(s.lateReleases.Load()),
		CapacityRemaining: before.CapacityRemaining, Stats: clikit.StatsOf(after), Page: s.page,
	}
	if c.firstErr != nil {
		r.FirstIngestError = c.firstErr.Error()
	}
	if h := before.Holds; h != nil {
		r.Expired, r.Confirmed, r.HeldLeft, r.WaitlistedLeft = h.Expired, h.Confirmed, h.Held, h.Waitlisted
		r.SeatsReturned, r.SeatsServed, r.SeatsWaiting = h.SeatsReturned, h.SeatsServed, h.SeatsWaiting
	}
	return r
}

// seatsAccounted is every seat of the sale as it settled: confirmed, held, given back
// and not handed on, never claimed.
func (h *holdsReport) seatsAccounted() int64 {
	return int64(h.Confirmed+h.HeldLeft) + h.SeatsWaiting + h.CapacityRemaining
}

// failures says what the sale broke of what the library promises.
func (h *holdsReport) failures() []error {
	var errs []error
	if h.Held != h.ExpectedHeld {
		errs = append(errs, fmt.Errorf("holds: the spike took %d holds, want %d", h.Held, h.ExpectedHeld))
	}
	if h.Confirmed > h.Capacity {
		errs = append(errs, fmt.Errorf("holds: %d confirmed, more than the %d seats", h.Confirmed, h.Capacity))
	}
	if got := h.seatsAccounted(); got != int64(h.Capacity) {
		errs = append(errs, fmt.Errorf("holds: the seats add up to %d, not the capacity %d", got, h.Capacity))
	}
	if want := h.Lapsed + h.LateConfirms + h.LateReleases; h.Expired != want {
		errs = append(errs, fmt.Errorf("holds: %d holds expired, want %d (lapsed, or ended before their user's call)", h.Expired, want))
	}
	if h.ClosedWaitlist != h.WaitlistedLeft {
		errs = append(errs, fmt.Errorf("holds: the close ended %d waitlisted requests of %d", h.ClosedWaitlist, h.WaitlistedLeft))
	}
	if h.IngestErrors > 0 {
		errs = append(errs, fmt.Errorf("holds: %d clicks failed, the first: %s", h.IngestErrors, h.FirstIngestError))
	}
	return errs
}

// heldVerdict says how the spike's holds compare with what they must be.
func (h *holdsReport) heldVerdict() string {
	switch {
	case h.Held != h.ExpectedHeld:
		return "WRONG: want " + clikit.FormatInt(h.ExpectedHeld)
	case h.ExpectedHeld < h.Capacity:
		return "= every participant, fewer than the capacity"
	}
	return "= capacity"
}

// seatsCheck says that no more seats were confirmed than there are, and where each
// seat is.
func (h *holdsReport) seatsCheck() string {
	verdict := "ok"
	if h.Confirmed > h.Capacity || h.seatsAccounted() != int64(h.Capacity) {
		verdict = "WRONG"
	}
	return fmt.Sprintf("%s: confirmed %s ≤ capacity %s; %s confirmed + %s held + %s given back, not handed on + %s never claimed = %s",
		verdict, clikit.FormatInt(h.Confirmed), clikit.FormatInt(h.Capacity), clikit.FormatInt(h.Confirmed), clikit.FormatInt(h.HeldLeft),
		clikit.FormatInt(int(h.SeatsWaiting)), clikit.FormatInt(int(h.CapacityRemaining)), clikit.FormatInt(int(h.seatsAccounted())))
}

// rows are the sale's figures, label and value, for the text and the HTML report.
func (h *holdsReport) rows() []row {
	holdFor := clikit.FormatDuration(time.Duration(h.HoldForSeconds * float64(time.Second)))
	rs := []row{
		{"clicks", fmt.Sprintf("%s from %d clients, %s of them repeat clicks by the same user", clikit.FormatInt(h.Clicks), h.Clients, clikit.FormatInt(h.ScheduledRepeats))},
		{"new participations", fmt.Sprintf("%s (%s duplicates blocked)", clikit.FormatInt(h.NewParticipations), clikit.FormatInt(h.DuplicatesBlocked))},
	}
	if h.IngestErrors > 0 {
		rs = append(rs, row{"failed clicks", fmt.Sprintf("%s (first: %s)", clikit.FormatInt(h.IngestErrors), h.FirstIngestError)})
	}
	rs = append(rs,
		row{"held", fmt.Sprintf("%s %s by the spike's claims (HELD, each with its Hold item); %s waitlisted (WAITLISTED)",
			clikit.FormatInt(h.Held), h.heldVerdict(), clikit.FormatInt(h.Waitlisted))},
		row{"confirmed", fmt.Sprintf("%s: %s of the spike's holds paid for + %s handed on from the waitlist and paid for",
			clikit.FormatInt(h.Confirmed), clikit.FormatInt(h.Paid), clikit.FormatInt(h.ServedPaid))},
		row{"released", fmt.Sprintf("%s given up (Release): the seat to the waitlist at once", clikit.FormatInt(h.Released))},
		row{"expired", fmt.Sprintf("%s never paid for: the workers' sweep ended them once their %s ran out", clikit.FormatInt(h.Expired), holdFor)},
	)
	if h.LateConfirms+h.LateReleases > 0 {
		rs = append(rs, row{"too late", fmt.Sprintf("%s confirms (a refund each) and %s releases found the hold ended",
			clikit.FormatInt(h.LateConfirms), clikit.FormatInt(h.LateReleases))})
	}
	rs = append(rs,
		row{"handed on", fmt.Sprintf("%s of the %s seats given back (released or expired) went to the earliest waitlisted, HELD in turn; %s waiting for no one",
			clikit.FormatInt(int(h.SeatsServed)), clikit.FormatInt(int(h.SeatsReturned)), clikit.FormatInt(int(h.SeatsWaiting)))},
		row{"waitlisted at close", fmt.Sprintf("%s still waiting when the sale closed: the sweep ended %s REJECTED_CAPACITY",
			clikit.FormatInt(h.WaitlistedLeft), clikit.FormatInt(h.ClosedWaitlist))},
		row{"requests by status", clikit.FormatCounts(h.Stats.ByStatus)},
		row{"result codes", clikit.FormatCounts(h.Stats.ByResultCode)},
		row{"seats", h.seatsCheck()},
		row{"timeline", fmt.Sprintf("clicks answered in %s, every message's outcome in %s, the sale settled %s after the first click",
			clikit.FormatSeconds(h.IngestSeconds), clikit.FormatSeconds(h.SpikeSeconds), clikit.FormatSeconds(h.SettleSeconds))},
	)
	return rs
}

// writeText prints the sale's part of the report.
func (h *holdsReport) writeText(w io.Writer) error {
	holdFor := clikit.FormatDuration(time.Duration(h.HoldForSeconds * float64(time.Second)))
	fmt.Fprintf(w, "\nFIRST_COME WITH HOLDS %s: capacity %s, each seat held %s until paid for, then a waitlist\n",
		h.EventID, clikit.FormatInt(h.Capacity), holdFor)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range h.rows() {
		fmt.Fprintf(tw, "  %s\t%s\n", r.Label, r.Value)
	}
	if p := h.Page; p != nil {
		fmt.Fprintf(tw, "  request page\twhat %s saw of request %s while it was %s (GET /requests/{requestId}/page):\n", p.UserID, p.RequestID, p.Status)
		for _, r := range p.rows() {
			fmt.Fprintf(tw, "    %s\t%s\n", r.Label, r.Value)
		}
	}
	return tw.Flush()
}
