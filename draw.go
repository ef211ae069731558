package asyncevent

import (
	"bytes"
	"container/heap"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The draw of a LOTTERY event, and how anyone can check it.
//
// The event's config publishes seedCommitment = SHA-256(seed) when the event is made.
// The draw freezes the entries — the requests queued no later than the cutoff that are
// still in the running — recording their count and EntriesHash, reveals the seed, and
// gives a win to the K entries with the smallest DrawScore(seed, requestId). Every
// step is a conditional write, so a draw that stops half-way can run again and comes
// to the same winners.

// DrawScore is an entry's score in a draw: SHA-256 of the seed's bytes followed by the
// request ID's bytes. The K smallest scores win (compared as bytes; equal scores by
// request ID).
func DrawScore(seed []byte, requestID string) [sha256.Size]byte {
	h := sha256.New()
	h.Write(seed)
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

// DrawWinners returns the k request IDs with the smallest DrawScore, smallest first.
// It keeps only k candidates at a time, so memory grows with k, not with the entries.
func DrawWinners(seed []byte, requestIDs []string, k int) []string {
	if k <= 0 {
		return nil
	}
	h := &scoreHeap{}
	for _, id := range requestIDs {
		s := scored{score: DrawScore(seed, id), id: id}
		if h.Len() < k {
			heap.Push(h, s)
		} else if s.less((*h)[0]) {
			(*h)[0] = s
			heap.Fix(h, 0)
		}
	}
	winners := make([]string, h.Len())
	for i := len(winners) - 1; i >= 0; i-- {
		winners[i] = heap.Pop(h).(scored).id
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

// scoreHeap is a max-heap: its root is the worst of the candidates kept.
type scoreHeap []scored

func (h scoreHeap) Len() int           { return len(h) }
func (h scoreHeap) Less(i, j int) bool { return h[j].less(h[i]) }
func (h scoreHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *scoreHeap) Push(x any)        { *h = append(*h, x.(scored)) }
func (h *scoreHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// DrawResult is the result of a draw.
type DrawResult struct {
	Record  DrawRecord // the Draw record, seed revealed
	Winners []string   // the winners' request IDs, best score first
}

// GetDraw reads a LOTTERY event's Draw record: GetItem PK EVENT#<eventId>, SK DRAW, a
// strongly consistent read. While the event is COLLECTING the seed is sealed: the
// record comes back without it. An event without one is ErrNotLottery.
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

// Draw runs the draw of a LOTTERY event, seed 003's "lottery result" row for every
// entry. It is allowed once the cutoff plus Options.DrawSettleWindow has passed
// (ErrDrawTooEarly before). It
//
//  1. reads the entries from GSI2 (Query GSI2PK = EVENT#<eventId>, GSI2SK <
//     QAT#<cutoff + 1 ms>, in pages, never a Scan): the requests queued by the cutoff
//     that are QUEUED (or already finalised by this draw);
//  2. freezes them: a TransactWriteItems that moves the Draw record (PK
//     EVENT#<eventId>, SK DRAW) and the config from COLLECTING to DRAWING, recording
//     the entry count, EntriesHash and drawnAt, condition phase = COLLECTING; this
//     reveals the seed;
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
func (c *Client) queueOrder(ctx context.Context, eventID string, at EpochMillis, before bool) ([]drawEntry, error) {
	bound, err := queuedBefore(at)
	if err != nil {
		return nil, err
	}
	sk := expression.Key(attrGSI2SK).LessThan(expression.Value(bound))
	if !before {
		sk = expression.Key(attrGSI2SK).GreaterThanEqual(expression.Value(bound))
	}
	return allEventRows[drawEntry](ctx, c, eventID, &sk, "requestId", attrStatus, "resultCode", "queuedAt")
}

// freezeDraw moves the draw from COLLECTING to DRAWING with its entries' count and
// hash. When another Draw froze it first, it returns that one's record.
func (c *Client) freezeDraw(ctx context.Context, cfg *EventConfig, count int64, hash string) (*DrawRecord, error) {
	now := c.now()
	err := c.movePhase(ctx, cfg.EventID, PhaseCollecting, PhaseDrawing, expression.
		Set(expression.Name("entryCount"), expression.Value(count)).
		Set(expression.Name("entriesHash"), expression.Value(hash)).
		Set(expression.Name("drawnAt"), expression.Value(now)), nil)
	if err != nil && !errors.Is(err, errPhaseMoved) {
		return nil, err
	}
	return c.getDraw(ctx, cfg.EventID)
}

// announceDraw moves the draw from DRAWING to ANNOUNCED.
func (c *Client) announceDraw(ctx context.Context, cfg *EventConfig) (*DrawRecord, error) {
	now := c.now()
	// Two builders: an UpdateBuilder's copies share their operations.
	drawSet := expression.Set(expression.Name("announcedAt"), expression.Value(now))
	configSet := expression.Set(expression.Name("announcedAt"), expression.Value(now))
	err := c.movePhase(ctx, cfg.EventID, PhaseDrawing, PhaseAnnounced, drawSet, &configSet)
	if err != nil && !errors.Is(err, errPhaseMoved) {
		return nil, err
	}
	return c.getDraw(ctx, cfg.EventID)
}

// errPhaseMoved: the draw was not in the phase a move expected.
var errPhaseMoved = errors.New("draw phase moved")

// movePhase moves the Draw record (condition phase = from) and the config from one
// phase to the next in one TransactWriteItems, with more fields for each.
func (c *Client) movePhase(ctx context.Context, eventID string, from, to UIPhase, drawSet expression.UpdateBuilder, configSet *expression.UpdateBuilder) error {
	drawKey, _ := NewEventKey(eventID, EventItemDraw)
	configKey, _ := NewEventKey(eventID, EventItemConfig)
	drawExpr, err := expression.NewBuilder().
		WithCondition(expression.Name("phase").Equal(expression.Value(from))).
		WithUpdate(drawSet.Set(expression.Name("phase"), expression.Value(to))).
		Build()
	if err != nil {
		return err
	}
	cset := expression.UpdateBuilder{}
	if configSet != nil {
		cset = *configSet
	}
	configExpr, err := expression.NewBuilder().
		WithCondition(expression.AttributeExists(expression.Name(attrPK))).
		WithUpdate(cset.Set(expression.Name("phase"), expression.Value(to))).
		Build()
	if err != nil {
		return err
	}
	_, err = c.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{
			TableName: aws.String(c.opts.TableName), Key: avKey(drawKey.Key()),
			ConditionExpression: drawExpr.Condition(), UpdateExpression: drawExpr.Update(),
			ExpressionAttributeNames: drawExpr.Names(), ExpressionAttributeValues: drawExpr.Values(),
		}},
		{Update: &types.Update{
			TableName: aws.String(c.opts.TableName), Key: avKey(configKey.Key()),
			ConditionExpression: configExpr.Condition(), UpdateExpression: configExpr.Update(),
			ExpressionAttributeNames: configExpr.Names(), ExpressionAttributeValues: configExpr.Values(),
		}},
	}})
	c.events.forget(eventID)
	if conditionFailed(cancellationReasons(err), 0) {
		return errPhaseMoved
	}
	if err != nil {
		return fmt.Errorf("draw %s: %s → %s: %w", eventID, from, to, err)
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
		m := Message{RequestID: e.RequestID}
		if !feed(func() error { _, err := c.MarkClosed(ctx, m); return err }) {
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

// finaliseEntry writes the result of one entry: seed 003's "lottery result" row,
// UpdateItem PK REQ#<requestId>, SK META, condition status = QUEUED. An entry already
// final must hold the same result.
func (c *Client) finaliseEntry(ctx context.Context, e drawEntry, won bool) error {
	status, ui, code := StatusRejected, UIRejected, ResultLotteryLose
	if won {
		status, ui, code = StatusSucceeded, UISuccess, ResultSuccess
	}
	if e.Status.IsTerminal() {
		if e.Status != status {
			return fmt.Errorf("%w: entry %s is %s, the draw says %s", ErrDrawMismatch, e.RequestID, e.Status, status)
		}
		return nil
	}
	key, err := NewRequestKey(e.RequestID)
	if err != nil {
		return err
	}
	now := c.now()
	t, err := c.apply(ctx, transition{
		key: key, from: []Status{StatusQueued}, to: status, note: string(code),
		update: finish(ui, code, now).
			Set(expression.Name("uiPhase"), expression.Value(PhaseAnnounced)).
			Set(expression.Name("announcedAt"), expression.Value(now)),
	})
	switch {
	case err != nil:
		return fmt.Errorf("finalise %s: %w", e.RequestID, err)
	case !t.Applied && t.Current.Status != status:
		return fmt.Errorf("%w: entry %s is %s, the draw says %s", ErrDrawMismatch, e.RequestID, t.Current.Status, status)
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
// the revealed seed and the entry list could: the seed against the commitment the
// config published, the entries read from GSI2 against the count and hash the draw
// froze, and every entry's result against the winners recomputed from the seed. Each
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
