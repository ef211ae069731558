package asyncevent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"regexp"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/asyncevent/asyncevent/internal/cache"
	"github.com/asyncevent/asyncevent/internal/ddb"
	"github.com/asyncevent/asyncevent/internal/observedb"
	"github.com/asyncevent/asyncevent/internal/progress"
	"github.com/asyncevent/asyncevent/queue"
	"github.com/asyncevent/asyncevent/seed"
)

// DynamoDB is the part of the DynamoDB API the library uses: GetItem, PutItem,
// UpdateItem, DeleteItem, Query and TransactWriteItems, and for the table
// CreateTable, DescribeTable, DescribeTimeToLive and UpdateTimeToLive, each with the
// signature of *dynamodb.Client's method. *dynamodb.Client satisfies it; tests can
// pass a wrapper that injects faults. (Declared once, in internal/ddb, for the
// library's internal packages too.)
type DynamoDB = ddb.API

// DefaultTableName is the table name of the design, used when Options.TableName is empty.
const DefaultTableName = "AsyncEventTable"

// The default item lifetimes.
const (
	defaultRequestTTL   = 90 * 24 * time.Hour
	defaultLockTTL      = 7 * 24 * time.Hour
	defaultStatusLogTTL = 30 * 24 * time.Hour
)

// Options configures a Client. The zero value is valid: every field has a default.
type Options struct {
	// TableName is the DynamoDB table. Default: "AsyncEventTable".
	TableName string

	// Clock returns the current time; every stored time comes from it.
	// Default: time.Now.
	Clock func() time.Time

	// NewRequestID returns a new request ID, which must pass ValidateID.
	// Default: a UUIDv7 string, so IDs sort by creation time; for an event with index
	// shards, one that falls on the event's next shard in turn (its last random bits
	// varied until it does), so that a client's requests reach the shards' keys
	// evenly rather than in random bursts.
	NewRequestID func() string

	// Logger receives the library's logs, with requestId and eventId attributes.
	// Default: a logger that discards everything.
	Logger *slog.Logger

	// RequestTTL is how long a Request item is kept after it was received.
	// Default: 90 days. Negative: kept for ever (no ttl attribute).
	RequestTTL time.Duration

	// LockTTL is how long an IdempotencyLock is kept after its event ends (events
	// without an end keep their locks). Default: 7 days. Negative: kept for ever.
	LockTTL time.Duration

	// StatusLogTTL is how long a StatusLog entry is kept. Default: 30 days.
	// Negative: kept for ever.
	StatusLogTTL time.Duration

	// StatusLog turns on the optional StatusLog: every status transition then also
	// writes a LOG# item, in the same transaction as the transition, naming the status
	// left and the status entered. A transition allowed from several statuses
	// (StartProcessing, MarkFailed) then tries them one at a time, and costs a second
	// call when the request is not in the likeliest. Default: off.
	StatusLog bool

	// EventCacheTTL is how long ingest trusts an event config it has read, so a spike
	// does not read CONFIG on every click. Default: 5 seconds. Negative: no caching.
	EventCacheTTL time.Duration

	// RedriveAfter is how long a request may sit in RECEIVED (written, message not
	// known to be sent) before a duplicate click sends its message again.
	// Default: 30 seconds.
	RedriveAfter time.Duration

	// DrawSettleWindow is how long after a lottery's cutoff Draw waits, and after a
	// pre-queue's start ServePrequeue waits, so that enqueues and entries in flight
	// at the cutoff (the start) land first: a program that serves a pre-queue right
	// after its start waits this long. Ingest's writes of a request and a worker's
	// failure of an entry end before it, less a margin (the
	// smaller of 1 s and a quarter of the window), so every client of one event, in
	// every process, must use the same window. At least 1 second; a shorter
	// or negative one is ErrInvalidOptions. Default: 30 seconds.
	DrawSettleWindow time.Duration

	// Seeds gives the seeds of the LOTTERY events, and of the pre-queues, this client
	// creates and draws or serves (seed.HMAC, or a seed.SourceFunc over AWS KMS): the
	// table then holds only each seed's commitment until the draw (the serve) reveals
	// it. The client that draws or serves such an event needs the same source; ingest
	// and workers need none.
	// Default: nil, for development only: each event gets a random seed stored in
	// plain text on its Draw record (seedMode UNSEALED), which anyone who can read
	// the table can read before the draw. CreateEvent logs a warning for each, to
	// Logger.
	Seeds seed.Source

	// DrawConcurrency is how many entries Draw finalises at once. Default: 16.
	DrawConcurrency int

	// DuplicateCacheSize bounds the (event, user) pairs whose request this client has
	// seen queued, so that Submit answers a repeat click of the same user on this
	// client without a call. A queued request's lock is never released, so the answer
	// cannot go stale. Default: 100,000 (a few MB). Negative: no cache.
	DuplicateCacheSize int

	// ProgressEvery is how often this client writes its counts of the events'
	// progress while it counts, at the multiples of it on the clock: the requests it queued (Submit) and the requests its
	// workers finished (Processor), one write per event and second counted, from which
	// a poll of a waiting request tells its place in line (Request.Queue,
	// Client.QueueStats). The place is as fresh as the slowest node's counts, and the
	// readers take their own ProgressEvery as every node's: set it alike on every
	// node. Default: 200 ms. Negative: nothing counted, no place in line.
	ProgressEvery time.Duration

	// ProgressCacheTTL is how long this client keeps an event's progress it has read,
	// so that thousands of polls a second cost one read of each of the event's
	// progress partitions a second; a poll that the copy would place poorly (its
	// request's arrival still being counted, or near the front) reads it again once
	// the nodes' writes of a later flush have landed (once per flush, and at most
	// every 100 ms).
	// Default: 1 second.
	ProgressCacheTTL time.Duration

	// Observer, if set, watches Submit, the messages it sends, every DynamoDB call
	// and every message processed, for traces and metrics (package otelasyncevent).
	// Default: none.
	Observer Observer
}

