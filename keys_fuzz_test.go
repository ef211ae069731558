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
		if k, err := newRequestKey(requestID); err == nil {
			got, err := parseRequestKey(k.key())
			if err != nil || got.requestID != requestID {
				t.Fatalf("request key %v parses to %v, %v", k.key(), got, err)
			}
		}
		if k, err := newLockKey(eventID, userID); err == nil {
			got, err := parseLockKey(k.key())
			if err != nil || got.eventID != eventID || got.userID != userID {
				t.Fatalf("lock key %v parses to %v, %v", k.key(), got, err)
			}
		}
		if k, err := newEventKey(eventID, eventItemCapacity); err == nil {
			got, err := parseEventKey(k.key())
			if err != nil || got.eventID != eventID || got.item != eventItemCapacity {
				t.Fatalf("event key %v parses to %v, %v", k.key(), got, err)
			}
		}
		if k, err := newStatusLogKey(requestID, at, userID); err == nil {
			got, err := parseStatusLogKey(k.key())
			if err != nil || got != k {
				t.Fatalf("status log key %v parses to %v, %v", k.key(), got, err)
			}
		}
		for _, action := range []string{ActionAddCapacity, ActionCancel} {
			if k, err := newOperationKey(eventID, action, userID); err == nil {
				got, err := parseOperationKey(k.key())
				if err != nil || got != k {
					t.Fatalf("operation key %v parses to %v, %v", k.key(), got, err)
				}
			}
		}
		if p, err := newUserPartition(userID); err == nil {
			got, err := parseUserPartition(p.text())
			if err != nil || got.userID != userID {
				t.Fatalf("user partition %s parses to %v, %v", p, got, err)
			}
		}
		if p, err := newEventPartition(eventID); err == nil {
			got, err := parseEventPartition(p.text())
			if err != nil || got.eventID != eventID {
				t.Fatalf("event partition %v parses to %v, %v", p, got, err)
			}
		}
		if k, err := newQueueKey(at, requestID); err == nil {
			got, err := parseQueueKey(k.text())
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
		if k, err := parseRequestKey(key); err == nil && k.key() != key {
			t.Fatalf("request key %v rebuilt as %v", key, k.key())
		}
		if k, err := parseLockKey(key); err == nil && k.key() != key {
			t.Fatalf("lock key %v rebuilt as %v", key, k.key())
		}
		if k, err := parseEventKey(key); err == nil && k.key() != key {
			t.Fatalf("event key %v rebuilt as %v", key, k.key())
		}
		if k, err := parseStatusLogKey(key); err == nil && k.key() != key {
			t.Fatalf("status log key %v rebuilt as %v", key, k.key())
		}
		if k, err := parseOperationKey(key); err == nil && k.key() != key {
			t.Fatalf("operation key %v rebuilt as %v", key, k.key())
		}
		if p, err := parseUserPartition(pk); err == nil && p.text() != pk {
			t.Fatalf("user partition %q rebuilt as %q", pk, p)
		}
		if p, err := parseEventPartition(pk); err == nil && p.text() != pk {
			t.Fatalf("event partition %v rebuilt as %v", pk, p)
		}
		if k, err := parseQueueKey(sk); err == nil && k.text() != sk {
			t.Fatalf("queue key %v rebuilt as %v", sk, k)
		}
	})
}
