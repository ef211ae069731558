package asyncevent_test

// The home claim at its edges: interleavings of claims without a lease, leased
// claims, give-backs and config copies. Each test's comment names the interleaving.

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/fnv"
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

// tokenOf is the library's seatToken.
func tokenOf(requestID string) string {
	sum := sha256.Sum256([]byte("seat\x00" + requestID))
	return base64.RawStdEncoding.EncodeToString(sum[:8])
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

func shardItem(t *testing.T, c *asyncevent.Client, eventID string, shard int) asyncevent.StoredCapacity {
	t.Helper()
	capItem, err := asyncevent.ReadStoredCapacity(context.Background(), c, eventID)
	require.NoError(t, err)
	return capItem.Shards[shard]
}

// Concurrent home claims share one read of the event's config once their copy has
// aged: a read under way is shared, not forgotten,
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
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "drop", EventType: asyncevent.FirstCome, CapacityTotal: 100, CapacityShards: 4})
	require.NoError(t, err)
	var ms []asyncevent.Message
	for i := range k + 1 {
		p, err := c.Rows().Participate(ctx, "drop", fmt.Sprintf("user-%02d", i))
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

// A final failure under a lease voids the request's token on its home shard before it
// writes FAILED_FINAL; a later delivery of the same message on a worker without a
// Handler (a duplicate, a redelivery) then claims nothing there: its claim finds the
// token void, and the request stays failed with no seat spent.
func TestAFinalFailureVoidsTheHomeToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTableWith(t, asyncevent.Options{})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "drop", EventType: asyncevent.FirstCome, CapacityTotal: 4, CapacityShards: 2})
	require.NoError(t, err)
	p, err := c.Rows().Participate(ctx, "drop", "user-f")
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

// Ingest's send reported a failure, but the message got through. MarkEnqueueFailed
// closes the request's home shard first: when the close comes first, the home claim
// of the message that got through finds the shard closed and takes no seat (the
// request stays FAILED_INGEST_ENQUEUE, its lock released, no seat spent, nothing to
// give back); when the claim came first, the close finds its seat and the request is
// not failed: its next delivery binds it.
func TestAFailedSendClosesTheHomeShard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTableWith(t, asyncevent.Options{})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "drop", EventType: asyncevent.FirstCome, CapacityTotal: 4, CapacityShards: 2})
	require.NoError(t, err)

	t.Run("the close first", func(t *testing.T) {
		p, err := c.Rows().Participate(ctx, "drop", "user-late")
		require.NoError(t, err)
		m := messageFor(t, c, p.RequestID, 2)
		tr, err := c.Rows().MarkEnqueueFailed(ctx, m.Ref(), fmt.Errorf("send: timeout"))
		require.NoError(t, err)
		require.True(t, tr.Applied)
		assert.Contains(t, shardItem(t, c, "drop", homeOf(m.RequestID, 2)).Void, tokenOf(m.RequestID), "closed on its home shard")

		res := asynceventtest.Work(ctx, t, c, m, asyncevent.ProcessOptions{})
		assert.Equal(t, asyncevent.OutcomeDuplicate, res.Kind, "%v", res.Err)
		after, err := c.GetRequest(ctx, m.RequestID)
		require.NoError(t, err)
		assert.Equal(t, asyncevent.ResultFailedIngestEnqueue, after.ResultCode)
		assert.NotContains(t, shardItem(t, c, "drop", homeOf(m.RequestID, 2)).Holders, tokenOf(m.RequestID), "no seat spent")
	})
	t.Run("the claim first", func(t *testing.T) {
		p, err := c.Rows().Participate(ctx, "drop", "user-fast")
		require.NoError(t, err)
		m := messageFor(t, c, p.RequestID, 2)
		dying, err := asyncevent.New(failSucceeded{asynceventtest.DynamoDB(t)}, asyncevent.Options{TableName: c.TableName()})
		require.NoError(t, err)
		res := asynceventtest.Work(ctx, t, dying, m, asyncevent.ProcessOptions{})
		t.Logf("the worker that took the seat and died: %s %v", res.Kind, res.Err)
		require.Contains(t, shardItem(t, c, "drop", homeOf(m.RequestID, 2)).Holders, tokenOf(m.RequestID))

		tr, err := c.Rows().MarkEnqueueFailed(ctx, m.Ref(), fmt.Errorf("send: timeout"))
		require.NoError(t, err)
		assert.False(t, tr.Applied, "the message got through and won: not failed")
		res = asynceventtest.Work(ctx, t, c, m, asyncevent.ProcessOptions{})
		assert.Equal(t, asyncevent.OutcomeSucceeded, res.Kind, "%v", res.Err)
	})
	rep := asynceventtest.CheckEvent(t, c, "drop", asynceventtest.CheckOptions{})
	assert.Equal(t, 1, rep.ByStatus[asyncevent.StatusSucceeded])
}

