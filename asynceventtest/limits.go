package asynceventtest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/asyncevent/asyncevent/internal/metered"
)

// Limits are DynamoDB's limits on one partition key, as a LimitedHTTPClient enforces
// them. The zero value is DynamoDB's own.
type Limits struct {
	// WCU is the write capacity units per second one partition key takes, on the
	// table and on each GSI apart. Default: 1,000, DynamoDB's. Scale it down (to 20,
	// say) and a DynamoDB Local at a few hundred calls a second shows what DynamoDB
	// does at tens of thousands.
	WCU float64
	// RCU is the read capacity units per second one partition key takes, on the
	// table and on each GSI apart. Default: 3 × WCU (3,000 with the default WCU).
	RCU float64
	// Burst is how many seconds of units a key's bucket holds when it has been idle.
	// Default: 1.
	Burst time.Duration
	// MinBucket is the fewest units a key's bucket holds, whatever Burst gives. A
	// run scaled down N times plays the event N times slower but not each request: a
	// request still makes its few writes on its own keys (REQ#, USER#) within a
	// moment, which on DynamoDB never come near a key's limit. A bucket of about a
	// request's writes (10 units) keeps those keys from throttling while the keys
	// every request shares still meet the scaled-down rate. Default: none.
	MinBucket float64
	// Clock tells the time the buckets refill by. Default: time.Now. A Clock's Now
	// holds them still until the test advances it, so that what is refused does not
	// depend on speed. Transaction holds run on the wall clock whatever Clock says.
	Clock func() time.Time
	// TransactionHold is how long a transaction holds its items on DynamoDB, from
	// the moment it is let through until it is answered: while it does, a single
	// write on one of them is refused and a transaction naming one is cancelled, so
	// one item takes at most one transaction per hold. It is scaled as WCU is: the
	// simulated hold is TransactionHold × 1,000 / WCU, 1,000 being DynamoDB's WCU
	// (Hold), so that a run N times slower than DynamoDB holds N times longer and
	// the bound of transactions per second per item scales as the bound of units
	// does. Default: 25 ms. AWS
	// publishes no figure for it; 25 ms is a planning figure for a transaction's
	// latency on DynamoDB (tens of milliseconds), not a measurement. A negative
	// value turns the hold off: a transaction then holds its items only while
	// DynamoDB Local runs it, a millisecond or two.
	TransactionHold time.Duration
}

// defaultTransactionHold is Limits.TransactionHold's default.
const defaultTransactionHold = 25 * time.Millisecond

// Hold returns how long a transaction holds its items under l, the defaults
// applied: TransactionHold × 1,000 / WCU, or zero when TransactionHold is negative.
// One item takes at most one transaction per Hold.
func (l Limits) Hold() time.Duration {
	l = l.withDefaults()
	if l.TransactionHold < 0 {
		return 0
	}
	return time.Duration(float64(l.TransactionHold) * metered.KeyWCULimit / l.WCU)
}

func (l Limits) withDefaults() Limits {
	if l.WCU <= 0 {
		l.WCU = metered.KeyWCULimit
	}
	if l.RCU <= 0 {
		l.RCU = 3 * l.WCU
	}
	if l.Burst <= 0 {
		l.Burst = time.Second
	}
	if l.Clock == nil {
		l.Clock = time.Now
	}
	if l.TransactionHold == 0 {
		l.TransactionHold = defaultTransactionHold
	}
	return l
}

// LimitCounts counts what a LimitedHTTPClient refused.
type LimitCounts struct {
	// Throttled counts the calls refused for a partition key over its limit: a
	// ProvisionedThroughputExceededException, or a transaction cancelled with a
	// ThrottlingError. The SDK retries the first kind; each attempt counts.
	Throttled int
	// IndexThrottled counts those of them refused because of a GSI key: a base-table
	// write throttled by GSI back-pressure, or a Query of a hot index key.
	IndexThrottled int
	// Conflicts counts the transactions cancelled with TransactionConflict, and the
	// single writes refused with TransactionConflictException, because another
	// transaction held one of their items.
	Conflicts int
	// Reasons counts the throttling reasons given, by reason
	// ("IndexWriteKeyRangeThroughputExceeded", …).
	Reasons map[string]int
	// Keys counts the refusals by the key refused, as "<index>:<key>" (index: "table" or
	// a GSI name): where a layout runs hot.
	Keys map[string]int
}

