package asyncevent_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/queue"
)

// holdBundle is one test's sale with holds: a client on a table of the test's own,
// its event, the queue its clicks go to and a processor of the client's.
type holdBundle struct {
	c     *asyncevent.Client
	clock *asynceventtest.Clock // the client's clock, from t0; nil on the wall clock
	event string
	q     *queue.Memory
	proc  *asyncevent.Processor // without a Handler
}

// holdSale is what a test asks of setupHolds.
type holdSale struct {
	event     asyncevent.EventSettings // created when it has an ID
	db        asyncevent.DynamoDB      // the client's DynamoDB, around DynamoDB(t); nil: DynamoDB(t)
	statusLog bool
	// wallClock: the client reads time.Now, which under InBubble is the bubble's
	// clock, instead of a clock the test moves.
	wallClock bool
	// queueClock: the queue's visibility timeouts run on the test's clock.
	queueClock bool
}

// setupHolds makes the sale: the table, the event, the queue and the processor.
func setupHolds(t *testing.T, sale holdSale) *holdBundle {
	t.Helper()
	b := &holdBundle{event: sale.event.EventID}
	opts := asyncevent.Options{StatusLog: sale.statusLog}
	qopts := queue.MemoryOptions{}
	if !sale.wallClock {
		b.clock = asynceventtest.NewClock(t0)
		opts.Clock = b.clock.Now
		if sale.queueClock {
			qopts.Clock = b.clock.Now
		}
	}
	db := sale.db
	if db == nil {
		db = asynceventtest.DynamoDB(t)
	}
	b.c = asynceventtest.NewTableOn(t, db, opts)
	if sale.event.EventID != "" {
		_, err := b.c.CreateEvent(context.Background(), sale.event)
		require.NoError(t, err)
	}
	b.q = queue.NewMemory(qopts)
	b.proc = asyncevent.NewProcessor(b.c, asyncevent.ProcessOptions{})
	return b
}

// holdsOf is a first-come event with holds of holdFor (0: without holds).
// An endsAt of 0 is a year after t0 (an event with holds needs an end).
func holdsOf(id string, capacity int64, shards int, holdFor time.Duration, endsAt asyncevent.EpochMillis) asyncevent.EventSettings {
	if endsAt == 0 {
		endsAt = asyncevent.MillisOf(t0.Add(365 * 24 * time.Hour))
	}
	return asyncevent.EventSettings{
		EventID: id, EventType: asyncevent.FirstCome, CapacityTotal: capacity, CapacityShards: shards,
		HoldFor: holdFor, EndsAt: endsAt,
	}
}

// submit submits one click per user to the bundle's event, in queue order, and
// returns the request IDs.
func (b *holdBundle) submit(t *testing.T, users ...string) []string {
	t.Helper()
	return b.submitTo(t, b.event, users...)
}

// submitTo is submit to another event of the table.
func (b *holdBundle) submitTo(t *testing.T, event string, users ...string) []string {
	t.Helper()
	ids := make([]string, len(users))
	for i, u := range users {
		p, err := b.c.Submit(context.Background(), b.q, event, u)
		require.NoError(t, err)
		ids[i] = p.RequestID
		b.tick()
	}
	return ids
}

// tick puts a millisecond between two clicks, so that they are queued in order: on
// the wall clock a sleep, which under InBubble takes no wall time.
func (b *holdBundle) tick() {
	if b.clock != nil {
		b.clock.Advance(time.Millisecond)
		return
	}
	time.Sleep(2 * time.Millisecond)
}

// drain processes the queue with the bundle's processor until it is empty.
func (b *holdBundle) drain(t *testing.T) {
	t.Helper()
	drain(t, b.proc, b.q)
}

func (b *holdBundle) byStatus(t *testing.T, ids []string) map[asyncevent.Status][]string {
	t.Helper()
	return byStatus(t, b.c, ids)
}

func (b *holdBundle) request(t *testing.T, id string) *asyncevent.Request {
	t.Helper()
	r, err := b.c.GetRequest(context.Background(), id)
	require.NoError(t, err)
	return r
}

// released releases a request's hold or place, which must apply.
func (b *holdBundle) released(t *testing.T, id string) {
	t.Helper()
	tr, err := b.c.Release(context.Background(), id)
	require.NoError(t, err)
	require.True(t, tr.Applied, "release %s", id)
}

// sweep is one pass of the hold sweep of the bundle's event by c.
func (b *holdBundle) sweep(t *testing.T, c *asyncevent.Client, opts asyncevent.HoldSweepOptions) *asyncevent.HoldSweepReport {
	t.Helper()
	rep, err := c.SweepHolds(context.Background(), b.event, opts)
	require.NoError(t, err)
	return rep
}

// check checks the bundle's event: its seats add up.
func (b *holdBundle) check(t *testing.T, opts asynceventtest.CheckOptions) asynceventtest.CheckReport {
	t.Helper()
	return asynceventtest.CheckEvent(t, b.c, b.event, opts)
}

// client is another process's client of the table, on db: on the test's clock
// unless opts has one.
func (b *holdBundle) client(t *testing.T, db asyncevent.DynamoDB, opts asyncevent.Options) *asyncevent.Client {
	t.Helper()
	opts.TableName = b.c.TableName()
	if opts.Clock == nil && b.clock != nil {
		opts.Clock = b.clock.Now
	}
	c, err := asyncevent.New(db, opts)
	require.NoError(t, err)
	return c
}

// fresh is the client of a process that just started: no event's config cached.
func (b *holdBundle) fresh(t *testing.T) *asyncevent.Client {
	t.Helper()
	return b.client(t, asynceventtest.DynamoDB(t), asyncevent.Options{})
}

// faulty is a client whose calls meet the faults of plan.
func (b *holdBundle) faulty(t *testing.T, plan asynceventtest.FaultPlan) (*asynceventtest.FaultyDynamoDB, *asyncevent.Client) {
	t.Helper()
	f := asynceventtest.NewFaultyDynamoDB(asynceventtest.DynamoDB(t), plan)
	return f, b.client(t, f, asyncevent.Options{})
}

// counted is a client whose calls and capacity units are counted, without the
// progress writes, which would count too.
func (b *holdBundle) counted(t *testing.T) (*asynceventtest.Counter, *asyncevent.Client) {
	t.Helper()
	counter := asynceventtest.NewCounter(asynceventtest.DynamoDB(t))
	return counter, b.client(t, counter, asyncevent.Options{ProgressEvery: -1})
}

// clickers are n users named as submitAll names them.
func clickers(n int) []string {
	us := make([]string, n)
	for i := range us {
		us[i] = fmt.Sprintf("u%03d", i)
	}
	return us
}

func userNames(prefix string, from, n int) []string {
	us := make([]string, n)
	for i := range us {
		us[i] = fmt.Sprintf("%s%04d", prefix, from+i)
	}
	return us
}

// holdsEvent creates a first-come event with holds of holdFor.
func holdsEvent(t *testing.T, c *asyncevent.Client, id string, capacity int64, shards int, holdFor time.Duration, endsAt asyncevent.EpochMillis) {
	t.Helper()
	_, err := c.CreateEvent(context.Background(), holdsOf(id, capacity, shards, holdFor, endsAt))
	require.NoError(t, err)
}

// submitAll submits one click per user, a millisecond apart, and returns the request
// IDs in queue order.
func submitAll(t *testing.T, c *asyncevent.Client, clock *asynceventtest.Clock, q queue.Queue, event string, users int) []string {
	t.Helper()
	ids := make([]string, users)
	for i := range ids {
		p, err := c.Submit(context.Background(), q, event, fmt.Sprintf("u%03d", i))
		require.NoError(t, err)
		ids[i] = p.RequestID
		clock.Advance(time.Millisecond)
	}
	return ids
}

// drain processes the queue's messages one at a time, in queue order, until it is
// empty.
func drain(t *testing.T, proc *asyncevent.Processor, q *queue.Memory) {
	t.Helper()
	ctx := context.Background()
	for {
		ds, err := q.Receive(ctx, 1, 0, time.Minute)
		require.NoError(t, err)
		if len(ds) == 0 {
			return
		}
		for _, d := range ds {
			// A message left unfinished comes back, as the queue would send it again:
			// a claim is sent once, so a connection the transport lost under it (seen
			// on loopback under load) is a RETRY, not a test failure. Twice is one too
			// many.
			for again := 0; ; again++ {
				o, done, _ := proc.ProcessOne(ctx, d, 0, nil)
				if done {
					break
				}
				require.Less(t, again, 2, "message %s not finished: %s %v (request %s)", d.MessageID, o.Kind, o.Err, o.RequestID)
				t.Logf("message %s comes back: %s %v", d.MessageID, o.Kind, o.Err)
				d.ReceiveCount++
			}
		}
	}
}

