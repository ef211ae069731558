package asyncevent_test

// The home claim at its edges: interleavings of claims without a lease, leased
// claims, give-backs and config copies. Each test's comment names the interleaving.

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash/fnv"
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

func isClaimOn(in *dynamodb.UpdateItemInput, pk string) bool {
	return pkOfKey(in.Key) == pk && isSeatClaim(in)
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
		p, err := c.Participate(ctx, "drop", "user-late")
		require.NoError(t, err)
		m := messageFor(t, c, p.RequestID, 2)
		tr, err := c.MarkEnqueueFailed(ctx, m.Ref(), fmt.Errorf("send: timeout"))
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
		p, err := c.Participate(ctx, "drop", "user-fast")
		require.NoError(t, err)
		m := messageFor(t, c, p.RequestID, 2)
		dying, err := asyncevent.New(failSucceeded{asynceventtest.DynamoDB(t)}, asyncevent.Options{TableName: c.TableName()})
		require.NoError(t, err)
		res := asynceventtest.Work(ctx, t, dying, m, asyncevent.ProcessOptions{})
		t.Logf("the worker that took the seat and died: %s %v", res.Kind, res.Err)
		require.Contains(t, shardItem(t, c, "drop", homeOf(m.RequestID, 2)).Holders, tokenOf(m.RequestID))

		tr, err := c.MarkEnqueueFailed(ctx, m.Ref(), fmt.Errorf("send: timeout"))
		require.NoError(t, err)
		assert.False(t, tr.Applied, "the message got through and won: not failed")
		res = asynceventtest.Work(ctx, t, c, m, asyncevent.ProcessOptions{})
		assert.Equal(t, asyncevent.OutcomeSucceeded, res.Kind, "%v", res.Err)
	})
	rep := asynceventtest.CheckEvent(t, c, "drop", asynceventtest.CheckOptions{})
	assert.Equal(t, 1, rep.ByStatus[asyncevent.StatusSucceeded])
}
