package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
	"github.com/asyncevent/asyncevent/httpapi"
	"github.com/asyncevent/asyncevent/queue"
	"github.com/asyncevent/asyncevent/seed"
)

func TestMain(m *testing.M) { asynceventtest.Main(m) }

// cli runs the CLI with args and returns what it printed and its exit code.
func cli(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), code
}

// fixture is a fresh table on the test DynamoDB Local and the global flags that name
// it.
type fixture struct {
	table  string
	global []string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	name := asynceventtest.UniqueTableName(t)
	t.Cleanup(func() { asynceventtest.DeleteTable(t, name) })
	return &fixture{table: name, global: []string{"-endpoint", asynceventtest.Endpoint(t), "-table", name}}
}

// run runs the CLI on the fixture's table.
func (f *fixture) run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return cli(t, append(append([]string{}, f.global...), args...)...)
}

// ok runs the CLI and requires exit code 0.
func (f *fixture) ok(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := f.run(t, args...)
	require.Equal(t, 0, code, "asyncevent %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), out, errOut)
	return out
}

// json runs the CLI with -json, requires exit code 0 and decodes stdout into v.
func (f *fixture) json(t *testing.T, v any, args ...string) {
	t.Helper()
	out := f.ok(t, append([]string{"-json"}, args...)...)
	require.NoError(t, json.Unmarshal([]byte(out), v), out)
}

// client is a library client on the fixture's table, with opts.
func (f *fixture) client(t *testing.T, opts asyncevent.Options) *asyncevent.Client {
	t.Helper()
	opts.TableName = f.table
	c, err := asyncevent.New(asynceventtest.DynamoDB(t), opts)
	require.NoError(t, err)
	return c
}

// pastClock is a clock hours behind, so that a lottery's cutoff lies in the real past
// once its entries are in.
func pastClock(d time.Duration) func() time.Time {
	return func() time.Time { return time.Now().Add(-d) }
}

func TestTableCreateAndCheck(t *testing.T) {
	t.Parallel()
	f := newFixture(t)

	out := f.ok(t, "table", "create")
	assert.Contains(t, out, "table "+f.table+" is ready")
	var created clikit.TableCheck
	f.json(t, &created, "table", "create") // idempotent
	assert.Equal(t, clikit.TableCheck{Table: f.table, OK: true}, created)

	out = f.ok(t, "table", "check")
	assert.Contains(t, out, "matches the design")
	var checked clikit.TableCheck
	f.json(t, &checked, "table", "check")
	assert.True(t, checked.OK)

	// A table that does not exist: exit 1, and the JSON says why.
	out, _, code := cli(t, "-endpoint", asynceventtest.Endpoint(t), "-table", f.table+"-missing", "-json", "table", "check")
	assert.Equal(t, exitFailure, code)
	var missing clikit.TableCheck
	require.NoError(t, json.Unmarshal([]byte(out), &missing))
	assert.False(t, missing.OK)
	assert.Equal(t, []string{"table not found"}, missing.Problems)
}

func TestEventCreateAndGet(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.ok(t, "table", "create")

	var fc clikit.EventItems
	f.json(t, &fc, "event", "create", "-type", "first-come", "-capacity", "3", "-name", "Spring sale", "spring")
	assert.Equal(t, "spring", fc.Config["eventId"])
	assert.Equal(t, "FIRST_COME", fc.Config["eventType"])
	assert.Equal(t, 3.0, fc.Config["capacityTotal"])

	var got clikit.EventItems
	f.json(t, &got, "event", "get", "spring")
	assert.Equal(t, "Spring sale", got.Config["name"])
	assert.Equal(t, 3.0, got.Capacity["capacityRemaining"])
	assert.Equal(t, "CAPACITY", got.Capacity["entityType"], "the item's bookkeeping, as -json always printed it")
	assert.Nil(t, got.Draw)
	out := f.ok(t, "event", "get", "spring")
	assert.Contains(t, out, "CAPACITY")
	assert.Contains(t, out, "capacityRemaining")

	// Flags after the event ID work as well as before it.
	var lot clikit.EventItems
	f.json(t, &lot, "event", "create", "draw-1", "-type", "LOTTERY", "-winners", "2", "-cutoff", "+1h")
	assert.Equal(t, "LOTTERY", lot.Config["eventType"])
	assert.Equal(t, "COLLECTING", lot.Config["phase"])
	f.json(t, &got, "event", "get", "draw-1")
	assert.Equal(t, lot.Config["seedCommitment"], got.Draw["seedCommitment"])
	assert.Equal(t, "DRAW", got.Draw["entityType"])
	assert.NotContains(t, got.Draw, "seed", "the seed stays sealed until the draw")

	// An event the library refuses is a usage error; a taken ID or an unknown event a failure.
	_, errOut, code := f.run(t, "event", "create", "-capacity", "0", "bad")
	assert.Equal(t, exitUsage, code, errOut)
	assert.Contains(t, errOut, "-capacity ≥ 1")
	_, errOut, code = f.run(t, "event", "create", "-capacity", "5", "spring")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "already exists")
	_, errOut, code = f.run(t, "event", "get", "nope")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "event not found")
	_, _, code = f.run(t, "event", "create", "-type", "raffle", "x")
	assert.Equal(t, exitUsage, code)
	_, _, code = f.run(t, "event", "create", "-cutoff", "tomorrow", "x")
	assert.Equal(t, exitUsage, code)
}

// playFirstCome runs n users through a FIRST_COME event of the given capacity, with
// the status log on, and returns the request IDs in click order.
func playFirstCome(t *testing.T, f *fixture, eventID string, capacity, n int) []string {
	t.Helper()
	ctx := context.Background()
	_, err := f.client(t, asyncevent.Options{}).CreateEvent(ctx, asyncevent.EventSettings{EventID: eventID, EventType: asyncevent.FirstCome, CapacityTotal: int64(capacity)})
	require.NoError(t, err)
	users := make([]string, n)
	for i := range users {
		users[i] = fmt.Sprintf("user-%d", i)
	}
	return participate(t, f, eventID, users...)
}

// participate runs users through an event, one at a time in click order, with the
// status log on, and returns their request IDs.
func participate(t *testing.T, f *fixture, eventID string, users ...string) []string {
	t.Helper()
	ctx := context.Background()
	c := f.client(t, asyncevent.Options{StatusLog: true})
	q := queue.NewMemory(queue.MemoryOptions{})
	var ids []string
	for _, user := range users {
		p, err := c.Submit(ctx, q, eventID, user)
		require.NoError(t, err)
		ids = append(ids, p.RequestID)
		time.Sleep(2 * time.Millisecond) // distinct queuedAt, so queue order is click order
	}
	proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	for {
		ds, err := q.Receive(ctx, 1, 0, time.Minute)
		require.NoError(t, err)
		if len(ds) == 0 {
			break
		}
		require.Empty(t, asynceventtest.Process(ctx, proc, ds))
		require.NoError(t, q.Delete(ctx, ds[0].Receipt))
	}
	return ids
}

// A confirm of a request that won its seat without a hold says that there is
// nothing to confirm, not that it was confirmed already.
func TestConfirmOfASeatWonWithoutAHold(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.ok(t, "table", "create")
	ids := playFirstCome(t, f, "no-holds", 1, 1)
	out, errOut, code := f.run(t, "request", "confirm", ids[0])
	assert.Equal(t, exitFailure, code)
	assert.Equal(t, "not applied: the request is SUCCEEDED (SUCCESS): it won its seat without a hold (its event has none): there is nothing to confirm\n", out)
	assert.Equal(t, "asyncevent request confirm: "+ids[0]+" was not confirmed\n", errOut)
}

