package asyncevent

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/asyncevent/asyncevent/internal/ingest"
)

// MessageVersion is the version of the message body this library writes.
const MessageVersion = 1

// ErrMalformedMessage reports a message body that does not decode into a valid
// Message: not JSON, an unknown version, a missing or invalid field.
var ErrMalformedMessage = errors.New("asyncevent: malformed message")

// Message is the body of the message ingest sends for a request, encoded as JSON:
//
//	{"v":1,"requestId":"…","eventId":"…","userId":"…","eventType":"FIRST_COME","requestedAt":1795421039191,"capacityShards":8}
type Message struct {
	V           int         `json:"v"`
	RequestID   string      `json:"requestId"`
	EventID     string      `json:"eventId"`
	UserID      string      `json:"userId"`
	EventType   EventType   `json:"eventType"`
	RequestedAt EpochMillis `json:"requestedAt"`
	// CapacityShards is the FIRST_COME event's number of capacity shards (its
	// EventSettings.CapacityShards, 1 for the single CAPACITY item), so that a worker new
	// to the event finds the request's home shard without reading the event's config;
	// 0 when the sender did not know it (the worker reads the config). It never
	// differs from the event's: a message that says otherwise is malformed.
	CapacityShards int `json:"capacityShards,omitempty"`
	// PrequeueUntil is the StartsAt of a FIRST_COME event with a pre-queue (the
	// requests queued before it are its entries), so that a worker holds the message
	// back until the pre-queue is served; 0 for an event without one, or when the
	// sender did not know the event (CapacityShards 0: the worker reads the config).
	PrequeueUntil EpochMillis `json:"prequeueUntil,omitempty"`
	// Ranked is set for a FIRST_COME event whose admission is ranked
	// (EventSettings.Admission), so that a worker leaves the request to the
	// admission without reading the event's config; a worker of a version without
	// ranked admissions refuses such a message as malformed.
	Ranked bool `json:"ranked,omitempty"`
	// QueuedAt is the request's queuedAt, of a ranked event's message: with the
	// requestId it is the request's rank, so that a worker waits for the admission
	// without reading the request first. 0 when the sender did not know it.
	QueuedAt EpochMillis `json:"queuedAt,omitempty"`

	// late is set by the worker for a request of a ranked event that the admission
	// passed without seeing: a refusal for want of a seat is then ResultLate.
	late bool
}

// Ref returns the reference of the message's request.
func (m Message) Ref() RequestRef {
	return RequestRef{RequestID: m.RequestID, EventID: m.EventID, UserID: m.UserID}
}

// messageOf returns the message of a request, with its event's capacity shards when
// the client's cache of event configs holds the event (ingest's always does).
func (c *Client) messageOf(r *Request) Message {
	m := Message{
		V: MessageVersion, RequestID: r.RequestID, EventID: r.EventID, UserID: r.UserID,
		EventType: r.EventType, RequestedAt: r.RequestedAt,
	}
	if cfg, _, ok := c.events.Peek(r.EventID); ok && r.EventType == FirstCome && cfg.EventType == FirstCome {
		m.CapacityShards = max(cfg.CapacityShards, 1)
		m.PrequeueUntil = cfg.prequeueUntil()
		if m.Ranked = cfg.Admission == AdmissionRanked; m.Ranked {
			m.QueuedAt = r.QueuedAt
		}
	}
	return m
}

// EncodeMessage returns the JSON body of m, after checking it as DecodeMessage would.
func EncodeMessage(m Message) ([]byte, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// DecodeMessage reads a message body. Anything but a valid version-1 message is an
// ErrMalformedMessage error; when the body names a valid requestId, the returned
// Message carries it even with the error, so the request can be marked FAILED_SERDE.
func DecodeMessage(body []byte) (Message, error) {
	var m Message
	switch err := ingest.DecodeBody(body, &m); {
	case errors.Is(err, ingest.ErrTrailingData):
		return m, fmt.Errorf("%w: %w", ErrMalformedMessage, err)
	case err != nil:
		return Message{RequestID: ingest.SalvageField(body, "requestId", validRequestID)}, fmt.Errorf("%w: %w", ErrMalformedMessage, err)
	}
	if err := m.validate(); err != nil {
		if !validRequestID(m.RequestID) {
			m = Message{}
		}
		return m, err
	}
	return m, nil
}

func validRequestID(id string) bool { return ValidateID("requestId", id) == nil }

func (m Message) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrMalformedMessage, fmt.Sprintf(format, args...))
	}
	if m.V != MessageVersion {
		return bad("version %d, want %d", m.V, MessageVersion)
	}
	for _, id := range []struct{ field, value string }{
		{"requestId", m.RequestID}, {"eventId", m.EventID}, {"userId", m.UserID},
	} {
		if err := ValidateID(id.field, id.value); err != nil {
			return bad("%v", err)
		}
	}
	if !m.EventType.Valid() {
		return bad("eventType %q", string(m.EventType))
	}
	if _, err := formatMillis(m.RequestedAt); err != nil || m.RequestedAt == 0 {
		return bad("requestedAt %d", int64(m.RequestedAt))
	}
	if m.CapacityShards < 0 || m.CapacityShards > maxCapacityShards || m.CapacityShards > 0 && m.EventType != FirstCome {
		return bad("capacityShards %d of a %s event", m.CapacityShards, m.EventType)
	}
	if _, err := formatMillis(m.PrequeueUntil); err != nil || m.PrequeueUntil < 0 || m.PrequeueUntil != 0 && m.EventType != FirstCome {
		return bad("prequeueUntil %d of a %s event", int64(m.PrequeueUntil), m.EventType)
	}
	if m.Ranked && (m.EventType != FirstCome || m.PrequeueUntil != 0) {
		return bad("ranked of a %s event", m.EventType)
	}
	if _, err := formatMillis(m.QueuedAt); err != nil || m.QueuedAt < 0 || m.QueuedAt != 0 && (!m.Ranked || m.QueuedAt < m.RequestedAt) {
		return bad("queuedAt %d of a message not ranked, or before its requestedAt", int64(m.QueuedAt))
	}
	return nil
}
