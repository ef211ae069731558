package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/internal/bench"
)

func TestDemoPrintsExactWinnersAndAVerifiedDraw(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	report := filepath.Join(t.TempDir(), "demo.html")
	out, errOut, code := f.run(t, "demo", "-capacity", "20", "-submits", "200", "-clients", "6", "-workers", "3",
		"-lottery-entries", "100", "-lottery-winners", "5", "-report", report, "-seed", "7")
	require.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)

	assert.Regexp(t, regexp.MustCompile(`(?m)^  winners\s+20 = capacity \(capacityRemaining 0\)$`), out)
	assert.Regexp(t, regexp.MustCompile(`(?m)^  new participations\s+160$`), out)
	assert.Regexp(t, regexp.MustCompile(`(?m)^  duplicates blocked\s+40 `), out)
	assert.Regexp(t, regexp.MustCompile(`(?m)^  requests by status\s+REJECTED 140 · SUCCEEDED 20$`), out)
	assert.Regexp(t, regexp.MustCompile(`(?m)^  verification\s+OK: draw of demo-lottery-\S+ verified: 100 entries, 5 winners$`), out)
	// The event's CONFIG is read once per client and cache period, so its GetItem
	// share may round to nothing and is then not printed.
	assert.Regexp(t, regexp.MustCompile(`(?m)^  per new participation\s+3\.\d\d calls \((GetItem 0\.\d\d \+ )?PutItem 2\.00 \+ UpdateItem 1\.00\)`), out)
	assert.Contains(t, out, "fairness")
	verdict := `(every promise held|the promises held; [\d,]+ inversions? of queue order, which a standard queue allows and this report counts \(strict order needs a FIFO queue\))`
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
	assert.NotRegexp(t, `(?i)(src|href)\s*=`, page, "self-contained: no external assets")
}

// The verdict holds the report to what the library promises: inversions of queue
// order are named, never promised away, and fail it only in strict order.
func TestDemoVerdictNamesInversions(t *testing.T) {
	t.Parallel()
	report := func(inversions int, strict bool) *demoReport {
		return &demoReport{FirstCome: &firstComeReport{Winners: 5, ExpectedWinners: 5, Inversions: inversions, StrictOrder: strict}}
	}
	assert.Equal(t, "every promise held", report(0, false).verdict())
	assert.NoError(t, report(0, true).failure())

	standard := report(3, false)
	assert.NoError(t, standard.failure(), "a standard queue promises no order")
	assert.NotContains(t, standard.verdict(), "every promise held")
	assert.Contains(t, standard.verdict(), "3 inversions of queue order, which a standard queue allows")

	strict := report(1, true)
	require.Error(t, strict.failure())
	assert.Contains(t, strict.verdict(), "1 inversion of queue order on a FIFO queue, which promises none")
	var page bytes.Buffer
	require.NoError(t, renderHTML(&page, strict))
	assert.Contains(t, page.String(), `<p class="verdict bad">`)
}

func TestDemoJSON(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var rep demoReport
	f.json(t, &rep, "demo", "-capacity", "5", "-submits", "60", "-clients", "4", "-workers", "2",
		"-lottery-entries", "30", "-lottery-winners", "3")
	fc := rep.FirstCome
	require.NotNil(t, fc)
	assert.Equal(t, 5, fc.Winners)
	assert.Equal(t, 5, fc.ExpectedWinners)
	assert.Equal(t, 48, fc.NewParticipations)
	assert.Equal(t, 12, fc.DuplicatesBlocked)
	assert.Equal(t, 0, fc.IngestErrors)
	assert.Equal(t, map[string]int{"SUCCEEDED": 5, "REJECTED": 43}, fc.Stats.ByStatus)
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

	l := rep.Lottery
	require.NotNil(t, l)
	assert.True(t, l.Verified, l.Verification)
	assert.Equal(t, 3, l.Winners)
	assert.Equal(t, 30, l.EntryCount)
	assert.Equal(t, map[string]int{"SUCCEEDED": 3, "REJECTED": 27}, l.Stats.ByStatus)
	assert.NotEmpty(t, l.Seed)
}

func TestDemoWithFewerUsersThanSeats(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	out := f.ok(t, "demo", "-capacity", "50", "-submits", "20", "-clients", "3", "-workers", "2", "-skip-lottery")
	assert.Regexp(t, regexp.MustCompile(`(?m)^  winners\s+16 = every participant, fewer than the capacity`), out)
	assert.NotContains(t, out, "LOTTERY")
}

