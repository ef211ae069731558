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

// All key text of the table is built and parsed in this file and nowhere else.
//
//	Request          PK REQ#<requestId>              SK META
//	IdempotencyLock  PK IDEMP#<eventId>#<userId>     SK LOCK
//	EventConfig      PK EVENT#<eventId>              SK CONFIG
//	EventCapacity    PK EVENT#<eventId>              SK CAPACITY
//	  capacity shard PK EVENT#<eventId>#CAPACITY#<n> SK CAPACITY   (C > 1: a partition key each)
//	Draw record      PK EVENT#<eventId>              SK DRAW
//	operation marker PK EVENT#<eventId>              SK OP#<action>#<idempotencyKey>
//	StatusLog        PK REQ#<requestId>              SK LOG#<occurredAt>#<suffix>
//	GSI1 (Request)   GSI1PK USER#<userId>            GSI1SK QAT#<queuedAt>#REQ#<requestId>
//	GSI2 (Request)   GSI2PK EVENT#<eventId>          GSI2SK QAT#<queuedAt>#REQ#<requestId>
//
// IDs never contain the separator, so every key splits back into exactly the IDs it
// was built from.

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
	if len(s) != millisDigits {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return EpochMillis(n), err == nil
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

// Key is the primary key of one item of the table.
type Key struct {
	PK string `dynamodbav:"PK"`
	SK string `dynamodbav:"SK"`
}

// Entity reports which kind of item a table key belongs to, or an ErrMalformedKey
// error for key text that no key builder of this package could have produced.
func (k Key) Entity() (entity.Type, error) {
	if _, err := parseRequestKey(k); err == nil {
		return entity.Request, nil
	}
	if _, err := parseLockKey(k); err == nil {
		return entity.Idempotency, nil
	}
	if e, err := parseEventKey(k); err == nil {
		return map[eventItem]entity.Type{
			eventItemConfig: entity.Config, eventItemCapacity: entity.Capacity, eventItemDraw: entity.Draw,
		}[e.item], nil
	}
	if _, err := parseStatusLogKey(k); err == nil {
		return entity.StatusLog, nil
	}
	if _, err := parseHoldKey(k); err == nil {
		return entity.Hold, nil
	}
	if _, err := parseReturnsKey(k); err == nil {
		return entity.Returns, nil
	}
	if _, err := parseHoldEventKey(k); err == nil {
		return entity.HoldEvent, nil
	}
	if _, err := parseAuditKey(k); err == nil {
		return entity.Audit, nil
	}
	if _, err := parseOperationKey(k); err == nil {
		return entity.Operation, nil
	}
	if _, err := parseEventEntryKey(k); err == nil {
		return entity.EventEntry, nil
	}
	if _, err := parseProgressKey(k); err == nil {
		return entity.Progress, nil
	}
	return "", malformed("key", k.PK+" / "+k.SK, "not the key of any item of the table")
}

// requestKey is the key of a Request item: PK REQ#<requestId>, SK META.
type requestKey struct{ requestID string }

// newRequestKey returns the key of the request requestID, or an ErrInvalidID error.
func newRequestKey(requestID string) (requestKey, error) {
	if err := ValidateID("requestId", requestID); err != nil {
		return requestKey{}, err
	}
	return requestKey{requestID: requestID}, nil
}

// key returns the table key: PK REQ#<requestId>, SK META.
func (k requestKey) key() Key { return Key{PK: requestPK(k.requestID), SK: skRequest} }

// parseRequestKey reads a key that newRequestKey could have produced.
func parseRequestKey(key Key) (requestKey, error) {
	id, err := parseRequestPK(key.PK)
	if err != nil {
		return requestKey{}, err
	}
	if key.SK != skRequest {
		return requestKey{}, malformed("request SK", key.SK, "want "+skRequest)
	}
	return requestKey{requestID: id}, nil
}

func requestPK(requestID string) string { return prefixRequest + sep + requestID }

func parseRequestPK(pk string) (string, error) {
	parts, err := splitKey("request PK", pk, prefixRequest, 2)
	if err != nil {
		return "", err
	}
	return parts[1], nil
}

// lockKey is the key of an IdempotencyLock item: PK IDEMP#<eventId>#<userId>, SK LOCK.
type lockKey struct{ eventID, userID string }

// newLockKey returns the key of the lock of (eventID, userID), or an ErrInvalidID error.
func newLockKey(eventID, userID string) (lockKey, error) {
	if err := ValidateID("eventId", eventID); err != nil {
		return lockKey{}, err
	}
	if err := ValidateID("userId", userID); err != nil {
		return lockKey{}, err
	}
	return lockKey{eventID: eventID, userID: userID}, nil
}

// key returns the table key: PK IDEMP#<eventId>#<userId>, SK LOCK.
func (k lockKey) key() Key {
	return Key{PK: prefixLock + sep + k.eventID + sep + k.userID, SK: skLock}
}

// idempotencyKey returns the text stored in a Request's idempotencyKey field, the PK of
// its lock (IDEMP#<eventId>#<userId>).
func (k lockKey) idempotencyKey() string { return k.key().PK }

// parseLockKey reads a key that newLockKey could have produced.
func parseLockKey(key Key) (lockKey, error) {
	parts, err := splitKey("lock PK", key.PK, prefixLock, 3)
	if err != nil {
		return lockKey{}, err
	}
	if key.SK != skLock {
		return lockKey{}, malformed("lock SK", key.SK, "want "+skLock)
	}
	return lockKey{eventID: parts[1], userID: parts[2]}, nil
}

// eventItem names one of the items an event keeps under its partition EVENT#<eventId>.
type eventItem string

// The items of an event's partition; each is the item's SK.
const (
	eventItemConfig   eventItem = "CONFIG"   // EventConfig
	eventItemCapacity eventItem = "CAPACITY" // EventCapacity (FIRST_COME)
	eventItemDraw     eventItem = "DRAW"     // Draw record (LOTTERY)
)

func (i eventItem) valid() bool {
	return i == eventItemConfig || i == eventItemCapacity || i == eventItemDraw
}

// eventKey is the key of an item of an event: PK EVENT#<eventId>, SK CONFIG, CAPACITY
// or DRAW; or, for an event with capacity shards, PK EVENT#<eventId>#CAPACITY#<shard>,
// SK CAPACITY: each shard on a partition key of its own, since the items of one
// partition key share one partition until DynamoDB splits it for heat, minutes into
// the load, while a drop is decided in seconds.
type eventKey struct {
	eventID string
	item    eventItem
	shard   int // -1: the item itself, not one of its shards
}

// newEventKey returns the key of the item of the event eventID, or an ErrInvalidID
// error. An unknown item is an ErrInvalidOptions error.
func newEventKey(eventID string, item eventItem) (eventKey, error) {
	if err := ValidateID("eventId", eventID); err != nil {
		return eventKey{}, err
	}
	if !item.valid() {
		return eventKey{}, fmt.Errorf("%w: unknown event item %q", ErrInvalidOptions, string(item))
	}
	return eventKey{eventID: eventID, item: item, shard: -1}, nil
}

// capacityKeys returns the keys of a FIRST_COME event's capacity: its CAPACITY item,
// or with shards capacity shards (C > 1) the items of partitions
// EVENT#<eventId>#CAPACITY#0 to EVENT#<eventId>#CAPACITY#<C-1>.
func capacityKeys(eventID string, shards int) ([]eventKey, error) {
	k, err := newEventKey(eventID, eventItemCapacity)
	if err != nil || shards <= 1 {
		return []eventKey{k}, err
	}
	keys := make([]eventKey, shards)
	for i := range keys {
		keys[i] = eventKey{eventID: eventID, item: eventItemCapacity, shard: i}
	}
	return keys, nil
}

// key returns the table key: PK EVENT#<eventId>, SK the item; for a capacity shard
// PK EVENT#<eventId>#CAPACITY#<shard>, SK CAPACITY.
func (k eventKey) key() Key {
	pk := eventPK(k.eventID)
	if k.shard >= 0 {
		pk += sep + string(k.item) + sep + strconv.Itoa(k.shard)
	}
	return Key{PK: pk, SK: string(k.item)}
}

// parseEventKey reads a key that newEventKey or capacityKeys could have produced.
func parseEventKey(key Key) (eventKey, error) {
	if !eventItem(key.SK).valid() {
		return eventKey{}, malformed("event SK", key.SK, "want CONFIG, CAPACITY or DRAW")
	}
	k := eventKey{item: eventItem(key.SK), shard: -1}
	if strings.Count(key.PK, sep) == 1 {
		id, err := parseEventPK(key.PK)
		if err != nil {
			return eventKey{}, err
		}
		k.eventID = id
		return k, nil
	}
	parts, err := splitKey("capacity shard PK", key.PK, prefixEvent, 4)
	if err != nil {
		return eventKey{}, err
	}
	shard, err := strconv.Atoi(parts[3])
	if err != nil || parts[2] != string(eventItemCapacity) || k.item != eventItemCapacity || shard < 0 || strconv.Itoa(shard) != parts[3] {
		return eventKey{}, malformed("capacity shard PK", key.PK, "want EVENT#<eventId>#CAPACITY#<shard> with SK CAPACITY, shards numbered from 0")
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

// holdKey is the key of a Hold item, the expiry of a held seat for the hold sweep: PK
// EVENT#<eventId>#HOLDS#<shard> (the request's home shard among the event's capacity
// shards, so that the holds of a spike spread as its claims do), SK
// EXP#<13-digit expiresAt>#REQ#<requestId>: a Query of SK ≤ EXP#<now> finds the holds
// that ran out.
type holdKey struct {
	eventID   string
	shard     int
	expiresAt EpochMillis
	requestID string
}

// newHoldKey returns the key of the hold of requestID, on shard, running out at
// expiresAt.
func newHoldKey(eventID string, shard int, expiresAt EpochMillis, requestID string) (holdKey, error) {
	if err := ValidateID("eventId", eventID); err != nil {
		return holdKey{}, err
	}
	if err := ValidateID("requestId", requestID); err != nil {
		return holdKey{}, err
	}
	if _, err := formatMillis(expiresAt); err != nil {
		return holdKey{}, fmt.Errorf("holdExpiresAt: %w", err)
	}
	if shard < 0 {
		return holdKey{}, fmt.Errorf("%w: hold shard %d", ErrInvalidOptions, shard)
	}
	return holdKey{eventID: eventID, shard: shard, expiresAt: expiresAt, requestID: requestID}, nil
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

func (k holdKey) key() Key {
	at, _ := formatMillis(k.expiresAt) // checked by newHoldKey
	return Key{PK: holdPartition(k.eventID, k.shard), SK: prefixExpiry + sep + at + sep + requestPK(k.requestID)}
}

// parseHoldKey reads a key that newHoldKey could have produced.
func parseHoldKey(key Key) (holdKey, error) {
	pk, err := splitKey("hold PK", key.PK, prefixEvent, 4)
	if err != nil {
		return holdKey{}, err
	}
	shard, err := strconv.Atoi(pk[3])
	if err != nil || pk[2] != prefixHolds || shard < 0 || strconv.Itoa(shard) != pk[3] {
		return holdKey{}, malformed("hold PK", key.PK, "want EVENT#<eventId>#HOLDS#<shard>")
	}
	sk, err := splitKey("hold SK", key.SK, prefixExpiry, 4)
	if err != nil {
		return holdKey{}, err
	}
	at, ok := parseMillis(sk[1])
	if !ok || sk[2] != prefixRequest {
		return holdKey{}, malformed("hold SK", key.SK, "want EXP#<13-digit expiresAt>#REQ#<requestId>")
	}
	return holdKey{eventID: pk[1], shard: shard, expiresAt: at, requestID: sk[3]}, nil
}

// returnsKey is the key of an event's Returns item, the seats given back by holds
// that ended unpaid, for the waitlist: PK EVENT#<eventId>#RETURNS, SK RETURNS, on a
// partition key of its own (not the event's, which holds the CAPACITY item that a
// spike writes).
func returnsKey(eventID string) (Key, error) {
	if err := ValidateID("eventId", eventID); err != nil {
		return Key{}, err
	}
	return Key{PK: eventPK(eventID) + sep + skReturns, SK: skReturns}, nil
}

// eventEntryKey is the key of an event's entry in the event list: PK EVENTS, SK
// CAT#<13-digit createdAt>#EVENT#<eventId>, so that a Query lists the events in the
// order they were made.
type eventEntryKey struct {
	createdAt EpochMillis
	eventID   string
}

func newEventEntryKey(createdAt EpochMillis, eventID string) (eventEntryKey, error) {
	if err := ValidateID("eventId", eventID); err != nil {
		return eventEntryKey{}, err
	}
	if _, err := formatMillis(createdAt); err != nil {
		return eventEntryKey{}, err
	}
	return eventEntryKey{createdAt: createdAt, eventID: eventID}, nil
}

func (k eventEntryKey) key() Key {
	at, _ := formatMillis(k.createdAt) // checked by newEventEntryKey
	return Key{PK: pkEvents, SK: prefixCreated + sep + at + sep + eventPK(k.eventID)}
}

// parseEventEntryKey reads a key that newEventEntryKey could have produced.
func parseEventEntryKey(key Key) (eventEntryKey, error) {
	if key.PK != pkEvents {
		return eventEntryKey{}, malformed("event list PK", key.PK, "want "+pkEvents)
	}
	parts, err := splitKey("event list SK", key.SK, prefixCreated, 4)
	if err != nil {
		return eventEntryKey{}, err
	}
	at, ok := parseMillis(parts[1])
	if !ok || parts[2] != prefixEvent {
		return eventEntryKey{}, malformed("event list SK", key.SK, "want CAT#<13-digit createdAt>#EVENT#<eventId>")
	}
	return eventEntryKey{createdAt: at, eventID: parts[3]}, nil
}

// auditKey is the key of an AuditEntry: PK EVENT#<eventId>, SK
// AUDIT#<13-digit at>#<suffix>; the suffix keeps two controls of a millisecond apart.
type auditKey struct {
	eventID string
	at      EpochMillis
	suffix  string
}

func newAuditKey(eventID string, at EpochMillis, suffix string) (auditKey, error) {
	if err := ValidateID("eventId", eventID); err != nil {
		return auditKey{}, err
	}
	if err := ValidateID("suffix", suffix); err != nil {
		return auditKey{}, err
	}
	if _, err := formatMillis(at); err != nil {
		return auditKey{}, err
	}
	return auditKey{eventID: eventID, at: at, suffix: suffix}, nil
}

func (k auditKey) key() Key {
	at, _ := formatMillis(k.at) // checked by newAuditKey
	return Key{PK: eventPK(k.eventID), SK: prefixAudit + sep + at + sep + k.suffix}
}

// parseAuditKey reads a key that newAuditKey could have produced.
func parseAuditKey(key Key) (auditKey, error) {
	id, err := parseEventPK(key.PK)
	if err != nil {
		return auditKey{}, err
	}
	parts, err := splitKey("audit SK", key.SK, prefixAudit, 3)
	if err != nil {
		return auditKey{}, err
	}
	at, ok := parseMillis(parts[1])
	if !ok {
		return auditKey{}, malformed("audit SK", key.SK, "want AUDIT#<13-digit at>#<suffix>")
	}
	return auditKey{eventID: id, at: at, suffix: parts[2]}, nil
}

// operationKey is the key of an operation's marker, the record that an operator's
// control of an event's seats was applied under an idempotency key: PK
// EVENT#<eventId>, SK OP#<action>#<idempotencyKey>. The action (ActionAddCapacity,
// ActionCancel) keeps the keys of two kinds of control apart.
type operationKey struct {
	eventID, action, idempotencyKey string
}

// newOperationKey returns the key of the marker of action on eventID under
// idempotencyKey, which follows the rules of ValidateID.
func newOperationKey(eventID, action, idempotencyKey string) (operationKey, error) {
	if err := ValidateID("eventId", eventID); err != nil {
		return operationKey{}, err
	}
	if action != ActionAddCapacity && action != ActionCancel {
		return operationKey{}, fmt.Errorf("%w: no idempotency key for the control %q", ErrInvalidOptions, action)
	}
	if err := ValidateID("idempotencyKey", idempotencyKey); err != nil {
		return operationKey{}, err
	}
	return operationKey{eventID: eventID, action: action, idempotencyKey: idempotencyKey}, nil
}

func (k operationKey) key() Key {
	return Key{PK: eventPK(k.eventID), SK: prefixOp + sep + k.action + sep + k.idempotencyKey}
}

// parseOperationKey reads a key that newOperationKey could have produced.
func parseOperationKey(key Key) (operationKey, error) {
	id, err := parseEventPK(key.PK)
	if err != nil {
		return operationKey{}, err
	}
	parts, err := splitKey("operation SK", key.SK, prefixOp, 3)
	if err != nil {
		return operationKey{}, err
	}
	if parts[1] != ActionAddCapacity && parts[1] != ActionCancel {
		return operationKey{}, malformed("operation SK", key.SK, "want OP#ADD_CAPACITY#<key> or OP#CANCEL#<key>")
	}
	return operationKey{eventID: id, action: parts[1], idempotencyKey: parts[2]}, nil
}

// holdEventKey is the key of an event's entry in the hold registry: PK HOLD_EVENTS,
// SK EVENT#<eventId>.
func holdEventKey(eventID string) (Key, error) {
	if err := ValidateID("eventId", eventID); err != nil {
		return Key{}, err
	}
	return Key{PK: pkHoldEvents, SK: eventPK(eventID)}, nil
}

// parseHoldEventKey reads a key that holdEventKey could have produced.
func parseHoldEventKey(key Key) (string, error) {
	if key.PK != pkHoldEvents {
		return "", malformed("hold registry PK", key.PK, "want "+pkHoldEvents)
	}
	return parseEventPK(key.SK)
}

// parseReturnsKey reads a key that returnsKey could have produced.
func parseReturnsKey(key Key) (string, error) {
	parts, err := splitKey("returns PK", key.PK, prefixEvent, 3)
	if err != nil {
		return "", err
	}
	if parts[2] != skReturns || key.SK != skReturns {
		return "", malformed("returns key", key.PK+" / "+key.SK, "want EVENT#<eventId>#RETURNS / RETURNS")
	}
	return parts[1], nil
}

// statusLogKey is the key of a StatusLog item: PK REQ#<requestId>, SK
// LOG#<occurredAt>#<suffix>. The suffix keeps two transitions of the same millisecond
// apart; it follows the rules of ValidateID.
type statusLogKey struct {
	requestID  string
	occurredAt EpochMillis
	suffix     string
}

// newStatusLogKey returns the key of the log entry of requestID at occurredAt.
func newStatusLogKey(requestID string, occurredAt EpochMillis, suffix string) (statusLogKey, error) {
	if err := ValidateID("requestId", requestID); err != nil {
		return statusLogKey{}, err
	}
	if err := ValidateID("suffix", suffix); err != nil {
		return statusLogKey{}, err
	}
	if _, err := formatMillis(occurredAt); err != nil {
		return statusLogKey{}, fmt.Errorf("occurredAt: %w", err)
	}
	return statusLogKey{requestID: requestID, occurredAt: occurredAt, suffix: suffix}, nil
}

// key returns the table key: PK REQ#<requestId>, SK LOG#<13-digit occurredAt>#<suffix>.
func (k statusLogKey) key() Key {
	at, _ := formatMillis(k.occurredAt) // checked by newStatusLogKey
	return Key{PK: requestPK(k.requestID), SK: prefixLog + sep + at + sep + k.suffix}
}

// statusLogPrefix is the sort key prefix shared by all log entries of a request, for
// the Query begins_with(SK, "LOG#") of the "status logs" row.
const statusLogPrefix = prefixLog + sep

// parseStatusLogKey reads a key that newStatusLogKey could have produced.
func parseStatusLogKey(key Key) (statusLogKey, error) {
	id, err := parseRequestPK(key.PK)
	if err != nil {
		return statusLogKey{}, err
	}
	parts, err := splitKey("status log SK", key.SK, prefixLog, 3)
	if err != nil {
		return statusLogKey{}, err
	}
	at, ok := parseMillis(parts[1])
	if !ok {
		return statusLogKey{}, malformed("status log SK", key.SK, "occurredAt is not 13 digits")
	}
	return statusLogKey{requestID: id, occurredAt: at, suffix: parts[2]}, nil
}

// userPartition is the GSI1 partition key of a user's requests: USER#<userId>.
type userPartition struct{ userID string }

// newUserPartition returns the GSI1 partition of userID, or an ErrInvalidID error.
func newUserPartition(userID string) (userPartition, error) {
	if err := ValidateID("userId", userID); err != nil {
		return userPartition{}, err
	}
	return userPartition{userID: userID}, nil
}

// text returns the key text USER#<userId>.
func (p userPartition) text() string { return prefixUser + sep + p.userID }

// parseUserPartition reads text that newUserPartition could have produced.
func parseUserPartition(s string) (userPartition, error) {
	parts, err := splitKey("user partition", s, prefixUser, 2)
	if err != nil {
		return userPartition{}, err
	}
	return userPartition{userID: parts[1]}, nil
}

// eventPartition is a GSI2 partition key of an event's requests: EVENT#<eventId>,
// the same text as the PK of the event's own items (which carry no GSI attributes and
// so never appear on GSI2); or, for an event with index shards (K > 1),
// EVENT#<eventId>#<shard>, shard 0 to K-1 picked by the request's ID.
type eventPartition struct {
	eventID string
	shard   int // -1: the one partition of an event without index shards
}

// newEventPartition returns the GSI2 partition of eventID without index shards, or
// an ErrInvalidID error.
func newEventPartition(eventID string) (eventPartition, error) {
	if err := ValidateID("eventId", eventID); err != nil {
		return eventPartition{}, err
	}
	return eventPartition{eventID: eventID, shard: -1}, nil
}

// eventPartitions returns every GSI2 partition of an event with shards index shards.
func eventPartitions(eventID string, shards int) ([]eventPartition, error) {
	p, err := newEventPartition(eventID)
	if err != nil || shards <= 1 {
		return []eventPartition{p}, err
	}
	parts := make([]eventPartition, shards)
	for i := range parts {
		parts[i] = eventPartition{eventID: eventID, shard: i}
	}
	return parts, nil
}

// requestPartition returns the GSI2 partition of a request of an event with shards
// index shards: its shard is FNV-1a of the request ID, modulo shards.
func requestPartition(eventID, requestID string, shards int) (eventPartition, error) {
	p, err := newEventPartition(eventID)
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

// text returns the key text EVENT#<eventId>, or EVENT#<eventId>#<shard>.
func (p eventPartition) text() string {
	if p.shard < 0 {
		return eventPK(p.eventID)
	}
	return eventPK(p.eventID) + sep + strconv.Itoa(p.shard)
}

// parseEventPartition reads text that newEventPartition or eventPartitions could have
// produced.
func parseEventPartition(s string) (eventPartition, error) {
	if strings.Count(s, sep) == 1 {
		id, err := parseEventPK(s)
		return eventPartition{eventID: id, shard: -1}, err
	}
	parts, err := splitKey("event partition", s, prefixEvent, 3)
	if err != nil {
		return eventPartition{}, err
	}
	shard, err := strconv.Atoi(parts[2])
	if err != nil || shard < 0 || strconv.Itoa(shard) != parts[2] {
		return eventPartition{}, malformed("event partition", s, "the shard is not a number")
	}
	return eventPartition{eventID: parts[1], shard: shard}, nil
}

// queueKey is the sort key of a request on GSI1 and GSI2:
// QAT#<13-digit queuedAt>#REQ#<requestId>. It is written once, when the order time is
// known, and never changed, so string order is queue order.
type queueKey struct {
	queuedAt  EpochMillis
	requestID string
}

// newQueueKey returns the queue-order sort key of requestID queued at queuedAt.
func newQueueKey(queuedAt EpochMillis, requestID string) (queueKey, error) {
	if err := ValidateID("requestId", requestID); err != nil {
		return queueKey{}, err
	}
	if _, err := formatMillis(queuedAt); err != nil {
		return queueKey{}, fmt.Errorf("queuedAt: %w", err)
	}
	return queueKey{queuedAt: queuedAt, requestID: requestID}, nil
}

// text returns the key text QAT#<13-digit queuedAt>#REQ#<requestId>.
func (k queueKey) text() string {
	at, _ := formatMillis(k.queuedAt) // checked by newQueueKey
	return prefixQueued + sep + at + sep + requestPK(k.requestID)
}

// parseQueueKey reads text that newQueueKey could have produced.
func parseQueueKey(s string) (queueKey, error) {
	parts, err := splitKey("queue key", s, prefixQueued, 4)
	if err != nil {
		return queueKey{}, err
	}
	at, ok := parseMillis(parts[1])
	if !ok {
		return queueKey{}, malformed("queue key", s, "queuedAt is not 13 digits")
	}
	if parts[2] != prefixRequest {
		return queueKey{}, malformed("queue key", s, "want REQ before the request ID")
	}
	return queueKey{queuedAt: at, requestID: parts[3]}, nil
}

// queuedBefore returns the sort-key bound below which lie exactly the queue keys of
// requests queued before at: QAT#<13-digit at>. (A key of a request queued at `at`
// has the bound as a proper prefix and so sorts after it.)
func queuedBefore(at EpochMillis) (string, error) {
	s, err := formatMillis(at)
	if err != nil {
		return "", err
	}
	return prefixQueued + sep + s, nil
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
type IndexKeys struct {
	GSI1PK string `dynamodbav:"GSI1PK,omitempty"` // USER#<userId>
	GSI1SK string `dynamodbav:"GSI1SK,omitempty"` // QAT#<orderAt>#REQ#<requestId>
	GSI2PK string `dynamodbav:"GSI2PK,omitempty"` // EVENT#<eventId>, or EVENT#<eventId>#<shard>
	GSI2SK string `dynamodbav:"GSI2SK,omitempty"` // QAT#<orderAt>#REQ#<requestId>
}

// newIndexKeys returns the index keys of a request ordered at orderAt (its queuedAt,
// taken just before its put), for an event without index shards; EventConfig.RequestIndexKeys gives those of any event.
func newIndexKeys(eventID, userID, requestID string, orderAt EpochMillis) (IndexKeys, error) {
	return shardedIndexKeys(eventID, userID, requestID, orderAt, 1)
}

// shardedIndexKeys returns the index keys of a request of an event with shards index
// shards.
func shardedIndexKeys(eventID, userID, requestID string, orderAt EpochMillis, shards int) (IndexKeys, error) {
	user, err := newUserPartition(userID)
	if err != nil {
		return IndexKeys{}, err
	}
	event, err := requestPartition(eventID, requestID, shards)
	if err != nil {
		return IndexKeys{}, err
	}
	order, err := newQueueKey(orderAt, requestID)
	if err != nil {
		return IndexKeys{}, err
	}
	return IndexKeys{
		GSI1PK: user.text(), GSI1SK: order.text(),
		GSI2PK: event.text(), GSI2SK: order.text(),
	}, nil
}
