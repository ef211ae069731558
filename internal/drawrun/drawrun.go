package drawrun

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"time"
)

// Kind is the kind of a draw.
type Kind int

// The kinds of draw.
const (
	// Lottery: a LOTTERY event's draw. Its entries are the requests queued by the
	// cutoff that are waiting or drawn already (State.IsEntry), each collected before
	// it is recorded.
	Lottery Kind = iota
	// Prequeue: a FIRST_COME event's pre-queue. Its entries are every request queued
	// before the start, whatever became of it.
	Prequeue
)

// Config configures a run over one event.
type Config struct {
	EventID string
	Kind    Kind
	// Concurrency is how many reads or writes of entries (collects, chunks,
	// finalisations) run at once, and how many entries a wave of the serve claims at
	// once (Options.DrawConcurrency).
	Concurrency int
	// Now returns the current time (epoch ms).
	Now func() int64
	// Reread is how far before the entries' bound the requests are read again once
	// the set is recorded: the settle window plus the bookkeeping timeout, where a put
	// held past the entries' fence, or sent by a clock behind, falls.
	Reread time.Duration
	// Mismatch is wrapped by every error that says the table cannot explain the
	// record (a chunk missing or altered, a recorded entry gone or not an entry);
	// TooEarly by the error of a run frozen under bounds not yet past.
	Mismatch, TooEarly error
}

// Record is what a run reads of the event's Draw record.
type Record struct {
	// Collecting: the record is still COLLECTING, not frozen by any run yet.
	Collecting bool
	// Seed is the revealed seed, hex (an unsealed event's is stored from its
	// creation).
	Seed string
	// EntryCount, EntriesHash and EntryChunks are set by the record of the entries:
	// how many, SHA-256 (hex) of their sorted IDs each followed by a newline, and how
	// many chunks hold those bytes. EntriesHash is empty until then.
	EntryCount  int64
	EntriesHash string
	EntryChunks int64
}

// Bounds are the bounds of the entries under the event's config.
type Bounds struct {
	// Before: an entry was queued before it (epoch ms), the cutoff plus 1 ms or the
	// start.
	Before int64
	// OpensAt is when the run may begin (epoch ms): the entries' cutoff plus the
	// settle window.
	OpensAt int64
}

// State is where a request stands, as a run reads it.
type State int

// The states of a request.
const (
	Unread   State = iota // no status read: the request was not found where it was looked for
	Waiting               // RECEIVED or QUEUED: nobody decided it yet
	Deciding              // PROCESSING: a worker holds it
	Decided               // HELD or WAITLISTED: decided, not final
	Won                   // SUCCEEDED with SUCCESS: a lottery's win, a first-come seat
	Lost                  // REJECTED with REJECTED_LOTTERY_LOSE: a lottery's loss
	Final                 // any other final status
)

// IsFinal reports whether a request in state s never changes again.
func (s State) IsFinal() bool { return s == Won || s == Lost || s == Final }

// IsEntry reports whether a lottery request in state s, queued by the cutoff, takes
// part in the draw: waiting for it (collected by a worker or not), or finalised by it.
func (s State) IsEntry() bool { return s == Waiting || s == Won || s == Lost }

// decided reports whether the worker is done with a request in state s: final, or
// HELD or WAITLISTED.
func (s State) decided() bool { return s.IsFinal() || s == Decided }

// Entry is a request as a run reads it: a row of GSI2, or the request item.
type Entry struct {
	RequestID string
	// EventID is set when the request item was read (Store.Request); a row of GSI2
	// leaves it empty.
	EventID     string
	UserID      string
	RequestedAt int64 // epoch ms
	QueuedAt    int64 // epoch ms
	State       State
	// Collected: a worker, or a draw, collected the lottery entry (startedAt).
	Collected bool
	// Seated: the first-come request won a seat, whatever became of it since (held,
	// confirmed, released, expired, cancelled).
	Seated bool
	// Status and ResultCode are the request's as read: a run decides by State, and
	// only hands them back to the Store.
	Status, ResultCode string
}

// CompareQueued orders two requests by queuedAt, then request ID: the order of GSI2SK.
func CompareQueued(aQueuedAt int64, aID string, bQueuedAt int64, bID string) int {
	return cmp.Or(cmp.Compare(aQueuedAt, bQueuedAt), strings.Compare(aID, bID))
}

