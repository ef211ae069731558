package asyncevent_test

// The home claim at its edges: interleavings of claims without a lease, leased
// claims, give-backs and config copies. Each test's comment names the interleaving.

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// messageFor is the message ingest sends for a request of an event of n capacity
// shards.
func messageFor(t *testing.T, c *asyncevent.Client, requestID string, n int) asyncevent.Message {
	t.Helper()
	r, err := c.GetRequest(context.Background(), requestID)
	require.NoError(t, err)
	return asyncevent.Message{V: asyncevent.MessageVersion, RequestID: r.RequestID, EventID: r.EventID, UserID: r.UserID,
		EventType: r.EventType, RequestedAt: r.RequestedAt, CapacityShards: n}
}

// homeOf is the library's shardOf: FNV-32a of the request ID, mod n.
func homeOf(id string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % uint32(n))
}

// idWithHome returns the first "<prefix>-<i>" whose home shard of n is home.
func idWithHome(prefix string, n, home int) string {
	for i := 0; ; i++ {
		id := fmt.Sprintf("%s-%d", prefix, i)
		if homeOf(id, n) == home {
			return id
		}
	}
}

// tokenOf is the library's seatToken.
func tokenOf(requestID string) string {
	sum := sha256.Sum256([]byte("seat\x00" + requestID))
	return base64.RawStdEncoding.EncodeToString(sum[:8])
}

// idQueue hands out the request IDs the test chose, in order.
type idQueue struct {
	mu  sync.Mutex
	ids []string
}

func (q *idQueue) next() string {
	q.mu.Lock()
	defer q.mu.Unlock()
	id := q.ids[0]
	q.ids = q.ids[1:]
	return id
}

// hookDB lets a test intercept single calls; a nil hook, or one that returns
// handled=false, passes the call through.
type hookDB struct {
	asyncevent.DynamoDB
	update func(ctx context.Context, in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error, bool)
	get    func(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error, bool)
}

func (h *hookDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if h.update != nil {
		if out, err, handled := h.update(ctx, in); handled {
			return out, err
		}
	}
	return h.DynamoDB.UpdateItem(ctx, in, o...)
}

func (h *hookDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if h.get != nil {
		if out, err, handled := h.get(ctx, in, o...); handled {
			return out, err
		}
	}
	return h.DynamoDB.GetItem(ctx, in, o...)
}

func pkOfKey(key map[string]types.AttributeValue) string {
	if pk, ok := key["PK"].(*types.AttributeValueMemberS); ok {
		return pk.Value
	}
	return ""
}

func isGiveBack(in *dynamodb.UpdateItemInput) bool {
	return strings.Contains(pkOfKey(in.Key), "#CAPACITY") && strings.Contains(aws.ToString(in.UpdateExpression), "DELETE")
}

func isClaimOn(in *dynamodb.UpdateItemInput, pk string) bool {
	return pkOfKey(in.Key) == pk && strings.Contains(aws.ToString(in.UpdateExpression), "ADD") &&
		!strings.Contains(aws.ToString(in.UpdateExpression), "DELETE")
}

func shardItem(t *testing.T, c *asyncevent.Client, eventID string, shard int) asyncevent.EventCapacity {
	t.Helper()
	capItem, err := c.GetCapacity(context.Background(), eventID)
	require.NoError(t, err)
	return capItem.Shards[shard]
}

