package asyncevent_test

// The seat claim at its edges: a heartbeat that finds its lease taken, a last receive
// without a lease, a lost record of an emptied shard, a shard's growing cost. Each
// test's comment names the interleaving it holds the claim to.

import (
	"context"
	"errors"
	"fmt"
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

// isHeartbeat tells the "lease heartbeat" row (and the lease release, the same row):
// an UpdateItem that sets leaseExpiresAt without starting the request.
func isHeartbeat(in *dynamodb.UpdateItemInput) bool {
	names := map[string]bool{}
	for _, n := range in.ExpressionAttributeNames {
		names[n] = true
	}
	return names["leaseExpiresAt"] && !names["startedAt"]
}

// heartbeatGate fails the lease heartbeat's writes while block is set (a network
// partition, or the hot index key throttling them), and counts those it lets through.
type heartbeatGate struct {
	asyncevent.DynamoDB
	block  atomic.Bool
	passed atomic.Int32
}

func (g *heartbeatGate) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if isHeartbeat(in) {
		if g.block.Load() {
			return nil, errors.New("heartbeat: network unreachable")
		}
		defer g.passed.Add(1)
	}
	return g.DynamoDB.UpdateItem(ctx, in, optFns...)
}

// refuseKey answers ProvisionedThroughputExceeded to every seat claim (an UpdateItem
// that adds to holders) on one partition key: a capacity shard over its share for
// this worker while its claims are sent; the close that lets the claim leave the
// shard gets through, as a write does once a throttle has passed.
type refuseKey struct {
	asyncevent.DynamoDB
	pk func() string
}

func (r refuseKey) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if pk, ok := in.Key["PK"].(*types.AttributeValueMemberS); ok && pk.Value == r.pk() && isSeatClaim(in) {
		return nil, &types.ProvisionedThroughputExceededException{Message: aws.String("refused: the shard is over its share")}
	}
	return r.DynamoDB.UpdateItem(ctx, in, optFns...)
}