func TestRequestGetListAndLogs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.ok(t, "table", "create")
	ids := playFirstCome(t, f, "ev", 2, 5)

	var req map[string]any
	f.json(t, &req, "request", "get", ids[0])
	assert.Equal(t, ids[0], req["requestId"])
	assert.Equal(t, "SUCCEEDED", req["status"])
	assert.Equal(t, "user-0", req["userId"])
	// The CLI's -json keeps the row's bookkeeping (CHANGELOG: field names are a promise).
	for _, name := range []string{"entityType", "idempotencyKey", "ttl", "seatShard"} {
		assert.Contains(t, req, name)
	}
	assert.Contains(t, f.ok(t, "request", "get", ids[0]), "SUCCEEDED")
	_, errOut, code := f.run(t, "request", "get", "no-such-request")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "not found")

	// Two pages of an event's list, oldest first.
	var p1, p2 clikit.RequestPage
	f.json(t, &p1, "requests", "list", "ev", "-limit", "3")
	require.Len(t, p1.Requests, 3)
	require.NotEmpty(t, p1.NextCursor)
	f.json(t, &p2, "requests", "list", "ev", "-limit", "3", "-cursor", p1.NextCursor)
	var listed []string
	for _, r := range append(p1.Requests, p2.Requests...) {
		listed = append(listed, r["requestId"].(string))
		assert.Equal(t, "REQUEST", r["entityType"], "a list's rows keep their bookkeeping: %v", r)
		assert.Contains(t, r, "ttl")
		assert.Contains(t, r, "idempotencyKey")
	}
	assert.Equal(t, ids, listed)

	var latest clikit.RequestPage
	f.json(t, &latest, "requests", "list", "ev", "-order", "desc", "-limit", "1")
	assert.Equal(t, ids[4], latest.Requests[0]["requestId"])

	var won clikit.RequestPage
	f.json(t, &won, "requests", "list", "ev", "-status", "succeeded")
	assert.Len(t, won.Requests, 2)
	out := f.ok(t, "requests", "list", "ev", "-status", "REJECTED")
	assert.Contains(t, out, "REJECTED_CAPACITY")
	assert.Contains(t, out, "3 requests")

	var mine clikit.RequestPage
	f.json(t, &mine, "requests", "list", "-user", "user-3")
	require.Len(t, mine.Requests, 1)
	assert.Equal(t, ids[3], mine.Requests[0]["requestId"])

	_, _, code = f.run(t, "requests", "list", "ev", "-order", "sideways")
	assert.Equal(t, exitUsage, code)
	_, _, code = f.run(t, "requests", "list", "ev", "-cursor", "garbage")
	assert.Equal(t, exitUsage, code)
	_, _, code = f.run(t, "requests", "list", "-user", "user-3", "-status", "QUEUED")
	assert.Equal(t, exitUsage, code)

	// The status log of a winner of a home claim: RECEIVED, QUEUED, SUCCEEDED.
	var logs []map[string]any
	f.json(t, &logs, "logs", ids[0])
	var to []string
	for _, l := range logs {
		to = append(to, l["toStatus"].(string))
		assert.Equal(t, "STATUS_LOG", l["entityType"])
		assert.Contains(t, l, "ttl", "the rows' bookkeeping, as -json always printed it")
	}
	assert.Equal(t, []string{"RECEIVED", "QUEUED", "SUCCEEDED"}, to)
	assert.Contains(t, f.ok(t, "logs", ids[0]), "won a seat")
}

func TestStats(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.ok(t, "table", "create")
	playFirstCome(t, f, "ev", 2, 5)

	var st clikit.Stats
	f.json(t, &st, "stats", "ev")
	assert.Equal(t, "ev", st.EventID)
	assert.Equal(t, asyncevent.FirstCome, st.EventType)
	assert.Equal(t, 5, st.Requests)
	assert.Equal(t, map[asyncevent.Status]int{"SUCCEEDED": 2, "REJECTED": 3}, st.ByStatus)
	assert.Equal(t, map[asyncevent.ResultCode]int{"SUCCESS": 2, "REJECTED_CAPACITY": 3}, st.ByResultCode)
	require.NotNil(t, st.CapacityTotal)
	assert.Equal(t, int64(2), *st.CapacityTotal)
	assert.Equal(t, int64(0), st.CapacityRemaining)
	// Every winner started; a loser only if its worker did not yet know the event was
	// sold out (then one write rejects it, without startedAt).
	assert.GreaterOrEqual(t, st.QueueWait.Count, 2)
	assert.LessOrEqual(t, st.QueueWait.Count, 5)
	assert.Equal(t, httpapi.FairnessView{}, st.Fairness, "clicked one at a time, decided in queue order")

	out := f.ok(t, "stats", "ev")
	assert.Contains(t, out, "0 inversions, 0 late winners")
	assert.Contains(t, out, "SUCCEEDED 2")
	assert.Contains(t, out, "2 total, 0 remaining")
	_, _, code := f.run(t, "stats", "nope")
	assert.Equal(t, exitFailure, code)
}

func TestDrawAndVerify(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.ok(t, "table", "create")

	// Entries made two hours ago for a cutoff one hour ago, so that the CLI, on the
	// real clock, may draw at once.
	c := f.client(t, asyncevent.Options{Clock: pastClock(2 * time.Hour)})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "lot", EventType: asyncevent.Lottery,
		WinnerCount: 3, LotteryCutoffAt: asyncevent.MillisOf(time.Now().Add(-time.Hour))})
	require.NoError(t, err)

	// Before the draw, verify has nothing to check.
	_, errOut, code := f.run(t, "verify", "lot")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "has not been drawn yet")

	q := queue.NewMemory(queue.MemoryOptions{})
	for i := range 10 {
		_, err := c.Submit(ctx, q, "lot", fmt.Sprintf("entrant-%d", i))
		require.NoError(t, err)
	}
	proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	ds, err := q.Receive(ctx, 10, 0, time.Minute)
	require.NoError(t, err)
	require.Len(t, ds, 10)
	require.Empty(t, asynceventtest.Process(ctx, proc, ds))

	var drawn clikit.Draw
	f.json(t, &drawn, "draw", "lot")
	assert.Len(t, drawn.Winners, 3)
	assert.Equal(t, 10.0, drawn.Item["entryCount"])
	assert.Equal(t, "ANNOUNCED", drawn.Item["phase"])
	assert.Equal(t, "DRAW", drawn.Item["entityType"])
	assert.NotEmpty(t, drawn.Item["seed"])

	// The draw is idempotent: the same winners again.
	var again clikit.Draw
	f.json(t, &again, "draw", "lot")
	assert.Equal(t, drawn.Winners, again.Winners)
	out := f.ok(t, "draw", "lot")
	assert.Contains(t, out, drawn.Winners[0])

	var v httpapi.VerificationView
	f.json(t, &v, "verify", "lot")
	assert.True(t, v.OK)
	assert.Equal(t, 10, v.EntryCount)
	assert.ElementsMatch(t, drawn.Winners, v.Winners)
	assert.Empty(t, v.Problems)
	assert.Contains(t, f.ok(t, "verify", "lot"), "verified")

	// A first-come event cannot be drawn.
	_, err = c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "fc", EventType: asyncevent.FirstCome, CapacityTotal: 1})
	require.NoError(t, err)
	_, errOut, code = f.run(t, "draw", "fc")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "not a lottery")
}

