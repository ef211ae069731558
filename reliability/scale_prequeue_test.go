package reliability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// prequeueResult is what a pre-queue at scale did.
type prequeueResult struct {
	entries, winners, seats int
	clickThrottled          int
	serve                   time.Duration // the ServePrequeue call, freeze to announce
	firstWinner             time.Duration // from the moment the serve may begin to the first winner's decision
	lastWinner              time.Duration
	serveThrottled          int
	serveReasons            map[string]int
	verified                bool
}

// runPrequeue plays a pre-queue of entries users (at rate clicks/s, before the start)
// for seats seats on the layout k, c, under limits, then serves it as an operator
// would at the start plus the settle window, and measures the serve.
func runPrequeue(t *testing.T, raw *dynamodb.Client, limits asynceventtest.Limits, rate float64, entries, seats, k, c int) prequeueResult {
	ctx := context.Background()
	db, limited := asynceventtest.NewLimitedClient(raw, limits, refillRetryTiming)
	opts := asyncevent.Options{DrawSettleWindow: time.Second, RedriveAfter: time.Minute}
	cl := asynceventtest.NewTableOn(t, db, opts)
	admin, err := asyncevent.New(raw, asyncevent.Options{TableName: cl.TableName()})
	require.NoError(t, err)
	clicking := time.Duration(float64(entries)/rate*float64(time.Second)) + 3*time.Second
	start := time.Now().Add(clicking)
	_, err = admin.CreateEvent(ctx, asyncevent.EventSettings{EventID: "prequeue", EventType: asyncevent.FirstCome,
		CapacityTotal: int64(seats), IndexShards: k, CapacityShards: c,
		PrequeueOpensAt: asyncevent.MillisOf(time.Now()), StartsAt: asyncevent.MillisOf(start)})
	require.NoError(t, err)

	// The pre-queue's clicks, paced at the rate; the workers acknowledge each entry's
	// message and decide none.
	q := queue.NewMemory(queue.MemoryOptions{MaxReceives: 1000, Delay: sqsTransit})
	w, err := asyncevent.NewWorker(cl, q, asyncevent.WorkerOptions{Concurrency: 8, WaitTime: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	var wg sync.WaitGroup
	first := time.Now()
	for i := range entries {
		time.Sleep(time.Until(first.Add(time.Duration(float64(i) / rate * float64(time.Second)))))
		wg.Go(func() {
			for attempt := range 20 {
				if _, err := cl.Submit(ctx, q, "prequeue", fmt.Sprintf("user-%06d", i)); err == nil {
					return
				} else if attempt == 19 {
					t.Errorf("user-%06d gave up: %v", i, err)
				}
				time.Sleep(time.Duration(100+rand.IntN(400)) * time.Millisecond)
			}
		})
	}
	wg.Wait()
	waitCtx, cancel := context.WithTimeout(ctx, spikeGrace)
	defer cancel()
	require.NoError(t, q.WaitIdle(waitCtx), "the workers left every entry's message")
	require.NoError(t, w.Stop(ctx))
	res := prequeueResult{entries: entries, seats: seats, clickThrottled: limited.Counts().Throttled}

	opens := start.Add(opts.DrawSettleWindow)
	time.Sleep(time.Until(opens))
	began := time.Now()
	var served *asyncevent.PrequeueResult
	for attempt := 0; ; attempt++ {
		require.Less(t, attempt, 20, "the serve did not finish")
		if served, err = cl.ServePrequeue(ctx, "prequeue"); err == nil {
			break
		}
		t.Logf("serve: %v", err)
		time.Sleep(time.Second)
	}
	res.serve = time.Since(began)
	after := limited.Counts()
	res.serveThrottled = after.Throttled + after.Conflicts - res.clickThrottled
	res.serveReasons = after.Reasons
	if os.Getenv("SCALE_KEYS") != "" {
		classes := map[string]int{}
		for k, n := range after.Keys {
			classes[regexp.MustCompile(`[0-9a-f-]{8,}|\d+`).ReplaceAllString(k, "N")] += n
		}
		t.Logf("pre-queue: refusals by key, numbers folded to N: %v", classes)
	}
	res.winners = len(served.Winners)
	for _, id := range served.Winners {
		r, err := admin.GetRequest(ctx, id)
		require.NoError(t, err)
		at := r.FinishedAt.Time().Sub(opens)
		if res.firstWinner == 0 || at < res.firstWinner {
			res.firstWinner = at
		}
		res.lastWinner = max(res.lastWinner, at)
	}
	v, err := admin.VerifyPrequeue(ctx, "prequeue")
	require.NoError(t, err)
	res.verified = v.OK()
	if !v.OK() {
		t.Logf("pre-queue: %s", v)
	}
	asynceventtest.DeleteTable(t, cl.TableName())
	return res
}
