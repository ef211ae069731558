package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// submit drives a small event without the demo: a user's clicks in order, a repeated
// click a duplicate, the outcomes decided by the CLI's own worker; an unknown event
// fails once, not once per click.
func TestSubmit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.ok(t, "table", "create")
	f.ok(t, "event", "create", "sale", "-capacity", "3")
	out := f.ok(t, "submit", "sale", "-user", "ann,bob,cid,ann,dan")
	assert.Contains(t, out, "5 clicks: 4 new requests, 1 duplicate · REJECTED 1 · SUCCEEDED 3")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 7)
	assert.Regexp(t, `^ann .* true +SUCCEEDED +SUCCESS`, lines[4], "ann's second click: the first's request")
	assert.Regexp(t, `^dan .* false +REJECTED +REJECTED_CAPACITY`, lines[5])

	var res clikit.Clicks
	f.json(t, &res, "submit", "sale", "-users", "3", "-prefix", "late-", "-parallel", "3")
	assert.Equal(t, "memory", res.Queue)
	require.Len(t, res.Clicks, 3)
	assert.Equal(t, "late-0001", res.Clicks[0].UserID)
	assert.Equal(t, map[string]int{"REJECTED": 3}, res.ByStatus, "sold out")

	out = f.ok(t, "requests", "list", "sale")
	assert.Contains(t, out, "7 requests")

	_, errOut, code := f.run(t, "submit", "nope", "-users", "3")
	assert.Equal(t, exitFailure, code)
	assert.Equal(t, 1, strings.Count(errOut, "event not found"), errOut)
	for args, want := range map[string]string{
		"sale":                      "missing -user NAME or -users N",
		"sale -user a -users 2":     "-user and -users: give one of them",
		"sale -users 1000000":       "-users 1000000: want 1 to 100,000",
		"sale -user a#b":            `-user "a#b"`,
		"sale -users 2 -parallel 0": "-parallel 0",
		"sale -users 0":             "-users 0: want 1 to 100,000",
		"sale -user a -prefix p-":   "-prefix names the users of -users N",
	} {
		_, errOut, code := f.run(t, append([]string{"submit"}, strings.Fields(args)...)...)
		assert.Equal(t, exitUsage, code, args)
		assert.Contains(t, errOut, want, args)
	}
}

// The CLI speaks in its own terms: the flags that set a field, "a space", one
// request, an unknown event refused, a past end refused, errors as JSON under -json,
// plan -apply refused on DynamoDB Local before any call.
func TestCLISpeaksInItsOwnTerms(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.ok(t, "table", "create")

	_, errOut, code := f.run(t, "event", "create", "e1", "-capacity", "0")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "needs -capacity ≥ 1")
	assert.NotContains(t, errOut, "capacityTotal")
	_, errOut, _ = f.run(t, "event", "create", "a b", "-capacity", "1")
	assert.Contains(t, errOut, `invalid EVENT_ID "a b": contains a space at byte 1`)
	_, errOut, _ = f.run(t, "event", "create", "e1", "-capacity", "3000")
	assert.Contains(t, errOut, "use -capacity-shards ≥ 3", "a field in the middle of a message")
	_, errOut, _ = f.run(t, "event", "create", "endsAt-sale", "-capacity", "0")
	assert.Contains(t, errOut, "invalid event: endsAt-sale: a FIRST_COME event needs -capacity ≥ 1", "the ID as given")
	_, errOut, code = f.run(t, "event", "create", "e1", "-capacity", "1", "-ends", "2020-01-01T00:00:00Z")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "-ends 2020-01-01T00:00:00Z is past")
	_, errOut, code = f.run(t, "event", "create", "l1", "-type", "LOTTERY", "-winners", "1", "-cutoff", "2020-01-01T00:00:00Z")
	assert.Equal(t, exitUsage, code, "the API's spelling of the type is taken")
	assert.Contains(t, errOut, "-cutoff 2020-01-01T00:00:00Z is past")
	f.ok(t, "event", "create", "e2", "-type", "FIRST_COME", "-capacity", "1")

	f.ok(t, "submit", "e2", "-user", "ann")
	assert.Contains(t, f.ok(t, "requests", "list", "e2"), "\n1 request\n")
	_, errOut, code = f.run(t, "requests", "list", "nope")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "event not found: nope")

	// Under -json an error is one JSON object on stderr.
	for _, args := range [][]string{
		{"-json", "event", "create", "e1", "-capacity", "0"},
		{"-json", "stats", "nope"},
		{"event", "create", "e1", "-json", "-bogus"},
	} {
		out, errOut, code := f.run(t, args...)
		assert.Empty(t, out)
		var v struct {
			Command, Error, Usage string
			Exit                  int
		}
		require.NoError(t, json.Unmarshal([]byte(errOut), &v), "%v: %s", args, errOut)
		assert.Equal(t, code, v.Exit, "%v", args)
		assert.NotEmpty(t, v.Error, "%v", args)
		assert.Equal(t, code == exitUsage, v.Usage != "", "%v", args)
	}

	_, errOut, code = f.run(t, "plan", "-peak", "1000", "-apply")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "DynamoDB Local does not support it")
	assert.NotContains(t, errOut, "attempts", "refused before any call, not after the retries")
}

// submit -queue-url sends the clicks to the workers' queue: each new click's request
// QUEUED with its message on the queue, a duplicate's status not made up, and a queue
// that is not there refused before any click is written.
func TestSubmitToAQueue(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.ok(t, "table", "create")
	f.ok(t, "event", "create", "sale", "-capacity", "3")
	q := asynceventtest.NewSQSQueue(t, asynceventtest.SQSQueueOptions{})
	sqsFlags := []string{"-queue-url", q.URL(), "-sqs-endpoint", asynceventtest.SQSEndpoint(t)}
	var res clikit.Clicks
	f.json(t, &res, append([]string{"submit", "sale", "-user", "ann,bob,ann"}, sqsFlags...)...)
	assert.Equal(t, "sqs", res.Queue)
	require.Len(t, res.Clicks, 3)
	assert.Equal(t, "QUEUED", res.Clicks[0].Status)
	assert.True(t, res.Clicks[2].Duplicate)
	assert.NotEqual(t, "SUCCEEDED", res.Clicks[2].Status, "a duplicate's status is the one read, or none")
	assert.Equal(t, map[string]int{"QUEUED": 2}, res.ByStatus)
	ds, err := q.Receive(context.Background(), 10, time.Second, time.Minute)
	require.NoError(t, err)
	assert.Len(t, ds, 2, "one message per new request")

	gone := strings.TrimSuffix(q.URL(), "/") + "-gone"
	_, errOut, code := f.run(t, "submit", "sale", "-user", "cid", "-queue-url", gone, "-sqs-endpoint", asynceventtest.SQSEndpoint(t))
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "-queue-url "+gone)
	assert.NotContains(t, f.ok(t, "requests", "list", "sale"), "cid", "nothing written for a queue that is not there")
}
