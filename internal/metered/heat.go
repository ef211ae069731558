package metered

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/internal/ddb"
)

// DynamoDB's limits on one partition key, on the table and on each GSI apart.
const (
	KeyWCULimit = 1000 // write capacity units per second
	KeyRCULimit = 3000 // read capacity units per second
)

// TableIndex names the base table where an index name is expected: KeyHeat.Index of
// a table key.
const TableIndex = "table"

// The partition key attribute of the table and of each GSI (seed 001 §7).
const (
	attrPK = "PK"
	attrSK = "SK"
)

// The GSIs of the library's table, asyncevent.IndexUser and asyncevent.IndexEvent:
// the library imports internal/, so this package cannot import them and names them
// again; asynceventtest's tests hold the two equal.
const (
	indexUser  = "GSI1"
	indexEvent = "GSI2"
)

// indexPK maps each GSI of the library's table to its partition key attribute.
var indexPK = map[string]string{indexUser: "GSI1PK", indexEvent: "GSI2PK"}

// UnknownKey is the key under which Heat counts index units of items whose index
// keys it has not seen (written before the Heat was there, say).
const UnknownKey = "?"

// KeyHeat is what one partition key took: on the table (Index TableIndex) or on a GSI.
type KeyHeat struct {
	Index string `json:"index"` // TableIndex, "GSI1" or "GSI2"
	Key   string `json:"key"`   // the partition key value: PK, GSI1PK or GSI2PK

	WCU float64 `json:"wcu"`
	RCU float64 `json:"rcu"`
	// PeakWCU and PeakRCU are the most units the key took within one second of the
	// wall clock (whole seconds, by the time each call returned): the figure to hold
	// against KeyWCULimit and KeyRCULimit.
	PeakWCU float64 `json:"peakWcu"`
	PeakRCU float64 `json:"peakRcu"`

	Writes int `json:"writes"` // write requests (transaction items included) that landed on the key
	Reads  int `json:"reads"`
	// CapacityWrites counts the writes on an EventCapacity item under this key;
	// CapacityTransactions those of them made inside a TransactWriteItems (committed
	// or cancelled by a condition: either held the item), which bound the key's
	// claims to one per transaction hold.
	CapacityWrites       int `json:"capacityWrites,omitempty"`
	CapacityTransactions int `json:"capacityTransactions,omitempty"`
	// OneOffWCU is the part of WCU that items of one-off kinds took (OneOff: an
	// event's config, a draw's or a serve's records, the registries), which do not
	// come with each participation or each winner: a ceiling divides the rest.
	OneOffWCU float64 `json:"oneOffWcu,omitempty"`
	// Shards, when more than 0, makes this the mean of an event's shards of one key
	// (its index shards EVENT#<eventId>#<shard> on GSI2, its capacity shards
	// EVENT#<eventId>#CAPACITY#<shard> on the table): Key ends in <shard>, and the
	// figures are per shard (the peaks, the highest shard's).
	Shards int `json:"shards,omitempty"`

	sec        int64 // the second secWCU and secRCU are of
	secW, secR float64
}

// String is the key as the bench shows it: "GSI2:EVENT#spring-sale", or for a mean of
// shards "GSI2:EVENT#spring-sale#<shard> (mean of 75 shards)".
func (k KeyHeat) String() string {
	if k.Shards > 0 {
		return fmt.Sprintf("%s:%s (mean of %d shards)", k.Index, k.Key, k.Shards)
	}
	return k.Index + ":" + k.Key
}

