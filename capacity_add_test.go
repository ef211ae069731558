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

// seatsEvent is the FIRST_COME event a test of the controls of seats (AddCapacity,
// CancelRequest) plays.
type seatsEvent struct {
	id     string
	seats  int64
	shards int // capacity shards (0: the default, one)
	// opts are the client's: Clock, if nil, is the bundle's clock, stopped at t0.
	opts asyncevent.Options
	db   asyncevent.DynamoDB // the client's (nil: DynamoDB Local's)
}

// seatsBundle is a seatsEvent on a table of its own and what its tests play it with.
type seatsBundle struct {
	c     *asyncevent.Client
	event string
	clock *asynceventtest.Clock
	q     *queue.Memory
	proc  *asyncevent.Processor // a worker on c
}

// seatsSetup makes e's table, client and event.
func seatsSetup(t *testing.T, e seatsEvent) *seatsBundle {
	t.Helper()
	b := &seatsBundle{event: e.id, clock: asynceventtest.NewClock(t0), q: queue.NewMemory(queue.MemoryOptions{})}
	if e.opts.Clock == nil {
		e.opts.Clock = b.clock.Now
	}
	if e.db == nil {
		e.db = asynceventtest.DynamoDB(t)
	}
	b.c = asynceventtest.NewTableOn(t, e.db, e.opts)
	_, err := b.c.CreateEvent(context.Background(), asyncevent.EventSettings{EventID: e.id, EventType: asyncevent.FirstCome,
		CapacityTotal: e.seats, CapacityShards: e.shards})
	require.NoError(t, err)
	b.proc = asyncevent.NewProcessor(b.c, asyncevent.ProcessOptions{})
	return b
}

// sold submits n clicks (users u000 on, a millisecond apart), has the worker decide
// them, and returns their request IDs in queue order.
func (b *seatsBundle) sold(t *testing.T, n int) []string {
	t.Helper()
	ids := submitAll(t, b.c, b.clock, b.q, b.event, n)
	b.drain(t)
	return ids
}

// drain has the worker decide every message queued.
func (b *seatsBundle) drain(t *testing.T) { t.Helper(); drain(t, b.proc, b.q) }

// click submits a click of each user, a millisecond apart, and returns their
// request IDs in queue order.
func (b *seatsBundle) click(t *testing.T, users ...string) []string {
	t.Helper()
	var ids []string
	for _, u := range users {
		p, err := b.c.Submit(context.Background(), b.q, b.event, u)
		require.NoError(t, err)
		ids = append(ids, p.RequestID)
		b.clock.Advance(time.Millisecond)
	}
	return ids
}

// add adds seats to the event (spread), which must apply.
func (b *seatsBundle) add(t *testing.T, seats int64) asyncevent.EventUpdate {
	t.Helper()
	up, err := b.c.AddCapacity(context.Background(), b.event, asyncevent.AddCapacityInput{Seats: seats, Actor: "ops"})
	require.NoError(t, err)
	require.True(t, up.Applied, up.Reason)
	return up
}

// cancel cancels a request as "ops".
func (b *seatsBundle) cancel(t *testing.T, requestID string) asyncevent.EventUpdate {
	t.Helper()
	up, err := b.c.CancelRequest(context.Background(), requestID, asyncevent.CancelRequestInput{Actor: "ops"})
	require.NoError(t, err)
	return up
}

// check checks that the event's seats add up (CheckEvent).
func (b *seatsBundle) check(t *testing.T) asynceventtest.CheckReport {
	t.Helper()
	return asynceventtest.CheckEvent(t, b.c, b.event, asynceventtest.CheckOptions{})
}

// numbered names n users prefix<from>, prefix<from+1> and on.
func numbered(prefix string, from, n int) []string {
	us := make([]string, n)
	for i := range us {
		us[i] = fmt.Sprintf("%s%d", prefix, from+i)
	}
	return us
}

