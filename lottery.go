package asyncevent

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/asyncevent/asyncevent/draw"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/asyncevent/asyncevent/entity"
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
	// request IDs, and when it ran and was announced.
	EntryCount  int64       `dynamodbav:"entryCount,omitempty"`
	EntriesHash string      `dynamodbav:"entriesHash,omitempty"`
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
	attrDrawnAt     = "drawnAt"
	attrSeed        = "seed"
)

// The params of the draw's rows.
const (
	pEntryCount  param = "entryCount"
	pEntriesHash param = "entriesHash"
	pSeed        param = "seed"
)

// phaseIs: the Draw record is in the phase p.
func phaseIs(p UIPhase) cond {
	return fixed(expression.Name(attrPhase).Equal(expression.Value(p)))
}

// eventExists: the item is there to update.
var eventExists = fixed(expression.AttributeExists(expression.Name(attrPK)))

// entriesUnrecorded: the draw is DRAWING and its entries are not recorded yet.
var entriesUnrecorded = all(phaseIs(PhaseDrawing), fixed(expression.AttributeNotExists(expression.Name(attrEntriesHash))))

// queuedAfterCutoff: the request was queued after its lottery's cutoff, so it is no
// entry of the draw: queuedAt > lotteryCutoffAt.
var queuedAfterCutoff = fixed(expression.Name(attrQueuedAt).GreaterThan(expression.Name(attrLotteryCutoffAt)))

// queuedByCutoff: queuedAt ≤ lotteryCutoffAt.
var queuedByCutoff = fixed(expression.Name(attrQueuedAt).LessThanEqual(expression.Name(attrLotteryCutoffAt)))

// notAnEntry: the request is no lottery entry queued by its cutoff, which only a
// failure checked against the draw's phase may end (failEntry).
var notAnEntry = either(fixed(expression.Name(attrEventType).NotEqual(expression.Value(Lottery))),
	fixed(expression.AttributeNotExists(expression.Name(attrQueuedAt))), queuedAfterCutoff)

// notCollected: no worker has collected the entry yet: attribute_not_exists(startedAt).
var notCollected = fixed(expression.AttributeNotExists(expression.Name(attrStartedAt)))

