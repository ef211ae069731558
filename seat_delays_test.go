package asyncevent_test

// Exactly N whatever the delays (issue 39; docs/design.md, invariant 4): runs in
// which a write lands long after its sender gave up, a lease is taken over while the
// old holder's claim is on the wire, and two workers' clocks disagree. Writes are held
// back with asynceventtest.HoldBack and landed when the run needs them; time moves on
// the test's clocks (each worker a Client of its own on the one table, with its own
// cache, clock and wrapper), so no run sleeps through a fence. Each run is judged
// from a strongly consistent Scan of the table (judgeSeats): SUCCEEDED + HELD ≤
// capacity, every seat taken accounted for, no request holding two seats, none
// rejected or failed while its token holds one.

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash/fnv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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
	r := &delayRig{t: t, clock: asynceventtest.NewClock(t0), event: "late", shards: max(shards, 1), bodies: map[string][]byte{}}
	r.c = asynceventtest.NewTableWith(t, asyncevent.Options{Clock: r.clock.Now, ProgressEvery: -1, NewRequestID: func() string {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.nextID
	}})
	_, err := r.c.CreateEvent(context.Background(), asyncevent.EventSettings{EventID: r.event, EventType: asyncevent.FirstCome, CapacityTotal: capacity, CapacityShards: shards})
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
