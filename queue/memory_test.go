package queue_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// queueKind is what a conformance case needs of a fresh queue.
type queueKind struct {
	FIFO        bool
	MaxReceives int // 0: no dead letters
}

// queueUnderTest is a fresh queue and a way to read its dead letters.
type queueUnderTest struct {
	queue.Queue
	// deadLetters returns what redrive has moved to the dead letters.
	deadLetters func(t *testing.T) []queue.Delivery
}

// queueConformance runs the behaviour every Queue must share, so that
// Memory stays faithful to SQS on a real SQS implementation.
// Durations are whole seconds, SQS's unit.
func queueConformance(t *testing.T, newQueue func(t *testing.T, k queueKind) queueUnderTest) {
	ctx := context.Background()
	const long = time.Minute // a visibility that outlasts every test

	t.Run("RoundTrip", func(t *testing.T) {
		t.Parallel()
		q := newQueue(t, queueKind{})
		before := time.Now()
		for i := range 3 {
			require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte("m" + strconv.Itoa(i))}))
		}
		after := time.Now()
		got := receiveUntil(t, q, 3, long)
		assert.ElementsMatch(t, []string{"m0", "m1", "m2"}, bodies(got))
		ids := map[string]bool{}
		for _, d := range got {
			assert.NotEmpty(t, d.Receipt)
			assert.Equal(t, 1, d.ReceiveCount)
			assert.WithinRange(t, d.SentAt, before.Add(-time.Second), after.Add(time.Second))
			ids[d.MessageID] = true
		}
		assert.Len(t, ids, 3, "message IDs must differ")
		require.NoError(t, q.Delete(ctx, receipts(got)...))
		requireEmpty(t, q)
	})

	t.Run("RedeliveryAndStaleReceipts", func(t *testing.T) {
		t.Parallel()
		q := newQueue(t, queueKind{})
		require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte("again")}))
		first := receiveUntil(t, q, 1, time.Second)[0]
		second := receiveUntil(t, q, 1, long)[0] // after the visibility timeout
		assert.Equal(t, first.MessageID, second.MessageID)
		assert.Equal(t, first.SentAt, second.SentAt)
		assert.NotEqual(t, first.Receipt, second.Receipt)
		assert.Equal(t, 2, second.ReceiveCount)

		// The first receipt is stale: it changes and deletes nothing.
		require.ErrorIs(t, q.ChangeVisibility(ctx, first.Receipt, 0), queue.ErrStaleReceipt)
		require.NoError(t, q.Delete(ctx, first.Receipt))

		// ChangeVisibility(0) makes it visible at once.
		require.NoError(t, q.ChangeVisibility(ctx, second.Receipt, 0))
		third := receiveUntil(t, q, 1, long)[0]
		assert.Equal(t, first.MessageID, third.MessageID)
		assert.Equal(t, 3, third.ReceiveCount)
		require.ErrorIs(t, q.ChangeVisibility(ctx, second.Receipt, time.Minute), queue.ErrStaleReceipt)
		require.NoError(t, q.Delete(ctx, first.Receipt, second.Receipt))
		require.NoError(t, q.ChangeVisibility(ctx, third.Receipt, long), "the latest receipt holds it")

		require.NoError(t, q.Delete(ctx, third.Receipt))
		requireEmpty(t, q)
		require.ErrorIs(t, q.ChangeVisibility(ctx, third.Receipt, long), queue.ErrStaleReceipt)
	})

	t.Run("ChangeVisibilityExtends", func(t *testing.T) {
		t.Parallel()
		q := newQueue(t, queueKind{})
		require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte("slow work")}))
		d := receiveUntil(t, q, 1, time.Second)[0]
		require.NoError(t, q.ChangeVisibility(ctx, d.Receipt, long))
		got, err := q.Receive(ctx, 1, 2*time.Second, long) // the first second would have passed
		require.NoError(t, err)
		assert.Empty(t, got)
		require.NoError(t, q.Delete(ctx, d.Receipt))
	})

	t.Run("LongPollWakesOnSend", func(t *testing.T) {
		t.Parallel()
		q := newQueue(t, queueKind{})
		const wait = 20 * time.Second
		type result struct {
			got     []queue.Delivery
			err     error
			elapsed time.Duration
		}
		done := make(chan result, 1)
		began := time.Now()
		go func() {
			got, err := q.Receive(ctx, 10, wait, long)
			done <- result{got, err, time.Since(began)}
		}()
		time.Sleep(300 * time.Millisecond) // let the receive start waiting; it finds the message either way
		require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte("wake up")}))
		r := <-done
		require.NoError(t, r.err)
		require.Len(t, r.got, 1)
		assert.Less(t, r.elapsed, wait/2, "the receive must return when the message comes, not when its wait ends")
	})

	t.Run("EmptyAndCanceled", func(t *testing.T) {
		t.Parallel()
		q := newQueue(t, queueKind{})
		got, err := q.Receive(ctx, 10, time.Second, long)
		require.NoError(t, err, "nothing in time is not an error")
		assert.Empty(t, got)

		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(200*time.Millisecond, cancel)
		_, err = q.Receive(cctx, 10, 20*time.Second, long)
		require.ErrorIs(t, err, context.Canceled)
	})

	t.Run("BadArguments", func(t *testing.T) {
		t.Parallel()
		q := newQueue(t, queueKind{})
		_, err := q.Receive(ctx, 0, 0, long)
		assert.Error(t, err, "max 0")
		_, err = q.Receive(ctx, 1, -time.Second, long)
		assert.Error(t, err, "negative wait")
		_, err = q.Receive(ctx, 1, 0, 13*time.Hour)
		assert.Error(t, err, "visibility over 12h")
		assert.Error(t, q.Send(ctx, queue.OutgoingMessage{}), "empty body")
		assert.Error(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte("a\x00b")}), "a character SQS refuses")
		assert.Error(t, q.Delete(ctx, ""), "empty receipt")
		assert.Error(t, q.ChangeVisibility(ctx, "", time.Second), "empty receipt")
		assert.Error(t, q.ChangeVisibility(ctx, "r", -time.Second), "negative timeout")
		assert.NoError(t, q.Delete(ctx), "no receipts")
	})

	t.Run("BatchDelete", func(t *testing.T) {
		t.Parallel()
		q := newQueue(t, queueKind{})
		const n = 25
		for i := range n {
			require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte("m" + strconv.Itoa(i))}))
		}
		got := receiveUntil(t, q, n, long)
		require.Len(t, got, n)
		require.NoError(t, q.Delete(ctx, receipts(got)...))
		requireEmpty(t, q)
	})

	t.Run("DeadLetters", func(t *testing.T) {
		t.Parallel()
		q := newQueue(t, queueKind{MaxReceives: 2})
		require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte("poison")}))
		first := receiveUntil(t, q, 1, time.Second)[0]
		second := receiveUntil(t, q, 1, time.Second)[0]
		assert.Equal(t, 2, second.ReceiveCount)
		// The third receive finds it exhausted and moves it instead.
		got, err := q.Receive(ctx, 10, 3*time.Second, long)
		require.NoError(t, err)
		assert.Empty(t, got)
		dead := q.deadLetters(t)
		require.Len(t, dead, 1)
		assert.Equal(t, first.MessageID, dead[0].MessageID)
		assert.Equal(t, "poison", string(dead[0].Body))
		require.ErrorIs(t, q.ChangeVisibility(ctx, second.Receipt, long), queue.ErrStaleReceipt)
	})

	t.Run("Attributes", func(t *testing.T) {
		t.Parallel()
		for _, k := range []queueKind{{}, {FIFO: true}} {
			q := newQueue(t, k)
			attrs := map[string]string{
				"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
				"tracestate":  "vendor=a b,other=x",
			}
			require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte("with"), GroupID: "g1", DeduplicationID: "d1", Attributes: attrs}))
			require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte("without"), GroupID: "g2", DeduplicationID: "d2"}))
			attrs["traceparent"] = "changed after the send"

			got := receiveUntil(t, q, 2, time.Second)
			for _, d := range got {
				if string(d.Body) == "with" {
					assert.Equal(t, map[string]string{
						"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
						"tracestate":  "vendor=a b,other=x",
					}, d.Attributes, "fifo=%t", k.FIFO)
					d.Attributes["tracestate"] = "changed by a receiver"
				} else {
					assert.Empty(t, d.Attributes, "fifo=%t", k.FIFO)
				}
			}
			again := receiveUntil(t, q, 2, long) // redelivered after the visibility timeout
			for _, d := range again {
				if string(d.Body) == "with" {
					assert.Equal(t, "vendor=a b,other=x", d.Attributes["tracestate"], "a redelivery carries them too (fifo=%t)", k.FIFO)
				}
			}
			require.NoError(t, q.Delete(ctx, receipts(again)...))
		}
	})

	t.Run("FIFO", func(t *testing.T) {
		t.Parallel()
		q := newQueue(t, queueKind{FIFO: true})
		send := func(group, dedup, body string) {
			t.Helper()
			require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte(body), GroupID: group, DeduplicationID: dedup}))
		}
		send("a", "a1", "a1")
		send("b", "b1", "b1")
		send("a", "a2", "a2")
		send("a", "a2", "a2 again") // same DeduplicationID: accepted, dropped
		send("b", "b2", "b2")
		send("a", "a3", "a3")
		assert.Error(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte("x"), GroupID: "a"}), "no DeduplicationID")
		assert.Error(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte("x"), DeduplicationID: "x"}), "no GroupID")

		// A group's next message waits until the one in flight is deleted.
		first, err := q.Receive(ctx, 10, time.Second, long)
		require.NoError(t, err)
		require.NotEmpty(t, first)
		more, err := q.Receive(ctx, 10, time.Second, long)
		require.NoError(t, err)
		assert.Empty(t, more, "both groups are held by messages in flight")

		groupOf := func(ds []queue.Delivery) {
			t.Helper()
			for _, d := range ds {
				assert.Equal(t, string(d.Body[:1]), d.GroupID, "the delivery names its group")
			}
		}
		groupOf(first)
		order := bodies(first)
		require.NoError(t, q.Delete(ctx, receipts(first)...))
		for len(order) < 5 {
			got := receiveUntil(t, q, 1, long)
			groupOf(got)
			order = append(order, bodies(got)...)
			require.NoError(t, q.Delete(ctx, receipts(got)...))
		}
		var a, b []string
		for _, body := range order {
			if strings.HasPrefix(body, "a") {
				a = append(a, body)
			} else {
				b = append(b, body)
			}
		}
		assert.Equal(t, []string{"a1", "a2", "a3"}, a)
		assert.Equal(t, []string{"b1", "b2"}, b)
		requireEmpty(t, q)
	})
}

