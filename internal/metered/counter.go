// Package metered counts what goes through a DynamoDB client: calls per
// operation, HTTP round trips, consumed capacity, and write requests per kind of
// item. The test kit (asynceventtest.Counter wraps Counter) and the operator CLI's
// demo and bench use it; it does not import testing, so programs can link it.
//
// It sits under the library: the library imports internal/, so this package never
// imports it. What it needs of it comes from its callers: which kind of item a key
// names (Kinds, the library's Key.Entity), and the index names are its own constants,
// which the test kit's tests hold equal to the library's.
package metered

import (
	"context"
	"maps"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/internal/ddb"
)

// Counter wraps a DynamoDB client and counts what goes through it: calls per
// operation, HTTP round trips (counted by a middleware in the SDK's stack after its
// retry step, so the SDK's own retries count too), the read and write capacity
// units the table reports (it asks every data call for ReturnConsumedCapacity INDEXES,
// whose total is TOTAL's; a Heat stacked with it sees the split by index),
// and the write requests per kind of item. It is safe for concurrent use.
type Counter struct {
	db    ddb.API
	kinds Kinds

	mu     sync.Mutex
	counts Counts
}

// Counts is a snapshot of a Counter.
type Counts struct {
	Calls    map[string]int // by operation name: "TransactWriteItems", "GetItem", …
	Attempts int            // HTTP round trips, retries included
	RCU      float64
	WCU      float64

	// Writes counts the write requests by the kind of item they name (a Put, an
	// Update or a Delete, alone or inside a transaction), whether or not their
	// condition held: a failed conditional write costs capacity too. Keys that no
	// builder of asyncevent could have produced count under "OTHER" (OtherItems).
	Writes map[entity.Type]int
	// Reads counts the GetItem calls by the kind of item they name.
	Reads map[entity.Type]int
	// WCUOn splits WCU by where the units went: "table:<kind>" the table's, by the
	// kind of item written (a transaction's split evenly among its items), and each
	// GSI's under its name. Every write of an item on an index writes the index too
	// (the library's GSIs project ALL), so a write's units are its table's and its
	// indexes'.
	WCUOn map[string]float64
}

// OtherItems is the kind under which Counts.Writes counts items whose key is none of
// the library's.
const OtherItems entity.Type = "OTHER"

// RoundTrips is the number of HTTP round trips, the SDK's retries included.
func (c Counts) RoundTrips() int { return c.Attempts }

// Sub returns the counts between an earlier snapshot and c.
func (c Counts) Sub(earlier Counts) Counts {
	d := Counts{Calls: map[string]int{}, Writes: map[entity.Type]int{}, Reads: map[entity.Type]int{}, WCUOn: map[string]float64{},
		Attempts: c.Attempts - earlier.Attempts, RCU: c.RCU - earlier.RCU, WCU: c.WCU - earlier.WCU}
	for on, u := range c.WCUOn {
		if u -= earlier.WCUOn[on]; u != 0 {
			d.WCUOn[on] = u
		}
	}
	for op, n := range c.Calls {
		if n -= earlier.Calls[op]; n != 0 {
			d.Calls[op] = n
		}
	}
	for kind, n := range c.Writes {
		if n -= earlier.Writes[kind]; n != 0 {
			d.Writes[kind] = n
		}
	}
	for kind, n := range c.Reads {
		if n -= earlier.Reads[kind]; n != 0 {
			d.Reads[kind] = n
		}
	}
	return d
}

// Add returns the sum of c and o.
func (c Counts) Add(o Counts) Counts {
	s := Counts{Calls: maps.Clone(c.Calls), Writes: maps.Clone(c.Writes), Reads: maps.Clone(c.Reads), WCUOn: maps.Clone(c.WCUOn),
		Attempts: c.Attempts + o.Attempts, RCU: c.RCU + o.RCU, WCU: c.WCU + o.WCU}
	if s.WCUOn == nil {
		s.WCUOn = map[string]float64{}
	}
	for on, u := range o.WCUOn {
		s.WCUOn[on] += u
	}
	if s.Calls == nil {
		s.Calls = map[string]int{}
	}
	if s.Writes == nil {
		s.Writes = map[entity.Type]int{}
	}
	if s.Reads == nil {
		s.Reads = map[entity.Type]int{}
	}
	for kind, n := range o.Reads {
		s.Reads[kind] += n
	}
	for op, n := range o.Calls {
		s.Calls[op] += n
	}
	for kind, n := range o.Writes {
		s.Writes[kind] += n
	}
	return s
}

