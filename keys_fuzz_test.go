package asyncevent

import "testing"

// FuzzKeyBuilders: whatever the IDs, a builder either refuses them or produces key
// text that parses back to exactly the same IDs, through the exported accessors.
func FuzzKeyBuilders(f *testing.F) {
	f.Add("event-1", "user-1", "req-1", int64(1_732_000_000_000))
	f.Add("e#1", "u", "r", int64(0))
	f.Add("e", "u#", "#r", int64(-1))
	f.Add("EVENT", "IDEMP", "REQ", int64(9_999_999_999_999))
	f.Add("\xff", "a b", "QAT", int64(10_000_000_000_000))
	f.Add("e", "CAPACITY", "HOLDS", int64(1_732_000_000))
	f.Fuzz(func(t *testing.T, eventID, userID, requestID string, ms int64) {
		at := EpochMillis(ms)
		shard := int(ms & 0xff) // a shard number from the time's low bits, 0 to 255
		if k, err := NewRequestKey(requestID); err == nil {
			got, err := ParseRequestKey(k.Key())
			if err != nil || got.RequestID() != requestID || got != k {
				t.Fatalf("request key %v parses to %v, %v", k.Key(), got, err)
			}
		}
		if k, err := NewLockKey(eventID, userID); err == nil {
			got, err := ParseLockKey(k.Key())
			if err != nil || got.EventID() != eventID || got.UserID() != userID || got.IdempotencyKey() != k.Key().PK {
				t.Fatalf("lock key %v parses to %v, %v", k.Key(), got, err)
			}
		}
		for _, item := range []EventItem{EventItemConfig, EventItemCapacity, EventItemDraw} {
			if k, err := NewEventKey(eventID, item); err == nil {
				got, err := ParseEventKey(k.Key())
				if _, sharded := got.Shard(); err != nil || got.EventID() != eventID || got.Item() != item || sharded {
					t.Fatalf("event key %v parses to %v, %v", k.Key(), got, err)
				}
			}
		}
		if keys, err := CapacityKeys(eventID, shard); err == nil {
			for i, k := range keys {
				got, err := ParseEventKey(k.Key())
				n, sharded := got.Shard()
				if err != nil || got != k || got.EventID() != eventID || got.Item() != EventItemCapacity || sharded != (shard > 1) || sharded && n != i {
					t.Fatalf("capacity key %d of %d %v parses to %v, %v", i, shard, k.Key(), got, err)
				}
			}
		}
		if k, err := NewStatusLogKey(requestID, at, userID); err == nil {
			got, err := ParseStatusLogKey(k.Key())
			if err != nil || got.RequestID() != requestID || got.OccurredAt() != at || got.Suffix() != userID {
				t.Fatalf("status log key %v parses to %v, %v", k.Key(), got, err)
			}
		}
		if k, err := NewHoldKey(eventID, shard, at, requestID); err == nil {
			got, err := ParseHoldKey(k.Key())
			if err != nil || got.EventID() != eventID || got.Shard() != shard || got.ExpiresAt() != at || got.RequestID() != requestID {
				t.Fatalf("hold key %v parses to %v, %v", k.Key(), got, err)
			}
		}
		if k, err := NewReturnsKey(eventID); err == nil {
			got, err := ParseReturnsKey(k.Key())
			if err != nil || got.EventID() != eventID {
				t.Fatalf("returns key %v parses to %v, %v", k.Key(), got, err)
			}
		}
		if k, err := NewHoldEventKey(eventID); err == nil {
			got, err := ParseHoldEventKey(k.Key())
			if err != nil || got.EventID() != eventID {
				t.Fatalf("hold registry key %v parses to %v, %v", k.Key(), got, err)
			}
		}
		if k, err := NewAuditKey(eventID, at, userID); err == nil {
			got, err := ParseAuditKey(k.Key())
			if err != nil || got.EventID() != eventID || got.At() != at || got.Suffix() != userID {
				t.Fatalf("audit key %v parses to %v, %v", k.Key(), got, err)
			}
		}
		for _, action := range []Action{ActionAddCapacity, ActionCancel} {
			if k, err := NewOperationKey(eventID, action, userID); err == nil {
				got, err := ParseOperationKey(k.Key())
				if err != nil || got.EventID() != eventID || got.Action() != action || got.IdempotencyKey() != userID {
					t.Fatalf("operation key %v parses to %v, %v", k.Key(), got, err)
				}
			}
		}
		if k, err := NewEventEntryKey(at, eventID); err == nil {
			got, err := ParseEventEntryKey(k.Key())
			if err != nil || got.CreatedAt() != at || got.EventID() != eventID {
				t.Fatalf("event list key %v parses to %v, %v", k.Key(), got, err)
			}
		}
		if k, err := NewProgressKey(eventID, shard, ms); err == nil {
			got, err := ParseProgressKey(k.Key())
			if err != nil || got.EventID() != eventID || got.Shard() != shard || got.UnixSecond() != ms {
				t.Fatalf("progress key %v parses to %v, %v", k.Key(), got, err)
			}
		}
		if k, err := NewWaitlistKey(eventID, shard, ms/60*60); err == nil {
			got, err := ParseWaitlistKey(k.Key())
			if err != nil || got.EventID() != eventID || got.Shard() != shard || got.UnixSecond() != ms/60*60 {
				t.Fatalf("waitlist key %v parses to %v, %v", k.Key(), got, err)
			}
		}
		if p, err := NewUserPartition(userID); err == nil {
			got, err := ParseUserPartition(p.String())
			if err != nil || got.UserID() != userID {
				t.Fatalf("user partition %s parses to %v, %v", p, got, err)
			}
		}
		if parts, err := EventPartitions(eventID, shard); err == nil {
			for i, p := range parts {
				got, err := ParseEventPartition(p.String())
				n, sharded := got.Shard()
				if err != nil || got.EventID() != eventID || sharded != (shard > 1) || sharded && n != i {
					t.Fatalf("event partition %d of %d %v parses to %v, %v", i, shard, p, got, err)
				}
			}
		}
		if k, err := NewQueuedAtSortKey(at, requestID); err == nil {
			got, err := ParseQueuedAtSortKey(k.String())
			if err != nil || got.RequestID() != requestID || got.QueuedAt() != at {
				t.Fatalf("queue key %v parses to %v, %v", k, got, err)
			}
			if bound, err := QueuedAtBound(at); err != nil || !(bound < k.String()) {
				t.Fatalf("bound %q of %v does not sort below its key %v: %v", bound, at, k, err)
			}
		}
	})
}

