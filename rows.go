package asyncevent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/internal/ctxsleep"
	"github.com/asyncevent/asyncevent/internal/rowexec"
	"github.com/asyncevent/asyncevent/internal/rowplan"
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
type op = rowexec.Op

const (
	opUpdate = rowexec.Update
	opPut    = rowexec.Put
	opDelete = rowexec.Delete
	opCheck  = rowexec.Check // only inside a transaction
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

// The vocabulary of a row's conditions and actions is internal/rowplan's, the engine
// that builds a row's expression once and binds each call's values into it.
type (
	// param names a value that a row's conditions and actions take at each call.
	param = rowplan.Param
	// args are a write's values of its row's params, each of the Go type its
	// attribute holds: EpochMillis for a time, a setOf for a set, and so on.
	args = rowplan.Args
	// values gives a row's conditions and actions the values of their params.
	values = rowplan.Values
	// A cond is a condition of a row, which may take params' values from v.
	cond = rowplan.Cond
	// set is one action of an update on an attribute, with a constant or a
	// param's value.
	set = rowplan.Action
)

// setOf marshals to a DynamoDB set: a number set (NS) of ints, a string set (SS) of
// strings.
type setOf[T int | string] = rowplan.SetOf[T]

// fixed is a cond that takes no param.
func fixed(c expression.ConditionBuilder) cond { return rowplan.Fixed(c) }

// compare is the cond that op holds against p's value, as in
// compare(expression.Name(attrEndsAt).LessThan, pEndsAt).
func compare(op func(expression.OperandBuilder) expression.ConditionBuilder, p param) cond {
	return rowplan.Compare(op, p)
}

// all is the cond that each of cs holds, read left to right: all(a, b, c) is
// ((a AND b) AND c).
func all(cs ...cond) cond { return rowplan.All(cs...) }

// either is the cond that one of cs holds, read left to right like all.
func either(cs ...cond) cond { return rowplan.Either(cs...) }

// not is the cond that c does not hold.
func not(c cond) cond { return rowplan.Not(c) }

// setTo sets attr to v: a constant, a param's value at each call, or an operand
// (expression.Name(attr).Minus(expression.Value(1))).
func setTo(attr string, v any) set { return rowplan.SetTo(attr, v) }

// addTo adds v to attr: a number, or a set's elements (a param, or a constant).
func addTo(attr string, v any) set { return rowplan.SetTo(attr, v) }

// setIfMissing sets attr to v where the item has no attr yet: a constant, or a
// param's value at each call.
func setIfMissing(attr string, v any) set { return rowplan.SetIfMissing(attr, v) }

// expression is the row's declaration as the engine reads it.
func (r *row) expression() *rowplan.Row {
	from := make([]rowplan.Leave, len(r.from))
	for i, l := range r.from {
		from[i] = rowplan.Leave{Status: string(l.status), When: l.when}
	}
	return &rowplan.Row{
		Name: r.name, StatusAttr: attrStatus, From: from, To: string(r.to), Guard: r.guard, Cond: r.cond,
		Sets: r.sets, Adds: r.adds, Deletes: r.deletes, Removes: r.removes,
	}
}

// build is the row's expression for one write: its condition leaving start ("" for
// any status of from), and its update, with v's values.
func (r *row) build(v values, start Status) (expression.Expression, error) {
	return r.expression().Build(v, string(start))
}

// planKey names a plan: a row, leaving a start status.
type planKey struct {
	row   *row
	start Status
}

// plans holds the plans built, by planKey.
var plans sync.Map

// planOf returns the row's plan leaving start, built the first time it is asked.
func (r *row) planOf(start Status) (*rowplan.Plan, error) {
	if !r.leaves(start) {
		start = "" // its condition leaves any status of from
	}
	k := planKey{r, start}
	if p, ok := plans.Load(k); ok {
		return p.(*rowplan.Plan), nil
	}
	p, err := rowplan.New(r.expression(), string(start))
	if err != nil {
		return nil, err
	}
	actual, _ := plans.LoadOrStore(k, p)
	return actual.(*rowplan.Plan), nil
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

// txOptions are the options of a call (rowexec.Options): token derives each
// attempt's ClientRequestToken, hold is held during each attempt, once sends the call
// once, answered makes each attempt a single send that the SDK does not repeat (an
// operator's control tells its caller whether it applied), old receives the
// attributes a single UpdateItem changed, as they were, and written asks a request
// row's single UpdateItem for the request as it left it (ALL_NEW), for a row method's
// Transition (see written).
type txOptions struct {
	token    func(attempt int) string
	hold     sync.Locker
	once     bool
	answered bool
	old      *map[string]types.AttributeValue
	written  bool
	left     *map[string]types.AttributeValue // set by applyFrom when written asks for ALL_NEW
}

// do makes the writes through rowexec.Do: one conditional UpdateItem, PutItem or
// DeleteItem, or one TransactWriteItems of them all, each from its row's plan leaving
// its start status (starts[i], "" for any). A failed condition is a *conditionLost
// naming the write, at once: a lost condition is an outcome, never retried. A call
// refused for throughput alone is sent again (rowexec.Do says how); a refusal that
// outlasts the retries matches ErrThrottled, and still wrote nothing.
func (c *Client) do(ctx context.Context, tx txOptions, ws []write, starts ...Status) error {
	xs := make([]rowexec.Write, len(ws))
	for i, w := range ws {
		start := Status("")
		if i < len(starts) {
			start = starts[i]
		}
		x, err := c.exec(w, start)
		if err != nil {
			return err
		}
		xs[i] = x
	}
	err := rowexec.Do(ctx, c.db, c.opts.TableName, xs, rowexec.Options{
		Token: tx.token, Hold: tx.hold, Once: tx.once, Answered: tx.answered, Old: tx.old, New: tx.left,
		Observed: c.observedRows(ws), Refused: throttled,
	})
	var lost *rowexec.Lost
	if errors.As(err, &lost) {
		return &conditionLost{row: ws[lost.Index].row, index: lost.Index, old: lost.Old}
	}
	return err
}

// exec is w as rowexec writes it: its row's plan leaving start ("" for all its
// statuses) with w's values bound, and its key or, for a put, its item.
func (c *Client) exec(w write, start Status) (rowexec.Write, error) {
	p, err := w.row.planOf(start)
	if err != nil {
		return rowexec.Write{}, err
	}
	values, err := rowplan.Bind(p, w.args)
	if err != nil {
		return rowexec.Write{}, err
	}
	x := rowexec.Write{Row: w.row.name, Op: w.row.op, Plan: p, Values: values}
	if w.row.op == opPut {
		if x.Item, err = attributevalue.MarshalMap(w.item); err != nil {
			return rowexec.Write{}, err
		}
		return x, nil
	}
	x.Key = avKey(w.key)
	return x, nil
}

// Transition reports a conditional write of a request. A lost condition is an
// outcome, not an error: Applied is false and Current holds the request as the
// condition found it, read from the same call (ReturnValuesOnConditionCheckFailure
// ALL_OLD).
type Transition struct {
	Applied bool
	// Current is the request. Applied, it is the request as the write left it: the
	// write's own answer (ReturnValues ALL_NEW) when it was a single UpdateItem that
	// asks for nothing else, at no extra call; read right after it (one strongly
	// consistent GetItem, which may also show a change made since) when it was a
	// TransactWriteItems (Options.StatusLog, or a row that writes other items with the
	// request: Confirm, Release of a hold, MarkEnqueueFailed) or StartProcessing
	// (whose UpdateItem returns what it changed, for the seat claim). Not applied, it
	// is the request as the failed condition found it (ALL_OLD, from the same call),
	// or as the method's own read found it before writing (Confirm, Release,
	// ClaimSeat, MarkEnqueueFailed). Nil when the request's own condition held and
	// another item's failed (ClaimSeat's SoldOut), with an error, and, rarely, when
	// an applied write's read back failed for 10 s (the write applied all the same;
	// the client's Logger says so).
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
	var left map[string]types.AttributeValue
	if tx.written && len(ws) == 1 && w.row.op == opUpdate && tx.old == nil {
		tx.left = &left
	}
	err := c.do(ctx, tx, ws, starts...)
	var lost *conditionLost
	switch {
	case err == nil && left != nil:
		var item requestItem
		if err := attributevalue.UnmarshalMap(left, &item); err != nil {
			return Transition{Applied: true, left: start}, fmt.Errorf("request %s: the write applied, and its answer did not decode: %w", key.requestID, err)
		}
		t := found(&item.storedRequest) // the request as the write left it
		t.Applied, t.left = true, start
		return t, nil
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

// written completes the Transition of a row method: an applied write carries the
// request as it left it. A single UpdateItem asked with txOptions.written returned it;
// otherwise (a transaction returns nothing) it is read right after the write, strongly
// consistent, whatever ctx does (the write applied: its caller must learn so), tried
// again after a failure for up to bookkeepingTimeout. A read that still fails leaves Current nil, and the Transition applied, without an error:
// an error would tell a caller (a payment's confirm) that the write may not have
// applied.
func (c *Client) written(ctx context.Context, requestID string, t Transition, err error) (Transition, error) {
	if err != nil || !t.Applied || t.Current != nil {
		return t, err
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		cur, err := c.getRequest(rctx, requestID, true)
		if err == nil {
			t.Current, t.current = &cur.Request, cur
			return t, nil
		}
		if errors.Is(err, ErrNotFound) || ctxsleep.Sleep(rctx, finalWriteBackoff(attempt)) != nil {
			c.opts.Logger.WarnContext(ctx, "the write applied, and reading the request back failed: its Transition carries none",
				slog.String("requestId", requestID), slog.Any("error", err))
			return t, nil
		}
	}
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

const (
	pEventID param = "eventId"
)

const (
	pNow param = "now"
)

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

// statusLogEntry returns the write of the log entry of one transition of requestID,
// for the transaction that makes the transition. The entry's suffix is random, so two
// transitions of the same millisecond both stay.
func (c *Client) statusLogEntry(requestID string, from, to Status, message string, at EpochMillis) (write, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return write{}, err
	}
	key, err := NewStatusLogKey(requestID, at, string(to)+"-"+hex.EncodeToString(b[:]))
	if err != nil {
		return write{}, err
	}
	return write{row: &statusLogRow, item: statusLogItem{Key: key.Key(), EntityType: entity.StatusLog, StatusLog: StatusLog{
		RequestID: requestID, FromStatus: from, ToStatus: to, OccurredAt: at, Message: message,
	}, TTL: expiry(at, c.opts.StatusLogTTL)}}, nil
}

// notExists is the condition of every first write of an item:
// attribute_not_exists(PK) AND attribute_not_exists(SK).
var notExists = fixed(expression.AttributeNotExists(expression.Name(attrPK)).
	And(expression.AttributeNotExists(expression.Name(attrSK))))
