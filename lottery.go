package asyncevent

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/asyncevent/asyncevent/draw"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/internal/drawproof"
	"github.com/asyncevent/asyncevent/internal/drawrun"
	"github.com/asyncevent/asyncevent/seed"
)

// DrawRecord is the Draw record of a LOTTERY event, or of a FIRST_COME event's
// pre-queue (PK EVENT#<eventId>, SK DRAW). It is created with the event, holding
// seedCommitment, the SHA-256 of the draw's secret seed, as the event's config does;
// the draw (or the pre-queue's serve) writes the seed on it and records the entries it
// drew from, so anyone can recompute the winners (or the order).
type DrawRecord struct {
	EventID        string  `dynamodbav:"eventId"`
	Phase          UIPhase `dynamodbav:"phase"`
	WinnerCount    int64   `dynamodbav:"winnerCount"`
	SeedCommitment string  `dynamodbav:"seedCommitment"` // hex SHA-256 of the seed

	// SeedMode is where the seed is kept until the draw: SEALED, by Options.Seeds, the
	// record holding no seed until the draw writes it; UNSEALED (or absent), on this
	// record from the event's creation, where any reader of the table finds it.
	SeedMode seed.Mode `dynamodbav:"seedMode,omitempty"`

	// Seed is the seed, hex, written by the draw's freeze (an unsealed event's is
	// stored from its creation). GetDraw leaves it out while the event is COLLECTING.
	Seed string `dynamodbav:"seed,omitempty"`

	// Set by the draw: how many entries it drew from, SHA-256 (hex) of their sorted
	// request IDs, how many chunks hold those IDs (EntriesKey: the entries by name,
	// written before this record names them), and when it ran and was announced.
	EntryCount  int64       `dynamodbav:"entryCount,omitempty"`
	EntriesHash string      `dynamodbav:"entriesHash,omitempty"`
	EntryChunks int64       `dynamodbav:"entryChunks,omitempty"`
	DrawnAt     EpochMillis `dynamodbav:"drawnAt,omitempty"`
	AnnouncedAt EpochMillis `dynamodbav:"announcedAt,omitempty"`
}

// drawItem is a DrawRecord as stored: its key and the item's bookkeeping.
type drawItem struct {
	Key
	EntityType entity.Type `dynamodbav:"entityType"` // DRAW
	DrawRecord
}

// The attribute names of the draw's items that its rows name.
const (
	attrPhase       = "phase"
	attrEntryCount  = "entryCount"
	attrEntriesHash = "entriesHash"
	attrEntryChunks = "entryChunks"
	attrDrawnAt     = "drawnAt"
	attrSeed        = "seed"
)

// The params of the draw's rows.
const (
	pEntryCount  param = "entryCount"
	pEntriesHash param = "entriesHash"
	pEntryChunks param = "entryChunks"
	pSeed        param = "seed"
)

// phaseIs: the Draw record is in the phase p.
func phaseIs(p UIPhase) cond {
	return fixed(expression.Name(attrPhase).Equal(expression.Value(p)))
}

// eventExists: the item is there to update.
var eventExists = fixed(expression.AttributeExists(expression.Name(attrPK)))

// The params of the freeze: the cutoff and the start of the event as the draw read
// them.
const (
	pCutoffAsRead param = "cutoffAsRead"
	pStartAsRead  param = "startAsRead"
)

// entriesBoundsAsRead: the config's lotteryCutoffAt and startsAt are those the draw
// read (each absent, or equal): an ExtendEvent that moved them after the read makes
// the freeze fail, so that no set is recorded under a cutoff or a start that is no
// longer the event's.
var entriesBoundsAsRead = all(
	either(fixed(expression.AttributeNotExists(expression.Name(attrLotteryCutoffAt))), compare(expression.Name(attrLotteryCutoffAt).Equal, pCutoffAsRead)),
	either(fixed(expression.AttributeNotExists(expression.Name(attrStartsAt))), compare(expression.Name(attrStartsAt).Equal, pStartAsRead)))

// entriesUnrecorded: the draw is DRAWING and its entries are not recorded yet.
var entriesUnrecorded = all(phaseIs(PhaseDrawing), fixed(expression.AttributeNotExists(expression.Name(attrEntriesHash))))