// Heat wraps a DynamoDB client and attributes the capacity each call consumes to the
// partition keys it lands on: the item's own PK on the table, its GSI1PK and GSI2PK
// on the indexes. It asks every data call for ReturnConsumedCapacity INDEXES, which
// DynamoDB (and DynamoDB Local) answer with the units of the table and of each GSI
// apart, and splits them:
//
//   - the table's units go to the PK of the call's item, or evenly to the items of a
//     transaction (DynamoDB bills each item by its size; the library's items are all
//     under 1 KB, so an even split is exact for them);
//   - a GSI's units go to the item's key on that GSI, evenly among the transaction's
//     items that have one. Heat learns an item's index keys from what goes by: the
//     Put items, the values an UpdateExpression SETs on GSI1PK and GSI2PK, and the items
//     that reads return; it keeps them per item (PK and SK) for the later writes that
//     do not name them. Units on a GSI for an item it never saw count under UnknownKey;
//   - a Query's units go to the partition key of its key condition on the table or
//     the index it reads.
//
// A write refused by its condition (a ConditionalCheckFailedException, or a cancelled
// transaction) returns no ConsumedCapacity, yet DynamoDB bills it: Heat charges it
// 1 WCU per item on the table (2 in a transaction), as for an item under 1 KB; a
// failed condition writes nothing to the indexes. Calls that fail otherwise (throttled,
// refused before they reached the table) cost nothing.
//
// It is safe for concurrent use. Stack it under a Counter or over it: both ask for
// INDEXES, which reports the same totals as TOTAL.
type Heat struct {
	db    ddb.API
	kinds Kinds // tells the EventCapacity items apart
	now   func() time.Time

	mu    sync.Mutex
	keys  map[heatID]*KeyHeat
	items map[itemID]map[string]string // index keys learned per item: GSI name → partition key
}

type heatID struct{ index, key string }

type itemID struct{ pk, sk string }

// TableKey is the table partition key an item's writes count against: its PK, whatever
// its SK. The items of one partition key share one partition until DynamoDB splits
// it for heat, which takes minutes of sustained load, longer than a drop is decided
// in; so the library gives each hot item a partition key of its own (a capacity
// shard is PK EVENT#<eventId>#CAPACITY#<shard>, SK CAPACITY), and the meter books
// every partition key, never a sort key, as one hot key.
func TableKey(pk, _ string) string { return pk }

// NewHeat returns a Heat around db that tells an event's capacity items from the
// others by the kind kinds names.
func NewHeat(db ddb.API, kinds Kinds) *Heat {
	return &Heat{db: db, kinds: kinds, now: time.Now, keys: map[heatID]*KeyHeat{}, items: map[itemID]map[string]string{}}
}

// Unwrap returns the client h wraps.
func (h *Heat) Unwrap() ddb.API { return h.db }

// Keys returns every key that took units so far, the most WCU first (then the most
// RCU, then by name).
func (h *Heat) Keys() []KeyHeat {
	h.mu.Lock()
	out := make([]KeyHeat, 0, len(h.keys))
	for _, k := range h.keys {
		out = append(out, *k)
	}
	h.mu.Unlock()
	slices.SortFunc(out, func(a, b KeyHeat) int {
		return cmp.Or(cmp.Compare(b.WCU, a.WCU), cmp.Compare(b.RCU, a.RCU), cmp.Compare(a.Index, b.Index), cmp.Compare(a.Key, b.Key))
	})
	for i := range out {
		out[i].sec, out[i].secW, out[i].secR = 0, 0, 0
	}
	return out
}

// Reset forgets the units counted so far (not the index keys learned).
func (h *Heat) Reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.keys = map[heatID]*KeyHeat{}
}

// landing is one item of a call: where its units go.
type landing struct {
	item        itemID
	index       map[string]string // GSI name → partition key, as far as known
	kind        entity.Type       // the item's kind (OtherItems when unknown)
	transaction bool              // written inside a TransactWriteItems
	refused     bool              // a write its condition refused
	put         bool              // a Put: the item's creation
	soldOut     bool              // an update that only marks a capacity item sold out
	empty       bool              // refused by an item that had no seat left
}

// oneOff reports whether the units of a write of l come once per event, node or
// operator's act, not with each participation or winner: items of a one-off kind
// (OneOff), and of a capacity item its creation, its mark once sold out (once per
// shard) and a write refused by the item once it had no seat left (each node meets
// the sell-out of a shard about once, then knows it). Every other write of a
// capacity item scales, refused ones included (a closed seat, a redelivery, the last
// seat taken by another worker).
func (l landing) oneOff() bool {
	if l.kind != entity.Capacity {
		return OneOff(l.kind)
	}
	if l.refused {
		return l.empty
	}
	return l.put || l.soldOut
}

