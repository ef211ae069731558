package asyncevent_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/queue"
)

// Review of issue 25 (holds and the waitlist): tests that try to break its promises.

// reviewSubmit submits one click per user, a millisecond apart, and returns the
// request IDs in queue order.
func reviewSubmit(t *testing.T, c *asyncevent.Client, clock *asynceventtest.Clock, q queue.Queue, event string, users []string) []string {
	t.Helper()
	ids := make([]string, len(users))
	for i, u := range users {
		p, err := c.Submit(context.Background(), q, event, u)
		require.NoError(t, err)
		ids[i] = p.RequestID
		clock.Advance(time.Millisecond)
	}
	return ids
}

func reviewUsers(prefix string, from, n int) []string {
	us := make([]string, n)
	for i := range us {
		us[i] = fmt.Sprintf("%s%04d", prefix, from+i)
	}
	return us
}

// reviewHoldItems scans the table for the Hold items of an event: request ID → the
// expiries its Hold items record.
func reviewHoldItems(t *testing.T, c *asyncevent.Client, eventID string) map[string][]asyncevent.EpochMillis {
	t.Helper()
	out := map[string][]asyncevent.EpochMillis{}
	for _, raw := range asynceventtest.ScanTable(t, c.TableName()) {
		var h struct {
			PK         string
			EntityType entity.Type            `dynamodbav:"entityType"`
			EventID    string                 `dynamodbav:"eventId"`
			RequestID  string                 `dynamodbav:"requestId"`
			ExpiresAt  asyncevent.EpochMillis `dynamodbav:"expiresAt"`
		}
		require.NoError(t, attributevalue.UnmarshalMap(raw, &h))
		if h.EntityType == entity.Hold && h.EventID == eventID {
			out[h.RequestID] = append(out[h.RequestID], h.ExpiresAt)
		}
	}
	return out
}

// reviewEveryHeldHasItsHoldItem fails the test for each HELD request of ids without a
// Hold item at its holdExpiresAt: the sweep would never find it.
func reviewEveryHeldHasItsHoldItem(t *testing.T, c *asyncevent.Client, eventID string, ids []string) {
	t.Helper()
	holds := reviewHoldItems(t, c, eventID)
	for _, id := range ids {
		r, err := c.GetRequest(context.Background(), id)
		require.NoError(t, err)
		if r.Status != asyncevent.StatusHeld {
			continue
		}
		found := false
		for _, at := range holds[id] {
			found = found || at == r.HoldExpiresAt
		}
		assert.True(t, found, "HELD request %s (expires %d) has no Hold item at its expiry (its Hold items: %v)", id, r.HoldExpiresAt, holds[id])
	}
}

// PROBLEM: the waitlist walk's remembered starting point (Client.waitFrom) is a
// listing cursor, and for an event with index shards that cursor records the shards
// the listing had read to their end ("ended"). A walk that starts from it never
// queries those shards again, so a request put on one of them later, and WAITLISTED,
// is never seen by this client's sweeps: it is never served while seats wait on the
// Returns item, later requests on other shards are served before it (queue order
// broken), and at the close it is never ended REJECTED_CAPACITY.
func TestReviewWaitlistWalkFrontierSkipsIndexShardsThatEnded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	endsAt := asyncevent.MillisOf(t0.Add(time.Hour))
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{
		EventID: "shardwalk", EventType: asyncevent.FirstCome, CapacityTotal: 500, IndexShards: 8,
		HoldFor: time.Hour, EndsAt: endsAt,
	})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	ids := reviewSubmit(t, c, clock, q, "shardwalk", reviewUsers("a", 0, 502))
	drain(t, proc, q)
	got := byStatus(t, c, ids)
	require.Len(t, got[asyncevent.StatusHeld], 500)
	require.Equal(t, ids[500:], got[asyncevent.StatusWaitlisted])

	// Two minutes on, the first 500 are settled: a pass walks past them.
	clock.Advance(2 * time.Minute)
	sweeper, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	tr, err := c.Release(ctx, ids[0])
	require.NoError(t, err)
	require.True(t, tr.Applied)
	rep, err := sweeper.SweepHolds(ctx, "shardwalk", asyncevent.HoldSweepOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Served)

	// More people come, and wait (sold out).
	late := reviewSubmit(t, c, clock, q, "shardwalk", reviewUsers("b", 0, 16))
	drain(t, proc, q)
	got = byStatus(t, c, late)
	require.Len(t, got[asyncevent.StatusWaitlisted], 16)

	// 17 holds are released: 17 seats for the 17 waiting.
	for _, id := range ids[1:18] {
		tr, err := c.Release(ctx, id)
		require.NoError(t, err)
		require.True(t, tr.Applied)
	}
	for range 5 {
		rep, err = sweeper.SweepHolds(ctx, "shardwalk", asyncevent.HoldSweepOptions{})
		require.NoError(t, err)
	}
	waiting := append([]string{ids[501]}, late...)
	got = byStatus(t, c, waiting)
	assert.Empty(t, got[asyncevent.StatusWaitlisted], "17 seats given back, 17 waiting: every one of them is served (%d seats still wait on the Returns item)", rep.Waiting)
	if len(got[asyncevent.StatusWaitlisted]) > 0 && len(got[asyncevent.StatusHeld]) > 0 {
		firstWaiting := indexOf(waiting, got[asyncevent.StatusWaitlisted][0])
		lastServed := indexOf(waiting, got[asyncevent.StatusHeld][len(got[asyncevent.StatusHeld])-1])
		assert.Less(t, lastServed, firstWaiting, "queue order: a request queued after one still waiting was served")
	}

	// The close: the waitlist must end.
	clock.Advance(time.Hour)
	for range 3 {
		_, err = sweeper.SweepHolds(ctx, "shardwalk", asyncevent.HoldSweepOptions{})
		require.NoError(t, err)
	}
	got = byStatus(t, c, waiting)
	assert.Empty(t, got[asyncevent.StatusWaitlisted], "after the close no request is left WAITLISTED")
	asynceventtest.CheckEvent(t, c, "shardwalk", asynceventtest.CheckOptions{})
}

