package asyncevent

import (
	"context"
	"fmt"
	"time"

	"github.com/asyncevent/asyncevent/internal/ddb"
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

// createHint is what to run to make the table of the design.
const createHint = "create it with Client.CreateTable, the CLI's 'asyncevent table create', " +
	"or the aws dynamodb create-table command of docs/design.md"

// tableOf is the table called name on db, held to the design and named in the
// library's errors.
func tableOf(db ddb.API, name string) tableschema.Table {
	return tableschema.Table{DB: db, Name: name, Design: design, Errors: tableErrors(name)}
}

// newTableDB is db with errors that name the table: ErrTableNotFound for a missing
// table, a *TableMismatchError for a call refused as invalid on a table that differs
// from the design.
func newTableDB(db ddb.API, table string, clock func() time.Time) *tableschema.DB {
	return tableschema.NewDB(tableOf(db, table), clock)
}

// tableErrors is the library's errors about the table it names.
type tableErrors string

func (n tableErrors) NotFound(err error) error {
	return fmt.Errorf("%w: %s (%s): %w", ErrTableNotFound, string(n), createHint, err)
}

func (n tableErrors) Mismatch(problems []string) error {
	return &TableMismatchError{Table: string(n), Problems: problems}
}

func (tableErrors) Refused(mismatch, err error) error {
	return fmt.Errorf("%w (compare it with Client.CheckTable or 'asyncevent table check'): %w", mismatch, err)
}
