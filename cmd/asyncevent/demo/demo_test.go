package demo

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit/clikittest"
)

func TestMain(m *testing.M) { asynceventtest.Main(m) }

func TestDemoPrintsExactWinnersAndAVerifiedDraw(t *testing.T) {
	t.Parallel()
	f := clikittest.New(asynceventtest.Endpoint(t), asynceventtest.NewTable(t).TableName())
	report := filepath.Join(t.TempDir(), "demo.html")
	out, errOut, err := f.Run(t, &Options{}, false, "-capacity", "20", "-submits", "200", "-clients", "6", "-workers", "3",
		"-holds-capacity", "10", "-holds-submits", "60",
		"-prequeue-seats", "6", "-prequeue-entries", "40", "-prequeue-sale", "10",
		"-lottery-entries", "100", "-lottery-winners", "5", "-report", report, "-seed", "7")
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, errOut)

	assert.Regexp(t, regexp.MustCompile(`(?m)^  winners\s+20 = capacity \(capacityRemaining 0\)$`), out)
	assert.Regexp(t, regexp.MustCompile(`(?m)^  new participations\s+160$`), out)
	assert.Regexp(t, regexp.MustCompile(`(?m)^  duplicates blocked\s+40 `), out)
	assert.Regexp(t, regexp.MustCompile(`(?m)^  requests by status\s+REJECTED 140 · SUCCEEDED 20$`), out)
	assert.Regexp(t, regexp.MustCompile(`(?m)^  verification\s+OK: draw of demo-lottery-\S+ verified: 100 entries, 5 winners$`), out)
	assert.Regexp(t, regexp.MustCompile(`(?m)^  verification\s+OK: pre-queue of demo-prequeue-\S+ verified: 40 entries, the first 6 in the order won$`), out)
	assert.Regexp(t, regexp.MustCompile(`(?m)^  pre-queue\s+40 entered before the start; the workers left 40 of their messages to the serve, decided none$`), out)
	assert.Regexp(t, regexp.MustCompile(`(?m)^  sale winners\s+0 `), out)

	// The sale with holds: 48 users for 10 seats; of the spike's 10 holds 6 are paid
	// for, 2 given up and 2 left to lapse; the 4 seats given back go to the waitlist,
	// whose 34 others are ended at the close.
	holds := out[strings.Index(out, "FIRST_COME WITH HOLDS"):]
	assert.Regexp(t, `^FIRST_COME WITH HOLDS demo-holds-\S+: capacity 10, each seat held 10s until paid for, then a waitlist\n`, holds)
	for _, line := range []string{
		`  new participations\s+48 \(12 duplicates blocked\)`,
		`  held\s+10 = capacity by the spike's claims \(HELD, each with its Hold item\); 38 waitlisted \(WAITLISTED\)`,
		`  confirmed\s+10: 6 of the spike's holds paid for \+ 4 handed on from the waitlist and paid for`,
		`  released\s+2 given up \(Release\): the seat to the waitlist at once`,
		`  expired\s+2 never paid for: the workers' sweep ended them once their 10s ran out`,
		`  handed on\s+4 of the 4 seats given back \(released or expired\) went to the earliest waitlisted, HELD in turn; 0 waiting for no one`,
		`  waitlisted at close\s+34 still waiting when the sale closed: the sweep ended 34 REJECTED_CAPACITY`,
		`  requests by status\s+REJECTED 38 · SUCCEEDED 10`,
		`  seats\s+ok: confirmed 10 ≤ capacity 10; 10 confirmed \+ 0 held \+ 0 given back, not handed on \+ 0 never claimed = 10`,
	} {
		assert.Regexp(t, `(?m)^`+line+`$`, holds)
	}
	assert.NotContains(t, holds, "too late")
	assert.Regexp(t, `(?m)^holds +clicks 60/60 · held 10 · `, errOut, "its progress")
	// The event's CONFIG is read once per client and cache period, so its GetItem
	// share may round to nothing and is then not printed.
	assert.Regexp(t, regexp.MustCompile(`(?m)^  per new participation\s+3\.\d\d calls \((GetItem 0\.\d\d \+ )?PutItem 2\.00 \+ UpdateItem 1\.00\)`), out)
	assert.Contains(t, out, "fairness")
	// The place in line the waiting users were told, against the truth. So small a
	// spike may leave no poll 50 or more from the front: then it says so.
	for _, line := range []string{
		`  place in line\s+as the waiting users polled it, against what happened:`,
		`    polls of the line\s+[\d,]+ GetRequest calls by users waiting \(20 every 250ms, spread over the line\), [\d,]+ told a place in line(; per poll: DynamoDB calls [\d.]+ \(GetItem [\d.]+( \+ Query [\d.]+)?\) · [\d.]+ RCU)?`,
		`    position told\s+(off by [\d.]+% median, [\d.]+% p90 of the true number ahead, over [\d,]+ polls(; a request's first answer: [\d.]+% median, [\d.]+% p90, over [\d,]+)?|not compared: no poll had 50 or more requests truly ahead) ` +
			`\(fewer than 50 ahead are left out: near the front a few requests either way are a large share\)`,
		`    wait told\s+(off by [\d.]+% median, [\d.]+% p90 of the true wait \(until a worker finished the request\), over [\d,]+ of those polls|not compared: no poll with 50 or more ahead was told a wait)(; [\d,]+ told no wait: no rate measured yet)?`,
		`    line\s+peak [\d,]+ requests? waiting at \+\S+ · the workers finished [\d.]+ requests/s on average · ` +
			`(no line to drain seen by a poll|at the deepest line a poll saw \(\+\S+: [\d,]+ requests? waiting, told [\d,]+ ahead\) the drain time told was \S+, it took \S+)`,
	} {
		assert.Regexp(t, `(?m)^`+line+`$`, out)
	}
	verdict := `(every promise held|the promises held; [\d,]+ inversions? of queue order, which processing order allows and this report counts \(a ranked admission, -ranked, decides by rank\))`
	assert.Regexp(t, `(?m)^verdict: `+verdict+`$`, out)

	// Progress on stderr, as plain lines: stderr is not a terminal here.
	assert.Contains(t, errOut, "first-come [")
	assert.NotContains(t, errOut, "\r")

	html, err := os.ReadFile(report)
	require.NoError(t, err)
	page := string(html)
	assert.Contains(t, page, "<svg")
	assert.Equal(t, 3, strings.Count(page, "<polyline"), "arrivals, wins, rejections")
	assert.Regexp(t, `<p class="verdict ok">`+verdict+`[^<]*</p>`, page)
	assert.Regexp(t, `On DynamoDB this event would throttle above about [\d,]+ clicks/s: each new participation writes [\d.]+ units to one partition key \(GSI2:EVENT#demo-first-come-\S+\)`, page)
	assert.Regexp(t, `<h2>First come with holds: demo-holds-\S+</h2>`, page)
	assert.Contains(t, page, "<tr><td>seats</td><td>ok: confirmed 10 ≤ capacity 10;")
	assert.Contains(t, page, "<tr><td>waitlisted at close</td><td>34 still waiting")
	assert.Contains(t, page, "<tr><td>place in line: position told</td><td>")
	assert.NotRegexp(t, `(?i)(src|href)\s*=`, strings.Replace(page, `href="demo-request-page.html"`, "", 1),
		"self-contained: no external assets, one link to the request page beside it")

	// The page of a request of the sale with holds, as its user saw it while it was
	// HELD: named in the text report, saved beside the HTML report and linked from it.
	section := regexp.MustCompile(`(?m)^  request page\s+what user-\d+ saw of request (\S+) while it was HELD \(GET /requests/\{requestId\}/page\):\n` +
		`    heading\s+(.+)\n    main line\s+(.+)\n    page\s+beside the HTML report, as (.+)$`).FindStringSubmatch(holds)
	require.NotNil(t, section, "the request page's section:\n%s", holds)
	requestID, heading, line := section[1], section[2], section[3]
	assert.Equal(t, "A seat is held for you", heading)
	assert.Regexp(t, `^Pay by .+\. .+ left\.$`, line, "when to pay, and the time left")
	saved := filepath.Join(filepath.Dir(report), "demo-request-page.html")
	assert.Equal(t, saved, section[4])
	assert.Regexp(t, `<p class="request-page">What the user of request <code>`+regexp.QuoteMeta(requestID)+`</code> saw while it was HELD: `+
		`<a href="demo-request-page.html">A seat is held for you</a> “`+regexp.QuoteMeta(line)+`”`, page)
	requestPage, err := os.ReadFile(saved)
	require.NoError(t, err)
	gotHeading, gotLine := pageWords(string(requestPage))
	assert.Contains(t, strings.ToLower(gotHeading), "held", "the page of a held seat")
	assert.Equal(t, line, gotLine)
	assert.Contains(t, string(requestPage), requestID)
	assert.Contains(t, string(requestPage), "https://shop.example/pay/"+requestID, "its payment link")
	assert.Contains(t, errOut, "the page of request "+requestID+" written to "+saved)
}

