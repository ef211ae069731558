package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/internal/ctxsleep"
)

// The rows of the access-pattern table, and the one engine that writes them.
//
// Every conditional write of the library is a row, declared once beside its item: its
// name in the access-pattern table (doc.go), the method that makes it, the item it
// writes, and for a status write the statuses it leaves, the guard, the status it
// enters and what it sets. CanTransition and the table in doc.go are read off these
// declarations (a test holds doc.go to them), and apply is the only code that turns
// a row into a DynamoDB call: a conditional UpdateItem, PutItem or DeleteItem, or a
// TransactWriteItems when a status-log entry or another item goes with it.
//
// A row's conditions and actions name the values that change from call to call as
// params; a write carries their values (args), and build puts them into the row's
// expression for that write.

// op is the DynamoDB operation of a row.
type op string

const (
	opUpdate op = "UpdateItem"
	opPut    op = "PutItem"
	opDelete op = "DeleteItem"
	opCheck  op = "ConditionCheck" // only inside a transaction
)

// row is one conditional write of the access-pattern table.
type row struct {
	name   string      // as in the access-pattern table of doc.go
	method string      // the Client method that makes the write
	item   entity.Type // the item it writes
	op     op

	// A status write leaves one of from (the likeliest first) for to. A row that
	// writes no status has no from, and cond is its whole condition.
	from  []leave
	to    Status
	guard cond // holds too, whatever the status left
	cond  cond // the condition of a row that writes no status

	sets    []set    // the update's SET actions besides status, in order
	adds    []set    // the update's ADD actions: a number, or elements into a set
	deletes []set    // the update's DELETE actions: elements out of a set
	removes []string // the update's REMOVE actions: attributes it drops

	// loggedAt is the param holding the transition's own time, which its status-log
	// entry records. Default: pNow.
	loggedAt param
}

// leave is a status a row may leave, with what must hold besides when it does.
type leave struct {
	status Status
	when   cond
}

// param names a value that a row's conditions and actions take at each call.
type param string

// args are a write's values of its row's params, each of the Go type its attribute
// holds: EpochMillis for a time, a setOf for a set, and so on.
type args map[param]any

// values gives a row's conditions and actions the values of their params.
type values interface {
	// arg is p's value, as the expression package takes a value (Contains).
	arg(p param) any
	// value is p's value as an operand.
	value(p param) expression.ValueBuilder
}

// docValues give each param as :name, the way the access-pattern table of doc.go
// shows it.
type docValues struct{}

func (docValues) arg(p param) any                       { return ":" + string(p) }
func (docValues) value(p param) expression.ValueBuilder { return expression.Value(docValues{}.arg(p)) }

// setOf marshals to a DynamoDB set: a number set (NS) of ints, a string set (SS) of
// strings.
type setOf[T int | string] []T

// MarshalDynamoDBAttributeValue implements attributevalue.Marshaler.
func (s setOf[T]) MarshalDynamoDBAttributeValue() (types.AttributeValue, error) {
	elems := make([]string, len(s))
	for i, v := range s {
		elems[i] = fmt.Sprint(v)
	}
	if _, numbers := any(s).(setOf[int]); numbers {
		return &types.AttributeValueMemberNS{Value: elems}, nil
	}
	return &types.AttributeValueMemberSS{Value: elems}, nil
}

// A cond is a condition of a row, which may take params' values from v.
type cond func(v values) expression.ConditionBuilder

// fixed is a cond that takes no param.
func fixed(c expression.ConditionBuilder) cond {
	return func(values) expression.ConditionBuilder { return c }
}

// compare is the cond that op holds against p's value, as in
// compare(expression.Name(attrEndsAt).LessThan, pEndsAt).
func compare(op func(expression.OperandBuilder) expression.ConditionBuilder, p param) cond {
	return func(v values) expression.ConditionBuilder { return op(v.value(p)) }
}

