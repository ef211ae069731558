package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/entity"
)

// withStored adds to the fields of a library type (a Request, an Event) the
// attributes of its row that the caller's type leaves out: the library's bookkeeping
// (entityType, ttl, the lease, the seat's place, the pool version…), read from the
// table under key, so that an operator's get shows the whole row under the names the
// table stores. A failed read leaves the fields as they are, with a note on stderr.
func (e *env) withStored(ctx context.Context, key asyncevent.Key, fs []field) []field {
	return e.withStoredOf(ctx, key, fs, bookkeeping)
}

// withStoredOf is withStored of the bookkeeping attributes names.
func (e *env) withStoredOf(ctx context.Context, key asyncevent.Key, fs []field, names map[string]bool) []field {
	rows, err := e.storedRows(ctx, []asyncevent.Key{key})
	if err != nil {
		fmt.Fprintf(e.Stderr, "note: the row's bookkeeping attributes are not shown: %v\n", err)
		return fs
	}
	return mergeStoredOf(fs, rows[key], names)
}

// bookkeeping are the attributes of a stored request and of a stored event that the
// library's caller types (Request, Event) leave out: the items' own, which the CLI's
// -json has always printed. TestBookkeepingIsWhatTheCallerTypesLeaveOut holds the list
// to the stored items.
var bookkeeping = map[string]bool{
	"entityType": true, "ttl": true, // both
	"idempotencyKey": true, "leaseOwner": true, "leaseExpiresAt": true, "seatShard": true, "seatEpoch": true, // a request
	"emptyShards": true, "poolVersion": true, "locksKeptUntil": true, // an event
}

// mergeStored appends to fs the bookkeeping attributes of row it lacks, as fieldsOf
// would (a stored false is not shown; a stored 0 is: seatShard 0). Only those: every
// other field is the first read's, so that a list read from an index (which lags the
// table) and its rows read again never print a row that never was (a QUEUED request
// with the resultCode of a later read).
func mergeStored(fs []field, row map[string]types.AttributeValue) []field {
	return mergeStoredOf(fs, row, bookkeeping)
}

// capacityBookkeeping are the attributes of a stored capacity item that the
// library's EventCapacity leaves out.
var capacityBookkeeping = map[string]bool{"entityType": true, "holders": true, "void": true, "poolVersion": true}

// mergeStoredOf is mergeStored of the bookkeeping attributes names.
func mergeStoredOf(fs []field, row map[string]types.AttributeValue, names map[string]bool) []field {
	have := map[string]bool{}
	for _, f := range fs {
		have[f.name] = true
	}
	for _, name := range sortedNames(row) {
		if have[name] || !names[name] {
			continue
		}
		if v := storedValue(name, row[name]); v != false {
			fs = append(fs, field{name: name, value: v})
		}
	}
	return fs
}

// storedRows reads the rows at keys (eventually consistent), by key: one GetItem for
// one key, BatchGetItem (100 keys a call, unprocessed keys sent again) for a page of
// them, so that a list's -json costs one more call a page, not one a row.
func (e *env) storedRows(ctx context.Context, keys []asyncevent.Key) (map[asyncevent.Key]map[string]types.AttributeValue, error) {
	db, err := e.rowReader(ctx)
	if err != nil {
		return nil, err
	}
	rows := make(map[asyncevent.Key]map[string]types.AttributeValue, len(keys))
	if len(keys) == 1 {
		k, err := attributevalue.MarshalMap(keys[0])
		if err != nil {
			return nil, err
		}
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(e.Table), Key: k})
		if err != nil {
			return nil, err
		}
		rows[keys[0]] = out.Item
		return rows, nil
	}
	var unique []asyncevent.Key // BatchGetItem refuses a key twice
	seen := map[asyncevent.Key]bool{}
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			unique = append(unique, k)
		}
	}
	for chunk := range slices.Chunk(unique, 100) {
		ks := make([]map[string]types.AttributeValue, len(chunk))
		for i, key := range chunk {
			k, err := attributevalue.MarshalMap(key)
			if err != nil {
				return nil, err
			}
			ks[i] = k
		}
		pending := map[string]types.KeysAndAttributes{e.Table: {Keys: ks}}
		for attempt := 0; len(pending) > 0; attempt++ {
			if attempt == 5 { // the rows read stand; the others print as the library returned them
				return rows, fmt.Errorf("%d rows still unprocessed after %d BatchGetItem calls", len(pending[e.Table].Keys), attempt)
			}
			if attempt > 0 {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(time.Duration(50<<attempt) * time.Millisecond):
				}
			}
			out, err := db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: pending})
			if err != nil {
				return nil, err
			}
			for _, item := range out.Responses[e.Table] {
				var key asyncevent.Key
				if err := attributevalue.UnmarshalMap(item, &key); err != nil {
					return nil, err
				}
				rows[key] = item
			}
			pending = out.UnprocessedKeys
		}
	}
	return rows, nil
}

