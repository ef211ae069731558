package asyncevent_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/queue"
)

// The rules of request.go's rows, a case each.
func TestRequestRules(t *testing.T) {
	t.Parallel()
	// A worker that believes the event sold out ends its losers without a lease (the
	// "first-come sold out" row), but never a request another delivery holds
	// PROCESSING under a live lease: that delivery's claim may be taking a seat, and
	// it alone decides the request.
	t.Run("sold out leaves a request processing under a lease", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		clock := asynceventtest.NewClock(t0)
		c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
		_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 1})
		require.NoError(t, err)
		p, err := c.Submit(ctx, queue.NewMemory(queue.MemoryOptions{}), "sale", "u1")
		require.NoError(t, err)
		ref := asyncevent.RequestRef{RequestID: p.RequestID, EventID: "sale", UserID: "u1"}
		lease := asyncevent.Lease{Owner: "worker-1", Duration: time.Minute}
		started, err := c.Rows().StartProcessing(ctx, ref, lease)
		require.NoError(t, err)
		require.True(t, started.Applied)

		rejected, err := c.Rows().RejectSoldOut(ctx, ref)
		require.NoError(t, err)
		assert.False(t, rejected.Applied, "a sold-out rejection of a request under a live lease")
		won, err := c.Rows().ClaimSeat(ctx, ref, lease)
		require.NoError(t, err)
		assert.True(t, won.Applied, "the lease holder claims its seat")
		r, err := c.GetRequest(ctx, p.RequestID)
		require.NoError(t, err)
		assert.Equal(t, asyncevent.StatusSucceeded, r.Status)
		asynceventtest.CheckEvent(t, c, "sale", asynceventtest.CheckOptions{})
	})
	// A final failure without a lease (an operator's, a sweeper's) never ends a
	// first-come request: a claim of it without a lease may hold its seat on its home
	// shard before any write on the request, so only a lease holder, having closed
	// the places its claims go to, ends one without a seat.
	t.Run("a final failure without a lease leaves a first-come request", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		clock := asynceventtest.NewClock(t0)
		c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
		_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 1})
		require.NoError(t, err)
		q := queue.NewMemory(queue.MemoryOptions{})
		p, err := c.Submit(ctx, q, "sale", "u1")
		require.NoError(t, err)

		failed, err := c.Rows().MarkFailed(ctx, asyncevent.RequestRef{RequestID: p.RequestID, EventID: "sale", UserID: "u1"},
			asyncevent.Failure{Class: asyncevent.NonRetryable, Code: asyncevent.ResultFailedWorker, Cause: errors.New("given up")})
		require.NoError(t, err)
		assert.False(t, failed.Applied, "a first-come request failed without its lease")
		drain(t, asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), q)
		r, err := c.GetRequest(ctx, p.RequestID)
		require.NoError(t, err)
		assert.Equal(t, asyncevent.StatusSucceeded, r.Status, "its worker decides it")
		asynceventtest.CheckEvent(t, c, "sale", asynceventtest.CheckOptions{})
	})
}

