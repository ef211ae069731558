package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/internal/seatclaim"
)

// Request is a participation as a caller reads it (GetRequest, the request lists,
// Submit's Participation, the worker's Transition): one participation of a user in
// an event, tracked from ingest to its final result. Times are epoch milliseconds; a
// zero time has not happened yet. The Request item (PK REQ#<requestId>, SK META)
// stores these fields under the same names, beside the library's bookkeeping (its
// lock's key, the worker's lease, its seat's place, its expiry), which no caller's
// type carries.
type Request struct {
	RequestID string    `dynamodbav:"requestId"`
	EventID   string    `dynamodbav:"eventId"`
	UserID    string    `dynamodbav:"userId"`
	EventType EventType `dynamodbav:"eventType"`
	Status    Status    `dynamodbav:"status"`

	// LOTTERY only: the phase for the screen, the cutoff and the announcement time.
	// A request goes from COLLECTING straight to ANNOUNCED when the draw finalises
	// it (one write per entry); DRAWING is the event's phase (Event.Phase) while
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

	// Set only on failure. ErrorMessage holds at most 256 characters.
	FailureClass FailureClass `dynamodbav:"failureClass,omitempty"`
	ErrorCode    string       `dynamodbav:"errorCode,omitempty"`
	ErrorMessage string       `dynamodbav:"errorMessage,omitempty"`

	// HoldExpiresAt, of a HELD request (an event with holds, EventSettings.HoldFor),
	// is when its hold runs out: Confirm before it makes it SUCCEEDED; the hold sweep
	// after it gives its seat to the waitlist. Kept once the hold ended (confirmed,
	// released or expired): the request held a seat.
	HoldExpiresAt EpochMillis `dynamodbav:"holdExpiresAt,omitempty"`
	// ServedAt is when a WAITLISTED request got a seat given back (it then holds no
	// seat token on a capacity shard: its seat came from the event's Returns item).
	ServedAt EpochMillis `dynamodbav:"servedAt,omitempty"`

	// Queue, set by GetRequest on a FIRST_COME request that waits in line (RECEIVED
	// or QUEUED), is its estimated place in line and wait; not stored.
	Queue *QueueEstimate `dynamodbav:"-"`

	// Prequeue, set by GetRequest on an entry of a first-come event's pre-queue, says
	// where it stands in the drawn order: while it waits (RECEIVED or QUEUED; Queue
	// is then unset, the order is drawn, not queued), and once decided, the place
	// its result came from. Not stored.
	Prequeue *PrequeuePlace `dynamodbav:"-"`

	// Waitlist, set by GetRequest on a WAITLISTED request (unless the client counts
	// no progress, Options.ProgressEvery < 0), is its place on the event's waitlist
	// and when the waitlist ends. Not stored.
	Waitlist *WaitlistPlace `dynamodbav:"-"`

	// Lease, set by GetRequest and the request lists on a PROCESSING request, is the
	// worker that holds it and until when, for an operator's screen (a lease past its
	// expiry waits for a takeover); nil otherwise.
	Lease *LeaseState `dynamodbav:"-"`
}

// LeaseState is the lease a worker holds on a PROCESSING request: the delivery that
// holds it (Lease.Owner) and when it runs out unless extended.
type LeaseState struct {
	Owner     string
	ExpiresAt EpochMillis
}

// storedRequest is the Request item's fields as stored: the Request and the
// library's bookkeeping on it.
type storedRequest struct {
	EntityType entity.Type `dynamodbav:"entityType"` // REQUEST
	Request

	// IdempotencyKey is the PK of the request's lock: IDEMP#<eventId>#<userId>.
	IdempotencyKey string `dynamodbav:"idempotencyKey"`

	// The worker that holds the request in PROCESSING, and until when.
	LeaseOwner     string      `dynamodbav:"leaseOwner,omitempty"`
	LeaseExpiresAt EpochMillis `dynamodbav:"leaseExpiresAt,omitempty"`

	// SeatShard, for a FIRST_COME request a worker started, is the capacity shard its
	// seat is claimed on (0 for an event without capacity shards): written by its
	// first start, moved only under its lease and before a claim elsewhere. On a
	// SUCCEEDED request it is the shard that holds its seat.
	SeatShard *int `dynamodbav:"seatShard,omitempty"`
	// SeatEpoch counts the moves of the request's claim from one seat place to
	// another: each move closes the place it leaves to the claims of the epoch before
	// (seat.go), so that none of them lands there later.
	SeatEpoch int `dynamodbav:"seatEpoch,omitempty"`

	// WaitlistedBy names the call whose write put the request on its waitlist, and
	// LeftBy the call (a Release) whose write took it off, so that a call can tell its
	// own write, applied with its answer lost, from another's, and count it for the
	// waitlist's places.
	WaitlistedBy string `dynamodbav:"waitlistedBy,omitempty"`
	LeftBy       string `dynamodbav:"leftBy,omitempty"`

	// TTL is the expiry in epoch seconds (DynamoDB's TTL unit); 0 keeps the item.
	TTL int64 `dynamodbav:"ttl,omitempty"`
}

// The attribute names of a Request item that its rows and readers name; a test holds
// them to the dynamodbav tags above.
const (
	attrRequestID      = "requestId"
	attrUserID         = "userId"
	attrStatus         = "status"
	attrUIPhase        = "uiPhase"
	attrUIResult       = "uiResult"
	attrResultCode     = "resultCode"
	attrRequestedAt    = "requestedAt"
	attrQueuedAt       = "queuedAt"
	attrStartedAt      = "startedAt"
	attrFinishedAt     = "finishedAt"
	attrFailureClass   = "failureClass"
	attrErrorCode      = "errorCode"
	attrErrorMessage   = "errorMessage"
	attrLeaseOwner     = "leaseOwner"
	attrLeaseExpiresAt = "leaseExpiresAt"
	attrSeatShard      = "seatShard"
	attrSeatEpoch      = "seatEpoch"
	attrHoldExpiresAt  = "holdExpiresAt"
	attrServedAt       = "servedAt"
	attrWaitlistedBy   = "waitlistedBy"
	attrLeftBy         = "leftBy"
	attrTTL            = "ttl" // every item's expiry; the table's TTL attribute
)

