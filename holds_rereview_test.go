package asyncevent_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/queue"
)

// Second review of issue 25's review fixes (holds): tests that try to break the fixes.

// heldPuts holds back the PutItem of a request (PK REQ#…) once armed, until released:
// a request whose put lands late, with the queuedAt taken before it.
type heldPuts struct {
	asyncevent.DynamoDB
	armed   atomic.Bool
	started chan struct{}
	release chan struct{}
}

func (h *heldPuts) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if pk, ok := in.Item["PK"].(*types.AttributeValueMemberS); ok && strings.HasPrefix(pk.Value, "REQ#") && h.armed.CompareAndSwap(true, false) {
		h.started <- struct{}{}
		<-h.release
	}
	return h.DynamoDB.PutItem(ctx, in, optFns...)
}

// rereviewQueueOrder lists an event's requests in queue order (ListEventRequests).
func rereviewQueueOrder(t *testing.T, c *asyncevent.Client, eventID string) []asyncevent.Request {
	t.Helper()
	var out []asyncevent.Request
	cursor := ""
	for {
		page, err := c.ListEventRequests(context.Background(), eventID, asyncevent.EventListOptions{Limit: 500, Cursor: cursor})
		require.NoError(t, err)
		out = append(out, page.Requests...)
		if page.NextCursor == "" {
			return out
		}
		cursor = page.NextCursor
	}
}

// PROBLEM 1 (open, a residual of the fix): the walk's stored queue key moves past
// every request it cannot see yet once the walk's minute has gone. A request whose put
// lands more than walkSettle (a minute) after the queuedAt it took (a caller's
// deadline longer than a minute lets Submit's put run that long; equally an ingest
// host whose clock is a minute behind the sweeper's, or GSI2 lagging a minute) sorts
// before the stored key. Once sold out it is WAITLISTED, and this client's walks
// never meet it again: a seat given back waits on the Returns item while it waits,
// and at the close it is never ended (WAITLISTED for the life of the process, a warm
// Lambda's included). A fresh client would find it: only the stored key hides it.
func TestReReviewWalkPassesARequestWhosePutLandsLate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "late", 1, 1, time.Hour, asyncevent.MillisOf(t0.Add(time.Hour)))
	q := queue.NewMemory(queue.MemoryOptions{})
	a := reviewSubmit(t, c, clock, q, "late", []string{"a"})[0]

	// L's ingest takes its queuedAt now; its put is on its way for a while.
	slow := &heldPuts{DynamoDB: asynceventtest.DynamoDB(t), started: make(chan struct{}, 1), release: make(chan struct{})}
	slow.armed.Store(true)
	lc, err := asyncevent.New(slow, asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	type submitted struct {
		p   asyncevent.Participation
		err error
	}
	lateDone := make(chan submitted, 1)
	go func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Minute) // the caller's deadline
		defer cancel()
		p, err := lc.Submit(sctx, q, "late", "l")
		lateDone <- submitted{p, err}
	}()
	<-slow.started
	clock.Advance(time.Millisecond)
	b := reviewSubmit(t, c, clock, q, "late", []string{"b"})[0]
	proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	drain(t, proc, q)
	require.Equal(t, map[asyncevent.Status][]string{asyncevent.StatusHeld: {a}, asyncevent.StatusWaitlisted: {b}}, byStatus(t, c, []string{a, b}))

	// Two minutes on, A gives up: the sweeper serves B, and its walk keeps B's key.
	clock.Advance(2 * time.Minute)
	sc, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	tr, err := c.Release(ctx, a)
	require.NoError(t, err)
	require.True(t, tr.Applied)
	rep, err := sc.SweepHolds(ctx, "late", asyncevent.HoldSweepOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Served)

	// L's put lands now, queued before B; sold out, L waits.
	close(slow.release)
	got := <-lateDone
	require.NoError(t, got.err)
	l := got.p.RequestID
	drain(t, proc, q)
	lr, err := c.GetRequest(ctx, l)
	require.NoError(t, err)
	require.Equal(t, asyncevent.StatusWaitlisted, lr.Status)
	order := rereviewQueueOrder(t, c, "late")
	require.Len(t, order, 3)
	require.Equal(t, l, order[1].RequestID, "L is queued between A and B")

	// B gives up: one seat back, L the only one waiting.
	tr, err = c.Release(ctx, b)
	require.NoError(t, err)
	require.True(t, tr.Applied)
	for range 3 {
		rep, err = sc.SweepHolds(ctx, "late", asyncevent.HoldSweepOptions{})
		require.NoError(t, err)
		clock.Advance(time.Second)
	}
	// The walk begins again at the event's first request every 5 minutes: a request
	// that showed on the index late waits that long, not for good.
	clock.Advance(5 * time.Minute)
	rep, err = sc.SweepHolds(ctx, "late", asyncevent.HoldSweepOptions{})
	require.NoError(t, err)
	lr, err = c.GetRequest(ctx, l)
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusHeld, lr.Status, "a seat given back and one request waiting: it is served (%d seats wait on the Returns item)", rep.Waiting)

	// The close: nothing may be left WAITLISTED.
	clock.Advance(time.Hour)
	for range 3 {
		_, err = sc.SweepHolds(ctx, "late", asyncevent.HoldSweepOptions{})
		require.NoError(t, err)
	}
	lr, err = c.GetRequest(ctx, l)
	require.NoError(t, err)
	assert.NotEqual(t, asyncevent.StatusWaitlisted, lr.Status, "after the close no request is WAITLISTED")
	if lr.Status == asyncevent.StatusWaitlisted {
		fresh, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
		require.NoError(t, err)
		rep, err := fresh.SweepHolds(ctx, "late", asyncevent.HoldSweepOptions{})
		require.NoError(t, err)
		t.Logf("a fresh client's pass closes %d: only the long-lived client's stored key hides L", rep.Closed)
	}
}