// all is the cond that each of cs holds, read left to right: all(a, b, c) is
// ((a AND b) AND c).
func all(cs ...cond) cond { return fold(expression.ConditionBuilder.And, cs) }

// either is the cond that one of cs holds, read left to right like all.
func either(cs ...cond) cond { return fold(expression.ConditionBuilder.Or, cs) }

// fold joins cs left to right with join.
func fold(join func(a, b expression.ConditionBuilder, more ...expression.ConditionBuilder) expression.ConditionBuilder, cs []cond) cond {
	return func(v values) expression.ConditionBuilder {
		c := cs[0](v)
		for _, next := range cs[1:] {
			c = join(c, next(v))
		}
		return c
	}
}

// not is the cond that c does not hold.
func not(c cond) cond {
	return func(v values) expression.ConditionBuilder { return expression.Not(c(v)) }
}

// set is one action of an update on attr, with a constant or a param's value.
type set struct {
	attr      string
	constant  any   // a value, or an operand of constants
	param     param // when not "", the value; constant is unused
	ifMissing bool  // a SET only where the item has no attr yet
}

// setTo sets attr to v: a constant, a param's value at each call, or an operand
// (expression.Name(attr).Minus(expression.Value(1))).
func setTo(attr string, v any) set {
	if p, ok := v.(param); ok {
		return set{attr: attr, param: p}
	}
	return set{attr: attr, constant: v}
}

// addTo adds v to attr: a number, or a set's elements (a param, or a constant).
func addTo(attr string, v any) set { return setTo(attr, v) }

// setIfMissing sets attr to v where the item has no attr yet: a constant, or a
// param's value at each call.
func setIfMissing(attr string, v any) set {
	s := setTo(attr, v)
	s.ifMissing = true
	return s
}

// value is the action's value with v's params.
func (s set) value(v values) expression.ValueBuilder {
	if s.param != "" {
		return v.value(s.param)
	}
	return expression.Value(s.constant)
}

// operand is a SET action's operand with v's params.
func (s set) operand(v values) expression.OperandBuilder {
	if o, ok := s.constant.(expression.OperandBuilder); ok {
		return o
	}
	if s.ifMissing {
		return expression.IfNotExists(expression.Name(s.attr), s.value(v))
	}
	return s.value(v)
}

// build is the row's expression for one write: its condition leaving start ("" for
// any status of from), and its update, with v's values. A row without condition or
// update (a delete whatever the item holds) has an empty one.
func (r *row) build(v values, start Status) (expression.Expression, error) {
	c := r.condition(v, start)
	u, updates := r.update(v)
	if c == nil && !updates {
		return expression.Expression{}, nil
	}
	b := expression.NewBuilder()
	if c != nil {
		b = b.WithCondition(*c)
	}
	if updates {
		b = b.WithUpdate(u)
	}
	e, err := b.Build()
	if err != nil {
		return e, fmt.Errorf("asyncevent: row %q: %w", r.name, err)
	}
	return e, nil
}

// A plan is a row's expression for one start status, built once (planOf): its text
// and names as built, the values its constants take, and the param each other value
// placeholder takes. A write binds its args into the plan's values (bind), so a call
// pays for its own values, not for building the row's expression again.
type plan struct {
	condition, update *string
	names             map[string]string               // copied into each input
	constants         map[string]types.AttributeValue // copied into each input
	params            []planParam
}

// planParam is a value placeholder of a plan and the param it takes.
type planParam struct {
	placeholder string
	param       param
}

// planKey names a plan: a row, leaving a start status.
type planKey struct {
	row   *row
	start Status
}

// plans holds the plans built, by planKey.
var plans sync.Map

// paramMark begins the value planValues gives each param, which no write's value is.
const paramMark = "\x00asyncevent-param\x00"

// planValues give each param a value that names it, so that planOf finds which
// placeholder of the built expression takes which param.
type planValues struct{}