// requestItem is a Request as stored: its table key, its index keys (written by its
// put, from its queuedAt) and its fields.
type requestItem struct {
	Key
	IndexKeys
	storedRequest
}

// RequestRef names a request by the IDs its keys are built from: the request's own
// key, its lock's, and its index keys.
type RequestRef struct {
	RequestID string
	EventID   string
	UserID    string
}

// Ref returns the reference of the request.
func (r *Request) Ref() RequestRef {
	return RequestRef{RequestID: r.RequestID, EventID: r.EventID, UserID: r.UserID}
}

// Lease is a worker's hold on a PROCESSING request: Owner names the delivery that
// holds it (each delivery should have its own, so that two deliveries of one message
// never both hold the request), and each write that takes or extends it makes it last
// Duration.
type Lease struct {
	Owner    string
	Duration time.Duration
}

// The params of the request's rows: the values each call fills in.
const (
	pQueuedAt       param = "queuedAt"
	pLeaseOwner     param = "leaseOwner"
	pLeaseExpiresAt param = "leaseExpiresAt"
	pResultCode     param = "resultCode"
	pFailureClass   param = "failureClass"
	pErrorCode      param = "errorCode"
	pErrorMessage   param = "errorMessage"
	pRequestID      param = "requestId"
	pWaitlistedBy   param = "waitlistedBy"
	pLeftBy         param = "leftBy"
)

// leaseHeld: the request is held under the caller's lease (with status = PROCESSING).
var leaseHeld = compare(expression.Name(attrLeaseOwner).Equal, pLeaseOwner)

// leaseExpired: the lease of a PROCESSING request has run out.
var leaseExpired = compare(expression.Name(attrLeaseExpiresAt).LessThanEqual, pNow)

// leaseFree: no other worker holds the request under a live lease.
var leaseFree = either(fixed(expression.Name(attrStatus).NotEqual(expression.Value(StatusProcessing))), leaseHeld, leaseExpired)

// failable: a final failure may end the request: no other worker holds it under a
// live lease, it is no lottery entry queued by its cutoff, and it is no first-come
// request unless the caller holds its lease (leaseFree AND
// notAnEntry AND notSeated): only the lease holder can make sure that no seat is
// spent for it.
var failable = all(leaseFree, notAnEntry, notSeated)

// notSeated: the request is no first-come one, or the caller holds its lease (a
// first-come request may hold a seat from before any write on it, its home claim):
// eventType <> FIRST_COME OR leaseOwner = :leaseOwner.
var notSeated = either(fixed(expression.Name(attrEventType).NotEqual(expression.Value(FirstCome))), leaseHeld)

// heldUnderLease: status = PROCESSING AND leaseOwner = :leaseOwner.
var heldUnderLease = all(fixed(expression.Name(attrStatus).Equal(expression.Value(StatusProcessing))), leaseHeld)

// finalSets are the sets of a final result.
func finalSets(ui UIResult, code ResultCode) []set {
	return []set{setTo(attrUIResult, ui), setTo(attrResultCode, code), setTo(attrFinishedAt, pNow)}
}

