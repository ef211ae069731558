package queue

import (
	"container/heap"
	"container/list"
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Limits that Memory shares with SQS, so that what works on it works on
// SQS too.
const (
	queueMaxReceive        = 10               // messages per Receive
	queueMaxWait           = 20 * time.Second // long-poll wait per Receive
	queueMaxVisibility     = 12 * time.Hour   // visibility timeout
	queueMaxMessageSize    = 1 << 20          // bytes of body
	queueMaxIDLength       = 128              // GroupID and DeduplicationID
	queueDedupWindow       = 5 * time.Minute  // FIFO deduplication interval
	queueDefaultVisibility = 30 * time.Second // an SQS queue's default VisibilityTimeout
)

// noDeadline is what Memory.nextDeadline returns when no message is in
// flight.
const noDeadline = time.Duration(-1)

// MemoryOptions configures a Memory. The zero value is a standard
// queue without dead-letter redrive.
type MemoryOptions struct {
	// FIFO makes the queue behave as an SQS FIFO queue: Send requires a
	// GroupID and a DeduplicationID, a second Send with the same
	// DeduplicationID within five minutes is accepted and dropped, and the
	// messages of one group are delivered in the order they were sent. As on
	// SQS, a Receive hands out as many of a group's messages as max allows,
	// in order (then goes on to the next group), and a group with a message
	// in flight is held: none of its messages is delivered until every one
	// in flight is deleted or visible again, and then the first of them comes
	// first. Each Delivery carries its GroupID. Default: false, a standard
	// queue, which ignores GroupID and DeduplicationID.
	//
	// Neither keeps a first-come event's queue order (asyncevent's queuedAt): 30
	// users clicking at once for 5 seats, a Worker with its defaults, 20 runs: a
	// standard queue had losers queued before a winner in 16 (up to 83 ms before), a
	// FIFO queue in 19 (up to 31 ms); a ranked event (asyncevent.AdmissionRanked) in
	// none. asyncevent's EventStats counts them (Fairness.Inversions).
	FIFO bool

	// MaxReceives is the maxReceiveCount of an SQS redrive policy: a
	// message that has been received MaxReceives times and is visible
	// again moves to the dead letters (DeadLetters) when a Receive would
	// deliver it once more, instead of being delivered. Default: 0, no
	// dead letters: a message is delivered again for as long as it is not
	// deleted.
	MaxReceives int

	// VisibilityTimeout is used by Receive calls whose visibility is zero,
	// as SQS uses the queue's VisibilityTimeout attribute (the SDK cannot
	// send a zero). Default: 30s, SQS's default.
	VisibilityTimeout time.Duration

	// Delay keeps each message of a standard queue from delivery for this long after
	// it is sent, as SQS's DelaySeconds does; a test sets a few milliseconds to stand
	// for SQS's own time from send to receive, which a Memory otherwise does not
	// take. The message counts as in flight meanwhile. Standard queues only: a FIFO
	// queue delivers at once whatever Delay says. Default: 0, delivered at once.
	Delay time.Duration

	// Clock tells the time: SentAt, visibility timeouts and the
	// deduplication interval follow it. Default: time.Now. Long polls and
	// the wake-up at a visibility timeout use real timers, so with a clock
	// that moves only when told a Receive that waits does not notice a
	// message whose visibility timeout ran out by a clock change; receive
	// with wait 0 after moving such a clock.
	Clock func() time.Time
}

// Memory is a Queue in memory that behaves as SQS does, for examples
// and unit tests: at-least-once delivery, visibility timeouts, receive
// counts, long polling, dead-letter redrive (MaxReceives) and, as an option,
// FIFO order with deduplication. It shares SQS's limits: at most 10
// messages per Receive, a wait of at most 20s, a visibility timeout of at
// most 12h, a non-empty body of at most 1 MiB of the characters SQS
// accepts. Unlike SQS it does not round durations to whole seconds, and a
// standard queue delivers in the order messages became visible.
//
// A receipt is valid only for its message's latest delivery. Delete with a
// receipt that is no longer the latest (the message was delivered again)
// leaves the message alone and returns nil, as SQS promises for DeleteMessage
// ("the request succeeds, but the message might not be deleted"); Memory
// always takes the safe side of that "might", so a redelivered message is
// never deleted by its earlier handler. The latest receipt stays valid after
// the visibility timeout ran out, until the next delivery, as on SQS.
// ChangeVisibility needs the message in flight under that receipt and
// returns ErrStaleReceipt otherwise.
//
// A Memory is safe for concurrent use. Make one with NewMemory.
type Memory struct {
	fifo        bool
	maxReceives int
	visibility  time.Duration
	delay       time.Duration // standard queues only
	clock       func() time.Time

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced when waiting receivers should look again
	drained  chan struct{} // closed while stored is 0; replaced by the Send that ends that
	ready    list.List     // standard: visible messages, in the order they became visible
	groups   map[string]*memoryGroup
	order    list.List // FIFO: *memoryGroup with messages, in the order they are served
	inFlight memoryHeap
	receipts map[string]*memoryMessage // latest receipt of each message that has one
	stored   int                       // messages neither deleted nor dead
	dead     []Delivery
	dedup    map[string]time.Time // FIFO: DeduplicationID → end of its interval
	dedupIDs []string             // the keys of dedup, oldest first
}

// memoryMessage is one message of a Memory.
type memoryMessage struct {
	id           string
	body         []byte
	attributes   map[string]string
	group        *memoryGroup // FIFO only
	sentAt       time.Time
	receiveCount int
	receipt      string // latest receipt; "" before the first delivery
	inFlight     bool
	visibleAt    time.Time     // while inFlight
	heapIndex    int           // in Memory.inFlight, while inFlight
	elem         *list.Element // in ready (standard, while visible) or in group.messages (FIFO)
}

// memoryGroup is a FIFO message group. Only messages at its front can be in
// flight, all handed out by one Receive.
type memoryGroup struct {
	id       string
	messages list.List     // *memoryMessage, in send order
	inFlight int           // messages in flight; the group is held while above 0
	elem     *list.Element // in Memory.order
}

// NewMemory returns an empty Memory.
func NewMemory(opts MemoryOptions) *Memory {
	q := &Memory{
		fifo:        opts.FIFO,
		maxReceives: max(opts.MaxReceives, 0),
		visibility:  opts.VisibilityTimeout,
		clock:       opts.Clock,
		delay:       max(opts.Delay, 0),
		changed:     make(chan struct{}),
		drained:     make(chan struct{}),
		groups:      map[string]*memoryGroup{},
		receipts:    map[string]*memoryMessage{},
		dedup:       map[string]time.Time{},
	}
	if q.visibility <= 0 {
		q.visibility = queueDefaultVisibility
	}
	if q.clock == nil {
		q.clock = time.Now
	}
	close(q.drained) // an empty queue is drained
	return q
}

// Send implements Queue. It checks m as SQS would: a body of 1 byte to
// 1 MiB of valid characters, and on a FIFO queue a GroupID and a
// DeduplicationID of 1 to 128 characters. The message's Attributes are kept as
// they are and come back in each Delivery.
func (q *Memory) Send(ctx context.Context, m OutgoingMessage) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory queue send: %w", err)
	}
	if err := checkBody(m.Body); err != nil {
		return fmt.Errorf("memory queue send: %w", err)
	}
	if q.fifo {
		for _, id := range []struct{ name, value string }{{"GroupID", m.GroupID}, {"DeduplicationID", m.DeduplicationID}} {
			if id.value == "" || len(id.value) > queueMaxIDLength {
				return fmt.Errorf("memory queue send: a FIFO queue needs a %s of 1 to %d characters, got %q", id.name, queueMaxIDLength, id.value)
			}
		}
	}
	msg := &memoryMessage{id: uuid.NewString(), body: append([]byte(nil), m.Body...), attributes: maps.Clone(m.Attributes)}

	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock()
	msg.sentAt = time.UnixMilli(now.UnixMilli()) // SQS's SentTimestamp is in milliseconds
	if q.fifo {
		if q.duplicate(m.DeduplicationID, now) {
			return nil
		}
		g := q.groups[m.GroupID]
		if g == nil {
			g = &memoryGroup{id: m.GroupID}
			g.elem = q.order.PushBack(g)
			q.groups[m.GroupID] = g
		}
		msg.group = g
		msg.elem = g.messages.PushBack(msg)
	} else if q.delay > 0 { // in flight, without a receipt, until the delay ends
		msg.inFlight, msg.visibleAt = true, now.Add(q.delay)
		heap.Push(&q.inFlight, msg)
	} else {
		msg.elem = q.ready.PushBack(msg)
	}
	if q.stored == 0 {
		q.drained = make(chan struct{})
	}
	q.stored++
	q.broadcast()
	return nil
}

