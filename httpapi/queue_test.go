package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

// The line of the tests: a spike of clicks, one every arrivalGap, while the
// workers finish perTick requests every tick from the first click on, on a clock
// that moves only when told, so that the progress the estimates read is exactly
// what happened (nothing is processed while a poll reads).
const (
	arrivalGap    = 5 * time.Millisecond
	tick          = 100 * time.Millisecond
	perTick       = 3
	workersRate   = perTick * float64(time.Second/tick) // requests a second
	progressEvery = 200 * time.Millisecond
)

// withProgress counts the line's progress often and keeps what a poll read
// briefly, on clock's time.
func withProgress(clock *asynceventtest.Clock) envOption {
	return func(o *asyncevent.Options, so *ServerOptions) {
		withClock(clock)(o, so)
		o.ProgressEvery, o.ProgressCacheTTL = progressEvery, tick
	}
}

// queueLine is a FIRST_COME event "line" whose requests wait in line.
type queueLine struct {
	*env
	clock *asynceventtest.Clock
	ids   []string          // request IDs, in queue order
	users map[string]string // request ID → user
	proc  *asyncevent.Processor
	done  int // requests processed
}

// newQueueLine makes the line of n clicks through the API, the workers at their
// pace meanwhile: n faster than they go, it is left with most of them.
func newQueueLine(t *testing.T, e *env, clock *asynceventtest.Clock, n int) *queueLine {
	t.Helper()
	e.createFirstCome("line", int64(n/2))
	l := &queueLine{env: e, clock: clock, users: map[string]string{}, proc: asyncevent.NewProcessor(e.client, asyncevent.ProcessOptions{})}
	for i := range n {
		if i > 0 && i%int(tick/arrivalGap) == 0 {
			l.work()
		}
		user := fmt.Sprintf("user-%03d", i)
		_, p := e.participate("line", user)
		l.ids = append(l.ids, p.RequestID)
		l.users[p.RequestID] = user
		clock.Advance(arrivalGap)
	}
	require.NoError(t, e.client.FlushProgress(context.Background()))
	return l
}

// step moves the clock a tick and lets the workers work.
func (l *queueLine) step() {
	l.t.Helper()
	l.clock.Advance(tick)
	l.work()
}

// work processes the next perTick requests in queue order (the memory queue is
// FIFO) and writes their progress.
func (l *queueLine) work() {
	l.t.Helper()
	ctx := context.Background()
	ds, err := l.queue.Receive(ctx, perTick, 0, time.Minute)
	require.NoError(l.t, err)
	require.Empty(l.t, asynceventtest.Process(ctx, l.proc, ds))
	var receipts []string
	for _, d := range ds {
		receipts = append(receipts, d.Receipt)
	}
	require.NoError(l.t, l.queue.Delete(ctx, receipts...))
	require.NoError(l.t, l.client.FlushProgress(ctx))
	l.done += len(ds)
}

// poll is GET /requests/{id} as its user, at the clock's time.
func (l *queueLine) poll(id string) (RequestView, map[string]any) {
	l.t.Helper()
	r := l.do("GET", "/requests/"+id, token(l.t, l.users[id], RoleUser), nil)
	require.Equal(l.t, http.StatusOK, r.status, "body: %s", r.body)
	return decode[RequestView](l.t, r), decode[map[string]any](l.t, r)
}

// stats is the event's stats' queue, required present.
func (l *queueLine) stats() *QueueStatsView {
	l.t.Helper()
	r := l.do("GET", "/admin/events/line/stats", l.admin(), nil)
	require.Equal(l.t, http.StatusOK, r.status, "body: %s", r.body)
	q := decode[StatsView](l.t, r).Queue
	require.NotNil(l.t, q, "a FIRST_COME event's stats have its queue: %s", r.body)
	return q
}

// linePoll is what a user's poll said at a moment.
type linePoll struct {
	id   string
	pos  int // 0-based, in queue order
	at   time.Time
	view RequestView
}