// PROBLEM: a worker that has no copy of the event's config trusts the message's
// holdForMillis. The event's config is read during the home claim (freshEvent), but
// only capacityShards is checked against it. A message that says nothing of holds
// (holdForMillis 0 with capacityShards: an ingest of a version before holds, during a
// rolling upgrade) makes the winner of an event with holds SUCCEEDED at once, unpaid;
// one with another holdForMillis holds the seat for the message's time, not the
// event's; and one that claims holds for an event without them leaves a HELD request
// that nothing ever ends (SweepHolds refuses an event without holds).
func TestReviewFreshWorkerTrustsTheMessagesHoldForMillis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "trust", 5, 1, 10*time.Minute, 0)
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "plain", EventType: asyncevent.FirstCome, CapacityTotal: 5})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	withHolds := reviewSubmit(t, c, clock, q, "trust", reviewUsers("t", 0, 2))
	without := reviewSubmit(t, c, clock, q, "plain", reviewUsers("p", 0, 1))

	fresh := func() *asyncevent.Client { // a worker that just started: no cached configs
		fc, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
		require.NoError(t, err)
		return fc
	}

	t.Run("no holdForMillis on an event with holds", func(t *testing.T) {
		m := holdMessage(t, c, withHolds[0], 1, 0)
		res := asynceventtest.Work(ctx, t, fresh(), m, asyncevent.ProcessOptions{})
		r, err := c.GetRequest(ctx, withHolds[0])
		require.NoError(t, err)
		assert.Equal(t, asyncevent.StatusHeld, r.Status, "the event holds its winners until paid (outcome %s)", res.Kind)
	})
	t.Run("another holdForMillis", func(t *testing.T) {
		m := holdMessage(t, c, withHolds[1], 1, asyncevent.MinHoldFor)
		res := asynceventtest.Work(ctx, t, fresh(), m, asyncevent.ProcessOptions{})
		r, err := c.GetRequest(ctx, withHolds[1])
		require.NoError(t, err)
		if r.Status == asyncevent.StatusHeld {
			assert.Equal(t, asyncevent.MillisOf(clock.Now().Add(10*time.Minute)), r.HoldExpiresAt,
				"held for the event's HoldFor, not the message's (outcome %s)", res.Kind)
		}
	})
	t.Run("holdForMillis on an event without holds", func(t *testing.T) {
		m := holdMessage(t, c, without[0], 1, time.Minute)
		res := asynceventtest.Work(ctx, t, fresh(), m, asyncevent.ProcessOptions{})
		r, err := c.GetRequest(ctx, without[0])
		require.NoError(t, err)
		assert.NotEqual(t, asyncevent.StatusHeld, r.Status, "an event without holds has no HELD request (outcome %s)", res.Kind)
		if r.Status == asyncevent.StatusHeld {
			clock.Advance(2 * time.Minute)
			_, err := c.SweepHolds(ctx, "plain", asyncevent.HoldSweepOptions{})
			assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions, "and no sweep will ever end that hold")
		}
	})
}