// duplicate tells whether id was sent within the deduplication interval
// before now, and records it if not.
func (q *Memory) duplicate(id string, now time.Time) bool {
	for len(q.dedupIDs) > 0 && !q.dedup[q.dedupIDs[0]].After(now) {
		delete(q.dedup, q.dedupIDs[0])
		q.dedupIDs = q.dedupIDs[1:]
	}
	if end, ok := q.dedup[id]; ok && end.After(now) {
		return true
	}
	if _, ok := q.dedup[id]; !ok {
		q.dedupIDs = append(q.dedupIDs, id)
	}
	q.dedup[id] = now.Add(queueDedupWindow)
	return false
}

// checkBody checks a body as SQS does: 1 byte to 1 MiB of the characters
// #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF.
func checkBody(b []byte) error {
	if len(b) == 0 || len(b) > queueMaxMessageSize {
		return fmt.Errorf("body of %d bytes: SQS takes 1 to %d", len(b), queueMaxMessageSize)
	}
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		ok := r == '\t' || r == '\n' || r == '\r' ||
			(r >= 0x20 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF)
		if !ok || (r == utf8.RuneError && size == 1) {
			return fmt.Errorf("body has a character SQS refuses at byte %d", i)
		}
		i += size
	}
	return nil
}

// checkReceive checks Receive's arguments as SQS would.
func checkReceive(max int, wait, visibility time.Duration) error {
	switch {
	case max < 1:
		return fmt.Errorf("max %d, want at least 1", max)
	case wait < 0:
		return fmt.Errorf("negative wait %s", wait)
	case visibility < 0 || visibility > queueMaxVisibility:
		return fmt.Errorf("visibility %s, want 0 to %s", visibility, queueMaxVisibility)
	}
	return nil
}

