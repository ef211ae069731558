package asyncevent_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
)

// Review 44: VerifyPrequeue's check of the sale ("no click of the sale won while an
// entry was refused") looks only at sale clicks that are SUCCEEDED or HELD now, while
// its check of the entries counts a seat won whatever became of it since
// (wonSeat: released, expired, cancelled). So a sale click that won a seat while
// entries were refused (written here behind the library's back, as
// TestVerifyPrequeueCatchesABrokenOrder does: what a broken gate would do) is caught,
// but no longer once an operator cancels it (CancelRequest, a refund): the broken
// serve then verifies OK. The evidence of the break is still on the table (its
// REJECTED_CANCELLED result, seatShard 0, not the pool).
func TestReview44VerifyMissesASaleWinnerCancelledAfterwards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, clock := prequeueDrop(t, 2, 1)
	q := &sendQueue{}
	clock.Advance(time.Minute)
	clickAll(t, c, q, userIDs("early", 5))
	clock.Advance(prequeueStart.Sub(clock.Now()))
	sale := clickAll(t, c, q, userIDs("sale", 1))
	clock.Advance(asyncevent.DefaultDrawSettleWindow)
	res, err := c.ServePrequeue(ctx, "drop")
	require.NoError(t, err)
	require.Equal(t, res.Order[:2], res.Winners)

	// The sale's click made a winner on shard 0 while entries 2 to 4 were refused.
	behindTheLibrary(t, c, sale[0], "SET #s = :s, resultCode = :c, uiResult = :c, seatShard = :z", map[string]types.AttributeValue{
		":s": str(string(asyncevent.StatusSucceeded)), ":c": str(string(asyncevent.ResultSuccess)), ":z": &types.AttributeValueMemberN{Value: "0"}})
	v, err := c.VerifyPrequeue(ctx, "drop")
	require.NoError(t, err)
	require.False(t, v.OK(), "caught while it stands")
	require.Contains(t, v.String(), fmt.Sprintf("click %s of the sale won a seat", sale[0]))

	up, err := c.CancelRequest(ctx, sale[0], asyncevent.CancelRequestInput{Actor: "ops"})
	require.NoError(t, err)
	require.True(t, up.Applied, up.Reason)
	v, err = c.VerifyPrequeue(ctx, "drop")
	require.NoError(t, err)
	assert.False(t, v.OK(), "a sale click that won while entries were refused, then cancelled: %s", v)
}