// PROBLEM: HoldSweepOptions.MaxWrites "bounds the requests one call moves", but the
// expiry step sets the Query's Limit from the budget once, before the first page:
// when a page holds Hold items that cost no budget (a request still being bound, a
// stray record), the next page is read with the first page's Limit and every hold on
// it is ended, past MaxWrites.
func TestReviewHoldSweepExpiresMoreThanMaxWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "budget", 4, 1, time.Minute, 0)
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := reviewSubmit(t, c, clock, q, "budget", reviewUsers("m", 0, 4))

	// The first request's worker records its Hold item, then its HELD write fails: a
	// Hold item whose request is not HELD (yet), the earliest to run out.
	faulty := asynceventtest.NewFaultyDynamoDB(asynceventtest.DynamoDB(t), asynceventtest.FaultPlan{
		FailRate: 1, Operations: []string{"UpdateItem"}, KeyPrefix: "REQ#",
	})
	fc, err := asyncevent.New(faulty, asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	res := asynceventtest.Work(ctx, t, fc, holdMessage(t, c, ids[0], 1, time.Minute), asyncevent.ProcessOptions{})
	require.True(t, res.Redeliver)
	for _, id := range ids[1:] {
		clock.Advance(time.Millisecond)
		res := asynceventtest.Work(ctx, t, c, holdMessage(t, c, id, 1, time.Minute), asyncevent.ProcessOptions{})
		require.Equal(t, asyncevent.OutcomeHeld, res.Kind)
	}

	clock.Advance(2 * time.Minute)
	rep, err := c.SweepHolds(ctx, "budget", asyncevent.HoldSweepOptions{MaxWrites: 2})
	require.NoError(t, err)
	assert.LessOrEqual(t, rep.Expired+rep.Served+rep.Closed, 2, "MaxWrites 2 bounds the requests one pass moves: %+v", *rep)
}

// PROBLEM (liveness, by design but unguarded): a Worker sweeps only the events whose
// messages it has processed since it started. Once the spike's messages are all
// processed, a restarted worker fleet (a deploy, a scale-in and out) never sweeps the
// event again: holds that run out are never expired, the waitlist is never served
// and never closed, unless an operator runs the CLI or lists the event in the
// scheduled function's HoldEvents. (The workers' sweeps and the hold's 10 s run
// InBubble, at no wall time.)
func TestReviewRestartedWorkerNeverSweepsAnEventItDidNotMeet(t *testing.T) {
	t.Parallel()
	asynceventtest.InBubble(t, func(t *testing.T) {
		ctx := context.Background()
		c := asynceventtest.NewTable(t)
		holdsEvent(t, c, "restart", 1, 1, asyncevent.MinHoldFor, 0)
		q := queue.NewMemory(queue.MemoryOptions{})
		var ids []string
		for _, u := range []string{"a", "b"} {
			p, err := c.Submit(ctx, q, "restart", u)
			require.NoError(t, err)
			ids = append(ids, p.RequestID)
			time.Sleep(2 * time.Millisecond)
		}
		status := func(id string) asyncevent.Status {
			r, err := c.GetRequest(ctx, id)
			require.NoError(t, err)
			return r.Status
		}
		first, err := asyncevent.NewWorker(c, q, asyncevent.WorkerOptions{Concurrency: 1, WaitTime: 50 * time.Millisecond, HoldSweepEvery: 100 * time.Millisecond})
		require.NoError(t, err)
		require.NoError(t, first.Start(ctx))
		require.Eventually(t, func() bool { return status(ids[1]) == asyncevent.StatusWaitlisted }, 10*time.Second, 20*time.Millisecond)
		require.NoError(t, first.Stop(ctx))

		// A new deploy: a fresh client and worker on the same queue and table.
		c2, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName()})
		require.NoError(t, err)
		second, err := asyncevent.NewWorker(c2, q, asyncevent.WorkerOptions{Concurrency: 1, WaitTime: 50 * time.Millisecond, HoldSweepEvery: 100 * time.Millisecond})
		require.NoError(t, err)
		require.NoError(t, second.Start(ctx))
		defer func() { require.NoError(t, second.Stop(ctx)) }()
		assert.Eventually(t, func() bool { return status(ids[0]) == asyncevent.StatusRejected }, asyncevent.MinHoldFor+5*time.Second, 100*time.Millisecond,
			"the hold ran out: a running worker of the table expires it")
	})
}