// A give-back never reopens an empty shard: "empty" is for good, and a request that
// left its home shard as empty without its token relies on it.
//
// Two shards of one seat each; G and R both have home shard H = 0.
//  1. G's send "failed" at ingest (MarkEnqueueFailed: FAILED_INGEST_ENQUEUE), but its
//     message got through: its home claim takes H's only seat; its bind finds G
//     final, and its give-back is slow (held here).
//  2. R's first delivery looks at H: empty, no token: home clear. It starts R on the
//     next shard X = 1 (seatShard = 1) and dies before its claim lands (here: every
//     claim on X unanswered, the lease released: the same state as a crash after the
//     start once the lease runs out).
//  3. G's give-back is refused: H is empty. G's seat is lost to the event (the gap
//     docs/design.md names), and H takes no claim of R's.
//  4. R's next delivery takes it over on X and wins there: final, one seat.
func TestAGiveBackNeverReopensAnEmptyShard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	gID, rID := idWithHome("g", 2, 0), idWithHome("r", 2, 0)
	ids := &idQueue{ids: []string{gID, rID}}
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now, NewRequestID: ids.next})
	_, err := c.CreateEvent(ctx, asyncevent.EventConfig{EventID: "drop", EventType: asyncevent.FirstCome, CapacityTotal: 2, CapacityShards: 2})
	require.NoError(t, err)
	msg := func(id string) asyncevent.Message { return messageFor(t, c, id, 2) }
	pg, err := c.Participate(ctx, "drop", "user-g")
	require.NoError(t, err)
	require.Equal(t, gID, pg.RequestID)
	pr, err := c.Participate(ctx, "drop", "user-r")
	require.NoError(t, err)
	require.Equal(t, rID, pr.RequestID)
	mg, mr := msg(gID), msg(rID)
	_, err = c.MarkQueued(ctx, mr.Ref())
	require.NoError(t, err)
	// 1. ingest's send reported a failure; the message got through all the same.
	tr, err := c.MarkEnqueueFailed(ctx, mg.Ref(), fmt.Errorf("send: timeout"))
	require.NoError(t, err)
	require.True(t, tr.Applied)

	hold := make(chan struct{})
	var holding atomic.Bool
	gdb := &hookDB{DynamoDB: asynceventtest.DynamoDB(t), update: func(ctx context.Context, in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error, bool) {
		if isGiveBack(in) {
			holding.Store(true)
			<-hold
		}
		return nil, nil, false
	}}
	gc, err := asyncevent.New(gdb, asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	gDone := make(chan asynceventtest.WorkResult, 1)
	go func() { gDone <- asynceventtest.Work(ctx, t, gc, mg, asyncevent.ProcessOptions{}) }()
	eventually(t, "G's give-back is under way", holding.Load)
	require.Zero(t, shardItem(t, c, "drop", 0).CapacityRemaining, "G's home claim took H's seat")

	// 2. R's first delivery: H empty without R's token, so R starts on X and dies.
	rdb := &hookDB{DynamoDB: asynceventtest.DynamoDB(t), update: func(ctx context.Context, in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error, bool) {
		if isClaimOn(in, "EVENT#drop#CAPACITY#1") {
			return nil, &types.InternalServerError{Message: aws.String("no answer")}, true
		}
		return nil, nil, false
	}}
	rc, err := asyncevent.New(rdb, asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	first := asynceventtest.Work(ctx, t, rc, mr, asyncevent.ProcessOptions{})
	t.Logf("R, delivery 1: %s %v", first.Kind, first.Err)
	r, err := c.GetRequest(ctx, rID)
	require.NoError(t, err)
	require.Equal(t, asyncevent.StatusProcessing, r.Status)
	require.NotNil(t, r.SeatShard)
	require.Equal(t, 1, *r.SeatShard, "R left its home shard as empty")

	// 3. G's give-back is refused: H stays empty.
	close(hold)
	g := <-gDone
	t.Logf("G: %s %v", g.Kind, g.Err)
	require.Zero(t, shardItem(t, c, "drop", 0).CapacityRemaining, "an empty shard stays empty")

	// 4. R's later deliveries, each a minute apart, on a healthy worker without a Handler.
	body, err := asyncevent.EncodeMessage(mr)
	require.NoError(t, err)
	for receive := 2; receive <= asyncevent.DefaultMaxReceives; receive++ {
		clock.Advance(time.Minute)
		res := asynceventtest.WorkDelivery(ctx, t, c, queue.Delivery{Body: body, ReceiveCount: receive}, asyncevent.ProcessOptions{})
		t.Logf("R, delivery %d: %s redeliver=%v %v", receive, res.Kind, res.Redeliver, res.Err)
	}
	r, err = c.GetRequest(ctx, rID)
	require.NoError(t, err)
	h := shardItem(t, c, "drop", 0)
	t.Logf("R: %s seatShard=%v; H remaining=%d holders=%v (R's token %s)", r.Status, *r.SeatShard, h.CapacityRemaining, h.Holders, tokenOf(rID))
	assert.Equal(t, asyncevent.StatusSucceeded, r.Status, "R wins on X")
	assert.NotContains(t, h.Holders, tokenOf(rID), "no seat of R's on H")
	x := shardItem(t, c, "drop", 1)
	assert.Equal(t, []string{tokenOf(rID)}, x.Holders)
	assert.Equal(t, []string{tokenOf(gID)}, h.Holders, "G's seat stays spent: lost to the event")
}

// Concurrent home claims share one read of the event's config once their copy has
// aged: a read under way that began within homeFreshness is shared, not forgotten,
// so K concurrent messages of one worker make one strongly consistent read of the
// event's one CONFIG key, not K.
func TestConcurrentHomeClaimsShareOneConfigRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	var configReads atomic.Int32
	db := &hookDB{DynamoDB: asynceventtest.DynamoDB(t), get: func(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error, bool) {
		if sk, ok := in.Key["SK"].(*types.AttributeValueMemberS); ok && sk.Value == "CONFIG" {
			configReads.Add(1)
			time.Sleep(50 * time.Millisecond) // a round trip
		}
		return nil, nil, false
	}}
	c := asynceventtest.NewTableOn(t, db, asyncevent.Options{Clock: clock.Now})
	const k = 16
	_, err := c.CreateEvent(ctx, asyncevent.EventConfig{EventID: "drop", EventType: asyncevent.FirstCome, CapacityTotal: 100, CapacityShards: 4})
	require.NoError(t, err)
	var ms []asyncevent.Message
	for i := range k + 1 {
		p, err := c.Participate(ctx, "drop", fmt.Sprintf("user-%02d", i))
		require.NoError(t, err)
		ms = append(ms, messageFor(t, c, p.RequestID, 4))
	}
	p := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	work := func(m asyncevent.Message) {
		body, err := asyncevent.EncodeMessage(m)
		require.NoError(t, err)
		failed := asynceventtest.Process(ctx, p, []queue.Delivery{{MessageID: m.RequestID, Receipt: m.RequestID, Body: body, ReceiveCount: 1}})
		assert.Empty(t, failed)
	}
	work(ms[0]) // warms the copy
	clock.Advance(6 * time.Second)
	before := configReads.Load()
	var wg sync.WaitGroup
	for _, m := range ms[1:] {
		wg.Add(1)
		go func() { defer wg.Done(); work(m) }()
	}
	wg.Wait()
	reads := configReads.Load() - before
	t.Logf("%d concurrent home claims after the copy aged: %d CONFIG reads", k, reads)
	assert.LessOrEqual(t, reads, int32(2), "concurrent misses should share one read of the CONFIG")
}