// CHECK (problem 1): with index shards and requests queued in the same millisecond
// (queue order then by request ID), the walk from the stored key serves each seat to
// the earliest waiting request in queue order, pass after pass, with requests coming
// in between, and the close ends every waiting request.
func TestReReviewWalkWithIndexShardsAndEqualQueuedAt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{
		EventID: "eqshards", EventType: asyncevent.FirstCome, CapacityTotal: 4, CapacityShards: 2, IndexShards: 5,
		HoldFor: time.Hour, EndsAt: asyncevent.MillisOf(t0.Add(3 * time.Hour)),
	})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	sc, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)

	submitSameMilli := func(prefix string, n int) {
		for _, u := range reviewUsers(prefix, 0, n) {
			_, err := c.Submit(ctx, q, "eqshards", u)
			require.NoError(t, err)
		}
		clock.Advance(time.Millisecond)
	}
	// earliestWaiting is the first WAITLISTED request in queue order.
	earliestWaiting := func() (string, []asyncevent.Request) {
		order := rereviewQueueOrder(t, c, "eqshards")
		for _, r := range order {
			cur, err := c.GetRequest(ctx, r.RequestID)
			require.NoError(t, err)
			if cur.Status == asyncevent.StatusWaitlisted {
				return cur.RequestID, order
			}
		}
		return "", order
	}
	heldOnes := func() []string {
		var out []string
		for _, r := range rereviewQueueOrder(t, c, "eqshards") {
			cur, err := c.GetRequest(ctx, r.RequestID)
			require.NoError(t, err)
			if cur.Status == asyncevent.StatusHeld {
				out = append(out, cur.RequestID)
			}
		}
		return out
	}

	submitSameMilli("a", 12)
	drain(t, proc, q)
	for round := range 6 {
		clock.Advance(2 * time.Minute)
		want, _ := earliestWaiting()
		require.NotEmpty(t, want)
		held := heldOnes()
		require.NotEmpty(t, held)
		tr, err := c.Release(ctx, held[0])
		require.NoError(t, err)
		require.True(t, tr.Applied)
		rep, err := sc.SweepHolds(ctx, "eqshards", asyncevent.HoldSweepOptions{})
		require.NoError(t, err)
		require.Equal(t, 1, rep.Served, "round %d", round)
		cur, err := c.GetRequest(ctx, want)
		require.NoError(t, err)
		assert.Equal(t, asyncevent.StatusHeld, cur.Status, "round %d: the earliest waiting request in queue order is served", round)
		// newcomers, in one millisecond, on every index shard
		submitSameMilli(fmt.Sprintf("r%d-", round), 3)
		drain(t, proc, q)
	}
	clock.Advance(3 * time.Hour)
	for range 3 {
		_, err := sc.SweepHolds(ctx, "eqshards", asyncevent.HoldSweepOptions{})
		require.NoError(t, err)
	}
	for _, r := range rereviewQueueOrder(t, c, "eqshards") {
		cur, err := c.GetRequest(ctx, r.RequestID)
		require.NoError(t, err)
		assert.NotEqual(t, asyncevent.StatusWaitlisted, cur.Status, "%s: after the close none waits", r.RequestID)
	}
	asynceventtest.CheckEvent(t, c, "eqshards", asynceventtest.CheckOptions{})
}

