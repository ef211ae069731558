package asyncevent_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// Seats added after a sell-out go to the event's pool, and the next requests in queue
// order win them, on a worker that remembers the sell-out: its look at each loser's
// home shard tells it the pool changed. Exactly N, N being the capacity plus the seats
// added.
func TestSeatsAddedAfterTheSellOutGoToTheNextRequests(t *testing.T) {
	for _, shards := range []int{1, 3} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			clock := asynceventtest.NewClock(t0)
			c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now, StatusLog: true})
			_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "more", EventType: asyncevent.FirstCome, CapacityTotal: 3, CapacityShards: shards})
			require.NoError(t, err)
			q := queue.NewMemory(queue.MemoryOptions{})
			proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
			first := submitAll(t, c, clock, q, "more", 8)
			drain(t, proc, q)
			got := byStatus(t, c, first)
			require.Len(t, got[asyncevent.StatusSucceeded], 3)

			up, err := c.AddCapacity(ctx, "more", asyncevent.AddCapacityInput{Seats: 2, Actor: "ops"})
			require.NoError(t, err)
			require.True(t, up.Applied, up.Reason)
			assert.EqualValues(t, 5, up.Event.CapacityTotal)
			assert.EqualValues(t, 1, poolVersion(t, c, "more"))
			st, err := c.EventStats(ctx, "more")
			require.NoError(t, err)
			assert.EqualValues(t, 0, st.CapacityRemaining, "the shards stay empty")
			assert.EqualValues(t, 2, st.PoolRemaining, "the seats wait on the pool")
			assert.EqualValues(t, 5, st.CapacityTotal)
			list, err := c.ListEvents(ctx, asyncevent.PageOptions{})
			require.NoError(t, err)
			require.Len(t, list.Events, 1)
			assert.EqualValues(t, 2, *list.Events[0].SeatsLeft, "the list counts the pool's seats as left")

			var later []string
			for i := range 5 {
				p, err := c.Submit(ctx, q, "more", fmt.Sprintf("later-%d", i))
				require.NoError(t, err)
				later = append(later, p.RequestID)
				clock.Advance(time.Millisecond)
			}
			drain(t, proc, q) // the processor that saw the sell-out
			got = byStatus(t, c, later)
			assert.Equal(t, later[:2], got[asyncevent.StatusSucceeded], "the next two in queue order win the added seats")
			assert.Equal(t, later[2:], got[asyncevent.StatusRejected])
			rep := asynceventtest.CheckEvent(t, c, "more", asynceventtest.CheckOptions{})
			assert.Equal(t, 5, rep.ByStatus[asyncevent.StatusSucceeded])
			st, err = c.EventStats(ctx, "more")
			require.NoError(t, err)
			assert.Zero(t, st.Fairness.Inversions, "a seat that reached the pool after the sell-out is no inversion")

			trail, err := c.ListAudit(ctx, "more")
			require.NoError(t, err)
			require.Len(t, trail, 1)
			assert.Equal(t, asyncevent.ActionAddCapacity, trail[0].Action)
		})
	}
}

// Seats added before the sell-out go onto the shards that still hold seats.
func TestSeatsAddedToTheShardsThatHoldSeats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "grow", EventType: asyncevent.FirstCome, CapacityTotal: 4, CapacityShards: 2})
	require.NoError(t, err)
	up, err := c.AddCapacity(ctx, "grow", asyncevent.AddCapacityInput{Seats: 6, Actor: "ops"})
	require.NoError(t, err)
	require.True(t, up.Applied, up.Reason)
	capacity, err := c.GetCapacity(ctx, "grow")
	require.NoError(t, err)
	assert.EqualValues(t, 10, capacity.CapacityTotal)
	assert.EqualValues(t, 10, capacity.CapacityRemaining)
	assert.EqualValues(t, 0, poolVersion(t, c, "grow"), "no seat on the pool")
	up, err = c.AddCapacity(ctx, "grow", asyncevent.AddCapacityInput{Seats: 1, Shard: new(1), Actor: "ops"})
	require.NoError(t, err)
	require.True(t, up.Applied)
	capacity, err = c.GetCapacity(ctx, "grow")
	require.NoError(t, err)
	assert.EqualValues(t, 6, capacity.Shards[1].CapacityTotal, "to the shard asked for")

	q := queue.NewMemory(queue.MemoryOptions{})
	ids := submitAll(t, c, clock, q, "grow", 14)
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)
	rep := asynceventtest.CheckEvent(t, c, "grow", asynceventtest.CheckOptions{})
	assert.Equal(t, 11, rep.ByStatus[asyncevent.StatusSucceeded])
	assert.Len(t, ids, 14)

	_, err = c.AddCapacity(ctx, "grow", asyncevent.AddCapacityInput{Seats: 0, Actor: "ops"})
	assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions)
	_, err = c.AddCapacity(ctx, "grow", asyncevent.AddCapacityInput{Seats: 1, Shard: new(5), Actor: "ops"})
	assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions)
	_, err = c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "lot", EventType: asyncevent.Lottery, WinnerCount: 1, LotteryCutoffAt: asyncevent.MillisOf(t0.Add(time.Hour))})
	require.NoError(t, err)
	up, err = c.AddCapacity(ctx, "lot", asyncevent.AddCapacityInput{Seats: 1, Actor: "ops"})
	require.NoError(t, err)
	assert.False(t, up.Applied)
}

