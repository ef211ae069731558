package asyncevent_test

// Review 39b of issue 39's seat rules (docs/design.md, "The seat claim";
// DESIGN.md invariant 4): schedules of delays that break exactly N, each judged from
// a raw consistent Scan (judgeSeats).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// reviewOrder is the library's claimOrder: the order in which a request tries n
// capacity shards (FNV-64a of its ID seeds a permutation; its home shard first).
func reviewOrder(id string, n int) []int {
	h := fnv.New64a()
	h.Write([]byte(id))
	order := rand.New(rand.NewPCG(h.Sum64(), 0)).Perm(n)
	first := slices.Index(order, delayHome(id, n))
	order[0], order[first] = order[first], order[0]
	return order
}

// submitOrdered is submit for a request whose claim order over the rig's shards is
// order exactly.
func (r *delayRig) submitOrdered(user string, order []int) string {
	r.t.Helper()
	id := user
	for i := 0; !slices.Equal(reviewOrder(id, r.shards), order); i++ {
		id = fmt.Sprintf("%s-%d", user, i)
	}
	return r.submitAs(user, id)
}

// firstAttemptLate sits beneath the SDK (its HTTP client): the first call that
// match picks is kept on the wire and its caller told the connection was reset, so
// the SDK's retryer sends the call again, and that attempt goes through. The first
// attempt lands when the test says (Land): a request that reached DynamoDB after the
// SDK gave up on it and its retry was answered, as a slow network does.
type firstAttemptLate struct {
	next  dynamodb.HTTPClient
	match func(target string, body []byte) bool

	mu     sync.Mutex
	held   *http.Request
	caught bool
}

func (f *firstAttemptLate) Do(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	f.mu.Lock()
	catch := !f.caught && f.match(req.Header.Get("X-Amz-Target"), body)
	if catch {
		f.caught = true
		held := req.Clone(context.Background())
		held.Body = io.NopCloser(bytes.NewReader(body))
		held.ContentLength = int64(len(body))
		held.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		f.held = held
	}
	f.mu.Unlock()
	if catch {
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer (the attempt is still on the wire)")}
	}
	return f.next.Do(req)
}

// Land sends the attempt kept on the wire, and returns DynamoDB's status code and
// answer to it.
func (f *firstAttemptLate) Land(t *testing.T) (int, string) {
	t.Helper()
	f.mu.Lock()
	held := f.held
	f.held = nil
	f.mu.Unlock()
	require.NotNil(t, held, "no attempt was kept on the wire")
	resp, err := f.next.Do(held)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// lateFirstAttemptClient returns a client of the test's DynamoDB Local whose HTTP
// calls go through f, with the SDK's standard retryer (fast backoff, no quota).
func lateFirstAttemptClient(t *testing.T, f *firstAttemptLate) *dynamodb.Client {
	base := asynceventtest.DynamoDB(t)
	return dynamodb.New(base.Options(), func(o *dynamodb.Options) {
		f.next = o.HTTPClient
		if f.next == nil {
			f.next = awshttp.NewBuildableClient()
		}
		o.HTTPClient = f
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.RateLimiter = ratelimit.None
			so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 5 * time.Millisecond, nil })
		})
	})
}

// either matches what a or b matches.
func either(a, b asynceventtest.Match) asynceventtest.Match {
	return func(op string, in any) bool { return a(op, in) || b(op, in) }
}