// The draw's rows: the Draw record and the event's config move through the phases
// together, and each entry gets its result under a condition.
var (
	drawFreezeRow = row{
		name: "draw: freeze the entries", method: "Draw, ServePrequeue", item: entity.Draw, op: opUpdate, cond: phaseIs(PhaseCollecting),
		sets: []set{setTo(attrPhase, PhaseDrawing), setTo(attrDrawnAt, pNow)},
	}
	drawEntriesRow = row{
		name: "draw: record the entries", method: "Draw, ServePrequeue", item: entity.Draw, op: opUpdate, cond: entriesUnrecorded,
		sets: []set{setTo(attrEntryCount, pEntryCount), setTo(attrEntriesHash, pEntriesHash), setTo(attrEntryChunks, pEntryChunks), setTo(attrSeed, pSeed)},
	}
	drawAnnounceRow = row{
		name: "draw: announce", method: "Draw, ServePrequeue", item: entity.Draw, op: opUpdate, cond: phaseIs(PhaseDrawing),
		sets: []set{setTo(attrPhase, PhaseAnnounced), setTo(attrAnnouncedAt, pNow)},
	}
	drawNotBegunRow = row{
		name: "cutoff extended: draw check", method: "ExtendEvent", item: entity.Draw, op: opCheck, cond: drawNotBegun,
	}
)

// MarkClosed is a row method of the worker's layer, a step of the worker and of
// Draw: a service leaves it to them (see "Two layers" in the package doc).
//
// MarkClosed ends a lottery request queued after the cutoff, the "lottery result
// (closed)" row: UpdateItem PK REQ#<requestId>, SK META, SET status = REJECTED,
// uiResult REJECTED, resultCode REJECTED_CLOSED, finishedAt; condition (status =
// QUEUED OR status = RECEIVED) AND queuedAt > lotteryCutoffAt, so that no request
// queued by the cutoff is ever closed as late. A lost condition is not an error: the
// Transition holds the request as it is.
func (r *Rows) MarkClosed(ctx context.Context, requestID string) (Transition, error) {
	t, err := r.c.markClosed(ctx, requestID, txOptions{written: true})
	return r.c.written(ctx, requestID, t, err)
}

// closeEntry is MarkClosed for the worker and the draw: its applied Transition
// carries no request (nothing extra asked of the write).
func (c *Client) closeEntry(ctx context.Context, requestID string) (Transition, error) {
	return c.markClosed(ctx, requestID, txOptions{})
}

// markClosed is MarkClosed with the call's options.
func (c *Client) markClosed(ctx context.Context, requestID string, tx txOptions) (Transition, error) {
	return c.applyTo(ctx, "close entry", requestID, write{row: &lotteryClosedRow, args: args{pNow: c.now()}, note: "queued after the cutoff"}, tx)
}

// DrawResult is the result of a draw.
type DrawResult struct {
	Record  DrawRecord // the Draw record, seed revealed
	Winners []string   // the winners' request IDs, best score first
}

// GetDraw reads a LOTTERY event's Draw record, or a pre-queued FIRST_COME event's
// (its seed commitment, and once frozen its entries and seed): GetItem PK
// EVENT#<eventId>, SK DRAW, a strongly consistent read. While the event is COLLECTING the record comes back
// without a seed: a sealed event has none stored yet, and an unsealed one's (its
// SeedMode says so) is kept out of the library's answers, though not out of the
// table. An event without one is ErrNotLottery.
func (c *Client) GetDraw(ctx context.Context, eventID string) (*DrawRecord, error) {
	r, err := c.getDraw(ctx, eventID)
	if err != nil {
		return nil, err
	}
	if r.Phase == PhaseCollecting {
		r.Seed = ""
	}
	return r, nil
}

func (c *Client) getDraw(ctx context.Context, eventID string) (*DrawRecord, error) {
	key, err := NewEventKey(eventID, EventItemDraw)
	if err != nil {
		return nil, err
	}
	var item drawItem
	if err := c.getFound(ctx, key.Key(), true, &item, "get draw", eventID, func() error {
		return fmt.Errorf("%w: %s has no draw record", ErrNotLottery, eventID)
	}); err != nil {
		return nil, err
	}
	return &item.DrawRecord, nil
}