// Seats added while workers take a spike, several times: no seat given twice, none
// lost, and the winners are the capacity plus the seats added.
func TestSeatsAddedDuringASpike(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTable(t)
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "spike", EventType: asyncevent.FirstCome, CapacityTotal: 40, CapacityShards: 4})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	w, err := asyncevent.NewWorker(c, q, asyncevent.WorkerOptions{Concurrency: 8, WaitTime: 20 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	added := 0
	for i := range 300 {
		_, err := c.Submit(ctx, q, "spike", fmt.Sprintf("u%03d", i))
		require.NoError(t, err)
		if i%60 == 30 {
			up, err := c.AddCapacity(ctx, "spike", asyncevent.AddCapacityInput{Seats: 10, Actor: "ops"})
			require.NoError(t, err)
			if up.Applied {
				added += 10
			}
		}
	}
	asynceventtest.WaitDrained(t, q, time.Minute)
	require.NoError(t, w.Stop(ctx))
	rep := asynceventtest.CheckEvent(t, c, "spike", asynceventtest.CheckOptions{})
	assert.Equal(t, 40+added, rep.ByStatus[asyncevent.StatusSucceeded], "every seat added was won: later requests came")
	assert.Positive(t, added)
}

// A cancelled seat goes back: to the next request of an event without holds, to the
// first of the waitlist of one with holds.
func TestCancelRequestGivesTheSeatBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "plain", EventType: asyncevent.FirstCome, CapacityTotal: 2, CapacityShards: 2})
	require.NoError(t, err)
	holdsEvent(t, c, "held", 2, 1, time.Hour, 0)
	q := queue.NewMemory(queue.MemoryOptions{})
	proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	plain := submitAll(t, c, clock, q, "plain", 3)
	held := submitAll(t, c, clock, q, "held", 4)
	drain(t, proc, q)

	up, err := c.CancelRequest(ctx, plain[0], asyncevent.CancelRequestInput{Actor: "ops"})
	require.NoError(t, err)
	require.True(t, up.Applied, up.Reason)
	r, err := c.GetRequest(ctx, plain[0])
	require.NoError(t, err)
	assert.Equal(t, asyncevent.ResultCancelled, r.ResultCode)
	up, err = c.CancelRequest(ctx, plain[0], asyncevent.CancelRequestInput{Actor: "ops"})
	require.NoError(t, err)
	assert.False(t, up.Applied, "once")
	up, err = c.CancelRequest(ctx, plain[2], asyncevent.CancelRequestInput{Actor: "ops"})
	require.NoError(t, err)
	assert.False(t, up.Applied, "a loser holds no seat")
	assert.Contains(t, up.Reason, "REJECTED")
	// The old message again gives nothing back to a shard.
	res := asynceventtest.Work(ctx, t, c, messageFor(t, c, plain[0], 2), asyncevent.ProcessOptions{})
	assert.Equal(t, asyncevent.OutcomeDuplicate, res.Kind)

	next, err := c.Submit(ctx, q, "plain", "next")
	require.NoError(t, err)
	drain(t, proc, q)
	r, err = c.GetRequest(ctx, next.RequestID)
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusSucceeded, r.Status, "the cancelled seat went to the next request")
	asynceventtest.CheckEvent(t, c, "plain", asynceventtest.CheckOptions{})

	tr, err := c.Confirm(ctx, held[0])
	require.NoError(t, err)
	require.True(t, tr.Applied)
	up, err = c.CancelRequest(ctx, held[0], asyncevent.CancelRequestInput{Actor: "ops"})
	require.NoError(t, err)
	require.True(t, up.Applied, up.Reason)
	up, err = c.CancelRequest(ctx, held[1], asyncevent.CancelRequestInput{Actor: "ops"})
	require.NoError(t, err)
	assert.Contains(t, up.Reason, "Release", "a HELD request is Release's")
	rep, err := c.SweepHolds(ctx, "held", asyncevent.HoldSweepOptions{})
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Served)
	got := byStatus(t, c, held)
	assert.Equal(t, []string{held[1], held[2]}, got[asyncevent.StatusHeld], "the cancelled seat went to the first of the waitlist")
	asynceventtest.CheckEvent(t, c, "held", asynceventtest.CheckOptions{})
}

// poolVersion reads an event's pool version, bookkeeping no caller's type carries.
func poolVersion(t *testing.T, c *asyncevent.Client, eventID string) int64 {
	t.Helper()
	b, err := asyncevent.ReadEventBookkeeping(context.Background(), c, eventID)
	require.NoError(t, err)
	return b.PoolVersion
}

