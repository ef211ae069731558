package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/seed"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
)

// EventSettings is what a caller sets when it creates an event (CreateEvent): what
// kind of event it is, when it is open, its capacity or lottery settings and its
// layout. The rest of the stored EventConfig item (PK EVENT#<eventId>, SK CONFIG) is
// the library's: what a caller reads back is an Event.
type EventSettings struct {
	EventID   string    `dynamodbav:"eventId"`
	EventType EventType `dynamodbav:"eventType"`
	Name      string    `dynamodbav:"name,omitempty"`

	// The window in which ingest accepts participations; zero means unbounded.
	StartsAt EpochMillis `dynamodbav:"startsAt,omitempty"`
	EndsAt   EpochMillis `dynamodbav:"endsAt,omitempty"`

	// PrequeueOpensAt, of a FIRST_COME event with StartsAt, opens a pre-queue: the
	// clicks from then until StartsAt are accepted and wait, decided by nobody until
	// ServePrequeue serves them in an order drawn from a seed committed now and
	// revealed at the start, before any click of the sale (docs/design.md, "The
	// pre-queue"). 0 (the default): no pre-queue. Fixed when the event is created.
	PrequeueOpensAt EpochMillis `dynamodbav:"prequeueOpensAt,omitempty"`

	// FIRST_COME: the number of winners N, also held by the event's EventCapacity.
	CapacityTotal int64 `dynamodbav:"capacityTotal,omitempty"`

	// LOTTERY: the number of winners K, the entry cutoff and the planned announcement.
	WinnerCount     int64       `dynamodbav:"winnerCount,omitempty"`
	LotteryCutoffAt EpochMillis `dynamodbav:"lotteryCutoffAt,omitempty"`
	AnnounceAt      EpochMillis `dynamodbav:"announceAt,omitempty"`

	// IndexShards (K) and CapacityShards (C) are the event's layout, fixed when it is
	// created: with K > 1 its requests' GSI2 partition key is EVENT#<eventId>#<shard>
	// (shard 0 to K-1, from the request ID) instead of EVENT#<eventId>; with C > 1 a
	// FIRST_COME event's capacity is held by C items EVENT#<eventId>#CAPACITY#<shard> /
	// CAPACITY, each on a partition key of its own, whose capacities sum to
	// CapacityTotal, instead of one CAPACITY item. Each
	// partition key of DynamoDB takes at most 1,000 WCU/s, so sharding is what lets one
	// event take more than a few hundred clicks a second: ShardsFor picks K and C for a
	// peak. 0 and 1 both mean the design's single keys. Readers of the event merge the
	// shards; nothing else changes for them.
	IndexShards    int `dynamodbav:"indexShards,omitempty"`
	CapacityShards int `dynamodbav:"capacityShards,omitempty"`

	// HoldFor, of a FIRST_COME event, turns on holds: a seat claim makes the request
	// HELD for HoldFor instead of SUCCEEDED, Confirm (payment made) makes it
	// SUCCEEDED, and Release or the hold's expiry gives the seat to the earliest
	// WAITLISTED request, the sold-out event's losers waiting in queue order until it
	// closes (docs/design.md, "Holds and the waitlist"). Stored in nanoseconds; 0 (the
	// default) is no holds: a winner is SUCCEEDED at once and a loser REJECTED. From
	// 10 seconds to 24 hours; fixed when the event is created. An event with holds
	// needs EndsAt: its waitlist ends then (or when CloseEvent closes the event),
	// whatever seats could still come back, and each request still WAITLISTED ends
	// REJECTED_CAPACITY.
	HoldFor time.Duration `dynamodbav:"holdFor,omitempty"`

	// Admission, of a FIRST_COME event, is how its winners are chosen, fixed when
	// the event is created. AdmissionProcessing (the default): each worker decides
	// the messages it receives, in the order it happens to process them, so a
	// request queued later may win while one queued before it loses (EventStats
	// reports how often: Fairness.LateWinners); a FIFO queue does not change that,
	// since a message is sent after its request's put, whose latency reorders them.
	// AdmissionRanked: winners are decided by rank, (queuedAt, requestId), by one
	// admission per event that decides the line in waves a settle delay behind now
	// (docs/design.md, "Ranked admission"): no request wins while one ranked before
	// it was refused for want of a seat.
	Admission Admission `dynamodbav:"admission,omitempty"`
	// RankSettle, of a ranked event, is how far behind now the admission reads the
	// line: a request is ranked once RankSettle has passed since its queuedAt, so
	// that the puts in flight land first. A put that lands later still is a late
	// arrival (ResultLate once the seats are gone). Stored in nanoseconds; 0 is
	// DefaultRankSettle; from MinRankSettle to MaxRankSettle.
	RankSettle time.Duration `dynamodbav:"rankSettle,omitempty"`
}

