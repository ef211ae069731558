package asynceventtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/asyncevent/asyncevent"
)

// HoldBack wraps a DynamoDB client and holds back chosen writes, so that a test can
// make a write land later than its caller thinks: after the caller gave up (a Lambda
// deadline, Worker.Stop's grace), after its lease ran out, after another delivery took
// its request over. A write caught by a rule (Hold) is not sent when it is made: it
// is sent when the test lands it (Held.Land), and DynamoDB applies it then, its
// condition read against the item as it stands at that moment, so a condition that
// held when the write was made may fail when it lands, or the other way round.
// Reads, the table's set-up and the writes no rule catches go through at once. It is
// safe for concurrent use.
//
// FaultyDynamoDB's LoseRate applies a write and loses its answer; a held write is the
// other half of the network's delays: made, not applied yet, applied later.
type HoldBack struct {
	db asyncevent.DynamoDB

	mu    sync.Mutex
	rules []*Held
}

// NewHoldBack returns a HoldBack around db, with no rule: every call goes through.
func NewHoldBack(db asyncevent.DynamoDB) *HoldBack { return &HoldBack{db: db} }

// Unwrap returns the client h wraps.
func (h *HoldBack) Unwrap() asyncevent.DynamoDB { return h.db }

// Match picks the writes a rule holds back. op is the operation ("UpdateItem",
// "PutItem", "DeleteItem", "TransactWriteItems") and in its input
// (*dynamodb.UpdateItemInput, …). It must not block.
type Match func(op string, in any) bool

// HeldCaller says what the caller of a held write sees while the write is held.
type HeldCaller int

const (
	// CallerWaits: the caller waits for the landing and gets DynamoDB's answer to it
	// (a slow write). If its context ends first, it gets the context's error at that
	// moment, and the write stays on the wire until the test lands it: a write still
	// on its way when its caller gave up.
	CallerWaits HeldCaller = iota
	// CallerReset: the caller gets at once an error like a connection reset, which
	// does not say whether the write was applied (it is not, yet); the write lands
	// when the test says.
	CallerReset
)

// Hold arms a rule that catches the next n writes that match (n ≤ 0: every one, until
// Stop), in the order they are made, and tells their callers what caller says. Rules
// are tried in the order they were armed; a write is caught by the first rule that
// matches it and still has room.
func (h *HoldBack) Hold(match Match, n int, caller HeldCaller) *Held {
	r := &Held{match: match, left: n, caller: caller, caught: make(chan struct{})}
	if n <= 0 {
		r.left = -1
	}
	h.mu.Lock()
	h.rules = append(h.rules, r)
	h.mu.Unlock()
	return r
}

// catch returns the rule that catches a write, nil when none does.
func (h *HoldBack) catch(op string, in any) *Held {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.rules {
		if r.take(op, in) {
			return r
		}
	}
	return nil
}

// Held is a rule of a HoldBack and the writes it caught. Its methods are safe for
// concurrent use.
type Held struct {
	match  Match
	caller HeldCaller

	mu     sync.Mutex
	left   int // writes still to catch; -1: no bound
	calls  []*heldCall
	caught chan struct{} // closed at the first catch
}

// heldCall is one write a rule caught.
type heldCall struct {
	op      string
	send    func(context.Context) (any, error)
	landing chan struct{} // closed once it is being sent (Land took it)
	landed  chan struct{} // closed once its answer is in out, err and outcome
	out     any
	err     error
	outcome Landing
}

// take catches a write of op if the rule matches it and has room. h.mu is held.
func (r *Held) take(op string, in any) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.left == 0 || !r.match(op, in) {
		return false
	}
	if r.left > 0 {
		r.left--
	}
	return true
}

func (r *Held) add(c *heldCall) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
	if len(r.calls) == 1 {
		close(r.caught)
	}
}