// Seats added after a sell-out go to the event's pool, and the next requests in queue
// order win them, on a worker that remembers the sell-out: its look at each loser's
// home shard tells it the pool changed. Exactly N, N being the capacity plus the seats
// added. On one capacity item and on three shards.
func TestSeatsAddedAfterTheSellOutGoToTheNextRequests(t *testing.T) {
	for _, tc := range []struct {
		name string
		play func(t *testing.T, b *seatsBundle, poolClaims *atomic.Int64)
	}{
		{"the next requests in queue order win the seats added", func(t *testing.T, b *seatsBundle, _ *atomic.Int64) {
			ctx := context.Background()
			first := b.sold(t, 8)
			got := byStatus(t, b.c, first)
			require.Len(t, got[asyncevent.StatusSucceeded], 3)

			up := b.add(t, 2)
			assert.EqualValues(t, 5, up.Event.CapacityTotal)
			assert.EqualValues(t, 1, poolVersion(t, b.c, b.event))
			st, err := b.c.EventStats(ctx, b.event)
			require.NoError(t, err)
			assert.EqualValues(t, 0, st.CapacityRemaining, "the shards stay empty")
			assert.EqualValues(t, 2, st.PoolRemaining, "the seats wait on the pool")
			assert.EqualValues(t, 5, st.CapacityTotal)
			list, err := b.c.ListEvents(ctx, asyncevent.PageOptions{})
			require.NoError(t, err)
			require.Len(t, list.Events, 1)
			assert.EqualValues(t, 2, *list.Events[0].SeatsLeft, "the list counts the pool's seats as left")

			later := b.click(t, numbered("later-", 0, 5)...)
			b.drain(t) // the processor that saw the sell-out
			got = byStatus(t, b.c, later)
			assert.Equal(t, later[:2], got[asyncevent.StatusSucceeded], "the next two in queue order win the added seats")
			assert.Equal(t, later[2:], got[asyncevent.StatusRejected])
			rep := b.check(t)
			assert.Equal(t, 5, rep.ByStatus[asyncevent.StatusSucceeded])
			st, err = b.c.EventStats(ctx, b.event)
			require.NoError(t, err)
			assert.Zero(t, st.Fairness.Inversions, "a seat that reached the pool after the sell-out is no inversion")

			trail, err := b.c.ListAudit(ctx, b.event)
			require.NoError(t, err)
			require.Len(t, trail, 1)
			assert.Equal(t, asyncevent.ActionAddCapacity, trail[0].Action)
		}},
		{"seats added again after the pool ran dry go to the next request each time", func(t *testing.T, b *seatsBundle, _ *atomic.Int64) {
			// The worker found the pool empty before: a dry memory never hides a later
			// version.
			b.sold(t, 5)
			for round := range 3 {
				b.add(t, 1)
				ids := b.click(t, numbered("r", 3*round, 3)...)
				b.drain(t)
				got := byStatus(t, b.c, ids)
				assert.Equal(t, ids[:1], got[asyncevent.StatusSucceeded], "round %d: the next request wins the added seat", round)
			}
			b.check(t)
		}},
		{"a pool drained is remembered dry: the losers after it are a look and one write", func(t *testing.T, b *seatsBundle, poolClaims *atomic.Int64) {
			// docs/design.md, "Seats added": the pool found empty is remembered at its
			// version, also by a worker whose leased claims sent no claim on a shard
			// (one that knows every shard empty), so that its later losers do not go
			// the leased way (PROCESSING, a seat move, a failed claim on the pool).
			ctx := context.Background()
			b.drain(t)
			first := b.sold(t, 6)
			require.Len(t, byStatus(t, b.c, first)[asyncevent.StatusSucceeded], 3)
			b.add(t, 1)

			later := b.click(t, numbered("later-", 0, 8)...)
			b.drain(t)
			got := byStatus(t, b.c, later)
			require.Equal(t, later[:1], got[asyncevent.StatusSucceeded])
			b.check(t)

			// One claim won the added seat, one found the pool empty and is
			// remembered; the six losers after it are a look and one write each.
			assert.LessOrEqual(t, poolClaims.Load(), int64(2), "%d claims sent on the pool for 8 requests: the dry memory never took", poolClaims.Load())
			for _, id := range later[2:] {
				logs, err := b.c.ListStatusLogs(ctx, id)
				require.NoError(t, err)
				for _, l := range logs {
					assert.NotEqual(t, asyncevent.StatusProcessing, l.ToStatus,
						"loser %s went PROCESSING (the leased way) although the pool was known dry", id)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, shards := range []int{1, 3} {
				t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
					t.Parallel()
					var poolClaims atomic.Int64
					b := seatsSetup(t, seatsEvent{id: "more", seats: 3, shards: shards, opts: asyncevent.Options{StatusLog: true},
						db: &hookDB{DynamoDB: asynceventtest.DynamoDB(t), update: countPoolClaims(&poolClaims, "more")}})
					tc.play(t, b, &poolClaims)
				})
			}
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
	h := &txHook{DynamoDB: asynceventtest.DynamoDB(t)}
	b := seatsSetup(t, seatsEvent{id: "emptied", seats: 2, shards: 2, db: h})
	first := b.sold(t, 1)
	last := b.click(t, "last-seat") // takes the last seat, inside the add
	h.before = func() { b.drain(t) }

	b.add(t, 2)
	trail, err := b.c.ListAudit(ctx, b.event)
	require.NoError(t, err)
	require.Len(t, trail, 1)
	assert.Equal(t, "2 seats: 0 on shards, 2 on the pool", trail[0].Detail)
	got := byStatus(t, b.c, append(first, last...))
	require.Len(t, got[asyncevent.StatusSucceeded], 2, "the sale sold out inside the add")

	next := b.click(t, numbered("next-", 0, 3)...)
	b.drain(t)
	assert.Equal(t, next[:2], byStatus(t, b.c, next)[asyncevent.StatusSucceeded])
	b.check(t)
}

// Seats added while workers take a spike, several times: no seat given twice, none
// lost, and the winners are the capacity plus the seats added.
func TestSeatsAddedDuringASpike(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := seatsSetup(t, seatsEvent{id: "spike", seats: 40, shards: 4, opts: asyncevent.Options{Clock: time.Now}})
	w, err := asyncevent.NewWorker(b.c, b.q, asyncevent.WorkerOptions{Concurrency: 8, WaitTime: 20 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	added := 0
	for i := range 300 {
		_, err := b.c.Submit(ctx, b.q, b.event, fmt.Sprintf("u%03d", i))
		require.NoError(t, err)
		if i%60 == 30 {
			up, err := b.c.AddCapacity(ctx, b.event, asyncevent.AddCapacityInput{Seats: 10, Actor: "ops"})
			require.NoError(t, err)
			if up.Applied {
				added += 10
			}
		}
	}
	asynceventtest.WaitDrained(t, b.q, time.Minute)
	require.NoError(t, w.Stop(ctx))
	rep := b.check(t)
	assert.Equal(t, 40+added, rep.ByStatus[asyncevent.StatusSucceeded], "every seat added was won: later requests came")
	assert.Positive(t, added)
}

// Seats added before the sell-out go onto the shards that still hold seats, or onto
// the shard asked for; an add of no seats, to a shard the event does not have, or to
// a lottery, is refused.
func TestSeatsAddedToTheShardsThatHoldSeats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := seatsSetup(t, seatsEvent{id: "grow", seats: 4, shards: 2})
	b.add(t, 6)
	capacity, err := b.c.GetCapacity(ctx, b.event)
	require.NoError(t, err)
	assert.EqualValues(t, 10, capacity.CapacityTotal)
	assert.EqualValues(t, 10, capacity.CapacityRemaining)
	assert.EqualValues(t, 0, poolVersion(t, b.c, b.event), "no seat on the pool")
	up, err := b.c.AddCapacity(ctx, b.event, asyncevent.AddCapacityInput{Seats: 1, Shard: new(1), Actor: "ops"})
	require.NoError(t, err)
	require.True(t, up.Applied)
	capacity, err = b.c.GetCapacity(ctx, b.event)
	require.NoError(t, err)
	assert.EqualValues(t, 6, capacity.Shards[1].CapacityTotal, "to the shard asked for")

	ids := b.sold(t, 14)
	rep := b.check(t)
	assert.Equal(t, 11, rep.ByStatus[asyncevent.StatusSucceeded])
	assert.Len(t, ids, 14)

	_, err = b.c.AddCapacity(ctx, b.event, asyncevent.AddCapacityInput{Seats: 0, Actor: "ops"})
	assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions)
	_, err = b.c.AddCapacity(ctx, b.event, asyncevent.AddCapacityInput{Seats: 1, Shard: new(5), Actor: "ops"})
	assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions)
	_, err = b.c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "lot", EventType: asyncevent.Lottery, WinnerCount: 1, LotteryCutoffAt: asyncevent.MillisOf(t0.Add(time.Hour))})
	require.NoError(t, err)
	up, err = b.c.AddCapacity(ctx, "lot", asyncevent.AddCapacityInput{Seats: 1, Actor: "ops"})
	require.NoError(t, err)
	assert.False(t, up.Applied)
}

