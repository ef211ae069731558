package demo

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/internal/metered"
)

// knownLine is a line whose truth is known: 200 requests queued 10ms apart from t0,
// finished in queue order 50ms apart from t0+5s.
func knownLine(t0 time.Time) (*lineWatch, []string) {
	l := newLineWatch(nil, "ev")
	ids := make([]string, 200)
	for i := range ids {
		ids[i] = fmt.Sprintf("req-%03d", i)
		queued := asyncevent.MillisOf(t0.Add(time.Duration(i) * 10 * time.Millisecond))
		l.queued(asyncevent.Participation{RequestID: ids[i], Request: &asyncevent.Request{RequestID: ids[i], QueuedAt: queued}})
	}
	for i, id := range ids {
		l.finishedAt[id] = t0.Add(5*time.Second + time.Duration(i)*50*time.Millisecond)
	}
	return l, ids
}

// The report holds each answer against the truth: the requests queued before the
// poll's that were unfinished when it was answered, and the time until its own was
// finished; the polls near the front are left out.
func TestLineReportAgainstTheTruth(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	l, ids := knownLine(t0)
	at49, at5, at6 := t0.Add(4900*time.Millisecond), t0.Add(5*time.Second), t0.Add(6*time.Second)
	l.calls = 4
	l.polls = []linePoll{
		// At +4.9s no request is finished: 150 ahead, and its own is finished 7.6s
		// later. Told 10% too many and a wait 20% too short.
		{requestID: ids[150], at: at49, first: true, told: asyncevent.QueueEstimate{Ahead: 165, Wait: 6080 * time.Millisecond, Rate: 25}},
		// At +6s 21 are finished (the 21st at +6s exactly): 79 ahead. Told right, with
		// no rate yet: no wait.
		{requestID: ids[100], at: at6, told: asyncevent.QueueEstimate{Ahead: 79}},
		// 9 ahead: left out.
		{requestID: ids[30], at: at6, told: asyncevent.QueueEstimate{Ahead: 20, Wait: time.Second, Rate: 20}},
	}
	l.samples = []lineSample{
		{at: t0.Add(4 * time.Second), stats: asyncevent.QueueStats{Depth: 150}}, // no rate: no drain time told
		{at: at5, stats: asyncevent.QueueStats{Depth: 190, Rate: 20, DrainTime: 9500 * time.Millisecond}},
		{at: at6, stats: asyncevent.QueueStats{Depth: 150, Rate: 20, DrainTime: 7500 * time.Millisecond}},
	}
	l.cost = metered.Counts{Calls: map[string]int{"GetItem": 4, "Query": 1}, RCU: 2.5}
	series := &asyncevent.QueueStats{Series: []asyncevent.QueuePoint{
		{At: asyncevent.MillisOf(t0.Add(time.Second)), Depth: 100}, {At: asyncevent.MillisOf(t0.Add(2 * time.Second)), Depth: 200},
		{At: asyncevent.MillisOf(t0.Add(3 * time.Second)), Depth: 180, Rate: 20}, {At: asyncevent.MillisOf(t0.Add(4 * time.Second)), Depth: 100, Rate: 80},
		{At: asyncevent.MillisOf(t0.Add(5 * time.Second)), Rate: 100}, {At: asyncevent.MillisOf(t0.Add(6 * time.Second))},
	}}

	r := l.report(series, t0)
	assert.Equal(t, 4, r.Polls)
	assert.Equal(t, 3, r.Placed)
	assert.Equal(t, errorSpread{Count: 2, P50: 0, P90: 0.1}, roundSpread(r.Ahead))
	assert.Equal(t, errorSpread{Count: 1, P50: 0.2, P90: 0.2}, roundSpread(r.Wait))
	assert.Equal(t, errorSpread{Count: 1, P50: 0.1, P90: 0.1}, roundSpread(r.FirstAhead), "a request's first answer")
	assert.Equal(t, 1, r.WaitUnknown)
	assert.Equal(t, int64(200), r.PeakDepth)
	assert.Equal(t, 2.0, r.PeakAtSeconds)
	assert.InDelta(t, 200.0/3, r.MeanRatePerSec, 1e-9, "over the seconds from the first with a rate to the last")
	// At +5s all 200 were queued and none but the first finished; the last was
	// finished at +14.95s.
	assert.Equal(t, int64(199), r.DrainDepth)
	assert.Equal(t, int64(190), r.DrainDepthTold)
	assert.Equal(t, 9.5, r.DrainToldSeconds)
	assert.InDelta(t, 9.95, r.DrainTookSeconds, 1e-9)
	assert.Equal(t, 1.25, r.PerPoll.Calls)
	assert.Equal(t, 0.625, r.PerPoll.RCU)

	rows := r.rows()
	require.Len(t, rows, 4)
	assert.Equal(t, row{"polls of the line", "4 GetRequest calls by users waiting (20 every 250ms, spread over the line), 3 told a place in line; " +
		"per poll: DynamoDB calls 1.25 (GetItem 1.00 + Query 0.25) · 0.62 RCU"}, rows[0])
	assert.Equal(t, row{"position told", "off by 0.0% median, 10.0% p90 of the true number ahead, over 2 polls; " +
		"a request's first answer: 10.0% median, 10.0% p90, over 1 (fewer than 50 ahead are left out: near the front a few requests either way are a large share)"}, rows[1])
	assert.Equal(t, row{"wait told", "off by 20.0% median, 20.0% p90 of the true wait (until a worker finished the request), over 1 of those polls; " +
		"1 told no wait: no rate measured yet"}, rows[2])
	assert.Equal(t, row{"line", "peak 200 requests waiting at +2s · the workers finished 66.7 requests/s on average · " +
		"at the deepest line a poll saw (+5s: 199 requests waiting, told 190 ahead) the drain time told was 9.5s, it took 9.95s"}, rows[3])
}

func roundSpread(s errorSpread) errorSpread {
	round := func(f float64) float64 { return float64(int(f*1e6+0.5)) / 1e6 }
	return errorSpread{Count: s.Count, P50: round(s.P50), P90: round(s.P90)}
}

// A spike the workers keep up with leaves no poll far enough from the front: the
// report says so rather than print figures of nothing.
func TestLineReportWithoutALine(t *testing.T) {
	t.Parallel()
	r := newLineWatch(nil, "ev").report(nil, time.Now())
	assert.Equal(t, []row{
		{"polls of the line", "0 GetRequest calls by users waiting (20 every 250ms, spread over the line), 0 told a place in line"},
		{"position told", "not compared: no poll had 50 or more requests truly ahead (fewer than 50 ahead are left out: near the front a few requests either way are a large share)"},
		{"wait told", "not compared: no poll with 50 or more ahead was told a wait"},
		{"line", "peak 0 requests waiting at +0s · the workers finished 0.00 requests/s on average · no line to drain seen by a poll"},
	}, r.rows())
}

// The users who poll are spread over those still waiting, in the order they joined.
func TestLinePollersSpreadOverTheWaiting(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	l, ids := knownLine(t0)
	clear(l.finishedAt)
	for _, id := range ids[:100] {
		l.finish(asyncevent.Outcome{RequestID: id})
	}
	picked := l.waiting(4)
	assert.Equal(t, []string{ids[112], ids[137], ids[162], ids[187]}, picked)
	assert.Len(t, l.waiting(500), 100, "all of them, when fewer wait")
}
