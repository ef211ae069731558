package metered_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/internal/metered"
	"github.com/asyncevent/asyncevent/queue"
)

// TestIndexesAreTheTables: the GSIs Heat books, with their partition keys, are those
// of a table the library made.
func TestIndexesAreTheTables(t *testing.T) {
	t.Parallel()
	c := asynceventtest.NewTable(t)
	out, err := asynceventtest.DynamoDB(t).DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(c.TableName())})
	require.NoError(t, err)
	got := map[string]string{}
	for _, g := range out.Table.GlobalSecondaryIndexes {
		for _, k := range g.KeySchema {
			if k.KeyType == types.KeyTypeHash {
				got[aws.ToString(g.IndexName)] = aws.ToString(k.AttributeName)
			}
		}
	}
	want := map[string]string{}
	for _, index := range metered.Indexes() {
		pk, ok := metered.IndexPartitionKey(index)
		require.True(t, ok, index)
		want[index] = pk
	}
	assert.Equal(t, want, got)
}

// TestHeatAttributesUnitsToPartitionKeys runs a first-come event of 6 users and 2
// seats through a Heat, one message at a time, and checks where the units landed.
func TestHeatAttributesUnitsToPartitionKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	heat := metered.NewHeat(asynceventtest.DynamoDB(t), kinds)
	c := asynceventtest.NewTableOn(t, metered.NewCounter(heat, kinds), asyncevent.Options{})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "ev", EventType: asyncevent.FirstCome, CapacityTotal: 2})
	require.NoError(t, err)
	heat.Reset() // the event's creation is not the spike's

	const users, seats = 6, 2
	q := queue.NewMemory(queue.MemoryOptions{})
	for i := range users {
		_, err := c.Submit(ctx, q, "ev", fmt.Sprintf("u%d", i))
		require.NoError(t, err)
	}
	p := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	for range users {
		ds, err := q.Receive(ctx, 1, time.Second, time.Minute)
		require.NoError(t, err)
		require.Len(t, ds, 1)
		require.Empty(t, asynceventtest.Process(ctx, p, ds))
	}

	keys := heat.Keys()
	byKey := map[string]metered.KeyHeat{}
	for _, k := range keys {
		byKey[k.String()] = k
		assert.NotEqual(t, metered.UnknownKey, k.Key, "every unit lands on a known key: %+v", k)
	}
	ev := byKey["GSI2:EVENT#ev"]
	// Each request writes its GSI2 entry at QUEUED, then at PROCESSING (unless the
	// worker already knows the event is sold out) and at its final status (2 WCU in
	// the winner's transaction).
	assert.GreaterOrEqual(t, ev.WCU, float64(2*users))
	assert.LessOrEqual(t, ev.WCU, float64(4*users))
	assert.Positive(t, ev.PeakWCU)
	for i := range users {
		u := byKey[fmt.Sprintf("GSI1:USER#u%d", i)]
		assert.GreaterOrEqual(t, u.WCU, 2.0, "USER#u%d", i)
	}

	ceil := metered.CeilingOf(keys, users, seats)
	t.Logf("hottest %s %.2f WCU/participation; capacity %s %.2f WCU/winner; keys %+v", ceil.HottestKey, ceil.WCUPerParticipation, ceil.CapacityKey, ceil.WCUPerWinner, keys[:4])
	assert.Equal(t, "GSI2:EVENT#ev", ceil.HottestKey.String())
	assert.Equal(t, ev.WCU/users, ceil.WCUPerParticipation)
	assert.InDelta(t, 1000/ceil.WCUPerParticipation, ceil.ParticipationsPerSec, 1e-9)
	assert.Equal(t, "table:EVENT#ev", ceil.CapacityKey.String(), "C = 1: the capacity item is EVENT#ev / CAPACITY, beside the CONFIG")
	assert.GreaterOrEqual(t, ceil.CapacityKey.CapacityWrites, seats)
	assert.Zero(t, ceil.CapacityKey.CapacityTransactions, "a seat claim takes no transaction")
	// 1 WCU per claim of an item under 1 KB, plus what refused claims and the
	// CONFIG's writes on the same partition key cost.
	assert.Equal(t, 1, ceil.CapacityShards)
	assert.GreaterOrEqual(t, ceil.WCUPerClaim, 1.0)
	assert.Equal(t, ceil.WCUPerWinner, ceil.WCUPerClaim, "one shard takes every winner")
	assert.InDelta(t, 1000/ceil.WCUPerClaim, ceil.ClaimsPerSecUnits, 1e-9)
	assert.Zero(t, ceil.ClaimsPerSecSerial, "no transaction, no serial bound")
	assert.Equal(t, metered.BoundUnits, ceil.WinnersBound)
	assert.Equal(t, ceil.ClaimsPerSecUnits, ceil.ClaimsPerSecPerShard)
	assert.Equal(t, ceil.ClaimsPerSecUnits, ceil.WinnersPerSec)
	assert.Equal(t, "GSI1", ceil.Hottest["GSI1"].Index)
	assert.Equal(t, "table", ceil.Hottest[metered.TableIndex].Index)
}