// An applied row method's Transition carries the request as the write left it: from
// the write's own answer when it is a single UpdateItem, read back when it is a
// transaction (Options.StatusLog, a row that writes other items too). Each case runs
// with the status log off and on.
func TestAppliedTransitionCarriesTheRequest(t *testing.T) {
	t.Parallel()
	lease := asyncevent.Lease{Owner: "worker-1", Duration: time.Minute}
	type step func(ctx context.Context, c *asyncevent.Client, ref asyncevent.RequestRef) (asyncevent.Transition, error)
	start := func(ctx context.Context, c *asyncevent.Client, ref asyncevent.RequestRef) (asyncevent.Transition, error) {
		return c.Rows().StartProcessing(ctx, ref, lease)
	}
	claim := func(ctx context.Context, c *asyncevent.Client, ref asyncevent.RequestRef) (asyncevent.Transition, error) {
		return c.Rows().ClaimSeat(ctx, ref, lease)
	}
	soldOut := func(ctx context.Context, c *asyncevent.Client, ref asyncevent.RequestRef) (asyncevent.Transition, error) {
		return c.Rows().RejectSoldOut(ctx, ref) // WAITLISTED, on an event with holds
	}
	cases := []struct {
		name   string
		holds  bool   // the event has holds (HoldFor)
		before []step // applied first, on the RECEIVED request Participate wrote
		step   step
		want   asyncevent.Status
		code   asyncevent.ResultCode
		// reads is how many times the step reads the request without the status log:
		// its own reads, and one more only where the write cannot answer with it.
		reads int
	}{
		{name: "MarkQueued", want: asyncevent.StatusQueued,
			step: func(ctx context.Context, c *asyncevent.Client, ref asyncevent.RequestRef) (asyncevent.Transition, error) {
				return c.Rows().MarkQueued(ctx, ref)
			}},
		{name: "StartProcessing", want: asyncevent.StatusProcessing, step: start, reads: 1},
		{name: "ClaimSeat", before: []step{start}, want: asyncevent.StatusSucceeded, code: asyncevent.ResultSuccess, reads: 1, step: claim},
		{name: "MarkCapacityRejected", before: []step{start}, want: asyncevent.StatusRejected, code: asyncevent.ResultRejectedCapacity,
			step: func(ctx context.Context, c *asyncevent.Client, ref asyncevent.RequestRef) (asyncevent.Transition, error) {
				return c.Rows().MarkCapacityRejected(ctx, ref, lease)
			}},
		{name: "MarkFailed", before: []step{start}, want: asyncevent.StatusFailedFinal, code: asyncevent.ResultFailedWorker,
			step: func(ctx context.Context, c *asyncevent.Client, ref asyncevent.RequestRef) (asyncevent.Transition, error) {
				return c.Rows().MarkFailed(ctx, ref, asyncevent.Failure{Lease: lease, Class: asyncevent.NonRetryable,
					Code: asyncevent.ResultFailedWorker, ErrorCode: "GIVEN_UP", Cause: errors.New("given up")})
			}},
		{name: "RejectSoldOut", want: asyncevent.StatusRejected, code: asyncevent.ResultRejectedCapacity,
			step: func(ctx context.Context, c *asyncevent.Client, ref asyncevent.RequestRef) (asyncevent.Transition, error) {
				return c.Rows().RejectSoldOut(ctx, ref)
			}},
		{name: "MarkEnqueueFailed (a transaction with the lock's release)", want: asyncevent.StatusFailedFinal, code: asyncevent.ResultFailedIngestEnqueue, reads: 1,
			step: func(ctx context.Context, c *asyncevent.Client, ref asyncevent.RequestRef) (asyncevent.Transition, error) {
				return c.Rows().MarkEnqueueFailed(ctx, ref, errors.New("the queue is down"))
			}},
		{name: "ClaimSeat of an event with holds", holds: true, before: []step{start}, want: asyncevent.StatusHeld, reads: 1,
			step: claim},
		{name: "Confirm (a transaction with the Hold item's delete)", holds: true, before: []step{start, claim}, want: asyncevent.StatusSucceeded,
			code: asyncevent.ResultSuccess, reads: 2, // its read before the write, and after it
			step: func(ctx context.Context, c *asyncevent.Client, ref asyncevent.RequestRef) (asyncevent.Transition, error) {
				return c.Confirm(ctx, ref.RequestID)
			}},
		{name: "Release of a hold (a transaction)", holds: true, before: []step{start, claim}, want: asyncevent.StatusRejected,
			code: asyncevent.ResultReleased, reads: 2,
			step: func(ctx context.Context, c *asyncevent.Client, ref asyncevent.RequestRef) (asyncevent.Transition, error) {
				return c.Release(ctx, ref.RequestID)
			}},
		{name: "Release of a waitlisted request", holds: true, before: []step{soldOut}, want: asyncevent.StatusRejected,
			code: asyncevent.ResultReleased, reads: 1, // its read before the write
			step: func(ctx context.Context, c *asyncevent.Client, ref asyncevent.RequestRef) (asyncevent.Transition, error) {
				return c.Release(ctx, ref.RequestID)
			}},
	}
	for _, statusLog := range []bool{false, true} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s, status log %v", tc.name, statusLog), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				db := asynceventtest.NewCounter(asynceventtest.DynamoDB(t))
				c := asynceventtest.NewTableOn(t, db, asyncevent.Options{Clock: asynceventtest.NewClock(t0).Now, StatusLog: statusLog})
				settings := asyncevent.EventSettings{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 1}
				if tc.holds {
					settings.HoldFor, settings.EndsAt = 10*time.Minute, asyncevent.MillisOf(t0.Add(24*time.Hour))
				}
				_, err := c.CreateEvent(ctx, settings)
				require.NoError(t, err)
				p, err := c.Rows().Participate(ctx, "sale", "u1")
				require.NoError(t, err)
				ref := asyncevent.RequestRef{RequestID: p.RequestID, EventID: "sale", UserID: "u1"}
				for _, s := range tc.before {
					tr, err := s(ctx, c, ref)
					require.NoError(t, err)
					require.True(t, tr.Applied)
				}

				before := db.Snapshot()
				tr, err := tc.step(ctx, c, ref)
				require.NoError(t, err)
				require.True(t, tr.Applied)
				require.NotNil(t, tr.Current, "an applied write carries the request")
				if !statusLog {
					assert.Equal(t, tc.reads, db.Snapshot().Sub(before).Reads[entity.Request], "reads of the request")
				}
				stored, err := c.GetRequest(ctx, p.RequestID)
				require.NoError(t, err)
				assert.Equal(t, tc.want, tr.Current.Status)
				assert.Equal(t, tc.code, tr.Current.ResultCode)
				stored.Queue, stored.Prequeue, stored.Lease = nil, nil, nil // a read's views, not stored
				assert.Equal(t, *stored, *tr.Current, "the request as the write left it")
			})
		}
	}
}

