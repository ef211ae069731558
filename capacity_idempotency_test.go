package asyncevent_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// The controls of seats under an idempotency key: a transaction applied whose answer
// was lost, then the call sent again, applies once (operation.go).

// wireFault is what lossyDB does to one transaction of a control of seats.
type wireFault int

const (
	applyThenLose       wireFault = iota + 1 // applied, then the connection resets: the caller cannot tell
	applyThenCallerGone                      // applied, then the caller's deadline passes before the answer
	refuseToSend                             // the connection is refused: nothing applied
)

// lossyDB plays a script of faults on the transactions that carry an operation's
// marker (SK OP#…), one fault a transaction, and counts those transactions; the
// others, and every transaction once the script is played, go through.
type lossyDB struct {
	asyncevent.DynamoDB
	mu     sync.Mutex
	script []wireFault
	sent   int
	caller context.CancelFunc // ends the caller's ctx, for applyThenCallerGone
}

// play arms the faults of the next transactions of controls of seats.
func (l *lossyDB) play(faults ...wireFault) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.script, l.sent = faults, 0
}

// callerGone returns a ctx that applyThenCallerGone ends.
func (l *lossyDB) callerGone() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	l.mu.Lock()
	defer l.mu.Unlock()
	l.caller = cancel
	return ctx
}

// transactions returns how many transactions of controls of seats were sent since play.
func (l *lossyDB) transactions() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sent
}

func (l *lossyDB) next(in *dynamodb.TransactWriteItemsInput) wireFault {
	marked := false
	for _, it := range in.TransactItems {
		if it.Put != nil {
			if sk, ok := it.Put.Item["SK"].(*types.AttributeValueMemberS); ok && strings.HasPrefix(sk.Value, "OP#") {
				marked = true
			}
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !marked {
		return 0
	}
	l.sent++
	if len(l.script) == 0 {
		return 0
	}
	f := l.script[0]
	l.script = l.script[1:]
	return f
}

func (l *lossyDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	reset := func(op string) error { // shaped as the SDK's error after its own retries
		return &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "TransactWriteItems", Err: &net.OpError{Op: op, Net: "tcp", Err: syscall.ECONNRESET}}
	}
	switch l.next(in) {
	case refuseToSend:
		return nil, reset("dial")
	case applyThenLose:
		if _, err := l.DynamoDB.TransactWriteItems(ctx, in, o...); err != nil {
			return nil, err
		}
		return nil, reset("read")
	case applyThenCallerGone:
		if _, err := l.DynamoDB.TransactWriteItems(context.WithoutCancel(ctx), in, o...); err != nil {
			return nil, err
		}
		l.mu.Lock()
		l.caller()
		l.mu.Unlock()
		return nil, &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "TransactWriteItems", Err: ctx.Err()}
	}
	return l.DynamoDB.TransactWriteItems(ctx, in, o...)
}

// lossyTable is a table on a lossyDB, with a FIRST_COME event of capacity seats on
// shards capacity shards.
func lossyTable(t *testing.T, eventID string, capacity int64, shards int) (*asyncevent.Client, *lossyDB) {
	t.Helper()
	db := &lossyDB{DynamoDB: asynceventtest.DynamoDB(t)}
	c := asynceventtest.NewTableOn(t, db, asyncevent.Options{})
	_, err := c.CreateEvent(context.Background(), asyncevent.EventSettings{EventID: eventID, EventType: asyncevent.FirstCome, CapacityTotal: capacity, CapacityShards: shards})
	require.NoError(t, err)
	return c, db
}

// seatsOf returns the event's capacity, the seats on its shards and on its pool, and
// its audit entries of action, checking that the seats add up (CheckEvent).
func seatsOf(t *testing.T, c *asyncevent.Client, eventID, action string) (total, shards, pool int64, entries int) {
	t.Helper()
	ctx := context.Background()
	st, err := c.EventStats(ctx, eventID)
	require.NoError(t, err)
	trail, err := c.ListAudit(ctx, eventID)
	require.NoError(t, err)
	for _, e := range trail {
		if e.Action == action {
			entries++
		}
	}
	asynceventtest.CheckEvent(t, c, eventID, asynceventtest.CheckOptions{})
	return st.CapacityTotal, st.CapacityRemaining, st.PoolRemaining, entries
}

