package asyncevent

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/asyncevent/asyncevent/entity"
)

// All key text of the table is built and parsed in this file and keys_library.go
// (the keys of the items the library adds to the seed's), and nowhere else. Each
// key form has an exported typed key: New… builds it from IDs (an ErrInvalidID error
// for a bad one), Parse… reads it back (an ErrMalformedKey error for text no builder
// could have produced).
//
//	Request          PK REQ#<requestId>                   SK META                                 RequestKey
//	IdempotencyLock  PK IDEMP#<eventId>#<userId>          SK LOCK                                 LockKey
//	EventConfig      PK EVENT#<eventId>                   SK CONFIG                               EventKey
//	EventCapacity    PK EVENT#<eventId>                   SK CAPACITY                             EventKey
//	  capacity shard PK EVENT#<eventId>#CAPACITY#<n>      SK CAPACITY   (C > 1: a PK each)        EventKey
//	Draw record      PK EVENT#<eventId>                   SK DRAW                                 EventKey
//	recorded entries PK EVENT#<eventId>#ENTRIES#<chunk>   SK SET#<entriesHash>                    EntriesKey
//	StatusLog        PK REQ#<requestId>                   SK LOG#<occurredAt>#<suffix>            StatusLogKey
//	Hold             PK EVENT#<eventId>#HOLDS#<shard>     SK EXP#<expiresAt>#REQ#<requestId>      HoldKey
//	Returns          PK EVENT#<eventId>#RETURNS           SK RETURNS                              ReturnsKey
//	hold registry    PK HOLD_EVENTS                       SK EVENT#<eventId>                      HoldEventKey
//	AuditEntry       PK EVENT#<eventId>                   SK AUDIT#<at>#<suffix>                  AuditKey
//	operation marker PK EVENT#<eventId>                   SK OP#<action>#<idempotencyKey>         OperationKey
//	event list entry PK EVENTS                            SK CAT#<createdAt>#EVENT#<eventId>      EventEntryKey
//	progress second  PK EVENT#<eventId>#PROGRESS#<shard>  SK T#<unix second>                      ProgressKey
//	waitlist minute  PK EVENT#<eventId>#PROGRESS#<shard>  SK W#<unix second, a minute's first>     WaitlistKey
//	GSI1 (Request)   GSI1PK USER#<userId>                 GSI1SK QAT#<queuedAt>#REQ#<requestId>   UserPartition, QueuedAtSortKey
//	GSI2 (Request)   GSI2PK EVENT#<eventId>[#<shard>]     GSI2SK QAT#<queuedAt>#REQ#<requestId>   EventPartition, QueuedAtSortKey
//
// Times are 13 zero-padded digits of epoch milliseconds (the progress second: 10 of
// epoch seconds). IDs never contain the separator, so every key splits back into
// exactly the IDs it was built from.

// MaxIDLength is the longest ID, in bytes, that may be used inside a key.
const MaxIDLength = 128

const (
	sep = "#"

	prefixRequest = "REQ"
	prefixLock    = "IDEMP"
	prefixEvent   = "EVENT"
	prefixUser    = "USER"
	prefixQueued  = "QAT"
	prefixLog     = "LOG"
	prefixHolds   = "HOLDS"
	prefixAudit   = "AUDIT"
	prefixOp      = "OP"
	prefixExpiry  = "EXP"
	// prefixProgress names an event's progress partitions; skProgress prefixes the
	// second of a progress item.
	prefixProgress = "PROGRESS"
	skProgress     = "T"
	// skWaitlist prefixes the minute of a waitlist item, on the progress partitions.
	skWaitlist = "W"
	// prefixEntries names the partitions of a draw's recorded entries; skEntrySet
	// prefixes the hash of the set a chunk belongs to.
	prefixEntries = "ENTRIES"
	skEntrySet    = "SET"

	skRequest = "META"
	skLock    = "LOCK"
	skReturns = "RETURNS"

	// pkHoldEvents is the partition of the hold registry: one item per event with
	// holds, so that the hold sweep finds them without a Scan.
	pkHoldEvents = "HOLD_EVENTS"

	// pkEvents is the partition of the event list: one entry per event, newest last.
	pkEvents      = "EVENTS"
	prefixCreated = "CAT"

	// millisDigits is the fixed width of a timestamp inside a sort key: 13 digits of
	// epoch milliseconds cover 1970 to 2286, and zero padding makes string order equal
	// time order.
	millisDigits = 13
	maxMillis    = 9_999_999_999_999
	// secondsDigits is the fixed width of the unix second of a progress item's SK.
	secondsDigits = 10
	maxSeconds    = 9_999_999_999
)