// The request's rows.
var (
	createRequestRow = row{
		name: "create request", method: "Rows.Participate", item: entity.Request, op: opPut, cond: notExists,
	}
	incompleteRequestRow = row{
		name: "end incomplete request", method: "Submit", item: entity.Request, op: opPut, cond: notExists,
	}
	markQueuedRow = row{
		name: "mark queued", method: "Rows.MarkQueued", item: entity.Request, op: opUpdate,
		from: []leave{{status: StatusReceived}}, to: StatusQueued, loggedAt: pQueuedAt,
	}
	enqueueFailedRow = row{
		name: "enqueue failure", method: "Rows.MarkEnqueueFailed", item: entity.Request, op: opUpdate,
		from: []leave{{status: StatusReceived}}, to: StatusFailedFinal,
		sets: []set{
			setTo(attrUIResult, UIFailed), setTo(attrResultCode, ResultFailedIngestEnqueue),
			setTo(attrFailureClass, Retryable), setTo(attrErrorCode, string(ResultFailedIngestEnqueue)),
			setTo(attrErrorMessage, pErrorMessage), setTo(attrFinishedAt, pNow),
		},
		// Its message never reached the queue: no queuedAt (seed 003, pitfall 2). Its
		// index keys, written with its put, stay: they never change.
		removes: []string{attrQueuedAt},
	}
	startProcessingRow = row{
		name: "start processing", method: "Rows.StartProcessing", item: entity.Request, op: opUpdate,
		from: []leave{{status: StatusQueued}, {status: StatusReceived}, {status: StatusProcessing, when: leaseExpired}},
		to:   StatusProcessing,
		sets: []set{
			setTo(attrStartedAt, pNow), setTo(attrLeaseOwner, pLeaseOwner), setTo(attrLeaseExpiresAt, pLeaseExpiresAt),
			setIfMissing(attrSeatShard, pSeatShard), setIfMissing(attrSeatEpoch, pSeatEpoch),
		},
	}
	extendLeaseRow = row{
		name: "lease heartbeat", method: "Processor.ProcessOne", item: entity.Request, op: opUpdate, cond: heldUnderLease,
		sets: []set{setTo(attrLeaseExpiresAt, pLeaseExpiresAt)},
	}
	capacityRejectedRow = row{
		name: "first-come capacity rejected", method: "Rows.MarkCapacityRejected", item: entity.Request, op: opUpdate,
		from: []leave{{status: StatusProcessing}}, guard: leaseHeld, to: StatusRejected,
		sets: finalSets(UIRejected, ResultRejectedCapacity),
	}
	soldOutRow = row{
		name: "first-come sold out", method: "Rows.RejectSoldOut", item: entity.Request, op: opUpdate,
		from: []leave{{status: StatusQueued}, {status: StatusReceived}}, to: StatusRejected,
		sets: append(finalSets(UIRejected, ResultRejectedCapacity), setTo(attrStartedAt, pNow)),
	}
	// A request of a ranked event that its admission passed without seeing, refused
	// for want of a seat: ResultLate, not REJECTED_CAPACITY (docs/design.md, "Ranked
	// admission").
	lateRejectedRow = row{
		name: "ranked: late rejected (lease)", method: "Processor.ProcessOne", item: entity.Request, op: opUpdate,
		from: []leave{{status: StatusProcessing}}, guard: leaseHeld, to: StatusRejected,
		sets: finalSets(UIRejected, ResultLate),
	}
	lateSoldOutRow = row{
		name: "ranked: late rejected", method: "Processor.ProcessOne", item: entity.Request, op: opUpdate,
		from: []leave{{status: StatusQueued}, {status: StatusReceived}}, to: StatusRejected,
		sets: append(finalSets(UIRejected, ResultLate), setTo(attrStartedAt, pNow)),
	}
	requestAbsentRow = row{
		name: "release lock: request absent", method: "Rows.Participate", item: entity.Request, op: opCheck, cond: notExists,
	}
	bindSeatRow = row{
		name: "first-come seat bound", method: "Processor.ProcessOne", item: entity.Request, op: opUpdate,
		from: []leave{
			{status: StatusQueued}, {status: StatusReceived}, {status: StatusProcessing, when: atHome},
		},
		to: StatusSucceeded,
		sets: append(finalSets(UISuccess, ResultSuccess),
			setIfMissing(attrStartedAt, pStartedAt), setIfMissing(attrSeatShard, pSeatShard)),
		removes: []string{attrLeaseOwner, attrLeaseExpiresAt}, // no lease ended it
	}
	takeSeatRow = row{
		name: "first-come success", method: "Rows.ClaimSeat", item: entity.Request, op: opUpdate,
		from: []leave{{status: StatusProcessing}}, guard: leaseHeld, to: StatusSucceeded,
		sets: finalSets(UISuccess, ResultSuccess),
	}
	moveSeatRow = row{
		name: "first-come seat moved", method: "Rows.ClaimSeat", item: entity.Request, op: opUpdate, cond: all(heldUnderLease, atEpoch),
		sets: []set{setTo(attrSeatShard, pSeatShard), setTo(attrSeatEpoch, pSeatEpoch)},
	}
	bindHoldRow = row{
		name: "first-come seat held", method: "Processor.ProcessOne", item: entity.Request, op: opUpdate,
		from: []leave{
			{status: StatusQueued}, {status: StatusReceived}, {status: StatusProcessing, when: atHome},
		},
		to:      StatusHeld,
		sets:    heldSets(setIfMissing(attrStartedAt, pStartedAt), setIfMissing(attrSeatShard, pSeatShard)),
		removes: []string{attrLeaseOwner, attrLeaseExpiresAt},
	}
	takeHoldRow = row{
		name: "first-come held", method: "Rows.ClaimSeat", item: entity.Request, op: opUpdate,
		from: []leave{{status: StatusProcessing}}, guard: leaseHeld, to: StatusHeld,
		sets: heldSets(),
	}
	waitlistRow = row{
		name: "first-come waitlisted", method: "Rows.RejectSoldOut", item: entity.Request, op: opUpdate,
		from: []leave{{status: StatusQueued}, {status: StatusReceived}}, to: StatusWaitlisted,
		sets: []set{setTo(attrUIResult, UIWaitlisted), setTo(attrStartedAt, pNow), setTo(attrWaitlistedBy, pWaitlistedBy)},
	}
	waitlistLeasedRow = row{
		name: "first-come waitlisted (lease)", method: "Rows.MarkCapacityRejected", item: entity.Request, op: opUpdate,
		from: []leave{{status: StatusProcessing}}, guard: leaseHeld, to: StatusWaitlisted,
		sets: []set{setTo(attrUIResult, UIWaitlisted), setTo(attrWaitlistedBy, pWaitlistedBy)},
	}
	confirmRow = row{
		name: "hold confirmed", method: "Confirm", item: entity.Request, op: opUpdate,
		from: []leave{{status: StatusHeld, when: holdRunning}}, to: StatusSucceeded,
		sets: finalSets(UISuccess, ResultSuccess),
	}
	releaseRow = row{
		name: "hold released", method: "Release", item: entity.Request, op: opUpdate,
		from: []leave{{status: StatusHeld, when: thisHold}}, to: StatusRejected,
		sets: finalSets(UIRejected, ResultReleased),
	}
	waitlistLeftRow = row{
		name: "waitlist left", method: "Release", item: entity.Request, op: opUpdate,
		from: []leave{{status: StatusWaitlisted}}, to: StatusRejected,
		sets: append(finalSets(UIRejected, ResultReleased), setTo(attrLeftBy, pLeftBy)),
	}
	expireRow = row{
		name: "hold expired", method: "SweepHolds", item: entity.Request, op: opUpdate,
		from: []leave{{status: StatusHeld, when: thisHoldRanOut}}, to: StatusRejected,
		sets: finalSets(UIRejected, ResultHoldExpired),
	}
	serveRow = row{
		name: "waitlist served", method: "SweepHolds", item: entity.Request, op: opUpdate,
		from: []leave{{status: StatusWaitlisted}}, to: StatusHeld,
		sets: heldSets(setTo(attrServedAt, pNow)),
	}
	waitlistClosedRow = row{
		name: "waitlist closed", method: "SweepHolds", item: entity.Request, op: opUpdate,
		from: []leave{{status: StatusWaitlisted}}, to: StatusRejected,
		sets: finalSets(UIRejected, ResultRejectedCapacity),
	}
	lotteryCollectRow = row{
		name: "lottery entry collected", method: "Processor.ProcessOne, Draw", item: entity.Request, op: opUpdate,
		from: []leave{{status: StatusQueued}, {status: StatusReceived}}, guard: notCollected, to: StatusQueued,
		sets: []set{setTo(attrStartedAt, pNow)},
	}
	lotteryWinRow = row{
		name: "lottery result (win)", method: "Draw", item: entity.Request, op: opUpdate,
		from: []leave{{status: StatusQueued}, {status: StatusReceived}}, to: StatusSucceeded,
		sets: append(finalSets(UISuccess, ResultSuccess), setTo(attrUIPhase, PhaseAnnounced), setTo(attrAnnouncedAt, pNow)),
	}
	lotteryLoseRow = row{
		name: "lottery result (lose)", method: "Draw", item: entity.Request, op: opUpdate,
		from: []leave{{status: StatusQueued}, {status: StatusReceived}}, to: StatusRejected,
		sets: append(finalSets(UIRejected, ResultLotteryLose), setTo(attrUIPhase, PhaseAnnounced), setTo(attrAnnouncedAt, pNow)),
	}
	lotteryNotDrawnRow = row{
		name: "lottery result (not drawn)", method: "Draw, Processor.ProcessOne", item: entity.Request, op: opUpdate,
		from: []leave{{status: StatusQueued}, {status: StatusReceived}}, guard: queuedByCutoff, to: StatusRejected,
		sets: append(finalSets(UIRejected, ResultNotDrawn), setTo(attrUIPhase, PhaseAnnounced), setTo(attrAnnouncedAt, pNow)),
	}
	lotteryClosedRow = row{
		name: "lottery result (closed)", method: "Rows.MarkClosed", item: entity.Request, op: opUpdate,
		from: []leave{{status: StatusQueued}, {status: StatusReceived}}, guard: queuedAfterCutoff, to: StatusRejected,
		sets: finalSets(UIRejected, ResultRejectedClosed),
	}
	entryFailureRow = row{
		name: "entry failure", method: "Processor.ProcessOne", item: entity.Request, op: opUpdate,
		from: []leave{{status: StatusQueued}, {status: StatusReceived}}, guard: all(queuedByCutoff, notCollected), to: StatusFailedFinal,
		sets: failureSets,
	}
	cancelRow = row{
		name: "participation cancelled", method: "CancelRequest", item: entity.Request, op: opUpdate,
		from: []leave{{status: StatusSucceeded, when: firstComeRequest}}, to: StatusRejected,
		sets: []set{setTo(attrUIResult, UIRejected), setTo(attrResultCode, ResultCancelled), setTo(attrFinishedAt, pNow)},
	}
	finalFailureRow = row{
		name: "final failure", method: "Rows.MarkFailed", item: entity.Request, op: opUpdate,
		from: []leave{{status: StatusProcessing}, {status: StatusQueued}, {status: StatusReceived}}, guard: failable,
		to:   StatusFailedFinal,
		sets: failureSets,
	}
)

