// Scenario suite: exactly N whatever the delays (issue 39; docs/design.md, invariant
// 4). It plays runs in which a write lands long after its sender gave up, a lease is
// taken over while the old holder's claim is on the wire, a request's put or a
// send's answer is lost, and two workers' clocks disagree, and proves that no seat
// is sold twice, held twice or spent on nobody. Writes are held back with
// asynceventtest.HoldBack and landed when the run needs them; time moves on the
// test's clocks (each worker a Client of its own on the one table, with its own
// cache, clock and wrapper), so no run sleeps through a fence. Each run is judged
// from a strongly consistent Scan of the table (judgeSeats): SUCCEEDED + HELD ≤
// capacity, every seat taken accounted for, no request holding two seats, none
// rejected or failed while its token holds one.

package asyncevent_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
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

// delayRig is one run's table and event, its test clock, and the messages ingest sent
// for its requests.
type delayRig struct {
	t      *testing.T
	clock  *asynceventtest.Clock
	c      *asyncevent.Client // ingest and the checks: never held back
	event  string
	shards int

	mu     sync.Mutex
	nextID string
	bodies map[string][]byte // request ID → its message
}

// newDelayRig makes a FIRST_COME event of capacity seats on shards capacity shards.
func newDelayRig(t *testing.T, capacity int64, shards int) *delayRig {
	t.Helper()
	return newDelayRigWith(t, capacity, shards, 0, 0)
}

// newDelayRigWith is newDelayRig for an event with holds of holdFor (0: none) and an
// end endsIn after t0 (0: none).
func newDelayRigWith(t *testing.T, capacity int64, shards int, holdFor, endsIn time.Duration) *delayRig {
	t.Helper()
	r := &delayRig{t: t, clock: asynceventtest.NewClock(t0), event: "late", shards: max(shards, 1), bodies: map[string][]byte{}}
	r.c = asynceventtest.NewTableWith(t, asyncevent.Options{Clock: r.clock.Now, ProgressEvery: -1, NewRequestID: func() string {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.nextID
	}})
	cfg := asyncevent.EventSettings{EventID: r.event, EventType: asyncevent.FirstCome, CapacityTotal: capacity, CapacityShards: shards, HoldFor: holdFor}
	if endsIn > 0 {
		cfg.EndsAt = asyncevent.MillisOf(t0.Add(endsIn))
	} else if holdFor > 0 {
		cfg.EndsAt = asyncevent.MillisOf(t0.Add(365 * 24 * time.Hour))
	}
	_, err := r.c.CreateEvent(context.Background(), cfg)
	require.NoError(t, err)
	return r
}

// delayHome is the library's shardOf: FNV-32a of the request ID, mod n.
func delayHome(id string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % uint32(n))
}

// submit makes user's click, its request ID chosen so that its home shard is home,
// and returns the request ID. The message ingest sent is kept for deliver.
func (r *delayRig) submit(user string, home int) string {
	r.t.Helper()
	id := user
	for i := 0; delayHome(id, r.shards) != home; i++ {
		id = fmt.Sprintf("%s-%d", user, i)
	}
	return r.submitAs(user, id)
}

// submitAs makes user's click under request ID id, keeps the message ingest sent for
// deliver, and returns id.
func (r *delayRig) submitAs(user, id string) string {
	r.t.Helper()
	r.mu.Lock()
	r.nextID = id
	r.mu.Unlock()
	q := queue.NewMemory(queue.MemoryOptions{})
	p, err := r.c.Submit(context.Background(), q, r.event, user)
	require.NoError(r.t, err)
	require.Equal(r.t, id, p.RequestID)
	ds, err := q.Receive(context.Background(), 1, 0, time.Minute)
	require.NoError(r.t, err)
	require.Len(r.t, ds, 1)
	r.mu.Lock()
	r.bodies[id] = ds[0].Body
	r.mu.Unlock()
	r.clock.Advance(time.Millisecond)
	return id
}

// worker is a worker process: a Client of its own on the run's table (its own cache
// of configs: new to the event), through db, on clock (the run's clock when nil).
func (r *delayRig) worker(db asyncevent.DynamoDB, clock func() time.Time) *asyncevent.Client {
	r.t.Helper()
	if clock == nil {
		clock = r.clock.Now
	}
	c, err := asyncevent.New(db, asyncevent.Options{TableName: r.c.TableName(), Clock: clock, ProgressEvery: -1})
	require.NoError(r.t, err)
	return c
}

// deliver runs one delivery of the request's message (its receive-th) on worker c.
func (r *delayRig) deliver(ctx context.Context, c *asyncevent.Client, id string, receive int, opts asyncevent.ProcessOptions) asynceventtest.WorkResult {
	r.t.Helper()
	r.mu.Lock()
	body := r.bodies[id]
	r.mu.Unlock()
	res := asynceventtest.WorkDelivery(ctx, r.t, c, queue.Delivery{Body: body, ReceiveCount: receive}, opts)
	r.t.Logf("%s, receive %d: %s %s %v", id, receive, res.Kind, res.ResultCode, res.Err)
	return res
}

// work delivers the request's message on a clean worker without a Handler until it
// is done (a new delivery each time, the clock moved past any lease between them).
func (r *delayRig) work(id string) asynceventtest.WorkResult {
	r.t.Helper()
	return r.workWith(id, asyncevent.ProcessOptions{})
}

// takeOver is work for a request an earlier delivery started and left: its worker's
// Handler moves the clock past the fence today's code counts from a takeover's start
// (5 s), where it would otherwise sleep.
func (r *delayRig) takeOver(id string) asynceventtest.WorkResult {
	r.t.Helper()
	return r.workWith(id, asyncevent.ProcessOptions{Handler: r.advancing(6 * time.Second)})
}

func (r *delayRig) workWith(id string, opts asyncevent.ProcessOptions) asynceventtest.WorkResult {
	r.t.Helper()
	c := r.worker(asynceventtest.DynamoDB(r.t), nil)
	var res asynceventtest.WorkResult
	for receive := 1; receive <= asyncevent.DefaultMaxReceives; receive++ {
		if res = r.deliver(context.Background(), c, id, receive, opts); !res.Redeliver {
			break
		}
		r.clock.Advance(time.Minute)
	}
	return res
}