// inQueueOrder orders entries by (queuedAt, requestId).
func inQueueOrder(a, b Entry) int {
	return CompareQueued(a.QueuedAt, a.RequestID, b.QueuedAt, b.RequestID)
}

// NotFoundError is a Store's error for a request that is not on the table.
type NotFoundError struct{ Err error }

func (e *NotFoundError) Error() string { return e.Err.Error() }
func (e *NotFoundError) Unwrap() error { return e.Err }

// ErrCountOnly: a Draw record whose entries were recorded by a version that stored
// only their count and hash, no chunks.
var ErrCountOnly = errors.New("asyncevent: the entries were recorded by count and hash only")

// Chunks reads the chunks of a recorded set of entries.
type Chunks interface {
	// Chunk reads chunk n of the set whose hash is hash, strongly consistent: its
	// IDs, each followed by a newline; found is false when there is no such chunk.
	Chunk(ctx context.Context, hash string, n int) (ids string, found bool, err error)
}

// Queue reads the event's requests from GSI2, in queue order (every index shard).
type Queue interface {
	// QueuedBefore reads the requests queued before t (epoch ms).
	QueuedBefore(ctx context.Context, t int64) ([]Entry, error)
	// QueuedFrom reads the requests queued at t or later.
	QueuedFrom(ctx context.Context, t int64) ([]Entry, error)
	// QueuedBetween reads the requests queued at from or later and before to.
	QueuedBetween(ctx context.Context, from, to int64) ([]Entry, error)
}

// Requests reads the event's requests one by one.
type Requests interface {
	// Request reads a request strongly consistent; one not on the table is a
	// *NotFoundError.
	Request(ctx context.Context, id string) (Entry, error)
}

// Reader reads the event's requests, from GSI2 and one by one.
type Reader interface {
	Queue
	Requests
}

// Store is the event's table as Open sees it. A condition that fails is an outcome
// the method reports, not an error.
type Store interface {
	Chunks
	Queue
	// Record reads the event's Draw record, strongly consistent.
	Record(ctx context.Context) (Record, error)
	// Reveal returns the seed (hex) the record of the entries is to reveal, the
	// Record last read's or the sealed source's, checked against the commitment the
	// event published: a seed that does not hash to it is an error, found before
	// anything is written.
	Reveal(ctx context.Context) (string, error)
	// Freeze moves the Draw record and the config from COLLECTING to DRAWING in one
	// write, conditional on the record COLLECTING and on the config's bounds as read
	// (bounds that moved since are an error), and reads the record again: another
	// run's freeze stands.
	Freeze(ctx context.Context) (Record, error)
	// Refresh reads the event's config again, strongly consistent, and returns the
	// entries' bounds under it; from then on the Store works under that config.
	Refresh(ctx context.Context) (Bounds, error)
	// Collect collects a lottery entry no worker collected (startedAt), conditional
	// on it waiting and not collected; when the condition fails, now is the request
	// as the refusal found it.
	Collect(ctx context.Context, id string) (applied bool, now Entry, err error)
	// PutChunk writes chunk n of the set whose hash is hash, with no condition: its
	// key fixes its content.
	PutChunk(ctx context.Context, hash string, n int, ids string) error
	// RecordEntries records the set by count, hash and chunks and reveals the seed
	// on the Draw record, conditional on it DRAWING with no set recorded: when
	// another run recorded one first, nothing is written and that set stands.
	RecordEntries(ctx context.Context, count int64, hash string, chunks int64, seed string) error
}

// Results is the event's table as a lottery's finalisation sees it.
type Results interface {
	Reader
	// Finalise writes the result of a recorded entry, the draw's win or loss,
	// conditional on it waiting; an entry already final, or found final by the
	// refusal, must hold that result (else an error that wraps Config.Mismatch).
	Finalise(ctx context.Context, e Entry, won bool) error
	// NotDrawn ends a request queued by the cutoff that the record does not name,
	// conditional on it waiting.
	NotDrawn(ctx context.Context, id string) error
	// Close ends a request queued after the cutoff, conditional on it waiting.
	Close(ctx context.Context, id string) error
}

// Seats is the event's table as a pre-queue's serve sees it.
type Seats interface {
	Reader
	// SeatsLeft reads the seats an entry's claim may take, strongly consistent.
	SeatsLeft(ctx context.Context) (int64, error)
	// ServeWave decides each entry of the wave as a worker would, at most at at
	// once, and returns once every one is decided: an error when one is not.
	ServeWave(ctx context.Context, wave []Entry, at int) error
}
