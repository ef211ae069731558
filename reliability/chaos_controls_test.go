package reliability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

// TestChaosControls sells an event out under the suite's faults and kills, then, while
// the second half of the spike comes in, an operator adds seats (spread, then onto one
// shard) and cancels some winners, each call through the faulty client and tried
// again under its idempotency key until it answers. Afterwards the seats add up
// (CheckEvent counts the pool), the event's capacity is its first capacity plus what
// the audit trail says was added, which is what the adds answered applied, and every
// seat added or given back was won by a later request: nothing is lost to a worker's
// memory of the sell-out, nothing is given twice.
func TestChaosControls(t *testing.T) {
	t.Parallel()
	cfg := newConfig(t, max(atScale(625), chaosUsers()/8)) // enough for its first half to sell the seats out
	w := newWorld(t, cfg)
	capacity := int64(atScale(100))
	ctx := context.Background()
	_, err := w.clean.CreateEvent(ctx, asyncevent.EventSettings{
		EventID: "chaos-ops", EventType: asyncevent.FirstCome, CapacityTotal: capacity, IndexShards: 8, CapacityShards: 4,
	})
	require.NoError(t, err)
	everyone := w.users
	half := len(everyone) / 2

	lap := phases(t)
	w.users = everyone[:half]
	w.ingestAll("chaos-ops", rand.New(rand.NewPCG(uint64(cfg.seed), 5)))
	lap("first half: the sell-out")
	left, err := w.clean.GetCapacity(ctx, "chaos-ops")
	require.NoError(t, err)
	require.Zero(t, left.CapacityRemaining, "the first half sells the event out")

	w.users = everyone[half:]
	type operated struct {
		cancelled []string
		added     int64
	}
	done := make(chan operated)
	go func() {
		cancelled, added := w.operate(ctx, "chaos-ops")
		done <- operated{cancelled, added}
	}()
	w.ingestAll("chaos-ops", rand.New(rand.NewPCG(uint64(cfg.seed), 6)))
	ops := <-done
	cancelled := ops.cancelled
	lap("second half, with the operator's adds and cancels")
	w.users = everyone
	w.startWorker()
	w.settle("chaos-ops")
	w.stopWorkers()
	lap("sweeps")

	rep := asynceventtest.CheckEvent(t, w.clean, "chaos-ops", asynceventtest.CheckOptions{Users: w.users, Abandoned: w.abandoned})
	trail, err := w.clean.ListAudit(ctx, "chaos-ops")
	require.NoError(t, err)
	added := int64(0)
	for _, e := range trail {
		if e.Action == asyncevent.ActionAddCapacity {
			var n int64
			_, err := fmt.Sscanf(e.Detail, "%d", &n)
			require.NoError(t, err, e.Detail)
			added += n
		}
	}
	ev, err := w.clean.GetEvent(ctx, "chaos-ops")
	require.NoError(t, err)
	t.Logf("%d requests: %v %v; %d seats added, %d cancelled; %d worker kills", rep.Requests, rep.ByStatus, rep.ByCode, added, len(cancelled), w.kills)
	require.EqualValues(t, capacity+added, ev.CapacityTotal, "the capacity is what the audit trail says")
	require.Equal(t, ops.added, added, "each add applied once, whatever answers were lost, and its answer said whether it did")
	require.Equal(t, len(cancelled), rep.ByCode[asyncevent.ResultCancelled], "the cancels the operator asked for, and no other")
	for _, id := range cancelled {
		r, err := w.clean.GetRequest(ctx, id)
		require.NoError(t, err)
		require.Equal(t, asyncevent.ResultCancelled, r.ResultCode, "%s: a cancel tried until it answered applied", id)
	}
	require.EqualValues(t, ev.CapacityTotal, rep.ByStatus[asyncevent.StatusSucceeded],
		"every seat added or given back was won by a later request")
}

// operate plays the operator once the event sold out: adds 10 seats spread over the
// shards, cancels 5 winners, adds 5 seats to shard 0 (they go onto the pool: the
// shards are empty), each call through the faulty ingest client, tried again under
// its idempotency key until it answers. A call whose answer was lost and that is
// tried again applies once, and its answer says whether it did. It returns the
// requests it cancelled and the seats the adds answered applied.
func (w *world) operate(ctx context.Context, eventID string) (cancelled []string, added int64) {
	retry := func(call func() (asyncevent.EventUpdate, error)) asyncevent.EventUpdate {
		for attempt := 0; ; attempt++ {
			require.Less(w.t, attempt, 50, "an operator's call that never answered")
			if up, err := call(); err == nil {
				return up
			}
		}
	}
	add := func(in asyncevent.AddCapacityInput) {
		if retry(func() (asyncevent.EventUpdate, error) { return w.ingest.AddCapacity(ctx, eventID, in) }).Applied {
			added += in.Seats
		}
	}
	add(asyncevent.AddCapacityInput{Seats: 10, Actor: "ops-ann", IdempotencyKey: "chaos-add-spread"})
	page, err := w.clean.ListEventRequests(ctx, eventID, asyncevent.EventListOptions{PageOptions: asyncevent.PageOptions{Limit: 5}, Status: asyncevent.StatusSucceeded})
	require.NoError(w.t, err)
	for _, r := range page.Requests {
		in := asyncevent.CancelRequestInput{Actor: "ops-bob", IdempotencyKey: "chaos-cancel-" + r.RequestID}
		retry(func() (asyncevent.EventUpdate, error) { return w.ingest.CancelRequest(ctx, r.RequestID, in) })
		cancelled = append(cancelled, r.RequestID)
	}
	add(asyncevent.AddCapacityInput{Seats: 5, Shard: new(0), Actor: "ops-ann", IdempotencyKey: "chaos-add-shard0"})
	return cancelled, added
}