// claimOn matches a seat claim on a capacity shard (shard ≥ 0) or on the event's
// pool (shard < 0): the write that takes a seat and records the request's token with
// it.
func (r *delayRig) claimOn(shard int) asynceventtest.Match {
	pk := fmt.Sprintf("EVENT#%s#CAPACITY#%d", r.event, shard)
	switch {
	case shard < 0:
		pk = "EVENT#" + r.event + "#RETURNS"
	case r.shards == 1:
		pk = "EVENT#" + r.event
	}
	claim := asynceventtest.OnKey("UpdateItem", pk, "ADD holders")
	return func(op string, in any) bool {
		u, ok := in.(*dynamodb.UpdateItemInput)
		return ok && claim(op, in) && delayPK(u) == pk // not shard 10 for shard 1
	}
}

func delayPK(u *dynamodb.UpdateItemInput) string {
	if pk, ok := u.Key["PK"].(*types.AttributeValueMemberS); ok {
		return pk.Value
	}
	return ""
}

// listing matches the write that lists a shard "left" on the event's config (today's
// code writes it when a claim leaves its home shard for throughput; a design without
// it makes none, and a rule on it then catches nothing).
func (r *delayRig) listing() asynceventtest.Match {
	return asynceventtest.OnKey("UpdateItem", "EVENT#"+r.event, "leftShards")
}

// giveBackOn matches a write that takes a request's token off a capacity shard and
// puts its seat back (today's "first-come seat given back").
func (r *delayRig) giveBackOn(shard int) asynceventtest.Match {
	return asynceventtest.OnKey("UpdateItem", fmt.Sprintf("EVENT#%s#CAPACITY#%d", r.event, shard), "DELETE holders")
}

// refuseClaims answers ProvisionedThroughputExceeded to the seat claims match picks
// (a shard over its share for this worker); every other call goes through, so a
// write that closes the shard, or reads it, is answered.
type refuseClaims struct {
	asyncevent.DynamoDB
	match asynceventtest.Match
}

func (f refuseClaims) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if f.match("UpdateItem", in) {
		return nil, &types.ProvisionedThroughputExceededException{Message: aws.String("refused: the shard is over its share")}
	}
	return f.DynamoDB.UpdateItem(ctx, in, o...)
}

// async runs a delivery in the background; its result comes on the channel.
func (r *delayRig) async(ctx context.Context, c *asyncevent.Client, id string, receive int, opts asyncevent.ProcessOptions) <-chan asynceventtest.WorkResult {
	done := make(chan asynceventtest.WorkResult, 1)
	go func() { done <- r.deliver(ctx, c, id, receive, opts) }()
	return done
}

// caughtOrDone waits until h has caught a write, or the delivery whose result comes
// on done has ended without making one (a design that makes no such write). It
// reports whether the write was caught; res is the delivery's result when it ended.
func caughtOrDone(t *testing.T, h *asynceventtest.Held, done <-chan asynceventtest.WorkResult) (caught bool, res *asynceventtest.WorkResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	caughtc := make(chan error, 1)
	go func() { caughtc <- h.Caught(ctx) }()
	select {
	case err := <-caughtc:
		require.NoError(t, err, "the delivery neither made the write nor ended")
		return true, nil
	case r := <-done:
		return false, &r
	}
}

// advancing is a Handler that moves the run's clock on by d: a handler that takes
// that long. A takeover's delivery runs it between its start and its claim, so that
// a fence counted from the start (today's claim fence, 5 s) has passed when the claim
// decides, instead of the test sleeping through it.
func (r *delayRig) advancing(d time.Duration) asyncevent.Handler {
	return asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error {
		r.clock.Advance(d)
		return nil
	})
}

// seatsReport is a run's seats as a Scan of its table shows them.
type seatsReport struct {
	capacity             int64 // the event's capacityTotal
	succeeded, held      int
	byCode               map[asyncevent.ResultCode]int
	fromShards, fromPool int64 // seats taken
	owners               int   // SUCCEEDED, HELD, and the requests whose seat went to the pool
}

func (s seatsReport) String() string {
	return fmt.Sprintf("capacity %d: %d SUCCEEDED + %d HELD; seats taken %d from the shards + %d from the pool, %d owners; results %v",
		s.capacity, s.succeeded, s.held, s.fromShards, s.fromPool, s.owners, s.byCode)
}