// GetRequest reads one request: the "get request" row of users and admins, GetItem
// PK REQ#<requestId>, SK META, eventually consistent (a screen that polls may see a
// status a moment late). A FIRST_COME request that waits in line (RECEIVED or
// QUEUED) also gets its place in line, Request.Queue, from the event's progress (the
// "event progress" row), unless the client counts none (Options.ProgressEvery < 0);
// a failed read of the progress leaves Queue nil. An entry of a pre-queue gets its
// place in the drawn order, Request.Prequeue, waiting or decided. A WAITLISTED request gets its
// place on the waitlist, Request.Waitlist, from the same items (every item of the
// event, read at most every 5 × Options.ProgressCacheTTL), likewise. An unknown request is ErrNotFound;
// who may see which request is the caller's decision.
func (c *Client) GetRequest(ctx context.Context, requestID string) (*Request, error) {
	r, err := c.getRequest(ctx, requestID, false)
	if err != nil {
		return nil, err
	}
	v := r.view()
	c.placeInLine(ctx, v)
	c.placeOnWaitlist(ctx, v)
	c.placeDecidedEntry(ctx, v)
	return v, nil
}

// viewOf is a caller's view of a stored request that getRequest returned.
func viewOf(r *storedRequest, err error) (*Request, error) {
	if err != nil {
		return nil, err
	}
	return r.view(), nil
}

// view returns the request as a caller reads it, with its lease while PROCESSING.
func (r *storedRequest) view() *Request {
	if r.Status == StatusProcessing && r.LeaseOwner != "" {
		r.Lease = &LeaseState{Owner: r.LeaseOwner, ExpiresAt: r.LeaseExpiresAt}
	}
	return &r.Request
}

// getRequest reads a request with the library's bookkeeping on it.
func (c *Client) getRequest(ctx context.Context, requestID string, consistent bool) (*storedRequest, error) {
	key, err := NewRequestKey(requestID)
	if err != nil {
		return nil, err
	}
	var item requestItem
	if err := c.getFound(ctx, key.Key(), consistent, &item, "get request", requestID, func() error {
		return fmt.Errorf("%w: request %s", ErrNotFound, requestID)
	}); err != nil {
		return nil, err
	}
	return &item.storedRequest, nil
}

// MarkQueued is a row method of the worker's layer, Submit's last step: a service
// leaves it to Submit (see "Two layers" in the package doc).
//
// MarkQueued records that a request's message is on the queue: the "mark queued"
// row, UpdateItem PK REQ#<requestId>, SK META, SET status = QUEUED; condition: status
// = RECEIVED. It writes nothing else: the request's put wrote its queuedAt and index
// keys already. When the condition fails a worker got there first (it starts a
// request RECEIVED as it would one QUEUED): the Transition is not applied, nothing
// changes, and there is no error. A request that does not exist is ErrNotFound.
// With Options.StatusLog its entry records the time of the call.
func (r *Rows) MarkQueued(ctx context.Context, ref RequestRef) (Transition, error) {
	t, err := r.c.markQueued(ctx, ref, r.c.now(), txOptions{written: true})
	return r.c.written(ctx, ref.RequestID, t, err)
}

