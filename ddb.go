package asyncevent

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The small pieces every access pattern shares: marshalling, reading one item,
// conditional puts and reading why a transaction was cancelled.

// avKey returns a table key as attribute values.
func avKey(k Key) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: k.PK},
		attrSK: &types.AttributeValueMemberS{Value: k.SK},
	}
}

// getItem reads one item into out and reports whether it exists.
func (c *Client) getItem(ctx context.Context, key Key, consistent bool, out any) (bool, error) {
	res, err := c.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(c.opts.TableName),
		Key:            avKey(key),
		ConsistentRead: aws.Bool(consistent),
	})
	if err != nil {
		return false, err
	}
	if res.Item == nil {
		return false, nil
	}
	return true, attributevalue.UnmarshalMap(res.Item, out)
}

// notExists is the condition of every first write of an item:
// attribute_not_exists(PK) AND attribute_not_exists(SK).
var notExists = expression.AttributeNotExists(expression.Name(attrPK)).
	And(expression.AttributeNotExists(expression.Name(attrSK)))

// putIfAbsent returns a transaction Put of item under the condition notExists. On a
// failed condition the cancellation reason carries the existing item (ALL_OLD).
func (c *Client) putIfAbsent(item any) (*types.Put, error) {
	av, err := attributevalue.MarshalMap(item)
	if err != nil {
		return nil, err
	}
	expr, err := expression.NewBuilder().WithCondition(notExists).Build()
	if err != nil {
		return nil, err
	}
	return &types.Put{
		TableName:                           aws.String(c.opts.TableName),
		Item:                                av,
		ConditionExpression:                 expr.Condition(),
		ExpressionAttributeNames:            expr.Names(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, nil
}

// cancellationReasons returns the per-item reasons of a cancelled transaction, or nil
// when err is not a cancellation.
func cancellationReasons(err error) []types.CancellationReason {
	var tc *types.TransactionCanceledException
	if errors.As(err, &tc) {
		return tc.CancellationReasons
	}
	return nil
}

// conditionFailed reports whether item i of a cancelled transaction failed its
// condition.
func conditionFailed(reasons []types.CancellationReason, i int) bool {
	return i < len(reasons) && aws.ToString(reasons[i].Code) == "ConditionalCheckFailed"
}
