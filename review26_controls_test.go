package asyncevent_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// A closed event cannot be resumed. Pause, then close: ResumeEvent's condition is
// paused = true alone (pausedNow), so the resume of the closed event is applied: a
// RESUME entry on the audit trail, paused = false, 200 over HTTP, for an event that
// takes no click. The design: "resume only a paused one"; the issue: a click on a
// closed event gets a 409 and writes nothing. The same for a lottery paused before
// its cutoff and resumed after it.
func TestReview26ResumeOfAClosedEventIsRefused(t *testing.T) {
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
		up, err := c.PauseEvent(ctx, id, "ops")
		require.NoError(t, err)
		require.True(t, up.Applied, up.Reason)
	}
	clock.Advance(time.Millisecond)
	up, err := c.CloseEvent(ctx, "pc", "ops")
	require.NoError(t, err)
	require.True(t, up.Applied, up.Reason)
	clock.Advance(2 * time.Minute) // the lottery's cutoff has passed

	for _, id := range []string{"pc", "lot"} {
		cfg, err := c.GetEvent(ctx, id)
		require.NoError(t, err)
		require.Equal(t, asyncevent.StateClosed, cfg.StateAt(clock.Now()), id)
		before := itemsOf(t, c)
		up, err := c.ResumeEvent(ctx, id, "ops")
		require.NoError(t, err)
		assert.False(t, up.Applied, "%s: the resume of a CLOSED event is applied", id)
		assert.Equal(t, before, itemsOf(t, c), "%s: a refused control writes nothing, its audit entry included", id)
	}
}

// A lottery past its cutoff is CLOSED (StateAt, and ingest refuses its clicks), but
// the controls' notEnded condition looks at closedAt and endsAt only, not at the
// cutoff: a pause and a close of such a lottery (or of one drawn) are applied, each
// with an audit entry, for an event whose ingest is over.
func TestReview26PauseOrCloseOfALotteryPastItsCutoffIsRefused(t *testing.T) {
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
	require.Equal(t, asyncevent.StateClosed, cfg.StateAt(clock.Now()))
	q := queue.NewMemory(queue.MemoryOptions{})
	_, err = c.Submit(ctx, q, "lot", "late")
	require.ErrorIs(t, err, asyncevent.ErrEventClosed, "ingest: closed")

	for name, control := range map[string]func(context.Context, string, string) (asyncevent.EventUpdate, error){
		"pause": c.PauseEvent, "close": c.CloseEvent,
	} {
		before := itemsOf(t, c)
		up, err := control(ctx, "lot", "ops")
		require.NoError(t, err)
		assert.False(t, up.Applied, "%s of a CLOSED lottery (its cutoff passed) is applied", name)
		assert.Equal(t, before, itemsOf(t, c), "%s: nothing written", name)
	}
}

// Two cancels of two different winners at once: both are an operator's decision,
// neither depends on the other, but both condition on the CONFIG's poolVersion as
// read, so the second to commit is refused ("the request is no longer SUCCEEDED, or
// another change of the event's seats came first") and CancelRequest does not try
// again, although AddCapacity does for its own race. An operator cancelling a batch
// of fraudulent orders gets spurious 409s.
func TestReview26ConcurrentCancelsOfDifferentWinnersAllApply(t *testing.T) {
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
func TestReview26AddRacingACancelIsTriedAgain(t *testing.T) {
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

// gateCreate holds CreateEvent's transaction (the first TransactWriteItems) until
// release is closed, after telling entered: the moment between the event list's
// entry and the event's own items.
type gateCreate struct {
	asyncevent.DynamoDB
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (g *gateCreate) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	first := false
	g.once.Do(func() { first = true })
	if first {
		close(g.entered)
		<-g.release
	}
	return g.DynamoDB.TransactWriteItems(ctx, in, o...)
}

// An operator lists the events while another creates one: CreateEvent has written
// the list entry and its transaction is on its way. ListEvents finds the entry's
// config missing, takes the entry for a stray of a failed CreateEvent and deletes
// it; the transaction then succeeds, and the event is missing from the list for
// good (nothing writes its entry again).
func TestReview26EventCreatedWhileListingStaysListed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	gate := &gateCreate{DynamoDB: asynceventtest.DynamoDB(t), entered: make(chan struct{}), release: make(chan struct{})}
	c := asynceventtest.NewTableOn(t, gate, asyncevent.Options{})
	done := make(chan error)
	go func() {
		_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "new", EventType: asyncevent.FirstCome, CapacityTotal: 3})
		done <- err
	}()
	<-gate.entered
	page, err := c.ListEvents(ctx, 0, "") // the operator's screen refreshes
	require.NoError(t, err)
	assert.Empty(t, page.Events, "not made yet")
	close(gate.release)
	require.NoError(t, <-done)

	_, err = c.GetEvent(ctx, "new")
	require.NoError(t, err, "the event exists")
	page, err = c.ListEvents(ctx, 0, "")
	require.NoError(t, err)
	var listed []string
	for _, e := range page.Events {
		listed = append(listed, e.Event.EventID)
	}
	assert.Equal(t, []string{"new"}, listed, "an event made while an operator listed the events is missing from the list")
}

