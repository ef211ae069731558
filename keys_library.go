package asyncevent

import (
	"fmt"
	"strconv"
)

// Keys of the items the library adds to the seed's: holds and their returns, the hold
// registry, audit entries, operation markers, the event list, progress seconds and
// recorded entries. Their forms are listed with all the others at the top of keys.go.

// HoldKey is the key of a Hold item, the expiry of a held seat for the hold sweep: PK
// EVENT#<eventId>#HOLDS#<shard> (the request's home shard among the event's capacity
// shards, so that the holds of a spike spread as its claims do), SK
// EXP#<13-digit expiresAt>#REQ#<requestId>: a Query of SK < EXP#<now + 1 ms> finds the
// holds that ran out. Build it with NewHoldKey or read it with ParseHoldKey; the zero
// value is no key.
type HoldKey struct {
	eventID   string
	shard     int
	expiresAt EpochMillis
	requestID string
}

// NewHoldKey returns the key of the hold of requestID, on shard, running out at
// expiresAt; or an ErrInvalidID error (eventID, requestID), an ErrInvalidTime error
// (expiresAt outside 13 digits) or an ErrInvalidOptions error (a negative shard).
func NewHoldKey(eventID string, shard int, expiresAt EpochMillis, requestID string) (HoldKey, error) {
	if err := ValidateID("eventId", eventID); err != nil {
		return HoldKey{}, err
	}
	if err := ValidateID("requestId", requestID); err != nil {
		return HoldKey{}, err
	}
	if _, err := formatMillis(expiresAt); err != nil {
		return HoldKey{}, fmt.Errorf("holdExpiresAt: %w", err)
	}
	if shard < 0 {
		return HoldKey{}, fmt.Errorf("%w: hold shard %d", ErrInvalidOptions, shard)
	}
	return HoldKey{eventID: eventID, shard: shard, expiresAt: expiresAt, requestID: requestID}, nil
}

// holdPartition returns the PK of the holds of eventID on shard: EVENT#<eventId>#HOLDS#<shard>.
func holdPartition(eventID string, shard int) string {
	return eventPK(eventID) + sep + prefixHolds + sep + strconv.Itoa(shard)
}

// expiresBy returns the sort-key bound of the holds running out at or before at:
// every hold key of such a hold sorts before it.
func expiresBy(at EpochMillis) (string, error) {
	s, err := formatMillis(at + 1)
	if err != nil {
		return "", err
	}
	return prefixExpiry + sep + s, nil
}

// ParseHoldKey reads a key that NewHoldKey could have produced, or returns an
// ErrMalformedKey error.
func ParseHoldKey(key Key) (HoldKey, error) {
	pk, err := splitKey("hold PK", key.PK, prefixEvent, 4)
	if err != nil {
		return HoldKey{}, err
	}
	shard, ok := parseShard(pk[3])
	if !ok || pk[2] != prefixHolds {
		return HoldKey{}, malformed("hold PK", key.PK, "want EVENT#<eventId>#HOLDS#<shard>")
	}
	sk, err := splitKey("hold SK", key.SK, prefixExpiry, 4)
	if err != nil {
		return HoldKey{}, err
	}
	at, ok := parseMillis(sk[1])
	if !ok || sk[2] != prefixRequest {
		return HoldKey{}, malformed("hold SK", key.SK, "want EXP#<13-digit expiresAt>#REQ#<requestId>")
	}
	return HoldKey{eventID: pk[1], shard: shard, expiresAt: at, requestID: sk[3]}, nil
}

// ReturnsKey is the key of an event's Returns item, the seats given back by holds
// that ended unpaid and by cancels, for the waitlist: PK EVENT#<eventId>#RETURNS, SK
// RETURNS, on a partition key of its own (not the event's, which holds the CAPACITY
// item that a spike writes). Build it with NewReturnsKey or read it with
// ParseReturnsKey; the zero value is no key.
type ReturnsKey struct{ eventID string }

// NewReturnsKey returns the key of the Returns item of eventID, or an ErrInvalidID
// error.
func NewReturnsKey(eventID string) (ReturnsKey, error) {
	if err := ValidateID("eventId", eventID); err != nil {
		return ReturnsKey{}, err
	}
	return ReturnsKey{eventID: eventID}, nil
}

// ParseReturnsKey reads a key that NewReturnsKey could have produced, or returns an
// ErrMalformedKey error.
func ParseReturnsKey(key Key) (ReturnsKey, error) {
	parts, err := splitKey("returns PK", key.PK, prefixEvent, 3)
	if err != nil {
		return ReturnsKey{}, err
	}
	if parts[2] != skReturns || key.SK != skReturns {
		return ReturnsKey{}, malformed("returns key", key.PK+" / "+key.SK, "want EVENT#<eventId>#RETURNS / RETURNS")
	}
	return ReturnsKey{eventID: parts[1]}, nil
}

