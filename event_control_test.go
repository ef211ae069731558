package asyncevent_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/internal/control"
	"github.com/asyncevent/asyncevent/queue"
)

// controlBundle is a table of its own for the tests of the operator's controls, a
// client on it whose clock is stopped at t0, and a queue for its clicks.
type controlBundle struct {
	c     *asyncevent.Client
	clock *asynceventtest.Clock
	q     *queue.Memory
}

// controlSetup makes the bundle's table and client, with opts (Clock set to the
// bundle's) and the events given.
func controlSetup(t *testing.T, opts asyncevent.Options, events ...asyncevent.EventSettings) *controlBundle {
	t.Helper()
	b := &controlBundle{clock: asynceventtest.NewClock(t0), q: queue.NewMemory(queue.MemoryOptions{})}
	opts.Clock = b.clock.Now
	b.c = asynceventtest.NewTableWith(t, opts)
	for _, e := range events {
		_, err := b.c.CreateEvent(context.Background(), e)
		require.NoError(t, err)
	}
	return b
}

// uncached are the options of a client that reads the event's config on each call
// (no copy to wait out).
var uncached = asyncevent.Options{EventCacheTTL: -1}

// firstCome is a FIRST_COME event of 5 seats.
func firstCome(id string) asyncevent.EventSettings {
	return asyncevent.EventSettings{EventID: id, EventType: asyncevent.FirstCome, CapacityTotal: 5}
}

// lottery is a LOTTERY of one winner whose cutoff is at cutoff.
func lottery(id string, cutoff time.Time) asyncevent.EventSettings {
	return asyncevent.EventSettings{EventID: id, EventType: asyncevent.Lottery, WinnerCount: 1, LotteryCutoffAt: asyncevent.MillisOf(cutoff)}
}

// ops is the control input of the operator "ops".
var ops = asyncevent.ControlInput{Actor: "ops"}

// mustApply checks that a control applied: mustApply(t)(c.CloseEvent(…)).
func mustApply(t *testing.T) func(asyncevent.EventUpdate, error) asyncevent.EventUpdate {
	t.Helper()
	return func(up asyncevent.EventUpdate, err error) asyncevent.EventUpdate {
		t.Helper()
		require.NoError(t, err)
		require.True(t, up.Applied, up.Reason)
		return up
	}
}

// itemsOf counts the table's items by entity type (a Scan: the test kit may), after
// c has written the progress counts it holds: its timer writes them a second after
// a click, so that an item would otherwise appear between two counts at any moment.
func itemsOf(t *testing.T, c *asyncevent.Client) map[entity.Type]int {
	t.Helper()
	require.NoError(t, c.FlushProgress(context.Background()))
	n := map[entity.Type]int{}
	for _, raw := range asynceventtest.ScanTable(t, c.TableName()) {
		var head struct {
			EntityType entity.Type `dynamodbav:"entityType"`
		}
		require.NoError(t, attributevalue.UnmarshalMap(raw, &head))
		n[head.EntityType]++
	}
	return n
}