// Caught waits until the rule has caught a write (or ctx ends: its error).
func (r *Held) Caught(ctx context.Context) error {
	select {
	case <-r.caught:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Count returns how many writes the rule has caught.
func (r *Held) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

// Stop makes the rule catch no more writes; those it caught stay held until landed.
func (r *Held) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.left = 0
}

// Land sends every write the rule caught and has not landed yet to DynamoDB now, one
// after another in the order they were made, and waits for their answers (see
// Outcome). With none caught it does nothing. If ctx ends before they are answered
// it returns ctx's error, and the writes it took still land, in the background.
func (r *Held) Land(ctx context.Context) error {
	r.mu.Lock()
	var todo []*heldCall
	for _, c := range r.calls {
		select {
		case <-c.landing:
		default:
			close(c.landing)
			todo = append(todo, c)
		}
	}
	r.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, c := range todo {
			c.out, c.err = c.send(context.WithoutCancel(ctx))
			c.outcome = landingOf(c.op, c.err)
			close(c.landed)
		}
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// LandAfter lands, d from now and in the background, the writes the rule has caught by
// then. Landed waits for it.
func (r *Held) LandAfter(d time.Duration) {
	time.AfterFunc(d, func() { _ = r.Land(context.Background()) })
}

// Landed waits until every write the rule caught has landed (or ctx ends: its error).
func (r *Held) Landed(ctx context.Context) error {
	r.mu.Lock()
	calls := append([]*heldCall(nil), r.calls...)
	r.mu.Unlock()
	for _, c := range calls {
		select {
		case <-c.landed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Outcome returns what the landing of the first write the rule caught did (the zero
// Landing while none has landed).
func (r *Held) Outcome() Landing {
	if all := r.Outcomes(); len(all) > 0 {
		return all[0]
	}
	return Landing{}
}

// Outcomes returns what each write the rule caught did, in the order they were made;
// one not landed yet has Landed false.
func (r *Held) Outcomes() []Landing {
	r.mu.Lock()
	calls := append([]*heldCall(nil), r.calls...)
	r.mu.Unlock()
	out := make([]Landing, len(calls))
	for i, c := range calls {
		select {
		case <-c.landed:
			out[i] = c.outcome
		default:
			out[i] = Landing{Op: c.op}
		}
	}
	return out
}

// Landing is what a held write did when it landed.
type Landing struct {
	Op     string
	Landed bool // sent to DynamoDB; false: still held
	// Applied: DynamoDB applied it. ConditionFailed: its condition (or, in a
	// transaction, an item's) failed, and nothing was written.
	Applied, ConditionFailed bool
	Err                      error // DynamoDB's error, nil when applied
}

func (l Landing) String() string {
	switch {
	case !l.Landed:
		return l.Op + ": held"
	case l.Applied:
		return l.Op + ": applied"
	case l.ConditionFailed:
		return l.Op + ": condition failed"
	}
	return fmt.Sprintf("%s: %v", l.Op, l.Err)
}

func landingOf(op string, err error) Landing {
	l := Landing{Op: op, Landed: true, Applied: err == nil, Err: err}
	var ccf *types.ConditionalCheckFailedException
	var tc *types.TransactionCanceledException
	switch {
	case errors.As(err, &ccf):
		l.ConditionFailed = true
	case errors.As(err, &tc):
		for _, reason := range tc.CancellationReasons {
			if aws.ToString(reason.Code) == "ConditionalCheckFailed" {
				l.ConditionFailed = true
			}
		}
	}
	return l
}

// holdCall runs one write through h's rules.
func holdCall[O any](ctx context.Context, h *HoldBack, op string, in any, send func(context.Context) (*O, error)) (*O, error) {
	r := h.catch(op, in)
	if r == nil {
		return send(ctx)
	}
	c := &heldCall{op: op, landing: make(chan struct{}), landed: make(chan struct{}),
		send: func(ctx context.Context) (any, error) { return send(ctx) }}
	r.add(c)
	if r.caller == CallerReset {
		return nil, &smithy.OperationError{ServiceID: "DynamoDB", OperationName: op,
			Err: &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer (held back: the write lands later)")}}
	}
	select {
	case <-c.landed:
		out, _ := c.out.(*O)
		return out, c.err
	case <-ctx.Done():
		return nil, &smithy.OperationError{ServiceID: "DynamoDB", OperationName: op, Err: ctx.Err()}
	}
}

// PutItem implements asyncevent.DynamoDB.
func (h *HoldBack) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return holdCall(ctx, h, "PutItem", in, func(ctx context.Context) (*dynamodb.PutItemOutput, error) { return h.db.PutItem(ctx, in, o...) })
}

// UpdateItem implements asyncevent.DynamoDB.
func (h *HoldBack) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return holdCall(ctx, h, "UpdateItem", in, func(ctx context.Context) (*dynamodb.UpdateItemOutput, error) { return h.db.UpdateItem(ctx, in, o...) })
}

// DeleteItem implements asyncevent.DynamoDB.
func (h *HoldBack) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return holdCall(ctx, h, "DeleteItem", in, func(ctx context.Context) (*dynamodb.DeleteItemOutput, error) { return h.db.DeleteItem(ctx, in, o...) })
}

// TransactWriteItems implements asyncevent.DynamoDB.
func (h *HoldBack) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return holdCall(ctx, h, "TransactWriteItems", in, func(ctx context.Context) (*dynamodb.TransactWriteItemsOutput, error) {
		return h.db.TransactWriteItems(ctx, in, o...)
	})
}

// GetItem implements asyncevent.DynamoDB; never held.
func (h *HoldBack) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return h.db.GetItem(ctx, in, o...)
}

// Query implements asyncevent.DynamoDB; never held.
func (h *HoldBack) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return h.db.Query(ctx, in, o...)
}

// CreateTable implements asyncevent.DynamoDB; never held.
func (h *HoldBack) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, o ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	return h.db.CreateTable(ctx, in, o...)
}

