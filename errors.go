package asyncevent

import (
	"errors"
	"fmt"
	"strings"

	"github.com/asyncevent/asyncevent/internal/rowexec"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// Sentinel errors. Test them with errors.Is; the typed errors below match them.
var (
	// ErrInvalidID reports an ID that cannot be used inside a key: empty, longer than
	// MaxIDLength bytes, not valid UTF-8, containing a character that is not printable
	// or a space, or containing the key separator '#'. Nothing is written for it.
	ErrInvalidID = errors.New("asyncevent: invalid id")

	// ErrMalformedKey reports key text that no key builder of this package could have
	// produced: wrong prefix, wrong number of parts, a bad ID or timestamp inside.
	ErrMalformedKey = errors.New("asyncevent: malformed key")

	// ErrInvalidTime reports a timestamp that cannot be written into a sort key: before
	// the Unix epoch or beyond the 13 digits of epoch milliseconds (year 2286).
	ErrInvalidTime = errors.New("asyncevent: invalid time")

	// ErrInvalidOptions reports Options or arguments that New or a method refuses.
	ErrInvalidOptions = errors.New("asyncevent: invalid options")

	// ErrTableNotFound reports that the configured table does not exist: CheckTable
	// says so, and so does every other call on it (wrapping DynamoDB's
	// ResourceNotFoundException), its message naming the table and how to create it.
	ErrTableNotFound = errors.New("asyncevent: table not found")

	// ErrNotFound reports that a request (or another item asked for by key) does not
	// exist.
	ErrNotFound = errors.New("asyncevent: not found")

	// ErrEventNotFound reports an event that has no EventConfig: ingest refuses it and
	// writes nothing.
	ErrEventNotFound = errors.New("asyncevent: event not found")

	// ErrEventExists reports a CreateEvent for an event ID that is already taken.
	ErrEventExists = errors.New("asyncevent: event already exists")

	// ErrEventNotOpen reports a participation before the event's startsAt: nothing is
	// written.
	ErrEventNotOpen = errors.New("asyncevent: event not open yet")

	// ErrEventClosed reports a participation after the event's endsAt, or after a
	// lottery's cutoff: nothing is written.
	ErrEventClosed = errors.New("asyncevent: event closed")

	// ErrEventPaused reports a participation while an operator has paused the event's
	// ingest (PauseEvent): nothing is written.
	ErrEventPaused = errors.New("asyncevent: event paused")

	// ErrInvalidEvent reports EventSettings that CreateEvent refuses.
	ErrInvalidEvent = errors.New("asyncevent: invalid event")

	// ErrInvalidCursor reports a page cursor that this library did not hand out for
	// the same listing: not decodable, or belonging to another user or event.
	ErrInvalidCursor = errors.New("asyncevent: invalid cursor")

	// ErrEnqueueFailed reports that ingest could not send a request's message: the
	// request is FAILED_FINAL (FAILED_INGEST_ENQUEUE) and the user may participate
	// again.
	ErrEnqueueFailed = errors.New("asyncevent: enqueue failed")

	// ErrNotLottery reports a draw asked of an event that is not a LOTTERY.
	ErrNotLottery = errors.New("asyncevent: not a lottery event")
	// ErrNoPrequeue reports a pre-queue's serve or verification asked of an event
	// without one (EventSettings.PrequeueOpensAt).
	ErrNoPrequeue = errors.New("asyncevent: the event has no pre-queue")

	// ErrDrawTooEarly reports a draw before the lottery's cutoff plus
	// Options.DrawSettleWindow: nothing is written.
	ErrDrawTooEarly = errors.New("asyncevent: too early to draw")

	// ErrDrawMismatch reports a draw (or a pre-queue's serve) that cannot go on from
	// its record: the recorded entries cannot be read back as recorded (a chunk
	// missing, or bytes that do not hash to entriesHash), a recorded entry is gone
	// from the table, or one holds a result other than the draw's. A request that
	// reached the table after the record is none of these: it is answered by a rule
	// (REJECTED_NOT_DRAWN, or the sale's line).
	ErrDrawMismatch = errors.New("asyncevent: entries differ from the draw's")

	// ErrOutcomeUnknown reports an operator's control whose write got no answer (a
	// connection reset, a timeout, the caller's deadline): it may have applied, or may
	// apply when it lands. AddCapacity and CancelRequest name their idempotency key,
	// under which a call again applies at most once and answers what was done; a
	// close, pause, resume or extend is sent once, and the event's audit trail shows it
	// once it applied.
	ErrOutcomeUnknown = errors.New("asyncevent: the outcome is unknown")

	// ErrSeedMismatch reports a draw whose seed does not hash to the commitment the
	// event published: Options.Seeds is not the source the event was created with
	// (a wrong secret), or the stored seed was changed. Nothing is written: the draw
	// is neither frozen nor is any seed revealed.
	ErrSeedMismatch = errors.New("asyncevent: seed does not match its commitment")

	// ErrNoSeedSource reports a draw of an event whose seed is sealed (created with
	// Options.Seeds) by a client without Options.Seeds: nothing is written.
	ErrNoSeedSource = errors.New("asyncevent: no seed source for a sealed seed")

	// ErrTableMismatch reports a table whose keys or indexes differ from the design.
	// The error is a *TableMismatchError listing every difference: from CheckTable
	// and CreateTable, and from any call that DynamoDB refuses as invalid
	// (ValidationException, wrapped) on such a table, which the client then
	// describes (one DescribeTable, reused for 10 seconds).
	ErrTableMismatch = errors.New("asyncevent: table does not match the design")

	// ErrThrottled reports a call DynamoDB refused for throughput after the SDK's and
	// the library's own retries: a partition key over its share (a hot event's index
	// key, its CAPACITY item), an index's back-pressure on the base-table write, the
	// account's request limit, or transactions that kept conflicting on one item.
	// Nothing half-written is left behind; the caller may try again later (an HTTP
	// service answers 503 with Retry-After).
	ErrThrottled = errors.New("asyncevent: throttled")
)

// InvalidIDError is the error for an ID that cannot be used inside a key. It matches
// ErrInvalidID.
type InvalidIDError struct {
	Field  string // which ID: "eventId", "userId", "requestId", …
	Reason string // what is wrong with it
}

func (e *InvalidIDError) Error() string {
	return fmt.Sprintf("asyncevent: invalid %s: %s", e.Field, e.Reason)
}

// Is reports whether target is ErrInvalidID.
func (e *InvalidIDError) Is(target error) bool { return target == ErrInvalidID }

// TableMismatchError lists how a table differs from the one CreateTable makes. It
// matches ErrTableMismatch.
type TableMismatchError struct {
	Table    string
	Problems []string
}

func (e *TableMismatchError) Error() string {
	return fmt.Sprintf("asyncevent: table %s does not match the design: %s",
		e.Table, strings.Join(e.Problems, "; "))
}

// Is reports whether target is ErrTableMismatch.
func (e *TableMismatchError) Is(target error) bool { return target == ErrTableMismatch }

// throttleCodes are DynamoDB's answers for a refused throughput.
var throttleCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true, "ThrottlingException": true,
	"RequestLimitExceeded": true, "TransactionConflictException": true,
}