// Event is an event as a caller reads it (GetEvent, ListEvents, the controls'
// EventUpdate): its settings, and the state that CreateEvent, the operator's
// controls and the draw give it.
type Event struct {
	EventSettings

	// LOTTERY, and a FIRST_COME event with a pre-queue: SHA-256 of the secret draw
	// seed (hex), published by CreateEvent before the draw (the pre-queue's serve) so
	// that the seed it reveals can be checked against it; where the
	// seed is kept until then (SEALED: Options.Seeds; UNSEALED: on the Draw record),
	// which CreateEvent decides from Options.Seeds; the actual announcement; and the
	// event's phase: COLLECTING until the draw starts, DRAWING while it finalises the
	// entries, ANNOUNCED once every entry has its result.
	SeedCommitment string      `dynamodbav:"seedCommitment,omitempty"`
	SeedMode       seed.Mode   `dynamodbav:"seedMode,omitempty"`
	AnnouncedAt    EpochMillis `dynamodbav:"announcedAt,omitempty"`
	Phase          UIPhase     `dynamodbav:"phase,omitempty"`

	// Paused is set while an operator has paused the event's ingest (PauseEvent,
	// ResumeEvent): a click is refused with ErrEventPaused. ClosedAt is when an
	// operator closed it (CloseEvent), which set EndsAt to that time too.
	Paused   bool        `dynamodbav:"paused,omitempty"`
	ClosedAt EpochMillis `dynamodbav:"closedAt,omitempty"`

	CreatedAt EpochMillis `dynamodbav:"createdAt"`
}

// eventItem is the EventConfig item's fields as stored: the Event and the library's
// bookkeeping on it, which no caller sets or reads.
type eventItem struct {
	EntityType entity.Type `dynamodbav:"entityType"` // CONFIG
	Event

	// EmptyShards, of a FIRST_COME event, are the capacity shards a seat claim found
	// empty (with C = 1, shard 0: the event is sold out), added by the workers as they
	// find them, so that a worker that has not met them yet skips them, and rejects
	// every request in one write once all are.
	EmptyShards []int `dynamodbav:"emptyShards,omitempty,numberset"`

	// PoolVersion, of a FIRST_COME event, counts the changes an operator made to its
	// seat pool (AddCapacity once its shards were empty, CancelRequest); every
	// capacity shard carries it too.
	PoolVersion int64 `dynamodbav:"poolVersion,omitempty"`

	// LocksKeptUntil is the earliest a lock of the event's clicks may expire (its
	// first close plus Options.LockTTL, as CreateEvent found them): ExtendEvent moves
	// no time past it, so that DynamoDB's TTL deletes no lock of an open event. Zero
	// when the locks are kept for ever. CreateEvent sets it.
	LocksKeptUntil EpochMillis `dynamodbav:"locksKeptUntil,omitempty"`
}

// The attribute names of the EventConfig item that the workers add to, and that the
// operator's controls write.
const (
	attrEmptyShards     = "emptyShards"
	attrEndsAt          = "endsAt"
	attrStartsAt        = "startsAt"
	attrPrequeueOpensAt = "prequeueOpensAt"
	attrPaused          = "paused"
	attrClosedAt        = "closedAt"
)

type configItem struct {
	Key
	eventItem
}