// emptyWhenRefused reports whether err is a condition refused by a capacity item
// with no seat left, as the item the library asks back with a failed condition
// (ReturnValuesOnConditionCheckFailure ALL_OLD) shows it: none remaining, or marked
// sold out.
func emptyWhenRefused(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) || ccf.Item == nil {
		return false
	}
	if n, ok := ccf.Item[seatsAttr].(*types.AttributeValueMemberN); ok && n.Value == "0" {
		return true
	}
	b, ok := ccf.Item[soldOutAttr].(*types.AttributeValueMemberBOOL)
	return ok && b.Value
}

// The attributes of asyncevent's capacity item the meter tells its writes by (this
// package cannot import them; the bench's heat tests hold the meter to the
// library's writes): a claim updates capacityRemaining (an add of seats too), a
// seat's close adds to void, the sell-out sets soldOut.
const (
	seatsAttr   = "capacityRemaining"
	voidAttr    = "void"
	soldOutAttr = "soldOut"
)

// marksSoldOut reports whether an update of a capacity item only marks it sold out:
// it names soldOut, and neither its seats nor a void.
func marksSoldOut(expr string, names map[string]string) bool {
	named := func(attr string) bool {
		for _, n := range names {
			if n == attr {
				return true
			}
		}
		return strings.Contains(expr, attr)
	}
	return named(soldOutAttr) && !named(seatsAttr) && !named(voidAttr)
}

// OneOff reports whether items of kind are written once per event, per node or per
// operator's act, not with each participation or each winner: an event's config, its
// list entry and hold registry entry, a draw's or a serve's records, an operator's
// audit and operation records, the nodes' progress and waitlist counts. Any other
// kind scales (the request, its lock and status log, the capacity items, the holds,
// the seat pool, the ranked admission's record), and so does a kind added later
// until it is named here: a ceiling errs on the side of caution.
func OneOff(kind entity.Type) bool {
	switch kind {
	case entity.Config, entity.EventEntry, entity.HoldEvent, entity.Draw, entity.Entries,
		entity.Audit, entity.Operation, entity.Progress, entity.Waitlist:
		return true
	}
	return false
}

// charge books the units of one call.
func (h *Heat) charge(write bool, items []landing, consumed []types.ConsumedCapacity) {
	now := h.now().Unix()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, it := range items {
		h.count(TableIndex, TableKey(it.item.pk, it.item.sk), now, write, it)
	}
	for _, cc := range consumed {
		var gsiTotal float64
		for name, c := range cc.GlobalSecondaryIndexes {
			u := aws.ToFloat64(c.CapacityUnits)
			gsiTotal += u
			var holders []string
			for _, it := range items {
				if k := it.index[name]; k != "" {
					holders = append(holders, k)
				}
			}
			if len(holders) == 0 {
				holders = []string{UnknownKey}
			}
			for _, k := range holders {
				h.add(name, k, now, write, u/float64(len(holders)))
			}
		}
		tableUnits := aws.ToFloat64(cc.CapacityUnits) - gsiTotal
		if cc.Table != nil {
			tableUnits = aws.ToFloat64(cc.Table.CapacityUnits)
		}
		var onTable []landing
		for _, it := range items {
			if it.item.pk != "" {
				onTable = append(onTable, it)
			}
		}
		for _, it := range onTable {
			units := tableUnits / float64(len(onTable))
			h.add(TableIndex, TableKey(it.item.pk, it.item.sk), now, write, units)
			if write && it.oneOff() {
				h.key(TableIndex, TableKey(it.item.pk, it.item.sk)).OneOffWCU += units
			}
		}
	}
}

// key returns the entry of a key, made on first use. h.mu is held.
func (h *Heat) key(index, key string) *KeyHeat {
	id := heatID{index, key}
	k := h.keys[id]
	if k == nil {
		k = &KeyHeat{Index: index, Key: key}
		h.keys[id] = k
	}
	return k
}

// count counts one request on a key, of the item it lands. h.mu is held.
func (h *Heat) count(index, key string, now int64, write bool, it landing) {
	if key == "" {
		return
	}
	k := h.key(index, key)
	if write {
		k.Writes++
		if it.kind == entity.Capacity {
			k.CapacityWrites++
			if it.transaction {
				k.CapacityTransactions++
			}
		}
	} else {
		k.Reads++
	}
}