// A pool claim that took its seat and whose SUCCEEDED failed: the next delivery
// (after the lease ran out) takes the request over, claims on the pool again (its
// seatShard names it), meets its token (the holders set) and binds that seat: one
// seat, not two.
func TestPoolSeatOfARedeliveryIsTakenOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	var armed, poolClaimed, failed atomic.Bool
	var target atomic.Value
	db := &hookDB{DynamoDB: asynceventtest.DynamoDB(t)}
	db.update = func(ctx context.Context, in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error, bool) {
		if !armed.Load() {
			return nil, nil, false
		}
		pk := pkOfKey(in.Key)
		if pk == "EVENT#redo#RETURNS" && isSeatClaim(in) {
			out, err := db.DynamoDB.UpdateItem(ctx, in)
			if err == nil {
				poolClaimed.Store(true)
			}
			return out, err, true
		}
		if id, _ := target.Load().(string); poolClaimed.Load() && pk == "REQ#"+id && !failed.Swap(true) {
			return nil, errors.New("injected: the SUCCEEDED write is lost"), true
		}
		return nil, nil, false
	}
	c := asynceventtest.NewTableOn(t, db, asyncevent.Options{Clock: clock.Now})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "redo", EventType: asyncevent.FirstCome, CapacityTotal: 1})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	submitAll(t, c, clock, q, "redo", 2)
	drain(t, proc, q)
	up, err := c.AddCapacity(ctx, "redo", asyncevent.AddCapacityInput{Seats: 1, Actor: "ops"})
	require.NoError(t, err)
	require.True(t, up.Applied)

	p, err := c.Submit(ctx, q, "redo", "pool-user")
	require.NoError(t, err)
	target.Store(p.RequestID)
	armed.Store(true)
	m := messageFor(t, c, p.RequestID, 1)
	first := asynceventtest.Work(ctx, t, c, m, asyncevent.ProcessOptions{})
	require.True(t, poolClaimed.Load(), "the first delivery claimed on the pool")
	require.True(t, failed.Load(), "and its SUCCEEDED failed")
	assert.True(t, first.Redeliver, "%+v", first.Outcome)

	clock.Advance(10 * time.Minute) // the first delivery's lease has run out
	second := asynceventtest.Work(ctx, t, c, m, asyncevent.ProcessOptions{})
	assert.Equal(t, asyncevent.OutcomeSucceeded, second.Kind, "%+v", second.Outcome)
	third := asynceventtest.Work(ctx, t, c, m, asyncevent.ProcessOptions{})
	assert.Equal(t, asyncevent.OutcomeDuplicate, third.Kind)
	remaining, holders := poolOf(t, c, "redo")
	assert.Zero(t, remaining)
	assert.Equal(t, []string{tokenOf(p.RequestID)}, holders, "one seat, the request's")
	r, err := asyncevent.ReadStoredRequest(ctx, c, p.RequestID)
	require.NoError(t, err)
	require.NotNil(t, r.SeatShard)
	assert.Equal(t, 1, *r.SeatShard, "its seatShard names the pool (shard C)")
	asynceventtest.CheckEvent(t, c, "redo", asynceventtest.CheckOptions{})
}

// Two cancels of the same winner at once (a double click, two admins): one applies,
// the other is refused with the request as it now stands; one audit entry, one seat
// on the pool.
func TestTwoCancelsOfOneWinnerApplyOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now, StatusLog: true})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "twice", EventType: asyncevent.FirstCome, CapacityTotal: 2, CapacityShards: 2})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := submitAll(t, c, clock, q, "twice", 3)
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)
	winner := byStatus(t, c, ids)[asyncevent.StatusSucceeded][0]

	for round := range 5 {
		_ = round
		var wg sync.WaitGroup
		var applied atomic.Int32
		for range 4 {
			wg.Go(func() {
				up, err := c.CancelRequest(ctx, winner, asyncevent.CancelRequestInput{Actor: "ops"})
				assert.NoError(t, err)
				if up.Applied {
					applied.Add(1)
				} else {
					assert.Equal(t, asyncevent.StatusRejected, up.Request.Status)
				}
			})
		}
		wg.Wait()
		if round == 0 {
			assert.EqualValues(t, 1, applied.Load(), "one cancel applies")
		} else {
			assert.Zero(t, applied.Load())
		}
	}
	trail, err := c.ListAudit(ctx, "twice")
	require.NoError(t, err)
	assert.Len(t, trail, 1)
	remaining, _ := poolOf(t, c, "twice")
	assert.EqualValues(t, 1, remaining)
	asynceventtest.CheckEvent(t, c, "twice", asynceventtest.CheckOptions{})
}

// Seats added after the pool ran dry, twice: each time the next request in queue
// order wins the new seat on the worker that found the pool empty before (a dry
// memory never hides a later version).
func TestSeatsAddedAgainAfterThePoolRanDry(t *testing.T) {
	for _, shards := range []int{1, 3} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			clock := asynceventtest.NewClock(t0)
			c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
			_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "again", EventType: asyncevent.FirstCome, CapacityTotal: 3, CapacityShards: shards})
			require.NoError(t, err)
			q := queue.NewMemory(queue.MemoryOptions{})
			proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
			submitAll(t, c, clock, q, "again", 5)
			drain(t, proc, q)
			user := 0
			for round := range 3 {
				up, err := c.AddCapacity(ctx, "again", asyncevent.AddCapacityInput{Seats: 1, Actor: "ops"})
				require.NoError(t, err)
				require.True(t, up.Applied, up.Reason)
				var ids []string
				for range 3 {
					p, err := c.Submit(ctx, q, "again", fmt.Sprintf("r%d", user))
					require.NoError(t, err)
					user++
					ids = append(ids, p.RequestID)
					clock.Advance(time.Millisecond)
				}
				drain(t, proc, q)
				got := byStatus(t, c, ids)
				assert.Equal(t, ids[:1], got[asyncevent.StatusSucceeded], "round %d: the next request wins the added seat", round)
			}
			asynceventtest.CheckEvent(t, c, "again", asynceventtest.CheckOptions{})
		})
	}
}

