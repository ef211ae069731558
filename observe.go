package asyncevent

import (
	"context"

	"github.com/asyncevent/asyncevent/internal/observedb"
	"github.com/asyncevent/asyncevent/queue"
)

// The observed client's interface is DynamoDB's method set, no more and no less.
var (
	_ DynamoDB           = observedb.DynamoDB(nil)
	_ observedb.DynamoDB = DynamoDB(nil)
)

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
