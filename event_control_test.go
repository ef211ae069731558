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
	"github.com/asyncevent/asyncevent/queue"
)

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
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now, EventCacheTTL: -1})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "ctl", EventType: asyncevent.FirstCome, CapacityTotal: 5})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	_, err = c.Submit(ctx, q, "ctl", "before")
	require.NoError(t, err)

	up, err := c.PauseEvent(ctx, "ctl", asyncevent.ControlInput{Actor: "ops-ann"})
	require.NoError(t, err)
	require.True(t, up.Applied)
	assert.Equal(t, asyncevent.StatePaused, up.Event.StateAt(asyncevent.MillisOf(clock.Now())))
	before := itemsOf(t, c)
	_, err = c.Submit(ctx, q, "ctl", "paused-click")
	assert.ErrorIs(t, err, asyncevent.ErrEventPaused)
	assert.Equal(t, before, itemsOf(t, c), "a click on a paused event writes nothing")

	up, err = c.PauseEvent(ctx, "ctl", asyncevent.ControlInput{Actor: "ops-ann"})
	require.NoError(t, err)
	assert.False(t, up.Applied)
	assert.Equal(t, "the event is paused already", up.Reason)
	assert.Equal(t, before, itemsOf(t, c), "a refused control writes nothing, its audit entry included")

	clock.Advance(time.Millisecond) // the trail's order is its entries' times
	up, err = c.ResumeEvent(ctx, "ctl", asyncevent.ControlInput{Actor: "ops-bob"})
	require.NoError(t, err)
	require.True(t, up.Applied)
	_, err = c.Submit(ctx, q, "ctl", "resumed-click")
	require.NoError(t, err)

	clock.Advance(time.Second)
	up, err = c.CloseEvent(ctx, "ctl", asyncevent.ControlInput{Actor: "ops-bob"})
	require.NoError(t, err)
	require.True(t, up.Applied)
	assert.Equal(t, asyncevent.MillisOf(clock.Now()), up.Event.ClosedAt)
	clock.Advance(time.Millisecond)
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

	_, err = c.CloseEvent(ctx, "no-such-event", asyncevent.ControlInput{Actor: "ops"})
	assert.Error(t, err)
	_, err = c.CloseEvent(ctx, "a#b", asyncevent.ControlInput{Actor: "ops"})
	assert.ErrorIs(t, err, asyncevent.ErrInvalidID)
	_, err = c.CloseEvent(ctx, "ctl", asyncevent.ControlInput{Actor: ""})
	assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions, "a control names its actor")
}