// Draw runs the draw of a LOTTERY event, the "lottery result (win)" and "(lose)" rows
// for every entry. It is allowed once the cutoff plus Options.DrawSettleWindow has
// passed (ErrDrawTooEarly before). It
//
//  1. freezes the entries: a TransactWriteItems that moves the Draw record (PK
//     EVENT#<eventId>, SK DRAW) and the config from COLLECTING to DRAWING, drawnAt,
//     condition phase = COLLECTING (and, on the config, the cutoff and start as
//     read: an ExtendEvent that moved them meanwhile makes it ErrDrawTooEarly);
//  2. reads the entries from GSI2 (Query GSI2PK = EVENT#<eventId>, GSI2SK <
//     QAT#<cutoff + 1 ms>, each index shard, in pages, never a Scan): the requests
//     queued by the cutoff that are RECEIVED or QUEUED (or already finalised by this
//     draw), whether or not a worker has collected them yet; each one not collected
//     yet is collected by the draw itself (the "lottery entry collected" row,
//     condition (status = QUEUED OR status = RECEIVED) AND
//     attribute_not_exists(startedAt)), so that no failure can land on it afterwards
//     (the "entry failure" row's condition holds attribute_not_exists(startedAt)); an
//     entry whose collect is refused because it failed first is no entry;
//  3. records them by name and reveals the seed: their IDs in chunks (the "draw:
//     entries chunk" row, PutItem PK EVENT#<eventId>#ENTRIES#<n>, SK
//     SET#<entriesHash>), then UpdateItem of the Draw record, SET entryCount,
//     draw.EntriesHash, entryChunks and seed, condition phase = DRAWING AND
//     attribute_not_exists(entriesHash). A sealed seed comes from Options.Seeds
//     (without it ErrNoSeedSource), and a seed that does not hash to the published
//     commitment is ErrSeedMismatch; both are found before the freeze, so that a
//     draw refused for them writes nothing;
//  4. picks the winners among the recorded entries, the K with the smallest
//     draw.Score (all of them if fewer than K);
//  5. finalises each recorded entry with UpdateItem PK REQ#<requestId>, SK META, SET
//     status = SUCCEEDED, uiResult SUCCESS, resultCode SUCCESS, or status =
//     REJECTED, uiResult REJECTED, resultCode REJECTED_LOTTERY_LOSE, and uiPhase
//     ANNOUNCED, announcedAt, finishedAt; condition status = QUEUED OR status =
//     RECEIVED (Options.DrawConcurrency at once); a request queued by the cutoff
//     that is not in the record (its put landed after the read; those queued in the
//     last Options.DrawSettleWindow plus 10 s before the cutoff are read again once
//     the record is written) ends REJECTED_NOT_DRAWN (the "lottery result (not
//     drawn)" row), and one queued after the cutoff that is still waiting
//     REJECTED_CLOSED;
//  6. announces: Draw record and config from DRAWING to ANNOUNCED, announcedAt.
//
// The record is the truth: once it names the entries, they are the draw's, whatever
// reaches the table later, and no clock decides what it holds. Draw is idempotent and
// resumable: run again after a crash it reads the recorded set back (a chunk missing
// or altered is ErrDrawMismatch, as is a recorded entry gone from the table or given
// another result), comes to the same winners and finishes the rest, answering each
// request that landed since by the rule above; on an announced event it returns the
// stored result.
func (c *Client) Draw(ctx context.Context, eventID string) (*DrawResult, error) {
	o, err := c.openDraw(ctx, eventID, drawrun.Lottery)
	if err != nil {
		return nil, err
	}
	record := o.record
	winners := draw.Winners(o.run.Seed, o.run.IDs, int(record.WinnerCount))
	if record.Phase != PhaseAnnounced {
		if err := drawrun.Finalise(ctx, o.store, o.conf, o.run, winners); err != nil {
			return nil, err
		}
		if record, err = c.announceDraw(ctx, o.store.cfg); err != nil {
			return nil, err
		}
	}
	return &DrawResult{Record: *record, Winners: winners}, nil
}

// openedDraw is where a draw or a pre-queue's serve stands once opened (openDraw):
// its run's configuration, its store (holding the event's config as frozen), the Draw
// record as last read, and what the opening found (the requests GSI2 showed before
// the cutoff, the recorded entries by ID, the revealed seed).
type openedDraw struct {
	conf   drawrun.Config
	store  *drawStore
	record *DrawRecord
	run    *drawrun.Opened
}