// readsFailAfterATransaction is a DynamoDB whose GetItem calls fail once a
// TransactWriteItems has been sent: the read back of an applied transaction fails.
type readsFailAfterATransaction struct {
	asyncevent.DynamoDB
	sent atomic.Bool
}

func (d *readsFailAfterATransaction) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	out, err := d.DynamoDB.TransactWriteItems(ctx, in, o...)
	d.sent.Store(err == nil)
	return out, err
}

func (d *readsFailAfterATransaction) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if d.sent.Load() {
		return nil, errors.New("connection reset (injected)")
	}
	return d.DynamoDB.GetItem(ctx, in, o...)
}

// A confirm that applied, whose read back fails for good: applied, without the
// request and without an error (an error would tell the payment it may not have
// applied), and the request is SUCCEEDED.
func TestAnAppliedConfirmWhoseReadBackFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := &readsFailAfterATransaction{DynamoDB: asynceventtest.DynamoDB(t)}
	c := asynceventtest.NewTableOn(t, db, asyncevent.Options{Clock: asynceventtest.NewClock(t0).Now})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 1, HoldFor: 10 * time.Minute,
		EndsAt: asyncevent.MillisOf(t0.Add(24 * time.Hour))})
	require.NoError(t, err)
	db.sent.Store(false) // the event's creation was a transaction
	p, err := c.Rows().Participate(ctx, "sale", "u1")
	require.NoError(t, err)
	ref := asyncevent.RequestRef{RequestID: p.RequestID, EventID: "sale", UserID: "u1"}
	lease := asyncevent.Lease{Owner: "worker-1", Duration: time.Minute}
	_, err = c.Rows().StartProcessing(ctx, ref, lease)
	require.NoError(t, err)
	held, err := c.Rows().ClaimSeat(ctx, ref, lease)
	require.NoError(t, err)
	require.Equal(t, asyncevent.StatusHeld, held.Current.Status)
	db.sent.Store(false)

	tr, err := c.Confirm(ctx, p.RequestID)
	require.NoError(t, err, "the confirm applied")
	assert.True(t, tr.Applied)
	assert.Nil(t, tr.Current, "its read back failed")
	db.sent.Store(false)
	r, err := c.GetRequest(ctx, p.RequestID)
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusSucceeded, r.Status)
}
