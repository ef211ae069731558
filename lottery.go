package asyncevent

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
)

// DrawRecord is the Draw record of a LOTTERY event (PK EVENT#<eventId>, SK DRAW). It
// is created with the event, holding seedCommitment, the SHA-256 of the draw's secret
// seed, as the event's config does; the draw writes the seed on it and records the
// entries it drew from, so anyone can recompute the winners.
type DrawRecord struct {
	EntityType     EntityType `dynamodbav:"entityType"` // DRAW
	EventID        string     `dynamodbav:"eventId"`
	Phase          UIPhase    `dynamodbav:"phase"`
	WinnerCount    int64      `dynamodbav:"winnerCount"`
	SeedCommitment string     `dynamodbav:"seedCommitment"` // hex SHA-256 of the seed

	// SeedMode is where the seed is kept until the draw: SEALED, by Options.Seeds, the
	// record holding no seed until the draw writes it; UNSEALED (or absent), on this
	// record from the event's creation, where any reader of the table finds it.
	SeedMode SeedMode `dynamodbav:"seedMode,omitempty"`

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

type drawItem struct {
	Key
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
func phaseIs(p UIPhase) *expression.ConditionBuilder {
	c := expression.Name(attrPhase).Equal(expression.Value(p))
	return &c
}

// eventExists: the item is there to update.
var eventExists = expression.AttributeExists(expression.Name(attrPK))

// The draw's rows: the Draw record and the event's config move through the phases
// together, and each entry gets its result under a condition.
var (
	drawFreezeRow = row{
		name: "draw: freeze the entries", method: "Draw", item: EntityDraw, op: opUpdate, cond: phaseIs(PhaseCollecting),
		sets: []set{setTo(attrPhase, PhaseDrawing), setTo(attrEntryCount, pEntryCount), setTo(attrEntriesHash, pEntriesHash), setTo(attrSeed, pSeed), setTo(attrDrawnAt, pNow)},
	}
	drawAnnounceRow = row{
		name: "draw: announce", method: "Draw", item: EntityDraw, op: opUpdate, cond: phaseIs(PhaseDrawing),
		sets: []set{setTo(attrPhase, PhaseAnnounced), setTo(attrAnnouncedAt, pNow)},
	}
	eventDrawingRow = row{
		name: "event: drawing", method: "Draw", item: EntityConfig, op: opUpdate, cond: &eventExists,
		sets: []set{setTo(attrPhase, PhaseDrawing)},
	}
	eventAnnouncedRow = row{
		name: "event: announced", method: "Draw", item: EntityConfig, op: opUpdate, cond: &eventExists,
		sets: []set{setTo(attrPhase, PhaseAnnounced), setTo(attrAnnouncedAt, pNow)},
	}
	lotteryWinRow = row{
		name: "lottery result (win)", method: "Draw", item: EntityRequest, op: opUpdate,
		from: []leave{{status: StatusQueued}}, to: StatusSucceeded,
		sets: append(finalSets(UISuccess, ResultSuccess), setTo(attrUIPhase, PhaseAnnounced), setTo(attrAnnouncedAt, pNow)),
	}
	lotteryLoseRow = row{
		name: "lottery result (lose)", method: "Draw", item: EntityRequest, op: opUpdate,
		from: []leave{{status: StatusQueued}}, to: StatusRejected,
		sets: append(finalSets(UIRejected, ResultLotteryLose), setTo(attrUIPhase, PhaseAnnounced), setTo(attrAnnouncedAt, pNow)),
	}
	lotteryClosedRow = row{
		name: "lottery result (closed)", method: "MarkClosed", item: EntityRequest, op: opUpdate,
		from: []leave{{status: StatusQueued}}, to: StatusRejected,
		sets: finalSets(UIRejected, ResultRejectedClosed),
	}
)

// MarkClosed ends a lottery entry queued after the cutoff, the "lottery result
// (closed)" row: UpdateItem PK REQ#<requestId>, SK META, SET status = REJECTED,
// uiResult REJECTED, resultCode REJECTED_CLOSED, finishedAt; condition status =
// QUEUED. A lost condition is not an error: the Transition holds the request as it
// is.
func (c *Client) MarkClosed(ctx context.Context, requestID string) (Transition, error) {
	key, err := NewRequestKey(requestID)
	if err != nil {
		return Transition{}, err
	}
	t, err := c.apply(ctx, key, write{row: &lotteryClosedRow, args: args{pNow: c.now()}, note: "queued after the cutoff"}, txOptions{})
	if err != nil {
		return t, fmt.Errorf("close entry %s: %w", requestID, err)
	}
	return t, nil
}

// The draw of a LOTTERY event, and how anyone can check it.
//
// The event's config publishes seedCommitment = SHA-256(seed) when the event is made.
// The draw freezes the entries — the requests queued no later than the cutoff that are
// still in the running — recording their count and EntriesHash, reveals the seed, and
// gives a win to the K entries with the smallest DrawScore(seed, entriesHash,
// requestId). Every step is a conditional write, so a draw that stops half-way can run
// again and comes to the same winners.

// DrawScore is an entry's score in a draw: SHA-256 of the seed's bytes, the 32 bytes
// that entriesHash (an EntriesHash, 64 hex digits) encodes, and the request ID's
// bytes. The entries hash ties every score to the whole frozen entry set: an entry
// more, less or under another request ID changes every entry's score, so that
// neither knowing the seed early nor re-rolling a request ID picks a score. The K
// smallest scores win (compared as bytes; equal scores by request ID). An
// entriesHash that is not 64 hex digits is hashed as its text, as no draw does.
func DrawScore(seed []byte, entriesHash string, requestID string) [sha256.Size]byte {
	h := sha256.New()
	h.Write(seed)
	if b, err := hex.DecodeString(entriesHash); err == nil && len(b) == sha256.Size {
		h.Write(b)
	} else {
		h.Write([]byte(entriesHash))
	}
	h.Write([]byte(requestID))
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// EntriesHash is the hex SHA-256 of the entries' request IDs, sorted as strings and
// each followed by a newline. The draw records it so that a later change of the
// entries shows.
func EntriesHash(requestIDs []string) string {
	ids := slices.Clone(requestIDs)
	slices.Sort(ids)
	h := sha256.New()
	for _, id := range ids {
		h.Write([]byte(id))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// DrawWinners returns the k request IDs with the smallest DrawScore under the
// EntriesHash of requestIDs, smallest first: the winners of a draw of these entries.
// It keeps only k candidates at a time, so memory grows with k, not with the entries.
func DrawWinners(seed []byte, requestIDs []string, k int) []string {
	if k <= 0 {
		return nil
	}
	entriesHash := EntriesHash(requestIDs)
	var kept worstFirst
	for _, id := range requestIDs {
		s := scored{score: DrawScore(seed, entriesHash, id), id: id}
		if len(kept) < k {
			kept.push(s)
		} else if s.less(kept[0]) {
			kept.replaceWorst(s)
		}
	}
	slices.SortFunc(kept, func(a, b scored) int {
		if a.less(b) {
			return -1
		}
		return 1
	})
	winners := make([]string, len(kept))
	for i, s := range kept {
		winners[i] = s.id
	}
	return winners
}

type scored struct {
	score [sha256.Size]byte
	id    string
}

func (a scored) less(b scored) bool {
	if c := bytes.Compare(a.score[:], b.score[:]); c != 0 {
		return c < 0
	}
	return a.id < b.id
}

// worstFirst is a binary max-heap of candidates: its root is the worst one kept.
type worstFirst []scored

func (h *worstFirst) push(s scored) {
	*h = append(*h, s)
	for i := len(*h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !(*h)[parent].less((*h)[i]) {
			break
		}
		(*h)[parent], (*h)[i] = (*h)[i], (*h)[parent]
		i = parent
	}
}

// replaceWorst puts s in the root's place and sifts it down.
func (h worstFirst) replaceWorst(s scored) {
	h[0] = s
	for i := 0; ; {
		worst := i
		for _, child := range []int{2*i + 1, 2*i + 2} {
			if child < len(h) && h[worst].less(h[child]) {
				worst = child
			}
		}
		if worst == i {
			return
		}
		h[i], h[worst] = h[worst], h[i]
		i = worst
	}
}

// DrawResult is the result of a draw.
type DrawResult struct {
	Record  DrawRecord // the Draw record, seed revealed
	Winners []string   // the winners' request IDs, best score first
}

// GetDraw reads a LOTTERY event's Draw record: GetItem PK EVENT#<eventId>, SK DRAW, a
// strongly consistent read. While the event is COLLECTING the record comes back
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
	found, err := c.getItem(ctx, key.Key(), true, &item)
	switch {
	case err != nil:
		return nil, fmt.Errorf("get draw %s: %w", eventID, err)
	case !found:
		return nil, fmt.Errorf("%w: %s has no draw record", ErrNotLottery, eventID)
	}
	return &item.DrawRecord, nil
}

// Draw runs the draw of a LOTTERY event, the "lottery result (win)" and "(lose)" rows for every
// entry. It is allowed once the cutoff plus Options.DrawSettleWindow has passed
// (ErrDrawTooEarly before). It
//
//  1. reads the entries from GSI2 (Query GSI2PK = EVENT#<eventId>, GSI2SK <
//     QAT#<cutoff + 1 ms>, in pages, never a Scan): the requests queued by the cutoff
//     that are QUEUED (or already finalised by this draw);
//  2. freezes them: a TransactWriteItems that moves the Draw record (PK
//     EVENT#<eventId>, SK DRAW) and the config from COLLECTING to DRAWING, recording
//     the entry count, EntriesHash, the seed and drawnAt, condition phase =
//     COLLECTING; this reveals the seed. A sealed seed comes from Options.Seeds
//     (without it ErrNoSeedSource), and a seed that does not hash to the published
//     commitment is ErrSeedMismatch; either stops the draw before this write;
//  3. picks the winners, the K entries with the smallest DrawScore (all of them if
//     fewer than K);
//  4. finalises each entry with UpdateItem PK REQ#<requestId>, SK META, SET status =
//     SUCCEEDED, uiResult SUCCESS, resultCode SUCCESS, or status = REJECTED, uiResult
//     REJECTED, resultCode REJECTED_LOTTERY_LOSE, and uiPhase ANNOUNCED, announcedAt,
//     finishedAt; condition status = QUEUED (Options.DrawConcurrency at once); requests
//     queued after the cutoff that are still QUEUED end REJECTED_CLOSED;
//  5. announces: Draw record and config from DRAWING to ANNOUNCED, announcedAt.
//
// Draw is idempotent and resumable: run again after a crash it finds the same
// entries (their hash must equal the frozen one, else ErrDrawMismatch), comes to the
// same winners and finishes the rest; on an announced event it returns the stored
// result.
func (c *Client) Draw(ctx context.Context, eventID string) (*DrawResult, error) {
	cfg, err := c.GetEvent(ctx, eventID)
	if err != nil {
		return nil, err
	}
	if cfg.EventType != Lottery {
		return nil, fmt.Errorf("%w: %s is %s", ErrNotLottery, eventID, cfg.EventType)
	}
	if opens := MillisOf(cfg.LotteryCutoffAt.Time().Add(c.opts.DrawSettleWindow)); c.now() < opens {
		return nil, fmt.Errorf("%w: %s can be drawn from %s", ErrDrawTooEarly, eventID, opens.Time())
	}
	record, err := c.getDraw(ctx, eventID)
	if err != nil {
		return nil, err
	}
	entries, err := c.drawEntries(ctx, cfg)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.RequestID
	}
	hash := EntriesHash(ids)
	if record.Phase == PhaseCollecting {
		if record, err = c.freezeDraw(ctx, cfg, int64(len(ids)), hash); err != nil {
			return nil, err
		}
	}
	if record.EntryCount != int64(len(ids)) || record.EntriesHash != hash {
		return nil, fmt.Errorf("%w: %s froze %d entries (hash %s), the table now has %d (hash %s)",
			ErrDrawMismatch, eventID, record.EntryCount, record.EntriesHash, len(ids), hash)
	}
	seed, err := hex.DecodeString(record.Seed)
	if err != nil {
		return nil, fmt.Errorf("draw %s: the stored seed is not hex: %w", eventID, err)
	}
	winners := DrawWinners(seed, ids, int(record.WinnerCount))
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

// drawEntry is what the draw reads of a request.
type drawEntry struct {
	RequestID  string      `dynamodbav:"requestId"`
	Status     Status      `dynamodbav:"status"`
	ResultCode ResultCode  `dynamodbav:"resultCode"`
	QueuedAt   EpochMillis `dynamodbav:"queuedAt"`
}

// isEntry reports whether a request queued by the cutoff takes part in the draw:
// waiting for it, or finalised by it.
func (e drawEntry) isEntry() bool {
	return e.Status == StatusQueued ||
		e.Status == StatusSucceeded && e.ResultCode == ResultSuccess ||
		e.Status == StatusRejected && e.ResultCode == ResultLotteryLose
}

// drawEntries reads the entries of a lottery from GSI2, in queue order.
func (c *Client) drawEntries(ctx context.Context, cfg *EventConfig) ([]drawEntry, error) {
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

// queueOrder reads an event's requests from GSI2 in queue order, with just the fields
// of a drawEntry: those queued before `at` when before is true, the others otherwise.
// An event's index shards are read one after the other and their rows merged, so that
// the writes that follow the order spread over the shards instead of falling on one
// shard's key at a time.
func (c *Client) queueOrder(ctx context.Context, eventID string, at EpochMillis, before bool) ([]drawEntry, error) {
	bound, err := queuedBefore(at)
	if err != nil {
		return nil, err
	}
	sk := expression.Key(attrGSI2SK).LessThan(expression.Value(bound))
	if !before {
		sk = expression.Key(attrGSI2SK).GreaterThanEqual(expression.Value(bound))
	}
	rows, err := allEventRows[drawEntry](ctx, c, eventID, &sk, attrRequestID, attrStatus, attrResultCode, attrQueuedAt)
	slices.SortStableFunc(rows, func(a, b drawEntry) int {
		return cmp.Or(cmp.Compare(a.QueuedAt, b.QueuedAt), strings.Compare(a.RequestID, b.RequestID))
	})
	return rows, err
}

// freezeDraw moves the draw from COLLECTING to DRAWING with its entries' count and
// hash, and reveals the seed. When another Draw froze it first, it returns that one's
// record.
func (c *Client) freezeDraw(ctx context.Context, cfg *EventConfig, count int64, hash string) (*DrawRecord, error) {
	// The record as it is now: one that another Draw froze since needs no seed
	// source to finish.
	record, err := c.getDraw(ctx, cfg.EventID)
	if err != nil || record.Phase != PhaseCollecting {
		return record, err
	}
	seed, err := c.revealSeed(ctx, cfg, record)
	if err != nil {
		return nil, err
	}
	a := args{pNow: c.now(), pEntryCount: count, pEntriesHash: hash, pSeed: seed}
	if err := c.movePhase(ctx, cfg.EventID, &drawFreezeRow, &eventDrawingRow, a); err != nil {
		return nil, err
	}
	return c.getDraw(ctx, cfg.EventID)
}

// announceDraw moves the draw from DRAWING to ANNOUNCED.
func (c *Client) announceDraw(ctx context.Context, cfg *EventConfig) (*DrawRecord, error) {
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
func (c *Client) finaliseEntries(ctx context.Context, cfg *EventConfig, entries []drawEntry, winners []string) error {
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
		if e.Status != StatusQueued {
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
	key, err := NewRequestKey(e.RequestID)
	if err != nil {
		return err
	}
	t, err := c.apply(ctx, key, write{row: r, args: args{pNow: c.now()}}, txOptions{})
	switch {
	case err != nil:
		return fmt.Errorf("finalise %s: %w", e.RequestID, err)
	case !t.Applied && t.Current.Status != r.to:
		return fmt.Errorf("%w: entry %s is %s, the draw says %s", ErrDrawMismatch, e.RequestID, t.Current.Status, r.to)
	}
	return nil
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
// recomputed from the seed and the entries (DrawWinners). Each
// difference is one of Verification.Problems. A draw that has not started yet is
// ErrDrawTooEarly.
func (c *Client) VerifyDraw(ctx context.Context, eventID string) (*Verification, error) {
	cfg, err := c.GetEvent(ctx, eventID)
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

	seed, err := hex.DecodeString(record.Seed)
	if err != nil {
		problem("the revealed seed is not hex")
	}
	if got := seedCommitment(seed); got != cfg.SeedCommitment || got != record.SeedCommitment {
		problem("SHA-256 of the revealed seed is %s, the published commitment %s", got, cfg.SeedCommitment)
	}
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
	if int64(len(ids)) != record.EntryCount {
		problem("%d entries on the table, the draw froze %d", len(ids), record.EntryCount)
	}
	if h := EntriesHash(ids); h != record.EntriesHash {
		problem("the entries hash to %s, the draw froze %s", h, record.EntriesHash)
	}
	v.Winners = DrawWinners(seed, ids, int(record.WinnerCount))
	won := map[string]bool{}
	for _, id := range v.Winners {
		won[id] = true
	}
	for _, id := range ids {
		e := byID[id]
		switch {
		case e.Status == StatusQueued && record.Phase == PhaseAnnounced:
			problem("entry %s has no result", id)
		case e.Status == StatusQueued:
		case won[id] && e.Status != StatusSucceeded:
			problem("entry %s won but is %s", id, e.Status)
		case !won[id] && e.Status != StatusRejected:
			problem("entry %s lost but is %s", id, e.Status)
		}
	}
	for _, e := range all {
		if !e.isEntry() && e.Status == StatusSucceeded {
			problem("request %s is SUCCEEDED (%s) but is not an entry", e.RequestID, e.ResultCode)
		}
	}
	return v, nil
}
