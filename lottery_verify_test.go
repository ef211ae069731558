package asyncevent_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVerifyDrawReportsTampering(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, clock, _ := newLottery(t, asynceventtest.DynamoDB(t), asyncevent.Options{}, 5, 30)
	_, err := c.VerifyDraw(ctx, "lotto")
	assert.ErrorIs(t, err, asyncevent.ErrDrawTooEarly)
	clock.Advance(2 * time.Hour)
	res, err := c.Draw(ctx, "lotto")
	require.NoError(t, err)

	var loser, winner string
	for _, r := range requestsOf(t, c, "lotto") {
		if r.Status == asyncevent.StatusRejected && loser == "" {
			loser = r.RequestID
		}
	}
	winner = res.Winners[0]
	db := asynceventtest.DynamoDB(t)
	key := func(id string) map[string]types.AttributeValue {
		av, err := attributevalue.MarshalMap(asyncevent.Key{PK: "REQ#" + id, SK: "META"}) // the design's Request key
		require.NoError(t, err)
		return av
	}

	// A loser turned into a winner.
	_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(c.TableName()), Key: key(loser),
		UpdateExpression:         aws.String("SET #s = :s, resultCode = :c"),
		ExpressionAttributeNames: map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":s": &types.AttributeValueMemberS{Value: "SUCCEEDED"}, ":c": &types.AttributeValueMemberS{Value: "SUCCESS"}}})
	require.NoError(t, err)
	v, err := c.VerifyDraw(ctx, "lotto")
	require.NoError(t, err)
	assert.False(t, v.OK())
	assert.Contains(t, v.String(), "entry "+loser+" lost but is SUCCEEDED (SUCCESS)")

	// A loser's result code rewritten, its status left REJECTED.
	var other string
	for _, r := range requestsOf(t, c, "lotto") {
		if r.Status == asyncevent.StatusRejected && r.RequestID != loser {
			other = r.RequestID
			break
		}
	}
	_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(c.TableName()), Key: key(other),
		UpdateExpression:          aws.String("SET resultCode = :c"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":c": &types.AttributeValueMemberS{Value: "REJECTED_NOT_DRAWN"}}})
	require.NoError(t, err)
	v, err = c.VerifyDraw(ctx, "lotto")
	require.NoError(t, err)
	assert.Contains(t, v.String(), "entry "+other+" lost but is REJECTED (REJECTED_NOT_DRAWN)")

	// A winner deleted.
	_, err = db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(c.TableName()), Key: key(winner)})
	require.NoError(t, err)
	v, err = c.VerifyDraw(ctx, "lotto")
	require.NoError(t, err)
	assert.Contains(t, v.String(), "recorded entry "+winner+" is not on the table")

	// The recorded entries altered: one ID of the chunk dropped.
	record, err := c.GetDraw(ctx, "lotto")
	require.NoError(t, err)
	chunk := map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: "EVENT#lotto#ENTRIES#0"},
		"SK": &types.AttributeValueMemberS{Value: "SET#" + record.EntriesHash},
	}
	_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(c.TableName()), Key: chunk,
		UpdateExpression:          aws.String("SET ids = :ids"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":ids": &types.AttributeValueMemberS{Value: winner + "\n"}}})
	require.NoError(t, err)
	v, err = c.VerifyDraw(ctx, "lotto")
	require.NoError(t, err)
	assert.Contains(t, v.String(), "the recorded entries of lotto hash to")
	_, err = c.Draw(ctx, "lotto")
	assert.ErrorIs(t, err, asyncevent.ErrDrawMismatch, "a draw does not vouch for entries it cannot read back as recorded")
	fc := newSale(t, 1)
	_, err = fc.Draw(ctx, "sale")
	assert.True(t, errors.Is(err, asyncevent.ErrNotLottery))
}