// CHECK: a request served from the waitlist holds no seat token; a later delivery of
// its message (with and without a Handler) is a duplicate and moves no seat.
func TestReviewServedRequestsMessageAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "served", 2, 2, time.Minute, 0)
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := reviewSubmit(t, c, clock, q, "served", reviewUsers("s", 0, 5))
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)
	tr, err := c.Release(ctx, ids[0])
	require.NoError(t, err)
	require.True(t, tr.Applied)
	rep, err := c.SweepHolds(ctx, "served", asyncevent.HoldSweepOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Served)
	r, err := c.GetRequest(ctx, ids[2])
	require.NoError(t, err)
	require.Equal(t, asyncevent.StatusHeld, r.Status)

	handler := asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error { return nil })
	for _, h := range []asyncevent.Handler{nil, handler} {
		for _, cl := range []*asyncevent.Client{c, func() *asyncevent.Client {
			fc, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
			require.NoError(t, err)
			return fc
		}()} {
			for _, id := range []string{ids[0], ids[2], ids[3]} {
				res := asynceventtest.Work(ctx, t, cl, holdMessage(t, c, id, 2, time.Minute), asyncevent.ProcessOptions{Handler: h})
				assert.Equal(t, asyncevent.OutcomeDuplicate, res.Kind, "request %s", id)
			}
		}
	}
	got := byStatus(t, c, ids)
	assert.Equal(t, []string{ids[1], ids[2]}, got[asyncevent.StatusHeld])
	assert.Equal(t, ids[3:], got[asyncevent.StatusWaitlisted])
	asynceventtest.CheckEvent(t, c, "served", asynceventtest.CheckOptions{})
	reviewEveryHeldHasItsHoldItem(t, c, "served", ids)
}

// CHECK: bad input to Confirm, Release and SweepHolds, and messages with a bad
// holdForMillis.
func TestReviewHoldsBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "bad", 1, 1, time.Minute, 0)
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "nohold", EventType: asyncevent.FirstCome, CapacityTotal: 1})
	require.NoError(t, err)
	_, err = c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "lot", EventType: asyncevent.Lottery, WinnerCount: 1,
		LotteryCutoffAt: asyncevent.MillisOf(t0.Add(time.Hour))})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	held := reviewSubmit(t, c, clock, q, "bad", []string{"x"})
	plain := reviewSubmit(t, c, clock, q, "nohold", []string{"x"})
	lot := reviewSubmit(t, c, clock, q, "lot", []string{"x"})
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)

	for _, id := range []string{"", "a#b", strings.Repeat("x", 300), "with space"} {
		_, err := c.Confirm(ctx, id)
		assert.ErrorIs(t, err, asyncevent.ErrInvalidID, "confirm %q", id)
		_, err = c.Release(ctx, id)
		assert.ErrorIs(t, err, asyncevent.ErrInvalidID, "release %q", id)
	}
	_, err = c.Confirm(ctx, "no-such-request")
	assert.ErrorIs(t, err, asyncevent.ErrNotFound)
	_, err = c.Release(ctx, "no-such-request")
	assert.ErrorIs(t, err, asyncevent.ErrNotFound)

	for _, id := range []string{plain[0], lot[0]} {
		before, err := c.GetRequest(ctx, id)
		require.NoError(t, err)
		for _, call := range []func(context.Context, string) (asyncevent.Transition, error){c.Confirm, c.Release} {
			tr, err := call(ctx, id)
			require.NoError(t, err)
			assert.False(t, tr.Applied)
			require.NotNil(t, tr.Current)
			assert.Equal(t, before.Status, tr.Current.Status)
		}
		after, err := c.GetRequest(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, before.Status, after.Status)
		assert.Equal(t, before.ResultCode, after.ResultCode)
	}

	_, err = c.SweepHolds(ctx, "no-such-event", asyncevent.HoldSweepOptions{})
	assert.ErrorIs(t, err, asyncevent.ErrEventNotFound)
	_, err = c.SweepHolds(ctx, "a#b", asyncevent.HoldSweepOptions{})
	assert.ErrorIs(t, err, asyncevent.ErrInvalidID)
	for _, ev := range []string{"nohold", "lot"} {
		_, err = c.SweepHolds(ctx, ev, asyncevent.HoldSweepOptions{})
		assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions, ev)
	}
	rep, err := c.SweepHolds(ctx, "bad", asyncevent.HoldSweepOptions{MaxWrites: -5})
	require.NoError(t, err)
	assert.False(t, rep.More)

	// Messages say nothing of holds: a body that does is malformed (an unknown field).
	for _, hold := range []int64{1, 9999, -1, asyncevent.MaxHoldFor.Milliseconds() + 1} {
		m := holdMessage(t, c, held[0], 1, 0)
		body := []byte(`{"v":1,"requestId":"` + m.RequestID + `","eventId":"bad","userId":"x","eventType":"FIRST_COME","requestedAt":` +
			strconv.FormatInt(int64(m.RequestedAt), 10) + `,"capacityShards":1,"holdForMillis":` + strconv.FormatInt(hold, 10) + `}`)
		_, err = asyncevent.DecodeMessage(body)
		assert.ErrorIs(t, err, asyncevent.ErrMalformedMessage, "holdForMillis %d", hold)
	}
	r, err := c.GetRequest(ctx, held[0])
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusHeld, r.Status)

	// A HELD request's message again: a duplicate, still HELD.
	res := asynceventtest.Work(ctx, t, c, holdMessage(t, c, held[0], 1, 2*time.Minute), asyncevent.ProcessOptions{})
	r, err = c.GetRequest(ctx, held[0])
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusHeld, r.Status, "outcome %s", res.Kind)
}