// createEventRow writes each item of a new event, together in one transaction.
var (
	createEventRow = row{name: "create event", method: "CreateEvent", item: entity.Config, op: opPut, cond: notExists}
	eventClosedRow = row{
		name: "event closed", method: "CloseEvent", item: entity.Config, op: opUpdate, cond: openToClose,
		sets: []set{setTo(attrEndsAt, pNow), setTo(attrClosedAt, pNow)},
	}
	eventPausedRow = row{
		name: "event paused", method: "PauseEvent", item: entity.Config, op: opUpdate, cond: openToPause,
		sets: []set{setTo(attrPaused, true)},
	}
	eventResumedRow = row{
		name: "event resumed", method: "ResumeEvent", item: entity.Config, op: opUpdate, cond: pausedNow,
		sets: []set{setTo(attrPaused, false)},
	}
	endExtendedRow = row{
		name: "event end extended", method: "ExtendEvent", item: entity.Config, op: opUpdate, cond: endMovable,
		sets: []set{setTo(attrEndsAt, pEndsAt)},
	}
	cutoffExtendedRow = row{
		name: "lottery cutoff extended", method: "ExtendEvent", item: entity.Config, op: opUpdate, cond: cutoffMovable,
		sets: []set{setTo(attrLotteryCutoffAt, pCutoff)},
	}
	startExtendedRow = row{
		name: "pre-queue start extended", method: "ExtendEvent", item: entity.Config, op: opUpdate, cond: startMovable,
		sets: []set{setTo(attrStartsAt, pStart)},
	}
	shardEmptyRow = row{
		name: "capacity shard empty", method: "Rows.ClaimSeat", item: entity.Config, op: opUpdate, cond: configExists,
		adds: []set{addTo(attrEmptyShards, pShards)},
	}
	seatsAddedRow = row{
		name: "capacity added", method: "AddCapacity", item: entity.Config, op: opUpdate, cond: configAddCap,
		sets: []set{setTo(attrPoolVersion, pPoolVersion)},
		adds: []set{addTo(attrCapacityTotal, pSeats)},
	}
	poolVersionRow = row{
		name: "pool version raised", method: "CancelRequest", item: entity.Config, op: opUpdate, cond: configPoolAsRead,
		sets: []set{setTo(attrPoolVersion, pPoolVersion)},
	}
	eventDrawingRow = row{
		name: "event: drawing", method: "Draw, ServePrequeue", item: entity.Config, op: opUpdate, cond: all(eventExists, entriesBoundsAsRead),
		sets: []set{setTo(attrPhase, PhaseDrawing)},
	}
	eventAnnouncedRow = row{
		name: "event: announced", method: "Draw, ServePrequeue", item: entity.Config, op: opUpdate, cond: eventExists,
		sets: []set{setTo(attrPhase, PhaseAnnounced), setTo(attrAnnouncedAt, pNow)},
	}
)

// closesAt returns when ingest stops accepting participations: endsAt, and for a
// LOTTERY the cutoff if that is earlier; 0 when the event never closes.
func (e *EventSettings) closesAt() EpochMillis {
	end := e.EndsAt
	if e.EventType == Lottery && e.LotteryCutoffAt != 0 && (end == 0 || e.LotteryCutoffAt < end) {
		end = e.LotteryCutoffAt
	}
	return end
}

// checkOpen reports whether the event takes participations at now: ErrEventNotOpen
// before startsAt, ErrEventClosed after it closes.
func (e *Event) checkOpen(now EpochMillis) error {
	if end := e.closesAt(); end != 0 && now > end || e.ClosedAt != 0 && now >= e.ClosedAt {
		return fmt.Errorf("%w: %s closed at %s", ErrEventClosed, e.EventID, end.Time().Format(time.RFC3339Nano))
	}
	if opens := e.opensAt(); opens != 0 && now < opens {
		return fmt.Errorf("%w: %s opens at %s", ErrEventNotOpen, e.EventID, opens.Time().Format(time.RFC3339Nano))
	}
	if e.Paused {
		return fmt.Errorf("%w: %s", ErrEventPaused, e.EventID)
	}
	return nil
}

