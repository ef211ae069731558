package asyncevent_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// review26Pool reads an event's pool (its Returns item) as the table holds it.
func review26Pool(t *testing.T, c *asyncevent.Client, eventID string) (remaining int64, holders []string) {
	t.Helper()
	for _, raw := range asynceventtest.ScanTable(t, c.TableName()) {
		if pk, ok := raw["PK"].(*types.AttributeValueMemberS); ok && pk.Value == "EVENT#"+eventID+"#RETURNS" {
			var r struct {
				CapacityRemaining int64    `dynamodbav:"capacityRemaining"`
				Holders           []string `dynamodbav:"holders,stringset"`
			}
			require.NoError(t, attributevalue.UnmarshalMap(raw, &r))
			return r.CapacityRemaining, r.Holders
		}
	}
	return 0, nil
}

// A pool claim that took its seat and whose SUCCEEDED failed: the next delivery
// (after the lease ran out) takes the request over, claims on the pool again (its
// seatShard names it), meets its token (the holders set) and binds that seat: one
// seat, not two.
func TestReview26PoolSeatOfARedeliveryIsTakenOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	var armed, poolClaimed, failed atomic.Bool
	var target atomic.Value
	db := &hookDB{DynamoDB: asynceventtest.DynamoDB(t)}
	db.update = func(ctx context.Context, in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error, bool) {
		if !armed.Load() {
			return nil, nil, false
		}
		pk := pkOfKey(in.Key)
		if pk == "EVENT#redo#RETURNS" && isSeatClaim(in) {
			out, err := db.DynamoDB.UpdateItem(ctx, in)
			if err == nil {
				poolClaimed.Store(true)
			}
			return out, err, true
		}
		if id, _ := target.Load().(string); poolClaimed.Load() && pk == "REQ#"+id && !failed.Swap(true) {
			return nil, errors.New("injected: the SUCCEEDED write is lost"), true
		}
		return nil, nil, false
	}
	c := asynceventtest.NewTableOn(t, db, asyncevent.Options{Clock: clock.Now})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "redo", EventType: asyncevent.FirstCome, CapacityTotal: 1})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	submitAll(t, c, clock, q, "redo", 2)
	drain(t, proc, q)
	up, err := c.AddCapacity(ctx, "redo", asyncevent.AddCapacityInput{Seats: 1, Actor: "ops"})
	require.NoError(t, err)
	require.True(t, up.Applied)

	p, err := c.Submit(ctx, q, "redo", "pool-user")
	require.NoError(t, err)
	target.Store(p.RequestID)
	armed.Store(true)
	m := messageFor(t, c, p.RequestID, 1)
	first := asynceventtest.Work(ctx, t, c, m, asyncevent.ProcessOptions{})
	require.True(t, poolClaimed.Load(), "the first delivery claimed on the pool")
	require.True(t, failed.Load(), "and its SUCCEEDED failed")
	assert.True(t, first.Redeliver, "%+v", first.Outcome)

	clock.Advance(10 * time.Minute) // the first delivery's lease has run out
	second := asynceventtest.Work(ctx, t, c, m, asyncevent.ProcessOptions{})
	assert.Equal(t, asyncevent.OutcomeSucceeded, second.Kind, "%+v", second.Outcome)
	third := asynceventtest.Work(ctx, t, c, m, asyncevent.ProcessOptions{})
	assert.Equal(t, asyncevent.OutcomeDuplicate, third.Kind)
	remaining, holders := review26Pool(t, c, "redo")
	assert.Zero(t, remaining)
	assert.Equal(t, []string{tokenOf(p.RequestID)}, holders, "one seat, the request's")
	r, err := asyncevent.ReadStoredRequest(ctx, c, p.RequestID)
	require.NoError(t, err)
	require.NotNil(t, r.SeatShard)
	assert.Equal(t, 1, *r.SeatShard, "its seatShard names the pool (shard C)")
	asynceventtest.CheckEvent(t, c, "redo", asynceventtest.CheckOptions{})
}

// Two cancels of the same winner at once (a double click, two admins): one applies,
// the other is refused with the request as it now stands; one audit entry, one seat
// on the pool.
func TestReview26TwoCancelsOfOneWinnerApplyOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now, StatusLog: true})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "twice", EventType: asyncevent.FirstCome, CapacityTotal: 2, CapacityShards: 2})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := submitAll(t, c, clock, q, "twice", 3)
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)
	winner := byStatus(t, c, ids)[asyncevent.StatusSucceeded][0]

	for round := range 5 {
		_ = round
		var wg sync.WaitGroup
		var applied atomic.Int32
		for range 4 {
			wg.Go(func() {
				up, err := c.CancelRequest(ctx, winner, asyncevent.CancelRequestInput{Actor: "ops"})
				assert.NoError(t, err)
				if up.Applied {
					applied.Add(1)
				} else {
					assert.Equal(t, asyncevent.StatusRejected, up.Request.Status)
				}
			})
		}
		wg.Wait()
		if round == 0 {
			assert.EqualValues(t, 1, applied.Load(), "one cancel applies")
		} else {
			assert.Zero(t, applied.Load())
		}
	}
	trail, err := c.ListAudit(ctx, "twice")
	require.NoError(t, err)
	assert.Len(t, trail, 1)
	remaining, _ := review26Pool(t, c, "twice")
	assert.EqualValues(t, 1, remaining)
	asynceventtest.CheckEvent(t, c, "twice", asynceventtest.CheckOptions{})
}

