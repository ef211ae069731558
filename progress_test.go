package asyncevent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// poll is one answer of GetRequest to a request waiting in line.
type poll struct {
	id  string
	at  time.Time
	est asyncevent.QueueEstimate
}

// A known backlog drained at a known rate: after the first seconds, the place in
// line a poll is told is within 10% of the true one (the requests queued before it
// that no worker had finished at that moment), and the wait within 20% of the time
// it actually waited. The client's clock is the test's, so that the rate is the
// test's and not the machine's: 600 clicks, one every 5 ms (so that the arrivals of a
// tenth of a second are spread evenly over it, as the estimate takes them, and no two
// share a queuedAt; clicks at once from many clients would bunch them by the order
// their goroutines happened to read the clock), then the workers finish
// five requests every 200 ms (25 a second) in queue order, writing their counts as
// they go, and a poll every 400 ms asks five requests spread over the line.
func TestPlaceInLineIsHonest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now, ProgressEvery: 500 * time.Millisecond, ProgressCacheTTL: 200 * time.Millisecond})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "line", EventType: asyncevent.FirstCome, CapacityTotal: 10, IndexShards: 16})
	require.NoError(t, err)
	// The messages reach the workers' queue in queue order (queuedAt), which a
	// standard queue keeps only roughly: the test is of the estimate's math, and
	// docs/design.md says what the queue's order costs it.
	const backlog = 600
	sent := &sentMessages{byRequest: map[string]queue.OutgoingMessage{}}
	for i := range backlog {
		clock.Advance(5 * time.Millisecond)
		_, err := c.Submit(ctx, sent, "line", fmt.Sprintf("user-%05d", i))
		require.NoError(t, err)
	}
	require.NoError(t, c.FlushProgress(ctx))
	q := queue.NewMemory(queue.MemoryOptions{Clock: clock.Now}) // no message comes back: they are not deleted
	var ids []string
	for cursor := ""; ; {
		page, err := c.ListEventRequests(ctx, "line", asyncevent.EventListOptions{PageOptions: asyncevent.PageOptions{Limit: 500, Cursor: cursor}})
		require.NoError(t, err)
		for _, r := range page.Requests {
			ids = append(ids, r.RequestID)
			require.NoError(t, q.Send(ctx, sent.byRequest[r.RequestID]))
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	require.Len(t, ids, backlog)

	began := clock.Now()
	proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	var polls []poll
	for step := 1; ; step++ {
		clock.Advance(200 * time.Millisecond)
		ds, err := q.Receive(ctx, 5, 0, time.Minute)
		require.NoError(t, err)
		if len(ds) == 0 {
			break
		}
		require.Empty(t, asynceventtest.Process(ctx, proc, ds), "every message done")
		require.NoError(t, c.FlushProgress(ctx))
		if step%2 != 0 {
			continue
		}
		for k := 1; k <= 5; k++ {
			id := ids[k*backlog/6]
			r, err := c.GetRequest(ctx, id)
			require.NoError(t, err)
			if r.Queue != nil {
				polls = append(polls, poll{id: id, at: clock.Now(), est: *r.Queue})
			}
		}
	}
	require.NoError(t, c.FlushProgress(ctx))

	final := map[string]*asyncevent.Request{}
	for _, id := range ids {
		r, err := c.GetRequest(ctx, id)
		require.NoError(t, err)
		require.NotEqual(t, asyncevent.StatusQueued, r.Status)
		assert.Nil(t, r.Queue, "a final request has no place in line")
		final[id] = r
	}
	checked := 0
	for _, p := range polls {
		if p.at.Sub(began) < 5*time.Second {
			continue // the first seconds: the rate is measured over too little yet
		}
		me := final[p.id]
		ahead := 0
		for _, r := range final {
			if r.QueuedAt < me.QueuedAt && r.FinishedAt.Time().After(p.at) {
				ahead++
			}
		}
		wait := me.FinishedAt.Time().Sub(p.at)
		if ahead < 60 {
			continue // near the front a few requests either way are more than 10%
		}
		checked++
		assert.InDelta(t, ahead, p.est.Ahead, 0.1*float64(ahead), "%s polled at +%v: %d ahead", p.id, p.at.Sub(began), ahead)
		assert.InDelta(t, wait.Seconds(), p.est.Wait.Seconds(), 0.2*wait.Seconds(), "%s polled at +%v: waited %v (rate %.1f/s)", p.id, p.at.Sub(began), wait, p.est.Rate)
	}
	assert.Greater(t, checked, 10, "polls checked")
	t.Logf("%d polls, %d checked", len(polls), checked)

	st, err := c.QueueStats(ctx, "line")
	require.NoError(t, err)
	assert.Zero(t, st.Depth, "drained")
	assert.NotEmpty(t, st.Series)
	peak := slices.MaxFunc(st.Series, func(a, b asyncevent.QueuePoint) int { return int(a.Depth - b.Depth) })
	assert.LessOrEqual(t, peak.Depth, int64(backlog))
	assert.Greater(t, peak.Depth, int64(backlog-50), "the line's deepest second is the backlog, less what the workers took in that second")
	assert.InDelta(t, 25, st.Series[len(st.Series)/2].Rate, 1, "the rate in the middle of the drain")
}

// sentMessages is a queue that only keeps what was sent to it, by request.
type sentMessages struct {
	queue.Queue
	mu        sync.Mutex
	byRequest map[string]queue.OutgoingMessage
}

func (s *sentMessages) Send(_ context.Context, m queue.OutgoingMessage) error {
	var body asyncevent.Message
	if err := json.Unmarshal(m.Body, &body); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byRequest[body.RequestID] = m
	return nil
}

// A timer that fired while another flush held the lock, which took its counts, writes
// nothing: the counts of a later arming wait for their own timer, at the next
// multiple (at most one write per event and second counted a multiple).
func TestAFiredTimerTakesALaterArmingsCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	every := 400 * time.Millisecond
	clock := asynceventtest.NewClock(time.Now().Truncate(every).Add(10 * time.Millisecond))
	c, db, submit := gatedProgress(t, asyncevent.Options{Clock: clock.Now, ProgressEvery: every, ProgressCacheTTL: time.Nanosecond}, make(chan struct{}, 16))
	defer close(db.proceed)

	submit("u1") // arms T1, due K+400
	a := make(chan error, 1)
	go func() { a <- c.FlushDueProgress(ctx) }() // nothing written since K: at once; stops T1
	<-db.began                                   // A holds the flush, its write held
	submit("u2")                                 // arms T2: 390 ms of real time, due K+400
	clock.Advance(every)                         // K+410: u2's multiple has come
	b := make(chan error, 1)
	go func() { b <- c.FlushDueProgress(ctx) }() // due: waits for A, first in line
	time.Sleep(every + 100*time.Millisecond)     // T2 fires, its flush waits for A, second in line
	db.proceed <- struct{}{}                     // A's write lands; B takes u2 (T2 has fired: Stop fails)
	require.NoError(t, <-a)
	<-db.began   // B's write held
	submit("u3") // arms T3: due K+800, 390 ms of real time away
	db.proceed <- struct{}{}
	require.NoError(t, <-b)
	// B released the flush: T2's waiting flush must leave u3 to T3.
	select {
	case <-db.began:
		db.proceed <- struct{}{}
		time.Sleep(20 * time.Millisecond)
		t.Fatalf("u3's counts written at once after B (%d writes in all, 2 in the multiple at K+400), not at their multiple K+800", db.writes.Load())
	case <-time.After(200 * time.Millisecond): // T3 fires only at 390 ms
	}
}