// A copy of the config and its time come from one read: a copy read before a shard
// was listed left is never taken for one read after it, so no claim without a lease
// goes to a left shard past rule 2's deadline (left at L, no such claim sent after
// L + homeFreshness), let alone past the left fence (L + 10 s).
//
// Worker P, no Handler. Request A (home 0): its read of the CONFIG is served before
// shard 0 is listed left at L, and its answer is slow. At L + 9 s request B on P
// reads the CONFIG again (forgetting A's read in flight): the copy lists 0 left, B goes
// the leased way. A's answer comes at L + 12 s: A's copy (no left) is dated L + 9 s,
// and A sends its home claim on shard 0 at L + 12 s.
func TestAHomeClaimIsNotSentOnAShardLeftBeforeItsCopy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	aID, bID := idWithHome("a", 2, 0), idWithHome("b", 2, 0)
	ids := &idQueue{ids: []string{aID, bID}}

	var armed atomic.Bool
	aRead, releaseA := make(chan struct{}), make(chan struct{})
	type sent struct {
		at    time.Time
		token string
	}
	var mu sync.Mutex
	var claims []sent
	db := &hookDB{DynamoDB: asynceventtest.DynamoDB(t)}
	db.get = func(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error, bool) {
		if sk, ok := in.Key["SK"].(*types.AttributeValueMemberS); ok && sk.Value == "CONFIG" && armed.CompareAndSwap(true, false) {
			out, err := db.DynamoDB.GetItem(ctx, in, o...) // served now
			close(aRead)
			<-releaseA // answered late
			return out, err, true
		}
		return nil, nil, false
	}
	db.update = func(ctx context.Context, in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error, bool) {
		if isClaimOn(in, "EVENT#drop#CAPACITY#0") {
			if tok, ok := in.ExpressionAttributeValues[":seatToken"].(*types.AttributeValueMemberS); ok {
				mu.Lock()
				claims = append(claims, sent{clock.Now(), tok.Value})
				mu.Unlock()
			} else {
				for _, v := range in.ExpressionAttributeValues {
					if ss, ok := v.(*types.AttributeValueMemberSS); ok && len(ss.Value) == 1 {
						mu.Lock()
						claims = append(claims, sent{clock.Now(), ss.Value[0]})
						mu.Unlock()
					}
				}
			}
		}
		return nil, nil, false
	}
	c := asynceventtest.NewTableOn(t, db, asyncevent.Options{Clock: clock.Now, NewRequestID: ids.next})
	_, err := c.CreateEvent(ctx, asyncevent.EventConfig{EventID: "drop", EventType: asyncevent.FirstCome, CapacityTotal: 4, CapacityShards: 2})
	require.NoError(t, err)
	var ms []asyncevent.Message
	for _, u := range []string{"user-a", "user-b"} {
		p, err := c.Participate(ctx, "drop", u)
		require.NoError(t, err)
		ms = append(ms, messageFor(t, c, p.RequestID, 2))
	}
	require.Equal(t, aID, ms[0].RequestID)
	// Each message on a Processor of its own, on one Client (one cache of configs):
	// a worker's concurrent messages share the Client the same way.
	work := func(m asyncevent.Message) asyncevent.Outcome {
		var got asyncevent.Outcome
		body, _ := asyncevent.EncodeMessage(m)
		pp := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{OnOutcome: func(o asyncevent.Outcome) { got = o }})
		asynceventtest.Process(ctx, pp, []queue.Delivery{{MessageID: m.RequestID, Receipt: m.RequestID, Body: body, ReceiveCount: 1}})
		return got
	}

	clock.Advance(6 * time.Second) // the copy ingest's Participate left ages
	armed.Store(true)
	aDone := make(chan asyncevent.Outcome, 1)
	go func() { aDone <- work(ms[0]) }()
	select {
	case <-aRead:
	case o := <-aDone:
		t.Fatalf("A ended without reading the CONFIG: %s %v", o.Kind, o.Err)
	}

	// Another worker's leased claim lists shard 0 left at L (its recordLeft).
	left := clock.Now()
	_, err = asynceventtest.DynamoDB(t).UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(c.TableName()),
		Key:                       map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "EVENT#drop"}, "SK": &types.AttributeValueMemberS{Value: "CONFIG"}},
		UpdateExpression:          aws.String("ADD leftShards :l"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":l": &types.AttributeValueMemberSS{Value: []string{fmt.Sprintf("0@%d", left.UnixMilli())}}},
	})
	require.NoError(t, err)
	cfg, err := c.GetEvent(ctx, "drop")
	require.NoError(t, err)
	require.NotEmpty(t, cfg.LeftShards)

	clock.Advance(9 * time.Second)
	ob := work(ms[1])
	t.Logf("B at L+9s: %s %v", ob.Kind, ob.Err)

	clock.Advance(3 * time.Second) // L + 12 s: past rule 2's deadline and the left fence
	close(releaseA)
	oa := <-aDone
	t.Logf("A: %s %v", oa.Kind, oa.Err)
	ra, err := c.GetRequest(ctx, aID)
	require.NoError(t, err)
	t.Logf("A: %s leaseOwner=%q startedAt=%d", ra.Status, ra.LeaseOwner, ra.StartedAt)

	mu.Lock()
	defer mu.Unlock()
	for _, s := range claims {
		if s.token == tokenOf(aID) && ra.LeaseOwner == "" {
			t.Logf("A's claim without a lease on shard 0 sent at L+%v", s.at.Sub(left))
			assert.Less(t, s.at.Sub(left), 5*time.Second, "a claim without a lease on shard 0 sent more than homeFreshness after 0 was listed left (rule 2); the left fence is 10 s")
		}
	}
}