func TestSweep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.ok(t, "table", "create")

	// A request queued an hour ago whose message was lost (the in-memory queue is
	// dropped), and one queued now.
	old := f.client(t, asyncevent.Options{Clock: pastClock(time.Hour)})
	_, err := old.CreateEvent(ctx, asyncevent.EventSettings{EventID: "ev", EventType: asyncevent.FirstCome, CapacityTotal: 5})
	require.NoError(t, err)
	lost, err := old.Submit(ctx, queue.NewMemory(queue.MemoryOptions{}), "ev", "user-lost")
	require.NoError(t, err)
	_, err = f.client(t, asyncevent.Options{}).Submit(ctx, queue.NewMemory(queue.MemoryOptions{}), "ev", "user-fresh")
	require.NoError(t, err)

	q := asynceventtest.NewSQSQueue(t, asynceventtest.SQSQueueOptions{})
	sqsFlags := []string{"-queue-url", q.URL(), "-sqs-endpoint", asynceventtest.SQSEndpoint(t)}
	var rep clikit.SweepReport
	f.json(t, &rep, append([]string{"sweep", "ev", "-stuck-after", "10m", "-rate", "1000"}, sqsFlags...)...)
	assert.Equal(t, 2, rep.Examined)
	assert.Equal(t, map[string]int{"QUEUED": 1}, rep.Resent)
	assert.Equal(t, 1, rep.Skipped)
	assert.Empty(t, rep.Failed)

	ds, err := q.Receive(ctx, 10, time.Second, time.Minute)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	m, err := asyncevent.DecodeMessage(ds[0].Body)
	require.NoError(t, err)
	assert.Equal(t, lost.RequestID, m.RequestID)

	out := f.ok(t, append([]string{"sweep", "ev", "-stuck-after", "10m", "-rate", "1000"}, sqsFlags...)...)
	assert.Contains(t, out, "QUEUED 1")

	// Periodically, until interrupted: a clean stop after the rounds so far.
	every, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(every, append(append([]string{}, f.global...),
		append([]string{"sweep", "ev", "-every", "200ms", "-stuck-after", "10m", "-rate", "1000"}, sqsFlags...)...), &stdout, &stderr)
	assert.Equal(t, 0, code, stderr.String())
	assert.GreaterOrEqual(t, strings.Count(stdout.String(), "examined"), 2, stdout.String())

	_, _, code = f.run(t, "sweep", "ev")
	assert.Equal(t, exitUsage, code, "-queue-url is required")
	_, _, code = f.run(t, append([]string{"sweep", "ev", "-every", "-1s"}, sqsFlags...)...)
	assert.Equal(t, exitUsage, code, "-every must not be negative")
}

func TestUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		code int
		want string // in stdout or stderr
	}{
		{nil, exitUsage, "Commands:"},
		{[]string{"help"}, exitOK, "requests list"},
		{[]string{"-h"}, exitOK, "Global flags"},
		{[]string{"help", "requests", "list"}, exitOK, "-status"},
		{[]string{"help"}, exitOK, "request confirm [flags] REQUEST_ID"},
		{[]string{"help"}, exitOK, "holds sweep [flags] EVENT_ID"},
		{[]string{"help", "holds", "sweep"}, exitOK, "-once"},
		{[]string{"help", "event", "create"}, exitOK, "-hold-for DURATION"},
		{[]string{"help", "event"}, exitOK, "event list [flags]"},
		{[]string{"help", "event"}, exitOK, "event close [flags] EVENT_ID -actor NAME"},
		{[]string{"help", "event"}, exitOK, "event extend [flags] EVENT_ID -actor NAME (-ends TIME | -cutoff TIME | -starts TIME)"},
		{[]string{"help", "event"}, exitOK, "event audit [flags] EVENT_ID"},
		{[]string{"help", "event"}, exitOK, "event add-capacity [flags] EVENT_ID -actor NAME -seats N"},
		{[]string{"help", "event", "add-capacity"}, exitOK, "-shard K"},
		{[]string{"help", "request"}, exitOK, "request cancel [flags] REQUEST_ID -actor NAME"},
		{[]string{"help"}, exitOK, "request cancel [flags] REQUEST_ID -actor NAME"},
		{[]string{"help", "event", "pause"}, exitOK, "-actor NAME"},
		{[]string{"help", "event", "extend"}, exitOK, "-cutoff time"},
		{[]string{"help", "event", "list"}, exitOK, "-cursor cursor"},
		{[]string{"help"}, exitOK, "event resume [flags] EVENT_ID -actor NAME"},
		{[]string{"event"}, exitUsage, "The event commands:\n  event create"},
		{[]string{"holds"}, exitUsage, `missing command after "holds"`},
		{[]string{"stats", "-h"}, exitOK, "usage: asyncevent stats"},
		{[]string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{[]string{"table"}, exitUsage, `missing command after "table"`},
		{[]string{"table", "drop"}, exitUsage, `unknown command "table drop"`},
		{[]string{"-endpoint", "http://127.0.0.1:1", "stats"}, exitUsage, "missing EVENT_ID"},
		{[]string{"-endpoint", "http://127.0.0.1:1", "stats", "a", "b"}, exitUsage, `unexpected argument "b"`},
		{[]string{"stats", "-nope", "x"}, exitUsage, "flag provided but not defined: -nope"},
		{[]string{"-bogus"}, exitUsage, "flag provided but not defined"},
		{[]string{"demo", "-capacity", "0"}, exitUsage, "-capacity must be at least 1"},
		{[]string{"demo", "-repeat", "1.5"}, exitUsage, "-repeat"},
		{[]string{"bench", "-n", "1"}, exitUsage, "-n at least 2"},
		// A group answers to its name in either number.
		{[]string{"help", "events"}, exitOK, "event list [flags]"},
		{[]string{"events"}, exitUsage, "The events commands:\n  event create"},
		{[]string{"help", "request", "list"}, exitOK, "-status"},
		{[]string{"-endpoint", "http://127.0.0.1:1", "events", "get"}, exitUsage, "missing EVENT_ID"},
		{[]string{"help", "local"}, exitOK, "-port int"},
		{[]string{"local", "-port", "70000"}, exitUsage, "-port 70000: want 1 to 65535"},
		{[]string{"help", "draw"}, exitOK, "-settle duration"},
		{[]string{"draw", "-settle", "-1s", "ev"}, exitUsage, "-settle -1s: at least 1s"},
		{[]string{"-endpoint", "http://127.0.0.1:1", "local", "-port", "70000"}, exitUsage, "-port 70000"},
	} {
		out, errOut, code := cli(t, tc.args...)
		assert.Equal(t, tc.code, code, "asyncevent %v\n%s%s", tc.args, out, errOut)
		assert.Contains(t, out+errOut, tc.want, "asyncevent %v", tc.args)
	}
}

// The help keeps to helpWidth columns (a tab counted as 8): a summary or a flag's
// text wraps; only a command's usage line, which cannot, may run past it.
func TestHelpFitsItsWidth(t *testing.T) {
	t.Parallel()
	pages := [][]string{{"help"}}
	for _, c := range commands() {
		pages = append(pages, append([]string{"help"}, strings.Fields(c.name)...))
	}
	for _, page := range pages {
		out, _, code := cli(t, page...)
		require.Equal(t, exitOK, code, "asyncevent %v", page)
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "usage: ") || strings.HasSuffix(strings.TrimSpace(line), ")") && strings.HasPrefix(line, "  ") && !strings.Contains(line, "   ") {
				continue // a usage line
			}
			assert.LessOrEqual(t, columns(line), helpWidth, "asyncevent %v: %q", page, line)
		}
	}
}

// columns is how many columns line takes, a tab reaching the next multiple of 8.
func columns(line string) int {
	n := 0
	for _, r := range line {
		if r == '\t' {
			n += 8 - n%8
		} else {
			n++
		}
	}
	return n
}

func TestFailureWhenDynamoDBIsUnreachable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code := run(ctx, []string{"-endpoint", "http://127.0.0.1:1", "-table", "unreachable", "stats", "ev"}, &out, &errb)
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errb.String(), "asyncevent stats:")
}