// judgeSeats reads the whole table strongly consistently and holds the event to
// exactly N (t.Errorf for each breach): SUCCEEDED + HELD ≤ capacity; the seats taken
// from the shards (capacityTotal − capacityRemaining) and from the pool (seats put
// there less those left) are the requests that own one (SUCCEEDED, HELD, and those
// cancelled or released from a hold, whose seat went to the pool); no request's token on two
// capacity items; no REJECTED (but cancelled or released) or FAILED_FINAL request
// whose token is among an item's holders; every winner's token somewhere (but those
// served from the waitlist, whose seat is the pool's); as many tokens on each item as
// seats taken from it.
func judgeSeats(t *testing.T, c *asyncevent.Client, eventID string) seatsReport {
	t.Helper()
	rep := seatsReport{byCode: map[asyncevent.ResultCode]int{}}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("exactly N: "+format, args...)
	}
	type place struct {
		name    string
		taken   int64
		holders []string
		served  int64
	}
	var places []place
	var reqs []asyncevent.Request
	for _, raw := range asynceventtest.ScanTable(t, c.TableName()) {
		var head struct {
			PK         string      `dynamodbav:"PK"`
			EntityType entity.Type `dynamodbav:"entityType"`
			EventID    string      `dynamodbav:"eventId"`
		}
		require.NoError(t, attributevalue.UnmarshalMap(raw, &head))
		if head.EventID != eventID {
			continue
		}
		var item struct {
			CapacityTotal     int64    `dynamodbav:"capacityTotal"`
			CapacityRemaining int64    `dynamodbav:"capacityRemaining"`
			Holders           []string `dynamodbav:"holders,stringset"`
			Added             int64    `dynamodbav:"added"`
			Cancelled         int64    `dynamodbav:"cancelled"`
			Returned          int64    `dynamodbav:"returned"`
			Served            int64    `dynamodbav:"served"`
		}
		require.NoError(t, attributevalue.UnmarshalMap(raw, &item))
		switch head.EntityType {
		case entity.Config:
			rep.capacity = item.CapacityTotal
		case entity.Capacity:
			taken := item.CapacityTotal - item.CapacityRemaining
			rep.fromShards += taken
			places = append(places, place{name: head.PK, taken: taken, holders: item.Holders})
		case entity.Returns:
			taken := item.Added + item.Cancelled + item.Returned - item.CapacityRemaining
			rep.fromPool += taken
			places = append(places, place{name: head.PK, taken: taken, holders: item.Holders, served: item.Served})
		case entity.Request:
			var r asyncevent.Request
			require.NoError(t, attributevalue.UnmarshalMap(raw, &r))
			reqs = append(reqs, r)
		}
	}
	tokens := map[string][]string{}          // request ID → the items holding its token
	owner := map[string]asyncevent.Request{} // seat token → request
	for _, r := range reqs {
		owner[delayToken(r.RequestID)] = r
	}
	for _, p := range places {
		if int64(len(p.holders)) != p.taken-p.served {
			fail("%s: %d seats taken (%d served from the waitlist), %d seat tokens", p.name, p.taken, p.served, len(p.holders))
		}
		for _, tok := range p.holders {
			r, ok := owner[tok]
			if !ok {
				fail("%s: seat token %s is no request's: a seat spent on nobody", p.name, tok)
				continue
			}
			tokens[r.RequestID] = append(tokens[r.RequestID], p.name)
		}
	}
	for _, r := range reqs {
		if r.ResultCode != "" {
			rep.byCode[r.ResultCode]++
		}
		gaveBack := r.Status == asyncevent.StatusRejected && (r.ResultCode == asyncevent.ResultCancelled ||
			r.ResultCode == asyncevent.ResultHoldExpired || r.ResultCode == asyncevent.ResultReleased && r.HoldExpiresAt != 0)
		switch {
		case r.Status == asyncevent.StatusSucceeded:
			rep.succeeded++
		case r.Status == asyncevent.StatusHeld:
			rep.held++
		}
		won := r.Status == asyncevent.StatusSucceeded || r.Status == asyncevent.StatusHeld
		if won || gaveBack {
			rep.owners++
		}
		at := tokens[r.RequestID]
		switch {
		case len(at) > 1:
			fail("request %s (%s %s) holds a seat on %d items: %v", r.RequestID, r.Status, r.ResultCode, len(at), at)
		case len(at) > 0 && !won && !gaveBack:
			fail("request %s is %s %s while its token holds a seat on %s", r.RequestID, r.Status, r.ResultCode, at[0])
		case len(at) == 0 && won && r.ServedAt == 0:
			fail("request %s is %s with no seat token anywhere", r.RequestID, r.Status)
		}
	}
	if won := rep.succeeded + rep.held; int64(won) > rep.capacity {
		fail("%d SUCCEEDED + %d HELD for %d seats: oversold", rep.succeeded, rep.held, rep.capacity)
	}
	if taken := rep.fromShards + rep.fromPool; taken != int64(rep.owners) {
		fail("%d seats taken (%d from the shards, %d from the pool), %d requests own one", taken, rep.fromShards, rep.fromPool, rep.owners)
	}
	t.Logf("judged: %s", rep)
	return rep
}

// delayToken is the library's seat token of a request: 8 bytes of SHA-256 of
// "seat\x00" and its ID, base64.
func delayToken(requestID string) string {
	sum := sha256.Sum256([]byte("seat\x00" + requestID))
	return base64.RawStdEncoding.EncodeToString(sum[:8])
}

// listHomeLeftSlowly is the start of runs 1, 2 and 5: request lister (home shard 0) is
// refused on its home shard for throughput by its worker's share, so its claim moves
// on; the write that lists shard 0 "left" on the event's config is stamped now and
// held on the wire (its worker told the connection was reset). It returns the held
// listing, to be landed when the run says (a design that lists nothing makes no such
// write: the rule catches none, and landing it does nothing).
func (r *delayRig) listHomeLeftSlowly(lister string) *asynceventtest.Held {
	r.t.Helper()
	hb := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(r.t))
	listing := hb.Hold(r.listing(), 0, asynceventtest.CallerReset)
	w := r.worker(refuseClaims{DynamoDB: hb, match: r.claimOn(0)}, nil)
	r.deliver(context.Background(), w, lister, 1, asyncevent.ProcessOptions{})
	listing.Stop()
	r.t.Logf("the listing of shard 0 on the wire: %d writes", listing.Count())
	return listing
}

// homeClaimOnTheWire delivers id's message on a worker new to the event, without a
// Handler: its claim on the home shard (0) is sent and held on the wire, its worker
// told the connection was reset. It returns the held claim.
func (r *delayRig) homeClaimOnTheWire(id string) *asynceventtest.Held {
	r.t.Helper()
	hb := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(r.t))
	claim := hb.Hold(r.claimOn(0), 0, asynceventtest.CallerReset)
	r.deliver(context.Background(), r.worker(hb, nil), id, 1, asyncevent.ProcessOptions{})
	claim.Stop()
	r.t.Logf("%s's home claims on the wire: %d", id, claim.Count())
	return claim
}

// otherShard returns the shard of n that is neither a nor b.
func otherShard(n, a, b int) int {
	for s := range n {
		if s != a && s != b {
			return s
		}
	}
	return -1
}

// seatShardOf reads a request's seatShard (-1: none).
func (r *delayRig) seatShardOf(id string) int {
	r.t.Helper()
	req, err := asyncevent.ReadStoredRequest(context.Background(), r.c, id)
	require.NoError(r.t, err)
	if req.SeatShard == nil {
		return -1
	}
	return *req.SeatShard
}

