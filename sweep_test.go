package asyncevent_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

func TestSweepRedrivesStuckRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, clock := newIngest(t, asyncevent.Options{}) // FIRST_COME "ev", capacity 10
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "lotto", EventType: asyncevent.Lottery,
		WinnerCount: 1, LotteryCutoffAt: asyncevent.MillisOf(t0.Add(time.Hour))})
	require.NoError(t, err)

	// Three requests whose messages are lost, one whose worker died mid-message, one
	// lottery entry waiting for its draw.
	lost := queue.NewMemory(queue.MemoryOptions{})
	var stuck []string
	for _, u := range []string{"a", "b", "c", "d"} {
		p, err := c.Submit(ctx, lost, "ev", u)
		require.NoError(t, err)
		stuck = append(stuck, p.RequestID)
	}
	_, err = c.Submit(ctx, lost, "lotto", "e")
	require.NoError(t, err)
	ds, err := lost.Receive(ctx, 10, 0, time.Hour)
	require.NoError(t, err)
	require.Len(t, ds, 5)
	m, err := asyncevent.DecodeMessage(ds[3].Body)
	require.NoError(t, err)
	tr, err := c.Rows().StartProcessing(ctx, m.Ref(), asyncevent.Lease{Owner: "dead-worker", Duration: time.Minute})
	require.NoError(t, err)
	require.True(t, tr.Applied)

	q := queue.NewMemory(queue.MemoryOptions{})
	opts := asyncevent.SweepOptions{StuckAfter: 5 * time.Minute, RatePerSecond: 1000}
	report, err := c.Sweep(ctx, q, "ev", opts)
	require.NoError(t, err)
	assert.Empty(t, report.Resent, "nothing is stuck yet")
	assert.Equal(t, 4, report.Examined)

	clock.Advance(6*time.Minute + time.Second)
	report, err = c.Sweep(ctx, q, "ev", opts)
	require.NoError(t, err)
	assert.Equal(t, map[asyncevent.Status]int{asyncevent.StatusQueued: 3, asyncevent.StatusProcessing: 1}, report.Resent)
	report, err = c.Sweep(ctx, q, "lotto", opts)
	require.NoError(t, err)
	assert.Empty(t, report.Resent, "a lottery entry waits for its draw")

	// Two sweepers at once only make duplicates, which the worker recognises.
	_, err = c.Sweep(ctx, q, "ev", opts)
	require.NoError(t, err)
	p := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	for q.Len().Visible > 0 {
		ds, err := q.Receive(ctx, 1, 0, time.Minute)
		require.NoError(t, err)
		assert.Empty(t, asynceventtest.Process(ctx, p, ds))
		require.NoError(t, q.Delete(ctx, ds[0].Receipt))
	}
	for _, id := range stuck {
		r, err := c.GetRequest(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, asyncevent.StatusSucceeded, r.Status, id)
	}
	capacity, err := c.GetCapacity(ctx, "ev")
	require.NoError(t, err)
	assert.Equal(t, int64(6), capacity.CapacityRemaining)

	_, err = c.Sweep(ctx, q, "bad#id", opts)
	assert.ErrorIs(t, err, asyncevent.ErrInvalidID)
}