// An invocation's counts are written at its end when the invocations come less often
// than ProgressEvery, also after a thaw: the thawed timer that writes the pause's
// counts (a multiple or more late) does not count as the write since the multiple.
func TestAThawedTimerHoldsTheNextInvocationsCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	every := 200 * time.Millisecond
	proceed := make(chan struct{})
	close(proceed) // no write held
	clock := asynceventtest.NewClock(time.Now().Truncate(time.Second).Add(10 * time.Millisecond))
	c, db, submit := gatedProgress(t, asyncevent.Options{Clock: clock.Now, ProgressEvery: every, ProgressCacheTTL: time.Nanosecond}, proceed)
	invoke := func(user string) {
		submit(user)
		require.NoError(t, c.FlushDueProgress(ctx))
	}
	invoke("u1") // K+10: written at once
	require.EqualValues(t, 1, db.writes.Load())
	clock.Advance(40 * time.Millisecond)
	invoke("u2") // K+50: the second in the multiple, pending; its timer due K+200 ("frozen")
	require.EqualValues(t, 1, db.writes.Load())
	clock.Advance(5 * time.Second) // the next invocation, 5 s later: the sandbox is thawed
	require.Eventually(t, func() bool { return db.writes.Load() == 2 }, 10*time.Second, 5*time.Millisecond,
		"the thawed timer fires at once and writes u2")
	invoke("u3") // 5 s after the last invocation: sparser than ProgressEvery
	require.EqualValues(t, 3, db.writes.Load(), "an invocation 5 s after the last: its count is written at its end")
}

