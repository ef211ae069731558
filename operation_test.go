package asyncevent_test

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// A control's answer after an attempt that got no answer (issue 54): the attempt is
// held back (CallerReset: the caller sees a reset connection, the write lands when
// the test says), the event closes, the call or a call again under its key is
// answered, and then the held attempt lands. Not applied must stay true once it has
// landed; else the answer is an error saying that the outcome is unknown.

const lateEvent = "late"

// lateBundle is a FIRST_COME event of two seats, both won, 20 s before its end, on a
// table behind a HoldBack.
type lateBundle struct {
	c     *asyncevent.Client
	hb    *asynceventtest.HoldBack
	clock *asynceventtest.Clock
	end   time.Time
	won   []string // the two SUCCEEDED requests
}

func lateSetup(t *testing.T) *lateBundle {
	t.Helper()
	hb := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(t))
	return lateSetupOn(t, hb, hb, asynceventtest.NewClock(t0))
}

// lateSetupOn is lateSetup on db (hb, if not nil, beneath it).
func lateSetupOn(t *testing.T, db asyncevent.DynamoDB, hb *asynceventtest.HoldBack, clock *asynceventtest.Clock) *lateBundle {
	t.Helper()
	ctx := context.Background()
	c := asynceventtest.NewTableOn(t, db, asyncevent.Options{Clock: clock.Now, EventCacheTTL: -1})
	end := t0.Add(time.Minute)
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: lateEvent, EventType: asyncevent.FirstCome, CapacityTotal: 2, EndsAt: asyncevent.MillisOf(end)})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	won := submitAll(t, c, clock, q, lateEvent, 2)
	drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)
	require.Len(t, byStatus(t, c, won)[asyncevent.StatusSucceeded], 2)
	clock.Advance(end.Add(-20 * time.Second).Sub(clock.Now()))
	return &lateBundle{c: c, hb: hb, clock: clock, end: end, won: won}
}

// onLate matches the transactions of the event's controls (each writes its CONFIG).
var onLate = asynceventtest.OnKey("TransactWriteItems", "EVENT#"+lateEvent, "")

// passEnd moves the clock past the event's end: closed from then on.
func (b *lateBundle) passEnd() { b.clock.Advance(b.end.Add(time.Millisecond).Sub(b.clock.Now())) }

// endPassed is m, which also moves the clock past the event's end when it catches a
// write: the attempt it holds was made before the end, the call's resend after it.
func (b *lateBundle) endPassed(m asynceventtest.Match) asynceventtest.Match {
	return func(op string, in any) bool {
		if !m(op, in) {
			return false
		}
		b.passEnd()
		return true
	}
}

// landed lands the attempts held and asserts that, when the call answered not
// applied, none of them applied.
func landed(t *testing.T, held *asynceventtest.Held, up asyncevent.EventUpdate) {
	t.Helper()
	require.NoError(t, held.Land(context.Background()))
	for _, l := range held.Outcomes() {
		if !up.Applied {
			assert.False(t, l.Applied, "answered not applied (%s), then an attempt held landed: %s", up.Reason, l)
		}
	}
}