// byStatus returns the IDs of ids in each status, in the order of ids.
func byStatus(t *testing.T, c *asyncevent.Client, ids []string) map[asyncevent.Status][]string {
	t.Helper()
	out := map[asyncevent.Status][]string{}
	for _, id := range ids {
		r, err := c.GetRequest(context.Background(), id)
		require.NoError(t, err)
		out[r.Status] = append(out[r.Status], id)
	}
	return out
}

// The rules of hold.go's rows where one write lands after another changed its item:
// a write held back until another applied, writes racing, an answer lost and the
// call made again. Each hold ends once, and each seat given back is given back once.
func TestHoldRules(t *testing.T) {
	t.Parallel()
	// A release read the request HELD, and its write lands after the confirm: the
	// "hold released" row leaves HELD only, so the paid seat stays the buyer's and
	// nothing is given back to the waitlist.
	t.Run("a release landing after the confirm", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		hb := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(t))
		b := setupHolds(t, holdSale{db: hb, event: holdsOf("pay", 1, 1, time.Minute, 0)})
		c := b.c
		id := b.submit(t, clickers(1)...)[0]
		b.drain(t)
		require.Equal(t, asyncevent.StatusHeld, b.request(t, id).Status)

		held := hb.Hold(func(op string, _ any) bool { return op == "TransactWriteItems" }, 1, asynceventtest.CallerWaits)
		released := make(chan asyncevent.Transition, 1)
		go func() {
			tr, err := c.Release(ctx, id)
			assert.NoError(t, err)
			released <- tr
		}()
		require.NoError(t, held.Caught(ctx))
		paid, err := c.Confirm(ctx, id)
		require.NoError(t, err)
		require.True(t, paid.Applied)
		require.NoError(t, held.Land(ctx))

		assert.False(t, (<-released).Applied, "the release of a confirmed request")
		assert.Equal(t, asyncevent.StatusSucceeded, b.request(t, id).Status)
		b.check(t, asynceventtest.CheckOptions{})
	})

	// Each hold ends once, either SUCCEEDED (the confirm came first) or
	// REJECTED_HOLD_EXPIRED (the sweep did), never both, and the loser of the race
	// sees the winner's outcome. The confirming client's clock is a second before the
	// holds run out and the sweeper's a second after, so both conditions hold on their
	// own: only the request's status decides.
	t.Run("a confirm racing the expiry", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		b := setupHolds(t, holdSale{event: holdsOf("race", 40, 2, time.Minute, 0)})
		ids := b.submit(t, clickers(40)...)
		b.drain(t)

		late := asynceventtest.NewClock(b.clock.Now().Add(time.Minute + time.Second))
		early := asynceventtest.NewClock(b.clock.Now().Add(time.Minute - time.Second))
		sweeper := b.client(t, asynceventtest.DynamoDB(t), asyncevent.Options{Clock: late.Now})
		payer := b.client(t, asynceventtest.DynamoDB(t), asyncevent.Options{Clock: early.Now})

		confirmed := make([]asyncevent.Transition, len(ids))
		var wg sync.WaitGroup
		for i, id := range ids {
			wg.Go(func() {
				tr, err := payer.Confirm(ctx, id)
				assert.NoError(t, err)
				confirmed[i] = tr
			})
		}
		var expired int
		wg.Go(func() {
			for range 3 {
				rep, err := sweeper.SweepHolds(ctx, "race", asyncevent.HoldSweepOptions{})
				assert.NoError(t, err)
				expired += rep.Expired
			}
		})
		wg.Wait()

		won := 0
		for i, id := range ids {
			r := b.request(t, id)
			switch {
			case confirmed[i].Applied:
				won++
				assert.Equal(t, asyncevent.StatusSucceeded, r.Status)
			default:
				assert.Equal(t, asyncevent.ResultHoldExpired, r.ResultCode, "the confirm lost: the sweep expired it")
				require.NotNil(t, confirmed[i].Current)
				assert.Equal(t, asyncevent.StatusRejected, confirmed[i].Current.Status, "the confirm sees the expiry")
			}
		}
		assert.Equal(t, len(ids), won+expired, "every hold ended once")
		b.check(t, asynceventtest.CheckOptions{})
	})

	// A release and a confirm of the same hold at once: one applies; the seat is given
	// back only when the release did.
	t.Run("a release racing the confirm", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		b := setupHolds(t, holdSale{event: holdsOf("both", 30, 1, time.Minute, 0)})
		c := b.c
		ids := b.submit(t, clickers(30)...)
		b.drain(t)

		var wg sync.WaitGroup
		released := make([]bool, len(ids))
		paid := make([]bool, len(ids))
		for i, id := range ids {
			wg.Go(func() {
				tr, err := c.Release(ctx, id)
				assert.NoError(t, err)
				released[i] = tr.Applied
			})
			wg.Go(func() {
				tr, err := c.Confirm(ctx, id)
				assert.NoError(t, err)
				paid[i] = tr.Applied
			})
		}
		wg.Wait()
		for i := range ids {
			assert.True(t, released[i] != paid[i], "request %d: exactly one of the release and the confirm applies", i)
		}
		b.check(t, asynceventtest.CheckOptions{})
	})

	// Each release is a transaction on the event's one Returns item: many at once
	// conflict there, and each caller still gets its answer.
	t.Run("releases at once on the Returns item", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		b := setupHolds(t, holdSale{event: holdsOf("rush", 60, 4, time.Minute, 0)})
		ids := b.submit(t, userNames("r", 0, 80)...)
		b.drain(t)
		var wg sync.WaitGroup
		var failed atomic.Int32
		for _, id := range ids[:60] {
			wg.Go(func() {
				if _, err := b.c.Release(ctx, id); err != nil {
					failed.Add(1)
					t.Logf("release %s: %v", id, err)
				}
			})
		}
		wg.Wait()
		assert.Zero(t, failed.Load(), "60 releases at once: every one answered")
		b.check(t, asynceventtest.CheckOptions{Unsettled: true})
	})

	// Several sweeps at once (workers' leased sweeps, a CLI's unleased one, on clients
	// with skewed clocks) racing confirms and releases: every hold ends once, no seat
	// is handed on twice, the waitlist is served in queue order.
	t.Run("sweeps racing confirms and releases", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		b := setupHolds(t, holdSale{event: holdsOf("many", 12, 3, time.Minute, 0), statusLog: true})
		c, clock := b.c, b.clock
		ids := b.submit(t, userNames("c", 0, 60)...)
		b.drain(t)

		var sweepers []*asyncevent.Client
		for _, skew := range []time.Duration{-2 * time.Second, 0, 2 * time.Second, time.Second} {
			cl := asynceventtest.NewClock(clock.Now().Add(skew))
			sweepers = append(sweepers, b.client(t, asynceventtest.DynamoDB(t), asyncevent.Options{Clock: cl.Now, StatusLog: true}))
		}
		for round := range 4 {
			clock.Advance(time.Minute - time.Second)
			var wg sync.WaitGroup
			got := b.byStatus(t, ids)
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
				rep := b.sweep(t, c, asyncevent.HoldSweepOptions{})
				if !rep.More && rep.Expired+rep.Served == 0 {
					break
				}
			}
			b.check(t, asynceventtest.CheckOptions{})
			requireHoldItemForEveryHeld(t, c, "many", ids)
		}
		got := b.byStatus(t, ids)
		// Queue order: every request served before another still waiting was queued earlier.
		lastServed := -1
		for i, id := range ids {
			if b.request(t, id).ServedAt != 0 {
				lastServed = i
			}
		}
		for _, id := range got[asyncevent.StatusWaitlisted] {
			assert.Greater(t, slices.Index(ids, id), lastServed, "a waiting request queued before a served one")
		}
	})

	// A confirm, a release and an expiry whose transaction DynamoDB applied but whose
	// answer was lost (the caller sees an error), then called again: the seat is given
	// back once, the second call sees a clear outcome.
	t.Run("a lost answer and the call again", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		b := setupHolds(t, holdSale{event: holdsOf("lost", 3, 1, time.Minute, 0)})
		c := b.c
		ids := b.submit(t, userNames("l", 0, 6)...)
		b.drain(t)
		_, fc := b.faulty(t, asynceventtest.FaultPlan{LoseRate: 1, Operations: []string{"TransactWriteItems"}})

		_, err := fc.Confirm(ctx, ids[0])
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

		b.clock.Advance(2 * time.Minute)
		_, err = fc.SweepHolds(ctx, "lost", asyncevent.HoldSweepOptions{})
		require.Error(t, err, "the expiry's answer was lost")
		for range 3 {
			b.sweep(t, c, asyncevent.HoldSweepOptions{})
		}
		got := b.byStatus(t, ids)
		assert.Equal(t, []string{ids[0]}, got[asyncevent.StatusSucceeded])
		assert.Equal(t, ids[3:5], got[asyncevent.StatusHeld], "two seats given back, the first two of the waitlist hold them")
		assert.Equal(t, ids[5:], got[asyncevent.StatusWaitlisted])
		b.check(t, asynceventtest.CheckOptions{})
		requireHoldItemForEveryHeld(t, c, "lost", ids)
	})
}

