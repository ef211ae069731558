package asyncevent_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// The seat claim at the edges: a shard refusing every claim, a delivery that died
// between its seat and its SUCCEEDED, an old delivery still at work after its lease
// was taken over.

// dropEvent makes a FIRST_COME event of capacity seats over shards capacity shards on
// h's table, and a request of each user in it; it returns their messages.
func (h *hotKeyTest) dropEvent(t *testing.T, eventID string, capacity int64, shards int, users []string) []asyncevent.Message {
	t.Helper()
	ctx := context.Background()
	_, err := h.c.CreateEvent(ctx, asyncevent.EventSettings{EventID: eventID, EventType: asyncevent.FirstCome, CapacityTotal: capacity, CapacityShards: shards})
	require.NoError(t, err)
	ms := make([]asyncevent.Message, len(users))
	for i, u := range users {
		p, err := h.c.Rows().Participate(ctx, eventID, u)
		require.NoError(t, err)
		r := h.request(t, p.RequestID)
		ms[i] = asyncevent.Message{V: asyncevent.MessageVersion, RequestID: r.RequestID, EventID: r.EventID,
			UserID: r.UserID, EventType: r.EventType, RequestedAt: r.RequestedAt, CapacityShards: max(shards, 1)}
	}
	return ms
}

func users(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("user-%03d", i)
	}
	return out
}

// One capacity shard refuses every claim for the whole run; the requests whose claim
// starts there close it to themselves and move on to the others, each in its first
// delivery: as many winners as the other shards hold seats, no request throttled,
// none failed, and the hot shard keeps its seats.
func TestAHotShardIsLeftForTheOthers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const shards, perShard = 4, 5
	hot := refuseKey{DynamoDB: asynceventtest.DynamoDB(t), pk: func() string { return "EVENT#drop#CAPACITY#2" }}
	c := asynceventtest.NewTableOn(t, hot, asyncevent.Options{})
	clean, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName()})
	require.NoError(t, err)
	h := &hotKeyTest{c: c, clean: clean}
	names := users((shards - 1) * perShard) // as many as the cool shards hold
	ms := h.dropEvent(t, "drop", shards*perShard, shards, names)

	movedOff, homedHot := 0, 0
	for _, m := range ms {
		if homeOf(m.RequestID, shards) == 2 {
			homedHot++
		}
		res := asynceventtest.Work(ctx, t, h.c, m, asyncevent.ProcessOptions{})
		require.Equal(t, asyncevent.OutcomeSucceeded, res.Kind, "%s: %v", m.RequestID, res.Err)
		r := h.request(t, m.RequestID)
		require.NotNil(t, r.SeatShard)
		assert.NotEqual(t, 2, *r.SeatShard, "no seat from the hot shard")
		if r.SeatEpoch > 0 {
			movedOff++
		}
	}
	assert.Positive(t, movedOff, "claims began on the hot shard, and moved on")
	capItem, err := asyncevent.ReadStoredCapacity(ctx, h.clean, "drop")
	require.NoError(t, err)
	assert.Equal(t, int64(perShard), capItem.Shards[2].CapacityRemaining, "the hot shard keeps its seats")
	// A request whose claim only this delivery sent there (its home emptied) leaves
	// it after definite refusals; one homed there closes it first.
	assert.Len(t, capItem.Shards[2].Void, homedHot, "each request homed on it closed it to itself")
	rep := asynceventtest.CheckEvent(t, h.clean, "drop", asynceventtest.CheckOptions{Users: names, Unsettled: false})
	assert.Equal(t, len(names), rep.ByStatus[asyncevent.StatusSucceeded])
}

// A home shard that refuses every write, the close too, keeps its requests: a claim
// without a lease of theirs may still land there, so they leave it only once it is
// closed to them. The delivery ends throttled (no seat, no failure, its message back
// later); once the shard takes writes again its next delivery wins.
func TestAShardRefusingEveryWriteKeepsItsRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHotKeyTest(t, 1, asyncevent.Options{})
	const shards = 2
	var m asyncevent.Message
	for i := 0; ; i++ {
		ms := h.dropEvent(t, fmt.Sprintf("keep%d", i), 4, shards, []string{"user"})
		if home := homeOf(ms[0].RequestID, shards); home == 0 {
			m = ms[0]
			break
		}
	}
	h.limits.Heat(fmt.Sprintf("EVENT#%s#CAPACITY#0", m.EventID), time.Hour)
	res := asynceventtest.Work(ctx, t, h.c, m, asyncevent.ProcessOptions{})
	assert.Equal(t, asyncevent.OutcomeThrottled, res.Kind, "%v", res.Err)
	r := h.request(t, m.RequestID)
	assert.False(t, r.Status.IsTerminal(), "no final status while its home refuses writes: %s", r.Status)
	require.NotNil(t, r.SeatShard)
	assert.Equal(t, 0, *r.SeatShard, "the claim stays on its home shard")

	h.clock.Advance(2 * time.Hour) // the heat has passed
	res = asynceventtest.Work(ctx, t, h.c, m, asyncevent.ProcessOptions{})
	require.Equal(t, asyncevent.OutcomeSucceeded, res.Kind, "%v", res.Err)
	asynceventtest.CheckEvent(t, h.clean, m.EventID, asynceventtest.CheckOptions{})
}

