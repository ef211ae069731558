package asyncevent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The worker's writes: seed 003 section B.

// leaseHeldBy is the condition status = PROCESSING AND leaseOwner = owner.
func leaseHeldBy(owner string) expression.ConditionBuilder {
	return expression.Name(attrStatus).Equal(expression.Value(StatusProcessing)).
		And(expression.Name("leaseOwner").Equal(expression.Value(owner)))
}

// StartProcessing is seed 003's "start processing" row: UpdateItem PK
// REQ#<requestId>, SK META, SET status = PROCESSING, startedAt, leaseOwner and
// leaseExpiresAt = now + leaseFor, and — for the QUEUED race — queuedAt and the index
// keys from sentAt (the message's send time) where they are not set yet; condition:
// status = RECEIVED OR status = QUEUED OR (status = PROCESSING AND leaseExpiresAt ≤
// now), the last being a takeover of an expired lease. A lost condition is not an
// error: the Transition is not applied and holds the request as it is (final: a
// duplicate delivery; PROCESSING: another delivery holds a live lease). Each delivery
// should use its own leaseOwner, so that two deliveries of one message never both
// hold the request. With Options.StatusLog the condition is tried one status at a
// time, QUEUED first, so that the log names the status left: a request met RECEIVED
// or PROCESSING costs a second call.
func (c *Client) StartProcessing(ctx context.Context, m Message, sentAt EpochMillis, leaseOwner string, leaseFor time.Duration) (Transition, error) {
	key, err := NewRequestKey(m.RequestID)
	if err != nil {
		return Transition{}, err
	}
	index, err := NewIndexKeys(m.EventID, m.UserID, m.RequestID, sentAt)
	if err != nil {
		return Transition{}, err
	}
	now := c.now()
	expired := expression.Name("leaseExpiresAt").LessThanEqual(expression.Value(now))
	update := backfillQueued(expression.UpdateBuilder{}, sentAt, index).
		Set(expression.Name("startedAt"), expression.Value(now)).
		Set(expression.Name("leaseOwner"), expression.Value(leaseOwner)).
		Set(expression.Name("leaseExpiresAt"), expression.Value(MillisOf(now.Time().Add(leaseFor))))
	t, err := c.apply(ctx, transition{
		key: key, from: []Status{StatusQueued, StatusReceived}, orIn: StatusProcessing, orCond: &expired, to: StatusProcessing,
		update: update, note: "started by " + leaseOwner,
	})
	if err != nil {
		return t, fmt.Errorf("start %s: %w", m.RequestID, err)
	}
	return t, nil
}

// backfillQueued sets queuedAt and the index keys where they are missing.
func backfillQueued(u expression.UpdateBuilder, queuedAt EpochMillis, k IndexKeys) expression.UpdateBuilder {
	set := func(u expression.UpdateBuilder, name string, v any) expression.UpdateBuilder {
		return u.Set(expression.Name(name), expression.IfNotExists(expression.Name(name), expression.Value(v)))
	}
	u = set(u, "queuedAt", queuedAt)
	u = set(u, attrGSI1PK, k.GSI1PK)
	u = set(u, attrGSI1SK, k.GSI1SK)
	u = set(u, attrGSI2PK, k.GSI2PK)
	return set(u, attrGSI2SK, k.GSI2SK)
}

// claimSeatAttempts bounds the retries of a seat claim that lost a transaction
// conflict on the hot CAPACITY item.
const claimSeatAttempts = 8

