// Scenario suite: exactly N while the operator's controls and the holds race the
// delays of issue 39 (docs/design.md, invariant 4, and "The seat claim"'s rows for
// added seats, cancels, holds and the waitlist). It plays AddCapacity,
// CancelRequest, a hold's release or expiry and the waitlist's serve, each made
// while a write of one of seat_delays_test.go's runs is on the wire (a late home
// claim, a takeover with the old claim on the wire, two workers' clocks 7 s apart, a
// pool claim landing after a refill, a claim cut off by its caller), the write
// landing after. Writes are held back with asynceventtest.HoldBack, time moves on
// the run's asynceventtest.Clock (each worker a Client of its own, some on a
// SkewedClock), and each run is judged from a raw consistent Scan (judgeSeats:
// SUCCEEDED + HELD ≤ capacity, every seat taken accounted for, no request with two
// tokens, none rejected or failed holding one), by CheckEvent, and by the SUCCEEDED
// and HELD its story must leave.

package asyncevent_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

// newRaceRig is newDelayRig for an event with holds of holdFor (0: none).
func newRaceRig(t *testing.T, capacity int64, shards int, holdFor time.Duration) *delayRig {
	t.Helper()
	return newDelayRigWith(t, capacity, shards, holdFor, 0)
}

// win submits user's click (home shard home), works it to its end and requires the
// outcome want; it returns the request ID.
func (r *delayRig) win(user string, home int, want asyncevent.OutcomeKind) string {
	r.t.Helper()
	id := r.submit(user, home)
	require.Equal(r.t, want, r.work(id).Kind, "%s (home shard %d)", user, home)
	return id
}

// request reads a request strongly consistently.
func (r *delayRig) request(id string) *asyncevent.StoredRequest {
	r.t.Helper()
	req, err := asyncevent.ReadStoredRequest(context.Background(), r.c, id)
	require.NoError(r.t, err)
	return req
}

// addSeats adds seats to shard (-1: spread over the shards with seats, or the pool)
// and logs where they went.
func (r *delayRig) addSeats(seats int64, shard int) {
	r.t.Helper()
	in := asyncevent.AddCapacityInput{Seats: seats, Actor: "ops"}
	if shard >= 0 {
		in.Shard = &shard
	}
	up, err := r.c.AddCapacity(context.Background(), r.event, in)
	require.NoError(r.t, err)
	require.True(r.t, up.Applied, up.Reason)
	capacity, err := r.c.GetCapacity(context.Background(), r.event)
	require.NoError(r.t, err)
	left := []int64{capacity.CapacityRemaining}
	if len(capacity.Shards) > 0 {
		left = left[:0]
		for _, s := range capacity.Shards {
			left = append(left, s.CapacityRemaining)
		}
	}
	r.t.Logf("AddCapacity %d seats to shard %d: seats left on the shards now %v", seats, shard, left)
}

// cancel cancels a SUCCEEDED request: its seat goes to the pool.
func (r *delayRig) cancel(id string) {
	r.t.Helper()
	up, err := r.c.CancelRequest(context.Background(), id, asyncevent.CancelRequestInput{Actor: "ops"})
	require.NoError(r.t, err)
	require.True(r.t, up.Applied, up.Reason)
	r.t.Logf("CancelRequest %s: applied", id)
}

// release releases a HELD request's hold: its seat goes to the Returns item.
func (r *delayRig) release(id string) {
	r.t.Helper()
	tr, err := r.c.Release(context.Background(), id)
	require.NoError(r.t, err)
	require.True(r.t, tr.Applied, "release %s", id)
}

// sweep runs one pass of the hold sweep on the run's clock.
func (r *delayRig) sweep() *asyncevent.HoldSweepReport {
	r.t.Helper()
	rep, err := r.c.SweepHolds(context.Background(), r.event, asyncevent.HoldSweepOptions{})
	require.NoError(r.t, err)
	r.t.Logf("sweep: %d expired, %d served, %d cleared, %d seats waiting", rep.Expired, rep.Served, rep.Cleared, rep.Waiting)
	return rep
}

// land lands the writes h holds and logs what they did.
func (r *delayRig) land(what string, h *asynceventtest.Held) []asynceventtest.Landing {
	r.t.Helper()
	require.NoError(r.t, h.Land(context.Background()))
	out := h.Outcomes()
	r.t.Logf("%s, landed: %v", what, out)
	return out
}

// landRefused lands the writes h holds, none of which may be applied: each would
// spend a seat on a request that has its seat elsewhere, or that ended without one.
func (r *delayRig) landRefused(what string, h *asynceventtest.Held) {
	r.t.Helper()
	require.Positive(r.t, h.Count(), "%s: nothing was held", what)
	for _, l := range r.land(what, h) {
		assert.False(r.t, l.Applied, "%s was applied when it landed: a seat spent for a request that must not get it", what)
	}
}

// poolClaimOnTheWire delivers id's message on a worker new to the event whose claim
// on the event's pool is held on the wire, its worker told the connection was reset:
// the request is left PROCESSING with its claim moved to the pool, its lease given up.
func (r *delayRig) poolClaimOnTheWire(id string) *asynceventtest.Held {
	r.t.Helper()
	hb := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(r.t))
	claim := hb.Hold(r.claimOn(-1), 0, asynceventtest.CallerReset)
	r.deliver(context.Background(), r.worker(hb, nil), id, 1, asyncevent.ProcessOptions{})
	claim.Stop()
	require.Equal(r.t, 1, claim.Count(), "%s's claim went to the pool", id)
	require.Equal(r.t, r.shards, r.seatShardOf(id), "%s's seatShard names the pool", id)
	return claim
}

