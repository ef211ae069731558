package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/internal/metered"
)

// FlowWorkerWinRanked is FlowWorkerWin on a ranked event (EventSettings.Admission
// AdmissionRanked, the default RankSettle) on the library's side: the same N seats
// and N messages, queued before the flow and settled (RankSettle passed since the
// last was queued, as FlowWorkerWin's were queued seconds before), the same Workers.
// The baseline's side is the raw winner flow of FlowWorkerWin again, on an event of
// its own: the raw SDK has no ranked mode.
const FlowWorkerWinRanked = "worker, ranked first-come winner"

// The latency run's defaults (Config.LatencyClicks, LatencyRate).
const (
	// DefaultLatencyRate is the clicks a second of the latency run: a rate a
	// worker of Workers keeps up with in the standard mode on a DynamoDB Local of
	// two cores, so that the latency is the decision's, not a backlog's.
	DefaultLatencyRate = 100
)

// rankTick is the ranked admission's tick (asyncevent's rankTick): how often it
// reads its line and its record.
const rankTick = 25 * time.Millisecond

// Ranked is what Run measured of a ranked event, on the library against its own
// standard mode and against the baseline.
type Ranked struct {
	// Flow is FlowWorkerWinRanked on both sides; its Ratio is the library's ranked
	// winners/s over the baseline's raw winners/s.
	Flow Flow `json:"flow"`
	// VersusStandard is the median over the rounds of the library's ranked
	// winners/s ÷ its standard winners/s (FlowWorkerWin), the two measured in the
	// same round.
	VersusStandard float64 `json:"versusStandard"`
	// StandardMedian is the library's FlowWorkerWin winners/s (median of rounds).
	StandardMedian float64 `json:"standardMedianOpsPerSec"`
	// DecidedPerSec is the ranked winners over the time from the flow's start to
	// the last one's decision (its finishedAt; the flow's ops/s wait for the last
	// message's acknowledgement too), median of rounds; StandardDecidedPerSec the
	// same of FlowWorkerWin on the library; VersusStandardDecided the median of
	// the rounds' ratios.
	DecidedPerSec         float64 `json:"decidedPerSec"`
	StandardDecidedPerSec float64 `json:"standardDecidedPerSec"`
	VersusStandardDecided float64 `json:"versusStandardDecided"`
	// Extra is what a ranked winner costs beyond a standard one (FlowWorkerWin on
	// the library), per request.
	Extra RankedExtra `json:"extra"`
	// ReadsPerOp counts the GetItem calls of one ranked winner by the kind of item
	// they name (REQUEST, ADMISSION, CAPACITY, RETURNS…); QueriesPerOp its Query
	// calls (the admission's line); WritesPerOp its write requests by kind.
	ReadsPerOp   map[entity.Type]float64 `json:"readsPerOp"`
	QueriesPerOp float64                 `json:"queriesPerOp"`
	WritesPerOp  map[entity.Type]float64 `json:"writesPerOp"`
	// Latency is the paced run's time from queuedAt to the decision, ranked beside
	// standard (nil with Config.LatencyClicks < 0).
	Latency *RankedLatency `json:"latency,omitempty"`
}

// RankedExtra is a ranked winner's costs minus a standard winner's, per request.
type RankedExtra struct {
	// Reads is the difference of the read calls (GetItem, Query, BatchGetItem), each
	// side net of its cached CONFIG reads.
	Reads float64 `json:"reads"`
	RCU   float64 `json:"rcu"`
	Calls float64 `json:"calls"` // all calls, each side net of its cached CONFIG reads
	WCU   float64 `json:"wcu"`
}

// RankedLatency is the time from a request's queuedAt to its decision (finishedAt),
// both read back from the table, on a spike of Clicks clicks at ClicksPerSec
// against a running worker of Workers, every click a winner: one FIRST_COME event in
// the standard mode, one ranked.
type RankedLatency struct {
	Clicks       int     `json:"clicks"`
	ClicksPerSec float64 `json:"clicksPerSec"`
	// SettleMs is the ranked event's RankSettle; TickMs the admission's tick.
	SettleMs float64      `json:"settleMs"`
	TickMs   float64      `json:"tickMs"`
	Standard LatencyStats `json:"standard"`
	Ranked   LatencyStats `json:"ranked"`
}