// receiveUntil receives with visibility until it has n messages (SQS may
// hand them out over several calls), failing after half a minute.
func receiveUntil(t *testing.T, q queue.Queue, n int, visibility time.Duration) []queue.Delivery {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []queue.Delivery
	for len(got) < n {
		ds, err := q.Receive(ctx, n-len(got), 5*time.Second, visibility)
		require.NoError(t, err, "after %d of %d messages", len(got), n)
		require.LessOrEqual(t, len(ds), 10, "a receive returns at most 10 messages")
		got = append(got, ds...)
	}
	return got
}

// requireEmpty fails unless a receive finds nothing.
func requireEmpty(t *testing.T, q queue.Queue) {
	t.Helper()
	got, err := q.Receive(context.Background(), 10, time.Second, time.Minute)
	require.NoError(t, err)
	require.Empty(t, bodies(got))
}

func bodies(ds []queue.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = string(d.Body)
	}
	return out
}

func receipts(ds []queue.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Receipt
	}
	return out
}

func TestMemoryQueueConformance(t *testing.T) {
	queueConformance(t, func(t *testing.T, k queueKind) queueUnderTest {
		q := queue.NewMemory(queue.MemoryOptions{FIFO: k.FIFO, MaxReceives: k.MaxReceives})
		return queueUnderTest{Queue: q, deadLetters: func(*testing.T) []queue.Delivery { return q.DeadLetters() }}
	})
}