// leasedClaimOnTheWire is run 6's first delivery (D1): id's home shard 0 is sold, so a
// worker new to the event starts id on another shard X and claims there; the claim is
// held on the wire (its worker told the connection was reset) and the delivery lets
// the request go. It returns the held claim and X.
func (r *delayRig) leasedClaimOnTheWire(id string) (*asynceventtest.Held, int) {
	r.t.Helper()
	hb := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(r.t))
	claim := hb.Hold(asynceventtest.OnKey("UpdateItem", "EVENT#"+r.event+"#CAPACITY#", "ADD holders"), 0, asynceventtest.CallerReset)
	r.deliver(context.Background(), r.worker(hb, nil), id, 1, asyncevent.ProcessOptions{})
	claim.Stop()
	x := r.seatShardOf(id)
	require.Positive(r.t, x, "D1 started %s on a shard other than its sold home", id)
	require.Equal(r.t, 1, claim.Count())
	return claim, x
}

// cutOff delivers id's message on its last receive on a worker whose first write that
// match picks is held, the caller waiting, and ends the delivery's context once it is
// on the wire (a Lambda deadline, Worker.Stop's grace). It returns the held write
// and the delivery's result.
func (r *delayRig) cutOff(id string, match asynceventtest.Match) (*asynceventtest.Held, asynceventtest.WorkResult) {
	r.t.Helper()
	hb := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(r.t))
	claim := hb.Hold(match, 1, asynceventtest.CallerWaits)
	ctx, deadline := context.WithCancel(context.Background())
	done := r.async(ctx, r.worker(hb, nil), id, asyncevent.DefaultMaxReceives, asyncevent.ProcessOptions{})
	caught, res := caughtOrDone(r.t, claim, done)
	deadline()
	if caught {
		ended := <-done
		res = &ended
	}
	require.True(r.t, caught, "%s's claim was sent", id)
	return claim, *res
}

// slowHandler is a Handler that waits, once started, until release is closed.
func slowHandler() (h asyncevent.Handler, started <-chan struct{}, release chan struct{}) {
	s, rel := make(chan struct{}), make(chan struct{})
	var once sync.Once
	return asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error {
		once.Do(func() { close(s) })
		<-rel
		return nil
	}), s, rel
}

// workersSevenSecondsApart is run 7's start: worker A, its clock 7 s behind, starts id (home
// shard 0, sold) on a shard X under a lease of 30 s by its clock and runs a handler
// that waits; 23.5 s later by the run's clock, worker B (on time) takes id over and
// its claims on X are refused for throughput, so B closes X to id and moves it to the
// third shard Y, where it wins (want: SUCCEEDED, HELD with holds). It returns X, and
// lets A's handler return and waits for A when called.
func (r *delayRig) workersSevenSecondsApart(id string, want asyncevent.OutcomeKind) (x int, finishA func() asynceventtest.WorkResult) {
	r.t.Helper()
	ctx := context.Background()
	slow, started, release := slowHandler()
	a := r.worker(asynceventtest.DynamoDB(r.t), asynceventtest.SkewedClock(r.clock.Now, -7*time.Second))
	aDone := r.async(ctx, a, id, 1, asyncevent.ProcessOptions{Handler: slow, LeaseDuration: 30 * time.Second})
	<-started
	x = r.seatShardOf(id)
	require.Positive(r.t, x, "A started %s on a shard other than its sold home", id)
	y := otherShard(3, 0, x)

	r.clock.Advance(23500 * time.Millisecond) // A's lease ran out by B's clock, not by A's
	b := r.worker(refuseClaims{DynamoDB: asynceventtest.DynamoDB(r.t), match: r.claimOn(x)}, nil)
	require.Equal(r.t, want, r.deliver(ctx, b, id, 2, asyncevent.ProcessOptions{LeaseDuration: 30 * time.Second}).Kind)
	require.Equal(r.t, y, r.seatShardOf(id), "B moved %s to Y", id)
	return x, func() asynceventtest.WorkResult {
		close(release)
		res := <-aDone
		r.t.Logf("A's delivery, its handler back (its clock 7 s behind): %s %v", res.Kind, res.Err)
		return res
	}
}

// judgeRace holds the run to exactly N (judgeSeats, CheckEvent) and to won, the
// SUCCEEDED and HELD requests its story leaves.
func (r *delayRig) judgeRace(won int) {
	r.t.Helper()
	rep := judgeSeats(r.t, r.c, r.event)
	if got := rep.succeeded + rep.held; got != won {
		r.t.Errorf("%d SUCCEEDED + %d HELD, want %d", rep.succeeded, rep.held, won)
	}
	asynceventtest.CheckEvent(r.t, r.c, r.event, asynceventtest.CheckOptions{})
}

// onItem matches the writes of op on the item whose PK is pk exactly (not a longer
// one it prefixes), whose expressions contain expr (asynceventtest.OnKey).
func onItem(op, pk, expr string) asynceventtest.Match {
	named := asynceventtest.OnKey(op, pk, expr)
	return func(gotOp string, in any) bool {
		if !named(gotOp, in) {
			return false
		}
		switch in := in.(type) {
		case *dynamodb.UpdateItemInput:
			return delayPK(in) == pk
		case *dynamodb.TransactWriteItemsInput:
			for _, it := range in.TransactItems {
				var key map[string]types.AttributeValue
				switch {
				case it.Update != nil:
					key = it.Update.Key
				case it.Delete != nil:
					key = it.Delete.Key
				case it.Put != nil:
					key = it.Put.Item
				case it.ConditionCheck != nil:
					key = it.ConditionCheck.Key
				}
				if s, ok := key["PK"].(*types.AttributeValueMemberS); ok && s.Value == pk {
					return true
				}
			}
		}
		return false
	}
}