// LimitedHTTPClient enforces DynamoDB's per-partition-key limits on the HTTP calls of
// a DynamoDB client, beneath the SDK (so the SDK's retryer sees its answers, as it
// sees DynamoDB's), for a table made by asyncevent's CreateTable. DynamoDB Local
// enforces none of them. Make one with NewLimitedClient. It is safe for concurrent use.
//
// Each partition key has a token bucket of WCU and one of RCU on the table (the
// item's PK; a capacity shard has a PK of its own) and on each GSI
// (its GSI1PK, GSI2PK), refilled at Limits.WCU and
// Limits.RCU per second and holding Limits.Burst of them. A write is refused when
// any bucket it would draw from is short: the item's PK on the table, and its key on
// every GSI it is on (projection ALL: every write of an item on an index writes the
// index too), which is DynamoDB's GSI back-pressure. It answers as DynamoDB does:
//
//   - a single-item write or read: ProvisionedThroughputExceededException with
//     ThrottlingReasons such as TableWriteKeyRangeThroughputExceeded or
//     IndexWriteKeyRangeThroughputExceeded, the resource being the table's or the
//     index's ARN (the SDK retries it);
//   - a transaction: TransactionCanceledException, the item over its limit with
//     reason code ThrottlingError (its message names the global secondary indexes
//     when a GSI key is the cause), the others None (the SDK does not retry it);
//   - a transaction naming an item that another transaction holds: a
//     TransactionCanceledException with reason TransactionConflict on that item;
//     a single write on a held item: TransactionConflictException.
//
// A transaction let through holds its items (those it names by PK and SK) until
// its answer and for at least Limits.Hold on the wall clock, and its caller gets the
// answer only when the hold ends: on DynamoDB a transaction's latency is the time it
// holds its items. So one item takes at most one transaction per Hold, the serial
// bound DynamoDB Local, which commits in a millisecond or two, does not show. Single
// writes hold nothing: a transaction does not conflict with one under way on its
// items, and they are limited by units alone.
//
// Units are estimated before the call is sent, since a throttle is decided then:
// a write costs 1 WCU per KB of the item (a Put's own item; for an Update or a
// Delete the item's size as last seen, grown by the sets an update ADDs, at least
// 1 KB), twice in a transaction, on
// the table key and on each of the item's GSI keys; a write that then fails its
// condition gets its GSI units back (nothing reached the index). A read costs what
// it returned: 1 RCU per 4 KB for a strongly consistent read, half for an eventually
// consistent one, drawn after the answer (a read is let through while its key's
// bucket holds any units). DynamoDB Local's ConsumedCapacity is not used.
//
// An item's GSI keys are learned from what goes by: Put items, the values an
// UpdateExpression SETs on GSI1PK and GSI2PK, and the items that reads return; a
// write of an item the client never saw is charged on the table only.
type LimitedHTTPClient struct {
	next   aws.HTTPClient
	limits Limits
	now    func() time.Time
	hold   time.Duration // Limits.Hold

	mu      sync.Mutex
	buckets map[bucketID]*bucket
	items   map[itemKey]*itemInfo
	inTx    map[itemKey]int // transactions holding the item
	counts  LimitCounts
}

type bucketID struct {
	index, key string // index: metered.TableIndex or a GSI name
	write      bool
}

type bucket struct {
	tokens float64
	at     time.Time
}

type itemKey struct{ pk, sk string }

type itemInfo struct {
	index map[string]string // GSI name → partition key
	size  int               // bytes, as last seen
}

// NewLimitedClient returns a copy of db whose HTTP calls go through a
// LimitedHTTPClient with limits, and that LimitedHTTPClient. The copy's retryer is
// the SDK's standard one (three attempts) without its client-side retry quota, which
// a spike's throttles would drain, and with a backoff of milliseconds instead of
// seconds, as NewFaultyClient's. optFns then change the copy's options further.
func NewLimitedClient(db *dynamodb.Client, limits Limits, optFns ...func(*dynamodb.Options)) (*dynamodb.Client, *LimitedHTTPClient) {
	limits = limits.withDefaults()
	l := &LimitedHTTPClient{
		limits: limits, now: limits.Clock, hold: limits.Hold(),
		buckets: map[bucketID]*bucket{}, items: map[itemKey]*itemInfo{},
		inTx: map[itemKey]int{}, counts: LimitCounts{Reasons: map[string]int{}, Keys: map[string]int{}},
	}
	client := clientBeneath(db, func(next dynamodb.HTTPClient) dynamodb.HTTPClient {
		l.next = next
		return l
	}, optFns...)
	return client, l
}