// loseDB applies a call, then loses its answer, when lose says so.
type loseDB struct {
	asyncevent.DynamoDB
	lose func(op, pk string) bool
}

func (d *loseDB) Unwrap() asyncevent.DynamoDB { return d.DynamoDB }

func pkS(key map[string]types.AttributeValue) string {
	if s, ok := key["PK"].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

var errLost = errors.New("probe: connection reset after the call was applied")

func (d *loseDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := d.DynamoDB.UpdateItem(ctx, in, o...)
	if err == nil && d.lose != nil && d.lose("UpdateItem", pkS(in.Key)) {
		return nil, errLost
	}
	return out, err
}

func (d *loseDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	out, err := d.DynamoDB.TransactWriteItems(ctx, in, o...)
	if err == nil && d.lose != nil {
		for _, it := range in.TransactItems {
			var pk string
			switch {
			case it.Update != nil:
				pk = pkS(it.Update.Key)
			case it.Put != nil:
				pk = pkS(it.Put.Item)
			}
			if pk != "" && d.lose("TransactWriteItems", pk) {
				return nil, errLost
			}
		}
	}
	return out, err
}

// failingQueue refuses every send while fail is set.
type failingQueue struct {
	queue.Queue
	fail atomic.Bool
}

func (q *failingQueue) Send(ctx context.Context, m queue.OutgoingMessage) error {
	if q.fail.Load() {
		return errors.New("probe: SQS unavailable")
	}
	return q.Queue.Send(ctx, m)
}

// slowFailQuery makes every Query of a progress partition take 100 ms and fail.
type slowFailQuery struct {
	asyncevent.DynamoDB
	calls atomic.Int64
}

func (d *slowFailQuery) Unwrap() asyncevent.DynamoDB { return d.DynamoDB }

func (d *slowFailQuery) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	for _, v := range in.ExpressionAttributeValues {
		if s, ok := v.(*types.AttributeValueMemberS); ok && strings.Contains(s.Value, "#PROGRESS#") {
			d.calls.Add(1)
			time.Sleep(100 * time.Millisecond)
			return nil, errors.New("probe: progress partition unavailable")
		}
	}
	return d.DynamoDB.Query(ctx, in, o...)
}

// A progress write applied whose answer is lost is not sent again: an ADD sent
// twice would count its requests twice for good; its counts are dropped instead.
func TestALostProgressAnswerIsNotCountedTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var lost atomic.Int32
	db := &loseDB{DynamoDB: asynceventtest.DynamoDB(t), lose: func(op, pk string) bool {
		return strings.Contains(pk, "#PROGRESS#") && lost.Add(1) == 1
	}}
	c := asynceventtest.NewTableOn(t, db, asyncevent.Options{ProgressEvery: time.Hour, ProgressCacheTTL: time.Nanosecond})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "dbl", EventType: asyncevent.FirstCome, CapacityTotal: 100})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	for i := range 10 {
		_, err := c.Submit(ctx, q, "dbl", fmt.Sprintf("u%d", i))
		require.NoError(t, err)
	}
	require.Error(t, c.FlushProgress(ctx), "the answer lost")
	require.NoError(t, c.FlushProgress(ctx), "nothing put back")
	st, err := c.QueueStats(ctx, "dbl")
	require.NoError(t, err)
	assert.EqualValues(t, 10, st.Depth, "the write applied once")
}

