package asyncevent

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"
)

// EventConfig is the EventConfig item of an event (PK EVENT#<eventId>, SK CONFIG):
// what kind of event it is, when it is open, and its capacity or lottery settings.
type EventConfig struct {
	EntityType EntityType `dynamodbav:"entityType"` // CONFIG
	EventID    string     `dynamodbav:"eventId"`
	EventType  EventType  `dynamodbav:"eventType"`
	Name       string     `dynamodbav:"name,omitempty"`

	// The window in which ingest accepts participations; zero means unbounded.
	StartsAt EpochMillis `dynamodbav:"startsAt,omitempty"`
	EndsAt   EpochMillis `dynamodbav:"endsAt,omitempty"`

	// FIRST_COME: the number of winners N, also held by the event's EventCapacity.
	CapacityTotal int64 `dynamodbav:"capacityTotal,omitempty"`

	// LOTTERY: the number of winners K, the entry cutoff, the planned and the actual
	// announcement, and SHA-256 of the secret draw seed (hex), published before the
	// draw so that the seed revealed by the draw can be checked against it.
	WinnerCount     int64       `dynamodbav:"winnerCount,omitempty"`
	LotteryCutoffAt EpochMillis `dynamodbav:"lotteryCutoffAt,omitempty"`
	AnnounceAt      EpochMillis `dynamodbav:"announceAt,omitempty"`
	AnnouncedAt     EpochMillis `dynamodbav:"announcedAt,omitempty"`
	SeedCommitment  string      `dynamodbav:"seedCommitment,omitempty"`

	// Phase is a LOTTERY event's phase: COLLECTING until the draw starts, DRAWING
	// while it finalises the entries, ANNOUNCED once every entry has its result.
	Phase UIPhase `dynamodbav:"phase,omitempty"`

	CreatedAt EpochMillis `dynamodbav:"createdAt"`
}

type configItem struct {
	Key
	EventConfig
}

// createEventRow writes each item of a new event, together in one transaction.
var createEventRow = row{name: "create event", method: "CreateEvent", item: EntityConfig, op: opPut, cond: &notExists}

// closesAt returns when ingest stops accepting participations: endsAt, and for a
// LOTTERY the cutoff if that is earlier; 0 when the event never closes.
func (e *EventConfig) closesAt() EpochMillis {
	end := e.EndsAt
	if e.EventType == Lottery && e.LotteryCutoffAt != 0 && (end == 0 || e.LotteryCutoffAt < end) {
		end = e.LotteryCutoffAt
	}
	return end
}

// checkOpen reports whether the event takes participations at now: ErrEventNotOpen
// before startsAt, ErrEventClosed after it closes.
func (e *EventConfig) checkOpen(now EpochMillis) error {
	if e.StartsAt != 0 && now < e.StartsAt {
		return fmt.Errorf("%w: %s opens at %s", ErrEventNotOpen, e.EventID, e.StartsAt.Time().Format(time.RFC3339Nano))
	}
	if end := e.closesAt(); end != 0 && now > end {
		return fmt.Errorf("%w: %s closed at %s", ErrEventClosed, e.EventID, end.Time().Format(time.RFC3339Nano))
	}
	return nil
}