// markQueued is MarkQueued with the time its status-log entry records, and options.
// Ingest passes the request's queuedAt: it precedes the send, so any worker's start,
// which may race this write and land after it, is not logged before it. It sends
// the call once, as a request left RECEIVED is started by the worker all the same.
func (c *Client) markQueued(ctx context.Context, ref RequestRef, loggedAt EpochMillis, tx txOptions) (Transition, error) {
	if err := ValidateID("requestId", ref.RequestID); err != nil {
		return Transition{}, err
	}
	if err := ValidateID("eventId", ref.EventID); err != nil {
		return Transition{}, err
	}
	return c.applyTo(ctx, "mark queued", ref.RequestID, write{row: &markQueuedRow, args: args{pQueuedAt: loggedAt}, note: "message sent"}, tx)
}

// MarkEnqueueFailed is a row method of the worker's layer, Submit's step when the
// send fails: a service leaves it to Submit (see "Two layers" in the package doc).
//
// MarkEnqueueFailed ends a request whose message could not be sent: the "enqueue
// failure" row, UpdateItem PK REQ#<requestId>, SK META, SET status = FAILED_FINAL,
// uiResult FAILED, resultCode and errorCode FAILED_INGEST_ENQUEUE, failureClass
// RETRYABLE, errorMessage (cause, at most 256 characters), finishedAt, REMOVE
// queuedAt (its message never reached the queue); condition: status = RECEIVED. (Its put wrote its index keys, so it shows in the lists.) In the same TransactWriteItems the "release lock"
// row deletes the user's IdempotencyLock (condition: the lock names this request),
// so the user's next click makes a fresh request while this one stays on record.
// When the status condition fails the message got through after all (the worker has
// the request): the Transition is not applied and nothing changes.
//
// A FIRST_COME request's home shard is closed to its claims first (the "first-come
// seat closed" row, UpdateItem of the home shard, ADD void the request's fence token
// (its seat token at its seatEpoch),
// condition attribute_exists(PK) AND NOT contains(holders, seatToken)): a message
// that reached the queue after all may have a claim on its way there. When that finds
// the request's seat, the message got through and won: not applied, and the
// Transition holds the request as it is.
func (r *Rows) MarkEnqueueFailed(ctx context.Context, ref RequestRef, cause error) (Transition, error) {
	t, err := r.c.markEnqueueFailed(ctx, ref, cause)
	return r.c.written(ctx, ref.RequestID, t, err)
}

// markEnqueueFailed is MarkEnqueueFailed, its applied Transition without the request.
func (c *Client) markEnqueueFailed(ctx context.Context, ref RequestRef, cause error) (Transition, error) {
	if err := ValidateID("requestId", ref.RequestID); err != nil {
		return Transition{}, err
	}
	lock, err := NewLockKey(ref.EventID, ref.UserID)
	if err != nil {
		return Transition{}, err
	}
	if held, err := c.closeHomeIfFirstCome(ctx, ref); err != nil || held {
		if err != nil {
			return Transition{}, fmt.Errorf("mark enqueue failed %s: %w", ref.RequestID, err)
		}
		cur, err := c.getRequest(ctx, ref.RequestID, true)
		if err != nil {
			return Transition{}, fmt.Errorf("mark enqueue failed %s: %w", ref.RequestID, err)
		}
		return found(cur), nil // the message got through and won its seat
	}
	a := args{pNow: c.now(), pErrorMessage: errorText(cause)}
	release := write{row: &releaseLockRow, key: lock.Key(), args: args{pRequestID: ref.RequestID}}
	return c.applyTo(ctx, "mark enqueue failed", ref.RequestID, write{row: &enqueueFailedRow, args: a, note: "enqueue failed"}, txOptions{}, release)
}

// closeHomeIfFirstCome closes the home shard of a FIRST_COME request to its claims
// without a lease before it ends without a seat having never been started (a send
// that failed): its message may have reached the queue after all and a worker's
// claim may be on its way. held reports that the claim won: the request holds its
// seat.
func (c *Client) closeHomeIfFirstCome(ctx context.Context, ref RequestRef) (held bool, err error) {
	cfg, err := c.cachedEvent(ctx, ref.EventID)
	if err != nil || cfg.EventType != FirstCome {
		return false, err
	}
	return c.closeHome(ctx, ref, max(cfg.CapacityShards, 1))
}

// StartProcessing is a row method of the worker's layer, the worker's start of a
// request under a lease: a service leaves it to the Worker (see "Two layers" in the
// package doc).
//
// StartProcessing is the "start processing" row: UpdateItem PK REQ#<requestId>, SK
// META, SET status = PROCESSING, startedAt, leaseOwner and leaseExpiresAt = now +
// lease.Duration, seatShard = if_not_exists(seatShard, the first capacity shard of
// the request's order) and seatEpoch = if_not_exists(seatEpoch, 0); condition:
// status = QUEUED OR status = RECEIVED OR (status = PROCESSING AND leaseExpiresAt ≤
// now), the last being a takeover of an expired lease,
// which keeps the seatShard of the delivery before it. A start whose answer was lost
// and whose retry meets the request PROCESSING under lease.Owner is applied. A request
// met RECEIVED (its
// message came before ingest's MarkQueued) has its queuedAt and index keys from its put
// already. A lost condition is not an error: the Transition is not applied and holds
// the request as it is (final: a duplicate delivery; PROCESSING: another delivery holds
// a live lease). With Options.StatusLog the condition is tried one status at a time,
// QUEUED first, so that the log names the status left: a request met RECEIVED or
// PROCESSING costs a second call. Applied, the Transition carries the request as the
// start left it, read after the write (one more strongly consistent GetItem: the
// UpdateItem returns what it changed, which the seat claim needs).
func (r *Rows) StartProcessing(ctx context.Context, ref RequestRef, lease Lease) (Transition, error) {
	c := r.c
	if err := ValidateID("eventId", ref.EventID); err != nil {
		return Transition{}, err
	}
	n, err := c.capacityShards(ctx, ref.EventID)
	if err != nil {
		return Transition{}, err
	}
	t, _, err := c.startProcessing(ctx, ref, lease, shardOf(ref.RequestID, n))
	return c.written(ctx, ref.RequestID, t, err)
}