// Run 1: an oversale through the gap between a listing's stamp and its landing, every
// write within the old 5 s assumption. Shards 0 and 1 of two seats. At T, L's worker
// lists shard 0 left (stamped T; the write is slow and lands at T+4.9 s). At T+4.8 s
// R's first delivery reads the config (no listing yet) and sends its home claim on
// shard 0, which is slow too. Shard 1 sells out to x1 and x2. At T+10.5 s R's next
// delivery (M) reads the listing, waits for nothing (T + 10 s has passed), passes
// shard 0 over, reads it (no token), moves R to shard 1 and claims there (slow). R's
// home claim lands on shard 0 (within 5 s of its config copy's 5 s). A worker new to
// the event (N) gets a third delivery of R, finds R's token on shard 0, fails to bind
// it (R is PROCESSING on shard 1) and gives the seat back (slow). M's claim on shard 1
// is answered (empty): M comes back to shard 0, meets the token and ends R SUCCEEDED.
// N's give-back lands. Then L and two more users come: four seats, six users, four
// winners, each with its token.
func TestSeatDelaysOversaleThroughTheListingGap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newDelayRig(t, 4, 2)
	lister, rID := r.submit("l", 0), r.submit("r", 0)

	listing := r.listHomeLeftSlowly(lister)
	r.clock.Advance(4800 * time.Millisecond)
	claim := r.homeClaimOnTheWire(rID)
	r.clock.Advance(100 * time.Millisecond)
	require.NoError(t, listing.Land(ctx))
	t.Logf("the listing landed: %v", listing.Outcomes())
	r.work(r.submit("x1", 1))
	r.work(r.submit("x2", 1))

	r.clock.Advance(5600 * time.Millisecond)
	mdb := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(t))
	mClaim := mdb.Hold(r.claimOn(1), 1, asynceventtest.CallerWaits)
	mDone := r.async(ctx, r.worker(mdb, nil), rID, 2, asyncevent.ProcessOptions{})
	mHeld, _ := caughtOrDone(t, mClaim, mDone)
	require.NoError(t, claim.Land(ctx))
	t.Logf("M's claim on shard 1 on the wire: %v; R's home claim, landed: %v", mHeld, claim.Outcomes())

	ndb := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(t))
	giveBack := ndb.Hold(r.giveBackOn(0), 1, asynceventtest.CallerWaits)
	nDone := r.async(ctx, r.worker(ndb, nil), rID, 3, asyncevent.ProcessOptions{})
	nHeld, nRes := caughtOrDone(t, giveBack, nDone)
	t.Logf("N's give-back on the wire: %v", nHeld)
	require.NoError(t, mClaim.Land(ctx))
	if mHeld {
		<-mDone
	}
	require.NoError(t, giveBack.Land(ctx))
	if nRes == nil {
		<-nDone
	}
	t.Logf("M's claim on shard 1: %v; N's give-back: %v", mClaim.Outcomes(), giveBack.Outcomes())

	r.takeOver(lister)
	r.work(r.submit("u1", 0))
	r.work(r.submit("u2", 0))
	rep := judgeSeats(t, r.c, r.event)
	if rep.succeeded != 4 {
		t.Errorf("4 seats, 6 users came: %d SUCCEEDED", rep.succeeded)
	}
	asynceventtest.CheckEvent(t, r.c, r.event, asynceventtest.CheckOptions{})
}

// Run 2: two seats for one request, through the same gap. Shards 0 and 1 of two
// seats; "first" holds one of shard 0's. L lists shard 0 left at T (landing at
// T+4.9 s); R's first delivery reads the config at T+4.8 s and sends its home claim on
// shard 0 (slow). At T+10.5 s R's next delivery reads the listing, reads shard 0 (no
// token), moves R to shard 1 and wins there. Then the home claim lands on shard 0's
// last seat. R must hold one seat, and the four seats go to the four users.
func TestSeatDelaysTwoSeatsThroughTheListingGap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newDelayRig(t, 4, 2)
	r.work(r.submit("first", 0))
	lister, rID := r.submit("l", 0), r.submit("r", 0)

	listing := r.listHomeLeftSlowly(lister)
	r.clock.Advance(4800 * time.Millisecond)
	claim := r.homeClaimOnTheWire(rID)
	r.clock.Advance(100 * time.Millisecond)
	require.NoError(t, listing.Land(ctx))
	t.Logf("the listing landed: %v", listing.Outcomes())

	r.clock.Advance(5600 * time.Millisecond)
	r.deliver(ctx, r.worker(asynceventtest.DynamoDB(t), nil), rID, 2, asyncevent.ProcessOptions{})
	r.clock.Advance(100 * time.Millisecond)
	require.NoError(t, claim.Land(ctx))
	t.Logf("R's home claim, landed: %v", claim.Outcomes())

	r.takeOver(lister)
	r.work(r.submit("u", 0))
	rep := judgeSeats(t, r.c, r.event)
	if rep.succeeded != 4 {
		t.Errorf("4 seats, 4 users came: %d SUCCEEDED", rep.succeeded)
	}
	asynceventtest.CheckEvent(t, r.c, r.event, asynceventtest.CheckOptions{})
}

// Run 3: the pool refills. Two shards of one seat, sold; an operator adds a seat,
// which goes to the pool. R finds every shard empty and claims on the pool; the
// answer is lost (the claim is on the wire) and R's delivery lets go of it. S takes
// the pool's seat. R's next delivery takes R over, finds the pool empty and ends R
// REJECTED_CAPACITY. CancelRequest then puts a seat (an early winner's) on the pool,
// and R's old claim lands. R must not hold that seat: U, the next user, must win it.
func TestSeatDelaysPoolClaimLandingAfterARefill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newDelayRig(t, 2, 2)
	early := r.submit("early", 0)
	r.work(early)
	r.work(r.submit("early-1", 1))
	up, err := r.c.AddCapacity(ctx, r.event, asyncevent.AddCapacityInput{Seats: 1, Actor: "ops"})
	require.NoError(t, err)
	require.True(t, up.Applied, up.Reason)

	rID := r.submit("r", 0)
	hb := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(t))
	claim := hb.Hold(r.claimOn(-1), 0, asynceventtest.CallerReset)
	r.deliver(ctx, r.worker(hb, nil), rID, 1, asyncevent.ProcessOptions{})
	claim.Stop()
	t.Logf("R's pool claims on the wire: %d", claim.Count())

	s := r.submit("s", 1)
	require.Equal(t, asyncevent.OutcomeSucceeded, r.work(s).Kind, "S takes the pool's seat")
	r.clock.Advance(time.Minute)
	r.takeOver(rID) // the pool is empty
	up, err = r.c.CancelRequest(ctx, early, asyncevent.CancelRequestInput{Actor: "ops"})
	require.NoError(t, err)
	require.True(t, up.Applied, up.Reason)
	require.NoError(t, claim.Land(ctx))
	t.Logf("R's old claim, landed after the cancel: %v", claim.Outcomes())

	u := r.submit("u", 0)
	r.work(u)
	if rep := judgeSeats(t, r.c, r.event); rep.succeeded != 3 {
		t.Errorf("3 seats (one added), 5 users, one winner cancelled: %d SUCCEEDED, want 3 (U wins the cancelled seat)", rep.succeeded)
	}
	asynceventtest.CheckEvent(t, r.c, r.event, asynceventtest.CheckOptions{})
}