// Close, pause and resume: each applies once, with its audit entry naming who; a
// click on a closed or paused event is refused with nothing written; a control the
// event's state refuses is not applied, writes nothing and says why.
func TestCloseAndPauseRefuseClicks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := controlSetup(t, uncached, firstCome("ctl"))
	c, q := b.c, b.q
	_, err := c.Submit(ctx, q, "ctl", "before")
	require.NoError(t, err)

	up := mustApply(t)(c.PauseEvent(ctx, "ctl", asyncevent.ControlInput{Actor: "ops-ann"}))
	assert.Equal(t, asyncevent.StatePaused, up.Event.StateAt(asyncevent.MillisOf(b.clock.Now())))
	before := itemsOf(t, c)
	_, err = c.Submit(ctx, q, "ctl", "paused-click")
	assert.ErrorIs(t, err, asyncevent.ErrEventPaused)
	assert.Equal(t, before, itemsOf(t, c), "a click on a paused event writes nothing")

	up, err = c.PauseEvent(ctx, "ctl", asyncevent.ControlInput{Actor: "ops-ann"})
	require.NoError(t, err)
	assert.False(t, up.Applied)
	assert.Equal(t, "the event is paused already", up.Reason)
	assert.Equal(t, before, itemsOf(t, c), "a refused control writes nothing, its audit entry included")

	b.clock.Advance(time.Millisecond) // the trail's order is its entries' times
	mustApply(t)(c.ResumeEvent(ctx, "ctl", asyncevent.ControlInput{Actor: "ops-bob"}))
	_, err = c.Submit(ctx, q, "ctl", "resumed-click")
	require.NoError(t, err)

	b.clock.Advance(time.Second)
	up = mustApply(t)(c.CloseEvent(ctx, "ctl", asyncevent.ControlInput{Actor: "ops-bob"}))
	assert.Equal(t, asyncevent.MillisOf(b.clock.Now()), up.Event.ClosedAt)
	b.clock.Advance(time.Millisecond)
	before = itemsOf(t, c)
	_, err = c.Submit(ctx, q, "ctl", "late-click")
	assert.ErrorIs(t, err, asyncevent.ErrEventClosed)
	for _, call := range []func(context.Context, string, asyncevent.ControlInput) (asyncevent.EventUpdate, error){c.CloseEvent, c.PauseEvent, c.ResumeEvent} {
		up, err = call(ctx, "ctl", asyncevent.ControlInput{Actor: "ops-bob"})
		require.NoError(t, err)
		assert.False(t, up.Applied)
		assert.NotEmpty(t, up.Reason)
	}
	assert.Equal(t, before, itemsOf(t, c), "refused: nothing written")

	trail, err := c.ListAudit(ctx, "ctl")
	require.NoError(t, err)
	var got [][2]string
	for _, e := range trail {
		got = append(got, [2]string{string(e.Action), e.Actor})
	}
	assert.Equal(t, [][2]string{{"PAUSE", "ops-ann"}, {"RESUME", "ops-bob"}, {"CLOSE", "ops-bob"}}, got, "who did what, oldest first")

	_, err = c.CloseEvent(ctx, "no-such-event", ops)
	assert.Error(t, err)
	_, err = c.CloseEvent(ctx, "a#b", ops)
	assert.ErrorIs(t, err, asyncevent.ErrInvalidID)
	_, err = c.CloseEvent(ctx, "ctl", asyncevent.ControlInput{Actor: ""})
	assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions, "a control names its actor")
}