// openDraw is how Draw (drawrun.Lottery) and ServePrequeue (drawrun.Prequeue) begin:
// the event, which must have that kind of draw (ErrNotLottery, ErrNoPrequeue), refused
// before DrawOpensAt (ErrDrawTooEarly), its entries frozen and recorded (a draw
// collects its entries, a serve keeps every request) and read back from the record,
// the seed revealed: drawrun.Open, over the event's drawStore.
func (c *Client) openDraw(ctx context.Context, eventID string, kind drawrun.Kind) (*openedDraw, error) {
	cfg, err := c.getEvent(ctx, eventID)
	if err != nil {
		return nil, err
	}
	what := eventID + " can be drawn"
	switch {
	case kind == drawrun.Prequeue && cfg.prequeueUntil() == 0:
		return nil, fmt.Errorf("%w: %s", ErrNoPrequeue, eventID)
	case kind == drawrun.Prequeue:
		what = "the pre-queue of " + eventID + " can be served"
	case cfg.EventType != Lottery:
		return nil, fmt.Errorf("%w: %s is %s", ErrNotLottery, eventID, cfg.EventType)
	}
	if opens := cfg.drawOpensAt(c.opts.DrawSettleWindow); c.now() < opens {
		return nil, fmt.Errorf("%w: %s from %s", ErrDrawTooEarly, what, opens.Time())
	}
	o := &openedDraw{conf: c.drawRun(cfg.EventID, kind), store: &drawStore{c: c, cfg: cfg}}
	if o.run, err = drawrun.Open(ctx, o.store, o.conf); err != nil {
		return nil, err
	}
	o.record = o.store.record
	return o, nil
}

// drawRun configures a run of the draw of kind of eventID on this client.
func (c *Client) drawRun(eventID string, kind drawrun.Kind) drawrun.Config {
	return drawrun.Config{
		EventID: eventID, Kind: kind, Concurrency: c.opts.DrawConcurrency,
		Now:      func() int64 { return int64(c.now()) },
		Reread:   c.opts.DrawSettleWindow + bookkeepingTimeout,
		Mismatch: ErrDrawMismatch, TooEarly: ErrDrawTooEarly,
	}
}

// drawOpensAt is when Draw may begin: the cutoff plus the settle window. Ingest ends
// its writes of a request queued by the cutoff before then.
func (e *eventItem) drawOpensAt(settle time.Duration) EpochMillis {
	return MillisOf(e.entriesCutoff().Time().Add(settle))
}

// DrawOpensAt is when e's draw may begin on this client: for a LOTTERY event Draw,
// for a FIRST_COME event with a pre-queue ServePrequeue; before it they answer
// ErrDrawTooEarly. It is the entries' cutoff (LotteryCutoffAt; for a pre-queue the
// millisecond before StartsAt) plus Options.DrawSettleWindow; ok is false for an
// event without a draw.
// The one rule the CLI and the HTTP API show, so that what they print is when the
// call succeeds.
func (c *Client) DrawOpensAt(e *Event) (opens EpochMillis, ok bool) {
	if e == nil || e.EventType != Lottery && e.PrequeueOpensAt == 0 {
		return 0, false
	}
	return (&eventItem{Event: *e}).drawOpensAt(c.opts.DrawSettleWindow), true
}

// drawEntry is what the draw, and a pre-queue's serve, read of a request.
type drawEntry struct {
	RequestID   string      `dynamodbav:"requestId"`
	UserID      string      `dynamodbav:"userId"`
	RequestedAt EpochMillis `dynamodbav:"requestedAt"`
	Status      Status      `dynamodbav:"status"`
	ResultCode  ResultCode  `dynamodbav:"resultCode"`
	QueuedAt    EpochMillis `dynamodbav:"queuedAt"`
	StartedAt   EpochMillis `dynamodbav:"startedAt"` // a lottery entry's: when a worker collected it
	// HoldExpiresAt, of a pre-queue's entry with holds: set once it held a seat.
	HoldExpiresAt EpochMillis `dynamodbav:"holdExpiresAt"`
	// SeatShard, of a first-come request: where its seat was claimed (the pool's
	// number for a seat added or given back).
	SeatShard *int `dynamodbav:"seatShard"`
}

// drawState is where a request in status s with code stands for a run of the draw.
func drawState(s Status, code ResultCode) drawrun.State {
	switch {
	case s == StatusSucceeded && code == ResultSuccess:
		return drawrun.Won
	case s == StatusRejected && code == ResultLotteryLose:
		return drawrun.Lost
	case s.IsTerminal():
		return drawrun.Final
	case s == StatusHeld || s == StatusWaitlisted:
		return drawrun.Decided
	case s == StatusProcessing:
		return drawrun.Deciding
	case s == StatusReceived || s == StatusQueued:
		return drawrun.Waiting
	}
	return drawrun.Unread
}