// TestMemoryQueueFollowsItsClock drives visibility timeouts, receive counts,
// redrive and the deduplication interval with a clock that moves only when
// told.
func TestMemoryQueueFollowsItsClock(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 11, 23, 12, 0, 0, 123_456_789, time.UTC)
	clock := asynceventtest.NewClock(start)
	q := queue.NewMemory(queue.MemoryOptions{MaxReceives: 3, Clock: clock.Now})
	require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte("m")}))
	assert.Equal(t, queue.MemoryLen{Visible: 1}, q.Len())

	d1 := receiveNow(t, q, 10*time.Second)
	assert.Equal(t, 1, d1.ReceiveCount)
	assert.True(t, d1.SentAt.Equal(start.Truncate(time.Millisecond)), "SentAt %s is the send time in milliseconds", d1.SentAt)
	assert.Equal(t, queue.MemoryLen{InFlight: 1}, q.Len())
	clock.Advance(10*time.Second - time.Nanosecond)
	assert.Empty(t, receive(t, q, 0, time.Minute), "still hidden")
	clock.Advance(time.Nanosecond)
	assert.Equal(t, queue.MemoryLen{Visible: 1}, q.Len())

	d2 := receiveNow(t, q, time.Second)
	assert.Equal(t, d1.MessageID, d2.MessageID)
	assert.Equal(t, 2, d2.ReceiveCount)
	assert.Equal(t, d1.SentAt, d2.SentAt)
	clock.Advance(time.Second)
	assert.Equal(t, 3, receiveNow(t, q, time.Second).ReceiveCount)
	clock.Advance(time.Second)
	assert.Empty(t, receive(t, q, 0, time.Second), "received MaxReceives times: dead")
	assert.Equal(t, queue.MemoryLen{Dead: 1}, q.Len())
}