// An add whose first attempt got no answer and that is then refused, the event
// closed: not applied, and the held attempt then adds no seat; or applied, once.
func TestAddCapacityAfterAnUnansweredAttempt(t *testing.T) {
	t.Parallel()
	keyed := asyncevent.AddCapacityInput{Seats: 2, Actor: "ops", IdempotencyKey: "add-late"}
	for _, tc := range []struct {
		name string
		add  func(t *testing.T, b *lateBundle) (*asynceventtest.Held, asyncevent.EventUpdate)
	}{
		{"its own resend after the end", func(t *testing.T, b *lateBundle) (*asynceventtest.Held, asyncevent.EventUpdate) {
			held := b.hb.Hold(b.endPassed(onLate), 1, asynceventtest.CallerReset)
			up, err := b.c.AddCapacity(context.Background(), lateEvent, asyncevent.AddCapacityInput{Seats: 2, Actor: "ops"})
			require.NoError(t, err)
			require.Equal(t, 1, held.Count())
			return held, up
		}},
		{"a call again under its key after the end", func(t *testing.T, b *lateBundle) (*asynceventtest.Held, asyncevent.EventUpdate) {
			held := b.hb.Hold(onLate, 3, asynceventtest.CallerReset) // the call's send and its two resends
			_, err := b.c.AddCapacity(context.Background(), lateEvent, keyed)
			require.ErrorIs(t, err, asyncevent.ErrOutcomeUnknown)
			require.ErrorContains(t, err, keyed.IdempotencyKey)
			b.passEnd()
			up, err := b.c.AddCapacity(context.Background(), lateEvent, keyed)
			require.NoError(t, err)
			return held, up
		}},
		{"a call again under its key after a close", func(t *testing.T, b *lateBundle) (*asynceventtest.Held, asyncevent.EventUpdate) {
			held := b.hb.Hold(onLate, 3, asynceventtest.CallerReset)
			_, err := b.c.AddCapacity(context.Background(), lateEvent, keyed)
			require.ErrorIs(t, err, asyncevent.ErrOutcomeUnknown)
			closed, err := b.c.CloseEvent(context.Background(), lateEvent, asyncevent.ControlInput{Actor: "ops"})
			require.NoError(t, err)
			require.True(t, closed.Applied, closed.Reason)
			up, err := b.c.AddCapacity(context.Background(), lateEvent, keyed)
			require.NoError(t, err)
			return held, up
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := lateSetup(t)
			held, up := tc.add(t, b)
			if !up.Applied {
				assert.Contains(t, up.Reason, "the event is closed")
			}
			landed(t, held, up)
			ev, err := b.c.GetEvent(context.Background(), lateEvent)
			require.NoError(t, err)
			total, _, pool, entries := seatsOf(t, b.c, lateEvent, asyncevent.ActionAddCapacity)
			if up.Applied {
				assert.EqualValues(t, [4]int64{4, 4, 2, 1}, [4]int64{ev.CapacityTotal, total, pool, int64(entries)}, "two seats added, once")
			} else {
				assert.EqualValues(t, [4]int64{2, 2, 0, 0}, [4]int64{ev.CapacityTotal, total, pool, int64(entries)}, "answered not applied: no seat added")
			}
		})
	}
}

// A cancel whose first attempt got no answer: its seat goes back once, and a cancel
// answered not applied stays so once the held attempt landed. (A cancel is not
// refused for the close, and a request cancelled stays so: no refusal of a cancel
// leaves an earlier attempt able to apply; these cases hold it.)
func TestCancelRequestAfterAnUnansweredAttempt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		cancel func(t *testing.T, b *lateBundle) (*asynceventtest.Held, asyncevent.EventUpdate)
	}{
		{"its own resend after the end", func(t *testing.T, b *lateBundle) (*asynceventtest.Held, asyncevent.EventUpdate) {
			held := b.hb.Hold(b.endPassed(onLate), 1, asynceventtest.CallerReset)
			up, err := b.c.CancelRequest(context.Background(), b.won[0], asyncevent.CancelRequestInput{Actor: "ops"})
			require.NoError(t, err)
			require.Equal(t, 1, held.Count())
			return held, up
		}},
		{"a call again under its key after another cancel", func(t *testing.T, b *lateBundle) (*asynceventtest.Held, asyncevent.EventUpdate) {
			in := asyncevent.CancelRequestInput{Actor: "ops", IdempotencyKey: "refund-late"}
			held := b.hb.Hold(onLate, 3, asynceventtest.CallerReset)
			_, err := b.c.CancelRequest(context.Background(), b.won[0], in)
			require.ErrorIs(t, err, asyncevent.ErrOutcomeUnknown)
			b.passEnd()
			other, err := b.c.CancelRequest(context.Background(), b.won[0], asyncevent.CancelRequestInput{Actor: "ops-bob"})
			require.NoError(t, err)
			require.True(t, other.Applied, other.Reason)
			up, err := b.c.CancelRequest(context.Background(), b.won[0], in)
			require.NoError(t, err)
			return held, up
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := lateSetup(t)
			held, up := tc.cancel(t, b)
			landed(t, held, up)
			r, err := b.c.GetRequest(context.Background(), b.won[0])
			require.NoError(t, err)
			assert.Equal(t, asyncevent.ResultCancelled, r.ResultCode)
			total, _, pool, entries := seatsOf(t, b.c, lateEvent, asyncevent.ActionCancel)
			assert.EqualValues(t, [3]int64{2, 1, 1}, [3]int64{total, pool, int64(entries)}, "one seat back, one cancel on record")
		})
	}
}