// A shard emptied between AddCapacity's read and its write (a claim took the last
// seat, the worker remembers the sell-out): the shard's condition refuses the write,
// AddCapacity reads again and puts the seats on the pool, and the next request, on
// the worker that saw the sell-out, wins one. Exactly N.
func TestShardEmptiedBetweenAddsReadAndWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	h := &txHook{DynamoDB: asynceventtest.DynamoDB(t)}
	c := asynceventtest.NewTableOn(t, h, asyncevent.Options{Clock: clock.Now})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "emptied", EventType: asyncevent.FirstCome, CapacityTotal: 2, CapacityShards: 2})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	first := submitAll(t, c, clock, q, "emptied", 1)
	drain(t, proc, q)
	p, err := c.Submit(ctx, q, "emptied", "last-seat") // takes the last seat, inside the add
	require.NoError(t, err)
	last := []string{p.RequestID}
	h.before = func() { drain(t, proc, q) }

	up, err := c.AddCapacity(ctx, "emptied", asyncevent.AddCapacityInput{Seats: 2, Actor: "ops"})
	require.NoError(t, err)
	require.True(t, up.Applied, up.Reason)
	trail, err := c.ListAudit(ctx, "emptied")
	require.NoError(t, err)
	require.Len(t, trail, 1)
	assert.Equal(t, "2 seats: 0 on shards, 2 on the pool", trail[0].Detail)
	got := byStatus(t, c, append(first, last...))
	require.Len(t, got[asyncevent.StatusSucceeded], 2, "the sale sold out inside the add")

	var next []string
	for i := range 3 {
		p, err := c.Submit(ctx, q, "emptied", fmt.Sprintf("next-%d", i))
		require.NoError(t, err)
		next = append(next, p.RequestID)
		clock.Advance(time.Millisecond)
	}
	drain(t, proc, q)
	assert.Equal(t, next[:2], byStatus(t, c, next)[asyncevent.StatusSucceeded])
	asynceventtest.CheckEvent(t, c, "emptied", asynceventtest.CheckOptions{})
}

// poolOf reads an event's pool (its Returns item) as the table holds it.
func poolOf(t *testing.T, c *asyncevent.Client, eventID string) (remaining int64, holders []string) {
	t.Helper()
	for _, raw := range asynceventtest.ScanTable(t, c.TableName()) {
		if pk, ok := raw["PK"].(*types.AttributeValueMemberS); ok && pk.Value == "EVENT#"+eventID+"#RETURNS" {
			var r struct {
				CapacityRemaining int64    `dynamodbav:"capacityRemaining"`
				Holders           []string `dynamodbav:"holders,stringset"`
			}
			require.NoError(t, attributevalue.UnmarshalMap(raw, &r))
			return r.CapacityRemaining, r.Holders
		}
	}
	return 0, nil
}

// txHook runs before once the first TransactWriteItems that writes the table's
// CONFIG of eventID with an ADD (AddCapacity's), then passes every call through.
type txHook struct {
	asyncevent.DynamoDB
	once   sync.Once
	before func()
}

func (h *txHook) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	for _, it := range in.TransactItems {
		if it.Update != nil && pkOfKey(it.Update.Key) == "EVENT#emptied" && strings.Contains(*it.Update.UpdateExpression, "ADD") {
			h.once.Do(h.before)
			break
		}
	}
	return h.DynamoDB.TransactWriteItems(ctx, in, o...)
}

// Two cancels of two different winners at once: both are an operator's decision,
// neither depends on the other, but both condition on the CONFIG's poolVersion as
// read, so the second to commit is refused ("the request is no longer SUCCEEDED, or
// another change of the event's seats came first") and CancelRequest does not try
// again, although AddCapacity does for its own race. An operator cancelling a batch
// of fraudulent orders gets spurious 409s.
func TestConcurrentCancelsOfDifferentWinnersAllApply(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "fraud", EventType: asyncevent.FirstCome, CapacityTotal: 6, CapacityShards: 2})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := submitAll(t, c, clock, q, "fraud", 6)
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)
	require.Len(t, byStatus(t, c, ids)[asyncevent.StatusSucceeded], 6)

	var wg sync.WaitGroup
	ups := make([]asyncevent.EventUpdate, len(ids))
	for i, id := range ids {
		wg.Go(func() {
			up, err := c.CancelRequest(ctx, id, asyncevent.CancelRequestInput{Actor: "ops"})
			assert.NoError(t, err)
			ups[i] = up
		})
	}
	wg.Wait()
	refused := 0
	for i, up := range ups {
		if !up.Applied {
			refused++
			t.Logf("cancel of %s refused: %s", ids[i], up.Reason)
		}
	}
	assert.Zero(t, refused, "cancels of different winners at once: each should apply")
	asynceventtest.CheckEvent(t, c, "fraud", asynceventtest.CheckOptions{})
}

// An add of seats onto the shards (no pool change) while a cancel changes the pool:
// the add conditions on poolVersion as read and is refused, not tried again
// (AddCapacity retries only a shard emptied meanwhile).
func TestAddRacingACancelIsTriedAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "race", EventType: asyncevent.FirstCome, CapacityTotal: 40, CapacityShards: 2})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := submitAll(t, c, clock, q, "race", 10)
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)

	refusedAdds := 0
	for i := range 8 {
		var wg sync.WaitGroup
		var add asyncevent.EventUpdate
		wg.Go(func() {
			up, err := c.CancelRequest(ctx, ids[i], asyncevent.CancelRequestInput{Actor: "ops"})
			assert.NoError(t, err)
			assert.True(t, up.Applied, up.Reason)
		})
		wg.Go(func() {
			var err error
			add, err = c.AddCapacity(ctx, "race", asyncevent.AddCapacityInput{Seats: 1, Actor: "ops"})
			assert.NoError(t, err)
		})
		wg.Wait()
		if !add.Applied {
			refusedAdds++
			t.Logf("add refused: %s", add.Reason)
		}
	}
	assert.Zero(t, refusedAdds, "an add onto shards that hold seats refused because a cancel came first")
	asynceventtest.CheckEvent(t, c, "race", asynceventtest.CheckOptions{Unsettled: true})
}