// The stumbles of a first session with the CLI: each one says what to do instead.
func TestCLISaysWhatToDoInstead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.ok(t, "table", "create")

	// -winners without -type lottery.
	_, errOut, code := f.run(t, "event", "create", "-winners", "3", "-cutoff", "+1h", "lot")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "-cutoff, -winners: only for a LOTTERY event; add -type lottery")
	_, errOut, code = f.run(t, "event", "create", "-type", "lottery", "-capacity", "3", "lot")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "-capacity: only for a FIRST_COME event")

	// A draw or a verification before the cutoff and its settle window names the
	// time the draw opens, in RFC 3339.
	cutoff := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
	c := f.client(t, asyncevent.Options{})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "lot", EventType: asyncevent.Lottery,
		WinnerCount: 3, LotteryCutoffAt: asyncevent.MillisOf(cutoff)})
	require.NoError(t, err)
	opens := cutoff.Add(asyncevent.DefaultDrawSettleWindow).Format("2006-01-02T15:04:05.000Z07:00")
	_, errOut, code = f.run(t, "draw", "lot")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "too early to draw lot: entries close at "+cutoff.Format("2006-01-02T15:04:05.000Z07:00"))
	assert.Contains(t, errOut, "run 'asyncevent draw lot' from "+opens)
	assert.NotContains(t, errOut, "+0000 UTC", "no time in Go's default format")
	_, errOut, code = f.run(t, "verify", "lot")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "lot has not been drawn yet, so there is nothing to verify")
	assert.NotContains(t, errOut, "too early to draw")

	// The status log of a request that does not exist is a failure, not an empty log.
	_, errOut, code = f.run(t, "logs", "no-such-request")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "not found")
	_, _, code = f.run(t, "-json", "logs", "no-such-request")
	assert.Equal(t, exitFailure, code)

	// The settle window is in the help.
	out, _, code := cli(t, "help", "draw")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "from the settle window (-settle, default 30s) after its cutoff")
}

func TestPlanAndAShardedEvent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.ok(t, "table", "create")
	out := f.ok(t, "plan", "-peak", "20000")
	assert.Contains(t, out, "-index-shards 100 -capacity-shards 13", "the library's rule: ⌈20,000 × 4 ÷ 800⌉, ⌈5,000 × 2 ÷ 800⌉")
	assert.Contains(t, out, "110000", "the table's WCU/s at the peak: 20,000 × 5 + 5,000 × 2")
	assert.Contains(t, out, "80000", "each index's WCU/s")
	assert.Contains(t, out, "rerun with -apply", "DynamoDB Local reports no warm throughput")
	for _, name := range []string{"table " + f.table, "GSI1", "GSI2"} {
		assert.Regexp(t, `(?m)^on-demand quota: `+regexp.QuoteMeta(name)+` needs [\d,]+ WCU/s.* above AWS's default of 40,000 per table and per index`, out)
	}
	assert.Contains(t, out, "drain: 1,200,000 messages, 100 at once, 30ms each: the workers need about 6m0s to drain the queue")
	out = f.ok(t, "plan", "-peak", "1000", "-concurrency", "50", "-message-time", "20ms", "-duration", "30s")
	assert.NotContains(t, out, "on-demand quota", "5,500 WCU/s is under the quota")
	assert.Contains(t, out, "drain: 30,000 messages, 50 at once, 20ms each: the workers need about 12s")
	var plan clikit.Plan
	f.json(t, &plan, "plan", "-peak", "20000", "-concurrency", "200")
	assert.Equal(t, 100, plan.Plan.IndexShards)
	assert.EqualValues(t, (3 * time.Minute).Milliseconds(), plan.Plan.Drain.TimeMs)
	assert.Len(t, plan.Plan.OverQuota, 3)
	assert.EqualValues(t, 110000, plan.Plan.Need["table"].WriteUnitsPerSecond, "the table under its own name")
	raw := f.ok(t, "-json", "plan", "-peak", "1000")
	for _, name := range []string{`"clicksPerSecond"`, `"need"`, `"table"`, `"messageTimeMs"`} {
		assert.Contains(t, raw, name)
	}

	out = f.ok(t, "event", "create", "drop", "-capacity", "1000", "-peak", "20000")
	assert.Contains(t, out, "indexShards")
	var ev struct {
		Config map[string]any `json:"config"`
	}
	f.json(t, &ev, "event", "get", "drop")
	assert.EqualValues(t, 100, ev.Config["indexShards"])
	assert.EqualValues(t, 13, ev.Config["capacityShards"])
}

// TestDrawSecretFromTheEnvironment: with ASYNCEVENT_DRAW_SECRET the CLI seals the
// seeds of the lotteries it makes, and draws a sealed one only with that secret;
// without it the event is UNSEALED, and the CLI says so. Not parallel: it sets the
// process's environment.
func TestDrawSecretFromTheEnvironment(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.ok(t, "table", "create")
	secret := bytes.Repeat([]byte{0x5e}, seed.MinSecretBytes)

	t.Setenv(clikit.EnvDrawSecret, "")
	out, errOut, code := f.run(t, "-json", "event", "create", "open", "-type", "lottery", "-winners", "1", "-cutoff", "+1h")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, `"seedMode": "UNSEALED"`)
	assert.Contains(t, errOut, "seed UNSEALED")
	assert.Contains(t, errOut, clikit.EnvDrawSecret)

	t.Setenv(clikit.EnvDrawSecret, hex.EncodeToString(secret))
	out, errOut, code = f.run(t, "-json", "event", "create", "sealed", "-type", "lottery", "-winners", "1", "-cutoff", "+1h")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, `"seedMode": "SEALED"`)
	assert.Empty(t, errOut)
	t.Setenv(clikit.EnvDrawSecret, "abc")
	_, errOut, code = f.run(t, "event", "get", "sealed")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, clikit.EnvDrawSecret)

	// A sealed lottery whose draw may run now.
	seeds, err := seed.HMAC(secret)
	require.NoError(t, err)
	c := f.client(t, asyncevent.Options{Clock: pastClock(2 * time.Hour), Seeds: seeds})
	_, err = c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "lot", EventType: asyncevent.Lottery,
		WinnerCount: 1, LotteryCutoffAt: asyncevent.MillisOf(time.Now().Add(-time.Hour))})
	require.NoError(t, err)

	t.Setenv(clikit.EnvDrawSecret, "")
	_, errOut, code = f.run(t, "draw", "lot")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "sealed seed")
	assert.Contains(t, errOut, clikit.EnvDrawSecret)
	t.Setenv(clikit.EnvDrawSecret, hex.EncodeToString(bytes.Repeat([]byte{1}, seed.MinSecretBytes)))
	_, errOut, code = f.run(t, "draw", "lot")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "does not match its commitment")

	t.Setenv(clikit.EnvDrawSecret, hex.EncodeToString(secret))
	out = f.ok(t, "draw", "lot")
	assert.Regexp(t, `seed mode +SEALED`, out)
	assert.Contains(t, f.ok(t, "verify", "lot"), "verified")
}

// playHolds creates cfg, an event with holds, with a client on clock (nil: the real
// one), runs users through it one at a time in click order, and returns their
// request IDs: the first CapacityTotal HELD, the others WAITLISTED.
func playHolds(t *testing.T, f *fixture, clock func() time.Time, cfg asyncevent.EventSettings, users int) []string {
	t.Helper()
	ctx := context.Background()
	c := f.client(t, asyncevent.Options{Clock: clock})
	cfg.EventType = asyncevent.FirstCome
	if cfg.EndsAt == 0 {
		cfg.EndsAt = asyncevent.MillisOf(time.Now().Add(24 * time.Hour))
	}
	_, err := c.CreateEvent(ctx, cfg)
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	ids := make([]string, users)
	for i := range ids {
		p, err := c.Submit(ctx, q, cfg.EventID, fmt.Sprintf("user-%d", i))
		require.NoError(t, err)
		ids[i] = p.RequestID
		// A second apart: queue order is click order, and each request has a second
		// of its own on the waitlist's counts, so its place there is exact.
		time.Sleep(time.Second)
	}
	proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	for {
		ds, err := q.Receive(ctx, 1, 0, time.Minute)
		require.NoError(t, err)
		if len(ds) == 0 {
			require.NoError(t, c.FlushProgress(ctx)) // the waitlist's counts, for its places
			return ids
		}
		require.Empty(t, asynceventtest.Process(ctx, proc, ds))
	}
}