// (a) AddCapacity to a shard that holds seats while a claim is on the wire, the claim
// landing after the seats were added. A shard takes added seats only while it holds
// some, so the seats added can meet a claim sent before them: the claim must take one
// only if its request may still win there (still at home), never when its request
// moved on (the shard closed to it), ended without a seat, or was taken over.
func TestSeatDelaysRaceAddCapacityToAShard(t *testing.T) {
	t.Parallel()

	// Shards 0 and 1 of one seat. R's home claim on shard 0 is on the wire; R is still
	// QUEUED at home. Two seats are added to shard 0, then the claim lands and takes
	// one of its three: R's next delivery finds its token and binds it.
	t.Run("home claim landing on the seats added, its request at home", func(t *testing.T) {
		t.Parallel()
		r := newRaceRig(t, 2, 2, 0)
		rID := r.submit("r", 0)
		claim := r.homeClaimOnTheWire(rID)
		r.addSeats(2, 0)
		r.land("R's home claim", claim)
		require.Equal(t, asyncevent.OutcomeSucceeded, r.work(rID).Kind)
		r.win("u1", 0, asyncevent.OutcomeSucceeded)
		r.win("u2", 0, asyncevent.OutcomeSucceeded)
		r.win("x", 1, asyncevent.OutcomeSucceeded)
		r.win("u3", 0, asyncevent.OutcomeRejected)
		r.judgeRace(4)
	})

	// R's home claim on shard 0 is on the wire; R's next delivery is refused on shard
	// 0 for throughput, closes it to R's claims at epoch 0, moves R to shard 1 and wins
	// there. Two seats are added to shard 0 (it holds one), then the claim lands: shard
	// 0 has three seats, and the fence alone must stop it.
	t.Run("home claim landing after its request moved on", func(t *testing.T) {
		t.Parallel()
		r := newRaceRig(t, 2, 2, 0)
		rID := r.submit("r", 0)
		claim := r.homeClaimOnTheWire(rID)
		w := r.worker(refuseClaims{DynamoDB: asynceventtest.DynamoDB(t), match: r.claimOn(0)}, nil)
		require.Equal(t, asyncevent.OutcomeSucceeded, r.deliver(context.Background(), w, rID, 2, asyncevent.ProcessOptions{}).Kind)
		require.Equal(t, 1, r.seatShardOf(rID))
		r.addSeats(2, 0)
		r.landRefused("R's home claim", claim)
		r.win("u1", 0, asyncevent.OutcomeSucceeded)
		r.win("u2", 0, asyncevent.OutcomeSucceeded)
		r.win("u3", 0, asyncevent.OutcomeSucceeded)
		r.win("u4", 1, asyncevent.OutcomeRejected)
		r.judgeRace(4)
	})

	// Run 6 with a seat added: three shards of one seat, R's home sold. D1 starts R on
	// X, its claim on the wire; D2 takes R over, is refused on X, closes it and wins on
	// Y. A seat is added to X (it still holds its own), then D1's claim lands 9 s after
	// it was sent: X's two seats go to the two users who come for them.
	t.Run("takeover with the old claim 9 s on the wire", func(t *testing.T) {
		t.Parallel()
		r := newRaceRig(t, 3, 3, 0)
		r.win("first", 0, asyncevent.OutcomeSucceeded)
		rID := r.submit("r", 0)
		claim, x := r.leasedClaimOnTheWire(rID)
		r.clock.Advance(time.Second)
		d2 := r.worker(refuseClaims{DynamoDB: asynceventtest.DynamoDB(t), match: r.claimOn(x)}, nil)
		require.Equal(t, asyncevent.OutcomeSucceeded, r.deliver(context.Background(), d2, rID, 2, asyncevent.ProcessOptions{}).Kind)
		require.Equal(t, otherShard(3, 0, x), r.seatShardOf(rID))
		r.addSeats(1, x)
		r.clock.Advance(8 * time.Second)
		r.landRefused("D1's claim on X", claim)
		r.win("u1", x, asyncevent.OutcomeSucceeded)
		r.win("u2", x, asyncevent.OutcomeSucceeded)
		r.win("u3", 0, asyncevent.OutcomeRejected)
		r.judgeRace(4)
	})

	// Run 7 with a seat added: A (7 s behind) starts R on X and runs a long handler; B
	// takes R over, closes X and wins on Y; a seat is added to X; A's handler returns
	// and, its lease live by its clock, A claims on X, which holds two seats.
	t.Run("workers 7 s apart", func(t *testing.T) {
		t.Parallel()
		r := newRaceRig(t, 3, 3, 0)
		r.win("first", 0, asyncevent.OutcomeSucceeded)
		rID := r.submit("r", 0)
		x, finishA := r.workersSevenSecondsApart(rID, asyncevent.OutcomeSucceeded)
		r.addSeats(1, x)
		finishA()
		r.win("u1", x, asyncevent.OutcomeSucceeded)
		r.win("u2", x, asyncevent.OutcomeSucceeded)
		r.win("u3", 0, asyncevent.OutcomeRejected)
		r.judgeRace(4)
	})

	// Run 4 with a seat added: two shards of one seat, shard 0 sold. R's claim on shard
	// 1 is cut off by its caller on the last receive and R ends FAILED_FINAL; a seat is
	// added to shard 1 (it holds its own); then the claim lands.
	t.Run("claim cut off by its caller", func(t *testing.T) {
		t.Parallel()
		r := newRaceRig(t, 2, 2, 0)
		r.win("first", 0, asyncevent.OutcomeSucceeded)
		rID := r.submit("r", 0)
		claim, res := r.cutOff(rID, r.claimOn(1))
		t.Logf("R's delivery, cut off: %s %s %v", res.Kind, res.ResultCode, res.Err)
		require.Equal(t, asyncevent.StatusFailedFinal, r.request(rID).Status)
		r.addSeats(1, 1)
		r.landRefused("R's claim on shard 1", claim)
		r.win("u1", 1, asyncevent.OutcomeSucceeded)
		r.win("u2", 1, asyncevent.OutcomeSucceeded)
		r.win("u3", 0, asyncevent.OutcomeRejected)
		r.judgeRace(3)
	})
}