func (planValues) arg(p param) any { return paramMark + string(p) }
func (planValues) value(p param) expression.ValueBuilder {
	return expression.Value(planValues{}.arg(p))
}

// planOf returns the row's plan leaving start, built the first time it is asked.
func (r *row) planOf(start Status) (*plan, error) {
	if !r.leaves(start) {
		start = "" // its condition leaves any status of from
	}
	k := planKey{r, start}
	if p, ok := plans.Load(k); ok {
		return p.(*plan), nil
	}
	e, err := r.build(planValues{}, start)
	if err != nil {
		return nil, err
	}
	p := &plan{condition: e.Condition(), update: e.Update(), names: e.Names(), constants: map[string]types.AttributeValue{}}
	for placeholder, v := range e.Values() {
		if s, ok := v.(*types.AttributeValueMemberS); ok && strings.HasPrefix(s.Value, paramMark) {
			p.params = append(p.params, planParam{placeholder, param(strings.TrimPrefix(s.Value, paramMark))})
			continue
		}
		p.constants[placeholder] = v
	}
	actual, _ := plans.LoadOrStore(k, p)
	return actual.(*plan), nil
}

// bind returns the plan's values with a's: each param's value as the expression
// package would marshal it. A param a does not give is an error naming it.
func (p *plan) bind(r *row, a args) (map[string]types.AttributeValue, error) {
	if len(p.constants)+len(p.params) == 0 {
		return nil, nil
	}
	values := make(map[string]types.AttributeValue, len(p.constants)+len(p.params))
	for placeholder, v := range p.constants {
		values[placeholder] = cloneValue(v)
	}
	for _, pp := range p.params {
		v, ok := a[pp.param]
		if !ok {
			return nil, fmt.Errorf("asyncevent: row %q: no value for %s", r.name, pp.param)
		}
		av, err := marshalValue(v)
		if err != nil {
			return nil, fmt.Errorf("asyncevent: row %q: %s: %w", r.name, pp.param, err)
		}
		values[pp.placeholder] = av
	}
	return values, nil
}

// cloneValue is a copy of v that shares nothing with it: an input is its caller's to
// change (a user's DynamoDB wrapper may edit one), so no two inputs share a value.
func cloneValue(v types.AttributeValue) types.AttributeValue {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return &types.AttributeValueMemberS{Value: x.Value}
	case *types.AttributeValueMemberN:
		return &types.AttributeValueMemberN{Value: x.Value}
	case *types.AttributeValueMemberBOOL:
		return &types.AttributeValueMemberBOOL{Value: x.Value}
	case *types.AttributeValueMemberNULL:
		return &types.AttributeValueMemberNULL{Value: x.Value}
	case *types.AttributeValueMemberB:
		return &types.AttributeValueMemberB{Value: slices.Clone(x.Value)}
	case *types.AttributeValueMemberSS:
		return &types.AttributeValueMemberSS{Value: slices.Clone(x.Value)}
	case *types.AttributeValueMemberNS:
		return &types.AttributeValueMemberNS{Value: slices.Clone(x.Value)}
	case *types.AttributeValueMemberBS:
		bs := make([][]byte, len(x.Value))
		for i, b := range x.Value {
			bs[i] = slices.Clone(b)
		}
		return &types.AttributeValueMemberBS{Value: bs}
	case *types.AttributeValueMemberL:
		l := make([]types.AttributeValue, len(x.Value))
		for i, e := range x.Value {
			l[i] = cloneValue(e)
		}
		return &types.AttributeValueMemberL{Value: l}
	case *types.AttributeValueMemberM:
		m := make(map[string]types.AttributeValue, len(x.Value))
		for k, e := range x.Value {
			m[k] = cloneValue(e)
		}
		return &types.AttributeValueMemberM{Value: m}
	}
	return v
}

