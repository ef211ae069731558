package reliability

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// TestScale is `make scale`: one event's spike at 20,000 clicks/s on DynamoDB, played
// on DynamoDB Local 200 times slower with DynamoDB's per-key limits 200 times lower
// (asynceventtest.NewLimitedClient: 5 WCU/s and 15 RCU/s per partition key, a bucket
// of one second's units, a transaction holding its items for Limits.Hold: 25 ms × 200),
// so that what throttles or conflicts on DynamoDB does here. A FIRST_COME spike of
// 1,050 users for 1,000 seats at 100 clicks/s, 20% of the clicks repeated, 8 workers,
// on the design's single keys and on the layout ShardsFor derives for the rate; and
// a LOTTERY of 100 clicks/s for 30 s on the derived layout. SCALE=1 runs it
// (SCALE_RATE lowers the rate and the limits together, SCALE_USERS the sale's users,
// SCALE_SECONDS the lottery's length, SCALE_PREQUEUE the pre-queue's entries; a
// pre-queue of 100,000 entries ÷ 200 for half as many seats, served at its start;
// the sale again on a ranked event (AdmissionRanked) of the derived layout, held to
// exactly N, no late winner judged from a raw Scan, under 1% throttled;
// SCALE_ONLY=derived, ranked, lottery or prequeue runs one spike;
// SCALE_KEYS=1 logs the refusals by key).
func TestScale(t *testing.T) {
	if os.Getenv("SCALE") == "" {
		t.Skip("make scale runs this (SCALE=1): about 3½ minutes")
	}
	rate := envFloat("SCALE_RATE", 100)
	seconds := envFloat("SCALE_SECONDS", 30)
	factor := 20000 / rate // DynamoDB's rate over ours
	// A bucket of one second's units, but at least a request's own writes (MinBucket):
	// the run is slowed down, each request is not.
	limits := asynceventtest.Limits{WCU: 1000 / factor, RCU: 3000 / factor, Burst: time.Second, MinBucket: 10}
	raw := asynceventtest.OwnDynamoDB(t)
	// Every click may win while seats last: the capacity shards are sized for it.
	k, c := asyncevent.ShardsFor(rate*factor, rate*factor)
	k, c = int(envFloat("SCALE_K", float64(k))), int(envFloat("SCALE_C", float64(c))) // to try another layout
	spike := spikeConfig{rate: rate, seconds: seconds, capacity: 1000, dupShare: 0.2, workers: 8}
	// The first-come spikes: 1,050 users for 1,000 seats, so that a request refused
	// while seats remain shows as a missing winner; the clicks last as long as their
	// users take at the rate, a fifth of them clicks again.
	sale := spike
	sale.users = int(envFloat("SCALE_USERS", 1050))
	sale.seconds = float64(sale.users) / (1 - sale.dupShare) / rate
	scale := func(format string, args ...any) { t.Logf("scale: "+format, args...) }
	scale("%.0f clicks/s (%.0f on DynamoDB): a sale of %d users for %d seats (%.1f s of clicks), a lottery of %.0f s; per-key limits %.1f WCU/s and %.1f RCU/s (1/%.0f of DynamoDB's), a transaction holding its items %s; derived layout K = %d, C = %d",
		rate, rate*factor, sale.users, sale.capacity, sale.seconds, seconds, limits.WCU, limits.RCU, factor, limits.Hold(), k, c)

	if os.Getenv("SCALE_ONLY") == "lottery" {
		lottery := runSpike(t, raw, &limits, spike, asyncevent.EventSettings{EventID: "raffle", EventType: asyncevent.Lottery, IndexShards: k})
		if lottery.draw == nil {
			t.Fatalf("lottery: %s %v", lottery.finality(), lottery.report)
		}
		scale("LOTTERY: %d entries, draw %s, verified: %t, draw throttles %d %v", lottery.draw.Record.EntryCount, lottery.drawTime, lottery.verified, lottery.drawThrottled, lottery.drawReasons)
		return
	}
	prequeue := func() prequeueResult {
		entries := int(envFloat("SCALE_PREQUEUE", 100000/factor))
		p := runPrequeue(t, raw, limits, rate, entries, entries/2, k, c)
		scale("PRE-QUEUE, derived layout under the limits: %d entries (%.0f on DynamoDB) for %d seats; serve %s, first winner %s and last %s after the serve may begin; %d calls throttled while serving %v (%d while clicking); %d winners, verified: %t",
			p.entries, float64(p.entries)*factor, p.seats, p.serve.Round(time.Millisecond), p.firstWinner.Round(time.Millisecond), p.lastWinner.Round(time.Millisecond),
			p.serveThrottled, p.serveReasons, p.clickThrottled, p.winners, p.verified)
		assert.True(t, p.verified, "the pre-queue verifies")
		assert.Equal(t, p.seats, p.winners, "exactly N winners")
		return p
	}
	if os.Getenv("SCALE_ONLY") == "prequeue" {
		prequeue()
		return
	}
	rankedSale := func() spikeResult {
		return scaleRanked(t, func(cfg asyncevent.EventSettings) spikeResult { return runSpike(t, raw, &limits, sale, cfg) }, k, c, scale)
	}
	if os.Getenv("SCALE_ONLY") == "ranked" {
		rankedSale()
		return
	}
	if os.Getenv("SCALE_ONLY") == "derived" {
		derived := runSpike(t, raw, &limits, sale, asyncevent.EventSettings{EventID: "derived", EventType: asyncevent.FirstCome, IndexShards: k, CapacityShards: c})
		scale("derived layout under the limits: %d of %d calls throttled (%.2f%%: %v), ingest p99 %s, %s; %d late winners (largest gap %s); queuedAt to decision p50 %s, p95 %s",
			derived.throttled, derived.attempts, derived.throttledShare()*100, derived.reasons, derived.p99.Round(time.Millisecond), derived.finality(),
			derived.lateWinners, derived.lateGap, derived.decisionP50, derived.decisionP95)
		return
	}
	free := runSpike(t, raw, nil, sale, asyncevent.EventSettings{EventID: "free", EventType: asyncevent.FirstCome, IndexShards: k, CapacityShards: c})
	scale("without limits, derived layout: every request final %.1f s after the first click", free.final.Seconds())

	derived := runSpike(t, raw, &limits, sale, asyncevent.EventSettings{EventID: "derived", EventType: asyncevent.FirstCome, IndexShards: k, CapacityShards: c})
	scale("derived layout under the limits: %d of %d calls throttled (%.2f%%: %v), ingest p99 %s, %s; %d late winners (largest gap %s); queuedAt to decision p50 %s, p95 %s",
		derived.throttled, derived.attempts, derived.throttledShare()*100, derived.reasons, derived.p99.Round(time.Millisecond), derived.finality(),
		derived.lateWinners, derived.lateGap, derived.decisionP50, derived.decisionP95)
	assert.Zero(t, derived.gaveUp, "users who could not take part")
	assert.Equal(t, 1000, derived.report.ByStatus[asyncevent.StatusSucceeded], "exactly N winners")
	assert.True(t, derived.allFinal, "every request final")
	assert.Less(t, derived.throttledShare(), 0.01, "under 1%% of calls throttled")
	assert.LessOrEqual(t, derived.final.Seconds(), 1.5*free.final.Seconds(), "final within 1.5× the spike without limits")

	ranked := rankedSale()

	lottery := runSpike(t, raw, &limits, spike, asyncevent.EventSettings{EventID: "raffle", EventType: asyncevent.Lottery, IndexShards: k})
	scale("LOTTERY, derived layout under the limits: %d entries, %d winners, draw %s, verified: %t",
		lottery.draw.Record.EntryCount, len(lottery.draw.Winners), lottery.drawTime.Round(time.Millisecond), lottery.verified)
	assert.True(t, lottery.verified)
	assert.Zero(t, lottery.gaveUp, "users who could not take part")

	pre := prequeue()

	// The single keys last: a choked layout leaves work behind that would slow the
	// DynamoDB Local the others run on.
	single := runSpike(t, raw, &limits, sale, asyncevent.EventSettings{EventID: "single", EventType: asyncevent.FirstCome})
	scale("single keys under the limits: %d of %d calls throttled (%.1f%%), %d users gave up after 20 clicks, ingest p99 %s, %s",
		single.throttled, single.attempts, single.throttledShare()*100, single.gaveUp, single.p99.Round(time.Millisecond), single.finality())

	scale("summary: at %.0f clicks/s (%.0f on DynamoDB) single keys throttle %.1f%% of calls and %s; K = %d, C = %d throttle %.2f%%, exactly %d winners, final in %.1f s (%.1f s without limits), %d late winners; ranked, %.2f%%, exactly %d winners, %d late winners, final in %.1f s; the lottery of %d entries draws and verifies; a pre-queue of %d entries is served in %.1f s, its first winner %.1f s after the serve may begin",
		rate, rate*factor, single.throttledShare()*100, single.finality(), k, c, derived.throttledShare()*100,
		derived.report.ByStatus[asyncevent.StatusSucceeded], derived.final.Seconds(), free.final.Seconds(), derived.lateWinners,
		ranked.throttledShare()*100, ranked.report.ByStatus[asyncevent.StatusSucceeded], ranked.lateWinners, ranked.final.Seconds(),
		lottery.draw.Record.EntryCount, pre.entries, pre.serve.Seconds(), pre.firstWinner.Seconds())
}