// validate checks a new event's settings.
func (e *EventSettings) validate() error {
	if err := ValidateID("eventId", e.EventID); err != nil {
		return err
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidEvent, e.EventID, fmt.Sprintf(format, args...))
	}
	for _, t := range []struct {
		name string
		at   EpochMillis
	}{{"startsAt", e.StartsAt}, {"endsAt", e.EndsAt}, {"prequeueOpensAt", e.PrequeueOpensAt}, {"lotteryCutoffAt", e.LotteryCutoffAt}, {"announceAt", e.AnnounceAt}} {
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
	switch {
	case e.IndexShards < 0 || e.IndexShards > MaxShards:
		return bad("indexShards %d, want 0 to %d", e.IndexShards, MaxShards)
	case e.CapacityShards < 0 || e.CapacityShards > maxCapacityShards:
		return bad("capacityShards %d, want 0 to %d", e.CapacityShards, maxCapacityShards)
	case e.CapacityShards > 1 && e.EventType != FirstCome:
		return bad("capacityShards is for FIRST_COME events")
	case e.CapacityShards > 1 && int64(e.CapacityShards) > e.CapacityTotal:
		return bad("capacityShards %d is more than the capacity %d", e.CapacityShards, e.CapacityTotal)
	}
	switch e.EventType {
	case FirstCome:
		return e.validateFirstCome(bad)
	case Lottery:
		return e.validateLottery(bad)
	}
	return bad("eventType %q, want FIRST_COME or LOTTERY", string(e.EventType))
}

// validateFirstCome checks what only a FIRST_COME event may set, each refusal made by
// bad.
func (e *EventSettings) validateFirstCome(bad func(format string, args ...any) error) error {
	switch {
	case e.CapacityTotal < 1:
		return bad("a FIRST_COME event needs capacityTotal ≥ 1")
	case seatsPerShard(e.CapacityTotal, e.CapacityShards) > MaxSeatsPerShard:
		return bad("%d seats on one capacity shard, more than %d: its record of holders would near DynamoDB's 400 KB item limit; use capacityShards ≥ %d",
			seatsPerShard(e.CapacityTotal, e.CapacityShards), MaxSeatsPerShard, (e.CapacityTotal+MaxSeatsPerShard-1)/MaxSeatsPerShard)
	case e.WinnerCount != 0 || e.LotteryCutoffAt != 0 || e.AnnounceAt != 0:
		return bad("winnerCount, lotteryCutoffAt and announceAt are for LOTTERY events")
	case e.HoldFor != 0 && (e.HoldFor < MinHoldFor || e.HoldFor > MaxHoldFor):
		return bad("holdFor %s, want 0 (no holds) or %s to %s", e.HoldFor, MinHoldFor, MaxHoldFor)
	case e.HoldFor != 0 && e.EndsAt == 0:
		return bad("an event with holds (holdFor) needs endsAt: its waitlist waits for seats given back until then, and what is still waitlisted ends REJECTED_CAPACITY")
	case e.PrequeueOpensAt != 0 && e.StartsAt == 0:
		return bad("a pre-queue (prequeueOpensAt) needs startsAt, when it is served")
	case e.PrequeueOpensAt != 0 && e.PrequeueOpensAt >= e.StartsAt:
		return bad("prequeueOpensAt must be before startsAt")
	case e.Admission != AdmissionProcessing && e.Admission != AdmissionRanked:
		return bad("admission %q, want %q or %q", string(e.Admission), AdmissionProcessing, AdmissionRanked)
	case e.RankSettle != 0 && e.Admission != AdmissionRanked:
		return bad("rankSettle is for a ranked admission")
	case e.RankSettle != 0 && (e.RankSettle < MinRankSettle || e.RankSettle > MaxRankSettle):
		return bad("rankSettle %s, want 0 (%s) or %s to %s", e.RankSettle, DefaultRankSettle, MinRankSettle, MaxRankSettle)
	case e.Admission == AdmissionRanked && e.PrequeueOpensAt != 0:
		return bad("a ranked admission with a pre-queue is not supported: the pre-queue's drawn order decides its entries")
	case e.HoldFor != 0 && e.CapacityShards > maxCapacityShards-1:
		return bad("capacityShards %d with holds, want at most %d: CreateEvent writes the event's entry in the hold registry in the same transaction", e.CapacityShards, maxCapacityShards-1)
	}
	return nil
}

// validateLottery checks what a LOTTERY event needs, and refuses what only a
// FIRST_COME event may set, each refusal made by bad.
func (e *EventSettings) validateLottery(bad func(format string, args ...any) error) error {
	switch {
	case e.WinnerCount < 1:
		return bad("a LOTTERY event needs winnerCount ≥ 1")
	case e.LotteryCutoffAt == 0:
		return bad("a LOTTERY event needs lotteryCutoffAt")
	case e.CapacityTotal != 0:
		return bad("capacityTotal is for FIRST_COME events")
	case e.PrequeueOpensAt != 0:
		return bad("prequeueOpensAt is for FIRST_COME events (a lottery's entries are drawn already)")
	case e.HoldFor != 0:
		return bad("holdFor is for FIRST_COME events")
	case e.Admission != AdmissionProcessing || e.RankSettle != 0:
		return bad("admission and rankSettle are for FIRST_COME events")
	case e.StartsAt != 0 && e.LotteryCutoffAt <= e.StartsAt:
		return bad("lotteryCutoffAt must be after startsAt")
	case e.AnnounceAt != 0 && e.AnnounceAt < e.LotteryCutoffAt:
		return bad("announceAt must not be before lotteryCutoffAt")
	}
	return nil
}