// The defaults of the Options fields that are not TTLs.
const (
	defaultEventCacheTTL = 5 * time.Second
	defaultRedriveAfter  = 30 * time.Second

	DefaultDrawSettleWindow = 30 * time.Second
	minDrawSettleWindow     = time.Second
	defaultDrawConcurrency  = 16

	defaultDuplicateCacheSize = 100_000
)

// Client runs the access patterns of the design (see the package doc) on one table. It is safe for concurrent
// use.
//
// Its methods are what a service and an operator call (package doc, "What a service calls"): Submit,
// GetRequest, Confirm, Draw, the controls, the reads of the admin's screens… The row methods beneath
// them, whose rows Submit and the Worker write for a service, are a layer of their own: Client.Rows
// (package doc, "Two layers").
type Client struct {
	db   DynamoDB
	opts Options
	// events keeps event configs for Options.EventCacheTTL, so that a spike does not
	// read CONFIG on every click; failed reads, unknown events included, are not kept.
	events *cache.Loaded[eventItem]
	// queued answers a duplicate click of a request already queued without a call
	// (Options.DuplicateCacheSize), by the lock's idempotency key.
	queued *cache.Ring[string, Participation]
	turns  *shardTurns // nil with Options.NewRequestID set
	// waitFrom is, by event ID, the queue key after which the hold sweep's walk of an
	// event's requests begins: every request up to it is settled for good.
	waitFrom sync.Map
	// progress counts the events' progress this client makes (nil: not counted);
	// progressReads keeps what it read of it.
	progress      *progressMeter
	progressReads progress.Cache
	// waitlistCounts keeps, by event ID, what the client read of a waitlist, for
	// the places of its requests.
	waitlistCounts *cache.Loaded[waitlistCounts]
	// prequeues keeps, by event ID, what the client read of a pre-queue's order, for
	// the places of its entries (*progress.Prequeue).
	prequeues sync.Map
}