// checkReceipts refuses empty receipts, which SQS would refuse.
func checkReceipts(receipts ...string) error {
	for _, r := range receipts {
		if r == "" {
			return errors.New("empty receipt")
		}
	}
	return nil
}

// checkChangeVisibility checks ChangeVisibility's arguments as SQS would.
func checkChangeVisibility(receipt string, timeout time.Duration) error {
	if timeout < 0 || timeout > queueMaxVisibility {
		return fmt.Errorf("timeout %s, want 0 to %s", timeout, queueMaxVisibility)
	}
	return checkReceipts(receipt)
}

// Receive implements Queue. It returns at once when messages are visible;
// otherwise it waits, without polling, until one becomes visible (sent,
// back from a visibility timeout, released by ChangeVisibility, or next in
// a FIFO group), wait passes or ctx ends. As on SQS, max is capped at 10 and
// wait at 20s, and a zero visibility means MemoryOptions.VisibilityTimeout.
func (q *Memory) Receive(ctx context.Context, max int, wait, visibility time.Duration) ([]Delivery, error) {
	if err := checkReceive(max, wait, visibility); err != nil {
		return nil, fmt.Errorf("memory queue receive: %w", err)
	}
	max = min(max, queueMaxReceive)
	wait = min(wait, queueMaxWait)
	if visibility == 0 {
		visibility = q.visibility
	}
	var waitEnd <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		waitEnd = t.C
	}
	for last := wait == 0; ; {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("memory queue receive: %w", err)
		}
		q.mu.Lock()
		now := q.clock()
		q.expire(now)
		got := q.take(max, visibility, now)
		changed := q.changed
		next := q.nextDeadline(now)
		q.mu.Unlock()
		if len(got) > 0 || last {
			return got, nil
		}
		var expiry <-chan time.Time
		var timer *time.Timer
		if next != noDeadline {
			timer = time.NewTimer(next)
			expiry = timer.C
		}
		select {
		case <-ctx.Done():
		case <-waitEnd:
			last = true
		case <-changed:
		case <-expiry:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// ReceiveIsCancelSafe implements CancelSafeQueue: it reports true, since a
// Receive takes messages only when it returns them.
func (q *Memory) ReceiveIsCancelSafe() bool { return true }

// Delete implements Queue. A receipt that is not its message's latest, or
// whose message is gone, is skipped without an error, as SQS does (see
// Memory); an empty one is an error.
func (q *Memory) Delete(ctx context.Context, receipts ...string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory queue delete: %w", err)
	}
	if err := checkReceipts(receipts...); err != nil {
		return fmt.Errorf("memory queue delete: %w", err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, r := range receipts {
		if msg := q.receipts[r]; msg != nil {
			q.remove(msg)
		}
	}
	return nil
}

// ChangeVisibility implements Queue. The message must be in flight under
// receipt, else the error is ErrStaleReceipt; an empty receipt is another
// error. A zero timeout makes it visible at once; timeout may be at most
// 12h.
func (q *Memory) ChangeVisibility(ctx context.Context, receipt string, timeout time.Duration) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory queue change visibility: %w", err)
	}
	if err := checkChangeVisibility(receipt, timeout); err != nil {
		return fmt.Errorf("memory queue change visibility: %w", err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock()
	q.expire(now)
	msg := q.receipts[receipt]
	if msg == nil || !msg.inFlight {
		return fmt.Errorf("memory queue change visibility: %w", ErrStaleReceipt)
	}
	if timeout == 0 {
		heap.Remove(&q.inFlight, msg.heapIndex)
		q.makeVisible(msg)
		return nil
	}
	msg.visibleAt = now.Add(timeout)
	heap.Fix(&q.inFlight, msg.heapIndex)
	if msg.heapIndex == 0 {
		q.broadcast() // waiting receivers must wake up earlier
	}
	return nil
}

// MemoryLen counts the messages of a Memory by state.
type MemoryLen struct {
	Visible  int // waiting to be received (in a FIFO queue, also those behind a message in flight)
	InFlight int // received and neither deleted nor visible again
	Dead     int // moved to the dead letters after MaxReceives receives
}

// Len counts the messages by state, as of now.
func (q *Memory) Len() MemoryLen {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.expire(q.clock())
	return MemoryLen{Visible: q.stored - q.inFlight.Len(), InFlight: q.inFlight.Len(), Dead: len(q.dead)}
}

// WaitIdle waits until the queue holds no message, visible or in flight, and
// returns nil; it returns ctx's error if ctx ends first. Every message that is
// neither deleted nor dead keeps the queue busy: one hidden by a visibility
// timeout (a retry's backoff, a ChangeVisibility) as much as one being
// worked on, and one that has used up its MaxReceives until a Receive moves
// it to the dead letters. Dead letters do not count. An idle queue returns
// nil at once, even when ctx has ended.
//
// It waits without polling, woken by the Delete or the move to the dead
// letters that takes the last message. nil means the queue was idle at some
// moment after the call; a Send may have added a message since.
func (q *Memory) WaitIdle(ctx context.Context) error {
	q.mu.Lock()
	drained := q.drained
	q.mu.Unlock()
	select {
	case <-drained:
		return nil
	default:
	}
	select {
	case <-drained:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("memory queue wait idle: %w", ctx.Err())
	}
}

// DeadLetters returns the messages that were moved to the dead letters, in
// the order they moved, each with the ReceiveCount it had then and no
// Receipt: they are only there to be looked at, as on a dead-letter queue
// that nobody consumes.
func (q *Memory) DeadLetters() []Delivery {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]Delivery, len(q.dead))
	for i, d := range q.dead {
		d.Body = append([]byte(nil), d.Body...)
		d.Attributes = maps.Clone(d.Attributes)
		out[i] = d
	}
	return out
}