// A key refused after an attempt of it got no answer stays refused: a call again
// under it answers not applied with the reason recorded, and applies nothing, even
// on a client to which the event is still open. A refusal with no attempt
// unanswered and no key of the caller's records nothing.
func TestARefusedKeyStaysRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := lateSetup(t)
	in := asyncevent.AddCapacityInput{Seats: 2, Actor: "ops", IdempotencyKey: "add-late"}
	held := b.hb.Hold(b.endPassed(onLate), 1, asynceventtest.CallerReset)
	up, err := b.c.AddCapacity(ctx, lateEvent, in)
	require.NoError(t, err)
	require.False(t, up.Applied)
	assert.Contains(t, up.Reason, "the event is closed")
	assert.Contains(t, up.Reason, in.IdempotencyKey, "the reason names the key it recorded")
	markers := operationMarkers(t, b.c)
	require.Len(t, markers, 1)
	assert.Equal(t, &types.AttributeValueMemberS{Value: "REFUSED"}, markers[0]["outcome"])
	assert.Equal(t, &types.AttributeValueMemberS{Value: "the event is closed"}, markers[0]["reason"])

	early, err := asyncevent.New(b.hb.Unwrap(), asyncevent.Options{TableName: b.c.TableName(), Clock: asynceventtest.SkewedClock(b.clock.Now, -time.Minute)})
	require.NoError(t, err)
	again, err := early.AddCapacity(ctx, lateEvent, in)
	require.NoError(t, err)
	assert.False(t, again.Applied, "refused under this key before")
	assert.False(t, again.Replayed)
	assert.Contains(t, again.Reason, "the event is closed", "the reason recorded")
	assert.Contains(t, again.Reason, "refused before")
	landed(t, held, up)
	total, _, pool, entries := seatsOf(t, b.c, lateEvent, asyncevent.ActionAddCapacity)
	assert.EqualValues(t, [3]int64{2, 0, 0}, [3]int64{total, pool, int64(entries)}, "no seat added")

	up, err = b.c.AddCapacity(ctx, lateEvent, asyncevent.AddCapacityInput{Seats: 1, Actor: "ops"})
	require.NoError(t, err)
	assert.False(t, up.Applied)
	assert.Len(t, operationMarkers(t, b.c), 1, "a plain refusal writes no marker")
}

// operationMarkers returns the operation markers of the table (a consistent Scan).
func operationMarkers(t *testing.T, c *asyncevent.Client) []map[string]types.AttributeValue {
	t.Helper()
	var out []map[string]types.AttributeValue
	for _, it := range asynceventtest.ScanTable(t, c.TableName()) {
		if sk, ok := it["SK"].(*types.AttributeValueMemberS); ok && strings.HasPrefix(sk.Value, "OP#") {
			out = append(out, it)
		}
	}
	return out
}

// landFirst lands held before any PutItem of an operation marker: the attempt in
// flight lands between the call's refusal and its fence.
type landFirst struct {
	asyncevent.DynamoDB
	held *asynceventtest.Held
}

func (l *landFirst) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if sk, ok := in.Item["SK"].(*types.AttributeValueMemberS); ok && strings.HasPrefix(sk.Value, "OP#") && l.held != nil {
		if err := l.held.Land(ctx); err != nil {
			return nil, err
		}
	}
	return l.DynamoDB.PutItem(ctx, in, o...)
}

// The attempt in flight lands just before the fence's put (the refused marker's):
// the fence finds the applied marker, and the call answers applied, replayed.
func TestAddCapacityFenceMeetsTheLandedAttempt(t *testing.T) {
	t.Parallel()
	clock := asynceventtest.NewClock(t0)
	hb := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(t))
	lf := &landFirst{DynamoDB: hb}
	c := lateSetupOn(t, lf, hb, clock).c
	end := t0.Add(time.Minute)
	lf.held = hb.Hold(func(op string, in any) bool {
		if !onLate(op, in) {
			return false
		}
		clock.Advance(end.Add(time.Millisecond).Sub(clock.Now()))
		return true
	}, 1, asynceventtest.CallerReset)
	up, err := c.AddCapacity(context.Background(), lateEvent, asyncevent.AddCapacityInput{Seats: 2, Actor: "ops"})
	require.NoError(t, err)
	require.Equal(t, 1, lf.held.Count())
	require.True(t, lf.held.Outcome().Applied, "the held attempt applied before the fence: %s", lf.held.Outcome())
	ev, err := c.GetEvent(context.Background(), lateEvent)
	require.NoError(t, err)
	assert.EqualValues(t, 4, ev.CapacityTotal)
	assert.True(t, up.Applied, "seats added, answered: %s", up.Reason)
	assert.True(t, up.Replayed)
}

