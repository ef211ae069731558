package admission

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeStore is a Store in memory: a record, requests by ID, one page of line per
// shard, and the seats left. It counts its calls and applies the writes' conditions
// as the rows state them.
type fakeStore struct {
	mu       sync.Mutex
	rec      Record
	requests map[string]Request
	pages    []Page
	seats    int64
	closed   map[int]bool // home shards known empty
	shards   int
	calls    []string
	waves    []WaveWrite
	decided  [][]string
	claims   []waveClaim
	readErr  error
	loseWave bool // the next wave write loses its condition
}

func newFakeStore() *fakeStore {
	return &fakeStore{requests: map[string]Request{}, shards: 1, closed: map[int]bool{}}
}

func (f *fakeStore) call(s string) {
	f.calls = append(f.calls, s)
}

func (f *fakeStore) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeStore) set(rec Record) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rec = rec
}

func (f *fakeStore) Read(context.Context) (*Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("read")
	if f.readErr != nil {
		return nil, f.readErr
	}
	rec := f.rec
	rec.Wave, rec.Late = slices.Clone(rec.Wave), slices.Clone(rec.Late)
	return &rec, nil
}

func (f *fakeStore) TakeLease(_ context.Context, owner string, now, expiresAt int64) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("lease")
	if f.rec.Owner != "" && f.rec.Owner != owner && f.rec.LeaseExpiresAt > now {
		return false, nil
	}
	f.rec.Owner, f.rec.LeaseExpiresAt = owner, expiresAt
	return true, nil
}

func (f *fakeStore) WriteWave(_ context.Context, w WaveWrite) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("wave")
	if f.loseWave || f.rec.Owner != w.Owner || f.rec.Waves != w.WavesAsRead || f.rec.LateAdds != w.LateAsRead || f.rec.Refusing {
		f.loseWave = false
		return false, nil
	}
	f.waves = append(f.waves, w)
	f.rec.Through, f.rec.Wave, f.rec.WaveDone, f.rec.LeaseExpiresAt = w.Through, w.Wave, false, w.LeaseExpiresAt
	f.rec.Waves++
	f.rec.Late = slices.DeleteFunc(f.rec.Late, func(id string) bool { return slices.Contains(w.Late, id) })
	return true, nil
}

func (f *fakeStore) MarkWaveDone(_ context.Context, owner string, waves int64) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("waveDone")
	if f.rec.Owner != owner || f.rec.Waves != waves {
		return false, nil
	}
	f.rec.WaveDone = true
	return true, nil
}

func (f *fakeStore) AddLate(_ context.Context, id string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("late " + id)
	if f.rec.Refusing {
		return false, nil
	}
	f.rec.Late = append(f.rec.Late, id)
	f.rec.LateAdds++
	return true, nil
}

func (f *fakeStore) SetRefusing(_ context.Context, owner string, wavesAsRead int64) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("refusing")
	if f.rec.Owner != owner || f.rec.Waves != wavesAsRead || f.rec.Refusing {
		return false, nil
	}
	f.rec.Refusing, f.rec.Wave = true, []string{}
	return true, nil
}

func (f *fakeStore) Line(_ context.Context, through string, upTo int64, limit int) ([]Page, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call(fmt.Sprintf("line %s %d", through, limit))
	return f.pages, nil
}

var errNoRequest = errors.New("no such request")

func (f *fakeStore) Request(_ context.Context, id string) (Request, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("request " + id)
	r, ok := f.requests[id]
	if !ok {
		return Request{}, &NotFoundError{Err: errNoRequest}
	}
	return r, nil
}

func (f *fakeStore) SeatsLeft(context.Context) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("seats")
	return f.seats, nil
}

func (f *fakeStore) ClaimsWaves() bool { return true }

func (f *fakeStore) HomeShard(id string) (int, bool) {
	shard := int(id[len(id)-1]) % f.shards
	return shard, !f.closed[shard]
}

func (f *fakeStore) ClaimWaveSeats(_ context.Context, shard int, ids []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.claims = append(f.claims, waveClaim{shard: shard, ids: ids})
	return nil
}

func (f *fakeStore) Decide(_ context.Context, wave []Entry) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	ids := make([]string, len(wave))
	for i, e := range wave {
		ids[i] = e.RequestID
		r := f.requests[e.RequestID]
		r.Decided = true
		f.requests[e.RequestID] = r
		f.seats--
	}
	f.decided = append(f.decided, ids)
	f.call("decide")
	return nil
}

// queued puts requests on the fake table, undecided, and returns them as places of
// the line in the order given.
func (f *fakeStore) queued(ids ...string) []Place {
	f.mu.Lock()
	defer f.mu.Unlock()
	places := make([]Place, len(ids))
	for i, id := range ids {
		r := Request{Entry: Entry{RequestID: id, UserID: "u-" + id, QueuedAt: int64(1000 + i)}}
		f.requests[id] = r
		places[i] = Place{Rank: rank(id), Request: r}
	}
	return places
}

// rank is a test rank: ranks order as the IDs do.
func rank(id string) string { return "QAT#" + id }

// testNow is the fake clock's time.
var testNow = time.UnixMilli(1_000_000)

func newTestAdmission(t *testing.T, f *fakeStore) *Admission {
	t.Helper()
	a := New(f, Config{EventID: "e", Owner: "me", Settle: 100 * time.Millisecond, WaveSize: 4, MaxWaveClaim: 3,
		Clock: func() time.Time { return testNow }})
	a.left = -1
	return a
}
