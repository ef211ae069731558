// Scenario suite: a hot key refused for throughput, as
// asynceventtest.NewLimitedClient answers for DynamoDB: every row of a request, seat
// claims on a hot CAPACITY item, and a worker whose claim or final write is
// throttled past its retries. It proves that a write refused for throughput is
// ErrThrottled and writes nothing while a lost condition stays an outcome, that
// claims made again under throttles end with exactly N, and that a throttled worker
// leaves its message for a later delivery, or ends the request FAILED_FINAL on its
// last receive.
//
// The limits' clock is the library's, and stands still: a key heated with Heat stays
// refused until the test advances the clock, so the counts of refused calls do not
// depend on speed.

package asyncevent_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// hotKeyTest is a FIRST_COME event "hot" on a table under the limits simulator, and a
// client beside the limits for reading it back.
type hotKeyTest struct {
	c, clean *asyncevent.Client
	limits   *asynceventtest.LimitedHTTPClient
	clock    *asynceventtest.Clock
}

func newHotKeyTest(t *testing.T, capacity int64, opts asyncevent.Options, optFns ...func(*dynamodb.Options)) *hotKeyTest {
	t.Helper()
	clock := asynceventtest.NewClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	opts.Clock = clock.Now
	raw := asynceventtest.DynamoDB(t)
	if len(optFns) > 0 {
		raw = dynamodb.New(raw.Options(), optFns...)
	}
	db, limits := asynceventtest.NewLimitedClient(raw, asynceventtest.Limits{Clock: clock.Now})
	c := asynceventtest.NewTableOn(t, db, opts)
	clean, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	_, err = c.CreateEvent(context.Background(), asyncevent.EventSettings{EventID: "hot", EventType: asyncevent.FirstCome, CapacityTotal: capacity})
	require.NoError(t, err)
	return &hotKeyTest{c: c, clean: clean, limits: limits, clock: clock}
}

// participate makes a request of user and returns its message.
func (h *hotKeyTest) participate(t *testing.T, user string) asyncevent.Message {
	t.Helper()
	p, err := h.c.Rows().Participate(context.Background(), "hot", user)
	require.NoError(t, err)
	r, err := h.clean.GetRequest(context.Background(), p.RequestID)
	require.NoError(t, err)
	return asyncevent.Message{V: asyncevent.MessageVersion, RequestID: r.RequestID, EventID: r.EventID,
		UserID: r.UserID, EventType: r.EventType, RequestedAt: r.RequestedAt}
}

func (h *hotKeyTest) request(t *testing.T, id string) *asyncevent.StoredRequest {
	t.Helper()
	r, err := asyncevent.ReadStoredRequest(context.Background(), h.clean, id)
	require.NoError(t, err)
	return r
}

func (h *hotKeyTest) seatsLeft(t *testing.T) int64 {
	t.Helper()
	capItem, err := h.clean.GetCapacity(context.Background(), "hot")
	require.NoError(t, err)
	return capItem.CapacityRemaining
}

// Every row of a request refused for throughput past the SDK's retries returns an
// error matching ErrThrottled and writes nothing. A single UpdateItem is left to the
// SDK's retryer (three attempts); a transaction cancelled for ThrottlingError, which
// the SDK does not retry, is sent again by the library, eight attempts in all. A lost
// condition stays an outcome, never ErrThrottled. The library backs off for seconds
// between a cancelled transaction's sends (rowexec.RefusalBackoff), on the wall clock: the
// test runs InBubble, where those waits cost no wall time.
func TestRowsRefusedForThroughputAreErrThrottled(t *testing.T) {
	t.Parallel()
	for _, statusLog := range []bool{false, true} {
		t.Run(fmt.Sprintf("StatusLog=%v", statusLog), func(t *testing.T) {
			t.Parallel()
			asynceventtest.InBubble(t, func(t *testing.T) { rowsRefusedForThroughput(t, statusLog) })
		})
	}
}