// R1. A move's first attempt lands after a later move of the same lease: the
// request's claim place rolls back, and a claim at the later place is left unfenced.
//
// moveSeat ("first-come seat moved") is conditioned on the lease alone (status =
// PROCESSING AND leaseOwner = owner), not on the epoch it moves from. Its write is
// sent with the SDK's retries, so a first attempt still on the wire when the SDK
// gave up and its retry was answered can land after the delivery's next move.
//
// Shards 0, 1, 2 of one seat each; R's home is 0 and its order 0, 1, 2. Worker A
// (no Handler, new to the event) is refused for throughput on shards 0 and 1. A's
// home claim is refused; A starts R at 0@0, is refused, closes 0@0 and moves R to
// 1@1: the move's first attempt stays on the wire, the SDK's retry applies. A is
// refused on 1 (its own definite refusals: no close) and moves R to 2@2; A's claim
// at 2@2 is sent and stays on the wire (A told the connection was reset): A gives
// the message back and releases its lease. Then the move to 1@1's first attempt
// lands: its condition (PROCESSING, leaseOwner A) holds, and R's seatShard and
// seatEpoch go back to 1@1. Worker B takes R over at 1@1 and wins shard 1's seat.
// A's claim at 2@2 lands: shard 2 was never closed to R at epoch 2 (B never went
// there), so it takes the seat: R holds two seats, and a later user is refused.
func TestReview39bStaleMoveRollsTheClaimBack(t *testing.T) {
	r := newDelayRig(t, 3, 3)
	id := r.submitOrdered("r", []int{0, 1, 2})

	late := &firstAttemptLate{match: func(target string, body []byte) bool {
		s := string(body)
		return strings.HasSuffix(target, ".UpdateItem") && strings.Contains(s, "REQ#"+id) &&
			strings.Contains(s, "seatEpoch") && !strings.Contains(s, "if_not_exists")
	}}
	hb := asynceventtest.NewHoldBack(lateFirstAttemptClient(t, late))
	claim2 := hb.Hold(r.claimOn(2), 0, asynceventtest.CallerReset)
	a := r.worker(refuseClaims{DynamoDB: hb, match: either(r.claimOn(0), r.claimOn(1))}, nil)
	res := r.deliver(context.Background(), a, id, 1, asyncevent.ProcessOptions{})
	claim2.Stop()
	require.True(t, res.Redeliver, "A's claim on shard 2 was left unanswered: the message comes back")
	require.Equal(t, 1, claim2.Count(), "A's claim at shard 2 is on the wire")
	require.Equal(t, 2, r.seatShardOf(id), "A moved R to shard 2")

	status, answer := late.Land(t)
	t.Logf("the move to shard 1's first attempt landed: %d %s", status, answer)
	t.Logf("R's seatShard now %d (epoch %d)", r.seatShardOf(id), r.request(id).SeatEpoch)

	r.clock.Advance(time.Minute)
	b := r.work(id)
	t.Logf("B: %s", b.Kind)

	r.land("A's claim at shard 2", claim2)

	for i, home := range []int{0, 1, 2} {
		u := r.submit(fmt.Sprintf("u%d", i), home)
		r.work(u)
	}
	rep := judgeSeats(t, r.c, r.event)
	if rep.succeeded != 3 {
		t.Errorf("%d SUCCEEDED for 3 seats and 4 users: want 3", rep.succeeded)
	}
	asynceventtest.CheckEvent(t, r.c, r.event, asynceventtest.CheckOptions{})
}

// R2. A request whose put never landed was written by its message's last receive
// only: when that one delivery died on the write, the message went to the
// dead-letter queue and the seat stayed spent on a request that does not exist.
// Now the first receive that finds its seat and no request writes the request from
// the message: here the first receive's worker dies on that write (its writes on the
// request cut, never landing), and the second receive writes it and wins. The user,
// told their click failed, does not click again; the next user is refused.
func TestReview39bLastReceiveLostLeavesTheSeatOnNobody(t *testing.T) {
	ctx := context.Background()
	r := newReviewRig(t, 1, 1, 0, 10*time.Minute)
	const id = "r"
	ds := []queue.Delivery{r.submitPutLost(id, "r")}

	// The first receive: its worker dies on the write of the request.
	dying := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(t))
	write := dying.Hold(asynceventtest.OnKey("TransactWriteItems", "REQ#"+id, ""), 0, asynceventtest.CallerReset)
	d := ds[0]
	d.ReceiveCount = 1
	res := asynceventtest.WorkDelivery(ctx, t, r.worker(dying, nil), d, asyncevent.ProcessOptions{})
	t.Logf("receive 1: %s %v (message done: %t); %d writes on the request cut", res.Kind, res.Err, !res.Redeliver, write.Count())
	require.True(t, res.Redeliver, "a delivery whose writes were cut comes back")
	r.clock.Advance(time.Minute)

	d.ReceiveCount = 2
	res = asynceventtest.WorkDelivery(ctx, t, r.worker(asynceventtest.DynamoDB(t), nil), d, asyncevent.ProcessOptions{})
	t.Logf("receive 2: %s %v", res.Kind, res.Err)
	assert.Equal(t, asyncevent.OutcomeSucceeded, res.Kind, "the second receive writes the request from its message and wins")

	u := r.submit("u2", 0)
	r.work(u)
	rep := judgeSeats(t, r.c, r.event)
	if rep.succeeded != 1 {
		t.Errorf("%d SUCCEEDED for 1 seat and 2 users: want 1", rep.succeeded)
	}
	asynceventtest.CheckEvent(t, r.c, r.event, asynceventtest.CheckOptions{})
}