// isThrottle reports whether err is DynamoDB refusing throughput: a throttling error,
// or a cancelled transaction whose reasons are throttling or conflicts only.
func isThrottle(err error) bool {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && throttleCodes[apiErr.ErrorCode()] {
		return true
	}
	return rowexec.RefusedForThroughput(rowexec.CancellationReasons(err))
}

// isTransactionConflict reports whether a single write was refused because a
// transaction held its item.
func isTransactionConflict(err error) bool {
	var conflict *types.TransactionConflictException
	return errors.As(err, &conflict)
}

// throttled wraps err with ErrThrottled when it is DynamoDB refusing throughput.
func throttled(err error) error {
	if err != nil && !errors.Is(err, ErrThrottled) && isThrottle(err) {
		return fmt.Errorf("%w: %w", ErrThrottled, err)
	}
	return err
}

// malformed returns an ErrMalformedKey error naming the key text and the reason.
func malformed(kind, text, reason string) error {
	return fmt.Errorf("%w: %s %q: %s", ErrMalformedKey, kind, text, reason)
}

// errNoCapacity reports a FIRST_COME message whose event has no CAPACITY item.
var errNoCapacity = errors.New("asyncevent: event has no capacity item")

// Permanent marks err as not worth retrying: the worker ends the request FAILED_FINAL
// with failureClass NON_RETRYABLE.
func Permanent(err error) error { return &permanentError{err} }

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }

func (e *permanentError) Unwrap() error { return e.err }