// A request whose send failed (FAILED_INGEST_ENQUEUE) leaves the line: no worker
// will reach it, and the requests after it are not told it is ahead of them.
func TestARequestThatFailsAtEnqueueLeavesTheLine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(time.Now())
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now, ProgressEvery: time.Second, ProgressCacheTTL: time.Nanosecond})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "ph", EventType: asyncevent.FirstCome, CapacityTotal: 100})
	require.NoError(t, err)
	q := &failingQueue{Queue: queue.NewMemory(queue.MemoryOptions{})}
	q.fail.Store(true)
	for i := range 20 {
		clock.Advance(50 * time.Millisecond)
		_, err := c.Submit(ctx, q, "ph", fmt.Sprintf("u%d", i))
		require.ErrorIs(t, err, asyncevent.ErrEnqueueFailed)
	}
	q.fail.Store(false)
	var last string
	for i := range 21 { // the same users click again, and one more
		clock.Advance(50 * time.Millisecond)
		p, err := c.Submit(ctx, q, "ph", fmt.Sprintf("u%d", i))
		require.NoError(t, err)
		last = p.RequestID
	}
	proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	for range 2 { // the workers take all but the last
		ds, err := q.Receive(ctx, 10, 0, time.Minute)
		require.NoError(t, err)
		asynceventtest.Process(ctx, proc, ds)
	}
	require.NoError(t, c.FlushProgress(ctx))
	clock.Advance(15 * time.Second)
	r, err := c.GetRequest(ctx, last)
	require.NoError(t, err)
	require.Equal(t, asyncevent.StatusQueued, r.Status)
	require.NotNil(t, r.Queue)
	assert.EqualValues(t, 0, r.Queue.Ahead, "nobody is ahead of the last request")
	st, err := c.QueueStats(ctx, "ph")
	require.NoError(t, err)
	assert.EqualValues(t, 1, st.Depth, "the last request waits alone")
}

// Counts that land late (a node whose clock is behind, a write throttled for a
// while, a Lambda sandbox thawed) reach a node whose copy is warm within a minute:
// a refresh reads the whole span again once a minute.
func TestLateCountsReachAWarmCopyWithinAMinute(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Now()
	readerClock := asynceventtest.NewClock(now)
	reader := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: readerClock.Now, ProgressEvery: time.Hour, ProgressCacheTTL: time.Second})
	_, err := reader.CreateEvent(ctx, asyncevent.EventSettings{EventID: "late", EventType: asyncevent.FirstCome, CapacityTotal: 100})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	_, err = reader.Submit(ctx, q, "late", "on-time")
	require.NoError(t, err)
	require.NoError(t, reader.FlushProgress(ctx))
	st, err := reader.QueueStats(ctx, "late") // the reader's copy, warm
	require.NoError(t, err)
	require.EqualValues(t, 1, st.Depth)

	behind := asynceventtest.NewClock(now.Add(-90 * time.Second)) // an ingest node 90 s behind
	ingest, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: reader.TableName(), Clock: behind.Now, ProgressEvery: time.Hour})
	require.NoError(t, err)
	for i := range 30 {
		_, err := ingest.Submit(ctx, q, "late", fmt.Sprintf("behind-%d", i))
		require.NoError(t, err)
	}
	require.NoError(t, ingest.FlushProgress(ctx))

	readerClock.Advance(2 * time.Second)
	st, err = reader.QueueStats(ctx, "late")
	require.NoError(t, err)
	t.Logf("2 s later the warm copy says %d waiting", st.Depth)
	readerClock.Advance(time.Minute)
	warm, err := reader.QueueStats(ctx, "late")
	require.NoError(t, err)
	cold, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: reader.TableName(), Clock: readerClock.Now})
	require.NoError(t, err)
	fresh, err := cold.QueueStats(ctx, "late")
	require.NoError(t, err)
	assert.EqualValues(t, 31, warm.Depth, "a minute later the warm copy has the late counts")
	assert.Equal(t, fresh.Depth, warm.Depth, "two nodes read the same table alike")
}