// A cutoff never moves once the draw began, whatever the clocks: with a Draw run by
// a process whose clock is two hours ahead (so that its draw begins while the
// operator's clock still puts the cutoff an hour away), ExtendEvent's ConditionCheck
// of the Draw record (phase = COLLECTING) refuses the move and writes nothing.
func TestReview26CutoffDoesNotMoveOnceTheDrawBegan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	ahead := asynceventtest.NewClock(t0.Add(2 * time.Hour))
	drawer, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: ahead.Now})
	require.NoError(t, err)
	_, err = c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "skew", EventType: asyncevent.Lottery, WinnerCount: 1,
		LotteryCutoffAt: asyncevent.MillisOf(t0.Add(time.Hour))})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	submitAll(t, c, clock, q, "skew", 3)
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)
	_, err = drawer.Draw(ctx, "skew")
	require.NoError(t, err)

	before := itemsOf(t, c)
	up, err := c.ExtendEvent(ctx, "skew", "ops", asyncevent.ActionExtendCutoff, t0.Add(3*time.Hour))
	require.NoError(t, err)
	assert.False(t, up.Applied, "the draw began: the cutoff stays")
	assert.Contains(t, up.Reason, "the draw began")
	assert.Equal(t, before, itemsOf(t, c))
}

// Seats added after the pool ran dry, twice: each time the next request in queue
// order wins the new seat on the worker that found the pool empty before (a dry
// memory never hides a later version).
func TestReview26SeatsAddedAgainAfterThePoolRanDry(t *testing.T) {
	for _, shards := range []int{1, 3} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			clock := asynceventtest.NewClock(t0)
			c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
			_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "again", EventType: asyncevent.FirstCome, CapacityTotal: 3, CapacityShards: shards})
			require.NoError(t, err)
			q := queue.NewMemory(queue.MemoryOptions{})
			proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
			submitAll(t, c, clock, q, "again", 5)
			drain(t, proc, q)
			user := 0
			for round := range 3 {
				up, err := c.AddCapacity(ctx, "again", asyncevent.AddCapacityInput{Seats: 1, Actor: "ops"})
				require.NoError(t, err)
				require.True(t, up.Applied, up.Reason)
				var ids []string
				for range 3 {
					p, err := c.Submit(ctx, q, "again", fmt.Sprintf("r%d", user))
					require.NoError(t, err)
					user++
					ids = append(ids, p.RequestID)
					clock.Advance(time.Millisecond)
				}
				drain(t, proc, q)
				got := byStatus(t, c, ids)
				assert.Equal(t, ids[:1], got[asyncevent.StatusSucceeded], "round %d: the next request wins the added seat", round)
			}
			asynceventtest.CheckEvent(t, c, "again", asynceventtest.CheckOptions{})
		})
	}
}

// The event list's cursor is checked: a cursor of another partition, or of the
// EVENTS partition with a sort key the list never wrote, is ErrInvalidCursor, not a
// DynamoDB error or a page of something else.
func TestReview26EventListCursorTampering(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	for i := range 3 {
		_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: fmt.Sprintf("e%d", i), EventType: asyncevent.FirstCome, CapacityTotal: 1})
		require.NoError(t, err)
		clock.Advance(time.Millisecond)
	}
	page, err := c.ListEvents(ctx, 1, "")
	require.NoError(t, err)
	require.NotEmpty(t, page.NextCursor)
	for name, key := range map[string]map[string]string{
		"another partition":      {"PK": "EVENT#e0", "SK": "CONFIG"},
		"an SK never written":    {"PK": "EVENTS", "SK": "CONFIG"},
		"a short createdAt":      {"PK": "EVENTS", "SK": "CAT#1#EVENT#e0"},
		"an extra attribute":     {"PK": "EVENTS", "SK": "CAT#0000000000001#EVENT#e0", "GSI1PK": "USER#x"},
		"another user's listing": {"GSI1PK": "USER#x", "GSI1SK": "QAT#0000000000001#REQ#r", "PK": "REQ#r", "SK": "META"},
	} {
		cursor := review26Cursor(t, key)
		_, err := c.ListEvents(ctx, 1, cursor)
		assert.ErrorIs(t, err, asyncevent.ErrInvalidCursor, name)
	}
}

// review26Cursor encodes key as the library's cursors are: base64url of its JSON.
func review26Cursor(t *testing.T, key map[string]string) string {
	t.Helper()
	b, err := json.Marshal(key)
	require.NoError(t, err)
	return base64.RawURLEncoding.EncodeToString(b)
}