// failSucceeded refuses every write of a request's SUCCEEDED, as a worker that dies
// between its seat and its result leaves it.
type failSucceeded struct{ asyncevent.DynamoDB }

func (f failSucceeded) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	for _, v := range in.ExpressionAttributeValues {
		if s, ok := v.(*types.AttributeValueMemberS); ok && s.Value == string(asyncevent.StatusSucceeded) {
			return nil, errors.New("the worker died")
		}
	}
	return f.DynamoDB.UpdateItem(ctx, in, optFns...)
}

// A delivery takes a seat and dies before its SUCCEEDED; the next delivery finds the
// seat and writes SUCCEEDED: one seat spent, for its winner, whatever shard the new
// worker would have picked. Under a lease (a worker with a Handler) the next delivery
// takes the request over once the lease has run out and claims on the shard the
// request names; after a home claim (no Handler) the request is still QUEUED, and the
// next delivery's claim on the home shard finds the seat.
func TestTakeoverFindsTheSeatOfTheDeliveryBefore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	noop := asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error { return nil })
	for _, tc := range []struct {
		name    string
		handler asyncevent.Handler
		left    asyncevent.Status // what the dying delivery leaves
	}{{"lease", noop, asyncevent.StatusProcessing}, {"home", nil, asyncevent.StatusQueued}} {
		for _, shards := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/C=%d", tc.name, shards), func(t *testing.T) {
				t.Parallel()
				h := newHotKeyTest(t, 1, asyncevent.Options{})
				names := users(3)
				ms := h.dropEvent(t, "drop", 8, shards, names)
				if tc.left == asyncevent.StatusQueued {
					for _, m := range ms {
						_, err := h.c.Rows().MarkQueued(ctx, m.Ref())
						require.NoError(t, err)
					}
				}
				dying, err := asyncevent.New(failSucceeded{asynceventtest.DynamoDB(t)}, asyncevent.Options{TableName: h.c.TableName(), Clock: h.clock.Now})
				require.NoError(t, err)
				opts := asyncevent.ProcessOptions{LeaseDuration: 30 * time.Second, Handler: tc.handler}

				res := asynceventtest.Work(ctx, t, dying, ms[0], opts)
				require.Equal(t, asyncevent.OutcomeRetry, res.Kind, "%v", res.Err)
				before := h.request(t, ms[0].RequestID)
				require.Equal(t, tc.left, before.Status)
				capItem, err := h.clean.GetCapacity(ctx, "drop")
				require.NoError(t, err)
				require.Equal(t, int64(7), capItem.CapacityRemaining, "the seat is spent, its SUCCEEDED not written")

				h.clock.Advance(31 * time.Second)
				res = asynceventtest.Work(ctx, t, h.c, ms[0], opts)
				assert.Equal(t, asyncevent.OutcomeSucceeded, res.Kind, "%v", res.Err)
				after := h.request(t, ms[0].RequestID)
				require.NotNil(t, after.SeatShard)
				if before.SeatShard != nil {
					assert.Equal(t, *before.SeatShard, *after.SeatShard)
				}
				for _, m := range ms[1:] {
					res := asynceventtest.Work(ctx, t, h.c, m, opts)
					assert.Equal(t, asyncevent.OutcomeSucceeded, res.Kind, "%v", res.Err)
				}
				capItem, err = h.clean.GetCapacity(ctx, "drop")
				require.NoError(t, err)
				assert.Equal(t, int64(5), capItem.CapacityRemaining, "three winners, three seats")
				asynceventtest.CheckEvent(t, h.clean, "drop", asynceventtest.CheckOptions{Users: names})
			})
		}
	}
}