// A read of the progress that fails is not tried again by every poll: one read,
// remembered for ProgressCacheTTL, and the polls answer without a place in line.
func TestAFailedProgressReadIsNotTriedByEveryPoll(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTableWith(t, asyncevent.Options{})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "fail", EventType: asyncevent.FirstCome, CapacityTotal: 10})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	p, err := c.Submit(ctx, q, "fail", "u")
	require.NoError(t, err)
	db := &slowFailQuery{DynamoDB: asynceventtest.DynamoDB(t)}
	node, err := asyncevent.New(db, asyncevent.Options{TableName: c.TableName(), ProgressCacheTTL: time.Minute})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for range 30 {
		wg.Go(func() {
			r, err := node.GetRequest(ctx, p.RequestID)
			if assert.NoError(t, err) {
				assert.Nil(t, r.Queue, "no place in line without the progress")
			}
		})
	}
	wg.Wait()
	assert.EqualValues(t, 1, db.calls.Load(), "one read of the progress for 30 polls")
}

// Counts, timer flushes, FlushProgress and polls at once (run with -race): nothing
// lost, nothing counted twice.
func TestProgressCountsUnderConcurrency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTableWith(t, asyncevent.Options{ProgressEvery: 3 * time.Millisecond, ProgressCacheTTL: time.Millisecond})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "race", EventType: asyncevent.FirstCome, CapacityTotal: 1000})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		ids []string
	)
	for w := range 6 {
		wg.Go(func() {
			for i := range 40 {
				p, err := c.Submit(ctx, q, "race", fmt.Sprintf("u%d-%d", w, i))
				if assert.NoError(t, err) {
					mu.Lock()
					ids = append(ids, p.RequestID)
					mu.Unlock()
				}
				if i%5 == 0 {
					_ = c.FlushProgress(ctx)
				}
			}
		})
	}
	wg.Go(func() {
		for range 100 {
			_, _ = c.QueueStats(ctx, "race")
			mu.Lock()
			var id string
			if len(ids) > 0 {
				id = ids[len(ids)-1]
			}
			mu.Unlock()
			if id != "" {
				_, _ = c.GetRequest(ctx, id)
			}
		}
	})
	wg.Wait()
	require.NoError(t, c.FlushProgress(ctx))
	fresh, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName()})
	require.NoError(t, err)
	st, err := fresh.QueueStats(ctx, "race")
	require.NoError(t, err)
	assert.EqualValues(t, 240, st.Depth)
}

// A poll reads the progress again where its copy would place it poorly, and no more
// often than every 200 ms a node: a request queued past the counts that are complete
// (its arrivals still landing) gets a fresher read; a request settled far back in a
// line no worker moves takes the copy for ProgressCacheTTL.
func TestAPollRefreshesWhereItsCopyIsStale(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(time.Now())
	admin := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	_, err := admin.CreateEvent(ctx, asyncevent.EventSettings{EventID: "fresh", EventType: asyncevent.FirstCome, CapacityTotal: 10})
	require.NoError(t, err)
	counter := asynceventtest.NewCounter(asynceventtest.DynamoDB(t))
	node, err := asyncevent.New(counter, asyncevent.Options{TableName: admin.TableName(), Clock: clock.Now, ProgressCacheTTL: 10 * time.Second})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	old, err := node.Submit(ctx, q, "fresh", "early")
	require.NoError(t, err)
	clock.Advance(5 * time.Second)
	young, err := node.Submit(ctx, q, "fresh", "late")
	require.NoError(t, err)
	require.NoError(t, node.FlushProgress(ctx))
	queries := func() int { return counter.Snapshot().Calls["Query"] }

	_, err = node.GetRequest(ctx, old.RequestID) // the first read
	require.NoError(t, err)
	base := queries()
	for range 5 { // the same moment: the copy stands
		_, err = node.GetRequest(ctx, young.RequestID)
		require.NoError(t, err)
	}
	assert.Equal(t, base, queries(), "within 200 ms, no read again")
	clock.Advance(250 * time.Millisecond)
	r, err := node.GetRequest(ctx, young.RequestID)
	require.NoError(t, err)
	require.NotNil(t, r.Queue)
	assert.Equal(t, base+1, queries(), "a request past the complete counts: read again")
	assert.EqualValues(t, 1, r.Queue.Ahead, "the early request, counted")
	clock.Advance(250 * time.Millisecond)
	_, err = node.GetRequest(ctx, old.RequestID)
	require.NoError(t, err)
	assert.Equal(t, base+1, queries(), "a request settled in a line no worker moves: the copy stands")
}

