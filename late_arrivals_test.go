// Scenario suite: late arrivals. A request queued by a lottery's cutoff, or before a
// pre-queue's start, reaches the table after the draw (or the serve) recorded its
// entries: its put held on the wire past the entries' fence, or sent by an ingest
// whose clock is behind; the draw or the serve runs on, or is killed and resumed. It
// proves that the record decides: every request ends final, a late arrival is no
// entry (REJECTED_NOT_DRAWN in a lottery; in a pre-queue it joins the sale's line
// after the drawn order, ahead of the sale's clicks), the verifiers answer OK and
// list it apart, and with holds the seats given back reach the waiting requests.

package asyncevent_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

// Late arrivals: a request queued by a lottery's cutoff, or before a pre-queue's
// start, whose put reaches the table after the draw (or the serve) recorded its
// entries: held on the wire past the entries' fence (a slow network, a retried SDK
// call, a frozen process), or sent by an ingest whose clock is 2 s behind the drawing
// process's. The record decides: the draw or the serve runs on, or is killed and
// resumed, and finishes; every request ends final (a lottery's late arrival
// REJECTED_NOT_DRAWN, a pre-queue's joining the sale's line after the drawn order);
// the verifiers answer OK and list the late arrival apart; with holds, the seats given
// back reach the waiting requests. Everything is judged from a raw consistent Scan.
func TestLateArrivals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                 string
		prequeue, kill, skew bool
		holds                bool
	}{
		{name: "lottery, held put, the draw runs on"},
		{name: "lottery, held put, the draw killed and resumed", kill: true},
		{name: "lottery, skewed ingest clock, the draw killed and resumed", kill: true, skew: true},
		{name: "pre-queue, held put, the serve runs on", prequeue: true},
		{name: "pre-queue, held put, the serve killed and resumed", prequeue: true, kill: true},
		{name: "pre-queue, skewed ingest clock", prequeue: true, skew: true},
		{name: "pre-queue with holds, held put, seats given back", prequeue: true, holds: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newLateRig(t, tt.prequeue, tt.holds)
			r.click(userIDs("early", 20))
			r.deliver() // the workers collect (lottery) or leave to the serve (pre-queue)
			if !tt.skew {
				r.holdLatePut()
			}
			r.clock.Advance(r.opens.Sub(r.clock.Now()))
			r.decide(tt.kill, tt.skew)
			if tt.kill {
				r.decide(false, false) // resumed, as the docs tell an operator
			}
			r.settle()
			if tt.holds {
				r.giveSeatsBack()
			}
			r.check()
		})
	}
}

