package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/asyncevent/asyncevent/internal/rowplan"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The SDK inputs. Every conditional write and every Query of the library gets its
// input here, from a key and a built expression; nothing else fills an expression
// into an SDK input.

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

// getFound reads one item into out, as getItem does; a failed read is wrapped with
// what and id (the call's words: "get request", its ID), and a missing item is
// missing's error. Nothing is formatted unless it fails.
func (c *Client) getFound(ctx context.Context, key Key, consistent bool, out any, what, id string, missing func() error) error {
	found, err := c.getItem(ctx, key, consistent, out)
	switch {
	case err != nil:
		return fmt.Errorf("%s %s: %w", what, id, err)
	case !found:
		return missing()
	}
	return nil
}

// expressionFields points at the four expression fields that every conditional SDK
// input has. The inputs share no type, so the one function that fills them (into)
// takes their addresses.
type expressionFields struct {
	condition, update **string
	names             *map[string]string
	values            *map[string]types.AttributeValue
}

// bound is a row's plan with one write's values.
type bound struct {
	plan   *rowplan.Plan
	values map[string]types.AttributeValue
}

// into fills a row's expression for one write into an input. The names are the
// input's own copy: whoever gets the input may change it.
func into(f expressionFields, e bound) {
	*f.condition, *f.values = e.plan.Condition, e.values
	if len(e.plan.Names) > 0 {
		*f.names = maps.Clone(e.plan.Names)
	}
	if f.update != nil {
		*f.update = e.plan.Update
	}
}

// input returns the write as an item of a transaction; start picks the row's
// condition leaving that status alone ("" for all its statuses). A failed condition
// returns the item as it was (ALL_OLD).
func (c *Client) input(w write, start Status) (types.TransactWriteItem, error) {
	p, err := w.row.planOf(start)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	values, err := rowplan.Bind(p, w.args)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	e := bound{p, values}
	table := aws.String(c.opts.TableName)
	allOld := types.ReturnValuesOnConditionCheckFailureAllOld
	switch w.row.op {
	case opPut:
		item, err := attributevalue.MarshalMap(w.item)
		if err != nil {
			return types.TransactWriteItem{}, err
		}
		p := &types.Put{TableName: table, Item: item, ReturnValuesOnConditionCheckFailure: allOld}
		into(expressionFields{&p.ConditionExpression, nil, &p.ExpressionAttributeNames, &p.ExpressionAttributeValues}, e)
		return types.TransactWriteItem{Put: p}, nil
	case opCheck:
		cc := &types.ConditionCheck{TableName: table, Key: avKey(w.key), ReturnValuesOnConditionCheckFailure: allOld}
		into(expressionFields{&cc.ConditionExpression, nil, &cc.ExpressionAttributeNames, &cc.ExpressionAttributeValues}, e)
		return types.TransactWriteItem{ConditionCheck: cc}, nil
	case opDelete:
		d := &types.Delete{TableName: table, Key: avKey(w.key), ReturnValuesOnConditionCheckFailure: allOld}
		into(expressionFields{&d.ConditionExpression, nil, &d.ExpressionAttributeNames, &d.ExpressionAttributeValues}, e)
		return types.TransactWriteItem{Delete: d}, nil
	}
	u := &types.Update{TableName: table, Key: avKey(w.key), ReturnValuesOnConditionCheckFailure: allOld}
	into(expressionFields{&u.ConditionExpression, &u.UpdateExpression, &u.ExpressionAttributeNames, &u.ExpressionAttributeValues}, e)
	return types.TransactWriteItem{Update: u}, nil
}

// single sends one write on its own, UpdateItem, PutItem or DeleteItem, the item as
// it was returned on a failed condition. With old set, an UpdateItem returns into it
// the attributes it changed as they were (UPDATED_OLD).
func (c *Client) single(ctx context.Context, item types.TransactWriteItem, old *map[string]types.AttributeValue, optFns ...func(*dynamodb.Options)) error {
	allOld := types.ReturnValuesOnConditionCheckFailureAllOld
	var err error
	switch {
	case item.Put != nil:
		p := item.Put
		in := &dynamodb.PutItemInput{TableName: p.TableName, Item: p.Item, ReturnValuesOnConditionCheckFailure: allOld}
		in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = p.ConditionExpression, p.ExpressionAttributeNames, p.ExpressionAttributeValues
		_, err = c.db.PutItem(ctx, in, optFns...)
	case item.Delete != nil:
		d := item.Delete
		in := &dynamodb.DeleteItemInput{TableName: d.TableName, Key: d.Key, ReturnValuesOnConditionCheckFailure: allOld}
		in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = d.ConditionExpression, d.ExpressionAttributeNames, d.ExpressionAttributeValues
		_, err = c.db.DeleteItem(ctx, in, optFns...)
	default:
		u := item.Update
		in := &dynamodb.UpdateItemInput{TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression, ReturnValuesOnConditionCheckFailure: allOld}
		in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = u.ConditionExpression, u.ExpressionAttributeNames, u.ExpressionAttributeValues
		if old != nil {
			in.ReturnValues = types.ReturnValueUpdatedOld
		}
		var out *dynamodb.UpdateItemOutput
		out, err = c.db.UpdateItem(ctx, in, optFns...)
		if err == nil && old != nil {
			*old = out.Attributes
		}
	}
	return err
}

// query returns the input of a Query of the table (index "") or of an index, from a
// built key condition (and projection, if the expression has one).
func (c *Client) query(index string, expr expression.Expression) *dynamodb.QueryInput {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(c.opts.TableName),
		KeyConditionExpression:    expr.KeyCondition(),
		ProjectionExpression:      expr.Projection(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	}
	if index != "" {
		in.IndexName = aws.String(index)
	}
	return in
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

// refusedForThroughput reports whether a transaction was cancelled for throughput
// alone: some of its items met another transaction or write under way on them
// (TransactionConflict) or were over their partition key's share, on the table or an
// index (ThrottlingError, ProvisionedThroughputExceeded), and no item failed its
// condition or anything else. Such a transaction wrote nothing.
func refusedForThroughput(reasons []types.CancellationReason) bool {
	refused := false
	for _, r := range reasons {
		switch aws.ToString(r.Code) {
		case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded":
			refused = true
		case "", "None":
		default:
			return false
		}
	}
	return refused
}