// A pool claim that took its seat and whose SUCCEEDED failed: the next delivery
// (after the lease ran out) takes the request over, claims on the pool again (its
// seatShard names it), meets its token (the holders set) and binds that seat: one
// seat, not two.
func TestPoolSeatOfARedeliveryIsTakenOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
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
	b := seatsSetup(t, seatsEvent{id: "redo", seats: 1, db: db})
	b.sold(t, 2)
	b.add(t, 1)

	p, err := b.c.Submit(ctx, b.q, b.event, "pool-user")
	require.NoError(t, err)
	target.Store(p.RequestID)
	armed.Store(true)
	m := messageFor(t, b.c, p.RequestID, 1)
	first := asynceventtest.Work(ctx, t, b.c, m, asyncevent.ProcessOptions{})
	require.True(t, poolClaimed.Load(), "the first delivery claimed on the pool")
	require.True(t, failed.Load(), "and its SUCCEEDED failed")
	assert.True(t, first.Redeliver, "%+v", first.Outcome)

	b.clock.Advance(10 * time.Minute) // the first delivery's lease has run out
	second := asynceventtest.Work(ctx, t, b.c, m, asyncevent.ProcessOptions{})
	assert.Equal(t, asyncevent.OutcomeSucceeded, second.Kind, "%+v", second.Outcome)
	third := asynceventtest.Work(ctx, t, b.c, m, asyncevent.ProcessOptions{})
	assert.Equal(t, asyncevent.OutcomeDuplicate, third.Kind)
	remaining, holders := poolOf(t, b.c, b.event)
	assert.Zero(t, remaining)
	assert.Equal(t, []string{tokenOf(p.RequestID)}, holders, "one seat, the request's")
	r, err := asyncevent.ReadStoredRequest(ctx, b.c, p.RequestID)
	require.NoError(t, err)
	require.NotNil(t, r.SeatShard)
	assert.Equal(t, 1, *r.SeatShard, "its seatShard names the pool (shard C)")
	b.check(t)
}