// DescribeTable implements asyncevent.DynamoDB; never held.
func (h *HoldBack) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return h.db.DescribeTable(ctx, in, o...)
}

// DescribeTimeToLive implements asyncevent.DynamoDB; never held.
func (h *HoldBack) DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error) {
	return h.db.DescribeTimeToLive(ctx, in, o...)
}

// UpdateTimeToLive implements asyncevent.DynamoDB; never held.
func (h *HoldBack) UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	return h.db.UpdateTimeToLive(ctx, in, o...)
}

// OnKey matches the writes of op ("" for any write operation) on an item whose PK
// starts with pkPrefix ("" for any), whose UpdateExpression or ConditionExpression
// contains exprContains ("" for any) once its attribute names are filled in for their
// #placeholders ("ADD holders", "capacityRemaining > "). A transaction matches when
// one of its items does. Mind that a prefix such as EVENT#e#CAPACITY#1 also matches
// shard 10.
func OnKey(op, pkPrefix, exprContains string) Match {
	return func(gotOp string, in any) bool {
		if op != "" && op != gotOp {
			return false
		}
		for _, w := range heldWritesOf(in) {
			if strings.HasPrefix(w.pk, pkPrefix) && (exprContains == "" ||
				strings.Contains(w.update, exprContains) || strings.Contains(w.condition, exprContains)) {
				return true
			}
		}
		return false
	}
}

// AnyOf matches the writes any of ms matches.
func AnyOf(ms ...Match) Match {
	return func(op string, in any) bool {
		for _, m := range ms {
			if m(op, in) {
				return true
			}
		}
		return false
	}
}

// heldItemWrite is one item's write, its expressions with their names filled in.
type heldItemWrite struct{ pk, update, condition string }

// heldWritesOf returns the item writes of a write input.
func heldWritesOf(in any) []heldItemWrite {
	one := func(key map[string]types.AttributeValue, update, condition *string, names map[string]string) heldItemWrite {
		return heldItemWrite{pk: pkString(key), update: withNames(aws.ToString(update), names), condition: withNames(aws.ToString(condition), names)}
	}
	switch in := in.(type) {
	case *dynamodb.UpdateItemInput:
		return []heldItemWrite{one(in.Key, in.UpdateExpression, in.ConditionExpression, in.ExpressionAttributeNames)}
	case *dynamodb.PutItemInput:
		return []heldItemWrite{one(in.Item, nil, in.ConditionExpression, in.ExpressionAttributeNames)}
	case *dynamodb.DeleteItemInput:
		return []heldItemWrite{one(in.Key, nil, in.ConditionExpression, in.ExpressionAttributeNames)}
	case *dynamodb.TransactWriteItemsInput:
		var ws []heldItemWrite
		for _, it := range in.TransactItems {
			switch {
			case it.Update != nil:
				ws = append(ws, one(it.Update.Key, it.Update.UpdateExpression, it.Update.ConditionExpression, it.Update.ExpressionAttributeNames))
			case it.Put != nil:
				ws = append(ws, one(it.Put.Item, nil, it.Put.ConditionExpression, it.Put.ExpressionAttributeNames))
			case it.Delete != nil:
				ws = append(ws, one(it.Delete.Key, nil, it.Delete.ConditionExpression, it.Delete.ExpressionAttributeNames))
			case it.ConditionCheck != nil:
				ws = append(ws, one(it.ConditionCheck.Key, nil, it.ConditionCheck.ConditionExpression, it.ConditionCheck.ExpressionAttributeNames))
			}
		}
		return ws
	}
	return nil
}

func pkString(key map[string]types.AttributeValue) string {
	if s, ok := key["PK"].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

var namePlaceholder = regexp.MustCompile(`#[A-Za-z0-9_]+`)

// withNames fills an expression's #placeholders in with their attribute names.
func withNames(expr string, names map[string]string) string {
	if expr == "" || len(names) == 0 {
		return expr
	}
	return namePlaceholder.ReplaceAllStringFunc(expr, func(p string) string {
		if n, ok := names[p]; ok {
			return n
		}
		return p
	})
}