// A sale with holds, from the spike to the close: the first N requests hold a seat
// (HELD, with their expiry), the rest wait on the waitlist (WAITLISTED, in the one
// write that rejects a loser of an event without holds); some winners pay
// (SUCCEEDED), some give up (REJECTED_RELEASED), some let the hold lapse
// (REJECTED_HOLD_EXPIRED, by the sweep); each seat given back goes to the earliest
// waitlisted request, in queue order, HELD in turn; at the close the waitlist ends
// REJECTED_CAPACITY. The seats add up at every step.
func TestHoldsAndWaitlistFromSpikeToClose(t *testing.T) {
	t.Parallel()
	for _, shards := range []int{1, 3} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := setupHolds(t, holdSale{
				event:     holdsOf("sale", 9, shards, 10*time.Minute, asyncevent.MillisOf(t0.Add(time.Hour))),
				statusLog: true,
			})
			c, clock := b.c, b.clock
			ids := b.submit(t, clickers(30)...)
			b.drain(t)

			got := b.byStatus(t, ids)
			require.Len(t, got[asyncevent.StatusHeld], 9)
			require.Len(t, got[asyncevent.StatusWaitlisted], 21)
			assert.Equal(t, ids[:9], got[asyncevent.StatusHeld], "processed in queue order: the first nine hold the seats")
			held := b.request(t, ids[0])
			assert.Equal(t, asyncevent.UIHeld, held.UIResult)
			assert.Equal(t, asyncevent.MillisOf(clock.Now().Add(10*time.Minute)), held.HoldExpiresAt, "held for HoldFor from its claim")
			assert.Equal(t, asyncevent.UIWaitlisted, b.request(t, ids[9]).UIResult)
			b.check(t, asynceventtest.CheckOptions{})

			// Three pay, three give up, three let the hold lapse.
			for _, id := range ids[:3] {
				tr, err := c.Confirm(ctx, id)
				require.NoError(t, err)
				assert.True(t, tr.Applied)
			}
			for _, id := range ids[3:6] {
				tr, err := c.Release(ctx, id)
				require.NoError(t, err)
				assert.True(t, tr.Applied)
			}
			rep := b.sweep(t, c, asyncevent.HoldSweepOptions{})
			assert.Equal(t, 0, rep.Expired, "no hold ran out yet")
			assert.Equal(t, 3, rep.Served, "the released seats went to the waitlist")
			b.check(t, asynceventtest.CheckOptions{})

			clock.Advance(10*time.Minute + time.Second)
			rep = b.sweep(t, c, asyncevent.HoldSweepOptions{})
			// The three that lapsed, and the three served before them, whose holds
			// began within the same second as theirs.
			assert.Equal(t, 6, rep.Expired)
			assert.Equal(t, 6, rep.Served)
			assert.Equal(t, 0, rep.Cleared, "the confirmed holds' records went with their confirm")
			b.check(t, asynceventtest.CheckOptions{})

			got = b.byStatus(t, ids)
			assert.Equal(t, ids[:3], got[asyncevent.StatusSucceeded])
			assert.Equal(t, ids[12:18], got[asyncevent.StatusHeld], "the seats went to the earliest waitlisted, in queue order")
			assert.Equal(t, ids[18:], got[asyncevent.StatusWaitlisted])
			codes := map[asyncevent.ResultCode]int{}
			for _, id := range got[asyncevent.StatusRejected] {
				codes[b.request(t, id).ResultCode]++
			}
			assert.Equal(t, map[asyncevent.ResultCode]int{asyncevent.ResultReleased: 3, asyncevent.ResultHoldExpired: 6}, codes)

			// Confirm after the expiry is too late, with a clear outcome.
			tr, err := c.Confirm(ctx, ids[6])
			require.NoError(t, err)
			assert.False(t, tr.Applied)
			assert.Equal(t, asyncevent.ResultHoldExpired, tr.Current.ResultCode)

			// The close: the waitlist ends; the holds still running stay until paid or lapsed.
			clock.Advance(time.Hour)
			rep = b.sweep(t, c, asyncevent.HoldSweepOptions{})
			assert.Equal(t, 6, rep.Expired, "the served holds ran out meanwhile")
			assert.Equal(t, 12, rep.Closed)
			assert.Equal(t, 0, rep.Served, "closed: a seat given back stays given back")
			assert.Equal(t, int64(0), rep.Waiting)
			got = b.byStatus(t, ids)
			assert.Empty(t, got[asyncevent.StatusWaitlisted])
			assert.Len(t, got[asyncevent.StatusSucceeded], 3)
			b.check(t, asynceventtest.CheckOptions{})
		})
	}
}

