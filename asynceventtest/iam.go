package asynceventtest

import (
	"context"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/asyncevent/asyncevent"
)

// IAMActions records the IAM actions of the DynamoDB calls made through the clients
// it wraps, to hold a role to the calls its code makes: run the code's tests through
// Record, then compare Actions (on the table) and IndexActions (on its indexes) with
// the role's policy. A transaction counts by its items, as IAM authorizes
// TransactWriteItems: a Put item is dynamodb:PutItem, a ConditionCheck item
// dynamodb:ConditionCheckItem. It is safe for concurrent use; the zero value is
// ready.
type IAMActions struct {
	// When, if set, picks the calls to record by their context: a test that makes
	// calls of its own beside the code's (its set-up, a worker) marks the code's
	// contexts and records those alone. Default: every call.
	When func(context.Context) bool

	mu      sync.Mutex
	table   map[string]bool
	indexes map[string]bool
}

// Record returns db with its calls recorded in a. Its Unwrap returns db, so
// NewTableOn makes the table through db's raw client.
func (a *IAMActions) Record(db asyncevent.DynamoDB) asyncevent.DynamoDB {
	return &recorded{DynamoDB: db, a: a}
}

// Actions returns the actions recorded on the table, sorted ("dynamodb:GetItem").
func (a *IAMActions) Actions() []string { return a.sorted(false) }

// IndexActions returns the actions recorded on the table's indexes (a Query with an
// IndexName), sorted; a role needs the index resource ("table/index/*") for them.
func (a *IAMActions) IndexActions() []string { return a.sorted(true) }

func (a *IAMActions) sorted(index bool) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	set := a.table
	if index {
		set = a.indexes
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (a *IAMActions) saw(ctx context.Context, index bool, actions ...string) {
	if a.When != nil && !a.When(ctx) {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	set := &a.table
	if index {
		set = &a.indexes
	}
	if *set == nil {
		*set = map[string]bool{}
	}
	for _, x := range actions {
		(*set)["dynamodb:"+x] = true
	}
}

// recorded is a DynamoDB whose calls are recorded in a.
type recorded struct {
	asyncevent.DynamoDB
	a *IAMActions
}

func (r *recorded) Unwrap() asyncevent.DynamoDB { return r.DynamoDB }

func (r *recorded) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	r.a.saw(ctx, false, "GetItem")
	return r.DynamoDB.GetItem(ctx, in, o...)
}

func (r *recorded) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	r.a.saw(ctx, false, "PutItem")
	return r.DynamoDB.PutItem(ctx, in, o...)
}

func (r *recorded) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	r.a.saw(ctx, false, "UpdateItem")
	return r.DynamoDB.UpdateItem(ctx, in, o...)
}

func (r *recorded) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	r.a.saw(ctx, false, "DeleteItem")
	return r.DynamoDB.DeleteItem(ctx, in, o...)
}

func (r *recorded) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	r.a.saw(ctx, in.IndexName != nil, "Query")
	return r.DynamoDB.Query(ctx, in, o...)
}

func (r *recorded) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	for _, it := range in.TransactItems {
		switch {
		case it.Put != nil:
			r.a.saw(ctx, false, "PutItem")
		case it.Update != nil:
			r.a.saw(ctx, false, "UpdateItem")
		case it.Delete != nil:
			r.a.saw(ctx, false, "DeleteItem")
		case it.ConditionCheck != nil:
			r.a.saw(ctx, false, "ConditionCheckItem")
		}
	}
	return r.DynamoDB.TransactWriteItems(ctx, in, o...)
}

func (r *recorded) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, o ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	r.a.saw(ctx, false, "CreateTable")
	return r.DynamoDB.CreateTable(ctx, in, o...)
}

func (r *recorded) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	r.a.saw(ctx, false, "DescribeTable")
	return r.DynamoDB.DescribeTable(ctx, in, o...)
}

func (r *recorded) DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error) {
	r.a.saw(ctx, false, "DescribeTimeToLive")
	return r.DynamoDB.DescribeTimeToLive(ctx, in, o...)
}

func (r *recorded) UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	r.a.saw(ctx, false, "UpdateTimeToLive")
	return r.DynamoDB.UpdateTimeToLive(ctx, in, o...)
}