// CHECK (problem 2): every way a worker decides a first-come request of an event with
// holds takes the event's HoldFor: a worker new to the event (the home shard's look),
// the home claim, a Handler (the leased way), C > 1, a message without capacityShards,
// and ClaimSeat called directly.
func TestReReviewHoldForOnEveryPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	const hold = 7 * time.Minute
	holdsEvent(t, c, "paths", 7, 3, hold, 0)
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := reviewSubmit(t, c, clock, q, "paths", reviewUsers("p", 0, 9))
	fresh := func() *asyncevent.Client {
		fc, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
		require.NoError(t, err)
		return fc
	}
	ok := asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error { return nil })
	warm := fresh()
	cases := []struct {
		name string
		c    *asyncevent.Client
		h    asyncevent.Handler
		n    int
	}{
		{"new worker, home claim", fresh(), nil, 3},
		{"new worker, Handler", fresh(), ok, 3},
		{"new worker, no capacityShards", fresh(), nil, 0},
		{"new worker, Handler, no capacityShards", fresh(), ok, 0},
		{"warm worker, home claim", warm, nil, 3},
		{"warm worker, Handler", warm, ok, 3},
	}
	for i, tc := range cases {
		res := asynceventtest.Work(ctx, t, tc.c, messageFor(t, c, ids[i], tc.n), asyncevent.ProcessOptions{Handler: tc.h})
		r, err := c.GetRequest(ctx, ids[i])
		require.NoError(t, err)
		if assert.Equal(t, asyncevent.StatusHeld, r.Status, "%s (outcome %s)", tc.name, res.Kind) {
			assert.Equal(t, asyncevent.MillisOf(clock.Now().Add(hold)), r.HoldExpiresAt, tc.name)
		}
	}
	// ClaimSeat called directly, under a lease of the caller's.
	dc := fresh()
	lease := asyncevent.Lease{Owner: "direct", Duration: time.Minute}
	ref := asyncevent.RequestRef{RequestID: ids[6], EventID: "paths"}
	tr, err := dc.StartProcessing(ctx, ref, lease)
	require.NoError(t, err)
	require.True(t, tr.Applied)
	tr, err = dc.ClaimSeat(ctx, ref, lease)
	require.NoError(t, err)
	require.True(t, tr.Applied)
	r, err := c.GetRequest(ctx, ids[6])
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusHeld, r.Status, "ClaimSeat on an event with holds")
	// The losers, each by a new worker: waitlisted.
	for i := 7; i < 9; i++ {
		res := asynceventtest.Work(ctx, t, fresh(), messageFor(t, c, ids[i], 3), asyncevent.ProcessOptions{Handler: []asyncevent.Handler{nil, ok}[i%2]})
		r, err := c.GetRequest(ctx, ids[i])
		require.NoError(t, err)
		assert.Equal(t, asyncevent.StatusWaitlisted, r.Status, "loser %d (outcome %s)", i, res.Kind)
	}
	asynceventtest.CheckEvent(t, c, "paths", asynceventtest.CheckOptions{Unsettled: true})
}

