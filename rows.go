package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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
// A row's expressions are built once, with params standing in for the values that
// change from call to call; a call fills its params in.

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
	name   string     // as in the access-pattern table of doc.go
	method string     // the Client method that makes the write
	item   EntityType // the item it writes
	op     op

	// A status write leaves one of from (the likeliest first) for to. A row that
	// writes no status has no from, and cond is its whole condition.
	from  []leave
	to    Status
	guard *expression.ConditionBuilder // holds too, whatever the status left
	cond  *expression.ConditionBuilder // the condition of a row that writes no status

	sets    []set    // the update's SET actions besides status, in order
	adds    []set    // the update's ADD actions: an element into a set
	deletes []set    // the update's DELETE actions: an element out of a set
	removes []string // the update's REMOVE actions: attributes it drops

	// loggedAt is the param holding the transition's own time, which its status-log
	// entry records. Default: pNow.
	loggedAt param

	once    sync.Once
	all     built            // the condition allowing every status of from
	byStart map[Status]built // the condition of each status of from alone (Options.StatusLog)
}

// leave is a status a row may leave, with what must hold besides when it does.
type leave struct {
	status Status
	when   *expression.ConditionBuilder
}

// set is one SET action of an update.
type set struct {
	attr  string
	value expression.OperandBuilder
}

// addTo adds p's value, a set, to the set attr.
func addTo(attr string, p param) set { return set{attr, expression.Value(p)} }

// setTo sets attr to v: a constant, or a param filled in by each call.
func setTo(attr string, v any) set { return set{attr, expression.Value(v)} }

// setIfMissing sets attr to p's value where the item has no attr yet.
func setIfMissing(attr string, p param) set {
	return set{attr, expression.IfNotExists(expression.Name(attr), expression.Value(p))}
}

// param stands for a value that a row's expression takes at each call.
type param string

// paramMark begins the text a param marshals to in a built expression, which no
// stored value begins with.
const paramMark = "\x00param:"

// MarshalDynamoDBAttributeValue writes the placeholder that fill replaces.
func (p param) MarshalDynamoDBAttributeValue() (types.AttributeValue, error) {
	return &types.AttributeValueMemberS{Value: paramMark + string(p)}, nil
}

// args are the values of a row's params for one call.
type args map[param]any

// built is a row's expression, built once; fill completes it for a call.
type built struct {
	condition *string
	update    *string
	names     map[string]string
	values    map[string]types.AttributeValue // the constants
	params    map[string]param                // value placeholder → the param it stands for
}

func (r *row) build() {
	r.once.Do(func() {
		r.all = r.mustBuild(r.condition(r.from))
		if len(r.from) > 1 {
			r.byStart = map[Status]built{}
			for _, l := range r.from {
				r.byStart[l.status] = r.mustBuild(r.condition([]leave{l}))
			}
		}
	})
}

// condition is the row's condition when the request may be in any of from.
func (r *row) condition(from []leave) *expression.ConditionBuilder {
	if len(from) == 0 {
		return r.cond
	}
	var cond expression.ConditionBuilder
	for i, l := range from {
		c := expression.Name(attrStatus).Equal(expression.Value(l.status))
		if l.when != nil {
			c = c.And(*l.when)
		}
		if i == 0 {
			cond = c
		} else {
			cond = cond.Or(c)
		}
	}
	if r.guard != nil {
		cond = cond.And(*r.guard)
	}
	return &cond
}

// mustBuild builds the row's expression under cond. A row that does not build is a
// mistake in its declaration, found by the first test that writes it.
func (r *row) mustBuild(cond *expression.ConditionBuilder) built {
	if cond == nil && r.to == "" && len(r.sets)+len(r.adds)+len(r.deletes)+len(r.removes) == 0 {
		return built{params: map[string]param{}} // a delete whatever the item holds
	}
	b := expression.NewBuilder()
	if cond != nil {
		b = b.WithCondition(*cond)
	}
	sets := r.sets
	if r.to != "" {
		sets = append([]set{setTo(attrStatus, r.to)}, sets...)
	}
	if len(sets)+len(r.adds)+len(r.deletes)+len(r.removes) > 0 {
		var u expression.UpdateBuilder
		for _, s := range sets {
			u = u.Set(expression.Name(s.attr), s.value)
		}
		for _, a := range r.adds {
			u = u.Add(expression.Name(a.attr), a.value.(expression.ValueBuilder))
		}
		for _, d := range r.deletes {
			u = u.Delete(expression.Name(d.attr), d.value.(expression.ValueBuilder))
		}
		for _, name := range r.removes {
			u = u.Remove(expression.Name(name))
		}
		b = b.WithUpdate(u)
	}
	expr, err := b.Build()
	if err != nil {
		panic(fmt.Sprintf("asyncevent: row %q does not build: %v", r.name, err))
	}
	out := built{condition: expr.Condition(), update: expr.Update(), names: expr.Names(), params: map[string]param{}}
	if (r.op == opUpdate) != (out.update != nil) {
		panic(fmt.Sprintf("asyncevent: row %q: an update row must set something, and only an update row may", r.name))
	}
	out.values = map[string]types.AttributeValue{}
	for k, v := range expr.Values() {
		if s, ok := v.(*types.AttributeValueMemberS); ok && strings.HasPrefix(s.Value, paramMark) {
			out.params[k] = param(strings.TrimPrefix(s.Value, paramMark))
			continue
		}
		out.values[k] = v
	}
	return out
}

