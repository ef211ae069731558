package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
	"github.com/asyncevent/asyncevent/queue"
)

// requestStatus runs request get and returns the request's status and result code.
func requestStatus(t *testing.T, f *fixture, requestID string) (string, string) {
	t.Helper()
	var r map[string]any
	f.json(t, &r, "request", "get", requestID)
	code, _ := r["resultCode"].(string)
	return r["status"].(string), code
}

// Seats added after a sell-out go to the event's pool, and the next requests win
// them; seats added before it go onto the shards, or onto the one asked for.
func TestEventAddCapacity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.ok(t, "table", "create")
	playFirstCome(t, f, "sold", 2, 3)

	out := f.ok(t, "event", "add-capacity", "sold", "-seats", "2", "-actor", "alice")
	assert.Equal(t, "added: 2 seats to sold, whose capacity is 4: 0 seats left on its capacity shards; "+
		"2 seats added to its pool so far, for the next requests that find every capacity shard empty\n", out)
	_, cfg := eventState(t, f, "sold")
	assert.EqualValues(t, 4, cfg["capacityTotal"])
	later := participate(t, f, "sold", "late-0", "late-1", "late-2")
	for i, want := range []string{"SUCCEEDED", "SUCCEEDED", "REJECTED"} {
		status, _ := requestStatus(t, f, later[i])
		assert.Equal(t, want, status, "late-%d: the next two in queue order win the seats added", i)
	}

	// Before a sell-out, onto one shard: the JSON has the event and its capacity.
	f.ok(t, "event", "create", "open", "-capacity", "4", "-capacity-shards", "2")
	var res clikit.Control
	f.json(t, &res, "event", "add-capacity", "open", "-seats", "3", "-shard", "1", "-actor", "bob")
	assert.True(t, res.Applied)
	assert.Equal(t, "open", res.EventID)
	assert.Equal(t, asyncevent.ActionAddCapacity, res.Action)
	assert.Equal(t, asyncevent.StateOpen, res.State)
	assert.Empty(t, res.Reason)
	assert.EqualValues(t, 7, res.Config["capacityTotal"])
	assert.EqualValues(t, 7, res.Capacity["capacityTotal"])
	assert.EqualValues(t, 7, res.Capacity["capacityRemaining"])
	capacity, err := f.client(t, asyncevent.Options{}).GetCapacity(ctx, "open")
	require.NoError(t, err)
	require.Len(t, capacity.Shards, 2)
	assert.EqualValues(t, 2, capacity.Shards[0].CapacityTotal)
	assert.EqualValues(t, 5, capacity.Shards[1].CapacityTotal, "the seats went to -shard 1")
	assert.Equal(t, "added: 10 seats to open, whose capacity is 17: 17 seats left on its capacity shards\n",
		f.ok(t, "event", "add-capacity", "open", "-seats", "10", "-actor", "bob"))

	var trail []map[string]any
	f.json(t, &trail, "event", "audit", "sold")
	require.Len(t, trail, 1)
	assert.Equal(t, "alice", trail[0]["actor"])
	assert.Equal(t, "ADD_CAPACITY", trail[0]["action"])
	assert.Equal(t, "2 seats: 0 on shards, 2 on the pool", trail[0]["detail"])
}

// An event in no state to take seats: exit 1, the reason, nothing written.
func TestEventAddCapacityRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.ok(t, "table", "create")
	f.ok(t, "event", "create", "gone", "-capacity", "2")
	f.ok(t, "event", "close", "gone", "-actor", "carol")
	f.ok(t, "event", "create", "lot", "-type", "lottery", "-winners", "1", "-cutoff", "+1h")

	refused(t, f, "gone", "the event is closed", "gone was not given seats: it is CLOSED",
		"event", "add-capacity", "gone", "-seats", "2", "-actor", "alice")
	refused(t, f, "lot", "only a FIRST_COME event has seats", "lot was not given seats: it is OPEN",
		"event", "add-capacity", "lot", "-seats", "2", "-actor", "alice")
	refused(t, f, "lot", "only a FIRST_COME event has seats", "lot was not given seats",
		"event", "add-capacity", "lot", "-seats", "2", "-shard", "3", "-actor", "alice")

	out, _, code := f.run(t, "-json", "event", "add-capacity", "gone", "-seats", "2", "-actor", "alice")
	assert.Equal(t, exitFailure, code)
	var no clikit.Control
	require.NoError(t, json.Unmarshal([]byte(out), &no), out)
	_, cfg := eventState(t, f, "gone")
	assert.Equal(t, clikit.Control{EventView: no.EventView, Action: "ADD_CAPACITY", Reason: "the event is closed", Config: cfg}, no)
	assert.Equal(t, "gone", no.EventID)
	assert.Equal(t, asyncevent.StateClosed, no.State, "the event as the refusal found it")

	for _, args := range [][]string{{"nope"}, {"nope", "-shard", "0"}} {
		_, errOut, code := f.run(t, append([]string{"event", "add-capacity", "-seats", "2", "-actor", "alice"}, args...)...)
		assert.Equal(t, exitFailure, code, "%v", args)
		assert.Contains(t, errOut, "event not found", "%v", args)
	}
}

