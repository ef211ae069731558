package asyncevent

import (
	"fmt"
	"time"

	"github.com/asyncevent/asyncevent/internal/ddb"
	"github.com/asyncevent/asyncevent/internal/tableschema"
)

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
