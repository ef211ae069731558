package asyncevent

import (
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent/entity"
)

func TestValidateID(t *testing.T) {
	tests := []struct {
		name string
		id   string
		ok   bool
	}{
		{"plain", "user-42", true},
		{"uuid", "0193a3c2-7f1e-7cc1-9f5b-2b1d3c4e5f60", true},
		{"unicode", "사용자_1", true},
		{"email", "a.b+c@example.com", true},
		{"max length", strings.Repeat("a", MaxIDLength), true},
		{"empty", "", false},
		{"too long", strings.Repeat("a", MaxIDLength+1), false},
		{"separator", "a#b", false},
		{"only separator", "#", false},
		{"space", "a b", false},
		{"newline", "a\nb", false},
		{"nul", "a\x00b", false},
		{"invalid utf8", "a\xffb", false},
		{"zero width no-break", "a\u200bb", false},
		{"multibyte over limit", strings.Repeat("가", 43), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateID("userId", tt.id)
			if tt.ok {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalidID)
			var idErr *InvalidIDError
			require.ErrorAs(t, err, &idErr)
			assert.Equal(t, "userId", idErr.Field)
			assert.Contains(t, err.Error(), "userId")
		})
	}
}

func TestBuildersNameTheBadField(t *testing.T) {
	_, err := NewLockKey("event-1", "bad#user")
	var idErr *InvalidIDError
	require.ErrorAs(t, err, &idErr)
	assert.Equal(t, "userId", idErr.Field)

	_, err = NewLockKey("", "user")
	require.ErrorAs(t, err, &idErr)
	assert.Equal(t, "eventId", idErr.Field)

	_, err = newIndexKeys("e", "u", "r#1", 1)
	require.ErrorAs(t, err, &idErr)
	assert.Equal(t, "requestId", idErr.Field)

	_, err = NewEventKey("e", EventItem("META"))
	assert.ErrorIs(t, err, ErrInvalidOptions)
}

func TestKeysRoundTrip(t *testing.T) {
	const ev, user, req = "spring-sale", "user-7", "0193a3c2-7f1e-7cc1-9f5b-2b1d3c4e5f60"
	at := EpochMillis(1_732_000_000_123)

	rk, err := NewRequestKey(req)
	require.NoError(t, err)
	assert.Equal(t, Key{PK: "REQ#" + req, SK: "META"}, rk.Key())
	gotR, err := ParseRequestKey(rk.Key())
	require.NoError(t, err)
	assert.Equal(t, rk, gotR)

	lk, err := NewLockKey(ev, user)
	require.NoError(t, err)
	assert.Equal(t, Key{PK: "IDEMP#spring-sale#user-7", SK: "LOCK"}, lk.Key())
	assert.Equal(t, "IDEMP#spring-sale#user-7", lk.IdempotencyKey())
	gotL, err := ParseLockKey(lk.Key())
	require.NoError(t, err)
	assert.Equal(t, lk, gotL)

	for _, item := range []EventItem{EventItemConfig, EventItemCapacity, EventItemDraw} {
		ek, err := NewEventKey(ev, item)
		require.NoError(t, err)
		assert.Equal(t, Key{PK: "EVENT#spring-sale", SK: string(item)}, ek.Key())
		gotE, err := ParseEventKey(ek.Key())
		require.NoError(t, err)
		assert.Equal(t, ek, gotE)
	}

	sk, err := NewStatusLogKey(req, at, "x1")
	require.NoError(t, err)
	assert.Equal(t, Key{PK: "REQ#" + req, SK: "LOG#1732000000123#x1"}, sk.Key())
	assert.True(t, strings.HasPrefix(sk.Key().SK, StatusLogPrefix))
	gotS, err := ParseStatusLogKey(sk.Key())
	require.NoError(t, err)
	assert.Equal(t, sk, gotS)

	ok, err := NewOperationKey(ev, ActionAddCapacity, "0f8e2c4e-5b9a")
	require.NoError(t, err)
	assert.Equal(t, Key{PK: "EVENT#spring-sale", SK: "OP#ADD_CAPACITY#0f8e2c4e-5b9a"}, ok.Key())
	gotO, err := ParseOperationKey(ok.Key())
	require.NoError(t, err)
	assert.Equal(t, ok, gotO)
	kind, err := ok.Key().Entity()
	require.NoError(t, err)
	assert.Equal(t, entity.Operation, kind)
	_, err = NewOperationKey(ev, ActionClose, "k")
	assert.ErrorIs(t, err, ErrInvalidOptions, "only the controls of seats run under a key")
	_, err = NewOperationKey(ev, ActionCancel, "a#b")
	assert.ErrorIs(t, err, ErrInvalidID)

	up, err := NewUserPartition(user)
	require.NoError(t, err)
	assert.Equal(t, "USER#user-7", up.String())
	gotU, err := ParseUserPartition(up.String())
	require.NoError(t, err)
	assert.Equal(t, up, gotU)

	ep, err := NewEventPartition(ev)
	require.NoError(t, err)
	assert.Equal(t, "EVENT#spring-sale", ep.String())
	gotEP, err := ParseEventPartition(ep.String())
	require.NoError(t, err)
	assert.Equal(t, ep, gotEP)

	qk, err := NewQueuedAtSortKey(at, req)
	require.NoError(t, err)
	assert.Equal(t, "QAT#1732000000123#REQ#"+req, qk.String())
	gotQ, err := ParseQueuedAtSortKey(qk.String())
	require.NoError(t, err)
	assert.Equal(t, qk, gotQ)

	ik, err := newIndexKeys(ev, user, req, at)
	require.NoError(t, err)
	assert.Equal(t, IndexKeys{
		GSI1PK: "USER#user-7", GSI1SK: qk.String(),
		GSI2PK: "EVENT#spring-sale", GSI2SK: qk.String(),
	}, ik)
}