// A delivery whose lease runs out while its handler still works is taken over; the
// new delivery wins the seat. The old one, when its handler returns, sends no claim
// (its lease ran out) and leaves the message: one seat spent.
func TestAnOldDeliveryStillAtWorkTakesNoSecondSeat(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHotKeyTest(t, 1, asyncevent.Options{})
	names := users(1)
	ms := h.dropEvent(t, "drop", 4, 2, names)
	var second asynceventtest.WorkResult
	slow := asyncevent.ProcessOptions{LeaseDuration: 30 * time.Second, Handler: asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error {
		h.clock.Advance(31 * time.Second)
		second = asynceventtest.Work(ctx, t, h.c, ms[0], asyncevent.ProcessOptions{LeaseDuration: 30 * time.Second})
		return nil
	})}
	first := asynceventtest.Work(ctx, t, h.c, ms[0], slow)
	assert.Equal(t, asyncevent.OutcomeSucceeded, second.Kind, "%v", second.Err)
	assert.Equal(t, asyncevent.OutcomeLostLease, first.Kind, "%v", first.Err)
	capItem, err := h.clean.GetCapacity(ctx, "drop")
	require.NoError(t, err)
	assert.Equal(t, int64(3), capItem.CapacityRemaining, "one seat")
	asynceventtest.CheckEvent(t, h.clean, "drop", asynceventtest.CheckOptions{Users: names})
}

// A worker new to a sold-out event learns it from the request's home shard, which
// carries the sell-out's mark: each loser costs that read (its seat is not there
// either) and the one rejecting write, whatever the number of shards, and no read of
// the event's config.
func TestANewWorkerLearnsASellOutFromTheEvent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHotKeyTest(t, 1, asyncevent.Options{})
	const shards = 50
	names := users(shards + 20)
	ms := h.dropEvent(t, "drop", shards, shards, names)
	p := asyncevent.NewProcessor(h.c, asyncevent.ProcessOptions{})
	for _, m := range ms[:shards+10] { // sells out, and its losers find every shard empty
		body, err := asyncevent.EncodeMessage(m)
		require.NoError(t, err)
		require.Empty(t, asynceventtest.Process(ctx, p, []queue.Delivery{{MessageID: m.RequestID, Body: body, ReceiveCount: 1}}))
	}
	ev, err := asyncevent.ReadEventBookkeeping(ctx, h.clean, "drop")
	require.NoError(t, err)
	assert.Len(t, ev.EmptyShards, shards)

	counted := asynceventtest.NewCounter(asynceventtest.DynamoDB(t))
	fresh, err := asyncevent.New(counted, asyncevent.Options{ProgressEvery: -1, TableName: h.c.TableName(), Clock: h.clock.Now})
	require.NoError(t, err)
	for _, m := range ms[shards+10:] {
		res := asynceventtest.Work(ctx, t, fresh, m, asyncevent.ProcessOptions{})
		assert.Equal(t, asyncevent.OutcomeRejected, res.Kind, "%v", res.Err)
	}
	calls := counted.Snapshot().Calls
	t.Logf("10 losers on a new worker: %v", calls)
	total := 0
	for _, n := range calls {
		total += n
	}
	assert.Equal(t, map[string]int{"GetItem": 10, "UpdateItem": 10}, calls, "a read of the home shard and one write per loser")
	assert.Zero(t, calls["TransactWriteItems"])
	asynceventtest.CheckEvent(t, h.clean, "drop", asynceventtest.CheckOptions{Users: names})
}