// Two adds at once, each read the shard below MaxSeatsPerShard: neither bumps the
// pool's version, so both conditions hold and both apply, and the shard passes the
// bound CreateEvent enforces (its claims then cost more than the layout rule counts).
func TestConcurrentAddsKeepMaxSeatsPerShard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTable(t)
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "big", EventType: asyncevent.FirstCome, CapacityTotal: asyncevent.MaxSeatsPerShard - 10})
	require.NoError(t, err)
	for round := range 5 {
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				_, err := c.AddCapacity(ctx, "big", asyncevent.AddCapacityInput{Seats: 10, Actor: fmt.Sprintf("ops-%d", round)})
				assert.NoError(t, err)
			})
		}
		wg.Wait()
	}
	capItem, err := c.GetCapacity(ctx, "big")
	require.NoError(t, err)
	assert.LessOrEqual(t, capItem.CapacityTotal, int64(asyncevent.MaxSeatsPerShard), "a shard above MaxSeatsPerShard")
	asynceventtest.CheckEvent(t, c, "big", asynceventtest.CheckOptions{})
}

// isSeatClaim reports whether an UpdateItem is a seat claim (it adds to holders), not
// a close (it adds to void) or another write of the item.
func isSeatClaim(in *dynamodb.UpdateItemInput) bool {
	fields := strings.Fields(aws.ToString(in.UpdateExpression))
	return len(fields) > 1 && fields[0] == "ADD" && in.ExpressionAttributeNames[fields[1]] == "holders"
}

// countPoolClaims counts the claims sent on an event's pool (UpdateItem of
// EVENT#<eventId>#RETURNS whose expression is ADD holders, SET …).
func countPoolClaims(counter *atomic.Int64, eventID string) func(ctx context.Context, in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error, bool) {
	return func(ctx context.Context, in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error, bool) {
		if pkOfKey(in.Key) == "EVENT#"+eventID+"#RETURNS" && isSeatClaim(in) {
			counter.Add(1)
		}
		return nil, nil, false
	}
}

// Once the pool is drained, a worker remembers it dry ("the pool found empty is
// remembered at its version", docs/design.md "Seats added") and a sold-out loser is
// again a look and one write. The dry mark is recorded at sc.poolVersion, which only a
// claim on a capacity shard (seatclaim.ClaimOn) ever sets; a leased claim of a worker that knows every
// shard empty sends no claim on a shard, so its poolVersion stays 0 and poolDry(0)
// records nothing: every later loser of the worker goes the leased way (PROCESSING, a
// seat move, a failed claim on the single pool item) for the rest of the event.
func TestPoolDrainedIsRememberedDry(t *testing.T) {
	for _, shards := range []int{1, 3} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			clock := asynceventtest.NewClock(t0)
			var poolClaims atomic.Int64
			db := &hookDB{DynamoDB: asynceventtest.DynamoDB(t), update: countPoolClaims(&poolClaims, "dry")}
			c := asynceventtest.NewTableOn(t, db, asyncevent.Options{Clock: clock.Now, StatusLog: true})
			_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "dry", EventType: asyncevent.FirstCome, CapacityTotal: 3, CapacityShards: shards})
			require.NoError(t, err)
			q := queue.NewMemory(queue.MemoryOptions{})
			proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
			drain(t, proc, q)
			first := submitAll(t, c, clock, q, "dry", 6)
			drain(t, proc, q)
			require.Len(t, byStatus(t, c, first)[asyncevent.StatusSucceeded], 3)

			up, err := c.AddCapacity(ctx, "dry", asyncevent.AddCapacityInput{Seats: 1, Actor: "ops"})
			require.NoError(t, err)
			require.True(t, up.Applied, up.Reason)

			var later []string
			for i := range 8 {
				p, err := c.Submit(ctx, q, "dry", fmt.Sprintf("later-%d", i))
				require.NoError(t, err)
				later = append(later, p.RequestID)
				clock.Advance(time.Millisecond)
			}
			drain(t, proc, q)
			got := byStatus(t, c, later)
			require.Equal(t, later[:1], got[asyncevent.StatusSucceeded])
			asynceventtest.CheckEvent(t, c, "dry", asynceventtest.CheckOptions{})

			// One claim won the added seat, one found the pool empty and is
			// remembered; the six losers after it are a look and one write each.
			assert.LessOrEqual(t, poolClaims.Load(), int64(2), "%d claims sent on the pool for 8 requests: the dry memory never took", poolClaims.Load())
			for _, id := range later[2:] {
				logs, err := c.ListStatusLogs(ctx, id)
				require.NoError(t, err)
				for _, l := range logs {
					assert.NotEqual(t, asyncevent.StatusProcessing, l.ToStatus,
						"loser %s went PROCESSING (the leased way) although the pool was known dry", id)
				}
			}
		})
	}
}

// Cancels during a spike, on DynamoDB's limits (asynceventtest.NewLimitedClient: a
// transaction holds its items 25 ms, a single write on a held item is refused with
// TransactionConflictException). CancelRequest's transaction names every capacity
// shard (the pool version), so while it commits every home claim on every shard is
// refused; a claim refused three times leaves its home shard for throughput and
// lists it left on the CONFIG, for good (docs/design.md, "The home claim"): from
// then on every request homed there goes the leased way. The operator's cancel
// should not cost the sale its cheap path.
func TestCancelsDuringASpikeLeaveNoShard(t *testing.T) {
	for _, withCancels := range []bool{false, true} {
		t.Run(fmt.Sprintf("cancels=%v", withCancels), func(t *testing.T) { spikeWithCancels(t, withCancels) })
	}
}