// CHECK: lost answers. A confirm, a release and an expiry whose transaction DynamoDB
// applied but whose answer was lost (the caller sees an error), then called again:
// the seat is given back once, the second call sees a clear outcome.
func TestReviewLostAnswersThenRetried(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "lost", 3, 1, time.Minute, 0)
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := reviewSubmit(t, c, clock, q, "lost", reviewUsers("l", 0, 6))
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)

	faulty := asynceventtest.NewFaultyDynamoDB(asynceventtest.DynamoDB(t), asynceventtest.FaultPlan{
		LoseRate: 1, Operations: []string{"TransactWriteItems"},
	})
	fc, err := asyncevent.New(faulty, asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)

	_, err = fc.Confirm(ctx, ids[0])
	require.Error(t, err, "the answer was lost")
	tr, err := c.Confirm(ctx, ids[0])
	require.NoError(t, err)
	assert.False(t, tr.Applied)
	assert.Equal(t, asyncevent.StatusSucceeded, tr.Current.Status, "the retry sees it confirmed")

	_, err = fc.Release(ctx, ids[1])
	require.Error(t, err)
	tr, err = c.Release(ctx, ids[1])
	require.NoError(t, err)
	assert.False(t, tr.Applied)
	assert.Equal(t, asyncevent.ResultReleased, tr.Current.ResultCode)
	tr, err = c.Confirm(ctx, ids[1])
	require.NoError(t, err)
	assert.False(t, tr.Applied, "a released hold cannot be confirmed")

	clock.Advance(2 * time.Minute)
	_, err = fc.SweepHolds(ctx, "lost", asyncevent.HoldSweepOptions{})
	require.Error(t, err, "the expiry's answer was lost")
	for range 3 {
		_, err = c.SweepHolds(ctx, "lost", asyncevent.HoldSweepOptions{})
		require.NoError(t, err)
	}
	got := byStatus(t, c, ids)
	assert.Equal(t, []string{ids[0]}, got[asyncevent.StatusSucceeded])
	assert.Equal(t, ids[3:5], got[asyncevent.StatusHeld], "two seats given back, the first two of the waitlist hold them")
	assert.Equal(t, ids[5:], got[asyncevent.StatusWaitlisted])
	asynceventtest.CheckEvent(t, c, "lost", asynceventtest.CheckOptions{})
	reviewEveryHeldHasItsHoldItem(t, c, "lost", ids)
}