// A message delivered again to a worker, with and without a Handler, after its
// request's hold moved on: it moves no seat, and each HELD request keeps the one
// Hold item the sweep finds it by.
func TestHoldDeliveredAgain(t *testing.T) {
	t.Parallel()
	ok := asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error { return nil })

	// The released seat is on the event's Returns item: the message's seat token on
	// the home shard finds the request no longer HELD, and no seat goes back to the
	// shard, which would sell it twice.
	t.Run("after the release", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		b := setupHolds(t, holdSale{event: holdsOf("again", 2, 1, time.Minute, 0)})
		c := b.c
		ids := b.submit(t, clickers(4)...)
		b.drain(t)

		b.released(t, ids[0])
		for _, handler := range []asyncevent.Handler{nil, ok} {
			res := asynceventtest.Work(ctx, t, c, messageFor(t, c, ids[0], 1), asyncevent.ProcessOptions{Handler: handler})
			assert.Equal(t, asyncevent.OutcomeDuplicate, res.Kind)
			res = asynceventtest.Work(ctx, t, c, messageFor(t, c, ids[1], 1), asyncevent.ProcessOptions{Handler: handler})
			assert.Equal(t, asyncevent.OutcomeDuplicate, res.Kind, "a HELD request's message again")
			res = asynceventtest.Work(ctx, t, c, messageFor(t, c, ids[3], 1), asyncevent.ProcessOptions{Handler: handler})
			assert.Equal(t, asyncevent.OutcomeDuplicate, res.Kind, "a WAITLISTED request's message again")
		}
		capacity, err := c.GetCapacity(ctx, "again")
		require.NoError(t, err)
		assert.Zero(t, capacity.CapacityRemaining, "the shard stays empty: the released seat is the waitlist's")
		b.check(t, asynceventtest.CheckOptions{Unsettled: true}) // the seat waits for the sweep

		rep := b.sweep(t, c, asyncevent.HoldSweepOptions{})
		assert.Equal(t, 1, rep.Served)
		got := b.byStatus(t, ids)
		assert.Equal(t, []string{ids[1], ids[2]}, got[asyncevent.StatusHeld])
		b.check(t, asynceventtest.CheckOptions{})
	})

	// A request served from the waitlist holds no seat token: its message again, on a
	// worker that served it and on a new one, is a duplicate.
	t.Run("of a request served from the waitlist", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		b := setupHolds(t, holdSale{event: holdsOf("served", 2, 2, time.Minute, 0)})
		c := b.c
		ids := b.submit(t, userNames("s", 0, 5)...)
		b.drain(t)
		b.released(t, ids[0])
		rep := b.sweep(t, c, asyncevent.HoldSweepOptions{})
		require.Equal(t, 1, rep.Served)
		require.Equal(t, asyncevent.StatusHeld, b.request(t, ids[2]).Status)

		for _, h := range []asyncevent.Handler{nil, ok} {
			for _, cl := range []*asyncevent.Client{c, b.fresh(t)} {
				for _, id := range []string{ids[0], ids[2], ids[3]} {
					res := asynceventtest.Work(ctx, t, cl, messageFor(t, c, id, 2), asyncevent.ProcessOptions{Handler: h})
					assert.Equal(t, asyncevent.OutcomeDuplicate, res.Kind, "request %s", id)
				}
			}
		}
		got := b.byStatus(t, ids)
		assert.Equal(t, []string{ids[1], ids[2]}, got[asyncevent.StatusHeld])
		assert.Equal(t, ids[3:], got[asyncevent.StatusWaitlisted])
		b.check(t, asynceventtest.CheckOptions{})
		requireHoldItemForEveryHeld(t, c, "served", ids)
	})

	// The claim and the Hold item landed but the HELD write did not (the worker died
	// between them): the next delivery finds the seat, records a new Hold item and
	// binds it; the first Hold item, no longer the request's hold, is cleared by the
	// sweep, not taken for an expiry.
	t.Run("after the Hold item landed and HELD did not", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		b := setupHolds(t, holdSale{event: holdsOf("crash", 3, 1, time.Minute, 0)})
		c, clock := b.c, b.clock
		ids := b.submit(t, clickers(3)...)

		_, fc := b.faulty(t, asynceventtest.FaultPlan{FailRate: 1, Operations: []string{"UpdateItem"}, KeyPrefix: "REQ#"})
		res := asynceventtest.Work(ctx, t, fc, messageFor(t, c, ids[0], 1), asyncevent.ProcessOptions{})
		require.True(t, res.Redeliver, "the HELD write failed: the message comes back")
		require.Equal(t, asyncevent.StatusQueued, b.request(t, ids[0]).Status)

		clock.Advance(10 * time.Second)
		res = asynceventtest.Work(ctx, t, c, messageFor(t, c, ids[0], 1), asyncevent.ProcessOptions{})
		assert.Equal(t, asyncevent.OutcomeHeld, res.Kind)
		assert.Equal(t, asyncevent.MillisOf(clock.Now().Add(time.Minute)), b.request(t, ids[0]).HoldExpiresAt, "the hold of the delivery that bound it")
		b.check(t, asynceventtest.CheckOptions{Unsettled: true})

		clock.Advance(55 * time.Second) // the first Hold item ran out, the hold did not
		rep := b.sweep(t, c, asyncevent.HoldSweepOptions{})
		assert.Equal(t, 0, rep.Expired)
		assert.Equal(t, 1, rep.Cleared)
		clock.Advance(10 * time.Second)
		rep = b.sweep(t, c, asyncevent.HoldSweepOptions{})
		assert.Equal(t, 1, rep.Expired)
		b.check(t, asynceventtest.CheckOptions{Unsettled: true})
	})

	// The old delivery has claimed its seat under its lease; its Hold item's write is
	// slow, and its lease runs out meanwhile; a new delivery takes the request over,
	// finds the seat and holds it. The old one's Hold item then lands and its HELD
	// write fails: one seat, one hold, the stray Hold item cleared by the sweep and not
	// taken for an expiry. The slow put, the lease's run-out and the stray's run-out
	// are waited InBubble, at no wall time.
	t.Run("to a new holder while the old one runs", func(t *testing.T) {
		t.Parallel()
		asynceventtest.InBubble(t, func(t *testing.T) {
			ctx := context.Background()
			b := setupHolds(t, holdSale{event: holdsOf("takeover", 2, 1, asyncevent.MinHoldFor, 0), wallClock: true})
			c := b.c
			id := b.submit(t, "slow")[0]

			slow := &slowPuts{DynamoDB: asynceventtest.DynamoDB(t), delay: 1500 * time.Millisecond, started: make(chan struct{}, 1)}
			slow.armed.Store(true)
			oc := b.client(t, slow, asyncevent.Options{})
			m := messageFor(t, c, id, 1)
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
			holds := holdItemsOf(t, c, "takeover")
			assert.Len(t, holds[id], 2, "the new delivery's Hold item and the old one's stray")
			requireHoldItemForEveryHeld(t, c, "takeover", []string{id})
			b.check(t, asynceventtest.CheckOptions{})

			r := b.request(t, id)
			for _, at := range holds[id] {
				if at < r.HoldExpiresAt { // the stray runs out first: a sweep then must not expire the hold
					time.Sleep(time.Until(at.Time().Add(5 * time.Millisecond)))
					rep := b.sweep(t, c, asyncevent.HoldSweepOptions{})
					if time.Now().Before(r.HoldExpiresAt.Time()) {
						assert.Equal(t, 0, rep.Expired, "the stray is not the hold")
					}
				}
			}
			tr, err := c.Confirm(ctx, id)
			require.NoError(t, err)
			assert.True(t, tr.Applied, "the hold still runs")
		})
	})
}

