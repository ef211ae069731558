package main

import (
	"strings"
	"testing"

	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A run again under the -idempotency-key of one that applied applies nothing twice
// and says so; a key given to another add is a usage error.
func TestSeatControlsUnderAnIdempotencyKey(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.ok(t, "table", "create")
	ids := playFirstCome(t, f, "keyed", 1, 1)

	add := []string{"event", "add-capacity", "keyed", "-seats", "2", "-actor", "alice", "-idempotency-key", "add-1"}
	first := f.ok(t, add...)
	assert.NotContains(t, first, "applied before")
	again := f.ok(t, add...)
	assert.Equal(t, strings.TrimSuffix(first, "\n")+" (applied before under this idempotency key: nothing written again)\n", again)
	var res clikit.Control
	f.json(t, &res, add...)
	assert.True(t, res.Applied)
	assert.True(t, res.Replayed)
	_, cfg := eventState(t, f, "keyed")
	assert.EqualValues(t, 3, cfg["capacityTotal"], "added once")

	_, errOut, code := f.run(t, "event", "add-capacity", "keyed", "-seats", "5", "-actor", "alice", "-idempotency-key", "add-1")
	assert.Equal(t, exitUsage, code, errOut)
	assert.Contains(t, errOut, "idempotency key add-1 was given to another ADD_CAPACITY")
	_, errOut, code = f.run(t, "event", "add-capacity", "keyed", "-seats", "5", "-actor", "alice", "-idempotency-key", "a#b")
	assert.Equal(t, exitUsage, code, errOut)
	assert.Contains(t, errOut, `invalid -idempotency-key "a#b"`, "named as the other ID flags are")

	cancel := []string{"request", "cancel", ids[0], "-actor", "bob", "-idempotency-key", "cancel-1"}
	assert.NotContains(t, f.ok(t, cancel...), "applied before")
	assert.Contains(t, f.ok(t, cancel...), "(applied before under this idempotency key: nothing written again)")
	out, _, code := f.run(t, "request", "cancel", ids[0], "-actor", "bob")
	assert.Equal(t, exitFailure, code, "without the key: another call's cancel")
	assert.Contains(t, out, "cancelled already")
	require.Equal(t, 2, auditLen(t, f, "keyed"), "one add, one cancel")
}