// run is e as a run of the draw reads it.
func (e drawEntry) run() drawrun.Entry {
	return drawrun.Entry{
		RequestID: e.RequestID, UserID: e.UserID, RequestedAt: int64(e.RequestedAt), QueuedAt: int64(e.QueuedAt),
		State: drawState(e.Status, e.ResultCode), Collected: e.StartedAt != 0, Seated: wonSeat(e.stored()),
		Status: string(e.Status), ResultCode: string(e.ResultCode),
	}
}

// drawEntryOf is what the draw reads of a request read by its item.
func drawEntryOf(r *storedRequest) drawEntry {
	return drawEntry{RequestID: r.RequestID, UserID: r.UserID, RequestedAt: r.RequestedAt, Status: r.Status, ResultCode: r.ResultCode,
		QueuedAt: r.QueuedAt, StartedAt: r.StartedAt, HoldExpiresAt: r.HoldExpiresAt, SeatShard: r.SeatShard}
}

// queueOrder reads an event's requests from GSI2 in queue order, with just the fields
// of a drawEntry: those queued before `at` when before is true, the others otherwise.
// An event's index shards are read one after the other and their rows merged, so that
// the writes that follow the order spread over the shards instead of falling on one
// shard's key at a time.
func (c *Client) queueOrder(ctx context.Context, eventID string, at EpochMillis, before bool) ([]drawEntry, error) {
	bound, err := QueuedAtBound(at)
	if err != nil {
		return nil, err
	}
	sk := expression.Key(attrGSI2SK).LessThan(expression.Value(bound))
	if !before {
		sk = expression.Key(attrGSI2SK).GreaterThanEqual(expression.Value(bound))
	}
	return c.queueRows(ctx, eventID, sk)
}

// queueRows reads the event's requests whose GSI2SK meets sk, with just the fields of
// a drawEntry, in queue order.
func (c *Client) queueRows(ctx context.Context, eventID string, sk expression.KeyConditionBuilder) ([]drawEntry, error) {
	rows, err := allEventRows[drawEntry](ctx, c, eventID, &sk, attrRequestID, attrUserID, attrRequestedAt, attrStatus, attrResultCode, attrQueuedAt, attrStartedAt, attrHoldExpiresAt, attrSeatShard)
	slices.SortStableFunc(rows, inQueueOrder)
	return rows, err
}

// inQueueOrder orders requests by (queuedAt, requestId).
func inQueueOrder(a, b drawEntry) int {
	return drawrun.CompareQueued(int64(a.QueuedAt), a.RequestID, int64(b.QueuedAt), b.RequestID)
}

// freezeDraw moves the draw from COLLECTING to DRAWING. When another Draw froze it
// first, it returns that one's record.
func (c *Client) freezeDraw(ctx context.Context, cfg *eventItem) (*DrawRecord, error) {
	a := args{pNow: c.now(), pCutoffAsRead: cfg.LotteryCutoffAt, pStartAsRead: cfg.StartsAt}
	if err := c.movePhase(ctx, cfg.EventID, &drawFreezeRow, &eventDrawingRow, a); err != nil {
		var lost *conditionLost
		if errors.As(err, &lost) && lost.row == &eventDrawingRow {
			return nil, fmt.Errorf("%w: the cutoff or start of %s moved since it was read (ExtendEvent): run it again", ErrDrawTooEarly, cfg.EventID)
		}
		return nil, err
	}
	return c.getDraw(ctx, cfg.EventID)
}

// announceDraw moves the draw from DRAWING to ANNOUNCED.
func (c *Client) announceDraw(ctx context.Context, cfg *eventItem) (*DrawRecord, error) {
	if err := c.movePhase(ctx, cfg.EventID, &drawAnnounceRow, &eventAnnouncedRow, args{pNow: c.now()}); err != nil {
		return nil, err
	}
	return c.getDraw(ctx, cfg.EventID)
}