// DataCalls is the number of calls other than the table's set-up (CreateTable,
// DescribeTable, DescribeTimeToLive, UpdateTimeToLive).
func (c Counts) DataCalls() int {
	n := 0
	for op, k := range c.Calls {
		switch op {
		case "CreateTable", "DescribeTable", "DescribeTimeToLive", "UpdateTimeToLive":
		default:
			n += k
		}
	}
	return n
}

// Kinds tells which kind of item the table key (PK, SK) names, or an error for a key
// that no key builder of the library could have produced. Callers pass the library's
// parser, asyncevent.Key{PK: pk, SK: sk}.Entity().
type Kinds func(pk, sk string) (entity.Type, error)

// of names the kind of item a key (or a whole item) belongs to: OtherItems when it
// has no string PK and SK, when kinds is nil, or when kinds knows no such key.
func (kinds Kinds) of(item map[string]types.AttributeValue) entity.Type {
	id, ok := itemOf(item)
	if !ok || kinds == nil {
		return OtherItems
	}
	if kind, err := kinds(id.pk, id.sk); err == nil {
		return kind
	}
	return OtherItems
}

// NewCounter returns a Counter around db that counts the writes and reads per kind
// of item as kinds names them.
func NewCounter(db ddb.API, kinds Kinds) *Counter {
	return &Counter{db: db, kinds: kinds, counts: newCounts()}
}

func newCounts() Counts {
	return Counts{Calls: map[string]int{}, Writes: map[entity.Type]int{}, Reads: map[entity.Type]int{}, WCUOn: map[string]float64{}}
}

// Unwrap returns the client c wraps.
func (c *Counter) Unwrap() ddb.API { return c.db }

// Snapshot returns the counts so far.
func (c *Counter) Snapshot() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts.clone()
}

func (c Counts) clone() Counts {
	s := c
	s.Calls = maps.Clone(c.Calls)
	s.Writes = maps.Clone(c.Writes)
	s.Reads = maps.Clone(c.Reads)
	s.WCUOn = maps.Clone(c.WCUOn)
	return s
}

// tally collects the counts of the calls made under one context (see Track).
type tally struct {
	mu     sync.Mutex
	counts Counts
}

type tallyKey struct{}

// Track returns a context under which every call made through a Counter is also
// counted apart, and a function that returns those counts. It attributes calls to one
// piece of work (one Submit, say) while other work runs through the same Counter.
func Track(ctx context.Context) (context.Context, func() Counts) {
	t := &tally{counts: newCounts()}
	return context.WithValue(ctx, tallyKey{}, t), func() Counts {
		t.mu.Lock()
		defer t.mu.Unlock()
		return t.counts.clone()
	}
}

// call is what one call contributes to the counts.
type call struct {
	op       string
	writes   []map[string]types.AttributeValue // the keys (or items) written
	read     map[string]types.AttributeValue   // the key a GetItem read
	consumed []types.ConsumedCapacity
}

func (cs *Counts) add(kinds Kinds, k call) {
	cs.Calls[k.op]++
	for _, key := range k.writes {
		cs.Writes[kinds.of(key)]++
	}
	if k.read != nil {
		cs.Reads[kinds.of(k.read)]++
	}
	for _, cc := range k.consumed {
		if len(k.writes) > 0 {
			cs.splitWCU(kinds, k.writes, cc)
		}
		cs.RCU += aws.ToFloat64(cc.ReadCapacityUnits)
		cs.WCU += aws.ToFloat64(cc.WriteCapacityUnits)
		if cc.ReadCapacityUnits == nil && cc.WriteCapacityUnits == nil {
			// Stores that report only a total: count it on the side the call is on.
			if k.op == "GetItem" || k.op == "Query" {
				cs.RCU += aws.ToFloat64(cc.CapacityUnits)
			} else {
				cs.WCU += aws.ToFloat64(cc.CapacityUnits)
			}
		}
	}
}

