package asyncevent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Queue carries one message per request from ingest to the workers, with
// at-least-once delivery. SQSQueue is the real one; MemoryQueue serves examples and
// unit tests.
type Queue interface {
	// Send puts one message on the queue. It returns only once the queue has it.
	Send(ctx context.Context, m OutgoingMessage) error

	// Receive waits up to wait for at most max messages and hides each one it returns
	// from other receivers for visibility (zero: the queue's default). It returns an
	// empty slice, not an error, when nothing came in time.
	Receive(ctx context.Context, max int, wait, visibility time.Duration) ([]Delivery, error)

	// Delete removes delivered messages by their receipts, once their work is done.
	Delete(ctx context.Context, receipts ...string) error

	// ChangeVisibility hides a delivered message for timeout from now: longer while its
	// work goes on, or zero to make it visible again at once. A receipt that no longer
	// holds its message in flight is ErrStaleReceipt.
	ChangeVisibility(ctx context.Context, receipt string, timeout time.Duration) error
}

// CancelSafeQueue is a Queue whose Receive takes no message that it does not return,
// even when its ctx ends during a long poll: MemoryQueue is one. A stopping Worker
// cancels such a receive at once. An SQS long poll is not one: SQS (and fauxqs) may
// hand messages to a request whose client has gone, and they stay hidden for their
// visibility timeout under receipts nobody holds; so a stopping Worker lets any other
// queue's receive run out its wait and releases what it returns.
type CancelSafeQueue interface {
	Queue
	// ReceiveIsCancelSafe reports whether cancelling Receive's ctx can leave no
	// message hidden.
	ReceiveIsCancelSafe() bool
}

// Groups splits a received batch into the runs that keep a FIFO queue's order:
// the deliveries of one message group, in receive order, form one run; each delivery
// without a group is a run of its own. It returns indexes into ds, the runs in the
// order of their first delivery. The Worker, Processor.ProcessMessages and package
// awslambda process the runs at once and each run's deliveries one after another,
// and do not start a run's later deliveries once one of them is not done: they come
// back, behind it, in order.
func Groups(ds []Delivery) [][]int {
	var runs [][]int
	at := map[string]int{} // group → its run in runs
	for i, d := range ds {
		if d.GroupID == "" {
			runs = append(runs, []int{i})
			continue
		}
		r, ok := at[d.GroupID]
		if !ok {
			r = len(runs)
			at[d.GroupID] = r
			runs = append(runs, nil)
		}
		runs[r] = append(runs[r], i)
	}
	return runs
}

// OutgoingMessage is a message to send.
type OutgoingMessage struct {
	Body []byte
	// GroupID and DeduplicationID are used by FIFO queues (MessageGroupId and
	// MessageDeduplicationId) and ignored by standard ones. Ingest sets them to the
	// eventId and the requestId.
	GroupID         string
	DeduplicationID string
	// Attributes travel with the message beside its body, as string message
	// attributes on SQS (which allows at most 10 a message, counted in its size) and
	// unchanged on a MemoryQueue. Ingest sends none of its own; an Options.Observer
	// may add some, such as a W3C traceparent. Default: none.
	Attributes map[string]string
}

// Delivery is one receipt of a message. The same message can be delivered more than
// once; each delivery has its own receipt.
type Delivery struct {
	MessageID    string
	Receipt      string
	Body         []byte
	ReceiveCount int       // 1 on the first delivery
	SentAt       time.Time // when the queue accepted the message (SQS SentTimestamp)
	// GroupID is the message group of a FIFO queue's message (SQS MessageGroupId);
	// empty on a standard queue. Deliveries of one group are processed one after
	// another, in receive order (see Groups).
	GroupID string
	// Attributes are the message's OutgoingMessage.Attributes (SQS: its String
	// message attributes); nil when it has none.
	Attributes map[string]string
}

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
	// EventConfig.CapacityShards, 1 for the single CAPACITY item), so that a worker new
	// to the event finds the request's home shard without reading the event's config;
	// 0 when the sender did not know it (the worker reads the config). It never
	// differs from the event's: a message that says otherwise is malformed.
	CapacityShards int `json:"capacityShards,omitempty"`
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
	if cfg, _, ok := c.events.peek(r.EventID); ok && r.EventType == FirstCome && cfg.EventType == FirstCome {
		m.CapacityShards = max(cfg.CapacityShards, 1)
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
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return Message{RequestID: salvageRequestID(body)}, fmt.Errorf("%w: %w", ErrMalformedMessage, err)
	}
	if dec.More() {
		return m, fmt.Errorf("%w: data after the JSON object", ErrMalformedMessage)
	}
	if err := m.validate(); err != nil {
		if ValidateID("requestId", m.RequestID) != nil {
			m = Message{}
		}
		return m, err
	}
	return m, nil
}

// salvageRequestID reads the top-level "requestId" of a body that does not decode
// whole (cut short, a field of the wrong type), or returns "" when it names no valid
// one before the damage.
func salvageRequestID(body []byte) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return ""
		}
		if key == "requestId" {
			v, err := dec.Token()
			if id, ok := v.(string); ok && err == nil && ValidateID("requestId", id) == nil {
				return id
			}
			return ""
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return ""
		}
	}
	return ""
}

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
	return nil
}
