package asyncevent_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// isSeatClaim reports whether an UpdateItem is a seat claim (it adds to holders), not
// a close (it adds to void) or another write of the item.
func isSeatClaim(in *dynamodb.UpdateItemInput) bool {
	fields := strings.Fields(aws.ToString(in.UpdateExpression))
	return len(fields) > 1 && fields[0] == "ADD" && in.ExpressionAttributeNames[fields[1]] == "holders"
}

// review26PoolClaims counts the claims sent on an event's pool (UpdateItem of
// EVENT#<eventId>#RETURNS whose expression is ADD holders, SET …).
func review26PoolClaims(counter *atomic.Int64, eventID string) func(ctx context.Context, in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error, bool) {
	return func(ctx context.Context, in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error, bool) {
		if pkOfKey(in.Key) == "EVENT#"+eventID+"#RETURNS" && isSeatClaim(in) {
			counter.Add(1)
		}
		return nil, nil, false
	}
}

// Once the pool is drained, a worker remembers it dry ("the pool found empty is
// remembered at its version", docs/design.md "Seats added") and a sold-out loser is
// again a look and one write. The dry mark is recorded at sc.poolVersion, which only a
// claimOn of a capacity shard ever sets; a leased claim of a worker that knows every
// shard empty sends no claim on a shard, so its poolVersion stays 0 and poolDry(0)
// records nothing: every later loser of the worker goes the leased way (PROCESSING, a
// seat move, a failed claim on the single pool item) for the rest of the event.
func TestReview26PoolDrainedIsRememberedDry(t *testing.T) {
	for _, shards := range []int{1, 3} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			clock := asynceventtest.NewClock(t0)
			var poolClaims atomic.Int64
			db := &hookDB{DynamoDB: asynceventtest.DynamoDB(t), update: review26PoolClaims(&poolClaims, "dry")}
			c := asynceventtest.NewTableOn(t, db, asyncevent.Options{Clock: clock.Now, StatusLog: true})
			_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "dry", EventType: asyncevent.FirstCome, CapacityTotal: 3, CapacityShards: shards})
			require.NoError(t, err)
			q := queue.NewMemory(queue.MemoryOptions{})
			proc := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
			drain(t, proc, q)
			first := submitAll(t, c, clock, q, "dry", 6)
			drain(t, proc, q)
			require.Len(t, byStatus(t, c, first)[asyncevent.StatusSucceeded], 3)

			up, err := c.AddCapacity(ctx, "dry", asyncevent.AddCapacityInput{Seats: 1, Actor: "ops"})
			require.NoError(t, err)
			require.True(t, up.Applied, up.Reason)

			var later []string
			for i := range 8 {
				p, err := c.Submit(ctx, q, "dry", fmt.Sprintf("later-%d", i))
				require.NoError(t, err)
				later = append(later, p.RequestID)
				clock.Advance(time.Millisecond)
			}
			drain(t, proc, q)
			got := byStatus(t, c, later)
			require.Equal(t, later[:1], got[asyncevent.StatusSucceeded])
			asynceventtest.CheckEvent(t, c, "dry", asynceventtest.CheckOptions{})

			// One claim won the added seat, one found the pool empty and is
			// remembered; the six losers after it are a look and one write each.
			assert.LessOrEqual(t, poolClaims.Load(), int64(2), "%d claims sent on the pool for 8 requests: the dry memory never took", poolClaims.Load())
			for _, id := range later[2:] {
				logs, err := c.ListStatusLogs(ctx, id)
				require.NoError(t, err)
				for _, l := range logs {
					assert.NotEqual(t, asyncevent.StatusProcessing, l.ToStatus,
						"loser %s went PROCESSING (the leased way) although the pool was known dry", id)
				}
			}
		})
	}
}