// movePhase writes a phase row of the Draw record and the config's in one
// TransactWriteItems. A draw no longer in the phase the row leaves was moved on by
// another Draw: not an error.
func (c *Client) movePhase(ctx context.Context, eventID string, draw, config *row, a args) error {
	drawKey, _ := NewEventKey(eventID, EventItemDraw)
	configKey, _ := NewEventKey(eventID, EventItemConfig)
	err := c.do(ctx, txOptions{}, []write{
		{row: draw, key: drawKey.Key(), args: a},
		{row: config, key: configKey.Key(), args: a},
	})
	c.events.Forget(eventID)
	var lost *conditionLost
	if errors.As(err, &lost) && lost.index == 0 {
		return nil
	}
	if err != nil {
		return fmt.Errorf("draw %s: %s: %w", eventID, draw.name, err)
	}
	return nil
}

// markNotDrawn ends a lottery request queued by the cutoff that the draw's record
// does not name: the "lottery result (not drawn)" row, UpdateItem PK
// REQ#<requestId>, SK META, SET status = REJECTED, uiResult REJECTED, resultCode
// REJECTED_NOT_DRAWN, uiPhase ANNOUNCED, announcedAt, finishedAt; condition (status =
// QUEUED OR status = RECEIVED) AND queuedAt ≤ lotteryCutoffAt. It is sent only by
// Draw, for a request it read back as absent from the record, and by a worker once
// the event is ANNOUNCED (every recorded entry is final by then, so the condition
// refuses them). A lost condition is not an error.
func (c *Client) markNotDrawn(ctx context.Context, requestID string) (Transition, error) {
	return c.applyTo(ctx, "not drawn", requestID, write{row: &lotteryNotDrawnRow, args: args{pNow: c.now()}, note: "landed after the draw recorded its entries"}, txOptions{})
}

// finaliseEntry writes the result of one entry: the "lottery result (win)" or
// "(lose)" row, UpdateItem PK REQ#<requestId>, SK META, condition status = QUEUED. An
// entry already final must hold the same result.
func (c *Client) finaliseEntry(ctx context.Context, e drawEntry, won bool) error {
	r := &lotteryLoseRow
	if won {
		r = &lotteryWinRow
	}
	if e.Status.IsTerminal() {
		return drawnAs(e.RequestID, e.Status, e.ResultCode, won)
	}
	t, err := c.applyTo(ctx, "finalise", e.RequestID, write{row: r, args: args{pNow: c.now()}}, txOptions{})
	switch {
	case err != nil:
		return err
	case !t.Applied:
		return drawnAs(e.RequestID, t.current.Status, t.current.ResultCode, won)
	}
	return nil
}

// drawStore is an event's table as a run of its draw sees it (drawrun.Store, Results
// and Seats): each method is the row, or the read, that it names. It works under cfg,
// the event's config as read before the run and, from Refresh on, as frozen; record
// is the Draw record as it last read it, whole; p is ServePrequeue's processor, which
// decides the entries of its waves.
type drawStore struct {
	c      *Client
	cfg    *eventItem
	record *DrawRecord
	p      *Processor
}

// keep keeps r as the Draw record last read.
func (s *drawStore) keep(r *DrawRecord, err error) (drawrun.Record, error) {
	if err != nil {
		return drawrun.Record{}, err
	}
	s.record = r
	return r.run(), nil
}

// run is r as a run of the draw, or its verifier, reads it.
func (r *DrawRecord) run() drawrun.Record {
	return drawrun.Record{Collecting: r.Phase == PhaseCollecting, Seed: r.Seed,
		EntryCount: r.EntryCount, EntriesHash: r.EntriesHash, EntryChunks: r.EntryChunks}
}

// Record reads the Draw record: GetItem PK EVENT#<eventId>, SK DRAW, strongly
// consistent.
func (s *drawStore) Record(ctx context.Context) (drawrun.Record, error) {
	return s.keep(s.c.getDraw(ctx, s.cfg.EventID))
}

// Reveal returns the seed the record of the entries reveals (revealSeed).
func (s *drawStore) Reveal(ctx context.Context) (string, error) {
	return s.c.revealSeed(ctx, s.cfg, s.record)
}

// Freeze moves the draw from COLLECTING to DRAWING (freezeDraw).
func (s *drawStore) Freeze(ctx context.Context) (drawrun.Record, error) {
	return s.keep(s.c.freezeDraw(ctx, s.cfg))
}