// The draw's rows: the Draw record and the event's config move through the phases
// together, and each entry gets its result under a condition.
var (
	drawFreezeRow = row{
		name: "draw: freeze the entries", method: "Draw", item: entity.Draw, op: opUpdate, cond: phaseIs(PhaseCollecting),
		sets: []set{setTo(attrPhase, PhaseDrawing), setTo(attrDrawnAt, pNow)},
	}
	drawEntriesRow = row{
		name: "draw: record the entries", method: "Draw", item: entity.Draw, op: opUpdate, cond: entriesUnrecorded,
		sets: []set{setTo(attrEntryCount, pEntryCount), setTo(attrEntriesHash, pEntriesHash), setTo(attrSeed, pSeed)},
	}
	drawAnnounceRow = row{
		name: "draw: announce", method: "Draw", item: entity.Draw, op: opUpdate, cond: phaseIs(PhaseDrawing),
		sets: []set{setTo(attrPhase, PhaseAnnounced), setTo(attrAnnouncedAt, pNow)},
	}
	eventDrawingRow = row{
		name: "event: drawing", method: "Draw", item: entity.Config, op: opUpdate, cond: eventExists,
		sets: []set{setTo(attrPhase, PhaseDrawing)},
	}
	eventAnnouncedRow = row{
		name: "event: announced", method: "Draw", item: entity.Config, op: opUpdate, cond: eventExists,
		sets: []set{setTo(attrPhase, PhaseAnnounced), setTo(attrAnnouncedAt, pNow)},
	}
	lotteryWinRow = row{
		name: "lottery result (win)", method: "Draw", item: entity.Request, op: opUpdate,
		from: []leave{{status: StatusQueued}, {status: StatusReceived}}, to: StatusSucceeded,
		sets: append(finalSets(UISuccess, ResultSuccess), setTo(attrUIPhase, PhaseAnnounced), setTo(attrAnnouncedAt, pNow)),
	}
	lotteryLoseRow = row{
		name: "lottery result (lose)", method: "Draw", item: entity.Request, op: opUpdate,
		from: []leave{{status: StatusQueued}, {status: StatusReceived}}, to: StatusRejected,
		sets: append(finalSets(UIRejected, ResultLotteryLose), setTo(attrUIPhase, PhaseAnnounced), setTo(attrAnnouncedAt, pNow)),
	}
	lotteryClosedRow = row{
		name: "lottery result (closed)", method: "MarkClosed", item: entity.Request, op: opUpdate,
		from: []leave{{status: StatusQueued}, {status: StatusReceived}}, guard: queuedAfterCutoff, to: StatusRejected,
		sets: finalSets(UIRejected, ResultRejectedClosed),
	}
	lotteryCollectRow = row{
		name: "lottery entry collected", method: "Processor.ProcessOne", item: entity.Request, op: opUpdate,
		from: []leave{{status: StatusQueued}, {status: StatusReceived}}, guard: notCollected, to: StatusQueued,
		sets: []set{setTo(attrStartedAt, pNow)},
	}
	entryFailureRow = row{
		name: "entry failure", method: "Processor.ProcessOne", item: entity.Request, op: opUpdate,
		from: []leave{{status: StatusQueued}, {status: StatusReceived}}, guard: queuedByCutoff, to: StatusFailedFinal,
		sets: failureSets,
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
func (c *Client) MarkClosed(ctx context.Context, requestID string) (Transition, error) {
	return c.applyTo(ctx, "close entry", requestID, write{row: &lotteryClosedRow, args: args{pNow: c.now()}, note: "queued after the cutoff"}, txOptions{})
}

// The draw of a LOTTERY event, and how anyone can check it.
//
// The event's config publishes seedCommitment = SHA-256(seed) when the event is made.
// The draw freezes the entries — the requests queued no later than the cutoff that are
// still in the running — recording their count and draw.EntriesHash, reveals the seed, and
// gives a win to the K entries with the smallest draw.Score(seed, entriesHash,
// requestId). Every step is a conditional write, so a draw that stops half-way can run
// again and comes to the same winners.

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
//     condition phase = COLLECTING. Nothing joins or leaves the entries by then:
//     ingest's writes of a request and a worker's failure of an entry end by the
//     entries' fence (the moment the draw may begin, less up to a second), and from
//     it on a worker leaves an entry it meets to the draw;
//  2. reads the entries from GSI2 (Query GSI2PK = EVENT#<eventId>, GSI2SK <
//     QAT#<cutoff + 1 ms>, each index shard, in pages, never a Scan): the requests
//     queued by the cutoff that are RECEIVED or QUEUED (or already finalised by this
//     draw), whether or not a worker has collected them yet; the status of each one
//     not collected is confirmed with a strongly consistent GetItem PK
//     REQ#<requestId>, SK META, as GSI2 is read eventually consistent;
//  3. records them and reveals the seed: UpdateItem of the Draw record, SET
//     entryCount, draw.EntriesHash and seed, condition phase = DRAWING AND
//     attribute_not_exists(entriesHash). A sealed seed comes from Options.Seeds
//     (without it ErrNoSeedSource), and a seed that does not hash to the published
//     commitment is ErrSeedMismatch; both are found before the freeze, so that a
//     draw refused for them writes nothing;
//  4. picks the winners, the K entries with the smallest draw.Score (all of them if
//     fewer than K);
//  5. finalises each entry with UpdateItem PK REQ#<requestId>, SK META, SET status =
//     SUCCEEDED, uiResult SUCCESS, resultCode SUCCESS, or status = REJECTED, uiResult
//     REJECTED, resultCode REJECTED_LOTTERY_LOSE, and uiPhase ANNOUNCED, announcedAt,
//     finishedAt; condition status = QUEUED OR status = RECEIVED
//     (Options.DrawConcurrency at once); requests queued after the cutoff that are
//     still waiting end REJECTED_CLOSED;
//  6. announces: Draw record and config from DRAWING to ANNOUNCED, announcedAt.
//
// So the set of entries the draw records is exactly the set it finalises, also when
// the workers still hold a backlog of the event's messages. Draw is idempotent and
// resumable: run again after a crash it finds the same entries (their hash must
// equal the recorded one, else ErrDrawMismatch), comes to the same winners and
// finishes the rest; on an announced event it returns the stored result.
func (c *Client) Draw(ctx context.Context, eventID string) (*DrawResult, error) {
	cfg, err := c.getEvent(ctx, eventID)
	if err != nil {
		return nil, err
	}
	if cfg.EventType != Lottery {
		return nil, fmt.Errorf("%w: %s is %s", ErrNotLottery, eventID, cfg.EventType)
	}
	if opens := cfg.drawOpensAt(c.opts.DrawSettleWindow); c.now() < opens {
		return nil, fmt.Errorf("%w: %s can be drawn from %s", ErrDrawTooEarly, eventID, opens.Time())
	}
	record, err := c.getDraw(ctx, eventID)
	if err != nil {
		return nil, err
	}
	var seedHex string
	if record.EntriesHash == "" {
		if seedHex, err = c.revealSeed(ctx, cfg, record); err != nil {
			return nil, err
		}
	}
	if record.Phase == PhaseCollecting {
		if record, err = c.freezeDraw(ctx, cfg); err != nil {
			return nil, err
		}
	}
	entries, err := c.drawEntries(ctx, cfg)
	if err == nil && record.EntriesHash == "" {
		entries, err = c.confirmEntries(ctx, entries)
	}
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.RequestID
	}
	record, revealed, err := c.frozenEntries(ctx, cfg, record, ids, seedHex)
	if err != nil {
		return nil, err
	}
	winners := draw.Winners(revealed, ids, int(record.WinnerCount))
	if record.Phase != PhaseAnnounced {
		if err := c.finaliseEntries(ctx, cfg, entries, winners); err != nil {
			return nil, err
		}
		if record, err = c.announceDraw(ctx, cfg); err != nil {
			return nil, err
		}
	}
	return &DrawResult{Record: *record, Winners: winners}, nil
}

// drawOpensAt is when Draw may begin: the cutoff plus the settle window. Ingest ends
// its writes of a request queued by the cutoff before then.
func (e *eventItem) drawOpensAt(settle time.Duration) EpochMillis {
	return MillisOf(e.entriesCutoff().Time().Add(settle))
}

// entryFence is the moment after which nothing may write a lottery's entries but its
// draw: the moment Draw may begin (the cutoff plus Options.DrawSettleWindow) less a
// margin, the smaller of one second and a quarter of the window, for a call cut off
// at the fence to reach DynamoDB. Ingest's writes of a request and a worker's failure
// of an entry end by it, so that the entries a draw reads from GSI2 are all the
// entries there will be, each with its last status before the draw (Draw confirms the
// status of those not yet collected with a strongly consistent read). Every process
// of an event must use the same window.
func (c *Client) entryFence(e *eventItem) time.Time {
	window := c.opts.DrawSettleWindow
	return e.entriesCutoff().Time().Add(window - min(time.Second, window/4))
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

// isEntry reports whether a request queued by the cutoff takes part in the draw:
// waiting for it (collected by a worker or not), or finalised by it.
func (e drawEntry) isEntry() bool {
	return e.Status == StatusQueued || e.Status == StatusReceived ||
		e.Status == StatusSucceeded && e.ResultCode == ResultSuccess ||
		e.Status == StatusRejected && e.ResultCode == ResultLotteryLose
}

// drawEntries reads the entries of a lottery from GSI2, in queue order.
func (c *Client) drawEntries(ctx context.Context, cfg *eventItem) ([]drawEntry, error) {
	all, err := c.queueOrder(ctx, cfg.EventID, cfg.LotteryCutoffAt+1, true)
	if err != nil {
		return nil, err
	}
	entries := all[:0]
	for _, e := range all {
		if e.isEntry() {
			entries = append(entries, e)
		}
	}
	return entries, nil
}

// confirmEntries reads again, strongly consistent, each entry that GSI2 shows not yet
// collected, and keeps those still entries. GSI2 is read eventually consistent: an
// entry failed just before the fence may still show there as waiting. A collected
// entry cannot have failed since (its only writes after the collect are the draw's),
// so it needs no read.
func (c *Client) confirmEntries(ctx context.Context, entries []drawEntry) ([]drawEntry, error) {
	confirmed := make([]drawEntry, len(entries))
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	work := make(chan int)
	for range c.opts.DrawConcurrency {
		wg.Go(func() {
			for i := range work {
				e := entries[i]
				if e.StartedAt == 0 && !e.Status.IsTerminal() {
					r, err := c.getRequest(ctx, e.RequestID, true)
					if err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
						continue
					}
					e.Status, e.ResultCode, e.StartedAt = r.Status, r.ResultCode, r.StartedAt
				}
				confirmed[i] = e
			}
		})
	}
	for i := range entries {
		work <- i
	}
	close(work)
	wg.Wait()
	if len(errs) > 0 {
		return nil, fmt.Errorf("draw: confirming the entries: %w", errors.Join(errs...))
	}
	kept := confirmed[:0]
	for _, e := range confirmed {
		if e.isEntry() {
			kept = append(kept, e)
		}
	}
	return kept, nil
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
	rows, err := allEventRows[drawEntry](ctx, c, eventID, &sk, attrRequestID, attrUserID, attrRequestedAt, attrStatus, attrResultCode, attrQueuedAt, attrStartedAt, attrHoldExpiresAt, attrSeatShard)
	slices.SortStableFunc(rows, func(a, b drawEntry) int {
		return cmp.Or(cmp.Compare(a.QueuedAt, b.QueuedAt), strings.Compare(a.RequestID, b.RequestID))
	})
	return rows, err
}

// freezeDraw moves the draw from COLLECTING to DRAWING. When another Draw froze it
// first, it returns that one's record.
func (c *Client) freezeDraw(ctx context.Context, cfg *eventItem) (*DrawRecord, error) {
	if err := c.movePhase(ctx, cfg.EventID, &drawFreezeRow, &eventDrawingRow, args{pNow: c.now()}); err != nil {
		return nil, err
	}
	return c.getDraw(ctx, cfg.EventID)
}

// frozenEntries records the count and hash of the entries ids a freeze read, with
// the revealed seed, unless an earlier call recorded them; then ids must be those
// (else ErrDrawMismatch). It returns the record and the seed.
func (c *Client) frozenEntries(ctx context.Context, cfg *eventItem, record *DrawRecord, ids []string, seedHex string) (*DrawRecord, []byte, error) {
	hash := draw.EntriesHash(ids)
	var err error
	if record.EntriesHash == "" {
		if record, err = c.recordEntries(ctx, cfg, int64(len(ids)), hash, seedHex); err != nil {
			return nil, nil, err
		}
	}
	if record.EntryCount != int64(len(ids)) || record.EntriesHash != hash {
		return nil, nil, fmt.Errorf("%w: %s froze %d entries (hash %s), the table now has %d (hash %s)",
			ErrDrawMismatch, cfg.EventID, record.EntryCount, record.EntriesHash, len(ids), hash)
	}
	revealed, err := hex.DecodeString(record.Seed)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: the stored seed is not hex: %w", cfg.EventID, err)
	}
	return record, revealed, nil
}