// validate checks a new event's settings.
func (e *EventConfig) validate() error {
	if err := ValidateID("eventId", e.EventID); err != nil {
		return err
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidEvent, e.EventID, fmt.Sprintf(format, args...))
	}
	for _, t := range []struct {
		name string
		at   EpochMillis
	}{{"startsAt", e.StartsAt}, {"endsAt", e.EndsAt}, {"lotteryCutoffAt", e.LotteryCutoffAt}, {"announceAt", e.AnnounceAt}} {
		if _, err := formatMillis(t.at); err != nil {
			return bad("%s: %v", t.name, err)
		}
	}
	if e.StartsAt != 0 && e.EndsAt != 0 && e.EndsAt <= e.StartsAt {
		return bad("endsAt must be after startsAt")
	}
	if len(e.Name) > maxNameLength {
		return bad("name is %d bytes, longer than %d", len(e.Name), maxNameLength)
	}
	switch e.EventType {
	case FirstCome:
		switch {
		case e.CapacityTotal < 1:
			return bad("a FIRST_COME event needs capacityTotal ≥ 1")
		case e.WinnerCount != 0 || e.LotteryCutoffAt != 0 || e.AnnounceAt != 0:
			return bad("winnerCount, lotteryCutoffAt and announceAt are for LOTTERY events")
		}
	case Lottery:
		switch {
		case e.WinnerCount < 1:
			return bad("a LOTTERY event needs winnerCount ≥ 1")
		case e.LotteryCutoffAt == 0:
			return bad("a LOTTERY event needs lotteryCutoffAt")
		case e.CapacityTotal != 0:
			return bad("capacityTotal is for FIRST_COME events")
		case e.StartsAt != 0 && e.LotteryCutoffAt <= e.StartsAt:
			return bad("lotteryCutoffAt must be after startsAt")
		case e.AnnounceAt != 0 && e.AnnounceAt < e.LotteryCutoffAt:
			return bad("announceAt must not be before lotteryCutoffAt")
		}
	default:
		return bad("eventType %q, want FIRST_COME or LOTTERY", string(e.EventType))
	}
	return nil
}

// maxNameLength bounds an event's display name.
const maxNameLength = 256

// CreateEvent stores a new event, the "create event" row: its EventConfig (PK EVENT#<eventId>, SK
// CONFIG) and, in the same TransactWriteItems, a FIRST_COME event's EventCapacity (SK
// CAPACITY, capacityRemaining = capacityTotal) or a LOTTERY event's sealed Draw record
// (SK DRAW, holding a fresh secret seed whose SHA-256 becomes the config's
// seedCommitment). Condition on every item: attribute_not_exists(PK); when it fails
// the event exists already and the error is ErrEventExists, with nothing changed.
// Invalid settings are an ErrInvalidEvent or ErrInvalidID error. It returns the stored
// config.
func (c *Client) CreateEvent(ctx context.Context, cfg EventConfig) (*EventConfig, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	now := c.now()
	cfg.EntityType, cfg.CreatedAt, cfg.AnnouncedAt, cfg.SeedCommitment, cfg.Phase = EntityConfig, now, 0, "", ""
	configKey, _ := NewEventKey(cfg.EventID, EventItemConfig) // ID checked by validate

	var second any
	switch cfg.EventType {
	case FirstCome:
		key, _ := NewEventKey(cfg.EventID, EventItemCapacity)
		second = capacityItem{Key: key.Key(), EventCapacity: EventCapacity{
			EntityType: EntityCapacity, EventID: cfg.EventID,
			CapacityTotal: cfg.CapacityTotal, CapacityRemaining: cfg.CapacityTotal, UpdatedAt: now,
		}}
	case Lottery:
		seed, err := newSeed()
		if err != nil {
			return nil, fmt.Errorf("create event %s: %w", cfg.EventID, err)
		}
		cfg.SeedCommitment, cfg.Phase = seedCommitment(seed), PhaseCollecting
		key, _ := NewEventKey(cfg.EventID, EventItemDraw)
		second = drawItem{Key: key.Key(), DrawRecord: DrawRecord{
			EntityType: EntityDraw, EventID: cfg.EventID, Phase: PhaseCollecting,
			WinnerCount: cfg.WinnerCount, SeedCommitment: cfg.SeedCommitment, Seed: hex.EncodeToString(seed),
		}}
	}
	ws := []write{{row: &createEventRow, item: configItem{Key: configKey.Key(), EventConfig: cfg}}, {row: &createEventRow, item: second}}
	err := c.do(ctx, txOptions{}, ws)
	var lost *conditionLost
	if errors.As(err, &lost) {
		return nil, fmt.Errorf("%w: %s", ErrEventExists, cfg.EventID)
	}
	if err != nil {
		return nil, fmt.Errorf("create event %s: %w", cfg.EventID, err)
	}
	c.events.forget(cfg.EventID)
	return &cfg, nil
}

