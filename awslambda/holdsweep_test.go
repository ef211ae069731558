package awslambda_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/awslambda"
	"github.com/asyncevent/asyncevent/queue"
)

// scheduled is the event an EventBridge schedule invokes the function with.
var scheduled = events.EventBridgeEvent{DetailType: "Scheduled Event", Source: "aws.events", Time: time.Now()}

// heldSale makes a FIRST_COME event with holds of ten minutes and the given
// capacity, and runs users through it: the first capacity HELD, the others
// WAITLISTED. It returns the request IDs in queue order.
func heldSale(t *testing.T, c *asyncevent.Client, clock *asynceventtest.Clock, eventID string, capacity int64, users int) []string {
	t.Helper()
	ctx := context.Background()
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: eventID, EventType: asyncevent.FirstCome, CapacityTotal: capacity, HoldFor: 10 * time.Minute,
		EndsAt: asyncevent.MillisOf(clock.Now().Add(24 * time.Hour))})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := make([]string, users)
	for i := range ids {
		p, err := c.Submit(ctx, q, eventID, fmt.Sprintf("user-%02d", i))
		require.NoError(t, err)
		ids[i] = p.RequestID
		clock.Advance(time.Millisecond) // queue order is click order
	}
	proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	for {
		ds, err := q.Receive(ctx, 1, 0, time.Minute)
		require.NoError(t, err)
		if len(ds) == 0 {
			return ids
		}
		require.Empty(t, asynceventtest.Process(ctx, proc, ds))
	}
}

func statusOf(t *testing.T, c *asyncevent.Client, id string) asyncevent.Status {
	t.Helper()
	r, err := c.GetRequest(context.Background(), id)
	require.NoError(t, err)
	return r.Status
}

// An invocation ends the holds that ran out and hands their seats to the waitlist,
// pass after pass while a pass leaves more to do, for each event in turn; an event
// whose sweep fails (here one without holds) does not stop the others, and the
// invocation fails with its error.
func TestHoldSweeperSweepsEachEvent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(time.Now())
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	big := heldSale(t, c, clock, "big", 3, 6)
	small := heldSale(t, c, clock, "small", 1, 2)
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "plain", EventType: asyncevent.FirstCome, CapacityTotal: 1})
	require.NoError(t, err)

	s, err := awslambda.NewHoldSweeper(c, awslambda.SweepOptions{
		Events:           []string{"big", "plain", "small"},
		HoldSweepOptions: asyncevent.HoldSweepOptions{MaxWrites: 2},
	})
	require.NoError(t, err)

	// Before any hold ran out: nothing to do, one pass each.
	res, err := s.Handle(ctx, scheduled)
	require.Error(t, err)
	assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions, "plain has no holds")
	assert.Contains(t, err.Error(), "plain")
	require.Len(t, res.Events, 3)
	assert.Equal(t, awslambda.EventSweep{EventID: "big", Passes: 1}, res.Events[0])
	assert.Equal(t, "plain", res.Events[1].EventID)
	assert.NotEmpty(t, res.Events[1].Error)
	assert.Equal(t, awslambda.EventSweep{EventID: "small", Passes: 1}, res.Events[2])

	clock.Advance(11 * time.Minute)
	res, err = s.Handle(ctx, scheduled)
	require.Error(t, err)
	// big: three holds expired and three seats served, two writes a pass.
	assert.Equal(t, 3, res.Events[0].Expired)
	assert.Equal(t, 3, res.Events[0].Served)
	assert.False(t, res.Events[0].More)
	assert.Greater(t, res.Events[0].Passes, 2, "the passes went on while each left more to do")
	assert.Equal(t, 1, res.Events[2].Expired)
	assert.Equal(t, 1, res.Events[2].Served)
	for _, id := range big[:3] {
		assert.Equal(t, asyncevent.StatusRejected, statusOf(t, c, id))
	}
	for _, id := range append(big[3:], small[1]) {
		assert.Equal(t, asyncevent.StatusHeld, statusOf(t, c, id), "served from the waitlist")
	}
	asynceventtest.CheckEvent(t, c, "big", asynceventtest.CheckOptions{})
	asynceventtest.CheckEvent(t, c, "small", asynceventtest.CheckOptions{})
}

