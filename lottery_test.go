package asyncevent_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

var cutoff = t0.Add(time.Hour)

// newLottery makes a LOTTERY event "lotto" with k winners and a cutoff an hour after
// t0, and submits users entries (at t0, on a stopped clock).
func newLottery(t *testing.T, db asyncevent.DynamoDB, opts asyncevent.Options, k int64, users int) (*asyncevent.Client, *asynceventtest.Clock, *asyncevent.Event) {
	t.Helper()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	opts.Clock = clock.Now
	c := asynceventtest.NewTableOn(t, db, opts)
	cfg, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "lotto", EventType: asyncevent.Lottery,
		WinnerCount: k, LotteryCutoffAt: asyncevent.MillisOf(cutoff)})
	require.NoError(t, err)
	q := &sendQueue{}
	work := make(chan int)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := range work {
				_, err := c.Submit(ctx, q, "lotto", fmt.Sprintf("user-%05d", i))
				assert.NoError(t, err)
			}
		})
	}
	for i := range users {
		work <- i
	}
	close(work)
	wg.Wait()
	return c, clock, cfg
}

// recomputeWinners draws outside the library: the entries hash is SHA-256 of the
// sorted IDs, each followed by a newline; the k smallest SHA-256(seed ‖ entries hash ‖
// requestId) win.
func recomputeWinners(t *testing.T, seedHex string, ids []string, k int) []string {
	t.Helper()
	seed, err := hex.DecodeString(seedHex)
	require.NoError(t, err)
	sorted := append([]string{}, ids...)
	sort.Strings(sorted)
	var list []byte
	for _, id := range sorted {
		list = append(append(list, id...), '\n')
	}
	entriesHash := sha256.Sum256(list)
	type scored struct {
		id    string
		score [32]byte
	}
	var all []scored
	for _, id := range ids {
		all = append(all, scored{id, sha256.Sum256(slices.Concat(seed, entriesHash[:], []byte(id)))})
	}
	sort.Slice(all, func(i, j int) bool { return bytes.Compare(all[i].score[:], all[j].score[:]) < 0 })
	var winners []string
	for i := 0; i < k && i < len(all); i++ {
		winners = append(winners, all[i].id)
	}
	return winners
}

func TestDrawThreeThousandEntries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	began := time.Now()
	c, clock, cfg := newLottery(t, asynceventtest.DynamoDB(t), asyncevent.Options{}, 50, 3000)
	t.Logf("3,000 entries submitted in %s", time.Since(began))

	_, err := c.Draw(ctx, "lotto")
	assert.ErrorIs(t, err, asyncevent.ErrDrawTooEarly)
	sealed, err := c.GetDraw(ctx, "lotto")
	require.NoError(t, err)
	assert.Empty(t, sealed.Seed, "the seed stays sealed until the draw")
	clock.Advance(time.Hour + asyncevent.DefaultDrawSettleWindow - time.Millisecond)
	_, err = c.Draw(ctx, "lotto")
	assert.ErrorIs(t, err, asyncevent.ErrDrawTooEarly)

	clock.Advance(time.Millisecond)
	began = time.Now()
	res, err := c.Draw(ctx, "lotto")
	require.NoError(t, err)
	t.Logf("drawn in %s", time.Since(began))
	assert.Len(t, res.Winners, 50)
	assert.Equal(t, int64(3000), res.Record.EntryCount)
	assert.Equal(t, asyncevent.PhaseAnnounced, res.Record.Phase)

	// Independently: the seed matches the commitment published at creation, and the
	// winners are the 50 smallest SHA-256(seed ‖ entries hash ‖ requestId) of the
	// entries.
	seed, err := hex.DecodeString(res.Record.Seed)
	require.NoError(t, err)
	sum := sha256.Sum256(seed)
	assert.Equal(t, cfg.SeedCommitment, hex.EncodeToString(sum[:]))
	rs := requestsOf(t, c, "lotto")
	require.Len(t, rs, 3000)
	var ids, won []string
	for _, r := range rs {
		ids = append(ids, r.RequestID)
		assert.Equal(t, asyncevent.PhaseAnnounced, r.UIPhase)
		assert.Equal(t, asyncevent.MillisOf(clock.Now()), r.AnnouncedAt)
		assert.Equal(t, asyncevent.UIResultOf(r.Status), r.UIResult)
		switch r.ResultCode {
		case asyncevent.ResultSuccess:
			won = append(won, r.RequestID)
		default:
			assert.Equal(t, asyncevent.ResultLotteryLose, r.ResultCode)
			assert.Equal(t, asyncevent.StatusRejected, r.Status)
		}
	}
	want := recomputeWinners(t, res.Record.Seed, ids, 50)
	assert.ElementsMatch(t, want, won)
	assert.Equal(t, want, res.Winners, "best score first")

	v, err := c.VerifyDraw(ctx, "lotto")
	require.NoError(t, err)
	assert.True(t, v.OK(), v.String())
	assert.Equal(t, 3000, v.EntryCount)

	event, err := c.GetEvent(ctx, "lotto")
	require.NoError(t, err)
	assert.Equal(t, asyncevent.PhaseAnnounced, event.Phase)
	assert.Equal(t, asyncevent.MillisOf(clock.Now()), event.AnnouncedAt)

	again, err := c.Draw(ctx, "lotto")
	require.NoError(t, err)
	assert.Equal(t, res, again, "a finished draw returns its stored result")
}