// The bounds of EventSettings.HoldFor: a hold shorter than MinHoldFor would run out
// before a user could pay, and one longer than MaxHoldFor is no hold but a sale.
const (
	MinHoldFor = 10 * time.Second
	MaxHoldFor = 24 * time.Hour
)

// maxNameLength bounds an event's display name.
const maxNameLength = 256

// MaxShards bounds an event's index shards and capacity shards. Capacity shards are
// bounded further by maxCapacityShards.
const MaxShards = 128

// MaxSeatsPerShard bounds the seats of one capacity shard. A shard records a 12-byte
// seat token per winner (the item's holders), so that a request never takes two
// seats, and a claim costs a write unit per started KB of the shard item: 1 WCU for
// about its first 64 winners, 2 up to about 150, and so on, about 12 for the last of
// 1,000. So a shard of 1,000 seats takes, at DynamoDB's 1,000 WCU/s per partition
// key, about 80 claims a second at its end; one of 25,000 (DynamoDB's 400 KB item
// limit) would take 3. ShardsFor counts this cost; an event of more seats than
// MaxSeatsPerShard × 99 cannot be created.
const MaxSeatsPerShard = 1000

// seatsPerShard is the most seats one of an event's capacity shards holds.
func seatsPerShard(capacity int64, shards int) int64 {
	n := int64(max(shards, 1))
	return (capacity + n - 1) / n
}

// maxCapacityShards is the most capacity shards an event can have: CreateEvent
// writes them with the config in one TransactWriteItems of at most 100 items.
const maxCapacityShards = 99

// RequestIndexKeys returns the index keys of a request of this event ordered at
// orderAt, in the event's layout.
func (e *EventSettings) RequestIndexKeys(userID, requestID string, orderAt EpochMillis) (IndexKeys, error) {
	return shardedIndexKeys(e.EventID, userID, requestID, orderAt, e.IndexShards)
}

// layout is an event's sharded keys: its GSI2 partitions and its capacity items.
type layout struct{ index, capacity int }

// layoutOf returns an event's layout, from the client's cache. An event without a
// config has the design's single keys (one of each).
func (c *Client) layoutOf(ctx context.Context, eventID string) (layout, error) {
	cfg, err := c.cachedEvent(ctx, eventID)
	switch {
	case errors.Is(err, ErrEventNotFound):
		return layout{1, 1}, nil
	case err != nil:
		return layout{}, err
	}
	return layout{index: max(cfg.IndexShards, 1), capacity: max(cfg.CapacityShards, 1)}, nil
}

// indexShards is layoutOf's index shards.
func (c *Client) indexShards(ctx context.Context, eventID string) (int, error) {
	l, err := c.layoutOf(ctx, eventID)
	return l.index, err
}

// capacityShards is layoutOf's capacity shards.
func (c *Client) capacityShards(ctx context.Context, eventID string) (int, error) {
	l, err := c.layoutOf(ctx, eventID)
	return l.capacity, err
}

