package asyncevent

import (
	"context"
	"strings"

	"github.com/asyncevent/asyncevent/internal/observedb"
	"github.com/asyncevent/asyncevent/queue"
)

// The observed client's interface is DynamoDB's method set, no more and no less.
var (
	_ DynamoDB           = observedb.DynamoDB(nil)
	_ observedb.DynamoDB = DynamoDB(nil)
)

// Observer watches the library at work, for traces and metrics, without depending on
// any telemetry library: package otelasyncevent implements it with OpenTelemetry. Set
// it in Options.Observer; a nil Observer costs nothing.
//
// Each method is handed the work as next and must call it once, with ctx or a context
// derived from it (one carrying a span, say): the calls the work makes receive that
// context, so a span started for Submit is the parent of the spans of its DynamoDB
// calls and of its Send. next returns the work's outcome for the observer to record,
// and the work's outcome stands whatever the observer does; a method that returns
// without having called next has the work run after it returns, unobserved. The
// methods are called concurrently.
type Observer interface {
	// Submit observes Client.Submit of eventID by userID. next returns the
	// participation and the error that Submit returns.
	Submit(ctx context.Context, eventID, userID string, next func(context.Context) (Participation, error))

	// Send observes the sending of one request's message, by Submit or by
	// Client.Sweep, and may add attributes to it (a trace context, say): next sends
	// the message it is given, and returns the queue's error.
	Send(ctx context.Context, m queue.OutgoingMessage, next func(context.Context, queue.OutgoingMessage) error)

	// DynamoDB observes one call of the DynamoDB client; next returns its error, as
	// the SDK's retryer left it. A write that DynamoDB refused for throughput alone,
	// which the library sends again, is observed once per attempt.
	DynamoDB(ctx context.Context, call DynamoDBCall, next func(context.Context) error)

	// Process observes the processing of one delivery by a Processor, a Worker or
	// the Lambda adapter, from its decoding to its outcome; next returns the
	// outcome that ProcessOptions.OnOutcome receives too.
	Process(ctx context.Context, d queue.Delivery, next func(context.Context) Outcome)
}

// DynamoDBCall describes one call of the DynamoDB client, for Observer.DynamoDB.
type DynamoDBCall struct {
	// Operation is the DynamoDB API operation: "PutItem", "UpdateItem",
	// "DeleteItem", "TransactWriteItems", "GetItem", "Query", or one of the table's
	// set-up ("CreateTable", "DescribeTable", "DescribeTimeToLive",
	// "UpdateTimeToLive").
	Operation string

	// Table is the client's table (Options.TableName).
	Table string

	// Row names the rows of the access-pattern table (see the package doc) that a
	// write makes, joined by " + " for a TransactWriteItems in the order of its
	// items ("first-come success + first-come capacity"); "" for a read or a call
	// of the table's set-up.
	Row string
}

// observeDynamoDB returns db with every call going through obs.DynamoDB, described
// as a call on table.
func observeDynamoDB(db DynamoDB, obs Observer, table string) DynamoDB {
	return observedb.New(db, table, func(ctx context.Context, call observedb.Call, next func(context.Context) error) {
		obs.DynamoDB(ctx, DynamoDBCall{Operation: call.Operation, Table: call.Table, Row: call.Row}, next)
	})
}

// observedRows names the rows of ws for an observer of the DynamoDB client; "" when
// there is none, at no cost.
func (c *Client) observedRows(ws []write) string {
	if c.opts.Observer == nil {
		return ""
	}
	names := make([]string, len(ws))
	for i, w := range ws {
		names[i] = w.row.name
	}
	return strings.Join(names, " + ")
}

// observeSubmit runs Client.Submit's work through the observer.
func (c *Client) observeSubmit(ctx context.Context, eventID, userID string, submit func(context.Context) (Participation, error)) (Participation, error) {
	var (
		p      Participation
		err    error
		called bool
	)
	next := func(ctx context.Context) (Participation, error) {
		if !called {
			called = true
			p, err = submit(ctx)
		}
		return p, err
	}
	c.opts.Observer.Submit(ctx, eventID, userID, next)
	return next(ctx)
}

// sendMessage sends m on q, through the observer, if any.
func (c *Client) sendMessage(ctx context.Context, q queue.Queue, m queue.OutgoingMessage) error {
	if c.opts.Observer == nil {
		return q.Send(ctx, m)
	}
	var (
		err    error
		called bool
	)
	next := func(ctx context.Context, m queue.OutgoingMessage) error {
		if !called {
			called = true
			err = q.Send(ctx, m)
		}
		return err
	}
	c.opts.Observer.Send(ctx, m, next)
	return next(ctx, m)
}

// observeProcess runs the processing of d through the observer.
func (p *Processor) observeProcess(ctx context.Context, d queue.Delivery, process func(context.Context) result) result {
	var (
		res    result
		called bool
	)
	next := func(ctx context.Context) Outcome {
		if !called {
			called = true
			res = process(ctx)
		}
		return res.outcome
	}
	p.c.opts.Observer.Process(ctx, d, next)
	next(ctx)
	return res
}