// scriptHTTP answers the TransactWriteItems of an add by script: the first is applied
// and its answer lost; the SDK's retries (same ClientRequestToken) get resp.
type scriptHTTP struct {
	next  dynamodb.HTTPClient
	errTy string
	match string
	mu    sync.Mutex
	n     int
}

func (s *scriptHTTP) Do(req *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(req.Header.Get("X-Amz-Target"), ".TransactWriteItems") {
		return s.next.Do(req)
	}
	body, _ := io.ReadAll(req.Body)
	req.Body = io.NopCloser(bytes.NewReader(body))
	if !bytes.Contains(body, []byte(s.match)) {
		return s.next.Do(req)
	}
	s.mu.Lock()
	s.n++
	n := s.n
	s.mu.Unlock()
	switch {
	case n == 1:
		resp, err := s.next.Do(req)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer (after applied)")}
	case n <= 3 && s.errTy != "":
		b := []byte(`{"__type":"com.amazonaws.dynamodb.v20120810#` + s.errTy + `","message":"injected"}`)
		h := http.Header{}
		h.Set("Content-Type", "application/x-amz-json-1.0")
		h.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(b)), 10))
		h.Set("X-Amzn-Requestid", "injected")
		return &http.Response{Status: "400 Bad Request", StatusCode: 400, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: h, Body: io.NopCloser(bytes.NewReader(b)), ContentLength: int64(len(b)), Request: req}, nil
	}
	return s.next.Do(req)
}

// The SDK's own resends of a control whose first send applied and whose answer was
// lost, refused (throttled, or the first still in progress) or answered: the library
// sends each attempt once, so it knows the answer was lost, and never says not
// applied, nor throttled, of a change it made. An add and a pause, judged from the
// event.
func TestControlsThroughTheSDKsResends(t *testing.T) {
	t.Parallel()
	controls := map[string]struct {
		match   string // the request body of the control's transaction holds it
		control func(*asyncevent.Client) (asyncevent.EventUpdate, error)
		applied func(*asyncevent.Event) bool
	}{
		"add capacity": {match: "OP#ADD_CAPACITY#",
			control: func(c *asyncevent.Client) (asyncevent.EventUpdate, error) {
				return c.AddCapacity(context.Background(), lateEvent, asyncevent.AddCapacityInput{Seats: 2, Actor: "ops"})
			},
			applied: func(ev *asyncevent.Event) bool { return ev.CapacityTotal == 4 }},
		"pause": {match: "AUDIT#",
			control: func(c *asyncevent.Client) (asyncevent.EventUpdate, error) {
				return c.PauseEvent(context.Background(), lateEvent, asyncevent.ControlInput{Actor: "ops"})
			},
			applied: func(ev *asyncevent.Event) bool { return ev.Paused }},
	}
	for name, ctl := range controls {
		for _, errTy := range []string{"ThrottlingException", "TransactionInProgressException", ""} {
			t.Run(name+"/"+errTy, func(t *testing.T) {
				t.Parallel()
				sh := &scriptHTTP{errTy: errTy, match: "no transaction before the set-up's end"}
				db := dynamodb.New(asynceventtest.DynamoDB(t).Options(), func(o *dynamodb.Options) {
					sh.next = o.HTTPClient
					o.HTTPClient = sh
					o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
						so.RateLimiter = ratelimit.None
						so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
					})
				})
				c := lateSetupOn(t, db, nil, asynceventtest.NewClock(t0)).c
				sh.match = ctl.match
				up, err := ctl.control(c)
				ev, gerr := c.GetEvent(context.Background(), lateEvent)
				require.NoError(t, gerr)
				require.True(t, ctl.applied(ev), "the first send applied")
				if !up.Applied {
					assert.ErrorIs(t, err, asyncevent.ErrOutcomeUnknown, "applied, and the call said neither applied nor unknown: %v", err)
				}
			})
		}
	}
}
