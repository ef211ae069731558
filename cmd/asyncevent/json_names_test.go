package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// The field names of the CLI's -json output are a promise (CHANGELOG: they only
// grow). testdata/json_names.golden holds, for each -json command of the scenario
// below, every path its output printed (".queue.asOf", "[].toStatus") with the JSON
// kind of its value; TestJSONNames fails when a command no longer prints one of them
// as that kind: a field renamed, removed or printed in another form. New fields are
// free. -update-json-names adds the paths printed now to the file; it never removes
// one.

var updateJSONNames = flag.Bool("update-json-names", false, "add the -json paths printed now to testdata/json_names.golden")

const jsonNamesGolden = "testdata/json_names.golden"

// dataKeys are the objects whose keys are data (statuses, result codes, request IDs,
// DynamoDB operations, item types), not field names: the object is pinned, not what
// it holds.
var dataKeys = map[string]bool{
	"byStatus": true, "byResultCode": true, "outcomes": true, "resent": true, "failed": true,
	"byCall": true, "calls": true, "readsPerOp": true, "writesPerOp": true,
}

// byTiming are the paths of a command that a run may leave out, by its timing, not by
// a change of the output: in the demo's small spikes, a line's drain time (absent while
// no rate is measured) and its seconds (none until the nodes' counts have landed). The
// CLI's own line, in stats and request get, is pinned whole.
var byTiming = map[string][]string{
	"demo": {".firstCome.stats.queue.drainTimeMs", ".holds.stats.queue.drainTimeMs", ".prequeue.stats.queue.drainTimeMs",
		".firstCome.stats.queue.series[]", ".holds.stats.queue.series[]", ".prequeue.stats.queue.series[]"},
}

// byTimingOf reports whether path, of cmd, may be left out by a run's timing.
func byTimingOf(cmd, path string) bool {
	for _, prefix := range byTiming[cmd] {
		if strings.HasPrefix(path, prefix) {
			return true
		}
	}
	return false
}

// jsonPaths adds to paths each path of v under at ("" for the document, which is
// written "."), with the JSON kind of its value.
func jsonPaths(paths map[string]bool, at string, v any) {
	path := at
	if path == "" {
		path = "."
	}
	switch x := v.(type) {
	case map[string]any:
		paths[path+" object"] = true
		if dataKeys[at[strings.LastIndex(at, ".")+1:]] {
			return
		}
		for k, child := range x {
			jsonPaths(paths, at+"."+k, child)
		}
	case []any:
		paths[path+" array"] = true
		for _, child := range x {
			jsonPaths(paths, at+"[]", child)
		}
	case string:
		paths[path+" string"] = true
	case float64:
		paths[path+" number"] = true
	case bool:
		paths[path+" bool"] = true
	case nil:
		paths[path+" null"] = true
	}
}

// jsonNames gathers the paths each command printed, from parallel subtests.
type jsonNames struct {
	mu    sync.Mutex
	names map[string]map[string]bool // command → paths
}

// run runs a -json command on f, requires its exit code and records its paths
// under name.
func (n *jsonNames) run(t *testing.T, f *fixture, name string, exit int, args ...string) map[string]any {
	t.Helper()
	out, errOut, code := f.run(t, append([]string{"-json"}, args...)...)
	require.Equal(t, exit, code, "%s: asyncevent %s\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), out, errOut)
	var v any
	require.NoError(t, json.Unmarshal([]byte(out), &v), "%s: %s", name, out)
	paths := map[string]bool{}
	jsonPaths(paths, "", v)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.names[name] == nil {
		n.names[name] = map[string]bool{}
	}
	maps.Copy(n.names[name], paths)
	m, _ := v.(map[string]any)
	return m
}

// readJSONNames reads the golden file: "# command" lines, each followed by its paths.
func readJSONNames(t *testing.T) map[string]map[string]bool {
	t.Helper()
	b, err := os.ReadFile(jsonNamesGolden)
	if os.IsNotExist(err) && *updateJSONNames {
		return map[string]map[string]bool{}
	}
	require.NoError(t, err)
	names := map[string]map[string]bool{}
	var cur string
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "# "):
			cur = strings.TrimPrefix(line, "# ")
			names[cur] = map[string]bool{}
		case line != "" && cur != "":
			names[cur][line] = true
		}
	}
	return names
}