// (a) AddCapacity after the sell-out, to the pool, while a pool claim is on the wire.
// Two shards of one seat, sold; a seat added to the pool goes to S. R, on a worker
// that has not met the pool dry, claims on the pool (now empty) and its claim is left
// on the wire. Another seat is added to the pool, and the claim lands: before R's
// next delivery (it takes the seat: R's own, bound by that delivery), after it (R won
// with its new claim: the old one meets its token), or after R was refused (the pool
// closed to R's claims at their epoch: U wins the seat).
func TestSeatDelaysRaceAddCapacityToThePool(t *testing.T) {
	t.Parallel()
	for _, order := range []string{"landing before the next delivery", "landing after the next delivery", "landing after the request was refused"} {
		t.Run(order, func(t *testing.T) {
			t.Parallel()
			r := newRaceRig(t, 2, 2, 0)
			r.win("early-0", 0, asyncevent.OutcomeSucceeded)
			r.win("early-1", 1, asyncevent.OutcomeSucceeded)
			r.addSeats(1, -1)
			r.win("s", 1, asyncevent.OutcomeSucceeded) // the pool's seat
			rID := r.submit("r", 0)
			claim := r.poolClaimOnTheWire(rID)
			switch order {
			case "landing before the next delivery":
				r.addSeats(1, -1)
				r.land("R's pool claim", claim)
				require.Equal(t, asyncevent.OutcomeSucceeded, r.work(rID).Kind)
				r.win("u", 0, asyncevent.OutcomeRejected)
			case "landing after the next delivery":
				r.addSeats(1, -1)
				require.Equal(t, asyncevent.OutcomeSucceeded, r.work(rID).Kind)
				r.landRefused("R's old pool claim", claim)
				r.win("u", 0, asyncevent.OutcomeRejected)
			default:
				require.Equal(t, asyncevent.OutcomeRejected, r.work(rID).Kind, "the pool is empty")
				r.addSeats(1, -1)
				r.landRefused("R's pool claim", claim)
				r.win("u", 0, asyncevent.OutcomeSucceeded)
			}
			r.judgeRace(4)
		})
	}
}

// (b) CancelRequest refilling the pool while a claim of a request that failed, was
// rejected, or was cancelled itself is on the wire, the claim landing after the
// cancel: the seat given back goes to the next user, never to that request.
func TestSeatDelaysRaceCancelRequest(t *testing.T) {
	t.Parallel()

	// Two shards of one seat, sold; one seat added to the pool. R claims it and its
	// claim is cut off by its caller on the last receive: R ends FAILED_FINAL (its
	// failure closes the pool to it first). A winner is cancelled, so the pool holds
	// two seats when R's claim lands.
	t.Run("failed request's pool claim cut off by its caller", func(t *testing.T) {
		t.Parallel()
		r := newRaceRig(t, 2, 2, 0)
		early := r.win("early-0", 0, asyncevent.OutcomeSucceeded)
		r.win("early-1", 1, asyncevent.OutcomeSucceeded)
		r.addSeats(1, -1)
		rID := r.submit("r", 0)
		claim, res := r.cutOff(rID, r.claimOn(-1))
		t.Logf("R's delivery, cut off: %s %s %v", res.Kind, res.ResultCode, res.Err)
		require.Equal(t, asyncevent.StatusFailedFinal, r.request(rID).Status)
		r.cancel(early)
		r.landRefused("R's pool claim", claim)
		r.win("u1", 0, asyncevent.OutcomeSucceeded)
		r.win("u2", 1, asyncevent.OutcomeSucceeded)
		r.win("u3", 0, asyncevent.OutcomeRejected)
		r.judgeRace(3)
	})

	// Two shards of two seats. R's home claim on shard 0 is cut off by its caller on
	// the last receive: with no lease, the delivery takes R over to fail it, closing
	// shard 0 to R first. A winner is cancelled; R's claim lands on shard 0, which
	// holds two seats.
	t.Run("failed request's home claim cut off by its caller", func(t *testing.T) {
		t.Parallel()
		r := newRaceRig(t, 4, 2, 0)
		early := r.win("early-1", 1, asyncevent.OutcomeSucceeded)
		rID := r.submit("r", 0)
		claim, res := r.cutOff(rID, r.claimOn(0))
		t.Logf("R's delivery, cut off: %s %s %v", res.Kind, res.ResultCode, res.Err)
		require.Equal(t, asyncevent.StatusFailedFinal, r.request(rID).Status)
		r.cancel(early)
		r.landRefused("R's home claim", claim)
		r.win("u1", 0, asyncevent.OutcomeSucceeded)
		r.win("u2", 0, asyncevent.OutcomeSucceeded)
		r.win("u3", 1, asyncevent.OutcomeSucceeded)
		r.win("u4", 0, asyncevent.OutcomeSucceeded) // the cancelled seat, on the pool
		r.win("u5", 1, asyncevent.OutcomeRejected)
		r.judgeRace(4)
	})

	// Two shards of one seat. R's home claim on shard 0 is on the wire; X takes shard
	// 0's seat, the event sells out, and R's next delivery rejects R (its home shard
	// empty without its token). X is cancelled; R's home claim lands; U wins X's seat.
	t.Run("rejected request's home claim", func(t *testing.T) {
		t.Parallel()
		r := newRaceRig(t, 2, 2, 0)
		r.win("early-1", 1, asyncevent.OutcomeSucceeded)
		rID := r.submit("r", 0)
		claim := r.homeClaimOnTheWire(rID)
		x := r.win("x", 0, asyncevent.OutcomeSucceeded)
		require.Equal(t, asyncevent.OutcomeRejected, r.work(rID).Kind)
		r.cancel(x)
		r.landRefused("R's home claim", claim)
		r.win("u", 0, asyncevent.OutcomeSucceeded)
		r.win("v", 1, asyncevent.OutcomeRejected)
		r.judgeRace(2)
	})

	// Two shards of one seat, sold; one seat added to the pool. R's first claim on the
	// pool is on the wire; R's next delivery wins the pool's seat; R is cancelled (its
	// seat back on the pool, its token still there); then R's old claim lands.
	t.Run("cancelled winner's own pool claim", func(t *testing.T) {
		t.Parallel()
		r := newRaceRig(t, 2, 2, 0)
		r.win("early-0", 0, asyncevent.OutcomeSucceeded)
		r.win("early-1", 1, asyncevent.OutcomeSucceeded)
		r.addSeats(1, -1)
		rID := r.submit("r", 0)
		claim := r.poolClaimOnTheWire(rID)
		require.Equal(t, asyncevent.OutcomeSucceeded, r.work(rID).Kind)
		r.cancel(rID)
		r.landRefused("R's first pool claim", claim)
		r.win("u", 0, asyncevent.OutcomeSucceeded)
		r.win("v", 1, asyncevent.OutcomeRejected)
		r.judgeRace(3)
	})

	// Two shards of one seat, sold; a seat added to the pool goes to S. D0 moves R to
	// the (empty) pool, its claim on the wire. A, its clock 7 s behind, takes R over at
	// the pool and runs a long handler; B (on time) takes R over once A's lease ran out
	// by B's clock, finds the pool empty, closes it to R and rejects R. A winner is
	// cancelled, D0's claim lands, and A's handler returns and A, its lease live by its
	// clock, claims on the pool: both claims meet a seat on the pool, and the fence.
	t.Run("workers 7 s apart and a takeover with the old pool claim on the wire", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		r := newRaceRig(t, 2, 2, 0)
		early := r.win("early-0", 0, asyncevent.OutcomeSucceeded)
		r.win("early-1", 1, asyncevent.OutcomeSucceeded)
		r.addSeats(1, -1)
		r.win("s", 1, asyncevent.OutcomeSucceeded)
		rID := r.submit("r", 0)
		claim := r.poolClaimOnTheWire(rID)

		r.clock.Advance(8 * time.Second) // A's clock, 7 s behind, is past D0's release
		slow, started, release := slowHandler()
		a := r.worker(asynceventtest.DynamoDB(t), asynceventtest.SkewedClock(r.clock.Now, -7*time.Second))
		aDone := r.async(ctx, a, rID, 2, asyncevent.ProcessOptions{Handler: slow, LeaseDuration: 30 * time.Second})
		<-started
		r.clock.Advance(23500 * time.Millisecond)
		b := r.worker(asynceventtest.DynamoDB(t), nil)
		require.Equal(t, asyncevent.OutcomeRejected, r.deliver(ctx, b, rID, 3, asyncevent.ProcessOptions{LeaseDuration: 30 * time.Second}).Kind)

		r.cancel(early)
		r.landRefused("D0's pool claim", claim)
		close(release)
		res := <-aDone
		t.Logf("A's delivery, its handler back: %s %v", res.Kind, res.Err)
		r.win("u", 0, asyncevent.OutcomeSucceeded)
		r.win("v", 1, asyncevent.OutcomeRejected)
		r.judgeRace(3)
	})
}