// A control the event's state refuses is not applied and writes nothing, its audit
// entry included: a resume of a closed event ("resume only a paused one", whether a
// close or a lottery's cutoff closed it), a pause or a close of a lottery past its
// cutoff (its ingest is over), a cutoff moved once the draw began (whatever the
// clocks).
func TestControlsTheStateRefuses(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		event   string
		prepare func(t *testing.T, b *controlBundle) // from t0 on the bundle's clock
		state   asyncevent.EventState                // the event's state then, if not empty
		control func(b *controlBundle) (asyncevent.EventUpdate, error)
		reason  string // what the refusal says, if not empty
	}{
		{
			name:  "a resume of a paused event closed since",
			event: "ev",
			prepare: func(t *testing.T, b *controlBundle) {
				mustApply(t)(b.c.PauseEvent(ctx, "ev", ops))
				b.clock.Advance(time.Millisecond)
				mustApply(t)(b.c.CloseEvent(ctx, "ev", ops))
				b.clock.Advance(2 * time.Minute)
			},
			state: asyncevent.StateClosed,
			control: func(b *controlBundle) (asyncevent.EventUpdate, error) {
				return b.c.ResumeEvent(ctx, "ev", ops)
			},
		},
		{
			name:  "a resume of a lottery paused before its cutoff, after it",
			event: "lot",
			prepare: func(t *testing.T, b *controlBundle) {
				_, err := b.c.CreateEvent(ctx, lottery("lot", t0.Add(time.Minute)))
				require.NoError(t, err)
				mustApply(t)(b.c.PauseEvent(ctx, "lot", ops))
				b.clock.Advance(time.Millisecond + 2*time.Minute)
			},
			state: asyncevent.StateClosed,
			control: func(b *controlBundle) (asyncevent.EventUpdate, error) {
				return b.c.ResumeEvent(ctx, "lot", ops)
			},
		},
		{
			name:    "a pause of a lottery past its cutoff",
			event:   "lot",
			prepare: lotteryPastItsCutoff,
			state:   asyncevent.StateClosed,
			control: func(b *controlBundle) (asyncevent.EventUpdate, error) {
				return b.c.PauseEvent(ctx, "lot", ops)
			},
		},
		{
			name:    "a close of a lottery past its cutoff",
			event:   "lot",
			prepare: lotteryPastItsCutoff,
			state:   asyncevent.StateClosed,
			control: func(b *controlBundle) (asyncevent.EventUpdate, error) {
				return b.c.CloseEvent(ctx, "lot", ops)
			},
		},
		{
			// A Draw run by a process whose clock is two hours ahead begins while the
			// operator's clock still puts the cutoff an hour away: ExtendEvent's
			// ConditionCheck of the Draw record (phase = COLLECTING) refuses the move.
			name:  "a cutoff moved once the draw began",
			event: "skew",
			prepare: func(t *testing.T, b *controlBundle) {
				_, err := b.c.CreateEvent(ctx, lottery("skew", t0.Add(time.Hour)))
				require.NoError(t, err)
				ahead := asynceventtest.NewClock(t0.Add(2 * time.Hour))
				drawer, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: b.c.TableName(), Clock: ahead.Now})
				require.NoError(t, err)
				submitAll(t, b.c, b.clock, b.q, "skew", 3)
				drain(t, asyncevent.NewProcessor(b.c, asyncevent.ProcessOptions{}), b.q)
				_, err = drawer.Draw(ctx, "skew")
				require.NoError(t, err)
			},
			control: func(b *controlBundle) (asyncevent.EventUpdate, error) {
				return b.c.ExtendEvent(ctx, "skew", asyncevent.ExtendEventInput{Actor: "ops", Action: asyncevent.ActionExtendCutoff, To: asyncevent.MillisOf(t0.Add(3 * time.Hour))})
			},
			reason: "the draw began",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := controlSetup(t, uncached, firstCome("ev"))
			tc.prepare(t, b)
			if tc.state != "" {
				cfg, err := b.c.GetEvent(ctx, tc.event)
				require.NoError(t, err)
				require.Equal(t, tc.state, cfg.StateAt(asyncevent.MillisOf(b.clock.Now())))
			}
			before := itemsOf(t, b.c)
			up, err := tc.control(b)
			require.NoError(t, err)
			assert.False(t, up.Applied, "applied: %s", tc.name)
			if tc.reason != "" {
				assert.Contains(t, up.Reason, tc.reason)
			}
			assert.Equal(t, before, itemsOf(t, b.c), "a refused control writes nothing, its audit entry included")
		})
	}
}

// lotteryPastItsCutoff makes a lottery "lot" whose cutoff, a minute after t0, has
// passed: CLOSED, and its ingest refuses clicks.
func lotteryPastItsCutoff(t *testing.T, b *controlBundle) {
	t.Helper()
	_, err := b.c.CreateEvent(context.Background(), lottery("lot", t0.Add(time.Minute)))
	require.NoError(t, err)
	b.clock.Advance(2 * time.Minute)
	_, err = b.c.Submit(context.Background(), b.q, "lot", "late")
	require.ErrorIs(t, err, asyncevent.ErrEventClosed, "ingest: closed")
}