// A delivery whose lease heartbeat finds the request taken over (its condition lost)
// sends no seat claim after it, whatever its clock says. Two shards of one seat, users
// R and U: worker A starts R on shard X, its handler runs long and its heartbeat's
// writes fail, so R's lease runs out in the table; worker B takes R over, X refuses B
// for throughput, B waits the claim fence, reads X (no token), moves to Y and wins
// there; A's heartbeat then gets through and loses its condition. Were that taken for
// a renewed lease, A's handler would return and A claim a second seat for R on X, and
// U would be refused with a seat unspent.
func TestAHeartbeatThatFindsItsLeaseTakenStopsTheClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	gate := &heartbeatGate{DynamoDB: asynceventtest.DynamoDB(t)}
	gate.block.Store(true)
	a := asynceventtest.NewTableOn(t, gate, asyncevent.Options{})
	clean, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: a.TableName()})
	require.NoError(t, err)
	_, err = a.CreateEvent(ctx, asyncevent.EventSettings{EventID: "drop", EventType: asyncevent.FirstCome, CapacityTotal: 2, CapacityShards: 2})
	require.NoError(t, err)

	q := queue.NewMemory(queue.MemoryOptions{})
	pr, err := a.Submit(ctx, q, "drop", "user-r")
	require.NoError(t, err)
	pu, err := a.Participate(ctx, "drop", "user-u")
	require.NoError(t, err)

	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	outcomes := make(chan asyncevent.Outcome, 8)
	runWorker(t, a, q, asyncevent.WorkerOptions{
		Concurrency: 1, VisibilityTimeout: 2 * time.Second,
		ProcessOptions: asyncevent.ProcessOptions{
			LeaseDuration: 2 * time.Second,
			Handler: asyncevent.HandlerFunc(func(ctx context.Context, m asyncevent.Message) error {
				first := false
				once.Do(func() { first = true })
				if first {
					close(started)
					<-release
				}
				return nil
			}),
			OnOutcome: func(o asyncevent.Outcome) { outcomes <- o },
		},
	})
	<-started
	r, err := asyncevent.ReadStoredRequest(ctx, clean, pr.RequestID)
	require.NoError(t, err)
	require.NotNil(t, r.SeatShard)
	x := *r.SeatShard
	hotPK := fmt.Sprintf("EVENT#drop#CAPACITY#%d", x)

	time.Sleep(2500 * time.Millisecond) // A's lease runs out in the table
	bdb := refuseKey{DynamoDB: asynceventtest.DynamoDB(t), pk: func() string { return hotPK }}
	b, err := asyncevent.New(bdb, asyncevent.Options{TableName: a.TableName()})
	require.NoError(t, err)
	m := asyncevent.Message{V: asyncevent.MessageVersion, RequestID: r.RequestID, EventID: r.EventID, UserID: r.UserID, EventType: r.EventType, RequestedAt: r.RequestedAt}
	res := asynceventtest.Work(ctx, t, b, m, asyncevent.ProcessOptions{LeaseDuration: 30 * time.Second})
	require.Equal(t, asyncevent.OutcomeSucceeded, res.Kind, "B takes R over and wins on the other shard: %v", res.Err)
	r, err = asyncevent.ReadStoredRequest(ctx, clean, pr.RequestID)
	require.NoError(t, err)
	require.NotEqual(t, x, *r.SeatShard, "B moved R's claim off the refusing shard")

	gate.block.Store(false)
	eventually(t, "A's heartbeat writes its lease again", func() bool { return gate.passed.Load() > 0 })
	close(release)
	select {
	case o := <-outcomes:
		t.Logf("A's delivery: %s %v", o.Kind, o.Err)
	case <-time.After(30 * time.Second):
		t.Fatal("A's delivery did not end")
	}

	mu := asyncevent.Message{V: asyncevent.MessageVersion, RequestID: pu.RequestID, EventID: "drop", UserID: "user-u", EventType: asyncevent.FirstCome, RequestedAt: r.RequestedAt}
	resU := asynceventtest.Work(ctx, t, clean, mu, asyncevent.ProcessOptions{})
	capItem, err := asyncevent.ReadStoredCapacity(ctx, clean, "drop")
	require.NoError(t, err)
	for i, s := range capItem.Shards {
		t.Logf("shard %d: remaining %d holders %v", i, s.CapacityRemaining, s.Holders)
	}
	assert.Equal(t, asyncevent.OutcomeSucceeded, resU.Kind, "2 seats, 2 users: U must win (%v)", resU.Err)
	require.NotNil(t, r.SeatShard)
	require.Len(t, capItem.Shards[*r.SeatShard].Holders, 1, "R's seat, where B took it")
	assert.NotContains(t, capItem.Shards[x].Holders, capItem.Shards[*r.SeatShard].Holders[0], "the old delivery must not take a seat for R on the shard B left")
	asynceventtest.CheckEvent(t, clean, "drop", asynceventtest.CheckOptions{Users: []string{"user-r", "user-u"}})
}

// failStart answers InternalServerError to the first start of a request it sees (a
// retryable failure that is no throttle): the delivery's own start. The start of the
// takeover that its final failure then needs goes through.
type failStart struct {
	asyncevent.DynamoDB
	failed atomic.Bool
}

func (f *failStart) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	for _, n := range in.ExpressionAttributeNames {
		if n == "startedAt" && f.failed.CompareAndSwap(false, true) {
			return nil, &types.InternalServerError{Message: aws.String("start failed")}
		}
	}
	return f.DynamoDB.UpdateItem(ctx, in, optFns...)
}

// A delivery that holds no lease (its own start failed) on its last receive still
// ends a first-come request an earlier delivery started and left: only a lease
// holder may fail a started first-come request, so it takes the request over (a
// start under a lease of its own), looks at its shard, and ends it FAILED_FINAL
// before its message goes to the dead-letter queue (design invariant 5).
func TestTheLastReceiveEndsARequestAnEarlierDeliveryStarted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "drop", EventType: asyncevent.FirstCome, CapacityTotal: 2, CapacityShards: 2})
	require.NoError(t, err)
	p, err := c.Participate(ctx, "drop", "user-r")
	require.NoError(t, err)
	r, err := c.GetRequest(ctx, p.RequestID)
	require.NoError(t, err)
	m := asyncevent.Message{V: asyncevent.MessageVersion, RequestID: r.RequestID, EventID: r.EventID, UserID: r.UserID, EventType: r.EventType, RequestedAt: r.RequestedAt}

	// Delivery 1 starts R and dies.
	st, err := c.StartProcessing(ctx, m.Ref(), asyncevent.Lease{Owner: "dead-worker", Duration: 30 * time.Second})
	require.NoError(t, err)
	require.True(t, st.Applied)
	clock.Advance(time.Minute)

	broken, err := asyncevent.New(&failStart{DynamoDB: asynceventtest.DynamoDB(t)}, asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	body, err := asyncevent.EncodeMessage(m)
	require.NoError(t, err)
	res := asynceventtest.WorkDelivery(ctx, t, broken, queue.Delivery{Body: body, ReceiveCount: asyncevent.DefaultMaxReceives}, asyncevent.ProcessOptions{})
	t.Logf("last receive: %s redeliver=%v %v", res.Kind, res.Redeliver, res.Err)
	after, err := c.GetRequest(ctx, p.RequestID)
	require.NoError(t, err)
	assert.True(t, after.Status.IsTerminal(), "the last receive must leave R final, not %s (its message now goes to the DLQ)", after.Status)
}

