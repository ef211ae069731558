// Package observedb passes every call of the DynamoDB client of an asyncevent.Client
// through an observer, when asyncevent.Options.Observer is set. It does not import
// package asyncevent: that package hands it the client, the table name and a
// function that calls Observer.DynamoDB, and names the rows of each write with
// WithRows.
package observedb

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/asyncevent/asyncevent/internal/ddb"
)

// DynamoDB is the DynamoDB client that Client wraps: the root package's
// DynamoDB interface.
type DynamoDB = ddb.API

// Call describes one call of the DynamoDB client; the root package turns it into
// an asyncevent.DynamoDBCall, whose fields mean the same.
type Call struct {
	// Operation is the DynamoDB API operation, the name of the method called
	// ("PutItem", "TransactWriteItems", "DescribeTable"…).
	Operation string

	// Table is the table name that New was given.
	Table string

	// Row is the text that WithRows put in the call's context; "" when none.
	Row string
}

// Observe observes one call. It must call next once, with ctx or a context derived
// from it, and the SDK call is made with the context it passes; next returns the
// call's error as the SDK's retryer left it. If Observe returns without having
// called next, the call is made after it returns, unobserved.
type Observe func(ctx context.Context, call Call, next func(context.Context) error)

// rowsKey is the context key under which WithRows names the rows of a call.
type rowsKey struct{}

// WithRows returns ctx naming, for the calls made with it, the rows of the
// access-pattern table that they write. The root package's row engine calls it,
// with the row names joined by " + " in the order of a transaction's items.
func WithRows(ctx context.Context, rows string) context.Context {
	return context.WithValue(ctx, rowsKey{}, rows)
}

// rowsOf returns the rows that WithRows put in ctx; "" when none.
func rowsOf(ctx context.Context) string {
	rows, _ := ctx.Value(rowsKey{}).(string)
	return rows
}

// Client is a DynamoDB client that passes each of its calls through an Observe,
// once: a write that package asyncevent sends again after DynamoDB refused it for
// throughput is observed once per attempt.
type Client struct {
	db      DynamoDB
	table   string
	observe Observe
}

var _ DynamoDB = (*Client)(nil)

// New returns db with every call going through observe, described as a call on
// table.
func New(db DynamoDB, table string, observe Observe) *Client {
	return &Client{db: db, table: table, observe: observe}
}

// observeCall makes one call of the SDK through c.observe and returns the SDK's
// output and error unchanged.
func observeCall[In, Out any](ctx context.Context, c *Client, operation string,
	call func(context.Context, In, ...func(*dynamodb.Options)) (Out, error), in In, optFns []func(*dynamodb.Options)) (Out, error) {
	var (
		out    Out
		err    error
		called bool
	)
	next := func(ctx context.Context) error {
		if !called {
			called = true
			out, err = call(ctx, in, optFns...)
		}
		return err
	}
	c.observe(ctx, Call{Operation: operation, Table: c.table, Row: rowsOf(ctx)}, next)
	_ = next(ctx)
	return out, err
}

// GetItem calls GetItem through the observer.
func (c *Client) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return observeCall(ctx, c, "GetItem", c.db.GetItem, in, optFns)
}

// PutItem calls PutItem through the observer.
func (c *Client) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return observeCall(ctx, c, "PutItem", c.db.PutItem, in, optFns)
}

// UpdateItem calls UpdateItem through the observer.
func (c *Client) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return observeCall(ctx, c, "UpdateItem", c.db.UpdateItem, in, optFns)
}

// DeleteItem calls DeleteItem through the observer.
func (c *Client) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return observeCall(ctx, c, "DeleteItem", c.db.DeleteItem, in, optFns)
}

// Query calls Query through the observer.
func (c *Client) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return observeCall(ctx, c, "Query", c.db.Query, in, optFns)
}

// TransactWriteItems calls TransactWriteItems through the observer.
func (c *Client) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return observeCall(ctx, c, "TransactWriteItems", c.db.TransactWriteItems, in, optFns)
}

// CreateTable calls CreateTable through the observer.
func (c *Client) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	return observeCall(ctx, c, "CreateTable", c.db.CreateTable, in, optFns)
}

// DescribeTable calls DescribeTable through the observer.
func (c *Client) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return observeCall(ctx, c, "DescribeTable", c.db.DescribeTable, in, optFns)
}

// DescribeTimeToLive calls DescribeTimeToLive through the observer.
func (c *Client) DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error) {
	return observeCall(ctx, c, "DescribeTimeToLive", c.db.DescribeTimeToLive, in, optFns)
}

// UpdateTimeToLive calls UpdateTimeToLive through the observer.
func (c *Client) UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	return observeCall(ctx, c, "UpdateTimeToLive", c.db.UpdateTimeToLive, in, optFns)
}