func rowsRefusedForThroughput(t *testing.T, statusLog bool) {
	ctx := context.Background()
	h := newHotKeyTest(t, 2, asyncevent.Options{StatusLog: statusLog})
	m := h.participate(t, "ann")
	lease := asyncevent.Lease{Owner: "w1", Duration: time.Minute}
	// Attempts per refused call: a request write is one UpdateItem retried by the
	// SDK, or with the status log a transaction retried by the library.
	perWrite := 3
	if statusLog {
		perWrite = 8
	}
	refused := func(t *testing.T, n int, call func() error) {
		t.Helper()
		before := h.limits.Counts().Throttled
		err := call()
		require.ErrorIs(t, err, asyncevent.ErrThrottled)
		assert.Equal(t, n, h.limits.Counts().Throttled-before, "attempts refused: %v", err)
	}

	// The event's key is hot: the request's writes put it on GSI2 under EVENT#hot.
	h.limits.Heat("EVENT#hot", time.Hour)
	refused(t, perWrite, func() error { _, err := h.c.Rows().MarkQueued(ctx, m.Ref()); return err })
	refused(t, perWrite, func() error { _, err := h.c.Rows().StartProcessing(ctx, m.Ref(), lease); return err })
	refused(t, perWrite, func() error { _, err := h.c.Rows().RejectSoldOut(ctx, m.Ref()); return err })
	refused(t, perWrite, func() error {
		_, err := h.c.Rows().MarkFailed(ctx, m.Ref(), asyncevent.Failure{Class: asyncevent.Retryable, Code: asyncevent.ResultFailedWorker, ErrorCode: "X"})
		return err
	})
	r := h.request(t, m.RequestID)
	assert.Equal(t, asyncevent.StatusReceived, r.Status, "nothing written")
	assert.Empty(t, r.ResultCode)

	h.clock.Advance(2 * time.Hour)
	tr, err := h.c.Rows().StartProcessing(ctx, m.Ref(), lease)
	require.NoError(t, err)
	require.True(t, tr.Applied)

	h.limits.Heat("EVENT#hot", time.Hour)
	refused(t, 3, func() error { _, err := h.c.Rows().ClaimSeat(ctx, m.Ref(), lease); return err })
	refused(t, perWrite, func() error { _, err := h.c.Rows().MarkCapacityRejected(ctx, m.Ref(), lease); return err })
	r = h.request(t, m.RequestID)
	assert.Equal(t, asyncevent.StatusProcessing, r.Status, "nothing written")
	assert.Equal(t, int64(2), h.seatsLeft(t), "no seat spent")

	// Cool again: lost conditions are outcomes, not throttles.
	h.clock.Advance(2 * time.Hour)
	tr, err = h.c.Rows().MarkQueued(ctx, m.Ref())
	require.NoError(t, err)
	assert.False(t, tr.Applied)
	tr, err = h.c.Rows().ClaimSeat(ctx, m.Ref(), asyncevent.Lease{Owner: "someone else", Duration: time.Minute})
	require.NoError(t, err)
	assert.False(t, tr.Applied, "not the caller's lease")
	// The lease ran out on the clock, but nobody took the request over: it is
	// still the caller's, and a clock decides nothing about a seat.
	tr, err = h.c.Rows().ClaimSeat(ctx, m.Ref(), lease)
	require.NoError(t, err)
	assert.True(t, tr.Applied)
	assert.Equal(t, int64(1), h.seatsLeft(t))
}

// Seat claims on a hot CAPACITY item, refused for throughput and made again until
// they are decided, leave exactly N winners and N holders of a seat: a claim that met
// throttles never takes a second seat, and one refused every time wrote nothing.
func TestSeatClaimsUnderThrottlesEndWithExactlyN(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const capacity, users = 3, 12
	clock := asynceventtest.NewClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	// WCU 10, by a clock that moves only when told: the CAPACITY item takes ten claims
	// and then one per 100 ms the test lets pass, so the claims meet throttles.
	limited, limits := asynceventtest.NewLimitedClient(asynceventtest.DynamoDB(t), asynceventtest.Limits{WCU: 10, Clock: clock.Now})
	c := asynceventtest.NewTableOn(t, limited, asyncevent.Options{Clock: clock.Now})
	clean, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	h := &hotKeyTest{c: c, clean: clean, limits: limits, clock: clock}
	_, err = c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "hot", EventType: asyncevent.FirstCome, CapacityTotal: capacity})
	require.NoError(t, err)

	names := make([]string, users)
	ms := make([]asyncevent.Message, users)
	leases := make([]asyncevent.Lease, users)
	for i := range users {
		names[i] = fmt.Sprintf("user-%02d", i)
		ms[i] = h.participate(t, names[i])
		leases[i] = asyncevent.Lease{Owner: "worker-" + names[i], Duration: time.Hour}
		tr, err := c.Rows().StartProcessing(ctx, ms[i].Ref(), leases[i])
		require.NoError(t, err)
		require.True(t, tr.Applied)
		clock.Advance(time.Second) // the set-up is not throttled
	}
	limits.Heat("EVENT#hot", 300*time.Millisecond)

	var wg sync.WaitGroup
	var won, soldOut, throttledClaims atomic.Int64
	for i := range users {
		wg.Go(func() {
			for attempt := 1; ; attempt++ {
				tr, err := c.Rows().ClaimSeat(ctx, ms[i].Ref(), leases[i])
				if errors.Is(err, asyncevent.ErrThrottled) && assert.Less(t, attempt, 50, "claim of %s", names[i]) {
					throttledClaims.Add(1)
					clock.Advance(100 * time.Millisecond) // time passes, the key cools
					continue
				}
				require.NoError(t, err)
				switch {
				case tr.Applied:
					won.Add(1)
				case tr.SoldOut:
					soldOut.Add(1)
					tr, err = c.Rows().MarkCapacityRejected(ctx, ms[i].Ref(), leases[i])
					require.NoError(t, err)
					require.True(t, tr.Applied)
				default:
					t.Errorf("claim of %s: lost its lease: %+v", names[i], tr.Current)
				}
				return
			}
		})
	}
	wg.Wait()
	counts := limits.Counts()
	t.Logf("%d won, %d sold out, %d claims throttled; limits %+v", won.Load(), soldOut.Load(), throttledClaims.Load(), counts)
	assert.Equal(t, int64(capacity), won.Load())
	assert.Equal(t, int64(users-capacity), soldOut.Load())
	assert.Positive(t, throttledClaims.Load(), "claims met throttles")
	rep := asynceventtest.CheckEvent(t, clean, "hot", asynceventtest.CheckOptions{Users: names})
	assert.Equal(t, capacity, rep.ByStatus[asyncevent.StatusSucceeded])
	assert.Equal(t, users-capacity, rep.ByStatus[asyncevent.StatusRejected])
}