// Extend: the end, and a lottery's cutoff, move later only while more than 10 s
// remain before them (every node's copy of the config learns of the move in time),
// never earlier, and a cutoff never past the event's end.
func TestExtendEndAndCutoff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	end := t0.Add(time.Hour)
	fc := firstCome("fc")
	fc.EndsAt = asyncevent.MillisOf(end)
	b := controlSetup(t, asyncevent.Options{}, fc, firstCome("open"), lottery("lot", end))
	c := b.c
	extend := func(id string, action asyncevent.Action, to time.Time) (asyncevent.EventUpdate, error) {
		return c.ExtendEvent(ctx, id, asyncevent.ExtendEventInput{Actor: "ops", Action: action, To: asyncevent.MillisOf(to)})
	}

	up := mustApply(t)(extend("fc", asyncevent.ActionExtendEnd, end.Add(time.Hour)))
	assert.Equal(t, asyncevent.MillisOf(end.Add(time.Hour)), up.Event.EndsAt)
	for _, to := range []time.Time{end, end.Add(30 * time.Minute)} {
		up, err := extend("fc", asyncevent.ActionExtendEnd, to)
		require.NoError(t, err)
		assert.False(t, up.Applied, "never earlier")
	}
	up, err := extend("open", asyncevent.ActionExtendEnd, end)
	require.NoError(t, err)
	assert.Equal(t, "the event has no end to move", up.Reason)

	up = mustApply(t)(extend("lot", asyncevent.ActionExtendCutoff, end.Add(time.Minute)))
	assert.Equal(t, asyncevent.MillisOf(end.Add(time.Minute)), up.Event.LotteryCutoffAt)
	up, err = extend("fc", asyncevent.ActionExtendCutoff, end.Add(3*time.Hour))
	require.NoError(t, err)
	assert.Equal(t, "only a LOTTERY has a cutoff", up.Reason)

	b.clock.Advance(time.Hour + 55*time.Second) // 5 s before the lottery's cutoff
	up, err = extend("lot", asyncevent.ActionExtendCutoff, end.Add(time.Hour))
	require.NoError(t, err)
	assert.False(t, up.Applied, "less than 10 s before the cutoff: too late to move it")
	_, err = extend("lot", "SHORTEN", end)
	assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions)

	trail, err := c.ListAudit(ctx, "lot")
	require.NoError(t, err)
	require.Len(t, trail, 1)
	assert.Equal(t, asyncevent.ActionExtendCutoff, trail[0].Action)
	assert.Contains(t, trail[0].Detail, end.Add(time.Minute).UTC().Format(time.RFC3339))
}

// ExtendEvent moves the end wherever a copy of it lives: the hold registry's entry
// (HOLD_EVENTS / EVENT#<eventId>, whose end the workers and the HoldSweeper list the
// events by), and every IdempotencyLock (whose ttl is the end plus LockTTL, 7 days:
// an end moved past it would let DynamoDB's TTL delete the locks of an open event,
// and a user's next click make a second request).
func TestExtendedEnd(t *testing.T) {
	t.Run("reaches the hold registry", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		b := controlSetup(t, asyncevent.Options{})
		holdsEvent(t, b.c, "long", 2, 1, time.Minute, asyncevent.MillisOf(t0.Add(time.Hour)))
		mustApply(t)(b.c.ExtendEvent(ctx, "long", asyncevent.ExtendEventInput{Actor: "ops", Action: asyncevent.ActionExtendEnd, To: asyncevent.MillisOf(t0.Add(6 * time.Hour))}))

		b.clock.Advance(3 * time.Hour) // open: its end is 3 hours away
		cfg, err := b.c.GetEvent(ctx, "long")
		require.NoError(t, err)
		require.Equal(t, asyncevent.StateOpen, cfg.StateAt(asyncevent.MillisOf(b.clock.Now())))
		listed, err := b.c.HoldEvents(ctx)
		require.NoError(t, err)
		var ids []string
		for _, e := range listed {
			ids = append(ids, e.EventID)
		}
		assert.Contains(t, ids, "long", "an open event with holds, its end extended, is missing from the hold registry's list")
	})

	t.Run("keeps every lock, and is refused past the locks' TTL", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		month := firstCome("month")
		month.EndsAt = asyncevent.MillisOf(t0.Add(time.Hour))
		b := controlSetup(t, asyncevent.Options{}, month)
		_, err := b.c.Submit(ctx, b.q, "month", "early")
		require.NoError(t, err)

		// Past the first end plus LockTTL (7 days): refused, nothing written.
		before := itemsOf(t, b.c)
		up, err := b.c.ExtendEvent(ctx, "month", asyncevent.ExtendEventInput{Actor: "ops", Action: asyncevent.ActionExtendEnd, To: asyncevent.MillisOf(t0.Add(30 * 24 * time.Hour))})
		require.NoError(t, err)
		require.False(t, up.Applied, "an end past the locks' TTL")
		assert.Contains(t, up.Reason, "TTL would then delete the locks")
		assert.Equal(t, before, itemsOf(t, b.c))

		// Up to it: applied, and every lock outlives the new end.
		kept, err := asyncevent.ReadEventBookkeeping(ctx, b.c, "month")
		require.NoError(t, err)
		newEnd := kept.LocksKeptUntil.Time()
		mustApply(t)(b.c.ExtendEvent(ctx, "month", asyncevent.ExtendEventInput{Actor: "ops", Action: asyncevent.ActionExtendEnd, To: asyncevent.MillisOf(newEnd)}))
		for _, raw := range asynceventtest.ScanTable(t, b.c.TableName()) {
			var lock asyncevent.IdempotencyLock
			require.NoError(t, attributevalue.UnmarshalMap(raw, &lock))
			if lock.EntityType != entity.Idempotency {
				continue
			}
			assert.GreaterOrEqual(t, lock.TTL, newEnd.Unix(),
				"the lock of %s expires at %s, before the event's extended end %s: TTL deletes it while the event is open",
				lock.UserID, time.Unix(lock.TTL, 0).UTC(), newEnd)
		}
	})
}

