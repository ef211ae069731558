package tableschema

import (
	"context"
	"errors"
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
// specified index"). DB turns them into the library's errors, naming the table and
// what to do, for every call of the client: the SDK's error stays wrapped, so
// errors.As still finds it.

// Recheck is how long a diagnosis of the table (one DescribeTable) is reused for the
// ValidationExceptions that follow, so that a spike on a wrong table costs one
// DescribeTable per interval, not one per call.
const Recheck = 10 * time.Second

// DB is a DynamoDB whose errors name the table: Errors.NotFound for a missing table,
// Errors.Refused with the table's Errors.Mismatch for a call refused as invalid on a
// table that differs from the design. A call that succeeds costs one comparison more
// than the DynamoDB beneath it.
type DB struct {
	ddb.API
	table Table
	clock func() time.Time

	mu        sync.Mutex
	checkedAt time.Time
	mismatch  error // nil: the table matched, or was not described
}

// NewDB wraps t.DB for t.
func NewDB(t Table, clock func() time.Time) *DB {
	return &DB{API: t.DB, table: t, clock: clock}
}

func (d *DB) explain(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var notFound *types.ResourceNotFoundException
	if errors.As(err, &notFound) {
		return d.table.Errors.NotFound(err)
	}
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ValidationException" {
		return err
	}
	if m := d.diagnose(ctx); m != nil {
		return d.table.Errors.Refused(m, err)
	}
	return err
}

// diagnose describes the table, at most once per Recheck, and returns how it differs
// from the design; nil when it matches or cannot be described.
func (d *DB) diagnose(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.clock()
	if age := now.Sub(d.checkedAt); !d.checkedAt.IsZero() && age >= 0 && age < Recheck {
		return d.mismatch
	}
	out, err := d.API.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(d.table.Name)})
	if err != nil {
		return nil
	}
	d.checkedAt, d.mismatch = now, nil
	if problems := d.table.Design.Problems(out.Table); len(problems) > 0 {
		d.mismatch = d.table.Errors.Mismatch(problems)
	}
	return d.mismatch
}

func (d *DB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	out, err := d.API.GetItem(ctx, in, optFns...)
	return out, d.explain(ctx, err)
}

func (d *DB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := d.API.PutItem(ctx, in, optFns...)
	return out, d.explain(ctx, err)
}

func (d *DB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := d.API.UpdateItem(ctx, in, optFns...)
	return out, d.explain(ctx, err)
}

func (d *DB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	out, err := d.API.DeleteItem(ctx, in, optFns...)
	return out, d.explain(ctx, err)
}

func (d *DB) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := d.API.Query(ctx, in, optFns...)
	return out, d.explain(ctx, err)
}

func (d *DB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	out, err := d.API.TransactWriteItems(ctx, in, optFns...)
	return out, d.explain(ctx, err)
}

func (d *DB) DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error) {
	out, err := d.API.DescribeTimeToLive(ctx, in, optFns...)
	return out, d.explain(ctx, err)
}

func (d *DB) UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	out, err := d.API.UpdateTimeToLive(ctx, in, optFns...)
	return out, d.explain(ctx, err)
}