// holdEnding ends a HELD request's hold: released by its user, or run out (the run's
// clock moved past it, and the sweep run).
type holdEnding struct {
	name string
	end  func(r *delayRig, id string)
}

var holdEndings = []holdEnding{
	{"released", func(r *delayRig, id string) {
		r.t.Helper()
		r.release(id)
		require.Equal(r.t, asyncevent.ResultReleased, r.request(id).ResultCode)
	}},
	{"expired", func(r *delayRig, id string) {
		r.t.Helper()
		r.clock.Advance(asyncevent.MinHoldFor + time.Second)
		require.Positive(r.t, r.sweep().Expired)
		require.Equal(r.t, asyncevent.ResultHoldExpired, r.request(id).ResultCode)
	}},
}

// (c) An event with holds (HoldFor = MinHoldFor): a hold ends (Release, or its expiry
// by SweepHolds with the clock moved) while a claim of each run is on the wire, the
// claim landing after on a shard that holds a seat, and the waitlist served after.
// The seat given back is the Returns item's, for the waitlist: a late claim of the
// request whose hold ended must take nothing.
func TestSeatDelaysRaceHoldEnds(t *testing.T) {
	t.Parallel()
	for _, ending := range holdEndings {
		// Two shards of two seats. R's home claim on shard 0 is on the wire; R's next
		// delivery is refused on shard 0, closes it, and holds shard 1's seat. R's hold
		// ends; R's home claim lands on shard 0, which holds two seats.
		t.Run("late home claim/"+ending.name, func(t *testing.T) {
			t.Parallel()
			r := newRaceRig(t, 4, 2, asyncevent.MinHoldFor)
			rID := r.submit("r", 0)
			claim := r.homeClaimOnTheWire(rID)
			w := r.worker(refuseClaims{DynamoDB: asynceventtest.DynamoDB(t), match: r.claimOn(0)}, nil)
			require.Equal(t, asyncevent.OutcomeHeld, r.deliver(context.Background(), w, rID, 2, asyncevent.ProcessOptions{}).Kind)
			require.Equal(t, 1, r.seatShardOf(rID))
			ending.end(r, rID)
			r.landRefused("R's home claim", claim)
			r.win("u1", 0, asyncevent.OutcomeHeld)
			r.win("u2", 0, asyncevent.OutcomeHeld)
			r.win("u3", 1, asyncevent.OutcomeHeld)
			r.win("w", 0, asyncevent.OutcomeWaitlisted)
			require.Equal(t, 1, r.sweep().Served)
			r.judgeRace(4)
		})

		// Run 6 with holds: three shards of one seat, R's home held by "first". D1 starts
		// R on X, its claim on the wire; D2 takes R over, is refused on X, closes it and
		// holds Y's seat. R's hold ends (expired: first's too); D1's claim lands on X,
		// which holds its seat; U holds it; the waitlist gets the seats given back.
		t.Run("takeover with the old claim on the wire/"+ending.name, func(t *testing.T) {
			t.Parallel()
			r := newRaceRig(t, 3, 3, asyncevent.MinHoldFor)
			r.win("first", 0, asyncevent.OutcomeHeld)
			rID := r.submit("r", 0)
			claim, x := r.leasedClaimOnTheWire(rID)
			r.clock.Advance(time.Second)
			d2 := r.worker(refuseClaims{DynamoDB: asynceventtest.DynamoDB(t), match: r.claimOn(x)}, nil)
			require.Equal(t, asyncevent.OutcomeHeld, r.deliver(context.Background(), d2, rID, 2, asyncevent.ProcessOptions{}).Kind)
			require.Equal(t, otherShard(3, 0, x), r.seatShardOf(rID))
			ending.end(r, rID)
			r.landRefused("D1's claim on X", claim)
			r.win("u", x, asyncevent.OutcomeHeld)
			r.win("w1", 0, asyncevent.OutcomeWaitlisted)
			r.win("w2", x, asyncevent.OutcomeWaitlisted)
			r.sweep()
			r.judgeRace(3)
		})

		// Run 7 with holds: A (7 s behind) starts R on X and runs a long handler; B takes
		// R over, closes X and holds Y's seat. R's hold ends; A's handler returns and A
		// claims on X, which holds its seat. (first's hold has run out by now: the last
		// sweep ends it.)
		t.Run("workers 7 s apart/"+ending.name, func(t *testing.T) {
			t.Parallel()
			r := newRaceRig(t, 3, 3, asyncevent.MinHoldFor)
			r.win("first", 0, asyncevent.OutcomeHeld)
			rID := r.submit("r", 0)
			x, finishA := r.workersSevenSecondsApart(rID, asyncevent.OutcomeHeld)
			ending.end(r, rID)
			finishA()
			r.win("u", x, asyncevent.OutcomeHeld)
			r.win("w1", 0, asyncevent.OutcomeWaitlisted)
			r.win("w2", x, asyncevent.OutcomeWaitlisted)
			r.sweep()
			r.judgeRace(3)
		})

		// Run 4 with holds: two shards of one seat, "first" holds shard 0's. R's claim on
		// shard 1 is cut off by its caller on the last receive: R ends FAILED_FINAL.
		// first's hold ends, its seat given back; R's claim lands on shard 1, which holds
		// its seat; U holds it, W is waitlisted and served first's seat.
		t.Run("claim cut off by its caller/"+ending.name, func(t *testing.T) {
			t.Parallel()
			r := newRaceRig(t, 2, 2, asyncevent.MinHoldFor)
			first := r.win("first", 0, asyncevent.OutcomeHeld)
			rID := r.submit("r", 0)
			claim, res := r.cutOff(rID, r.claimOn(1))
			t.Logf("R's delivery, cut off: %s %s %v", res.Kind, res.ResultCode, res.Err)
			require.Equal(t, asyncevent.StatusFailedFinal, r.request(rID).Status)
			ending.end(r, first)
			r.landRefused("R's claim on shard 1", claim)
			r.win("u", 1, asyncevent.OutcomeHeld)
			r.win("w", 0, asyncevent.OutcomeWaitlisted)
			require.Equal(t, 1, r.sweep().Served)
			r.judgeRace(2)
		})
	}
}