// Every way a worker decides a first-come request of an event with holds takes
// the event's holds, never the message's: HELD until the event's HoldFor, each HELD
// request with its Hold item at its expiry, the losers WAITLISTED.
func TestHoldWorkerPaths(t *testing.T) {
	t.Parallel()
	ok := asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error { return nil })

	// A worker new to the event (the home shard's look), the home claim, a Handler
	// (the leased way), C > 1, a message without capacityShards, and ClaimSeat called
	// directly.
	t.Run("every path holds for the event's HoldFor", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		const hold = 7 * time.Minute
		b := setupHolds(t, holdSale{event: holdsOf("paths", 7, 3, hold, 0)})
		c, clock := b.c, b.clock
		ids := b.submit(t, userNames("p", 0, 9)...)
		warm := b.fresh(t)
		cases := []struct {
			name string
			c    *asyncevent.Client
			h    asyncevent.Handler
			n    int
		}{
			{"new worker, home claim", b.fresh(t), nil, 3},
			{"new worker, Handler", b.fresh(t), ok, 3},
			{"new worker, no capacityShards", b.fresh(t), nil, 0},
			{"new worker, Handler, no capacityShards", b.fresh(t), ok, 0},
			{"warm worker, home claim", warm, nil, 3},
			{"warm worker, Handler", warm, ok, 3},
		}
		for i, tc := range cases {
			res := asynceventtest.Work(ctx, t, tc.c, messageFor(t, c, ids[i], tc.n), asyncevent.ProcessOptions{Handler: tc.h})
			r := b.request(t, ids[i])
			if assert.Equal(t, asyncevent.StatusHeld, r.Status, "%s (outcome %s)", tc.name, res.Kind) {
				assert.Equal(t, asyncevent.MillisOf(clock.Now().Add(hold)), r.HoldExpiresAt, tc.name)
			}
		}
		// ClaimSeat called directly, under a lease of the caller's.
		dc := b.fresh(t)
		lease := asyncevent.Lease{Owner: "direct", Duration: time.Minute}
		ref := asyncevent.RequestRef{RequestID: ids[6], EventID: "paths"}
		tr, err := dc.Rows().StartProcessing(ctx, ref, lease)
		require.NoError(t, err)
		require.True(t, tr.Applied)
		tr, err = dc.Rows().ClaimSeat(ctx, ref, lease)
		require.NoError(t, err)
		require.True(t, tr.Applied)
		assert.Equal(t, asyncevent.StatusHeld, b.request(t, ids[6]).Status, "ClaimSeat on an event with holds")
		// The losers, each by a new worker: waitlisted.
		for i := 7; i < 9; i++ {
			res := asynceventtest.Work(ctx, t, b.fresh(t), messageFor(t, c, ids[i], 3), asyncevent.ProcessOptions{Handler: []asyncevent.Handler{nil, ok}[i%2]})
			assert.Equal(t, asyncevent.StatusWaitlisted, b.request(t, ids[i]).Status, "loser %d (outcome %s)", i, res.Kind)
		}
		b.check(t, asynceventtest.CheckOptions{Unsettled: true})
	})

	// With a Handler the request goes the leased way: HELD under its lease, and a
	// loser of the sold-out event WAITLISTED under its lease.
	t.Run("under a lease", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		b := setupHolds(t, holdSale{event: holdsOf("leased", 2, 1, time.Minute, 0), statusLog: true})
		ids := b.submit(t, clickers(5)...)
		var handled atomic.Int32
		handler := asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error {
			handled.Add(1)
			return nil
		})
		var outcomes []asyncevent.OutcomeKind
		for range ids {
			ds, err := b.q.Receive(ctx, 1, 0, time.Minute)
			require.NoError(t, err)
			require.Len(t, ds, 1)
			res := asynceventtest.WorkDelivery(ctx, t, b.c, ds[0], asyncevent.ProcessOptions{Handler: handler})
			outcomes = append(outcomes, res.Kind)
		}
		assert.Equal(t, []asyncevent.OutcomeKind{asyncevent.OutcomeHeld, asyncevent.OutcomeHeld,
			asyncevent.OutcomeWaitlisted, asyncevent.OutcomeWaitlisted, asyncevent.OutcomeWaitlisted}, outcomes)
		assert.EqualValues(t, 5, handled.Load())
		got := b.byStatus(t, ids)
		assert.Equal(t, ids[:2], got[asyncevent.StatusHeld])
		assert.Equal(t, ids[2:], got[asyncevent.StatusWaitlisted])
		b.check(t, asynceventtest.CheckOptions{})
	})

	// A worker that has no copy of the event's config takes the holds from the config
	// it reads during the home claim: a message says nothing of holds.
	t.Run("a worker new to the event", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		b := setupHolds(t, holdSale{event: holdsOf("trust", 5, 1, 10*time.Minute, 0)})
		c, clock := b.c, b.clock
		_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "plain", EventType: asyncevent.FirstCome, CapacityTotal: 5})
		require.NoError(t, err)
		withHolds := b.submit(t, userNames("t", 0, 2)...)
		without := b.submitTo(t, "plain", userNames("p", 0, 1)...)

		t.Run("holds the winner of an event with holds", func(t *testing.T) {
			res := asynceventtest.Work(ctx, t, b.fresh(t), messageFor(t, c, withHolds[0], 1), asyncevent.ProcessOptions{})
			assert.Equal(t, asyncevent.StatusHeld, b.request(t, withHolds[0]).Status, "the event holds its winners until paid (outcome %s)", res.Kind)
		})
		t.Run("holds for the event's HoldFor", func(t *testing.T) {
			res := asynceventtest.Work(ctx, t, b.fresh(t), messageFor(t, c, withHolds[1], 1), asyncevent.ProcessOptions{})
			if r := b.request(t, withHolds[1]); r.Status == asyncevent.StatusHeld {
				assert.Equal(t, asyncevent.MillisOf(clock.Now().Add(10*time.Minute)), r.HoldExpiresAt,
					"held for the event's HoldFor, not the message's (outcome %s)", res.Kind)
			}
		})
		t.Run("holds nothing of an event without holds", func(t *testing.T) {
			res := asynceventtest.Work(ctx, t, b.fresh(t), messageFor(t, c, without[0], 1), asyncevent.ProcessOptions{})
			r := b.request(t, without[0])
			assert.NotEqual(t, asyncevent.StatusHeld, r.Status, "an event without holds has no HELD request (outcome %s)", res.Kind)
			if r.Status == asyncevent.StatusHeld {
				clock.Advance(2 * time.Minute)
				_, err := c.SweepHolds(ctx, "plain", asyncevent.HoldSweepOptions{})
				assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions, "and no sweep will ever end that hold")
			}
		})
	})

	// Processing under lost answers and failures of every write (the home claim,
	// the Hold item, HELD, the leased way), then the sweep: no HELD request is
	// without its Hold item at its expiry, and the seats add up.
	t.Run("under faults each HELD request has its Hold item", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		b := setupHolds(t, holdSale{event: holdsOf("faults", 10, 2, time.Minute, 0), queueClock: true})
		c, clock, q := b.c, b.clock, b.q
		ids := b.submit(t, userNames("f", 0, 30)...)
		faulty, fc := b.faulty(t, asynceventtest.FaultPlan{
			Seed: faultSeed(11), FailRate: 0.1, LoseRate: 0.2, ThrottleRate: 0.05,
		})
		for _, h := range []asyncevent.Handler{nil, ok} {
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
					body, err := asyncevent.EncodeMessage(messageFor(t, c, id, 2))
					require.NoError(t, err)
					require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: body}))
				}
			}
		}
		requireHoldItemForEveryHeld(t, c, "faults", ids)
		rep0 := b.check(t, asynceventtest.CheckOptions{Unsettled: true})
		t.Logf("after processing under faults %+v: %v; Hold items %d", faulty.Counts(), rep0.ByStatus, len(holdItemsOf(t, c, "faults")))
		clock.Advance(5 * time.Minute)
		for range 10 {
			rep := b.sweep(t, c, asyncevent.HoldSweepOptions{})
			if !rep.More && rep.Expired+rep.Served+rep.Cleared == 0 {
				break
			}
		}
		requireHoldItemForEveryHeld(t, c, "faults", ids)
		b.check(t, asynceventtest.CheckOptions{Unsettled: true})
	})
}

