package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/asyncevent/asyncevent/internal/ddb"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// A newcomer's first call usually meets a table that is not there, or one made by
// hand that differs from the design. DynamoDB answers both in its own words
// (ResourceNotFoundException without the table's name; ValidationException "The
// provided key element does not match the schema", "The table does not have the
// specified index"). tableDB turns them into the library's errors, naming the table
// and what to do, for every call of the client: the SDK's error stays wrapped, so
// errors.As still finds it.

// mismatchRecheck is how long a diagnosis of the table (one DescribeTable) is reused
// for the ValidationExceptions that follow, so that a spike on a wrong table costs one
// DescribeTable per interval, not one per call.
const mismatchRecheck = 10 * time.Second

// tableDB is a DynamoDB whose errors name the table: ErrTableNotFound for a missing
// table, a *TableMismatchError for a call refused as invalid on a table that differs
// from the design.
type tableDB struct {
	ddb.API
	table string
	clock func() time.Time

	mu        sync.Mutex
	checkedAt time.Time
	mismatch  *TableMismatchError // nil: the table matched, or was not described
}

func newTableDB(db ddb.API, table string, clock func() time.Time) *tableDB {
	return &tableDB{API: db, table: table, clock: clock}
}

// explain wraps a missing table's error with ErrTableNotFound, and a ValidationException
// on a table that differs from the design with its *TableMismatchError.
// A nil err is returned as it is, at the cost of one comparison.
func (t *tableDB) explain(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var notFound *types.ResourceNotFoundException
	if errors.As(err, &notFound) {
		return fmt.Errorf("%w: %s (%s): %w", ErrTableNotFound, t.table, createHint, err)
	}
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ValidationException" {
		return err
	}
	if m := t.diagnose(ctx); m != nil {
		return fmt.Errorf("%w (compare it with Client.CheckTable or 'asyncevent table check'): %w", m, err)
	}
	return err
}

// diagnose describes the table, at most once per mismatchRecheck, and returns how it
// differs from the design; nil when it matches or cannot be described.
func (t *tableDB) diagnose(ctx context.Context) *TableMismatchError {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock()
	if age := now.Sub(t.checkedAt); !t.checkedAt.IsZero() && age >= 0 && age < mismatchRecheck {
		return t.mismatch
	}
	out, err := t.API.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(t.table)})
	if err != nil {
		return nil
	}
	t.checkedAt, t.mismatch = now, nil
	if problems := tableProblems(out.Table); len(problems) > 0 {
		t.mismatch = &TableMismatchError{Table: t.table, Problems: problems}
	}
	return t.mismatch
}

func (t *tableDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	out, err := t.API.GetItem(ctx, in, optFns...)
	return out, t.explain(ctx, err)
}

func (t *tableDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := t.API.PutItem(ctx, in, optFns...)
	return out, t.explain(ctx, err)
}

func (t *tableDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := t.API.UpdateItem(ctx, in, optFns...)
	return out, t.explain(ctx, err)
}

func (t *tableDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	out, err := t.API.DeleteItem(ctx, in, optFns...)
	return out, t.explain(ctx, err)
}

func (t *tableDB) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := t.API.Query(ctx, in, optFns...)
	return out, t.explain(ctx, err)
}

func (t *tableDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	out, err := t.API.TransactWriteItems(ctx, in, optFns...)
	return out, t.explain(ctx, err)
}

func (t *tableDB) DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error) {
	out, err := t.API.DescribeTimeToLive(ctx, in, optFns...)
	return out, t.explain(ctx, err)
}

func (t *tableDB) UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	out, err := t.API.UpdateTimeToLive(ctx, in, optFns...)
	return out, t.explain(ctx, err)
}