// A pool claim whose lease runs out while the claim is on its way (it lands after
// the lease's end): whichever delivery ends the request, it holds one seat, the
// pool's, and the next delivery meets it there.
func TestPoolClaimLandingAfterItsLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	var armed atomic.Bool
	db := &hookDB{DynamoDB: asynceventtest.DynamoDB(t)}
	db.update = func(ctx context.Context, in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error, bool) {
		if armed.Load() && pkOfKey(in.Key) == "EVENT#late#RETURNS" && isSeatClaim(in) {
			out, err := db.DynamoDB.UpdateItem(ctx, in)
			clock.Advance(10 * time.Minute) // the claim landed after the lease ran out
			return out, err, true
		}
		return nil, nil, false
	}
	c := asynceventtest.NewTableOn(t, db, asyncevent.Options{Clock: clock.Now})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "late", EventType: asyncevent.FirstCome, CapacityTotal: 2, CapacityShards: 2})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	submitAll(t, c, clock, q, "late", 3)
	drain(t, proc, q)
	up, err := c.AddCapacity(ctx, "late", asyncevent.AddCapacityInput{Seats: 2, Actor: "ops"})
	require.NoError(t, err)
	require.True(t, up.Applied)

	p, err := c.Submit(ctx, q, "late", "slow-claim")
	require.NoError(t, err)
	m := messageFor(t, c, p.RequestID, 2)
	armed.Store(true)
	first := asynceventtest.Work(ctx, t, c, m, asyncevent.ProcessOptions{})
	armed.Store(false)
	t.Logf("first delivery: %+v", first.Outcome)
	second := asynceventtest.Work(ctx, t, c, m, asyncevent.ProcessOptions{})
	t.Logf("second delivery: %+v", second.Outcome)
	r, err := c.GetRequest(ctx, p.RequestID)
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusSucceeded, r.Status)
	remaining, holders := poolOf(t, c, "late")
	assert.EqualValues(t, 1, remaining, "one of the two added seats taken")
	assert.Equal(t, []string{tokenOf(p.RequestID)}, holders)
	asynceventtest.CheckEvent(t, c, "late", asynceventtest.CheckOptions{})
}

// isHeartbeat tells the "lease heartbeat" row (and the lease release, the same row):
// an UpdateItem that sets leaseExpiresAt without starting the request.
func isHeartbeat(in *dynamodb.UpdateItemInput) bool {
	names := map[string]bool{}
	for _, n := range in.ExpressionAttributeNames {
		names[n] = true
	}
	return names["leaseExpiresAt"] && !names["startedAt"]
}

// heartbeatGate fails the lease heartbeat's writes while block is set (a network
// partition, or the hot index key throttling them), and counts those it lets through.
type heartbeatGate struct {
	asyncevent.DynamoDB
	block  atomic.Bool
	passed atomic.Int32
}

func (g *heartbeatGate) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if isHeartbeat(in) {
		if g.block.Load() {
			return nil, errors.New("heartbeat: network unreachable")
		}
		defer g.passed.Add(1)
	}
	return g.DynamoDB.UpdateItem(ctx, in, optFns...)
}

// refuseKey answers ProvisionedThroughputExceeded to every seat claim (an UpdateItem
// that adds to holders) on one partition key: a capacity shard over its share for
// this worker while its claims are sent; the close that lets the claim leave the
// shard gets through, as a write does once a throttle has passed.
type refuseKey struct {
	asyncevent.DynamoDB
	pk func() string
}

func (r refuseKey) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if pk, ok := in.Key["PK"].(*types.AttributeValueMemberS); ok && pk.Value == r.pk() && isSeatClaim(in) {
		return nil, &types.ProvisionedThroughputExceededException{Message: aws.String("refused: the shard is over its share")}
	}
	return r.DynamoDB.UpdateItem(ctx, in, optFns...)
}