// CreateEvent stores a new event, the "create event" row, in one TransactWriteItems:
// its EventConfig (PK EVENT#<eventId>, SK CONFIG) and a FIRST_COME event's
// EventCapacity (SK CAPACITY, capacityRemaining = capacityTotal; with capacity
// shards, PK EVENT#<eventId>#CAPACITY#<shard>, SK CAPACITY for each, their capacities
// summing to capacityTotal; with holds also its entry in the hold registry, PK
// HOLD_EVENTS, SK EVENT#<eventId>) or
// a LOTTERY event's Draw record (SK DRAW), which a FIRST_COME event with a pre-queue
// has too, all in one TransactWriteItems, after a PutItem of its entry in the event
// list (PK EVENTS). A LOTTERY event's seed, and a pre-queue's, comes from
// Options.Seeds, and only its SHA-256 is stored, as seedCommitment on the config and
// the Draw record (seedMode SEALED); without Options.Seeds it is a random seed stored
// on the Draw record itself (seedMode UNSEALED, with a warning logged). Condition on
// every item: attribute_not_exists(PK) AND attribute_not_exists(SK); when it fails the event exists already and
// the error is ErrEventExists, with nothing changed. Invalid settings are an ErrInvalidEvent or
// ErrInvalidID error. It returns the event as stored.
func (c *Client) CreateEvent(ctx context.Context, settings EventSettings) (*Event, error) {
	if err := settings.validate(); err != nil {
		return nil, err
	}
	now := c.now()
	cfg := eventItem{EntityType: entity.Config, Event: Event{EventSettings: settings, CreatedAt: now}}
	if end := cfg.closesAt(); end != 0 && c.opts.LockTTL > 0 {
		cfg.LocksKeptUntil = MillisOf(end.Time().Add(c.opts.LockTTL))
	}
	configKey, _ := NewEventKey(cfg.EventID, EventItemConfig) // ID checked by validate

	var items []any
	switch cfg.EventType {
	case FirstCome:
		for _, item := range capacityItems(cfg, now) {
			items = append(items, item)
		}
		if cfg.HoldFor > 0 {
			entry, err := newHoldEventItem(&cfg)
			if err != nil {
				return nil, err
			}
			items = append(items, entry)
		}
		if cfg.PrequeueOpensAt != 0 {
			record, err := c.newDrawRecord(ctx, &cfg)
			if err != nil {
				return nil, fmt.Errorf("create event %s: %w", cfg.EventID, err)
			}
			key, _ := NewEventKey(cfg.EventID, EventItemDraw)
			items = append(items, drawItem{Key: key.Key(), EntityType: entity.Draw, DrawRecord: record})
		}
	case Lottery:
		record, err := c.newDrawRecord(ctx, &cfg)
		if err != nil {
			return nil, fmt.Errorf("create event %s: %w", cfg.EventID, err)
		}
		key, _ := NewEventKey(cfg.EventID, EventItemDraw)
		items = append(items, drawItem{Key: key.Key(), EntityType: entity.Draw, DrawRecord: record})
	}
	if err := c.listEvent(ctx, &cfg); err != nil {
		return nil, fmt.Errorf("create event %s: %w", cfg.EventID, err)
	}
	ws := []write{{row: &createEventRow, item: configItem{Key: configKey.Key(), eventItem: cfg}}}
	for _, item := range items {
		ws = append(ws, write{row: &createEventRow, item: item})
	}
	err := c.do(ctx, txOptions{}, ws)
	var lost *conditionLost
	if errors.As(err, &lost) {
		return nil, fmt.Errorf("%w: %s", ErrEventExists, cfg.EventID)
	}
	if err != nil {
		return nil, fmt.Errorf("create event %s: %w", cfg.EventID, err)
	}
	c.events.Forget(cfg.EventID)
	c.warnUnsealed(ctx, &cfg)
	return &cfg.Event, nil
}

// GetEvent reads an event's EventConfig item: GetItem PK EVENT#<eventId>, SK CONFIG, a
// strongly consistent read. It returns the event's settings and state, without the
// library's bookkeeping on the item. An unknown event is ErrEventNotFound.
func (c *Client) GetEvent(ctx context.Context, eventID string) (*Event, error) {
	cfg, err := c.getEvent(ctx, eventID)
	if err != nil {
		return nil, err
	}
	return &cfg.Event, nil
}

// getEvent is GetEvent's read, with the library's bookkeeping on the event.
func (c *Client) getEvent(ctx context.Context, eventID string) (*eventItem, error) {
	key, err := NewEventKey(eventID, EventItemConfig)
	if err != nil {
		return nil, err
	}
	var item configItem
	if err := c.getFound(ctx, key.Key(), true, &item, "get event", eventID, func() error {
		return fmt.Errorf("%w: %s", ErrEventNotFound, eventID)
	}); err != nil {
		return nil, err
	}
	return &item.eventItem, nil
}