// Adds racing other changes of the event's seats: each applies, and no shard passes
// the bound CreateEvent enforces.
func TestAddCapacityRaces(t *testing.T) {
	t.Run("an add onto shards that hold seats, racing a cancel, is tried again", func(t *testing.T) {
		// The add conditions on the poolVersion it read, which the cancel moves: it
		// must read again and apply, as it does for a shard emptied meanwhile.
		t.Parallel()
		ctx := context.Background()
		b := seatsSetup(t, seatsEvent{id: "race", seats: 40, shards: 2})
		ids := b.sold(t, 10)

		refusedAdds := 0
		for i := range 8 {
			var wg sync.WaitGroup
			var add asyncevent.EventUpdate
			wg.Go(func() {
				up, err := b.c.CancelRequest(ctx, ids[i], asyncevent.CancelRequestInput{Actor: "ops"})
				assert.NoError(t, err)
				assert.True(t, up.Applied, up.Reason)
			})
			wg.Go(func() {
				var err error
				add, err = b.c.AddCapacity(ctx, b.event, asyncevent.AddCapacityInput{Seats: 1, Actor: "ops"})
				assert.NoError(t, err)
			})
			wg.Wait()
			if !add.Applied {
				refusedAdds++
				t.Logf("add refused: %s", add.Reason)
			}
		}
		assert.Zero(t, refusedAdds, "an add onto shards that hold seats refused because a cancel came first")
		asynceventtest.CheckEvent(t, b.c, b.event, asynceventtest.CheckOptions{Unsettled: true})
	})

	t.Run("adds at once keep a shard within MaxSeatsPerShard", func(t *testing.T) {
		// Two adds that each read the shard below the bound may not both apply past
		// it (its claims would then cost more than the layout rule counts).
		t.Parallel()
		ctx := context.Background()
		b := seatsSetup(t, seatsEvent{id: "big", seats: asyncevent.MaxSeatsPerShard - 10})
		for round := range 5 {
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					_, err := b.c.AddCapacity(ctx, b.event, asyncevent.AddCapacityInput{Seats: 10, Actor: fmt.Sprintf("ops-%d", round)})
					assert.NoError(t, err)
				})
			}
			wg.Wait()
		}
		capItem, err := b.c.GetCapacity(ctx, b.event)
		require.NoError(t, err)
		assert.LessOrEqual(t, capItem.CapacityTotal, int64(asyncevent.MaxSeatsPerShard), "a shard above MaxSeatsPerShard")
		b.check(t)
	})
}