// A delivery whose lease heartbeat finds the request taken over (its condition lost)
// sends no seat claim after it, whatever its clock says. Two shards of one seat, users
// R and U: worker A starts R on shard X, its handler runs long and its heartbeat's
// writes fail, so R's lease runs out in the table; worker B takes R over, X refuses B
// for throughput, B waits the claim fence, reads X (no token), moves to Y and wins
// there; A's heartbeat then gets through and loses its condition. Were that taken for
// a renewed lease, A's handler would return and A claim a second seat for R on X, and
// U would be refused with a seat unspent.
func TestAHeartbeatThatFindsItsLeaseTakenStopsTheClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	gate := &heartbeatGate{DynamoDB: asynceventtest.DynamoDB(t)}
	gate.block.Store(true)
	a := asynceventtest.NewTableOn(t, gate, asyncevent.Options{})
	clean, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: a.TableName()})
	require.NoError(t, err)
	_, err = a.CreateEvent(ctx, asyncevent.EventSettings{EventID: "drop", EventType: asyncevent.FirstCome, CapacityTotal: 2, CapacityShards: 2})
	require.NoError(t, err)

	q := queue.NewMemory(queue.MemoryOptions{})
	pr, err := a.Submit(ctx, q, "drop", "user-r")
	require.NoError(t, err)
	pu, err := a.Rows().Participate(ctx, "drop", "user-u")
	require.NoError(t, err)

	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	outcomes := make(chan asyncevent.Outcome, 8)
	runWorker(t, a, q, asyncevent.WorkerOptions{
		Concurrency: 1, VisibilityTimeout: 2 * time.Second,
		ProcessOptions: asyncevent.ProcessOptions{
			LeaseDuration: 2 * time.Second,
			Handler: asyncevent.HandlerFunc(func(ctx context.Context, m asyncevent.Message) error {
				first := false
				once.Do(func() { first = true })
				if first {
					close(started)
					<-release
				}
				return nil
			}),
			OnOutcome: func(o asyncevent.Outcome) { outcomes <- o },
		},
	})
	<-started
	r, err := asyncevent.ReadStoredRequest(ctx, clean, pr.RequestID)
	require.NoError(t, err)
	require.NotNil(t, r.SeatShard)
	x := *r.SeatShard
	hotPK := fmt.Sprintf("EVENT#drop#CAPACITY#%d", x)

	time.Sleep(2500 * time.Millisecond) // A's lease runs out in the table
	bdb := refuseKey{DynamoDB: asynceventtest.DynamoDB(t), pk: func() string { return hotPK }}
	b, err := asyncevent.New(bdb, asyncevent.Options{TableName: a.TableName()})
	require.NoError(t, err)
	m := asyncevent.Message{V: asyncevent.MessageVersion, RequestID: r.RequestID, EventID: r.EventID, UserID: r.UserID, EventType: r.EventType, RequestedAt: r.RequestedAt}
	res := asynceventtest.Work(ctx, t, b, m, asyncevent.ProcessOptions{LeaseDuration: 30 * time.Second})
	require.Equal(t, asyncevent.OutcomeSucceeded, res.Kind, "B takes R over and wins on the other shard: %v", res.Err)
	r, err = asyncevent.ReadStoredRequest(ctx, clean, pr.RequestID)
	require.NoError(t, err)
	require.NotEqual(t, x, *r.SeatShard, "B moved R's claim off the refusing shard")

	gate.block.Store(false)
	eventually(t, "A's heartbeat writes its lease again", func() bool { return gate.passed.Load() > 0 })
	close(release)
	select {
	case o := <-outcomes:
		t.Logf("A's delivery: %s %v", o.Kind, o.Err)
	case <-time.After(30 * time.Second):
		t.Fatal("A's delivery did not end")
	}

	mu := asyncevent.Message{V: asyncevent.MessageVersion, RequestID: pu.RequestID, EventID: "drop", UserID: "user-u", EventType: asyncevent.FirstCome, RequestedAt: r.RequestedAt}
	resU := asynceventtest.Work(ctx, t, clean, mu, asyncevent.ProcessOptions{})
	capItem, err := asyncevent.ReadStoredCapacity(ctx, clean, "drop")
	require.NoError(t, err)
	for i, s := range capItem.Shards {
		t.Logf("shard %d: remaining %d holders %v", i, s.CapacityRemaining, s.Holders)
	}
	assert.Equal(t, asyncevent.OutcomeSucceeded, resU.Kind, "2 seats, 2 users: U must win (%v)", resU.Err)
	require.NotNil(t, r.SeatShard)
	require.Len(t, capItem.Shards[*r.SeatShard].Holders, 1, "R's seat, where B took it")
	assert.NotContains(t, capItem.Shards[x].Holders, capItem.Shards[*r.SeatShard].Holders[0], "the old delivery must not take a seat for R on the shard B left")
	asynceventtest.CheckEvent(t, clean, "drop", asynceventtest.CheckOptions{Users: []string{"user-r", "user-u"}})
}

// failStart answers InternalServerError to the first start of a request it sees (a
// retryable failure that is no throttle): the delivery's own start. The start of the
// takeover that its final failure then needs goes through.
type failStart struct {
	asyncevent.DynamoDB
	failed atomic.Bool
}

func (f *failStart) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	for _, n := range in.ExpressionAttributeNames {
		if n == "startedAt" && f.failed.CompareAndSwap(false, true) {
			return nil, &types.InternalServerError{Message: aws.String("start failed")}
		}
	}
	return f.DynamoDB.UpdateItem(ctx, in, optFns...)
}

