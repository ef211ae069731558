// Package asyncevent runs traffic-spike participation events — first-come ("the
// first 1,000 users win") and lottery ("draw 100 among everyone who entered before
// noon") — on one DynamoDB table, with a queue between the HTTP ingest and the
// workers.
//
// It guarantees what is hard to get right under at-least-once delivery, retries,
// crashes and repeated clicks: exactly one request per (event, user), exactly N
// first-come winners, a lottery anyone can re-check, no lost or stuck request, and
// screens served by GetItem and Query only, never Scan.
//
// # Table
//
// One table (default name AsyncEventTable): PK and SK strings, GSI1 on GSI1PK/GSI1SK
// and GSI2 on GSI2PK/GSI2SK, both projecting ALL, billing PAY_PER_REQUEST, TTL on the
// ttl attribute (epoch seconds). [Client.CreateTable] makes it; [Client.CheckTable]
// accepts a table made by the AWS CLI command of the design unchanged.
//
// # Items and keys
//
// All key text is built by the typed builders of keys.go; IDs are checked by
// [ValidateID] (non-empty, at most [MaxIDLength] bytes of printable UTF-8, no space,
// no '#'), so a bad ID is an [ErrInvalidID] error and never a malformed key.
// Timestamps are epoch milliseconds ([EpochMillis]); inside sort keys they are
// zero-padded to 13 digits so that string order is time order.
//
//	item             PK                          SK                           builder
//	Request          REQ#<requestId>             META                         NewRequestKey
//	IdempotencyLock  IDEMP#<eventId>#<userId>    LOCK                         NewLockKey
//	EventConfig      EVENT#<eventId>             CONFIG                       NewEventKey
//	EventCapacity    EVENT#<eventId>             CAPACITY                     NewEventKey
//	Draw record      EVENT#<eventId>             DRAW                         NewEventKey
//	StatusLog        REQ#<requestId>             LOG#<occurredAt>#<suffix>    NewStatusLogKey
//
// Only Request items carry index keys ([IndexKeys]), written once when the request's
// order time is known and never changed:
//
//	GSI1  GSI1PK USER#<userId>    GSI1SK QAT#<queuedAt>#REQ#<requestId>   my participations
//	GSI2  GSI2PK EVENT#<eventId>  GSI2SK QAT#<queuedAt>#REQ#<requestId>   an event's requests
//
// # Lifecycle
//
// A request moves RECEIVED → QUEUED → PROCESSING → SUCCEEDED | REJECTED |
// FAILED_FINAL. Every write of a status is conditional on the current one, and a
// terminal status ([Status.IsTerminal]) never changes again. uiResult is the coarse
// result for the front end (PENDING, SUCCESS, REJECTED, FAILED); resultCode the
// detailed one (SUCCESS, REJECTED_CAPACITY, REJECTED_LOTTERY_LOSE, …). A lottery
// request also shows its uiPhase: COLLECTING, DRAWING, ANNOUNCED.
//
// # Access patterns
//
// Each row of the design's access-pattern table is one method of [Client]; its doc
// comment names the row, the operation, the key and the condition. Rows without a
// method are being built.
//
//	row                          operation                  key / condition                                     method
//	participate                  PutItem (conditional)      IDEMP#<eventId>#<userId> / LOCK, attribute_not_exists  Participate
//	participate (duplicate)      GetItem                    IDEMP#<eventId>#<userId> / LOCK                     LookupParticipation
//	create request               PutItem                    REQ#<requestId> / META, status RECEIVED             Participate
//	mark queued                  UpdateItem (conditional)   REQ#<requestId> / META, status = RECEIVED           MarkQueued
//	get request                  GetItem                    REQ#<requestId> / META                              GetRequest
//	my participations            Query GSI1                 USER#<userId>, newest first, limit 20               ListUserRequests
//	start processing             UpdateItem (conditional)   REQ#<requestId> / META, RECEIVED, QUEUED or lease expired  StartProcessing
//	first-come capacity          UpdateItem (conditional)   EVENT#<eventId> / CAPACITY, capacityRemaining > 0  ClaimSeat
//	first-come success           UpdateItem (conditional)   REQ#<requestId> / META, PROCESSING under my lease  ClaimSeat
//	first-come capacity rejected UpdateItem (conditional)   REQ#<requestId> / META, PROCESSING under my lease  MarkCapacityRejected
//	lottery result               UpdateItem (conditional)   REQ#<requestId> / META, status = QUEUED           Draw, MarkClosed (after the cutoff)
//	enqueue failure              UpdateItem (conditional)   REQ#<requestId> / META, status = RECEIVED           MarkEnqueueFailed
//	final failure                UpdateItem (conditional)   REQ#<requestId> / META, not final, lease free      MarkFailed
//	status log                   PutItem                    REQ#<requestId> / LOG#<occurredAt>#<suffix>         Options.StatusLog
//	event requests               Query GSI2                 EVENT#<eventId>, either order, status filter    ListEventRequests
//	event requests, latest N     Query GSI2                 EVENT#<eventId>, newest first, limit N          ListEventRequests
//	event statistics             Query GSI2 (projected)     EVENT#<eventId>, every request once             EventStats
//	get request (admin)          GetItem                    REQ#<requestId> / META                              GetRequest
//	status logs                  Query                      REQ#<requestId>, begins_with(SK, "LOG#")            ListStatusLogs
//
// Participate writes the lock and the request in one TransactWriteItems, so neither
// exists without the other; ClaimSeat spends a seat and writes SUCCEEDED in one
// TransactWriteItems, so no seat is spent without a winner. [Client.Submit] is the whole ingest of a click:
// Participate, send the message, MarkQueued (or MarkEnqueueFailed).
//
// # Invariants
//
//  1. No orphan lock: a lock is never written without its request.
//  2. No lost request: a failed enqueue ends FAILED_FINAL with FAILED_INGEST_ENQUEUE;
//     a request stuck in RECEIVED is sent again.
//  3. The QUEUED race: a worker accepts RECEIVED or QUEUED as a start state.
//  4. Exactly N: capacity is spent only together with a SUCCEEDED request.
//  5. No stuck PROCESSING: a worker holds a lease that expires.
//  6. Every status write is conditional; a lost condition is an outcome, not an error.
//  7. GSI keys only on Request items.
//  8. Fairness is queuedAt, and the library reports how far processing order strayed.
//
// # Lottery
//
// Creating a LOTTERY event publishes seedCommitment = SHA-256 of a secret seed. After
// the cutoff (and Options.DrawSettleWindow), [Client.Draw] freezes the entries — the
// requests queued by the cutoff — recording their count and [EntriesHash], reveals
// the seed, and the K entries with the smallest [DrawScore], SHA-256(seed ‖
// requestId), win. Each entry is finalised under a condition, so a draw stopped
// half-way can run again and comes to the same winners. [Client.VerifyDraw]
// recomputes the commitment, the entries and every result from the table.
//
// # Worker
//
// A [Worker] long-polls a [Queue] ([SQSQueue], or [MemoryQueue] for examples and
// tests), processes messages with bounded concurrency, extends a message's visibility
// and the request's lease while its work goes on, deletes finished messages in
// batches, and leaves retryable failures for redelivery with backoff. The same
// processing serves an AWS Lambda SQS handler through [Processor.ProcessMessages].
//
// # Testing
//
// Package asynceventtest gives tests a Client on a fresh table of a DynamoDB Local
// that it finds or starts itself.
package asyncevent
