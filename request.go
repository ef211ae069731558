package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// EventType is the kind of an event (seed 001: eventType).
type EventType string

// The event types.
const (
	// FirstCome events have a capacity N: the first N requests in processing order win.
	FirstCome EventType = "FIRST_COME"
	// Lottery events draw K winners among the entries queued before the cutoff.
	Lottery EventType = "LOTTERY"
)

// Valid reports whether t is one of the event types.
func (t EventType) Valid() bool { return t == FirstCome || t == Lottery }

// EntityType tells which kind of item a row of the table is; every item carries it.
type EntityType string

// The entity types of the table's items.
const (
	EntityRequest     EntityType = "REQUEST"
	EntityIdempotency EntityType = "IDEMPOTENCY"
	EntityCapacity    EntityType = "CAPACITY"
	EntityStatusLog   EntityType = "STATUS_LOG"
	EntityConfig      EntityType = "CONFIG"
	EntityDraw        EntityType = "DRAW"
)

// Status is the backend state of a request (seed 001: status). A request moves
// RECEIVED → QUEUED → PROCESSING → SUCCEEDED | REJECTED | FAILED_FINAL; every write of
// it is conditional on the current status, and a terminal status never changes again.
type Status string

// The request statuses.
const (
	StatusReceived    Status = "RECEIVED"     // written at ingest with the lock
	StatusQueued      Status = "QUEUED"       // the message is on the queue; queuedAt fixed
	StatusProcessing  Status = "PROCESSING"   // a worker holds the lease
	StatusSucceeded   Status = "SUCCEEDED"    // won: first-come seat or lottery win
	StatusRejected    Status = "REJECTED"     // lost: capacity, lottery, closed, duplicate
	StatusFailedFinal Status = "FAILED_FINAL" // will not be retried
)

// Valid reports whether s is one of the statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusReceived, StatusQueued, StatusProcessing, StatusSucceeded, StatusRejected, StatusFailedFinal:
		return true
	}
	return false
}

// rank orders statuses along the lifecycle.
func (s Status) rank() int {
	switch s {
	case StatusReceived:
		return 0
	case StatusQueued:
		return 1
	case StatusProcessing:
		return 2
	}
	return 3
}

// IsTerminal reports whether s is final: SUCCEEDED, REJECTED or FAILED_FINAL.
func (s Status) IsTerminal() bool {
	return s == StatusSucceeded || s == StatusRejected || s == StatusFailedFinal
}

// CanTransition reports whether the lifecycle allows a request in status from to be
// written with status to. Besides the forward path it allows PROCESSING → PROCESSING
// (a later delivery takes over an expired lease), RECEIVED → PROCESSING (the worker
// got the message before ingest wrote QUEUED), a lottery entry's QUEUED → SUCCEEDED or
// REJECTED at the draw, and a failure from any non-terminal status.
func CanTransition(from, to Status) bool {
	if !from.Valid() || !to.Valid() || from.IsTerminal() {
		return false
	}
	switch to {
	case StatusReceived:
		return false
	case StatusQueued:
		return from == StatusReceived
	case StatusProcessing:
		return true
	case StatusSucceeded, StatusRejected:
		return from == StatusProcessing || from == StatusQueued
	case StatusFailedFinal:
		return true
	}
	return false
}

// UIResult is the coarse result for the front end (seed 001: uiResult).
type UIResult string

// The UI results.
const (
	UIPending  UIResult = "PENDING"
	UISuccess  UIResult = "SUCCESS"
	UIRejected UIResult = "REJECTED"
	UIFailed   UIResult = "FAILED"
)

// UIResultOf returns the UI result that goes with a status.
func UIResultOf(s Status) UIResult {
	switch s {
	case StatusSucceeded:
		return UISuccess
	case StatusRejected:
		return UIRejected
	case StatusFailedFinal:
		return UIFailed
	}
	return UIPending
}

// ResultCode is the detailed outcome of a request, for operators and analysis
// (seed 001: resultCode). A lottery win is ResultSuccess, a loss ResultLotteryLose.
type ResultCode string

