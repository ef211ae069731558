package asynceventtest

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/internal/metered"
)

// Counter wraps a DynamoDB client and counts what goes through it: calls per
// operation, HTTP round trips (counted by a middleware in the SDK's stack after its
// retry step, so the SDK's own retries count too), the read and write capacity units
// the table reports (it asks every data call for ReturnConsumedCapacity), and the
// writes and reads per kind of item. It is safe for concurrent use.
type Counter struct{ m *metered.Counter }

// Counts is a snapshot of a Counter.
type Counts struct {
	Calls    map[string]int // by operation name: "TransactWriteItems", "GetItem", …
	Attempts int            // HTTP round trips, retries included
	RCU      float64
	WCU      float64

	// Writes counts the write requests by the kind of item they name (a Put, an
	// Update or a Delete, alone or inside a transaction), whether or not their
	// condition held: a failed conditional write costs capacity too. Keys that no
	// builder of asyncevent could have produced count under "OTHER".
	Writes map[entity.Type]int
	// Reads counts the GetItem calls by the kind of item they name.
	Reads map[entity.Type]int
	// WCUOn splits WCU by where the units went: "table:<kind>" the table's, by the
	// kind of item written (a transaction's split evenly among its items), and each
	// GSI's under its name (asyncevent.IndexUser, asyncevent.IndexEvent).
	WCUOn map[string]float64
}

// NewCounter returns a Counter around db.
func NewCounter(db asyncevent.DynamoDB) *Counter {
	return &Counter{m: metered.NewCounter(db, itemKind)}
}

// itemKind names the kind of item of a key by the library's own parser, which the
// meter (under the library, which it cannot import) is handed.
func itemKind(pk, sk string) (entity.Type, error) {
	return asyncevent.Key{PK: pk, SK: sk}.Entity()
}

// Snapshot returns the counts so far.
func (c *Counter) Snapshot() Counts { return Counts(c.m.Snapshot()) }

// Unwrap returns the client c wraps.
func (c *Counter) Unwrap() asyncevent.DynamoDB { return c.m.Unwrap() }

// RoundTrips is the number of HTTP round trips, the SDK's retries included.
func (c Counts) RoundTrips() int { return c.Attempts }

// Sub returns the counts between an earlier snapshot and c.
func (c Counts) Sub(earlier Counts) Counts {
	return Counts(metered.Counts(c).Sub(metered.Counts(earlier)))
}

// Add returns the sum of c and o.
func (c Counts) Add(o Counts) Counts { return Counts(metered.Counts(c).Add(metered.Counts(o))) }

// DataCalls is the number of calls other than the table's set-up (CreateTable,
// DescribeTable, DescribeTimeToLive, UpdateTimeToLive).
func (c Counts) DataCalls() int { return metered.Counts(c).DataCalls() }

func (c *Counter) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return c.m.GetItem(ctx, in, o...)
}

func (c *Counter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return c.m.PutItem(ctx, in, o...)
}

func (c *Counter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return c.m.UpdateItem(ctx, in, o...)
}

func (c *Counter) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return c.m.DeleteItem(ctx, in, o...)
}

func (c *Counter) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return c.m.Query(ctx, in, o...)
}

func (c *Counter) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return c.m.TransactWriteItems(ctx, in, o...)
}

func (c *Counter) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, o ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	return c.m.CreateTable(ctx, in, o...)
}

func (c *Counter) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return c.m.DescribeTable(ctx, in, o...)
}

func (c *Counter) DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error) {
	return c.m.DescribeTimeToLive(ctx, in, o...)
}

func (c *Counter) UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	return c.m.UpdateTimeToLive(ctx, in, o...)
}
