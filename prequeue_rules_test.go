package asyncevent_test

import (
	"context"
	"strings"
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

// VerifyPrequeue holds a served pre-queue to what its freeze recorded: a record
// altered behind the library's back is a problem it names. Each case serves a
// pre-queue of five entries for two seats, verifies it, alters one item, and
// verifies it again.
func TestVerifyPrequeueCatchesAnAlteredRecord(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		alter   func(t *testing.T, c *asyncevent.Client, record asyncevent.DrawRecord, order []string)
		problem string
	}{
		{
			// The recorded set read back must hash to the record's entriesHash: a
			// chunk that lost an entry does not.
			name: "a recorded entry dropped from the set",
			alter: func(t *testing.T, c *asyncevent.Client, record asyncevent.DrawRecord, order []string) {
				key, err := asyncevent.NewEntriesKey("drop", record.EntriesHash, 0)
				require.NoError(t, err)
				ids := strings.Join(order[1:], "\n") + "\n"
				alterItem(t, c, key.Key(), "SET ids = :v", &types.AttributeValueMemberS{Value: ids})
			},
			problem: "the recorded entries of drop hash to",
		},
		{
			// The revealed seed must hash to the commitment published at CreateEvent.
			name: "a revealed seed that is not the committed one",
			alter: func(t *testing.T, c *asyncevent.Client, _ asyncevent.DrawRecord, _ []string) {
				key, err := asyncevent.NewEventKey("drop", asyncevent.EventItemDraw)
				require.NoError(t, err)
				alterItem(t, c, key.Key(), "SET seed = :v", &types.AttributeValueMemberS{Value: strings.Repeat("ab", 32)})
			},
			problem: "SHA-256 of the revealed seed is",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			client, clock := prequeueDrop(t, 2, 1)
			clock.Advance(time.Minute)
			clickAll(t, client, &sendQueue{}, userIDs("early", 5))
			clock.Advance(prequeueStart.Sub(clock.Now()) + asyncevent.DefaultDrawSettleWindow)
			res, err := client.ServePrequeue(ctx, "drop")
			require.NoError(t, err)
			v, err := client.VerifyPrequeue(ctx, "drop")
			require.NoError(t, err)
			require.True(t, v.OK(), v.String())

			c.alter(t, client, res.Record, res.Order)
			v, err = client.VerifyPrequeue(ctx, "drop")
			require.NoError(t, err)
			assert.False(t, v.OK())
			assert.Contains(t, v.String(), c.problem)
		})
	}
}

// alterItem updates an item of c's table behind the library's back: update, with :v
// set to v.
func alterItem(t *testing.T, c *asyncevent.Client, key asyncevent.Key, update string, v types.AttributeValue) {
	t.Helper()
	_, err := asynceventtest.DynamoDB(t).UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(c.TableName()),
		Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: key.PK}, "SK": &types.AttributeValueMemberS{Value: key.SK},
		},
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String("attribute_exists(PK)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": v},
	})
	require.NoError(t, err)
}
