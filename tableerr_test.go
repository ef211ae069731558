package asyncevent_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

// Every call on a table that does not exist says so, naming the table and how to make
// it; DynamoDB's own error stays wrapped.
func TestMissingTableNamesTheTableAndTheFix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := asynceventtest.UniqueTableName(t)
	c, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: name})
	require.NoError(t, err)

	_, getErr := c.GetRequest(ctx, "r1")
	_, eventErr := c.GetEvent(ctx, "sale")
	_, listErr := c.ListEventRequests(ctx, "sale", asyncevent.EventListOptions{})
	_, userErr := c.ListUserRequests(ctx, "ann", asyncevent.PageOptions{})
	for what, err := range map[string]error{
		"GetRequest": getErr, "GetEvent": eventErr, "ListEventRequests": listErr, "ListUserRequests": userErr,
		"CheckTable": c.CheckTable(ctx),
	} {
		require.ErrorIs(t, err, asyncevent.ErrTableNotFound, what)
		assert.Contains(t, err.Error(), name, what)
		assert.Contains(t, err.Error(), "Client.CreateTable", what)
		assert.Contains(t, err.Error(), "asyncevent table create", what)
		assert.NotErrorIs(t, err, asyncevent.ErrNotFound, what)
	}
	var notFound *types.ResourceNotFoundException
	assert.ErrorAs(t, getErr, &notFound, "the SDK's error is still there")
}

// A call that DynamoDB refuses as invalid on a table that differs from the design
// names the differences: a missing GSI2 on the admin list, a wrong key schema on a
// read by key.
func TestCallsOnAMismatchedTableNameTheDifference(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	noGSI2 := createRaw(t, seedTableInput(asynceventtest.UniqueTableName(t), false))
	_, err := noGSI2.ListEventRequests(ctx, "sale", asyncevent.EventListOptions{})
	require.ErrorIs(t, err, asyncevent.ErrTableMismatch)
	var mismatch *asyncevent.TableMismatchError
	require.ErrorAs(t, err, &mismatch)
	assert.Equal(t, []string{"global secondary index GSI2 is missing"}, mismatch.Problems)
	assert.Contains(t, err.Error(), noGSI2.TableName())
	_, err = noGSI2.GetRequest(ctx, "r1")
	assert.ErrorIs(t, err, asyncevent.ErrNotFound, "a call the table can serve is unaffected")

	name := asynceventtest.UniqueTableName(t)
	otherKeys := createRaw(t, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	_, err = otherKeys.GetRequest(ctx, "r1")
	require.ErrorAs(t, err, &mismatch)
	assert.Contains(t, mismatch.Problems, `table hash key is "id", want "PK"`)
	assert.Contains(t, err.Error(), name)
	assert.Contains(t, err.Error(), "asyncevent table check")
}