func TestEventCreateWithHolds(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.ok(t, "table", "create")

	var ev clikit.EventItems
	f.json(t, &ev, "event", "create", "sale", "-capacity", "3", "-hold-for", "10m", "-ends", "+24h")
	assert.EqualValues(t, 10*time.Minute, ev.Config["holdFor"], "stored as Go stores a time.Duration: nanoseconds")
	assert.Regexp(t, `holdFor +10m0s`, f.ok(t, "event", "get", "sale"))

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-capacity", "3", "-hold-for", "5s"}, "-hold-for 5s: want 10s to 24h0m0s (or 0: no holds)"},
		{[]string{"-capacity", "3", "-hold-for", "10m"}, "an event with holds (-hold-for) needs -ends"},
		{[]string{"-capacity", "3", "-hold-for", "25h"}, "-hold-for 25h0m0s: want 10s to 24h0m0s"},
		{[]string{"-capacity", "3", "-hold-for", "-1m"}, "-hold-for -1m0s"},
		{[]string{"-capacity", "3", "-hold-for", "soon"}, "-hold-for"},
		{[]string{"-type", "lottery", "-winners", "1", "-cutoff", "+1h", "-hold-for", "10m"}, "-hold-for: only for a FIRST_COME event"},
	} {
		_, errOut, code := f.run(t, append([]string{"event", "create", "bad"}, tc.args...)...)
		assert.Equal(t, exitUsage, code, "%v: %s", tc.args, errOut)
		assert.Contains(t, errOut, tc.want, "%v", tc.args)
	}
	_, _, code := f.run(t, "event", "get", "bad")
	assert.Equal(t, exitFailure, code, "no event was created")
}

func TestEventCreateRanked(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.ok(t, "table", "create")

	var ev clikit.EventItems
	f.json(t, &ev, "event", "create", "sale", "-capacity", "3", "-ranked", "-rank-settle", "200ms")
	assert.Equal(t, "RANKED", ev.Config["admission"])
	assert.EqualValues(t, 200*time.Millisecond, ev.Config["rankSettle"], "stored as Go stores a time.Duration: nanoseconds")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-capacity", "3", "-ranked", "-rank-settle", "1ms"}, "rankSettle 1ms"},
		{[]string{"-capacity", "3", "-rank-settle", "200ms"}, "rankSettle is for a ranked admission"},
		{[]string{"-type", "lottery", "-winners", "1", "-cutoff", "+1h", "-ranked"}, "-ranked: only for a FIRST_COME event"},
	} {
		_, errOut, code := f.run(t, append([]string{"event", "create", "bad"}, tc.args...)...)
		assert.NotEqual(t, exitOK, code, "%v: %s", tc.args, errOut)
		assert.Contains(t, errOut, tc.want, "%v", tc.args)
	}
	_, _, code := f.run(t, "event", "get", "bad")
	assert.Equal(t, exitFailure, code, "no event was created")
}

// A sale with holds seen from the CLI: a HELD request with the time left on its hold,
// a WAITLISTED one; a confirm, a release, a confirm too late and one twice; the
// release's seat handed on by the hold sweep; the holds in the stats.
func TestHeldAndWaitlistedRequests(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.ok(t, "table", "create")
	ids := playHolds(t, f, nil, asyncevent.EventSettings{EventID: "sale", CapacityTotal: 2, HoldFor: 10 * time.Minute}, 5)

	out := f.ok(t, "request", "get", ids[0])
	assert.Regexp(t, `^HELD until \S+ \((9m\d\ds|10m0s) left\): 'asyncevent request confirm `+ids[0]+`' once paid`, out)
	assert.Regexp(t, `holdExpiresAt +\S+ \(\d+\)`, out)
	assert.Regexp(t, `(?m)^seatShard +0$`, out, "the shard, not a pointer")
	var held map[string]any
	f.json(t, &held, "request", "get", ids[0])
	assert.Equal(t, "HELD", held["status"])
	assert.Equal(t, "HELD", held["uiResult"])
	assert.NotZero(t, held["holdExpiresAt"])
	out = f.ok(t, "request", "get", ids[2])
	assert.True(t, strings.HasPrefix(out, "WAITLISTED: waits for a seat given back"), out)
	assert.Contains(t, out, "'asyncevent request release "+ids[2]+"'")
	assert.Regexp(t, `on the waitlist: 0 ahead \(the next seat given back goes to the first\), until \S+Z`, out)
	assert.Contains(t, f.ok(t, "request", "get", ids[3]), "on the waitlist: 1 ahead")
	var waitlisted map[string]any
	f.json(t, &waitlisted, "request", "get", ids[3])
	if place, ok := waitlisted["waitlist"].(map[string]any); assert.True(t, ok, "%v", waitlisted) {
		assert.EqualValues(t, 1, place["ahead"])
	}
	assert.NotContains(t, f.ok(t, "stats", "sale"), "HELD until", "only request get says it")

	// The first pays; the second gives up; the fourth leaves the waitlist.
	out = f.ok(t, "request", "confirm", ids[0])
	assert.Equal(t, "confirmed: "+ids[0]+" is SUCCEEDED (SUCCESS): the seat is the user's\n", out)
	var rel clikit.Transition
	f.json(t, &rel, "request", "release", ids[1])
	assert.Equal(t, clikit.Transition{RequestID: ids[1], Action: "release", Applied: true, Status: "REJECTED", ResultCode: "REJECTED_RELEASED"}, rel)
	assert.Contains(t, f.ok(t, "request", "release", ids[3]), "released: "+ids[3]+" is REJECTED (REJECTED_RELEASED)")
	assert.Contains(t, f.ok(t, "request", "get", ids[4]), "on the waitlist: 1 ahead", "the release's count written before the command ended")

	// Not applied: the outcome on stdout, exit code 1.
	out, errOut, code := f.run(t, "request", "confirm", ids[1])
	assert.Equal(t, exitFailure, code)
	assert.Equal(t, "not applied: the request is REJECTED (REJECTED_RELEASED): its hold ended before the confirm: refund the payment\n", out)
	assert.Contains(t, errOut, ids[1]+" was not confirmed\n")
	assert.NotContains(t, errOut, "REJECTED_RELEASED", "said once, on stdout")
	out, _, code = f.run(t, "-json", "request", "confirm", ids[0])
	assert.Equal(t, exitFailure, code)
	var twice clikit.Transition
	require.NoError(t, json.Unmarshal([]byte(out), &twice), out)
	assert.False(t, twice.Applied)
	assert.Equal(t, "SUCCEEDED", twice.Status)
	assert.Equal(t, "SUCCESS", twice.ResultCode)
	assert.Equal(t, ids[0], twice.Request["requestId"], "the request as found")
	out, _, code = f.run(t, "request", "release", ids[0])
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, out, "not applied: the request is SUCCEEDED (SUCCESS): its seat is the user's")
	out, _, code = f.run(t, "request", "confirm", ids[2])
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, out, "not applied: the request is WAITLISTED: it holds no seat")
	_, errOut, code = f.run(t, "request", "confirm", "no-such-request")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "not found")
	_, _, code = f.run(t, "request", "release")
	assert.Equal(t, exitUsage, code)

	// The seat given back goes to the one still waitlisted.
	var sw httpapi.HoldSweepView
	f.json(t, &sw, "holds", "sweep", "sale")
	assert.Equal(t, httpapi.HoldSweepView{EventID: "sale", Passes: 1, Served: 1}, sw)
	assert.Regexp(t, `^HELD until`, f.ok(t, "request", "get", ids[2]))
	assert.Contains(t, f.ok(t, "request", "get", ids[4]), "on the waitlist: 0 ahead", "the sweep's count written before the command ended")

	var st clikit.Stats
	f.json(t, &st, "stats", "sale")
	require.NotNil(t, st.Holds)
	assert.Equal(t, httpapi.HoldStatsView{HoldForSeconds: 600, HoldForMs: 600000, Held: 1, Confirmed: 1, Released: 2, Waitlisted: 1, SeatsReturned: 1, SeatsServed: 1}, *st.Holds)
	out = f.ok(t, "stats", "sale")
	assert.Regexp(t, `holds +10m0s each: 1 held, 1 confirmed, 2 released, 0 expired`, out)
	assert.Regexp(t, `waitlist +1 waiting`, out)
	assert.Regexp(t, `seats given back +1: 1 handed to the waitlist, 0 not yet`, out)

	// An event without holds has no holds figures.
	playFirstCome(t, f, "plain", 1, 1)
	var plain clikit.Stats
	f.json(t, &plain, "stats", "plain")
	assert.Nil(t, plain.Holds)
	assert.NotContains(t, f.ok(t, "stats", "plain"), "holds")
}