// Near the function's deadline no pass starts: each event is left for the next
// invocation, More, without an error.
func TestHoldSweeperNearTheDeadline(t *testing.T) {
	t.Parallel()
	clock := asynceventtest.NewClock(time.Now())
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	ids := heldSale(t, c, clock, "sale", 1, 1)
	clock.Advance(11 * time.Minute)
	s, err := awslambda.NewHoldSweeper(c, awslambda.SweepOptions{Events: []string{"sale"}, DeadlineMargin: time.Second})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	res, err := s.Handle(ctx, scheduled)
	require.NoError(t, err)
	assert.Equal(t, []awslambda.EventSweep{{EventID: "sale", HoldSweepReport: asyncevent.HoldSweepReport{More: true}}}, res.Events)
	assert.Equal(t, asyncevent.StatusHeld, statusOf(t, c, ids[0]), "not swept")
}

// With an Owner, the function takes the event's sweep lease as the Workers do, and
// skips an event whose lease another owner holds.
func TestHoldSweeperTakesTheLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(time.Now())
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	sale := heldSale(t, c, clock, "sale", 2, 2)
	other := heldSale(t, c, clock, "other", 1, 1)
	clock.Advance(11 * time.Minute)

	// A worker's pass on sale, under its lease, leaves one hold to end.
	rep, err := c.SweepHolds(ctx, "sale", asyncevent.HoldSweepOptions{Owner: "worker-1", LeaseFor: time.Hour, MaxWrites: 1})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Expired)

	s, err := awslambda.NewHoldSweeper(c, awslambda.SweepOptions{
		Events:           []string{"sale", "other"},
		HoldSweepOptions: asyncevent.HoldSweepOptions{Owner: "sweeper"},
	})
	require.NoError(t, err)
	res, err := s.Handle(ctx, scheduled)
	require.NoError(t, err)
	assert.Equal(t, awslambda.EventSweep{EventID: "sale", Passes: 1, HoldSweepReport: asyncevent.HoldSweepReport{Skipped: true}}, res.Events[0])
	assert.Equal(t, awslambda.EventSweep{EventID: "other", Passes: 1, HoldSweepReport: asyncevent.HoldSweepReport{Expired: 1, Waiting: 1}}, res.Events[1])
	assert.Equal(t, asyncevent.StatusRejected, statusOf(t, c, other[0]))
	assert.ElementsMatch(t, []asyncevent.Status{asyncevent.StatusRejected, asyncevent.StatusHeld},
		[]asyncevent.Status{statusOf(t, c, sale[0]), statusOf(t, c, sale[1])}, "the worker's lease kept the function off sale")
}

func TestNewHoldSweeperRefusesBadOptions(t *testing.T) {
	t.Parallel()
	c := asynceventtest.NewTable(t)
	for _, tc := range []struct {
		c    *asyncevent.Client
		opts awslambda.SweepOptions
	}{
		{nil, awslambda.SweepOptions{Events: []string{"sale"}}},
		{c, awslambda.SweepOptions{Events: []string{"sale", ""}}},
	} {
		_, err := awslambda.NewHoldSweeper(tc.c, tc.opts)
		assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions, "%+v", tc.opts)
	}
}

// Without Events, an invocation sweeps every event the hold registry offers: each
// event created with holds, whoever created it, with no list to keep.
func TestHoldSweeperTakesTheRegistrysEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	a := heldSale(t, c, clock, "reg-a", 1, 2)
	b := heldSale(t, c, clock, "reg-b", 1, 2)
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "plain", EventType: asyncevent.FirstCome, CapacityTotal: 1})
	require.NoError(t, err)
	listed, err := c.HoldEvents(ctx)
	require.NoError(t, err)
	var ids []string
	for _, ev := range listed {
		ids = append(ids, ev.EventID)
	}
	assert.ElementsMatch(t, []string{"reg-a", "reg-b"}, ids, "the events with holds, and only those")

	s, err := awslambda.NewHoldSweeper(c, awslambda.SweepOptions{})
	require.NoError(t, err)
	clock.Advance(11 * time.Minute)
	res, err := s.Handle(ctx, scheduled)
	require.NoError(t, err)
	require.Len(t, res.Events, 2)
	for _, ids := range [][]string{a, b} {
		assert.Equal(t, asyncevent.StatusRejected, statusOf(t, c, ids[0]), "the hold ran out")
		assert.Equal(t, asyncevent.StatusHeld, statusOf(t, c, ids[1]), "the seat went to the waitlist")
	}
}