// CancelRequest gives a winner's seat back, once, however many cancels race, and
// leaves the sale its cheap path.
func TestCancelRequest(t *testing.T) {
	t.Run("the seat goes to the next request, or to the first of the waitlist with holds", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		b := seatsSetup(t, seatsEvent{id: "plain", seats: 2, shards: 2})
		holdsEvent(t, b.c, "held", 2, 1, time.Hour, 0)
		plain := submitAll(t, b.c, b.clock, b.q, "plain", 3)
		held := submitAll(t, b.c, b.clock, b.q, "held", 4)
		b.drain(t)

		up := b.cancel(t, plain[0])
		require.True(t, up.Applied, up.Reason)
		r, err := b.c.GetRequest(ctx, plain[0])
		require.NoError(t, err)
		assert.Equal(t, asyncevent.ResultCancelled, r.ResultCode)
		up = b.cancel(t, plain[0])
		assert.False(t, up.Applied, "once")
		up = b.cancel(t, plain[2])
		assert.False(t, up.Applied, "a loser holds no seat")
		assert.Contains(t, up.Reason, "REJECTED")
		// The old message again gives nothing back to a shard.
		res := asynceventtest.Work(ctx, t, b.c, messageFor(t, b.c, plain[0], 2), asyncevent.ProcessOptions{})
		assert.Equal(t, asyncevent.OutcomeDuplicate, res.Kind)

		next := b.click(t, "next")
		b.drain(t)
		assert.Equal(t, []string{next[0]}, byStatus(t, b.c, next)[asyncevent.StatusSucceeded], "the cancelled seat went to the next request")
		b.check(t)

		tr, err := b.c.Confirm(ctx, held[0])
		require.NoError(t, err)
		require.True(t, tr.Applied)
		up = b.cancel(t, held[0])
		require.True(t, up.Applied, up.Reason)
		up = b.cancel(t, held[1])
		assert.Contains(t, up.Reason, "Release", "a HELD request is Release's")
		rep, err := b.c.SweepHolds(ctx, "held", asyncevent.HoldSweepOptions{})
		require.NoError(t, err)
		assert.Equal(t, 1, rep.Served)
		got := byStatus(t, b.c, held)
		assert.Equal(t, []string{held[1], held[2]}, got[asyncevent.StatusHeld], "the cancelled seat went to the first of the waitlist")
		asynceventtest.CheckEvent(t, b.c, "held", asynceventtest.CheckOptions{})
	})

	t.Run("two cancels of one winner at once apply once", func(t *testing.T) {
		// A double click, two admins: one applies, the other is refused with the
		// request as it now stands; one audit entry, one seat on the pool.
		t.Parallel()
		ctx := context.Background()
		b := seatsSetup(t, seatsEvent{id: "twice", seats: 2, shards: 2, opts: asyncevent.Options{StatusLog: true}})
		ids := b.sold(t, 3)
		winner := byStatus(t, b.c, ids)[asyncevent.StatusSucceeded][0]

		for round := range 5 {
			var wg sync.WaitGroup
			var applied atomic.Int32
			for range 4 {
				wg.Go(func() {
					up, err := b.c.CancelRequest(ctx, winner, asyncevent.CancelRequestInput{Actor: "ops"})
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
		trail, err := b.c.ListAudit(ctx, b.event)
		require.NoError(t, err)
		assert.Len(t, trail, 1)
		remaining, _ := poolOf(t, b.c, b.event)
		assert.EqualValues(t, 1, remaining)
		b.check(t)
	})

	t.Run("cancels of different winners at once all apply", func(t *testing.T) {
		// Each is an operator's decision, neither depends on the other: both
		// condition on the CONFIG's poolVersion as read, and the one that commits
		// second must read again, not answer 409 (a batch of fraudulent orders).
		t.Parallel()
		ctx := context.Background()
		b := seatsSetup(t, seatsEvent{id: "fraud", seats: 6, shards: 2})
		ids := b.sold(t, 6)
		require.Len(t, byStatus(t, b.c, ids)[asyncevent.StatusSucceeded], 6)

		var wg sync.WaitGroup
		ups := make([]asyncevent.EventUpdate, len(ids))
		for i, id := range ids {
			wg.Go(func() {
				up, err := b.c.CancelRequest(ctx, id, asyncevent.CancelRequestInput{Actor: "ops"})
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
		b.check(t)
	})

	t.Run("cancels during a spike leave the sale every home shard", func(t *testing.T) {
		// On DynamoDB's limits (asynceventtest.NewLimitedClient: a transaction holds
		// its items 25 ms, a single write on a held item is refused with
		// TransactionConflictException). CancelRequest's transaction names every
		// capacity shard (the pool version); a home claim refused three times leaves
		// its home shard for good (docs/design.md, "The home claim"): the operator's
		// cancels must not cost the sale its cheap path. Without cancels, the same
		// spike for comparison.
		for _, withCancels := range []bool{false, true} {
			t.Run(fmt.Sprintf("cancels=%v", withCancels), func(t *testing.T) { spikeWithCancels(t, withCancels) })
		}
	})

	t.Run("a cancel whose answer was lost applies once, retried or not", func(t *testing.T) {
		// A cancel applied whose answer came after its caller's deadline: sent again
		// under its key it answers applied, replayed, with the request
		// REJECTED_CANCELLED; the seat went back once. Without the key a second cancel
		// answers not applied, saying the request was cancelled already. Without any
		// key, a call whose answer was lost reads the request again and answers
		// applied, replayed.
		t.Parallel()
		ctx := context.Background()
		db := &lossyDB{DynamoDB: asynceventtest.DynamoDB(t)}
		b := seatsSetup(t, seatsEvent{id: "refund", seats: 3, shards: 1, opts: asyncevent.Options{Clock: time.Now}, db: db})
		ids := b.sold(t, 3)
		require.Len(t, byStatus(t, b.c, ids)[asyncevent.StatusSucceeded], 3)
		in := asyncevent.CancelRequestInput{Actor: "ops", IdempotencyKey: "refund-" + ids[0]}

		db.play(applyThenCallerGone)
		_, err := b.c.CancelRequest(db.callerGone(), ids[0], in)
		require.ErrorIs(t, err, context.Canceled, "the caller gave up: it cannot tell")
		assert.Contains(t, err.Error(), in.IdempotencyKey, "the error names the key a retry takes")
		assert.Equal(t, 1, db.transactions(), "a call whose ctx ended sends nothing more")
		db.play()
		up, err := b.c.CancelRequest(ctx, ids[0], in)
		require.NoError(t, err)
		assert.True(t, up.Applied, up.Reason)
		assert.True(t, up.Replayed)
		require.NotNil(t, up.Request)
		assert.Equal(t, asyncevent.StatusRejected, up.Request.Status)
		assert.Equal(t, asyncevent.ResultCancelled, up.Request.ResultCode)
		total, _, pool, entries := seatsOf(t, b.c, b.event, asyncevent.ActionCancel)
		assert.EqualValues(t, [3]int64{3, 1, 1}, [3]int64{total, pool, int64(entries)}, "one seat back, one cancel on record")

		up = b.cancel(t, ids[0])
		assert.False(t, up.Applied, "another call's cancel")
		assert.False(t, up.Replayed)
		assert.Contains(t, up.Reason, "cancelled already")
		_, err = b.c.CancelRequest(ctx, ids[1], in)
		assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions, "the key of another request's cancel")

		db.play(applyThenLose)
		up = b.cancel(t, ids[2])
		assert.Equal(t, 1, db.transactions(), "the request, read again, told: nothing sent again")
		assert.True(t, up.Applied, up.Reason)
		assert.True(t, up.Replayed, "the call's first send applied")
		assert.Equal(t, asyncevent.ResultCancelled, up.Request.ResultCode)
		_, _, pool, entries = seatsOf(t, b.c, b.event, asyncevent.ActionCancel)
		assert.EqualValues(t, [2]int64{2, 2}, [2]int64{pool, int64(entries)})
	})
}

// spikeWithCancels plays 600 clicks on 32 workers over DynamoDB's limits, with an
// operator cancelling winners as they come if withCancels; every seat adds up.
func spikeWithCancels(t *testing.T, withCancels bool) {
	ctx := context.Background()
	limited, limits := asynceventtest.NewLimitedClient(asynceventtest.DynamoDB(t), asynceventtest.Limits{})
	b := seatsSetup(t, seatsEvent{id: "busy", seats: 1500, shards: 4, opts: asyncevent.Options{Clock: time.Now}, db: limited})
	clean, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: b.c.TableName()})
	require.NoError(t, err)
	const users = 600
	var wg sync.WaitGroup
	work := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range work {
				_, err := b.c.Submit(ctx, b.q, b.event, fmt.Sprintf("u%05d", i))
				assert.NoError(t, err)
			}
		})
	}
	for i := range users {
		work <- i
	}
	close(work)
	wg.Wait()

	w, err := asyncevent.NewWorker(b.c, b.q, asyncevent.WorkerOptions{Concurrency: 32, WaitTime: 20 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	cancels := 0
	deadline := time.Now().Add(time.Minute)
	for l := b.q.Len(); l.Visible+l.InFlight > 0 && time.Now().Before(deadline); l = b.q.Len() {
		page, err := clean.ListEventRequests(ctx, b.event, asyncevent.EventListOptions{PageOptions: asyncevent.PageOptions{Limit: 1}, Status: asyncevent.StatusSucceeded})
		require.NoError(t, err)
		if withCancels && len(page.Requests) > 0 {
			up, err := b.c.CancelRequest(ctx, page.Requests[0].RequestID, asyncevent.CancelRequestInput{Actor: "ops"})
			if err == nil && up.Applied {
				cancels++
			}
		}
		time.Sleep(30 * time.Millisecond)
	}
	asynceventtest.WaitDrained(t, b.q, time.Minute)
	require.NoError(t, w.Stop(ctx))
	t.Logf("%d cancels applied; limits: %d conflicts, %d throttled", cancels, limits.Counts().Conflicts, limits.Counts().Throttled)
	if withCancels {
		require.Positive(t, cancels)
	}
	asynceventtest.CheckEvent(t, clean, b.event, asynceventtest.CheckOptions{})
}

// keyedSetup is seatsSetup for the tests of idempotency keys: FIRST_COME event id of
// seats on shards, on a lossyDB, on the real clock.
func keyedSetup(t *testing.T, id string, seats int64, shards int) (*seatsBundle, *lossyDB) {
	t.Helper()
	db := &lossyDB{DynamoDB: asynceventtest.DynamoDB(t)}
	return seatsSetup(t, seatsEvent{id: id, seats: seats, shards: shards, opts: asyncevent.Options{Clock: time.Now}, db: db}), db
}

// An add applied whose answer was lost, and the call's own two sends after it
// refused: the call errs, naming its key. Sent again under that key, it answers
// applied, replayed, and the seats were added once.
func TestAddCapacityRetriedUnderItsKeyAppliesOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, db := keyedSetup(t, "lost", 4, 2)
	in := asyncevent.AddCapacityInput{Seats: 2, Actor: "ops", IdempotencyKey: "add-7f1e"}

	db.play(applyThenLose, refuseToSend, refuseToSend)
	_, err := b.c.AddCapacity(ctx, b.event, in)
	var netErr net.Error
	require.ErrorAs(t, err, &netErr, "the outcome is unknown to the call")
	assert.Contains(t, err.Error(), "add-7f1e", "the error names the key a retry takes")
	assert.Equal(t, 3, db.transactions(), "sent, and sent again twice, no more")
	total, shards, _, entries := seatsOf(t, b.c, b.event, asyncevent.ActionAddCapacity)
	require.EqualValues(t, 6, total, "the first send applied")
	require.EqualValues(t, 6, shards)
	require.Equal(t, 1, entries)

	db.play()
	up, err := b.c.AddCapacity(ctx, b.event, in)
	require.NoError(t, err)
	assert.True(t, up.Applied, up.Reason)
	assert.True(t, up.Replayed)
	assert.EqualValues(t, 6, up.Event.CapacityTotal, "the event as it stands")
	assert.Contains(t, up.Reason, "applied before")
	total, shards, _, entries = seatsOf(t, b.c, b.event, asyncevent.ActionAddCapacity)
	assert.EqualValues(t, 6, total, "added once")
	assert.EqualValues(t, 6, shards)
	assert.Equal(t, 1, entries, "one audit entry: one add")

	// A key that was never applied (its only send refused) is a new add.
	db.play(refuseToSend, refuseToSend, refuseToSend)
	_, err = b.c.AddCapacity(ctx, b.event, asyncevent.AddCapacityInput{Seats: 1, Actor: "ops", IdempotencyKey: "add-8a2c"})
	require.ErrorAs(t, err, &netErr)
	db.play()
	up, err = b.c.AddCapacity(ctx, b.event, asyncevent.AddCapacityInput{Seats: 1, Actor: "ops", IdempotencyKey: "add-8a2c"})
	require.NoError(t, err)
	assert.True(t, up.Applied)
	assert.False(t, up.Replayed, "applied now: nothing had been")
	total, _, _, _ = seatsOf(t, b.c, b.event, asyncevent.ActionAddCapacity)
	assert.EqualValues(t, 7, total)
}

// An idempotency key makes an add one add: two keys are two adds, a key is one
// add's, callers racing under one key add once, and without a key the call's own
// send after a lost answer does not add again. Its marker expires a day on.
func TestAddCapacityKeys(t *testing.T) {
	t.Run("two keys are two adds, and a key is its add's alone", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		b, _ := keyedSetup(t, "keys", 4, 2)
		for _, key := range []string{"k1", "k2"} {
			up, err := b.c.AddCapacity(ctx, b.event, asyncevent.AddCapacityInput{Seats: 2, Actor: "ops", IdempotencyKey: key})
			require.NoError(t, err)
			require.True(t, up.Applied, up.Reason)
			assert.False(t, up.Replayed)
		}
		total, _, _, entries := seatsOf(t, b.c, b.event, asyncevent.ActionAddCapacity)
		assert.EqualValues(t, 8, total, "two keys, two adds")
		assert.Equal(t, 2, entries)

		for _, tc := range []struct {
			name string
			in   asyncevent.AddCapacityInput
		}{
			{"other seats", asyncevent.AddCapacityInput{Seats: 3, Actor: "ops", IdempotencyKey: "k1"}},
			{"a shard", asyncevent.AddCapacityInput{Seats: 2, Shard: new(0), Actor: "ops", IdempotencyKey: "k1"}},
			{"other actor", asyncevent.AddCapacityInput{Seats: 2, Actor: "ops-bob", IdempotencyKey: "k1"}},
		} {
			t.Run("k1 with "+tc.name+" is refused", func(t *testing.T) {
				_, err := b.c.AddCapacity(ctx, b.event, tc.in)
				assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions)
				assert.ErrorContains(t, err, "k1")
			})
		}
		_, err := b.c.AddCapacity(ctx, b.event, asyncevent.AddCapacityInput{Seats: 2, Actor: "ops", IdempotencyKey: "a key"})
		assert.ErrorIs(t, err, asyncevent.ErrInvalidID, "a key follows the rules of an ID")
		total, _, _, entries = seatsOf(t, b.c, b.event, asyncevent.ActionAddCapacity)
		assert.EqualValues(t, [2]int64{8, 2}, [2]int64{total, int64(entries)}, "nothing refused was added")
	})

	t.Run("callers racing under one key add once, and each is told it applied", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		b, _ := keyedSetup(t, "keys", 4, 2)
		const callers = 8
		var wg sync.WaitGroup
		answers := make([]asyncevent.EventUpdate, callers)
		errs := make([]error, callers)
		for i := range callers {
			wg.Go(func() {
				answers[i], errs[i] = b.c.AddCapacity(ctx, b.event, asyncevent.AddCapacityInput{Seats: 5, Actor: "ops", IdempotencyKey: "race"})
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
		total, _, _, entries := seatsOf(t, b.c, b.event, asyncevent.ActionAddCapacity)
		assert.EqualValues(t, 9, total, "five seats, once")
		assert.Equal(t, 1, entries)
	})

	// Without a key, the call's own send after a lost answer does not add the seats
	// again: onto the shards, and onto the pool of a sold-out event (whose
	// poolVersion the first send moved: the second reads it, and fails on the marker).
	for _, soldOut := range []bool{false, true} {
		t.Run(fmt.Sprintf("without a key, a lost answer applies once/soldOut=%v", soldOut), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b, db := keyedSetup(t, "own", 2, 2)
			if soldOut {
				b.sold(t, 3)
			}
			db.play(applyThenLose)
			up, err := b.c.AddCapacity(ctx, b.event, asyncevent.AddCapacityInput{Seats: 3, Actor: "ops"})
			require.NoError(t, err)
			assert.True(t, up.Applied, up.Reason)
			assert.True(t, up.Replayed, "the call's first send applied")
			assert.Equal(t, 2, db.transactions())
			total, shards, pool, entries := seatsOf(t, b.c, b.event, asyncevent.ActionAddCapacity)
			assert.EqualValues(t, 5, total, "added once")
			assert.Equal(t, 1, entries)
			if soldOut {
				assert.EqualValues(t, [2]int64{0, 3}, [2]int64{shards, pool}, "onto the pool")
				assert.EqualValues(t, 1, poolVersion(t, b.c, b.event), "one version step: one add")
			} else {
				assert.EqualValues(t, [2]int64{5, 0}, [2]int64{shards, pool})
			}
		})
	}

	t.Run("a key's marker carries its entity type and expires a day on", func(t *testing.T) {
		// DynamoDB's TTL deletes it: ttl is the add's time plus a day, in seconds.
		t.Parallel()
		ctx := context.Background()
		b, db := keyedSetup(t, "item", 2, 1)
		_, err := b.c.AddCapacity(ctx, b.event, asyncevent.AddCapacityInput{Seats: 1, Actor: "ops", IdempotencyKey: "k-item"})
		require.NoError(t, err)
		out, err := db.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(b.c.TableName()), ConsistentRead: aws.Bool(true),
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
	})
}

// poolVersion reads an event's pool version, bookkeeping no caller's type carries.
func poolVersion(t *testing.T, c *asyncevent.Client, eventID string) int64 {
	t.Helper()
	b, err := asyncevent.ReadEventBookkeeping(context.Background(), c, eventID)
	require.NoError(t, err)
	return b.PoolVersion
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