func TestIndexKeysSetReadsSetClauses(t *testing.T) {
	vals := map[string]string{":1": "USER#u", ":2": "EVENT#e", ":3": "x"}
	look := func(p string) (string, bool) { v, ok := vals[p]; return v, ok }
	names := map[string]string{"#a": "GSI1PK", "#b": "GSI2PK", "#c": "status"}
	assert.Equal(t, map[string]string{"GSI1": "USER#u", "GSI2": "EVENT#e"},
		metered.IndexKeysSet("SET #a = if_not_exists(#a, :1), #b = :2, #c = :3", names, look))
	assert.Nil(t, metered.IndexKeysSet("SET #c = :3 REMOVE #a", names, look))
	idx, key, ok := metered.QueryPartition("GSI2", "#k = :2 AND begins_with(#s, :3)", map[string]string{"#k": "GSI2PK", "#s": "GSI2SK"}, look)
	assert.True(t, ok)
	assert.Equal(t, "GSI2", idx)
	assert.Equal(t, "EVENT#e", key)
}

// TestHeatBooksEachCapacityShardAsItsOwnKey runs a first-come event of 3 capacity
// shards: each shard is a partition key of its own, EVENT#<eventId>#CAPACITY#<n>,
// booked apart from the event's CONFIG (EVENT#<eventId>), and the ceiling counts
// their mean, three times over.
func TestHeatBooksEachCapacityShardAsItsOwnKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	heat := metered.NewHeat(asynceventtest.DynamoDB(t), kinds)
	c := asynceventtest.NewTableOn(t, heat, asyncevent.Options{})
	const users, seats, shards = 12, 6, 3
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "ev", EventType: asyncevent.FirstCome, CapacityTotal: seats, CapacityShards: shards})
	require.NoError(t, err)
	heat.Reset()

	q := queue.NewMemory(queue.MemoryOptions{})
	for i := range users {
		_, err := c.Submit(ctx, q, "ev", fmt.Sprintf("u%d", i))
		require.NoError(t, err)
	}
	p := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	for range users {
		ds, err := q.Receive(ctx, 1, time.Second, time.Minute)
		require.NoError(t, err)
		require.Len(t, ds, 1)
		require.Empty(t, asynceventtest.Process(ctx, p, ds))
	}

	keys := heat.Keys()
	byKey := map[string]metered.KeyHeat{}
	for _, k := range keys {
		byKey[k.String()] = k
	}
	claims := 0
	var oneOff float64
	for n := range shards {
		k, ok := byKey["table:EVENT#ev#CAPACITY#"+strconv.Itoa(n)]
		require.True(t, ok, "shard %d booked as its own key: %+v", n, keys)
		assert.Positive(t, k.CapacityWrites, "shard %d", n)
		assert.Zero(t, k.CapacityTransactions, "shard %d", n)
		claims += k.CapacityWrites
		oneOff += k.OneOffWCU
	}
	assert.Positive(t, oneOff, "the shards marked sold out: once per shard")
	assert.LessOrEqual(t, oneOff, float64(shards), "one mark a shard, no more")
	assert.GreaterOrEqual(t, claims, seats)
	assert.Zero(t, byKey["table:EVENT#ev"].CapacityWrites, "the CONFIG's key holds no capacity")

	ceil := metered.CeilingOf(keys, users, seats)
	t.Logf("capacity %s: %.2f WCU/claim, %.0f claims/s per shard (%s), %.0f winners/s", ceil.CapacityKey, ceil.WCUPerClaim, ceil.ClaimsPerSecPerShard, ceil.WinnersBound, ceil.WinnersPerSec)
	assert.Equal(t, "table:EVENT#ev#CAPACITY#<shard> (mean of 3 shards)", ceil.CapacityKey.String())
	assert.Equal(t, shards, ceil.CapacityShards)
	assert.GreaterOrEqual(t, ceil.WCUPerClaim, 1.0, "a claim's unit, and the refusals the sell-out met")
	assert.Equal(t, metered.BoundUnits, ceil.WinnersBound)
	assert.Zero(t, ceil.ClaimsPerSecSerial)
	assert.InDelta(t, shards*1000/ceil.WCUPerClaim, ceil.WinnersPerSec, 1e-9)
}