// failDB fails the request's FAILED_FINAL write (the failer dies after its void).
type failDB struct {
	asyncevent.DynamoDB
	on func(in *dynamodb.UpdateItemInput) bool
}

func (f failDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if f.on(in) {
		return nil, &types.InternalServerError{Message: aws.String("died")}
	}
	return f.DynamoDB.UpdateItem(ctx, in, o...)
}

func (f failDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	for _, it := range in.TransactItems {
		if it.Update != nil && f.on(&dynamodb.UpdateItemInput{Key: it.Update.Key, UpdateExpression: it.Update.UpdateExpression, ExpressionAttributeValues: it.Update.ExpressionAttributeValues}) {
			return nil, &types.InternalServerError{Message: aws.String("died")}
		}
	}
	return f.DynamoDB.TransactWriteItems(ctx, in, o...)
}

func isFailFinal(in *dynamodb.UpdateItemInput) bool {
	if !strings.HasPrefix(pkOfKey(in.Key), "REQ#") {
		return false
	}
	for _, v := range in.ExpressionAttributeValues {
		if s, ok := v.(*types.AttributeValueMemberS); ok && s.Value == string(asyncevent.StatusFailedFinal) {
			return true
		}
	}
	return false
}

// A failer under a lease closes the home shard to the request's claims at epoch 0,
// then dies before FAILED_FINAL. The next delivery (no Handler) meets the closed
// shard; with one shard (or every other shard empty) it comes back to it at the next
// epoch, which the close does not stop, rather than end with a "sold out" that is not
// true. Exactly N holds.
func TestAHomeClosedByAFailerThatDiedIsComeBackTo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "drop", EventType: asyncevent.FirstCome, CapacityTotal: 4})
	require.NoError(t, err)
	p, err := c.Rows().Participate(ctx, "drop", "user-f")
	require.NoError(t, err)
	m := messageFor(t, c, p.RequestID, 1)
	fcl, err := asyncevent.New(failDB{DynamoDB: asynceventtest.DynamoDB(t), on: isFailFinal}, asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	refuse := asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error {
		return asyncevent.Permanent(fmt.Errorf("not eligible"))
	})
	res := asynceventtest.Work(ctx, t, fcl, m, asyncevent.ProcessOptions{Handler: refuse})
	t.Logf("failer: %s %v", res.Kind, res.Err)
	before, err := asyncevent.ReadStoredCapacity(ctx, c, "drop")
	require.NoError(t, err)
	require.Contains(t, before.Void, tokenOf(p.RequestID))
	r, err := c.GetRequest(ctx, p.RequestID)
	require.NoError(t, err)
	require.Equal(t, asyncevent.StatusProcessing, r.Status)

	clock.Advance(2 * time.Minute) // the failer's lease ran out
	res = asynceventtest.WorkDelivery(ctx, t, c, queue.Delivery{Body: mustEncode(t, m), ReceiveCount: 2}, asyncevent.ProcessOptions{})
	t.Logf("next delivery: %s %s %v", res.Kind, res.ResultCode, res.Err)
	r, err = c.GetRequest(ctx, p.RequestID)
	require.NoError(t, err)
	capItem, err := c.GetCapacity(ctx, "drop")
	require.NoError(t, err)
	t.Logf("request %s %s; remaining %d", r.Status, r.ResultCode, capItem.CapacityRemaining)
	assert.True(t, r.Status.IsTerminal(), "ends")
	assert.NotEqual(t, asyncevent.ResultRejectedCapacity, r.ResultCode, "REJECTED_CAPACITY (sold out) while %d seats remain", capItem.CapacityRemaining)
}

func mustEncode(t *testing.T, m asyncevent.Message) []byte {
	t.Helper()
	b, err := asyncevent.EncodeMessage(m)
	require.NoError(t, err)
	return b
}