func TestDrawResumesAfterAStopHalfWay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, clock, _ := newLottery(t, asynceventtest.DynamoDB(t), asyncevent.Options{StatusLog: true}, 20, 200)
	clock.Advance(2 * time.Hour)

	// Half of the finalisations (transactions, with the status log), then the
	// process dies.
	// The draw first collects the 200 entries no worker reached (so that no failure
	// can land on them once recorded), then finalises.
	half := &halfway{DynamoDB: asynceventtest.DynamoDB(t), left: 200 + 100}
	broken, err := asyncevent.New(half, asyncevent.Options{TableName: c.TableName(), Clock: clock.Now, StatusLog: true, DrawConcurrency: 4})
	require.NoError(t, err)
	_, err = broken.Draw(ctx, "lotto")
	require.Error(t, err)
	event, err := c.GetEvent(ctx, "lotto")
	require.NoError(t, err)
	assert.Equal(t, asyncevent.PhaseDrawing, event.Phase)
	byStatus := countBy(requestsOf(t, c, "lotto"), func(r asyncevent.Request) asyncevent.Status { return r.Status })
	assert.Equal(t, 100, byStatus[asyncevent.StatusQueued], "half are still waiting")
	record, err := c.GetDraw(ctx, "lotto")
	require.NoError(t, err)
	require.NotEmpty(t, record.Seed, "revealed at the freeze")

	// Run again: the same entries, the same winners, the rest finalised.
	res, err := c.Draw(ctx, "lotto")
	require.NoError(t, err)
	rs := requestsOf(t, c, "lotto")
	var ids, won []string
	for _, r := range rs {
		ids = append(ids, r.RequestID)
		require.True(t, r.Status.IsTerminal(), r.Status)
		if r.Status == asyncevent.StatusSucceeded {
			won = append(won, r.RequestID)
		}
		logs, err := c.ListStatusLogs(ctx, r.RequestID)
		require.NoError(t, err)
		finals := 0
		for _, l := range logs {
			if l.ToStatus.IsTerminal() {
				finals++
			}
		}
		assert.Equal(t, 1, finals, "entry %s finalised once", r.RequestID)
	}
	assert.ElementsMatch(t, recomputeWinners(t, record.Seed, ids, 20), won)
	assert.ElementsMatch(t, res.Winners, won)
	v, err := c.VerifyDraw(ctx, "lotto")
	require.NoError(t, err)
	assert.True(t, v.OK(), v.String())
}

// halfway lets `left` request finalisations through (transactions, with the status
// log) and fails the rest, and everything after.
type halfway struct {
	asyncevent.DynamoDB
	mu   sync.Mutex
	left int
}