// broadcast wakes every waiting Receive. q.mu must be held.
func (q *Memory) broadcast() {
	close(q.changed)
	q.changed = make(chan struct{})
}

// expire makes visible again the messages whose visibility timeout ran out
// by now.
func (q *Memory) expire(now time.Time) {
	for q.inFlight.Len() > 0 && !q.inFlight[0].visibleAt.After(now) {
		q.makeVisible(heap.Pop(&q.inFlight).(*memoryMessage))
	}
}

// nextDeadline returns how long until the first visibility timeout runs
// out, or noDeadline when no message is in flight.
func (q *Memory) nextDeadline(now time.Time) time.Duration {
	if q.inFlight.Len() == 0 {
		return noDeadline
	}
	return max(q.inFlight[0].visibleAt.Sub(now), time.Millisecond)
}

// makeVisible puts a message that has left q.inFlight back among the
// visible: at the end of a standard queue, at the head of its FIFO group
// (where it has stayed).
func (q *Memory) makeVisible(msg *memoryMessage) {
	msg.inFlight = false
	if msg.group != nil {
		msg.group.inFlight--
	} else {
		msg.elem = q.ready.PushBack(msg)
	}
	q.broadcast()
}

// take delivers up to max visible messages, moving those that have used up
// their receives to the dead letters on the way.
func (q *Memory) take(max int, visibility time.Duration, now time.Time) []Delivery {
	var got []Delivery
	if !q.fifo {
		for len(got) < max && q.ready.Len() > 0 {
			msg := q.ready.Remove(q.ready.Front()).(*memoryMessage)
			msg.elem = nil
			if q.exhausted(msg) {
				q.bury(msg)
				continue
			}
			got = append(got, q.deliver(msg, visibility, now))
		}
		return got
	}
	var served []*memoryGroup
	for e := q.order.Front(); e != nil && len(got) < max; {
		g, next := e.Value.(*memoryGroup), e.Next()
		if g.inFlight == 0 {
			// Nothing of the group in flight: every message of it is visible.
			for m := g.messages.Front(); m != nil && len(got) < max; {
				msg, after := m.Value.(*memoryMessage), m.Next()
				if q.exhausted(msg) {
					q.dropFromGroup(msg)
					q.bury(msg)
				} else {
					got = append(got, q.deliver(msg, visibility, now))
					g.inFlight++
				}
				m = after
			}
			if g.inFlight > 0 {
				served = append(served, g)
			}
		}
		if g.messages.Len() == 0 {
			q.order.Remove(g.elem)
			delete(q.groups, g.id)
		}
		e = next
	}
	// Round robin: the groups just served wait behind the others.
	for _, g := range served {
		q.order.MoveToBack(g.elem)
	}
	return got
}

