package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The table's indexes.
const (
	// IndexUser is GSI1: a user's requests in queue order ("my participations").
	IndexUser = "GSI1"
	// IndexEvent is GSI2: an event's requests in queue order (the admin list).
	IndexEvent = "GSI2"
)

// tableWaitTimeout bounds how long CreateTable waits for a new table to be ACTIVE.
const tableWaitTimeout = 5 * time.Minute

// keySchema describes one key schema of the design: hash and range attribute.
type keySchema struct{ hash, rangeKey string }

var (
	tableKeys    = keySchema{attrPK, attrSK}
	indexSchemas = map[string]keySchema{
		IndexUser:  {attrGSI1PK, attrGSI1SK},
		IndexEvent: {attrGSI2PK, attrGSI2SK},
	}
)

func (k keySchema) elements() []types.KeySchemaElement {
	return []types.KeySchemaElement{
		{AttributeName: aws.String(k.hash), KeyType: types.KeyTypeHash},
		{AttributeName: aws.String(k.rangeKey), KeyType: types.KeyTypeRange},
	}
}

// createTableInput is the design's create-table command: PK/SK strings, GSI1 and
// GSI2 with projection ALL, PAY_PER_REQUEST.
func createTableInput(name string) *dynamodb.CreateTableInput {
	var defs []types.AttributeDefinition
	for _, a := range []string{attrPK, attrSK, attrGSI1PK, attrGSI1SK, attrGSI2PK, attrGSI2SK} {
		defs = append(defs, types.AttributeDefinition{AttributeName: aws.String(a), AttributeType: types.ScalarAttributeTypeS})
	}
	var gsis []types.GlobalSecondaryIndex
	for _, name := range []string{IndexUser, IndexEvent} {
		gsis = append(gsis, types.GlobalSecondaryIndex{
			IndexName:  aws.String(name),
			KeySchema:  indexSchemas[name].elements(),
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		})
	}
	return &dynamodb.CreateTableInput{
		TableName:              aws.String(name),
		AttributeDefinitions:   defs,
		KeySchema:              tableKeys.elements(),
		BillingMode:            types.BillingModePayPerRequest,
		GlobalSecondaryIndexes: gsis,
	}
}

// CreateTable makes the table of the design (PK/SK, GSI1 on GSI1PK/GSI1SK, GSI2 on
// GSI2PK/GSI2SK, both projection ALL, PAY_PER_REQUEST), waits until it is ACTIVE and
// enables TTL on the ttl attribute. It is idempotent: a table that already exists is
// fine when CheckTable accepts it, and its TTL is enabled if it was not.
func (c *Client) CreateTable(ctx context.Context) error {
	name := c.opts.TableName
	_, err := c.db.CreateTable(ctx, createTableInput(name))
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("create table %s: %w", name, err)
	}
	waiter := dynamodb.NewTableExistsWaiter(c.db, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = time.Second, 10*time.Second
	})
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, tableWaitTimeout); err != nil {
		return fmt.Errorf("wait for table %s: %w", name, err)
	}
	if err := c.CheckTable(ctx); err != nil {
		return err
	}
	return c.enableTTL(ctx)
}

// enableTTL turns on TTL on the ttl attribute unless it is on already.
func (c *Client) enableTTL(ctx context.Context) error {
	name := c.opts.TableName
	out, err := c.db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		return fmt.Errorf("describe ttl of %s: %w", name, err)
	}
	if d := out.TimeToLiveDescription; d != nil {
		on := d.TimeToLiveStatus == types.TimeToLiveStatusEnabled || d.TimeToLiveStatus == types.TimeToLiveStatusEnabling
		switch {
		case on && aws.ToString(d.AttributeName) == attrTTL:
			return nil
		case on:
			return &TableMismatchError{Table: name, Problems: []string{
				fmt.Sprintf("TTL is on attribute %q, want %q", aws.ToString(d.AttributeName), attrTTL)}}
		}
	}
	_, err = c.db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(attrTTL), Enabled: aws.Bool(true),
		},
	})
	if err != nil {
		return fmt.Errorf("enable ttl on %s: %w", name, err)
	}
	return nil
}

// CheckTable describes the table and compares it with the design: key schema PK
// (HASH) and SK (RANGE), string key attributes, GSI1 on GSI1PK/GSI1SK and GSI2 on
// GSI2PK/GSI2SK, each projecting ALL. It returns ErrTableNotFound for a missing table
// and a *TableMismatchError naming every difference otherwise. Billing mode, TTL and
// extra indexes are not checked: the library works with provisioned capacity, without
// TTL and beside other indexes. A table made by the AWS CLI create-table command of
// docs/design.md passes.
func (c *Client) CheckTable(ctx context.Context) error {
	name := c.opts.TableName
	out, err := c.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	var notFound *types.ResourceNotFoundException
	if errors.As(err, &notFound) {
		return fmt.Errorf("%w: %s (%s): %w", ErrTableNotFound, name, createHint, err)
	}
	if err != nil {
		return fmt.Errorf("describe table %s: %w", name, err)
	}
	if problems := tableProblems(out.Table); len(problems) > 0 {
		return &TableMismatchError{Table: name, Problems: problems}
	}
	return nil
}

// tableProblems lists how t differs from the design.
func tableProblems(t *types.TableDescription) []string {
	if t == nil {
		return []string{"DescribeTable returned no description"}
	}
	attrTypes := map[string]types.ScalarAttributeType{}
	for _, d := range t.AttributeDefinitions {
		attrTypes[aws.ToString(d.AttributeName)] = d.AttributeType
	}
	problems := schemaProblems("table", tableKeys, t.KeySchema, attrTypes)
	indexes := map[string]types.GlobalSecondaryIndexDescription{}
	for _, g := range t.GlobalSecondaryIndexes {
		indexes[aws.ToString(g.IndexName)] = g
	}
	for _, name := range []string{IndexUser, IndexEvent} {
		g, ok := indexes[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("global secondary index %s is missing", name))
			continue
		}
		problems = append(problems, schemaProblems("index "+name, indexSchemas[name], g.KeySchema, attrTypes)...)
		if g.Projection == nil || g.Projection.ProjectionType != types.ProjectionTypeAll {
			var got types.ProjectionType
			if g.Projection != nil {
				got = g.Projection.ProjectionType
			}
			problems = append(problems, fmt.Sprintf("index %s projects %q, want ALL", name, got))
		}
	}
	return problems
}

// schemaProblems compares one key schema with the design.
func schemaProblems(what string, want keySchema, got []types.KeySchemaElement, attrTypes map[string]types.ScalarAttributeType) []string {
	var hash, rng string
	for _, e := range got {
		switch e.KeyType {
		case types.KeyTypeHash:
			hash = aws.ToString(e.AttributeName)
		case types.KeyTypeRange:
			rng = aws.ToString(e.AttributeName)
		}
	}
	var problems []string
	check := func(role, gotName, wantName string) {
		switch {
		case gotName != wantName:
			problems = append(problems, fmt.Sprintf("%s %s key is %q, want %q", what, role, gotName, wantName))
		case attrTypes[wantName] != types.ScalarAttributeTypeS:
			problems = append(problems, fmt.Sprintf("%s %s key %s has type %q, want S", what, role, wantName, attrTypes[wantName]))
		}
	}
	check("hash", hash, want.hash)
	check("range", rng, want.rangeKey)
	return problems
}

// createHint is what to run to make the table of the design.
const createHint = "create it with Client.CreateTable, the CLI's 'asyncevent table create', " +
	"or the aws dynamodb create-table command of docs/design.md"