// CHECK (problem 3): MaxWrites bounds every pass, through the expiries (several hold
// partitions), the serving and the close, and the passes together finish the work.
func TestReReviewMaxWritesAcrossExpireServeClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "budget3", 6, 3, time.Minute, asyncevent.MillisOf(t0.Add(time.Hour)))
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := reviewSubmit(t, c, clock, q, "budget3", reviewUsers("w", 0, 15))
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)
	got := byStatus(t, c, ids)
	require.Len(t, got[asyncevent.StatusHeld], 6)
	require.Len(t, got[asyncevent.StatusWaitlisted], 9)

	passes := func(what string) (expired, served, closed int) {
		for i := 0; i < 30; i++ {
			rep, err := c.SweepHolds(ctx, "budget3", asyncevent.HoldSweepOptions{MaxWrites: 2})
			require.NoError(t, err)
			moved := rep.Expired + rep.Served + rep.Closed
			assert.LessOrEqual(t, moved, 2, "%s pass %d: %+v", what, i, *rep)
			expired, served, closed = expired+rep.Expired, served+rep.Served, closed+rep.Closed
			if moved == 0 && !rep.More {
				return
			}
		}
		t.Fatalf("%s: the passes never finished", what)
		return
	}
	clock.Advance(2 * time.Minute) // the 6 holds ran out
	e, s, cl := passes("expiry")
	assert.Equal(t, []int{6, 6, 0}, []int{e, s, cl})
	clock.Advance(time.Hour) // the close; the 6 served holds ran out too
	e, s, cl = passes("close")
	assert.Equal(t, []int{6, 0, 3}, []int{e, s, cl})
	got = byStatus(t, c, ids)
	assert.Empty(t, got[asyncevent.StatusWaitlisted])
	assert.Empty(t, got[asyncevent.StatusHeld])
	asynceventtest.CheckEvent(t, c, "budget3", asynceventtest.CheckOptions{})
}

// PROBLEM 4 (new): an event with holds may have at most 98 capacity shards, but the
// layout rule the HTTP API (peakClicksPerSecond) and the CLI (event create -peak) call
// still gives up to 99: a FIRST_COME event of 12,545 seats or more, or a peak of about
// 157,000 clicks/s, with holds cannot be created from its peak. CreateEvent refuses
// it with "capacityShards 99 with holds", a count the caller never gave (the API
// answers 400 invalid event, the CLI a usage error).
func TestReReviewShardForPeakWithHolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTable(t)
	for i, cfg := range []asyncevent.EventSettings{
		{EventType: asyncevent.FirstCome, CapacityTotal: 20_000, HoldFor: 10 * time.Minute},
		{EventType: asyncevent.FirstCome, CapacityTotal: 5_000, HoldFor: 10 * time.Minute},
	} {
		cfg.EventID = fmt.Sprintf("peak%d", i)
		peak := []float64{1_000, 200_000}[i]
		cfg.ShardForPeak(peak)
		_, err := c.CreateEvent(ctx, cfg)
		assert.NoError(t, err, "%d seats with holds at a peak of %.0f clicks/s: ShardForPeak gives %d capacity shards", cfg.CapacityTotal, peak, cfg.CapacityShards)
	}
}

// CHECK (problem 4): the registry and its filter. An event with holds is listed from its
// creation until its end plus its HoldFor plus an hour, an event without an end for
// ever (each Worker then sweeps it for as long as it runs: see the report), an event
// without holds never; 98 capacity shards with holds fit CreateEvent's transaction.
func TestReReviewHoldRegistry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "ends", 2, 1, 10*time.Minute, asyncevent.MillisOf(t0.Add(time.Hour)))
	holdsEvent(t, c, "forever", 2, 1, 10*time.Minute, 0)
	holdsEvent(t, c, "wide", 98, 98, 10*time.Minute, asyncevent.MillisOf(t0.Add(time.Hour)))
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "plain", EventType: asyncevent.FirstCome, CapacityTotal: 2})
	require.NoError(t, err)
	_, err = c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "wider", EventType: asyncevent.FirstCome, CapacityTotal: 99, CapacityShards: 99, HoldFor: time.Minute})
	assert.ErrorIs(t, err, asyncevent.ErrInvalidEvent)

	listed := func() []string {
		evs, err := c.HoldEvents(ctx)
		require.NoError(t, err)
		var ids []string
		for _, e := range evs {
			ids = append(ids, e.EventID)
		}
		slices.Sort(ids)
		return ids
	}
	assert.Equal(t, []string{"ends", "forever", "wide"}, listed())
	clock.Advance(time.Hour + 10*time.Minute + time.Hour - time.Second)
	assert.Equal(t, []string{"ends", "forever", "wide"}, listed())
	clock.Advance(2 * time.Second)
	assert.Equal(t, []string{"forever"}, listed())
	clock.Advance(365 * 24 * time.Hour)
	assert.Equal(t, []string{"forever"}, listed(), "an event without an end is listed for ever")
}