// The hold sweep's passes: what one pass may move (MaxWrites), what it reads once
// there is nothing to move, its lease, and its writes under faults.
func TestHoldSweep(t *testing.T) {
	t.Parallel()

	// A transaction applied whose answer is lost, refusals, throttles: run again and
	// again until it has nothing left to do, the sweep ends every hold once and hands
	// each seat on once, the waitlist in queue order; the seats add up.
	t.Run("under faults, run until done", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		b := setupHolds(t, holdSale{event: holdsOf("chaos", 10, 2, time.Minute, 0)})
		ids := b.submit(t, clickers(50)...)
		b.drain(t)

		faulty, fc := b.faulty(t, asynceventtest.FaultPlan{Seed: 7, FailRate: 0.05, LoseRate: 0.1, ThrottleRate: 0.05})
		// Half the winners give up, through the faults, retried until they get an answer.
		for _, id := range ids[:5] {
			for {
				if _, err := fc.Release(ctx, id); err == nil {
					break
				}
			}
		}
		// Three rounds: every hold runs out in turn, the waitlist is served again.
		for range 3 {
			b.clock.Advance(time.Minute + time.Second)
			for range 200 {
				rep, err := fc.SweepHolds(ctx, "chaos", asyncevent.HoldSweepOptions{})
				if err == nil && !rep.More && rep.Expired+rep.Served+rep.Cleared == 0 {
					break
				}
			}
			b.check(t, asynceventtest.CheckOptions{})
		}
		counts := faulty.Counts()
		assert.Positive(t, counts.Lost, "some answers were lost")
		got := b.byStatus(t, ids)
		assert.Len(t, got[asyncevent.StatusHeld], 10, "every seat is held again, by the next of the waitlist")
		waitlist := got[asyncevent.StatusWaitlisted]
		assert.True(t, sort.SliceIsSorted(waitlist, func(i, j int) bool {
			return slices.Index(ids, waitlist[i]) < slices.Index(ids, waitlist[j])
		}))
		assert.Equal(t, ids[len(ids)-len(waitlist):], waitlist, "the waitlist was served in queue order: the latest still wait")
	})

	// MaxWrites bounds the requests one pass moves, also when a page of Hold items
	// holds some that cost no budget (a request still being bound, a stray record):
	// the next page is not read with the first page's Limit.
	t.Run("MaxWrites past Hold items that cost nothing", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		b := setupHolds(t, holdSale{event: holdsOf("budget", 4, 1, time.Minute, 0)})
		c, clock := b.c, b.clock
		ids := b.submit(t, userNames("m", 0, 4)...)

		// The first request's worker records its Hold item, then its HELD write fails:
		// a Hold item whose request is not HELD (yet), the earliest to run out.
		_, fc := b.faulty(t, asynceventtest.FaultPlan{FailRate: 1, Operations: []string{"UpdateItem"}, KeyPrefix: "REQ#"})
		res := asynceventtest.Work(ctx, t, fc, messageFor(t, c, ids[0], 1), asyncevent.ProcessOptions{})
		require.True(t, res.Redeliver)
		for _, id := range ids[1:] {
			clock.Advance(time.Millisecond)
			res := asynceventtest.Work(ctx, t, c, messageFor(t, c, id, 1), asyncevent.ProcessOptions{})
			require.Equal(t, asyncevent.OutcomeHeld, res.Kind)
		}

		clock.Advance(2 * time.Minute)
		rep := b.sweep(t, c, asyncevent.HoldSweepOptions{MaxWrites: 2})
		assert.LessOrEqual(t, rep.Expired+rep.Served+rep.Closed, 2, "MaxWrites 2 bounds the requests one pass moves: %+v", *rep)
	})

	// MaxWrites bounds every pass, through the expiries (several hold partitions),
	// the serving and the close, and the passes together finish the work.
	t.Run("MaxWrites across the expiry, the serving and the close", func(t *testing.T) {
		t.Parallel()
		b := setupHolds(t, holdSale{event: holdsOf("budget3", 6, 3, time.Minute, asyncevent.MillisOf(t0.Add(time.Hour)))})
		c, clock := b.c, b.clock
		ids := b.submit(t, userNames("w", 0, 15)...)
		b.drain(t)
		got := b.byStatus(t, ids)
		require.Len(t, got[asyncevent.StatusHeld], 6)
		require.Len(t, got[asyncevent.StatusWaitlisted], 9)

		passes := func(what string) (expired, served, closed int) {
			for i := 0; i < 30; i++ {
				rep := b.sweep(t, c, asyncevent.HoldSweepOptions{MaxWrites: 2})
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
		got = b.byStatus(t, ids)
		assert.Empty(t, got[asyncevent.StatusWaitlisted])
		assert.Empty(t, got[asyncevent.StatusHeld])
		b.check(t, asynceventtest.CheckOptions{})
	})

	// A Worker sweeps every event with holds it has met, every second, for as long
	// as it runs: once the event has closed and its waitlist has ended, one pass with
	// the worker's lease reads next to nothing.
	t.Run("an idle pass after the close", func(t *testing.T) {
		t.Parallel()
		b := setupHolds(t, holdSale{event: holdsOf("idle", 150, 1, time.Minute, asyncevent.MillisOf(t0.Add(time.Hour)))})
		clock := b.clock
		b.submit(t, userNames("i", 0, 170)...)
		b.drain(t)
		clock.Advance(2 * time.Hour)
		counter, sc := b.counted(t)
		for range 3 { // the close: the holds expire, the waitlist ends
			b.sweep(t, sc, asyncevent.HoldSweepOptions{Owner: "w"})
			clock.Advance(time.Second)
		}
		before := counter.Snapshot()
		rep := b.sweep(t, sc, asyncevent.HoldSweepOptions{Owner: "w"})
		require.Zero(t, rep.Expired+rep.Served+rep.Closed)
		d := counter.Snapshot().Sub(before)
		t.Logf("one idle pass after the close: %+v calls, %.1f RCU, %.1f WCU; at one pass a second: %.0f RCU an hour", d.Calls, d.RCU, d.WCU, d.RCU*3600)
		assert.Less(t, d.RCU, 5.0, "an idle pass of a closed event reads next to nothing")
	})

	// The sweep lease is read before it is written. A holder goes on without a write
	// while more than half its lease is left and renews after; another owner is
	// skipped, told when the lease runs out, for as long as the holder renews; once
	// the holder stops, the other takes it as soon as its lease has run out, and the
	// old holder, back, is skipped.
	t.Run("the lease handed over", func(t *testing.T) {
		t.Parallel()
		b := setupHolds(t, holdSale{event: holdsOf("lease", 2, 1, time.Minute, 0)})
		clock := b.clock
		counter, ac := b.counted(t)
		bc := b.fresh(t)
		sweep := func(cl *asyncevent.Client, owner string) bool {
			return !b.sweep(t, cl, asyncevent.HoldSweepOptions{Owner: owner, LeaseFor: 10 * time.Second}).Skipped
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
	})
}

// A Worker sweeps the holds of the events of its table: a seat given back reaches
// the first of the waitlist without anyone calling SweepHolds, and a hold that ran
// out ends. The workers' sweeps and the holds' run-outs are waited InBubble, at no
// wall time.
func TestWorkerSweepsHolds(t *testing.T) {
	t.Parallel()
	workerOptions := asyncevent.WorkerOptions{Concurrency: 1, WaitTime: 50 * time.Millisecond, HoldSweepEvery: 100 * time.Millisecond}

	t.Run("of an event it met", func(t *testing.T) {
		t.Parallel()
		asynceventtest.InBubble(t, func(t *testing.T) {
			ctx := context.Background()
			b := setupHolds(t, holdSale{event: holdsOf("live", 2, 1, 10*time.Second, 0), wallClock: true})
			ids := b.submit(t, "a", "b", "c", "d")
			w, err := asyncevent.NewWorker(b.c, b.q, workerOptions)
			require.NoError(t, err)
			require.NoError(t, w.Start(ctx))
			defer func() { require.NoError(t, w.Stop(ctx)) }()

			status := func(id string) asyncevent.Status { return b.request(t, id).Status }
			require.Eventually(t, func() bool { return status(ids[3]) == asyncevent.StatusWaitlisted }, 10*time.Second, 20*time.Millisecond)
			b.released(t, ids[0])
			require.Eventually(t, func() bool { return status(ids[2]) == asyncevent.StatusHeld }, 5*time.Second, 20*time.Millisecond,
				"the released seat reached the first of the waitlist")
			assert.Equal(t, asyncevent.StatusWaitlisted, status(ids[3]))
			// b's hold runs out 10 s after its claim: the worker expires it and d gets the seat.
			require.Eventually(t, func() bool { return status(ids[3]) == asyncevent.StatusHeld }, 20*time.Second, 50*time.Millisecond)
			assert.Equal(t, asyncevent.ResultHoldExpired, b.request(t, ids[1]).ResultCode)
			b.check(t, asynceventtest.CheckOptions{})
		})
	})

	// Once the spike's messages are all processed, a worker fleet started again (a
	// deploy, a scale-in and out) meets no message of the event: its sweep finds the
	// event all the same, so holds that run out are expired.
	t.Run("of an event a restarted worker did not meet", func(t *testing.T) {
		t.Parallel()
		asynceventtest.InBubble(t, func(t *testing.T) {
			ctx := context.Background()
			b := setupHolds(t, holdSale{event: holdsOf("restart", 1, 1, asyncevent.MinHoldFor, 0), wallClock: true})
			ids := b.submit(t, "a", "b")
			status := func(id string) asyncevent.Status { return b.request(t, id).Status }
			first, err := asyncevent.NewWorker(b.c, b.q, workerOptions)
			require.NoError(t, err)
			require.NoError(t, first.Start(ctx))
			require.Eventually(t, func() bool { return status(ids[1]) == asyncevent.StatusWaitlisted }, 10*time.Second, 20*time.Millisecond)
			require.NoError(t, first.Stop(ctx))

			// A new deploy: a fresh client and worker on the same queue and table.
			second, err := asyncevent.NewWorker(b.fresh(t), b.q, workerOptions)
			require.NoError(t, err)
			require.NoError(t, second.Start(ctx))
			defer func() { require.NoError(t, second.Stop(ctx)) }()
			assert.Eventually(t, func() bool { return status(ids[0]) == asyncevent.StatusRejected }, asyncevent.MinHoldFor+5*time.Second, 100*time.Millisecond,
				"the hold ran out: a running worker of the table expires it")
		})
	})
}

// The sweep's walk of the waitlist: it serves each seat given back to the earliest
// WAITLISTED request in queue order and ends the waitlist at the close, while it
// starts, pass after pass, past the requests it found settled for good (final or
// HELD, queued over a minute before), so that a pass reads the waitlist's head.
func TestWaitlistWalk(t *testing.T) {
	t.Parallel()

	// The second pass reads the waitlist's head, not every winner ahead of it again.
	t.Run("starts past the settled", func(t *testing.T) {
		t.Parallel()
		b := setupHolds(t, holdSale{event: holdsOf("long", 505, 1, time.Hour, 0)})
		ids := b.submit(t, clickers(515)...)
		b.drain(t)
		b.clock.Advance(2 * time.Minute)

		counter, sc := b.counted(t)
		pass := func(release string) float64 {
			b.released(t, release)
			before := counter.Snapshot()
			rep := b.sweep(t, sc, asyncevent.HoldSweepOptions{})
			require.Equal(t, 1, rep.Served)
			return counter.Snapshot().Sub(before).RCU
		}
		first := pass(ids[0])
		second := pass(ids[1])
		assert.Less(t, second, first/4, "the second pass reads past the 500 settled requests it met (%.1f RCU against %.1f)", second, first)
		got := b.byStatus(t, ids)
		assert.Equal(t, ids[505:507], got[asyncevent.StatusHeld][503:], "served in queue order")
		b.check(t, asynceventtest.CheckOptions{Unsettled: true})
	})

	// The walk's starting point is a listing cursor, which for an event with index
	// shards records the shards the listing read to their end. A request put on one
	// of those later, and WAITLISTED, is still served while seats wait on the Returns
	// item, in queue order, and ended REJECTED_CAPACITY at the close.
	t.Run("meets a request put later on an index shard read to its end", func(t *testing.T) {
		t.Parallel()
		b := setupHolds(t, holdSale{event: asyncevent.EventSettings{
			EventID: "shardwalk", EventType: asyncevent.FirstCome, CapacityTotal: 500, IndexShards: 8,
			HoldFor: time.Hour, EndsAt: asyncevent.MillisOf(t0.Add(time.Hour)),
		}})
		clock := b.clock
		ids := b.submit(t, userNames("a", 0, 502)...)
		b.drain(t)
		got := b.byStatus(t, ids)
		require.Len(t, got[asyncevent.StatusHeld], 500)
		require.Equal(t, ids[500:], got[asyncevent.StatusWaitlisted])

		// Two minutes on, the first 500 are settled: a pass walks past them.
		clock.Advance(2 * time.Minute)
		sweeper := b.fresh(t)
		b.released(t, ids[0])
		rep := b.sweep(t, sweeper, asyncevent.HoldSweepOptions{})
		require.Equal(t, 1, rep.Served)

		// More people come, and wait (sold out).
		late := b.submit(t, userNames("b", 0, 16)...)
		b.drain(t)
		got = b.byStatus(t, late)
		require.Len(t, got[asyncevent.StatusWaitlisted], 16)

		// 17 holds are released: 17 seats for the 17 waiting.
		for _, id := range ids[1:18] {
			b.released(t, id)
		}
		for range 5 {
			rep = b.sweep(t, sweeper, asyncevent.HoldSweepOptions{})
		}
		waiting := append([]string{ids[501]}, late...)
		got = b.byStatus(t, waiting)
		assert.Empty(t, got[asyncevent.StatusWaitlisted], "17 seats given back, 17 waiting: every one of them is served (%d seats still wait on the Returns item)", rep.Waiting)
		if len(got[asyncevent.StatusWaitlisted]) > 0 && len(got[asyncevent.StatusHeld]) > 0 {
			firstWaiting := slices.Index(waiting, got[asyncevent.StatusWaitlisted][0])
			lastServed := slices.Index(waiting, got[asyncevent.StatusHeld][len(got[asyncevent.StatusHeld])-1])
			assert.Less(t, lastServed, firstWaiting, "queue order: a request queued after one still waiting was served")
		}

		// The close: the waitlist must end.
		clock.Advance(time.Hour)
		for range 3 {
			b.sweep(t, sweeper, asyncevent.HoldSweepOptions{})
		}
		got = b.byStatus(t, waiting)
		assert.Empty(t, got[asyncevent.StatusWaitlisted], "after the close no request is left WAITLISTED")
		b.check(t, asynceventtest.CheckOptions{})
	})

	// A request whose put lands more than a minute after the queuedAt it took (a
	// caller's deadline longer than a minute lets Submit's put run that long; equally
	// an ingest host whose clock is a minute behind the sweeper's, or GSI2 lagging a
	// minute) sorts before the walk's stored key. The walk begins again at the
	// event's first request every 5 minutes: it waits that long, not for good, and at
	// the close it is ended.
	t.Run("meets a request whose put lands late", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		b := setupHolds(t, holdSale{event: holdsOf("late", 1, 1, time.Hour, asyncevent.MillisOf(t0.Add(time.Hour)))})
		clock := b.clock
		a := b.submit(t, "a")[0]

		// L's ingest takes its queuedAt now; its put is on its way for a while.
		slow := &heldPuts{DynamoDB: asynceventtest.DynamoDB(t), started: make(chan struct{}, 1), release: make(chan struct{})}
		slow.armed.Store(true)
		lc := b.client(t, slow, asyncevent.Options{})
		type submitted struct {
			p   asyncevent.Participation
			err error
		}
		lateDone := make(chan submitted, 1)
		go func() {
			sctx, cancel := context.WithTimeout(ctx, 10*time.Minute) // the caller's deadline
			defer cancel()
			p, err := lc.Submit(sctx, b.q, "late", "l")
			lateDone <- submitted{p, err}
		}()
		<-slow.started
		clock.Advance(time.Millisecond)
		bid := b.submit(t, "b")[0]
		b.drain(t)
		require.Equal(t, map[asyncevent.Status][]string{asyncevent.StatusHeld: {a}, asyncevent.StatusWaitlisted: {bid}}, b.byStatus(t, []string{a, bid}))

		// Two minutes on, A gives up: the sweeper serves B, and its walk keeps B's key.
		clock.Advance(2 * time.Minute)
		sc := b.fresh(t)
		b.released(t, a)
		rep := b.sweep(t, sc, asyncevent.HoldSweepOptions{})
		require.Equal(t, 1, rep.Served)

		// L's put lands now, queued before B; sold out, L waits.
		close(slow.release)
		got := <-lateDone
		require.NoError(t, got.err)
		l := got.p.RequestID
		b.drain(t)
		require.Equal(t, asyncevent.StatusWaitlisted, b.request(t, l).Status)
		order := queueOrderOf(t, b.c, "late")
		require.Len(t, order, 3)
		require.Equal(t, l, order[1].RequestID, "L is queued between A and B")

		// B gives up: one seat back, L the only one waiting.
		b.released(t, bid)
		for range 3 {
			b.sweep(t, sc, asyncevent.HoldSweepOptions{})
			clock.Advance(time.Second)
		}
		clock.Advance(5 * time.Minute)
		rep = b.sweep(t, sc, asyncevent.HoldSweepOptions{})
		assert.Equal(t, asyncevent.StatusHeld, b.request(t, l).Status, "a seat given back and one request waiting: it is served (%d seats wait on the Returns item)", rep.Waiting)

		// The close: nothing may be left WAITLISTED.
		clock.Advance(time.Hour)
		for range 3 {
			b.sweep(t, sc, asyncevent.HoldSweepOptions{})
		}
		lr := b.request(t, l)
		assert.NotEqual(t, asyncevent.StatusWaitlisted, lr.Status, "after the close no request is WAITLISTED")
		if lr.Status == asyncevent.StatusWaitlisted {
			rep := b.sweep(t, b.fresh(t), asyncevent.HoldSweepOptions{})
			t.Logf("a fresh client's pass closes %d: only the long-lived client's stored key hides L", rep.Closed)
		}
	})

	// With index shards and requests queued in the same millisecond (queue order then
	// by request ID), the walk from the stored key serves each seat to the earliest
	// waiting request in queue order, pass after pass, with requests coming in
	// between, and the close ends every waiting request.
	t.Run("index shards and equal queuedAt", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		b := setupHolds(t, holdSale{event: asyncevent.EventSettings{
			EventID: "eqshards", EventType: asyncevent.FirstCome, CapacityTotal: 4, CapacityShards: 2, IndexShards: 5,
			HoldFor: time.Hour, EndsAt: asyncevent.MillisOf(t0.Add(3 * time.Hour)),
		}})
		c, clock := b.c, b.clock
		sc := b.fresh(t)

		submitSameMilli := func(prefix string, n int) {
			for _, u := range userNames(prefix, 0, n) {
				_, err := c.Submit(ctx, b.q, "eqshards", u)
				require.NoError(t, err)
			}
			clock.Advance(time.Millisecond)
		}
		// earliestWaiting is the first WAITLISTED request in queue order.
		earliestWaiting := func() (string, []asyncevent.Request) {
			order := queueOrderOf(t, c, "eqshards")
			for _, r := range order {
				if cur := b.request(t, r.RequestID); cur.Status == asyncevent.StatusWaitlisted {
					return cur.RequestID, order
				}
			}
			return "", order
		}
		heldOnes := func() []string {
			var out []string
			for _, r := range queueOrderOf(t, c, "eqshards") {
				if cur := b.request(t, r.RequestID); cur.Status == asyncevent.StatusHeld {
					out = append(out, cur.RequestID)
				}
			}
			return out
		}

		submitSameMilli("a", 12)
		b.drain(t)
		for round := range 6 {
			clock.Advance(2 * time.Minute)
			want, _ := earliestWaiting()
			require.NotEmpty(t, want)
			held := heldOnes()
			require.NotEmpty(t, held)
			b.released(t, held[0])
			rep := b.sweep(t, sc, asyncevent.HoldSweepOptions{})
			require.Equal(t, 1, rep.Served, "round %d", round)
			assert.Equal(t, asyncevent.StatusHeld, b.request(t, want).Status, "round %d: the earliest waiting request in queue order is served", round)
			// newcomers, in one millisecond, on every index shard
			submitSameMilli(fmt.Sprintf("r%d-", round), 3)
			b.drain(t)
		}
		clock.Advance(3 * time.Hour)
		for range 3 {
			b.sweep(t, sc, asyncevent.HoldSweepOptions{})
		}
		for _, r := range queueOrderOf(t, c, "eqshards") {
			assert.NotEqual(t, asyncevent.StatusWaitlisted, b.request(t, r.RequestID).Status, "%s: after the close none waits", r.RequestID)
		}
		b.check(t, asynceventtest.CheckOptions{})
	})

	// The walk stops its key at the first request not settled: a pass with a seat on
	// the Returns item and no one WAITLISTED (a hold released before the sell-out, or
	// after the waitlist ran dry) reads on from there. During a spike the requests not
	// settled are the backlog still QUEUED, and the worker holding the sweep lease
	// passes every second: a walk reads at most 2,000 requests past its starting
	// point, however long the backlog grows.
	t.Run("a pass with a seat and no waitlist reads at most 2,000 requests", func(t *testing.T) {
		t.Parallel()
		b := setupHolds(t, holdSale{event: holdsOf("backlog", 10, 1, time.Hour, 0)})
		first := b.submit(t, "first")
		b.drain(t)
		b.released(t, first[0])                 // one seat on the Returns item; not sold out
		b.submit(t, userNames("b", 0, 1200)...) // the backlog, still QUEUED
		b.clock.Advance(2 * time.Minute)

		counter, sc := b.counted(t)
		b.sweep(t, sc, asyncevent.HoldSweepOptions{})
		b.clock.Advance(time.Second)
		before := counter.Snapshot()
		rep := b.sweep(t, sc, asyncevent.HoldSweepOptions{})
		require.Zero(t, rep.Expired+rep.Served+rep.Closed)
		require.EqualValues(t, 1, rep.Waiting)
		d := counter.Snapshot().Sub(before)
		t.Logf("one idle pass with a seat waiting and 1,200 requests QUEUED: %v calls, %.1f RCU", d.Calls, d.RCU)
		// 2,000 requests are about 106 RCU of these.
		assert.Less(t, d.RCU, 110.0, "an idle pass reads at most 2,000 requests")
	})
}