// splitWCU books a write's units in WCUOn: each GSI's by its name, the table's (the
// rest) evenly on the kinds of the items written.
func (cs *Counts) splitWCU(kinds Kinds, writes []map[string]types.AttributeValue, cc types.ConsumedCapacity) {
	total := aws.ToFloat64(cc.WriteCapacityUnits)
	if cc.WriteCapacityUnits == nil {
		total = aws.ToFloat64(cc.CapacityUnits)
	}
	for name, c := range cc.GlobalSecondaryIndexes {
		u := aws.ToFloat64(c.WriteCapacityUnits)
		if c.WriteCapacityUnits == nil {
			u = aws.ToFloat64(c.CapacityUnits)
		}
		cs.WCUOn[name] += u
		total -= u
	}
	for _, key := range writes {
		cs.WCUOn[TableIndex+":"+string(kinds.of(key))] += total / float64(len(writes))
	}
}

func (c *Counter) record(ctx context.Context, k call) {
	c.mu.Lock()
	c.counts.add(c.kinds, k)
	c.mu.Unlock()
	if t, ok := ctx.Value(tallyKey{}).(*tally); ok {
		t.mu.Lock()
		t.counts.add(c.kinds, k)
		t.mu.Unlock()
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
				if t, ok := ctx.Value(tallyKey{}).(*tally); ok {
					t.mu.Lock()
					t.counts.Attempts++
					t.mu.Unlock()
				}
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

// GetItem implements ddb.API.
func (c *Counter) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := c.db.GetItem(ctx, in, append(optFns, c.countAttempts)...)
	k := call{op: "GetItem", read: in.Key}
	if out != nil {
		k.consumed = one(out.ConsumedCapacity)
	}
	c.record(ctx, k)
	return out, err
}

// PutItem implements ddb.API.
func (c *Counter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := c.db.PutItem(ctx, in, append(optFns, c.countAttempts)...)
	k := call{op: "PutItem", writes: []map[string]types.AttributeValue{in.Item}}
	if out != nil {
		k.consumed = one(out.ConsumedCapacity)
	}
	c.record(ctx, k)
	return out, err
}

// UpdateItem implements ddb.API.
func (c *Counter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := c.db.UpdateItem(ctx, in, append(optFns, c.countAttempts)...)
	k := call{op: "UpdateItem", writes: []map[string]types.AttributeValue{in.Key}}
	if out != nil {
		k.consumed = one(out.ConsumedCapacity)
	}
	c.record(ctx, k)
	return out, err
}

// DeleteItem implements ddb.API.
func (c *Counter) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := c.db.DeleteItem(ctx, in, append(optFns, c.countAttempts)...)
	k := call{op: "DeleteItem", writes: []map[string]types.AttributeValue{in.Key}}
	if out != nil {
		k.consumed = one(out.ConsumedCapacity)
	}
	c.record(ctx, k)
	return out, err
}

// Query implements ddb.API.
func (c *Counter) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := c.db.Query(ctx, in, append(optFns, c.countAttempts)...)
	k := call{op: "Query"}
	if out != nil {
		k.consumed = one(out.ConsumedCapacity)
	}
	c.record(ctx, k)
	return out, err
}

// TransactWriteItems implements ddb.API.
func (c *Counter) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := c.db.TransactWriteItems(ctx, in, append(optFns, c.countAttempts)...)
	k := call{op: "TransactWriteItems"}
	for _, it := range in.TransactItems {
		switch {
		case it.Put != nil:
			k.writes = append(k.writes, it.Put.Item)
		case it.Update != nil:
			k.writes = append(k.writes, it.Update.Key)
		case it.Delete != nil:
			k.writes = append(k.writes, it.Delete.Key)
		}
	}
	if out != nil {
		k.consumed = out.ConsumedCapacity
	}
	c.record(ctx, k)
	return out, err
}

// CreateTable implements ddb.API.
func (c *Counter) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	c.record(ctx, call{op: "CreateTable"})
	return c.db.CreateTable(ctx, in, append(optFns, c.countAttempts)...)
}

// DescribeTable implements ddb.API.
func (c *Counter) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	c.record(ctx, call{op: "DescribeTable"})
	return c.db.DescribeTable(ctx, in, append(optFns, c.countAttempts)...)
}

// DescribeTimeToLive implements ddb.API.
func (c *Counter) DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error) {
	c.record(ctx, call{op: "DescribeTimeToLive"})
	return c.db.DescribeTimeToLive(ctx, in, append(optFns, c.countAttempts)...)
}

// UpdateTimeToLive implements ddb.API.
func (c *Counter) UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	c.record(ctx, call{op: "UpdateTimeToLive"})
	return c.db.UpdateTimeToLive(ctx, in, append(optFns, c.countAttempts)...)
}
