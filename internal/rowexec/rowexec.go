// Package rowexec makes the conditional writes of the access-pattern table: one
// write on its own (UpdateItem, PutItem or DeleteItem), or several in one
// TransactWriteItems, each from its row's plan (package rowplan) with the values of
// the call bound in. A failed condition comes back as a *Lost naming the write; a
// call refused for throughput alone, which wrote nothing, is sent again.
package rowexec

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/asyncevent/asyncevent/internal/ctxsleep"
	"github.com/asyncevent/asyncevent/internal/ddb"
	"github.com/asyncevent/asyncevent/internal/observedb"
	"github.com/asyncevent/asyncevent/internal/rowplan"
)

// Op is the DynamoDB operation of a row.
type Op string

const (
	Update Op = "UpdateItem"
	Put    Op = "PutItem"
	Delete Op = "DeleteItem"
	Check  Op = "ConditionCheck" // only inside a transaction
)

// A Write is one row applied to one item: its plan with the call's values bound.
type Write struct {
	Row    string // the row's name, for errors and observers
	Op     Op
	Key    map[string]types.AttributeValue // the item's key; a put's is in Item
	Item   map[string]types.AttributeValue // a put's item
	Plan   *rowplan.Plan
	Values map[string]types.AttributeValue
}

// Lost reports that write Index of a call failed its condition; Old is the item as
// the condition found it, nil when there was none.
type Lost struct {
	Index int
	Old   map[string]types.AttributeValue
}

func (e *Lost) Error() string { return fmt.Sprintf("write %d: condition failed", e.Index) }

// Attempts bounds the attempts of a call that DynamoDB refused for throughput alone
// in a way the SDK does not retry: a transaction cancelled for TransactionConflict
// (another transaction or write on one of its items under way) or ThrottlingError (an
// item's partition key, on the table or an index, over its share), a single write
// refused with TransactionConflictException.
const Attempts = 8

// Options are the options of a call.
type Options struct {
	// Token derives the ClientRequestToken of an attempt, so that the SDK's retry of
	// a call whose answer was lost returns success rather than failing on the call's
	// own first write. nil lets the SDK pick a random one.
	Token func(attempt int) string
	// Hold, if set, is held during each attempt's call, so that another write of the
	// caller's on one of the items (a lease's heartbeat) never overlaps it and
	// conflicts with it.
	Hold sync.Locker
	// Once sends the call once: neither the SDK nor Do sends it again when it is
	// refused, for a write that may be left undone (another write does its work).
	Once bool
	// Answered makes each attempt a single send that the SDK does not repeat, so
	// that an attempt whose answer was lost is told as such (a transport error),
	// never hidden behind the refusal or the throttle of a resend of it; Do still
	// sends again after a refusal that says nothing was written.
	Answered bool
	// Old, if set, receives the attributes a single UpdateItem changed, as they were
	// before it (ReturnValues UPDATED_OLD). A transaction returns none.
	Old *map[string]types.AttributeValue
	// New, if set, receives the item as a single UpdateItem left it (ReturnValues
	// ALL_NEW). A transaction returns none. Old and New are not set together: Old
	// wins.
	New *map[string]types.AttributeValue
	// Observed names the call's rows for an observer of the DynamoDB client
	// (observedb); "" when none watches.
	Observed string
	// Refused wraps the error of a call refused for throughput (the caller's
	// sentinel); nil leaves it as it is.
	Refused func(error) error
}