// A delivery that holds no lease (its own start failed) on its last receive still
// ends a first-come request an earlier delivery started and left: only a lease
// holder may fail a started first-come request, so it takes the request over (a
// start under a lease of its own), looks at its shard, and ends it FAILED_FINAL
// before its message goes to the dead-letter queue (design invariant 5).
func TestTheLastReceiveEndsARequestAnEarlierDeliveryStarted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "drop", EventType: asyncevent.FirstCome, CapacityTotal: 2, CapacityShards: 2})
	require.NoError(t, err)
	p, err := c.Rows().Participate(ctx, "drop", "user-r")
	require.NoError(t, err)
	r, err := c.GetRequest(ctx, p.RequestID)
	require.NoError(t, err)
	m := asyncevent.Message{V: asyncevent.MessageVersion, RequestID: r.RequestID, EventID: r.EventID, UserID: r.UserID, EventType: r.EventType, RequestedAt: r.RequestedAt}

	// Delivery 1 starts R and dies.
	st, err := c.Rows().StartProcessing(ctx, m.Ref(), asyncevent.Lease{Owner: "dead-worker", Duration: 30 * time.Second})
	require.NoError(t, err)
	require.True(t, st.Applied)
	clock.Advance(time.Minute)

	broken, err := asyncevent.New(&failStart{DynamoDB: asynceventtest.DynamoDB(t)}, asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	body, err := asyncevent.EncodeMessage(m)
	require.NoError(t, err)
	res := asynceventtest.WorkDelivery(ctx, t, broken, queue.Delivery{Body: body, ReceiveCount: asyncevent.DefaultMaxReceives}, asyncevent.ProcessOptions{})
	t.Logf("last receive: %s redeliver=%v %v", res.Kind, res.Redeliver, res.Err)
	after, err := c.GetRequest(ctx, p.RequestID)
	require.NoError(t, err)
	assert.True(t, after.Status.IsTerminal(), "the last receive must leave R final, not %s (its message now goes to the DLQ)", after.Status)
}

// dropFirstEmptyRecord fails the first write of a shard to the event's emptyShards,
// as a worker that crashes between the claim that takes a shard's last seat and that
// record (or whose one-shot record is throttled or times out) leaves it.
type dropFirstEmptyRecord struct {
	asyncevent.DynamoDB
	dropped atomic.Bool
}

func (d *dropFirstEmptyRecord) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	for _, n := range in.ExpressionAttributeNames {
		if n == "emptyShards" && d.dropped.CompareAndSwap(false, true) {
			return nil, errors.New("the worker died before recording the empty shard")
		}
	}
	return d.DynamoDB.UpdateItem(ctx, in, optFns...)
}

// With capacity shards the claim that takes a shard's last seat records it on the
// CONFIG, once. When that record is lost (a crash between the two writes, a throttle),
// the first worker that meets the shard empty and finds the CONFIG without it
// records it, which marks every shard sold out, so that every worker new to the event
// after it rejects a loser of the sold-out event in two calls: the read of its home
// shard and the rejection.
func TestALostEmptyShardRecordIsHealed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const shards = 4
	drop := &dropFirstEmptyRecord{DynamoDB: asynceventtest.DynamoDB(t)}
	c := asynceventtest.NewTableOn(t, drop, asyncevent.Options{})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "drop", EventType: asyncevent.FirstCome, CapacityTotal: shards, CapacityShards: shards})
	require.NoError(t, err)
	var ms []asyncevent.Message
	var names []string
	for i := range shards + 8 {
		u := fmt.Sprintf("user-%02d", i)
		names = append(names, u)
		p, err := c.Rows().Participate(ctx, "drop", u)
		require.NoError(t, err)
		ms = append(ms, asyncevent.Message{V: asyncevent.MessageVersion, RequestID: p.RequestID, EventID: "drop", UserID: u, EventType: asyncevent.FirstCome, RequestedAt: asyncevent.EpochMillis(time.Now().UnixMilli()), CapacityShards: shards})
	}
	p := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	for _, m := range ms[:shards+2] { // sells out; two losers on the same worker
		body, err := asyncevent.EncodeMessage(m)
		require.NoError(t, err)
		asynceventtest.Process(ctx, p, []queue.Delivery{{MessageID: m.RequestID, Body: body, ReceiveCount: 1}})
	}
	require.True(t, drop.dropped.Load(), "one record was lost")
	for i, m := range ms[shards+2:] { // a new worker per loser
		counted := asynceventtest.NewCounter(asynceventtest.DynamoDB(t))
		fresh, err := asyncevent.New(counted, asyncevent.Options{ProgressEvery: -1, TableName: c.TableName()})
		require.NoError(t, err)
		res := asynceventtest.Work(ctx, t, fresh, m, asyncevent.ProcessOptions{})
		require.Equal(t, asyncevent.OutcomeRejected, res.Kind, "%v", res.Err)
		total := 0
		for _, n := range counted.Snapshot().Calls {
			total += n
		}
		if i == 0 {
			// The first worker that meets the unrecorded shard pays a claim on it,
			// reads the CONFIG and records it (the heal), which completes the list
			// and marks every shard sold out...
			assert.LessOrEqual(t, total, 8+shards, "the loser that heals the record: %v", counted.Snapshot().Calls)
			continue
		}
		// ...and every worker new to the event after it rejects in two calls: a
		// read of the home shard, which carries the mark, and the rejection.
		assert.LessOrEqual(t, total, 2, "a loser of a sold-out event on a new worker: %v", counted.Snapshot().Calls)
	}
	ev, err := asyncevent.ReadEventBookkeeping(ctx, c, "drop")
	require.NoError(t, err)
	assert.Len(t, ev.EmptyShards, shards, "the sell-out is on the CONFIG after the losers met the shard empty")
	asynceventtest.CheckEvent(t, c, "drop", asynceventtest.CheckOptions{Users: names})
}

