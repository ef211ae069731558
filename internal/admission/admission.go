package admission

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"
)

const (
	// Tick is how often an admission reads its line, and how often a process that
	// does not hold the admission's lease reads the record.
	Tick = 25 * time.Millisecond
	// leaseFor is how long an admission holds its record before another process may
	// take it over: liveness only (the record's compare-and-set decides).
	leaseFor = 3 * time.Second
	// idleFor is how long an admission goes on once no delivery of its process waits
	// on it.
	idleFor = 2 * time.Second
	// waveTimeout bounds the deciding of one wave: a wave not decided by then is
	// resumed from the record.
	waveTimeout = 30 * time.Second
	// waveClaimTimeout bounds a wave's seat writes: a write unanswered by then is left
	// (it may still land), and its requests send their own claims, so that one write
	// that hangs never holds the whole wave.
	waveClaimTimeout = 2 * time.Second
)

// WaveSize is the most requests an admission decides at once, for a processor that
// decides drawConcurrency requests of a draw at once.
func WaveSize(drawConcurrency int) int { return 4 * drawConcurrency }

// Record is an event's admission record, as read or as written.
type Record struct {
	// Through is the rank of the last request the admission has passed: every
	// request ranked at or before it is decided, or is in Wave, or is a late arrival.
	Through string
	// Wave names the requests of the latest wave, which are decided before the next;
	// WaveDone records that they are.
	Wave     []string
	WaveDone bool
	// Waves counts the waves written, LateAdds the late arrivals added: a wave write
	// names both as read (its compare-and-set).
	Waves    int64
	LateAdds int64
	// Refusing: the admission found no seat left once every wave was decided; every
	// request not decided is then refused by the worker that meets it.
	Refusing bool
	// Late names the late arrivals workers found while the admission was not
	// refusing: its next wave takes them first.
	Late []string
	// Owner holds the lease until LeaseExpiresAt (epoch milliseconds).
	Owner          string
	LeaseExpiresAt int64
}

// Passed reports whether the admission has passed rank without deciding it: rank is
// at or before its watermark and no wave of it names id.
func (r *Record) Passed(rank, id string) bool {
	return rank <= r.Through && !slices.Contains(r.Wave, id)
}

// Entry is a request as a wave holds it: what deciding it takes. Times are epoch
// milliseconds.
type Entry struct {
	RequestID   string
	UserID      string
	RequestedAt int64
	QueuedAt    int64
}

// Request is a request as read: its entry, and whether the worker is done with it
// (final, or held or waitlisted) with its result code.
type Request struct {
	Entry
	Decided    bool
	ResultCode string
}

// Place is a request in the line: its rank (GSI2SK) and the request as the index
// shows it.
type Place struct {
	Rank string
	Request
}

// Page is one index shard's page of the line, in rank order; More reports that the
// shard holds more after it.
type Page struct {
	Places []Place
	More   bool
}

// WaveWrite is a wave written on the record ("admission: wave", or "admission: wave
// (late)" when it takes late arrivals), under the lease and the compare-and-set on
// the record's counts as read.
type WaveWrite struct {
	Owner       string
	WavesAsRead int64
	LateAsRead  int64
	Through     string   // the new watermark
	Wave        []string // the requests of the wave, by name
	Late        []string // the late arrivals it takes out of the record's late set
	// LeaseExpiresAt is the lease's new expiry (epoch milliseconds).
	LeaseExpiresAt int64
}

// NotFoundError is a Store's error for a request that is not on the table.
type NotFoundError struct{ Err error }

func (e *NotFoundError) Error() string { return e.Err.Error() }
func (e *NotFoundError) Unwrap() error { return e.Err }

// Records is the event's admission record. Each write is conditional; a lost
// condition is an outcome, applied false with a nil error (another process holds the
// record, or moved it on: the next step reads it again).
type Records interface {
	// Read reads the record strongly consistent; a record not written yet is the zero
	// Record.
	Read(ctx context.Context) (*Record, error)
	// TakeLease takes or renews the lease for owner until expiresAt ("admission:
	// lease": no owner yet, owner's own, or expired at now).
	TakeLease(ctx context.Context, owner string, now, expiresAt int64) (applied bool, err error)
	// WriteWave writes the next wave.
	WriteWave(ctx context.Context, w WaveWrite) (applied bool, err error)
	// MarkWaveDone records the record's wave number waves decided ("admission: wave
	// decided": owner's lease, the count of waves).
	MarkWaveDone(ctx context.Context, owner string, waves int64) (applied bool, err error)
	// AddLate adds a late arrival to the late set ("admission: late arrival":
	// condition not refusing).
	AddLate(ctx context.Context, requestID string) (applied bool, err error)
	// SetRefusing records that no seat is left ("admission: refusing": owner's lease,
	// the count of waves as read, not refusing).
	SetRefusing(ctx context.Context, owner string, wavesAsRead int64) (applied bool, err error)
}