// Holds that ran out: request get and confirm say so; holds sweep expires them, pass
// by pass with -max-writes, one pass with -once, and ends the waitlist of an event
// that closed.
func TestHoldsSweep(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.ok(t, "table", "create")
	// Held an hour ago for ten minutes: every hold ran out 50 minutes ago.
	ids := playHolds(t, f, pastClock(time.Hour), asyncevent.EventSettings{EventID: "sale", CapacityTotal: 3, HoldFor: 10 * time.Minute}, 6)

	assert.Regexp(t, `^HELD, but its hold ran out at \S+ \(\d+m\d+s ago\): too late to confirm; the next hold sweep ends it REJECTED_HOLD_EXPIRED`,
		f.ok(t, "request", "get", ids[0]))
	out, _, code := f.run(t, "request", "confirm", ids[0])
	assert.Equal(t, exitFailure, code)
	assert.Regexp(t, `^not applied: the request is HELD: its hold ran out at \S+, too late to confirm: refund the payment`, out)

	// One pass, which ends holds first: two of the three, and says there is more.
	var sw httpapi.HoldSweepView
	f.json(t, &sw, "holds", "sweep", "sale", "-once", "-max-writes", "2")
	assert.Equal(t, "sale", sw.EventID)
	assert.Equal(t, 1, sw.Passes)
	assert.Equal(t, 2, sw.Expired)
	assert.True(t, sw.More)
	out = f.ok(t, "holds", "sweep", "sale", "-once", "-max-writes", "1")
	assert.Regexp(t, `passes +1\n`, out)
	assert.Contains(t, out, "the pass reached -max-writes: run it again")
	// Passes until one leaves nothing more to do.
	f.json(t, &sw, "holds", "sweep", "sale", "-max-writes", "1")
	assert.GreaterOrEqual(t, sw.Passes, 2)
	assert.False(t, sw.More)
	for _, id := range ids[3:] {
		assert.Regexp(t, `^HELD until`, f.ok(t, "request", "get", id))
	}
	out, _, code = f.run(t, "request", "confirm", ids[0])
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, out, "not applied: the request is REJECTED (REJECTED_HOLD_EXPIRED): its hold ended before the confirm: refund the payment")
	var st clikit.Stats
	f.json(t, &st, "stats", "sale")
	require.NotNil(t, st.Holds)
	assert.Equal(t, 3, st.Holds.Expired)
	assert.Equal(t, 3, st.Holds.Held)
	assert.Equal(t, int64(3), st.Holds.SeatsServed, "the three seats given back, to the three waitlisted")
	assert.Zero(t, st.Holds.Waitlisted)

	// An event that closed an hour ago: its hold expires, its waitlist ends.
	playHolds(t, f, pastClock(2*time.Hour), asyncevent.EventSettings{EventID: "closed", CapacityTotal: 1, HoldFor: 10 * time.Minute,
		EndsAt: asyncevent.MillisOf(time.Now().Add(-time.Hour))}, 3)
	out = f.ok(t, "holds", "sweep", "closed")
	assert.Regexp(t, `closed +2 WAITLISTED requests ended REJECTED_CAPACITY`, out)
	f.json(t, &sw, "holds", "sweep", "closed")
	assert.Equal(t, httpapi.HoldSweepView{EventID: "closed", Passes: 1}, sw, "nothing left")

	// An event without holds, an unknown one, and mistakes.
	playFirstCome(t, f, "plain", 1, 1)
	_, errOut, code := f.run(t, "holds", "sweep", "plain")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "has no holds")
	assert.Contains(t, errOut, "event create -hold-for")
	_, errOut, code = f.run(t, "holds", "sweep", "nope")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "not found")
	_, _, code = f.run(t, "holds", "sweep")
	assert.Equal(t, exitUsage, code)
	_, _, code = f.run(t, "holds", "sweep", "sale", "-max-writes", "-1")
	assert.Equal(t, exitUsage, code)
}

// The event list, newest first, a page at a time: type, state, seats left.
func TestEventList(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.ok(t, "table", "create")
	assert.Equal(t, "EVENT ID  TYPE  STATE  SEATS LEFT  CREATED  NAME\n0 events\n", f.ok(t, "event", "list"))

	playFirstCome(t, f, "sold", 2, 3)
	f.ok(t, "event", "create", "sale", "-capacity", "3", "-name", "Spring sale")
	f.ok(t, "event", "create", "lot", "-type", "lottery", "-winners", "1", "-cutoff", "+1h")
	f.ok(t, "event", "create", "later", "-capacity", "1", "-starts", "+1h")
	f.ok(t, "event", "pause", "sale", "-actor", "alice")

	// Pages of two until the cursor runs out: every event once, newest first. (A full
	// last page may still hand out a cursor, whose page is empty.)
	var pages []clikit.EventPage
	var listed []clikit.EventSummary
	for cursor := ""; len(pages) == 0 || cursor != ""; {
		require.Less(t, len(pages), 3, "pages: %+v", pages)
		var p clikit.EventPage
		f.json(t, &p, "event", "list", "-limit", "2", "-cursor", cursor)
		assert.LessOrEqual(t, len(p.Events), 2)
		pages, listed, cursor = append(pages, p), append(listed, p.Events...), p.NextCursor
	}
	assert.Len(t, pages[0].Events, 2)
	byID := map[string]clikit.EventSummary{}
	var order []string
	for i, s := range listed {
		id := s.Config["eventId"].(string)
		order = append(order, id)
		assert.Equal(t, "CONFIG", s.Config["entityType"], "a list's rows keep their bookkeeping: %v", s.Config)
		byID[id] = s
		if i > 0 {
			assert.LessOrEqual(t, s.Config["createdAt"], listed[i-1].Config["createdAt"], "newest first: %v", order)
		}
	}
	assert.ElementsMatch(t, []string{"sold", "sale", "lot", "later"}, order)
	assert.Equal(t, asyncevent.StateOpen, byID["sold"].State)
	require.NotNil(t, byID["sold"].SeatsLeft, "0 seats left is said, not left out")
	assert.EqualValues(t, 0, *byID["sold"].SeatsLeft)
	assert.Equal(t, asyncevent.StatePaused, byID["sale"].State)
	assert.EqualValues(t, 3, *byID["sale"].SeatsLeft)
	assert.Equal(t, "Spring sale", byID["sale"].Config["name"])
	assert.Equal(t, asyncevent.StateOpen, byID["lot"].State)
	assert.Nil(t, byID["lot"].SeatsLeft, "a lottery has no seats")
	assert.Equal(t, "LOTTERY", byID["lot"].Config["eventType"])
	assert.Equal(t, asyncevent.StateScheduled, byID["later"].State)

	out := f.ok(t, "event", "list")
	assert.Regexp(t, `(?m)^EVENT ID +TYPE +STATE +SEATS LEFT +CREATED +NAME$`, out)
	assert.Regexp(t, `(?m)^sold +FIRST_COME +OPEN +0 of 2 +\S+Z +-$`, out)
	assert.Regexp(t, `(?m)^sale +FIRST_COME +PAUSED +3 of 3 +\S+Z +Spring sale$`, out)
	assert.Regexp(t, `(?m)^lot +LOTTERY +OPEN +- +\S+Z +-$`, out)
	assert.Regexp(t, `(?m)^later +FIRST_COME +SCHEDULED +1 of 1 `, out)
	assert.True(t, strings.HasSuffix(out, "\n4 events\n"), out)
	out = f.ok(t, "event", "list", "-limit", "1")
	assert.Regexp(t, `\n1 event; next page: -cursor \S+\n$`, out)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-cursor", "garbage"}, "-cursor: "},
		{[]string{"-cursor", pages[0].NextCursor[:len(pages[0].NextCursor)-2]}, "-cursor: "},
		{[]string{"-limit", "101"}, "-limit: "},
		{[]string{"-limit", "-1"}, "-limit must not be negative"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		_, errOut, code := f.run(t, append([]string{"event", "list"}, tc.args...)...)
		assert.Equal(t, exitUsage, code, "%v: %s", tc.args, errOut)
		assert.Contains(t, errOut, tc.want, "%v", tc.args)
	}
}