func spikeWithCancels(t *testing.T, withCancels bool) {
	ctx := context.Background()
	limited, limits := asynceventtest.NewLimitedClient(asynceventtest.DynamoDB(t), asynceventtest.Limits{})
	c := asynceventtest.NewTableOn(t, limited, asyncevent.Options{})
	clean, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName()})
	require.NoError(t, err)
	_, err = c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "busy", EventType: asyncevent.FirstCome, CapacityTotal: 1500, CapacityShards: 4})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	const users = 600
	var wg sync.WaitGroup
	work := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range work {
				_, err := c.Submit(ctx, q, "busy", fmt.Sprintf("u%05d", i))
				assert.NoError(t, err)
			}
		})
	}
	for i := range users {
		work <- i
	}
	close(work)
	wg.Wait()

	w, err := asyncevent.NewWorker(c, q, asyncevent.WorkerOptions{Concurrency: 32, WaitTime: 20 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	cancels := 0
	deadline := time.Now().Add(time.Minute)
	for l := q.Len(); l.Visible+l.InFlight > 0 && time.Now().Before(deadline); l = q.Len() {
		page, err := clean.ListEventRequests(ctx, "busy", asyncevent.EventListOptions{PageOptions: asyncevent.PageOptions{Limit: 1}, Status: asyncevent.StatusSucceeded})
		require.NoError(t, err)
		if withCancels && len(page.Requests) > 0 {
			up, err := c.CancelRequest(ctx, page.Requests[0].RequestID, asyncevent.CancelRequestInput{Actor: "ops"})
			if err == nil && up.Applied {
				cancels++
			}
		}
		time.Sleep(30 * time.Millisecond)
	}
	asynceventtest.WaitDrained(t, q, time.Minute)
	require.NoError(t, w.Stop(ctx))
	t.Logf("%d cancels applied; limits: %d conflicts, %d throttled", cancels, limits.Counts().Conflicts, limits.Counts().Throttled)
	if withCancels {
		require.Positive(t, cancels)
	}
	asynceventtest.CheckEvent(t, clean, "busy", asynceventtest.CheckOptions{})
}

// wireFault is what lossyDB does to one transaction of a control of seats.
type wireFault int

const (
	applyThenLose       wireFault = iota + 1 // applied, then the connection resets: the caller cannot tell
	applyThenCallerGone                      // applied, then the caller's deadline passes before the answer
	refuseToSend                             // the connection is refused: nothing applied
)

// lossyDB plays a script of faults on the transactions that carry an operation's
// marker (SK OP#…), one fault a transaction, and counts those transactions; the
// others, and every transaction once the script is played, go through.
type lossyDB struct {
	asyncevent.DynamoDB
	mu     sync.Mutex
	script []wireFault
	sent   int
	caller context.CancelFunc // ends the caller's ctx, for applyThenCallerGone
}

// play arms the faults of the next transactions of controls of seats.
func (l *lossyDB) play(faults ...wireFault) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.script, l.sent = faults, 0
}

// callerGone returns a ctx that applyThenCallerGone ends.
func (l *lossyDB) callerGone() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	l.mu.Lock()
	defer l.mu.Unlock()
	l.caller = cancel
	return ctx
}

// transactions returns how many transactions of controls of seats were sent since play.
func (l *lossyDB) transactions() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sent
}

func (l *lossyDB) next(in *dynamodb.TransactWriteItemsInput) wireFault {
	marked := false
	for _, it := range in.TransactItems {
		if it.Put != nil {
			if sk, ok := it.Put.Item["SK"].(*types.AttributeValueMemberS); ok && strings.HasPrefix(sk.Value, "OP#") {
				marked = true
			}
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !marked {
		return 0
	}
	l.sent++
	if len(l.script) == 0 {
		return 0
	}
	f := l.script[0]
	l.script = l.script[1:]
	return f
}

func (l *lossyDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	reset := func(op string) error { // shaped as the SDK's error after its own retries
		return &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "TransactWriteItems", Err: &net.OpError{Op: op, Net: "tcp", Err: syscall.ECONNRESET}}
	}
	switch l.next(in) {
	case refuseToSend:
		return nil, reset("dial")
	case applyThenLose:
		if _, err := l.DynamoDB.TransactWriteItems(ctx, in, o...); err != nil {
			return nil, err
		}
		return nil, reset("read")
	case applyThenCallerGone:
		if _, err := l.DynamoDB.TransactWriteItems(context.WithoutCancel(ctx), in, o...); err != nil {
			return nil, err
		}
		l.mu.Lock()
		l.caller()
		l.mu.Unlock()
		return nil, &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "TransactWriteItems", Err: ctx.Err()}
	}
	return l.DynamoDB.TransactWriteItems(ctx, in, o...)
}

// lossyTable is a table on a lossyDB, with a FIRST_COME event of capacity seats on
// shards capacity shards.
func lossyTable(t *testing.T, eventID string, capacity int64, shards int) (*asyncevent.Client, *lossyDB) {
	t.Helper()
	db := &lossyDB{DynamoDB: asynceventtest.DynamoDB(t)}
	c := asynceventtest.NewTableOn(t, db, asyncevent.Options{})
	_, err := c.CreateEvent(context.Background(), asyncevent.EventSettings{EventID: eventID, EventType: asyncevent.FirstCome, CapacityTotal: capacity, CapacityShards: shards})
	require.NoError(t, err)
	return c, db
}

// seatsOf returns the event's capacity, the seats on its shards and on its pool, and
// its audit entries of action, checking that the seats add up (CheckEvent).
func seatsOf(t *testing.T, c *asyncevent.Client, eventID string, action asyncevent.Action) (total, shards, pool int64, entries int) {
	t.Helper()
	ctx := context.Background()
	st, err := c.EventStats(ctx, eventID)
	require.NoError(t, err)
	trail, err := c.ListAudit(ctx, eventID)
	require.NoError(t, err)
	for _, e := range trail {
		if e.Action == action {
			entries++
		}
	}
	asynceventtest.CheckEvent(t, c, eventID, asynceventtest.CheckOptions{})
	return st.CapacityTotal, st.CapacityRemaining, st.PoolRemaining, entries
}

