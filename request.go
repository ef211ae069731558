package asyncevent

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
