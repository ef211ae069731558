// Package metered counts what goes through a DynamoDB client: calls per
// operation, HTTP round trips and consumed capacity. The test kit
// (asynceventtest.Counter) and the operator CLI's demo and bench use it; it
// does not import testing, so programs can link it.
package metered

import (
	"context"
	"maps"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/asyncevent/asyncevent"
)

// Counter wraps a DynamoDB client and counts what goes through it: calls per
// operation, HTTP round trips (counted by a middleware in the SDK's stack after its
// retry step, so the SDK's own retries count too), and the read and write capacity
// units the table reports (it asks every data call for ReturnConsumedCapacity TOTAL).
// It is safe for concurrent use.
type Counter struct {
	db asyncevent.DynamoDB

	mu     sync.Mutex
	counts Counts
}

// Counts is a snapshot of a Counter.
type Counts struct {
	Calls    map[string]int // by operation name: "TransactWriteItems", "GetItem", …
	Attempts int            // HTTP round trips, retries included
	RCU      float64
	WCU      float64
}

// RoundTrips is the number of HTTP round trips, the SDK's retries included.
func (c Counts) RoundTrips() int { return c.Attempts }

// Sub returns the counts between an earlier snapshot and c.
func (c Counts) Sub(earlier Counts) Counts {
	d := Counts{Calls: map[string]int{}, Attempts: c.Attempts - earlier.Attempts, RCU: c.RCU - earlier.RCU, WCU: c.WCU - earlier.WCU}
	for op, n := range c.Calls {
		if n -= earlier.Calls[op]; n != 0 {
			d.Calls[op] = n
		}
	}
	return d
}

// NewCounter returns a Counter around db.
func NewCounter(db asyncevent.DynamoDB) *Counter {
	return &Counter{db: db, counts: Counts{Calls: map[string]int{}}}
}

// Snapshot returns the counts so far.
func (c *Counter) Snapshot() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.counts
	s.Calls = maps.Clone(c.counts.Calls)
	return s
}

func (c *Counter) record(op string, consumed ...types.ConsumedCapacity) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts.Calls[op]++
	for _, cc := range consumed {
		c.counts.RCU += aws.ToFloat64(cc.ReadCapacityUnits)
		c.counts.WCU += aws.ToFloat64(cc.WriteCapacityUnits)
		if cc.ReadCapacityUnits == nil && cc.WriteCapacityUnits == nil {
			// Stores that report only a total: count it on the side the call is on.
			if op == "GetItem" || op == "Query" {
				c.counts.RCU += aws.ToFloat64(cc.CapacityUnits)
			} else {
				c.counts.WCU += aws.ToFloat64(cc.CapacityUnits)
			}
		}
	}
}

// countAttempts adds a middleware that counts each HTTP attempt of a call.
func (c *Counter) countAttempts(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("metered.countAttempts",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				c.mu.Lock()
				c.counts.Attempts++
				c.mu.Unlock()
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
	})
}

func one(cc *types.ConsumedCapacity) []types.ConsumedCapacity {
	if cc == nil {
		return nil
	}
	return []types.ConsumedCapacity{*cc}
}

// GetItem implements asyncevent.DynamoDB.
func (c *Counter) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := c.db.GetItem(ctx, in, append(optFns, c.countAttempts)...)
	if out != nil {
		c.record("GetItem", one(out.ConsumedCapacity)...)
	} else {
		c.record("GetItem")
	}
	return out, err
}

// PutItem implements asyncevent.DynamoDB.
func (c *Counter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := c.db.PutItem(ctx, in, append(optFns, c.countAttempts)...)
	if out != nil {
		c.record("PutItem", one(out.ConsumedCapacity)...)
	} else {
		c.record("PutItem")
	}
	return out, err
}

// UpdateItem implements asyncevent.DynamoDB.
func (c *Counter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := c.db.UpdateItem(ctx, in, append(optFns, c.countAttempts)...)
	if out != nil {
		c.record("UpdateItem", one(out.ConsumedCapacity)...)
	} else {
		c.record("UpdateItem")
	}
	return out, err
}

// Query implements asyncevent.DynamoDB.
func (c *Counter) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := c.db.Query(ctx, in, append(optFns, c.countAttempts)...)
	if out != nil {
		c.record("Query", one(out.ConsumedCapacity)...)
	} else {
		c.record("Query")
	}
	return out, err
}

// TransactWriteItems implements asyncevent.DynamoDB.
func (c *Counter) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := c.db.TransactWriteItems(ctx, in, append(optFns, c.countAttempts)...)
	if out != nil {
		c.record("TransactWriteItems", out.ConsumedCapacity...)
	} else {
		c.record("TransactWriteItems")
	}
	return out, err
}

// CreateTable implements asyncevent.DynamoDB.
func (c *Counter) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	c.record("CreateTable")
	return c.db.CreateTable(ctx, in, append(optFns, c.countAttempts)...)
}

// DescribeTable implements asyncevent.DynamoDB.
func (c *Counter) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	c.record("DescribeTable")
	return c.db.DescribeTable(ctx, in, append(optFns, c.countAttempts)...)
}

// DescribeTimeToLive implements asyncevent.DynamoDB.
func (c *Counter) DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error) {
	c.record("DescribeTimeToLive")
	return c.db.DescribeTimeToLive(ctx, in, append(optFns, c.countAttempts)...)
}

// UpdateTimeToLive implements asyncevent.DynamoDB.
func (c *Counter) UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	c.record("UpdateTimeToLive")
	return c.db.UpdateTimeToLive(ctx, in, append(optFns, c.countAttempts)...)
}
