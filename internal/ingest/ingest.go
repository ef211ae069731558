// Package ingest is the arithmetic and the judgements of an ingest that need no
// table: how long an ingest's writes may run, which DynamoDB errors leave a write
// certainly unapplied, the request IDs dealt round an event's index shards, and the
// strict reading of a message body. Package asyncevent binds them to its rows and
// its items; nothing here knows either.
package ingest

import (
	"context"
	"errors"
	"time"

	"github.com/aws/smithy-go"
)

// Deadline is the latest moment the writes of an ingest that begins at now may run:
// now plus least, or the caller's own deadline when that is later (a caller that
// allows a slow store more time keeps it; one that hung up does not cut the writes
// short), and when fenced never later than fence: the moment a lottery's draw, or a
// pre-queue's serve, may begin reading its entries, less the margin that covers a
// call's way to DynamoDB. So no request lands after its entries
// were read: a call cut off by the deadline was sent before the fence. The lottery's
// invariant (the entries the draw freezes are the entries it finalises) relies on
// this rule.
func Deadline(now, callerDeadline time.Time, least time.Duration, fence time.Time, fenced bool) time.Time {
	deadline := now.Add(least)
	if callerDeadline.After(deadline) {
		deadline = callerDeadline
	}
	if fenced && fence.Before(deadline) {
		deadline = fence
	}
	return deadline
}

// CallerDeadline returns ctx's deadline on the clock whose time is now (ctx's is on
// the wall clock: the time it leaves is carried over), or the zero time when ctx has
// none.
func CallerDeadline(ctx context.Context, now time.Time) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return now.Add(time.Until(d))
	}
	return time.Time{}
}

// Context returns the context of an ingest's writes: ctx's values without its
// cancellation, ending at deadline on the clock whose time is now.
func Context(ctx context.Context, now, deadline time.Time) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), deadline.Sub(now))
}

// invalidCodes are the answers to a call that was wrong in itself.
var invalidCodes = map[string]bool{
	"ValidationException": true, "SerializationException": true, "ResourceNotFoundException": true, "AccessDeniedException": true,
}

// Rejected reports a call that DynamoDB refused as wrong in itself, so that nothing of
// it was applied.
func Rejected(err error) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && invalidCodes[apiErr.ErrorCode()]
}

// Invalid reports an error that says the call itself was wrong, or was never sent for
// its context's end (it was refused before anything was written), as opposed to one
// that leaves its effect unknown.
func Invalid(err error) bool {
	return Rejected(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