// (c) The waitlist served while a late claim lands. Two shards of one seat, holds. W's
// home claim on shard 0 is on the wire (shard 0 holds a seat); X holds that seat, H
// shard 1's; W's next delivery waitlists W, and W2 after it. X releases. A sweeper's
// serve of W (one transaction: the Returns item's seat, W HELD, its Hold item) is held
// on the wire, its sweeper told the connection was reset. Then, in each order: W's
// late home claim lands, the held serve lands, a second sweep runs. W must hold one
// seat, from the Returns item; H's release then goes to W2.
func TestSeatDelaysRaceWaitlistServed(t *testing.T) {
	t.Parallel()
	orders := map[string][]string{
		"the late claim, the held serve, a second sweep": {"claim", "serve", "sweep"},
		"the held serve, the late claim, a second sweep": {"serve", "claim", "sweep"},
		"a second sweep, the held serve, the late claim": {"sweep", "serve", "claim"},
	}
	for name, steps := range orders {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newRaceRig(t, 2, 2, asyncevent.MinHoldFor)
			wID := r.submit("w", 0)
			claim := r.homeClaimOnTheWire(wID)
			x := r.win("x", 0, asyncevent.OutcomeHeld)
			h := r.win("h", 1, asyncevent.OutcomeHeld)
			require.Equal(t, asyncevent.OutcomeWaitlisted, r.work(wID).Kind)
			w2 := r.win("w2", 1, asyncevent.OutcomeWaitlisted)
			r.release(x)

			hb := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(t))
			serve := hb.Hold(asynceventtest.OnKey("TransactWriteItems", "EVENT#"+r.event+"#RETURNS", "ADD served"), 1, asynceventtest.CallerReset)
			_, err := r.worker(hb, nil).SweepHolds(context.Background(), r.event, asyncevent.HoldSweepOptions{})
			t.Logf("the sweep whose serve is on the wire: %v", err)
			require.Equal(t, 1, serve.Count(), "the sweep sent a serve")
			for _, step := range steps {
				switch step {
				case "claim":
					r.landRefused("W's home claim", claim)
				case "serve":
					if r.request(wID).Status != asyncevent.StatusWaitlisted {
						r.landRefused("the held serve, W served already", serve)
						break
					}
					landed := r.land("the held serve, W still waitlisted", serve)
					assert.True(t, landed[0].Applied, "the held serve of W, still waitlisted, takes the seat given back")
				case "sweep":
					r.sweep()
				}
			}
			require.Equal(t, asyncevent.StatusHeld, r.request(wID).Status, "W was served")
			r.release(h)
			require.Equal(t, 1, r.sweep().Served)
			require.Equal(t, asyncevent.StatusHeld, r.request(w2).Status)
			r.judgeRace(2)
		})
	}

	// Seats added after the sell-out, to the waitlist: two shards of one seat, holds;
	// "first" holds shard 0's. R's claim on shard 1 is cut off by its caller on the
	// last receive (R ends FAILED_FINAL); U holds shard 1's seat, W1 and W2 are
	// waitlisted. A seat is added (to the Returns item: every shard is empty) and
	// served to W1; R's claim lands; first releases and W2 is served.
	t.Run("seats added and served while a claim cut off by its caller lands", func(t *testing.T) {
		t.Parallel()
		r := newRaceRig(t, 2, 2, asyncevent.MinHoldFor)
		first := r.win("first", 0, asyncevent.OutcomeHeld)
		rID := r.submit("r", 0)
		claim, res := r.cutOff(rID, r.claimOn(1))
		t.Logf("R's delivery, cut off: %s %s %v", res.Kind, res.ResultCode, res.Err)
		require.Equal(t, asyncevent.StatusFailedFinal, r.request(rID).Status)
		r.win("u", 1, asyncevent.OutcomeHeld)
		w1 := r.win("w1", 0, asyncevent.OutcomeWaitlisted)
		w2 := r.win("w2", 1, asyncevent.OutcomeWaitlisted)
		r.addSeats(1, -1)
		require.Equal(t, 1, r.sweep().Served)
		require.Equal(t, asyncevent.StatusHeld, r.request(w1).Status)
		r.landRefused("R's claim on shard 1", claim)
		r.release(first)
		require.Equal(t, 1, r.sweep().Served)
		require.Equal(t, asyncevent.StatusHeld, r.request(w2).Status)
		r.judgeRace(3)
	})

	// Run 6's takeover, ending on the waitlist: two shards of one seat, "first" holds
	// R's home. D1 starts R on shard 1, its claim on the wire; U holds shard 1's seat
	// (the event sells out); D2 takes R over, finds shard 1 empty and waitlists R under
	// its lease. first releases, the sweep serves R, and D1's claim lands.
	t.Run("a takeover's old claim, the request waitlisted and served", func(t *testing.T) {
		t.Parallel()
		r := newRaceRig(t, 2, 2, asyncevent.MinHoldFor)
		first := r.win("first", 0, asyncevent.OutcomeHeld)
		rID := r.submit("r", 0)
		claim, x := r.leasedClaimOnTheWire(rID)
		r.win("u", x, asyncevent.OutcomeHeld)
		r.clock.Advance(time.Second)
		require.Equal(t, asyncevent.OutcomeWaitlisted, r.deliver(context.Background(), r.worker(asynceventtest.DynamoDB(t), nil), rID, 2, asyncevent.ProcessOptions{}).Kind)
		r.release(first)
		require.Equal(t, 1, r.sweep().Served)
		require.Equal(t, asyncevent.StatusHeld, r.request(rID).Status)
		r.landRefused("D1's claim on shard 1", claim)
		r.judgeRace(2)
	})
}

