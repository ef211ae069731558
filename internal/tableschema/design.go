// Package tableschema holds the table's design as data (its key schema, its global
// secondary indexes, its TTL attribute), the create-table command that makes it, how
// a described table differs from it, and a DynamoDB whose errors name the table. The
// root package declares the design from its attribute names and binds its own errors
// (ErrTableNotFound, *TableMismatchError) through Errors; nothing here knows an item.
package tableschema

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// KeySchema is one key schema of the design: its hash and range attributes, both
// strings.
type KeySchema struct{ Hash, Range string }

// Index is a global secondary index of the design; it projects ALL.
type Index struct {
	Name string
	Keys KeySchema
}

// Design is a table: its keys, its indexes (in the order the create-table command
// lists them) and the attribute its TTL is on.
type Design struct {
	Keys    KeySchema
	Indexes []Index
	TTL     string
}

func (k KeySchema) elements() []types.KeySchemaElement {
	return []types.KeySchemaElement{
		{AttributeName: aws.String(k.Hash), KeyType: types.KeyTypeHash},
		{AttributeName: aws.String(k.Range), KeyType: types.KeyTypeRange},
	}
}

// CreateTableInput is the design's create-table command for a table called name:
// the key attributes as strings (the table's, then each index's), the indexes
// projecting ALL, PAY_PER_REQUEST.
func (d Design) CreateTableInput(name string) *dynamodb.CreateTableInput {
	var defs []types.AttributeDefinition
	attrs := []string{d.Keys.Hash, d.Keys.Range}
	for _, ix := range d.Indexes {
		attrs = append(attrs, ix.Keys.Hash, ix.Keys.Range)
	}
	for _, a := range attrs {
		defs = append(defs, types.AttributeDefinition{AttributeName: aws.String(a), AttributeType: types.ScalarAttributeTypeS})
	}
	var gsis []types.GlobalSecondaryIndex
	for _, ix := range d.Indexes {
		gsis = append(gsis, types.GlobalSecondaryIndex{
			IndexName:  aws.String(ix.Name),
			KeySchema:  ix.Keys.elements(),
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		})
	}
	return &dynamodb.CreateTableInput{
		TableName:              aws.String(name),
		AttributeDefinitions:   defs,
		KeySchema:              d.Keys.elements(),
		BillingMode:            types.BillingModePayPerRequest,
		GlobalSecondaryIndexes: gsis,
	}
}

// Problems lists how t differs from the design, one sentence a difference: the key
// schemas, the key attributes' types, each index's presence and projection. Billing
// mode, TTL and extra indexes are not compared.
func (d Design) Problems(t *types.TableDescription) []string {
	if t == nil {
		return []string{"DescribeTable returned no description"}
	}
	attrTypes := map[string]types.ScalarAttributeType{}
	for _, def := range t.AttributeDefinitions {
		attrTypes[aws.ToString(def.AttributeName)] = def.AttributeType
	}
	problems := schemaProblems("table", d.Keys, t.KeySchema, attrTypes)
	indexes := map[string]types.GlobalSecondaryIndexDescription{}
	for _, g := range t.GlobalSecondaryIndexes {
		indexes[aws.ToString(g.IndexName)] = g
	}
	for _, ix := range d.Indexes {
		g, ok := indexes[ix.Name]
		if !ok {
			problems = append(problems, fmt.Sprintf("global secondary index %s is missing", ix.Name))
			continue
		}
		problems = append(problems, schemaProblems("index "+ix.Name, ix.Keys, g.KeySchema, attrTypes)...)
		if g.Projection == nil || g.Projection.ProjectionType != types.ProjectionTypeAll {
			var got types.ProjectionType
			if g.Projection != nil {
				got = g.Projection.ProjectionType
			}
			problems = append(problems, fmt.Sprintf("index %s projects %q, want ALL", ix.Name, got))
		}
	}
	return problems
}

func schemaProblems(what string, want KeySchema, got []types.KeySchemaElement, attrTypes map[string]types.ScalarAttributeType) []string {
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
	check("hash", hash, want.Hash)
	check("range", rng, want.Range)
	return problems
}

// ttlState tells whether a table's TTL is already as the design wants it (on the
// design's attribute, enabled or enabling), and the problem when it is on another
// attribute.
func (d Design) ttlState(ttl *types.TimeToLiveDescription) (done bool, problem string) {
	if ttl == nil {
		return false, ""
	}
	on := ttl.TimeToLiveStatus == types.TimeToLiveStatusEnabled || ttl.TimeToLiveStatus == types.TimeToLiveStatusEnabling
	switch {
	case on && aws.ToString(ttl.AttributeName) == d.TTL:
		return true, ""
	case on:
		return false, fmt.Sprintf("TTL is on attribute %q, want %q", aws.ToString(ttl.AttributeName), d.TTL)
	}
	return false, ""
}