// receive calls Receive with wait and returns what came.
func receive(t *testing.T, q queue.Queue, wait, visibility time.Duration) []queue.Delivery {
	t.Helper()
	got, err := q.Receive(context.Background(), 10, wait, visibility)
	require.NoError(t, err)
	return got
}

// receiveNow receives the one message that must be visible now.
func receiveNow(t *testing.T, q queue.Queue, visibility time.Duration) queue.Delivery {
	t.Helper()
	got := receive(t, q, 0, visibility)
	require.Len(t, got, 1)
	return got[0]
}

// TestMemoryQueueConcurrentProducersAndConsumers runs 50 producers and 50
// consumers at once: every message must be delivered exactly once while
// the visibility timeout outlasts the test, and each FIFO group in order.
func TestMemoryQueueConcurrentProducersAndConsumers(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		t.Run(fmt.Sprintf("fifo=%v", fifo), func(t *testing.T) {
			t.Parallel()
			const producers, consumers, perProducer = 50, 50, 40
			const total = producers * perProducer
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			q := queue.NewMemory(queue.MemoryOptions{FIFO: fifo})

			var wg sync.WaitGroup
			for p := range producers {
				wg.Go(func() {
					for i := range perProducer {
						body := fmt.Sprintf("p%d-%d", p, i)
						if err := q.Send(ctx, queue.OutgoingMessage{Body: []byte(body), GroupID: "p" + strconv.Itoa(p), DeduplicationID: body}); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			var mu sync.Mutex
			seen := map[string]int{}
			next := make([]int, producers) // FIFO: the index each group must deliver next
			var received atomic.Int64
			for range consumers {
				wg.Go(func() {
					for received.Load() < total && ctx.Err() == nil {
						got, err := q.Receive(ctx, 1+rand.IntN(10), 50*time.Millisecond, time.Hour)
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						for _, d := range got {
							seen[string(d.Body)]++
							var p, i int
							_, _ = fmt.Sscanf(string(d.Body), "p%d-%d", &p, &i)
							if fifo && i != next[p] {
								t.Errorf("group p%d delivered %d, want %d", p, i, next[p])
							}
							next[p] = i + 1
						}
						mu.Unlock()
						received.Add(int64(len(got)))
						if err := q.Delete(ctx, receipts(got)...); err != nil {
							t.Error(err)
						}
					}
				})
			}
			wg.Wait()
			require.NoError(t, ctx.Err())
			require.Len(t, seen, total)
			for body, n := range seen {
				if n != 1 {
					t.Errorf("%s delivered %d times", body, n)
				}
			}
			assert.Equal(t, queue.MemoryLen{}, q.Len())
		})
	}
}

// TestMemoryQueueConcurrentRedelivery has consumers that drop a third of
// what they receive (short visibility, no delete) while others change
// visibilities: every message must still be deleted in the end, and the
// books must balance.
func TestMemoryQueueConcurrentRedelivery(t *testing.T) {
	const n, consumers = 500, 20
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	q := queue.NewMemory(queue.MemoryOptions{})
	for i := range n {
		require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte(strconv.Itoa(i))}))
	}
	var mu sync.Mutex
	done := map[string]bool{}
	var wg sync.WaitGroup
	for range consumers {
		wg.Go(func() {
			for ctx.Err() == nil {
				mu.Lock()
				finished := len(done) == n
				mu.Unlock()
				if finished {
					return
				}
				got, err := q.Receive(ctx, 10, 20*time.Millisecond, 20*time.Millisecond)
				if err != nil {
					t.Error(err)
					return
				}
				for _, d := range got {
					switch rand.IntN(3) {
					case 0: // dropped: comes back after 20ms
					case 1:
						err := q.ChangeVisibility(ctx, d.Receipt, 0)
						if err != nil && !assert.ErrorIs(t, err, queue.ErrStaleReceipt) {
							return
						}
					default:
						if err := q.ChangeVisibility(ctx, d.Receipt, time.Hour); err != nil {
							assert.ErrorIs(t, err, queue.ErrStaleReceipt) // lost to a timeout already
							continue
						}
						if !assert.NoError(t, q.Delete(ctx, d.Receipt)) {
							return
						}
						mu.Lock()
						done[string(d.Body)] = true
						mu.Unlock()
					}
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, ctx.Err())
	assert.Len(t, done, n)
	assert.Equal(t, queue.MemoryLen{}, q.Len())
}

// TestMemoryQueueLongPollWakesOnTimeout checks that a waiting Receive gets a
// message when its visibility timeout runs out, by a timer and not by
// polling, and when ChangeVisibility releases it.
func TestMemoryQueueLongPollWakesOnTimeout(t *testing.T) {
	ctx := context.Background()
	q := queue.NewMemory(queue.MemoryOptions{})
	require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte("m")}))
	d := receiveNow(t, q, 50*time.Millisecond)
	began := time.Now()
	got := receive(t, q, 20*time.Second, time.Hour)
	require.Len(t, got, 1)
	assert.Equal(t, d.MessageID, got[0].MessageID)
	assert.Less(t, time.Since(began), 10*time.Second)

	released := make(chan []queue.Delivery, 1)
	go func() {
		got, err := q.Receive(ctx, 10, 20*time.Second, time.Hour)
		assert.NoError(t, err)
		released <- got
	}()
	time.Sleep(100 * time.Millisecond) // let it wait; it finds the message either way
	require.NoError(t, q.ChangeVisibility(ctx, got[0].Receipt, 0))
	again := <-released
	require.Len(t, again, 1)
	assert.Equal(t, 3, again[0].ReceiveCount)
}

// TestMemoryQueueDeadLettersAndLen follows a FIFO group through redrive: the
// exhausted message moves to the dead letters and frees its group.
func TestMemoryQueueDeadLettersAndLen(t *testing.T) {
	ctx := context.Background()
	clock := asynceventtest.NewClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	q := queue.NewMemory(queue.MemoryOptions{FIFO: true, MaxReceives: 1, Clock: clock.Now})
	for _, body := range []string{"poison", "next"} {
		require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte(body), GroupID: "g", DeduplicationID: body}))
	}
	first, err := q.Receive(ctx, 1, 0, time.Second)
	require.NoError(t, err)
	require.Len(t, first, 1)
	d := first[0]
	assert.Equal(t, "poison", string(d.Body))
	assert.Equal(t, queue.MemoryLen{Visible: 1, InFlight: 1}, q.Len())
	assert.Empty(t, receive(t, q, 0, time.Second), "the group is held")
	clock.Advance(time.Second)
	assert.Equal(t, queue.MemoryLen{Visible: 2}, q.Len(), "it moves when a receive would deliver it")

	next := receiveNow(t, q, time.Second)
	assert.Equal(t, "next", string(next.Body))
	assert.Equal(t, queue.MemoryLen{InFlight: 1, Dead: 1}, q.Len())
	dead := q.DeadLetters()
	require.Len(t, dead, 1)
	assert.Equal(t, queue.Delivery{MessageID: d.MessageID, Body: []byte("poison"), ReceiveCount: 1, SentAt: d.SentAt, GroupID: "g"}, dead[0])
	require.NoError(t, q.Delete(ctx, d.Receipt), "a dead letter's old receipt deletes nothing")
	assert.Len(t, q.DeadLetters(), 1)
}