// The result codes.
const (
	ResultSuccess             ResultCode = "SUCCESS"
	ResultRejectedCapacity    ResultCode = "REJECTED_CAPACITY"
	ResultRejectedDuplicate   ResultCode = "REJECTED_DUPLICATE"
	ResultLotteryLose         ResultCode = "REJECTED_LOTTERY_LOSE"
	ResultRejectedClosed      ResultCode = "REJECTED_CLOSED"
	ResultFailedIngestEnqueue ResultCode = "FAILED_INGEST_ENQUEUE"
	ResultFailedWorker        ResultCode = "FAILED_WORKER"
	ResultFailedValidation    ResultCode = "FAILED_VALIDATION"
	ResultFailedSerde         ResultCode = "FAILED_SERDE"
)

// UIPhase is the front-end phase of a LOTTERY request (seed 001: uiPhase). It is text
// for the screen, not a backend status.
type UIPhase string

// The lottery phases.
const (
	PhaseCollecting UIPhase = "COLLECTING"
	PhaseDrawing    UIPhase = "DRAWING"
	PhaseAnnounced  UIPhase = "ANNOUNCED"
)

// FailureClass tells whether a failure was worth retrying (seed 001: failureClass).
type FailureClass string

// The failure classes.
const (
	Retryable    FailureClass = "RETRYABLE"
	NonRetryable FailureClass = "NON_RETRYABLE"
)

// MaxErrorMessageLength is the longest errorMessage, in characters, that a request
// stores: a hint for operators, not a stack trace (seed 001).
const MaxErrorMessageLength = 256

// Request is the Request item (PK REQ#<requestId>, SK META): one participation of a
// user in an event, tracked from ingest to its final result. Times are epoch
// milliseconds; a zero time has not happened yet and is not stored.
type Request struct {
	EntityType EntityType `dynamodbav:"entityType"` // REQUEST
	RequestID  string     `dynamodbav:"requestId"`
	EventID    string     `dynamodbav:"eventId"`
	UserID     string     `dynamodbav:"userId"`
	EventType  EventType  `dynamodbav:"eventType"`
	Status     Status     `dynamodbav:"status"`

	// LOTTERY only: the phase for the screen, the cutoff and the announcement time.
	// A request goes from COLLECTING straight to ANNOUNCED when the draw finalises
	// it (one write per entry); DRAWING is the event's phase (EventConfig.Phase) while
	// the draw runs, so a screen that shows it reads the event too.
	UIPhase         UIPhase     `dynamodbav:"uiPhase,omitempty"`
	LotteryCutoffAt EpochMillis `dynamodbav:"lotteryCutoffAt,omitempty"`
	AnnouncedAt     EpochMillis `dynamodbav:"announcedAt,omitempty"`

	UIResult   UIResult   `dynamodbav:"uiResult"`
	ResultCode ResultCode `dynamodbav:"resultCode,omitempty"`

	RequestedAt EpochMillis `dynamodbav:"requestedAt"`
	QueuedAt    EpochMillis `dynamodbav:"queuedAt,omitempty"` // fairness time: the enqueue
	StartedAt   EpochMillis `dynamodbav:"startedAt,omitempty"`
	FinishedAt  EpochMillis `dynamodbav:"finishedAt,omitempty"`

	// Set only on failure. ErrorMessage holds at most MaxErrorMessageLength characters.
	FailureClass FailureClass `dynamodbav:"failureClass,omitempty"`
	ErrorCode    string       `dynamodbav:"errorCode,omitempty"`
	ErrorMessage string       `dynamodbav:"errorMessage,omitempty"`

	// IdempotencyKey is the PK of the request's lock: IDEMP#<eventId>#<userId>.
	IdempotencyKey string `dynamodbav:"idempotencyKey"`

	// The worker that holds the request in PROCESSING, and until when.
	LeaseOwner     string      `dynamodbav:"leaseOwner,omitempty"`
	LeaseExpiresAt EpochMillis `dynamodbav:"leaseExpiresAt,omitempty"`

	// TTL is the expiry in epoch seconds (DynamoDB's TTL unit); 0 keeps the item.
	TTL int64 `dynamodbav:"ttl,omitempty"`
}