// marshalValue is attributevalue.Marshal of v, without its reflection for the
// values rows bind most: strings, integers and booleans, of any named type. A nil
// slice, map or pointer is NULL, as the SDK encodes it, before any Marshaler of its
// type is asked.
func marshalValue(v any) (types.AttributeValue, error) {
	switch x := v.(type) {
	case attributevalue.Marshaler:
		switch rv := reflect.ValueOf(v); rv.Kind() {
		case reflect.Slice, reflect.Map, reflect.Pointer, reflect.Interface:
			if rv.IsNil() {
				return &types.AttributeValueMemberNULL{Value: true}, nil
			}
		}
		return x.MarshalDynamoDBAttributeValue()
	case string:
		return &types.AttributeValueMemberS{Value: x}, nil
	case EpochMillis:
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(int64(x), 10)}, nil
	case int:
		return &types.AttributeValueMemberN{Value: strconv.Itoa(x)}, nil
	case int64:
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(x, 10)}, nil
	case bool:
		return &types.AttributeValueMemberBOOL{Value: x}, nil
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.String:
		return &types.AttributeValueMemberS{Value: rv.String()}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(rv.Int(), 10)}, nil
	}
	return attributevalue.Marshal(v)
}

// condition is the row's condition leaving start, or any status of from when start
// is "" or not one of them; nil when the row has none.
func (r *row) condition(v values, start Status) *expression.ConditionBuilder {
	if len(r.from) == 0 {
		if r.cond == nil {
			return nil
		}
		c := r.cond(v)
		return &c
	}
	if !r.leaves(start) {
		start = ""
	}
	var cond expression.ConditionBuilder
	first := true
	for _, l := range r.from {
		if start != "" && l.status != start {
			continue
		}
		c := expression.Name(attrStatus).Equal(expression.Value(l.status))
		if l.when != nil {
			c = c.And(l.when(v))
		}
		if first {
			cond, first = c, false
		} else {
			cond = cond.Or(c)
		}
	}
	if r.guard != nil {
		cond = cond.And(r.guard(v))
	}
	return &cond
}

// update is the row's update: its status, then its actions in order; false when it
// writes nothing.
func (r *row) update(v values) (expression.UpdateBuilder, bool) {
	var u expression.UpdateBuilder
	if r.to == "" && len(r.sets)+len(r.adds)+len(r.deletes)+len(r.removes) == 0 {
		return u, false
	}
	if r.to != "" {
		u = u.Set(expression.Name(attrStatus), expression.Value(r.to))
	}
	for _, s := range r.sets {
		u = u.Set(expression.Name(s.attr), s.operand(v))
	}
	for _, a := range r.adds {
		u = u.Add(expression.Name(a.attr), a.value(v))
	}
	for _, d := range r.deletes {
		u = u.Delete(expression.Name(d.attr), d.value(v))
	}
	for _, name := range r.removes {
		u = u.Remove(expression.Name(name))
	}
	return u, true
}

// logTime is the param of the time the row's status-log entry records.
func (r *row) logTime() param {
	if r.loggedAt == "" {
		return pNow
	}
	return r.loggedAt
}

// leaves reports whether r may start from status s.
func (r *row) leaves(s Status) bool {
	return slices.ContainsFunc(r.from, func(l leave) bool { return l.status == s })
}

// A write is one row applied to one item.
type write struct {
	row  *row
	key  Key
	item any // opPut: the item
	args args
	note string // the status log's message; default the row's name
	// lost turns this write's failed condition, inside a transaction with others, into
	// the call's outcome; nil makes it an error.
	lost func(old map[string]types.AttributeValue) (Transition, error)
}

// conditionLost reports that write index of a call failed its condition; old is the
// item as the condition found it, nil when there was none.
type conditionLost struct {
	row   *row
	index int
	old   map[string]types.AttributeValue
}

func (e *conditionLost) Error() string {
	return fmt.Sprintf("asyncevent: the condition of %q failed", e.row.name)
}