// TestHeatFindsTheSerialBound claims seats inside transactions, as the library's
// first design did: each shard then takes one claim per transaction hold, 40 a
// second at 25 ms, far under what its units allow.
func TestHeatFindsTheSerialBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	heat := metered.NewHeat(asynceventtest.DynamoDB(t), kinds)
	c := asynceventtest.NewTableOn(t, heat, asyncevent.Options{})
	const shards, claimsEach = 2, 5
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	for n := range shards {
		_, err := heat.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(c.TableName()), Item: map[string]types.AttributeValue{
			"PK": s("EVENT#ev#CAPACITY#" + strconv.Itoa(n)), "SK": s("CAPACITY"), "entityType": s("CAPACITY"),
			"capacityRemaining": &types.AttributeValueMemberN{Value: strconv.Itoa(claimsEach)},
		}})
		require.NoError(t, err)
	}
	heat.Reset()
	for n := range shards {
		for i := range claimsEach {
			_, err := heat.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				{Update: &types.Update{
					TableName: aws.String(c.TableName()), Key: map[string]types.AttributeValue{"PK": s("EVENT#ev#CAPACITY#" + strconv.Itoa(n)), "SK": s("CAPACITY")},
					UpdateExpression:          aws.String("SET capacityRemaining = capacityRemaining - :one"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
				}},
				{Put: &types.Put{TableName: aws.String(c.TableName()), Item: map[string]types.AttributeValue{
					"PK": s(fmt.Sprintf("REQ#r%d-%d", n, i)), "SK": s("META"), "entityType": s("REQUEST"),
				}}},
			}})
			require.NoError(t, err)
		}
	}
	keys := heat.Keys()
	for _, k := range keys {
		if k.CapacityWrites > 0 {
			assert.Equal(t, claimsEach, k.CapacityTransactions, k.String())
		}
	}
	ceil := metered.CeilingOf(keys, shards*claimsEach, shards*claimsEach)
	assert.Equal(t, shards, ceil.CapacityShards)
	// DynamoDB bills 2 WCU per item of a transaction, DynamoDB Local reports 1: the
	// meter books what the table reports.
	assert.GreaterOrEqual(t, ceil.WCUPerClaim, 1.0)
	assert.InDelta(t, 1000/ceil.WCUPerClaim, ceil.ClaimsPerSecUnits, 1e-9)
	assert.InDelta(t, 40, ceil.ClaimsPerSecSerial, 1e-9, "1 ÷ 25 ms")
	assert.Equal(t, metered.BoundSerial, ceil.WinnersBound)
	assert.InDelta(t, 40, ceil.ClaimsPerSecPerShard, 1e-9)
	assert.InDelta(t, shards*40, ceil.WinnersPerSec, 1e-9)

	slow := metered.CeilingWithHold(keys, shards*claimsEach, shards*claimsEach, 100*time.Microsecond)
	assert.Equal(t, metered.BoundUnits, slow.WinnersBound, "a 0.1 ms hold allows 10,000 a second, more than the units")
	assert.InDelta(t, 10000, slow.ClaimsPerSecSerial, 1e-6)
	assert.InDelta(t, shards*slow.ClaimsPerSecUnits, slow.WinnersPerSec, 1e-9)
}

// TestOneOffKinds: the kinds of item whose writes come once per event, node or
// operator's act, which a ceiling leaves out.
func TestOneOffKinds(t *testing.T) {
	t.Parallel()
	for kind, want := range map[entity.Type]bool{
		entity.Request: false, entity.Idempotency: false, entity.StatusLog: false, entity.Capacity: false, entity.Hold: false, metered.OtherItems: false,
		entity.Returns: false, entity.Admission: false, "A_KIND_ADDED_LATER": false,
		entity.Config: true, entity.Draw: true, entity.Entries: true, entity.HoldEvent: true, entity.Audit: true,
		entity.Operation: true, entity.EventEntry: true, entity.Progress: true, entity.Waitlist: true,
	} {
		assert.Equal(t, want, metered.OneOff(kind), kind)
	}
}