// FuzzKeyParsers: whatever the text, a parser either refuses it or returns IDs from
// which the builder produces exactly that text, so a parser accepts only what a
// builder could have produced; and Key.Entity names a kind exactly when one of the
// parsers of a table key accepts the key.
func FuzzKeyParsers(f *testing.F) {
	f.Add("REQ#r1", "META")
	f.Add("IDEMP#e#u", "LOCK")
	f.Add("EVENT#e", "CAPACITY")
	f.Add("EVENT#e#CAPACITY#3", "CAPACITY")
	f.Add("REQ#r1", "LOG#1732000000000#s")
	f.Add("USER#u", "QAT#1732000000000#REQ#r1")
	f.Add("EVENT#e", "QAT#0000000000001#REQ#r")
	f.Add("EVENT#e#7", "QAT#0000000000001#REQ#r")
	f.Add("REQ#", "LOG#+732000000000#s")
	f.Add("EVENT#e", "OP#ADD_CAPACITY#0f8e2c4e-5b9a-4d51")
	f.Add("EVENT#e", "OP#CANCEL#k#1")
	f.Add("EVENT#e#HOLDS#2", "EXP#1732000000000#REQ#r1")
	f.Add("EVENT#e#RETURNS", "RETURNS")
	f.Add("HOLD_EVENTS", "EVENT#e")
	f.Add("EVENT#e", "AUDIT#1732000000000#0a1b")
	f.Add("EVENTS", "CAT#1732000000000#EVENT#e")
	f.Add("EVENT#e#PROGRESS#0", "T#1732000000")
	f.Add("EVENT#e#PROGRESS#0", "T#+000000001") // a sign no builder writes
	f.Add("EVENT#e#PROGRESS#+1", "T#-000000001")
	f.Add("EVENT#e#CAPACITY#+3", "CAPACITY")
	f.Fuzz(func(t *testing.T, pk, sk string) {
		key := Key{PK: pk, SK: sk}
		parsed := 0
		check := func(kind string, rebuilt Key, err error) {
			if err != nil {
				return
			}
			parsed++
			if rebuilt != key {
				t.Fatalf("%s key %v rebuilt as %v", kind, key, rebuilt)
			}
		}
		k1, err := ParseRequestKey(key)
		check("request", k1.Key(), err)
		k2, err := ParseLockKey(key)
		check("lock", k2.Key(), err)
		k3, err := ParseEventKey(key)
		check("event", k3.Key(), err)
		k4, err := ParseStatusLogKey(key)
		check("status log", k4.Key(), err)
		k5, err := ParseHoldKey(key)
		check("hold", k5.Key(), err)
		k6, err := ParseReturnsKey(key)
		check("returns", k6.Key(), err)
		k7, err := ParseHoldEventKey(key)
		check("hold registry", k7.Key(), err)
		k8, err := ParseAuditKey(key)
		check("audit", k8.Key(), err)
		k9, err := ParseOperationKey(key)
		check("operation", k9.Key(), err)
		k10, err := ParseEventEntryKey(key)
		check("event list", k10.Key(), err)
		k11, err := ParseProgressKey(key)
		check("progress", k11.Key(), err)
		k12, err := ParseWaitlistKey(key)
		check("waitlist", k12.Key(), err)
		if parsed > 1 {
			t.Fatalf("key %v parses as %d kinds of item", key, parsed)
		}
		if _, err := key.Entity(); (err == nil) != (parsed == 1) {
			t.Fatalf("key %v: Entity says %v, %d parsers accept it", key, err, parsed)
		}

		if p, err := ParseUserPartition(pk); err == nil && p.String() != pk {
			t.Fatalf("user partition %q rebuilt as %q", pk, p)
		}
		if p, err := ParseEventPartition(pk); err == nil && p.String() != pk {
			t.Fatalf("event partition %v rebuilt as %v", pk, p)
		}
		if k, err := ParseQueuedAtSortKey(sk); err == nil && k.String() != sk {
			t.Fatalf("queue key %v rebuilt as %v", sk, k)
		}
	})
}