func sortedNames(item map[string]types.AttributeValue) []string {
	names := make([]string, 0, len(item))
	for n := range item {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// storedValue is an attribute's value as the CLI prints a library type's field.
func storedValue(name string, av types.AttributeValue) any {
	number := func(s string) any {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return s
		}
		if strings.HasSuffix(name, "At") || strings.HasSuffix(name, "Until") {
			return asyncevent.EpochMillis(n)
		}
		return n
	}
	switch v := av.(type) {
	case *types.AttributeValueMemberN:
		return number(v.Value)
	case *types.AttributeValueMemberNS:
		ns := make([]any, len(v.Value))
		for i, s := range v.Value {
			ns[i] = number(s)
		}
		return ns
	}
	var x any
	if err := attributevalue.Unmarshal(av, &x); err != nil {
		return fmt.Sprint(av)
	}
	return x
}

// storedEventJSON is itemJSON of an event with its row's bookkeeping attributes.
func (e *env) storedEventJSON(ctx context.Context, ev *asyncevent.Event) map[string]any {
	return e.storedEventsJSON(ctx, []*asyncevent.Event{ev})[0]
}

// storedEventsJSON is storedEventJSON of a page of events, read in one call.
func (e *env) storedEventsJSON(ctx context.Context, evs []*asyncevent.Event) []map[string]any {
	items := make([]any, len(evs))
	for i, ev := range evs {
		items[i] = ev
	}
	return e.storedJSON(ctx, items, func(i int) (asyncevent.Key, error) {
		key, err := asyncevent.NewEventKey(evs[i].EventID, asyncevent.EventItemConfig)
		return key.Key(), err
	})
}

// storedRequestJSON is itemJSON of a request with its row's bookkeeping attributes.
func (e *env) storedRequestJSON(ctx context.Context, r *asyncevent.Request) map[string]any {
	return e.storedRequestsJSON(ctx, []*asyncevent.Request{r})[0]
}

// storedRequestsJSON is storedRequestJSON of a page of requests, read in one call.
func (e *env) storedRequestsJSON(ctx context.Context, rs []*asyncevent.Request) []map[string]any {
	items := make([]any, len(rs))
	for i, r := range rs {
		items[i] = r
	}
	return e.storedJSON(ctx, items, func(i int) (asyncevent.Key, error) {
		key, err := asyncevent.NewRequestKey(rs[i].RequestID)
		return key.Key(), err
	})
}

// storedJSON is itemJSON of each item with its row's bookkeeping attributes, the rows
// read in one call; an item whose key cannot be built, or all of them when the read
// fails (with a note on stderr), is printed as the library returned it.
func (e *env) storedJSON(ctx context.Context, items []any, keyOf func(int) (asyncevent.Key, error)) []map[string]any {
	out := make([]map[string]any, len(items))
	keys := make([]asyncevent.Key, len(items))
	ok := make([]bool, len(items))
	var want []asyncevent.Key
	for i := range items {
		k, err := keyOf(i)
		if err == nil {
			keys[i], ok[i] = k, true
			want = append(want, k)
		}
	}
	var rows map[asyncevent.Key]map[string]types.AttributeValue
	if len(want) > 0 {
		var err error
		if rows, err = e.storedRows(ctx, want); err != nil {
			fmt.Fprintf(e.Stderr, "note: rows' bookkeeping attributes are not shown: %v\n", err)
		}
	}
	for i, item := range items {
		row, read := rows[keys[i]]
		if !ok[i] || !read {
			out[i] = itemJSON(item)
			continue
		}
		out[i] = fieldsJSON(mergeStored(fieldsOf(item), row))
	}
	return out
}

// withEntity appends an item's entityType, which the library's types leave out, to
// fs: the CLI's -json has always printed it.
func withEntity(fs []field, t entity.Type) []field {
	return append(fs, field{name: "entityType", value: string(t)})
}

// capacityJSON is itemJSON of an event's capacity with its items' bookkeeping: the
// item's own for an event of one capacity item, the entity type for a sum of shards
// (whose tokens are the shards').
func (e *env) capacityJSON(ctx context.Context, capacity *asyncevent.EventCapacity) map[string]any {
	fs := fieldsOf(capacity)
	keys, err := asyncevent.CapacityKeys(capacity.EventID, max(1, len(capacity.Shards)))
	if err != nil || len(keys) != 1 {
		return fieldsJSON(withEntity(fs, entity.Capacity))
	}
	return fieldsJSON(e.withStoredOf(ctx, keys[0].Key(), fs, capacityBookkeeping))
}

// statusLogsJSON is itemJSON of a request's status log entries with the rows'
// entityType and ttl, read again (a Query of the request's LOG# rows) and matched by
// the moment and the status each entry records.
func (e *env) statusLogsJSON(ctx context.Context, requestID string, logs []asyncevent.StatusLog) []map[string]any {
	out := make([]map[string]any, len(logs))
	ttl := map[string]any{}
	if key, err := asyncevent.NewRequestKey(requestID); err == nil {
		if rows, err := e.queryRows(ctx, key.Key().PK, asyncevent.StatusLogPrefix); err != nil {
			fmt.Fprintf(e.Stderr, "note: the log rows' ttl is not shown: %v\n", err)
		} else {
			for _, row := range rows {
				var id struct {
					OccurredAt int64  `dynamodbav:"occurredAt"`
					ToStatus   string `dynamodbav:"toStatus"`
				}
				if attributevalue.UnmarshalMap(row, &id) == nil && row["ttl"] != nil {
					ttl[fmt.Sprint(id.OccurredAt, id.ToStatus)] = storedValue("ttl", row["ttl"])
				}
			}
		}
	}
	for i := range logs {
		fs := withEntity(fieldsOf(&logs[i]), entity.StatusLog)
		if v, ok := ttl[fmt.Sprint(int64(logs[i].OccurredAt), string(logs[i].ToStatus))]; ok {
			fs = append(fs, field{name: "ttl", value: v})
		}
		out[i] = fieldsJSON(fs)
	}
	return out
}

// queryRows reads the rows of partition pk whose sort key begins with prefix, all
// pages (eventually consistent).
func (e *env) queryRows(ctx context.Context, pk, prefix string) ([]map[string]types.AttributeValue, error) {
	db, err := e.rowReader(ctx)
	if err != nil {
		return nil, err
	}
	in := &dynamodb.QueryInput{
		TableName:              aws.String(e.Table),
		KeyConditionExpression: aws.String("PK = :pk AND begins_with(SK, :prefix)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: pk}, ":prefix": &types.AttributeValueMemberS{Value: prefix},
		},
	}
	var rows []map[string]types.AttributeValue
	for pages := dynamodb.NewQueryPaginator(db, in); pages.HasMorePages(); {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		rows = append(rows, page.Items...)
	}
	return rows, nil
}

// rowReader returns the client that reads rows again, made on its first use.
func (e *env) rowReader(ctx context.Context) (*dynamodb.Client, error) {
	if e.rows == nil {
		db, err := e.DynamoDB(ctx)
		if err != nil {
			return nil, err
		}
		e.rows = db
	}
	return e.rows, nil
}
