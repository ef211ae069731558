package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent/asynceventtest"
)

// A command's flag before the command names the command it belongs to and prints the
// line with the flag moved after it; nothing is run.
func TestFlagBeforeTheCommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args       []string
		want, hint string
	}{
		{[]string{"-limit", "5", "requests", "list", "sale"},
			"flag -limit goes after the command: it is a flag of requests list", "Did you mean: asyncevent requests list -limit 5 sale"},
		{[]string{"-actor", "ann", "-table", "t1", "event", "close", "sale"},
			"flag -actor goes after the command", "Did you mean: asyncevent -table t1 event close -actor ann sale"},
		{[]string{"--limit=5", "requests", "list", "a b"},
			"it is a flag of requests list", "Did you mean: asyncevent requests list --limit=5 'a b'"},
		{[]string{"-once", "holds", "sweep", "sale"},
			"it is a flag of holds sweep", "Did you mean: asyncevent holds sweep -once sale"},
		{[]string{"-nope", "stats", "sale"},
			"flag -nope is neither a global flag nor a flag of stats", "Run 'asyncevent help stats' for its flags."},
		{[]string{"-order", "desc"},
			"flag -order is not a global flag: it is a flag of", "requests list"},
		{[]string{"-bogus"}, "flag provided but not defined: -bogus", "Run 'asyncevent help' for usage."},
	} {
		out, errOut, code := cli(t, tc.args...)
		assert.Equal(t, exitUsage, code, "%v", tc.args)
		assert.Empty(t, out, "%v", tc.args)
		assert.Contains(t, errOut, tc.want, "%v", tc.args)
		assert.Contains(t, errOut, tc.hint, "%v", tc.args)
	}
}

// A misspelled command or group gets the nearest command; a word nowhere near one
// gets none.
func TestMisspelledCommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		near string // "": no suggestion
	}{
		{[]string{"stat", "sale"}, "Did you mean 'asyncevent stats'?"},
		{[]string{"requests", "lsit", "sale"}, "Did you mean 'asyncevent requests list'?"},
		{[]string{"event", "craete", "sale"}, "Did you mean 'asyncevent event create'?"},
		{[]string{"tabel", "create"}, "Did you mean 'asyncevent table create'?"},
		{[]string{"lcoal"}, "Did you mean 'asyncevent local'?"},
		{[]string{"help", "stat"}, "Did you mean 'asyncevent help stats'?"},
		{[]string{"frobnicate"}, ""},
		{[]string{"event"}, ""},
	} {
		out, errOut, code := cli(t, tc.args...)
		assert.Equal(t, exitUsage, code, "%v", tc.args)
		assert.Empty(t, out, "%v", tc.args)
		if tc.near == "" {
			assert.NotContains(t, errOut, "Did you mean", "%v", tc.args)
			continue
		}
		assert.Contains(t, errOut, tc.near, "%v", tc.args)
	}
}

// An ID the keys cannot hold is a usage error with one message in every command that
// takes one, said before any call (the endpoint does not answer), with the library's
// prefix not repeated.
func TestBadIDIsOneUsageErrorEverywhere(t *testing.T) {
	t.Parallel()
	unreachable := []string{"-endpoint", "http://127.0.0.1:1", "-table", "bad-ids"}
	checked := 0
	for _, cmd := range commands() {
		word, _, _ := strings.Cut(cmd.args, " ")
		if !strings.HasSuffix(word, "_ID") {
			continue
		}
		checked++
		args := append(append(append([]string{}, unreachable...), strings.Fields(cmd.name)...), "a#b")
		_, errOut, code := cli(t, args...)
		assert.Equal(t, exitUsage, code, cmd.name)
		first, _, _ := strings.Cut(errOut, "\n")
		assert.Equal(t, "asyncevent "+cmd.name+": invalid "+word+` "a#b": contains the key separator '#' at byte 1`, first)

		_, errOut, code = cli(t, append([]string{"-json"}, args...)...)
		assert.Equal(t, exitUsage, code, cmd.name)
		var v struct{ Error string }
		require.NoError(t, json.Unmarshal([]byte(errOut), &v), errOut)
		assert.Equal(t, "invalid "+word+` "a#b": contains the key separator '#' at byte 1`, v.Error)
	}
	assert.GreaterOrEqual(t, checked, 15, "every command with an ID")

	for _, args := range [][]string{
		{"submit", "sale", "-user", "ann,b#b"},
		{"requests", "list", "-user", "b#b"},
	} {
		_, errOut, code := cli(t, append(append([]string{}, unreachable...), args...)...)
		assert.Equal(t, exitUsage, code, "%v", args)
		assert.Contains(t, errOut, `: invalid -user "b#b": contains the key separator '#' at byte 1`, "%v", args)
		assert.NotContains(t, errOut, "asyncevent: ", "%v", args)
	}
}

