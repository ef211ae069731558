package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/internal/listing"
)

// The event list: an item collection of one entry per event (PK EVENTS, SK
// CAT#<createdAt>#EVENT#<eventId>), so that the operator's screen lists the events
// newest first without a Scan and without index keys on anything but requests.
// CreateEvent writes the entry just before its own transaction (which holds up to 100
// items: the config and 99 capacity shards leave no room); an entry whose event was
// not made (the transaction refused, the process died between the two) is passed
// over by ListEvents, which reads each listed event's config anyway, and deleted.

// eventListing is an event's entry in the event list.
type eventListing struct {
	EntityType entity.Type `dynamodbav:"entityType"` // EVENT_ENTRY
	EventID    string      `dynamodbav:"eventId"`
	EventType  EventType   `dynamodbav:"eventType"`
	CreatedAt  EpochMillis `dynamodbav:"createdAt"`
}

type eventEntryItem struct {
	Key
	eventListing
}

var eventEntryRow = row{name: "event listed", method: "CreateEvent", item: entity.EventEntry, op: opPut, cond: notExists}

// listEvent writes a new event's entry in the event list, the "event listed" row
// (PutItem PK EVENTS, SK CAT#<createdAt>#EVENT#<eventId>, condition
// attribute_not_exists(PK)).
func (c *Client) listEvent(ctx context.Context, cfg *eventItem) error {
	k, err := NewEventEntryKey(cfg.CreatedAt, cfg.EventID)
	if err != nil {
		return err
	}
	item := eventEntryItem{Key: k.Key(), eventListing: eventListing{
		EntityType: entity.EventEntry, EventID: cfg.EventID, EventType: cfg.EventType, CreatedAt: cfg.CreatedAt,
	}}
	err = c.do(ctx, txOptions{}, []write{{row: &eventEntryRow, key: item.Key, item: item}})
	var lost *conditionLost
	if errors.As(err, &lost) {
		return nil // the same entry: a retry of the same call
	}
	return err
}

// EventState is what an event is doing now, for the operator's screen.
type EventState string

// The event states.
const (
	StateScheduled EventState = "SCHEDULED" // before startsAt (before prequeueOpensAt, with a pre-queue)
	StatePrequeue  EventState = "PREQUEUE"  // a FIRST_COME event's pre-queue takes clicks, until startsAt
	StateOpen      EventState = "OPEN"      // taking clicks
	StatePaused    EventState = "PAUSED"    // ingest paused by an operator
	StateClosed    EventState = "CLOSED"    // past its end (a lottery: its cutoff), until drawn
	StateDrawing   EventState = "DRAWING"   // a lottery whose draw runs
	StateAnnounced EventState = "ANNOUNCED" // a lottery drawn
)

// StateAt returns the event's state at now.
func (e *Event) StateAt(now EpochMillis) EventState {
	switch {
	case e.EventType == Lottery && e.Phase == PhaseAnnounced:
		return StateAnnounced
	case e.Phase == PhaseDrawing:
		return StateDrawing // a lottery's draw, or a pre-queue being served
	case e.closesAt() != 0 && now > e.closesAt(), e.ClosedAt != 0 && now >= e.ClosedAt:
		return StateClosed
	case e.opensAt() != 0 && now < e.opensAt():
		return StateScheduled
	case e.prequeueUntil() != 0 && now < e.StartsAt:
		return StatePrequeue
	case e.Paused:
		return StatePaused
	}
	return StateOpen
}

// EventSummary is one event of the event list.
type EventSummary struct {
	Event Event
	State EventState
	// SeatsLeft, of a FIRST_COME event, is the seats its capacity shards hold (the
	// sum of its capacity items' capacityRemaining) plus the seats on its pool
	// (added once the shards were empty, or given back, not yet taken); nil for a
	// LOTTERY.
	SeatsLeft *int64
}

// EventPage is one page of the event list.
type EventPage struct {
	Events     []EventSummary
	NextCursor string // "" on the last page
}