// Every node learns of a close within its EventCacheTTL: a node that read the config
// just before the close still takes clicks until its copy expires, and none after.
func TestCloseReachesEveryNodeWithinTheCacheTTL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := controlSetup(t, asyncevent.Options{}, asyncevent.EventSettings{EventID: "bound", EventType: asyncevent.FirstCome, CapacityTotal: 50})
	node, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: b.c.TableName(), Clock: b.clock.Now, EventCacheTTL: 5 * time.Second})
	require.NoError(t, err)
	_, err = node.Submit(ctx, b.q, "bound", "warm") // the node's copy of the config
	require.NoError(t, err)
	b.clock.Advance(time.Second)
	mustApply(t)(b.c.CloseEvent(ctx, "bound", ops))

	b.clock.Advance(time.Second)
	_, err = node.Submit(ctx, b.q, "bound", "within-the-bound")
	assert.NoError(t, err, "the node's copy is under 5 s old: it does not know yet (the documented bound)")
	b.clock.Advance(3*time.Second + time.Millisecond) // the copy is 5 s old
	_, err = node.Submit(ctx, b.q, "bound", "after-the-bound")
	assert.ErrorIs(t, err, asyncevent.ErrEventClosed, "past the TTL every node refuses")
}

// The millisecond of an event's end is open everywhere alike: a click is taken, the
// state is OPEN and a close is applied; from the millisecond of the close the click
// is refused, the state is CLOSED and no control but the audit's read applies.
func TestTheLastMillisecondIsOpenAlike(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	end := t0.Add(time.Hour)
	edge := firstCome("edge")
	edge.EndsAt = asyncevent.MillisOf(end)
	b := controlSetup(t, uncached, edge)
	c := b.c

	b.clock.Advance(end.Sub(b.clock.Now()))
	cfg, err := c.GetEvent(ctx, "edge")
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StateOpen, cfg.StateAt(asyncevent.MillisOf(b.clock.Now())))
	_, err = c.Submit(ctx, b.q, "edge", "last-ms")
	require.NoError(t, err, "the end's millisecond takes clicks")
	up, err := c.CloseEvent(ctx, "edge", asyncevent.ControlInput{Actor: "ops-ann"})
	require.NoError(t, err)
	require.True(t, up.Applied, "an event the state calls OPEN can be closed: %s", up.Reason)
	assert.Equal(t, asyncevent.StateClosed, up.Event.StateAt(asyncevent.MillisOf(b.clock.Now())))

	before := itemsOf(t, c)
	_, err = c.Submit(ctx, b.q, "edge", "same-ms-after-close")
	assert.ErrorIs(t, err, asyncevent.ErrEventClosed)
	for _, tc := range []struct {
		name    string
		control func() (asyncevent.EventUpdate, error)
	}{
		{"a close", func() (asyncevent.EventUpdate, error) {
			return c.CloseEvent(ctx, "edge", asyncevent.ControlInput{Actor: "ops-ann"})
		}},
		{"a pause", func() (asyncevent.EventUpdate, error) {
			return c.PauseEvent(ctx, "edge", asyncevent.ControlInput{Actor: "ops-ann"})
		}},
		{"an add of seats", func() (asyncevent.EventUpdate, error) {
			return c.AddCapacity(ctx, "edge", asyncevent.AddCapacityInput{Seats: 3, Actor: "ops-ann"})
		}},
	} {
		t.Run(tc.name+" in the millisecond of the close is refused", func(t *testing.T) {
			up, err := tc.control()
			require.NoError(t, err)
			assert.False(t, up.Applied)
			assert.Contains(t, up.Reason, "closed")
		})
	}
	assert.Equal(t, before, itemsOf(t, c), "nothing written by the refusals")
}

