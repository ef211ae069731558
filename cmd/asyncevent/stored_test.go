package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
)

// The lists' -json read a page from an index (eventually consistent, and a
// GSI lags its table) and then the rows again with BatchGetItem. mergeStored adds
// every stored attribute the first read lacked, not only the bookkeeping the caller's
// type leaves out, so a request the index still shows QUEUED and the second read finds
// SUCCEEDED prints as status QUEUED with resultCode SUCCESS and a finishedAt: a row
// that never existed. (The old CLI printed the one read it made.)
func TestMergeStoredMixesTwoReads(t *testing.T) {
	listed := &asyncevent.Request{RequestID: "r1", EventID: "e", UserID: "u", EventType: asyncevent.FirstCome,
		Status: asyncevent.StatusQueued, UIResult: asyncevent.UIPending, RequestedAt: 1, QueuedAt: 2}
	later := *listed
	later.Status, later.UIResult, later.ResultCode, later.StartedAt, later.FinishedAt =
		asyncevent.StatusSucceeded, asyncevent.UISuccess, asyncevent.ResultSuccess, 3, 4
	row, err := attributevalue.MarshalMap(later)
	require.NoError(t, err)

	got := fieldsJSON(mergeStored(fieldsOf(listed), row))
	assert.Equal(t, asyncevent.StatusQueued, got["status"])
	assert.NotContains(t, got, "resultCode", "a QUEUED request printed with the resultCode of a later read")
	assert.NotContains(t, got, "finishedAt", "a QUEUED request printed with the finishedAt of a later read")
}

// The bookkeeping the CLI's -json adds from a read of the row is exactly what the
// caller types leave out of the stored items: the attributes of the full items of
// testdata/stored_items.golden that fieldsOf(Request) and fieldsOf(Event) do not
// print, less the table's keys.
func TestBookkeepingIsWhatTheCallerTypesLeaveOut(t *testing.T) {
	golden, err := os.ReadFile("../../testdata/stored_items.golden")
	require.NoError(t, err)
	items := map[string]map[string]bool{}
	var cur string
	for _, line := range strings.Split(string(golden), "\n") {
		switch {
		case strings.HasPrefix(line, "# "):
			cur = strings.TrimPrefix(line, "# ")
			items[cur] = map[string]bool{}
		case strings.Contains(line, " = ") && cur != "":
			items[cur][strings.SplitN(line, " = ", 2)[0]] = true
		}
	}
	leftOut := map[string]bool{}
	for item, caller := range map[string]any{"EventConfig item": &asyncevent.Event{}, "Request item": &asyncevent.Request{}} {
		require.Contains(t, items, item)
		names := map[string]bool{}
		for _, f := range allFieldsOf(caller) {
			names[f] = true
		}
		for attr := range items[item] {
			if !names[attr] && attr != "PK" && attr != "SK" && !strings.HasPrefix(attr, "GSI") {
				leftOut[attr] = true
			}
		}
	}
	assert.Equal(t, leftOut, bookkeeping)
}

// allFieldsOf is the stored names of v's fields, zero or not.
func allFieldsOf(v any) []string {
	var names []string
	var walk func(reflect.Type)
	walk = func(ty reflect.Type) {
		for ty.Kind() == reflect.Pointer {
			ty = ty.Elem()
		}
		for i := 0; i < ty.NumField(); i++ {
			f := ty.Field(i)
			if f.Anonymous {
				walk(f.Type)
				continue
			}
			if name, _, _ := strings.Cut(f.Tag.Get("dynamodbav"), ","); name != "" && name != "-" {
				names = append(names, name)
			}
		}
	}
	walk(reflect.TypeOf(v))
	return names
}

// A page's rows are read again in BatchGetItem calls of at most 100 keys, a key asked
// twice read once (BatchGetItem refuses duplicates), a row the table lacks left out.
func TestStoredRowsInBatches(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.ok(t, "table", "create")
	e := &env{Env: clikit.Env{Globals: clikit.Globals{Table: f.table, Endpoint: asynceventtest.Endpoint(t)}, Stderr: io.Discard}}
	db := asynceventtest.DynamoDB(t)
	var keys []asyncevent.Key
	for i := range 150 {
		k, err := asyncevent.NewRequestKey(fmt.Sprintf("r%03d", i))
		require.NoError(t, err)
		keys = append(keys, k.Key())
		if i%3 == 0 {
			continue // not on the table
		}
		item, err := attributevalue.MarshalMap(map[string]any{"PK": k.Key().PK, "SK": k.Key().SK, "entityType": "REQUEST", "ttl": i})
		require.NoError(t, err)
		_, err = db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(f.table), Item: item})
		require.NoError(t, err)
	}
	rows, err := e.storedRows(context.Background(), append(keys, keys[1], keys[149]))
	require.NoError(t, err)
	assert.Len(t, rows, 100)
	for i, k := range keys {
		_, read := rows[k]
		assert.Equal(t, i%3 != 0, read, "row %d", i)
	}
}