// The verdict holds the report to what the library promises: inversions of queue
// order are named, never promised away, and fail it only in a ranked admission.
func TestDemoVerdictNamesInversions(t *testing.T) {
	t.Parallel()
	report := func(inversions int, ranked bool) *demoReport {
		return &demoReport{FirstCome: &firstComeReport{Winners: 5, ExpectedWinners: 5, Inversions: inversions, LateWinners: min(inversions, 1), Ranked: ranked}}
	}
	assert.Equal(t, "every promise held", report(0, false).verdict())
	assert.NoError(t, report(0, true).failure())

	standard := report(3, false)
	assert.NoError(t, standard.failure(), "processing order promises no order")
	assert.NotContains(t, standard.verdict(), "every promise held")
	assert.Contains(t, standard.verdict(), "3 inversions of queue order, which processing order allows")
	fifo := report(3, false)
	fifo.FirstCome.StrictOrder = true
	assert.NoError(t, fifo.failure(), "a FIFO queue keeps send order, not queuedAt's: no promise either")

	// The fairness line counts the losers and the winners of the same pairs: three
	// losers queued before one winner.
	assert.Equal(t, "3 inversions: requests rejected while one queued up to 5ms later won a seat; "+
		"1 late winner queued after a refused request, up to 5ms later; 2 REJECTED_LATE (passed unseen by the ranked admission, in neither count)",
		clikit.FormatFairness(asyncevent.Fairness{Inversions: 3, MaxGap: 5 * time.Millisecond, LateWinners: 1, LateWinnerMaxGap: 5 * time.Millisecond, Late: 2}))

	strict := report(1, true)
	require.Error(t, strict.failure())
	assert.Contains(t, strict.verdict(), "1 late winners in a ranked admission, which promises none")
	var page bytes.Buffer
	require.NoError(t, renderHTML(&page, strict))
	assert.Contains(t, page.String(), `<p class="verdict bad">`)
}