// variant is the row's built expression leaving start, or leaving any status of
// from when start is "".
func (r *row) variant(start Status) built {
	r.build()
	if b, ok := r.byStart[start]; ok {
		return b
	}
	return r.all
}

// fill returns the expression's values for a call: its constants and the call's
// params.
func (b built) fill(name string, a args) (map[string]types.AttributeValue, error) {
	if len(b.values)+len(b.params) == 0 {
		return nil, nil
	}
	values := maps.Clone(b.values)
	for placeholder, p := range b.params {
		v, ok := a[p]
		if !ok {
			return nil, fmt.Errorf("asyncevent: row %q: no value for %s", name, p)
		}
		av, err := attributevalue.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("asyncevent: row %q: %s: %w", name, p, err)
		}
		values[placeholder] = av
	}
	return values, nil
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
			if err := sleep(ctx, refusalBackoff(err, attempt-1)); err != nil {
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
	if tx.once {
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
	for attempt := 0; ; attempt++ {
		t, err := c.applyFrom(ctx, key, start, w, tx, extra)
		if err != nil || t.Applied || t.Current == nil || t.Current.Status == start || !w.row.leaves(t.Current.Status) || attempt == len(w.row.from) {
			return t, err // applied, or the condition lost for good (or the status kept moving)
		}
		start = t.Current.Status
	}
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
	return Transition{Current: &item.Request}, nil
}

// rows lists every row, in the order of the access-pattern table.
func rows() []*row {
	return []*row{
		&participateRow, &createRequestRow, &incompleteRequestRow, &releaseLockRow, &requestAbsentRow, &markQueuedRow, &enqueueFailedRow,
		&startProcessingRow, &extendLeaseRow, &claimSeatRow, &takeSeatRow, &bindSeatRow, &giveBackRow, &voidSeatRow, &moveSeatRow, &shardEmptyRow, &shardLeftRow, &shardSoldOutRow, &capacityRejectedRow, &soldOutRow,
		&holdRecordRow, &bindHoldRow, &takeHoldRow, &waitlistRow, &waitlistLeasedRow, &confirmRow, &releaseRow, &waitlistLeftRow,
		&expireRow, &seatReturnedRow, &holdClearedRow, &serveRow, &returnedSeatTakenRow, &waitlistClosedRow, &sweepLeaseRow,
		&lotteryCollectRow, &lotteryWinRow, &lotteryLoseRow, &lotteryClosedRow, &finalFailureRow, &entryFailureRow,
		&statusLogRow, &createEventRow, &eventClosedRow, &eventPausedRow, &eventResumedRow, &endExtendedRow, &cutoffExtendedRow, &holdEventEndRow, &drawNotBegunRow, &auditRow, &eventEntryRow, &eventEntryGoneRow,
		&progressRow, &seatsAddedRow, &shardSeatsAddedRow, &poolMarkedRow, &poolSeatsAddedRow, &poolClaimRow, &cancelRow, &poolCancelledRow, &poolVersionRow, &drawFreezeRow, &eventDrawingRow, &drawEntriesRow, &drawAnnounceRow, &eventAnnouncedRow,
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

// describe writes a built expression back in the words of the access-pattern table:
// attribute names for their placeholders, constants as they are, and params as
// :name.
func (b built) describe(text *string) string {
	if text == nil {
		return ""
	}
	return strings.TrimSpace(placeholder.ReplaceAllStringFunc(strings.ReplaceAll(*text, "\n", " "), func(ph string) string {
		if n, ok := b.names[ph]; ok {
			return n
		}
		if p, ok := b.params[ph]; ok {
			return ":" + string(p)
		}
		switch v := b.values[ph].(type) {
		case *types.AttributeValueMemberS:
			return v.Value
		case *types.AttributeValueMemberN:
			return v.Value
		}
		return ph
	}))
}