// A pre-queue's late arrival that lands right after the record, its message met by a
// worker while the serve runs, joins the sale's line after the drawn order and ahead
// of the sale's clicks: the serve reads the last moments before the start again once
// its record is written, and the worker holds the message back instead of
// acknowledging it. 5 seats, 3 entries: the late arrival takes the fourth, one of the
// two sale clicks the fifth.
func TestALateArrivalGoesBeforeTheSale(t *testing.T) {
	t.Parallel()
	r := newLateRig(t, true, false)
	r.click(userIDs("early", 3))
	r.deliver()
	r.clock.Advance(r.opens.Sub(r.clock.Now()))
	var lateMessage asyncevent.Outcome
	k := &killAfterRecord{DynamoDB: asynceventtest.DynamoDB(t), onRecord: func() {
		lq := &sendQueue{}
		p, err := r.late.Submit(r.ctx, lq, r.eventID, lateUser)
		require.NoError(t, err)
		r.lateID = p.RequestID
		// The worker is another node's, whose first read of the config is the serve's
		// DRAWING (one that holds COLLECTING from before the freeze is
		// TestALateArrivalMetOnAnOldConfigComesBack's).
		worker, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: r.c.TableName(), Clock: r.clock.Now, DrawSettleWindow: time.Second})
		require.NoError(t, err)
		for _, o := range deliverAll(t, asyncevent.NewProcessor(worker, asyncevent.ProcessOptions{}), lq) {
			lateMessage = o
		}
	}}
	c, err := asyncevent.New(k, asyncevent.Options{TableName: r.c.TableName(), Clock: r.clock.Now, DrawSettleWindow: time.Second})
	require.NoError(t, err)
	res, err := c.ServePrequeue(r.ctx, r.eventID)
	require.NoError(t, err)
	assert.Equal(t, asyncevent.OutcomeWaitingForPrequeue, lateMessage.Kind, "met while the serve runs, the message comes back later")
	assert.Equal(t, []string{r.lateID}, res.Late)
	sale := &sendQueue{}
	for _, u := range userIDs("sale", 2) {
		_, err := r.c.Submit(r.ctx, sale, r.eventID, u)
		require.NoError(t, err)
	}
	r.clock.Advance(5 * time.Second) // past the cached config that said DRAWING
	deliverAll(t, asyncevent.NewProcessor(r.c, asyncevent.ProcessOptions{}), sale)
	byUser := map[string]asyncevent.Request{}
	for _, q := range r.requests() {
		byUser[q.UserID] = q
	}
	assert.Equal(t, asyncevent.StatusSucceeded, byUser[lateUser].Status, "queued before the start, it goes before the sale's clicks")
	assert.ElementsMatch(t, []asyncevent.Status{asyncevent.StatusSucceeded, asyncevent.StatusRejected},
		[]asyncevent.Status{byUser["sale-000"].Status, byUser["sale-001"].Status})
	v, err := r.c.VerifyPrequeue(r.ctx, r.eventID)
	require.NoError(t, err)
	assert.True(t, v.OK(), v.String())
}

// A pre-queue's late arrival whose put lands after the serve has ended, its message
// met by a worker that read the event's config while the pre-queue still collected
// (within Options.EventCacheTTL): from the entries' fence on the worker holds the
// message back instead of leaving it to a serve that recorded its entries already,
// and the message's next delivery, once the config says ANNOUNCED, decides it as a
// late arrival, with no Sweep.
func TestALateArrivalMetOnAnOldConfigComesBack(t *testing.T) {
	t.Parallel()
	r := newLateRig(t, true, false)
	r.click(userIDs("early", 3))
	worker, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: r.c.TableName(), Clock: r.clock.Now, DrawSettleWindow: time.Second})
	require.NoError(t, err)
	wp := asyncevent.NewProcessor(worker, asyncevent.ProcessOptions{})
	r.clock.Advance(prequeueStart.Add(-time.Second).Sub(r.clock.Now()))
	for _, o := range deliverAll(t, wp, r.q) { // the worker reads the config: COLLECTING
		require.Equal(t, asyncevent.OutcomeLeftToDraw, o.Kind)
	}
	r.clock.Advance(r.opens.Sub(r.clock.Now()))
	_, err = r.c.ServePrequeue(r.ctx, r.eventID)
	require.NoError(t, err)

	lq := &sendQueue{}
	p, err := r.late.Submit(r.ctx, lq, r.eventID, lateUser) // its clock 2 s behind: queued before the start
	require.NoError(t, err)
	r.lateID = p.RequestID
	got, err := r.c.GetRequest(r.ctx, r.lateID)
	require.NoError(t, err)
	require.Less(t, got.QueuedAt, asyncevent.MillisOf(prequeueStart), "queued before the start")
	o := deliverAll(t, wp, lq)[r.lateID]
	assert.Equal(t, asyncevent.OutcomeWaitingForPrequeue, o.Kind, "met past the entries' fence, the message comes back")

	r.clock.Advance(10 * time.Second) // past the config the worker holds
	o = deliverAll(t, wp, lq)[r.lateID]
	assert.Equal(t, asyncevent.OutcomeSucceeded, o.Kind, "a late arrival, decided as the sale's first click")
	got, err = r.c.GetRequest(r.ctx, r.lateID)
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusSucceeded, got.Status)
	v, err := r.c.VerifyPrequeue(r.ctx, r.eventID)
	require.NoError(t, err)
	assert.True(t, v.OK(), v.String())
	assert.Equal(t, []string{r.lateID}, v.Late, v.String())
}