func writeJSONNames(t *testing.T, names map[string]map[string]bool) {
	t.Helper()
	var b strings.Builder
	b.WriteString("Each -json command of TestJSONNames, then each path it printed and the JSON kind of\n" +
		"its value. A path may only be added (go test -run TestJSONNames -update-json-names).\n")
	for _, cmd := range slices.Sorted(maps.Keys(names)) {
		fmt.Fprintf(&b, "\n# %s\n", cmd)
		for _, p := range slices.Sorted(maps.Keys(names[cmd])) {
			fmt.Fprintln(&b, p)
		}
	}
	require.NoError(t, os.MkdirAll("testdata", 0o755))
	require.NoError(t, os.WriteFile(jsonNamesGolden, []byte(b.String()), 0o644))
}

func TestJSONNames(t *testing.T) {
	t.Parallel()
	got := &jsonNames{names: map[string]map[string]bool{}}
	t.Run("commands", func(t *testing.T) {
		t.Run("table and tools", func(t *testing.T) { t.Parallel(); jsonNamesOfTools(t, got) })
		t.Run("events and controls", func(t *testing.T) { t.Parallel(); jsonNamesOfEvents(t, got) })
		t.Run("holds", func(t *testing.T) { t.Parallel(); jsonNamesOfHolds(t, got) })
		t.Run("line", func(t *testing.T) { t.Parallel(); jsonNamesOfLine(t, got) })
		t.Run("draws", func(t *testing.T) { t.Parallel(); jsonNamesOfDraws(t, got) })
		t.Run("sweep", func(t *testing.T) { t.Parallel(); jsonNamesOfSweep(t, got) })
		t.Run("demo", func(t *testing.T) { t.Parallel(); jsonNamesOfDemo(t, got) })
		t.Run("bench", func(t *testing.T) { t.Parallel(); jsonNamesOfBench(t, got) })
	})
	if t.Failed() {
		return
	}
	want := readJSONNames(t)
	if *updateJSONNames {
		for cmd, paths := range got.names {
			if want[cmd] == nil {
				want[cmd] = map[string]bool{}
			}
			maps.Copy(want[cmd], paths)
		}
		writeJSONNames(t, want)
		return
	}
	for _, cmd := range slices.Sorted(maps.Keys(want)) {
		if !assert.Contains(t, got.names, cmd, "a command of the golden file did not run") {
			continue
		}
		var missing []string
		for _, p := range slices.Sorted(maps.Keys(want[cmd])) {
			if !got.names[cmd][p] && !byTimingOf(cmd, p) {
				missing = append(missing, p)
			}
		}
		assert.Empty(t, missing, "%s: -json no longer prints these paths (renamed, removed, or of another kind)", cmd)
	}
	for cmd := range got.names {
		assert.Contains(t, want, cmd, "a command missing from %s: run with -update-json-names", jsonNamesGolden)
	}
}

func jsonNamesOfTools(t *testing.T, got *jsonNames) {
	f := newFixture(t)
	got.run(t, f, "table create", exitOK, "table", "create")
	got.run(t, f, "table check", exitOK, "table", "check")
	missing := &fixture{table: f.table + "-missing", global: []string{"-endpoint", asynceventtest.Endpoint(t), "-table", f.table + "-missing"}}
	got.run(t, missing, "table check (not found)", exitFailure, "table", "check")
	got.run(t, f, "local", exitOK, "local")
	got.run(t, f, "plan", exitOK, "plan", "-peak", "20000")
	got.run(t, f, "plan -ranked", exitOK, "plan", "-peak", "20000", "-ranked")
}