// Run 4: a claim cut off by its caller (a Lambda deadline, Worker.Stop's grace) on the
// last receive. Two shards of one seat; shard 0 is sold. R (home 0) goes on to shard
// 1 and claims there; its context ends while the claim is on the wire, and, its
// receives used up, R ends FAILED_FINAL. The claim then lands. R must not hold a seat
// (the claim must fail on the shard) and U, the next user, must win shard 1's seat.
func TestSeatDelaysClaimCutOffOnTheLastReceive(t *testing.T) {
	t.Parallel()
	r := newDelayRig(t, 2, 2)
	first := r.submit("first", 0)
	require.Equal(t, asyncevent.OutcomeSucceeded, r.work(first).Kind)

	rID := r.submit("r", 0)
	hb := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(t))
	claim := hb.Hold(r.claimOn(1), 0, asynceventtest.CallerWaits)
	a := r.worker(hb, nil)
	ctx, deadline := context.WithCancel(context.Background())
	done := r.async(ctx, a, rID, asyncevent.DefaultMaxReceives, asyncevent.ProcessOptions{})
	caught, res := caughtOrDone(t, claim, done)
	deadline() // the invocation's deadline, with the claim on the wire
	if caught {
		ended := <-done
		res = &ended
	}
	claim.Stop()
	require.NoError(t, claim.Land(context.Background()))
	t.Logf("R's claim on the wire: %v; R's delivery: %s %s; its claim, landed after: %v", caught, res.Kind, res.ResultCode, claim.Outcomes())

	u := r.submit("u", 1)
	r.work(u)
	if rep := judgeSeats(t, r.c, r.event); rep.succeeded != 2 {
		t.Errorf("2 seats; R failed, first and U came: %d SUCCEEDED, want 2 (U wins shard 1's seat)", rep.succeeded)
	}
	asynceventtest.CheckEvent(t, r.c, r.event, asynceventtest.CheckOptions{})
}

// Run 5, beyond the old 5 s assumption: a home claim landing 10 s after it was sent.
// Shards 0 and 1 of two seats. At T R's first delivery sends its home claim on shard
// 0 (slow). Just after, L's worker lists shard 0 left (the listing lands at once). At
// T+10.2 s R's next delivery reads the listing, reads shard 0 (no token), moves R to
// shard 1 and wins there; at T+10.3 s the home claim lands on shard 0. R must hold
// one seat, and the four seats go to four users.
func TestSeatDelaysHomeClaimLandingTenSecondsLate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newDelayRig(t, 4, 2)
	rID, lister := r.submit("r", 0), r.submit("l", 0)
	claim := r.homeClaimOnTheWire(rID)
	r.clock.Advance(time.Millisecond)
	listing := r.listHomeLeftSlowly(lister)
	require.NoError(t, listing.Land(ctx))
	t.Logf("the listing landed: %v", listing.Outcomes())

	r.clock.Advance(10200 * time.Millisecond)
	r.deliver(ctx, r.worker(asynceventtest.DynamoDB(t), nil), rID, 2, asyncevent.ProcessOptions{})
	r.clock.Advance(100 * time.Millisecond)
	require.NoError(t, claim.Land(ctx))
	t.Logf("R's home claim, landed 10.3 s after it was sent: %v", claim.Outcomes())

	r.takeOver(lister)
	r.work(r.submit("u1", 0))
	r.work(r.submit("u2", 0))
	rep := judgeSeats(t, r.c, r.event)
	if rep.succeeded != 4 {
		t.Errorf("4 seats, 4 users came: %d SUCCEEDED", rep.succeeded)
	}
	asynceventtest.CheckEvent(t, r.c, r.event, asynceventtest.CheckOptions{})
}

// Run 6, beyond the old assumption: a takeover while the old holder's claim is 9 s on
// the wire. Three shards of one seat; R's home shard 0 is sold, so R's first delivery
// (D1) starts R on shard X and claims there; the answer is lost and D1 lets the request
// go. D2 takes R over on X; X refuses D2's claims for throughput, so D2 moves R to the
// third shard Y and wins there. D1's claim lands on X 9 s after it was sent. R must
// hold one seat, and U, the next user, must win the third.
func TestSeatDelaysTakeoverWhileTheOldClaimIsNineSecondsOnTheWire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newDelayRig(t, 3, 3)
	r.work(r.submit("first", 0))
	rID := r.submit("r", 0)

	hb := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(t))
	claim := hb.Hold(asynceventtest.OnKey("UpdateItem", "EVENT#late#CAPACITY#", "ADD holders"), 0, asynceventtest.CallerReset)
	sent := r.clock.Now()
	r.deliver(ctx, r.worker(hb, nil), rID, 1, asyncevent.ProcessOptions{})
	claim.Stop()
	x := r.seatShardOf(rID)
	require.Positive(t, x, "D1 started R on a shard other than its sold home")
	y := otherShard(3, 0, x)
	t.Logf("D1's claims on shard %d on the wire: %d", x, claim.Count())

	r.clock.Advance(time.Second)
	d2 := r.worker(refuseClaims{DynamoDB: asynceventtest.DynamoDB(t), match: r.claimOn(x)}, nil)
	r.deliver(ctx, d2, rID, 2, asyncevent.ProcessOptions{Handler: r.advancing(6 * time.Second)})
	t.Logf("D2 left R on shard %d (X = %d, Y = %d)", r.seatShardOf(rID), x, y)
	r.clock.Advance(sent.Add(9 * time.Second).Sub(r.clock.Now()))
	require.NoError(t, claim.Land(ctx))
	t.Logf("D1's claim on shard %d, landed 9 s after it was sent: %v", x, claim.Outcomes())

	r.work(r.submit("u", x))
	rep := judgeSeats(t, r.c, r.event)
	if rep.succeeded != 3 {
		t.Errorf("3 seats, 3 users came: %d SUCCEEDED", rep.succeeded)
	}
	asynceventtest.CheckEvent(t, r.c, r.event, asynceventtest.CheckOptions{})
}