// Extend: the end, and a lottery's cutoff, move later only while more than 10 s
// remain before them (every node's copy of the config learns of the move in time),
// never earlier, and a cutoff never past the event's end.
func TestExtendEndAndCutoff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	end := t0.Add(time.Hour)
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "fc", EventType: asyncevent.FirstCome, CapacityTotal: 5, EndsAt: asyncevent.MillisOf(end)})
	require.NoError(t, err)
	_, err = c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "open", EventType: asyncevent.FirstCome, CapacityTotal: 5})
	require.NoError(t, err)
	_, err = c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "lot", EventType: asyncevent.Lottery, WinnerCount: 1, LotteryCutoffAt: asyncevent.MillisOf(end)})
	require.NoError(t, err)

	up, err := c.ExtendEvent(ctx, "fc", asyncevent.ExtendEventInput{Actor: "ops", Action: asyncevent.ActionExtendEnd, To: asyncevent.MillisOf(end.Add(time.Hour))})
	require.NoError(t, err)
	require.True(t, up.Applied)
	assert.Equal(t, asyncevent.MillisOf(end.Add(time.Hour)), up.Event.EndsAt)
	for _, to := range []time.Time{end, end.Add(30 * time.Minute)} {
		up, err = c.ExtendEvent(ctx, "fc", asyncevent.ExtendEventInput{Actor: "ops", Action: asyncevent.ActionExtendEnd, To: asyncevent.MillisOf(to)})
		require.NoError(t, err)
		assert.False(t, up.Applied, "never earlier")
	}
	up, err = c.ExtendEvent(ctx, "open", asyncevent.ExtendEventInput{Actor: "ops", Action: asyncevent.ActionExtendEnd, To: asyncevent.MillisOf(end)})
	require.NoError(t, err)
	assert.Equal(t, "the event has no end to move", up.Reason)

	up, err = c.ExtendEvent(ctx, "lot", asyncevent.ExtendEventInput{Actor: "ops", Action: asyncevent.ActionExtendCutoff, To: asyncevent.MillisOf(end.Add(time.Minute))})
	require.NoError(t, err)
	require.True(t, up.Applied)
	assert.Equal(t, asyncevent.MillisOf(end.Add(time.Minute)), up.Event.LotteryCutoffAt)
	up, err = c.ExtendEvent(ctx, "fc", asyncevent.ExtendEventInput{Actor: "ops", Action: asyncevent.ActionExtendCutoff, To: asyncevent.MillisOf(end.Add(3 * time.Hour))})
	require.NoError(t, err)
	assert.Equal(t, "only a LOTTERY has a cutoff", up.Reason)

	clock.Advance(time.Hour + 55*time.Second) // 5 s before the lottery's cutoff
	up, err = c.ExtendEvent(ctx, "lot", asyncevent.ExtendEventInput{Actor: "ops", Action: asyncevent.ActionExtendCutoff, To: asyncevent.MillisOf(end.Add(time.Hour))})
	require.NoError(t, err)
	assert.False(t, up.Applied, "less than 10 s before the cutoff: too late to move it")
	_, err = c.ExtendEvent(ctx, "lot", asyncevent.ExtendEventInput{Actor: "ops", Action: "SHORTEN", To: asyncevent.MillisOf(end)})
	assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions)

	trail, err := c.ListAudit(ctx, "lot")
	require.NoError(t, err)
	require.Len(t, trail, 1)
	assert.Equal(t, asyncevent.ActionExtendCutoff, trail[0].Action)
	assert.Contains(t, trail[0].Detail, end.Add(time.Minute).UTC().Format(time.RFC3339))
}

// Every node learns of a close within its EventCacheTTL: a node that read the config
// just before the close still takes clicks until its copy expires, and none after.
func TestCloseReachesEveryNodeWithinTheCacheTTL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	admin := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	node, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: admin.TableName(), Clock: clock.Now, EventCacheTTL: 5 * time.Second})
	require.NoError(t, err)
	_, err = admin.CreateEvent(ctx, asyncevent.EventSettings{EventID: "bound", EventType: asyncevent.FirstCome, CapacityTotal: 50})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	_, err = node.Submit(ctx, q, "bound", "warm") // the node's copy of the config
	require.NoError(t, err)
	clock.Advance(time.Second)
	up, err := admin.CloseEvent(ctx, "bound", asyncevent.ControlInput{Actor: "ops"})
	require.NoError(t, err)
	require.True(t, up.Applied)

	clock.Advance(time.Second)
	_, err = node.Submit(ctx, q, "bound", "within-the-bound")
	assert.NoError(t, err, "the node's copy is under 5 s old: it does not know yet (the documented bound)")
	clock.Advance(3*time.Second + time.Millisecond) // the copy is 5 s old
	_, err = node.Submit(ctx, q, "bound", "after-the-bound")
	assert.ErrorIs(t, err, asyncevent.ErrEventClosed, "past the TTL every node refuses")
}

// The event list: newest first, paged with a cursor, each event with its state and
// seats left; an entry of a CreateEvent that failed (the ID was taken) is passed over
// and deleted.
func TestListEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
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