// LatencyStats are the decisions' latencies of one event, in milliseconds.
type LatencyStats struct {
	Decided  int     `json:"decided"`
	MedianMs float64 `json:"medianMs"`
	P95Ms    float64 `json:"p95Ms"`
	MaxMs    float64 `json:"maxMs"`
}

// workerWinRanked measures FlowWorkerWinRanked: on the library a ranked event's
// winners through an asyncevent.Worker on a client counted apart (its admission
// goes on reading its record for a moment after the queue is empty, which no other
// flow's figures may count), on the baseline the raw winner flow.
func workerWinRanked(ctx context.Context, cfg Config, sd *side, st *roundState, record bool) error {
	ev := &roundState{n: st.n, eventID: st.eventID + "-ranked", winners: newQueue()}
	settings := asyncevent.EventSettings{EventID: ev.eventID, EventType: asyncevent.FirstCome, CapacityTotal: int64(ev.n)}
	if sd.name == "raw" {
		if _, err := sd.client.CreateEvent(ctx, settings); err != nil {
			return err
		}
		if err := submitAll(ctx, cfg, ev.n, 0, submitter(sd, ev, ev.winners, false, sd.client)); err != nil {
			return err
		}
		var out outcomes
		if err := measure(sd, FlowWorkerWinRanked, nil, ev.n, record, func() error {
			return drain(ctx, memory(ev.winners), cfg.Workers, rawHandler(sd, &out))
		}); err != nil {
			return err
		}
		return wantWinners(&out, ev.n)
	}

	counter := metered.NewCounter(cfg.DB, ItemKind)
	client, err := asyncevent.New(counter, asyncevent.Options{TableName: cfg.Table, ProgressEvery: -1})
	if err != nil {
		return err
	}
	settings.CapacityShards = libCapacityShards(ev.n)
	settings.Admission = asyncevent.AdmissionRanked
	if _, err := client.CreateEvent(ctx, settings); err != nil {
		return err
	}
	if err := submitAll(ctx, cfg, ev.n, 0, submitter(sd, ev, ev.winners, false, client)); err != nil {
		return err
	}
	time.Sleep(asyncevent.DefaultRankSettle + rankTick) // the line settled
	var out outcomes
	start := time.Now()
	if err := measureOn(sd, counter, FlowWorkerWinRanked, nil, ev.n, record, func() error {
		return workUntilEmpty(ctx, cfg, client, ev.winners, &out)
	}); err != nil {
		return err
	}
	// The admission's claims report SUCCEEDED, and each delivery then finds its
	// request decided (OutcomeDuplicate).
	if err := wantWinners(&out, ev.n); err != nil {
		return err
	}
	return recordDecided(ctx, sd, client, FlowWorkerWinRanked, ev, start, record)
}

// recordDecided records, under flow, the winners decided a second from start, read
// back from the table.
func recordDecided(ctx context.Context, sd *side, client *asyncevent.Client, flow string, ev *roundState, start time.Time, record bool) error {
	if !record {
		return nil
	}
	rate, err := decidedPerSec(ctx, client, ev.eventID, ev.n, start)
	if err != nil {
		return fmt.Errorf("%s: %w", flow, err)
	}
	sd.results[flow].decidedPerSec = append(sd.results[flow].decidedPerSec, rate)
	return nil
}

func wantWinners(out *outcomes, n int) error {
	if got := out.won.Load(); got != int64(n) {
		return fmt.Errorf("%s: %d winners of %d messages, want all", FlowWorkerWinRanked, got, n)
	}
	return nil
}