// ValidateID reports whether id can be used inside a key. field names the ID in the
// error ("eventId", "userId", …). A valid ID is non-empty, at most MaxIDLength bytes of
// valid UTF-8, made of printable characters other than space, and free of '#'. The
// error is an *InvalidIDError matching ErrInvalidID.
func ValidateID(field, id string) error {
	if reason := idProblem(id); reason != "" {
		return &InvalidIDError{Field: field, Reason: reason}
	}
	return nil
}

// idProblem says what makes id unusable inside a key, or "" when it is fine.
func idProblem(id string) string {
	switch {
	case id == "":
		return "is empty"
	case len(id) > MaxIDLength:
		return fmt.Sprintf("is %d bytes, longer than %d", len(id), MaxIDLength)
	case !utf8.ValidString(id):
		return "is not valid UTF-8"
	}
	for i, r := range id {
		switch {
		case r == '#':
			return fmt.Sprintf("contains the key separator '#' at byte %d", i)
		case r == ' ':
			return fmt.Sprintf("contains a space at byte %d", i)
		case !unicode.IsPrint(r):
			return fmt.Sprintf("contains the non-printable character %U at byte %d", r, i)
		}
	}
	return ""
}

// EpochMillis is a timestamp in milliseconds since the Unix epoch, the form every time
// of the table is stored in (stored as a number).
type EpochMillis int64

// MillisOf returns t as EpochMillis.
func MillisOf(t time.Time) EpochMillis { return EpochMillis(t.UnixMilli()) }

// Time returns m as a time.Time in UTC.
func (m EpochMillis) Time() time.Time { return time.UnixMilli(int64(m)).UTC() }

// formatMillis writes m as 13 zero-padded digits.
func formatMillis(m EpochMillis) (string, error) {
	if m < 0 || m > maxMillis {
		return "", fmt.Errorf("%w: %d ms is outside 0..%d", ErrInvalidTime, int64(m), int64(maxMillis))
	}
	s := strconv.FormatInt(int64(m), 10)
	return strings.Repeat("0", millisDigits-len(s)) + s, nil
}

// parseMillis reads exactly 13 ASCII digits, the only form formatMillis writes.
func parseMillis(s string) (EpochMillis, bool) {
	n, ok := parseDigits(s, millisDigits)
	return EpochMillis(n), ok
}