// An add applied whose answer was lost, and the call's own two sends after it
// refused: the call errs, naming its key. Sent again under that key, it answers
// applied, replayed, and the seats were added once.
func TestAddCapacityRetriedUnderItsKeyAppliesOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, db := lossyTable(t, "lost", 4, 2)
	in := asyncevent.AddCapacityInput{Seats: 2, Actor: "ops", IdempotencyKey: "add-7f1e"}

	db.play(applyThenLose, refuseToSend, refuseToSend)
	_, err := c.AddCapacity(ctx, "lost", in)
	var netErr net.Error
	require.ErrorAs(t, err, &netErr, "the outcome is unknown to the call")
	assert.Contains(t, err.Error(), "add-7f1e", "the error names the key a retry takes")
	assert.Equal(t, 3, db.transactions(), "sent, and sent again twice, no more")
	total, shards, _, entries := seatsOf(t, c, "lost", asyncevent.ActionAddCapacity)
	require.EqualValues(t, 6, total, "the first send applied")
	require.EqualValues(t, 6, shards)
	require.Equal(t, 1, entries)

	db.play()
	up, err := c.AddCapacity(ctx, "lost", in)
	require.NoError(t, err)
	assert.True(t, up.Applied, up.Reason)
	assert.True(t, up.Replayed)
	assert.EqualValues(t, 6, up.Event.CapacityTotal, "the event as it stands")
	assert.Contains(t, up.Reason, "applied before")
	total, shards, _, entries = seatsOf(t, c, "lost", asyncevent.ActionAddCapacity)
	assert.EqualValues(t, 6, total, "added once")
	assert.EqualValues(t, 6, shards)
	assert.Equal(t, 1, entries, "one audit entry: one add")

	// A key that was never applied (its only send refused) is a new add.
	db.play(refuseToSend, refuseToSend, refuseToSend)
	_, err = c.AddCapacity(ctx, "lost", asyncevent.AddCapacityInput{Seats: 1, Actor: "ops", IdempotencyKey: "add-8a2c"})
	require.ErrorAs(t, err, &netErr)
	db.play()
	up, err = c.AddCapacity(ctx, "lost", asyncevent.AddCapacityInput{Seats: 1, Actor: "ops", IdempotencyKey: "add-8a2c"})
	require.NoError(t, err)
	assert.True(t, up.Applied)
	assert.False(t, up.Replayed, "applied now: nothing had been")
	total, _, _, _ = seatsOf(t, c, "lost", asyncevent.ActionAddCapacity)
	assert.EqualValues(t, 7, total)
}

// Without a key, the call's own send after a lost answer does not add the seats
// again: onto the shards, and onto the pool of a sold-out event (whose
// poolVersion the first send moved: the second reads it, and fails on the marker).
func TestAddCapacityWithoutAKeyAppliesOnceOnALostAnswer(t *testing.T) {
	for _, soldOut := range []bool{false, true} {
		t.Run(fmt.Sprintf("soldOut=%v", soldOut), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			c, db := lossyTable(t, "own", 2, 2)
			if soldOut {
				q := queue.NewMemory(queue.MemoryOptions{})
				clock := asynceventtest.NewClock(t0)
				submitAll(t, c, clock, q, "own", 3)
				drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)
			}
			db.play(applyThenLose)
			up, err := c.AddCapacity(ctx, "own", asyncevent.AddCapacityInput{Seats: 3, Actor: "ops"})
			require.NoError(t, err)
			assert.True(t, up.Applied, up.Reason)
			assert.True(t, up.Replayed, "the call's first send applied")
			assert.Equal(t, 2, db.transactions())
			total, shards, pool, entries := seatsOf(t, c, "own", asyncevent.ActionAddCapacity)
			assert.EqualValues(t, 5, total, "added once")
			assert.Equal(t, 1, entries)
			if soldOut {
				assert.EqualValues(t, [2]int64{0, 3}, [2]int64{shards, pool}, "onto the pool")
				assert.EqualValues(t, 1, poolVersion(t, c, "own"), "one version step: one add")
			} else {
				assert.EqualValues(t, [2]int64{5, 0}, [2]int64{shards, pool})
			}
		})
	}
}

// Two adds under two keys are two adds; one key given to another add is refused;
// many callers racing under one key add once, and each is told it applied.
func TestAddCapacityKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _ := lossyTable(t, "keys", 4, 2)
	for _, key := range []string{"k1", "k2"} {
		up, err := c.AddCapacity(ctx, "keys", asyncevent.AddCapacityInput{Seats: 2, Actor: "ops", IdempotencyKey: key})
		require.NoError(t, err)
		require.True(t, up.Applied, up.Reason)
		assert.False(t, up.Replayed)
	}
	total, _, _, entries := seatsOf(t, c, "keys", asyncevent.ActionAddCapacity)
	assert.EqualValues(t, 8, total, "two keys, two adds")
	assert.Equal(t, 2, entries)

	for name, in := range map[string]asyncevent.AddCapacityInput{
		"other seats": {Seats: 3, Actor: "ops", IdempotencyKey: "k1"},
		"a shard":     {Seats: 2, Shard: new(0), Actor: "ops", IdempotencyKey: "k1"},
		"other actor": {Seats: 2, Actor: "ops-bob", IdempotencyKey: "k1"},
	} {
		_, err := c.AddCapacity(ctx, "keys", in)
		assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions, name)
		assert.ErrorContains(t, err, "k1", name)
	}
	_, err := c.AddCapacity(ctx, "keys", asyncevent.AddCapacityInput{Seats: 2, Actor: "ops", IdempotencyKey: "a key"})
	assert.ErrorIs(t, err, asyncevent.ErrInvalidID, "a key follows the rules of an ID")

	const callers = 8
	var wg sync.WaitGroup
	answers := make([]asyncevent.EventUpdate, callers)
	errs := make([]error, callers)
	for i := range callers {
		wg.Go(func() {
			answers[i], errs[i] = c.AddCapacity(ctx, "keys", asyncevent.AddCapacityInput{Seats: 5, Actor: "ops", IdempotencyKey: "race"})
		})
	}
	wg.Wait()
	fresh := 0
	for i := range callers {
		require.NoError(t, errs[i])
		assert.True(t, answers[i].Applied, answers[i].Reason)
		if !answers[i].Replayed {
			fresh++
		}
	}
	assert.Equal(t, 1, fresh, "one call applied, the others were told so")
	total, _, _, entries = seatsOf(t, c, "keys", asyncevent.ActionAddCapacity)
	assert.EqualValues(t, 13, total, "five seats, once")
	assert.Equal(t, 3, entries)
}