// An operator closes a drop before it starts (it is called off): from then on the
// event is CLOSED (StateAt, the list) and a click is ErrEventClosed, not
// ErrEventNotOpen ("opens at …").
func TestEventClosedBeforeItStartsIsClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	off := firstCome("off")
	off.StartsAt = asyncevent.MillisOf(t0.Add(time.Hour))
	b := controlSetup(t, uncached, off)
	up := mustApply(t)(b.c.CloseEvent(ctx, "off", ops))
	b.clock.Advance(time.Second)
	assert.Equal(t, asyncevent.StateClosed, up.Event.StateAt(asyncevent.MillisOf(b.clock.Now())), "a closed event")
	_, err := b.c.Submit(ctx, b.q, "off", "early")
	assert.ErrorIs(t, err, asyncevent.ErrEventClosed)
	page, err := b.c.ListEvents(ctx, asyncevent.PageOptions{})
	require.NoError(t, err)
	require.Len(t, page.Events, 1)
	assert.Equal(t, asyncevent.StateClosed, page.Events[0].State, "the list")
}

// The event list: newest first, paged with a cursor, each event with its state and
// seats left; an entry of a CreateEvent that failed (the ID was taken) is passed over
// and deleted.
func TestListEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := controlSetup(t, asyncevent.Options{})
	c, clock := b.c, b.clock
	for _, cfg := range []asyncevent.EventSettings{
		{EventID: "first", EventType: asyncevent.FirstCome, CapacityTotal: 7, CapacityShards: 3},
		{EventID: "second", EventType: asyncevent.Lottery, WinnerCount: 1, LotteryCutoffAt: asyncevent.MillisOf(t0.Add(time.Hour))},
		{EventID: "third", EventType: asyncevent.FirstCome, CapacityTotal: 2, StartsAt: asyncevent.MillisOf(t0.Add(time.Hour))},
	} {
		_, err := c.CreateEvent(ctx, cfg)
		require.NoError(t, err)
		clock.Advance(time.Second)
	}
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "first", EventType: asyncevent.FirstCome, CapacityTotal: 1})
	require.ErrorIs(t, err, asyncevent.ErrEventExists)
	_, err = c.PauseEvent(ctx, "first", asyncevent.ControlInput{Actor: "ops"})
	require.NoError(t, err)

	page, err := c.ListEvents(ctx, asyncevent.PageOptions{Limit: 2})
	require.NoError(t, err)
	require.Len(t, page.Events, 1, "the failed CreateEvent's entry, the newest, is passed over")
	assert.Equal(t, "third", page.Events[0].Event.EventID)
	assert.Equal(t, asyncevent.StateScheduled, page.Events[0].State)
	require.NotEmpty(t, page.NextCursor)
	page2, err := c.ListEvents(ctx, asyncevent.PageOptions{Limit: 2, Cursor: page.NextCursor})
	require.NoError(t, err)
	require.Len(t, page2.Events, 2)
	assert.Equal(t, "second", page2.Events[0].Event.EventID)
	assert.Nil(t, page2.Events[0].SeatsLeft)
	assert.Equal(t, "first", page2.Events[1].Event.EventID)
	assert.Equal(t, asyncevent.StatePaused, page2.Events[1].State)
	require.NotNil(t, page2.Events[1].SeatsLeft)
	assert.EqualValues(t, 7, *page2.Events[1].SeatsLeft, "summed over its three shards")

	all, err := c.ListEvents(ctx, asyncevent.PageOptions{})
	require.NoError(t, err)
	assert.Len(t, all.Events, 3, "the stray entry is gone")
	_, err = c.ListEvents(ctx, asyncevent.PageOptions{Limit: 2, Cursor: "bm90LWEtY3Vyc29y"})
	assert.ErrorIs(t, err, asyncevent.ErrInvalidCursor)
	_, err = c.ListEvents(ctx, asyncevent.PageOptions{Limit: 1000})
	assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions)
}