// openEvent returns the config of an event that takes participations now, from the
// client's cache when it is fresh.
func (c *Client) openEvent(ctx context.Context, eventID string) (*eventItem, error) {
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
func (c *Client) cachedEvent(ctx context.Context, eventID string) (*eventItem, error) {
	return c.events.Get(ctx, eventID, func(ctx context.Context) (*eventItem, error) {
		return c.getEvent(ctx, eventID)
	})
}

// The params and conditions of the control rows (event_control.go) on the config.
const (
	pEndsAt = param("endsAt")
	pCutoff = param("cutoff")
	pStart  = param("startsAt")
	pLead   = param("lead") // now + controlLead: a time moved must lie beyond it
)

var (
	notEnded = func(v values) expression.ConditionBuilder {
		return expression.AttributeNotExists(expression.Name(attrClosedAt)).
			And(expression.AttributeNotExists(expression.Name(attrEndsAt)).Or(expression.Name(attrEndsAt).GreaterThanEqual(v.Value(pNow)))).
			And(cutoffAhead(v))
	}
	cutoffAhead = func(v values) expression.ConditionBuilder {
		return expression.AttributeNotExists(expression.Name(attrLotteryCutoffAt)).Or(expression.Name(attrLotteryCutoffAt).GreaterThanEqual(v.Value(pNow)))
	}
	notPaused     = fixed(expression.AttributeNotExists(expression.Name(attrPaused)).Or(expression.Name(attrPaused).Equal(expression.Value(false))))
	openToClose   = all(configExists, notEnded)
	openToPause   = all(configExists, notEnded, notPaused)
	pausedNow     = all(configExists, notEnded, fixed(expression.Name(attrPaused).Equal(expression.Value(true))))
	endMovable    = all(configExists, compare(expression.Name(attrEndsAt).GreaterThan, pLead), compare(expression.Name(attrEndsAt).LessThan, pEndsAt))
	cutoffMovable = all(configExists, fixed(expression.Name(attrEventType).Equal(expression.Value(Lottery))),
		compare(expression.Name(attrLotteryCutoffAt).GreaterThan, pLead),
		compare(expression.Name(attrLotteryCutoffAt).LessThan, pCutoff),
		func(v values) expression.ConditionBuilder {
			return expression.AttributeNotExists(expression.Name(attrEndsAt)).Or(expression.Name(attrEndsAt).GreaterThanEqual(v.Value(pCutoff)))
		})
	drawNotBegun = phaseIs(PhaseCollecting)
	startMovable = all(configExists, fixed(expression.AttributeExists(expression.Name(attrPrequeueOpensAt))),
		compare(expression.Name(attrStartsAt).GreaterThan, pLead),
		compare(expression.Name(attrStartsAt).LessThan, pStart),
		func(v values) expression.ConditionBuilder {
			return expression.AttributeNotExists(expression.Name(attrEndsAt)).Or(expression.Name(attrEndsAt).GreaterThan(v.Value(pStart)))
		})
)

// Admission is how a FIRST_COME event's winners are chosen (EventSettings.Admission).
type Admission string

// The bounds of EventSettings.RankSettle.
const (
	DefaultRankSettle = 100 * time.Millisecond
	MinRankSettle     = 10 * time.Millisecond
	MaxRankSettle     = 10 * time.Second
)

// rankSettle is the event's settle delay.
func (e *EventSettings) rankSettle() time.Duration { return orDefault(e.RankSettle, DefaultRankSettle) }

// The admissions.
const (
	// AdmissionProcessing decides each request when a worker processes its message.
	AdmissionProcessing Admission = ""
	// AdmissionRanked decides the requests by rank, (queuedAt, requestId), a settle
	// delay behind now.
	AdmissionRanked Admission = "RANKED"
)

// opensAt is when ingest first takes a click: the pre-queue's opening, else StartsAt.
func (e *EventSettings) opensAt() EpochMillis {
	if e.EventType == FirstCome && e.PrequeueOpensAt != 0 {
		return e.PrequeueOpensAt
	}
	return e.StartsAt
}

// Attributes that more than one item carries: the config has each, as do requests
// (eventType, lotteryCutoffAt, announcedAt) and the other items of an event (entityType,
// eventId).
const (
	attrEntityType      = "entityType"
	attrEventID         = "eventId"
	attrEventType       = "eventType"
	attrAnnouncedAt     = "announcedAt"
	attrLotteryCutoffAt = "lotteryCutoffAt" // a lottery request's copy of its event's cutoff
)