// add books units on a key. h.mu is held.
func (h *Heat) add(index, key string, now int64, write bool, units float64) {
	if units == 0 {
		return
	}
	k := h.key(index, key)
	if now > k.sec {
		k.sec, k.secW, k.secR = now, 0, 0
	}
	if write {
		k.WCU += units
		k.secW += units
		k.PeakWCU = max(k.PeakWCU, k.secW)
	} else {
		k.RCU += units
		k.secR += units
		k.PeakRCU = max(k.PeakRCU, k.secR)
	}
}

// learn records the index keys of an item that a write or a read showed in full.
func (h *Heat) learn(item map[string]types.AttributeValue) {
	id, ok := itemOf(item)
	if !ok {
		return
	}
	keys := map[string]string{}
	for name, attr := range indexPK {
		if s, ok := item[attr].(*types.AttributeValueMemberS); ok {
			keys[name] = s.Value
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(keys) == 0 {
		delete(h.items, id)
		return
	}
	h.items[id] = keys
}

// landingOf returns where a write or read of the item with key lands; set, if not
// nil, are index keys the call itself writes (from an UpdateExpression), which it
// also learns.
func (h *Heat) landingOf(key map[string]types.AttributeValue, set map[string]string) landing {
	id, _ := itemOf(key)
	l := landing{item: id, kind: h.kinds.of(key)}
	h.mu.Lock()
	defer h.mu.Unlock()
	known := h.items[id]
	if len(set) > 0 {
		merged := map[string]string{}
		for n, k := range known {
			merged[n] = k
		}
		for n, k := range set {
			merged[n] = k
		}
		h.items[id] = merged
		known = merged
	}
	l.index = known
	return l
}

func itemOf(item map[string]types.AttributeValue) (itemID, bool) {
	pk, ok1 := item[attrPK].(*types.AttributeValueMemberS)
	sk, ok2 := item[attrSK].(*types.AttributeValueMemberS)
	if !ok1 || !ok2 {
		return itemID{}, false
	}
	return itemID{pk.Value, sk.Value}, true
}

// setClause matches one assignment of a SET clause: `#name = :value` or
// `#name = if_not_exists(#name, :value)`, with or without the #.
var setClause = regexp.MustCompile(`(#?[A-Za-z0-9_]+)\s*=\s*(?:if_not_exists\(\s*#?[A-Za-z0-9_]+\s*,\s*)?(:[A-Za-z0-9_]+)`)

// IndexKeysSet returns the GSI partition keys (GSI name → value) that an
// UpdateExpression sets, given its ExpressionAttributeNames and a lookup of its
// string values. It reads the SET assignments only; other clauses cannot set a key.
func IndexKeysSet(update string, names map[string]string, value func(placeholder string) (string, bool)) map[string]string {
	if update == "" {
		return nil
	}
	var out map[string]string
	for _, m := range setClause.FindAllStringSubmatch(update, -1) {
		attr := m[1]
		if n, ok := names[attr]; ok {
			attr = n
		}
		for name, pkAttr := range indexPK {
			if attr != pkAttr {
				continue
			}
			if v, ok := value(m[2]); ok {
				if out == nil {
					out = map[string]string{}
				}
				out[name] = v
			}
		}
	}
	return out
}

// keyCondition matches the equality of a key condition: `#name = :value`.
var keyCondition = regexp.MustCompile(`(#?[A-Za-z0-9_]+)\s*=\s*(:[A-Za-z0-9_]+)`)

// QueryPartition returns the partition key a Query reads and the index it reads it
// on (TableIndex for the table): the value its KeyConditionExpression sets the
// partition key attribute equal to.
func QueryPartition(index, keyCond string, names map[string]string, value func(placeholder string) (string, bool)) (string, string, bool) {
	attr := attrPK
	if index == "" {
		index = TableIndex
	} else if a, ok := indexPK[index]; ok {
		attr = a
	} else {
		return "", "", false
	}
	for _, m := range keyCondition.FindAllStringSubmatch(keyCond, -1) {
		n := m[1]
		if v, ok := names[n]; ok {
			n = v
		}
		if n == attr {
			if v, ok := value(m[2]); ok {
				return index, v, true
			}
		}
	}
	return "", "", false
}

// IndexPartitionKey returns the partition key attribute of a GSI of the library's
// table ("GSI2" → "GSI2PK").
func IndexPartitionKey(index string) (string, bool) {
	a, ok := indexPK[index]
	return a, ok
}

// Indexes are the GSI names of the library's table, in order.
func Indexes() []string { return []string{indexUser, indexEvent} }

func stringValue(values map[string]types.AttributeValue) func(string) (string, bool) {
	return func(p string) (string, bool) {
		s, ok := values[p].(*types.AttributeValueMemberS)
		if !ok {
			return "", false
		}
		return s.Value, true
	}
}

// refused reports whether err is a write refused by its condition, which DynamoDB
// bills although it answers without ConsumedCapacity.
func refused(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return true
	}
	var tc *types.TransactionCanceledException
	if errors.As(err, &tc) {
		for _, r := range tc.CancellationReasons {
			if aws.ToString(r.Code) == "ConditionalCheckFailed" {
				return true
			}
		}
	}
	return false
}

// refusedCost is what DynamoDB bills a write refused by its condition: 1 WCU per item
// under 1 KB, 2 in a transaction, on the table only.
func refusedCost(items int, transaction bool) []types.ConsumedCapacity {
	per := 1.0
	if transaction {
		per = 2
	}
	u := per * float64(items)
	return []types.ConsumedCapacity{{CapacityUnits: &u, Table: &types.Capacity{CapacityUnits: &u}}}
}

// GetItem implements ddb.API.
func (h *Heat) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := h.db.GetItem(ctx, in, optFns...)
	if out != nil {
		if out.Item != nil {
			h.learn(out.Item)
		}
		h.charge(false, []landing{h.landingOf(in.Key, nil)}, one(out.ConsumedCapacity))
	}
	return out, err
}