// Counts returns what l refused so far.
func (l *LimitedHTTPClient) Counts() LimitCounts {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.counts
	c.Reasons = maps.Clone(l.counts.Reasons)
	c.Keys = maps.Clone(l.counts.Keys)
	return c
}

// Heat spends the write units of partitionKey for d ahead, on the table and on each
// index, as a burst of other writes on the key would (the other requests of a hot
// event, say): every write that draws on the key, an item with that PK or an item on
// an index under that key, is refused until d has passed on Limits.Clock and the
// bucket has refilled enough to take it. Reads are not held back.
func (l *LimitedHTTPClient) Heat(partitionKey string, d time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, index := range append([]string{metered.TableIndex}, metered.Indexes()...) {
		id := bucketID{index, partitionKey, true}
		l.bucket(now, id).tokens = -d.Seconds() * l.rate(id)
	}
}

// ddbCall is the part of a DynamoDB JSON request the limits need.
type ddbCall struct {
	TableName                 string
	Key, Item                 jsonAttrs
	UpdateExpression          string
	ExpressionAttributeNames  map[string]string
	ExpressionAttributeValues jsonAttrs
	ConsistentRead            bool
	IndexName                 string
	KeyConditionExpression    string
	TransactItems             []struct{ Put, Update, Delete, ConditionCheck *ddbCall }
}

// table returns the table a call names: its own, or its first transaction item's.
func (c *ddbCall) table() string {
	for _, it := range c.TransactItems {
		for _, a := range []*ddbCall{it.Put, it.Update, it.Delete, it.ConditionCheck} {
			if a != nil && a.TableName != "" {
				return a.TableName
			}
		}
	}
	return c.TableName
}

// jsonAttrs is an item, a key or the values of an expression in DynamoDB's JSON.
type jsonAttrs map[string]json.RawMessage

func (a jsonAttrs) str(name string) (string, bool) {
	var v struct{ S *string }
	if raw, ok := a[name]; !ok || json.Unmarshal(raw, &v) != nil || v.S == nil {
		return "", false
	}
	return *v.S, true
}

func (a jsonAttrs) key() (itemKey, bool) {
	pk, ok1 := a.str("PK")
	sk, ok2 := a.str("SK")
	return itemKey{pk, sk}, ok1 && ok2
}

// indexKeys returns the GSI keys an item carries.
func (a jsonAttrs) indexKeys() map[string]string {
	out := map[string]string{}
	for _, index := range metered.Indexes() {
		attr, _ := metered.IndexPartitionKey(index)
		if v, ok := a.str(attr); ok {
			out[index] = v
		}
	}
	return out
}

// addClause finds an update expression's ADD clause, up to the next clause.
var addClause = regexp.MustCompile(`(?s)\bADD\b(.*?)(?:\bSET\b|\bREMOVE\b|\bDELETE\b|$)`)

var valuePlaceholder = regexp.MustCompile(`:\w+`)

// addedBytes estimates what an update's ADD clause adds to its item: the elements of
// the sets it adds (a seat token on a capacity shard, say), each its length; a number
// added to one adds nothing. SET and REMOVE are not counted: the library's updates
// change an item's size by its sets alone.
func (c *ddbCall) addedBytes() int {
	m := addClause.FindStringSubmatch(c.UpdateExpression)
	if m == nil {
		return 0
	}
	n := 0
	for _, placeholder := range valuePlaceholder.FindAllString(m[1], -1) {
		var v struct{ SS, NS, BS []string }
		if json.Unmarshal(c.ExpressionAttributeValues[placeholder], &v) != nil {
			continue
		}
		for _, e := range slices.Concat(v.SS, v.NS, v.BS) {
			n += len(e)
		}
	}
	return n
}

// size estimates an item's size as DynamoDB counts it: names plus values.
func (a jsonAttrs) size() int {
	n := 0
	for name, raw := range a {
		n += len(name) + valueSize(raw)
	}
	return n
}

