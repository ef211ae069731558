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
// This documentation is the reference of the access patterns; docs/design.md in the
// repository adds the table as the AWS CLI makes it, the items' fields, the result
// codes and the item lifetimes.
//
// # What a service calls
//
// A service calls these, grouped here by the screen or the job that needs them;
// besides [New] and the [Worker], each is a method of [Client]. The library's worker
// does the rest:
//
//   - [New] makes a [Client] on one table, [Client.CreateTable] the table (or
//     [Client.CheckTable] accepts one made with the AWS CLI), [Client.CreateEvent]
//     an event, first-come or lottery; a first-come event decides its winners in
//     processing order, or by rank with EventSettings.Admission AdmissionRanked.
//   - [Client.Submit] is the whole ingest of a click: it answers with the request's
//     ID before any worker decides it (an HTTP service's 202 Accepted), or, for a
//     click repeated, with the first request's.
//   - [Client.GetRequest] reads a request for the user's screen (with its place in
//     line while a first-come request waits), [Client.ListUserRequests] a user's
//     participations, and [Client.LookupParticipation] a user's request in an event.
//   - [NewWorker] decides the requests from the queue ([Worker.Start] and
//     [Worker.Stop], or [Worker.Run]); on AWS Lambda, package awslambda runs the
//     same [Processor].
//   - [Client.Confirm] ends a hold as a win once its seat is paid for (HELD →
//     SUCCEEDED), and [Client.Release] gives the seat up.
//   - [Client.Draw] draws a lottery after its cutoff, and [Client.VerifyDraw]
//     re-checks it from the table.
//   - A first-come event with a pre-queue (EventSettings.PrequeueOpensAt) takes the
//     clicks from then until its start and holds them: [Client.ServePrequeue], once
//     the start and Options.DrawSettleWindow have passed, serves them in an order
//     drawn from a seed committed at the event's creation (Options.Seeds), the seats
//     going in that order, and [Client.VerifyPrequeue] re-checks the order from the
//     table; [Client.GetRequest] gives a waiting entry its place in the drawn order.
//   - The operator's controls: [Client.CloseEvent], [Client.PauseEvent],
//     [Client.ResumeEvent], [Client.ExtendEvent], [Client.AddCapacity],
//     [Client.CancelRequest].
//   - The admin's screens: [Client.ListEventRequests], [Client.EventStats],
//     [Client.QueueStats], [Client.ListEvents], [Client.ListAudit],
//     [Client.ListStatusLogs], and the reads of an event ([Client.GetEvent],
//     [Client.GetCapacity], [Client.GetDraw], [Client.CountRequests]).
//   - Housekeeping: [Client.Sweep] sends again the requests whose message seems
//     lost, [Client.SweepHolds] runs an event's hold sweep (a Worker runs it for
//     the events it meets; [Client.HoldEvents] lists them), and
//     [Client.FlushProgress] writes the counts of the place in line before a
//     process ends ([Client.FlushDueProgress] once they are due, for a process
//     frozen between invocations).
//
// # Two layers
//
// Beneath those calls are the row methods, on a type of their own that [Client.Rows]
// returns, each named in the access-pattern table (the last section) beside the rows
// it writes: [Rows.Participate], [Rows.MarkQueued] and [Rows.MarkEnqueueFailed] write
// the rows of Submit's steps; [Rows.StartProcessing], [Rows.ClaimSeat],
// [Rows.MarkCapacityRejected], [Rows.RejectSoldOut], [Rows.MarkFailed] and
// [Rows.MarkClosed] the rows of the worker's (and the draw's). They are the worker's
// and the test kit's layer: exported as the reference of each row's operation, key
// and condition, for a worker of one's own and for tests that put a request in a
// given state. A service that calls Submit and runs a Worker never calls them, and
// each one's doc comment begins by saying so.
//
// # A first event
//
// The package's example (Example, shown with its output) is a first event: a first-come
// sale of three seats, five clicks (one user clicking twice) and a worker, on a
// DynamoDB Local (package dynamodblocal; on AWS, any DynamoDB client such as
// dynamodb.NewFromConfig's). examples/quickstart in the repository is the same sale
// as a program of its own, with six clicks (go run ./examples/quickstart), and the
// README's "A first event" walks through it. The sections below give the model; the access-pattern
// table, last, gives every row's operation, key and condition.
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
// All key text is built and parsed in one place, inside the library, and each key
// form is a typed key, so that a tool of another team (an export job, a support
// script, a migration) builds and reads the library's keys with the library: New…
// builds a key from its IDs, Parse… reads the IDs back and refuses text no builder
// could have produced ([ErrMalformedKey]), and [Key.Entity] tells which item a key
// is. IDs are checked by [ValidateID] (non-empty, at most [MaxIDLength] bytes of
// printable UTF-8, no space, no '#'), so a bad ID is an [ErrInvalidID] error and
// never a malformed key. Timestamps are epoch milliseconds ([EpochMillis]); inside
// sort keys they are zero-padded to 13 digits so that string order is time order.
//
//	item             PK                                   SK                                typed key
//	Request          REQ#<requestId>                      META                              RequestKey
//	IdempotencyLock  IDEMP#<eventId>#<userId>             LOCK                              LockKey
//	EventConfig      EVENT#<eventId>                      CONFIG                            EventKey
//	EventCapacity    EVENT#<eventId>                      CAPACITY                          EventKey
//	  (C > 1 shards) EVENT#<eventId>#CAPACITY#<shard>     CAPACITY                          CapacityKeys
//	Draw record      EVENT#<eventId>                      DRAW                              EventKey
//	StatusLog        REQ#<requestId>                      LOG#<occurredAt>#<suffix>         StatusLogKey
//
// The library's own items, for holds, controls and the event list:
//
//	Hold             EVENT#<eventId>#HOLDS#<shard>        EXP#<expiresAt>#REQ#<requestId>   HoldKey
//	Returns          EVENT#<eventId>#RETURNS              RETURNS                           ReturnsKey
//	hold registry    HOLD_EVENTS                          EVENT#<eventId>                   HoldEventKey
//	AuditEntry       EVENT#<eventId>                      AUDIT#<at>#<suffix>               AuditKey
//	operation marker EVENT#<eventId>                      OP#<action>#<idempotencyKey>      OperationKey
//	event list entry EVENTS                               CAT#<createdAt>#EVENT#<eventId>   EventEntryKey
//	progress second  EVENT#<eventId>#PROGRESS#<shard>     T#<10-digit unix second>          ProgressKey
//
// Only Request items carry index keys ([IndexKeys], [EventSettings.RequestIndexKeys]). The request's put writes them,
// from its queuedAt (taken just before the put: its place in line), and nothing
// changes them, so a request is on both indexes from the moment it exists:
//
//	GSI1  GSI1PK USER#<userId>    GSI1SK QAT#<queuedAt>#REQ#<requestId>   my participations
//	GSI2  GSI2PK EVENT#<eventId>  GSI2SK QAT#<queuedAt>#REQ#<requestId>   an event's requests
//
// [UserPartition] is GSI1PK, [EventPartition] GSI2PK (each index shard's:
// [EventPartitions]), [QueuedAtSortKey] both sort keys, and [QueuedAtBound] the bound
// between the requests queued before a time and the others.
//
// # Spike scale
//
// DynamoDB gives one partition key at most 1,000 WCU/s, on the table and on each index
// apart, so an event on the keys above tops out at a few hundred clicks a second: every
// request writes its GSI2 entry under EVENT#<eventId> about four times (its put,
// QUEUED, its start, its result), and every seat is one UpdateItem of the CAPACITY
// item (1 WCU while it is under 1 KB; no transaction). An event created with a layout
// spreads both: [EventSettings.IndexShards] K puts its requests under
// EVENT#<eventId>#<shard> (the shard from the request ID), and
// [EventSettings.CapacityShards] C splits its capacity over items EVENT#<eventId>#CAPACITY#<shard>
// / CAPACITY, each on a partition key of its own; readers merge the shards, and
// ClaimSeat moves on from a shard that is empty or refuses it for throughput, so
// exactly N still holds. [ShardsFor] derives K = ⌈clicks/s × 4 ÷ 800⌉ and C =
// ⌈winners/s × 2 ÷ 800⌉ from a peak ([EventSettings.ShardForPeak] also counts the
// seats: at most 128 a shard); [github.com/asyncevent/asyncevent/spikeplan.For]
// adds the throughput the table and indexes need at it, the on-demand quota they
// pass and the queue's drain time, and
// [github.com/asyncevent/asyncevent/spikeplan.Apply] warms them. K = C = 1 (the
// default) keeps the keys above.
//
// # Lifecycle
//
// A request moves RECEIVED → QUEUED → PROCESSING → SUCCEEDED | REJECTED |
// FAILED_FINAL; a first-come winner of a home claim, and a loser of a sold-out event,
// skip PROCESSING. Every write of a status is conditional on the current one, and a
// terminal status ([Status.IsTerminal]) never changes again. The request's put
// fixes its queuedAt and index keys; the status writes that follow change neither. uiResult is the coarse
// result for the front end (PENDING, SUCCESS, REJECTED, FAILED); resultCode the
// detailed one (SUCCESS, REJECTED_CAPACITY, REJECTED_LOTTERY_LOSE, …). A lottery
// request also shows its uiPhase: COLLECTING, DRAWING, ANNOUNCED.
//
// # Holds and the waitlist
//
// A FIRST_COME event with [EventSettings.HoldFor] sells seats that must be paid for: a
// winner is HELD (uiResult HELD) until its holdExpiresAt instead of SUCCEEDED, and a
// loser of the sold-out event WAITLISTED (uiResult WAITLISTED) instead of REJECTED.
// [Client.Confirm] makes a HELD request SUCCEEDED (payment made); [Client.Release],
// or the hold sweep once the hold ran out, ends it REJECTED (REJECTED_RELEASED,
// REJECTED_HOLD_EXPIRED) and gives its seat, in the same transaction, to the event's
// Returns item, from which [Client.SweepHolds] hands it to the earliest WAITLISTED
// request in queue order (HELD in turn). An event with holds has an end
// ([EventSettings.EndsAt], required): then, or at [Client.CloseEvent], the waitlist
// ends REJECTED_CAPACITY. [Client.GetRequest] tells a WAITLISTED request its place on
// the waitlist and its end ([Request.Waitlist]). A [Worker] runs the sweep for the
// events with holds it meets; SUCCEEDED + HELD never passes the capacity, and a
// confirm racing the expiry ends the hold once (docs/design.md, "Holds and the
// waitlist").
//
// # Operator controls
//
// [Client.CloseEvent], [Client.PauseEvent], [Client.ResumeEvent] and
// [Client.ExtendEvent] change an event while it runs, each a conditional update of
// its CONFIG with an [AuditEntry] naming who did it (the Actor of its [ControlInput]
// or [ExtendEventInput]) and what (an [Action]), in one transaction; a control the
// event's state refuses writes nothing and says why ([EventUpdate]). Ingest learns of
// a change within [Options.EventCacheTTL]. [Client.AddCapacity] and
// [Client.CancelRequest] move seats, so a retry must not apply them twice: each runs
// under an idempotency key ([AddCapacityInput], [CancelRequestInput]; without one,
// the call's own) whose marker (EVENT#<eventId> / OP#<action>#<idempotencyKey>) its
// transaction puts only if absent; a call sent again after its answer was lost
// answers applied ([EventUpdate].Replayed) and writes nothing. [Client.ListEvents]
// lists the events newest first from the event list, a page at a time
// ([PageOptions]), an item collection CreateEvent writes, without a Scan;
// [Client.ListAudit] reads an event's whole trail.
//
// # Invariants
//
//  1. No orphan lock that outlives the next click: once the lock's put has begun,
//     Submit's writes run to completion under a deadline of their own, whatever the
//     caller's context does; a lock left without its request all the same (the
//     ingest died between the two puts) is healed by the user's next click once
//     Options.RedriveAfter has passed, or, once the event closed, its request is
//     written FAILED_FINAL (errorCode INGEST_INCOMPLETE); a request put refused for
//     certain releases its lock.
//  2. No lost request: a failed enqueue ends FAILED_FINAL with FAILED_INGEST_ENQUEUE;
//     a request stuck in RECEIVED is on GSI2 from its put, and is sent again by the
//     sweeper ([Client.Sweep]) or the user's next click.
//  3. The QUEUED race: a worker accepts RECEIVED or QUEUED as a start state; the
//     request's queuedAt and index keys came with its put, so it has nothing to
//     backfill, and ingest's later QUEUED write loses harmlessly.
//  4. Exactly N, with no clock in the argument: a seat is spent only by the write that
//     records whose it is; a request claims without a lease only on its home shard,
//     and under a lease only on the place its seatShard names; its claim leaves a
//     place, and it ends without a seat, only once the places a claim of it may land
//     on are closed to it or found empty, by conditional writes alone, whatever the
//     delays and the clocks (seat.go; docs/design.md, "The seat claim").
//  5. No stuck PROCESSING: a worker holds a lease that expires.
//  6. Every status write is conditional; a lost condition is an outcome, not an error.
//  7. GSI keys only on Request items.
//  8. Fairness is queuedAt. A ranked event (EventSettings.Admission AdmissionRanked)
//     decides its winners by rank, (queuedAt, requestId): no request wins while one
//     ranked before it was refused for want of a seat; a request the admission passed
//     without seeing is a late arrival, decided where the admission stands (ranked.go;
//     docs/design.md, "Ranked admission"). By default winners are decided in
//     processing order and EventStats reports how far it strayed (late winners,
//     inversions); a FIFO queue keeps send order, which is not queuedAt's order.
//  9. The entries a draw records are the entries it finalises, whatever the workers
//     still hold and whatever lands later: the record names them (by ID, in chunks),
//     a resumed draw goes on from it, a failure cannot land on an entry it recorded
//     (the draw collects each one first), and a request queued by the cutoff whose
//     put lands after the record ends REJECTED_NOT_DRAWN. No clock decides the set.
//
// # Lottery
//
// Creating a LOTTERY event publishes seedCommitment = SHA-256 of a secret seed that
// [Options.Seeds] gives ([seed.HMAC], or AWS KMS behind a [seed.Source]), so that the
// table holds nothing the seed follows from; without a source the seed is random and
// stored on the Draw record, readable by any reader of the table (seedMode UNSEALED,
// for development). After the cutoff (and Options.DrawSettleWindow), [Client.Draw]
// freezes the entries — the requests queued by the cutoff — recording them by ID
// ([EntriesKey]) and then their count and [draw.EntriesHash], reveals the seed on the
// Draw record, and the K entries with the smallest [draw.Score], SHA-256(seed ‖
// entries hash ‖ requestId), win: a score depends on the whole entry set, so no one
// can pick one before the freeze. Each entry is finalised under a condition, so a
// draw stopped half-way can run again and comes to the same winners, from its
// record. [Client.VerifyDraw] recomputes the commitment, the recorded entries and
// every result from the table, and lists the requests that landed after the record
// apart.
//
// # Worker
//
// A [Worker] long-polls a [queue.Queue] ([queue.SQS], or [queue.Memory] for examples
// and tests), processes messages with bounded concurrency, extends a message's visibility
// and the request's lease while its work goes on, deletes finished messages in
// batches, and leaves retryable failures for redelivery with backoff. The same
// processing serves an AWS Lambda SQS handler through [Processor.ProcessOne] (package
// awslambda).
//
// # Observability
//
// An [Observer] in [Options.Observer] sees every Submit, every message sent, every
// DynamoDB call (with the rows it writes) and every message processed, and passes a
// context of its own to each: package otelasyncevent implements it with OpenTelemetry
// spans and metrics, carrying the trace context from ingest to the worker in the
// message's attributes ([queue.OutgoingMessage.Attributes],
// [queue.Delivery.Attributes]). This package imports no telemetry library.
//
// # Testing
//
// Package asynceventtest gives tests a Client on a fresh table of a DynamoDB Local
// that it finds or starts itself.
//
// # Access patterns
//
// Each row of the access-pattern table is one method of [Client] or of [Rows] (the
// worker's lease heartbeat and the home claim's bind are [Processor]'s), and its doc
// comment names the row, the operation, the key and the condition. The method is a
// service's call (CreateEvent, Confirm, Draw, a control) or a row method of the
// worker's layer (Rows.MarkQueued, Rows.StartProcessing, Rows.ClaimSeat…; see "Two
// layers"), whose rows Submit and the Worker write for a service. The writes are
// declared once, beside the items they write, and one engine applies them; the tables
// below are read off those declarations (a test fails when they disagree), and a test
// that runs the methods fails when one writes a row, or reads an item, that its entry
// does not name; the transactions after the tables are the ones it sees. In a
// condition or update, a value the row fixes is written as it is stored: a quoted
// string ("QUEUED"), a number, true or false; a word after a colon is a value each
// call binds (:now is the client's clock); any other word is an attribute of the item.
//
//		WRITES
//	row                            method                                 operation      key
//	participate                    Rows.Participate                       PutItem        IDEMP#<eventId>#<userId> / LOCK
//	    if   (attribute_not_exists (PK)) AND (attribute_not_exists (SK))
//	create request                 Rows.Participate                       PutItem        REQ#<requestId> / META
//	    if   (attribute_not_exists (PK)) AND (attribute_not_exists (SK))
//	end incomplete request         Submit                                 PutItem        REQ#<requestId> / META
//	    if   (attribute_not_exists (PK)) AND (attribute_not_exists (SK))
//	release lock                   Rows.MarkEnqueueFailed                 DeleteItem     IDEMP#<eventId>#<userId> / LOCK
//	    if   requestId = :requestId
//	release lock: request absent   Rows.Participate                       ConditionCheck REQ#<requestId> / META
//	    if   (attribute_not_exists (PK)) AND (attribute_not_exists (SK))
//	message's request: lock        Processor.ProcessOne                   ConditionCheck IDEMP#<eventId>#<userId> / LOCK
//	    if   requestId = :requestId
//	mark queued                    Rows.MarkQueued                        UpdateItem     REQ#<requestId> / META
//	    if   status = "RECEIVED"
//	    set  SET status = "QUEUED"
//	enqueue failure                Rows.MarkEnqueueFailed                 UpdateItem     REQ#<requestId> / META
//	    if   status = "RECEIVED"
//	    set  REMOVE queuedAt SET status = "FAILED_FINAL", uiResult = "FAILED",
//	         resultCode = "FAILED_INGEST_ENQUEUE", failureClass = "RETRYABLE",
//	         errorCode = "FAILED_INGEST_ENQUEUE", errorMessage = :errorMessage,
//	         finishedAt = :now
//	start processing               Rows.StartProcessing                   UpdateItem     REQ#<requestId> / META
//	    if   ((status = "QUEUED") OR (status = "RECEIVED"))
//	         OR ((status = "PROCESSING") AND (leaseExpiresAt <= :now))
//	    set  SET status = "PROCESSING", startedAt = :now, leaseOwner = :leaseOwner,
//	         leaseExpiresAt = :leaseExpiresAt,
//	         seatShard = if_not_exists(seatShard, :seatShard),
//	         seatEpoch = if_not_exists(seatEpoch, :seatEpoch)
//	lease heartbeat                Processor.ProcessOne                   UpdateItem     REQ#<requestId> / META
//	    if   (status = "PROCESSING") AND (leaseOwner = :leaseOwner)
//	    set  SET leaseExpiresAt = :leaseExpiresAt
//	first-come capacity            Rows.ClaimSeat                         UpdateItem     EVENT#<eventId> / CAPACITY
//	    if   ((capacityRemaining > 0) AND (NOT (contains (holders, :seatToken))))
//	         AND (NOT (contains (void, :fenceToken)))
//	    set  ADD holders :seatTokens SET capacityRemaining = capacityRemaining - 1,
//	         updatedAt = :now
//	first-come wave seats          Processor.ProcessOne                   UpdateItem     EVENT#<eventId> / CAPACITY
//	    if   ((((capacityRemaining >= :waveSeats) AND (NOT (contains (holders, :seatToken1)))) AND (NOT (contains (void, :seatToken1)))) AND (NOT (contains (holders, :seatToken2))))
//	         AND (NOT (contains (void, :seatToken2)))
//	    set  ADD capacityRemaining :seatsTaken, holders :waveTokens SET updatedAt = :now
//	first-come success             Rows.ClaimSeat                         UpdateItem     REQ#<requestId> / META
//	    if   (status = "PROCESSING") AND (leaseOwner = :leaseOwner)
//	    set  SET status = "SUCCEEDED", uiResult = "SUCCESS", resultCode = "SUCCESS",
//	         finishedAt = :now
//	first-come seat bound          Processor.ProcessOne                   UpdateItem     REQ#<requestId> / META
//	    if   ((status = "QUEUED") OR (status = "RECEIVED"))
//	         OR ((status = "PROCESSING") AND (((attribute_not_exists (seatShard)) OR (seatShard = :seatShard)) AND (leaseExpiresAt <= :now)))
//	    set  REMOVE leaseOwner, leaseExpiresAt SET status = "SUCCEEDED", uiResult = "SUCCESS",
//	         resultCode = "SUCCESS", finishedAt = :now,
//	         startedAt = if_not_exists(startedAt, :startedAt),
//	         seatShard = if_not_exists(seatShard, :seatShard)
//	first-come seat closed         Rows.ClaimSeat, Rows.MarkEnqueueFailed UpdateItem     EVENT#<eventId> / CAPACITY
//	    if   (attribute_exists (PK)) AND (NOT (contains (holders, :seatToken)))
//	    set  ADD void :fenceTokens
//	first-come seat moved          Rows.ClaimSeat                         UpdateItem     REQ#<requestId> / META
//	    if   ((status = "PROCESSING") AND (leaseOwner = :leaseOwner))
//	         AND (seatEpoch = :epochLeft)
//	    set  SET seatShard = :seatShard, seatEpoch = :seatEpoch
//	capacity shard empty           Rows.ClaimSeat                         UpdateItem     EVENT#<eventId> / CONFIG
//	    if   attribute_exists (PK)
//	    set  ADD emptyShards :shards
//	capacity shard sold out        Rows.ClaimSeat                         UpdateItem     EVENT#<eventId> / CAPACITY
//	    if   attribute_exists (PK)
//	    set  SET soldOut = true
//	first-come capacity rejected   Rows.MarkCapacityRejected              UpdateItem     REQ#<requestId> / META
//	    if   (status = "PROCESSING") AND (leaseOwner = :leaseOwner)
//	    set  SET status = "REJECTED", uiResult = "REJECTED", resultCode = "REJECTED_CAPACITY",
//	         finishedAt = :now
//	first-come sold out            Rows.RejectSoldOut                     UpdateItem     REQ#<requestId> / META
//	    if   (status = "QUEUED") OR (status = "RECEIVED")
//	    set  SET status = "REJECTED", uiResult = "REJECTED", resultCode = "REJECTED_CAPACITY",
//	         finishedAt = :now, startedAt = :now
//	ranked: late rejected (lease)  Processor.ProcessOne                   UpdateItem     REQ#<requestId> / META
//	    if   (status = "PROCESSING") AND (leaseOwner = :leaseOwner)
//	    set  SET status = "REJECTED", uiResult = "REJECTED", resultCode = "REJECTED_LATE",
//	         finishedAt = :now
//	ranked: late rejected          Processor.ProcessOne                   UpdateItem     REQ#<requestId> / META
//	    if   (status = "QUEUED") OR (status = "RECEIVED")
//	    set  SET status = "REJECTED", uiResult = "REJECTED", resultCode = "REJECTED_LATE",
//	         finishedAt = :now, startedAt = :now
//	hold recorded                  Processor.ProcessOne, SweepHolds       PutItem        EVENT#<eventId>#HOLDS#<shard> / EXP#<expiresAt>#REQ#<requestId>
//	    if   (attribute_not_exists (PK)) AND (attribute_not_exists (SK))
//	first-come seat held           Processor.ProcessOne                   UpdateItem     REQ#<requestId> / META
//	    if   ((status = "QUEUED") OR (status = "RECEIVED"))
//	         OR ((status = "PROCESSING") AND (((attribute_not_exists (seatShard)) OR (seatShard = :seatShard)) AND (leaseExpiresAt <= :now)))
//	    set  REMOVE leaseOwner, leaseExpiresAt SET status = "HELD", uiResult = "HELD",
//	         holdExpiresAt = :holdExpiresAt, startedAt = if_not_exists(startedAt, :startedAt),
//	         seatShard = if_not_exists(seatShard, :seatShard)
//	first-come held                Rows.ClaimSeat                         UpdateItem     REQ#<requestId> / META
//	    if   (status = "PROCESSING") AND (leaseOwner = :leaseOwner)
//	    set  SET status = "HELD", uiResult = "HELD", holdExpiresAt = :holdExpiresAt
//	first-come waitlisted          Rows.RejectSoldOut                     UpdateItem     REQ#<requestId> / META
//	    if   (status = "QUEUED") OR (status = "RECEIVED")
//	    set  SET status = "WAITLISTED", uiResult = "WAITLISTED", startedAt = :now,
//	         waitlistedBy = :waitlistedBy
//	first-come waitlisted (lease)  Rows.MarkCapacityRejected              UpdateItem     REQ#<requestId> / META
//	    if   (status = "PROCESSING") AND (leaseOwner = :leaseOwner)
//	    set  SET status = "WAITLISTED", uiResult = "WAITLISTED", waitlistedBy = :waitlistedBy
//	hold confirmed                 Confirm                                UpdateItem     REQ#<requestId> / META
//	    if   (status = "HELD") AND (holdExpiresAt > :now)
//	    set  SET status = "SUCCEEDED", uiResult = "SUCCESS", resultCode = "SUCCESS",
//	         finishedAt = :now
//	hold released                  Release                                UpdateItem     REQ#<requestId> / META
//	    if   (status = "HELD") AND (holdExpiresAt = :holdExpiresAt)
//	    set  SET status = "REJECTED", uiResult = "REJECTED", resultCode = "REJECTED_RELEASED",
//	         finishedAt = :now
//	waitlist left                  Release                                UpdateItem     REQ#<requestId> / META
//	    if   status = "WAITLISTED"
//	    set  SET status = "REJECTED", uiResult = "REJECTED", resultCode = "REJECTED_RELEASED",
//	         finishedAt = :now, leftBy = :leftBy
//	hold expired                   SweepHolds                             UpdateItem     REQ#<requestId> / META
//	    if   (status = "HELD")
//	         AND ((holdExpiresAt = :holdExpiresAt) AND (holdExpiresAt <= :now))
//	    set  SET status = "REJECTED", uiResult = "REJECTED",
//	         resultCode = "REJECTED_HOLD_EXPIRED", finishedAt = :now
//	seat given to the waitlist     Release, SweepHolds                    UpdateItem     EVENT#<eventId>#RETURNS / RETURNS
//	    set  ADD capacityRemaining 1, returned 1
//	         SET entityType = if_not_exists(entityType, "RETURNS"),
//	         eventId = if_not_exists(eventId, :eventId), updatedAt = :now
//	hold cleared                   SweepHolds, Confirm, Release           DeleteItem     EVENT#<eventId>#HOLDS#<shard> / EXP#<expiresAt>#REQ#<requestId>
//	waitlist served                SweepHolds                             UpdateItem     REQ#<requestId> / META
//	    if   status = "WAITLISTED"
//	    set  SET status = "HELD", uiResult = "HELD", holdExpiresAt = :holdExpiresAt,
//	         servedAt = :now
//	returned seat taken            SweepHolds                             UpdateItem     EVENT#<eventId>#RETURNS / RETURNS
//	    if   capacityRemaining > 0
//	    set  ADD served 1 SET capacityRemaining = capacityRemaining - 1, updatedAt = :now
//	waitlist closed                SweepHolds                             UpdateItem     REQ#<requestId> / META
//	    if   status = "WAITLISTED"
//	    set  SET status = "REJECTED", uiResult = "REJECTED", resultCode = "REJECTED_CAPACITY",
//	         finishedAt = :now
//	hold sweep lease               SweepHolds                             UpdateItem     EVENT#<eventId>#RETURNS / RETURNS
//	    if   ((attribute_not_exists (sweepUntil)) OR (sweepUntil <= :now))
//	         OR (sweepOwner = :sweepOwner)
//	    set  SET sweepOwner = :sweepOwner, sweepUntil = :sweepUntil,
//	         entityType = if_not_exists(entityType, "RETURNS"),
//	         eventId = if_not_exists(eventId, :eventId), updatedAt = :now
//	lottery entry collected        Processor.ProcessOne, Draw             UpdateItem     REQ#<requestId> / META
//	    if   ((status = "QUEUED") OR (status = "RECEIVED"))
//	         AND (attribute_not_exists (startedAt))
//	    set  SET status = "QUEUED", startedAt = :now
//	lottery result (win)           Draw                                   UpdateItem     REQ#<requestId> / META
//	    if   (status = "QUEUED") OR (status = "RECEIVED")
//	    set  SET status = "SUCCEEDED", uiResult = "SUCCESS", resultCode = "SUCCESS",
//	         finishedAt = :now, uiPhase = "ANNOUNCED", announcedAt = :now
//	lottery result (lose)          Draw                                   UpdateItem     REQ#<requestId> / META
//	    if   (status = "QUEUED") OR (status = "RECEIVED")
//	    set  SET status = "REJECTED", uiResult = "REJECTED",
//	         resultCode = "REJECTED_LOTTERY_LOSE", finishedAt = :now, uiPhase = "ANNOUNCED",
//	         announcedAt = :now
//	lottery result (not drawn)     Draw, Processor.ProcessOne             UpdateItem     REQ#<requestId> / META
//	    if   ((status = "QUEUED") OR (status = "RECEIVED")) AND (queuedAt <= lotteryCutoffAt)
//	    set  SET status = "REJECTED", uiResult = "REJECTED", resultCode = "REJECTED_NOT_DRAWN",
//	         finishedAt = :now, uiPhase = "ANNOUNCED", announcedAt = :now
//	lottery result (closed)        Rows.MarkClosed                        UpdateItem     REQ#<requestId> / META
//	    if   ((status = "QUEUED") OR (status = "RECEIVED")) AND (queuedAt > lotteryCutoffAt)
//	    set  SET status = "REJECTED", uiResult = "REJECTED", resultCode = "REJECTED_CLOSED",
//	         finishedAt = :now
//	final failure                  Rows.MarkFailed                        UpdateItem     REQ#<requestId> / META
//	    if   (((status = "PROCESSING") OR (status = "QUEUED")) OR (status = "RECEIVED"))
//	         AND (((((status <> "PROCESSING") OR (leaseOwner = :leaseOwner)) OR (leaseExpiresAt <= :now)) AND (((eventType <> "LOTTERY") OR (attribute_not_exists (queuedAt))) OR (queuedAt > lotteryCutoffAt))) AND ((eventType <> "FIRST_COME") OR (leaseOwner = :leaseOwner)))
//	    set  SET status = "FAILED_FINAL", uiResult = "FAILED", resultCode = :resultCode,
//	         failureClass = :failureClass, errorCode = :errorCode,
//	         errorMessage = :errorMessage, finishedAt = :now
//	entry failure                  Processor.ProcessOne                   UpdateItem     REQ#<requestId> / META
//	    if   ((status = "QUEUED") OR (status = "RECEIVED"))
//	         AND ((queuedAt <= lotteryCutoffAt) AND (attribute_not_exists (startedAt)))
//	    set  SET status = "FAILED_FINAL", uiResult = "FAILED", resultCode = :resultCode,
//	         failureClass = :failureClass, errorCode = :errorCode,
//	         errorMessage = :errorMessage, finishedAt = :now
//	status log                     Options.StatusLog                      PutItem        REQ#<requestId> / LOG#<occurredAt>#<suffix>
//	    if   (attribute_not_exists (PK)) AND (attribute_not_exists (SK))
//	create event                   CreateEvent                            PutItem        EVENT#<eventId> / CONFIG, and CAPACITY (+ HOLD_EVENTS / EVENT#<eventId>, + DRAW with a pre-queue) or DRAW, one TransactWriteItems
//	    if   (attribute_not_exists (PK)) AND (attribute_not_exists (SK))
//	event closed                   CloseEvent                             UpdateItem     EVENT#<eventId> / CONFIG
//	    if   (attribute_exists (PK))
//	         AND (((attribute_not_exists (closedAt)) AND ((attribute_not_exists (endsAt)) OR (endsAt >= :now))) AND ((attribute_not_exists (lotteryCutoffAt)) OR (lotteryCutoffAt >= :now)))
//	    set  SET endsAt = :now, closedAt = :now
//	event paused                   PauseEvent                             UpdateItem     EVENT#<eventId> / CONFIG
//	    if   ((attribute_exists (PK)) AND (((attribute_not_exists (closedAt)) AND ((attribute_not_exists (endsAt)) OR (endsAt >= :now))) AND ((attribute_not_exists (lotteryCutoffAt)) OR (lotteryCutoffAt >= :now))))
//	         AND ((attribute_not_exists (paused)) OR (paused = false))
//	    set  SET paused = true
//	event resumed                  ResumeEvent                            UpdateItem     EVENT#<eventId> / CONFIG
//	    if   ((attribute_exists (PK)) AND (((attribute_not_exists (closedAt)) AND ((attribute_not_exists (endsAt)) OR (endsAt >= :now))) AND ((attribute_not_exists (lotteryCutoffAt)) OR (lotteryCutoffAt >= :now))))
//	         AND (paused = true)
//	    set  SET paused = false
//	event end extended             ExtendEvent                            UpdateItem     EVENT#<eventId> / CONFIG
//	    if   ((attribute_exists (PK)) AND (endsAt > :lead)) AND (endsAt < :endsAt)
//	    set  SET endsAt = :endsAt
//	lottery cutoff extended        ExtendEvent                            UpdateItem     EVENT#<eventId> / CONFIG
//	    if   ((((attribute_exists (PK)) AND (eventType = "LOTTERY")) AND (lotteryCutoffAt > :lead)) AND (lotteryCutoffAt < :cutoff))
//	         AND ((attribute_not_exists (endsAt)) OR (endsAt >= :cutoff))
//	    set  SET lotteryCutoffAt = :cutoff
//	pre-queue start extended       ExtendEvent                            UpdateItem     EVENT#<eventId> / CONFIG
//	    if   ((((attribute_exists (PK)) AND (attribute_exists (prequeueOpensAt))) AND (startsAt > :lead)) AND (startsAt < :startsAt))
//	         AND ((attribute_not_exists (endsAt)) OR (endsAt > :startsAt))
//	    set  SET startsAt = :startsAt
//	hold registry: end moved       ExtendEvent                            UpdateItem     HOLD_EVENTS / EVENT#<eventId>
//	    if   attribute_exists (PK)
//	    set  SET endsAt = :endsAt
//	cutoff extended: draw check    ExtendEvent                            ConditionCheck EVENT#<eventId> / DRAW
//	    if   phase = "COLLECTING"
//	audit entry                    CloseEvent, PauseEvent, ResumeEvent,   PutItem        EVENT#<eventId> / AUDIT#<at>#<suffix>
//	    by   ExtendEvent, AddCapacity, CancelRequest
//	    if   (attribute_not_exists (PK)) AND (attribute_not_exists (SK))
//	operation marker               AddCapacity, CancelRequest             PutItem        EVENT#<eventId> / OP#<action>#<idempotencyKey>
//	    if   (attribute_not_exists (PK)) AND (attribute_not_exists (SK))
//	event listed                   CreateEvent                            PutItem        EVENTS / CAT#<createdAt>#EVENT#<eventId>
//	    if   (attribute_not_exists (PK)) AND (attribute_not_exists (SK))
//	stray event entry              ListEvents                             DeleteItem     EVENTS / CAT#<createdAt>#EVENT#<eventId>
//	progress counted               FlushProgress                          UpdateItem     EVENT#<eventId>#PROGRESS#<p> / T#<second>
//	    set  ADD a0 :a0 … a9 :a9, d0 :d0 … d9 :d9, h00 :h00 … h99 :h99
//	         SET entityType = if_not_exists(entityType, "PROGRESS"),
//	         eventId = if_not_exists(eventId, :eventId), ttl = if_not_exists(ttl, :progressTtl)
//	waitlist counted               FlushProgress                          UpdateItem     EVENT#<eventId>#PROGRESS#<p> / W#<minute>
//	    set  ADD w00 :w00 … w59 :w59, l00 :l00 … l59 :l59
//	         SET entityType = if_not_exists(entityType, "WAITLIST"),
//	         eventId = if_not_exists(eventId, :eventId), ttl = :waitlistTtl
//	capacity added                 AddCapacity                            UpdateItem     EVENT#<eventId> / CONFIG
//	    if   (((attribute_exists (PK)) AND (eventType = "FIRST_COME")) AND (((attribute_not_exists (closedAt)) AND ((attribute_not_exists (endsAt)) OR (endsAt >= :now))) AND ((attribute_not_exists (lotteryCutoffAt)) OR (lotteryCutoffAt >= :now))))
//	         AND ((attribute_not_exists (poolVersion)) OR (poolVersion = :prevPoolVersion))
//	    set  ADD capacityTotal :seats SET poolVersion = :poolVersion
//	capacity added to a shard      AddCapacity                            UpdateItem     EVENT#<eventId> / CAPACITY
//	    if   (capacityRemaining > 0) AND (capacityTotal <= :shardRoom)
//	    set  ADD capacityRemaining :seats, capacityTotal :seats SET poolVersion = :poolVersion,
//	         updatedAt = :now
//	capacity shard: pool version   AddCapacity, CancelRequest             UpdateItem     EVENT#<eventId> / CAPACITY
//	    if   attribute_exists (PK)
//	    set  SET poolVersion = :poolVersion
//	capacity added to the pool     AddCapacity                            UpdateItem     EVENT#<eventId>#RETURNS / RETURNS
//	    set  ADD capacityRemaining :seats, added :seats
//	         SET entityType = if_not_exists(entityType, "RETURNS"),
//	         eventId = if_not_exists(eventId, :eventId), updatedAt = :now,
//	         poolVersion = :poolVersion
//	pool seat claimed              Rows.ClaimSeat                         UpdateItem     EVENT#<eventId>#RETURNS / RETURNS
//	    if   ((capacityRemaining > 0) AND (NOT (contains (holders, :seatToken))))
//	         AND (NOT (contains (void, :fenceToken)))
//	    set  ADD holders :seatTokens SET capacityRemaining = capacityRemaining - 1,
//	         updatedAt = :now
//	pool seat closed               Rows.ClaimSeat                         UpdateItem     EVENT#<eventId>#RETURNS / RETURNS
//	    if   (attribute_exists (PK)) AND (NOT (contains (holders, :seatToken)))
//	    set  ADD void :fenceTokens
//	participation cancelled        CancelRequest                          UpdateItem     REQ#<requestId> / META
//	    if   (status = "SUCCEEDED") AND (eventType = "FIRST_COME")
//	    set  SET status = "REJECTED", uiResult = "REJECTED", resultCode = "REJECTED_CANCELLED",
//	         finishedAt = :now
//	seat of a cancel to the pool   CancelRequest                          UpdateItem     EVENT#<eventId>#RETURNS / RETURNS
//	    set  ADD capacityRemaining 1, cancelled 1
//	         SET entityType = if_not_exists(entityType, "RETURNS"),
//	         eventId = if_not_exists(eventId, :eventId), updatedAt = :now,
//	         poolVersion = :poolVersion
//	pool version raised            CancelRequest                          UpdateItem     EVENT#<eventId> / CONFIG
//	    if   (attribute_exists (PK))
//	         AND ((attribute_not_exists (poolVersion)) OR (poolVersion = :prevPoolVersion))
//	    set  SET poolVersion = :poolVersion
//	draw: freeze the entries       Draw, ServePrequeue                    UpdateItem     EVENT#<eventId> / DRAW
//	    if   phase = "COLLECTING"
//	    set  SET phase = "DRAWING", drawnAt = :now
//	event: drawing                 Draw, ServePrequeue                    UpdateItem     EVENT#<eventId> / CONFIG
//	    if   (attribute_exists (PK))
//	         AND (((attribute_not_exists (lotteryCutoffAt)) OR (lotteryCutoffAt = :cutoffAsRead)) AND ((attribute_not_exists (startsAt)) OR (startsAt = :startAsRead)))
//	    set  SET phase = "DRAWING"
//	draw: entries chunk            Draw, ServePrequeue                    PutItem        EVENT#<eventId>#ENTRIES#<n> / SET#<entriesHash>
//	draw: record the entries       Draw, ServePrequeue                    UpdateItem     EVENT#<eventId> / DRAW
//	    if   (phase = "DRAWING") AND (attribute_not_exists (entriesHash))
//	    set  SET entryCount = :entryCount, entriesHash = :entriesHash,
//	         entryChunks = :entryChunks, seed = :seed
//	draw: announce                 Draw, ServePrequeue                    UpdateItem     EVENT#<eventId> / DRAW
//	    if   phase = "DRAWING"
//	    set  SET phase = "ANNOUNCED", announcedAt = :now
//	event: announced               Draw, ServePrequeue                    UpdateItem     EVENT#<eventId> / CONFIG
//	    if   attribute_exists (PK)
//	    set  SET phase = "ANNOUNCED", announcedAt = :now
//	admission: lease               Processor.ProcessOne                   UpdateItem     EVENT#<eventId> / ADMISSION
//	    if   ((attribute_not_exists (leaseOwner)) OR (leaseOwner = :leaseOwner))
//	         OR (leaseExpiresAt <= :now)
//	    set  SET entityType = if_not_exists(entityType, "ADMISSION"),
//	         through = if_not_exists(through, "QAT#"),
//	         refusing = if_not_exists(refusing, false), waves = if_not_exists(waves, 0),
//	         lateAdds = if_not_exists(lateAdds, 0), leaseOwner = :leaseOwner,
//	         leaseExpiresAt = :leaseExpiresAt
//	admission: wave                Processor.ProcessOne                   UpdateItem     EVENT#<eventId> / ADMISSION
//	    if   (((leaseOwner = :leaseOwner) AND (waves = :wavesAsRead)) AND (refusing = false))
//	         AND (lateAdds = :lateAddsAsRead)
//	    set  ADD waves 1 SET through = :through, wave = :wave, waveDone = false,
//	         leaseExpiresAt = :leaseExpiresAt
//	admission: wave (late)         Processor.ProcessOne                   UpdateItem     EVENT#<eventId> / ADMISSION
//	    if   (((leaseOwner = :leaseOwner) AND (waves = :wavesAsRead)) AND (refusing = false))
//	         AND (lateAdds = :lateAddsAsRead)
//	    set  ADD waves 1 DELETE late :late SET through = :through, wave = :wave,
//	         waveDone = false, leaseExpiresAt = :leaseExpiresAt
//	admission: wave decided        Processor.ProcessOne                   UpdateItem     EVENT#<eventId> / ADMISSION
//	    if   (leaseOwner = :leaseOwner) AND (waves = :waves)
//	    set  SET waveDone = true
//	admission: late arrival        Processor.ProcessOne                   UpdateItem     EVENT#<eventId> / ADMISSION
//	    if   refusing = false
//	    set  ADD late :late, lateAdds 1
//	admission: refusing            Processor.ProcessOne                   UpdateItem     EVENT#<eventId> / ADMISSION
//	    if   ((leaseOwner = :leaseOwner) AND (waves = :wavesAsRead)) AND (refusing = false)
//	    set  SET refusing = true, wave = :wave
//		READS
//	row                            method                                 operation      key
//	get request                    GetRequest, Confirm, Release,          GetItem        REQ#<requestId> / META
//	    by   CancelRequest, Rows.ClaimSeat, Processor.ProcessOne
//	lookup participation           LookupParticipation, Submit            GetItem        IDEMP#<eventId>#<userId> / LOCK, strongly consistent (Submit: a click on a paused or closed event)
//	my participations              ListUserRequests                       Query GSI1     USER#<userId>, newest first, limit 20
//	event requests                 ListEventRequests                      Query GSI2     EVENT#<eventId>, either order, status filter
//	event request count            CountRequests                          Query GSI2     EVENT#<eventId>, Select COUNT
//	event progress                 QueueStats, GetRequest                 Query          EVENT#<eventId>#PROGRESS#<p>, SK T#…, each p, cached a second
//	waitlist counts                GetRequest                             Query          EVENT#<eventId>#PROGRESS#<p>, SK W#…, each p, all pages, cached 5 × ProgressCacheTTL (a WAITLISTED request's place)
//	event statistics               EventStats                             Query GSI2     EVENT#<eventId>, every request once
//	status logs                    ListStatusLogs                         Query          REQ#<requestId>, begins_with(SK, "LOG#")
//	get event                      GetEvent, Submit,                      GetItem        EVENT#<eventId> / CONFIG (a method of an event reads it through the client's cache, Options.EventCacheTTL; a control and a draw strongly consistent)
//	    by   Processor.ProcessOne, Draw, ServePrequeue, Sweep, SweepHolds, CloseEvent,
//	    by   PauseEvent, ResumeEvent, ExtendEvent, AddCapacity, CancelRequest, ListEvents
//	get capacity                   GetCapacity, Processor.ProcessOne,     GetItem        EVENT#<eventId> / CAPACITY, or a shard's (the worker: a look at the request's home shard)
//	    by   AddCapacity, ServePrequeue, ListEvents
//	get draw                       GetDraw, Draw, ServePrequeue           GetItem        EVENT#<eventId> / DRAW
//	admission: record              Processor.ProcessOne                   GetItem        EVENT#<eventId> / ADMISSION, strongly consistent, each tick while a delivery waits
//	admission: line                Processor.ProcessOne                   Query GSI2     EVENT#<eventId>, GSI2SK BETWEEN through AND QAT#<now - settle>, each shard, one page
//	draw: the entries              Draw, ServePrequeue                    Query GSI2     EVENT#<eventId>, GSI2SK up to the cutoff (the start), each shard
//	recorded entries               Draw, ServePrequeue                    GetItem        EVENT#<eventId>#ENTRIES#<n> / SET#<entriesHash>, each chunk, strongly consistent (also VerifyDraw, VerifyPrequeue, a pre-queue place)
//	stuck requests                 Sweep                                  Query GSI2     EVENT#<eventId>, RECEIVED, QUEUED or PROCESSING past StuckAfter, each shard
//	hold registry                  HoldEvents                             Query          HOLD_EVENTS, every event with holds
//	event list                     ListEvents                             Query          EVENTS, newest first, limit 20
//	audit trail                    ListAudit                              Query          EVENT#<eventId>, begins_with(SK, "AUDIT#")
//	operation applied before       AddCapacity, CancelRequest             GetItem        EVENT#<eventId> / OP#<action>#<idempotencyKey>
//	due holds                      SweepHolds                             Query          EVENT#<eventId>#HOLDS#<shard>, SK < EXP#<now + 1 ms>, each shard
//	returned seats                 SweepHolds, ServePrequeue,             GetItem        EVENT#<eventId>#RETURNS / RETURNS, strongly consistent (GetRequest, the place of a pre-queue's waitlisted entry: eventually)
//	    by   EventStats, ListEvents, GetRequest
//	waitlist                       SweepHolds                             Query GSI2     EVENT#<eventId>, WAITLISTED in queue order, each shard merged
//
// The transactions the methods make, each one TransactWriteItems of these rows in this
// order, as a test sees them (with Options.StatusLog each status write also takes its
// log entry into its call, which then is a transaction too):
//
//		TRANSACTIONS
//	AddCapacity            capacity added + audit entry + operation marker + capacity shard: pool version + capacity shard: pool version + capacity added to the pool
//	CancelRequest          pool version raised + audit entry + participation cancelled + seat of a cancel to the pool + operation marker + capacity shard: pool version + capacity shard: pool version
//	CloseEvent             event closed + audit entry
//	Confirm                hold confirmed + hold cleared
//	CreateEvent            create event + create event
//	CreateEvent            create event + create event + create event
//	Draw                   draw: announce + event: announced
//	Draw                   draw: freeze the entries + event: drawing
//	ExtendEvent            event end extended + audit entry
//	ExtendEvent            lottery cutoff extended + audit entry + cutoff extended: draw check
//	PauseEvent             event paused + audit entry
//	Release                hold released + seat given to the waitlist + hold cleared
//	ResumeEvent            event resumed + audit entry
//	ServePrequeue          draw: announce + event: announced
//	ServePrequeue          draw: freeze the entries + event: drawing
//	SweepHolds             hold expired + seat given to the waitlist + hold cleared
//	SweepHolds             waitlist served + returned seat taken + hold recorded
//
// Ingest is the design's own writes, no transaction: Participate puts the lock, then
// the request; a duplicate click is answered without a call by the client that saw its
// request queued, else by the lock's failed put. A seat is
// one conditional write that also records whose it is (the request's seat token on
// the capacity item), then SUCCEEDED: a worker without a Handler claims on the
// request's home shard and binds the seat ("first-come seat bound"), two writes and
// no lease; ClaimSeat does the same under a lease (after StartProcessing). A loser of
// an event known to be sold out is a look at its home shard and one write
// (RejectSoldOut). [Client.Submit] is the whole ingest of a click: Participate, send
// the message, MarkQueued (or MarkEnqueueFailed); a lottery's ingest writes nothing
// after the moment its draw may begin, less a margin. The row methods ([Rows]) take
// the request as a [RequestRef] and a worker's hold as a [Lease]. A lost condition is
// an outcome, not an error: every row returns a [Transition] that is not Applied and
// holds the request as the condition found it. An applied one holds the request as the
// write left it: the write's own answer (ALL_NEW) when it is a single UpdateItem, read
// right after it when it is a transaction or StartProcessing (see [Transition]).
package asyncevent