// PutItem implements ddb.API.
func (h *Heat) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := h.db.PutItem(ctx, in, optFns...)
	switch {
	case out != nil:
		h.learn(in.Item)
		l := h.landingOf(in.Item, nil)
		l.put = true
		h.charge(true, []landing{l}, one(out.ConsumedCapacity))
	case refused(err):
		h.charge(true, []landing{{item: mustItem(in.Item), kind: h.kinds.of(in.Item), refused: true}}, refusedCost(1, false))
	}
	return out, err
}

func mustItem(key map[string]types.AttributeValue) itemID {
	id, _ := itemOf(key)
	return id
}

// UpdateItem implements ddb.API.
func (h *Heat) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := h.db.UpdateItem(ctx, in, optFns...)
	switch {
	case out != nil:
		set := IndexKeysSet(aws.ToString(in.UpdateExpression), in.ExpressionAttributeNames, stringValue(in.ExpressionAttributeValues))
		l := h.landingOf(in.Key, set)
		l.soldOut = marksSoldOut(aws.ToString(in.UpdateExpression), in.ExpressionAttributeNames)
		h.charge(true, []landing{l}, one(out.ConsumedCapacity))
	case refused(err):
		h.charge(true, []landing{{item: mustItem(in.Key), kind: h.kinds.of(in.Key), refused: true, empty: emptyWhenRefused(err)}}, refusedCost(1, false))
	}
	return out, err
}

// DeleteItem implements ddb.API. A lock carries no index keys, so a
// delete lands on the table only.
func (h *Heat) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := h.db.DeleteItem(ctx, in, optFns...)
	switch {
	case out != nil:
		h.charge(true, []landing{h.landingOf(in.Key, nil)}, one(out.ConsumedCapacity))
	case refused(err):
		h.charge(true, []landing{{item: mustItem(in.Key), kind: h.kinds.of(in.Key), refused: true}}, refusedCost(1, false))
	}
	return out, err
}

// Query implements ddb.API.
func (h *Heat) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := h.db.Query(ctx, in, optFns...)
	if out == nil {
		return out, err
	}
	for _, it := range out.Items {
		h.learn(it)
	}
	index, key, ok := QueryPartition(aws.ToString(in.IndexName), aws.ToString(in.KeyConditionExpression),
		in.ExpressionAttributeNames, stringValue(in.ExpressionAttributeValues))
	if !ok {
		index, key = TableIndex, UnknownKey
	}
	now := h.now().Unix()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.count(index, key, now, false, landing{})
	if cc := out.ConsumedCapacity; cc != nil {
		h.add(index, key, now, false, aws.ToFloat64(cc.CapacityUnits))
	}
	return out, err
}

