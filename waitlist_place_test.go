package asyncevent_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

// waitlistPlaces flushes the counts writer holds and returns the place on the
// waitlist GetRequest gives each request, read by a client of its own on the same
// table and clock (a poll on another node, its copy of the counts fresh): -1 for a
// request that is not WAITLISTED, which must have no place.
func waitlistPlaces(t *testing.T, writer *asyncevent.Client, clock *asynceventtest.Clock, ids []string) []int64 {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, writer.FlushProgress(ctx))
	reader, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: writer.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	places := make([]int64, len(ids))
	for i, id := range ids {
		r, err := reader.GetRequest(ctx, id)
		require.NoError(t, err)
		places[i] = -1
		if r.Status != asyncevent.StatusWaitlisted {
			assert.Nil(t, r.Waitlist, "%s is %s: no place on the waitlist", id, r.Status)
			continue
		}
		if assert.NotNil(t, r.Waitlist, "%s is WAITLISTED", id) {
			places[i] = r.Waitlist.Ahead
			cfg, err := reader.GetEvent(ctx, r.EventID)
			require.NoError(t, err)
			assert.Equal(t, cfg.EndsAt, r.Waitlist.EndsAt, "the waitlist ends with the event")
		}
	}
	return places
}

// A WAITLISTED request learns how many wait before it on the waitlist, counted by
// every node that waitlists, releases, serves or closes, and its place moves up as
// those before it leave; the waitlist ends at the event's end. With the status log
// the waitlisting write is a transaction, whose request is read back for the count.
func TestWaitlistPlace(t *testing.T) {
	for _, statusLog := range []bool{false, true} {
		name := "without the status log"
		if statusLog {
			name = "with the status log"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			ends := t0.Add(time.Hour)
			b := setupHolds(t, holdSale{event: holdsOf("sale", 1, 1, 10*time.Minute, asyncevent.MillisOf(ends)), statusLog: statusLog})
			var ids []string
			for _, u := range clickers(5) {
				ids = append(ids, b.submit(t, u)...)
				b.clock.Advance(time.Second) // a second apart: places exact
			}
			b.drain(t)
			require.Equal(t, []int64{-1, 0, 1, 2, 3}, waitlistPlaces(t, b.c, b.clock, ids), "one HELD, then the waitlist in queue order")

			// Another node releases the second of the waitlist: those after it move up.
			other := b.client(t, asynceventtest.DynamoDB(t), asyncevent.Options{Clock: b.clock.Now, StatusLog: statusLog})
			_, err := other.Release(ctx, ids[2])
			require.NoError(t, err)
			require.NoError(t, other.FlushProgress(ctx))
			assert.Equal(t, []int64{-1, 0, -1, 1, 2}, waitlistPlaces(t, b.c, b.clock, ids))

			// The hold is released and the sweep serves the first of the waitlist.
			b.released(t, ids[0])
			rep := b.sweep(t, b.c, asyncevent.HoldSweepOptions{})
			require.Equal(t, 1, rep.Served)
			assert.Equal(t, []int64{-1, -1, -1, 0, 1}, waitlistPlaces(t, b.c, b.clock, ids))

			// The event ends: the sweep closes the waitlist, a pass of one write at a
			// time; one still waiting meanwhile has the closed no longer ahead.
			b.clock.Advance(ends.Sub(b.clock.Now()) + time.Second)
			for closed := 0; closed == 0; { // past the served one's hold, which ran out too
				rep = b.sweep(t, b.c, asyncevent.HoldSweepOptions{MaxWrites: 1})
				closed = rep.Closed
			}
			assert.Equal(t, []int64{-1, -1, -1, -1, 0}, waitlistPlaces(t, b.c, b.clock, ids))
			rep = b.sweep(t, b.c, asyncevent.HoldSweepOptions{})
			require.Equal(t, 1, rep.Closed)
			for _, id := range ids[3:] {
				r := b.request(t, id)
				assert.Equal(t, asyncevent.ResultRejectedCapacity, r.ResultCode, "closed with the event")
			}
			assert.Equal(t, []int64{-1, -1, -1, -1, -1}, waitlistPlaces(t, b.c, b.clock, ids))
		})
	}

	// Each write whose answer is lost is sent again, and each counts once: the
	// waitlisting write and Release's find the request as their own first send left
	// it (waitlistBy), and the counts' ADD is never sent again (the SDK's retryer
	// would resend it after a connection reset).
	t.Run("answers lost: each counted once", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		resend := &resentOnce{DynamoDB: asynceventtest.DynamoDB(t), sets: map[string]bool{"WAITLISTED": true, "REJECTED_RELEASED": true}}
		b := setupHolds(t, holdSale{event: holdsOf("sale", 1, 1, 10*time.Minute, 0), db: resend})
		var ids []string
		for _, u := range clickers(5) {
			ids = append(ids, b.submit(t, u)...)
			b.clock.Advance(time.Second)
		}
		b.drain(t)
		require.Equal(t, int64(4), resend.resent.Load(), "each waitlisting write sent twice")
		assert.Equal(t, []int64{-1, 0, 1, 2, 3}, waitlistPlaces(t, b.c, b.clock, ids))
		tr, err := b.c.Release(ctx, ids[3])
		require.NoError(t, err)
		assert.True(t, tr.Applied, "the release's own write, found as it left the request")
		assert.Equal(t, []int64{-1, 0, 1, -1, 2}, waitlistPlaces(t, b.c, b.clock, ids))

		// The counts' writes lose every answer, after the write applied.
		lossy, _ := asynceventtest.NewFaultyClient(asynceventtest.DynamoDB(t), asynceventtest.FaultPlan{Seed: 1, LoseRate: 1,
			Operations: []string{"UpdateItem"}, KeyPrefix: "EVENT#sale#PROGRESS"}, func(o *dynamodb.Options) { o.RetryMaxAttempts = 2 })
		other := b.client(t, lossy, asyncevent.Options{Clock: b.clock.Now})
		_, err = other.Release(ctx, ids[1])
		require.NoError(t, err)
		assert.Error(t, other.FlushProgress(ctx), "the answer was lost")
		assert.Equal(t, []int64{-1, -1, 0, -1, 1}, waitlistPlaces(t, b.c, b.clock, ids), "counted once, not sent again")
	})

	// A resend of the waitlisting write that lands after the request left the
	// waitlist (released by its user meanwhile) still counts the join, once.
	t.Run("a resend after a release", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		resend := &resentOnce{DynamoDB: asynceventtest.DynamoDB(t), sets: map[string]bool{"WAITLISTED": true}}
		b := setupHolds(t, holdSale{event: holdsOf("sale", 1, 1, 10*time.Minute, 0), db: resend})
		var ids []string
		for _, u := range clickers(4) {
			ids = append(ids, b.submit(t, u)...)
			b.clock.Advance(time.Second)
		}
		releaser := b.client(t, asynceventtest.DynamoDB(t), asyncevent.Options{Clock: b.clock.Now})
		resend.between = func(requestID string) {
			if requestID == ids[1] {
				_, err := releaser.Release(ctx, requestID)
				assert.NoError(t, err)
			}
		}
		b.drain(t)
		require.NoError(t, releaser.FlushProgress(ctx))
		assert.Equal(t, asyncevent.ResultReleased, b.request(t, ids[1]).ResultCode)
		assert.Equal(t, []int64{-1, -1, 0, 1}, waitlistPlaces(t, b.c, b.clock, ids))
	})

	// A poll's place reads one waitlist item per minute in which requests were
	// waitlisted, in one Query (docs/design.md: about 5 RCU for an hour; here a quarter
	// of an hour, counted by the units DynamoDB Local reports).
	t.Run("the read's cost", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		b := setupHolds(t, holdSale{event: holdsOf("sale", 1, 1, 10*time.Minute, 0)})
		var ids []string
		for _, u := range clickers(16) {
			ids = append(ids, b.submit(t, u)...)
			b.clock.Advance(time.Minute)
		}
		b.drain(t)
		require.NoError(t, b.c.FlushProgress(ctx))
		counter := asynceventtest.NewCounter(asynceventtest.DynamoDB(t))
		reader := b.client(t, counter, asyncevent.Options{Clock: b.clock.Now})
		_, err := reader.GetRequest(ctx, ids[1]) // the event's config, cached
		require.NoError(t, err)
		before := counter.Snapshot()
		r, err := reader.GetRequest(ctx, ids[15])
		require.NoError(t, err)
		require.NotNil(t, r.Waitlist)
		assert.EqualValues(t, 14, r.Waitlist.Ahead)
		cost := counter.Snapshot().Sub(before)
		assert.Equal(t, map[string]int{"GetItem": 1}, cost.Calls, "the copy read for the first poll serves the next")
		reader = b.client(t, counter, asyncevent.Options{Clock: b.clock.Now})
		before = counter.Snapshot()
		_, err = reader.GetRequest(ctx, ids[15])
		require.NoError(t, err)
		cost = counter.Snapshot().Sub(before)
		assert.Equal(t, 1, cost.Calls["Query"], "one Query of the waitlist items")
		assert.LessOrEqual(t, cost.RCU, 3.0, "15 waitlist items, the request and the config: %v", cost)
	})

	t.Run("an event with holds needs an end", func(t *testing.T) {
		t.Parallel()
		b := setupHolds(t, holdSale{})
		_, err := b.c.CreateEvent(context.Background(), asyncevent.EventSettings{EventID: "endless", EventType: asyncevent.FirstCome,
			CapacityTotal: 1, HoldFor: 10 * time.Minute})
		require.ErrorIs(t, err, asyncevent.ErrInvalidEvent)
		assert.Contains(t, err.Error(), "needs endsAt")
	})
}

// resentOnce sends each UpdateItem that sets one of sets twice, and answers with the
// second's answer: the first applied and its answer was lost, as when the SDK's
// retryer sends a write again after a connection reset.
type resentOnce struct {
	asyncevent.DynamoDB
	sets   map[string]bool
	resent atomic.Int64
	// between, if set, runs between the two sends, with the request's ID.
	between func(requestID string)
}

func (r *resentOnce) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	for _, v := range in.ExpressionAttributeValues {
		if s, ok := v.(*types.AttributeValueMemberS); ok && r.sets[s.Value] {
			if _, err := r.DynamoDB.UpdateItem(ctx, in, o...); err != nil {
				return nil, err
			}
			r.resent.Add(1)
			if pk, ok := in.Key["PK"].(*types.AttributeValueMemberS); ok && r.between != nil {
				r.between(strings.TrimPrefix(pk.Value, "REQ#"))
			}
			break
		}
	}
	return r.DynamoDB.UpdateItem(ctx, in, o...)
}