func jsonNamesOfEvents(t *testing.T, got *jsonNames) {
	f := newFixture(t)
	f.ok(t, "table", "create")
	got.run(t, f, "event create FIRST_COME", exitOK, "event", "create", "sale", "-capacity", "3", "-name", "Spring sale", "-ends", "+2h")
	got.run(t, f, "event create FIRST_COME ranked", exitOK, "event", "create", "ranked", "-capacity", "3", "-ranked", "-rank-settle", "200ms")
	got.run(t, f, "event create FIRST_COME sharded", exitOK, "event", "create", "drop", "-capacity", "300", "-peak", "20000")
	got.run(t, f, "event create FIRST_COME pre-queued", exitOK, "event", "create", "early", "-capacity", "2", "-prequeue-opens", "+1h", "-starts", "+2h", "-ends", "+3h")
	got.run(t, f, "event create LOTTERY", exitOK, "event", "create", "lot", "-type", "lottery", "-winners", "2", "-cutoff", "+1h", "-ends", "+2h", "-announce", "+90m")

	sub := got.run(t, f, "submit", exitOK, "submit", "sale", "-user", "ann,bob,cid,ann,dan")
	clicks := sub["clicks"].([]any)
	winner := clicks[0].(map[string]any)["requestId"].(string)
	got.run(t, f, "event get FIRST_COME", exitOK, "event", "get", "sale")
	got.run(t, f, "event get FIRST_COME sharded", exitOK, "event", "get", "drop")
	got.run(t, f, "event get LOTTERY", exitOK, "event", "get", "lot")
	got.run(t, f, "event list", exitOK, "event", "list", "-limit", "2")
	got.run(t, f, "request get", exitOK, "request", "get", winner)
	got.run(t, f, "requests list", exitOK, "requests", "list", "sale", "-limit", "2")
	got.run(t, f, "requests list -user", exitOK, "requests", "list", "-user", "ann")
	got.run(t, f, "stats FIRST_COME", exitOK, "stats", "sale")
	logged := participate(t, f, "sale", "eve")
	got.run(t, f, "logs", exitOK, "logs", logged[0])

	got.run(t, f, "event pause", exitOK, "event", "pause", "sale", "-actor", "alice")
	got.run(t, f, "event pause (refused)", exitFailure, "event", "pause", "sale", "-actor", "alice")
	got.run(t, f, "event resume", exitOK, "event", "resume", "sale", "-actor", "bob")
	got.run(t, f, "event extend -ends", exitOK, "event", "extend", "sale", "-actor", "alice", "-ends", "+3h")
	got.run(t, f, "event extend -cutoff", exitOK, "event", "extend", "lot", "-actor", "alice", "-cutoff", "+80m")
	got.run(t, f, "event extend -starts", exitOK, "event", "extend", "early", "-actor", "alice", "-starts", "+150m")
	got.run(t, f, "event add-capacity", exitOK, "event", "add-capacity", "sale", "-seats", "2", "-actor", "alice", "-idempotency-key", "add-1")
	got.run(t, f, "event add-capacity (refused)", exitFailure, "event", "add-capacity", "lot", "-seats", "2", "-actor", "alice")
	got.run(t, f, "request cancel", exitOK, "request", "cancel", winner, "-actor", "carol", "-idempotency-key", "cancel-1")
	got.run(t, f, "request cancel (refused)", exitFailure, "request", "cancel", winner, "-actor", "carol")
	got.run(t, f, "event close", exitOK, "event", "close", "sale", "-actor", "carol")
	got.run(t, f, "event close (refused)", exitFailure, "event", "close", "sale", "-actor", "carol")
	got.run(t, f, "event audit", exitOK, "event", "audit", "sale")
}

func jsonNamesOfHolds(t *testing.T, got *jsonNames) {
	f := newFixture(t)
	f.ok(t, "table", "create")
	got.run(t, f, "event create FIRST_COME with holds", exitOK, "event", "create", "held", "-capacity", "2", "-hold-for", "10m", "-ends", "+2h")
	sub := got.run(t, f, "submit (holds)", exitOK, "submit", "held", "-user", "ann,bob,cid,dan")
	var ids []string
	for _, k := range sub["clicks"].([]any) {
		ids = append(ids, k.(map[string]any)["requestId"].(string))
	}
	got.run(t, f, "request get HELD", exitOK, "request", "get", ids[0])
	got.run(t, f, "event get FIRST_COME with holds", exitOK, "event", "get", "held")
	got.run(t, f, "request confirm", exitOK, "request", "confirm", ids[0])
	got.run(t, f, "request confirm (refused)", exitFailure, "request", "confirm", ids[0])
	got.run(t, f, "request release", exitOK, "request", "release", ids[1])
	got.run(t, f, "request release (refused)", exitFailure, "request", "release", ids[1])
	got.run(t, f, "holds sweep", exitOK, "holds", "sweep", "held")
	got.run(t, f, "stats FIRST_COME with holds", exitOK, "stats", "held")
}

func jsonNamesOfLine(t *testing.T, got *jsonNames) {
	f := newFixture(t)
	f.ok(t, "table", "create")
	// As TestPlaceInLineAndQueueStats: the clicks and the worker's results 1.5s in
	// the past, so that the line has a rate.
	ids := queueUp(t, f.client(t, asyncevent.Options{Clock: pastClock(1500 * time.Millisecond)}), "line", 30, 10, func() { time.Sleep(2 * time.Millisecond) })
	got.run(t, f, "request get (waiting in line)", exitOK, "request", "get", ids[29])
	got.run(t, f, "stats FIRST_COME with a line", exitOK, "stats", "line")

	// A click in an open pre-queue: its place waits for the draw.
	ctx := context.Background()
	c := f.client(t, asyncevent.Options{})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "pq", EventType: asyncevent.FirstCome, CapacityTotal: 2,
		PrequeueOpensAt: asyncevent.MillisOf(time.Now().Add(-time.Minute)), StartsAt: asyncevent.MillisOf(time.Now().Add(time.Hour))})
	require.NoError(t, err)
	p, err := c.Submit(ctx, queue.NewMemory(queue.MemoryOptions{}), "pq", "early-bird")
	require.NoError(t, err)
	got.run(t, f, "request get (pre-queue entry)", exitOK, "request", "get", p.RequestID)
}