// txAttempts bounds the attempts of a call that DynamoDB refused for throughput alone
// in a way the SDK does not retry: a transaction cancelled for TransactionConflict
// (another transaction or write on one of its items under way) or ThrottlingError (an
// item's partition key, on the table or an index, over its share), a single write
// refused with TransactionConflictException.
const txAttempts = 8

// txOptions are the options of a transaction.
type txOptions struct {
	// token derives the ClientRequestToken of an attempt, so that the SDK's retry of
	// a call whose answer was lost returns success rather than failing on the call's
	// own first write. nil lets the SDK pick a random one.
	token func(attempt int) string
	// hold, if set, is held during each attempt's call, so that another write of the
	// caller's on one of the items (a lease's heartbeat) never overlaps it and
	// conflicts with it.
	hold sync.Locker
	// once sends the call once: neither the SDK nor do sends it again when it is
	// refused, for a write that may be left undone (another write does its work).
	once bool
	// answered makes each attempt a single send that the SDK does not repeat, so
	// that an attempt whose answer was lost is told as such (a transport error),
	// never hidden behind the refusal or the throttle of a resend of it; do still
	// sends again after a refusal that says nothing was written. An operator's
	// control tells its caller whether it applied.
	answered bool
	// old, if set, receives the attributes a single UpdateItem changed, as they were
	// before it (ReturnValues UPDATED_OLD). A transaction returns none.
	old *map[string]types.AttributeValue
}

// do makes the writes: one conditional UpdateItem or PutItem, or one
// TransactWriteItems of them all. A failed condition is a *conditionLost naming the
// write, at once: a lost condition is an outcome, never retried.
//
// A call refused for throughput alone wrote nothing, so it is sent again as it is,
// after a jittered backoff (refusalBackoff), up to txAttempts times: a transaction
// cancelled for TransactionConflict or ThrottlingError (attempt k carrying the
// ClientRequestToken tx.token(k), as the first did), or a single write refused with
// TransactionConflictException; the SDK retries neither. With tx.once, none of this:
// the call is sent once. The SDK's retryer alone
// retries the refusals it knows (ProvisionedThroughputExceeded, ThrottlingException,
// RequestLimitExceeded). A refusal for throughput that outlasts these retries matches
// ErrThrottled, and still wrote nothing.
func (c *Client) do(ctx context.Context, tx txOptions, ws []write, starts ...Status) error {
	items := make([]types.TransactWriteItem, len(ws))
	for i, w := range ws {
		start := Status("")
		if i < len(starts) {
			start = starts[i]
		}
		item, err := c.input(w, start)
		if err != nil {
			return err
		}
		items[i] = item
	}
	var err error
	sendCtx := c.withRows(ctx, ws)
	for attempt := range txAttempts {
		if attempt > 0 {
			if err := ctxsleep.Sleep(ctx, refusalBackoff(err, attempt-1)); err != nil {
				return err
			}
		}
		if tx.hold != nil {
			tx.hold.Lock()
		}
		err = c.send(sendCtx, tx, items, attempt)
		if tx.hold != nil {
			tx.hold.Unlock()
		}
		if lost := lostIn(err, ws); lost != nil {
			return lost
		}
		if !refusedForThroughputAlone(err) || tx.once {
			return throttled(err)
		}
	}
	return fmt.Errorf("%s: refused for throughput %d times: %w", ws[0].row.name, txAttempts, throttled(err))
}

// send makes one attempt of do's call: a single write on its own, several in one
// TransactWriteItems.
func (c *Client) send(ctx context.Context, tx txOptions, items []types.TransactWriteItem, attempt int) error {
	var optFns []func(*dynamodb.Options)
	if tx.once || tx.answered {
		optFns = append(optFns, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	}
	if len(items) == 1 {
		return c.single(ctx, items[0], tx.old, optFns...)
	}
	in := &dynamodb.TransactWriteItemsInput{TransactItems: items}
	if tx.token != nil {
		in.ClientRequestToken = aws.String(tx.token(attempt))
	}
	_, err := c.db.TransactWriteItems(ctx, in, optFns...)
	return err
}

// lostIn returns the write of ws whose condition err reports failed, nil when err is
// no failed condition.
func lostIn(err error, ws []write) *conditionLost {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return &conditionLost{row: ws[0].row, old: ccf.Item}
	}
	reasons := cancellationReasons(err)
	for i := range ws {
		if conditionFailed(reasons, i) {
			return &conditionLost{row: ws[i].row, index: i, old: reasons[i].Item}
		}
	}
	return nil
}