// A table that is not there is named, with where it was looked for and the command
// that makes it, which then works; a table without GSI2 is named with what it lacks.
func TestMissingOrMismatchedTableSaysWhatToRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, errOut, code := f.run(t, "stats", "sale")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "asyncevent stats: table "+f.table+" not found at "+asynceventtest.Endpoint(t)+"\n")
	assert.NotContains(t, errOut, "ResourceNotFoundException")
	_, create, ok := strings.Cut(errOut, "Create it: asyncevent ")
	require.True(t, ok, errOut)
	create, _, _ = strings.Cut(create, "\n")
	assert.Contains(t, create, "-table "+f.table+" table create")
	out, errOut, code := cli(t, strings.Fields(create)...)
	require.Equal(t, exitOK, code, "the printed command works: %s%s", out, errOut)
	f.ok(t, "table", "check")

	ctx := context.Background()
	name := asynceventtest.UniqueTableName(t)
	str := func(n string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: types.ScalarAttributeTypeS}
	}
	key := func(hash, rng string) []types.KeySchemaElement {
		return []types.KeySchemaElement{{AttributeName: aws.String(hash), KeyType: types.KeyTypeHash}, {AttributeName: aws.String(rng), KeyType: types.KeyTypeRange}}
	}
	_, err := asynceventtest.DynamoDB(t).CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{str("PK"), str("SK"), str("GSI1PK"), str("GSI1SK")},
		KeySchema:            key("PK", "SK"),
		BillingMode:          types.BillingModePayPerRequest,
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String("GSI1"), KeySchema: key("GSI1PK", "GSI1SK"),
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}},
	})
	require.NoError(t, err)
	t.Cleanup(func() { asynceventtest.DeleteTable(t, name) })
	_, errOut, code = cli(t, "-endpoint", asynceventtest.Endpoint(t), "-table", name, "requests", "list", "sale")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "asyncevent requests list: table "+name+" does not match the design: global secondary index GSI2 is missing\n")
	assert.Contains(t, errOut, "-table "+name+" table check' to list the differences")
}

// The CLI hints at the right place for a flag. A flag put between a
// group and its command (the subcommand) is read as a misspelled command: the hint is
// wrong ('event add-capacity' for -capacity) or missing, where the flag before the
// whole command gets "Did you mean: asyncevent event create -capacity 3 sale".
func TestFlagBeforeTheSubcommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		hint string
	}{
		{[]string{"event", "-capacity", "3", "create", "sale"}, "Did you mean: asyncevent event create -capacity 3 sale"},
		{[]string{"requests", "-user", "ann", "list"}, "Did you mean: asyncevent requests list -user ann"},
		{[]string{"holds", "-once", "sweep", "sale"}, "Did you mean: asyncevent holds sweep -once sale"},
	} {
		out, errOut, code := cli(t, tc.args...)
		assert.Equal(t, exitUsage, code, "%v", tc.args)
		assert.Empty(t, out, "%v", tc.args)
		assert.Contains(t, errOut, tc.hint, "%v", tc.args)
	}
}