// consumed asks DynamoDB for the capacity every UpdateItem consumes, and keeps the
// write units of the last one on a capacity item.
type consumed struct {
	asyncevent.DynamoDB
	mu   sync.Mutex
	last []float64
}

func (c *consumed) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	sk, _ := in.Key["SK"].(*types.AttributeValueMemberS)
	if sk == nil || sk.Value != "CAPACITY" {
		return c.DynamoDB.UpdateItem(ctx, in, optFns...)
	}
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := c.DynamoDB.UpdateItem(ctx, in, optFns...)
	var cc *types.ConsumedCapacity
	if out != nil {
		cc = out.ConsumedCapacity
	}
	var ccf *types.ConditionalCheckFailedException
	_ = errors.As(err, &ccf)
	c.mu.Lock()
	defer c.mu.Unlock()
	if cc != nil && cc.CapacityUnits != nil {
		c.last = append(c.last, *cc.CapacityUnits)
	} else {
		c.last = append(c.last, -1) // not reported (a failed condition reports none)
	}
	return out, err
}

// A seat claim's cost grows with the seats its shard holds (its seat tokens, about 12
// bytes a winner), so the library's layout counts the seats: CreateEvent refuses more
// than MaxSeatsPerShard on a shard, and ShardForPeak gives a FIRST_COME event at least
// one shard per 128 seats, so that the last claim of a full shard costs the 2 WCU the
// rule counts, not the hundred it would on one shard of 10,000.
func TestTheLayoutCountsWhatAClaimCosts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const seats = 10000
	meter := &consumed{DynamoDB: asynceventtest.DynamoDB(t)}
	c := asynceventtest.NewTableOn(t, meter, asyncevent.Options{})
	k, cShards := asyncevent.ShardsFor(1000, 0)
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "one-shard", EventType: asyncevent.FirstCome, CapacityTotal: seats, IndexShards: k, CapacityShards: cShards})
	require.ErrorIs(t, err, asyncevent.ErrInvalidEvent, "%d seats on %d shards: over MaxSeatsPerShard", seats, cShards)

	cfg := asyncevent.EventSettings{EventID: "drop", EventType: asyncevent.FirstCome, CapacityTotal: seats}
	cfg.ShardForPeak(1000)
	t.Logf("ShardForPeak(1000 clicks/s) = K %d, C %d for %d seats", cfg.IndexShards, cfg.CapacityShards, seats)
	_, err = c.CreateEvent(ctx, cfg)
	require.NoError(t, err)

	// Every shard as it is after all but one of its seats went: their tokens.
	raw := asynceventtest.DynamoDB(t)
	perShard := (seats + cfg.CapacityShards - 1) / cfg.CapacityShards
	for shard := range cfg.CapacityShards {
		tokens := make([]string, perShard-1)
		for i := range tokens {
			tokens[i] = fmt.Sprintf("t%03d%07d", shard, i) // 11 bytes, as a seat token
		}
		_, err = raw.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(c.TableName()),
			Key: map[string]types.AttributeValue{
				"PK": &types.AttributeValueMemberS{Value: fmt.Sprintf("EVENT#drop#CAPACITY#%d", shard)},
				"SK": &types.AttributeValueMemberS{Value: "CAPACITY"},
			},
			UpdateExpression:          aws.String("SET capacityRemaining = :one ADD holders :t"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}, ":t": &types.AttributeValueMemberSS{Value: tokens}},
		})
		require.NoError(t, err)
	}

	lease := asyncevent.Lease{Owner: "w", Duration: time.Minute}
	for _, u := range []string{"last-winner", "a-loser"} {
		p, err := c.Rows().Participate(ctx, "drop", u)
		require.NoError(t, err)
		ref := asyncevent.RequestRef{RequestID: p.RequestID, EventID: "drop", UserID: u}
		st, err := c.Rows().StartProcessing(ctx, ref, lease)
		require.NoError(t, err)
		require.True(t, st.Applied)
		_, err = c.Rows().ClaimSeat(ctx, ref, lease)
		require.NoError(t, err)
	}
	meter.mu.Lock()
	defer meter.mu.Unlock()
	t.Logf("write units of the claims on the shard: %v", meter.last)
	require.NotEmpty(t, meter.last)
	assert.LessOrEqual(t, meter.last[0], 2.0, "the last seat of a shard of the library's layout: %v WCU for one claim", meter.last[0])
}