type spikeConfig struct {
	rate, seconds float64
	capacity      int64
	dupShare      float64
	workers       int
	users         int // the most users who click; 0: no bound
}

type spikeResult struct {
	throttled, attempts int
	reasons             map[string]int
	p99                 time.Duration
	final               time.Duration // from the first click until every request is final
	allFinal            bool
	gaveUp              int // users whose clicks were all refused
	finalRequests       int
	requests            int
	report              asynceventtest.CheckReport
	draw                *asyncevent.DrawResult
	drawTime            time.Duration
	verified            bool
	drawThrottled       int
	drawReasons         map[string]int
	// judged is a FIRST_COME event's requests judged from a raw Scan: its late
	// winners and its decisions' latency.
	judged
}

func (r spikeResult) throttledShare() float64 {
	if r.attempts == 0 {
		return 0
	}
	return float64(r.throttled) / float64(r.attempts)
}

func (r spikeResult) finality() string {
	if r.allFinal {
		return fmt.Sprintf("every request final %.1f s after the first click", r.final.Seconds())
	}
	return fmt.Sprintf("%d of %d requests final after %.0f s", r.finalRequests, r.requests, r.final.Seconds())
}

// sqsTransit stands for SQS's time from a send to its receive.
const sqsTransit = 20 * time.Millisecond