// exhausted tells whether msg has been received MaxReceives times.
func (q *Memory) exhausted(msg *memoryMessage) bool {
	return q.maxReceives > 0 && msg.receiveCount >= q.maxReceives
}

// deliver hands out msg under a new receipt and hides it for visibility.
func (q *Memory) deliver(msg *memoryMessage, visibility time.Duration, now time.Time) Delivery {
	delete(q.receipts, msg.receipt)
	msg.receipt = uuid.NewString()
	q.receipts[msg.receipt] = msg
	msg.receiveCount++
	msg.inFlight = true
	msg.visibleAt = now.Add(visibility)
	heap.Push(&q.inFlight, msg)
	if msg.heapIndex == 0 {
		q.broadcast() // waiting receivers must wake up at this new first deadline
	}
	return Delivery{
		MessageID: msg.id, Receipt: msg.receipt, Body: append([]byte(nil), msg.body...),
		ReceiveCount: msg.receiveCount, SentAt: msg.sentAt, Attributes: maps.Clone(msg.attributes),
		GroupID: msg.groupID(),
	}
}

// bury moves a message that is out of every list to the dead letters.
func (q *Memory) bury(msg *memoryMessage) {
	delete(q.receipts, msg.receipt)
	q.unstore()
	q.dead = append(q.dead, Delivery{MessageID: msg.id, Body: msg.body, ReceiveCount: msg.receiveCount, SentAt: msg.sentAt, Attributes: msg.attributes, GroupID: msg.groupID()})
}

// groupID is the message's FIFO group, or "" on a standard queue.
func (msg *memoryMessage) groupID() string {
	if msg.group == nil {
		return ""
	}
	return msg.group.id
}

// remove deletes msg, in flight or visible.
func (q *Memory) remove(msg *memoryMessage) {
	delete(q.receipts, msg.receipt)
	if msg.group != nil {
		q.dropFromGroup(msg)
		if g := msg.group; g.messages.Len() == 0 {
			q.order.Remove(g.elem)
			delete(q.groups, g.id)
		} else {
			q.broadcast() // the group's next message is free to go
		}
	} else {
		if msg.inFlight {
			heap.Remove(&q.inFlight, msg.heapIndex)
		}
		if msg.elem != nil {
			q.ready.Remove(msg.elem)
		}
	}
	q.unstore()
}

// unstore counts out a message that was deleted or moved to the dead letters,
// and wakes WaitIdle when it was the last.
func (q *Memory) unstore() {
	q.stored--
	if q.stored == 0 {
		close(q.drained)
	}
}

// dropFromGroup takes msg out of its group (and out of flight).
func (q *Memory) dropFromGroup(msg *memoryMessage) {
	msg.group.messages.Remove(msg.elem)
	if msg.inFlight {
		heap.Remove(&q.inFlight, msg.heapIndex)
		msg.inFlight = false
		msg.group.inFlight--
	}
}

// memoryHeap orders messages in flight by the end of their visibility
// timeout (container/heap).
type memoryHeap []*memoryMessage

func (h memoryHeap) Len() int           { return len(h) }
func (h memoryHeap) Less(i, j int) bool { return h[i].visibleAt.Before(h[j].visibleAt) }
func (h memoryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIndex, h[j].heapIndex = i, j
}

func (h *memoryHeap) Push(x any) {
	msg := x.(*memoryMessage)
	msg.heapIndex = len(*h)
	*h = append(*h, msg)
}

func (h *memoryHeap) Pop() any {
	old := *h
	msg := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	msg.heapIndex = -1
	return msg
}