// Two adds at once, each read the shard below MaxSeatsPerShard: neither bumps the
// pool's version, so both conditions hold and both apply, and the shard passes the
// bound CreateEvent enforces (its claims then cost more than the layout rule counts).
func TestReview26ConcurrentAddsKeepMaxSeatsPerShard(t *testing.T) {
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

// A repeat click on a paused event gets its participation on every node, whether
// the node remembers it or not, and writes nothing; a new user's click is
// ErrEventPaused.
func TestReview26RepeatClickOnAPausedEvent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now, EventCacheTTL: -1, ProgressEvery: -1})
	other, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: clock.Now, EventCacheTTL: -1, ProgressEvery: -1})
	require.NoError(t, err)
	_, err = c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "rep", EventType: asyncevent.FirstCome, CapacityTotal: 5})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	first, err := c.Submit(ctx, q, "rep", "u1")
	require.NoError(t, err)
	up, err := c.PauseEvent(ctx, "rep", "ops")
	require.NoError(t, err)
	require.True(t, up.Applied)
	before := itemsOf(t, c)
	for name, node := range map[string]*asyncevent.Client{"another node": other, "the first click's node": c} {
		p, err := node.Submit(ctx, q, "rep", "u1")
		require.NoError(t, err, name)
		assert.Equal(t, first.RequestID, p.RequestID, name)
		assert.True(t, p.Duplicate, name)
	}
	_, err = other.Submit(ctx, q, "rep", "u2")
	assert.ErrorIs(t, err, asyncevent.ErrEventPaused, "a new user")
	assert.Equal(t, before, itemsOf(t, c), "nothing written")
}

// An operator closes a drop before it starts (it is called off). StateAt checks
// startsAt before closedAt, so the event stays SCHEDULED until its startsAt (the list,
// the event page, whose controls stay offered) and a click is ErrEventNotOpen ("opens
// at …"), not ErrEventClosed, until then.
func TestReview26EventClosedBeforeItStartsIsClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now, EventCacheTTL: -1})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "off", EventType: asyncevent.FirstCome, CapacityTotal: 5,
		StartsAt: asyncevent.MillisOf(t0.Add(time.Hour))})
	require.NoError(t, err)
	up, err := c.CloseEvent(ctx, "off", "ops")
	require.NoError(t, err)
	require.True(t, up.Applied, up.Reason)
	clock.Advance(time.Second)
	assert.Equal(t, asyncevent.StateClosed, up.Event.StateAt(clock.Now()), "a closed event")
	q := queue.NewMemory(queue.MemoryOptions{})
	_, err = c.Submit(ctx, q, "off", "early")
	assert.ErrorIs(t, err, asyncevent.ErrEventClosed)
	page, err := c.ListEvents(ctx, 0, "")
	require.NoError(t, err)
	require.Len(t, page.Events, 1)
	assert.Equal(t, asyncevent.StateClosed, page.Events[0].State, "the list")
}