func (h *halfway) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if isRequestUpdate(in) {
		h.mu.Lock()
		h.left--
		dead := h.left < 0
		h.mu.Unlock()
		if dead {
			return nil, errDead
		}
	}
	return h.DynamoDB.TransactWriteItems(ctx, in, o...)
}

func isRequestUpdate(in *dynamodb.TransactWriteItemsInput) bool {
	if u := in.TransactItems[0].Update; u != nil {
		pk := u.Key["PK"].(*types.AttributeValueMemberS).Value
		return len(pk) > 4 && pk[:4] == "REQ#"
	}
	return false
}

// Whether a request is an entry is settled when its put lands: queued by the cutoff
// (queuedAt, taken just before the put) or not. A request put a millisecond after the
// cutoff is closed as late when its message comes; one put at the cutoff is an entry
// however late its message reaches a worker.
func TestEntriesAreSettledWhenTheyLand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := asynceventtest.DynamoDB(t)
	c, clock, _ := newLottery(t, db, asyncevent.Options{}, 2, 5)

	clock.Advance(time.Hour)
	atCutoff, err := c.Rows().Participate(ctx, "lotto", "at-cutoff")
	require.NoError(t, err, "the cutoff itself is still in")
	clock.Advance(time.Millisecond)
	_, err = c.Submit(ctx, &sendQueue{}, "lotto", "after-cutoff")
	assert.ErrorIs(t, err, asyncevent.ErrEventClosed)

	// A click accepted a millisecond before the cutoff whose put lands after it: its
	// ingest's clock moves on by a millisecond at each reading.
	var tick atomic.Int64
	tick.Store(int64(asyncevent.MillisOf(cutoff)) - 1)
	ticking, err := asyncevent.New(db, asyncevent.Options{TableName: c.TableName(), Clock: func() time.Time {
		return asyncevent.EpochMillis(tick.Add(1) - 1).Time()
	}})
	require.NoError(t, err)
	late, err := ticking.Rows().Participate(ctx, "lotto", "late-put")
	require.NoError(t, err)
	require.Greater(t, late.Request.QueuedAt, asyncevent.MillisOf(cutoff), "the scenario: queued after the cutoff")

	deliver := func(p asyncevent.Participation) asyncevent.Outcome {
		t.Helper()
		body, err := asyncevent.EncodeMessage(asyncevent.Message{V: 1, RequestID: p.RequestID, EventID: "lotto",
			UserID: p.Request.UserID, EventType: asyncevent.Lottery, RequestedAt: p.Request.RequestedAt})
		require.NoError(t, err)
		o, done, _ := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}).ProcessOne(ctx, queue.Delivery{MessageID: "m", Body: body, ReceiveCount: 1}, 0, nil)
		assert.True(t, done)
		return o
	}
	o := deliver(late)
	assert.Equal(t, asyncevent.OutcomeRejected, o.Kind)
	assert.Equal(t, asyncevent.ResultRejectedClosed, o.ResultCode)

	clock.Advance(time.Hour)
	res, err := c.Draw(ctx, "lotto")
	require.NoError(t, err)
	assert.Equal(t, int64(6), res.Record.EntryCount, "the five and the click at the cutoff, whose message no worker has seen")
	r, err := c.GetRequest(ctx, atCutoff.RequestID)
	require.NoError(t, err)
	assert.Contains(t, []asyncevent.ResultCode{asyncevent.ResultSuccess, asyncevent.ResultLotteryLose}, r.ResultCode)
	o = deliver(atCutoff) // its message comes after the draw
	assert.Equal(t, asyncevent.OutcomeDuplicate, o.Kind)
	assert.NotContains(t, res.Winners, late.RequestID)

	v, err := c.VerifyDraw(ctx, "lotto")
	require.NoError(t, err)
	assert.True(t, v.OK(), v.String())
}