// TestMemoryQueueDeduplicationInterval checks that a DeduplicationID is
// remembered for five minutes from its first send, even after the message
// was deleted.
func TestMemoryQueueDeduplicationInterval(t *testing.T) {
	ctx := context.Background()
	clock := asynceventtest.NewClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	q := queue.NewMemory(queue.MemoryOptions{FIFO: true, Clock: clock.Now})
	send := func(body string) {
		t.Helper()
		require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte(body), GroupID: "g", DeduplicationID: "same"}))
	}
	send("first")
	require.NoError(t, q.Delete(ctx, receiveNow(t, q, time.Minute).Receipt))
	clock.Advance(5*time.Minute - time.Millisecond)
	send("dropped")
	assert.Equal(t, queue.MemoryLen{}, q.Len())
	clock.Advance(time.Millisecond)
	send("kept")
	assert.Equal(t, "kept", string(receiveNow(t, q, time.Minute).Body))
}

// TestMemoryQueueLatestReceiptOutlivesTimeout checks the SQS rule that the
// latest receipt deletes even after the visibility timeout ran out, as long
// as no other delivery came, while it no longer changes the visibility.
func TestMemoryQueueLatestReceiptOutlivesTimeout(t *testing.T) {
	ctx := context.Background()
	clock := asynceventtest.NewClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	q := queue.NewMemory(queue.MemoryOptions{Clock: clock.Now})
	require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte("m")}))
	d := receiveNow(t, q, time.Second)
	clock.Advance(time.Second)
	require.ErrorIs(t, q.ChangeVisibility(ctx, d.Receipt, time.Minute), queue.ErrStaleReceipt)
	require.NoError(t, q.Delete(ctx, d.Receipt))
	assert.Equal(t, queue.MemoryLen{}, q.Len())
}