func TestParsersRejectWhatBuildersCannotProduce(t *testing.T) {
	id := "r1"
	tests := []struct {
		name  string
		parse func() error
	}{
		{"request wrong prefix", func() error { _, err := ParseRequestKey(Key{"REQUEST#r1", "META"}); return err }},
		{"request wrong sk", func() error { _, err := ParseRequestKey(Key{"REQ#r1", "LOCK"}); return err }},
		{"request empty id", func() error { _, err := ParseRequestKey(Key{"REQ#", "META"}); return err }},
		{"request extra part", func() error { _, err := ParseRequestKey(Key{"REQ#a#b", "META"}); return err }},
		{"request lowercase", func() error { _, err := ParseRequestKey(Key{"req#r1", "META"}); return err }},
		{"lock missing user", func() error { _, err := ParseLockKey(Key{"IDEMP#e", "LOCK"}); return err }},
		{"lock empty user", func() error { _, err := ParseLockKey(Key{"IDEMP#e#", "LOCK"}); return err }},
		{"lock wrong sk", func() error { _, err := ParseLockKey(Key{"IDEMP#e#u", "META"}); return err }},
		{"event unknown item", func() error { _, err := ParseEventKey(Key{"EVENT#e", "META"}); return err }},
		{"event space in id", func() error { _, err := ParseEventKey(Key{"EVENT#e 1", "CONFIG"}); return err }},
		{"log short time", func() error { _, err := ParseStatusLogKey(Key{"REQ#r1", "LOG#123#s"}); return err }},
		{"log signed time", func() error { _, err := ParseStatusLogKey(Key{"REQ#r1", "LOG#+000000000123#s"}); return err }},
		{"log no suffix", func() error { _, err := ParseStatusLogKey(Key{"REQ#r1", "LOG#0000000000123"}); return err }},
		{"queue 14 digits", func() error { _, err := ParseQueuedAtSortKey("QAT#00000000001234#REQ#" + id); return err }},
		{"queue non digits", func() error { _, err := ParseQueuedAtSortKey("QAT#000000000012a#REQ#" + id); return err }},
		{"queue wrong tag", func() error { _, err := ParseQueuedAtSortKey("QAT#0000000000123#RQ#" + id); return err }},
		{"queue status inside (seed 001 §3 form)", func() error {
			_, err := ParseQueuedAtSortKey("QAT#0000000000123#ST#QUEUED#REQ#" + id)
			return err
		}},
		{"operation unknown action", func() error { _, err := ParseOperationKey(Key{"EVENT#e", "OP#CLOSE#k"}); return err }},
		{"operation no key", func() error { _, err := ParseOperationKey(Key{"EVENT#e", "OP#CANCEL"}); return err }},
		{"operation on a shard", func() error { _, err := ParseOperationKey(Key{"EVENT#e#CAPACITY#0", "OP#CANCEL#k"}); return err }},
		{"user invalid utf8", func() error { _, err := ParseUserPartition("USER#\xff"); return err }},
		{"event partition of lock", func() error { _, err := ParseEventPartition("IDEMP#e#u"); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.parse()
			assert.ErrorIs(t, err, ErrMalformedKey)
			assert.False(t, errors.Is(err, ErrInvalidID), "a parse failure is a malformed key, not a bad argument")
		})
	}
}