// Refresh reads the event's config: GetItem PK EVENT#<eventId>, SK CONFIG, strongly
// consistent.
func (s *drawStore) Refresh(ctx context.Context) (drawrun.Bounds, error) {
	cfg, err := s.c.getEvent(ctx, s.cfg.EventID)
	if err != nil {
		return drawrun.Bounds{}, err
	}
	s.cfg = cfg
	return drawrun.Bounds{Before: int64(cfg.entriesCutoff() + 1), OpensAt: int64(cfg.drawOpensAt(s.c.opts.DrawSettleWindow))}, nil
}

// QueuedBefore reads the requests queued before t from GSI2 (queueOrder).
func (s *drawStore) QueuedBefore(ctx context.Context, t int64) ([]drawrun.Entry, error) {
	return runEntries(s.c.queueOrder(ctx, s.cfg.EventID, EpochMillis(t), true))
}

// QueuedFrom reads the requests queued at t or later from GSI2 (queueOrder).
func (s *drawStore) QueuedFrom(ctx context.Context, t int64) ([]drawrun.Entry, error) {
	return runEntries(s.c.queueOrder(ctx, s.cfg.EventID, EpochMillis(t), false))
}

// QueuedBetween reads the requests queued at from or later and before to from GSI2, in
// queue order, as queueOrder does.
func (s *drawStore) QueuedBetween(ctx context.Context, from, to int64) ([]drawrun.Entry, error) {
	lo, err := QueuedAtBound(max(EpochMillis(from), 0))
	if err != nil {
		return nil, err
	}
	hi, err := QueuedAtBound(EpochMillis(to))
	if err != nil {
		return nil, err
	}
	rows, err := s.c.queueRows(ctx, s.cfg.EventID, expression.Key(attrGSI2SK).Between(expression.Value(lo), expression.Value(hi)))
	return runEntries(slices.DeleteFunc(rows, func(e drawEntry) bool { return int64(e.QueuedAt) >= to }), err)
}

// runEntries are rows of GSI2 as a run of the draw reads them.
func runEntries(rows []drawEntry, err error) ([]drawrun.Entry, error) {
	if err != nil {
		return nil, err
	}
	entries := make([]drawrun.Entry, len(rows))
	for i, e := range rows {
		entries[i] = e.run()
	}
	return entries, nil
}

// Request reads a request: GetItem PK REQ#<requestId>, SK META, strongly consistent.
func (s *drawStore) Request(ctx context.Context, id string) (drawrun.Entry, error) {
	r, err := s.c.getRequest(ctx, id, true)
	switch {
	case errors.Is(err, ErrNotFound):
		return drawrun.Entry{}, &drawrun.NotFoundError{Err: err}
	case err != nil:
		return drawrun.Entry{}, err
	}
	e := drawEntryOf(r).run()
	e.EventID = r.EventID
	return e, nil
}

// Collect is the "lottery entry collected" row (collectEntry).
func (s *drawStore) Collect(ctx context.Context, id string) (bool, drawrun.Entry, error) {
	t, err := s.c.collectEntry(ctx, id)
	if err != nil || t.Applied {
		return t.Applied, drawrun.Entry{}, err
	}
	return false, drawEntryOf(t.current).run(), nil
}

// RecordEntries is the "draw: record the entries" row: UpdateItem PK EVENT#<eventId>,
// SK DRAW, SET entryCount, entriesHash, entryChunks and seed; condition phase =
// DRAWING AND attribute_not_exists(entriesHash). A lost condition is not an error.
func (s *drawStore) RecordEntries(ctx context.Context, count int64, hash string, chunks int64, seed string) error {
	key, _ := NewEventKey(s.cfg.EventID, EventItemDraw)
	err := s.c.do(ctx, txOptions{}, []write{{row: &drawEntriesRow, key: key.Key(), args: args{
		pEntryCount: count, pEntriesHash: hash, pEntryChunks: chunks, pSeed: seed}}})
	var lost *conditionLost
	if err != nil && !errors.As(err, &lost) {
		return fmt.Errorf("draw %s: %s: %w", s.cfg.EventID, drawEntriesRow.name, err)
	}
	return nil
}

// Finalise writes an entry's result (finaliseEntry).
func (s *drawStore) Finalise(ctx context.Context, e drawrun.Entry, won bool) error {
	return s.c.finaliseEntry(ctx, drawEntry{RequestID: e.RequestID, Status: Status(e.Status), ResultCode: ResultCode(e.ResultCode)}, won)
}

// NotDrawn is the "lottery result (not drawn)" row (markNotDrawn).
func (s *drawStore) NotDrawn(ctx context.Context, id string) error {
	_, err := s.c.markNotDrawn(ctx, id)
	return err
}

