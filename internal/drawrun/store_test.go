package drawrun

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

var (
	errMismatch = errors.New("mismatch")
	errTooEarly = errors.New("too early")
	errNotFound = errors.New("not found")
)

// cutoff is the last queuedAt of an entry of the tests' events; an entry is queued
// before cutoff+1.
const cutoff = int64(1_000_000)

func testConfig(kind Kind) Config {
	return Config{EventID: "ev", Kind: kind, Concurrency: 2, Now: func() int64 { return cutoff + 5_000 },
		Reread: 11 * time.Second, Mismatch: errMismatch, TooEarly: errTooEarly}
}

// store is a Store in memory: one event's Draw record, its requests (the index shows
// them, unless hidden) and its chunks, with the calls made on it.
type store struct {
	mu       sync.Mutex
	rec      Record
	opensAt  int64
	requests map[string]*Entry
	hidden   map[string]bool // on the table, not shown by GSI2 yet
	chunks   map[string]string
	seats    int64
	calls    []string
	waves    [][]string // the IDs of each wave served, in order
	ats      []int      // each wave's concurrency
	// onRecord runs right after the set is recorded (a late put landing).
	onRecord func(*store)
	// failedFirst: requests a failure reaches before the run's collect does.
	failedFirst map[string]bool
	waveErr     error
}

func newStore(reqs ...Entry) *store {
	st := &store{rec: Record{Collecting: true}, opensAt: cutoff + 1_000, requests: map[string]*Entry{},
		hidden: map[string]bool{}, chunks: map[string]string{}, failedFirst: map[string]bool{}}
	for _, e := range reqs {
		st.put(e)
	}
	return st
}

func (st *store) put(e Entry) {
	if e.EventID == "" {
		e.EventID = "ev"
	}
	st.requests[e.RequestID] = &e
}

func (st *store) call(format string, a ...any) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.calls = append(st.calls, fmt.Sprintf(format, a...))
}

// count returns how many calls begin with prefix.
func (st *store) count(prefix string) int {
	n := 0
	for _, c := range st.calls {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

// waiting makes a waiting request queued at q.
func waiting(id string, q int64) Entry {
	return Entry{RequestID: id, UserID: "u-" + id, RequestedAt: q - 1, QueuedAt: q, State: Waiting, Status: "QUEUED"}
}

func (st *store) Chunk(_ context.Context, hash string, n int) (string, bool, error) {
	st.call("chunk %d", n)
	st.mu.Lock()
	defer st.mu.Unlock()
	ids, ok := st.chunks[fmt.Sprint(hash, "/", n)]
	return ids, ok, nil
}

func (st *store) PutChunk(_ context.Context, hash string, n int, ids string) error {
	st.call("put chunk %d", n)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.chunks[fmt.Sprint(hash, "/", n)] = ids
	return nil
}

func (st *store) rows(keep func(*Entry) bool) []Entry {
	st.mu.Lock()
	defer st.mu.Unlock()
	var rows []Entry
	for _, e := range st.requests {
		if !st.hidden[e.RequestID] && keep(e) {
			row := *e
			row.EventID = ""
			rows = append(rows, row)
		}
	}
	slices.SortFunc(rows, inQueueOrder)
	return rows
}

func (st *store) QueuedBefore(_ context.Context, t int64) ([]Entry, error) {
	st.call("before %d", t)
	return st.rows(func(e *Entry) bool { return e.QueuedAt < t }), nil
}

func (st *store) QueuedFrom(_ context.Context, t int64) ([]Entry, error) {
	st.call("from %d", t)
	return st.rows(func(e *Entry) bool { return e.QueuedAt >= t }), nil
}

func (st *store) QueuedBetween(_ context.Context, from, to int64) ([]Entry, error) {
	st.call("between %d %d", from, to)
	return st.rows(func(e *Entry) bool { return e.QueuedAt >= from && e.QueuedAt < to }), nil
}

func (st *store) Request(_ context.Context, id string) (Entry, error) {
	st.call("request %s", id)
	st.mu.Lock()
	defer st.mu.Unlock()
	e, ok := st.requests[id]
	if !ok {
		return Entry{}, &NotFoundError{Err: errNotFound}
	}
	return *e, nil
}

func (st *store) Record(context.Context) (Record, error) {
	st.call("record")
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.rec, nil
}

func (st *store) Reveal(context.Context) (string, error) {
	st.call("reveal")
	return "5eed", nil
}

func (st *store) Freeze(context.Context) (Record, error) {
	st.call("freeze")
	st.mu.Lock()
	defer st.mu.Unlock()
	st.rec.Collecting = false
	return st.rec, nil
}

func (st *store) Refresh(context.Context) (Bounds, error) {
	st.call("refresh")
	return Bounds{Before: cutoff + 1, OpensAt: st.opensAt}, nil
}

func (st *store) Collect(_ context.Context, id string) (bool, Entry, error) {
	st.call("collect %s", id)
	st.mu.Lock()
	defer st.mu.Unlock()
	e := st.requests[id]
	if st.failedFirst[id] {
		e.State, e.Status, e.ResultCode = Final, "FAILED_FINAL", "FAILED_WORKER"
	}
	if e.State != Waiting || e.Collected {
		return false, *e, nil
	}
	e.Collected = true
	return true, Entry{}, nil
}

func (st *store) RecordEntries(_ context.Context, count int64, hash string, chunks int64, seed string) error {
	st.call("record entries %d %d", count, chunks)
	st.mu.Lock()
	if st.rec.EntriesHash == "" {
		st.rec.EntryCount, st.rec.EntriesHash, st.rec.EntryChunks, st.rec.Seed = count, hash, chunks, seed
	}
	on := st.onRecord
	st.mu.Unlock()
	if on != nil {
		on(st)
	}
	return nil
}

func (st *store) Finalise(_ context.Context, e Entry, won bool) error {
	st.call("finalise %s %v", e.RequestID, won)
	st.mu.Lock()
	defer st.mu.Unlock()
	want := Lost
	if won {
		want = Won
	}
	r := st.requests[e.RequestID]
	switch {
	case r.State == Waiting:
		r.State = want
	case r.State != want:
		return fmt.Errorf("%w: entry %s is %v", errMismatch, e.RequestID, r.State)
	}
	return nil
}

func (st *store) NotDrawn(_ context.Context, id string) error {
	st.call("not drawn %s", id)
	return nil
}

func (st *store) Close(_ context.Context, id string) error {
	st.call("close %s", id)
	return nil
}

func (st *store) SeatsLeft(context.Context) (int64, error) {
	st.call("seats left")
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.seats, nil
}

// ServeWave decides each entry in order: a seat while one is left, else a refusal.
func (st *store) ServeWave(_ context.Context, wave []Entry, at int) error {
	st.call("wave %d at %d", len(wave), at)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.waveErr != nil {
		return st.waveErr
	}
	var ids []string
	for _, e := range wave {
		ids = append(ids, e.RequestID)
		r := st.requests[e.RequestID]
		if st.seats > 0 {
			st.seats--
			r.State, r.Seated = Final, true
		} else {
			r.State = Final
		}
	}
	st.waves = append(st.waves, ids)
	st.ats = append(st.ats, at)
	return nil
}