// The millisecond of an event's end is open everywhere alike: a click is taken, the
// state is OPEN and a close is applied; from the millisecond of the close the click
// is refused, the state is CLOSED and no control but the audit's read applies.
func TestTheLastMillisecondIsOpenAlike(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now, EventCacheTTL: -1})
	end := t0.Add(time.Hour)
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "edge", EventType: asyncevent.FirstCome, CapacityTotal: 5,
		EndsAt: asyncevent.MillisOf(end)})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})

	clock.Advance(end.Sub(clock.Now()))
	cfg, err := c.GetEvent(ctx, "edge")
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StateOpen, cfg.StateAt(asyncevent.MillisOf(clock.Now())))
	_, err = c.Submit(ctx, q, "edge", "last-ms")
	require.NoError(t, err, "the end's millisecond takes clicks")
	up, err := c.CloseEvent(ctx, "edge", asyncevent.ControlInput{Actor: "ops-ann"})
	require.NoError(t, err)
	require.True(t, up.Applied, "an event the state calls OPEN can be closed: %s", up.Reason)
	assert.Equal(t, asyncevent.StateClosed, up.Event.StateAt(asyncevent.MillisOf(clock.Now())))

	before := itemsOf(t, c)
	_, err = c.Submit(ctx, q, "edge", "same-ms-after-close")
	assert.ErrorIs(t, err, asyncevent.ErrEventClosed)
	for name, control := range map[string]func() (asyncevent.EventUpdate, error){
		"close": func() (asyncevent.EventUpdate, error) {
			return c.CloseEvent(ctx, "edge", asyncevent.ControlInput{Actor: "ops-ann"})
		},
		"pause": func() (asyncevent.EventUpdate, error) {
			return c.PauseEvent(ctx, "edge", asyncevent.ControlInput{Actor: "ops-ann"})
		},
		"add": func() (asyncevent.EventUpdate, error) {
			return c.AddCapacity(ctx, "edge", asyncevent.AddCapacityInput{Seats: 3, Actor: "ops-ann"})
		},
	} {
		up, err := control()
		require.NoError(t, err, name)
		assert.False(t, up.Applied, "%s after the close, in its millisecond", name)
		assert.Contains(t, up.Reason, "closed", name)
	}
	assert.Equal(t, before, itemsOf(t, c), "nothing written by the refusals")
}

// CountRequests counts every request of an event over its index shards, reading
// nothing back; an unknown event is ErrEventNotFound.
func TestCountRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTable(t)
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "count", EventType: asyncevent.FirstCome, CapacityTotal: 5, IndexShards: 4})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	for i := range 9 {
		_, err := c.Submit(ctx, q, "count", fmt.Sprintf("user-%d", i))
		require.NoError(t, err)
	}
	_, err = c.Submit(ctx, q, "count", "user-0") // a repeat click adds no request
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

// A cutoff never moves once the draw began, whatever the clocks: with a Draw run by
// a process whose clock is two hours ahead (so that its draw begins while the
// operator's clock still puts the cutoff an hour away), ExtendEvent's ConditionCheck
// of the Draw record (phase = COLLECTING) refuses the move and writes nothing.
func TestCutoffDoesNotMoveOnceTheDrawBegan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	ahead := asynceventtest.NewClock(t0.Add(2 * time.Hour))
	drawer, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: ahead.Now})
	require.NoError(t, err)
	_, err = c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "skew", EventType: asyncevent.Lottery, WinnerCount: 1,
		LotteryCutoffAt: asyncevent.MillisOf(t0.Add(time.Hour))})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	submitAll(t, c, clock, q, "skew", 3)
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)
	_, err = drawer.Draw(ctx, "skew")
	require.NoError(t, err)

	before := itemsOf(t, c)
	up, err := c.ExtendEvent(ctx, "skew", asyncevent.ExtendEventInput{Actor: "ops", Action: asyncevent.ActionExtendCutoff, To: asyncevent.MillisOf(t0.Add(3 * time.Hour))})
	require.NoError(t, err)
	assert.False(t, up.Applied, "the draw began: the cutoff stays")
	assert.Contains(t, up.Reason, "the draw began")
	assert.Equal(t, before, itemsOf(t, c))
}

