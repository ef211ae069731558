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
		{"event partition leading zero", func() error { _, err := ParseEventPartition("EVENT#e#01"); return err }},
		{"capacity shard of config", func() error { _, err := ParseEventKey(Key{"EVENT#e#CAPACITY#1", "CONFIG"}); return err }},
		{"capacity shard signed", func() error { _, err := ParseEventKey(Key{"EVENT#e#CAPACITY#+1", "CAPACITY"}); return err }},
		{"hold wrong partition", func() error { _, err := ParseHoldKey(Key{"EVENT#e#HOLD#1", "EXP#1795435200000#REQ#r"}); return err }},
		{"hold short time", func() error { _, err := ParseHoldKey(Key{"EVENT#e#HOLDS#1", "EXP#17954352#REQ#r"}); return err }},
		{"returns wrong sk", func() error { _, err := ParseReturnsKey(Key{"EVENT#e#RETURNS", "CAPACITY"}); return err }},
		{"hold registry of a shard", func() error { _, err := ParseHoldEventKey(Key{"HOLD_EVENTS", "EVENT#e#1"}); return err }},
		{"audit no suffix", func() error { _, err := ParseAuditKey(Key{"EVENT#e", "AUDIT#1795435200000"}); return err }},
		{"event list wrong tag", func() error { _, err := ParseEventEntryKey(Key{"EVENTS", "CAT#1795435200000#REQ#e"}); return err }},
		{"progress 13 digits", func() error { _, err := ParseProgressKey(Key{"EVENT#e#PROGRESS#0", "T#1795435200000"}); return err }},
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
// allocations to each DynamoDB call (cmd/asyncevent/internal/bench has the other hot functions).

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

// TestKeyTextForms pins the text of every key form, as the table stores it: the
// exported builders are the reference other teams' tools use, and the data must not
// change.
func TestKeyTextForms(t *testing.T) {
	const ev, user, req = "spring-sale", "user-7", "req-1"
	at := EpochMillis(1_795_435_200_000)
	must := func(k interface{ Key() Key }, err error) Key {
		t.Helper()
		require.NoError(t, err)
		return k.Key()
	}
	caps, err := CapacityKeys(ev, 3)
	require.NoError(t, err)
	one, err := CapacityKeys(ev, 1)
	require.NoError(t, err)
	tests := []struct {
		name string
		got  Key
		want Key
		kind entity.Type
	}{
		{"request", must(NewRequestKey(req)), Key{"REQ#req-1", "META"}, entity.Request},
		{"lock", must(NewLockKey(ev, user)), Key{"IDEMP#spring-sale#user-7", "LOCK"}, entity.Idempotency},
		{"config", must(NewEventKey(ev, EventItemConfig)), Key{"EVENT#spring-sale", "CONFIG"}, entity.Config},
		{"capacity", one[0].Key(), Key{"EVENT#spring-sale", "CAPACITY"}, entity.Capacity},
		{"capacity shard", caps[2].Key(), Key{"EVENT#spring-sale#CAPACITY#2", "CAPACITY"}, entity.Capacity},
		{"draw", must(NewEventKey(ev, EventItemDraw)), Key{"EVENT#spring-sale", "DRAW"}, entity.Draw},
		{"status log", must(NewStatusLogKey(req, at, "01")), Key{"REQ#req-1", "LOG#1795435200000#01"}, entity.StatusLog},
		{"hold", must(NewHoldKey(ev, 4, at, req)), Key{"EVENT#spring-sale#HOLDS#4", "EXP#1795435200000#REQ#req-1"}, entity.Hold},
		{"returns", must(NewReturnsKey(ev)), Key{"EVENT#spring-sale#RETURNS", "RETURNS"}, entity.Returns},
		{"hold registry", must(NewHoldEventKey(ev)), Key{"HOLD_EVENTS", "EVENT#spring-sale"}, entity.HoldEvent},
		{"audit", must(NewAuditKey(ev, at, "0a1b")), Key{"EVENT#spring-sale", "AUDIT#1795435200000#0a1b"}, entity.Audit},
		{"operation", must(NewOperationKey(ev, ActionCancel, "k-1")), Key{"EVENT#spring-sale", "OP#CANCEL#k-1"}, entity.Operation},
		{"event list", must(NewEventEntryKey(at, ev)), Key{"EVENTS", "CAT#1795435200000#EVENT#spring-sale"}, entity.EventEntry},
		{"progress", must(NewProgressKey(ev, 1, 1_795_435_200)), Key{"EVENT#spring-sale#PROGRESS#1", "T#1795435200"}, entity.Progress},
		{"progress, early second", must(NewProgressKey(ev, 0, 42)), Key{"EVENT#spring-sale#PROGRESS#0", "T#0000000042"}, entity.Progress},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.got)
			kind, err := tt.got.Entity()
			require.NoError(t, err)
			assert.Equal(t, tt.kind, kind)
		})
	}

	parts, err := EventPartitions(ev, 3)
	require.NoError(t, err)
	require.Len(t, parts, 3)
	assert.Equal(t, "EVENT#spring-sale#2", parts[2].String())
	n, sharded := parts[2].Shard()
	assert.True(t, sharded)
	assert.Equal(t, 2, n)
	single, err := EventPartitions(ev, 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"EVENT#spring-sale"}, []string{single[0].String()})
	_, sharded = single[0].Shard()
	assert.False(t, sharded)

	bound, err := QueuedAtBound(at)
	require.NoError(t, err)
	assert.Equal(t, "QAT#1795435200000", bound)
	before, _ := NewQueuedAtSortKey(at-1, req)
	same, _ := NewQueuedAtSortKey(at, req)
	assert.Less(t, before.String(), bound, "queued before the bound: below it")
	assert.Greater(t, same.String(), bound, "queued at the bound: above it")
}