// Do makes the writes on table: one conditional UpdateItem, PutItem or DeleteItem,
// or one TransactWriteItems of them all. A failed condition is a *Lost naming the
// write, at once: a lost condition is an outcome, never retried.
//
// A call refused for throughput alone wrote nothing, so it is sent again as it is,
// after a jittered backoff (RefusalBackoff), up to Attempts times: a transaction
// cancelled for TransactionConflict or ThrottlingError (attempt k carrying the
// ClientRequestToken o.Token(k), as the first did), or a single write refused with
// TransactionConflictException; the SDK retries neither. With o.Once, none of this:
// the call is sent once. The SDK's retryer alone retries the refusals it knows
// (ProvisionedThroughputExceeded, ThrottlingException, RequestLimitExceeded).
func Do(ctx context.Context, db ddb.API, table string, ws []Write, o Options) error {
	items := make([]types.TransactWriteItem, len(ws))
	for i, w := range ws {
		items[i] = Input(table, w)
	}
	refused := o.Refused
	if refused == nil {
		refused = func(err error) error { return err }
	}
	sendCtx := ctx
	if o.Observed != "" {
		sendCtx = observedb.WithRows(ctx, o.Observed)
	}
	var err error
	for attempt := range Attempts {
		if attempt > 0 {
			if err := ctxsleep.Sleep(ctx, RefusalBackoff(err, attempt-1)); err != nil {
				return err
			}
		}
		if o.Hold != nil {
			o.Hold.Lock()
		}
		err = send(sendCtx, db, o, items, attempt)
		if o.Hold != nil {
			o.Hold.Unlock()
		}
		if lost := lostIn(err, len(ws)); lost != nil {
			return lost
		}
		if !refusedForThroughputAlone(err) || o.Once {
			return refused(err)
		}
	}
	return fmt.Errorf("%s: refused for throughput %d times: %w", ws[0].Row, Attempts, refused(err))
}

// send makes one attempt of Do's call: a single write on its own, several in one
// TransactWriteItems.
func send(ctx context.Context, db ddb.API, o Options, items []types.TransactWriteItem, attempt int) error {
	var optFns []func(*dynamodb.Options)
	if o.Once || o.Answered {
		optFns = append(optFns, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	}
	if len(items) == 1 {
		return single(ctx, db, items[0], o.Old, o.New, optFns...)
	}
	in := &dynamodb.TransactWriteItemsInput{TransactItems: items}
	if o.Token != nil {
		in.ClientRequestToken = aws.String(o.Token(attempt))
	}
	_, err := db.TransactWriteItems(ctx, in, optFns...)
	return err
}

// lostIn returns the write of n whose condition err reports failed, nil when err is
// no failed condition.
func lostIn(err error, n int) *Lost {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return &Lost{Old: ccf.Item}
	}
	reasons := CancellationReasons(err)
	for i := range n {
		if conditionFailed(reasons, i) {
			return &Lost{Index: i, Old: reasons[i].Item}
		}
	}
	return nil
}

// refusedForThroughputAlone reports whether err is a refusal for throughput that the
// SDK does not retry and that wrote nothing: a transaction cancelled for conflicts or
// throttling only, or a single write that met a transaction under way on its item.
func refusedForThroughputAlone(err error) bool {
	var conflict *types.TransactionConflictException
	return RefusedForThroughput(CancellationReasons(err)) || errors.As(err, &conflict)
}

// Input returns the write as an item of a transaction on table. A failed condition
// returns the item as it was (ALL_OLD). The names are the input's own copy: whoever
// gets the input may change it.
func Input(table string, w Write) types.TransactWriteItem {
	t := aws.String(table)
	allOld := types.ReturnValuesOnConditionCheckFailureAllOld
	var names map[string]string
	if len(w.Plan.Names) > 0 {
		names = maps.Clone(w.Plan.Names)
	}
	switch w.Op {
	case Put:
		return types.TransactWriteItem{Put: &types.Put{TableName: t, Item: w.Item, ReturnValuesOnConditionCheckFailure: allOld,
			ConditionExpression: w.Plan.Condition, ExpressionAttributeNames: names, ExpressionAttributeValues: w.Values}}
	case Check:
		return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: t, Key: w.Key, ReturnValuesOnConditionCheckFailure: allOld,
			ConditionExpression: w.Plan.Condition, ExpressionAttributeNames: names, ExpressionAttributeValues: w.Values}}
	case Delete:
		return types.TransactWriteItem{Delete: &types.Delete{TableName: t, Key: w.Key, ReturnValuesOnConditionCheckFailure: allOld,
			ConditionExpression: w.Plan.Condition, ExpressionAttributeNames: names, ExpressionAttributeValues: w.Values}}
	}
	return types.TransactWriteItem{Update: &types.Update{TableName: t, Key: w.Key, ReturnValuesOnConditionCheckFailure: allOld,
		ConditionExpression: w.Plan.Condition, UpdateExpression: w.Plan.Update, ExpressionAttributeNames: names, ExpressionAttributeValues: w.Values}}
}