func jsonNamesOfDraws(t *testing.T, got *jsonNames) {
	ctx := context.Background()
	f := newFixture(t)
	f.ok(t, "table", "create")
	// As TestDrawAndVerify and TestPrequeueServeAndVerify: entries made in the past,
	// so that the CLI, on the real clock, may draw and serve at once.
	c := f.client(t, asyncevent.Options{Clock: pastClock(2 * time.Hour)})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "lot", EventType: asyncevent.Lottery,
		WinnerCount: 2, LotteryCutoffAt: asyncevent.MillisOf(time.Now().Add(-time.Hour))})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	for i := range 4 {
		_, err := c.Submit(ctx, q, "lot", fmt.Sprintf("entrant-%d", i))
		require.NoError(t, err)
	}
	ds, err := q.Receive(ctx, 10, 0, time.Minute)
	require.NoError(t, err)
	require.Empty(t, asynceventtest.Process(ctx, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), ds))
	got.run(t, f, "draw LOTTERY", exitOK, "draw", "lot")
	got.run(t, f, "verify LOTTERY", exitOK, "verify", "lot")
	got.run(t, f, "event get LOTTERY drawn", exitOK, "event", "get", "lot")
	got.run(t, f, "stats LOTTERY", exitOK, "stats", "lot")

	early := f.client(t, asyncevent.Options{Clock: pastClock(time.Hour)})
	_, err = early.CreateEvent(ctx, asyncevent.EventSettings{EventID: "drop", EventType: asyncevent.FirstCome, CapacityTotal: 2,
		PrequeueOpensAt: asyncevent.MillisOf(time.Now().Add(-2 * time.Hour)), StartsAt: asyncevent.MillisOf(time.Now().Add(-50 * time.Minute))})
	require.NoError(t, err)
	for i := range 3 {
		_, err := early.Submit(ctx, queue.NewMemory(queue.MemoryOptions{}), "drop", fmt.Sprintf("early-%d", i))
		require.NoError(t, err)
	}
	got.run(t, f, "draw (pre-queue)", exitOK, "draw", "drop")
	got.run(t, f, "verify (pre-queue)", exitOK, "verify", "drop")
	got.run(t, f, "event get FIRST_COME pre-queue served", exitOK, "event", "get", "drop")
}

func jsonNamesOfSweep(t *testing.T, got *jsonNames) {
	ctx := context.Background()
	f := newFixture(t)
	f.ok(t, "table", "create")
	// As TestSweep: a request queued an hour ago whose message was lost.
	old := f.client(t, asyncevent.Options{Clock: pastClock(time.Hour)})
	_, err := old.CreateEvent(ctx, asyncevent.EventSettings{EventID: "ev", EventType: asyncevent.FirstCome, CapacityTotal: 5})
	require.NoError(t, err)
	_, err = old.Submit(ctx, queue.NewMemory(queue.MemoryOptions{}), "ev", "user-lost")
	require.NoError(t, err)
	q := asynceventtest.NewSQSQueue(t, asynceventtest.SQSQueueOptions{})
	got.run(t, f, "sweep", exitOK, "sweep", "ev", "-stuck-after", "10m", "-rate", "1000", "-queue-url", q.URL(), "-sqs-endpoint", asynceventtest.SQSEndpoint(t))
}

func jsonNamesOfDemo(t *testing.T, got *jsonNames) {
	f := newFixture(t)
	f.ok(t, "table", "create")
	got.run(t, f, "demo", exitOK, "demo", "-capacity", "3", "-submits", "20", "-clients", "2", "-workers", "1",
		"-holds-capacity", "2", "-holds-submits", "8", "-prequeue-seats", "2", "-prequeue-entries", "3", "-prequeue-sale", "2",
		"-lottery-entries", "5", "-lottery-winners", "2", "-seed", "1")
}

func jsonNamesOfBench(t *testing.T, got *jsonNames) {
	f := newFixture(t)
	f.ok(t, "table", "create")
	got.run(t, f, "bench", exitOK, "bench", "-rounds", "1", "-n", "4", "-clients", "2", "-workers", "1", "-warmup", "-1",
		"-heat-participations", "20", "-latency-clicks", "4", "-latency-rate", "50", "-polls", "10", "-poll-clients", "2",
		"-poll-backlog", "10", "-cpu-ops", "5")
}