// Sweepers in several processes at once, and workers taking their messages while
// they run, only make duplicate messages: each stuck request is processed once and
// the event's invariants hold.
func TestConcurrentSweepersOnlyMakeDuplicates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, clock := newIngest(t, asyncevent.Options{}) // FIRST_COME "ev", capacity 10
	lost := queue.NewMemory(queue.MemoryOptions{})
	var users []string
	for i := range 30 {
		users = append(users, fmt.Sprintf("u%02d", i))
		_, err := c.Submit(ctx, lost, "ev", users[i])
		require.NoError(t, err)
	}
	clock.Advance(6 * time.Minute)

	q := queue.NewMemory(queue.MemoryOptions{})
	p := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	var sweepers, workers sync.WaitGroup
	resent := make([]int, 4)
	for i := range resent {
		sweepers.Go(func() {
			report, err := c.Sweep(ctx, q, "ev", asyncevent.SweepOptions{RatePerSecond: 1000})
			assert.NoError(t, err)
			resent[i] = report.Resent[asyncevent.StatusQueued]
		})
	}
	done := make(chan struct{})
	for range 3 {
		workers.Go(func() {
			for {
				// A copy whose request another worker holds comes back after
				// the visibility timeout.
				ds, err := q.Receive(ctx, 5, 20*time.Millisecond, 50*time.Millisecond)
				assert.NoError(t, err)
				for i, d := range ds {
					if len(asynceventtest.Process(ctx, p, ds[i:i+1])) == 0 {
						assert.NoError(t, q.Delete(ctx, d.Receipt))
					}
				}
				select {
				case <-done:
					return
				default:
				}
			}
		})
	}
	stopWorkers := sync.OnceFunc(func() { close(done); workers.Wait() })
	defer stopWorkers() // also when WaitDrained fails the test
	sweepers.Wait()
	asynceventtest.WaitDrained(t, q, time.Minute)
	stopWorkers()

	assert.GreaterOrEqual(t, resent[0]+resent[1]+resent[2]+resent[3], 30, "each sweeper sends what is still QUEUED when it reads it")
	rep := asynceventtest.CheckEvent(t, c, "ev", asynceventtest.CheckOptions{Users: users})
	assert.Equal(t, 10, rep.ByStatus[asyncevent.StatusSucceeded])
	assert.Equal(t, 20, rep.ByStatus[asyncevent.StatusRejected])
}

// A message lost after the event closed is found by Sweep on GSI2, no Scan: a request
// left RECEIVED (its ingest died between the put and the send) and one QUEUED whose
// send was dropped are sent again, and the worker ends them.
func TestSweepFindsLostMessagesAfterTheEventClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now, StatusLog: true})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "ev", EventType: asyncevent.FirstCome, CapacityTotal: 1,
		EndsAt: asyncevent.MillisOf(t0.Add(time.Minute)), IndexShards: 2})
	require.NoError(t, err)
	_, err = c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "lotto", EventType: asyncevent.Lottery, WinnerCount: 1,
		LotteryCutoffAt: asyncevent.MillisOf(t0.Add(time.Minute))})
	require.NoError(t, err)

	received, err := c.Rows().Participate(ctx, "ev", "ann") // died before the send
	require.NoError(t, err)
	dropped, err := c.Submit(ctx, &sendQueue{}, "ev", "bob") // the queue lost it
	require.NoError(t, err)
	require.Equal(t, asyncevent.StatusQueued, dropped.Request.Status)
	entry, err := c.Rows().Participate(ctx, "lotto", "cat") // died before the send
	require.NoError(t, err)

	clock.Advance(10 * time.Minute) // both events closed, the requests stuck
	q := queue.NewMemory(queue.MemoryOptions{})
	opts := asyncevent.SweepOptions{StuckAfter: 5 * time.Minute, RatePerSecond: 1000}
	report, err := c.Sweep(ctx, q, "ev", opts)
	require.NoError(t, err)
	assert.Equal(t, map[asyncevent.Status]int{asyncevent.StatusReceived: 1, asyncevent.StatusQueued: 1}, report.Resent)
	report, err = c.Sweep(ctx, q, "lotto", opts)
	require.NoError(t, err)
	assert.Equal(t, map[asyncevent.Status]int{asyncevent.StatusReceived: 1}, report.Resent, "a RECEIVED lottery request is sent again too; the worker decides")
	ds, err := q.Receive(ctx, 10, 0, time.Minute)
	require.NoError(t, err)
	require.Len(t, ds, 3)
	var firstCome []queue.Delivery
	for _, d := range ds {
		m, err := asyncevent.DecodeMessage(d.Body)
		require.NoError(t, err)
		if m.EventID == "ev" {
			firstCome = append(firstCome, d)
		} else {
			assert.Equal(t, entry.RequestID, m.RequestID)
		}
	}
	assert.Empty(t, asynceventtest.Process(ctx, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), firstCome))
	for _, id := range []string{received.RequestID, dropped.RequestID} {
		r, err := c.GetRequest(ctx, id)
		require.NoError(t, err)
		assert.True(t, r.Status.IsTerminal(), "%s ends final: %s", id, r.Status)
	}
	asynceventtest.CheckEvent(t, c, "ev", asynceventtest.CheckOptions{Users: []string{"ann", "bob"}})
}