// (d) Clock skew in the hold sweep: a sweeper whose clock is ahead finds a hold run
// out that the confirming client, on time, still sees running, so both the expiry's
// condition and the confirm's hold, and only the request's status decides. Exactly one
// of them applies: SUCCEEDED, or the seat given back (and served to the waitlist),
// never both; SUCCEEDED + HELD ≤ capacity and every seat accounted for.
func TestSeatDelaysRaceSweeperAhead(t *testing.T) {
	t.Parallel()

	// One seat; R holds it, W is waitlisted; 1 s before R's hold runs out by the run's
	// clock. The sweeper, 3 s ahead, expires it: its expiry is held on the wire while
	// R confirms, then lands.
	t.Run("the confirm lands first", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		r := newRaceRig(t, 1, 1, asyncevent.MinHoldFor)
		rID := r.win("r", 0, asyncevent.OutcomeHeld)
		r.win("w", 0, asyncevent.OutcomeWaitlisted)
		r.clock.Advance(asyncevent.MinHoldFor - time.Second)

		hb := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(t))
		expiry := hb.Hold(onItem("TransactWriteItems", "REQ#"+rID, ""), 1, asynceventtest.CallerWaits)
		sweeper := r.worker(hb, asynceventtest.SkewedClock(r.clock.Now, 3*time.Second))
		swept := make(chan error, 1)
		go func() {
			rep, err := sweeper.SweepHolds(ctx, r.event, asyncevent.HoldSweepOptions{})
			if err == nil {
				t.Logf("the sweeper ahead: %d expired, %d served", rep.Expired, rep.Served)
			}
			swept <- err
		}()
		wait, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		require.NoError(t, expiry.Caught(wait), "the sweeper ahead expires R's hold")
		tr, err := r.c.Confirm(ctx, rID)
		require.NoError(t, err)
		require.True(t, tr.Applied, "the confirm, on time, before the hold ran out")
		r.landRefused("the sweeper's expiry", expiry)
		require.NoError(t, <-swept)
		r.sweep()
		require.Equal(t, asyncevent.StatusSucceeded, r.request(rID).Status)
		r.judgeRace(1)
	})

	// The same, the other way: R's confirm is held on the wire while the sweeper
	// ahead expires R's hold and serves W the seat; then the confirm lands.
	t.Run("the expiry lands first", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		r := newRaceRig(t, 1, 1, asyncevent.MinHoldFor)
		rID := r.win("r", 0, asyncevent.OutcomeHeld)
		wID := r.win("w", 0, asyncevent.OutcomeWaitlisted)
		r.clock.Advance(asyncevent.MinHoldFor - time.Second)

		hb := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(t))
		confirm := hb.Hold(onItem("TransactWriteItems", "REQ#"+rID, "holdExpiresAt > "), 1, asynceventtest.CallerWaits)
		payer := r.worker(hb, nil)
		confirmed := make(chan asyncevent.Transition, 1)
		go func() {
			tr, err := payer.Confirm(ctx, rID)
			assert.NoError(t, err)
			confirmed <- tr
		}()
		wait, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		require.NoError(t, confirm.Caught(wait), "R's confirm is sent")
		sweeper := r.worker(asynceventtest.DynamoDB(t), asynceventtest.SkewedClock(r.clock.Now, 3*time.Second))
		rep, err := sweeper.SweepHolds(ctx, r.event, asyncevent.HoldSweepOptions{})
		require.NoError(t, err)
		t.Logf("the sweeper ahead: %d expired, %d served", rep.Expired, rep.Served)
		require.Equal(t, 1, rep.Expired)
		r.landRefused("R's confirm", confirm)
		tr := <-confirmed
		require.False(t, tr.Applied)
		require.Equal(t, asyncevent.ResultHoldExpired, tr.Current.ResultCode)
		require.Equal(t, asyncevent.StatusHeld, r.request(wID).Status, "W was served R's seat")
		r.judgeRace(1)
	})

	// R's home claim wins and its Hold item is written, but the write that makes R
	// HELD is on the wire when a sweeper 15 s ahead (past the hold before it is even
	// taken) passes: it must leave the Hold item of a request not yet HELD. The bind
	// lands and W is waitlisted. Then the sweeper's next pass sends R's expiry and R
	// sends its confirm, both held on the wire until both are sent, and both land at
	// once.
	t.Run("a sweeper past the hold while its bind is on the wire", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		r := newRaceRig(t, 1, 1, asyncevent.MinHoldFor)
		rID := r.submit("r", 0)
		hb := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(t))
		bind := hb.Hold(onItem("UpdateItem", "REQ#"+rID, "holdExpiresAt"), 1, asynceventtest.CallerWaits)
		expiry := hb.Hold(onItem("TransactWriteItems", "REQ#"+rID, "holdExpiresAt <= "), 1, asynceventtest.CallerWaits)
		confirm := hb.Hold(onItem("TransactWriteItems", "REQ#"+rID, "holdExpiresAt > "), 1, asynceventtest.CallerWaits)
		done := r.async(ctx, r.worker(hb, nil), rID, 1, asyncevent.ProcessOptions{})
		caught, _ := caughtOrDone(t, bind, done)
		require.True(t, caught, "R's bind is sent")

		sweeper := r.worker(asynceventtest.DynamoDB(t), asynceventtest.SkewedClock(r.clock.Now, asyncevent.MinHoldFor+5*time.Second))
		rep, err := sweeper.SweepHolds(ctx, r.event, asyncevent.HoldSweepOptions{})
		require.NoError(t, err)
		t.Logf("the sweeper ahead, R not yet HELD: %d expired, %d cleared", rep.Expired, rep.Cleared)
		require.Zero(t, rep.Expired)
		r.land("R's bind", bind)
		require.Equal(t, asyncevent.OutcomeHeld, (<-done).Kind)
		wID := r.win("w", 0, asyncevent.OutcomeWaitlisted)

		sweeper = r.worker(hb, asynceventtest.SkewedClock(r.clock.Now, asyncevent.MinHoldFor+5*time.Second))
		var wg sync.WaitGroup
		var tr asyncevent.Transition
		var cerr error
		wg.Go(func() { tr, cerr = r.worker(hb, nil).Confirm(ctx, rID) })
		wg.Go(func() { rep, err = sweeper.SweepHolds(ctx, r.event, asyncevent.HoldSweepOptions{}) })
		wait, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		require.NoError(t, expiry.Caught(wait), "the sweeper ahead sends R's expiry")
		require.NoError(t, confirm.Caught(wait), "R's confirm is sent")
		var landing sync.WaitGroup
		for _, h := range []*asynceventtest.Held{expiry, confirm} {
			landing.Go(func() { assert.NoError(t, h.Land(ctx)) })
		}
		landing.Wait()
		wg.Wait()
		t.Logf("landed at once: the expiry %v, the confirm %v", expiry.Outcomes(), confirm.Outcomes())
		require.NoError(t, cerr)
		require.NoError(t, err)
		t.Logf("the confirm applied %v; the sweeper ahead expired %d, served %d", tr.Applied, rep.Expired, rep.Served)
		assert.NotEqual(t, tr.Applied, rep.Expired == 1, "exactly one of the confirm and the expiry applies")
		rep, err = sweeper.SweepHolds(ctx, r.event, asyncevent.HoldSweepOptions{})
		require.NoError(t, err)
		if tr.Applied {
			require.Equal(t, asyncevent.StatusWaitlisted, r.request(wID).Status)
		} else {
			require.Equal(t, asyncevent.StatusHeld, r.request(wID).Status, "W was served R's seat")
		}
		r.judgeRace(1)
	})

	// A burst: six holds, three waitlisted, 1 s before the holds run out by the run's
	// clock; two sweepers 3 s ahead and the six confirms, on time, all at once. Each
	// hold ends once; the seats given back go to the waitlist.
	t.Run("a burst of confirms against two sweepers ahead", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		r := newRaceRig(t, 6, 2, asyncevent.MinHoldFor)
		var held []string
		for i, u := range []string{"a", "b", "c", "d", "e", "f"} {
			held = append(held, r.win(u, i%2, asyncevent.OutcomeHeld))
		}
		for i, u := range []string{"w1", "w2", "w3"} {
			r.win(u, i%2, asyncevent.OutcomeWaitlisted)
		}
		r.clock.Advance(asyncevent.MinHoldFor - time.Second)

		var confirmed, expired atomic.Int64
		var wg sync.WaitGroup
		for _, id := range held {
			wg.Go(func() {
				tr, err := r.c.Confirm(ctx, id)
				if !assert.NoError(t, err) {
					return
				}
				if tr.Applied {
					confirmed.Add(1)
					return
				}
				assert.Equal(t, asyncevent.ResultHoldExpired, tr.Current.ResultCode, "a confirm that lost, lost to the expiry")
			})
		}
		sweepers := make([]*asyncevent.Client, 2)
		for i := range sweepers {
			sweepers[i] = r.worker(asynceventtest.DynamoDB(t), asynceventtest.SkewedClock(r.clock.Now, 3*time.Second))
			wg.Go(func() {
				rep, err := sweepers[i].SweepHolds(ctx, r.event, asyncevent.HoldSweepOptions{})
				if assert.NoError(t, err) {
					expired.Add(int64(rep.Expired))
				}
			})
		}
		wg.Wait()
		t.Logf("%d confirmed, %d expired", confirmed.Load(), expired.Load())
		require.Equal(t, int64(len(held)), confirmed.Load()+expired.Load(), "each hold ended once")
		rep, err := sweepers[0].SweepHolds(ctx, r.event, asyncevent.HoldSweepOptions{})
		require.NoError(t, err)
		require.Zero(t, rep.Expired)
		r.judgeRace(int(confirmed.Load() + min(expired.Load(), 3)))
	})
}
