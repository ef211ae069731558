package workloop

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent/queue"
)

// recorder is a queue.Memory that records the loop's deletes and visibility changes,
// by message body.
type recorder struct {
	*queue.Memory
	mu      sync.Mutex
	body    map[string]string // receipt → body
	deletes [][]string
	changes []string // "body timeout"
}

func newRecorder(fifo bool) *recorder {
	return &recorder{Memory: queue.NewMemory(queue.MemoryOptions{FIFO: fifo}), body: map[string]string{}}
}

func (r *recorder) Receive(ctx context.Context, max int, wait, visibility time.Duration) ([]queue.Delivery, error) {
	ds, err := r.Memory.Receive(ctx, max, wait, visibility)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range ds {
		r.body[d.Receipt] = string(d.Body)
	}
	return ds, err
}

func (r *recorder) Delete(ctx context.Context, receipts ...string) error {
	r.mu.Lock()
	var bodies []string
	for _, rc := range receipts {
		bodies = append(bodies, r.body[rc])
	}
	r.deletes = append(r.deletes, bodies)
	r.mu.Unlock()
	return r.Memory.Delete(ctx, receipts...)
}

func (r *recorder) ChangeVisibility(ctx context.Context, receipt string, timeout time.Duration) error {
	r.mu.Lock()
	r.changes = append(r.changes, fmt.Sprintf("%s %s", r.body[receipt], timeout))
	r.mu.Unlock()
	return r.Memory.ChangeVisibility(ctx, receipt, timeout)
}

func (r *recorder) recorded() (deletes [][]string, changes []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.deletes), slices.Clone(r.changes)
}

func send(t *testing.T, q queue.Queue, group string, bodies ...string) {
	t.Helper()
	for _, b := range bodies {
		require.NoError(t, q.Send(context.Background(), queue.OutgoingMessage{Body: []byte(b), GroupID: group, DeduplicationID: b}))
	}
}

func config(concurrency int) Config {
	return Config{Concurrency: concurrency, BatchSize: 10, WaitTime: 20 * time.Millisecond, VisibilityTimeout: time.Minute,
		HoldSweepEvery: -1, Bookkeeping: 5 * time.Second, Logger: slog.New(slog.DiscardHandler)}
}

// start runs l until the returned stop is called, which returns once Run has.
func start(l *Loop) (stop func()) {
	stopCtx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		l.Run(stopCtx, context.Background())
	}()
	return func() { cancel(); <-ran }
}

func waitIdle(t *testing.T, q *queue.Memory) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, q.WaitIdle(ctx))
}

func TestDoneMessagesAreDeletedInBatchesOfTen(t *testing.T) {
	q := newRecorder(false)
	var want []string
	for i := range 25 {
		want = append(want, fmt.Sprintf("m%02d", i))
	}
	send(t, q, "", want...)
	var processed atomic.Int32
	l := New(q, config(25), func(context.Context, queue.Delivery) Verdict {
		processed.Add(1)
		return Verdict{Action: Delete}
	}, nil)
	stop := start(l)
	waitIdle(t, q.Memory)
	stop()

	deletes, changes := q.recorded()
	var deleted []string
	for _, batch := range deletes {
		assert.LessOrEqual(t, len(batch), 10)
		deleted = append(deleted, batch...)
	}
	slices.Sort(deleted)
	assert.Equal(t, want, deleted)
	assert.Empty(t, changes)
	assert.EqualValues(t, 25, processed.Load())
}

func TestAGroupRunsInOrderAndGivesBackWhatFollowsARetry(t *testing.T) {
	q := newRecorder(true)
	send(t, q, "g", "a", "b", "c", "d")
	var mu sync.Mutex
	var ran []string
	retried := false
	l := New(q, config(10), func(_ context.Context, d queue.Delivery) Verdict {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, string(d.Body))
		if string(d.Body) == "b" && !retried {
			retried = true
			return Verdict{Action: Retry, Delay: 24 * time.Hour}
		}
		return Verdict{Action: Delete}
	}, nil)
	stop := start(l)
	require.Eventually(t, func() bool {
		_, changes := q.recorded()
		return len(changes) == 3
	}, 10*time.Second, 5*time.Millisecond)
	stop()

	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"a", "b"}, ran, "nothing after the retried message starts")
	_, changes := q.recorded()
	assert.Equal(t, "b 12h0m0s", changes[0], "a retry's delay is cut to SQS's limit")
	assert.ElementsMatch(t, []string{"c 0s", "d 0s"}, changes[1:], "the rest of the run is given back at once")
}