// The events with holds: the layout ShardForPeak gives fits CreateEvent's limit of
// 98 capacity shards with holds, and the registry lists an event with holds from its
// creation until its end plus its HoldFor plus an hour, an event without an end for
// ever (each Worker then sweeps it for as long as it runs), an event without holds
// never.
func TestHoldEvents(t *testing.T) {
	t.Parallel()

	// The layout rule the HTTP API (peakClicksPerSecond) and the CLI (event create
	// -peak) call gives at most 98 capacity shards to an event with holds, whatever
	// its seats (20,000) or its peak (200,000 clicks/s).
	t.Run("ShardForPeak with holds", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		b := setupHolds(t, holdSale{wallClock: true})
		for i, cfg := range []asyncevent.EventSettings{
			holdsOf("", 20_000, 0, 10*time.Minute, 0),
			holdsOf("", 5_000, 0, 10*time.Minute, 0),
		} {
			cfg.EventID = fmt.Sprintf("peak%d", i)
			peak := []float64{1_000, 200_000}[i]
			cfg.ShardForPeak(peak)
			_, err := b.c.CreateEvent(ctx, cfg)
			assert.NoError(t, err, "%d seats with holds at a peak of %.0f clicks/s: ShardForPeak gives %d capacity shards", cfg.CapacityTotal, peak, cfg.CapacityShards)
		}
	})

	t.Run("the registry", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		b := setupHolds(t, holdSale{event: holdsOf("ends", 2, 1, 10*time.Minute, asyncevent.MillisOf(t0.Add(time.Hour)))})
		c, clock := b.c, b.clock
		holdsEvent(t, c, "later", 2, 1, 10*time.Minute, asyncevent.MillisOf(t0.Add(2*365*24*time.Hour)))
		holdsEvent(t, c, "wide", 98, 98, 10*time.Minute, asyncevent.MillisOf(t0.Add(time.Hour)))
		_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "plain", EventType: asyncevent.FirstCome, CapacityTotal: 2})
		require.NoError(t, err)
		_, err = c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "wider", EventType: asyncevent.FirstCome, CapacityTotal: 99, CapacityShards: 99, HoldFor: time.Minute, EndsAt: asyncevent.MillisOf(t0.Add(time.Hour))})
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
		assert.Equal(t, []string{"ends", "later", "wide"}, listed())
		clock.Advance(time.Hour + 10*time.Minute + time.Hour - time.Second)
		assert.Equal(t, []string{"ends", "later", "wide"}, listed())
		clock.Advance(2 * time.Second)
		assert.Equal(t, []string{"later"}, listed())
		clock.Advance(365 * 24 * time.Hour)
		assert.Equal(t, []string{"later"}, listed(), "an event is listed until its end and the hold after it")
	})
}