// A shard listed left is listed once: the requests that leave it after that read the
// listing instead of adding theirs, so the CONFIG item does not grow with them (every
// read of it pays for its size, and DynamoDB refuses an item past 400 KB), and they
// skip the claim and the fence (the listing is old).
//
// Shard 0 is listed left long ago; it refuses every claim for throughput. Five
// requests homed on it, a minute apart (no fence to wait: the first listing is old):
// each leaves it and the list grows by one each time.
func TestLeavingAShardListedLeftDoesNotGrowTheConfig(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	var ids []string
	for i := range 5 {
		ids = append(ids, idWithHome(fmt.Sprintf("r%d", i), 2, 0))
	}
	q := &idQueue{ids: slices.Clone(ids)}
	db := refuseKey{DynamoDB: asynceventtest.DynamoDB(t), pk: func() string { return "EVENT#drop#CAPACITY#0" }}
	c := asynceventtest.NewTableOn(t, db, asyncevent.Options{Clock: clock.Now, NewRequestID: q.next})
	_, err := c.CreateEvent(ctx, asyncevent.EventConfig{EventID: "drop", EventType: asyncevent.FirstCome, CapacityTotal: 20, CapacityShards: 2})
	require.NoError(t, err)
	_, err = asynceventtest.DynamoDB(t).UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(c.TableName()),
		Key:                       map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "EVENT#drop"}, "SK": &types.AttributeValueMemberS{Value: "CONFIG"}},
		UpdateExpression:          aws.String("ADD leftShards :l"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":l": &types.AttributeValueMemberSS{Value: []string{fmt.Sprintf("0@%d", clock.Now().UnixMilli())}}},
	})
	require.NoError(t, err)
	for i := range ids {
		clock.Advance(time.Minute)
		p, err := c.Participate(ctx, "drop", fmt.Sprintf("user-%d", i))
		require.NoError(t, err)
		m := messageFor(t, c, p.RequestID, 2)
		res := asynceventtest.Work(ctx, t, c, m, asyncevent.ProcessOptions{})
		require.Equal(t, asyncevent.OutcomeSucceeded, res.Kind, "%v", res.Err)
	}
	cfg, err := c.GetEvent(ctx, "drop")
	require.NoError(t, err)
	t.Logf("leftShards after %d leavers of a shard listed left: %v", len(ids), cfg.LeftShards)
	assert.Len(t, cfg.LeftShards, 1, "a shard listed left once needs no second listing")
}