func TestDemoOnSQS(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	out := f.ok(t, "demo", "-capacity", "5", "-submits", "40", "-clients", "4", "-workers", "2", "-skip-lottery",
		"-sqs-endpoint", asynceventtest.SQSEndpoint(t))
	assert.Regexp(t, regexp.MustCompile(`(?m)^  winners\s+5 = capacity`), out)
	assert.Contains(t, out, "SQS queue http")
}

func TestBench(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var rep benchOutput
	// 400 participations in each heat run: about 4 for each of the derived layout's
	// 100 index shards, so that their mean is not one click's.
	f.json(t, &rep, "bench", "-rounds", "1", "-n", "12", "-clients", "3", "-workers", "2", "-warmup", "-1", "-heat-participations", "400")
	require.NotNil(t, rep.Report)
	require.Len(t, rep.Report.Flows, 6, "with the sold-out flow at 99 capacity shards")
	assert.Equal(t, bench.FlowIngestNew, rep.Report.Flows[0].Name)
	for _, fl := range rep.Report.Flows {
		assert.Positive(t, fl.Library.Median, fl.Name)
		assert.Positive(t, fl.Baseline.Median, fl.Name)
		assert.Positive(t, fl.Ratio, fl.Name)
	}
	require.Len(t, rep.Acceptance, 9)
	byName := map[string]check{}
	for _, c := range rep.Acceptance {
		byName[c.Name] = c
	}
	assert.True(t, byName["DynamoDB calls per new participation = 3, no transaction"].OK)
	assert.True(t, byName["DynamoDB calls per duplicate click = 1, no read units"].OK)
	assert.Contains(t, byName, "DynamoDB calls per first-come winner < 3, WCU ≤ 7 (the raw flow's)")
	assert.Contains(t, byName, "DynamoDB calls per loser at C = 99 once sold out, on a new worker ≤ 2")
	assert.True(t, byName["DynamoDB calls per message once the worker knows it is sold out = 2 (a look at the home shard, one write), no CAPACITY write"].OK)
	assert.NotEmpty(t, rep.Machine)
	require.Len(t, rep.Heat, 2, "the default layout and the one derived for 20,000 clicks/s")
	h := rep.Heat[0]
	assert.Equal(t, "default", h.Layout)
	assert.Equal(t, 400, h.Participations)
	assert.Equal(t, 100, h.Winners, "a quarter")
	assert.Regexp(t, `^GSI2:EVENT#\S+-heat-default$`, h.HottestKey)
	// GSI2: the put, QUEUED and the final status, 1 WCU each (a claim that goes on
	// under a lease writes PROCESSING too).
	assert.InDelta(t, 3.0, h.HottestWCUPerParticipation, 0.25)
	// One capacity item, 1 WCU a claim and no transaction: its units bound it.
	assert.Equal(t, "units", h.WinnersBound)
	assert.Equal(t, h.CapacityClaimsPerSecPerShard, h.CeilingWinnersPerSec)
	assert.Greater(t, h.CeilingWinnersPerSec, 500.0)
	assert.LessOrEqual(t, h.CeilingWinnersPerSec, 1000.0)
	d := rep.Heat[1]
	assert.Equal(t, "derived-20000", d.Layout)
	k, c := asyncevent.ShardsFor(20000, 0)
	assert.Equal(t, k, d.IndexShards)
	assert.Equal(t, c, d.CapacityShards)
	assert.GreaterOrEqual(t, d.CeilingParticipationsPerSec, 20000.0)
	assert.GreaterOrEqual(t, d.CeilingWinnersPerSec, 5000.0)
	assert.Equal(t, "units", d.WinnersBound)

	out := f.ok(t, "bench", "-rounds", "1", "-n", "6", "-clients", "2", "-workers", "2", "-warmup", "-1")
	assert.Contains(t, out, "library/baseline")
	assert.Contains(t, out, "acceptance:")
	assert.Regexp(t, `(?m)^  ceiling: about [\d,]+ participations/s per event \(GSI2:EVENT#\S+ at [\d.]+ WCU per participation\), [\d,]+ winners/s \(1 capacity item × [\d,]+ claims/s, by their units \([\d.]+ WCU per claim on table:EVENT#\S+; no transaction holds a capacity item\)\)$`, out)
	var decoded map[string]any
	assert.Error(t, json.Unmarshal([]byte(out), &decoded), "human output by default")
}
