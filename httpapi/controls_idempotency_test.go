package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

// doKeyed is e.do with an Idempotency-Key header (none when key is "").
func (e *env) doKeyed(method, path, tok, key string, body any) response {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		buf, err := json.Marshal(body)
		require.NoError(e.t, err)
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, e.ts.URL+path, rd)
	require.NoError(e.t, err)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	if key != "" {
		req.Header.Set(idempotencyHeader, key)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// TestSeatControlsUnderAnIdempotencyKey: an add or a cancel sent again under its
// Idempotency-Key (header, quoted header, or the add's body field) answers 200
// replayed and writes nothing again; a key given to another add or cancel, or two
// keys that differ, are 400; without a key a second cancel is refused.
func TestSeatControlsUnderAnIdempotencyKey(t *testing.T) {
	t.Parallel()
	clock := asynceventtest.NewClock(time.Now().Truncate(time.Second))
	e := newEnv(t, withClock(clock))
	admin := e.admin()
	e.createFirstCome("keyed", 1)
	winner := e.served(clock, "keyed", "u0")[0]
	require.Equal(t, asyncevent.StatusSucceeded, e.adminRequest(winner).Status)

	const key = "3b1f0c9e-5d7a-4e21-8f60-2a9c4d7e1b05"
	added := func(r response, replayed bool) {
		t.Helper()
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		v := decode[CapacityAddedView](t, r)
		assert.EqualValues(t, 3, v.CapacityTotal)
		assert.Equal(t, replayed, v.Replayed)
	}
	added(e.doKeyed("POST", "/admin/events/keyed/capacity", admin, key, map[string]any{"seats": 2}), false)
	added(e.doKeyed("POST", "/admin/events/keyed/capacity", admin, key, map[string]any{"seats": 2}), true)
	added(e.doKeyed("POST", "/admin/events/keyed/capacity", admin, `"`+key+`"`, map[string]any{"seats": 2}), true)
	added(e.doKeyed("POST", "/admin/events/keyed/capacity", admin, "", map[string]any{"seats": 2, "idempotencyKey": key}), true)
	assert.Equal(t, [3]int64{3, 0, 2}, e.seats("keyed"), "two seats, once, onto the pool of the sold-out event")

	before := e.tableState()
	for name, c := range map[string]struct {
		key  string
		body map[string]any
		code string
	}{
		"other seats":    {key, map[string]any{"seats": 3}, CodeInvalidBody},
		"keys differ":    {key, map[string]any{"seats": 2, "idempotencyKey": "another"}, CodeInvalidBody},
		"not a key":      {"a key", map[string]any{"seats": 2}, CodeInvalidID},
		"other shard":    {key, map[string]any{"seats": 2, "shard": 0}, CodeInvalidBody},
		"body not a key": {"", map[string]any{"seats": 2, "idempotencyKey": "a#b"}, CodeInvalidID},
	} {
		r := e.doKeyed("POST", "/admin/events/keyed/capacity", admin, c.key, c.body)
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", name, r.body)
		assert.Equal(t, c.code, r.problem(t).Code, name)
	}
	assert.Equal(t, before, e.tableState(), "refused keys write nothing")

	clock.Advance(time.Millisecond) // the audit trail in order
	cancelKey := "cancel-" + winner
	r := e.doKeyed("POST", "/admin/requests/"+winner+"/cancel", admin, cancelKey, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	assert.False(t, decode[CancellationView](t, r).Replayed)
	r = e.doKeyed("POST", "/admin/requests/"+winner+"/cancel", admin, cancelKey, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	v := decode[CancellationView](t, r)
	assert.True(t, v.Replayed, "the cancel under this key applied before")
	assert.Equal(t, asyncevent.ResultCancelled, v.Request.ResultCode)
	p := e.refusedControl("/admin/requests/"+winner+"/cancel", admin, nil, asyncevent.StateOpen, "cancelled already")
	assert.Equal(t, asyncevent.ResultCancelled, p.Request.ResultCode)
	r = e.doKeyed("POST", "/admin/requests/"+winner+"/cancel", token(t, "ops-bob", RoleAdmin), cancelKey, nil)
	require.Equal(t, http.StatusBadRequest, r.status, "another admin's key: %s", r.body)
	assert.Equal(t, CodeInvalidParameter, r.problem(t).Code)
	assert.Equal(t, [3]int64{3, 0, 3}, e.seats("keyed"), "one seat back, once")

	trail := e.auditOf("keyed")
	require.Len(t, trail, 2, "one add, one cancel")
	assert.Equal(t, asyncevent.ActionAddCapacity, trail[0].Action)
	assert.Equal(t, asyncevent.ActionCancel, trail[1].Action)
}