// lateRig is one event, its clients and the late participation.
type lateRig struct {
	t        *testing.T
	ctx      context.Context
	clock    *asynceventtest.Clock
	c        *asyncevent.Client // a clean client
	hb       *asynceventtest.HoldBack
	late     *asyncevent.Client // ingest whose request put is held, or whose clock is behind
	q        *sendQueue
	eventID  string
	prequeue bool
	holds    bool
	seats    int
	opens    time.Time // when the draw or the serve may begin
	held     *asynceventtest.Held
	lateID   string
}

const lateUser = "late-user"

func newLateRig(t *testing.T, prequeue, holds bool) *lateRig {
	clock := asynceventtest.NewClock(t0)
	opts := asyncevent.Options{Clock: clock.Now, DrawSettleWindow: time.Second}
	c := asynceventtest.NewTableWith(t, opts)
	r := &lateRig{t: t, ctx: context.Background(), clock: clock, c: c, q: &sendQueue{}, prequeue: prequeue, holds: holds, seats: 5}
	settings := asyncevent.EventSettings{EventID: "lotto", EventType: asyncevent.Lottery, WinnerCount: int64(r.seats),
		LotteryCutoffAt: asyncevent.MillisOf(cutoff)}
	r.opens = cutoff.Add(time.Second + time.Millisecond)
	if prequeue {
		settings = asyncevent.EventSettings{EventID: "drop", EventType: asyncevent.FirstCome, CapacityTotal: int64(r.seats),
			PrequeueOpensAt: asyncevent.MillisOf(t0), StartsAt: asyncevent.MillisOf(prequeueStart),
			EndsAt: asyncevent.MillisOf(prequeueStart.Add(time.Hour))}
		if holds {
			settings.HoldFor = time.Minute
		}
		r.opens = prequeueStart.Add(time.Second)
	}
	_, err := c.CreateEvent(r.ctx, settings)
	require.NoError(t, err)
	r.eventID = settings.EventID
	r.hb = asynceventtest.NewHoldBack(asynceventtest.DynamoDB(t))
	skewed := func() time.Time { return clock.Now().Add(-2 * time.Second) }
	r.late, err = asyncevent.New(r.hb, asyncevent.Options{TableName: c.TableName(), Clock: skewed, DrawSettleWindow: time.Second})
	require.NoError(t, err)
	return r
}

func (r *lateRig) click(users []string) {
	for _, u := range users {
		_, err := r.c.Submit(r.ctx, r.q, r.eventID, u)
		require.NoError(r.t, err, u)
	}
}

// deliver hands every message sent so far to a worker without a Handler.
func (r *lateRig) deliver() {
	deliverAll(r.t, asyncevent.NewProcessor(r.c, asyncevent.ProcessOptions{}), r.q)
}

// holdLatePut clicks for lateUser before the cutoff (or the start) with its request's
// put held on the wire, its ingest told the connection was reset.
func (r *lateRig) holdLatePut() {
	r.held = r.hb.Hold(func(op string, in any) bool {
		p, ok := in.(*dynamodb.PutItemInput)
		return ok && strings.HasPrefix(attrS(p.Item["PK"]), "REQ#") && attrS(p.Item["userId"]) == lateUser
	}, 0, asynceventtest.CallerReset)
	r.clock.Advance(2 * time.Second) // the late client's clock is 2 s behind: still before the cutoff or the start
	p, err := r.late.Submit(r.ctx, r.q, r.eventID, lateUser)
	r.t.Logf("the late click's ingest: %+v, %v; %d puts on the wire", p, err, r.held.Count())
	require.Positive(r.t, r.held.Count())
}