// Bad input to Confirm, Release and SweepHolds, and messages that speak of holds.
func TestHoldsBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupHolds(t, holdSale{event: holdsOf("bad", 1, 1, time.Minute, 0)})
	c := b.c
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "nohold", EventType: asyncevent.FirstCome, CapacityTotal: 1})
	require.NoError(t, err)
	_, err = c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "lot", EventType: asyncevent.Lottery, WinnerCount: 1,
		LotteryCutoffAt: asyncevent.MillisOf(t0.Add(time.Hour))})
	require.NoError(t, err)
	held := b.submit(t, "x")
	plain := b.submitTo(t, "nohold", "x")
	lot := b.submitTo(t, "lot", "x")
	b.drain(t)

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
		before := b.request(t, id)
		for _, call := range []func(context.Context, string) (asyncevent.Transition, error){c.Confirm, c.Release} {
			tr, err := call(ctx, id)
			require.NoError(t, err)
			assert.False(t, tr.Applied)
			require.NotNil(t, tr.Current)
			assert.Equal(t, before.Status, tr.Current.Status)
		}
		after := b.request(t, id)
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
	rep := b.sweep(t, c, asyncevent.HoldSweepOptions{MaxWrites: -5})
	assert.False(t, rep.More)

	// Messages say nothing of holds: a body that does is malformed (an unknown field).
	for _, hold := range []int64{1, 9999, -1, asyncevent.MaxHoldFor.Milliseconds() + 1} {
		m := messageFor(t, c, held[0], 1)
		body := []byte(`{"v":1,"requestId":"` + m.RequestID + `","eventId":"bad","userId":"x","eventType":"FIRST_COME","requestedAt":` +
			strconv.FormatInt(int64(m.RequestedAt), 10) + `,"capacityShards":1,"holdForMillis":` + strconv.FormatInt(hold, 10) + `}`)
		_, err = asyncevent.DecodeMessage(body)
		assert.ErrorIs(t, err, asyncevent.ErrMalformedMessage, "holdForMillis %d", hold)
	}
	assert.Equal(t, asyncevent.StatusHeld, b.request(t, held[0]).Status)

	// A HELD request's message again: a duplicate, still HELD.
	res := asynceventtest.Work(ctx, t, c, messageFor(t, c, held[0], 1), asyncevent.ProcessOptions{})
	assert.Equal(t, asyncevent.StatusHeld, b.request(t, held[0]).Status, "outcome %s", res.Kind)
}

// The sold-out path stays one write per loser with holds: a loser of a sold-out
// event with holds costs what a loser of one without holds does (a look and one
// write).
func TestSoldOutLoserCostsTheSameWithHolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cost := func(hold time.Duration) asynceventtest.Counts {
		b := setupHolds(t, holdSale{event: holdsOf("cost", 2, 1, hold, 0)})
		b.submit(t, userNames("k", 0, 22)...)
		counter, cc := b.counted(t)
		proc := asyncevent.NewProcessor(cc, asyncevent.ProcessOptions{})
		var before asynceventtest.Counts
		for i := 0; ; i++ {
			ds, err := b.q.Receive(ctx, 1, 0, time.Minute)
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

// holdItemsOf scans the table for the Hold items of an event: request ID → the
// expiries its Hold items record.
func holdItemsOf(t *testing.T, c *asyncevent.Client, eventID string) map[string][]asyncevent.EpochMillis {
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

// requireHoldItemForEveryHeld fails the test for each HELD request of ids without a
// Hold item at its holdExpiresAt: the sweep would never find it.
func requireHoldItemForEveryHeld(t *testing.T, c *asyncevent.Client, eventID string, ids []string) {
	t.Helper()
	holds := holdItemsOf(t, c, eventID)
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

// faultSeed is HOLD_FAULT_SEED when set, else def.
func faultSeed(def int64) int64 {
	if v, err := strconv.ParseInt(os.Getenv("HOLD_FAULT_SEED"), 10, 64); err == nil {
		return v
	}
	return def
}

// queueOrderOf lists an event's requests in queue order (ListEventRequests).
func queueOrderOf(t *testing.T, c *asyncevent.Client, eventID string) []asyncevent.Request {
	t.Helper()
	var out []asyncevent.Request
	cursor := ""
	for {
		page, err := c.ListEventRequests(context.Background(), eventID, asyncevent.EventListOptions{PageOptions: asyncevent.PageOptions{Limit: 500, Cursor: cursor}})
		require.NoError(t, err)
		out = append(out, page.Requests...)
		if page.NextCursor == "" {
			return out
		}
		cursor = page.NextCursor
	}
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