// Anyone can recompute a draw from a raw Scan with docs/design.md alone ("Recomputing
// a draw by hand"): the chunks' bytes, in order, hash to entriesHash and hold
// entryCount sorted IDs; the seed hashes to the commitment; the winners are the K
// smallest scores; each request's status says so.
func TestDrawRecomputedByHandFromTheRecord(t *testing.T) {
	t.Parallel()
	c, clock, _ := newLottery(t, asynceventtest.DynamoDB(t), asyncevent.Options{}, 5, 30)
	clock.Advance(2 * time.Hour)
	_, err := c.Draw(context.Background(), "lotto")
	require.NoError(t, err)
	items := asynceventtest.ScanTable(t, c.TableName())
	find := func(pk, sk string) map[string]types.AttributeValue {
		for _, it := range items {
			if attrS(it["PK"]) == pk && attrS(it["SK"]) == sk {
				return it
			}
		}
		return nil
	}
	record := find("EVENT#lotto", "DRAW")
	require.NotNil(t, record)
	hash := attrS(record["entriesHash"])
	var set []byte
	for n := range attrN(record, "entryChunks") {
		chunk := find(fmt.Sprintf("EVENT#lotto#ENTRIES#%d", n), "SET#"+hash)
		require.NotNil(t, chunk, "chunk %d", n)
		set = append(set, attrS(chunk["ids"])...)
	}
	sum := sha256.Sum256(set)
	require.Equal(t, hash, hex.EncodeToString(sum[:]))
	ids := strings.Split(strings.TrimSuffix(string(set), "\n"), "\n")
	require.Equal(t, attrN(record, "entryCount"), int64(len(ids)))
	require.True(t, sort.StringsAreSorted(ids))
	seed, err := hex.DecodeString(attrS(record["seed"]))
	require.NoError(t, err)
	commitment := sha256.Sum256(seed)
	require.Equal(t, attrS(record["seedCommitment"]), hex.EncodeToString(commitment[:]))
	won := recomputeWinners(t, attrS(record["seed"]), ids, int(attrN(record, "winnerCount")))
	for _, it := range items {
		if attrS(it["SK"]) != "META" || attrS(it["eventId"]) != "lotto" {
			continue
		}
		want := "REJECTED"
		if slices.Contains(won, attrS(it["requestId"])) {
			want = "SUCCEEDED"
		}
		assert.Equal(t, want, attrS(it["status"]), attrS(it["requestId"]))
	}
}

// An operator who moves the cutoff while a draw begins (their clock well before the
// cutoff, the drawing process's past it and the settle window): whichever commits
// first, the other is refused. The freeze does not record a set under the cutoff it
// read once the event's is another.
func TestDrawFreezeRefusedWhenTheCutoffMoved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, clock, later, extend := cutoffMover(t)
	hook := &beforeFreeze{DynamoDB: asynceventtest.DynamoDB(t), do: extend}
	drawer, err := asyncevent.New(hook, asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	_, err = drawer.Draw(ctx, "lotto")
	require.ErrorIs(t, err, asyncevent.ErrDrawTooEarly)
	record, err := c.GetDraw(ctx, "lotto")
	require.NoError(t, err)
	assert.Equal(t, asyncevent.PhaseCollecting, record.Phase, "nothing frozen under the old cutoff")
	clock.Advance(later.Sub(clock.Now()) + time.Minute)
	res, err := drawer.Draw(ctx, "lotto")
	require.NoError(t, err)
	assert.Len(t, res.Winners, 5)
}

// cutoffMover returns a lottery of 10 entries whose clock is at the cutoff plus an
// hour, later (the cutoff an hour later), and extend, which moves the cutoff to later
// as an operator whose clock is two hours behind does (an ExtendEvent that applies).
func cutoffMover(t *testing.T) (c *asyncevent.Client, clock *asynceventtest.Clock, later time.Time, extend func()) {
	t.Helper()
	c, clock, _ = newLottery(t, asynceventtest.DynamoDB(t), asyncevent.Options{}, 5, 10)
	behind := func() time.Time { return clock.Now().Add(-2 * time.Hour) }
	operator, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: behind})
	require.NoError(t, err)
	clock.Advance(2 * time.Hour)
	later = cutoff.Add(time.Hour)
	return c, clock, later, func() {
		up, err := operator.ExtendEvent(context.Background(), "lotto", asyncevent.ExtendEventInput{Actor: "ops", Action: asyncevent.ActionExtendCutoff, To: asyncevent.MillisOf(later)})
		require.NoError(t, err)
		require.True(t, up.Applied, up.Reason)
	}
}

