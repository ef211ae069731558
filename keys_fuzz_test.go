package asyncevent

import "testing"

// FuzzKeyBuilders: whatever the IDs, a builder either refuses them or produces key
// text that parses back to exactly the same IDs.
func FuzzKeyBuilders(f *testing.F) {
	f.Add("event-1", "user-1", "req-1", int64(1_732_000_000_000))
	f.Add("e#1", "u", "r", int64(0))
	f.Add("e", "u#", "#r", int64(-1))
	f.Add("EVENT", "IDEMP", "REQ", int64(9_999_999_999_999))
	f.Add("\xff", "a b", "QAT", int64(10_000_000_000_000))
	f.Fuzz(func(t *testing.T, eventID, userID, requestID string, ms int64) {
		at := EpochMillis(ms)
		if k, err := NewRequestKey(requestID); err == nil {
			got, err := ParseRequestKey(k.Key())
			if err != nil || got.requestID != requestID {
				t.Fatalf("request key %v parses to %v, %v", k.Key(), got, err)
			}
		}
		if k, err := NewLockKey(eventID, userID); err == nil {
			got, err := ParseLockKey(k.Key())
			if err != nil || got.eventID != eventID || got.userID != userID {
				t.Fatalf("lock key %v parses to %v, %v", k.Key(), got, err)
			}
		}
		if k, err := NewEventKey(eventID, EventItemCapacity); err == nil {
			got, err := ParseEventKey(k.Key())
			if err != nil || got.eventID != eventID || got.item != EventItemCapacity {
				t.Fatalf("event key %v parses to %v, %v", k.Key(), got, err)
			}
		}
		if k, err := NewStatusLogKey(requestID, at, userID); err == nil {
			got, err := ParseStatusLogKey(k.Key())
			if err != nil || got != k {
				t.Fatalf("status log key %v parses to %v, %v", k.Key(), got, err)
			}
		}
		for _, action := range []string{ActionAddCapacity, ActionCancel} {
			if k, err := NewOperationKey(eventID, action, userID); err == nil {
				got, err := ParseOperationKey(k.Key())
				if err != nil || got != k {
					t.Fatalf("operation key %v parses to %v, %v", k.Key(), got, err)
				}
			}
		}
		if p, err := NewUserPartition(userID); err == nil {
			got, err := ParseUserPartition(p.String())
			if err != nil || got.userID != userID {
				t.Fatalf("user partition %s parses to %v, %v", p, got, err)
			}
		}
		if p, err := NewEventPartition(eventID); err == nil {
			got, err := ParseEventPartition(p.String())
			if err != nil || got.eventID != eventID {
				t.Fatalf("event partition %v parses to %v, %v", p, got, err)
			}
		}
		if k, err := NewQueuedAtSortKey(at, requestID); err == nil {
			got, err := ParseQueuedAtSortKey(k.String())
			if err != nil || got.requestID != requestID || got.queuedAt != at {
				t.Fatalf("queue key %v parses to %v, %v", k, got, err)
			}
		}
	})
}

// FuzzKeyParsers: whatever the text, a parser either refuses it or returns IDs from
// which the builder produces exactly that text, so a parser accepts only what a
// builder could have produced.
func FuzzKeyParsers(f *testing.F) {
	f.Add("REQ#r1", "META")
	f.Add("IDEMP#e#u", "LOCK")
	f.Add("EVENT#e", "CAPACITY")
	f.Add("REQ#r1", "LOG#1732000000000#s")
	f.Add("USER#u", "QAT#1732000000000#REQ#r1")
	f.Add("EVENT#e", "QAT#0000000000001#REQ#r")
	f.Add("REQ#", "LOG#+732000000000#s")
	f.Add("EVENT#e", "OP#ADD_CAPACITY#0f8e2c4e-5b9a-4d51")
	f.Add("EVENT#e", "OP#CANCEL#k#1")
	f.Fuzz(func(t *testing.T, pk, sk string) {
		key := Key{PK: pk, SK: sk}
		if k, err := ParseRequestKey(key); err == nil && k.Key() != key {
			t.Fatalf("request key %v rebuilt as %v", key, k.Key())
		}
		if k, err := ParseLockKey(key); err == nil && k.Key() != key {
			t.Fatalf("lock key %v rebuilt as %v", key, k.Key())
		}
		if k, err := ParseEventKey(key); err == nil && k.Key() != key {
			t.Fatalf("event key %v rebuilt as %v", key, k.Key())
		}
		if k, err := ParseStatusLogKey(key); err == nil && k.Key() != key {
			t.Fatalf("status log key %v rebuilt as %v", key, k.Key())
		}
		if k, err := ParseOperationKey(key); err == nil && k.Key() != key {
			t.Fatalf("operation key %v rebuilt as %v", key, k.Key())
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