// dropFirstEmptyRecord fails the first write of a shard to the event's emptyShards,
// as a worker that crashes between the claim that takes a shard's last seat and that
// record (or whose one-shot record is throttled or times out) leaves it.
type dropFirstEmptyRecord struct {
	asyncevent.DynamoDB
	dropped atomic.Bool
}

func (d *dropFirstEmptyRecord) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	for _, n := range in.ExpressionAttributeNames {
		if n == "emptyShards" && d.dropped.CompareAndSwap(false, true) {
			return nil, errors.New("the worker died before recording the empty shard")
		}
	}
	return d.DynamoDB.UpdateItem(ctx, in, optFns...)
}

// With capacity shards the claim that takes a shard's last seat records it on the
// CONFIG, once. When that record is lost (a crash between the two writes, a throttle),
// the first worker that meets the shard empty and finds the CONFIG without it
// records it, which marks every shard sold out, so that every worker new to the event
// after it rejects a loser of the sold-out event in two calls: the read of its home
// shard and the rejection.
func TestALostEmptyShardRecordIsHealed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const shards = 4
	drop := &dropFirstEmptyRecord{DynamoDB: asynceventtest.DynamoDB(t)}
	c := asynceventtest.NewTableOn(t, drop, asyncevent.Options{})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "drop", EventType: asyncevent.FirstCome, CapacityTotal: shards, CapacityShards: shards})
	require.NoError(t, err)
	var ms []asyncevent.Message
	var names []string
	for i := range shards + 8 {
		u := fmt.Sprintf("user-%02d", i)
		names = append(names, u)
		p, err := c.Participate(ctx, "drop", u)
		require.NoError(t, err)
		ms = append(ms, asyncevent.Message{V: asyncevent.MessageVersion, RequestID: p.RequestID, EventID: "drop", UserID: u, EventType: asyncevent.FirstCome, RequestedAt: asyncevent.EpochMillis(time.Now().UnixMilli()), CapacityShards: shards})
	}
	p := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	for _, m := range ms[:shards+2] { // sells out; two losers on the same worker
		body, err := asyncevent.EncodeMessage(m)
		require.NoError(t, err)
		asynceventtest.Process(ctx, p, []queue.Delivery{{MessageID: m.RequestID, Body: body, ReceiveCount: 1}})
	}
	require.True(t, drop.dropped.Load(), "one record was lost")
	for i, m := range ms[shards+2:] { // a new worker per loser
		counted := asynceventtest.NewCounter(asynceventtest.DynamoDB(t))
		fresh, err := asyncevent.New(counted, asyncevent.Options{ProgressEvery: -1, TableName: c.TableName()})
		require.NoError(t, err)
		res := asynceventtest.Work(ctx, t, fresh, m, asyncevent.ProcessOptions{})
		require.Equal(t, asyncevent.OutcomeRejected, res.Kind, "%v", res.Err)
		total := 0
		for _, n := range counted.Snapshot().Calls {
			total += n
		}
		if i == 0 {
			// The first worker that meets the unrecorded shard pays a claim on it,
			// reads the CONFIG and records it (the heal), which completes the list
			// and marks every shard sold out...
			assert.LessOrEqual(t, total, 8+shards, "the loser that heals the record: %v", counted.Snapshot().Calls)
			continue
		}
		// ...and every worker new to the event after it rejects in two calls: a
		// read of the home shard, which carries the mark, and the rejection.
		assert.LessOrEqual(t, total, 2, "a loser of a sold-out event on a new worker: %v", counted.Snapshot().Calls)
	}
	ev, err := asyncevent.ReadEventBookkeeping(ctx, c, "drop")
	require.NoError(t, err)
	assert.Len(t, ev.EmptyShards, shards, "the sell-out is on the CONFIG after the losers met the shard empty")
	asynceventtest.CheckEvent(t, c, "drop", asynceventtest.CheckOptions{Users: names})
}

