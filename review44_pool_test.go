package asyncevent_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

// afterFirstStatus runs then, once, right after the first write that gives a request
// status has landed.
type afterFirstStatus struct {
	asyncevent.DynamoDB
	status asyncevent.Status
	once   sync.Once
	then   func()
}

func (a *afterFirstStatus) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := a.DynamoDB.UpdateItem(ctx, in, o...)
	if err == nil && len(pkOf(in.Key)) > 4 && pkOf(in.Key)[:4] == "REQ#" {
		for _, v := range in.ExpressionAttributeValues {
			if s, ok := v.(*types.AttributeValueMemberS); ok && s.Value == string(a.status) {
				a.once.Do(a.then)
			}
		}
	}
	return out, err
}

// Review 44: "Seats an operator adds while it runs go to the entries not yet served,
// in the order" (ServePrequeue). The serve reads the seats left before each wave as
// the capacity shards plus poolSeats(cfg), with cfg the config it read when it
// began: poolSeats answers 0 without a read when that cfg had no poolVersion (and
// reads the pool eventually consistent otherwise). A seat an operator adds once
// every shard is empty goes to the pool (AddCapacity), so the serve, blind to it,
// counts 0 seats left and "refuses" the remaining entries 64 at once, in any order;
// each of them, looking at its home shard, learns of the pool's new version and
// claims the pool: whichever lands first wins. Here the seat is added right after the
// first entry won, before any other entry was served: the second entry of the
// drawn order should win it. VerifyPrequeue calls the result OK whatever it is (a
// pool seat "breaks no order").
func TestReview44SeatAddedDuringTheServeGoesToARandomEntry(t *testing.T) {
	t.Parallel()
	// Three drops: on DynamoDB Local the second entry of the order wins by chance
	// about one time in four.
	for drop := range 3 {
		t.Run(fmt.Sprint("drop ", drop), func(t *testing.T) {
			ctx := context.Background()
			c, clock := prequeueDrop(t, 1, 1)
			clock.Advance(time.Minute)
			clickAll(t, c, &sendQueue{}, userIDs("early", 40))
			clock.Advance(prequeueStart.Sub(clock.Now()) + asyncevent.DefaultDrawSettleWindow)

			db := &afterFirstStatus{DynamoDB: asynceventtest.DynamoDB(t), status: asyncevent.StatusSucceeded}
			db.then = func() {
				up, err := c.AddCapacity(ctx, "drop", asyncevent.AddCapacityInput{Seats: 1, Actor: "ops"})
				if assert.NoError(t, err) {
					assert.True(t, up.Applied, up.Reason)
				}
			}
			server, err := asyncevent.New(db, asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
			require.NoError(t, err)
			res, err := server.ServePrequeue(ctx, "drop")
			require.NoError(t, err)
			t.Logf("winners at places %v of the order", places(res.Order, res.Winners))
			assert.Equal(t, res.Order[:2], res.Winners, "the first entry wins the seat it found, the second the seat added before it was served")

			v, err := c.VerifyPrequeue(ctx, "drop")
			require.NoError(t, err)
			t.Logf("VerifyPrequeue: %s", v)
			if v.OK() { // "the first N in the order won", it says
				assert.Equal(t, v.Order[:len(v.Winners)], v.Winners, "VerifyPrequeue OK: %s", v)
			}
		})
	}
}

func places(order, winners []string) []int {
	var at []int
	for _, w := range winners {
		for i, id := range order {
			if id == w {
				at = append(at, i)
			}
		}
	}
	return at
}