// eventState runs event get and returns the event's state and CONFIG item.
func eventState(t *testing.T, f *fixture, eventID string) (string, map[string]any) {
	t.Helper()
	var ev clikit.EventItems
	f.json(t, &ev, "event", "get", eventID)
	return string(ev.State), ev.Config
}

// auditLen is the number of entries in an event's audit trail.
func auditLen(t *testing.T, f *fixture, eventID string) int {
	t.Helper()
	var trail []map[string]any
	f.json(t, &trail, "event", "audit", eventID)
	return len(trail)
}

// refused runs a control that the event's state refuses: exit 1, the reason on
// stdout, notDone on stderr; and checks that it wrote nothing.
func refused(t *testing.T, f *fixture, eventID, reason, notDone string, args ...string) {
	t.Helper()
	_, before := eventState(t, f, eventID)
	entries := auditLen(t, f, eventID)
	out, errOut, code := f.run(t, args...)
	assert.Equal(t, exitFailure, code, "%v\n%s%s", args, out, errOut)
	assert.Equal(t, "not applied: "+reason+"\n", out, "%v", args)
	assert.Contains(t, errOut, notDone, "%v", args)
	_, after := eventState(t, f, eventID)
	assert.Equal(t, before, after, "%v wrote nothing", args)
	assert.Equal(t, entries, auditLen(t, f, eventID), "%v added no audit entry", args)
}

// Each control applied, then refused by the state it left: exit 1, the reason on
// stdout, nothing written; the audit trail of the applied ones.
func TestEventControls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.ok(t, "table", "create")
	f.ok(t, "event", "create", "sale", "-capacity", "3", "-ends", "+1h")
	assert.Equal(t, "no audit entries for sale: no operator has closed, paused, resumed or extended it, added seats to it or cancelled a seat of it\n", f.ok(t, "event", "audit", "sale"))
	assert.Regexp(t, `^sale is OPEN\n\nCONFIG\n`, f.ok(t, "event", "get", "sale"))

	out := f.ok(t, "event", "pause", "sale", "-actor", "alice")
	assert.Equal(t, "paused: sale is PAUSED: ingest refuses its clicks until 'asyncevent event resume'; "+nodesLearn+"\n", out)
	state, cfg := eventState(t, f, "sale")
	assert.Equal(t, "PAUSED", state)
	assert.Equal(t, true, cfg["paused"])
	_, err := f.client(t, asyncevent.Options{}).Submit(ctx, queue.NewMemory(queue.MemoryOptions{}), "sale", "user-1")
	assert.ErrorIs(t, err, asyncevent.ErrEventPaused)
	refused(t, f, "sale", "the event is paused already", "sale was not paused: it is PAUSED", "event", "pause", "sale", "-actor", "bob")

	var res clikit.Control
	f.json(t, &res, "event", "resume", "sale", "-actor", "bob")
	assert.Equal(t, "sale", res.EventID)
	assert.Equal(t, asyncevent.ActionResume, res.Action)
	assert.True(t, res.Applied)
	assert.Equal(t, asyncevent.StateOpen, res.State)
	assert.Empty(t, res.Reason)
	assert.Equal(t, "sale", res.Config["eventId"])
	assert.NotContains(t, res.Config, "paused", "false is not stored as a value to show")
	refused(t, f, "sale", "the event is not paused", "sale was not resumed: it is OPEN", "event", "resume", "sale", "-actor", "bob")

	// Extend: later is applied; sooner, or a cutoff of a first-come event, is refused.
	_, cfg = eventState(t, f, "sale")
	end := asyncevent.EpochMillis(int64(cfg["endsAt"].(float64)))
	newEnd := end.Time().Add(time.Hour)
	out = f.ok(t, "event", "extend", "sale", "-actor", "alice", "-ends", newEnd.Format(time.RFC3339Nano))
	assert.Equal(t, "extended: sale ends at "+formatMillis(asyncevent.MillisOf(newEnd))+"; "+nodesLearn+"\n", out)
	_, cfg = eventState(t, f, "sale")
	assert.EqualValues(t, asyncevent.MillisOf(newEnd), cfg["endsAt"])
	refused(t, f, "sale", "the end has passed, is less than 10 s away, or is not before the new one", "sale was not extended: it is OPEN",
		"event", "extend", "sale", "-actor", "alice", "-ends", "+30m")
	refused(t, f, "sale", "only a LOTTERY has a cutoff", "sale was not extended", "event", "extend", "sale", "-actor", "alice", "-cutoff", "+3h")

	out = f.ok(t, "event", "close", "sale", "-actor", "carol")
	assert.Equal(t, "closed: sale is CLOSED: ingest refuses its clicks from now on; "+nodesLearn+"\n", out)
	state, cfg = eventState(t, f, "sale")
	assert.Equal(t, "CLOSED", state)
	assert.Equal(t, cfg["closedAt"], cfg["endsAt"])
	refused(t, f, "sale", "the event is closed already", "sale was not closed: it is CLOSED", "event", "close", "sale", "-actor", "carol")
	refused(t, f, "sale", "the event is closed", "sale was not paused: it is CLOSED", "event", "pause", "sale", "-actor", "carol")
	refused(t, f, "sale", "the event is closed", "sale was not resumed: it is CLOSED", "event", "resume", "sale", "-actor", "carol")
	refused(t, f, "sale", "the end has passed, is less than 10 s away, or is not before the new one", "sale was not extended: it is CLOSED",
		"event", "extend", "sale", "-actor", "carol", "-ends", "+5h")

	// A refusal in JSON: the reason and the event as found.
	out, _, code := f.run(t, "-json", "event", "close", "sale", "-actor", "carol")
	assert.Equal(t, exitFailure, code)
	var no clikit.Control
	require.NoError(t, json.Unmarshal([]byte(out), &no), out)
	assert.Equal(t, clikit.Control{EventView: no.EventView, Action: "CLOSE", Reason: "the event is closed already", Config: cfg}, no)
	assert.Equal(t, "sale", no.EventID)
	assert.Equal(t, asyncevent.StateClosed, no.State, "the event as the refusal found it")

	// The trail: when, who, what, oldest first.
	var trail []map[string]any
	f.json(t, &trail, "event", "audit", "sale")
	require.Len(t, trail, 4)
	var who, what []string
	for i, a := range trail {
		who, what = append(who, a["actor"].(string)), append(what, a["action"].(string))
		assert.Equal(t, "sale", a["eventId"])
		assert.NotZero(t, a["at"])
		if i > 0 {
			assert.GreaterOrEqual(t, a["at"], trail[i-1]["at"])
		}
	}
	assert.Equal(t, []string{"alice", "bob", "alice", "carol"}, who)
	assert.Equal(t, []string{"PAUSE", "RESUME", "EXTEND_END", "CLOSE"}, what)
	assert.Equal(t, "to "+newEnd.UTC().Truncate(time.Second).Format(time.RFC3339), trail[2]["detail"])
	out = f.ok(t, "event", "audit", "sale")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 5, out)
	assert.Regexp(t, `^AT +ACTOR +ACTION +DETAIL$`, lines[0])
	assert.Regexp(t, `^\S+Z +alice +PAUSE +-$`, lines[1])
	assert.Regexp(t, `^\S+Z +bob +RESUME +-$`, lines[2])
	assert.Regexp(t, `^\S+Z +alice +EXTEND_END +to \S+Z$`, lines[3])
	assert.Regexp(t, `^\S+Z +carol +CLOSE +-$`, lines[4])

	// A lottery's cutoff moves later, until its end.
	f.ok(t, "event", "create", "lot", "-type", "lottery", "-winners", "1", "-cutoff", "+1h", "-ends", "+2h")
	var ext clikit.Control
	f.json(t, &ext, "event", "extend", "lot", "-actor", "alice", "-cutoff", "+90m")
	assert.True(t, ext.Applied)
	assert.Equal(t, asyncevent.ActionExtendCutoff, ext.Action)
	assert.Equal(t, asyncevent.StateOpen, ext.State)
	cutoff := asyncevent.EpochMillis(int64(ext.Config["lotteryCutoffAt"].(float64)))
	assert.WithinDuration(t, time.Now().Add(90*time.Minute), cutoff.Time(), time.Minute)
	assert.Regexp(t, `^extended: lot takes lottery entries until \S+Z; `, f.ok(t, "event", "extend", "lot", "-actor", "alice", "-cutoff", "+100m"))
	out, _, code = f.run(t, "event", "extend", "lot", "-actor", "alice", "-cutoff", "+3h")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, out, "not applied: the cutoff has passed, is less than 10 s away, is not before the new one, lies past the event's end, or the draw began")
	assert.Equal(t, 2, auditLen(t, f, "lot"))

	// An unknown event is a failure; so is its audit trail.
	_, errOut, code := f.run(t, "event", "close", "nope", "-actor", "alice")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "event not found")
	_, errOut, code = f.run(t, "event", "audit", "nope")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "event not found")
}