// refusals counts the transactions DynamoDB cancelled on a failed condition, as they
// come off the wire (beneath the SDK's retries).
type refusals struct {
	next aws.HTTPClient
	n    atomic.Int64
}

func (r *refusals) Do(req *http.Request) (*http.Response, error) {
	resp, err := r.next.Do(req)
	if err != nil || resp.StatusCode != http.StatusBadRequest || !strings.HasSuffix(req.Header.Get("X-Amz-Target"), ".TransactWriteItems") {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if bytes.Contains(body, []byte("ConditionalCheckFailed")) {
		r.n.Add(1)
	}
	return resp, err
}

// Writes whose response is lost after DynamoDB applied them are sent again (by the
// SDK, or by the seat claim itself); no retry takes a second seat or turns a click
// into a duplicate of itself. Ingest writes no transaction, and neither does the
// worker: a lost answer of the lock's put is recognised by the requestId the retry
// meets, a lost answer of a seat claim by the request's seat token the retry finds
// on the capacity item.
func TestLostResponsesTakeNoSecondSeat(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	refused := &refusals{}
	wire := dynamodb.New(asynceventtest.DynamoDB(t).Options(), func(o *dynamodb.Options) {
		refused.next, o.HTTPClient = o.HTTPClient, refused
	})
	db, faults := asynceventtest.NewFaultyClient(wire, asynceventtest.FaultPlan{
		Seed: 8, LoseRate: 0.4, Operations: []string{"PutItem", "TransactWriteItems"},
	}, func(o *dynamodb.Options) { o.IdempotencyTokenProvider = nil })
	c := asynceventtest.NewTableOn(t, db, asyncevent.Options{})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 100})
	require.NoError(t, err)

	const n = 40
	users := make([]string, n)
	q := queue.NewMemory(queue.MemoryOptions{})
	for i := range users {
		users[i] = fmt.Sprintf("user-%02d", i)
		p, err := c.Submit(ctx, q, "sale", users[i])
		require.NoError(t, err)
		assert.False(t, p.Duplicate, "%s's only click is not a duplicate", users[i])
	}
	participateLost := faults.Counts().Lost
	require.Positive(t, participateLost, "the plan lost some of the lock's and the request's puts")
	assert.Zero(t, refused.n.Load(), "ingest writes no transaction")

	// The worker's single writes (its start, its seats, SUCCEEDED) lose answers too.
	workerDB, workerFaults := asynceventtest.NewFaultyClient(wire, asynceventtest.FaultPlan{
		Seed: 9, LoseRate: 0.3, Operations: []string{"UpdateItem", "TransactWriteItems"},
	}, func(o *dynamodb.Options) { o.IdempotencyTokenProvider = nil })
	wc, err := asyncevent.New(workerDB, asyncevent.Options{TableName: c.TableName()})
	require.NoError(t, err)
	runWorker(t, wc, q, asyncevent.WorkerOptions{})
	eventually(t, "every seat taken", func() bool {
		capacity, err := c.GetCapacity(ctx, "sale")
		return err == nil && capacity.CapacityRemaining == 100-n
	})
	eventually(t, "every winner written", func() bool {
		st, err := c.EventStats(ctx, "sale")
		return err == nil && st.ByStatus[asyncevent.StatusSucceeded] == n
	})
	require.Positive(t, workerFaults.Counts().Lost, "the plan lost some of the worker's responses")
	assert.Zero(t, refused.n.Load(), "no transaction refused")
	rep := asynceventtest.CheckEvent(t, c, "sale", asynceventtest.CheckOptions{Users: users})
	assert.Equal(t, n, rep.ByStatus[asyncevent.StatusSucceeded])
}
