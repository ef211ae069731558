package tableschema

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asyncevent/asyncevent/internal/ddb"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// WaitTimeout bounds how long Create waits for a new table to be ACTIVE.
const WaitTimeout = 5 * time.Minute

// Errors turns what this package finds into the errors a caller of the library sees.
type Errors interface {
	// NotFound wraps the error of a call on a table that is not there.
	NotFound(err error) error
	// Mismatch names how the table differs from the design.
	Mismatch(problems []string) error
	// Refused wraps the error of a call DynamoDB refused as invalid on a table that
	// differs from the design; mismatch is what Mismatch returned.
	Refused(mismatch, err error) error
}

// Table is the table called Name on DB, held to Design; Errors names what goes wrong.
type Table struct {
	DB     ddb.API
	Name   string
	Design Design
	Errors Errors
}

// Create makes the table (a table that already exists is fine), waits until it is
// ACTIVE, checks it against the design (Check) and enables TTL on the design's
// attribute unless it is on already.
func (t Table) Create(ctx context.Context) error {
	_, err := t.DB.CreateTable(ctx, t.Design.CreateTableInput(t.Name))
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("create table %s: %w", t.Name, err)
	}
	waiter := dynamodb.NewTableExistsWaiter(t.DB, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = time.Second, 10*time.Second
	})
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(t.Name)}, WaitTimeout); err != nil {
		return fmt.Errorf("wait for table %s: %w", t.Name, err)
	}
	if err := t.Check(ctx); err != nil {
		return err
	}
	return t.enableTTL(ctx)
}

func (t Table) enableTTL(ctx context.Context) error {
	out, err := t.DB.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(t.Name)})
	if err != nil {
		return fmt.Errorf("describe ttl of %s: %w", t.Name, err)
	}
	switch done, problem := t.Design.ttlState(out.TimeToLiveDescription); {
	case done:
		return nil
	case problem != "":
		return t.Errors.Mismatch([]string{problem})
	}
	_, err = t.DB.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(t.Name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(t.Design.TTL), Enabled: aws.Bool(true),
		},
	})
	if err != nil {
		return fmt.Errorf("enable ttl on %s: %w", t.Name, err)
	}
	return nil
}

// Check describes the table and compares it with the design: Errors.NotFound for a
// missing table, Errors.Mismatch naming every difference (Design.Problems).
func (t Table) Check(ctx context.Context) error {
	out, err := t.DB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(t.Name)})
	var notFound *types.ResourceNotFoundException
	if errors.As(err, &notFound) {
		return t.Errors.NotFound(err)
	}
	if err != nil {
		return fmt.Errorf("describe table %s: %w", t.Name, err)
	}
	if problems := t.Design.Problems(out.Table); len(problems) > 0 {
		return t.Errors.Mismatch(problems)
	}
	return nil
}