// single sends one write on its own, UpdateItem, PutItem or DeleteItem, the item as
// it was returned on a failed condition. With old set, an UpdateItem returns into it
// the attributes it changed as they were (UPDATED_OLD); with new set (and old not),
// the item as it left it (ALL_NEW).
func single(ctx context.Context, db ddb.API, item types.TransactWriteItem, old, new *map[string]types.AttributeValue, optFns ...func(*dynamodb.Options)) error {
	allOld := types.ReturnValuesOnConditionCheckFailureAllOld
	var err error
	switch {
	case item.Put != nil:
		p := item.Put
		in := &dynamodb.PutItemInput{TableName: p.TableName, Item: p.Item, ReturnValuesOnConditionCheckFailure: allOld}
		in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = p.ConditionExpression, p.ExpressionAttributeNames, p.ExpressionAttributeValues
		_, err = db.PutItem(ctx, in, optFns...)
	case item.Delete != nil:
		d := item.Delete
		in := &dynamodb.DeleteItemInput{TableName: d.TableName, Key: d.Key, ReturnValuesOnConditionCheckFailure: allOld}
		in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = d.ConditionExpression, d.ExpressionAttributeNames, d.ExpressionAttributeValues
		_, err = db.DeleteItem(ctx, in, optFns...)
	default:
		u := item.Update
		in := &dynamodb.UpdateItemInput{TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression, ReturnValuesOnConditionCheckFailure: allOld}
		in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = u.ConditionExpression, u.ExpressionAttributeNames, u.ExpressionAttributeValues
		returned := old
		switch {
		case old != nil:
			in.ReturnValues = types.ReturnValueUpdatedOld
		case new != nil:
			in.ReturnValues, returned = types.ReturnValueAllNew, new
		}
		var out *dynamodb.UpdateItemOutput
		out, err = db.UpdateItem(ctx, in, optFns...)
		if err == nil && returned != nil {
			*returned = out.Attributes
		}
	}
	return err
}

// CancellationReasons returns the per-item reasons of a cancelled transaction, or nil
// when err is not a cancellation.
func CancellationReasons(err error) []types.CancellationReason {
	var tc *types.TransactionCanceledException
	if errors.As(err, &tc) {
		return tc.CancellationReasons
	}
	return nil
}

// conditionFailed reports whether item i of a cancelled transaction failed its
// condition.
func conditionFailed(reasons []types.CancellationReason, i int) bool {
	return i < len(reasons) && aws.ToString(reasons[i].Code) == "ConditionalCheckFailed"
}

// RefusedForThroughput reports whether a transaction was cancelled for throughput
// alone: some of its items met another transaction or write under way on them
// (TransactionConflict) or were over their partition key's share, on the table or an
// index (ThrottlingError, ProvisionedThroughputExceeded), and no item failed its
// condition or anything else. Such a transaction wrote nothing.
func RefusedForThroughput(reasons []types.CancellationReason) bool {
	refused := false
	for _, r := range reasons {
		switch aws.ToString(r.Code) {
		case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded":
			refused = true
		case "", "None":
		default:
			return false
		}
	}
	return refused
}

// RefusalBackoff is the wait before sending again, after attempt (0 first), a call
// refused for throughput alone by err. A conflict ends as soon as the other call on
// the item does: 5 ms doubled per attempt, at most 320 ms. A throttle ends only once
// the key's units have refilled, as the SDK's retryer assumes of the throttles it
// retries: 1 s doubled per attempt, at most 4 s. Both with jitter (half of it at
// random), so that the calls refused together do not all come back together.
func RefusalBackoff(err error, attempt int) time.Duration {
	d := 5 * time.Millisecond << min(attempt, 6)
	for _, r := range CancellationReasons(err) {
		if aws.ToString(r.Code) == "ThrottlingError" {
			d = time.Second << min(attempt, 2)
			break
		}
	}
	return d/2 + rand.N(d/2+1)
}