func valueSize(raw json.RawMessage) int {
	var v map[string]json.RawMessage
	if json.Unmarshal(raw, &v) != nil {
		return len(raw)
	}
	n := 0
	for typ, inner := range v {
		switch typ {
		case "S", "N":
			var s string
			_ = json.Unmarshal(inner, &s)
			n += len(s)
		case "B":
			var s string
			_ = json.Unmarshal(inner, &s)
			b, _ := base64.StdEncoding.DecodeString(s)
			n += len(b)
		case "BOOL", "NULL":
			n++
		case "M":
			var m jsonAttrs
			_ = json.Unmarshal(inner, &m)
			n += 3 + m.size()
		case "L":
			var l []json.RawMessage
			_ = json.Unmarshal(inner, &l)
			n += 3
			for _, e := range l {
				n += 1 + valueSize(e)
			}
		default: // SS, NS, BS
			var l []string
			_ = json.Unmarshal(inner, &l)
			for _, e := range l {
				n += len(e)
			}
		}
	}
	return n
}

// charge is the units one call draws from one bucket.
type charge struct {
	id    bucketID
	units float64
}

// itemWrite is one item a write call writes.
type itemWrite struct {
	item    itemKey
	ok      bool // the call names the item's PK and SK
	index   map[string]string
	size    int
	charges []charge
	set     map[string]string // index keys the write sets
	put     bool
	check   bool // a ConditionCheck: writes nothing
	del     bool
}

// planWrite works out the item and the units of one write. l.mu is held.
func (l *LimitedHTTPClient) planWrite(c *ddbCall, put, check, transaction bool) itemWrite {
	w := itemWrite{put: put, check: check}
	attrs := c.Key
	if put {
		attrs = c.Item
	}
	w.item, w.ok = attrs.key()
	info := l.items[w.item]
	switch {
	case put:
		w.index, w.size = c.Item.indexKeys(), c.Item.size()
	default:
		w.index = map[string]string{}
		if info != nil {
			maps.Copy(w.index, info.index)
			w.size = info.size + c.addedBytes() // a write costs the larger of the item before and after
		}
		w.set = metered.IndexKeysSet(c.UpdateExpression, c.ExpressionAttributeNames, c.ExpressionAttributeValues.str)
		maps.Copy(w.index, w.set)
	}
	units := math.Max(1, math.Ceil(float64(w.size)/1024))
	if transaction {
		units *= 2
	}
	if !w.ok {
		return w
	}
	w.charges = append(w.charges, charge{bucketID{metered.TableIndex, metered.TableKey(w.item.pk, w.item.sk), true}, units})
	if check {
		return w
	}
	for _, index := range metered.Indexes() {
		if k := w.index[index]; k != "" {
			w.charges = append(w.charges, charge{bucketID{index, k, true}, units})
		}
	}
	return w
}

// short returns the charges whose buckets cannot take them now. l.mu is held.
func (l *LimitedHTTPClient) short(now time.Time, charges []charge) []charge {
	var out []charge
	for _, c := range charges {
		b := l.bucket(now, c.id)
		if b.tokens < math.Min(c.units, l.capacity(c.id)) {
			out = append(out, c)
		}
	}
	return out
}

func (l *LimitedHTTPClient) rate(id bucketID) float64 {
	if id.write {
		return l.limits.WCU
	}
	return l.limits.RCU
}

func (l *LimitedHTTPClient) capacity(id bucketID) float64 {
	return max(l.rate(id)*l.limits.Burst.Seconds(), l.limits.MinBucket)
}

// bucket returns a bucket refilled up to now. l.mu is held.
func (l *LimitedHTTPClient) bucket(now time.Time, id bucketID) *bucket {
	b := l.buckets[id]
	if b == nil {
		b = &bucket{tokens: l.capacity(id), at: now}
		l.buckets[id] = b
		return b
	}
	if d := now.Sub(b.at); d > 0 {
		b.tokens = math.Min(l.capacity(id), b.tokens+d.Seconds()*l.rate(id))
		b.at = now
	}
	return b
}

// draw takes the charges from their buckets (which may go below zero, a debt the
// refill pays first). l.mu is held.
func (l *LimitedHTTPClient) draw(now time.Time, charges []charge, sign float64) {
	for _, c := range charges {
		l.bucket(now, c.id).tokens -= sign * c.units
	}
}

// gsiCharges are the charges of ws on the indexes.
func gsiCharges(ws []itemWrite) []charge {
	var out []charge
	for _, w := range ws {
		for _, c := range w.charges {
			if c.id.index != metered.TableIndex {
				out = append(out, c)
			}
		}
	}
	return out
}