// TransactWriteItems implements ddb.API.
func (h *Heat) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := h.db.TransactWriteItems(ctx, in, optFns...)
	if out == nil && !refused(err) {
		return out, err
	}
	var items []landing
	for _, it := range in.TransactItems {
		switch {
		case it.Put != nil:
			if out != nil {
				h.learn(it.Put.Item)
			}
			l := h.landingOf(it.Put.Item, nil)
			l.put = true
			items = append(items, l)
		case it.Update != nil:
			var set map[string]string
			if out != nil {
				set = IndexKeysSet(aws.ToString(it.Update.UpdateExpression), it.Update.ExpressionAttributeNames, stringValue(it.Update.ExpressionAttributeValues))
			}
			l := h.landingOf(it.Update.Key, set)
			l.soldOut = marksSoldOut(aws.ToString(it.Update.UpdateExpression), it.Update.ExpressionAttributeNames)
			items = append(items, l)
		case it.Delete != nil:
			items = append(items, h.landingOf(it.Delete.Key, nil))
		case it.ConditionCheck != nil:
			l := h.landingOf(it.ConditionCheck.Key, nil)
			l.index = nil // a check writes nothing to the indexes
			items = append(items, l)
		}
	}
	for i := range items {
		items[i].transaction = true
	}
	if out == nil {
		for i := range items {
			items[i].refused = true
		}
		h.charge(true, items, refusedCost(len(items), true))
		return out, err
	}
	h.charge(true, items, out.ConsumedCapacity)
	for _, it := range in.TransactItems {
		if it.Delete != nil {
			h.forget(it.Delete.Key)
		}
	}
	return out, err
}

func (h *Heat) forget(key map[string]types.AttributeValue) {
	if id, ok := itemOf(key); ok {
		h.mu.Lock()
		delete(h.items, id)
		h.mu.Unlock()
	}
}

// CreateTable implements ddb.API.
func (h *Heat) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	return h.db.CreateTable(ctx, in, optFns...)
}

// DescribeTable implements ddb.API.
func (h *Heat) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return h.db.DescribeTable(ctx, in, optFns...)
}

// DescribeTimeToLive implements ddb.API.
func (h *Heat) DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error) {
	return h.db.DescribeTimeToLive(ctx, in, optFns...)
}

// UpdateTimeToLive implements ddb.API.
func (h *Heat) UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	return h.db.UpdateTimeToLive(ctx, in, optFns...)
}

// TransactionHold is how long a transaction holds its items on DynamoDB, to plan
// with: AWS publishes no figure; a transaction takes tens of milliseconds, and
// DynamoDB refuses every other write or transaction on its items meanwhile
// (TransactionConflict). asynceventtest.Limits.TransactionHold defaults to it.
const TransactionHold = 25 * time.Millisecond

// What bounds an event's seat claims, per capacity shard (Ceiling.WinnersBound).
const (
	// BoundUnits: the shard's units, KeyWCULimit ÷ its WCU per claim.
	BoundUnits = "units"
	// BoundSerial: one transaction at a time on the shard's item, 1 ÷
	// TransactionHold claims a second when every claim is a transaction.
	BoundSerial = "serial"
)

