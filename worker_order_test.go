package asyncevent_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// processingLog records, from ProcessOptions.OnOutcome, the order in which requests
// reached an outcome that decides them.
type processingLog struct {
	mu    sync.Mutex
	order []string // requestIds
}

func (l *processingLog) onOutcome(o asyncevent.Outcome) {
	switch o.Kind {
	case asyncevent.OutcomeSucceeded, asyncevent.OutcomeRejected:
		l.mu.Lock()
		l.order = append(l.order, o.RequestID)
		l.mu.Unlock()
	}
}

func (l *processingLog) requests() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.order...)
}

// submitInOrder submits users one after another to a FIRST_COME event "sale" and
// returns their requestIds in send order.
func submitInOrder(t *testing.T, c *asyncevent.Client, q queue.Queue, users int) []string {
	t.Helper()
	ids := make([]string, users)
	for i := range ids {
		p, err := c.Submit(context.Background(), q, "sale", fmt.Sprintf("u%03d", i))
		require.NoError(t, err)
		ids[i] = p.RequestID
	}
	return ids
}

// winners returns the requestIds of the event's SUCCEEDED requests once every one
// of want requests is final.
func winnersOnceFinal(t *testing.T, c *asyncevent.Client, want int) map[string]bool {
	t.Helper()
	var rs []asyncevent.Request
	eventually(t, "every request final", func() bool {
		rs = requestsOf(t, c, "sale")
		if len(rs) != want {
			return false
		}
		for _, r := range rs {
			if !r.Status.IsTerminal() {
				return false
			}
		}
		return true
	})
	won := map[string]bool{}
	for _, r := range rs {
		if r.Status == asyncevent.StatusSucceeded {
			won[r.RequestID] = true
		}
	}
	return won
}

// TestStrictModeFollowsQueueOrder runs a first-come event in strict mode (a FIFO
// queue, ingest's one message group per event) with several workers that each take
// up to ten of the group per receive: the requests are processed exactly in send
// order, so the winners are exactly the first N sent.
func TestStrictModeFollowsQueueOrder(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"memory", "sqs"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			const capacity, users = 7, 60
			c := newSale(t, capacity)
			var q queue.Queue
			if kind == "memory" {
				q = queue.NewMemory(queue.MemoryOptions{FIFO: true})
			} else {
				q = asynceventtest.NewSQSQueue(t, asynceventtest.SQSQueueOptions{FIFO: true})
			}
			sent := submitInOrder(t, c, q, users)

			log := &processingLog{}
			// A handler of uneven speed: run at once, a batch's messages would
			// finish out of order.
			jitter := asyncevent.HandlerFunc(func(ctx context.Context, _ asyncevent.Message) error {
				return sleepCtx(ctx, time.Duration(rand.IntN(4))*time.Millisecond)
			})
			for range 3 {
				runWorker(t, c, q, asyncevent.WorkerOptions{Concurrency: 10, BatchSize: 10, WaitTime: 100 * time.Millisecond,
					ProcessOptions: asyncevent.ProcessOptions{Handler: jitter, OnOutcome: log.onOutcome}})
			}
			won := winnersOnceFinal(t, c, users)

			assert.Equal(t, sent, log.requests(), "processed in send order")
			want := map[string]bool{}
			for _, id := range sent[:capacity] {
				want[id] = true
			}
			assert.Equal(t, want, won, "the winners are the first %d sent", capacity)
		})
	}
}

// TestWorkerRunsAGroupInReceiveOrder gives one worker a FIFO batch of two groups and
// group-less messages: each group's messages run one after another in receive order;
// after one that is not done, the group's later ones are made visible again, unstarted,
// and come back behind it.
func TestWorkerRunsAGroupInReceiveOrder(t *testing.T) {
	t.Parallel()
	c := newSale(t, 100)
	q := queue.NewMemory(queue.MemoryOptions{FIFO: true})
	sent := submitInOrder(t, c, q, 6)

	var mu sync.Mutex
	var ran []string
	failed := false
	handler := asyncevent.HandlerFunc(func(_ context.Context, m asyncevent.Message) error {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, m.RequestID)
		if m.RequestID == sent[2] && !failed {
			failed = true
			return fmt.Errorf("downstream is down")
		}
		return nil
	})
	runWorker(t, c, q, asyncevent.WorkerOptions{Concurrency: 10, ProcessOptions: asyncevent.ProcessOptions{Handler: handler}})
	asynceventtest.WaitDrained(t, q, 30*time.Second)

	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{sent[0], sent[1], sent[2], sent[2], sent[3], sent[4], sent[5]}, ran,
		"the failure comes back first, and nothing after it ran before it")
	for _, r := range requestsOf(t, c, "sale") {
		assert.Equal(t, asyncevent.StatusSucceeded, r.Status)
	}
}

// TestProcessKeepsAGroupsOrder is asynceventtest.Process on a batch of two groups:
// each group in receive order, and the rest of a group after a message that is not
// done returned unprocessed, as queue.Groups says a worker does.
func TestProcessKeepsAGroupsOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newSale(t, 100)
	q := queue.NewMemory(queue.MemoryOptions{})
	sent := submitInOrder(t, c, q, 6)
	var ds []queue.Delivery
	for len(ds) < 6 {
		got, err := q.Receive(ctx, 6-len(ds), time.Second, time.Minute)
		require.NoError(t, err)
		ds = append(ds, got...)
	}
	for i := range ds {
		ds[i].GroupID = []string{"a", "b"}[i%2]
	}
	var mu sync.Mutex
	var ran []string
	p := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{Handler: asyncevent.HandlerFunc(func(_ context.Context, m asyncevent.Message) error {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, m.RequestID)
		if m.RequestID == sent[2] {
			return fmt.Errorf("downstream is down")
		}
		return nil
	})})
	failed := asynceventtest.Process(ctx, p, ds)

	assert.Equal(t, []string{ds[2].MessageID, ds[4].MessageID}, failed, "group a stops at its failure")
	var a, b []string
	for _, id := range ran {
		switch id {
		case sent[0], sent[2], sent[4]:
			a = append(a, id)
		default:
			b = append(b, id)
		}
	}
	assert.Equal(t, []string{sent[0], sent[2]}, a)
	assert.Equal(t, []string{sent[1], sent[3], sent[5]}, b)
}