// Mistakes in add-capacity's command line: usage errors that name the flag, and
// nothing written.
func TestEventAddCapacityUsage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.ok(t, "table", "create")
	f.ok(t, "event", "create", "sale", "-capacity", "4", "-capacity-shards", "2")
	_, before := eventState(t, f, "sale")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sale", "-actor", "alice", "-seats", "0"}, "-seats 0: want 1 to 1,000,000"},
		{[]string{"sale", "-actor", "alice", "-seats", "-3"}, "-seats -3: want 1 to 1,000,000"},
		{[]string{"sale", "-actor", "alice", "-seats", "1000001"}, "-seats 1000001: want 1 to 1,000,000"},
		{[]string{"sale", "-actor", "alice"}, "missing -seats N"},
		{[]string{"sale", "-actor", "alice", "-seats", "many"}, `invalid value "many" for flag -seats`},
		{[]string{"-actor", "alice", "-seats", "2"}, "missing EVENT_ID"},
		{[]string{"sale", "-seats", "2"}, "-actor is required"},
		{[]string{"sale", "-actor", "alice", "-seats", "2", "-shard", "2"}, "-shard 2: sale has 2 capacity shards: want 0 to 1"},
		{[]string{"sale", "-actor", "alice", "-seats", "2", "-shard", "-1"}, "-shard -1: want a capacity shard"},
		{[]string{"bad id", "-actor", "alice", "-seats", "2"}, `invalid EVENT_ID "bad id"`},
		{[]string{"bad id", "-actor", "alice", "-seats", "2", "-shard", "0"}, `invalid EVENT_ID "bad id"`},
	} {
		args := append([]string{"event", "add-capacity"}, tc.args...)
		out, errOut, code := f.run(t, args...)
		assert.Equal(t, exitUsage, code, "%v: %s", args, errOut)
		assert.Empty(t, out, "%v", args)
		assert.Contains(t, errOut, tc.want, "%v", args)
		assert.Contains(t, errOut, "usage: asyncevent event add-capacity [flags] EVENT_ID -actor NAME -seats N", "%v", args)
	}
	_, after := eventState(t, f, "sale")
	assert.Equal(t, before, after)
	assert.Zero(t, auditLen(t, f, "sale"))
}

// A seat won, cancelled: REJECTED_CANCELLED, and the next request wins it. A request
// that holds no seat is refused, and nothing is written. The audit trail names who
// cancelled and who added seats.
func TestRequestCancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.ok(t, "table", "create")
	ids := playFirstCome(t, f, "ev", 2, 3) // SUCCEEDED, SUCCEEDED, REJECTED
	queued, err := f.client(t, asyncevent.Options{}).Submit(ctx, queue.NewMemory(queue.MemoryOptions{}), "ev", "user-queued")
	require.NoError(t, err)

	out := f.ok(t, "request", "cancel", ids[0], "-actor", "bob")
	assert.Equal(t, "cancelled: "+ids[0]+" is REJECTED (REJECTED_CANCELLED): its seat went back to ev's pool, "+
		"for the next requests that find every capacity shard empty\n", out)
	status, result := requestStatus(t, f, ids[0])
	assert.Equal(t, []string{"REJECTED", "REJECTED_CANCELLED"}, []string{status, result})
	late := participate(t, f, "ev", "late-0", "late-1")
	status, _ = requestStatus(t, f, late[0])
	assert.Equal(t, "SUCCEEDED", status, "the seat cancelled goes to the next request")
	status, _ = requestStatus(t, f, late[1])
	assert.Equal(t, "REJECTED", status)

	var res clikit.Control
	f.json(t, &res, "request", "cancel", ids[1], "-actor", "bob")
	assert.True(t, res.Applied)
	assert.Equal(t, "ev", res.EventID)
	assert.Equal(t, asyncevent.ActionCancel, res.Action)
	assert.Equal(t, asyncevent.StateOpen, res.State)
	assert.Equal(t, ids[1], res.RequestID)
	assert.Equal(t, "REJECTED", res.Request["status"])
	assert.Equal(t, "REJECTED_CANCELLED", res.Request["resultCode"])

	// The reason is the library's (asyncevent.Client.CancelRequest): the CLI relays it.
	for _, tc := range []struct{ requestID, is string }{
		{ids[0], "REJECTED (REJECTED_CANCELLED)"},
		{ids[2], "REJECTED (REJECTED_CAPACITY)"},
		{queued.RequestID, "QUEUED"},
	} {
		entries := auditLen(t, f, "ev")
		out, errOut, code := f.run(t, "request", "cancel", tc.requestID, "-actor", "bob")
		assert.Equal(t, exitFailure, code, "%s: %s", tc.is, errOut)
		assert.Regexp(t, `^not applied: the request is `+strings.Fields(tc.is)[0]+`\b.*: it holds no seat\n$`, out)
		assert.Contains(t, errOut, tc.requestID+" was not cancelled: it is "+tc.is)
		assert.Equal(t, entries, auditLen(t, f, "ev"), "%s: no audit entry", tc.is)
	}
	status, _ = requestStatus(t, f, queued.RequestID)
	assert.Equal(t, "QUEUED", status, "unchanged")
	out, _, code := f.run(t, "-json", "request", "cancel", queued.RequestID, "-actor", "bob")
	assert.Equal(t, exitFailure, code)
	var no clikit.Control
	require.NoError(t, json.Unmarshal([]byte(out), &no), out)
	assert.False(t, no.Applied)
	assert.Equal(t, asyncevent.ActionCancel, no.Action)
	assert.Equal(t, "ev", no.EventID)
	assert.Regexp(t, `^the request is QUEUED\b.*: it holds no seat$`, no.Reason)
	assert.Equal(t, "QUEUED", no.Request["status"], "the request as found")

	f.ok(t, "event", "add-capacity", "ev", "-seats", "2", "-actor", "alice")
	lines := strings.Split(strings.TrimSuffix(f.ok(t, "event", "audit", "ev"), "\n"), "\n")
	require.Len(t, lines, 4, lines)
	assert.Regexp(t, `^\S+Z +bob +CANCEL +request `+ids[0]+`$`, lines[1])
	assert.Regexp(t, `^\S+Z +bob +CANCEL +request `+ids[1]+`$`, lines[2])
	assert.Regexp(t, `^\S+Z +alice +ADD_CAPACITY +2 seats: 0 on shards, 2 on the pool$`, lines[3])
}