// A process frozen between invocations runs no timer: FlushDueProgress writes an
// invocation's counts at once when nothing was written since the last multiple of
// ProgressEvery (invocations sparser than it), and otherwise once that multiple
// has come, not before.
func TestProgressIsFlushedWhenDue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var writes atomic.Int32
	db := &loseDB{DynamoDB: asynceventtest.DynamoDB(t), lose: func(op, pk string) bool {
		if strings.Contains(pk, "#PROGRESS#") {
			writes.Add(1)
		}
		return false
	}}
	every := 10 * time.Minute // no timer fires during the test
	clock := asynceventtest.NewClock(time.Now().Truncate(every).Add(time.Second))
	opts := asyncevent.Options{Clock: clock.Now, ProgressEvery: every, ProgressCacheTTL: time.Nanosecond}
	c := asynceventtest.NewTableOn(t, db, opts)
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "due", EventType: asyncevent.FirstCome, CapacityTotal: 100})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	submit := func(user string) {
		_, err := c.Submit(ctx, q, "due", user)
		require.NoError(t, err)
	}
	submit("u0")
	require.NoError(t, c.FlushDueProgress(ctx))
	assert.EqualValues(t, 1, writes.Load(), "an invocation after none since the multiple: written at once")
	readerOpts := opts
	readerOpts.TableName = c.TableName()
	reader, err := asyncevent.New(asynceventtest.DynamoDB(t), readerOpts)
	require.NoError(t, err)
	st, err := reader.QueueStats(ctx, "due")
	require.NoError(t, err)
	assert.EqualValues(t, 1, st.Depth, "another node reads it")

	for i := range 3 {
		submit(fmt.Sprintf("u%d", i+1))
	}
	require.NoError(t, c.FlushDueProgress(ctx))
	assert.EqualValues(t, 1, writes.Load(), "written once since the multiple: not before the next")
	clock.Advance(every - 2*time.Second)
	require.NoError(t, c.FlushDueProgress(ctx))
	assert.EqualValues(t, 1, writes.Load(), "a second before it")
	clock.Advance(time.Second)
	require.NoError(t, c.FlushDueProgress(ctx))
	assert.EqualValues(t, 2, writes.Load(), "at the multiple: one write for the event's second")
	require.NoError(t, c.FlushDueProgress(ctx))
	assert.EqualValues(t, 2, writes.Load(), "nothing pending after it")
	st, err = reader.QueueStats(ctx, "due")
	require.NoError(t, err)
	assert.EqualValues(t, 4, st.Depth)
}

// gatedWrites holds each progress write until a token comes on proceed (or proceed
// is closed), and counts the writes let through.
type gatedWrites struct {
	asyncevent.DynamoDB
	began   chan struct{}
	proceed chan struct{}
	writes  atomic.Int64
}

func (d *gatedWrites) Unwrap() asyncevent.DynamoDB { return d.DynamoDB }

func (d *gatedWrites) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if strings.Contains(pkS(in.Key), "#PROGRESS#") {
		d.began <- struct{}{}
		<-d.proceed
		d.writes.Add(1)
	}
	return d.DynamoDB.UpdateItem(ctx, in, o...)
}

// gatedProgress returns a client on a table of its own whose progress writes pass
// through a gatedWrites (proceed gates them), with a FIRST_COME event, and a
// function that submits a user's click to it.
func gatedProgress(t *testing.T, opts asyncevent.Options, proceed chan struct{}) (*asyncevent.Client, *gatedWrites, func(user string)) {
	t.Helper()
	ctx := context.Background()
	db := &gatedWrites{DynamoDB: asynceventtest.DynamoDB(t), began: make(chan struct{}, 16), proceed: proceed}
	c := asynceventtest.NewTableOn(t, db, opts)
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "gated", EventType: asyncevent.FirstCome, CapacityTotal: 100})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	return c, db, func(user string) {
		_, err := c.Submit(ctx, q, "gated", user)
		require.NoError(t, err)
	}
}