// beforeFreeze runs do once, just before the first freeze transaction is sent.
type beforeFreeze struct {
	asyncevent.DynamoDB
	once sync.Once
	do   func()
}

func (b *beforeFreeze) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if u := in.TransactItems[0].Update; u != nil && attrS(u.Key["SK"]) == "DRAW" && slices.Contains(slices.Collect(maps.Values(u.ExpressionAttributeNames)), "drawnAt") {
		b.once.Do(b.do)
	}
	return b.DynamoDB.TransactWriteItems(ctx, in, o...)
}

// crashAfterFreeze lets writes through until its freeze transaction passed, then fails
// every write: a Draw that froze and died before recording its entries.
type crashAfterFreeze struct {
	asyncevent.DynamoDB
	mu     sync.Mutex
	frozen bool
}

func (b *crashAfterFreeze) dead() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.frozen }

func (b *crashAfterFreeze) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if b.dead() {
		return nil, errors.New("killed")
	}
	out, err := b.DynamoDB.TransactWriteItems(ctx, in, o...)
	if u := in.TransactItems[0].Update; err == nil && u != nil && attrS(u.Key["SK"]) == "DRAW" {
		b.mu.Lock()
		b.frozen = true
		b.mu.Unlock()
	}
	return out, err
}
func (b *crashAfterFreeze) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if b.dead() {
		return nil, errors.New("killed")
	}
	return b.DynamoDB.PutItem(ctx, in, o...)
}
func (b *crashAfterFreeze) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if b.dead() {
		return nil, errors.New("killed")
	}
	return b.DynamoDB.UpdateItem(ctx, in, o...)
}

// Draw A reads the cutoff, the operator extends it, Draw B freezes under the new one
// and dies before recording; A's freeze then fails on both items: A goes on under the
// cutoff of the freeze, not the one it read, and a request queued between the two
// cutoffs is an entry.
func TestDrawRecordsUnderTheCutoffOfItsFreeze(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, clock, later, extend := cutoffMover(t)
	between := func() time.Time { return cutoff.Add(30 * time.Minute) }
	ahead := func() time.Time { return later.Add(time.Hour) }
	var lateID string
	hook := &beforeFreeze{DynamoDB: asynceventtest.DynamoDB(t), do: func() {
		extend()
		sub, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: between})
		require.NoError(t, err)
		r, err := sub.Submit(ctx, &sendQueue{}, "lotto", "user-late")
		require.NoError(t, err)
		lateID = r.RequestID
		b, err := asyncevent.New(&crashAfterFreeze{DynamoDB: asynceventtest.DynamoDB(t)}, asyncevent.Options{TableName: c.TableName(), Clock: ahead})
		require.NoError(t, err)
		_, err = b.Draw(ctx, "lotto")
		require.Error(t, err, "B dies after its freeze")
	}}
	drawer, err := asyncevent.New(hook, asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	_, err = drawer.Draw(ctx, "lotto")
	require.ErrorIs(t, err, asyncevent.ErrDrawTooEarly, "frozen under the later cutoff, not yet past it and its settle window")
	clock.Advance(later.Add(asyncevent.DefaultDrawSettleWindow).Sub(clock.Now()) + time.Second)
	_, err = drawer.Draw(ctx, "lotto")
	require.NoError(t, err)
	r, err := c.GetRequest(ctx, lateID)
	require.NoError(t, err)
	assert.Contains(t, []asyncevent.ResultCode{asyncevent.ResultSuccess, asyncevent.ResultLotteryLose}, r.ResultCode,
		"queued by the event's cutoff, it is an entry")
	v, err := c.VerifyDraw(ctx, "lotto")
	require.NoError(t, err)
	assert.True(t, v.OK(), v.String())
	assert.Equal(t, 11, v.EntryCount)
}