// txHook runs before once the first TransactWriteItems that writes the table's
// CONFIG of eventID with an ADD (AddCapacity's), then passes every call through.
type txHook struct {
	asyncevent.DynamoDB
	once   sync.Once
	before func()
}

func (h *txHook) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	for _, it := range in.TransactItems {
		if it.Update != nil && pkOfKey(it.Update.Key) == "EVENT#emptied" && strings.Contains(*it.Update.UpdateExpression, "ADD") {
			h.once.Do(h.before)
			break
		}
	}
	return h.DynamoDB.TransactWriteItems(ctx, in, o...)
}

// A shard emptied between AddCapacity's read and its write (a claim took the last
// seat, the worker remembers the sell-out): the shard's condition refuses the write,
// AddCapacity reads again and puts the seats on the pool, and the next request, on
// the worker that saw the sell-out, wins one. Exactly N.
func TestReview26ShardEmptiedBetweenAddsReadAndWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	h := &txHook{DynamoDB: asynceventtest.DynamoDB(t)}
	c := asynceventtest.NewTableOn(t, h, asyncevent.Options{Clock: clock.Now})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "emptied", EventType: asyncevent.FirstCome, CapacityTotal: 2, CapacityShards: 2})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	first := submitAll(t, c, clock, q, "emptied", 1)
	drain(t, proc, q)
	p, err := c.Submit(ctx, q, "emptied", "last-seat") // takes the last seat, inside the add
	require.NoError(t, err)
	last := []string{p.RequestID}
	h.before = func() { drain(t, proc, q) }

	up, err := c.AddCapacity(ctx, "emptied", asyncevent.AddCapacityInput{Seats: 2, Actor: "ops"})
	require.NoError(t, err)
	require.True(t, up.Applied, up.Reason)
	trail, err := c.ListAudit(ctx, "emptied")
	require.NoError(t, err)
	require.Len(t, trail, 1)
	assert.Equal(t, "2 seats: 0 on shards, 2 on the pool", trail[0].Detail)
	got := byStatus(t, c, append(first, last...))
	require.Len(t, got[asyncevent.StatusSucceeded], 2, "the sale sold out inside the add")

	var next []string
	for i := range 3 {
		p, err := c.Submit(ctx, q, "emptied", fmt.Sprintf("next-%d", i))
		require.NoError(t, err)
		next = append(next, p.RequestID)
		clock.Advance(time.Millisecond)
	}
	drain(t, proc, q)
	assert.Equal(t, next[:2], byStatus(t, c, next)[asyncevent.StatusSucceeded])
	asynceventtest.CheckEvent(t, c, "emptied", asynceventtest.CheckOptions{})
}

// A pool claim whose lease runs out while the claim is on its way (it lands after
// the lease's end): whichever delivery ends the request, it holds one seat, the
// pool's, and the next delivery meets it there.
func TestReview26PoolClaimLandingAfterItsLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	var armed atomic.Bool
	db := &hookDB{DynamoDB: asynceventtest.DynamoDB(t)}
	db.update = func(ctx context.Context, in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error, bool) {
		if armed.Load() && pkOfKey(in.Key) == "EVENT#late#RETURNS" && isSeatClaim(in) {
			out, err := db.DynamoDB.UpdateItem(ctx, in)
			clock.Advance(10 * time.Minute) // the claim landed after the lease ran out
			return out, err, true
		}
		return nil, nil, false
	}
	c := asynceventtest.NewTableOn(t, db, asyncevent.Options{Clock: clock.Now})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "late", EventType: asyncevent.FirstCome, CapacityTotal: 2, CapacityShards: 2})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	submitAll(t, c, clock, q, "late", 3)
	drain(t, proc, q)
	up, err := c.AddCapacity(ctx, "late", asyncevent.AddCapacityInput{Seats: 2, Actor: "ops"})
	require.NoError(t, err)
	require.True(t, up.Applied)

	p, err := c.Submit(ctx, q, "late", "slow-claim")
	require.NoError(t, err)
	m := messageFor(t, c, p.RequestID, 2)
	armed.Store(true)
	first := asynceventtest.Work(ctx, t, c, m, asyncevent.ProcessOptions{})
	armed.Store(false)
	t.Logf("first delivery: %+v", first.Outcome)
	second := asynceventtest.Work(ctx, t, c, m, asyncevent.ProcessOptions{})
	t.Logf("second delivery: %+v", second.Outcome)
	r, err := c.GetRequest(ctx, p.RequestID)
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusSucceeded, r.Status)
	remaining, holders := review26Pool(t, c, "late")
	assert.EqualValues(t, 1, remaining, "one of the two added seats taken")
	assert.Equal(t, []string{tokenOf(p.RequestID)}, holders)
	asynceventtest.CheckEvent(t, c, "late", asynceventtest.CheckOptions{})
}