// spikeGrace bounds the wait for the last results once the clicks are over: a layout
// the limits choke would take far longer.
const spikeGrace = 60 * time.Second

// runSpike plays a spike on one event of its own table, under limits when given.
func runSpike(t *testing.T, raw *dynamodb.Client, limits *asynceventtest.Limits, sc spikeConfig, cfg asyncevent.EventSettings) spikeResult {
	ctx := context.Background()
	var res spikeResult
	db := raw
	var limited *asynceventtest.LimitedHTTPClient
	if limits != nil {
		db, limited = asynceventtest.NewLimitedClient(raw, *limits, refillRetryTiming)
	}
	counter := asynceventtest.NewCounter(db)
	clicks := int(sc.rate * sc.seconds)
	opts := asyncevent.Options{DrawSettleWindow: time.Second, RedriveAfter: time.Minute}
	c := asynceventtest.NewTableOn(t, counter, opts)
	start := time.Now() // the clicks begin in a moment; the lottery's cutoff is 5 s after the last
	if cfg.EventType == asyncevent.Lottery {
		cfg.WinnerCount = 100
		cfg.LotteryCutoffAt = asyncevent.MillisOf(start.Add(time.Duration(sc.seconds*float64(time.Second)) + 5*time.Second))
	} else {
		cfg.CapacityTotal = sc.capacity
	}
	admin, err := asyncevent.New(raw, asyncevent.Options{TableName: c.TableName()})
	require.NoError(t, err)
	_, err = admin.CreateEvent(ctx, cfg)
	require.NoError(t, err)

	// SQS takes tens of milliseconds from a send to its receive; a queue.Memory takes
	// none unless told, and then a worker starts a request and sends its seat's
	// transaction while ingest is still marking the request queued, a
	// TransactionConflict that SQS's own delay keeps rare.
	q := queue.NewMemory(queue.MemoryOptions{MaxReceives: 1000, Delay: sqsTransit})
	w, err := asyncevent.NewWorker(c, q, asyncevent.WorkerOptions{
		Concurrency: sc.workers, WaitTime: 50 * time.Millisecond, VisibilityTimeout: 10 * time.Second,
		ProcessOptions: asyncevent.ProcessOptions{
			MaxReceives: 1000, LeaseDuration: 5 * time.Second,
			Backoff: func(int) time.Duration { return time.Duration(100+rand.IntN(400)) * time.Millisecond },
		},
	})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	defer func() { _ = w.Stop(ctx) }()

	// The clicks, paced at the rate: new users, and a share of repeat clicks by users
	// who came before.
	rng := rand.New(rand.NewPCG(1, uint64(len(cfg.EventID))))
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		latencies []time.Duration
		failures  atomic.Int64
		users     int
	)
	sem := make(chan struct{}, 256)
	first := time.Now()
	for i := range clicks {
		time.Sleep(time.Until(first.Add(time.Duration(float64(i) / sc.rate * float64(time.Second)))))
		user := fmt.Sprintf("user-%05d", users)
		if users > 0 && (rng.Float64() < sc.dupShare || sc.users > 0 && users >= sc.users) {
			user = fmt.Sprintf("user-%05d", rng.IntN(users))
		} else {
			users++
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			began := time.Now()
			for attempt := range 20 {
				_, err := c.Submit(ctx, q, cfg.EventID, user)
				if err == nil {
					break
				}
				if attempt == 19 {
					if failures.Add(1) <= 3 {
						t.Logf("%s gave up: %v", user, err)
					}
				}
				time.Sleep(time.Duration(100+rng.IntN(400)) * time.Millisecond) // as a user clicks again
			}
			mu.Lock()
			latencies = append(latencies, time.Since(began))
			mu.Unlock()
		})
	}
	wg.Wait()
	res.gaveUp = int(failures.Load())
	slices.Sort(latencies)
	res.p99 = latencies[(len(latencies)*99+99)/100-1]

	waitCtx, cancel := context.WithTimeout(ctx, spikeGrace)
	defer cancel()
	drained := q.WaitIdle(waitCtx) == nil
	res.final = time.Since(first)
	st, err := admin.EventStats(ctx, cfg.EventID)
	require.NoError(t, err)
	res.requests = st.Requests
	for status, n := range st.ByStatus {
		if status.IsTerminal() || cfg.EventType == asyncevent.Lottery && status == asyncevent.StatusQueued {
			res.finalRequests += n
		}
	}
	res.allFinal = drained && res.finalRequests == res.requests
	if limited != nil {
		counts := limited.Counts()
		res.throttled = counts.Throttled + counts.Conflicts
		res.reasons = counts.Reasons
		res.reasons["TransactionConflict"] = counts.Conflicts
		if os.Getenv("SCALE_KEYS") != "" {
			classes := map[string]int{}
			for k, n := range counts.Keys {
				classes[regexp.MustCompile(`[0-9a-f-]{8,}|\d+`).ReplaceAllString(k, "N")] += n
			}
			t.Logf("refusals by key, numbers folded to N: %v", classes)
			keys := slices.SortedFunc(maps.Keys(counts.Keys), func(a, b string) int { return counts.Keys[b] - counts.Keys[a] })
			t.Logf("the keys refused most: %v", keys[:min(8, len(keys))])
		}
	}
	res.attempts = counter.Snapshot().Attempts
	if !res.allFinal {
		t.Logf("not final: drained %t, %v", drained, st.ByStatus)
		return res // a choked layout: its numbers are the result
	}
	if cfg.EventType == asyncevent.Lottery {
		time.Sleep(time.Until(cfg.LotteryCutoffAt.Time().Add(opts.DrawSettleWindow)))
		began := time.Now()
		for attempt := 0; ; attempt++ {
			require.Less(t, attempt, 20, "the draw did not finish")
			if res.draw, err = c.Draw(ctx, cfg.EventID); err == nil {
				break
			}
			time.Sleep(time.Second)
		}
		res.drawTime = time.Since(began)
		if limited != nil {
			counts := limited.Counts()
			res.drawThrottled = counts.Throttled + counts.Conflicts - res.throttled
			res.drawReasons = counts.Reasons
		}
		v, err := admin.VerifyDraw(ctx, cfg.EventID)
		require.NoError(t, err)
		res.verified = v.OK()
	}
	if cfg.EventType == asyncevent.FirstCome {
		res.judged = judge(t, c.TableName(), cfg.EventID)
	}
	res.report = asynceventtest.CheckEvent(t, admin, cfg.EventID, asynceventtest.CheckOptions{})
	_ = w.Stop(ctx)
	asynceventtest.DeleteTable(t, c.TableName()) // a spike's items weigh on the DynamoDB Local the next runs on
	return res
}

func envFloat(name string, def float64) float64 {
	if v, err := strconv.ParseFloat(os.Getenv(name), 64); err == nil && v > 0 {
		return v
	}
	return def
}

// refillRetryTiming gives the limited client a backoff between attempts long enough
// for a throttled key to refill one call's units, without the client-side retry quota
// a spike's throttles would drain. The limits scale a key's units per second down,
// not a call's units: on DynamoDB a key refills a write's unit in a millisecond, here
// in 200 ms (at 5 WCU/s). A retry sooner than that (the test kit's default backoff of
// milliseconds, made for fault tests) would find nothing refilled and count each
// throttle three times; the SDK's own backoff, up to seconds, would find the key
// refilled as on DynamoDB but hold the clicks for seconds.
func refillRetryTiming(o *dynamodb.Options) {
	o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
		so.RateLimiter = ratelimit.None
		so.Backoff = retry.BackoffDelayerFunc(func(attempt int, _ error) (time.Duration, error) {
			d := 250 * time.Millisecond << min(attempt-1, 3)
			return d/2 + time.Duration(rand.Int64N(int64(d/2))), nil
		})
	})
}