// Ceiling is what the heat of one event's run means on DynamoDB: its hottest keys and
// the rates at which they would reach DynamoDB's limit on one partition key.
type Ceiling struct {
	Participations int `json:"participations"`
	Winners        int `json:"winners"`

	// Hottest is the key with the most WCU that scale with the run (KeyHeat.Scaling)
	// on the table and on each GSI, by index name (TableIndex, "GSI1", "GSI2").
	Hottest map[string]KeyHeat `json:"hottest"`
	// HottestKey is the one of them with the most, among the keys all the event's
	// participations share (not a request's, a lock's or a user's own).
	HottestKey KeyHeat `json:"hottestKey"`
	// ProgressKey is the event's progress partitions (EVENT#<eventId>#PROGRESS#<shard>,
	// their mean): each node writes them once a second per event, not per
	// participation, so they are left out of the keys above and shown apart.
	ProgressKey KeyHeat `json:"progressKey"`
	// OneOffKey is the key that took the most one-off units (KeyHeat.OneOffWCU:
	// an event's config, a draw's or a serve's records), which the keys above leave
	// out: they come once, whatever the clicks, and are shown apart.
	OneOffKey KeyHeat `json:"oneOffKey"`
	// WCUPerParticipation is HottestKey's WCU per participation, its one-off units
	// left out (KeyHeat.Scaling), and ParticipationsPerSec the rate at which it
	// would take KeyWCULimit: the same for a run of any size.
	WCUPerParticipation  float64 `json:"wcuPerParticipation"`
	ParticipationsPerSec float64 `json:"participationsPerSec"`

	// CapacityKey is the table key with the most WCU among those holding an
	// EventCapacity item (the mean of the capacity shards, when the event has them),
	// and CapacityShards how many such keys the event has (1 without shards).
	// WCUPerWinner is CapacityKey's WCU per winner of the event. Zero when no
	// capacity item was written.
	CapacityKey    KeyHeat `json:"capacityKey"`
	CapacityShards int     `json:"capacityShards,omitempty"`
	WCUPerWinner   float64 `json:"wcuPerWinner"`

	// WCUPerClaim is what one capacity key took per seat it gave: its WCU over its
	// share of the winners (winners ÷ CapacityShards), refused claims and whatever
	// else shares its partition key included. One shard takes at most
	// ClaimsPerSecUnits = KeyWCULimit ÷ WCUPerClaim claims a second for its units,
	// and, when claims touch it inside transactions, at most ClaimsPerSecSerial: its
	// share of the winners ÷ (its transactional writes × TransactionHold), which is
	// 1 ÷ TransactionHold (40 a second) when every claim is one transaction. With no
	// transaction on a capacity item there is no serial bound: ClaimsPerSecSerial is
	// 0 and left out of the JSON. ClaimsPerSecPerShard is the smaller bound, and
	// WinnersBound names it (BoundUnits or BoundSerial).
	WCUPerClaim          float64 `json:"wcuPerClaim,omitempty"`
	ClaimsPerSecUnits    float64 `json:"claimsPerSecUnits,omitempty"`
	ClaimsPerSecSerial   float64 `json:"claimsPerSecSerial,omitempty"`
	ClaimsPerSecPerShard float64 `json:"claimsPerSecPerShard,omitempty"`
	WinnersBound         string  `json:"winnersBound,omitempty"`
	// WinnersPerSec is the event's winners ceiling: CapacityShards ×
	// ClaimsPerSecPerShard.
	WinnersPerSec float64 `json:"winnersPerSec"`
}

// CeilingOf works out the Ceiling of keys (a Heat's Keys) for a run of participations
// new participations of which winners won, transactions holding their items for
// TransactionHold. Keys under UnknownKey are left out. The shards of one key (an
// event's GSI2 partitions EVENT#<eventId>#<shard>, its capacity shards
// EVENT#<eventId>#CAPACITY#<shard>) count as their mean: the library spreads
// requests over them by a hash of the request ID, so at a spike's rate each takes
// its share within a few per cent, while a short run's sample is lumpier than that.
func CeilingOf(keys []KeyHeat, participations, winners int) Ceiling {
	return CeilingWithHold(keys, participations, winners, TransactionHold)
}

// CeilingWithHold is CeilingOf for transactions that hold their items for hold.
func CeilingWithHold(keys []KeyHeat, participations, winners int, hold time.Duration) Ceiling {
	c := Ceiling{Participations: participations, Winners: winners, Hottest: map[string]KeyHeat{}}
	for _, k := range meanOfShards(keys) {
		if k.Key == UnknownKey || k.WCU == 0 {
			continue
		}
		if strings.Contains(k.Key, "#PROGRESS#") {
			c.ProgressKey = k
			continue
		}
		if k.OneOffWCU > c.OneOffKey.OneOffWCU {
			c.OneOffKey = k
		}
		if k.Scaling() <= 0 {
			continue
		}
		if h, ok := c.Hottest[k.Index]; !ok || k.Scaling() > h.Scaling() {
			c.Hottest[k.Index] = k
		}
		if k.Scaling() > c.HottestKey.Scaling() && !owned(k) {
			c.HottestKey = k
		}
		if k.Index == TableIndex && k.CapacityWrites > 0 && k.Scaling() > c.CapacityKey.Scaling() {
			c.CapacityKey = k
		}
	}
	if participations > 0 && c.HottestKey.Scaling() > 0 {
		c.WCUPerParticipation = c.HottestKey.Scaling() / float64(participations)
		c.ParticipationsPerSec = KeyWCULimit / c.WCUPerParticipation
	}
	if winners > 0 && c.CapacityKey.Scaling() > 0 {
		c.claimBounds(hold)
	}
	return c
}