// learn records what a write or a read showed of an item. l.mu is held.
func (l *LimitedHTTPClient) learn(k itemKey, index map[string]string, size int) {
	info := l.items[k]
	if info == nil {
		info = &itemInfo{index: map[string]string{}}
		l.items[k] = info
	}
	maps.Copy(info.index, index)
	if size > 0 {
		info.size = size
	}
}

// Do implements aws.HTTPClient.
func (l *LimitedHTTPClient) Do(req *http.Request) (*http.Response, error) {
	_, op, _ := strings.Cut(req.Header.Get("X-Amz-Target"), ".")
	if req.Body == nil {
		return l.next.Do(req)
	}
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("asynceventtest: read the body of %s: %w", op, err)
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	var c ddbCall
	if json.Unmarshal(body, &c) != nil {
		return l.next.Do(req)
	}
	switch op {
	case "PutItem", "UpdateItem", "DeleteItem":
		return l.write(req, op, &c)
	case "TransactWriteItems":
		return l.transact(req, &c)
	case "GetItem", "Query":
		return l.read(req, op, &c)
	}
	return l.next.Do(req)
}

// write runs a single-item write under the limits.
func (l *LimitedHTTPClient) write(req *http.Request, op string, c *ddbCall) (*http.Response, error) {
	now := l.now()
	l.mu.Lock()
	w := l.planWrite(c, op == "PutItem", false, false)
	if w.ok && l.inTx[w.item] > 0 {
		l.counts.Conflicts++
		l.counts.Keys["conflict:"+w.item.pk+" "+w.item.sk]++
		l.mu.Unlock()
		return errorResponse(req, "TransactionConflictException", map[string]any{"message": "Transaction is ongoing for the item"}), nil
	}
	if short := l.short(now, w.charges); len(short) > 0 {
		reasons := l.throttled(short, true, c.TableName)
		l.mu.Unlock()
		return errorResponse(req, "ProvisionedThroughputExceededException", map[string]any{
			"message": throttleMessage(short), "ThrottlingReasons": reasons,
		}), nil
	}
	l.draw(now, w.charges, 1)
	l.mu.Unlock()

	resp, err := l.next.Do(req)
	refused := refusedByCondition(resp)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err != nil:
	case refused:
		l.draw(l.now(), gsiCharges([]itemWrite{w}), -1)
	case resp.StatusCode == http.StatusOK && w.ok:
		switch op {
		case "PutItem":
			l.items[w.item] = &itemInfo{index: w.index, size: w.size}
		case "UpdateItem":
			l.learn(w.item, w.set, w.size)
		case "DeleteItem":
			delete(l.items, w.item)
		}
	}
	return resp, err
}

// transact runs a TransactWriteItems under the limits. One the limits let through
// holds its items until its answer and until l.hold has passed, and is answered
// then.
//
// A transaction cancelled for a failed condition holds its items as one that
// commits: DynamoDB prepares a transaction's items, checking their conditions, and
// releases them when it cancels it, and AWS publishes no figure for how much sooner
// than a commit that is; one rule for every transaction let through keeps the
// bound simple. One the limits refuse (TransactionConflict, ThrottlingError) holds
// nothing: it is refused before it takes any item.
func (l *LimitedHTTPClient) transact(req *http.Request, c *ddbCall) (*http.Response, error) {
	now := l.now()
	l.mu.Lock()
	ws := l.planTransaction(c)
	if refusal := l.admit(req, c, now, ws); refusal != nil {
		l.mu.Unlock()
		return refusal, nil
	}
	heldUntil := time.Now().Add(l.hold)
	l.mu.Unlock()

	resp, err := l.next.Do(req)
	l.settle(ws, resp, err)
	return l.awaitHold(req.Context(), ws, heldUntil, resp, err)
}

// planTransaction works out the items and the units of a transaction. l.mu is held.
func (l *LimitedHTTPClient) planTransaction(c *ddbCall) []itemWrite {
	ws := make([]itemWrite, len(c.TransactItems))
	for i, it := range c.TransactItems {
		switch {
		case it.Put != nil:
			ws[i] = l.planWrite(it.Put, true, false, true)
		case it.Update != nil:
			ws[i] = l.planWrite(it.Update, false, false, true)
		case it.Delete != nil:
			ws[i] = l.planWrite(it.Delete, false, false, true)
			ws[i].del = true
		case it.ConditionCheck != nil:
			ws[i] = l.planWrite(it.ConditionCheck, false, true, true)
		}
	}
	return ws
}