// strayEntryAge is how old an entry of the event list without its event must be to
// be deleted: younger, its CreateEvent may still be under way (the entry is written
// just before the event's transaction, which ends within this).
const strayEntryAge = time.Minute

// The page sizes of the event list.
const (
	defaultEventsPageLimit = 20
	maxEventsPageLimit     = 100
)

// ListEvents lists the events newest first, one page at a time: the "event list" row,
// Query PK EVENTS, ScanIndexForward = false, page.Limit 20 by default (at most 100), then for each event its
// config (GetItem, strongly consistent) and, for a FIRST_COME event, its capacity
// (GetCapacity: one GetItem per capacity shard; with holds or seats on the pool, a
// GetItem of its pool, PK EVENT#<eventId>#RETURNS). An entry whose event does not exist,
// or was made at another time (an entry of a CreateEvent that failed), is passed over,
// and deleted once it is a minute old (younger, its CreateEvent may be under way).
// The cursor is opaque; one of another listing is ErrInvalidCursor.
func (c *Client) ListEvents(ctx context.Context, page PageOptions) (*EventPage, error) {
	limit, err := listing.Limit(page.Limit, defaultEventsPageLimit, maxEventsPageLimit, ErrInvalidOptions)
	if err != nil {
		return nil, err
	}
	expr, err := expression.NewBuilder().WithKeyCondition(expression.Key(attrPK).Equal(expression.Value(pkEvents))).Build()
	if err != nil {
		return nil, err
	}
	in := c.query("", expr)
	in.ScanIndexForward, in.Limit = aws.Bool(false), aws.Int32(int32(limit))
	if page.Cursor != "" {
		start, err := decodeEventsCursor(page.Cursor)
		if err != nil {
			return nil, err
		}
		in.ExclusiveStartKey = start
	}
	out, err := c.db.Query(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	var entries []eventEntryItem
	if err := attributevalue.UnmarshalListOfMaps(out.Items, &entries); err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	result := &EventPage{Events: []EventSummary{}}
	now := c.opts.Clock()
	for _, e := range entries {
		cfg, err := c.getEvent(ctx, e.EventID)
		switch {
		case errors.Is(err, ErrEventNotFound) || err == nil && cfg.CreatedAt != e.CreatedAt:
			if now.Sub(e.CreatedAt.Time()) > strayEntryAge {
				_ = c.do(ctx, txOptions{}, []write{{row: &eventEntryGoneRow, key: e.Key}}) // a stray entry: the next listing may try again
			}
			continue
		case err != nil:
			return nil, err
		}
		s := EventSummary{Event: cfg.Event, State: cfg.StateAt(MillisOf(now))}
		if cfg.EventType == FirstCome {
			capacity, err := c.GetCapacity(ctx, cfg.EventID)
			if err != nil && !errors.Is(err, ErrNotFound) {
				return nil, err
			}
			pool, err := c.poolSeats(ctx, cfg)
			if err != nil {
				return nil, err
			}
			if capacity != nil {
				s.SeatsLeft = aws.Int64(capacity.CapacityRemaining + pool)
			}
		}
		result.Events = append(result.Events, s)
	}
	if len(out.LastEvaluatedKey) > 0 {
		if result.NextCursor, err = listing.EncodeKey(out.LastEvaluatedKey); err != nil {
			return nil, err
		}
	}
	return result, nil
}

var eventEntryGoneRow = row{name: "stray event entry", method: "ListEvents", item: entity.EventEntry, op: opDelete}

// decodeEventsCursor reads a cursor ListEvents handed out: the key of an entry of the
// event list.
func decodeEventsCursor(cursor string) (map[string]types.AttributeValue, error) {
	pk, sk, err := listing.Codec{PK: attrPK, SK: attrSK, Invalid: ErrInvalidCursor}.DecodeTableKey(cursor)
	if err != nil {
		return nil, err
	}
	key := Key{PK: pk, SK: sk}
	if _, err := ParseEventEntryKey(key); err != nil {
		return nil, fmt.Errorf("%w: not a cursor of the event list", ErrInvalidCursor)
	}
	return avKey(key), nil
}