// Requests is the event's line and its requests.
type Requests interface {
	// Line reads one page of each index shard of the requests ranked after through
	// and queued at or before upTo (epoch milliseconds), at most limit+1 each (the
	// watermark itself may be the first); none when upTo's rank is not after through.
	Line(ctx context.Context, through string, upTo int64, limit int) ([]Page, error)
	// Request reads a request strongly consistent; one not on the table is a
	// *NotFoundError.
	Request(ctx context.Context, requestID string) (Request, error)
}

// Seats is the event's seats and the deciding of a wave.
type Seats interface {
	// SeatsLeft reads the seats a claim may take, strongly consistent.
	SeatsLeft(ctx context.Context) (int64, error)
	// ClaimsWaves reports whether a wave takes its requests' seats itself before they
	// are decided (no Handler runs first, the event is not known sold out).
	ClaimsWaves() bool
	// HomeShard returns the request's home capacity shard, and whether it may hold a
	// seat (not known empty).
	HomeShard(requestID string) (shard int, open bool)
	// ClaimWaveSeats takes the home seats of requests on shard in one write ("first-
	// come wave seats"), and remembers those it took for their requests' deciding. A
	// lost condition takes none and is no error.
	ClaimWaveSeats(ctx context.Context, shard int, requestIDs []string) error
	// Decide decides every request of a wave, each as a worker would, until each is
	// decided or ctx ends.
	Decide(ctx context.Context, wave []Entry) error
}

// Store is what an admission reads and writes.
type Store interface {
	Records
	Requests
	Seats
}

// Config is an admission's settings.
type Config struct {
	EventID string // for the logs
	Owner   string // the lease owner the admission of this process writes
	// Settle is how far behind now the admission reads the line.
	Settle time.Duration
	// WaveSize is the most requests a wave decides (WaveSize); MaxWaveClaim the most
	// seats one wave write takes.
	WaveSize     int
	MaxWaveClaim int
	// Clock is the time the lease is reckoned in (default time.Now); Logger takes the
	// loop's warnings (default: discarded).
	Clock  func() time.Time
	Logger *slog.Logger
}

// Admission is one process's part in a ranked event's admission: the record as last
// read, the deliveries waiting on it, and the loop that reads it (and, holding the
// lease, decides the line) while any wait. It is safe for concurrent use.
type Admission struct {
	store Store
	cfg   Config

	mu      sync.Mutex
	waiters int
	running bool
	rec     *Record       // as last read or written; nil before the first read
	changed chan struct{} // closed when rec changes

	// left, the loop's own: the seats left as last read strongly consistent, less
	// the requests of the waves this loop decided since; -1 when not known. It
	// holds while the record's count of waves is leftAt: any other wave sets it aside.
	left, leftAt int64
	// decided is the number of the last wave this loop decided (the record's count
	// of waves once it was written), whose end the record may not say yet.
	decided int64
}

// New returns the admission of one event over store; its loop runs while deliveries
// wait (Join).
func New(store Store, cfg Config) *Admission {
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Admission{store: store, cfg: cfg, changed: make(chan struct{})}
}

// View returns the record as last read (nil before the first read) and a channel
// closed when it changes.
func (a *Admission) View() (*Record, <-chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rec, a.changed
}

// publish makes rec the record the waiting deliveries see.
func (a *Admission) publish(rec *Record) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rec = rec
	close(a.changed)
	a.changed = make(chan struct{})
}

// Join counts a waiting delivery, and starts the loop if it is not running; the
// loop outlives ctx's cancel.
func (a *Admission) Join(ctx context.Context) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.waiters++
	if !a.running {
		a.running = true
		go a.run(context.WithoutCancel(ctx))
	}
}

// Leave uncounts a waiting delivery.
func (a *Admission) Leave() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.waiters--
}

// idle reports whether no delivery has waited for idleFor; it then stops the loop,
// under the same lock Join starts it under.
func (a *Admission) idle(since *time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.waiters > 0 {
		*since = time.Now()
		return false
	}
	if time.Since(*since) < idleFor {
		return false
	}
	a.running = false
	return true
}