// admit returns DynamoDB's refusal of the transaction of ws, or nil when it lets it
// through, having drawn its units and taken its items. l.mu is held.
//
// Only a transaction that holds an item makes a transaction on it conflict, not a
// single write under way on it. "Transaction conflict handling in DynamoDB"
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html#transaction-conflict-handling)
// names a single write conflicting with an ongoing transaction and a transaction
// with another ongoing transaction, never a transaction with an ongoing single
// write; the page's isolation levels make a transaction and a single write
// serializable. The API reference's broader "an ongoing operation is in the process
// of updating the same item" (TransactWriteItems) is read as that list details it.
func (l *LimitedHTTPClient) admit(req *http.Request, c *ddbCall, now time.Time, ws []itemWrite) *http.Response {
	conflict := false
	reasons := make([]map[string]any, len(ws))
	for i, w := range ws {
		reasons[i] = map[string]any{"Code": "None"}
		if w.ok && l.inTx[w.item] > 0 {
			reasons[i] = map[string]any{"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item."}
			conflict = true
			l.counts.Keys["conflict:"+w.item.pk+" "+w.item.sk]++
		}
	}
	if conflict {
		l.counts.Conflicts++
		return cancelled(req, reasons)
	}
	var allShort []charge
	for i, w := range ws {
		if short := l.short(now, w.charges); len(short) > 0 {
			reasons[i] = map[string]any{"Code": "ThrottlingError", "Message": throttleMessage(short)}
			allShort = append(allShort, short...)
		}
	}
	if len(allShort) > 0 {
		l.throttled(allShort, true, c.table())
		return cancelled(req, reasons)
	}
	for _, w := range ws {
		l.draw(now, w.charges, 1)
		if w.ok {
			l.inTx[w.item]++
		}
	}
	return nil
}

// settle records what the answer to the transaction of ws showed: the GSI units
// back when it was cancelled, the items it wrote when it committed.
func (l *LimitedHTTPClient) settle(ws []itemWrite, resp *http.Response, err error) {
	refused := refusedByCondition(resp)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range ws {
		switch {
		case !w.ok, err != nil, w.check:
		case refused:
			l.draw(l.now(), gsiCharges([]itemWrite{w}), -1)
		case resp.StatusCode == http.StatusOK:
			switch {
			case w.put:
				l.items[w.item] = &itemInfo{index: w.index, size: w.size}
			case w.del:
				delete(l.items, w.item)
			default:
				l.learn(w.item, w.set, w.size)
			}
		}
	}
}

// awaitHold frees the items of ws at heldUntil, on the wall clock, and answers
// resp and err then. When ctx ends first it answers ctx's error at once, as a
// client that gives up on DynamoDB sees, and the items stay held until heldUntil
// all the same: the transaction is DynamoDB's to finish.
func (l *LimitedHTTPClient) awaitHold(ctx context.Context, ws []itemWrite, heldUntil time.Time, resp *http.Response, err error) (*http.Response, error) {
	free := func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, w := range ws {
			if w.ok {
				if l.inTx[w.item]--; l.inTx[w.item] == 0 {
					delete(l.inTx, w.item)
				}
			}
		}
	}
	wait := time.Until(heldUntil)
	if wait <= 0 {
		free()
		return resp, err
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
		free()
		return resp, err
	case <-ctx.Done():
		time.AfterFunc(time.Until(heldUntil), free)
		if resp != nil {
			_ = resp.Body.Close()
		}
		return nil, ctx.Err()
	}
}