func TestDemoJSON(t *testing.T) {
	t.Parallel()
	f := clikittest.New(asynceventtest.Endpoint(t), asynceventtest.NewTable(t).TableName())
	var rep demoReport
	f.JSON(t, &rep, &Options{}, "-capacity", "5", "-submits", "60", "-clients", "4", "-workers", "2",
		"-holds-capacity", "4", "-holds-submits", "30", "-holds-pay", "0.5", "-holds-release", "0.25",
		"-prequeue-seats", "8", "-prequeue-entries", "5", "-prequeue-sale", "6",
		"-lottery-entries", "30", "-lottery-winners", "3")
	p := rep.Prequeue
	require.NotNil(t, p)
	assert.True(t, p.Verified, p.Verification)
	assert.Equal(t, 5, p.Winners, "every entry of a pre-queue smaller than the seats")
	assert.Equal(t, 3, p.SaleWinners, "the seats it left, to the sale")
	assert.Equal(t, map[asyncevent.Status]int{"SUCCEEDED": 8, "REJECTED": 3}, p.Stats.ByStatus)
	fc := rep.FirstCome
	require.NotNil(t, fc)
	assert.Equal(t, 5, fc.Winners)
	assert.Equal(t, 5, fc.ExpectedWinners)
	assert.Equal(t, 48, fc.NewParticipations)
	assert.Equal(t, 12, fc.DuplicatesBlocked)
	assert.Equal(t, 0, fc.IngestErrors)
	assert.Equal(t, map[asyncevent.Status]int{"SUCCEEDED": 5, "REJECTED": 43}, fc.Stats.ByStatus)
	assert.Equal(t, fc.Stats.Fairness.Inversions, fc.Inversions)
	assert.Equal(t, fc.Stats.Fairness.LateWinners, fc.LateWinners)
	assert.Equal(t, fc.Inversions == 0, fc.LateWinners == 0, "the losers and the winners of the same pairs: zero together")
	assert.Zero(t, fc.PerParticipation.ByCall["TransactWriteItems"])
	assert.Equal(t, 2.0, fc.PerParticipation.ByCall["PutItem"])
	assert.Equal(t, 1.0, fc.PerParticipation.ByCall["UpdateItem"])
	assert.Equal(t, 1.0, fc.PerParticipation.QueueSends)
	// A repeat click is answered from the ingest client's cache once the first is
	// queued, else by the lock's one failed put.
	assert.LessOrEqual(t, fc.PerDuplicate.ByCall["PutItem"], 1.0)
	assert.Zero(t, fc.PerDuplicate.ByCall["TransactWriteItems"])
	assert.GreaterOrEqual(t, fc.CapacityWrites, 5)
	assert.Equal(t, 48, fc.Messages)
	assert.Equal(t, "GSI2:EVENT#"+fc.EventID, fc.Heat.HottestKey)
	assert.Equal(t, 48, fc.Heat.Participations)
	assert.Equal(t, 5, fc.Heat.Winners)
	assert.InDelta(t, 1000/fc.Heat.HottestWCUPerParticipation, fc.Heat.CeilingParticipationsPerSec, 1e-6)
	assert.Positive(t, fc.Heat.CeilingWinnersPerSec)
	// The users' polls of their place in line, and the line from the event's progress.
	require.NotNil(t, fc.Line)
	assert.Equal(t, 20, fc.Line.PollsPerTick)
	assert.Equal(t, 250.0, fc.Line.PollEveryMs)
	assert.Equal(t, 50, fc.Line.MinAhead)
	assert.LessOrEqual(t, fc.Line.Placed, fc.Line.Polls)
	assert.Zero(t, fc.Line.PollErrors)
	assert.LessOrEqual(t, fc.Line.PeakDepth, int64(48))
	assert.NotNil(t, fc.Stats.Queue, "a first-come event's line, in its statistics")

	// 24 users for 4 seats: 2 holds paid for, 1 given up, 1 lapsed; its seat and the
	// given-up one went to the first 2 of the 20 waitlisted, who paid.
	h := rep.Holds
	require.NotNil(t, h)
	assert.Equal(t, 10.0, h.HoldForSeconds)
	assert.Equal(t, 24, h.NewParticipations)
	assert.Equal(t, 4, h.Held)
	assert.Equal(t, 4, h.ExpectedHeld)
	assert.Equal(t, 20, h.Waitlisted)
	assert.Equal(t, 2, h.Paid)
	assert.Equal(t, 1, h.Released)
	assert.Equal(t, 1, h.Lapsed)
	assert.Equal(t, 1, h.Expired, "by the workers' sweep")
	assert.Equal(t, int64(2), h.SeatsReturned)
	assert.Equal(t, int64(2), h.SeatsServed)
	assert.Zero(t, h.SeatsWaiting)
	assert.Equal(t, 2, h.ServedPaid)
	assert.Equal(t, 4, h.Confirmed)
	assert.LessOrEqual(t, h.Confirmed, h.Capacity)
	assert.Zero(t, h.HeldLeft)
	assert.Equal(t, 18, h.WaitlistedLeft)
	assert.Equal(t, 18, h.ClosedWaitlist)
	assert.Zero(t, h.LateConfirms+h.LateReleases)
	assert.Equal(t, map[asyncevent.Status]int{"SUCCEEDED": 4, "REJECTED": 20}, h.Stats.ByStatus)
	assert.Equal(t, map[asyncevent.ResultCode]int{"SUCCESS": 4, "REJECTED_RELEASED": 1, "REJECTED_HOLD_EXPIRED": 1, "REJECTED_CAPACITY": 18}, h.Stats.ByResultCode)
	// The page a user saw of their HELD request, not saved without -report.
	require.NotNil(t, h.Page)
	assert.Equal(t, asyncevent.StatusHeld, h.Page.Status)
	assert.Regexp(t, `^user-\d+$`, h.Page.UserID)
	assert.NotEmpty(t, h.Page.RequestID)
	assert.Equal(t, "A seat is held for you", h.Page.Heading)
	assert.Contains(t, h.Page.Line, "Pay by ")
	assert.Empty(t, h.Page.File)

	l := rep.Lottery
	require.NotNil(t, l)
	assert.True(t, l.Verified, l.Verification)
	assert.Equal(t, 3, l.Winners)
	assert.Equal(t, 30, l.EntryCount)
	assert.Equal(t, map[asyncevent.Status]int{"SUCCEEDED": 3, "REJECTED": 27}, l.Stats.ByStatus)
	assert.NotEmpty(t, l.Seed)
}