// startProcessing is StartProcessing with the capacity shard to claim a seat on when
// the request has none yet, and it tells what the start means for the seat claim.
func (c *Client) startProcessing(ctx context.Context, ref RequestRef, lease Lease, shard int) (Transition, seatStart, error) {
	if err := ValidateID("requestId", ref.RequestID); err != nil {
		return Transition{}, seatStart{}, err
	}
	if err := ValidateID("eventId", ref.EventID); err != nil {
		return Transition{}, seatStart{}, err
	}
	now := c.now()
	a := args{pNow: now, pLeaseOwner: lease.Owner, pLeaseExpiresAt: MillisOf(now.Time().Add(lease.Duration)), pSeatShard: shard, pSeatEpoch: seatEpochNone}
	var old map[string]types.AttributeValue
	t, err := c.applyTo(ctx, "start", ref.RequestID, write{row: &startProcessingRow, args: a, note: "started by " + lease.Owner}, txOptions{old: &old})
	if err != nil {
		return t, seatStart{}, err
	}
	if cur := t.current; !t.Applied && cur != nil && cur.Status == StatusProcessing && cur.LeaseOwner == lease.Owner {
		// Our own start, whose answer was lost and whose retry met it: started. What it
		// found is unknown, so an earlier delivery's claim may be on its place.
		st := seatStart{place: shard, epoch: cur.SeatEpoch, inherited: true}
		if cur.SeatShard != nil {
			st.place = *cur.SeatShard
		}
		return Transition{Applied: true}, st, nil
	}
	if !t.Applied {
		return t, seatStart{}, nil
	}
	st := seatStart{place: shard}
	left := t.left
	if left == "" {
		var before struct {
			Status Status `dynamodbav:"status"`
		}
		if err := attributevalue.UnmarshalMap(old, &before); err != nil {
			return t, seatStart{}, fmt.Errorf("start %s: %w", ref.RequestID, err)
		}
		left = before.Status
	}
	if left != StatusProcessing {
		return t, st, nil
	}
	// A takeover: the delivery before may hold a seat on the place it named, or have
	// a claim on its way there.
	st.inherited = true
	seatShard, epoch, known := readSeatEpoch(old)
	if !known { // a transaction returns nothing (and an item of an older version has no epoch): read it
		req, err := c.getRequest(ctx, ref.RequestID, true)
		if err != nil {
			return t, seatStart{}, fmt.Errorf("start %s: %w", ref.RequestID, err)
		}
		seatShard, epoch = req.SeatShard, req.SeatEpoch
	}
	if seatShard != nil {
		st.place = *seatShard
	}
	st.epoch = epoch
	return t, st, nil
}

// MarkCapacityRejected is a row method of the worker's layer, the worker's end of a
// request that found no seat under its lease: a service leaves it to the Worker (see
// "Two layers" in the package doc).
//
// MarkCapacityRejected is the "first-come capacity rejected" row: UpdateItem PK
// REQ#<requestId>, SK META, SET status = REJECTED, uiResult REJECTED, resultCode
// REJECTED_CAPACITY, finishedAt; condition status = PROCESSING AND leaseOwner =
// lease.Owner. On an event with holds, whose losers wait for a seat given back until
// it closes, it is the "first-come waitlisted (lease)" row instead: SET status =
// WAITLISTED, uiResult WAITLISTED, waitlistedBy (the call's token), the same
// condition. A lost condition is not an
// error: the Transition holds the request as it is.
func (r *Rows) MarkCapacityRejected(ctx context.Context, ref RequestRef, lease Lease) (Transition, error) {
	c := r.c
	if err := ValidateID("eventId", ref.EventID); err != nil {
		return Transition{}, err
	}
	waitlist, err := c.waitlists(ctx, ref.EventID)
	if err != nil {
		return Transition{}, err
	}
	t, err := c.markCapacityRejected(ctx, ref, lease, waitlist, false, txOptions{written: true})
	return c.written(ctx, ref.RequestID, t, err)
}

// markCapacityRejected is MarkCapacityRejected, WAITLISTED (the "first-come waitlisted
// (lease)" row) when waitlist is set, and the "ranked: late rejected (lease)"
// row (ResultLate) for a late arrival of a ranked event, with holds or without.
func (c *Client) markCapacityRejected(ctx context.Context, ref RequestRef, lease Lease, waitlist, late bool, tx txOptions) (Transition, error) {
	w := write{row: &capacityRejectedRow, args: args{pNow: c.now(), pLeaseOwner: lease.Owner}, note: string(ResultRejectedCapacity)}
	switch {
	case late: // with holds too: no place on a waitlist the admission ranked without it
		w.row, w.note = &lateRejectedRow, string(ResultLate)
	case waitlist:
		w.row, w.note = &waitlistLeasedRow, "waitlisted"
		return c.joinWaitlist(ctx, "reject", ref, w, tx)
	}
	return c.applyTo(ctx, "reject", ref.RequestID, w, tx)
}