// TestMemoryQueueLimits checks the SQS limits Memory shares: 10
// messages per receive, 1 MiB bodies, and a zero visibility meaning the
// queue's default.
func TestMemoryQueueLimits(t *testing.T) {
	ctx := context.Background()
	clock := asynceventtest.NewClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	q := queue.NewMemory(queue.MemoryOptions{VisibilityTimeout: 5 * time.Second, Clock: clock.Now})
	for i := range 12 {
		require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte(strconv.Itoa(i))}))
	}
	got := receive(t, q, 0, 0)
	assert.Len(t, got, 10)
	assert.Equal(t, []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}, bodies(got), "a standard queue serves in order")
	clock.Advance(5*time.Second - time.Millisecond)
	assert.Equal(t, queue.MemoryLen{Visible: 2, InFlight: 10}, q.Len())
	clock.Advance(time.Millisecond)
	assert.Equal(t, queue.MemoryLen{Visible: 12}, q.Len(), "zero visibility is the queue's 5s")

	assert.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte(strings.Repeat("x", 1<<20))}))
	assert.Error(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte(strings.Repeat("x", 1<<20+1))}))
	assert.Error(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte{0xff}}), "not UTF-8")
	assert.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte("tab\t, emoji 🎟")}))

	// A stale receipt in a batch does not stop the others.
	got = receive(t, q, 0, time.Minute)
	require.NoError(t, q.Delete(ctx, slices.Concat([]string{"no-such-receipt"}, receipts(got))...))
	assert.Equal(t, queue.MemoryLen{Visible: 4}, q.Len())
}