// rankedReport is the Ranked of the two sides' results, nil if none was recorded.
func rankedReport(lib, raw *side) *Ranked {
	l, b, std := lib.results[FlowWorkerWinRanked], raw.results[FlowWorkerWinRanked], lib.results[FlowWorkerWin]
	if l == nil || b == nil {
		return nil
	}
	r := &Ranked{
		Flow:        Flow{Name: FlowWorkerWinRanked, Library: sideOf(l), Baseline: sideOf(b), Ratio: ratioOf(l.opsPerSec, b.opsPerSec)},
		ReadsPerOp:  map[entity.Type]float64{},
		WritesPerOp: map[entity.Type]float64{},
	}
	ops := float64(l.ops)
	for kind, k := range l.counts.Reads {
		r.ReadsPerOp[kind] = float64(k) / ops
	}
	for kind, k := range l.counts.Writes {
		r.WritesPerOp[kind] = float64(k) / ops
	}
	r.QueriesPerOp = float64(l.counts.Calls["Query"]) / ops
	if std != nil {
		s := sideOf(std)
		r.VersusStandard, r.StandardMedian = ratioOf(l.opsPerSec, std.opsPerSec), s.Median
		r.DecidedPerSec, r.StandardDecidedPerSec = median(l.decidedPerSec), median(std.decidedPerSec)
		r.VersusStandardDecided = ratioOf(l.decidedPerSec, std.decidedPerSec)
		a, z := r.Flow.Library.PerOp, s.PerOp
		r.Extra = RankedExtra{
			Reads: readsOf(a) - readsOf(z), RCU: a.RCU - z.RCU,
			Calls: (a.DynamoDBCalls - a.ConfigReads) - (z.DynamoDBCalls - z.ConfigReads), WCU: a.WCU - z.WCU,
		}
	}
	return r
}

// readsOf is the read calls of one operation, net of its cached CONFIG reads.
func readsOf(c Costs) float64 {
	return c.Calls["GetItem"] + c.Calls["Query"] + c.Calls["BatchGetItem"] - c.ConfigReads
}

// ratioOf is the median of the rounds' ratios a[i] ÷ b[i].
func ratioOf(a, b []float64) float64 {
	var ratios []float64
	for i := range min(len(a), len(b)) {
		ratios = append(ratios, a[i]/b[i])
	}
	return median(ratios)
}