// RejectSoldOut is a row method of the worker's layer, the worker's end of a loser of
// a sold-out event: a service leaves it to the Worker (see "Two layers" in the
// package doc).
//
// RejectSoldOut ends a first-come request of an event known to be sold out, in one
// write: the "first-come sold out" row, UpdateItem PK REQ#<requestId>, SK META, SET
// status = REJECTED, uiResult REJECTED, resultCode REJECTED_CAPACITY, finishedAt and
// startedAt, both now (the worker reached it and ended it in the same write, so its
// detail shows queuedAt → startedAt → finishedAt as every finished request's does);
// condition: status = QUEUED OR status = RECEIVED; on an event with holds the
// "first-come waitlisted" row instead, SET status = WAITLISTED, uiResult WAITLISTED,
// startedAt, waitlistedBy (the call's token, by which a resend after a lost answer
// knows its own write), the same condition (it waits for a seat given back until
// the event closes). No PROCESSING write, no lease, no handler: the losers are most of a spike. Call it only once a seat claim
// of the event has found no seat left (an empty capacity item stays empty) and the
// request's home shard shows no seat of it (a home claim may hold one before any
// write on the request). A lost condition
// is not an error: the Transition holds the request as it is (PROCESSING under a
// lease, or final). With Options.StatusLog the condition is tried QUEUED first, so
// that the log names the status left.
func (r *Rows) RejectSoldOut(ctx context.Context, ref RequestRef) (Transition, error) {
	c := r.c
	if err := ValidateID("eventId", ref.EventID); err != nil {
		return Transition{}, err
	}
	waitlist, err := c.waitlists(ctx, ref.EventID)
	if err != nil {
		return Transition{}, err
	}
	t, err := c.rejectSoldOut(ctx, ref, waitlist, false, txOptions{written: true})
	return c.written(ctx, ref.RequestID, t, err)
}

// rejectSoldOut is RejectSoldOut, WAITLISTED (the "first-come waitlisted" row) when
// waitlist is set, and the "ranked: late rejected" row (ResultLate) for a
// late arrival of a ranked event, with holds or without.
func (c *Client) rejectSoldOut(ctx context.Context, ref RequestRef, waitlist, late bool, tx txOptions) (Transition, error) {
	w := write{row: &soldOutRow, args: args{pNow: c.now()}, note: "sold out"}
	switch {
	case late: // with holds too: no place on a waitlist the admission ranked without it
		w.row, w.note = &lateSoldOutRow, string(ResultLate)
	case waitlist:
		w.row, w.note = &waitlistRow, "waitlisted"
		return c.joinWaitlist(ctx, "reject sold out", ref, w, tx)
	}
	return c.applyTo(ctx, "reject sold out", ref.RequestID, w, tx)
}

// Failure describes why a request ends FAILED_FINAL, for MarkFailed.
type Failure struct {
	// Lease is the caller's lease, if it holds the request; the zero Lease otherwise.
	Lease     Lease
	Class     FailureClass
	Code      ResultCode // FAILED_WORKER, FAILED_VALIDATION, FAILED_SERDE, …
	ErrorCode string     // a short code for operators: VALIDATION_FAILED, SERDE_ERROR, …
	Cause     error      // stored as errorMessage, cut to 256 characters
}

// MarkFailed is a row method of the worker's layer, the worker's end of a request it
// gives up on: a service leaves it to the Worker (see "Two layers" in the package
// doc).
//
// MarkFailed is the "final failure" row: UpdateItem PK REQ#<requestId>, SK META, SET
// status = FAILED_FINAL, uiResult FAILED, resultCode, failureClass, errorCode,
// errorMessage (at most 256 characters), finishedAt; condition: status is PROCESSING,
// QUEUED or RECEIVED, not PROCESSING under another owner's live lease (status <>
// PROCESSING OR leaseOwner = f.Lease.Owner OR leaseExpiresAt ≤ now), and no lottery
// entry queued by its cutoff (eventType <> LOTTERY OR attribute_not_exists(queuedAt)
// OR queuedAt > lotteryCutoffAt): an entry is failed only by the worker, before the
// entries' fence, or decided by the draw; and no first-come request unless the caller
// holds its lease (eventType <> FIRST_COME OR leaseOwner = f.Lease.Owner): a
// first-come request may hold a seat before any write on it (its home claim), so only
// a lease holder, after a look at its shards, ends one without a seat. A lost
// condition is not an error: the Transition holds the request as it is. Only
// ref.RequestID is used, so a
// malformed message that names its request validly can still end it. With
// Options.StatusLog the status is tried one at a time, PROCESSING first, so that the log names the status left: a
// request met QUEUED or RECEIVED costs a second call.
func (r *Rows) MarkFailed(ctx context.Context, ref RequestRef, f Failure) (Transition, error) {
	t, err := r.c.markFailed(ctx, ref, f, txOptions{written: true})
	return r.c.written(ctx, ref.RequestID, t, err)
}

// markFailed is MarkFailed with the call's options.
func (c *Client) markFailed(ctx context.Context, ref RequestRef, f Failure, tx txOptions) (Transition, error) {
	return c.applyTo(ctx, "fail", ref.RequestID, write{row: &finalFailureRow, args: failureArgs(c.now(), f), note: f.ErrorCode}, tx)
}

// releaseLease ends our lease at once so that the next delivery takes the request over
// without waiting.
func (c *Client) releaseLease(ctx context.Context, requestID, owner string) error {
	_, err := c.setLeaseExpiry(ctx, requestID, owner, c.now())
	return err
}

// extendLease moves our lease's expiry to now + d. held is false when the lease is
// no longer ours (another delivery took the request over, or it is final): the
// caller must not act under it any more.
func (c *Client) extendLease(ctx context.Context, requestID, owner string, d time.Duration) (held bool, err error) {
	return c.setLeaseExpiry(ctx, requestID, owner, MillisOf(c.opts.Clock().Add(d)))
}

// setLeaseExpiry moves the expiry of our lease to at: the "lease heartbeat" row,
// UpdateItem SET leaseExpiresAt; condition status = PROCESSING AND leaseOwner =
// owner. A lost condition is no error: applied reports it, the lease is gone.
func (c *Client) setLeaseExpiry(ctx context.Context, requestID, owner string, at EpochMillis) (applied bool, err error) {
	key, err := NewRequestKey(requestID)
	if err != nil {
		return false, err
	}
	t, err := c.apply(ctx, key, write{row: &extendLeaseRow, args: args{pLeaseOwner: owner, pLeaseExpiresAt: at}}, txOptions{})
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return t.Applied, err
}