// GetEvent reads an event's EventConfig: GetItem PK EVENT#<eventId>, SK CONFIG, a
// strongly consistent read. An unknown event is ErrEventNotFound.
func (c *Client) GetEvent(ctx context.Context, eventID string) (*EventConfig, error) {
	key, err := NewEventKey(eventID, EventItemConfig)
	if err != nil {
		return nil, err
	}
	var item configItem
	found, err := c.getItem(ctx, key.Key(), true, &item)
	switch {
	case err != nil:
		return nil, fmt.Errorf("get event %s: %w", eventID, err)
	case !found:
		return nil, fmt.Errorf("%w: %s", ErrEventNotFound, eventID)
	}
	return &item.EventConfig, nil
}

// openEvent returns the config of an event that takes participations now, from the
// client's cache when it is fresh.
func (c *Client) openEvent(ctx context.Context, eventID string) (*EventConfig, error) {
	cfg, err := c.cachedEvent(ctx, eventID)
	if err != nil {
		return nil, err
	}
	if err := cfg.checkOpen(c.now()); err != nil {
		return nil, err
	}
	return cfg, nil
}

// cachedEvent returns an event's config from the client's cache when it is fresh.
func (c *Client) cachedEvent(ctx context.Context, eventID string) (*EventConfig, error) {
	return c.events.get(ctx, eventID, func(ctx context.Context) (*EventConfig, error) {
		return c.GetEvent(ctx, eventID)
	})
}

// eventCache keeps event configs for a short time so that a spike does not read CONFIG
// on every click. Concurrent misses for one event share a single read. Failed reads,
// unknown events included, are not kept.
type eventCache struct {
	ttl   time.Duration // ≤ 0: no caching
	clock func() time.Time

	mu      sync.Mutex
	entries map[string]*eventEntry
}

type eventEntry struct {
	loaded   chan struct{} // closed when cfg and err are set
	cfg      *EventConfig
	err      error
	loadedAt time.Time
}

func newEventCache(ttl time.Duration, clock func() time.Time) *eventCache {
	return &eventCache{ttl: ttl, clock: clock, entries: map[string]*eventEntry{}}
}

func (ec *eventCache) get(ctx context.Context, eventID string, load func(context.Context) (*EventConfig, error)) (*EventConfig, error) {
	if ec.ttl <= 0 {
		return load(ctx)
	}
	ec.mu.Lock()
	e, ok := ec.entries[eventID]
	if ok {
		select {
		case <-e.loaded:
			if ec.clock().Sub(e.loadedAt) >= ec.ttl {
				ok = false
			}
		default: // a read is under way: share it
		}
	}
	if !ok {
		e = &eventEntry{loaded: make(chan struct{})}
		ec.entries[eventID] = e
		ec.mu.Unlock()
		e.cfg, e.err = load(ctx)
		e.loadedAt = ec.clock()
		close(e.loaded)
		if e.err != nil {
			ec.forgetEntry(eventID, e)
		}
		return e.cfg, e.err
	}
	ec.mu.Unlock()
	select {
	case <-e.loaded:
		return e.cfg, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// forget drops a cached event, so the next read sees the table.
func (ec *eventCache) forget(eventID string) {
	ec.mu.Lock()
	delete(ec.entries, eventID)
	ec.mu.Unlock()
}

func (ec *eventCache) forgetEntry(eventID string, e *eventEntry) {
	ec.mu.Lock()
	if ec.entries[eventID] == e {
		delete(ec.entries, eventID)
	}
	ec.mu.Unlock()
}