// recordEntries records the count and hash of the entries a DRAWING draw read, and
// reveals the seed. When another Draw recorded them first, it returns that one's
// record.
func (c *Client) recordEntries(ctx context.Context, cfg *eventItem, count int64, hash, seedHex string) (*DrawRecord, error) {
	key, _ := NewEventKey(cfg.EventID, EventItemDraw)
	err := c.do(ctx, txOptions{}, []write{{row: &drawEntriesRow, key: key.Key(), args: args{pEntryCount: count, pEntriesHash: hash, pSeed: seedHex}}})
	var lost *conditionLost
	if err != nil && !errors.As(err, &lost) {
		return nil, fmt.Errorf("draw %s: %s: %w", cfg.EventID, drawEntriesRow.name, err)
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
	c.events.forget(eventID)
	var lost *conditionLost
	if errors.As(err, &lost) && lost.index == 0 {
		return nil
	}
	if err != nil {
		return fmt.Errorf("draw %s: %s: %w", eventID, draw.name, err)
	}
	return nil
}

// finaliseEntries writes each entry's result, DrawConcurrency at a time, then closes
// the requests queued after the cutoff that are still waiting.
func (c *Client) finaliseEntries(ctx context.Context, cfg *eventItem, entries []drawEntry, winners []string) error {
	won := make(map[string]bool, len(winners))
	for _, id := range winners {
		won[id] = true
	}
	late, err := c.queueOrder(ctx, cfg.EventID, cfg.LotteryCutoffAt+1, false)
	if err != nil {
		return err
	}
	work := make(chan func() error)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for range c.opts.DrawConcurrency {
		wg.Go(func() {
			for job := range work {
				if err := job(); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	feed := func(job func() error) bool {
		select {
		case work <- job:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for _, e := range entries {
		if !feed(func() error { return c.finaliseEntry(ctx, e, won[e.RequestID]) }) {
			break
		}
	}
	for _, e := range late {
		if e.Status != StatusQueued && e.Status != StatusReceived {
			continue
		}
		if !feed(func() error { _, err := c.MarkClosed(ctx, e.RequestID); return err }) {
			break
		}
	}
	close(work)
	wg.Wait()
	if ctx.Err() != nil {
		errs = append(errs, ctx.Err())
	}
	if len(errs) > 0 {
		return fmt.Errorf("draw %s: %d entries not finalised, run Draw again: %w", cfg.EventID, len(errs), errors.Join(errs...))
	}
	return nil
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
		if e.Status != r.to {
			return fmt.Errorf("%w: entry %s is %s, the draw says %s", ErrDrawMismatch, e.RequestID, e.Status, r.to)
		}
		return nil
	}
	t, err := c.applyTo(ctx, "finalise", e.RequestID, write{row: r, args: args{pNow: c.now()}}, txOptions{})
	switch {
	case err != nil:
		return err
	case !t.Applied && t.current.Status != r.to:
		return fmt.Errorf("%w: entry %s is %s, the draw says %s", ErrDrawMismatch, e.RequestID, t.current.Status, r.to)
	}
	return nil
}

// checkFrozen checks what a draw or a pre-queue's freeze recorded against the table,
// telling problem each difference: the revealed seed against the commitment the
// event published, and the entries ids against the recorded count and hash. It
// returns the revealed seed.
func checkFrozen(cfg *eventItem, record *DrawRecord, ids []string, problem func(format string, args ...any)) []byte {
	revealed, err := hex.DecodeString(record.Seed)
	if err != nil {
		problem("the revealed seed is not hex")
	}
	if got := seedCommitment(revealed); got != cfg.SeedCommitment || got != record.SeedCommitment {
		problem("SHA-256 of the revealed seed is %s, the published commitment %s", got, cfg.SeedCommitment)
	}
	if int64(len(ids)) != record.EntryCount {
		problem("%d entries on the table, the freeze recorded %d", len(ids), record.EntryCount)
	}
	if h := draw.EntriesHash(ids); h != record.EntriesHash {
		problem("the entries hash to %s, the freeze recorded %s", h, record.EntriesHash)
	}
	return revealed
}

// Verification is what VerifyDraw found.
type Verification struct {
	EventID    string
	EntryCount int
	Winners    []string // recomputed from the revealed seed and the entries
	Problems   []string // empty when the draw checks out
}

// OK reports whether the draw checks out.
func (v *Verification) OK() bool { return len(v.Problems) == 0 }

// String is a human summary.
func (v *Verification) String() string {
	if v.OK() {
		return fmt.Sprintf("draw of %s verified: %d entries, %d winners", v.EventID, v.EntryCount, len(v.Winners))
	}
	return fmt.Sprintf("draw of %s does NOT verify: %s", v.EventID, strings.Join(v.Problems, "; "))
}

// VerifyDraw re-checks a drawn lottery from what is on the table, as anyone holding
// the revealed seed and the entry list could, without a seed source: the seed
// against the commitment the config published, the entries read from GSI2 against
// the count and hash the draw froze, and every entry's result against the winners
// recomputed from the seed and the entries (draw.Winners); an entry whose result on
// GSI2 (read eventually consistent) differs is read again with a strongly consistent
// GetItem before it is reported. Each difference is one of Verification.Problems. A
// draw that has not started yet is ErrDrawTooEarly.
func (c *Client) VerifyDraw(ctx context.Context, eventID string) (*Verification, error) {
	cfg, err := c.getEvent(ctx, eventID)
	if err != nil {
		return nil, err
	}
	record, err := c.getDraw(ctx, eventID)
	if err != nil {
		return nil, err
	}
	if record.Phase == PhaseCollecting {
		return nil, fmt.Errorf("%w: %s has not been drawn", ErrDrawTooEarly, eventID)
	}
	v := &Verification{EventID: eventID}
	problem := func(format string, args ...any) { v.Problems = append(v.Problems, fmt.Sprintf(format, args...)) }

	all, err := c.queueOrder(ctx, eventID, cfg.LotteryCutoffAt+1, true)
	if err != nil {
		return nil, err
	}
	var ids []string
	byID := map[string]drawEntry{}
	for _, e := range all {
		if e.isEntry() {
			ids = append(ids, e.RequestID)
			byID[e.RequestID] = e
		}
	}
	v.EntryCount = len(ids)
	revealed := checkFrozen(cfg, record, ids, problem)
	v.Winners = draw.Winners(revealed, ids, int(record.WinnerCount))
	won := map[string]bool{}
	for _, id := range v.Winners {
		won[id] = true
	}
	resultProblem := func(id string, status Status) string {
		waiting := status == StatusQueued || status == StatusReceived
		switch {
		case waiting && record.Phase == PhaseAnnounced:
			return fmt.Sprintf("entry %s has no result", id)
		case waiting:
		case won[id] && status != StatusSucceeded:
			return fmt.Sprintf("entry %s won but is %s", id, status)
		case !won[id] && status != StatusRejected:
			return fmt.Sprintf("entry %s lost but is %s", id, status)
		}
		return ""
	}
	for _, id := range ids {
		p := resultProblem(id, byID[id].Status)
		if p == "" {
			continue
		}
		// GSI2 is read eventually consistent: the entry itself has the last word.
		r, err := c.getRequest(ctx, id, true)
		if err != nil {
			return nil, err
		}
		if p = resultProblem(id, r.Status); p != "" {
			problem("%s", p)
		}
	}
	for _, e := range all {
		if !e.isEntry() && e.Status == StatusSucceeded {
			problem("request %s is SUCCEEDED (%s) but is not an entry", e.RequestID, e.ResultCode)
		}
	}
	return v, nil
}