// parseDigits reads a number written as exactly width ASCII digits: no sign, no
// space, the text a builder writes and nothing else.
func parseDigits(s string, width int) (int64, bool) {
	if len(s) != width {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// The key attributes of the table and its indexes, as Key and IndexKeys spell them.
const (
	attrPK     = "PK"
	attrSK     = "SK"
	attrGSI1PK = "GSI1PK"
	attrGSI1SK = "GSI1SK"
	attrGSI2PK = "GSI2PK"
	attrGSI2SK = "GSI2SK"
)

// Key is the primary key of one item of the table. The typed keys below build it
// (their Key method) and read it back (their Parse function); Entity tells which of
// them a key is.
type Key struct {
	PK string `dynamodbav:"PK"`
	SK string `dynamodbav:"SK"`
}

// Entity reports which kind of item a table key belongs to, or an ErrMalformedKey
// error for key text that no key builder of this package could have produced. Each
// kind has its typed key, whose Parse function returns the key's IDs: Request
// [ParseRequestKey], Idempotency [ParseLockKey], Config, Capacity and Draw
// [ParseEventKey], StatusLog [ParseStatusLogKey], Hold [ParseHoldKey], Returns
// [ParseReturnsKey], HoldEvent [ParseHoldEventKey], Audit [ParseAuditKey], Operation
// [ParseOperationKey], EventEntry [ParseEventEntryKey], Progress [ParseProgressKey],
// Waitlist [ParseWaitlistKey],
// Entries [ParseEntriesKey].
func (k Key) Entity() (entity.Type, error) {
	if _, err := ParseRequestKey(k); err == nil {
		return entity.Request, nil
	}
	if _, err := ParseLockKey(k); err == nil {
		return entity.Idempotency, nil
	}
	if e, err := ParseEventKey(k); err == nil {
		return map[EventItem]entity.Type{
			EventItemConfig: entity.Config, EventItemCapacity: entity.Capacity, EventItemDraw: entity.Draw, EventItemAdmission: entity.Admission,
		}[e.item], nil
	}
	if _, err := ParseStatusLogKey(k); err == nil {
		return entity.StatusLog, nil
	}
	if _, err := ParseHoldKey(k); err == nil {
		return entity.Hold, nil
	}
	if _, err := ParseReturnsKey(k); err == nil {
		return entity.Returns, nil
	}
	if _, err := ParseHoldEventKey(k); err == nil {
		return entity.HoldEvent, nil
	}
	if _, err := ParseAuditKey(k); err == nil {
		return entity.Audit, nil
	}
	if _, err := ParseOperationKey(k); err == nil {
		return entity.Operation, nil
	}
	if _, err := ParseEventEntryKey(k); err == nil {
		return entity.EventEntry, nil
	}
	if _, err := ParseProgressKey(k); err == nil {
		return entity.Progress, nil
	}
	if _, err := ParseWaitlistKey(k); err == nil {
		return entity.Waitlist, nil
	}
	if _, err := ParseEntriesKey(k); err == nil {
		return entity.Entries, nil
	}
	return "", malformed("key", k.PK+" / "+k.SK, "not the key of any item of the table")
}

// RequestKey is the key of a Request item: PK REQ#<requestId>, SK META. Build it with
// NewRequestKey or read it with ParseRequestKey; the zero value is no key.
type RequestKey struct{ requestID string }

// NewRequestKey returns the key of the request requestID, or an ErrInvalidID error.
func NewRequestKey(requestID string) (RequestKey, error) {
	if err := ValidateID("requestId", requestID); err != nil {
		return RequestKey{}, err
	}
	return RequestKey{requestID: requestID}, nil
}

// RequestID returns the request's ID.
func (k RequestKey) RequestID() string { return k.requestID }

// Key returns the table key: PK REQ#<requestId>, SK META.
func (k RequestKey) Key() Key { return Key{PK: requestPK(k.requestID), SK: skRequest} }

// ParseRequestKey reads a key that NewRequestKey could have produced, or returns an
// ErrMalformedKey error.
func ParseRequestKey(key Key) (RequestKey, error) {
	id, err := parseRequestPK(key.PK)
	if err != nil {
		return RequestKey{}, err
	}
	if key.SK != skRequest {
		return RequestKey{}, malformed("request SK", key.SK, "want "+skRequest)
	}
	return RequestKey{requestID: id}, nil
}

func requestPK(requestID string) string { return prefixRequest + sep + requestID }

func parseRequestPK(pk string) (string, error) {
	parts, err := splitKey("request PK", pk, prefixRequest, 2)
	if err != nil {
		return "", err
	}
	return parts[1], nil
}

// LockKey is the key of an IdempotencyLock item, the one request of a user in an
// event: PK IDEMP#<eventId>#<userId>, SK LOCK. Build it with NewLockKey or read it
// with ParseLockKey; the zero value is no key.
type LockKey struct{ eventID, userID string }

// NewLockKey returns the key of the lock of (eventID, userID), or an ErrInvalidID
// error naming the bad ID.
func NewLockKey(eventID, userID string) (LockKey, error) {
	if err := ValidateID("eventId", eventID); err != nil {
		return LockKey{}, err
	}
	if err := ValidateID("userId", userID); err != nil {
		return LockKey{}, err
	}
	return LockKey{eventID: eventID, userID: userID}, nil
}

// EventID returns the event's ID.
func (k LockKey) EventID() string { return k.eventID }

// UserID returns the user's ID.
func (k LockKey) UserID() string { return k.userID }

// Key returns the table key: PK IDEMP#<eventId>#<userId>, SK LOCK.
func (k LockKey) Key() Key {
	return Key{PK: prefixLock + sep + k.eventID + sep + k.userID, SK: skLock}
}

// IdempotencyKey returns the text stored in a Request's idempotencyKey field, the PK
// of its lock: IDEMP#<eventId>#<userId>.
func (k LockKey) IdempotencyKey() string { return k.Key().PK }

// ParseLockKey reads a key that NewLockKey could have produced, or returns an
// ErrMalformedKey error.
func ParseLockKey(key Key) (LockKey, error) {
	parts, err := splitKey("lock PK", key.PK, prefixLock, 3)
	if err != nil {
		return LockKey{}, err
	}
	if key.SK != skLock {
		return LockKey{}, malformed("lock SK", key.SK, "want "+skLock)
	}
	return LockKey{eventID: parts[1], userID: parts[2]}, nil
}

// EventItem names one of the items an event keeps under its partition
// EVENT#<eventId>; it is the item's SK.
type EventItem string

// The items of an event's partition.
const (
	EventItemConfig   EventItem = "CONFIG"   // EventConfig
	EventItemCapacity EventItem = "CAPACITY" // EventCapacity (FIRST_COME), or one of its shards
	EventItemDraw     EventItem = "DRAW"     // Draw record (LOTTERY)
	// EventItemAdmission is a ranked FIRST_COME event's admission record
	// (EventSettings.Admission AdmissionRanked): how far down the line it has
	// decided, the wave it is deciding, whether it has begun refusing.
	EventItemAdmission EventItem = "ADMISSION"
)

func (i EventItem) valid() bool {
	return i == EventItemConfig || i == EventItemCapacity || i == EventItemDraw || i == EventItemAdmission
}

// EventKey is the key of an item of an event: PK EVENT#<eventId>, SK CONFIG, CAPACITY,
// DRAW or ADMISSION; or, for an event with capacity shards (EventSettings.CapacityShards C > 1),
// PK EVENT#<eventId>#CAPACITY#<shard>, SK CAPACITY, shard 0 to C-1: each shard on a
// partition key of its own, since the items of one partition key share one partition
// until DynamoDB splits it for heat, minutes into the load, while a drop is decided in
// seconds. Build it with NewEventKey or CapacityKeys, or read it with ParseEventKey;
// the zero value is no key.
type EventKey struct {
	eventID string
	item    EventItem
	shard   int // -1: the item itself, not one of its shards
}

// NewEventKey returns the key of the item of the event eventID, or an ErrInvalidID
// error. An unknown item is an ErrInvalidOptions error.
func NewEventKey(eventID string, item EventItem) (EventKey, error) {
	if err := ValidateID("eventId", eventID); err != nil {
		return EventKey{}, err
	}
	if !item.valid() {
		return EventKey{}, fmt.Errorf("%w: unknown event item %q", ErrInvalidOptions, string(item))
	}
	return EventKey{eventID: eventID, item: item, shard: -1}, nil
}

// CapacityKeys returns the keys of a FIRST_COME event's capacity as the library
// stores it, given the event's EventSettings.CapacityShards: with shards ≤ 1 its one
// item EVENT#<eventId> / CAPACITY, otherwise the shards EVENT#<eventId>#CAPACITY#0 to
// EVENT#<eventId>#CAPACITY#<shards-1>, each with SK CAPACITY.
func CapacityKeys(eventID string, shards int) ([]EventKey, error) {
	k, err := NewEventKey(eventID, EventItemCapacity)
	if err != nil {
		return nil, err
	}
	if shards <= 1 {
		return []EventKey{k}, nil
	}
	keys := make([]EventKey, shards)
	for i := range keys {
		keys[i] = EventKey{eventID: eventID, item: EventItemCapacity, shard: i}
	}
	return keys, nil
}

// EventID returns the event's ID.
func (k EventKey) EventID() string { return k.eventID }

// Item returns which of the event's items the key is.
func (k EventKey) Item() EventItem { return k.item }

// Shard returns the capacity shard the key is; ok is false (and shard 0) for an item
// that is no shard (EVENT#<eventId> / the item).
func (k EventKey) Shard() (shard int, ok bool) { return max(k.shard, 0), k.shard >= 0 }

// Key returns the table key: PK EVENT#<eventId>, SK the item; for a capacity shard
// PK EVENT#<eventId>#CAPACITY#<shard>, SK CAPACITY.
func (k EventKey) Key() Key {
	pk := eventPK(k.eventID)
	if k.shard >= 0 {
		pk += sep + string(k.item) + sep + strconv.Itoa(k.shard)
	}
	return Key{PK: pk, SK: string(k.item)}
}

// ParseEventKey reads a key that NewEventKey or CapacityKeys could have produced, or
// returns an ErrMalformedKey error.
func ParseEventKey(key Key) (EventKey, error) {
	if !EventItem(key.SK).valid() {
		return EventKey{}, malformed("event SK", key.SK, "want CONFIG, CAPACITY or DRAW")
	}
	k := EventKey{item: EventItem(key.SK), shard: -1}
	if strings.Count(key.PK, sep) == 1 {
		id, err := parseEventPK(key.PK)
		if err != nil {
			return EventKey{}, err
		}
		k.eventID = id
		return k, nil
	}
	parts, err := splitKey("capacity shard PK", key.PK, prefixEvent, 4)
	if err != nil {
		return EventKey{}, err
	}
	shard, ok := parseShard(parts[3])
	if !ok || parts[2] != string(EventItemCapacity) || k.item != EventItemCapacity {
		return EventKey{}, malformed("capacity shard PK", key.PK, "want EVENT#<eventId>#CAPACITY#<shard> with SK CAPACITY, shards numbered from 0")
	}
	k.eventID, k.shard = parts[1], shard
	return k, nil
}

func eventPK(eventID string) string { return prefixEvent + sep + eventID }

func parseEventPK(pk string) (string, error) {
	parts, err := splitKey("event PK", pk, prefixEvent, 2)
	if err != nil {
		return "", err
	}
	return parts[1], nil
}

// parseShard reads a shard number as strconv.Itoa writes it: no sign, no leading zero.
func parseShard(s string) (int, bool) {
	shard, err := strconv.Atoi(s)
	return shard, err == nil && shard >= 0 && strconv.Itoa(shard) == s
}

// StatusLogKey is the key of a StatusLog item: PK REQ#<requestId>, SK
// LOG#<13-digit occurredAt>#<suffix>. The suffix keeps two transitions of the same
// millisecond apart; it follows the rules of ValidateID. Build it with
// NewStatusLogKey or read it with ParseStatusLogKey; the zero value is no key.
type StatusLogKey struct {
	requestID  string
	occurredAt EpochMillis
	suffix     string
}

// NewStatusLogKey returns the key of the log entry of requestID at occurredAt, or an
// ErrInvalidID error (requestID, suffix) or an ErrInvalidTime error (occurredAt
// outside 13 digits).
func NewStatusLogKey(requestID string, occurredAt EpochMillis, suffix string) (StatusLogKey, error) {
	if err := ValidateID("requestId", requestID); err != nil {
		return StatusLogKey{}, err
	}
	if err := ValidateID("suffix", suffix); err != nil {
		return StatusLogKey{}, err
	}
	if _, err := formatMillis(occurredAt); err != nil {
		return StatusLogKey{}, fmt.Errorf("occurredAt: %w", err)
	}
	return StatusLogKey{requestID: requestID, occurredAt: occurredAt, suffix: suffix}, nil
}

// RequestID returns the ID of the request the entry logs.
func (k StatusLogKey) RequestID() string { return k.requestID }

// OccurredAt returns the time of the transition.
func (k StatusLogKey) OccurredAt() EpochMillis { return k.occurredAt }

// Suffix returns the suffix that keeps two entries of one millisecond apart.
func (k StatusLogKey) Suffix() string { return k.suffix }

// Key returns the table key: PK REQ#<requestId>, SK LOG#<13-digit occurredAt>#<suffix>.
func (k StatusLogKey) Key() Key {
	at, _ := formatMillis(k.occurredAt) // checked by NewStatusLogKey
	return Key{PK: requestPK(k.requestID), SK: prefixLog + sep + at + sep + k.suffix}
}

// StatusLogPrefix is the sort-key prefix of every status log entry of a request: a
// Query of PK = REQ#<requestId> AND begins_with(SK, StatusLogPrefix) lists them in
// time order (the "status logs" row).
const StatusLogPrefix = "LOG#" // prefixLog + sep

// ParseStatusLogKey reads a key that NewStatusLogKey could have produced, or returns
// an ErrMalformedKey error.
func ParseStatusLogKey(key Key) (StatusLogKey, error) {
	id, err := parseRequestPK(key.PK)
	if err != nil {
		return StatusLogKey{}, err
	}
	parts, err := splitKey("status log SK", key.SK, prefixLog, 3)
	if err != nil {
		return StatusLogKey{}, err
	}
	at, ok := parseMillis(parts[1])
	if !ok {
		return StatusLogKey{}, malformed("status log SK", key.SK, "occurredAt is not 13 digits")
	}
	return StatusLogKey{requestID: id, occurredAt: at, suffix: parts[2]}, nil
}

// UserPartition is the GSI1 partition key (GSI1PK) of a user's requests:
// USER#<userId>. Build it with NewUserPartition or read it with ParseUserPartition;
// the zero value is no key.
type UserPartition struct{ userID string }

// NewUserPartition returns the GSI1 partition of userID, or an ErrInvalidID error.
func NewUserPartition(userID string) (UserPartition, error) {
	if err := ValidateID("userId", userID); err != nil {
		return UserPartition{}, err
	}
	return UserPartition{userID: userID}, nil
}

// UserID returns the user's ID.
func (p UserPartition) UserID() string { return p.userID }

// String returns the key text USER#<userId>.
func (p UserPartition) String() string { return prefixUser + sep + p.userID }

// ParseUserPartition reads text that NewUserPartition could have produced, or
// returns an ErrMalformedKey error.
func ParseUserPartition(s string) (UserPartition, error) {
	parts, err := splitKey("user partition", s, prefixUser, 2)
	if err != nil {
		return UserPartition{}, err
	}
	return UserPartition{userID: parts[1]}, nil
}

// EventPartition is a GSI2 partition key (GSI2PK) of an event's requests:
// EVENT#<eventId>, the same text as the PK of the event's own items (which carry no
// GSI attributes and so never appear on GSI2); or, for an event with index shards
// (EventSettings.IndexShards K > 1), EVENT#<eventId>#<shard>, shard 0 to K-1 picked by
// the request's ID. Build it with NewEventPartition or EventPartitions, or read it
// with ParseEventPartition; the zero value is no key. EventSettings.RequestIndexKeys
// gives the partition of one request.
type EventPartition struct {
	eventID string
	shard   int // -1: the one partition of an event without index shards
}

// NewEventPartition returns the GSI2 partition of eventID without index shards,
// EVENT#<eventId>, or an ErrInvalidID error.
func NewEventPartition(eventID string) (EventPartition, error) {
	if err := ValidateID("eventId", eventID); err != nil {
		return EventPartition{}, err
	}
	return EventPartition{eventID: eventID, shard: -1}, nil
}

// EventPartitions returns every GSI2 partition of an event, given its
// EventSettings.IndexShards: with shards ≤ 1 the one partition EVENT#<eventId>,
// otherwise EVENT#<eventId>#0 to EVENT#<eventId>#<shards-1>. Reading an event's
// requests in queue order is a Query of each, merged by sort key.
func EventPartitions(eventID string, shards int) ([]EventPartition, error) {
	p, err := NewEventPartition(eventID)
	if err != nil {
		return nil, err
	}
	if shards <= 1 {
		return []EventPartition{p}, nil
	}
	parts := make([]EventPartition, shards)
	for i := range parts {
		parts[i] = EventPartition{eventID: eventID, shard: i}
	}
	return parts, nil
}

// requestPartition returns the GSI2 partition of a request of an event with shards
// index shards: its shard is FNV-1a of the request ID, modulo shards.
func requestPartition(eventID, requestID string, shards int) (EventPartition, error) {
	p, err := NewEventPartition(eventID)
	if err != nil || shards <= 1 {
		return p, err
	}
	p.shard = shardOf(requestID, shards)
	return p, nil
}

// shardOf spreads request IDs over n shards.
func shardOf(requestID string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(requestID))
	return int(h.Sum32() % uint32(n))
}

// EventID returns the event's ID.
func (p EventPartition) EventID() string { return p.eventID }

// Shard returns the index shard the partition is; ok is false (and shard 0) for the
// one partition of an event without index shards.
func (p EventPartition) Shard() (shard int, ok bool) { return max(p.shard, 0), p.shard >= 0 }

// String returns the key text EVENT#<eventId>, or EVENT#<eventId>#<shard>.
func (p EventPartition) String() string {
	if p.shard < 0 {
		return eventPK(p.eventID)
	}
	return eventPK(p.eventID) + sep + strconv.Itoa(p.shard)
}

// ParseEventPartition reads text that NewEventPartition or EventPartitions could have
// produced, or returns an ErrMalformedKey error.
func ParseEventPartition(s string) (EventPartition, error) {
	if strings.Count(s, sep) == 1 {
		id, err := parseEventPK(s)
		if err != nil {
			return EventPartition{}, err
		}
		return EventPartition{eventID: id, shard: -1}, nil
	}
	parts, err := splitKey("event partition", s, prefixEvent, 3)
	if err != nil {
		return EventPartition{}, err
	}
	shard, ok := parseShard(parts[2])
	if !ok {
		return EventPartition{}, malformed("event partition", s, "the shard is not a number")
	}
	return EventPartition{eventID: parts[1], shard: shard}, nil
}

// QueuedAtSortKey is the sort key of a request on GSI1 and GSI2 (GSI1SK, GSI2SK):
// QAT#<13-digit queuedAt>#REQ#<requestId>. It is written once, when the order time is
// known, and never changed, so string order is queue order. Build it with
// NewQueuedAtSortKey or read it with ParseQueuedAtSortKey; the zero value is no key.
type QueuedAtSortKey struct {
	queuedAt  EpochMillis
	requestID string
}

// NewQueuedAtSortKey returns the queue-order sort key of requestID queued at
// queuedAt, or an ErrInvalidID error (requestID) or an ErrInvalidTime error
// (queuedAt outside 13 digits).
func NewQueuedAtSortKey(queuedAt EpochMillis, requestID string) (QueuedAtSortKey, error) {
	if err := ValidateID("requestId", requestID); err != nil {
		return QueuedAtSortKey{}, err
	}
	if _, err := formatMillis(queuedAt); err != nil {
		return QueuedAtSortKey{}, fmt.Errorf("queuedAt: %w", err)
	}
	return QueuedAtSortKey{queuedAt: queuedAt, requestID: requestID}, nil
}

// QueuedAt returns the request's place in line: its queuedAt (its requestedAt for a
// request whose enqueue failed).
func (k QueuedAtSortKey) QueuedAt() EpochMillis { return k.queuedAt }

// RequestID returns the request's ID.
func (k QueuedAtSortKey) RequestID() string { return k.requestID }

// String returns the key text QAT#<13-digit queuedAt>#REQ#<requestId>.
func (k QueuedAtSortKey) String() string {
	at, _ := formatMillis(k.queuedAt) // checked by NewQueuedAtSortKey
	return prefixQueued + sep + at + sep + requestPK(k.requestID)
}

// ParseQueuedAtSortKey reads text that NewQueuedAtSortKey could have produced, or
// returns an ErrMalformedKey error.
func ParseQueuedAtSortKey(s string) (QueuedAtSortKey, error) {
	parts, err := splitKey("queue key", s, prefixQueued, 4)
	if err != nil {
		return QueuedAtSortKey{}, err
	}
	at, ok := parseMillis(parts[1])
	if !ok {
		return QueuedAtSortKey{}, malformed("queue key", s, "queuedAt is not 13 digits")
	}
	if parts[2] != prefixRequest {
		return QueuedAtSortKey{}, malformed("queue key", s, "want REQ before the request ID")
	}
	return QueuedAtSortKey{queuedAt: at, requestID: parts[3]}, nil
}

// QueuedAtBound returns the sort-key bound QAT#<13-digit at> between the requests
// queued before at and the others: every QueuedAtSortKey of a request queued before
// at sorts below it, every one of a request queued at or after at sorts above it (the
// bound is a proper prefix of such a key). A Query of GSI2SK < bound lists the
// requests queued before at; GSI2SK > bound, those queued since. A time outside 13
// digits is an ErrInvalidTime error.
func QueuedAtBound(at EpochMillis) (string, error) {
	s, err := formatMillis(at)
	if err != nil {
		return "", err
	}
	return prefixQueued + sep + s, nil
}

// EventID returns the event's ID.
func (k HoldKey) EventID() string { return k.eventID }

// Shard returns the request's home shard, the hold partition the hold is on.
func (k HoldKey) Shard() int { return k.shard }

// ExpiresAt returns the time the hold runs out.
func (k HoldKey) ExpiresAt() EpochMillis { return k.expiresAt }

// RequestID returns the ID of the request that holds the seat.
func (k HoldKey) RequestID() string { return k.requestID }

// Key returns the table key: PK EVENT#<eventId>#HOLDS#<shard>, SK
// EXP#<13-digit expiresAt>#REQ#<requestId>.
func (k HoldKey) Key() Key {
	at, _ := formatMillis(k.expiresAt) // checked by NewHoldKey
	return Key{PK: holdPartition(k.eventID, k.shard), SK: prefixExpiry + sep + at + sep + requestPK(k.requestID)}
}

// EventID returns the event's ID.
func (k ReturnsKey) EventID() string { return k.eventID }

// Key returns the table key: PK EVENT#<eventId>#RETURNS, SK RETURNS.
func (k ReturnsKey) Key() Key { return Key{PK: eventPK(k.eventID) + sep + skReturns, SK: skReturns} }

// EventID returns the event's ID.
func (k HoldEventKey) EventID() string { return k.eventID }

// Key returns the table key: PK HOLD_EVENTS, SK EVENT#<eventId>.
func (k HoldEventKey) Key() Key { return Key{PK: pkHoldEvents, SK: eventPK(k.eventID)} }

// EventID returns the event's ID.
func (k AuditKey) EventID() string { return k.eventID }

// At returns the time of the control.
func (k AuditKey) At() EpochMillis { return k.at }

// Suffix returns the suffix that keeps two entries of one millisecond apart.
func (k AuditKey) Suffix() string { return k.suffix }

// Key returns the table key: PK EVENT#<eventId>, SK AUDIT#<13-digit at>#<suffix>.
func (k AuditKey) Key() Key {
	at, _ := formatMillis(k.at) // checked by NewAuditKey
	return Key{PK: eventPK(k.eventID), SK: prefixAudit + sep + at + sep + k.suffix}
}

// EventID returns the event's ID.
func (k OperationKey) EventID() string { return k.eventID }

// Action returns the control: ActionAddCapacity or ActionCancel.
func (k OperationKey) Action() Action { return k.action }

// IdempotencyKey returns the key the control was applied under.
func (k OperationKey) IdempotencyKey() string { return k.idempotencyKey }

// Key returns the table key: PK EVENT#<eventId>, SK OP#<action>#<idempotencyKey>.
func (k OperationKey) Key() Key {
	return Key{PK: eventPK(k.eventID), SK: prefixOp + sep + string(k.action) + sep + k.idempotencyKey}
}

// CreatedAt returns the time the event was created.
func (k EventEntryKey) CreatedAt() EpochMillis { return k.createdAt }

// EventID returns the event's ID.
func (k EventEntryKey) EventID() string { return k.eventID }

// Key returns the table key: PK EVENTS, SK CAT#<13-digit createdAt>#EVENT#<eventId>.
func (k EventEntryKey) Key() Key {
	at, _ := formatMillis(k.createdAt) // checked by NewEventEntryKey
	return Key{PK: pkEvents, SK: prefixCreated + sep + at + sep + eventPK(k.eventID)}
}

// EventID returns the event's ID.
func (k ProgressKey) EventID() string { return k.eventID }

// Shard returns the progress partition the item is on.
func (k ProgressKey) Shard() int { return k.shard }

// UnixSecond returns the second counted, in seconds since the Unix epoch.
func (k ProgressKey) UnixSecond() int64 { return k.second }

// Key returns the table key: PK EVENT#<eventId>#PROGRESS#<shard>, SK
// T#<10-digit unix second>.
func (k ProgressKey) Key() Key {
	return Key{PK: progressPartition(k.eventID, k.shard), SK: skProgress + sep + fmt.Sprintf("%0*d", secondsDigits, k.second)}
}

// EventID returns the event's ID.
func (k WaitlistKey) EventID() string { return k.eventID }

// Shard returns the progress partition the item is on.
func (k WaitlistKey) Shard() int { return k.shard }

// UnixSecond returns the first second of the minute counted, in seconds since the
// Unix epoch.
func (k WaitlistKey) UnixSecond() int64 { return k.second }

// Key returns the table key: PK EVENT#<eventId>#PROGRESS#<shard>, SK
// W#<10-digit unix second, a minute's first>.
func (k WaitlistKey) Key() Key {
	return Key{PK: progressPartition(k.eventID, k.shard), SK: skWaitlist + sep + fmt.Sprintf("%0*d", secondsDigits, k.second)}
}

// EventID returns the event's ID.
func (k EntriesKey) EventID() string { return k.eventID }

// EntriesHash returns the hash of the set the chunk belongs to.
func (k EntriesKey) EntriesHash() string { return k.entriesHash }

// Chunk returns the chunk's number, from 0.
func (k EntriesKey) Chunk() int { return k.chunk }

// Key returns the table key: PK EVENT#<eventId>#ENTRIES#<chunk>, SK
// SET#<entriesHash>.
func (k EntriesKey) Key() Key {
	return Key{PK: eventPK(k.eventID) + sep + prefixEntries + sep + strconv.Itoa(k.chunk), SK: skEntrySet + sep + k.entriesHash}
}

// splitKey splits key text into exactly n parts, checks that the first is prefix and
// that every other part is a valid ID (timestamps pass the same check, and their
// callers check them further).
func splitKey(kind, text, prefix string, n int) ([]string, error) {
	parts := strings.Split(text, sep)
	if len(parts) != n {
		return nil, malformed(kind, text, fmt.Sprintf("want %d parts separated by '#', have %d", n, len(parts)))
	}
	if parts[0] != prefix {
		return nil, malformed(kind, text, "want prefix "+prefix+sep)
	}
	for i, p := range parts[1:] {
		if reason := idProblem(p); reason != "" {
			return nil, malformed(kind, text, fmt.Sprintf("part %d %s", i+1, reason))
		}
	}
	return parts, nil
}

// IndexKeys are the GSI attributes of a Request item, and only of a Request item
// (no other item is on an index): GSI1 lists a user's requests, GSI2 an event's, both in queue
// order. The request's put writes them, from its queuedAt, and nothing changes them.
// EventSettings.RequestIndexKeys builds them; ParseUserPartition, ParseEventPartition
// and ParseQueuedAtSortKey read them.
type IndexKeys struct {
	GSI1PK string `dynamodbav:"GSI1PK,omitempty"` // USER#<userId> (UserPartition)
	GSI1SK string `dynamodbav:"GSI1SK,omitempty"` // QAT#<orderAt>#REQ#<requestId> (QueuedAtSortKey)
	GSI2PK string `dynamodbav:"GSI2PK,omitempty"` // EVENT#<eventId>, or EVENT#<eventId>#<shard> (EventPartition)
	GSI2SK string `dynamodbav:"GSI2SK,omitempty"` // QAT#<orderAt>#REQ#<requestId> (QueuedAtSortKey)
}

// newIndexKeys returns the index keys of a request ordered at orderAt (its queuedAt,
// taken just before its put), for an event without index shards; EventSettings.RequestIndexKeys gives those of any event.
func newIndexKeys(eventID, userID, requestID string, orderAt EpochMillis) (IndexKeys, error) {
	return shardedIndexKeys(eventID, userID, requestID, orderAt, 1)
}

// shardedIndexKeys returns the index keys of a request of an event with shards index
// shards.
func shardedIndexKeys(eventID, userID, requestID string, orderAt EpochMillis, shards int) (IndexKeys, error) {
	user, err := NewUserPartition(userID)
	if err != nil {
		return IndexKeys{}, err
	}
	event, err := requestPartition(eventID, requestID, shards)
	if err != nil {
		return IndexKeys{}, err
	}
	order, err := NewQueuedAtSortKey(orderAt, requestID)
	if err != nil {
		return IndexKeys{}, err
	}
	return IndexKeys{
		GSI1PK: user.String(), GSI1SK: order.String(),
		GSI2PK: event.String(), GSI2SK: order.String(),
	}, nil
}