// A message whose capacityShards disagrees with the worker's cached config is
// malformed (Permanent). failFinal has no lease, so it takes the request over to fail
// it, with the event's own shard count: the request ends FAILED_FINAL, not left
// QUEUED.
func TestAWrongShardCountEndsTheRequest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTableWith(t, asyncevent.Options{})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "drop", EventType: asyncevent.FirstCome, CapacityTotal: 4, CapacityShards: 2})
	require.NoError(t, err)
	p, err := c.Rows().Participate(ctx, "drop", "user-m") // leaves the config in c's cache
	require.NoError(t, err)
	m := messageFor(t, c, p.RequestID, 3)
	_, err = c.Rows().MarkQueued(ctx, m.Ref())
	require.NoError(t, err)
	res := asynceventtest.Work(ctx, t, c, m, asyncevent.ProcessOptions{})
	t.Logf("delivery: %s %v", res.Kind, res.Err)
	r, err := c.GetRequest(ctx, p.RequestID)
	require.NoError(t, err)
	t.Logf("request %s %s", r.Status, r.ResultCode)
	assert.True(t, r.Status.IsTerminal(), "a malformed message ends its request (FAILED_SERDE/VALIDATION), not left QUEUED")
}

// Two messages of one Client share a read of the CONFIG under way (getAged). The first
// caller's ctx ends (its invocation's deadline, its shutdown) while the read is under
// way: the read goes on, and the sharer, whose ctx is live, gets its answer.
func TestASharedConfigReadSurvivesTheFirstCallersCancel(t *testing.T) {
	t.Parallel()
	clock := asynceventtest.NewClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	var armed atomic.Bool
	started, release := make(chan struct{}), make(chan struct{})
	db := &hookDB{DynamoDB: asynceventtest.DynamoDB(t)}
	db.get = func(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error, bool) {
		if sk, ok := in.Key["SK"].(*types.AttributeValueMemberS); ok && sk.Value == "CONFIG" && armed.CompareAndSwap(true, false) {
			close(started)
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err(), true
			}
		}
		return nil, nil, false
	}
	c := asynceventtest.NewTableOn(t, db, asyncevent.Options{Clock: clock.Now})
	ctx := context.Background()
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "drop", EventType: asyncevent.FirstCome, CapacityTotal: 10, CapacityShards: 2})
	require.NoError(t, err)
	var ms []asyncevent.Message
	for _, u := range []string{"user-a", "user-b", "user-c"} {
		p, err := c.Rows().Participate(ctx, "drop", u)
		require.NoError(t, err)
		ms = append(ms, messageFor(t, c, p.RequestID, 2))
	}
	work := func(ctx context.Context, m asyncevent.Message) asyncevent.Outcome {
		var got asyncevent.Outcome
		pp := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{OnOutcome: func(o asyncevent.Outcome) { got = o }})
		asynceventtest.Process(ctx, pp, []queue.Delivery{{MessageID: m.RequestID, Receipt: m.RequestID, Body: mustEncode(t, m), ReceiveCount: 1}})
		return got
	}
	require.Equal(t, asyncevent.OutcomeSucceeded, work(ctx, ms[0]).Kind)
	clock.Advance(6 * time.Second)
	armed.Store(true)
	ctxA, cancelA := context.WithCancel(ctx)
	aDone := make(chan asyncevent.Outcome, 1)
	go func() { aDone <- work(ctxA, ms[1]) }()
	<-started
	bDone := make(chan asyncevent.Outcome, 1)
	go func() { bDone <- work(ctx, ms[2]) }()
	time.Sleep(200 * time.Millisecond) // B is waiting on A's read
	cancelA()
	oa := <-aDone
	close(release) // the read A began, which B shares, is answered after A gave up
	ob := <-bDone
	t.Logf("A: %s %v; B: %s %v", oa.Kind, oa.Err, ob.Kind, ob.Err)
	assert.Equal(t, asyncevent.OutcomeSucceeded, ob.Kind, "B's ctx is live")
}