// requestItem is a Request as stored: its table key, its index keys once the order
// time is known, and its fields.
type requestItem struct {
	Key
	IndexKeys
	Request
}

// Transition reports a conditional status write. A lost condition is an outcome,
// not an error: Applied is false and Current holds the request as the condition found
// it, read from the same call (ReturnValuesOnConditionCheckFailure ALL_OLD).
type Transition struct {
	Applied bool
	Current *Request // set when !Applied
}

// transition is one conditional status write of a request, with the items written in
// the same transaction.
type transition struct {
	key    RequestKey
	from   []Status                     // the condition: status is one of these (the likeliest first),
	orIn   Status                       // or it is orIn
	orCond *expression.ConditionBuilder // and this holds,
	cond   *expression.ConditionBuilder // and this holds too
	to     Status
	update expression.UpdateBuilder  // status = to is added
	extra  []types.TransactWriteItem // written in the same transaction
	note   string                    // the status log's message
}

// condition is t's whole condition, from any of its statuses.
func (t transition) condition() expression.ConditionBuilder {
	cond := statusIs(t.from[0])
	for _, s := range t.from[1:] {
		cond = cond.Or(statusIs(s))
	}
	if t.orCond != nil {
		cond = cond.Or(statusIs(t.orIn).And(*t.orCond))
	}
	return t.and(cond)
}

// conditionFrom is t's condition from the status from alone.
func (t transition) conditionFrom(from Status) expression.ConditionBuilder {
	if slices.Contains(t.from, from) {
		return t.and(statusIs(from))
	}
	return t.and(statusIs(from).And(*t.orCond))
}

func (t transition) and(cond expression.ConditionBuilder) expression.ConditionBuilder {
	if t.cond != nil {
		return cond.And(*t.cond)
	}
	return cond
}

// allows reports whether t may start from status s, its other conditions aside.
func (t transition) allows(s Status) bool {
	return slices.Contains(t.from, s) || t.orCond != nil && s == t.orIn
}

func statusIs(s Status) expression.ConditionBuilder {
	return expression.Name(attrStatus).Equal(expression.Value(s))
}

const attrStatus = "status"

// apply runs a transition: one UpdateItem when nothing else is written with it, else
// one TransactWriteItems holding the update, the status log entry (Options.StatusLog)
// and t.extra.
//
// The status log names the status a request left, and one write cannot both allow
// several and say which it met. So with Options.StatusLog a transition allowed from
// several statuses is tried from one at a time: the likeliest (t.from[0]) first, then
// the one a failed condition found, when t allows it too. A request met in a less
// likely status costs a second call.
func (c *Client) apply(ctx context.Context, t transition) (Transition, error) {
	// Once: Set adds to the builder's shared operation list, so a second call would
	// write status twice.
	t.update = t.update.Set(expression.Name(attrStatus), expression.Value(t.to))
	if !c.opts.StatusLog {
		return c.applyIf(ctx, t, t.condition(), "")
	}
	from := t.from[0]
	for attempt := 0; ; attempt++ {
		res, err := c.applyIf(ctx, t, t.conditionFrom(from), from)
		if err != nil || res.Applied || res.Current.Status == from || !t.allows(res.Current.Status) || attempt == len(t.from) {
			return res, err // applied, or the condition lost for good (or the status kept moving)
		}
		from = res.Current.Status
	}
}

