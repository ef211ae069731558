package asyncevent_test

import (
	"context"
	"errors"
	"fmt"
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
		p, err := h.c.Participate(ctx, eventID, u)
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
						_, err := h.c.MarkQueued(ctx, m.Ref())
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