// A resumed draw goes on from its record whatever landed since, and refuses only what
// the record cannot explain: a recorded entry final with another result than the
// draw's (its status or its result code), or no longer a request of the event queued
// by the cutoff. Killed right after the record, each entry tampered with, resumed.
func TestDrawResumeRefusesWhatTheRecordCannotExplain(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		tamper string // an UpdateItem expression on one recorded entry
		names  map[string]string
		values map[string]types.AttributeValue
		want   string
	}{
		{name: "final with another result code", tamper: "SET #s = :s, resultCode = :c", names: map[string]string{"#s": "status"},
			values: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: "REJECTED"}, ":c": &types.AttributeValueMemberS{Value: "REJECTED_CAPACITY"}},
			want:   "is REJECTED (REJECTED_CAPACITY), the draw says REJECTED (REJECTED_LOTTERY_LOSE)"},
		{name: "queued after the cutoff now", tamper: "SET queuedAt = :q, GSI2SK = :k",
			values: map[string]types.AttributeValue{
				":q": &types.AttributeValueMemberN{Value: strconv.FormatInt(int64(asyncevent.MillisOf(cutoff.Add(time.Minute))), 10)},
				":k": &types.AttributeValueMemberS{Value: fmt.Sprintf("QAT#%013d#REQ#moved", asyncevent.MillisOf(cutoff.Add(time.Minute)))}},
			want: "is no request of lotto queued by its cutoff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			c, clock, _ := newLottery(t, asynceventtest.DynamoDB(t), asyncevent.Options{}, 5, 12)
			clock.Advance(2 * time.Hour)
			killed, err := asyncevent.New(&killAfterRecord{DynamoDB: asynceventtest.DynamoDB(t), kill: true, onRecord: func() {}},
				asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
			require.NoError(t, err)
			_, err = killed.Draw(ctx, "lotto")
			require.Error(t, err)
			// A loser of the recorded draw: its status stays REJECTED, only its code is off.
			record, err := c.GetDraw(ctx, "lotto")
			require.NoError(t, err)
			var ids []string
			for _, r := range requestsOf(t, c, "lotto") {
				ids = append(ids, r.RequestID)
			}
			won := recomputeWinners(t, record.Seed, ids, 5)
			id := ids[slices.IndexFunc(ids, func(id string) bool { return !slices.Contains(won, id) })]
			_, err = asynceventtest.DynamoDB(t).UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(c.TableName()),
				Key: map[string]types.AttributeValue{
					"PK": &types.AttributeValueMemberS{Value: "REQ#" + id}, "SK": &types.AttributeValueMemberS{Value: "META"}},
				UpdateExpression: aws.String(tt.tamper), ExpressionAttributeValues: tt.values,
				ExpressionAttributeNames: tt.names})
			require.NoError(t, err)
			_, err = c.Draw(ctx, "lotto")
			require.ErrorIs(t, err, asyncevent.ErrDrawMismatch)
			assert.ErrorContains(t, err, tt.want)
			v, err := c.VerifyDraw(ctx, "lotto")
			require.NoError(t, err)
			assert.False(t, v.OK(), v.String())
		})
	}
}