// refusedForThroughputAlone reports whether err is a refusal for throughput that the
// SDK does not retry and that wrote nothing: a transaction cancelled for conflicts or
// throttling only, or a single write that met a transaction under way on its item.
func refusedForThroughputAlone(err error) bool {
	var conflict *types.TransactionConflictException
	return refusedForThroughput(cancellationReasons(err)) || errors.As(err, &conflict)
}

// Transition reports a conditional write of a request. A lost condition is an
// outcome, not an error: Applied is false and Current holds the request as the
// condition found it, read from the same call (ReturnValuesOnConditionCheckFailure
// ALL_OLD).
type Transition struct {
	Applied bool
	// Current is the request as the failed condition found it; nil when the
	// request's own condition held and another item's failed (SoldOut).
	Current *Request
	// SoldOut is ClaimSeat's: the request was PROCESSING under the lease, but no seat
	// was left. Nothing was written.
	SoldOut bool

	// current is Current with the library's bookkeeping on it (the lease, the
	// seat's place), for the worker's decisions.
	current *storedRequest

	// left is the status an applied write left, when the write allowed one status
	// only (Options.StatusLog tries one at a time); "" when it allowed several.
	left Status
}

// apply writes a request row and what goes with it: the status-log entry
// (Options.StatusLog) and extra, in one TransactWriteItems, or a single UpdateItem
// when there is nothing else.
//
// The status log names the status a request left, and one write cannot both allow
// several and say which it met. So with Options.StatusLog a row allowed from several
// statuses is tried from one at a time: the likeliest first, then the one a failed
// condition found, when the row leaves it too. A request met in a less likely status
// costs a second call.
func (c *Client) apply(ctx context.Context, key RequestKey, w write, tx txOptions, extra ...write) (Transition, error) {
	w.key = key.Key()
	if !c.opts.StatusLog || w.row.to == "" {
		return c.applyFrom(ctx, key, "", w, tx, extra)
	}
	start := w.row.from[0].status
	for range w.row.from {
		t, err := c.applyFrom(ctx, key, start, w, tx, extra)
		next, again := w.row.retryFrom(start, t)
		if err != nil || !again {
			return t, err
		}
		start = next
	}
	return c.applyFrom(ctx, key, start, w, tx, extra) // the status kept moving: its last answer stands
}

// retryFrom tells whether a write of r tried from start, with outcome t, is tried
// again, and from which status: when its condition failed on a request in another
// status that r leaves too.
func (r *row) retryFrom(start Status, t Transition) (Status, bool) {
	if t.Applied || t.current == nil || t.current.Status == start || !r.leaves(t.current.Status) {
		return "", false // applied, or the condition lost for good
	}
	return t.current.Status, true
}

// applyTo is apply on the request requestID, its error wrapped as "<what>
// <requestId>: …". An invalid requestID is an ErrInvalidID error, and nothing is sent.
func (c *Client) applyTo(ctx context.Context, what, requestID string, w write, tx txOptions, extra ...write) (Transition, error) {
	key, err := NewRequestKey(requestID)
	if err != nil {
		return Transition{}, err
	}
	t, err := c.apply(ctx, key, w, tx, extra...)
	if err != nil {
		return t, fmt.Errorf("%s %s: %w", what, requestID, err)
	}
	return t, nil
}

