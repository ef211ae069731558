package asyncevent_test

// The home claim at its edges: a home shard closed by a failer that died, a message's
// shard count, a shared config read.

import (
	"context"
	"fmt"
	"strings"
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
	p, err := c.Participate(ctx, "drop", "user-f")
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
	p, err := c.Participate(ctx, "drop", "user-m") // leaves the config in c's cache
	require.NoError(t, err)
	m := messageFor(t, c, p.RequestID, 3)
	_, err = c.MarkQueued(ctx, m.Ref())
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
		p, err := c.Participate(ctx, "drop", u)
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