// HoldEventKey is the key of an event's entry in the hold registry, the events with
// holds, which the hold sweep reads without a Scan: PK HOLD_EVENTS, SK
// EVENT#<eventId>. Build it with NewHoldEventKey or read it with ParseHoldEventKey;
// the zero value is no key.
type HoldEventKey struct{ eventID string }

// NewHoldEventKey returns the key of the registry entry of eventID, or an
// ErrInvalidID error.
func NewHoldEventKey(eventID string) (HoldEventKey, error) {
	if err := ValidateID("eventId", eventID); err != nil {
		return HoldEventKey{}, err
	}
	return HoldEventKey{eventID: eventID}, nil
}

// ParseHoldEventKey reads a key that NewHoldEventKey could have produced, or returns
// an ErrMalformedKey error.
func ParseHoldEventKey(key Key) (HoldEventKey, error) {
	if key.PK != pkHoldEvents {
		return HoldEventKey{}, malformed("hold registry PK", key.PK, "want "+pkHoldEvents)
	}
	id, err := parseEventPK(key.SK)
	if err != nil {
		return HoldEventKey{}, err
	}
	return HoldEventKey{eventID: id}, nil
}

// AuditKey is the key of an AuditEntry, an operator's control of an event: PK
// EVENT#<eventId>, SK AUDIT#<13-digit at>#<suffix>; the suffix keeps two controls of a
// millisecond apart. Build it with NewAuditKey or read it with ParseAuditKey; the zero
// value is no key.
type AuditKey struct {
	eventID string
	at      EpochMillis
	suffix  string
}

// NewAuditKey returns the key of the audit entry of eventID at at, or an
// ErrInvalidID error (eventID, suffix) or an ErrInvalidTime error (at outside 13
// digits).
func NewAuditKey(eventID string, at EpochMillis, suffix string) (AuditKey, error) {
	if err := ValidateID("eventId", eventID); err != nil {
		return AuditKey{}, err
	}
	if err := ValidateID("suffix", suffix); err != nil {
		return AuditKey{}, err
	}
	if _, err := formatMillis(at); err != nil {
		return AuditKey{}, err
	}
	return AuditKey{eventID: eventID, at: at, suffix: suffix}, nil
}

// ParseAuditKey reads a key that NewAuditKey could have produced, or returns an
// ErrMalformedKey error.
func ParseAuditKey(key Key) (AuditKey, error) {
	id, err := parseEventPK(key.PK)
	if err != nil {
		return AuditKey{}, err
	}
	parts, err := splitKey("audit SK", key.SK, prefixAudit, 3)
	if err != nil {
		return AuditKey{}, err
	}
	at, ok := parseMillis(parts[1])
	if !ok {
		return AuditKey{}, malformed("audit SK", key.SK, "want AUDIT#<13-digit at>#<suffix>")
	}
	return AuditKey{eventID: id, at: at, suffix: parts[2]}, nil
}

// OperationKey is the key of an operation's marker, the record that an operator's
// control of an event's seats was applied under an idempotency key: PK
// EVENT#<eventId>, SK OP#<action>#<idempotencyKey>. The action (ActionAddCapacity,
// ActionCancel) keeps the keys of two kinds of control apart. Build it with
// NewOperationKey or read it with ParseOperationKey; the zero value is no key.
type OperationKey struct {
	eventID        string
	action         Action
	idempotencyKey string
}

// NewOperationKey returns the key of the marker of action on eventID under
// idempotencyKey, which follows the rules of ValidateID; or an ErrInvalidID error
// (eventID, idempotencyKey) or an ErrInvalidOptions error (an action other than
// ActionAddCapacity and ActionCancel).
func NewOperationKey(eventID string, action Action, idempotencyKey string) (OperationKey, error) {
	if err := ValidateID("eventId", eventID); err != nil {
		return OperationKey{}, err
	}
	if action != ActionAddCapacity && action != ActionCancel {
		return OperationKey{}, fmt.Errorf("%w: no idempotency key for the control %q", ErrInvalidOptions, action)
	}
	if err := ValidateID("idempotencyKey", idempotencyKey); err != nil {
		return OperationKey{}, err
	}
	return OperationKey{eventID: eventID, action: action, idempotencyKey: idempotencyKey}, nil
}

