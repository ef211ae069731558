package asyncevent

import (
	"context"

	"github.com/asyncevent/asyncevent/internal/tableschema"
)

// The table's indexes.
const (
	// IndexUser is GSI1: a user's requests in queue order ("my participations").
	IndexUser = "GSI1"
	// IndexEvent is GSI2: an event's requests in queue order (the admin list).
	IndexEvent = "GSI2"
)

// design is the table of the design: PK/SK strings, GSI1 and GSI2 projecting ALL, TTL
// on ttl.
var design = tableschema.Design{
	Keys: tableschema.KeySchema{Hash: attrPK, Range: attrSK},
	Indexes: []tableschema.Index{
		{Name: IndexUser, Keys: tableschema.KeySchema{Hash: attrGSI1PK, Range: attrGSI1SK}},
		{Name: IndexEvent, Keys: tableschema.KeySchema{Hash: attrGSI2PK, Range: attrGSI2SK}},
	},
	TTL: attrTTL,
}

// table is the client's table, on its DynamoDB (the one whose errors name the table).
func (c *Client) table() tableschema.Table { return tableOf(c.db, c.opts.TableName) }

// CreateTable makes the table of the design (PK/SK, GSI1 on GSI1PK/GSI1SK, GSI2 on
// GSI2PK/GSI2SK, both projection ALL, PAY_PER_REQUEST), waits until it is ACTIVE and
// enables TTL on the ttl attribute. It is idempotent: a table that already exists is
// fine when CheckTable accepts it, and its TTL is enabled if it was not.
func (c *Client) CreateTable(ctx context.Context) error { return c.table().Create(ctx) }

// CheckTable describes the table and compares it with the design: key schema PK
// (HASH) and SK (RANGE), string key attributes, GSI1 on GSI1PK/GSI1SK and GSI2 on
// GSI2PK/GSI2SK, each projecting ALL. It returns ErrTableNotFound for a missing table
// and a *TableMismatchError naming every difference otherwise. Billing mode, TTL and
// extra indexes are not checked: the library works with provisioned capacity, without
// TTL and beside other indexes. A table made by the AWS CLI create-table command of
// docs/design.md passes.
func (c *Client) CheckTable(ctx context.Context) error { return c.table().Check(ctx) }