// A closed event cannot be resumed. Pause, then close: ResumeEvent's condition is
// paused = true alone (pausedNow), so the resume of the closed event is applied: a
// RESUME entry on the audit trail, paused = false, 200 over HTTP, for an event that
// takes no click. The design: "resume only a paused one"; the issue: a click on a
// closed event gets a 409 and writes nothing. The same for a lottery paused before
// its cutoff and resumed after it.
func TestResumeOfAClosedEventIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now, EventCacheTTL: -1})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "pc", EventType: asyncevent.FirstCome, CapacityTotal: 5})
	require.NoError(t, err)
	_, err = c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "lot", EventType: asyncevent.Lottery, WinnerCount: 1,
		LotteryCutoffAt: asyncevent.MillisOf(t0.Add(time.Minute))})
	require.NoError(t, err)

	for _, id := range []string{"pc", "lot"} {
		up, err := c.PauseEvent(ctx, id, asyncevent.ControlInput{Actor: "ops"})
		require.NoError(t, err)
		require.True(t, up.Applied, up.Reason)
	}
	clock.Advance(time.Millisecond)
	up, err := c.CloseEvent(ctx, "pc", asyncevent.ControlInput{Actor: "ops"})
	require.NoError(t, err)
	require.True(t, up.Applied, up.Reason)
	clock.Advance(2 * time.Minute) // the lottery's cutoff has passed

	for _, id := range []string{"pc", "lot"} {
		cfg, err := c.GetEvent(ctx, id)
		require.NoError(t, err)
		require.Equal(t, asyncevent.StateClosed, cfg.StateAt(asyncevent.MillisOf(clock.Now())), id)
		before := itemsOf(t, c)
		up, err := c.ResumeEvent(ctx, id, asyncevent.ControlInput{Actor: "ops"})
		require.NoError(t, err)
		assert.False(t, up.Applied, "%s: the resume of a CLOSED event is applied", id)
		assert.Equal(t, before, itemsOf(t, c), "%s: a refused control writes nothing, its audit entry included", id)
	}
}

// A lottery past its cutoff is CLOSED (StateAt, and ingest refuses its clicks), but
// the controls' notEnded condition looks at closedAt and endsAt only, not at the
// cutoff: a pause and a close of such a lottery (or of one drawn) are applied, each
// with an audit entry, for an event whose ingest is over.
func TestPauseOrCloseOfALotteryPastItsCutoffIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now, EventCacheTTL: -1})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "lot", EventType: asyncevent.Lottery, WinnerCount: 1,
		LotteryCutoffAt: asyncevent.MillisOf(t0.Add(time.Minute))})
	require.NoError(t, err)
	clock.Advance(2 * time.Minute)
	cfg, err := c.GetEvent(ctx, "lot")
	require.NoError(t, err)
	require.Equal(t, asyncevent.StateClosed, cfg.StateAt(asyncevent.MillisOf(clock.Now())))
	q := queue.NewMemory(queue.MemoryOptions{})
	_, err = c.Submit(ctx, q, "lot", "late")
	require.ErrorIs(t, err, asyncevent.ErrEventClosed, "ingest: closed")

	for name, control := range map[string]func(context.Context, string, asyncevent.ControlInput) (asyncevent.EventUpdate, error){
		"pause": c.PauseEvent, "close": c.CloseEvent,
	} {
		before := itemsOf(t, c)
		up, err := control(ctx, "lot", asyncevent.ControlInput{Actor: "ops"})
		require.NoError(t, err)
		assert.False(t, up.Applied, "%s of a CLOSED lottery (its cutoff passed) is applied", name)
		assert.Equal(t, before, itemsOf(t, c), "%s: nothing written", name)
	}
}

// An operator closes a drop before it starts (it is called off). StateAt checks
// startsAt before closedAt, so the event stays SCHEDULED until its startsAt (the list,
// the event page, whose controls stay offered) and a click is ErrEventNotOpen ("opens
// at …"), not ErrEventClosed, until then.
func TestEventClosedBeforeItStartsIsClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now, EventCacheTTL: -1})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "off", EventType: asyncevent.FirstCome, CapacityTotal: 5,
		StartsAt: asyncevent.MillisOf(t0.Add(time.Hour))})
	require.NoError(t, err)
	up, err := c.CloseEvent(ctx, "off", asyncevent.ControlInput{Actor: "ops"})
	require.NoError(t, err)
	require.True(t, up.Applied, up.Reason)
	clock.Advance(time.Second)
	assert.Equal(t, asyncevent.StateClosed, up.Event.StateAt(asyncevent.MillisOf(clock.Now())), "a closed event")
	q := queue.NewMemory(queue.MemoryOptions{})
	_, err = c.Submit(ctx, q, "off", "early")
	assert.ErrorIs(t, err, asyncevent.ErrEventClosed)
	page, err := c.ListEvents(ctx, asyncevent.PageOptions{})
	require.NoError(t, err)
	require.Len(t, page.Events, 1)
	assert.Equal(t, asyncevent.StateClosed, page.Events[0].State, "the list")
}