// CHECK: several sweeps at once (workers' leased sweeps, a CLI's unleased one, on
// clients with skewed clocks) racing confirms and releases: every hold ends once, no
// seat is handed on twice, the waitlist is served in queue order.
func TestReviewConcurrentSweepsRacingPayers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now, StatusLog: true})
	holdsEvent(t, c, "many", 12, 3, time.Minute, 0)
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := reviewSubmit(t, c, clock, q, "many", reviewUsers("c", 0, 60))
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)

	var sweepers []*asyncevent.Client
	for _, skew := range []time.Duration{-2 * time.Second, 0, 2 * time.Second, time.Second} {
		cl := asynceventtest.NewClock(clock.Now().Add(skew))
		sc, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: cl.Now, StatusLog: true})
		require.NoError(t, err)
		sweepers = append(sweepers, sc)
	}
	for round := range 4 {
		clock.Advance(time.Minute - time.Second)
		var wg sync.WaitGroup
		got := byStatus(t, c, ids)
		for i, id := range got[asyncevent.StatusHeld] {
			wg.Go(func() {
				switch (i + round) % 3 {
				case 0:
					_, err := c.Confirm(ctx, id)
					assert.NoError(t, err)
				case 1:
					_, err := c.Release(ctx, id)
					assert.NoError(t, err)
				}
			})
		}
		for i, sc := range sweepers {
			wg.Go(func() {
				owner := ""
				if i < 2 {
					owner = fmt.Sprintf("w%d", i)
				}
				for range 3 {
					_, err := sc.SweepHolds(ctx, "many", asyncevent.HoldSweepOptions{Owner: owner, MaxWrites: 3})
					assert.NoError(t, err)
				}
			})
		}
		wg.Wait()
		clock.Advance(2 * time.Second)
		for range 10 {
			rep, err := c.SweepHolds(ctx, "many", asyncevent.HoldSweepOptions{})
			require.NoError(t, err)
			if !rep.More && rep.Expired+rep.Served == 0 {
				break
			}
		}
		asynceventtest.CheckEvent(t, c, "many", asynceventtest.CheckOptions{})
		reviewEveryHeldHasItsHoldItem(t, c, "many", ids)
	}
	got := byStatus(t, c, ids)
	// Queue order: every request served before another still waiting was queued earlier.
	lastServed := -1
	for i, id := range ids {
		r, err := c.GetRequest(ctx, id)
		require.NoError(t, err)
		if r.ServedAt != 0 {
			lastServed = i
		}
	}
	for _, id := range got[asyncevent.StatusWaitlisted] {
		assert.Greater(t, indexOf(ids, id), lastServed, "a waiting request queued before a served one")
	}
}

func indexOf(ids []string, id string) int {
	for i, x := range ids {
		if x == id {
			return i
		}
	}
	return -1
}

// slowPuts delays the PutItem calls of a client (its Hold items) once armed, one at a
// time, as a process paused in the middle of one would be: its UpdateItem calls (the
// lease's heartbeat among them) wait for the put too. The waits are on channels, which
// an asynceventtest.InBubble clock waits out (a mutex would hold it still).
type slowPuts struct {
	asyncevent.DynamoDB
	armed   atomic.Bool
	delay   time.Duration
	started chan struct{}
	mu      sync.Mutex
	paused  chan struct{} // closed when the slow put under way ends; nil while none is
}

func (s *slowPuts) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if s.armed.Load() {
		done := make(chan struct{})
		for prev := s.pause(done); prev != nil; prev = s.pause(done) {
			<-prev
		}
		select {
		case s.started <- struct{}{}:
		default:
		}
		time.Sleep(s.delay)
		s.mu.Lock()
		s.paused = nil
		s.mu.Unlock()
		close(done)
	}
	return s.DynamoDB.PutItem(ctx, in, optFns...)
}

// pause marks a slow put under way, its end closing done, unless one is: then it
// returns that one's channel.
func (s *slowPuts) pause(done chan struct{}) (prev chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.paused != nil {
		return s.paused
	}
	s.paused = done
	return nil
}

func (s *slowPuts) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	s.mu.Lock()
	paused := s.paused
	s.mu.Unlock()
	if paused != nil {
		<-paused
	}
	return s.DynamoDB.UpdateItem(ctx, in, optFns...)
}