// Mistakes in a control's command line: usage errors that name the flag, and nothing
// written.
func TestEventControlUsage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.ok(t, "table", "create")
	f.ok(t, "event", "create", "sale", "-capacity", "3", "-ends", "+1h")
	_, before := eventState(t, f, "sale")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"close", "sale"}, "-actor is required"},
		{[]string{"pause", "sale", "-actor", ""}, "-actor is required"},
		{[]string{"resume", "-actor", "alice"}, "missing EVENT_ID"},
		{[]string{"close", "sale", "other", "-actor", "alice"}, `unexpected argument "other"`},
		{[]string{"pause", "sale", "-actor", strings.Repeat("a", asyncevent.MaxIDLength+1)}, "actor"},
		{[]string{"close", "bad id", "-actor", "alice"}, `invalid EVENT_ID "bad id"`},
		{[]string{"extend", "sale", "-actor", "alice"}, "missing -ends TIME, -cutoff TIME or -starts TIME"},
		{[]string{"extend", "sale", "-ends", "+2h"}, "-actor is required"},
		{[]string{"extend", "sale", "-actor", "alice", "-ends", "+2h", "-cutoff", "+2h"}, "-ends, -cutoff and -starts: give one of them"},
		{[]string{"extend", "sale", "-actor", "alice", "-ends", "tomorrow"}, `invalid value "tomorrow" for flag -ends`},
		{[]string{"extend", "sale", "-actor", "alice", "-cutoff", "2026-13-01"}, `invalid value "2026-13-01" for flag -cutoff`},
		{[]string{"extend", "sale", "-actor", "alice", "-ends", "+2h", "-capacity", "4"}, "flag provided but not defined: -capacity"},
	} {
		args := append([]string{"event"}, tc.args...)
		out, errOut, code := f.run(t, args...)
		assert.Equal(t, exitUsage, code, "%v: %s", args, errOut)
		assert.Empty(t, out, "%v", args)
		assert.Contains(t, errOut, tc.want, "%v", args)
		assert.Contains(t, errOut, "usage: asyncevent event "+tc.args[0]+" [flags] EVENT_ID -actor NAME", "%v", args)
	}
	_, after := eventState(t, f, "sale")
	assert.Equal(t, before, after)
	assert.Zero(t, auditLen(t, f, "sale"))
}

// A pre-queued first-come drop through the CLI: created with -prequeue-opens, its
// clicks wait; draw serves the pre-queue once the start and the settle window have
// passed (too early before, with when to run it), and verify re-checks it.
func TestPrequeueServeAndVerify(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.ok(t, "table", "create")

	// Clicks made an hour ago in a pre-queue that started ten minutes later, so that
	// the CLI, on the real clock, may serve at once.
	c := f.client(t, asyncevent.Options{Clock: pastClock(time.Hour)})
	start := time.Now().Add(-50 * time.Minute)
	f.ok(t, "event", "create", "early", "-capacity", "2", "-prequeue-opens", "+1h", "-starts", "+2h")
	_, errOut, code := f.run(t, "draw", "early")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "too early to serve the pre-queue")
	_, errOut, code = f.run(t, "event", "create", "bad", "-capacity", "2", "-prequeue-opens", "+1h")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "-prequeue-opens")

	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "drop", EventType: asyncevent.FirstCome, CapacityTotal: 2,
		PrequeueOpensAt: asyncevent.MillisOf(time.Now().Add(-2 * time.Hour)), StartsAt: asyncevent.MillisOf(start)})
	require.NoError(t, err)
	_, errOut, code = f.run(t, "verify", "drop")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "not been served yet")
	for i := range 6 {
		_, err := c.Submit(ctx, queue.NewMemory(queue.MemoryOptions{}), "drop", fmt.Sprintf("early-%d", i))
		require.NoError(t, err)
	}

	var served clikit.PrequeueServe
	f.json(t, &served, "draw", "drop")
	assert.Len(t, served.Order, 6)
	assert.Equal(t, served.Order[:2], served.Winners)
	assert.Equal(t, "ANNOUNCED", served.Item["phase"])
	assert.Contains(t, f.ok(t, "draw", "drop"), "the order served")

	var v httpapi.VerificationView
	f.json(t, &v, "verify", "drop")
	assert.True(t, v.OK, v.Problems)
	assert.Equal(t, 6, v.EntryCount)
	assert.Equal(t, served.Winners, v.Winners)
	assert.Contains(t, f.ok(t, "verify", "drop"), "pre-queue of drop verified")
}