// ParseOperationKey reads a key that NewOperationKey could have produced, or returns
// an ErrMalformedKey error.
func ParseOperationKey(key Key) (OperationKey, error) {
	id, err := parseEventPK(key.PK)
	if err != nil {
		return OperationKey{}, err
	}
	parts, err := splitKey("operation SK", key.SK, prefixOp, 3)
	if err != nil {
		return OperationKey{}, err
	}
	action := Action(parts[1])
	if action != ActionAddCapacity && action != ActionCancel {
		return OperationKey{}, malformed("operation SK", key.SK, "want OP#ADD_CAPACITY#<key> or OP#CANCEL#<key>")
	}
	return OperationKey{eventID: id, action: action, idempotencyKey: parts[2]}, nil
}

// EventEntryKey is the key of an event's entry in the event list: PK EVENTS, SK
// CAT#<13-digit createdAt>#EVENT#<eventId>, so that a Query lists the events in the
// order they were made. Build it with NewEventEntryKey or read it with
// ParseEventEntryKey; the zero value is no key.
type EventEntryKey struct {
	createdAt EpochMillis
	eventID   string
}

// NewEventEntryKey returns the key of the entry of eventID, created at createdAt, or
// an ErrInvalidID error (eventID) or an ErrInvalidTime error (createdAt outside 13
// digits).
func NewEventEntryKey(createdAt EpochMillis, eventID string) (EventEntryKey, error) {
	if err := ValidateID("eventId", eventID); err != nil {
		return EventEntryKey{}, err
	}
	if _, err := formatMillis(createdAt); err != nil {
		return EventEntryKey{}, err
	}
	return EventEntryKey{createdAt: createdAt, eventID: eventID}, nil
}

// ParseEventEntryKey reads a key that NewEventEntryKey could have produced, or
// returns an ErrMalformedKey error.
func ParseEventEntryKey(key Key) (EventEntryKey, error) {
	if key.PK != pkEvents {
		return EventEntryKey{}, malformed("event list PK", key.PK, "want "+pkEvents)
	}
	parts, err := splitKey("event list SK", key.SK, prefixCreated, 4)
	if err != nil {
		return EventEntryKey{}, err
	}
	at, ok := parseMillis(parts[1])
	if !ok || parts[2] != prefixEvent {
		return EventEntryKey{}, malformed("event list SK", key.SK, "want CAT#<13-digit createdAt>#EVENT#<eventId>")
	}
	return EventEntryKey{createdAt: at, eventID: parts[3]}, nil
}

// ProgressKey is the key of one second of an event's progress (the arrivals and the
// requests reached, counted for a place in line) on one of its progress partitions:
// PK EVENT#<eventId>#PROGRESS#<shard>, SK T#<10-digit unix second>. Build it with
// NewProgressKey or read it with ParseProgressKey; the zero value is no key.
type ProgressKey struct {
	eventID string
	shard   int
	second  int64
}

// NewProgressKey returns the key of the second unixSecond of eventID's progress on
// shard, or an ErrInvalidID error (eventID), an ErrInvalidTime error (unixSecond
// outside 10 digits) or an ErrInvalidOptions error (a negative shard).
func NewProgressKey(eventID string, shard int, unixSecond int64) (ProgressKey, error) {
	if err := ValidateID("eventId", eventID); err != nil {
		return ProgressKey{}, err
	}
	if unixSecond < 0 || unixSecond > maxSeconds {
		return ProgressKey{}, fmt.Errorf("%w: %d s is outside 0..%d", ErrInvalidTime, unixSecond, int64(maxSeconds))
	}
	if shard < 0 {
		return ProgressKey{}, fmt.Errorf("%w: progress shard %d", ErrInvalidOptions, shard)
	}
	return ProgressKey{eventID: eventID, shard: shard, second: unixSecond}, nil
}

// progressPartition returns the PK of eventID's progress on shard:
// EVENT#<eventId>#PROGRESS#<shard>.
func progressPartition(eventID string, shard int) string {
	return eventPK(eventID) + sep + prefixProgress + sep + strconv.Itoa(shard)
}

// ParseProgressKey reads a key that NewProgressKey could have produced, or returns an
// ErrMalformedKey error.
func ParseProgressKey(key Key) (ProgressKey, error) {
	parts, err := splitKey("progress PK", key.PK, prefixEvent, 4)
	if err != nil {
		return ProgressKey{}, err
	}
	shard, ok := parseShard(parts[3])
	if !ok || parts[2] != prefixProgress {
		return ProgressKey{}, malformed("progress key", key.PK, "want EVENT#<eventId>#PROGRESS#<shard>")
	}
	sk, err := splitKey("progress SK", key.SK, skProgress, 2)
	if err != nil {
		return ProgressKey{}, err
	}
	second, ok := parseDigits(sk[1], secondsDigits)
	if !ok {
		return ProgressKey{}, malformed("progress key", key.SK, "want T#<10-digit unix second>")
	}
	return ProgressKey{eventID: parts[1], shard: shard, second: second}, nil
}