// ClaimSeat is seed 003's "first-come capacity" and "first-come success" rows in one
// TransactWriteItems: UpdateItem PK EVENT#<eventId>, SK CAPACITY, SET
// capacityRemaining = capacityRemaining - 1, updatedAt, condition capacityRemaining >
// 0; and UpdateItem PK REQ#<requestId>, SK META, SET status = SUCCEEDED, uiResult
// SUCCESS, resultCode SUCCESS, finishedAt, condition status = PROCESSING AND
// leaseOwner = leaseOwner; with the status log entry. A seat is therefore spent only
// together with a SUCCEEDED request. The ClientRequestToken is derived from the
// request, the lease and the attempt, so the SDK's retry of a call whose response was
// lost returns success rather than ErrLeaseLost (the conditions alone already keep it
// from being applied twice); transaction conflicts on the hot CAPACITY item are
// retried with backoff. ErrSoldOut: capacityRemaining was 0 (nothing written);
// ErrLeaseLost: the request is not PROCESSING under this lease (nothing written);
// ErrNoCapacity: the event has no CAPACITY item.
func (c *Client) ClaimSeat(ctx context.Context, m Message, leaseOwner string) error {
	capKey, err := NewEventKey(m.EventID, EventItemCapacity)
	if err != nil {
		return err
	}
	reqKey, err := NewRequestKey(m.RequestID)
	if err != nil {
		return err
	}
	for attempt := range claimSeatAttempts {
		now := c.now()
		capExpr, err := expression.NewBuilder().
			WithCondition(expression.Name("capacityRemaining").GreaterThan(expression.Value(0))).
			WithUpdate(expression.Set(expression.Name("capacityRemaining"), expression.Name("capacityRemaining").Minus(expression.Value(1))).
				Set(expression.Name("updatedAt"), expression.Value(now))).
			Build()
		if err != nil {
			return err
		}
		reqExpr, err := expression.NewBuilder().
			WithCondition(leaseHeldBy(leaseOwner)).
			WithUpdate(finish(UISuccess, ResultSuccess, now).Set(expression.Name(attrStatus), expression.Value(StatusSucceeded))).
			Build()
		if err != nil {
			return err
		}
		items := []types.TransactWriteItem{
			{Update: &types.Update{
				TableName: aws.String(c.opts.TableName), Key: avKey(capKey.Key()),
				ConditionExpression: capExpr.Condition(), UpdateExpression: capExpr.Update(),
				ExpressionAttributeNames: capExpr.Names(), ExpressionAttributeValues: capExpr.Values(),
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			}},
			{Update: &types.Update{
				TableName: aws.String(c.opts.TableName), Key: avKey(reqKey.Key()),
				ConditionExpression: reqExpr.Condition(), UpdateExpression: reqExpr.Update(),
				ExpressionAttributeNames: reqExpr.Names(), ExpressionAttributeValues: reqExpr.Values(),
			}},
		}
		if c.opts.StatusLog {
			put, err := c.statusLogPut(m.RequestID, StatusProcessing, StatusSucceeded, "won a seat")
			if err != nil {
				return err
			}
			items = append(items, types.TransactWriteItem{Put: put})
		}
		_, err = c.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
			TransactItems:      items,
			ClientRequestToken: aws.String(requestToken(m.RequestID, leaseOwner, attempt)),
		})
		reasons := cancellationReasons(err)
		switch {
		case err == nil:
			return nil
		case conditionFailed(reasons, 1):
			return fmt.Errorf("claim seat %s: %w", m.RequestID, ErrLeaseLost)
		case conditionFailed(reasons, 0) && reasons[0].Item == nil:
			return fmt.Errorf("claim seat %s: %w: %s", m.RequestID, ErrNoCapacity, m.EventID)
		case conditionFailed(reasons, 0):
			return fmt.Errorf("claim seat %s: %w", m.RequestID, ErrSoldOut)
		case reasons != nil && hasConflict(reasons):
			if err := sleep(ctx, conflictBackoff(attempt)); err != nil {
				return err
			}
			continue
		}
		return fmt.Errorf("claim seat %s: %w", m.RequestID, err)
	}
	return fmt.Errorf("claim seat %s: %d transaction conflicts in a row", m.RequestID, claimSeatAttempts)
}

// finish is the update of a final result; the status is set by the caller.
func finish(ui UIResult, code ResultCode, now EpochMillis) expression.UpdateBuilder {
	return expression.Set(expression.Name("uiResult"), expression.Value(ui)).
		Set(expression.Name("resultCode"), expression.Value(code)).
		Set(expression.Name("finishedAt"), expression.Value(now))
}

// requestToken derives a ClientRequestToken (at most 36 characters) from a request,
// a lease and an attempt.
func requestToken(requestID, owner string, attempt int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%d", requestID, owner, attempt))
	return hex.EncodeToString(sum[:18])
}

func hasConflict(reasons []types.CancellationReason) bool {
	for _, r := range reasons {
		if aws.ToString(r.Code) == "TransactionConflict" {
			return true
		}
	}
	return false
}