// read runs a GetItem or a Query under the limits; its units are drawn once its
// answer shows what it read.
func (l *LimitedHTTPClient) read(req *http.Request, op string, c *ddbCall) (*http.Response, error) {
	var id bucketID
	switch op {
	case "GetItem":
		k, ok := c.Key.key()
		if !ok {
			return l.next.Do(req)
		}
		id = bucketID{metered.TableIndex, metered.TableKey(k.pk, k.sk), false}
	case "Query":
		index, key, ok := metered.QueryPartition(c.IndexName, c.KeyConditionExpression, c.ExpressionAttributeNames, c.ExpressionAttributeValues.str)
		if !ok {
			return l.next.Do(req)
		}
		id = bucketID{index, key, false}
	}
	l.mu.Lock()
	if b := l.bucket(l.now(), id); b.tokens <= 0 {
		short := []charge{{id, 0.5}}
		reasons := l.throttled(short, true, c.TableName)
		l.mu.Unlock()
		return errorResponse(req, "ProvisionedThroughputExceededException", map[string]any{
			"message": throttleMessage(short), "ThrottlingReasons": reasons,
		}), nil
	}
	l.mu.Unlock()

	resp, err := l.next.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	body, rerr := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if rerr != nil {
		return resp, nil
	}
	var out struct {
		Item  jsonAttrs
		Items []jsonAttrs
	}
	_ = json.Unmarshal(body, &out)
	if out.Item != nil {
		out.Items = append(out.Items, out.Item)
	}
	size := 0
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, it := range out.Items {
		s := it.size()
		size += s
		if k, ok := it.key(); ok {
			l.learn(k, it.indexKeys(), s)
		}
	}
	units := math.Max(1, math.Ceil(float64(size)/4096))
	if !c.ConsistentRead {
		units /= 2
	}
	l.draw(l.now(), []charge{{id, units}}, 1)
	return resp, nil
}

// throttled counts a refusal for the short charges (count: as one more throttled
// call) and returns its ThrottlingReasons. l.mu is held.
func (l *LimitedHTTPClient) throttled(short []charge, count bool, table string) []map[string]string {
	var reasons []map[string]string
	onIndex := false
	for _, c := range short {
		resource, arn := "Table", "arn:aws:dynamodb:local:000000000000:table/"+table
		if c.id.index != metered.TableIndex {
			resource, arn = "Index", arn+"/index/"+c.id.index
			onIndex = true
		}
		op := "Read"
		if c.id.write {
			op = "Write"
		}
		reason := resource + op + "KeyRangeThroughputExceeded"
		l.counts.Reasons[reason]++
		l.counts.Keys[c.id.index+":"+c.id.key]++
		reasons = append(reasons, map[string]string{"reason": reason, "resource": arn})
	}
	if count {
		l.counts.Throttled++
		if onIndex {
			l.counts.IndexThrottled++
		}
	}
	return reasons
}

// throttleMessage is DynamoDB's message for a throttle of an on-demand table or index.
func throttleMessage(short []charge) string {
	for _, c := range short {
		if c.id.index != metered.TableIndex {
			return "Throughput exceeds the current capacity for one or more global secondary indexes. " +
				"DynamoDB is automatically scaling your index so please try again shortly. (simulated: partition key " +
				c.id.index + " " + c.id.key + ")"
		}
	}
	return "Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your table " +
		"or index so please try again shortly. If exceptions persist, check if you have a hot key. (simulated: partition key " +
		short[0].id.key + ")"
}

// cancelled is DynamoDB's answer to a transaction it cancelled for reasons.
func cancelled(req *http.Request, reasons []map[string]any) *http.Response {
	codes := make([]string, len(reasons))
	for i, r := range reasons {
		codes[i] = r["Code"].(string)
	}
	return errorResponse(req, "TransactionCanceledException", map[string]any{
		"Message":             "Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(codes, ", ") + "]",
		"CancellationReasons": reasons,
	})
}

// errorResponse is a DynamoDB error answer of type typ with the fields of fields.
func errorResponse(req *http.Request, typ string, fields map[string]any) *http.Response {
	m := map[string]any{"__type": "com.amazonaws.dynamodb.v20120810#" + typ}
	maps.Copy(m, fields)
	body, _ := json.Marshal(m)
	h := http.Header{}
	h.Set("Content-Type", "application/x-amz-json-1.0")
	h.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	h.Set("X-Amzn-Requestid", "simulated-limit")
	return &http.Response{
		Status: "400 Bad Request", StatusCode: http.StatusBadRequest,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
		Request: req,
	}
}

// refusedByCondition reports whether resp is a write refused by its condition: a
// ConditionalCheckFailedException or a TransactionCanceledException. It leaves the
// body in place.
func refusedByCondition(resp *http.Response) bool {
	if resp == nil || resp.StatusCode != http.StatusBadRequest || resp.Body == nil {
		return false
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return false
	}
	var e struct {
		Type string `json:"__type"`
	}
	_ = json.Unmarshal(body, &e)
	return strings.HasSuffix(e.Type, "ConditionalCheckFailedException") || strings.HasSuffix(e.Type, "TransactionCanceledException")
}
