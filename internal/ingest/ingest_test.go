package ingest

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"testing"
	"time"

	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An ingest's writes get at least the least time, the caller's own deadline when it
// allows more, and never past the fence when there is one.
func TestDeadline(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	least := 10 * time.Second
	for _, tc := range []struct {
		name          string
		caller, fence time.Time
		fenced        bool
		want          time.Time
	}{
		{"no caller deadline", time.Time{}, time.Time{}, false, now.Add(least)},
		{"a shorter caller deadline does not cut the writes", now.Add(time.Second), time.Time{}, false, now.Add(least)},
		{"a longer caller deadline is kept", now.Add(time.Minute), time.Time{}, false, now.Add(time.Minute)},
		{"a far fence changes nothing", now.Add(time.Minute), now.Add(time.Hour), true, now.Add(time.Minute)},
		{"a near fence ends the writes", now.Add(time.Minute), now.Add(3 * time.Second), true, now.Add(3 * time.Second)},
		{"a fence at the zero time is a fence", time.Time{}, time.Time{}, true, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Deadline(now, tc.caller, least, tc.fence, tc.fenced))
		})
	}
}

// The caller's deadline is carried over to the library's clock as the time it leaves,
// and the ingest's context outlives the caller's cancellation.
type ctxKey struct{}

func TestContext(t *testing.T) {
	now := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	assert.True(t, CallerDeadline(context.Background(), now).IsZero())
	caller, cancel := context.WithTimeout(context.WithValue(context.Background(), ctxKey{}, "v"), time.Hour)
	d := CallerDeadline(caller, now)
	assert.WithinDuration(t, now.Add(time.Hour), d, time.Minute)

	ctx, stop := Context(caller, now, now.Add(time.Minute))
	defer stop()
	cancel()
	require.NoError(t, ctx.Err(), "the caller's end does not cancel the writes")
	assert.Equal(t, "v", ctx.Value(ctxKey{}))
	dl, ok := ctx.Deadline()
	require.True(t, ok)
	assert.WithinDuration(t, time.Now().Add(time.Minute), dl, 10*time.Second)
}

func TestErrorJudgements(t *testing.T) {
	api := func(code string) error {
		return fmt.Errorf("op: %w", &smithy.GenericAPIError{Code: code})
	}
	for _, tc := range []struct {
		name              string
		err               error
		rejected, invalid bool
	}{
		{"validation", api("ValidationException"), true, true},
		{"no table", api("ResourceNotFoundException"), true, true},
		{"access denied", api("AccessDeniedException"), true, true},
		{"serialization", api("SerializationException"), true, true},
		{"throttle is no rejection", api("ProvisionedThroughputExceededException"), false, false},
		{"a condition lost is no rejection", api("ConditionalCheckFailedException"), false, false},
		{"cancelled", fmt.Errorf("op: %w", context.Canceled), false, true},
		{"deadline", context.DeadlineExceeded, false, true},
		{"connection reset", errors.New("read tcp: connection reset by peer"), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.rejected, Rejected(tc.err))
			assert.Equal(t, tc.invalid, Invalid(tc.err))
		})
	}
}

func fnvShard(id string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % uint32(n))
}

// A client's request IDs of an event go to its shards in turn, each event from its own
// start; IDs stay unique.
func TestShardTurns(t *testing.T) {
	var turns ShardTurns
	const shards = 5
	seen := map[string]bool{}
	prev := map[string]int{}
	for i := range 50 {
		for _, ev := range []string{"a", "b"} {
			id := turns.NewRequestID(ev, shards, fnvShard)
			require.False(t, seen[id])
			seen[id] = true
			s := fnvShard(id, shards)
			if i > 0 {
				assert.Equal(t, (prev[ev]+1)%shards, s, "event %s, request %d", ev, i)
			}
			prev[ev] = s
		}
	}
	one := turns.NewRequestID("c", 1, func(string, int) int { panic("no shards to turn") })
	assert.Len(t, one, 36)
}

type body struct {
	RequestID string `json:"requestId"`
	N         int    `json:"n"`
}

func TestDecodeBody(t *testing.T) {
	var b body
	require.NoError(t, DecodeBody([]byte(`{"requestId":"r1","n":2}`), &b))
	assert.Equal(t, body{"r1", 2}, b)

	b = body{}
	err := DecodeBody([]byte(`{"requestId":"r1","n":2} {}`), &b)
	assert.ErrorIs(t, err, ErrTrailingData)
	assert.Equal(t, body{"r1", 2}, b, "filled in before the trailing data")

	for _, bad := range []string{`{"requestId":"r1","x":1}`, `{"requestId":"r1"`, `[]`, ``, `{"n":"two"}`} {
		err := DecodeBody([]byte(bad), &body{})
		assert.Error(t, err, bad)
		assert.NotErrorIs(t, err, ErrTrailingData, bad)
	}
}

func TestSalvageField(t *testing.T) {
	valid := func(s string) bool { return s != "" && s != "bad" }
	for body, want := range map[string]string{
		`{"requestId":"r1","n":"two"}`:          "r1",
		`{"n":{"deep":[1,2]},"requestId":"r2",`: "r2",
		`{"requestId":"bad"}`:                   "",
		`{"requestId":7}`:                       "",
		`{"n":1`:                                "",
		`["requestId","r3"]`:                    "",
		`{"other":{"requestId":"r4"}}`:          "",
		`{"n":"cut short`:                       "",
		`{"requestId":"r5","requestId":"r6"}`:   "r5",
	} {
		assert.Equal(t, want, SalvageField([]byte(body), "requestId", valid), body)
	}
}
