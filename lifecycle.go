package asyncevent

import (
	"slices"
	"strings"
	"time"
)

// The vocabulary of a request's lifecycle: event types, statuses, results, phases.
// The writes that move a request from one status to the next are rows, declared
// beside the items they write (rows.go); CanTransition reads them.

// EventType is the kind of an event (stored as eventType).
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

// Status is the backend state of a request (stored as status). A request moves
// RECEIVED → QUEUED → PROCESSING → SUCCEEDED | REJECTED | FAILED_FINAL; every write of
// it is conditional on the current status, and a terminal status never changes again.
// A FIRST_COME event with holds (EventSettings.HoldFor) adds two states that wait for
// someone else: a winner is HELD until it is confirmed (SUCCEEDED), released or
// expired (REJECTED), and a loser of a sold-out event is WAITLISTED until a seat given
// back makes it HELD, or the event closes (REJECTED).
type Status string

// The request statuses.
const (
	StatusReceived    Status = "RECEIVED"     // written at ingest with the lock; queuedAt fixed
	StatusQueued      Status = "QUEUED"       // the message is on the queue
	StatusProcessing  Status = "PROCESSING"   // a worker holds the lease
	StatusSucceeded   Status = "SUCCEEDED"    // won: first-come seat or lottery win
	StatusRejected    Status = "REJECTED"     // lost: capacity, lottery, closed, duplicate
	StatusFailedFinal Status = "FAILED_FINAL" // will not be retried
	StatusHeld        Status = "HELD"         // holds a seat until holdExpiresAt: confirm, release or expiry ends it
	StatusWaitlisted  Status = "WAITLISTED"   // sold out: waits for a seat given back, until the event closes
)

// statuses are the statuses, along the lifecycle.
var statuses = []Status{StatusReceived, StatusQueued, StatusProcessing, StatusHeld, StatusWaitlisted,
	StatusSucceeded, StatusRejected, StatusFailedFinal}

// Valid reports whether s is one of the statuses.
func (s Status) Valid() bool { return slices.Contains(statuses, s) }

// statusNames lists the statuses for an error message: "RECEIVED, QUEUED, …".
func statusNames() string {
	names := make([]string, len(statuses))
	for i, s := range statuses {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
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
	case StatusWaitlisted:
		return 3
	case StatusHeld:
		return 4
	}
	return 5
}

// IsTerminal reports whether s is final: SUCCEEDED, REJECTED or FAILED_FINAL.
func (s Status) IsTerminal() bool {
	return s == StatusSucceeded || s == StatusRejected || s == StatusFailedFinal
}

// decided reports whether the worker is done with a request in status s: it is final,
// or HELD or WAITLISTED, which only a confirm, a release or the hold sweep moves on.
func (s Status) decided() bool {
	return s.IsTerminal() || s == StatusHeld || s == StatusWaitlisted
}

// UIResult is the coarse result for the front end (stored as uiResult).
type UIResult string

// The UI results.
const (
	UIPending  UIResult = "PENDING"
	UISuccess  UIResult = "SUCCESS"
	UIRejected UIResult = "REJECTED"
	UIFailed   UIResult = "FAILED"
	// With holds (EventSettings.HoldFor): the seat is the user's until holdExpiresAt,
	// once paid for; and the user waits for a seat given back.
	UIHeld       UIResult = "HELD"
	UIWaitlisted UIResult = "WAITLISTED"
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
	case StatusHeld:
		return UIHeld
	case StatusWaitlisted:
		return UIWaitlisted
	}
	return UIPending
}

// ResultCode is the detailed outcome of a request, for operators and analysis
// (stored as resultCode). A lottery win is ResultSuccess, a loss ResultLotteryLose.
type ResultCode string

// The result codes.
const (
	ResultSuccess           ResultCode = "SUCCESS"
	ResultRejectedCapacity  ResultCode = "REJECTED_CAPACITY"
	ResultRejectedDuplicate ResultCode = "REJECTED_DUPLICATE"
	ResultLotteryLose       ResultCode = "REJECTED_LOTTERY_LOSE"
	ResultRejectedClosed    ResultCode = "REJECTED_CLOSED"
	// ResultNotDrawn: a lottery request queued by the cutoff (by its own ingest's
	// clock) that the draw's record does not name: its put reached the table after
	// the draw read its entries (a slow network, a frozen process, a skewed clock),
	// or GSI2 did not show it yet. The record decides the draw, and this request is
	// answered so, never left waiting.
	ResultNotDrawn ResultCode = "REJECTED_NOT_DRAWN"
	// ResultLate: a request of a ranked event (EventSettings.Admission
	// AdmissionRanked) that the admission had passed without seeing (its put, or
	// its GSI2 entry, landed after the admission read its place in the line: a slow
	// network, a frozen process, an ingest clock behind) and that found no seat left
	// once the admission had begun refusing. It is answered so, never left waiting,
	// and it is no inversion of the line: the admission never saw it.
	ResultLate                ResultCode = "REJECTED_LATE"
	ResultFailedIngestEnqueue ResultCode = "FAILED_INGEST_ENQUEUE"
	ResultFailedWorker        ResultCode = "FAILED_WORKER"
	ResultFailedValidation    ResultCode = "FAILED_VALIDATION"
	ResultFailedSerde         ResultCode = "FAILED_SERDE"
	// A hold that ended without payment: given up (Release), or run out (the hold
	// sweep). Its seat went to the waitlist.
	ResultReleased    ResultCode = "REJECTED_RELEASED"
	ResultHoldExpired ResultCode = "REJECTED_HOLD_EXPIRED"
)