// ExampleMemory shows a delivery's life: received, hidden, deleted.
func ExampleMemory() {
	ctx := context.Background()
	q := queue.NewMemory(queue.MemoryOptions{})
	_ = q.Send(ctx, queue.OutgoingMessage{Body: []byte(`{"v":1}`)})

	got, _ := q.Receive(ctx, 10, time.Second, 30*time.Second)
	fmt.Printf("%s received %d time(s)\n", got[0].Body, got[0].ReceiveCount)
	fmt.Printf("%+v\n", q.Len())

	_ = q.Delete(ctx, got[0].Receipt)
	fmt.Printf("%+v\n", q.Len())
	// Output:
	// {"v":1} received 1 time(s)
	// {Visible:0 InFlight:1 Dead:0}
	// {Visible:0 InFlight:0 Dead:0}
}

// TestMemoryQueueWaitIdle follows a message through the states WaitIdle
// tells apart: visible, in flight, hidden by a visibility change, exhausted
// but not yet moved, and dead.
func TestMemoryQueueWaitIdle(t *testing.T) {
	ctx := context.Background()
	clock := asynceventtest.NewClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	q := queue.NewMemory(queue.MemoryOptions{MaxReceives: 2, Clock: clock.Now})
	busy := func(msg string) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		assert.ErrorIs(t, q.WaitIdle(wctx), context.DeadlineExceeded, msg)
	}
	require.NoError(t, q.WaitIdle(ctx), "a new queue is idle")

	require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte("kept")}))
	busy("visible")
	kept := receiveNow(t, q, time.Minute)
	busy("in flight")
	require.NoError(t, q.ChangeVisibility(ctx, kept.Receipt, time.Hour))
	busy("hidden")
	require.NoError(t, q.Delete(ctx, kept.Receipt))
	require.NoError(t, q.WaitIdle(ctx), "deleted")

	require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte("poison")}))
	receiveNow(t, q, time.Second)
	clock.Advance(time.Second)
	receiveNow(t, q, time.Second)
	clock.Advance(time.Second)
	busy("received MaxReceives times, but still visible")
	assert.Empty(t, receive(t, q, 0, time.Second))
	assert.Equal(t, queue.MemoryLen{Dead: 1}, q.Len())
	require.NoError(t, q.WaitIdle(ctx), "dead letters do not count")

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	assert.NoError(t, q.WaitIdle(canceled), "idle wins over an ended context")
	require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte("late")}))
	assert.ErrorIs(t, q.WaitIdle(canceled), context.Canceled)
}

// TestMemoryQueueWaitIdleWakesWaiters has waiters blocked in WaitIdle while
// producers send and consumers receive, release and delete, on a standard and
// a FIFO queue: once the producers are done, every waiter returns nil and the
// queue is empty, and a waiter whose context is canceled returns at once.
func TestMemoryQueueWaitIdleWakesWaiters(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		t.Run(fmt.Sprintf("fifo=%v", fifo), func(t *testing.T) {
			t.Parallel()
			const producers, consumers, perProducer, waiters = 10, 10, 50, 20
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			q := queue.NewMemory(queue.MemoryOptions{FIFO: fifo})
			require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte("first"), GroupID: "first", DeduplicationID: "first"}))

			// Waiters started now may return at any idle moment; those started
			// after the producers return only once all is deleted.
			var early sync.WaitGroup
			for range waiters {
				early.Go(func() { assert.NoError(t, q.WaitIdle(ctx)) })
			}
			canceled := make(chan error, 1)
			cctx, cancelWaiter := context.WithCancel(ctx)
			go func() { canceled <- q.WaitIdle(cctx) }()

			var producing, consuming sync.WaitGroup
			for p := range producers {
				producing.Go(func() {
					for i := range perProducer {
						body := fmt.Sprintf("p%d-%d", p, i)
						if err := q.Send(ctx, queue.OutgoingMessage{Body: []byte(body), GroupID: "p" + strconv.Itoa(p), DeduplicationID: body}); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			stop := make(chan struct{})
			for range consumers {
				consuming.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						got, err := q.Receive(ctx, 1+rand.IntN(10), 10*time.Millisecond, time.Minute)
						if err != nil {
							t.Error(err)
							return
						}
						for _, d := range got {
							if rand.IntN(4) == 0 { // back for another delivery
								assert.NoError(t, q.ChangeVisibility(ctx, d.Receipt, 0))
								continue
							}
							assert.NoError(t, q.Delete(ctx, d.Receipt))
						}
					}
				})
			}
			cancelWaiter()
			err := <-canceled
			if err != nil {
				assert.ErrorIs(t, err, context.Canceled)
			}

			producing.Wait()
			var late sync.WaitGroup
			for range waiters {
				late.Go(func() {
					if assert.NoError(t, q.WaitIdle(ctx)) {
						assert.Equal(t, queue.MemoryLen{}, q.Len())
					}
				})
			}
			late.Wait()
			early.Wait()
			close(stop)
			consuming.Wait()
			assert.Equal(t, queue.MemoryLen{}, q.Len())
		})
	}
}

