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

func TestMain(m *testing.M) { asynceventtest.Main(m) }

// seedTableInput is seed 001 §7's `aws dynamodb create-table` command, written out by
// hand rather than taken from the library, so the test proves the library accepts a
// table made outside it.
func seedTableInput(name string, withGSI2 bool) *dynamodb.CreateTableInput {
	attr := func(n string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: types.ScalarAttributeTypeS}
	}
	key := func(n string, kt types.KeyType) types.KeySchemaElement {
		return types.KeySchemaElement{AttributeName: aws.String(n), KeyType: kt}
	}
	in := &dynamodb.CreateTableInput{
		TableName: aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{
			attr("PK"), attr("SK"), attr("GSI1PK"), attr("GSI1SK"), attr("GSI2PK"), attr("GSI2SK"),
		},
		KeySchema:   []types.KeySchemaElement{key("PK", types.KeyTypeHash), key("SK", types.KeyTypeRange)},
		BillingMode: types.BillingModePayPerRequest,
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
			{
				IndexName:  aws.String("GSI1"),
				KeySchema:  []types.KeySchemaElement{key("GSI1PK", types.KeyTypeHash), key("GSI1SK", types.KeyTypeRange)},
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
			},
			{
				IndexName:  aws.String("GSI2"),
				KeySchema:  []types.KeySchemaElement{key("GSI2PK", types.KeyTypeHash), key("GSI2SK", types.KeyTypeRange)},
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
			},
		},
	}
	if !withGSI2 {
		in.AttributeDefinitions = in.AttributeDefinitions[:4]
		in.GlobalSecondaryIndexes = in.GlobalSecondaryIndexes[:1]
	}
	return in
}

// createRaw makes a table with the raw SDK and deletes it when the test ends.
func createRaw(t *testing.T, in *dynamodb.CreateTableInput) *asyncevent.Client {
	t.Helper()
	db := asynceventtest.DynamoDB(t)
	_, err := db.CreateTable(context.Background(), in)
	require.NoError(t, err)
	t.Cleanup(func() { asynceventtest.DeleteTable(t, aws.ToString(in.TableName)) })
	c, err := asyncevent.New(db, asyncevent.Options{TableName: aws.ToString(in.TableName)})
	require.NoError(t, err)
	return c
}

func TestCreateTableIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTable(t) // the first CreateTable
	require.NoError(t, c.CreateTable(ctx))
	require.NoError(t, c.CreateTable(ctx))
	require.NoError(t, c.CheckTable(ctx))

	db := asynceventtest.DynamoDB(t)
	ttl, err := db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(c.TableName())})
	require.NoError(t, err)
	assert.Equal(t, types.TimeToLiveStatusEnabled, ttl.TimeToLiveDescription.TimeToLiveStatus)
	assert.Equal(t, "ttl", aws.ToString(ttl.TimeToLiveDescription.AttributeName))

	desc, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(c.TableName())})
	require.NoError(t, err)
	assert.Equal(t, types.TableStatusActive, desc.Table.TableStatus)
	assert.Len(t, desc.Table.GlobalSecondaryIndexes, 2)
}

func TestCheckTableAcceptsTheSeedCLITable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := createRaw(t, seedTableInput(asynceventtest.UniqueTableName(t), true))
	require.NoError(t, c.CheckTable(ctx))
	// CreateTable on it is fine too, and turns on TTL (the seed's optional step).
	require.NoError(t, c.CreateTable(ctx))
}

func TestCheckTableNamesAMissingGSI2(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := createRaw(t, seedTableInput(asynceventtest.UniqueTableName(t), false))

	err := c.CheckTable(ctx)
	require.ErrorIs(t, err, asyncevent.ErrTableMismatch)
	var mismatch *asyncevent.TableMismatchError
	require.ErrorAs(t, err, &mismatch)
	assert.Equal(t, []string{"global secondary index GSI2 is missing"}, mismatch.Problems)
	assert.Contains(t, err.Error(), "GSI2")

	// CreateTable does not pretend that an existing wrong table is fine.
	assert.ErrorIs(t, c.CreateTable(ctx), asyncevent.ErrTableMismatch)
}

func TestCheckTableNamesEachMismatch(t *testing.T) {
	t.Parallel()
	in := seedTableInput(asynceventtest.UniqueTableName(t), true)
	in.AttributeDefinitions = append(in.AttributeDefinitions[:1:1],
		types.AttributeDefinition{AttributeName: aws.String("SK"), AttributeType: types.ScalarAttributeTypeN},
		in.AttributeDefinitions[2], in.AttributeDefinitions[3], in.AttributeDefinitions[4],
		types.AttributeDefinition{AttributeName: aws.String("gsi2sk"), AttributeType: types.ScalarAttributeTypeS},
	)
	in.GlobalSecondaryIndexes[0].Projection = &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}
	in.GlobalSecondaryIndexes[1].KeySchema[1].AttributeName = aws.String("gsi2sk")
	c := createRaw(t, in)

	var mismatch *asyncevent.TableMismatchError
	require.ErrorAs(t, c.CheckTable(context.Background()), &mismatch)
	assert.ElementsMatch(t, []string{
		`table range key SK has type "N", want S`,
		`index GSI1 projects "KEYS_ONLY", want ALL`,
		`index GSI2 range key is "gsi2sk", want "GSI2SK"`,
	}, mismatch.Problems)
}

func TestCheckTableMissing(t *testing.T) {
	t.Parallel()
	c, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: asynceventtest.UniqueTableName(t)})
	require.NoError(t, err)
	assert.ErrorIs(t, c.CheckTable(context.Background()), asyncevent.ErrTableNotFound)
}

func TestNewRefusesBadOptions(t *testing.T) {
	t.Parallel()
	_, err := asyncevent.New(nil, asyncevent.Options{})
	assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions)
	_, err = asyncevent.New(&dynamodb.Client{}, asyncevent.Options{TableName: "a b"})
	assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions)
	c, err := asyncevent.New(&dynamodb.Client{}, asyncevent.Options{})
	require.NoError(t, err)
	assert.Equal(t, asyncevent.DefaultTableName, c.TableName())
}