// ExtendEvent moves the CONFIG's endsAt and nothing else, but two items carry a copy
// of the end written before the move:
//
//   - the hold registry's entry (HOLD_EVENTS / EVENT#<eventId>, endsAt from
//     CreateEvent): HoldEvents stops listing the event an hour after its first end
//     plus HoldFor, so a worker started later (a deploy) and the scheduled
//     HoldSweeper, which sweep the registry's events, no longer end its holds or
//     serve its waitlist while it still sells;
//   - every IdempotencyLock written before the move (ttl = the end as it was +
//     LockTTL, 7 days): an end moved further than that lets DynamoDB's TTL delete the
//     locks of an open event, and a user's next click makes a second request.
func TestExtendedEndReachesTheHoldRegistry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	holdsEvent(t, c, "long", 2, 1, time.Minute, asyncevent.MillisOf(t0.Add(time.Hour)))
	up, err := c.ExtendEvent(ctx, "long", asyncevent.ExtendEventInput{Actor: "ops", Action: asyncevent.ActionExtendEnd, To: asyncevent.MillisOf(t0.Add(6 * time.Hour))})
	require.NoError(t, err)
	require.True(t, up.Applied, up.Reason)

	clock.Advance(3 * time.Hour) // open: its end is 3 hours away
	cfg, err := c.GetEvent(ctx, "long")
	require.NoError(t, err)
	require.Equal(t, asyncevent.StateOpen, cfg.StateAt(asyncevent.MillisOf(clock.Now())))
	listed, err := c.HoldEvents(ctx)
	require.NoError(t, err)
	var ids []string
	for _, e := range listed {
		ids = append(ids, e.EventID)
	}
	assert.Contains(t, ids, "long", "an open event with holds, its end extended, is missing from the hold registry's list")
}

func TestExtendedEndKeepsTheLocks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "month", EventType: asyncevent.FirstCome, CapacityTotal: 5,
		EndsAt: asyncevent.MillisOf(t0.Add(time.Hour))})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	_, err = c.Submit(ctx, q, "month", "early")
	require.NoError(t, err)

	// Past the first end plus LockTTL (7 days): refused, nothing written.
	before := itemsOf(t, c)
	up, err := c.ExtendEvent(ctx, "month", asyncevent.ExtendEventInput{Actor: "ops", Action: asyncevent.ActionExtendEnd, To: asyncevent.MillisOf(t0.Add(30 * 24 * time.Hour))})
	require.NoError(t, err)
	require.False(t, up.Applied, "an end past the locks' TTL")
	assert.Contains(t, up.Reason, "TTL would then delete the locks")
	assert.Equal(t, before, itemsOf(t, c))

	// Up to it: applied, and every lock outlives the new end.
	kept, err := asyncevent.ReadEventBookkeeping(ctx, c, "month")
	require.NoError(t, err)
	newEnd := kept.LocksKeptUntil.Time()
	up, err = c.ExtendEvent(ctx, "month", asyncevent.ExtendEventInput{Actor: "ops", Action: asyncevent.ActionExtendEnd, To: asyncevent.MillisOf(newEnd)})
	require.NoError(t, err)
	require.True(t, up.Applied, up.Reason)
	for _, raw := range asynceventtest.ScanTable(t, c.TableName()) {
		var lock asyncevent.IdempotencyLock
		require.NoError(t, attributevalue.UnmarshalMap(raw, &lock))
		if lock.EntityType != entity.Idempotency {
			continue
		}
		assert.GreaterOrEqual(t, lock.TTL, newEnd.Unix(),
			"the lock of %s expires at %s, before the event's extended end %s: TTL deletes it while the event is open",
			lock.UserID, time.Unix(lock.TTL, 0).UTC(), newEnd)
	}
}