// claimBounds works out the claims a second one capacity shard takes, by its units
// and by its transactions, and the winners ceiling they put on the event.
func (c *Ceiling) claimBounds(hold time.Duration) {
	k := c.CapacityKey
	c.CapacityShards = max(k.Shards, 1)
	winnersHere := float64(c.Winners) / float64(c.CapacityShards)
	c.WCUPerWinner = k.Scaling() / float64(c.Winners)
	c.WCUPerClaim = k.Scaling() / winnersHere
	c.ClaimsPerSecUnits = KeyWCULimit / c.WCUPerClaim
	c.ClaimsPerSecPerShard, c.WinnersBound = c.ClaimsPerSecUnits, BoundUnits
	if k.CapacityTransactions > 0 && hold > 0 {
		c.ClaimsPerSecSerial = winnersHere / (float64(k.CapacityTransactions) * hold.Seconds())
		if c.ClaimsPerSecSerial < c.ClaimsPerSecUnits {
			c.ClaimsPerSecPerShard, c.WinnersBound = c.ClaimsPerSecSerial, BoundSerial
		}
	}
	c.WinnersPerSec = float64(c.CapacityShards) * c.ClaimsPerSecPerShard
}

// shardKey matches the keys of a shard: an event's GSI2 partition
// EVENT#<eventId>#<shard>, a capacity shard's partition key
// EVENT#<eventId>#CAPACITY#<shard>.
var shardKey = regexp.MustCompile(`^(EVENT#[^#]+#(?:CAPACITY#|PROGRESS#)?)[0-9]+$`)

// meanOfShards replaces the shards of each key by one KeyHeat, their mean.
func meanOfShards(keys []KeyHeat) []KeyHeat {
	var out []KeyHeat
	families := map[[2]string][]KeyHeat{}
	for _, k := range keys {
		m := shardKey.FindStringSubmatch(k.Key)
		if m == nil {
			out = append(out, k)
			continue
		}
		id := [2]string{k.Index, m[1] + "<shard>"}
		families[id] = append(families[id], k)
	}
	for id, shards := range families {
		mean := KeyHeat{Index: id[0], Key: id[1], Shards: len(shards)}
		n := float64(len(shards))
		for _, s := range shards {
			mean.WCU += s.WCU / n
			mean.OneOffWCU += s.OneOffWCU / n
			mean.RCU += s.RCU / n
			mean.PeakWCU, mean.PeakRCU = max(mean.PeakWCU, s.PeakWCU), max(mean.PeakRCU, s.PeakRCU)
			mean.Writes += s.Writes
			mean.Reads += s.Reads
			mean.CapacityWrites += s.CapacityWrites
			mean.CapacityTransactions += s.CapacityTransactions
		}
		mean.Writes, mean.Reads, mean.CapacityWrites = mean.Writes/len(shards), mean.Reads/len(shards), mean.CapacityWrites/len(shards)
		mean.CapacityTransactions = (mean.CapacityTransactions + len(shards) - 1) / len(shards) // rounded up: a serial bound is not averaged away
		out = append(out, mean)
	}
	return out
}

// owned reports whether k belongs to one participation or one user (a request's
// item, a lock, a user's GSI1 partition): a click writes it a few times at most,
// whatever the event's rate, so it bounds no event, and a short run's one busy user
// must not read as its ceiling.
func owned(k KeyHeat) bool {
	return k.Index == indexUser || k.Index == TableIndex && (strings.HasPrefix(k.Key, "REQ#") || strings.HasPrefix(k.Key, "IDEMP#"))
}

// PerParticipation is k's WCU per participation of c's run, its one-off units left
// out.
func (c Ceiling) PerParticipation(k KeyHeat) float64 {
	if c.Participations == 0 {
		return 0
	}
	return k.Scaling() / float64(c.Participations)
}

// Scaling is the units of k that come with the participations and the winners: its
// WCU less its one-off units.
func (k KeyHeat) Scaling() float64 { return k.WCU - k.OneOffWCU }