// TestPlaceInLineOverHTTP: 200 users click in a second while the workers finish 30
// requests a second in queue order; five users, spread over the line, then poll
// their requests until it drains. Once the workers' rate is measured, the place
// each is told is within 10% of the truth read from the table after (the requests
// queued before it and finished after the poll), and its wait within 20% (and a
// second) of the time it waited; a later request is always further back; a request
// a worker reached has no place any more. A LOTTERY entry has none.
func TestPlaceInLineOverHTTP(t *testing.T) {
	t.Parallel()
	clock := asynceventtest.NewClock(time.Now())
	l := newQueueLine(t, newEnv(t, withProgress(clock)), clock, 200)
	watched := []int{39, 79, 119, 159, 199}

	var polls []linePoll
	for round := 0; l.done < len(l.ids); round++ {
		require.Less(t, round, 2*len(l.ids)/perTick, "the line does not drain")
		if round > 0 {
			l.step()
		}
		var prev *PlaceView
		for _, pos := range watched {
			view, raw := l.poll(l.ids[pos])
			if view.Status == asyncevent.StatusQueued {
				require.NotNil(t, view.Queue, "round %d, #%d: a QUEUED request has its place: %v", round, pos, raw)
				assert.Contains(t, raw["queue"], "asOf")
				if prev != nil && prev.Ahead > 0 {
					assert.Greater(t, view.Queue.Ahead, prev.Ahead, "round %d, #%d: a later request is further back", round, pos)
				}
				prev = view.Queue
				polls = append(polls, linePoll{id: view.RequestID, pos: pos, at: clock.Now(), view: view})
			} else {
				assert.NotContains(t, raw, "queue", "round %d, #%d: %s has no place in line", round, pos, view.Status)
			}
		}
	}
	checkPolls(t, l.finished(), polls)

	// Every request is final: no place in line, for its user nor an admin.
	for _, pos := range watched {
		_, raw := l.poll(l.ids[pos])
		assert.NotContains(t, raw, "queue", "#%d is final", pos)
		r := l.do("GET", "/admin/requests/"+l.ids[pos], l.admin(), nil)
		require.Equal(t, http.StatusOK, r.status)
		assert.NotContains(t, decode[map[string]any](t, r), "queue")
	}

	// A LOTTERY entry waits for the draw, not for a place: neither it nor the
	// event's stats have a queue.
	r := l.do("POST", "/admin/events", l.admin(), map[string]any{"eventId": "draw", "eventType": "LOTTERY", "winnerCount": 1,
		"lotteryCutoffAt": rfc(clock.Now().Add(time.Hour))})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	_, entry := l.participate("draw", "lucky")
	r = l.do("GET", "/requests/"+entry.RequestID, token(t, "lucky", RoleUser), nil)
	require.Equal(t, http.StatusOK, r.status)
	assert.NotContains(t, decode[map[string]any](t, r), "queue")
	r = l.do("GET", "/admin/events/draw/stats", l.admin(), nil)
	require.Equal(t, http.StatusOK, r.status)
	assert.NotContains(t, decode[map[string]any](t, r), "queue")
}

// finished is every request of the line as the table holds it, by ID.
func (l *queueLine) finished() map[string]RequestView {
	l.t.Helper()
	all := map[string]RequestView{}
	for _, r := range l.listAll("/admin/events/line/requests?limit=500", l.admin()) {
		require.NotZero(l.t, r.FinishedAt, "%s is final", r.RequestID)
		all[r.RequestID] = r
	}
	require.Len(l.t, all, len(l.ids))
	return all
}

// checkPolls holds each poll to the truth: the requests queued before it that were
// finished after the poll, and the time until its own finish.
func checkPolls(t *testing.T, final map[string]RequestView, polls []linePoll) {
	t.Helper()
	checked := 0
	for _, p := range polls {
		me := final[p.id]
		ahead := 0
		for _, r := range final {
			if r.QueuedAt < me.QueuedAt && asyncevent.EpochMillis(r.FinishedAt).Time().After(p.at) {
				ahead++
			}
		}
		q := p.view.Queue
		if q.WaitSeconds == nil || ahead < 60 {
			// No rate measured yet; or near the front, where what the counts cannot
			// tell (the workers take 3 at once, the arrivals of a tenth of a second
			// are taken as spread evenly over it) is more than 10%.
			continue
		}
		checked++
		waited := asyncevent.EpochMillis(me.FinishedAt).Time().Sub(p.at).Seconds()
		assert.InDelta(t, ahead, q.Ahead, 0.1*float64(ahead), "#%d polled at %v: %d ahead", p.pos, p.at, ahead)
		assert.InDelta(t, waited, float64(*q.WaitSeconds), 0.2*waited+1, "#%d polled at %v: waited %.1f s", p.pos, p.at, waited)
		assert.InDelta(t, workersRate, q.RatePerSecond, 0.1*workersRate, "#%d: the workers' rate", p.pos)
	}
	assert.Greater(t, checked, 30, "polls checked against the truth")
}