func conflictBackoff(attempt int) time.Duration {
	d := 5 * time.Millisecond << min(attempt, 6)
	return d/2 + rand.N(d/2+1)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// MarkCapacityRejected is seed 003's "first-come capacity rejected" row: UpdateItem PK
// REQ#<requestId>, SK META, SET status = REJECTED, uiResult REJECTED, resultCode
// REJECTED_CAPACITY, finishedAt; condition status = PROCESSING AND leaseOwner =
// leaseOwner. A lost condition is not an error: the Transition holds the request as it
// is.
func (c *Client) MarkCapacityRejected(ctx context.Context, m Message, leaseOwner string) (Transition, error) {
	key, err := NewRequestKey(m.RequestID)
	if err != nil {
		return Transition{}, err
	}
	held := leaseHeldBy(leaseOwner)
	t, err := c.apply(ctx, transition{
		key: key, from: []Status{StatusProcessing}, cond: &held, to: StatusRejected,
		update: finish(UIRejected, ResultRejectedCapacity, c.now()), note: string(ResultRejectedCapacity),
	})
	if err != nil {
		return t, fmt.Errorf("reject %s: %w", m.RequestID, err)
	}
	return t, nil
}

// Failure describes why a request ends FAILED_FINAL, for MarkFailed.
type Failure struct {
	// LeaseOwner is the caller's lease, if it holds the request; "" otherwise.
	LeaseOwner string
	// SentAt is the message's send time, the queuedAt (and index keys) of a request
	// that never got one; 0 leaves them as they are.
	SentAt    EpochMillis
	Class     FailureClass
	Code      ResultCode // FAILED_WORKER, FAILED_VALIDATION, FAILED_SERDE, …
	ErrorCode string     // a short code for operators: VALIDATION_FAILED, SERDE_ERROR, …
	Cause     error      // stored as errorMessage, cut to 256 characters
}

// MarkFailed is seed 003's "final failure" row: UpdateItem PK REQ#<requestId>, SK
// META, SET status = FAILED_FINAL, uiResult FAILED, resultCode, failureClass,
// errorCode, errorMessage (at most 256 characters), finishedAt, and queuedAt and the
// index keys from f.SentAt where missing; condition: status is RECEIVED, QUEUED or
// PROCESSING, and not PROCESSING under another owner's live lease (status <>
// PROCESSING OR leaseOwner = f.LeaseOwner OR leaseExpiresAt ≤ now). A lost condition
// is not an error: the Transition holds the request as it is. With Options.StatusLog
// the status is tried one at a time, PROCESSING first, so that the log names the
// status left: a request met QUEUED or RECEIVED costs a second call.
func (c *Client) MarkFailed(ctx context.Context, m Message, f Failure) (Transition, error) {
	key, err := NewRequestKey(m.RequestID)
	if err != nil {
		return Transition{}, err
	}
	now := c.now()
	update := failure(expression.UpdateBuilder{}, now, f.Code, f.Class, f.ErrorCode, errorText(f.Cause))
	if f.SentAt != 0 {
		if index, err := NewIndexKeys(m.EventID, m.UserID, m.RequestID, f.SentAt); err == nil {
			update = backfillQueued(update, f.SentAt, index)
		}
	}
	free := expression.Name(attrStatus).NotEqual(expression.Value(StatusProcessing)).
		Or(expression.Name("leaseOwner").Equal(expression.Value(f.LeaseOwner))).
		Or(expression.Name("leaseExpiresAt").LessThanEqual(expression.Value(now)))
	t, err := c.apply(ctx, transition{
		key: key, from: []Status{StatusProcessing, StatusQueued, StatusReceived}, cond: &free, to: StatusFailedFinal,
		update: update, note: f.ErrorCode,
	})
	if err != nil {
		return t, fmt.Errorf("fail %s: %w", m.RequestID, err)
	}
	return t, nil
}

// releaseLease ends our lease at once so that the next delivery takes the request over
// without waiting: UpdateItem SET leaseExpiresAt = now; condition status = PROCESSING
// AND leaseOwner = owner. A lost condition is fine.
func (c *Client) releaseLease(ctx context.Context, requestID, owner string) error {
	return c.setLeaseExpiry(ctx, requestID, owner, c.now())
}

// extendLease moves our lease's expiry to now + d, under the same condition.
func (c *Client) extendLease(ctx context.Context, requestID, owner string, d time.Duration) error {
	return c.setLeaseExpiry(ctx, requestID, owner, MillisOf(c.opts.Clock().Add(d)))
}

func (c *Client) setLeaseExpiry(ctx context.Context, requestID, owner string, at EpochMillis) error {
	key, err := NewRequestKey(requestID)
	if err != nil {
		return err
	}
	expr, err := expression.NewBuilder().
		WithCondition(leaseHeldBy(owner)).
		WithUpdate(expression.Set(expression.Name("leaseExpiresAt"), expression.Value(at))).
		Build()
	if err != nil {
		return err
	}
	_, err = c.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(c.opts.TableName), Key: avKey(key.Key()),
		ConditionExpression: expr.Condition(), UpdateExpression: expr.Update(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil
	}
	return err
}