// applyIf writes t under cond; from is the status the status log names as left.
func (c *Client) applyIf(ctx context.Context, t transition, cond expression.ConditionBuilder, from Status) (Transition, error) {
	expr, err := expression.NewBuilder().
		WithCondition(cond).
		WithUpdate(t.update).
		Build()
	if err != nil {
		return Transition{}, err
	}
	table := aws.String(c.opts.TableName)
	key := avKey(t.key.Key())
	items := t.extra
	if c.opts.StatusLog {
		put, err := c.statusLogPut(t.key.RequestID(), from, t.to, t.note)
		if err != nil {
			return Transition{}, err
		}
		items = append([]types.TransactWriteItem{{Put: put}}, items...)
	}
	if len(items) == 0 {
		_, err := c.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: table, Key: key,
			ConditionExpression:                 expr.Condition(),
			UpdateExpression:                    expr.Update(),
			ExpressionAttributeNames:            expr.Names(),
			ExpressionAttributeValues:           expr.Values(),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			return lostCondition(t.key, ccf.Item)
		}
		if err != nil {
			return Transition{}, err
		}
		return Transition{Applied: true}, nil
	}
	update := types.TransactWriteItem{Update: &types.Update{
		TableName: table, Key: key,
		ConditionExpression:                 expr.Condition(),
		UpdateExpression:                    expr.Update(),
		ExpressionAttributeNames:            expr.Names(),
		ExpressionAttributeValues:           expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}
	_, err = c.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: append([]types.TransactWriteItem{update}, items...),
	})
	if reasons := cancellationReasons(err); conditionFailed(reasons, 0) {
		return lostCondition(t.key, reasons[0].Item)
	}
	if err != nil {
		return Transition{}, err
	}
	return Transition{Applied: true}, nil
}

// lostCondition reads the request a failed condition returned; none means there is no
// such request.
func lostCondition(key RequestKey, old map[string]types.AttributeValue) (Transition, error) {
	if old == nil {
		return Transition{}, fmt.Errorf("%w: request %s", ErrNotFound, key.RequestID())
	}
	var item requestItem
	if err := attributevalue.UnmarshalMap(old, &item); err != nil {
		return Transition{}, err
	}
	return Transition{Current: &item.Request}, nil
}

// GetRequest reads one request: seed 003's "request detail" row (user) and "requestId
// search" row (admin), GetItem PK REQ#<requestId>, SK META, eventually consistent (a
// screen that polls may see a status a moment late). An unknown request is
// ErrNotFound; who may see which request is the caller's decision.
func (c *Client) GetRequest(ctx context.Context, requestID string) (*Request, error) {
	return c.getRequest(ctx, requestID, false)
}

func (c *Client) getRequest(ctx context.Context, requestID string, consistent bool) (*Request, error) {
	key, err := NewRequestKey(requestID)
	if err != nil {
		return nil, err
	}
	var item requestItem
	found, err := c.getItem(ctx, key.Key(), consistent, &item)
	switch {
	case err != nil:
		return nil, fmt.Errorf("get request %s: %w", requestID, err)
	case !found:
		return nil, fmt.Errorf("%w: request %s", ErrNotFound, requestID)
	}
	return &item.Request, nil
}

// MarkQueued records that a request's message is on the queue: seed 003's "queuing
// succeeded" row, UpdateItem PK REQ#<requestId>, SK META, SET status = QUEUED,
// queuedAt, and the index keys GSI1PK/GSI1SK/GSI2PK/GSI2SK from queuedAt (written
// once, never changed); condition: status = RECEIVED. When the condition fails the
// worker got there first (it backfills queuedAt from the message's send time): the
// Transition is not applied, nothing changes, and there is no error. A request that
// does not exist is ErrNotFound.
func (c *Client) MarkQueued(ctx context.Context, m Message, queuedAt EpochMillis) (Transition, error) {
	key, err := NewRequestKey(m.RequestID)
	if err != nil {
		return Transition{}, err
	}
	index, err := NewIndexKeys(m.EventID, m.UserID, m.RequestID, queuedAt)
	if err != nil {
		return Transition{}, err
	}
	t, err := c.apply(ctx, transition{
		key: key, from: []Status{StatusReceived}, to: StatusQueued,
		update: setIndexKeys(expression.Set(expression.Name("queuedAt"), expression.Value(queuedAt)), index),
		note:   "message sent",
	})
	if err != nil {
		return t, fmt.Errorf("mark queued %s: %w", m.RequestID, err)
	}
	return t, nil
}