// A cancel applied whose answer came after its caller's deadline: sent again under
// its key it answers applied, replayed, with the request REJECTED_CANCELLED; the seat
// went back once. Without the key a second cancel answers not applied, saying the
// request was cancelled already. Without any key, a call whose answer was lost
// reads the request again and answers applied, replayed.
func TestCancelRequestRetriedAfterALostAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, db := lossyTable(t, "refund", 3, 1)
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := submitAll(t, c, asynceventtest.NewClock(t0), q, "refund", 3)
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)
	require.Len(t, byStatus(t, c, ids)[asyncevent.StatusSucceeded], 3)
	in := asyncevent.CancelRequestInput{Actor: "ops", IdempotencyKey: "refund-" + ids[0]}

	db.play(applyThenCallerGone)
	_, err := c.CancelRequest(db.callerGone(), ids[0], in)
	require.ErrorIs(t, err, context.Canceled, "the caller gave up: it cannot tell")
	assert.Contains(t, err.Error(), in.IdempotencyKey, "the error names the key a retry takes")
	assert.Equal(t, 1, db.transactions(), "a call whose ctx ended sends nothing more")
	db.play()
	up, err := c.CancelRequest(ctx, ids[0], in)
	require.NoError(t, err)
	assert.True(t, up.Applied, up.Reason)
	assert.True(t, up.Replayed)
	require.NotNil(t, up.Request)
	assert.Equal(t, asyncevent.StatusRejected, up.Request.Status)
	assert.Equal(t, asyncevent.ResultCancelled, up.Request.ResultCode)
	total, _, pool, entries := seatsOf(t, c, "refund", asyncevent.ActionCancel)
	assert.EqualValues(t, [3]int64{3, 1, 1}, [3]int64{total, pool, int64(entries)}, "one seat back, one cancel on record")

	up, err = c.CancelRequest(ctx, ids[0], asyncevent.CancelRequestInput{Actor: "ops"})
	require.NoError(t, err)
	assert.False(t, up.Applied, "another call's cancel")
	assert.False(t, up.Replayed)
	assert.Contains(t, up.Reason, "cancelled already")
	_, err = c.CancelRequest(ctx, ids[1], in)
	assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions, "the key of another request's cancel")

	db.play(applyThenLose)
	up, err = c.CancelRequest(ctx, ids[2], asyncevent.CancelRequestInput{Actor: "ops"})
	require.NoError(t, err)
	assert.Equal(t, 1, db.transactions(), "the request, read again, told: nothing sent again")
	assert.True(t, up.Applied, up.Reason)
	assert.True(t, up.Replayed, "the call's first send applied")
	assert.Equal(t, asyncevent.ResultCancelled, up.Request.ResultCode)
	_, _, pool, entries = seatsOf(t, c, "refund", asyncevent.ActionCancel)
	assert.EqualValues(t, [2]int64{2, 2}, [2]int64{pool, int64(entries)})
}

// A key's marker expires with DynamoDB's TTL: it carries ttl a day on, and
// entityType.
func TestOperationMarkerItem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, db := lossyTable(t, "item", 2, 1)
	_, err := c.AddCapacity(ctx, "item", asyncevent.AddCapacityInput{Seats: 1, Actor: "ops", IdempotencyKey: "k-item"})
	require.NoError(t, err)
	out, err := db.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(c.TableName()), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "EVENT#item"}, "SK": &types.AttributeValueMemberS{Value: "OP#ADD_CAPACITY#k-item"}},
	})
	require.NoError(t, err)
	require.NotNil(t, out.Item)
	kind, err := asyncevent.Key{PK: "EVENT#item", SK: "OP#ADD_CAPACITY#k-item"}.Entity()
	require.NoError(t, err)
	assert.Equal(t, &types.AttributeValueMemberS{Value: string(kind)}, out.Item["entityType"])
	assert.Equal(t, &types.AttributeValueMemberS{Value: "1 seat, spread"}, out.Item["target"])
	ttl, ok := out.Item["ttl"].(*types.AttributeValueMemberN)
	require.True(t, ok)
	at, ok := out.Item["at"].(*types.AttributeValueMemberN)
	require.True(t, ok)
	var ttlSec, atMs int64
	_, err = fmt.Sscan(ttl.Value, &ttlSec)
	require.NoError(t, err)
	_, err = fmt.Sscan(at.Value, &atMs)
	require.NoError(t, err)
	assert.Equal(t, atMs/1000+24*3600, ttlSec, "kept a day")
}
