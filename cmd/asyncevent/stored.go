package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/asyncevent/asyncevent"
)

// withStored adds to the fields of a library type (a Request, an Event) the
// attributes of its row that the caller's type leaves out: the library's bookkeeping
// (entityType, ttl, the lease, the seat's place, the pool version…), read from the
// table under key, so that an operator's get shows the whole row under the names the
// table stores. A failed read leaves the fields as they are, with a note on stderr.
func (e *env) withStored(ctx context.Context, key asyncevent.Key, fs []field) []field {
	extra, err := e.storedAttributes(ctx, key)
	if err != nil {
		fmt.Fprintf(e.stderr, "note: the row's bookkeeping attributes are not shown: %v\n", err)
		return fs
	}
	have := map[string]bool{}
	for _, f := range fs {
		have[f.name] = true
	}
	for _, f := range extra {
		if !have[f.name] && !strings.HasPrefix(f.name, "GSI") && f.name != "PK" && f.name != "SK" &&
			f.value != false { // as fieldsOf: a false is not shown (a stored 0 is: seatShard 0)
			fs = append(fs, f)
		}
	}
	return fs
}

// storedAttributes reads the row at key (GetItem, eventually consistent) as fields,
// numbers as int64 (times as EpochMillis), in name order.
func (e *env) storedAttributes(ctx context.Context, key asyncevent.Key) ([]field, error) {
	if e.rows == nil {
		db, err := e.dynamoDB(ctx)
		if err != nil {
			return nil, err
		}
		e.rows = db
	}
	k, err := attributevalue.MarshalMap(key)
	if err != nil {
		return nil, err
	}
	out, err := e.rows.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(e.table), Key: k})
	if err != nil {
		return nil, err
	}
	var fs []field
	for _, name := range sortedNames(out.Item) {
		fs = append(fs, field{name: name, value: storedValue(name, out.Item[name])})
	}
	return fs, nil
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
	key, err := asyncevent.NewEventKey(ev.EventID, asyncevent.EventItemConfig)
	if err != nil {
		return itemJSON(ev)
	}
	return fieldsJSON(e.withStored(ctx, key.Key(), fieldsOf(ev)))
}

// storedRequestJSON is itemJSON of a request with its row's bookkeeping attributes.
func (e *env) storedRequestJSON(ctx context.Context, r *asyncevent.Request) map[string]any {
	key, err := asyncevent.NewRequestKey(r.RequestID)
	if err != nil {
		return itemJSON(r)
	}
	return fieldsJSON(e.withStored(ctx, key.Key(), fieldsOf(r)))
}