// applyFrom writes w leaving start ("" for any of its statuses).
func (c *Client) applyFrom(ctx context.Context, key RequestKey, start Status, w write, tx txOptions, extra []write) (Transition, error) {
	ws := []write{w}
	starts := []Status{start}
	if c.opts.StatusLog && w.row.to != "" {
		note := w.note
		if note == "" {
			note = w.row.name
		}
		at, ok := w.args[w.row.logTime()].(EpochMillis)
		if !ok {
			return Transition{}, fmt.Errorf("asyncevent: row %q: no %s for its status log", w.row.name, w.row.logTime())
		}
		entry, err := c.statusLogEntry(key.requestID, start, w.row.to, note, at)
		if err != nil {
			return Transition{}, err
		}
		ws = append(ws, entry)
	}
	ws = append(ws, extra...)
	err := c.do(ctx, tx, ws, starts...)
	var lost *conditionLost
	switch {
	case err == nil:
		return Transition{Applied: true, left: start}, nil
	case !errors.As(err, &lost):
		return Transition{}, err
	case lost.index == 0:
		return lostCondition(key, lost.old)
	case ws[lost.index].lost != nil:
		return ws[lost.index].lost(lost.old)
	}
	return Transition{}, err
}

// found is the Transition of a request that a condition found: not applied.
func found(r *storedRequest) Transition {
	return Transition{Current: &r.Request, current: r}
}

// lostCondition reads the request a failed condition returned; none means there is no
// such request.
func lostCondition(key RequestKey, old map[string]types.AttributeValue) (Transition, error) {
	if old == nil {
		return Transition{}, fmt.Errorf("%w: request %s", ErrNotFound, key.requestID)
	}
	var item requestItem
	if err := attributevalue.UnmarshalMap(old, &item); err != nil {
		return Transition{}, err
	}
	return found(&item.storedRequest), nil
}

// rows lists every row, in the order of the access-pattern table.
func rows() []*row {
	return []*row{
		&participateRow, &createRequestRow, &incompleteRequestRow, &releaseLockRow, &requestAbsentRow, &lockOfRequestRow, &markQueuedRow, &enqueueFailedRow,
		&startProcessingRow, &extendLeaseRow, &claimSeatRow, waveClaimRows[2], &takeSeatRow, &bindSeatRow, &seatClosedRow, &moveSeatRow, &shardEmptyRow, &shardSoldOutRow, &capacityRejectedRow, &soldOutRow, &lateRejectedRow, &lateSoldOutRow,
		&holdRecordRow, &bindHoldRow, &takeHoldRow, &waitlistRow, &waitlistLeasedRow, &confirmRow, &releaseRow, &waitlistLeftRow,
		&expireRow, &seatReturnedRow, &holdClearedRow, &serveRow, &returnedSeatTakenRow, &waitlistClosedRow, &sweepLeaseRow,
		&lotteryCollectRow, &lotteryWinRow, &lotteryLoseRow, &lotteryNotDrawnRow, &lotteryClosedRow, &finalFailureRow, &entryFailureRow,
		&statusLogRow, &createEventRow, &eventClosedRow, &eventPausedRow, &eventResumedRow, &endExtendedRow, &cutoffExtendedRow, &startExtendedRow, &holdEventEndRow, &drawNotBegunRow, &auditRow, &operationRow, &eventEntryRow, &eventEntryGoneRow,
		&progressRow, &seatsAddedRow, &shardSeatsAddedRow, &poolMarkedRow, &poolSeatsAddedRow, &poolClaimRow, &poolSeatClosedRow, &cancelRow, &poolCancelledRow, &poolVersionRow, &drawFreezeRow, &eventDrawingRow, &entriesChunkRow, &drawEntriesRow, &drawAnnounceRow, &eventAnnouncedRow,
		&admissionLeaseRow, &admissionWaveRow, &admissionLateWaveRow, &admissionWaveDoneRow, &admissionLateRow, &admissionRefusingRow,
	}
}