func TestMemoryQueueDelayHoldsBackDelivery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	q := queue.NewMemory(queue.MemoryOptions{Delay: 50 * time.Millisecond, Clock: clock.Now})
	require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte("one")}))
	assert.Equal(t, queue.MemoryLen{InFlight: 1}, q.Len(), "delayed: in flight, as SQS counts it out of the visible")

	got, err := q.Receive(ctx, 10, 0, time.Minute)
	require.NoError(t, err)
	assert.Empty(t, got, "not before the delay")

	clock.Advance(50 * time.Millisecond)
	got, err = q.Receive(ctx, 10, 0, time.Minute)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, 1, got[0].ReceiveCount, "the delay is no delivery")
	assert.True(t, clock.Now().Add(-50*time.Millisecond).Equal(got[0].SentAt), "sent when Send was called")
}

// TestMemoryQueueFIFOHandsOutAGroupInBatches checks the FIFO receive SQS
// gives: up to max messages of one group, in order, the group held while any
// of them is in flight, and a message made visible again first in line once
// the group is free.
func TestMemoryQueueFIFOHandsOutAGroupInBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := queue.NewMemory(queue.MemoryOptions{FIFO: true})
	for i := range 12 {
		body := fmt.Sprintf("a%02d", i)
		require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte(body), GroupID: "a", DeduplicationID: body}))
	}
	require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: []byte("b00"), GroupID: "b", DeduplicationID: "b00"}))

	first, err := q.Receive(ctx, 4, 0, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, []string{"a00", "a01", "a02", "a03"}, bodies(first), "as many of one group as max allows")
	for _, d := range first {
		assert.Equal(t, "a", d.GroupID)
	}
	more, err := q.Receive(ctx, 10, 0, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, []string{"b00"}, bodies(more), "group a is held while its messages are in flight")

	// a00 done, a01 fails and comes back, a02 and a03 given back unstarted.
	require.NoError(t, q.Delete(ctx, first[0].Receipt))
	require.NoError(t, q.ChangeVisibility(ctx, first[1].Receipt, 0))
	require.NoError(t, q.ChangeVisibility(ctx, first[3].Receipt, 0))
	held, err := q.Receive(ctx, 10, 0, time.Minute)
	require.NoError(t, err)
	assert.Empty(t, held, "a02 is still in flight: the group stays held")
	require.NoError(t, q.ChangeVisibility(ctx, first[2].Receipt, 0))

	again, err := q.Receive(ctx, 10, 0, time.Minute)
	require.NoError(t, err)
	want := []string{"a01", "a02", "a03", "a04", "a05", "a06", "a07", "a08", "a09", "a10"}
	assert.Equal(t, want, bodies(again), "the group resumes in send order, up to ten")
	assert.Equal(t, 2, again[0].ReceiveCount)
	assert.Equal(t, queue.MemoryLen{Visible: 1, InFlight: 11}, q.Len())
}