// Run 7, beyond the old assumption: two workers whose clocks differ by 7 s. Three
// shards of one seat; R's home shard 0 is sold. Worker A, its clock 7 s behind, starts
// R on shard X (a lease of 30 s by its clock) and its handler runs long. At 23.5 s
// worker B (on time) finds the lease run out, takes R over; X refuses B's claims for
// throughput, so B moves R to Y and wins there. A's handler returns: by A's clock its
// lease has 1.4 s left, and it claims on X. R must hold one seat, and U must win the
// third.
func TestSeatDelaysWorkersSevenSecondsApart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newDelayRig(t, 3, 3)
	r.work(r.submit("first", 0))
	rID := r.submit("r", 0)

	started, release := make(chan struct{}), make(chan struct{})
	slow := asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error {
		close(started)
		<-release
		return nil
	})
	aClock := asynceventtest.SkewedClock(r.clock.Now, -7*time.Second)
	a := r.worker(asynceventtest.DynamoDB(t), aClock)
	aDone := r.async(ctx, a, rID, 1, asyncevent.ProcessOptions{Handler: slow, LeaseDuration: 30 * time.Second})
	<-started
	x := r.seatShardOf(rID)
	require.Positive(t, x, "A started R on a shard other than its sold home")
	y := otherShard(3, 0, x)

	r.clock.Advance(23500 * time.Millisecond) // A's lease ran out by B's clock, not by A's
	b := r.worker(refuseClaims{DynamoDB: asynceventtest.DynamoDB(t), match: r.claimOn(x)}, nil)
	r.deliver(ctx, b, rID, 2, asyncevent.ProcessOptions{Handler: r.advancing(5100 * time.Millisecond), LeaseDuration: 30 * time.Second})
	t.Logf("B left R on shard %d (X = %d, Y = %d); A's clock says %s, B's %s", r.seatShardOf(rID), x, y, aClock().Format("15:04:05.0"), r.clock.Now().Format("15:04:05.0"))
	close(release)
	<-aDone

	r.work(r.submit("u", x))
	rep := judgeSeats(t, r.c, r.event)
	if rep.succeeded != 3 {
		t.Errorf("3 seats, 3 users came: %d SUCCEEDED", rep.succeeded)
	}
	asynceventtest.CheckEvent(t, r.c, r.event, asynceventtest.CheckOptions{})
}

// delayOrder is the library's claimOrder: the order in which a request tries n
// capacity shards (FNV-64a of its ID seeds a permutation; its home shard first).
func delayOrder(id string, n int) []int {
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
	for i := 0; !slices.Equal(delayOrder(id, r.shards), order); i++ {
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
// The move ("first-come seat moved", Store.Move of internal/seatclaim) is conditioned on the lease alone (status =
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
func TestStaleMoveRollsTheClaimBack(t *testing.T) {
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
func TestLastReceiveLostLeavesTheSeatOnNobody(t *testing.T) {
	ctx := context.Background()
	r := newDelayRigWith(t, 1, 1, 0, 10*time.Minute)
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

// ingestThrough is an ingest process on db whose next request is id.
func (r *delayRig) ingestThrough(db asyncevent.DynamoDB, id string) *asyncevent.Client {
	r.t.Helper()
	c, err := asyncevent.New(db, asyncevent.Options{TableName: r.c.TableName(), Clock: r.clock.Now, ProgressEvery: -1,
		NewRequestID: func() string { return id }})
	require.NoError(r.t, err)
	return c
}

// submitPutLost submits user's click with request ID id through an ingest whose
// put of the request is left unanswered and never lands (a reset after it was sent):
// Submit sends the message all the same (its put's outcome unknown), which this
// returns as received.
func (r *delayRig) submitPutLost(id, user string) queue.Delivery {
	t := r.t
	ctx := context.Background()
	hb := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(t))
	put := hb.Hold(asynceventtest.OnKey("PutItem", "REQ#"+id, ""), 1, asynceventtest.CallerReset)
	q := queue.NewMemory(queue.MemoryOptions{})
	_, err := r.ingestThrough(hb, id).Submit(ctx, q, r.event, user)
	t.Logf("Submit, its put unanswered (it never lands): %v", err)
	require.Equal(t, 1, put.Count())
	ds, err := q.Receive(ctx, 1, 0, time.Minute)
	require.NoError(t, err)
	require.Len(t, ds, 1, "Submit sent the message of a put whose outcome it did not know")
	return ds[0]
}

// submitResult is what a Submit made in the background answered.
type submitResult struct {
	p   asyncevent.Participation
	err error
}

// F1a. Ingest's request put is left unanswered (a reset after it was sent), so Submit
// sends the message anyway (enqueueUncertain). A worker without a Handler gets it
// before the put lands: its home claim takes the seat (the claim comes before any
// write on the request), the bind finds no request (NOT_FOUND) and the message is
// deleted. The put lands, then ingest's MarkQueued: the user is told the click was
// accepted, the request is QUEUED with its token on the home shard and no message
// anywhere. Nothing in a worker brings it back (Sweep is an operator's command), and
// the next user is refused.
func TestSeatUncertainPutLandsAfterTheSeat(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newDelayRigWith(t, 1, 1, 0, 0)
	const id = "r"
	hb := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(t))
	put := hb.Hold(asynceventtest.OnKey("PutItem", "REQ#"+id, ""), 1, asynceventtest.CallerReset)
	mark := hb.Hold(asynceventtest.OnKey("UpdateItem", "REQ#"+id, ""), 1, asynceventtest.CallerWaits)
	ic := r.ingestThrough(hb, id)
	q := queue.NewMemory(queue.MemoryOptions{})
	subc := make(chan submitResult, 1)
	go func() {
		p, err := ic.Submit(ctx, q, r.event, "r")
		subc <- submitResult{p, err}
	}()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, mark.Caught(wctx), "ingest sent the message and is marking it queued")
	require.Equal(t, 1, put.Count(), "the request's put is on the wire")
	ds, err := q.Receive(ctx, 1, 0, time.Minute)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	res := asynceventtest.WorkDelivery(ctx, t, r.worker(asynceventtest.DynamoDB(t), nil), ds[0], asyncevent.ProcessOptions{})
	t.Logf("the worker, before the put landed: %s (message done: %t)", res.Kind, !res.Redeliver)
	assert.Equal(t, asyncevent.OutcomeSucceeded, res.Kind, "a seat won for a request not written yet: the worker writes it from the message and binds it: %v", res.Err)
	r.land("the request's put", put) // its condition fails against the request the worker wrote
	r.land("ingest's MarkQueued", mark)
	sub := <-subc
	require.NoError(t, sub.err, "the click is accepted")
	t.Logf("Submit: request %s, %s", sub.p.RequestID, sub.p.Request.Status)

	ds[0].ReceiveCount = 2
	res = asynceventtest.WorkDelivery(ctx, t, r.worker(asynceventtest.DynamoDB(t), nil), ds[0], asyncevent.ProcessOptions{})
	assert.Equal(t, asyncevent.OutcomeDuplicate, res.Kind, "a redelivery finds it decided: %v", res.Err)
	r.clock.Advance(time.Minute)
	u := r.submit("u", 0)
	t.Logf("the next user: %s", r.work(u).Kind)
	got := r.request(id)
	assert.Equal(t, asyncevent.StatusSucceeded, got.Status)
	judgeSeats(t, r.c, r.event)
}

// F1b. As F1a, but the put never lands (the reset was the whole story). The user gets
// an error; the seat is spent on a request that does not exist; the next user is
// refused. The event closes; the user clicks again: the lock without its request is
// ended FAILED_FINAL (INGEST_INCOMPLETE) by endIncomplete, which closes nothing:
// a FAILED_FINAL request whose token holds a seat.
func TestSeatUncertainPutNeverLandsThenTheClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newDelayRigWith(t, 1, 1, 0, 10*time.Minute)
	const id = "r"
	ds := []queue.Delivery{r.submitPutLost(id, "r")}
	res := asynceventtest.WorkDelivery(ctx, t, r.worker(asynceventtest.DynamoDB(t), nil), ds[0], asyncevent.ProcessOptions{})
	t.Logf("the worker: %s (message done: %t)", res.Kind, !res.Redeliver)
	assert.Equal(t, asyncevent.OutcomeSucceeded, res.Kind, "a seat won for a request never written: the worker writes it from the message and binds it: %v", res.Err)
	assert.Equal(t, asyncevent.StatusSucceeded, r.request(id).Status)
	judgeSeats(t, r.c, r.event)
}