// A thawed process's timer flushes at once, beside the invocation: FlushDueProgress
// at the invocation's end waits for that flush's writes, so that the process is not
// frozen in the middle of them.
func TestFlushDueProgressWaitsForAFlushUnderWay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, db, submit := gatedProgress(t, asyncevent.Options{ProgressEvery: 10 * time.Minute}, make(chan struct{}))
	submit("u1")
	timer := make(chan error, 1)
	go func() { timer <- c.FlushProgress(ctx) }() // the timer's flush
	<-db.began
	due := make(chan error, 1)
	go func() { due <- c.FlushDueProgress(ctx) }()
	select {
	case <-due:
		t.Fatal("FlushDueProgress returned while a flush was writing")
	case <-time.After(100 * time.Millisecond):
	}
	close(db.proceed)
	require.NoError(t, <-timer)
	require.NoError(t, <-due)
}

// FlushDueProgress waits for a flush under way for its context at most: an
// invocation is not held past its deadline by a stalled write.
func TestFlushDueProgressHonoursItsContext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, db, submit := gatedProgress(t, asyncevent.Options{ProgressEvery: 10 * time.Minute}, make(chan struct{}))
	submit("u1")
	timer := make(chan error, 1)
	go func() { timer <- c.FlushProgress(ctx) }() // the timer's flush, stalled
	<-db.began
	defer func() { close(db.proceed); <-timer }()
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.FlushDueProgress(short) }()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	case <-time.After(5 * time.Second):
		t.Fatal("FlushDueProgress still waiting after its context's deadline")
	}
}

// A poll whose copy is refreshed is placed as of its answer, not as of before the
// read: a refresh that takes a while (13 Queries at the 20,000 clicks/s layout, on a
// loaded node) leaves the workers carried on over it. Here the read takes 400 ms of
// the node's clock: some 17 requests of the workers' rate.
func TestARefreshedPollIsPlacedAsOfItsAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(time.Now().Truncate(time.Second))
	db := &slowQueries{DynamoDB: asynceventtest.DynamoDB(t), clock: clock}
	c := asynceventtest.NewTableOn(t, db, asyncevent.Options{Clock: clock.Now, ProgressEvery: 200 * time.Millisecond, ProgressCacheTTL: 10 * time.Second})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "slow", EventType: asyncevent.FirstCome, CapacityTotal: 1000})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{Clock: clock.Now})
	var ids []string
	for i := range 200 {
		clock.Advance(2 * time.Millisecond)
		p, err := c.Submit(ctx, q, "slow", fmt.Sprintf("u%03d", i))
		require.NoError(t, err)
		ids = append(ids, p.RequestID)
	}
	proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	for range 100 { // 50 a second for 2 s
		clock.Advance(20 * time.Millisecond)
		ds, err := q.Receive(ctx, 1, 0, time.Minute)
		require.NoError(t, err)
		require.Empty(t, asynceventtest.Process(ctx, proc, ds))
	}
	require.NoError(t, c.FlushProgress(ctx))
	_, err = c.GetRequest(ctx, ids[199]) // the copy
	require.NoError(t, err)
	clock.Advance(600 * time.Millisecond) // the copy is stale near the front
	db.slow.Store(true)
	r, err := c.GetRequest(ctx, ids[130])
	require.NoError(t, err)
	require.False(t, db.slow.Load(), "the poll read the progress again")
	require.NotNil(t, r.Queue)
	require.Positive(t, r.Queue.Rate, "the workers' rate, carried on")
	_, done := asyncevent.EstimateParts(*r.Queue)
	cut, counted := asyncevent.EstimateCut(*r.Queue)
	answered := clock.Now().UnixMilli() // the read's 400 ms later
	assert.InDelta(t, counted+r.Queue.Rate*float64(answered-cut)/1000, done, 0.5, "the workers carried on to the answer, 400 ms after the read began")
}

// slowQueries takes 400 ms of clock for the first Query once slow is set.
type slowQueries struct {
	asyncevent.DynamoDB
	clock *asynceventtest.Clock
	slow  atomic.Bool
}

func (s *slowQueries) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if s.slow.CompareAndSwap(true, false) {
		s.clock.Advance(400 * time.Millisecond)
	}
	return s.DynamoDB.Query(ctx, in, o...)
}