// consumed asks DynamoDB for the capacity every UpdateItem consumes, and keeps the
// write units of the last one on a capacity item.
type consumed struct {
	asyncevent.DynamoDB
	mu   sync.Mutex
	last []float64
}

func (c *consumed) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	sk, _ := in.Key["SK"].(*types.AttributeValueMemberS)
	if sk == nil || sk.Value != "CAPACITY" {
		return c.DynamoDB.UpdateItem(ctx, in, optFns...)
	}
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := c.DynamoDB.UpdateItem(ctx, in, optFns...)
	var cc *types.ConsumedCapacity
	if out != nil {
		cc = out.ConsumedCapacity
	}
	var ccf *types.ConditionalCheckFailedException
	_ = errors.As(err, &ccf)
	c.mu.Lock()
	defer c.mu.Unlock()
	if cc != nil && cc.CapacityUnits != nil {
		c.last = append(c.last, *cc.CapacityUnits)
	} else {
		c.last = append(c.last, -1) // not reported (a failed condition reports none)
	}
	return out, err
}

// A seat claim's cost grows with the seats its shard holds (its seat tokens, about 12
// bytes a winner), so the library's layout counts the seats: CreateEvent refuses more
// than MaxSeatsPerShard on a shard, and ShardForPeak gives a FIRST_COME event at least
// one shard per 128 seats, so that the last claim of a full shard costs the 2 WCU the
// rule counts, not the hundred it would on one shard of 10,000.
func TestTheLayoutCountsWhatAClaimCosts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const seats = 10000
	meter := &consumed{DynamoDB: asynceventtest.DynamoDB(t)}
	c := asynceventtest.NewTableOn(t, meter, asyncevent.Options{})
	k, cShards := asyncevent.ShardsFor(1000, 0)
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "one-shard", EventType: asyncevent.FirstCome, CapacityTotal: seats, IndexShards: k, CapacityShards: cShards})
	require.ErrorIs(t, err, asyncevent.ErrInvalidEvent, "%d seats on %d shards: over MaxSeatsPerShard", seats, cShards)

	cfg := asyncevent.EventSettings{EventID: "drop", EventType: asyncevent.FirstCome, CapacityTotal: seats}
	cfg.ShardForPeak(1000)
	t.Logf("ShardForPeak(1000 clicks/s) = K %d, C %d for %d seats", cfg.IndexShards, cfg.CapacityShards, seats)
	_, err = c.CreateEvent(ctx, cfg)
	require.NoError(t, err)

	// Every shard as it is after all but one of its seats went: their tokens.
	raw := asynceventtest.DynamoDB(t)
	perShard := (seats + cfg.CapacityShards - 1) / cfg.CapacityShards
	for shard := range cfg.CapacityShards {
		tokens := make([]string, perShard-1)
		for i := range tokens {
			tokens[i] = fmt.Sprintf("t%03d%07d", shard, i) // 11 bytes, as a seat token
		}
		_, err = raw.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(c.TableName()),
			Key: map[string]types.AttributeValue{
				"PK": &types.AttributeValueMemberS{Value: fmt.Sprintf("EVENT#drop#CAPACITY#%d", shard)},
				"SK": &types.AttributeValueMemberS{Value: "CAPACITY"},
			},
			UpdateExpression:          aws.String("SET capacityRemaining = :one ADD holders :t"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}, ":t": &types.AttributeValueMemberSS{Value: tokens}},
		})
		require.NoError(t, err)
	}

	lease := asyncevent.Lease{Owner: "w", Duration: time.Minute}
	for _, u := range []string{"last-winner", "a-loser"} {
		p, err := c.Participate(ctx, "drop", u)
		require.NoError(t, err)
		ref := asyncevent.RequestRef{RequestID: p.RequestID, EventID: "drop", UserID: u}
		st, err := c.StartProcessing(ctx, ref, lease)
		require.NoError(t, err)
		require.True(t, st.Applied)
		_, err = c.ClaimSeat(ctx, ref, lease)
		require.NoError(t, err)
	}
	meter.mu.Lock()
	defer meter.mu.Unlock()
	t.Logf("write units of the claims on the shard: %v", meter.last)
	require.NotEmpty(t, meter.last)
	assert.LessOrEqual(t, meter.last[0], 2.0, "the last seat of a shard of the library's layout: %v WCU for one claim", meter.last[0])
}