// measureRankedLatency plays the latency run: cfg.LatencyClicks clicks at
// cfg.LatencyRate on a standard event, then on a ranked one, each against a running
// worker, and reads their requests back.
func measureRankedLatency(ctx context.Context, cfg Config) (*RankedLatency, error) {
	r := &RankedLatency{Clicks: cfg.LatencyClicks, ClicksPerSec: cfg.LatencyRate,
		SettleMs: ms(asyncevent.DefaultRankSettle), TickMs: ms(rankTick)}
	for _, mode := range []struct {
		admission asyncevent.Admission
		stats     *LatencyStats
	}{{asyncevent.AdmissionProcessing, &r.Standard}, {asyncevent.AdmissionRanked, &r.Ranked}} {
		cfg.Progress("latency: %d clicks at %.0f/s on a %s event", cfg.LatencyClicks, cfg.LatencyRate, cmpOr(string(mode.admission), "standard"))
		s, err := latencyRun(ctx, cfg, mode.admission)
		if err != nil {
			return nil, fmt.Errorf("latency, %s: %w", cmpOr(string(mode.admission), "standard"), err)
		}
		*mode.stats = s
	}
	return r, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// latencyRun plays one event of the latency run and returns its decisions'
// latencies.
func latencyRun(ctx context.Context, cfg Config, admission asyncevent.Admission) (LatencyStats, error) {
	client, err := asyncevent.New(cfg.DB, asyncevent.Options{TableName: cfg.Table, ProgressEvery: -1})
	if err != nil {
		return LatencyStats{}, err
	}
	n := cfg.LatencyClicks
	eventID := fmt.Sprintf("%s-latency-%s", cfg.RunID, cmpOr(string(admission), "standard"))
	if _, err := client.CreateEvent(ctx, asyncevent.EventSettings{EventID: eventID, EventType: asyncevent.FirstCome,
		CapacityTotal: int64(n), CapacityShards: libCapacityShards(n), Admission: admission}); err != nil {
		return LatencyStats{}, err
	}
	q := newQueue()
	var out outcomes
	w, err := asyncevent.NewWorker(client, q, asyncevent.WorkerOptions{
		Concurrency: cfg.Workers, WaitTime: 50 * time.Millisecond, HoldSweepEvery: -1,
		ProcessOptions: asyncevent.ProcessOptions{OnOutcome: libOutcome(&out)},
	})
	if err != nil {
		return LatencyStats{}, err
	}
	if err := w.Start(ctx); err != nil {
		return LatencyStats{}, err
	}
	clickErr := paced(ctx, n, cfg.LatencyRate, cfg.Clients, func(ctx context.Context, i int) error {
		_, err := client.Submit(ctx, q, eventID, fmt.Sprintf("u%06d", i))
		return err
	})
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	werr := waitEmpty(waitCtx, memory(q))
	if err := errors.Join(clickErr, werr, w.Stop(ctx)); err != nil {
		return LatencyStats{}, err
	}
	return decisionLatency(ctx, client, eventID, n)
}

// paced calls click for 0..n-1 at rate a second, at most clients at once.
func paced(ctx context.Context, n int, rate float64, clients int, click func(context.Context, int) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	sem := make(chan struct{}, clients)
	first := time.Now()
	for i := range n {
		time.Sleep(time.Until(first.Add(time.Duration(float64(i) / rate * float64(time.Second)))))
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := click(ctx, i); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// decisionLatency reads an event's n requests back and returns the spread of
// finishedAt − queuedAt.
func decisionLatency(ctx context.Context, client *asyncevent.Client, eventID string, n int) (LatencyStats, error) {
	rs, err := wonRequests(ctx, client, eventID, n)
	if err != nil {
		return LatencyStats{}, err
	}
	lat := make([]float64, 0, len(rs))
	for _, r := range rs {
		lat = append(lat, float64(r.FinishedAt-r.QueuedAt))
	}
	slices.Sort(lat)
	return LatencyStats{Decided: n, MedianMs: quantile(lat, 0.5), P95Ms: quantile(lat, 0.95), MaxMs: lat[len(lat)-1]}, nil
}

// decidedPerSec is n winners over the time from start to the last one's decision
// (its finishedAt), read back from the table.
func decidedPerSec(ctx context.Context, client *asyncevent.Client, eventID string, n int, start time.Time) (float64, error) {
	rs, err := wonRequests(ctx, client, eventID, n)
	if err != nil {
		return 0, err
	}
	var last asyncevent.EpochMillis
	for _, r := range rs {
		last = max(last, r.FinishedAt)
	}
	return float64(n) / max(last.Time().Sub(start).Seconds(), 1e-3), nil
}

// wonRequests reads an event's requests back from GSI2 until n of them are
// SUCCEEDED, which all of the event's requests should be.
func wonRequests(ctx context.Context, client *asyncevent.Client, eventID string, n int) ([]asyncevent.Request, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		var won []asyncevent.Request
		cursor := ""
		for {
			page, err := client.ListEventRequests(ctx, eventID, asyncevent.EventListOptions{PageOptions: asyncevent.PageOptions{Limit: 500, Cursor: cursor}})
			if err != nil {
				return nil, err
			}
			for _, r := range page.Requests {
				if r.Status == asyncevent.StatusSucceeded && r.FinishedAt > 0 && r.QueuedAt > 0 {
					won = append(won, r)
				}
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		if len(won) == n {
			return won, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d of %d requests of %s won (all should)", len(won), n, eventID)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// quantile is the q-quantile of sorted xs, the nearest rank.
func quantile(xs []float64, q float64) float64 {
	i := int(q*float64(len(xs))+0.999999) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}