// Close is the "lottery result (closed)" row (MarkClosed).
func (s *drawStore) Close(ctx context.Context, id string) error {
	_, err := s.c.closeEntry(ctx, id)
	return err
}

// drawnAs checks that a final entry holds the result the draw gives it: else
// ErrDrawMismatch.
func drawnAs(id string, status Status, code ResultCode, won bool) error {
	wantStatus, wantCode := StatusRejected, ResultLotteryLose
	if won {
		wantStatus, wantCode = StatusSucceeded, ResultSuccess
	}
	if status != wantStatus || code != wantCode {
		return fmt.Errorf("%w: entry %s is %s (%s), the draw says %s (%s)", ErrDrawMismatch, id, status, code, wantStatus, wantCode)
	}
	return nil
}

// collectEntry is the "lottery entry collected" row: UpdateItem PK REQ#<requestId>,
// SK META, SET status = QUEUED, startedAt; condition (status = QUEUED OR status =
// RECEIVED) AND attribute_not_exists(startedAt). A lost condition is not an error.
func (c *Client) collectEntry(ctx context.Context, requestID string) (Transition, error) {
	return c.applyTo(ctx, "collect entry", requestID, write{row: &lotteryCollectRow, args: args{pNow: c.now()}, note: "collected for the draw"}, txOptions{})
}

// seedCommitment is the hex SHA-256 of a seed, published before the draw.
var seedCommitment = drawproof.Commitment

// newDrawRecord makes a new LOTTERY event's Draw record and sets the config's
// seedCommitment, seedMode and phase.
func (c *Client) newDrawRecord(ctx context.Context, cfg *eventItem) (DrawRecord, error) {
	record := DrawRecord{EventID: cfg.EventID, Phase: PhaseCollecting, WinnerCount: cfg.WinnerCount}
	var drawSeed []byte
	var err error
	if c.opts.Seeds != nil {
		record.SeedMode = seed.Sealed
		drawSeed, err = drawproof.FromSource(ctx, c.opts.Seeds.Seed, cfg.EventID)
	} else {
		record.SeedMode = seed.Unsealed
		drawSeed, err = drawproof.NewSeed()
		record.Seed = hex.EncodeToString(drawSeed)
	}
	if err != nil {
		return DrawRecord{}, err
	}
	record.SeedCommitment = seedCommitment(drawSeed)
	cfg.SeedCommitment, cfg.SeedMode, cfg.Phase = record.SeedCommitment, record.SeedMode, PhaseCollecting
	return record, nil
}

// revealSeed returns the hex seed that the draw's freeze writes on the Draw record:
// the stored one of an unsealed event, the source's of a sealed one. Either must
// hash to the published commitment, else ErrSeedMismatch (drawproof.Reveal). A
// sealed event drawn by a client without Options.Seeds is ErrNoSeedSource.
func (c *Client) revealSeed(ctx context.Context, cfg *eventItem, record *DrawRecord) (string, error) {
	var drawSeed []byte
	from := "the seed stored on the Draw record"
	switch {
	case record.SeedMode != seed.Sealed:
		drawSeed, _ = hex.DecodeString(record.Seed) // a seed that is not hex fails the commitment
	case c.opts.Seeds == nil:
		return "", fmt.Errorf("%w: %s was created with a sealed seed; draw it with Options.Seeds set to the same source", ErrNoSeedSource, cfg.EventID)
	default:
		var err error
		if drawSeed, err = drawproof.FromSource(ctx, c.opts.Seeds.Seed, cfg.EventID); err != nil {
			return "", err
		}
		from = "the seed Options.Seeds gives"
	}
	return drawproof.Reveal(cfg.EventID, from, drawSeed, record.SeedCommitment, cfg.SeedCommitment, ErrSeedMismatch)
}

// warnUnsealed logs that a LOTTERY event just created has an unsealed seed, so that
// the development default cannot go unnoticed in production.
func (c *Client) warnUnsealed(ctx context.Context, cfg *eventItem) {
	if cfg.EventType == Lottery && cfg.SeedMode == seed.Unsealed {
		c.opts.Logger.WarnContext(ctx, "lottery seed is UNSEALED: anyone who can read the table can read it before the draw; set Options.Seeds for a real draw",
			"eventId", cfg.EventID)
	}
}