// Ingest's send reported a failure, so ingest ended the request FAILED_INGEST_ENQUEUE
// and released the user's lock; but the message got through, and its home claim won a
// seat. The bind finds the request final without it, and the seat goes back to the
// shard (which has seats left): the request stays failed, the seat is anyone's.
func TestASeatWonAfterAMisreportedEnqueueGoesBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTableWith(t, asyncevent.Options{})
	_, err := c.CreateEvent(ctx, asyncevent.EventConfig{EventID: "drop", EventType: asyncevent.FirstCome, CapacityTotal: 4})
	require.NoError(t, err)
	p, err := c.Participate(ctx, "drop", "user-g")
	require.NoError(t, err)
	m := messageFor(t, c, p.RequestID, 1)
	tr, err := c.MarkEnqueueFailed(ctx, m.Ref(), fmt.Errorf("send: timeout"))
	require.NoError(t, err)
	require.True(t, tr.Applied)

	res := asynceventtest.Work(ctx, t, c, m, asyncevent.ProcessOptions{})
	assert.Equal(t, asyncevent.OutcomeDuplicate, res.Kind, "%v", res.Err)
	capItem, err := c.GetCapacity(ctx, "drop")
	require.NoError(t, err)
	assert.EqualValues(t, 4, capItem.CapacityRemaining, "the seat went back")
	assert.NotContains(t, capItem.Holders, tokenOf(m.RequestID))
	after, err := c.GetRequest(ctx, m.RequestID)
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusFailedFinal, after.Status)
	assert.Equal(t, asyncevent.ResultFailedIngestEnqueue, after.ResultCode)
}

// A final failure under a lease voids the request's token on its home shard before it
// writes FAILED_FINAL; a later delivery of the same message on a worker without a
// Handler (a duplicate, a redelivery) then claims nothing there: its claim finds the
// token void, and the request stays failed with no seat spent.
func TestAFinalFailureVoidsTheHomeToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTableWith(t, asyncevent.Options{})
	_, err := c.CreateEvent(ctx, asyncevent.EventConfig{EventID: "drop", EventType: asyncevent.FirstCome, CapacityTotal: 4, CapacityShards: 2})
	require.NoError(t, err)
	p, err := c.Participate(ctx, "drop", "user-f")
	require.NoError(t, err)
	m := messageFor(t, c, p.RequestID, 2)
	refuse := asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error {
		return asyncevent.Permanent(fmt.Errorf("not eligible"))
	})
	res := asynceventtest.Work(ctx, t, c, m, asyncevent.ProcessOptions{Handler: refuse})
	require.Equal(t, asyncevent.OutcomeFailed, res.Kind, "%v", res.Err)
	home := homeOf(m.RequestID, 2)
	shard := shardItem(t, c, "drop", home)
	assert.Contains(t, shard.Void, tokenOf(m.RequestID), "voided on its home shard")

	res = asynceventtest.Work(ctx, t, c, m, asyncevent.ProcessOptions{})
	assert.Equal(t, asyncevent.OutcomeDuplicate, res.Kind, "%v", res.Err)
	capItem, err := c.GetCapacity(ctx, "drop")
	require.NoError(t, err)
	assert.EqualValues(t, 4, capItem.CapacityRemaining, "no seat spent")
	after, err := c.GetRequest(ctx, m.RequestID)
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusFailedFinal, after.Status)
}
