package asyncevent

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
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

// finalWriteBackoff is failFinal's wait before writing a throttled final failure
// again, after attempt (0 first): 100 ms doubled per attempt, at most 1.6 s, with
// jitter.
func finalWriteBackoff(attempt int) time.Duration {
	d := 100 * time.Millisecond << min(attempt, 4)
	return d/2 + mrand.N(d/2+1)
}

// unanswered reports a call whose answer never came (the connection failed or was
// reset, a timeout after the SDK's retries, a server error): it may or may not have
// been applied. An answer (a refusal, a condition lost) is not, and neither is a
// call whose ctx ended, which cannot be sent again under it.
func unanswered(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorFault() == smithy.FaultServer
	}
	var netErr net.Error
	var opErr *smithy.OperationError
	return errors.As(err, &netErr) || errors.As(err, &opErr)
}