// A worker whose seat claim is throttled past every retry leaves the message for
// redelivery (OutcomeThrottled, the error matching ErrThrottled) and does not write
// the release of its lease, one more write on the hot key: the request stays
// PROCESSING under the lease, nothing else was sent. A later delivery, once the lease
// has ended, takes the request over and finishes it.
func TestThrottledWorkerLeavesTheMessageAndALaterDeliveryFinishesIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHotKeyTest(t, 1, asyncevent.Options{})
	m := h.participate(t, "ann")
	body, err := asyncevent.EncodeMessage(m)
	require.NoError(t, err)
	var heated atomic.Bool
	opts := asyncevent.ProcessOptions{
		LeaseDuration: 30 * time.Second,
		// After the start, before the claim, the event's key gets hot.
		Handler: asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error {
			if heated.CompareAndSwap(false, true) {
				h.limits.Heat("EVENT#hot", 10*time.Second)
			}
			return nil
		}),
	}

	before := h.limits.Counts().Throttled
	started := h.clock.Now()
	res := asynceventtest.WorkDelivery(ctx, t, h.c, queue.Delivery{MessageID: "m", Body: body, ReceiveCount: 1}, opts)
	assert.Equal(t, asyncevent.OutcomeThrottled, res.Kind)
	assert.ErrorIs(t, res.Err, asyncevent.ErrThrottled)
	assert.True(t, res.Redeliver, "the message is left for redelivery")
	assert.Equal(t, 3, h.limits.Counts().Throttled-before, "the claim's three sends, and no release of the lease")
	r := h.request(t, m.RequestID)
	assert.Equal(t, asyncevent.StatusProcessing, r.Status)
	assert.Equal(t, asyncevent.MillisOf(started.Add(30*time.Second)), r.LeaseExpiresAt, "the lease is left to expire")
	assert.Equal(t, int64(1), h.seatsLeft(t))

	h.clock.Advance(31 * time.Second)
	res = asynceventtest.WorkDelivery(ctx, t, h.c, queue.Delivery{MessageID: "m", Body: body, ReceiveCount: 2}, opts)
	assert.Equal(t, asyncevent.OutcomeSucceeded, res.Kind, "%v", res.Err)
	assert.False(t, res.Redeliver)
	asynceventtest.CheckEvent(t, h.clean, "hot", asynceventtest.CheckOptions{Users: []string{"ann"}})
}

// On its last receive a throttled request still ends FAILED_FINAL (FAILED_WORKER,
// errorCode THROTTLED) and its message goes to the dead letters: the final write, on
// the same hot key, is tried again until the key has cooled.
func TestThrottledOnTheLastReceiveEndsFailedFinal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHotKeyTest(t, 1, asyncevent.Options{})
	m := h.participate(t, "ann")
	body, err := asyncevent.EncodeMessage(m)
	require.NoError(t, err)
	opts := asyncevent.ProcessOptions{
		MaxReceives: 3,
		Handler: asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error {
			h.limits.Heat("EVENT#hot", time.Hour)
			return nil
		}),
	}
	// The claim's three sends and the final write's first three are refused; then
	// time passes and the key cools.
	before := h.limits.Counts().Throttled
	cooled := make(chan struct{})
	go func() {
		defer close(cooled)
		deadline := time.Now().Add(time.Minute)
		for h.limits.Counts().Throttled-before < 3+3 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		h.clock.Advance(2 * time.Hour)
	}()
	res := asynceventtest.WorkDelivery(ctx, t, h.c, queue.Delivery{MessageID: "m", Body: body, ReceiveCount: 3}, opts)
	<-cooled
	assert.Equal(t, asyncevent.OutcomeDeadLetter, res.Kind, "%v", res.Err)
	assert.ErrorIs(t, res.Err, asyncevent.ErrThrottled)
	assert.True(t, res.Redeliver, "released to the dead-letter queue")
	r := h.request(t, m.RequestID)
	assert.Equal(t, asyncevent.StatusFailedFinal, r.Status)
	assert.Equal(t, asyncevent.ResultFailedWorker, r.ResultCode)
	assert.Equal(t, "THROTTLED", r.ErrorCode)
	asynceventtest.CheckEvent(t, h.clean, "hot", asynceventtest.CheckOptions{Users: []string{"ann"}})
}