// CHECK (problem 5): the sweep lease read before it is written. A holder goes on
// without a write while more than half its lease is left and renews after; another
// owner is skipped, told when the lease runs out, for as long as the holder renews;
// once the holder stops, the other takes it as soon as its lease has run out, and the
// old holder, back, is skipped.
func TestReReviewSweepLeaseHandOver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "lease", 2, 1, time.Minute, 0)
	counter := asynceventtest.NewCounter(asynceventtest.DynamoDB(t))
	ac, err := asyncevent.New(counter, asyncevent.Options{ProgressEvery: -1, TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	bc, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	sweep := func(cl *asyncevent.Client, owner string) bool {
		rep, err := cl.SweepHolds(ctx, "lease", asyncevent.HoldSweepOptions{Owner: owner, LeaseFor: 10 * time.Second})
		require.NoError(t, err)
		return !rep.Skipped
	}
	leaseWrites := func() int { return counter.Snapshot().Writes[entity.Returns] }

	require.True(t, sweep(ac, "A"))
	require.Equal(t, 1, leaseWrites())
	require.False(t, sweep(bc, "B"))
	clock.Advance(4 * time.Second)
	require.True(t, sweep(ac, "A"))
	assert.Equal(t, 1, leaseWrites(), "more than half the lease left: no write")
	clock.Advance(2 * time.Second) // 6 s: renewed
	require.True(t, sweep(ac, "A"))
	assert.Equal(t, 2, leaseWrites(), "half the lease gone: renewed")
	clock.Advance(5 * time.Second) // 11 s: the first lease would have run out
	assert.False(t, sweep(bc, "B"), "the renewed lease holds")
	// A dies here; its lease runs out at 16 s.
	clock.Advance(4*time.Second + 999*time.Millisecond)
	assert.False(t, sweep(bc, "B"))
	clock.Advance(time.Millisecond)
	assert.True(t, sweep(bc, "B"), "the lease ran out: B sweeps")
	assert.False(t, sweep(ac, "A"), "A, back, finds B's lease")
}

// PROBLEM 5 (open, a variant the fix does not reach): the walk stops its key at the
// first request not settled, and a pass with a seat on the Returns item and no one
// WAITLISTED (a hold released before the sell-out, or after the waitlist ran dry)
// reads from there to the end of the event's requests, for nothing, at every pass.
// During a spike the requests not settled are the backlog still QUEUED (and every
// request of the last minute): the worker holding the sweep lease reads the whole
// backlog every second, and nothing bounds the reads of a pass (MaxWrites counts
// writes).
func TestReReviewPassWithASeatAndNoWaitlistReadsTheBacklog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "backlog", 10, 1, time.Hour, 0)
	q := queue.NewMemory(queue.MemoryOptions{})
	first := reviewSubmit(t, c, clock, q, "backlog", []string{"first"})
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)
	tr, err := c.Release(ctx, first[0]) // one seat on the Returns item; not sold out
	require.NoError(t, err)
	require.True(t, tr.Applied)
	reviewSubmit(t, c, clock, q, "backlog", reviewUsers("b", 0, 1200)) // the backlog, still QUEUED
	clock.Advance(2 * time.Minute)

	counter := asynceventtest.NewCounter(asynceventtest.DynamoDB(t))
	sc, err := asyncevent.New(counter, asyncevent.Options{ProgressEvery: -1, TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	_, err = sc.SweepHolds(ctx, "backlog", asyncevent.HoldSweepOptions{})
	require.NoError(t, err)
	clock.Advance(time.Second)
	before := counter.Snapshot()
	rep, err := sc.SweepHolds(ctx, "backlog", asyncevent.HoldSweepOptions{})
	require.NoError(t, err)
	require.Zero(t, rep.Expired+rep.Served+rep.Closed)
	require.EqualValues(t, 1, rep.Waiting)
	d := counter.Snapshot().Sub(before)
	t.Logf("one idle pass with a seat waiting and 1,200 requests QUEUED: %v calls, %.1f RCU", d.Calls, d.RCU)
	// A walk reads at most 2,000 requests past its starting point (about 106 RCU of
	// these): the whole of this backlog, no more however long it grows.
	assert.Less(t, d.RCU, 110.0, "an idle pass reads at most 2,000 requests")
}