// DrawOpensAt is the moment Draw and ServePrequeue stop answering ErrDrawTooEarly on
// this client: the entries' cutoff plus its own DrawSettleWindow.
func TestDrawOpensAt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	window := 3 * time.Second
	c, clock, _ := newLottery(t, asynceventtest.DynamoDB(t), asyncevent.Options{DrawSettleWindow: window}, 2, 4)
	ev, err := c.GetEvent(ctx, "lotto")
	require.NoError(t, err)
	opens, ok := c.DrawOpensAt(ev)
	require.True(t, ok)
	assert.Equal(t, asyncevent.MillisOf(ev.LotteryCutoffAt.Time().Add(window)), opens)
	clock.Advance(opens.Time().Add(-time.Millisecond).Sub(clock.Now()))
	_, err = c.Draw(ctx, "lotto")
	require.ErrorIs(t, err, asyncevent.ErrDrawTooEarly, "a millisecond before")
	clock.Advance(time.Millisecond)
	_, err = c.Draw(ctx, "lotto")
	require.NoError(t, err, "at the moment it says")

	start := asyncevent.MillisOf(cutoff.Add(2 * time.Hour))
	pre := &asyncevent.Event{EventSettings: asyncevent.EventSettings{EventType: asyncevent.FirstCome, PrequeueOpensAt: asyncevent.MillisOf(clock.Now()), StartsAt: start}}
	opens, ok = c.DrawOpensAt(pre)
	assert.True(t, ok)
	// A pre-queue's entries are the requests queued before its start: its cutoff is
	// the millisecond before.
	assert.Equal(t, asyncevent.MillisOf(start.Time().Add(window-time.Millisecond)), opens, "a pre-queue's serve: its cutoff plus the window")
	_, ok = c.DrawOpensAt(&asyncevent.Event{EventSettings: asyncevent.EventSettings{EventType: asyncevent.FirstCome}})
	assert.False(t, ok, "a sale without a pre-queue has no draw")
	_, ok = c.DrawOpensAt(nil)
	assert.False(t, ok)
}

// TestDrawOverABacklog draws a lottery while its workers still hold most of its
// messages: 300 entries queued before the cutoff, 2 workers handling one message at a
// time with a 60 ms handler, started one second before the cutoff, and Draw called as
// soon as it is allowed (settle window 1 s). The set of entries the draw freezes is
// the set it finalises: it ends ANNOUNCED with exactly K winners, VerifyDraw finds
// nothing, no request queued by the cutoff is closed as late, and the workers leave
// to the draw the entries they meet after it began. On single keys and on 4 index
// shards; and with MarkQueued refused (throttled) for about a third of the entries,
// so that some are still RECEIVED when the draw freezes them.
func TestDrawOverABacklog(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		shards          int
		markQueuedFault float64
	}{
		{"single keys", 1, 0},
		{"4 index shards", 4, 0},
		{"MarkQueued throttled", 4, 0.3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			drawOverABacklog(t, tc.shards, tc.markQueuedFault)
		})
	}
}