// F1b, the close first. The put never lands and the message's delivery died on its
// write of the request (its transaction cut) when the event closes; the user clicks again: the heal of the
// lock without its request closes the home shard first, finds the seat, and heals the
// request as if the event were open: RECEIVED and sent, and its message binds it.
func TestSeatUncertainPutNeverLandsThenTheCloseHeals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newDelayRigWith(t, 1, 1, 0, 10*time.Minute)
	const id = "r"
	ds := []queue.Delivery{r.submitPutLost(id, "r")}
	dying := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(t))
	cut := dying.Hold(asynceventtest.OnKey("TransactWriteItems", "REQ#"+id, ""), 0, asynceventtest.CallerReset)
	res := asynceventtest.WorkDelivery(ctx, t, r.worker(dying, nil), ds[0], asyncevent.ProcessOptions{})
	require.True(t, res.Redeliver)
	require.Equal(t, 1, cut.Count(), "the worker's write of the request was cut")

	r.clock.Advance(11 * time.Minute) // past the end
	q2 := queue.NewMemory(queue.MemoryOptions{})
	p, err := r.c.Submit(ctx, q2, r.event, "r")
	require.NoError(t, err)
	require.NotNil(t, p.Request)
	t.Logf("r clicks again after the close: request %s %s %s", p.RequestID, p.Request.Status, p.Request.ErrorCode)
	assert.NotEqual(t, asyncevent.StatusFailedFinal, p.Request.Status, "its seat is won: not ended without it")
	sds, err := q2.Receive(ctx, 1, 0, time.Minute)
	require.NoError(t, err)
	require.Len(t, sds, 1, "the healed request is sent")
	res = asynceventtest.WorkDelivery(ctx, t, r.worker(asynceventtest.DynamoDB(t), nil), sds[0], asyncevent.ProcessOptions{})
	assert.Equal(t, asyncevent.OutcomeSucceeded, res.Kind, "%v", res.Err)
	judgeSeats(t, r.c, r.event)
}

// F2. An item as a worker of the version before issue 39 leaves it: a request whose
// claim left its home shard for throughput (listed "left" on the config, home not
// voided), PROCESSING on shard 1 without seatEpoch, its worker gone (the upgrade
// stopped it, as the CHANGELOG says), its message still on the queue. A worker of
// this version without a Handler sends the home claim first, takes a seat on shard 0,
// cannot bind it (seatShard 1), goes the leased way, takes R over on shard 1 and wins
// a second seat there.
func TestSeatLegacyItemMovedOffItsHome(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newDelayRigWith(t, 4, 2, 0, 0)
	rID := r.submit("r", 0)
	_, err := asynceventtest.DynamoDB(t).UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(r.c.TableName()),
		Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: "REQ#" + rID}, "SK": &types.AttributeValueMemberS{Value: "META"},
		},
		UpdateExpression:         aws.String("SET #st = :p, seatShard = :s, leaseOwner = :o, leaseExpiresAt = :exp, startedAt = :at"),
		ExpressionAttributeNames: map[string]string{"#st": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":p":   &types.AttributeValueMemberS{Value: string(asyncevent.StatusProcessing)},
			":s":   &types.AttributeValueMemberN{Value: "1"},
			":o":   &types.AttributeValueMemberS{Value: "v-before-39/gone"},
			":exp": &types.AttributeValueMemberN{Value: strconv.FormatInt(int64(asyncevent.MillisOf(t0)), 10)},
			":at":  &types.AttributeValueMemberN{Value: strconv.FormatInt(int64(asyncevent.MillisOf(t0)), 10)},
		},
	})
	require.NoError(t, err)
	r.clock.Advance(time.Minute)
	t.Logf("R on a worker of this version: %s", r.work(rID).Kind)
	for _, u := range []struct {
		name string
		home int
	}{{"u1", 0}, {"u2", 1}, {"u3", 1}} {
		t.Logf("%s: %s", u.name, r.work(r.submit(u.name, u.home)).Kind)
	}
	rep := judgeSeats(t, r.c, r.event)
	if rep.succeeded != 4 {
		t.Errorf("4 seats, 4 users: %d SUCCEEDED", rep.succeeded)
	}
}