func TestKeyBuildersRefuse(t *testing.T) {
	for name, err := range map[string]error{
		"capacity keys, bad event": func() error { _, err := CapacityKeys("a#b", 3); return err }(),
		"event partitions, bad ID": func() error { _, err := EventPartitions("", 3); return err }(),
		"hold, bad request":        func() error { _, err := NewHoldKey("e", 0, 1, "r r"); return err }(),
		"returns, bad event":       func() error { _, err := NewReturnsKey("e#"); return err }(),
		"hold registry, bad event": func() error { _, err := NewHoldEventKey(""); return err }(),
		"audit, bad suffix":        func() error { _, err := NewAuditKey("e", 1, "#"); return err }(),
		"event list, bad event":    func() error { _, err := NewEventEntryKey(1, "\x00"); return err }(),
		"progress, bad event":      func() error { _, err := NewProgressKey("a b", 0, 1); return err }(),
	} {
		assert.ErrorIs(t, err, ErrInvalidID, name)
	}
	for name, err := range map[string]error{
		"hold, time":         func() error { _, err := NewHoldKey("e", 0, -1, "r"); return err }(),
		"audit, time":        func() error { _, err := NewAuditKey("e", maxMillis+1, "s"); return err }(),
		"event list, time":   func() error { _, err := NewEventEntryKey(-1, "e"); return err }(),
		"progress, time":     func() error { _, err := NewProgressKey("e", 0, maxSeconds+1); return err }(),
		"progress, negative": func() error { _, err := NewProgressKey("e", 0, -1); return err }(),
		"queued-at bound":    func() error { _, err := QueuedAtBound(-1); return err }(),
	} {
		assert.ErrorIs(t, err, ErrInvalidTime, name)
	}
	for name, err := range map[string]error{
		"hold, shard":     func() error { _, err := NewHoldKey("e", -1, 1, "r"); return err }(),
		"progress, shard": func() error { _, err := NewProgressKey("e", -1, 1); return err }(),
	} {
		assert.ErrorIs(t, err, ErrInvalidOptions, name)
	}
}