// TestQueueStatsOverHTTP: the stats' queue follows the line as it drains: its depth
// is what waits, its rate the workers', its drain time the one at that rate, its
// series second by second from the first click, the spike at its peak; drained,
// its depth and drain time are 0. An event whose workers stopped has no drain time.
func TestQueueStatsOverHTTP(t *testing.T) {
	t.Parallel()
	clock := asynceventtest.NewClock(time.Now())
	l := newQueueLine(t, newEnv(t, withProgress(clock)), clock, 120)
	spikeDone := l.done // finished while the clicks came
	q := l.stats()
	assert.GreaterOrEqual(t, q.Depth, int64(120-spikeDone-perTick), "the spike waits (less what the workers finished lately, as far as the counts tell)")
	assert.LessOrEqual(t, q.Depth, int64(120))
	assert.Equal(t, Timestamp(asyncevent.MillisOf(clock.Now())), q.AsOf)

	for l.done < 90 {
		l.step()
	}
	q = l.stats()
	// The depth may be estimated from counts a second old carried on at the rate:
	// within a fifth of the quarter of the line that waits.
	assert.InDelta(t, 30, q.Depth, 6, "a quarter of the line waits")
	assert.InDelta(t, workersRate, q.RatePerSecond, 0.1*workersRate)
	require.NotNil(t, q.DrainSeconds, "a rate: the drain time is known")
	assert.InDelta(t, float64(q.Depth)/q.RatePerSecond, float64(*q.DrainSeconds), 1)
	require.NotEmpty(t, q.Series)
	peak := int64(0)
	for i, p := range q.Series {
		peak = max(peak, p.Depth)
		if i > 0 {
			assert.Equal(t, time.Second, time.Duration(p.At-q.Series[i-1].At)*time.Millisecond, "a point a second")
		}
	}
	// A point is the end of a whole second, which may come up to a second after the
	// last click.
	assert.LessOrEqual(t, peak, int64(120))
	assert.GreaterOrEqual(t, peak, int64(120-spikeDone-int(workersRate)), "the line's deepest second: the spike, less what the workers finished by then")
	assert.Less(t, q.Series[len(q.Series)-1].Depth, peak, "the line drains")

	for l.done < len(l.ids) {
		l.step()
	}
	// The counts are complete a moment and ProgressEvery after the last request
	// was finished; until then an estimate carries the workers on at their rate.
	clock.Advance(time.Second + progressEvery + tick)
	q = l.stats()
	assert.Zero(t, q.Depth, "drained")
	require.NotNil(t, q.DrainSeconds, "nothing waits: drained now")
	assert.Zero(t, *q.DrainSeconds)
	fastest := 0.0
	for _, p := range q.Series {
		fastest = max(fastest, p.RatePerSecond)
	}
	assert.InDelta(t, workersRate, fastest, 1, "a whole second of steady work finished %v requests", workersRate)

	// No worker takes the clicks of another event: its rate is 0, its drain time
	// unknown.
	l.createFirstCome("stalled", 5)
	for i := range 10 {
		l.participate("stalled", fmt.Sprintf("stuck-%d", i))
	}
	require.NoError(t, l.client.FlushProgress(context.Background()))
	clock.Advance(tick)
	r := l.do("GET", "/admin/events/stalled/stats", l.admin(), nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	stalled := decode[map[string]any](t, r)["queue"]
	require.IsType(t, map[string]any{}, stalled, "body: %s", r.body)
	assert.EqualValues(t, 10, stalled.(map[string]any)["depth"])
	assert.EqualValues(t, 0, stalled.(map[string]any)["ratePerSecond"])
	assert.NotContains(t, stalled, "drainSeconds", "no rate: the drain time is unknown")
}

// TestUIQueuePanel: a FIRST_COME event's page has a Queue panel beside its outcome
// chart: the depth, the rate and the time to drain (what the stats route says),
// and a chart of the depth and the rate second by second; a waiting request's page
// shows its place in line (what its user's poll says), a final one's does not.
func TestUIQueuePanel(t *testing.T) {
	t.Parallel()
	clock := asynceventtest.NewClock(time.Now())
	u := newUIEnv(t, withProgress(clock))
	l := newQueueLine(t, u.env, clock, 90)
	for l.done < 60 {
		l.step()
	}
	u.signIn()
	q := l.stats()
	require.NotNil(t, q.DrainSeconds, "the scenario: the workers' rate is measured")

	body := u.page("line")
	assert.Regexp(t, `(?s)<div class="grid-chart with-queue">\s*<section class="panel" id="chart">.*?</section>\s*<section class="panel" id="queue">`, body,
		"the queue panel is beside the outcome chart")
	panel := regexp.MustCompile(`(?s)<section class="panel" id="queue">.*?</section>`).FindString(body)
	require.NotEmpty(t, panel, "the queue panel")
	assert.Regexp(t, `id="queue-depth">\s*<div class="label">Depth</div>\s*<div class="value">`+strconv.FormatInt(q.Depth, 10)+`</div>`, panel)
	assert.Regexp(t, `id="queue-rate">\s*<div class="label">Rate</div>\s*<div class="value">`+regexp.QuoteMeta(fmtRate(q.RatePerSecond))+` <small>/s</small>`, panel)
	assert.Regexp(t, `id="queue-drain">\s*<div class="label">Time to drain</div>\s*<div class="value">[0-9.]+ m?s</div>`, panel)
	chart := regexp.MustCompile(`(?s)<svg id="queue-chart".*?</svg>`).FindString(panel)
	require.NotEmpty(t, chart, "the queue chart")
	for _, id := range []string{"queue-depth-line", "queue-rate-line"} {
		points := regexp.MustCompile(`id="` + id + `" points="([^"]+)"`).FindStringSubmatch(chart)
		require.NotNil(t, points, id)
		assert.Len(t, strings.Fields(points[1]), max(len(q.Series), 2), "%s: a point a second", id)
	}
	assert.Contains(t, chart, ">Depth (requests waiting)</text>")
	assert.Contains(t, chart, ">Rate (requests finished/s)</text>")
	assert.Regexp(t, `<text class="tick axis-max"[^>]*>100</text>`, chart, "the depth's axis tops at a round 100 over the backlog of 90")

	last := l.ids[len(l.ids)-1]
	polled, _ := l.poll(last)
	require.NotNil(t, polled.Queue)
	waiting := u.get("/admin/ui/requests/" + last)
	require.Equal(t, http.StatusOK, waiting.status, "body: %s", waiting.body)
	assert.Regexp(t, `id="place-ahead">\s*<div class="label">Ahead in line</div>\s*<div class="value">`+strconv.FormatInt(polled.Queue.Ahead, 10)+`</div>`, string(waiting.body))
	assert.Regexp(t, `id="place-wait">\s*<div class="label">Turn in about</div>\s*<div class="value">[0-9.]+ m?s</div>`, string(waiting.body))
	final := u.get("/admin/ui/requests/" + l.ids[0])
	require.Equal(t, http.StatusOK, final.status)
	assert.NotContains(t, string(final.body), `id="place-in-line"`)
}

// TestPlaceViewJSON: the wait and the drain time are absent while no worker
// finished a request lately, and rounded up to whole seconds.
func TestPlaceViewJSON(t *testing.T) {
	t.Parallel()
	at := time.UnixMilli(1_800_000_000_000)
	for name, tc := range map[string]struct {
		q    asyncevent.QueueEstimate
		want string
	}{
		"no rate yet": {asyncevent.QueueEstimate{Ahead: 12, AsOf: asyncevent.MillisOf(at)},
			`{"ahead":12,"ratePerSecond":0,"asOf":"2027-01-15T08:00:00.000Z"}`},
		"a rate": {asyncevent.QueueEstimate{Ahead: 12, Rate: 5, Wait: 2400 * time.Millisecond, AsOf: asyncevent.MillisOf(at)},
			`{"ahead":12,"waitSeconds":3,"ratePerSecond":5,"asOf":"2027-01-15T08:00:00.000Z"}`},
		"at the front, no rate": {asyncevent.QueueEstimate{AsOf: asyncevent.MillisOf(at)},
			`{"ahead":0,"ratePerSecond":0,"asOf":"2027-01-15T08:00:00.000Z"}`},
		"at the front": {asyncevent.QueueEstimate{Rate: 0.5, AsOf: asyncevent.MillisOf(at)},
			`{"ahead":0,"waitSeconds":0,"ratePerSecond":0.5,"asOf":"2027-01-15T08:00:00.000Z"}`},
	} {
		b, err := json.Marshal(newPlaceView(&tc.q))
		require.NoError(t, err)
		assert.JSONEq(t, tc.want, string(b), name)
	}
	assert.Nil(t, newPlaceView(nil))
	b, err := json.Marshal(newQueueStatsView(&asyncevent.QueueStats{Depth: 7, AsOf: asyncevent.MillisOf(at),
		Series: []asyncevent.QueuePoint{{At: asyncevent.MillisOf(at.Add(-time.Second)), Depth: 7, Rate: 0.5}}}))
	require.NoError(t, err)
	assert.JSONEq(t, `{"depth":7,"ratePerSecond":0,"asOf":"2027-01-15T08:00:00.000Z",
		"series":[{"at":"2027-01-15T07:59:59.000Z","depth":7,"ratePerSecond":0.5}]}`, string(b))
}

// TestLayoutQueueChart: the queue chart has a point a second along time, up to
// maxQueuePoints, each axis topped by a round number; a long series is summed up
// in runs of seconds (the deepest depth, the mean rate), a depth below 0 is drawn
// at 0, and a single second is a flat line across.
func TestLayoutQueueChart(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	series := func(n int) []asyncevent.QueuePoint {
		var s []asyncevent.QueuePoint
		for i := range n {
			s = append(s, asyncevent.QueuePoint{At: asyncevent.MillisOf(at.Add(time.Duration(i+1) * time.Second)), Depth: int64(130 - i), Rate: 1.5})
		}
		return s
	}
	for name, tc := range map[string]struct {
		series   []asyncevent.QueuePoint
		points   int
		ticks    []string
		perPoint string
	}{
		"one second": {series(1), 2, []string{"09:00:01"}, ""},
		"a minute":   {series(60), 60, []string{"09:00:01", "09:00:30", "09:01:00"}, ""},
		"a quarter of an hour": {series(1000), 200, []string{"09:00:05", "09:08:22", "09:16:40"},
			"each point sums up 5 seconds: the deepest, and the mean rate"},
	} {
		c := layoutQueueChart(tc.series)
		require.Len(t, c.Plots, 2, name)
		for _, p := range c.Plots {
			assert.Len(t, strings.Fields(p.Line), tc.points, "%s: %s", name, p.ID)
			assert.Len(t, strings.Fields(p.Area), tc.points+2, "%s: %s closed to the baseline", name, p.ID)
		}
		assert.Equal(t, "200", c.Plots[0].Max, "%s: a depth of 130 under 200", name)
		assert.Equal(t, "2", c.Plots[1].Max, "%s: a rate of 1.5 under 2", name)
		var ticks []string
		for _, tk := range c.Ticks {
			ticks = append(ticks, tk.Label)
		}
		assert.Equal(t, tc.ticks, ticks, name)
		assert.Equal(t, tc.perPoint, c.PerPoint, name)
	}
	c := layoutQueueChart(series(1000))
	assert.Equal(t, "peak 130 requests at 09:00:05", c.Plots[0].Title, "the deepest of the first run")
	last := strings.Fields(c.Plots[0].Line)[199]
	assert.Equal(t, "412.0,104.0", last, "a depth below 0 is drawn on the baseline, at the right end")
	for v, want := range map[float64]float64{0: 1, 0.3: 0.5, 1: 1, 1.5: 2, 3: 5, 7: 10, 90: 100, 120: 200, 1000: 1000, 1001: 2000} {
		assert.InDelta(t, want, niceCeil(v), 1e-9, "niceCeil(%v)", v)
	}
}