// CanTransition reports whether a row of the access-pattern table writes status to
// on a request in status from: the forward path, PROCESSING → PROCESSING (a later
// delivery takes over an expired lease), RECEIVED → PROCESSING (the worker got the
// message before ingest wrote QUEUED), a lottery entry's QUEUED → QUEUED when a
// worker collects it, its RECEIVED or QUEUED → SUCCEEDED or REJECTED at the draw,
// a failure from any status that is not final, and an operator's cancel of a
// first-come SUCCEEDED (CancelRequest).
func CanTransition(from, to Status) bool {
	for _, r := range rows() {
		if r.to == to && r.leaves(from) {
			return true
		}
	}
	return false
}

// placeholder matches the name and value placeholders of a built expression.
var placeholder = regexp.MustCompile(`[#:][0-9]+`)

// docParam matches a param as docValues gives it: :name.
var docParam = regexp.MustCompile(`^:[A-Za-z][A-Za-z0-9]*$`)

// describe writes text, a part of e, in the words of the access-pattern table:
// attribute names for their placeholders, a value the row fixes as a literal (a
// quoted string, a number, true or false), and a param as :name (a row built with
// docValues gives each param so). A value of another kind keeps its placeholder.
func describe(e expression.Expression, text *string) string {
	if text == nil {
		return ""
	}
	names, values := e.Names(), e.Values()
	return collapseRuns(strings.TrimSpace(placeholder.ReplaceAllStringFunc(strings.ReplaceAll(*text, "\n", " "), func(ph string) string {
		if n, ok := names[ph]; ok {
			return n
		}
		switch v := values[ph].(type) {
		case *types.AttributeValueMemberS:
			if docParam.MatchString(v.Value) {
				return v.Value
			}
			return strconv.Quote(v.Value)
		case *types.AttributeValueMemberN:
			return v.Value
		case *types.AttributeValueMemberBOOL:
			return strconv.FormatBool(v.Value)
		case *types.AttributeValueMemberNULL:
			return "null"
		}
		return ph
	})))
}

// numberedPair matches an update's "name :name" of a numbered attribute (a0 :a0),
// with whatever comes before it and after it in its clause.
var numberedPair = regexp.MustCompile(`^(.*\s)?([a-z]+)([0-9]+) :([a-z]+)([0-9]+)(\s.*)?$`)

// collapseRuns writes three or more numbered attributes of one name set alike and in
// a row (ADD a0 :a0, a1 :a1, …, a9 :a9) as their first and last: ADD a0 :a0 … a9 :a9.
func collapseRuns(text string) string {
	type pair struct {
		before, name, n, after string
	}
	parse := func(clause string) (pair, bool) {
		m := numberedPair.FindStringSubmatch(clause)
		if m == nil || m[2] != m[4] || m[3] != m[5] {
			return pair{}, false
		}
		return pair{before: m[1], name: m[2], n: m[3], after: m[6]}, true
	}
	follows := func(a, b pair) bool {
		x, _ := strconv.Atoi(a.n)
		y, _ := strconv.Atoi(b.n)
		return a.name == b.name && len(a.n) == len(b.n) && y == x+1 && a.after == "" && b.before == ""
	}
	clauses := strings.Split(text, ", ")
	var out []string
	for i := 0; i < len(clauses); {
		first, ok := parse(clauses[i])
		j, last := i+1, first
		for ok && j < len(clauses) {
			next, isPair := parse(clauses[j])
			if !isPair || !follows(last, next) {
				break
			}
			last, j = next, j+1
		}
		if !ok || j-i < 3 {
			out = append(out, clauses[i])
			i++
			continue
		}
		out = append(out, fmt.Sprintf("%s%s%s :%s%s … %s%s :%s%s%s", first.before, first.name, first.n, first.name, first.n, last.name, last.n, last.name, last.n, last.after))
		i = j
	}
	return strings.Join(out, ", ")
}