// An add applied whose answer was lost, and the call's own two sends after it
// refused: the call errs, naming its key. Sent again under that key, it answers
// applied, replayed, and the seats were added once.
func TestAddCapacityRetriedUnderItsKeyAppliesOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, db := lossyTable(t, "lost", 4, 2)
	in := asyncevent.AddCapacityInput{Seats: 2, Actor: "ops", IdempotencyKey: "add-7f1e"}

	db.play(applyThenLose, refuseToSend, refuseToSend)
	_, err := c.AddCapacity(ctx, "lost", in)
	var netErr net.Error
	require.ErrorAs(t, err, &netErr, "the outcome is unknown to the call")
	assert.Contains(t, err.Error(), "add-7f1e", "the error names the key a retry takes")
	assert.Equal(t, 3, db.transactions(), "sent, and sent again twice, no more")
	total, shards, _, entries := seatsOf(t, c, "lost", asyncevent.ActionAddCapacity)
	require.EqualValues(t, 6, total, "the first send applied")
	require.EqualValues(t, 6, shards)
	require.Equal(t, 1, entries)

	db.play()
	up, err := c.AddCapacity(ctx, "lost", in)
	require.NoError(t, err)
	assert.True(t, up.Applied, up.Reason)
	assert.True(t, up.Replayed)
	assert.EqualValues(t, 6, up.Event.CapacityTotal, "the event as it stands")
	assert.Contains(t, up.Reason, "applied before")
	total, shards, _, entries = seatsOf(t, c, "lost", asyncevent.ActionAddCapacity)
	assert.EqualValues(t, 6, total, "added once")
	assert.EqualValues(t, 6, shards)
	assert.Equal(t, 1, entries, "one audit entry: one add")

	// A key that was never applied (its only send refused) is a new add.
	db.play(refuseToSend, refuseToSend, refuseToSend)
	_, err = c.AddCapacity(ctx, "lost", asyncevent.AddCapacityInput{Seats: 1, Actor: "ops", IdempotencyKey: "add-8a2c"})
	require.ErrorAs(t, err, &netErr)
	db.play()
	up, err = c.AddCapacity(ctx, "lost", asyncevent.AddCapacityInput{Seats: 1, Actor: "ops", IdempotencyKey: "add-8a2c"})
	require.NoError(t, err)
	assert.True(t, up.Applied)
	assert.False(t, up.Replayed, "applied now: nothing had been")
	total, _, _, _ = seatsOf(t, c, "lost", asyncevent.ActionAddCapacity)
	assert.EqualValues(t, 7, total)
}

// Without a key, the call's own send after a lost answer does not add the seats
// again: onto the shards, and onto the pool of a sold-out event (whose
// poolVersion the first send moved: the second reads it, and fails on the marker).
func TestAddCapacityWithoutAKeyAppliesOnceOnALostAnswer(t *testing.T) {
	for _, soldOut := range []bool{false, true} {
		t.Run(fmt.Sprintf("soldOut=%v", soldOut), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			c, db := lossyTable(t, "own", 2, 2)
			if soldOut {
				q := queue.NewMemory(queue.MemoryOptions{})
				clock := asynceventtest.NewClock(t0)
				submitAll(t, c, clock, q, "own", 3)
				drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)
			}
			db.play(applyThenLose)
			up, err := c.AddCapacity(ctx, "own", asyncevent.AddCapacityInput{Seats: 3, Actor: "ops"})
			require.NoError(t, err)
			assert.True(t, up.Applied, up.Reason)
			assert.True(t, up.Replayed, "the call's first send applied")
			assert.Equal(t, 2, db.transactions())
			total, shards, pool, entries := seatsOf(t, c, "own", asyncevent.ActionAddCapacity)
			assert.EqualValues(t, 5, total, "added once")
			assert.Equal(t, 1, entries)
			if soldOut {
				assert.EqualValues(t, [2]int64{0, 3}, [2]int64{shards, pool}, "onto the pool")
				assert.EqualValues(t, 1, poolVersion(t, c, "own"), "one version step: one add")
			} else {
				assert.EqualValues(t, [2]int64{5, 0}, [2]int64{shards, pool})
			}
		})
	}
}

// Two adds under two keys are two adds; one key given to another add is refused;
// many callers racing under one key add once, and each is told it applied.
func TestAddCapacityKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _ := lossyTable(t, "keys", 4, 2)
	for _, key := range []string{"k1", "k2"} {
		up, err := c.AddCapacity(ctx, "keys", asyncevent.AddCapacityInput{Seats: 2, Actor: "ops", IdempotencyKey: key})
		require.NoError(t, err)
		require.True(t, up.Applied, up.Reason)
		assert.False(t, up.Replayed)
	}
	total, _, _, entries := seatsOf(t, c, "keys", asyncevent.ActionAddCapacity)
	assert.EqualValues(t, 8, total, "two keys, two adds")
	assert.Equal(t, 2, entries)

	for name, in := range map[string]asyncevent.AddCapacityInput{
		"other seats": {Seats: 3, Actor: "ops", IdempotencyKey: "k1"},
		"a shard":     {Seats: 2, Shard: new(0), Actor: "ops", IdempotencyKey: "k1"},
		"other actor": {Seats: 2, Actor: "ops-bob", IdempotencyKey: "k1"},
	} {
		_, err := c.AddCapacity(ctx, "keys", in)
		assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions, name)
		assert.ErrorContains(t, err, "k1", name)
	}
	_, err := c.AddCapacity(ctx, "keys", asyncevent.AddCapacityInput{Seats: 2, Actor: "ops", IdempotencyKey: "a key"})
	assert.ErrorIs(t, err, asyncevent.ErrInvalidID, "a key follows the rules of an ID")

	const callers = 8
	var wg sync.WaitGroup
	answers := make([]asyncevent.EventUpdate, callers)
	errs := make([]error, callers)
	for i := range callers {
		wg.Go(func() {
			answers[i], errs[i] = c.AddCapacity(ctx, "keys", asyncevent.AddCapacityInput{Seats: 5, Actor: "ops", IdempotencyKey: "race"})
		})
	}
	wg.Wait()
	fresh := 0
	for i := range callers {
		require.NoError(t, errs[i])
		assert.True(t, answers[i].Applied, answers[i].Reason)
		if !answers[i].Replayed {
			fresh++
		}
	}
	assert.Equal(t, 1, fresh, "one call applied, the others were told so")
	total, _, _, entries = seatsOf(t, c, "keys", asyncevent.ActionAddCapacity)
	assert.EqualValues(t, 13, total, "five seats, once")
	assert.Equal(t, 3, entries)
}