// decide runs the draw (or the serve). Right after it records its entries, the late
// put lands (or the skewed ingest clicks); with kill, every write after that fails,
// as if the process died.
func (r *lateRig) decide(kill, skew bool) {
	k := &killAfterRecord{DynamoDB: asynceventtest.DynamoDB(r.t), kill: kill}
	k.onRecord = func() {
		switch {
		case r.held != nil:
			require.NoError(r.t, r.held.Land(r.ctx))
			r.t.Logf("the late put landed after the record: %v", r.held.Outcomes())
			r.held = nil
		case skew && r.lateID == "":
			p, err := r.late.Submit(r.ctx, r.q, r.eventID, lateUser)
			require.NoError(r.t, err)
			r.lateID = p.RequestID
			r.t.Logf("the skewed ingest queued %s (the drawing clock %s)", p.RequestID, r.clock.Now())
		}
	}
	c, err := asyncevent.New(k, asyncevent.Options{TableName: r.c.TableName(), Clock: r.clock.Now, DrawSettleWindow: time.Second})
	require.NoError(r.t, err)
	ctx := r.ctx
	if kill { // a serve retries an entry's writes until they land or its context ends
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(r.ctx, 3*time.Second)
		defer cancel()
	}
	if r.prequeue {
		_, err = c.ServePrequeue(ctx, r.eventID)
	} else {
		_, err = c.Draw(ctx, r.eventID)
	}
	if kill {
		require.Error(r.t, err, "killed after the record")
		return
	}
	require.NoError(r.t, err)
}

// settle lets the workers and the sweeper run on what is left: every message sent
// delivered again, then Sweep, then only what it sent.
func (r *lateRig) settle() {
	r.deliver()
	r.clock.Advance(10 * time.Minute)
	swept := &sendQueue{}
	_, err := r.c.Sweep(r.ctx, swept, r.eventID, asyncevent.SweepOptions{StuckAfter: time.Minute, RatePerSecond: 1000})
	require.NoError(r.t, err)
	deliverAll(r.t, asyncevent.NewProcessor(r.c, asyncevent.ProcessOptions{}), swept)
}

// giveSeatsBack releases two holds and lets the rest lapse, sweeps, then confirms
// what is held, lets the event end and sweeps again.
func (r *lateRig) giveSeatsBack() {
	var held []string
	for _, q := range r.requests() {
		if q.Status == asyncevent.StatusHeld {
			held = append(held, q.RequestID)
		}
	}
	require.Len(r.t, held, r.seats)
	for _, id := range held[:2] {
		_, err := r.c.Release(r.ctx, id)
		require.NoError(r.t, err)
	}
	r.clock.Advance(2 * time.Minute) // the other holds lapse
	for range 3 {
		_, err := r.c.SweepHolds(r.ctx, r.eventID, asyncevent.HoldSweepOptions{})
		require.NoError(r.t, err)
	}
	for _, q := range r.requests() {
		if q.Status == asyncevent.StatusHeld {
			_, err := r.c.Confirm(r.ctx, q.RequestID)
			require.NoError(r.t, err)
		}
	}
	r.clock.Advance(2 * time.Hour) // the event ends: the waitlist closes
	for range 3 {
		_, err := r.c.SweepHolds(r.ctx, r.eventID, asyncevent.HoldSweepOptions{})
		require.NoError(r.t, err)
	}
}

// requests are the event's requests from a raw consistent Scan.
func (r *lateRig) requests() []asyncevent.Request {
	var rs []asyncevent.Request
	for _, item := range asynceventtest.ScanTable(r.t, r.c.TableName()) {
		if attrS(item["entityType"]) == "REQUEST" && attrS(item["eventId"]) == r.eventID {
			rs = append(rs, asynceventtest.UnmarshalRequest(r.t, item))
		}
	}
	return rs
}