// The ranked admission's write of a wave's home seats is the home claims of its
// requests applied at once: it takes a seat for each and records each token, or takes
// nothing when any one of them would have failed (a token already there, a shard
// closed to one), and a shard short of seats takes the first requests it can seat.
func TestWaveSeats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTableWith(t, asyncevent.Options{})
	const shards = 2
	var events atomic.Int32
	event := func(t *testing.T, seats int64) string {
		id := fmt.Sprintf("wave-%d", events.Add(1))
		_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: id, EventType: asyncevent.FirstCome, CapacityTotal: seats, CapacityShards: shards})
		require.NoError(t, err)
		return id
	}
	// ids returns k request IDs whose home is shard 0.
	ids := func(prefix string, k int) []string {
		var out []string
		for i := 0; len(out) < k; i++ {
			if id := fmt.Sprintf("%s-%d", prefix, i); homeOf(id, shards) == 0 {
				out = append(out, id)
			}
		}
		return out
	}
	lost := func(t *testing.T, err error) {
		t.Helper()
		require.Error(t, err)
		assert.Contains(t, err.Error(), `the condition of "first-come wave seats" failed`)
	}

	t.Run("takes a seat for each request and records each token", func(t *testing.T) {
		ev := event(t, 40) // 20 seats on each shard
		wave := ids("a", 5)
		taken, emptied, err := asyncevent.ClaimWaveSeats(ctx, c, ev, shards, 0, wave)
		require.NoError(t, err)
		assert.Equal(t, 5, taken)
		assert.False(t, emptied)
		s := shardItem(t, c, ev, 0)
		assert.EqualValues(t, 15, s.CapacityRemaining)
		for _, id := range wave {
			assert.Contains(t, s.Holders, tokenOf(id))
		}
	})

	t.Run("a request already holding its seat there: nothing taken", func(t *testing.T) {
		ev := event(t, 40)
		wave := ids("b", 4)
		_, _, err := asyncevent.ClaimWaveSeats(ctx, c, ev, shards, 0, wave[1:3])
		require.NoError(t, err)
		taken, _, err := asyncevent.ClaimWaveSeats(ctx, c, ev, shards, 0, wave)
		lost(t, err)
		assert.Zero(t, taken)
		assert.EqualValues(t, 18, shardItem(t, c, ev, 0).CapacityRemaining, "only the first write's two seats")
	})

	t.Run("a shard closed to one request: nothing taken", func(t *testing.T) {
		ev := event(t, 40)
		// A request whose send failed: its home shard is closed to it.
		var closed string
		for i := 0; closed == ""; i++ {
			user := fmt.Sprintf("user-%d", i)
			p, err := c.Rows().Participate(ctx, ev, user)
			require.NoError(t, err)
			if homeOf(p.RequestID, shards) == 0 {
				closed = p.RequestID
				tr, err := c.Rows().MarkEnqueueFailed(ctx, asyncevent.RequestRef{RequestID: closed, EventID: ev, UserID: user}, errors.New("send: refused"))
				require.NoError(t, err)
				require.True(t, tr.Applied)
			}
		}
		require.Contains(t, shardItem(t, c, ev, 0).Void, tokenOf(closed))
		taken, _, err := asyncevent.ClaimWaveSeats(ctx, c, ev, shards, 0, append(ids("c", 3), closed))
		lost(t, err)
		assert.Zero(t, taken)
		s := shardItem(t, c, ev, 0)
		assert.EqualValues(t, 20, s.CapacityRemaining)
		assert.Empty(t, s.Holders)
	})

	t.Run("a shard short of seats takes the first requests it can seat", func(t *testing.T) {
		ev := event(t, 6) // 3 seats on each shard
		wave := ids("d", 5)
		taken, emptied, err := asyncevent.ClaimWaveSeats(ctx, c, ev, shards, 0, wave)
		require.NoError(t, err)
		assert.Equal(t, 3, taken)
		assert.True(t, emptied, "the shard's last seats")
		s := shardItem(t, c, ev, 0)
		assert.Zero(t, s.CapacityRemaining)
		assert.ElementsMatch(t, []string{tokenOf(wave[0]), tokenOf(wave[1]), tokenOf(wave[2])}, s.Holders)
	})

	t.Run("one seat left, or fewer than two requests: nothing taken", func(t *testing.T) {
		ev := event(t, 2) // 1 seat on each shard
		taken, _, err := asyncevent.ClaimWaveSeats(ctx, c, ev, shards, 0, ids("e", 3))
		lost(t, err)
		assert.Zero(t, taken)
		_, _, err = asyncevent.ClaimWaveSeats(ctx, c, ev, shards, 0, ids("e", 1))
		require.Error(t, err)
		_, _, err = asyncevent.ClaimWaveSeats(ctx, c, ev, shards, 0, ids("e", asyncevent.MaxWaveClaim+1))
		require.Error(t, err)
		assert.EqualValues(t, 1, shardItem(t, c, ev, 0).CapacityRemaining)
	})

	t.Run("the widest write is accepted", func(t *testing.T) {
		ev := event(t, 2*asyncevent.MaxWaveClaim)
		taken, emptied, err := asyncevent.ClaimWaveSeats(ctx, c, ev, shards, 0, ids("f", asyncevent.MaxWaveClaim))
		require.NoError(t, err)
		assert.Equal(t, asyncevent.MaxWaveClaim, taken)
		assert.True(t, emptied)
	})
}