// Rows holds the row methods: the writes of the access-pattern table that Submit and the
// Worker make for a service (Participate, MarkQueued and MarkEnqueueFailed, Submit's
// steps; StartProcessing, ClaimSeat, MarkCapacityRejected, RejectSoldOut, MarkFailed
// and MarkClosed, the worker's and the draw's), each method's doc comment naming the
// rows it writes. They are for a worker of one's own and for tests that put a request
// in a given state; a service that calls Submit and runs a Worker never calls them
// (package doc, "Two layers"). Get it from Client.Rows: it works on that Client's table
// with its options, and is safe for concurrent use.
type Rows struct {
	c *Client
}

// Rows returns the row methods of c's table.
func (c *Client) Rows() *Rows { return &Rows{c: c} }

// tableNamePattern is DynamoDB's rule for table names.
var tableNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_.-]{3,255}$`)

// New returns a Client that works on db with opts. It does no I/O; call CreateTable
// or CheckTable to make or check the table.
func New(db DynamoDB, opts Options) (*Client, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: nil DynamoDB client", ErrInvalidOptions)
	}
	if opts.TableName == "" {
		opts.TableName = DefaultTableName
	}
	if !tableNamePattern.MatchString(opts.TableName) {
		return nil, fmt.Errorf("%w: table name %q: want 3 to 255 of a-z A-Z 0-9 _ . -", ErrInvalidOptions, opts.TableName)
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	var turns *shardTurns
	if opts.NewRequestID == nil {
		opts.NewRequestID = newUUIDv7
		turns = &shardTurns{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.RequestTTL = orDefault(opts.RequestTTL, defaultRequestTTL)
	opts.LockTTL = orDefault(opts.LockTTL, defaultLockTTL)
	opts.StatusLogTTL = orDefault(opts.StatusLogTTL, defaultStatusLogTTL)
	opts.EventCacheTTL = orDefault(opts.EventCacheTTL, defaultEventCacheTTL)
	opts.RedriveAfter = orDefault(opts.RedriveAfter, defaultRedriveAfter)
	opts.DrawSettleWindow = orDefault(opts.DrawSettleWindow, DefaultDrawSettleWindow)
	if opts.DrawSettleWindow < minDrawSettleWindow {
		return nil, fmt.Errorf("%w: DrawSettleWindow %s: at least %s, so that a write in flight at the entries' fence lands before the draw reads them",
			ErrInvalidOptions, opts.DrawSettleWindow, minDrawSettleWindow)
	}
	if opts.DrawConcurrency <= 0 {
		opts.DrawConcurrency = defaultDrawConcurrency
	}
	if opts.DuplicateCacheSize == 0 {
		opts.DuplicateCacheSize = defaultDuplicateCacheSize
	}
	if opts.Observer != nil {
		db = observeDynamoDB(db, opts.Observer, opts.TableName)
	}
	db = newTableDB(db, opts.TableName, opts.Clock)
	opts.ProgressEvery = orDefault(opts.ProgressEvery, defaultProgressEvery)
	opts.ProgressCacheTTL = orDefault(opts.ProgressCacheTTL, defaultProgressCacheTTL)
	c := &Client{
		db: db, opts: opts,
		events:         cache.NewLoaded[eventItem](opts.EventCacheTTL, opts.Clock, bookkeepingTimeout),
		queued:         cache.NewRing[string, Participation](opts.DuplicateCacheSize),
		turns:          turns,
		waitlistCounts: cache.NewLoaded[waitlistCounts](waitlistCacheTTLs*opts.ProgressCacheTTL, opts.Clock, bookkeepingTimeout),
	}
	if opts.ProgressEvery > 0 {
		c.progress = newProgressMeter(c, opts.ProgressEvery)
	}
	return c, nil
}

// TableName returns the table the client works on.
func (c *Client) TableName() string { return c.opts.TableName }

// now returns the client's current time in epoch milliseconds.
func (c *Client) now() EpochMillis { return MillisOf(c.opts.Clock()) }

// expiry returns the ttl attribute (epoch seconds) of an item that lives for d after
// from, or 0 (no ttl attribute) when d is negative.
func expiry(from EpochMillis, d time.Duration) int64 {
	if d < 0 {
		return 0
	}
	return from.Time().Add(d).Unix()
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

func newUUIDv7() string {
	// NewV7 fails only when the system's random source does, which Go's crypto/rand
	// no longer reports as an error.
	return uuid.Must(uuid.NewV7()).String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read does not fail
	return hex.EncodeToString(b)
}

// Observer watches the library at work, for traces and metrics, without depending on
// any telemetry library: package otelasyncevent implements it with OpenTelemetry. Set
// it in Options.Observer; a nil Observer costs nothing.
//
// Each method is handed the work as next and must call it once, with ctx or a context
// derived from it (one carrying a span, say): the calls the work makes receive that
// context, so a span started for Submit is the parent of the spans of its DynamoDB
// calls and of its Send. next returns the work's outcome for the observer to record,
// and the work's outcome stands whatever the observer does; a method that returns
// without having called next has the work run after it returns, unobserved. The
// methods are called concurrently.
type Observer interface {
	// Submit observes Client.Submit of eventID by userID. next returns the
	// participation and the error that Submit returns.
	Submit(ctx context.Context, eventID, userID string, next func(context.Context) (Participation, error))

	// Send observes the sending of one request's message, by Submit or by
	// Client.Sweep, and may add attributes to it (a trace context, say): next sends
	// the message it is given, and returns the queue's error.
	Send(ctx context.Context, m queue.OutgoingMessage, next func(context.Context, queue.OutgoingMessage) error)

	// DynamoDB observes one call of the DynamoDB client; next returns its error, as
	// the SDK's retryer left it. A write that DynamoDB refused for throughput alone,
	// which the library sends again, is observed once per attempt.
	DynamoDB(ctx context.Context, call DynamoDBCall, next func(context.Context) error)

	// Process observes the processing of one delivery by a Processor, a Worker or
	// the Lambda adapter, from its decoding to its outcome; next returns the
	// outcome that ProcessOptions.OnOutcome receives too.
	Process(ctx context.Context, d queue.Delivery, next func(context.Context) Outcome)
}

// DynamoDBCall describes one call of the DynamoDB client, for Observer.DynamoDB.
type DynamoDBCall struct {
	// Operation is the DynamoDB API operation: "PutItem", "UpdateItem",
	// "DeleteItem", "TransactWriteItems", "GetItem", "Query", or one of the table's
	// set-up ("CreateTable", "DescribeTable", "DescribeTimeToLive",
	// "UpdateTimeToLive").
	Operation string

	// Table is the client's table (Options.TableName).
	Table string

	// Row names the rows of the access-pattern table (see the package doc) that a
	// write makes, joined by " + " for a TransactWriteItems in the order of its
	// items ("first-come success + first-come capacity"); "" for a read or a call
	// of the table's set-up.
	Row string
}

// observeDynamoDB returns db with every call going through obs.DynamoDB, described
// as a call on table.
func observeDynamoDB(db DynamoDB, obs Observer, table string) DynamoDB {
	return observedb.New(db, table, func(ctx context.Context, call observedb.Call, next func(context.Context) error) {
		obs.DynamoDB(ctx, DynamoDBCall{Operation: call.Operation, Table: call.Table, Row: call.Row}, next)
	})
}

// bookkeepingTimeout bounds the writes that must finish once begun (an ingest's, a
// final failure's, a hold's record, a shard's empty flag): they run even when the
// caller's context ends (a client that hung up), since a lock without its request, a
// message on its way without QUEUED, or a seat without its record must not be left
// behind.
const bookkeepingTimeout = 10 * time.Second