// CountRequests counts every request of an event over its index shards, reading
// nothing back; an unknown event is ErrEventNotFound.
func TestCountRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := controlSetup(t, asyncevent.Options{}, asyncevent.EventSettings{EventID: "count", EventType: asyncevent.FirstCome, CapacityTotal: 5, IndexShards: 4})
	c, q := b.c, b.q
	for i := range 9 {
		_, err := c.Submit(ctx, q, "count", fmt.Sprintf("user-%d", i))
		require.NoError(t, err)
	}
	_, err := c.Submit(ctx, q, "count", "user-0") // a repeat click adds no request
	require.NoError(t, err)
	n, err := c.CountRequests(ctx, "count")
	require.NoError(t, err)
	assert.Equal(t, 9, n)
	_, err = c.CountRequests(ctx, "nope")
	assert.ErrorIs(t, err, asyncevent.ErrEventNotFound)
}

// Close, pause, resume and extend are sent once: an attempt that got no answer is an
// error that says the outcome is unknown, never a refusal; the held write lands
// after the event's end, and the audit trail tells whether it applied.
func TestEventControlsAfterAnUnansweredAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		action  asyncevent.Action
		prepare func(t *testing.T, b *lateBundle)
		control func(b *lateBundle) (asyncevent.EventUpdate, error)
	}{
		{asyncevent.ActionClose, nil, func(b *lateBundle) (asyncevent.EventUpdate, error) {
			return b.c.CloseEvent(ctx, lateEvent, asyncevent.ControlInput{Actor: "ops"})
		}},
		{asyncevent.ActionPause, nil, func(b *lateBundle) (asyncevent.EventUpdate, error) {
			return b.c.PauseEvent(ctx, lateEvent, asyncevent.ControlInput{Actor: "ops"})
		}},
		{asyncevent.ActionResume, func(t *testing.T, b *lateBundle) {
			up, err := b.c.PauseEvent(ctx, lateEvent, asyncevent.ControlInput{Actor: "ops"})
			require.NoError(t, err)
			require.True(t, up.Applied, up.Reason)
		}, func(b *lateBundle) (asyncevent.EventUpdate, error) {
			return b.c.ResumeEvent(ctx, lateEvent, asyncevent.ControlInput{Actor: "ops"})
		}},
		{asyncevent.ActionExtendEnd, nil, func(b *lateBundle) (asyncevent.EventUpdate, error) {
			return b.c.ExtendEvent(ctx, lateEvent, asyncevent.ExtendEventInput{Actor: "ops", Action: asyncevent.ActionExtendEnd, To: asyncevent.MillisOf(b.end.Add(time.Hour))})
		}},
	} {
		t.Run(string(tc.action), func(t *testing.T) {
			t.Parallel()
			b := lateSetup(t)
			if tc.prepare != nil {
				tc.prepare(t, b)
			}
			held := b.hb.Hold(onLate, 1, asynceventtest.CallerReset)
			up, err := tc.control(b)
			require.Error(t, err)
			assert.ErrorIs(t, err, asyncevent.ErrOutcomeUnknown)
			assert.False(t, up.Applied)
			assert.Empty(t, up.Reason, "no refusal is claimed")
			require.Equal(t, 1, held.Count(), "sent once")

			b.passEnd()
			require.NoError(t, held.Land(ctx))
			_, _, _, entries := seatsOf(t, b.c, lateEvent, tc.action)
			assert.Equal(t, held.Outcome().Applied, entries == 1, "the audit trail tells the outcome: %s", held.Outcome())
		})
	}
}

// The control rules (internal/control) name the actions as the audit trail spells them.
func TestControlActionsAsTheAuditTrailSpellsThem(t *testing.T) {
	t.Parallel()
	for action, text := range map[asyncevent.Action]string{
		asyncevent.ActionClose: control.Close, asyncevent.ActionPause: control.Pause, asyncevent.ActionResume: control.Resume,
		asyncevent.ActionExtendEnd: control.ExtendEnd, asyncevent.ActionExtendCutoff: control.ExtendCutoff,
		asyncevent.ActionExtendStart: control.ExtendStart, asyncevent.ActionAddCapacity: control.AddCapacity, asyncevent.ActionCancel: control.Cancel,
	} {
		assert.Equal(t, string(action), text)
	}
}