func TestDemoWithFewerUsersThanSeats(t *testing.T) {
	t.Parallel()
	f := clikittest.New(asynceventtest.Endpoint(t), asynceventtest.NewTable(t).TableName())
	out := f.OK(t, &Options{}, "-capacity", "50", "-submits", "20", "-clients", "3", "-workers", "2", "-skip-lottery", "-skip-holds", "-skip-prequeue")
	assert.Regexp(t, regexp.MustCompile(`(?m)^  winners\s+16 = every participant, fewer than the capacity`), out)
	assert.NotContains(t, out, "LOTTERY")
	assert.NotContains(t, out, "HOLDS")
}

func TestDemoOnSQS(t *testing.T) {
	t.Parallel()
	f := clikittest.New(asynceventtest.Endpoint(t), asynceventtest.NewTable(t).TableName())
	out := f.OK(t, &Options{}, "-capacity", "5", "-submits", "40", "-clients", "4", "-workers", "2", "-skip-lottery", "-skip-holds", "-skip-prequeue",
		"-sqs-endpoint", asynceventtest.SQSEndpoint(t))
	assert.Regexp(t, regexp.MustCompile(`(?m)^  winners\s+5 = capacity`), out)
	assert.Contains(t, out, "SQS queue http")
}

// The sale with holds fails the report when more seats were confirmed than there are,
// or when its seats do not add up to the capacity.
func TestDemoHoldsVerdict(t *testing.T) {
	t.Parallel()
	sale := func(confirmed, held int, waiting, remaining int64) *demoReport {
		return &demoReport{FirstCome: &firstComeReport{Winners: 5, ExpectedWinners: 5}, Holds: &holdsReport{
			Capacity: 10, Held: 10, ExpectedHeld: 10, Confirmed: confirmed, HeldLeft: held, SeatsWaiting: waiting, CapacityRemaining: remaining,
		}}
	}
	ok := sale(7, 1, 2, 0)
	assert.NoError(t, ok.failure())
	assert.Contains(t, ok.Holds.seatsCheck(), "ok: confirmed 7 ≤ capacity 10; 7 confirmed + 1 held + 2 given back, not handed on + 0 never claimed = 10")

	over := sale(11, 0, 0, 0)
	require.Error(t, over.failure())
	assert.Contains(t, over.verdict(), "holds: 11 confirmed, more than the 10 seats")
	assert.True(t, strings.HasPrefix(over.Holds.seatsCheck(), "WRONG: confirmed 11 ≤ capacity 10"))

	lost := sale(7, 0, 2, 0)
	assert.ErrorContains(t, lost.failure(), "holds: the seats add up to 9, not the capacity 10")
	var page bytes.Buffer
	require.NoError(t, renderHTML(&page, lost))
	assert.Contains(t, page.String(), `<p class="verdict bad">`)
	assert.Contains(t, page.String(), "<h2>First come with holds: ")
}