// P3. A deadline (Worker.Stop's grace, a Lambda deadline) on the last receive, after
// the claim was sent and before SUCCEEDED. Two shards of one seat, shard 0 sold; R
// (home 0) claims on shard 1 and the deadline comes with the claim on the wire. The
// final failure closes shard 1 first (under its bookkeeping context), which finds R's
// seat (the claim landed first): R must end SUCCEEDED on that last receive, not stay
// PROCESSING with its message dead-lettered (takeSeat's write runs under a context of
// its own, so the ended one does not cut it).
func TestSeatDeadlineBetweenSeatAndResultOnTheLastReceive(t *testing.T) {
	t.Parallel()
	r := newDelayRigWith(t, 2, 2, 0, 0)
	r.win("first", 0, asyncevent.OutcomeSucceeded)
	rID := r.submit("r", 0)
	shard1 := "EVENT#" + r.event + "#CAPACITY#1"
	hb := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(t))
	claim := hb.Hold(onItem("UpdateItem", shard1, "ADD holders"), 1, asynceventtest.CallerWaits)
	closing := hb.Hold(onItem("UpdateItem", shard1, "ADD void"), 1, asynceventtest.CallerWaits)
	ctx, deadline := context.WithCancel(context.Background())
	done := r.async(ctx, r.worker(hb, nil), rID, asyncevent.DefaultMaxReceives, asyncevent.ProcessOptions{})
	caught, _ := caughtOrDone(t, claim, done)
	require.True(t, caught, "R's claim on shard 1 was sent")
	deadline()
	caught, _ = caughtOrDone(t, closing, done)
	require.True(t, caught, "the final failure closes shard 1 to R first")
	r.land("R's claim on shard 1, sent before the deadline", claim)
	r.land("the final failure's close of shard 1", closing)
	res := <-done
	t.Logf("R's last receive: %s %s, redeliver %t: %v", res.Kind, res.ResultCode, res.Redeliver, res.Err)
	require.Equal(t, asyncevent.StatusSucceeded, r.request(rID).Status)
	r.win("u", 1, asyncevent.OutcomeRejected)
	r.judgeRace(2)
}

// P1. The bind's leaseExpiresAt ≤ now is liveness only. Worker A (a Handler) holds R
// PROCESSING on its home shard under a live lease, its handler running. Worker B,
// without a Handler and its clock 40 s ahead, claims R's home seat and binds it
// (the lease has run out by B's clock). A's handler returns; its claim meets R's
// token and its SUCCEEDED loses its condition. One seat for R.
func TestSeatBinderClockAheadOfALiveLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newDelayRigWith(t, 2, 1, 0, 0)
	rID := r.submit("r", 0)
	slow, started, release := slowHandler()
	aDone := r.async(ctx, r.worker(asynceventtest.DynamoDB(t), nil), rID, 1, asyncevent.ProcessOptions{Handler: slow, LeaseDuration: 30 * time.Second})
	<-started
	b := r.worker(asynceventtest.DynamoDB(t), asynceventtest.SkewedClock(r.clock.Now, 40*time.Second))
	require.Equal(t, asyncevent.OutcomeSucceeded, r.deliver(ctx, b, rID, 2, asyncevent.ProcessOptions{}).Kind)
	close(release)
	aRes := <-aDone
	t.Logf("A, its handler back: %s", aRes.Kind)
	r.win("u", 0, asyncevent.OutcomeSucceeded)
	r.win("v", 0, asyncevent.OutcomeRejected)
	r.judgeRace(2)
}

// sendFailsAfter is a queue whose first Send puts the message on q, then waits until
// release is closed and reports a failure: a send that went through, its answer lost.
type sendFailsAfter struct {
	queue.Queue
	sent, release chan struct{}
}

func (s *sendFailsAfter) Send(ctx context.Context, m queue.OutgoingMessage) error {
	if err := s.Queue.Send(ctx, m); err != nil {
		return err
	}
	close(s.sent)
	<-s.release
	return errors.New("send: connection reset (the message got through)")
}

// P2. docs/design.md's row "a send reported failed that went through", under a lease:
// the send goes through; a worker with a Handler starts R on its home shard before
// MarkEnqueueFailed runs; MarkEnqueueFailed closes the home shard at epoch 0 and its
// FAILED_FINAL loses (R is PROCESSING); R's claim meets the close and comes back to
// its home at epoch 1, where it wins the one seat.
func TestSeatSendFailedButWentThroughUnderALease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newDelayRigWith(t, 1, 1, 0, 0)
	mem := queue.NewMemory(queue.MemoryOptions{})
	fq := &sendFailsAfter{Queue: mem, sent: make(chan struct{}), release: make(chan struct{})}
	r.mu.Lock()
	r.nextID = "r"
	r.mu.Unlock()
	subc := make(chan submitResult, 1)
	go func() {
		p, err := r.c.Submit(ctx, fq, r.event, "r")
		subc <- submitResult{p, err}
	}()
	<-fq.sent
	ds, err := mem.Receive(ctx, 1, 0, time.Minute)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	slow, started, release := slowHandler()
	aDone := make(chan asynceventtest.WorkResult, 1)
	go func() {
		aDone <- asynceventtest.WorkDelivery(ctx, t, r.worker(asynceventtest.DynamoDB(t), nil), ds[0], asyncevent.ProcessOptions{Handler: slow})
	}()
	<-started
	close(fq.release)
	sub := <-subc
	t.Logf("Submit, its send reported failed: %v (request %v)", sub.err, sub.p.Request != nil && sub.p.Request.Status == asyncevent.StatusProcessing)
	close(release)
	res := <-aDone
	require.Equal(t, asyncevent.OutcomeSucceeded, res.Kind, "%v", res.Err)
	require.Equal(t, 1, r.request("r").SeatEpoch, "R won on its home at epoch 1, past MarkEnqueueFailed's close at epoch 0")
	r.win("u", 0, asyncevent.OutcomeRejected)
	r.judgeRace(1)
}