func TestTimesOutsideThirteenDigitsAreRefused(t *testing.T) {
	_, err := NewQueuedAtSortKey(-1, "r")
	assert.ErrorIs(t, err, ErrInvalidTime)
	_, err = NewQueuedAtSortKey(10_000_000_000_000, "r")
	assert.ErrorIs(t, err, ErrInvalidTime)
	_, err = NewStatusLogKey("r", -5, "s")
	assert.ErrorIs(t, err, ErrInvalidTime)
	k, err := NewQueuedAtSortKey(0, "r")
	require.NoError(t, err)
	assert.Equal(t, "QAT#0000000000000#REQ#r", k.String())
	k, err = NewQueuedAtSortKey(maxMillis, "r")
	require.NoError(t, err)
	assert.Equal(t, "QAT#9999999999999#REQ#r", k.String())
}

// TestQueueKeyOrderIsTimeOrder crosses digit boundaries (999 → 1000 ms, 12 → 13
// digits): without zero padding "1000" would sort before "999".
func TestQueueKeyOrderIsTimeOrder(t *testing.T) {
	times := []EpochMillis{
		0, 9, 10, 99, 100, 999, 1000, 9_999, 10_000,
		999_999_999_999, 1_000_000_000_000, // 12 → 13 digits (2001-09-09)
		MillisOf(time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)),
		maxMillis,
	}
	var keys []string
	for i := len(times) - 1; i >= 0; i-- { // build in reverse so sorting must work
		k, err := NewQueuedAtSortKey(times[i], "req")
		require.NoError(t, err)
		keys = append(keys, k.String())
		lk, err := NewStatusLogKey("req", times[i], "s")
		require.NoError(t, err)
		assert.Len(t, lk.Key().SK, len("LOG#")+millisDigits+len("#s"))
	}
	sort.Strings(keys)
	for i, s := range keys {
		k, err := ParseQueuedAtSortKey(s)
		require.NoError(t, err)
		assert.Equal(t, times[i], k.queuedAt, "position %d", i)
	}
}

func TestEpochMillis(t *testing.T) {
	at := time.Date(2026, 11, 23, 7, 55, 11, 123_456_789, time.FixedZone("KST", 9*3600))
	m := MillisOf(at)
	assert.Equal(t, EpochMillis(at.UnixMilli()), m)
	assert.True(t, m.Time().Equal(at.Truncate(time.Millisecond)))
	assert.Equal(t, time.UTC, m.Time().Location())
}

// The key builders of a participation, without I/O: what they add in CPU and
// allocations to each DynamoDB call (internal/bench has the other hot functions).

func BenchmarkNewRequestKey(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		k, err := NewRequestKey("01a20795-50b4-778f-baec-0a750608711f")
		if err != nil {
			b.Fatal(err)
		}
		_ = k.Key()
	}
}

func BenchmarkNewLockKey(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		k, err := NewLockKey("spring-sale-2026", "user-0001234567")
		if err != nil {
			b.Fatal(err)
		}
		_ = k.Key()
	}
}

func BenchmarkNewIndexKeys(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := newIndexKeys("spring-sale-2026", "user-0001234567", "01a20795-50b4-778f-baec-0a750608711f", 1_795_421_039_191); err != nil {
			b.Fatal(err)
		}
	}
}