// MarkEnqueueFailed ends a request whose message could not be sent: seed 003's
// "queuing failed" row, UpdateItem PK REQ#<requestId>, SK META, SET status =
// FAILED_FINAL, uiResult FAILED, resultCode and errorCode FAILED_INGEST_ENQUEUE,
// failureClass RETRYABLE, errorMessage (cause, at most 256 characters), finishedAt,
// and the index keys from requestedAt (it has no queuedAt), so it still shows in the
// lists; condition: status = RECEIVED. In the same TransactWriteItems it deletes the
// user's IdempotencyLock (condition: the lock names this request), so the user's next
// click makes a fresh request while this one stays on record. When the status
// condition fails the message got through after all (the worker has the request):
// the Transition is not applied and nothing changes.
func (c *Client) MarkEnqueueFailed(ctx context.Context, m Message, cause error) (Transition, error) {
	key, err := NewRequestKey(m.RequestID)
	if err != nil {
		return Transition{}, err
	}
	lock, err := NewLockKey(m.EventID, m.UserID)
	if err != nil {
		return Transition{}, err
	}
	index, err := NewIndexKeys(m.EventID, m.UserID, m.RequestID, m.RequestedAt)
	if err != nil {
		return Transition{}, err
	}
	lockNamesRequest, err := expression.NewBuilder().
		WithCondition(expression.Name("requestId").Equal(expression.Value(m.RequestID))).Build()
	if err != nil {
		return Transition{}, err
	}
	release := types.TransactWriteItem{Delete: &types.Delete{
		TableName:                 aws.String(c.opts.TableName),
		Key:                       avKey(lock.Key()),
		ConditionExpression:       lockNamesRequest.Condition(),
		ExpressionAttributeNames:  lockNamesRequest.Names(),
		ExpressionAttributeValues: lockNamesRequest.Values(),
	}}
	update := failure(expression.UpdateBuilder{}, c.now(), ResultFailedIngestEnqueue, Retryable,
		string(ResultFailedIngestEnqueue), errorText(cause))
	t, err := c.apply(ctx, transition{
		key: key, from: []Status{StatusReceived}, to: StatusFailedFinal,
		update: setIndexKeys(update, index),
		extra:  []types.TransactWriteItem{release},
		note:   "enqueue failed",
	})
	if err != nil {
		return t, fmt.Errorf("mark enqueue failed %s: %w", m.RequestID, err)
	}
	return t, nil
}

// failure adds the fields of a FAILED_FINAL request to an update.
func failure(u expression.UpdateBuilder, now EpochMillis, code ResultCode, class FailureClass, errorCode, message string) expression.UpdateBuilder {
	return u.
		Set(expression.Name("uiResult"), expression.Value(UIFailed)).
		Set(expression.Name("resultCode"), expression.Value(code)).
		Set(expression.Name("failureClass"), expression.Value(class)).
		Set(expression.Name("errorCode"), expression.Value(errorCode)).
		Set(expression.Name("errorMessage"), expression.Value(message)).
		Set(expression.Name("finishedAt"), expression.Value(now))
}

// setIndexKeys adds the index keys to an update.
func setIndexKeys(u expression.UpdateBuilder, k IndexKeys) expression.UpdateBuilder {
	return u.
		Set(expression.Name(attrGSI1PK), expression.Value(k.GSI1PK)).
		Set(expression.Name(attrGSI1SK), expression.Value(k.GSI1SK)).
		Set(expression.Name(attrGSI2PK), expression.Value(k.GSI2PK)).
		Set(expression.Name(attrGSI2SK), expression.Value(k.GSI2SK))
}

// errorText returns err's message cut to MaxErrorMessageLength characters.
func errorText(err error) string {
	if err == nil {
		return ""
	}
	msg := []rune(err.Error())
	if len(msg) > MaxErrorMessageLength {
		msg = append(msg[:MaxErrorMessageLength-1], '…')
	}
	return string(msg)
}