// WaitlistKey is the key of one minute of an event's waitlist counts (the requests
// queued in each of its seconds that joined the waitlist, and that left it, counted
// for a place on it) on one of its progress partitions: PK
// EVENT#<eventId>#PROGRESS#<shard>, SK W#<10-digit unix second>, the minute's first.
// Build it with NewWaitlistKey or read it with ParseWaitlistKey; the zero value is no
// key.
type WaitlistKey struct {
	eventID string
	shard   int
	second  int64
}

// NewWaitlistKey returns the key of the minute that begins at unixSecond of
// eventID's waitlist counts on shard, or an ErrInvalidID error (eventID), an
// ErrInvalidTime error (unixSecond outside 10 digits, or not a minute's first) or an
// ErrInvalidOptions error (a negative shard).
func NewWaitlistKey(eventID string, shard int, unixSecond int64) (WaitlistKey, error) {
	p, err := NewProgressKey(eventID, shard, unixSecond)
	if err != nil {
		return WaitlistKey{}, err
	}
	if unixSecond%60 != 0 {
		return WaitlistKey{}, fmt.Errorf("%w: %d s is not the first second of a minute", ErrInvalidTime, unixSecond)
	}
	return WaitlistKey{eventID: p.eventID, shard: p.shard, second: p.second}, nil
}

// ParseWaitlistKey reads a key that NewWaitlistKey could have produced, or returns an
// ErrMalformedKey error.
func ParseWaitlistKey(key Key) (WaitlistKey, error) {
	sk, err := splitKey("waitlist SK", key.SK, skWaitlist, 2)
	if err != nil {
		return WaitlistKey{}, err
	}
	second, ok := parseDigits(sk[1], secondsDigits)
	if !ok || second%60 != 0 {
		return WaitlistKey{}, malformed("waitlist key", key.SK, "want W#<10-digit unix second, a minute's first>")
	}
	p, err := ParseProgressKey(Key{PK: key.PK, SK: skProgress + sep + sk[1]})
	if err != nil {
		return WaitlistKey{}, err
	}
	return WaitlistKey{eventID: p.eventID, shard: p.shard, second: second}, nil
}

// EntriesKey is the key of one chunk of the entries a draw (or a pre-queue's serve)
// recorded: PK EVENT#<eventId>#ENTRIES#<chunk>, SK SET#<entriesHash>, the hash being
// the 64 hex digits of draw.EntriesHash of the whole set. Each chunk is on a
// partition key of its own, so that recording a large set spreads its one-off writes;
// the hash in the key keeps the chunks of two sets apart. Build it with
// NewEntriesKey or read it with ParseEntriesKey; the zero value is no key.
type EntriesKey struct {
	eventID, entriesHash string
	chunk                int
}

// NewEntriesKey returns the key of chunk chunk of the entries of eventID whose hash
// is entriesHash, or an ErrInvalidID error (eventID, or a hash that is not 64
// lower-case hex digits) or an ErrInvalidOptions error (a negative chunk).
func NewEntriesKey(eventID, entriesHash string, chunk int) (EntriesKey, error) {
	if err := ValidateID("eventId", eventID); err != nil {
		return EntriesKey{}, err
	}
	if !isHashHex(entriesHash) {
		return EntriesKey{}, fmt.Errorf("%w: entriesHash %q: want 64 lower-case hex digits", ErrInvalidID, entriesHash)
	}
	if chunk < 0 {
		return EntriesKey{}, fmt.Errorf("%w: entries chunk %d", ErrInvalidOptions, chunk)
	}
	return EntriesKey{eventID: eventID, entriesHash: entriesHash, chunk: chunk}, nil
}

// ParseEntriesKey reads a key that NewEntriesKey could have produced, or returns an
// ErrMalformedKey error.
func ParseEntriesKey(key Key) (EntriesKey, error) {
	parts, err := splitKey("entries PK", key.PK, prefixEvent, 4)
	if err != nil {
		return EntriesKey{}, err
	}
	chunk, ok := parseShard(parts[3])
	if !ok || parts[2] != prefixEntries {
		return EntriesKey{}, malformed("entries PK", key.PK, "want EVENT#<eventId>#ENTRIES#<chunk>")
	}
	sk, err := splitKey("entries SK", key.SK, skEntrySet, 2)
	if err != nil || !isHashHex(sk[1]) {
		return EntriesKey{}, malformed("entries SK", key.SK, "want SET#<64 hex digits>")
	}
	return EntriesKey{eventID: parts[1], entriesHash: sk[1], chunk: chunk}, nil
}

// isHashHex reports whether s is a SHA-256 as draw.EntriesHash writes it: 64
// lower-case hex digits.
func isHashHex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}