// With holds, a confirmed seat cancelled goes to the waitlist at the next hold sweep;
// a HELD request is Release's.
func TestRequestCancelWithHolds(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.ok(t, "table", "create")
	ids := playHolds(t, f, nil, asyncevent.EventSettings{EventID: "sale", CapacityTotal: 1, HoldFor: 10 * time.Minute}, 2) // HELD, WAITLISTED

	refusedCancel := func(requestID, reason string) {
		t.Helper()
		out, _, code := f.run(t, "request", "cancel", requestID, "-actor", "bob")
		assert.Equal(t, exitFailure, code)
		assert.Equal(t, "not applied: "+reason+"\n", out)
	}
	refusedCancel(ids[0], "the request is HELD: Release ends it")
	refusedCancel(ids[1], "the request is WAITLISTED: Release ends it")
	f.ok(t, "request", "confirm", ids[0])
	assert.Equal(t, "cancelled: "+ids[0]+" is REJECTED (REJECTED_CANCELLED): its seat went back to sale's pool, "+
		"for the earliest WAITLISTED requests, at the next hold sweep\n", f.ok(t, "request", "cancel", ids[0], "-actor", "bob"))
	f.ok(t, "holds", "sweep", "sale")
	status, _ := requestStatus(t, f, ids[1])
	assert.Equal(t, "HELD", status, "the waitlisted request holds the seat cancelled")
}

// Mistakes in cancel's command line: usage errors, and nothing written.
func TestRequestCancelUsage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.ok(t, "table", "create")
	ids := playFirstCome(t, f, "ev", 1, 1)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{ids[0]}, "-actor is required"},
		{[]string{"-actor", "bob"}, "missing REQUEST_ID"},
		{[]string{ids[0], "other", "-actor", "bob"}, `unexpected argument "other"`},
		{[]string{"bad id", "-actor", "bob"}, `invalid REQUEST_ID "bad id"`},
		{[]string{ids[0], "-actor", strings.Repeat("a", asyncevent.MaxIDLength+1)}, "actor"},
	} {
		args := append([]string{"request", "cancel"}, tc.args...)
		out, errOut, code := f.run(t, args...)
		assert.Equal(t, exitUsage, code, "%v: %s", args, errOut)
		assert.Empty(t, out, "%v", args)
		assert.Contains(t, errOut, tc.want, "%v", args)
		assert.Contains(t, errOut, "usage: asyncevent request cancel [flags] REQUEST_ID -actor NAME", "%v", args)
	}
	status, _ := requestStatus(t, f, ids[0])
	assert.Equal(t, "SUCCEEDED", status)
	assert.Zero(t, auditLen(t, f, "ev"))

	_, errOut, code := f.run(t, "request", "cancel", "no-such-request", "-actor", "bob")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "not found")
}