func (r *lateRig) check() {
	rs := r.requests()
	var late asyncevent.Request
	won := 0
	for _, q := range rs {
		assert.True(r.t, q.Status.IsTerminal(), "%s (%s) is %s", q.RequestID, q.UserID, q.Status)
		if q.UserID == lateUser {
			late = q
		}
		if q.Status == asyncevent.StatusSucceeded {
			won++
		}
	}
	require.NotEmpty(r.t, late.RequestID, "the late click's request is on the table")
	assert.Equal(r.t, r.seats, won, "exactly N winners")
	got, err := r.c.GetRequest(r.ctx, late.RequestID)
	require.NoError(r.t, err)
	if r.prequeue {
		v, err := r.c.VerifyPrequeue(r.ctx, r.eventID)
		require.NoError(r.t, err)
		assert.True(r.t, v.OK(), v.String())
		assert.Equal(r.t, []string{late.RequestID}, v.Late, v.String())
		assert.NotContains(r.t, v.Order, late.RequestID)
		r.checkNoSeatLeft(rs)
	} else {
		assert.Equal(r.t, asyncevent.ResultCode("REJECTED_NOT_DRAWN"), got.ResultCode, "the user's next GetRequest says it was not drawn")
		v, err := r.c.VerifyDraw(r.ctx, r.eventID)
		require.NoError(r.t, err)
		assert.True(r.t, v.OK(), v.String())
		assert.Equal(r.t, []string{late.RequestID}, v.Late, v.String())
	}
}

// checkNoSeatLeft: no seat stays on the Returns item while a request was refused for
// want of one.
func (r *lateRig) checkNoSeatLeft(rs []asyncevent.Request) {
	refused := 0
	for _, q := range rs {
		if q.ResultCode == asyncevent.ResultRejectedCapacity {
			refused++
		}
	}
	out, err := asynceventtest.DynamoDB(r.t).GetItem(r.ctx, &dynamodb.GetItemInput{TableName: aws.String(r.c.TableName()), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: "EVENT#" + r.eventID + "#RETURNS"}, "SK": &types.AttributeValueMemberS{Value: "RETURNS"}}})
	require.NoError(r.t, err)
	left := attrN(out.Item, "capacityRemaining")
	assert.False(r.t, refused > 0 && left > 0, "%d seats left on the Returns item while %d requests were refused for capacity", left, refused)
}

// killAfterRecord calls onRecord once a write recording a draw's (or a serve's)
// entries has been applied, before its answer; with kill, every write after it fails
// as if the process died.
type killAfterRecord struct {
	asyncevent.DynamoDB
	kill     bool
	onRecord func()
	mu       sync.Mutex
	recorded bool
}

func (k *killAfterRecord) dead() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.kill && k.recorded
}

func (k *killAfterRecord) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if k.dead() {
		return nil, errDead
	}
	out, err := k.DynamoDB.UpdateItem(ctx, in, o...)
	if err == nil && recordsEntries(in) {
		k.mu.Lock()
		k.recorded = true
		k.mu.Unlock()
		k.onRecord()
	}
	return out, err
}

// recordsEntries reports whether in is the Draw record's "record the entries" write.
func recordsEntries(in *dynamodb.UpdateItemInput) bool {
	if attrS(in.Key["SK"]) != "DRAW" {
		return false
	}
	for _, name := range in.ExpressionAttributeNames {
		if name == "entriesHash" {
			return true
		}
	}
	return false
}

func (k *killAfterRecord) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if k.dead() {
		return nil, errDead
	}
	return k.DynamoDB.PutItem(ctx, in, o...)
}

func (k *killAfterRecord) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if k.dead() {
		return nil, errDead
	}
	return k.DynamoDB.TransactWriteItems(ctx, in, o...)
}

func attrN(item map[string]types.AttributeValue, name string) int64 {
	n, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	v, _ := strconv.ParseInt(n.Value, 10, 64)
	return v
}