func TestAStoppingLoopGivesBackWhatItHasNotStarted(t *testing.T) {
	q := newRecorder(true)
	send(t, q, "g", "a", "b", "c")
	entered, release := make(chan struct{}), make(chan struct{})
	cfg := config(10)
	cfg.VisibilityTimeout = 40 * time.Millisecond
	l := New(q, cfg, func(ctx context.Context, d queue.Delivery) Verdict {
		if string(d.Body) == "a" {
			// The Processor's heartbeat keeps a message in flight hidden; here the
			// handler does, on the queue under the recorder, so that "a" is not
			// delivered again while it waits.
			_ = q.Memory.ChangeVisibility(ctx, d.Receipt, time.Hour)
			close(entered)
			<-release
		}
		return Verdict{Action: Delete}
	}, nil)
	stopCtx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		l.Run(stopCtx, context.Background())
	}()
	<-entered
	require.Eventually(t, func() bool {
		_, changes := q.recorded()
		return slices.Contains(changes, "b 40ms") && slices.Contains(changes, "c 40ms")
	}, 10*time.Second, 5*time.Millisecond, "the waiting deliveries are kept hidden")
	cancel()
	close(release)
	<-ran

	deletes, changes := q.recorded()
	assert.Equal(t, [][]string{{"a"}}, deletes, "the message in flight finishes")
	assert.ElementsMatch(t, []string{"b 0s", "c 0s"}, slices.DeleteFunc(changes, func(c string) bool { return c[2:] == "40ms" }))
	assert.Equal(t, 2, q.Len().Visible)
}

// sweeper is a HoldSweeper over a clock the test moves.
type sweeper struct {
	mu      sync.Mutex
	now     int64
	met     []string
	listed  []string
	swept   []string
	skipped map[string]int64 // event → the lease another owner holds, until
}

func (s *sweeper) Registry(context.Context) ([]string, error) { return s.listed, nil }
func (s *sweeper) Met() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.met)
}
func (s *sweeper) Now() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}
func (s *sweeper) Sweep(_ context.Context, ev string) (Swept, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.swept = append(s.swept, ev)
	if until, ok := s.skipped[ev]; ok && s.now < until {
		return Swept{Skipped: true, LeaseUntil: until}, nil
	}
	return Swept{Expired: 1}, nil
}

func (s *sweeper) sweeps(ev string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, e := range s.swept {
		if e == ev {
			n++
		}
	}
	return n
}

func TestTheHoldSweepLeavesAnEventToTheOwnerOfItsLease(t *testing.T) {
	s := &sweeper{met: []string{"a", "b"}, listed: []string{"b", "c"}, skipped: map[string]int64{"b": 1000}}
	cfg := config(1)
	cfg.HoldSweepEvery = 5 * time.Millisecond
	l := New(newRecorder(false), cfg, func(context.Context, queue.Delivery) Verdict { return Verdict{} }, s)
	stop := start(l)
	require.Eventually(t, func() bool { return s.sweeps("a") >= 3 && s.sweeps("c") >= 3 }, 10*time.Second, time.Millisecond,
		"the events met and those listed are swept every tick")
	assert.Equal(t, 1, s.sweeps("b"), "an event another owner sweeps is left until its lease runs out")
	s.mu.Lock()
	s.now = 1000
	s.mu.Unlock()
	require.Eventually(t, func() bool { return s.sweeps("b") >= 2 }, 10*time.Second, time.Millisecond)
	stop()
}

func TestUnion2(t *testing.T) {
	assert.Equal(t, []string{"a", "b", "c"}, union2([]string{"a", "b"}, []string{"b", "c", "a"}))
	assert.Empty(t, union2(nil, nil))
	a := []string{"x"}
	_ = union2(a, []string{"y"})
	assert.Equal(t, []string{"x"}, a, "a is not changed")
}