func drawOverABacklog(t *testing.T, shards int, markQueuedFault float64) {
	const (
		entries = 300
		winners = 40
		settle  = time.Second
	)
	ctx := context.Background()
	var db asyncevent.DynamoDB = asynceventtest.DynamoDB(t)
	var faulty *asynceventtest.FaultyDynamoDB
	if markQueuedFault > 0 {
		// UpdateItem of requests: MarkQueued is sent once, so a refusal leaves its
		// request RECEIVED; every other write of a request retries a throttle.
		faulty = asynceventtest.NewFaultyDynamoDB(db, asynceventtest.FaultPlan{
			Seed: 23, ThrottleRate: markQueuedFault, Operations: []string{"UpdateItem"}, KeyPrefix: "REQ#",
		})
		db = faulty
	}
	// The event's time is the test's clock, so that the scenario does not depend on
	// how fast the machine submits; the workers' handler takes real time.
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableOn(t, db, asyncevent.Options{DrawSettleWindow: settle, Clock: clock.Now})
	cutoff := t0.Add(time.Hour)
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{
		EventID: "lotto", EventType: asyncevent.Lottery, WinnerCount: winners,
		LotteryCutoffAt: asyncevent.MillisOf(cutoff), IndexShards: shards,
	})
	require.NoError(t, err)

	q := queue.NewMemory(queue.MemoryOptions{})
	work := make(chan int)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range work {
				_, err := c.Submit(ctx, q, "lotto", fmt.Sprintf("user-%03d", i))
				assert.NoError(t, err)
			}
		})
	}
	for i := range entries {
		work <- i
	}
	close(work)
	wg.Wait()

	var left, collected atomic.Int64
	handler := asyncevent.HandlerFunc(func(ctx context.Context, m asyncevent.Message) error {
		time.Sleep(60 * time.Millisecond) // the service's own step: the backlog's cause
		return nil
	})
	clock.Advance(cutoff.Sub(clock.Now()) - time.Second) // the workers start a second before the cutoff
	var workers []*asyncevent.Worker
	for range 2 {
		w, err := asyncevent.NewWorker(c, q, asyncevent.WorkerOptions{
			Concurrency: 1, WaitTime: 100 * time.Millisecond,
			ProcessOptions: asyncevent.ProcessOptions{Handler: handler, Backoff: fastRetry, OnOutcome: func(o asyncevent.Outcome) {
				switch o.Kind {
				case asyncevent.OutcomeLeftToDraw, asyncevent.OutcomeDuplicate:
					// Met once the draw began: left to it, or found collected (the draw
					// collects the entries no worker reached) or decided by it.
					left.Add(1)
				case asyncevent.OutcomeCollected:
					collected.Add(1)
				}
			}},
		})
		require.NoError(t, err)
		require.NoError(t, w.Start(ctx))
		workers = append(workers, w)
	}

	// Draw as soon as it is allowed: the cutoff plus the settle window, on the
	// event's clock and in real time alike.
	time.Sleep(time.Second + settle)
	clock.Advance(time.Second)
	_, err = c.Draw(ctx, "lotto")
	require.ErrorIs(t, err, asyncevent.ErrDrawTooEarly)
	clock.Advance(settle)
	res, err := c.Draw(ctx, "lotto")
	for range 10 {
		// Throttled writes of the draw (the injected faults) leave it to be run again,
		// as its error says; it resumes where it stopped.
		if !errors.Is(err, asyncevent.ErrThrottled) {
			break
		}
		res, err = c.Draw(ctx, "lotto")
	}
	require.NoError(t, err)
	assert.Equal(t, asyncevent.PhaseAnnounced, res.Record.Phase)
	assert.Len(t, res.Winners, winners)
	assert.Equal(t, int64(entries), res.Record.EntryCount, "every request queued by the cutoff is an entry")
	backlog := entries - collected.Load()
	t.Logf("at the draw: %d entries collected by the workers, a backlog of %d", collected.Load(), backlog)
	assert.Greater(t, backlog, int64(entries/2), "the scenario needs the draw to meet a backlog")

	v, err := c.VerifyDraw(ctx, "lotto")
	require.NoError(t, err)
	assert.True(t, v.OK(), "%s", v)

	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	require.NoError(t, q.WaitIdle(waitCtx), "the workers finish the backlog")
	for _, w := range workers {
		require.NoError(t, w.Stop(ctx))
	}
	assert.Positive(t, left.Load(), "workers met entries after the draw began and left them to it (or found them the draw's)")

	v, err = c.VerifyDraw(ctx, "lotto")
	require.NoError(t, err)
	assert.True(t, v.OK(), "after the backlog: %s", v)
	rs := requestsOf(t, c, "lotto")
	require.Len(t, rs, entries)
	codes := countBy(rs, func(r asyncevent.Request) asyncevent.ResultCode { return r.ResultCode })
	assert.Equal(t, map[asyncevent.ResultCode]int{
		asyncevent.ResultSuccess: winners, asyncevent.ResultLotteryLose: entries - winners,
	}, codes, "no entry closed as late or failed")
	if faulty != nil {
		t.Logf("faults: %+v", faulty.Counts())
		assert.Positive(t, faulty.Counts().Throttled)
	}
}

func TestLotteryWithFewerEntriesThanWinners(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, clock, _ := newLottery(t, asynceventtest.DynamoDB(t), asyncevent.Options{}, 10, 3)
	clock.Advance(2 * time.Hour)
	res, err := c.Draw(ctx, "lotto")
	require.NoError(t, err)
	assert.Len(t, res.Winners, 3, "all win")
	asynceventtest.CheckEvent(t, c, "lotto", asynceventtest.CheckOptions{})
}