// errorText returns err's message cut to maxErrorMessageLength characters.
func errorText(err error) string {
	if err == nil {
		return ""
	}
	msg := []rune(err.Error())
	if len(msg) > maxErrorMessageLength {
		msg = append(msg[:maxErrorMessageLength-1], '…')
	}
	return string(msg)
}

// queuedAfterCutoff: the request was queued after its lottery's cutoff, so it is no
// entry of the draw: queuedAt > lotteryCutoffAt.
var queuedAfterCutoff = fixed(expression.Name(attrQueuedAt).GreaterThan(expression.Name(attrLotteryCutoffAt)))

// queuedByCutoff: queuedAt ≤ lotteryCutoffAt.
var queuedByCutoff = fixed(expression.Name(attrQueuedAt).LessThanEqual(expression.Name(attrLotteryCutoffAt)))

// notAnEntry: the request is no lottery entry queued by its cutoff, which only a
// failure checked against the draw's phase may end (failEntry).
var notAnEntry = either(fixed(expression.Name(attrEventType).NotEqual(expression.Value(Lottery))),
	fixed(expression.AttributeNotExists(expression.Name(attrQueuedAt))), queuedAfterCutoff)

// notCollected: no worker has collected the entry yet: attribute_not_exists(startedAt).
var notCollected = fixed(expression.AttributeNotExists(expression.Name(attrStartedAt)))

// failureSets are the sets of a final failure.
var failureSets = []set{
	setTo(attrUIResult, UIFailed), setTo(attrResultCode, pResultCode), setTo(attrFailureClass, pFailureClass),
	setTo(attrErrorCode, pErrorCode), setTo(attrErrorMessage, pErrorMessage), setTo(attrFinishedAt, pNow),
}

// failureArgs are the args of a final failure at now.
func failureArgs(now EpochMillis, f Failure) args {
	return args{
		pNow: now, pLeaseOwner: f.Lease.Owner,
		pResultCode: f.Code, pFailureClass: f.Class, pErrorCode: f.ErrorCode, pErrorMessage: errorText(f.Cause),
	}
}

const (
	pHoldExpiresAt param = "holdExpiresAt"
)

var (
	// holdRunning: the hold has not run out (holdExpiresAt > now).
	holdRunning = compare(expression.Name(attrHoldExpiresAt).GreaterThan, pNow)
	// thisHold: the request holds the hold the write ends (its Hold item's expiry).
	thisHold = compare(expression.Name(attrHoldExpiresAt).Equal, pHoldExpiresAt)
	// thisHoldRanOut: thisHold, and it has run out.
	thisHoldRanOut = all(thisHold, compare(expression.Name(attrHoldExpiresAt).LessThanEqual, pNow))
	heldSets       = func(extra ...set) []set {
		return append([]set{setTo(attrUIResult, UIHeld), setTo(attrHoldExpiresAt, pHoldExpiresAt)}, extra...)
	}
)

const (
	pSeatEpoch     param = "seatEpoch"         // the epoch of a request's claim
	pSeatEpochLeft param = "epochLeft"         // the epoch a move leaves
	pSeatShard     param = "seatShard"         // a seat place: a capacity shard, or C for the pool
	seatEpochNone        = seatclaim.EpochNone // the epoch of the claims without a lease
)

// atEpoch: the request's claim is at the epoch a move leaves. A move is a
// compare-and-set on the epoch, so that a copy of it landing late (an attempt the
// SDK gave up on, then retried) cannot set back a claim its own delivery moved on
// since: the epoch only grows.
var atEpoch = compare(expression.Name(attrSeatEpoch).Equal, pSeatEpochLeft)

// readSeatEpoch decodes a request's seatShard and seatEpoch from attributes a write
// returned; known is false unless both are there (a write that did not return them,
// or an item of a version before epochs: the caller reads the request).
func readSeatEpoch(old map[string]types.AttributeValue) (shard *int, epoch int, known bool) {
	var was struct {
		SeatShard *int `dynamodbav:"seatShard"`
		SeatEpoch *int `dynamodbav:"seatEpoch"`
	}
	_ = attributevalue.UnmarshalMap(old, &was)
	if was.SeatShard == nil || was.SeatEpoch == nil {
		return nil, 0, false
	}
	return was.SeatShard, min(max(*was.SeatEpoch, 0), maxSeatEpoch), true
}

const (
	pStartedAt param = "startedAt" // when the delivery that bound a seat began
)

var (
	// atHome: a PROCESSING request whose claims go to its home shard (none moved
	// elsewhere: a move closes the home shard first), under a lease run out. A live
	// lease is its holder's to end: its claim at home finds the seat (as does its
	// failure's close, or a takeover's claim), so the seat is the request's whoever
	// writes SUCCEEDED, and the lease's clock decides only who does (liveness).
	atHome = func(v values) expression.ConditionBuilder {
		return expression.AttributeNotExists(expression.Name(attrSeatShard)).
			Or(expression.Name(attrSeatShard).Equal(v.Value(pSeatShard))).
			And(leaseExpired(v))
	}
)

var (
	firstComeRequest = fixed(expression.Name(attrEventType).Equal(expression.Value(FirstCome)))
)

// PrequeuePlace is where an entry of a pre-queue stands while it waits.
type PrequeuePlace struct {
	// Frozen reports whether the pre-queue's entries are frozen and its order drawn
	// (from the start plus the settle window, when ServePrequeue runs); before then
	// no place exists yet, and Place and Entries are 0.
	Frozen bool
	// Place is the entry's position in the drawn order, 1 for the first served, and
	// Entries the entries frozen; Seats is the event's capacity, so a Place up to
	// Seats wins unless an entry before it fails.
	Place, Entries, Seats int64
	// StartsAt is the sale's start (EventSettings.StartsAt): the order is drawn
	// from then, once the settle window has passed.
	StartsAt EpochMillis
	// Late reports a request queued before the start whose put reached the table
	// after the entries were recorded (Frozen, Place 0): it is no entry, and joins
	// the sale's line after the drawn order.
	Late bool
	// AsOf is when the Draw record behind it was read.
	AsOf EpochMillis
}