// CHECK: a lease taken over while the old holder runs, with holds. The old delivery
// has claimed its seat under its lease; its Hold item's write is slow, and its lease
// runs out meanwhile; a new delivery takes the request over, finds the seat and holds
// it. The old one's Hold item then lands and its HELD write fails: one seat, one
// hold, the stray Hold item cleared by the sweep and not taken for an expiry. The slow
// put, the lease's run-out and the stray's run-out are waited InBubble, at no wall
// time.
func TestReviewLeaseTakenOverWhileTheOldHolderRuns(t *testing.T) {
	t.Parallel()
	asynceventtest.InBubble(t, func(t *testing.T) {
		ctx := context.Background()
		c := asynceventtest.NewTable(t)
		holdsEvent(t, c, "takeover", 2, 1, asyncevent.MinHoldFor, 0)
		q := queue.NewMemory(queue.MemoryOptions{})
		p, err := c.Submit(ctx, q, "takeover", "slow")
		require.NoError(t, err)
		id := p.RequestID

		slow := &slowPuts{DynamoDB: asynceventtest.DynamoDB(t), delay: 1500 * time.Millisecond, started: make(chan struct{}, 1)}
		slow.armed.Store(true)
		oc, err := asyncevent.New(slow, asyncevent.Options{TableName: c.TableName()})
		require.NoError(t, err)
		ok := asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error { return nil })
		m := holdMessage(t, c, id, 1, asyncevent.MinHoldFor)
		done := make(chan asynceventtest.WorkResult, 1)
		go func() {
			done <- asynceventtest.Work(ctx, t, oc, m, asyncevent.ProcessOptions{Handler: ok, LeaseDuration: 300 * time.Millisecond})
		}()
		<-slow.started
		time.Sleep(500 * time.Millisecond) // the old lease ran out; its Hold item is on its way
		res := asynceventtest.Work(ctx, t, c, m, asyncevent.ProcessOptions{Handler: ok})
		assert.Equal(t, asyncevent.OutcomeHeld, res.Kind)
		old := <-done
		assert.NotEqual(t, asyncevent.OutcomeHeld, old.Kind, "the old holder lost its lease: %+v", old.Outcome)
		capacity, err := c.GetCapacity(ctx, "takeover")
		require.NoError(t, err)
		assert.EqualValues(t, 1, capacity.CapacityRemaining, "one seat taken")
		holds := reviewHoldItems(t, c, "takeover")
		assert.Len(t, holds[id], 2, "the new delivery's Hold item and the old one's stray")
		reviewEveryHeldHasItsHoldItem(t, c, "takeover", []string{id})
		asynceventtest.CheckEvent(t, c, "takeover", asynceventtest.CheckOptions{})

		r, err := c.GetRequest(ctx, id)
		require.NoError(t, err)
		for _, at := range holds[id] {
			if at < r.HoldExpiresAt { // the stray runs out first: a sweep then must not expire the hold
				time.Sleep(time.Until(at.Time().Add(5 * time.Millisecond)))
				rep, err := c.SweepHolds(ctx, "takeover", asyncevent.HoldSweepOptions{})
				require.NoError(t, err)
				if time.Now().Before(r.HoldExpiresAt.Time()) {
					assert.Equal(t, 0, rep.Expired, "the stray is not the hold")
				}
			}
		}
		tr, err := c.Confirm(ctx, id)
		require.NoError(t, err)
		assert.True(t, tr.Applied, "the hold still runs")
	})
}

// CHECK: the sold-out path stays one write per loser with holds: a loser of a sold-out
// event with holds costs what a loser of one without holds does (a look and one
// write).
func TestReviewSoldOutLoserCostsTheSameWithHolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cost := func(hold time.Duration) asynceventtest.Counts {
		clock := asynceventtest.NewClock(t0)
		c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
		holdsEvent(t, c, "cost", 2, 1, hold, 0)
		q := queue.NewMemory(queue.MemoryOptions{})
		reviewSubmit(t, c, clock, q, "cost", reviewUsers("k", 0, 22))
		counter := asynceventtest.NewCounter(asynceventtest.DynamoDB(t))
		cc, err := asyncevent.New(counter, asyncevent.Options{ProgressEvery: -1, TableName: c.TableName(), Clock: clock.Now})
		require.NoError(t, err)
		proc := asyncevent.NewProcessor(cc, asyncevent.ProcessOptions{})
		var before asynceventtest.Counts
		for i := 0; ; i++ {
			ds, err := q.Receive(ctx, 1, 0, time.Minute)
			require.NoError(t, err)
			if len(ds) == 0 {
				break
			}
			if i == 4 { // two winners, two losers that find the sell-out
				before = counter.Snapshot()
			}
			require.Empty(t, asynceventtest.Process(ctx, proc, ds))
		}
		return counter.Snapshot().Sub(before)
	}
	without, with := cost(0), cost(time.Minute)
	t.Logf("18 losers: without holds %+v; with holds %+v", without.Calls, with.Calls)
	assert.Equal(t, without.Calls, with.Calls, "the same calls per sold-out loser")
	assert.InDelta(t, without.WCU, with.WCU, 0.01)
}

// Many holds released at once: each release is a transaction on the event's one
// Returns item. Does each caller get an answer, or do releases fail for conflicts?
func TestReviewReleasesAtOnceOnTheReturnsItem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "rush", 60, 4, time.Minute, 0)
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := reviewSubmit(t, c, clock, q, "rush", reviewUsers("r", 0, 80))
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)
	var wg sync.WaitGroup
	var failed atomic.Int32
	for _, id := range ids[:60] {
		wg.Go(func() {
			if _, err := c.Release(ctx, id); err != nil {
				failed.Add(1)
				t.Logf("release %s: %v", id, err)
			}
		})
	}
	wg.Wait()
	assert.Zero(t, failed.Load(), "60 releases at once: every one answered")
	asynceventtest.CheckEvent(t, c, "rush", asynceventtest.CheckOptions{Unsettled: true})
}