// UIPhase is the front-end phase of a LOTTERY request (stored as uiPhase). It is text
// for the screen, not a backend status.
type UIPhase string

// The lottery phases.
const (
	PhaseCollecting UIPhase = "COLLECTING"
	PhaseDrawing    UIPhase = "DRAWING"
	PhaseAnnounced  UIPhase = "ANNOUNCED"
)

// FailureClass tells whether a failure was worth retrying (stored as failureClass).
type FailureClass string

// The failure classes.
const (
	Retryable    FailureClass = "RETRYABLE"
	NonRetryable FailureClass = "NON_RETRYABLE"
)

// maxErrorMessageLength is the longest errorMessage, in characters, that a request
// stores: a hint for operators, not a stack trace.
const maxErrorMessageLength = 256

// Action is an operator's control of an event, as its audit trail records it
// (AuditEntry.Action, stored as action).
type Action string

// The actions of the audit trail.
const (
	ActionClose        Action = "CLOSE"
	ActionPause        Action = "PAUSE"
	ActionResume       Action = "RESUME"
	ActionExtendEnd    Action = "EXTEND_END"
	ActionExtendCutoff Action = "EXTEND_CUTOFF"
	ActionExtendStart  Action = "EXTEND_START" // a pre-queued event's start: its pre-queue takes clicks longer
	ActionAddCapacity  Action = "ADD_CAPACITY"
	ActionCancel       Action = "CANCEL"
)

// ResultCancelled is the result code of a FIRST_COME participation an operator
// cancelled (CancelRequest): its seat went back to the event's pool.
const ResultCancelled ResultCode = "REJECTED_CANCELLED"

// OutcomeKind says what became of a message.
type OutcomeKind string

// The outcomes of a message.
const (
	OutcomeSucceeded  OutcomeKind = "SUCCEEDED"    // the request won; message deleted
	OutcomeRejected   OutcomeKind = "REJECTED"     // the request lost; message deleted
	OutcomeCollected  OutcomeKind = "COLLECTED"    // a lottery entry is in; message deleted
	OutcomeLeftToDraw OutcomeKind = "LEFT_TO_DRAW" // a lottery entry met after its draw began, or a pre-queue's entry, which ServePrequeue decides; message deleted
	// OutcomeWaitingForPrequeue: a click of a sale whose pre-queue is not served yet;
	// the message comes back later.
	OutcomeWaitingForPrequeue OutcomeKind = "WAITING_FOR_PREQUEUE"
	OutcomeFailed             OutcomeKind = "FAILED_FINAL" // the request failed for good
	OutcomeDuplicate          OutcomeKind = "DUPLICATE"    // the request was already final; message deleted
	OutcomeRetry              OutcomeKind = "RETRY"        // a retryable failure; message back later
	OutcomeThrottled          OutcomeKind = "THROTTLED"    // DynamoDB refused a call for throughput after every retry (Err matches ErrThrottled); message back later, the lease left to expire
	OutcomeLeaseHeld          OutcomeKind = "LEASE_HELD"   // another worker holds the request; message back after its lease
	OutcomeLostLease          OutcomeKind = "LOST_LEASE"   // another worker took the request over; message left to it
	OutcomeMalformed          OutcomeKind = "MALFORMED"    // the body does not decode; left for the dead-letter queue
	OutcomeDeadLetter         OutcomeKind = "DEAD_LETTER"  // receives used up: request FAILED_FINAL, message released to the dead-letter queue
	OutcomeNotFound           OutcomeKind = "NOT_FOUND"    // no such request; message deleted
	OutcomeHeld               OutcomeKind = "HELD"         // the request holds a seat until it is confirmed (holds); message deleted
	OutcomeWaitlisted         OutcomeKind = "WAITLISTED"   // sold out: the request waits for a seat given back (holds); message deleted
	outcomeUnavailable        OutcomeKind = ""
)

// leftTheLine reports whether the outcome is a request's first result: it no longer
// waits in line (the event's progress counts it).
func (k OutcomeKind) leftTheLine() bool {
	switch k {
	case OutcomeSucceeded, OutcomeRejected, OutcomeHeld, OutcomeWaitlisted, OutcomeFailed, OutcomeDeadLetter:
		return true
	}
	return false
}

// Outcome reports what became of one message, for ProcessOptions.OnOutcome.
type Outcome struct {
	Kind         OutcomeKind
	MessageID    string
	RequestID    string
	EventID      string
	ResultCode   ResultCode // for a final request
	ReceiveCount int
	Duration     time.Duration
	Err          error // the failure, for RETRY, THROTTLED, FAILED_FINAL, MALFORMED, DEAD_LETTER
}