// A cancel applied whose answer came after its caller's deadline: sent again under
// its key it answers applied, replayed, with the request REJECTED_CANCELLED; the seat
// went back once. Without the key a second cancel answers not applied, saying the
// request was cancelled already. Without any key, a call whose answer was lost
// reads the request again and answers applied, replayed.
func TestCancelRequestRetriedAfterALostAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, db := lossyTable(t, "refund", 3, 1)
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := submitAll(t, c, asynceventtest.NewClock(t0), q, "refund", 3)
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)
	require.Len(t, byStatus(t, c, ids)[asyncevent.StatusSucceeded], 3)
	in := asyncevent.CancelRequestInput{Actor: "ops", IdempotencyKey: "refund-" + ids[0]}

	db.play(applyThenCallerGone)
	_, err := c.CancelRequest(db.callerGone(), ids[0], in)
	require.ErrorIs(t, err, context.Canceled, "the caller gave up: it cannot tell")
	assert.Contains(t, err.Error(), in.IdempotencyKey, "the error names the key a retry takes")
	assert.Equal(t, 1, db.transactions(), "a call whose ctx ended sends nothing more")
	db.play()
	up, err := c.CancelRequest(ctx, ids[0], in)
	require.NoError(t, err)
	assert.True(t, up.Applied, up.Reason)
	assert.True(t, up.Replayed)
	require.NotNil(t, up.Request)
	assert.Equal(t, asyncevent.StatusRejected, up.Request.Status)
	assert.Equal(t, asyncevent.ResultCancelled, up.Request.ResultCode)
	total, _, pool, entries := seatsOf(t, c, "refund", asyncevent.ActionCancel)
	assert.EqualValues(t, [3]int64{3, 1, 1}, [3]int64{total, pool, int64(entries)}, "one seat back, one cancel on record")

	up, err = c.CancelRequest(ctx, ids[0], asyncevent.CancelRequestInput{Actor: "ops"})
	require.NoError(t, err)
	assert.False(t, up.Applied, "another call's cancel")
	assert.False(t, up.Replayed)
	assert.Contains(t, up.Reason, "cancelled already")
	_, err = c.CancelRequest(ctx, ids[1], in)
	assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions, "the key of another request's cancel")

	db.play(applyThenLose)
	up, err = c.CancelRequest(ctx, ids[2], asyncevent.CancelRequestInput{Actor: "ops"})
	require.NoError(t, err)
	assert.Equal(t, 1, db.transactions(), "the request, read again, told: nothing sent again")
	assert.True(t, up.Applied, up.Reason)
	assert.True(t, up.Replayed, "the call's first send applied")
	assert.Equal(t, asyncevent.ResultCancelled, up.Request.ResultCode)
	_, _, pool, entries = seatsOf(t, c, "refund", asyncevent.ActionCancel)
	assert.EqualValues(t, [2]int64{2, 2}, [2]int64{pool, int64(entries)})
}

// A key's marker expires with DynamoDB's TTL: it carries ttl a day on, and
// entityType.
func TestOperationMarkerItem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, db := lossyTable(t, "item", 2, 1)
	_, err := c.AddCapacity(ctx, "item", asyncevent.AddCapacityInput{Seats: 1, Actor: "ops", IdempotencyKey: "k-item"})
	require.NoError(t, err)
	out, err := db.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(c.TableName()), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "EVENT#item"}, "SK": &types.AttributeValueMemberS{Value: "OP#ADD_CAPACITY#k-item"}},
	})
	require.NoError(t, err)
	require.NotNil(t, out.Item)
	kind, err := asyncevent.Key{PK: "EVENT#item", SK: "OP#ADD_CAPACITY#k-item"}.Entity()
	require.NoError(t, err)
	assert.Equal(t, &types.AttributeValueMemberS{Value: string(kind)}, out.Item["entityType"])
	assert.Equal(t, &types.AttributeValueMemberS{Value: "1 seat, spread"}, out.Item["target"])
	ttl, ok := out.Item["ttl"].(*types.AttributeValueMemberN)
	require.True(t, ok)
	at, ok := out.Item["at"].(*types.AttributeValueMemberN)
	require.True(t, ok)
	var ttlSec, atMs int64
	_, err = fmt.Sscan(ttl.Value, &ttlSec)
	require.NoError(t, err)
	_, err = fmt.Sscan(at.Value, &atMs)
	require.NoError(t, err)
	assert.Equal(t, atMs/1000+24*3600, ttlSec, "kept a day")
}