// CHECK: processing under lost answers and failures of every write (the home claim,
// the Hold item, HELD, the leased way), then the sweep: no HELD request is without
// its Hold item at its expiry, and the seats add up.
func TestReviewEveryHeldRequestHasItsHoldItemUnderFaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "faults", 10, 2, time.Minute, 0)
	q := queue.NewMemory(queue.MemoryOptions{Clock: clock.Now})
	ids := reviewSubmit(t, c, clock, q, "faults", reviewUsers("f", 0, 30))
	faulty := asynceventtest.NewFaultyDynamoDB(asynceventtest.DynamoDB(t), asynceventtest.FaultPlan{
		Seed: reviewSeed(11), FailRate: 0.1, LoseRate: 0.2, ThrottleRate: 0.05,
	})
	fc, err := asyncevent.New(faulty, asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	for _, h := range []asyncevent.Handler{nil, asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error { return nil })} {
		proc := asyncevent.NewProcessor(fc, asyncevent.ProcessOptions{Handler: h, MaxReceives: 100, LeaseDuration: time.Second,
			Backoff: func(int) time.Duration { return 0 }})
		for range 400 {
			ds, err := q.Receive(ctx, 5, 0, time.Second)
			require.NoError(t, err)
			if len(ds) == 0 {
				if l := q.Len(); l.Visible+l.InFlight == 0 {
					break
				}
				clock.Advance(2 * time.Second)
				time.Sleep(50 * time.Millisecond)
				continue
			}
			asynceventtest.Process(ctx, proc, ds)
			clock.Advance(100 * time.Millisecond)
		}
		if h == nil {
			// the second round: every message again, the leased way
			for _, id := range ids {
				body, err := asyncevent.EncodeMessage(holdMessage(t, c, id, 2, time.Minute))
				require.NoError(t, err)
				require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: body}))
			}
		}
	}
	reviewEveryHeldHasItsHoldItem(t, c, "faults", ids)
	rep0 := asynceventtest.CheckEvent(t, c, "faults", asynceventtest.CheckOptions{Unsettled: true})
	t.Logf("after processing under faults %+v: %v; Hold items %d", faulty.Counts(), rep0.ByStatus, len(reviewHoldItems(t, c, "faults")))
	clock.Advance(5 * time.Minute)
	for range 10 {
		rep, err := c.SweepHolds(ctx, "faults", asyncevent.HoldSweepOptions{})
		require.NoError(t, err)
		if !rep.More && rep.Expired+rep.Served+rep.Cleared == 0 {
			break
		}
	}
	reviewEveryHeldHasItsHoldItem(t, c, "faults", ids)
	asynceventtest.CheckEvent(t, c, "faults", asynceventtest.CheckOptions{Unsettled: true})
}

// Cost of an idle pass: a Worker sweeps every event with holds it has met, every
// second, for as long as it runs. Once the event has closed and its waitlist has
// ended, what does one pass (with the worker's lease) cost?
func TestReviewIdlePassAfterTheCloseIsCheap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "idle", 150, 1, time.Minute, asyncevent.MillisOf(t0.Add(time.Hour)))
	q := queue.NewMemory(queue.MemoryOptions{})
	reviewSubmit(t, c, clock, q, "idle", reviewUsers("i", 0, 170))
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)
	clock.Advance(2 * time.Hour)
	counter := asynceventtest.NewCounter(asynceventtest.DynamoDB(t))
	sc, err := asyncevent.New(counter, asyncevent.Options{ProgressEvery: -1, TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	for range 3 { // the close: the holds expire, the waitlist ends
		_, err := sc.SweepHolds(ctx, "idle", asyncevent.HoldSweepOptions{Owner: "w"})
		require.NoError(t, err)
		clock.Advance(time.Second)
	}
	before := counter.Snapshot()
	rep, err := sc.SweepHolds(ctx, "idle", asyncevent.HoldSweepOptions{Owner: "w"})
	require.NoError(t, err)
	require.Zero(t, rep.Expired+rep.Served+rep.Closed)
	d := counter.Snapshot().Sub(before)
	t.Logf("one idle pass after the close: %+v calls, %.1f RCU, %.1f WCU; at one pass a second: %.0f RCU an hour", d.Calls, d.RCU, d.WCU, d.RCU*3600)
	assert.Less(t, d.RCU, 5.0, "an idle pass of a closed event reads next to nothing")
}

// reviewSeed is REVIEW_SEED when set, else def.
func reviewSeed(def int64) int64 {
	if v, err := strconv.ParseInt(os.Getenv("REVIEW_SEED"), 10, 64); err == nil {
		return v
	}
	return def
}
