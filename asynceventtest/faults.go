package asynceventtest

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/internal/ctxsleep"
	"github.com/asyncevent/asyncevent/queue"
)

// FaultPlan says which calls a FaultyDynamoDB or a FaultyHTTPClient disturbs, and
// how. Rates are fractions of the matching calls; a call gets at most one fault. The
// same seed gives the same faults for the same sequence of calls.
type FaultPlan struct {
	Seed int64

	// FailRate: the call is refused before it is sent (a connection error); nothing
	// is applied.
	FailRate float64
	// LoseRate: the call is applied, then its response is lost (a connection reset):
	// the dangerous case, where the caller cannot tell.
	LoseRate float64
	// ThrottleRate: the call is refused with ProvisionedThroughputExceededException;
	// nothing is applied.
	ThrottleRate float64
	// Latency adds up to this much delay to each matching call.
	Latency time.Duration
	// LateRate: a write (PutItem, UpdateItem, DeleteItem, TransactWriteItems) is put
	// on the wire and its caller told the connection was reset, but the write lands
	// later, at a random moment up to LateBy after it was sent (500 ms when LateBy is
	// 0), whatever the caller did meanwhile: gave up, retried, lost its lease, was
	// killed. It is applied then, its condition read as the item stands then. Reads
	// never come late.
	LateRate float64
	LateBy   time.Duration
	// CrashAfterRate: a FaultyDynamoDB's process dies right after a matching call was
	// applied and answered, as Kill makes it: every later call fails. It puts a crash
	// between two writes of the caller, such as ingest's lock and request.
	CrashAfterRate float64

	// Operations limits the faults to these operations ("TransactWriteItems", …).
	// Default: the data operations GetItem, PutItem, UpdateItem, DeleteItem, Query
	// and TransactWriteItems.
	Operations []string
	// KeyPrefix limits the faults to calls on an item whose PK starts with it
	// ("REQ#", "EVENT#", "IDEMP#"); Query calls never match a prefix. Default: all.
	KeyPrefix string
}

// FaultCounts counts the faults a FaultyDynamoDB or a FaultyHTTPClient injected; Dead
// counts the calls a killed FaultyDynamoDB refused, Crashed the crashes of
// FaultPlan.CrashAfterRate.
type FaultCounts struct {
	Failed, Lost, Throttled, Dead, Crashed, Late int
}

// FaultyDynamoDB wraps a DynamoDB client and injects faults by a seeded plan, for
// tests of code built on asyncevent. Kill makes every later call fail, as for a
// process that died. It is safe for concurrent use.
type FaultyDynamoDB struct {
	db     asyncevent.DynamoDB
	faults *planner
	dead   atomic.Bool
	late   onTheWire // the late writes not landed yet
}

// WaitLate waits until every late write (FaultPlan.LateRate) sent so far has landed.
// A late write may be sent while WaitLate waits (a client's background flush of its
// progress, say): it is waited for too.
func (f *FaultyDynamoDB) WaitLate() { f.late.wait() }

// onTheWire counts the writes sent and not landed. Unlike a sync.WaitGroup, a write
// may be added while another goroutine waits for none.
type onTheWire struct {
	mu     sync.Mutex
	landed sync.Cond // L is mu
	n      int
}

func (w *onTheWire) add() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
}

func (w *onTheWire) done() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n--; w.n == 0 {
		w.landed.Broadcast()
	}
}

func (w *onTheWire) wait() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.n > 0 {
		w.landed.Wait()
	}
}

// NewFaultyDynamoDB returns a FaultyDynamoDB around db.
func NewFaultyDynamoDB(db asyncevent.DynamoDB, plan FaultPlan) *FaultyDynamoDB {
	f := &FaultyDynamoDB{db: db, faults: newPlanner(plan)}
	f.late.landed.L = &f.late.mu
	return f
}

// Unwrap returns the client f wraps.
func (f *FaultyDynamoDB) Unwrap() asyncevent.DynamoDB { return f.db }

// Kill makes every later call fail before it is sent.
func (f *FaultyDynamoDB) Kill() { f.dead.Store(true) }

// Revive undoes Kill.
func (f *FaultyDynamoDB) Revive() { f.dead.Store(false) }

// Counts returns the faults injected so far.
func (f *FaultyDynamoDB) Counts() FaultCounts { return f.faults.Counts() }

type fault int

const (
	noFault fault = iota
	failFault
	loseFault
	throttleFault
	lateFault
)

// planner draws the faults of a FaultPlan, for FaultyDynamoDB and FaultyHTTPClient.
type planner struct {
	plan FaultPlan
	ops  []string

	mu     sync.Mutex
	rng    *rand.Rand
	counts FaultCounts
}

func newPlanner(plan FaultPlan) *planner {
	ops := plan.Operations
	if len(ops) == 0 {
		ops = []string{"GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "TransactWriteItems"}
	}
	return &planner{plan: plan, ops: ops, rng: rand.New(rand.NewPCG(uint64(plan.Seed), 0x5eed))}
}

func (p *planner) countDead() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts.Dead++
}

func (p *planner) Counts() FaultCounts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts
}

// decide picks the fault of one call of op on the items with the partition keys pks
// (none for a Query), and its delay. With a KeyPrefix, a call matches when any of its
// items does.
func (p *planner) decide(op string, pks ...string) (fault, time.Duration) {
	if !slices.Contains(p.ops, op) || !p.matches(pks) {
		return noFault, 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var delay time.Duration
	if p.plan.Latency > 0 {
		delay = time.Duration(p.rng.Int64N(int64(p.plan.Latency)))
	}
	r := p.rng.Float64()
	switch {
	case r < p.plan.FailRate:
		p.counts.Failed++
		return failFault, delay
	case r < p.plan.FailRate+p.plan.ThrottleRate:
		p.counts.Throttled++
		return throttleFault, delay
	case r < p.plan.FailRate+p.plan.ThrottleRate+p.plan.LoseRate:
		p.counts.Lost++
		return loseFault, delay
	case r < p.plan.FailRate+p.plan.ThrottleRate+p.plan.LoseRate+p.plan.LateRate && writeOps[op]:
		p.counts.Late++
		return lateFault, delay
	}
	return noFault, delay
}

// writeOps are the operations a LateRate may delay.
var writeOps = map[string]bool{"PutItem": true, "UpdateItem": true, "DeleteItem": true, "TransactWriteItems": true}

// lateBy draws how long after its send a late write lands.
func (p *planner) lateBy() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	most := p.plan.LateBy
	if most <= 0 {
		most = 500 * time.Millisecond
	}
	return time.Duration(p.rng.Int64N(int64(most))) + 1
}

// crashesAfter decides whether the process dies after an applied call of op.
func (p *planner) crashesAfter(op string, pks []string) bool {
	if p.plan.CrashAfterRate <= 0 || !slices.Contains(p.ops, op) || !p.matches(pks) {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rng.Float64() >= p.plan.CrashAfterRate {
		return false
	}
	p.counts.Crashed++
	return true
}

func (p *planner) matches(pks []string) bool {
	if p.plan.KeyPrefix == "" {
		return true
	}
	return slices.ContainsFunc(pks, func(pk string) bool { return strings.HasPrefix(pk, p.plan.KeyPrefix) })
}

// decide picks the fault of one call, and its delay.
func (f *FaultyDynamoDB) decide(op string, pks ...string) (fault, time.Duration) {
	if f.dead.Load() {
		f.faults.countDead()
		return failFault, 0
	}
	return f.faults.decide(op, pks...)
}

// injected is the error of an injected fault, shaped as the SDK's errors are.
func injected(op string, kind fault) error {
	var err error
	switch kind {
	case failFault:
		err = &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused (injected)")}
	case throttleFault:
		err = &types.ProvisionedThroughputExceededException{Message: ptr("throughput exceeded (injected)")}
	case loseFault:
		err = &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer (injected after the call was applied)")}
	case lateFault:
		err = &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer (injected: the call lands later)")}
	}
	return &smithy.OperationError{ServiceID: "DynamoDB", OperationName: op, Err: err}
}

func ptr[T any](v T) *T { return &v }

// call runs one call under the plan.
func call[O any](ctx context.Context, f *FaultyDynamoDB, op string, pks []string, do func(context.Context) (*O, error)) (*O, error) {
	kind, delay := f.decide(op, pks...)
	if err := ctxsleep.Sleep(ctx, delay); err != nil {
		return nil, err
	}
	switch kind {
	case failFault, throttleFault:
		return nil, injected(op, kind)
	case loseFault:
		if _, err := do(ctx); err != nil {
			return nil, err
		}
		return nil, injected(op, kind)
	case lateFault:
		f.late.add()
		time.AfterFunc(f.faults.lateBy(), func() {
			defer f.late.done()
			_, _ = do(context.WithoutCancel(ctx)) // on the wire: neither the caller's end nor a Kill stops it
		})
		return nil, injected(op, kind)
	}
	out, err := do(ctx)
	if err == nil && f.faults.crashesAfter(op, pks) {
		f.Kill()
	}
	return out, err
}

func pkOf(item map[string]types.AttributeValue) []string {
	if s, ok := item["PK"].(*types.AttributeValueMemberS); ok {
		return []string{s.Value}
	}
	return nil
}

// GetItem implements asyncevent.DynamoDB.
func (f *FaultyDynamoDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return call(ctx, f, "GetItem", pkOf(in.Key), func(ctx context.Context) (*dynamodb.GetItemOutput, error) { return f.db.GetItem(ctx, in, o...) })
}

// PutItem implements asyncevent.DynamoDB.
func (f *FaultyDynamoDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return call(ctx, f, "PutItem", pkOf(in.Item), func(ctx context.Context) (*dynamodb.PutItemOutput, error) { return f.db.PutItem(ctx, in, o...) })
}

// UpdateItem implements asyncevent.DynamoDB.
func (f *FaultyDynamoDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return call(ctx, f, "UpdateItem", pkOf(in.Key), func(ctx context.Context) (*dynamodb.UpdateItemOutput, error) { return f.db.UpdateItem(ctx, in, o...) })
}

// DeleteItem implements asyncevent.DynamoDB.
func (f *FaultyDynamoDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return call(ctx, f, "DeleteItem", pkOf(in.Key), func(ctx context.Context) (*dynamodb.DeleteItemOutput, error) { return f.db.DeleteItem(ctx, in, o...) })
}

// Query implements asyncevent.DynamoDB.
func (f *FaultyDynamoDB) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return call(ctx, f, "Query", nil, func(ctx context.Context) (*dynamodb.QueryOutput, error) { return f.db.Query(ctx, in, o...) })
}

// TransactWriteItems implements asyncevent.DynamoDB. With a KeyPrefix, a transaction
// matches when any of its items does.
func (f *FaultyDynamoDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	var pks []string
	for _, it := range in.TransactItems {
		switch {
		case it.Put != nil:
			pks = append(pks, pkOf(it.Put.Item)...)
		case it.Update != nil:
			pks = append(pks, pkOf(it.Update.Key)...)
		case it.Delete != nil:
			pks = append(pks, pkOf(it.Delete.Key)...)
		case it.ConditionCheck != nil:
			pks = append(pks, pkOf(it.ConditionCheck.Key)...)
		}
	}
	return call(ctx, f, "TransactWriteItems", pks, func(ctx context.Context) (*dynamodb.TransactWriteItemsOutput, error) {
		return f.db.TransactWriteItems(ctx, in, o...)
	})
}

// CreateTable implements asyncevent.DynamoDB, without faults.
func (f *FaultyDynamoDB) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, o ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	return f.db.CreateTable(ctx, in, o...)
}

// DescribeTable implements asyncevent.DynamoDB, without faults.
func (f *FaultyDynamoDB) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return f.db.DescribeTable(ctx, in, o...)
}

// DescribeTimeToLive implements asyncevent.DynamoDB, without faults.
func (f *FaultyDynamoDB) DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error) {
	return f.db.DescribeTimeToLive(ctx, in, o...)
}

// UpdateTimeToLive implements asyncevent.DynamoDB, without faults.
func (f *FaultyDynamoDB) UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	return f.db.UpdateTimeToLive(ctx, in, o...)
}

// QueueFaultPlan says how a ChaosQueue disturbs a queue. The same seed gives the same
// disturbances for the same sequence of calls.
type QueueFaultPlan struct {
	Seed int64
	// MaxCopies sends each message up to this many extra times (a random number from
	// 0 to MaxCopies), as at-least-once delivery may.
	MaxCopies int
	// DropDeleteRate is the fraction of deleted messages that are silently not
	// deleted, so they come back.
	DropDeleteRate float64
	// ExtraVisibility hides received and released messages up to this much longer.
	ExtraVisibility time.Duration
	// Shuffle returns each receive batch in random order.
	Shuffle bool
}

// ChaosQueue wraps a queue and disturbs it by a seeded plan: duplicate sends, dropped
// deletes, delayed visibility, reordered batches. Kill makes every later call fail,
// as for a worker process that died. It is safe for concurrent use.
type ChaosQueue struct {
	q    queue.Queue
	plan QueueFaultPlan
	dead atomic.Bool

	mu  sync.Mutex
	rng *rand.Rand
}

// NewChaosQueue returns a ChaosQueue around q.
func NewChaosQueue(q queue.Queue, plan QueueFaultPlan) *ChaosQueue {
	return &ChaosQueue{q: q, plan: plan, rng: rand.New(rand.NewPCG(uint64(plan.Seed), 0xc4a05))}
}

// Kill makes every later call fail.
func (c *ChaosQueue) Kill() { c.dead.Store(true) }

var errQueueDead = errors.New("queue connection refused (injected)")

func (c *ChaosQueue) intN(n int) int {
	if n <= 0 {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rng.IntN(n + 1)
}

func (c *ChaosQueue) chance(p float64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rng.Float64() < p
}

func (c *ChaosQueue) extra() time.Duration {
	if c.plan.ExtraVisibility <= 0 {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Duration(c.rng.Int64N(int64(c.plan.ExtraVisibility)))
}

// Send implements queue.Queue.
func (c *ChaosQueue) Send(ctx context.Context, m queue.OutgoingMessage) error {
	if c.dead.Load() {
		return errQueueDead
	}
	for range 1 + c.intN(c.plan.MaxCopies) {
		if err := c.q.Send(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// Receive implements queue.Queue.
func (c *ChaosQueue) Receive(ctx context.Context, max int, wait, visibility time.Duration) ([]queue.Delivery, error) {
	if c.dead.Load() {
		return nil, errQueueDead
	}
	ds, err := c.q.Receive(ctx, max, wait, visibility+c.extra())
	if c.plan.Shuffle && len(ds) > 1 {
		c.mu.Lock()
		c.rng.Shuffle(len(ds), func(i, j int) { ds[i], ds[j] = ds[j], ds[i] })
		c.mu.Unlock()
	}
	return ds, err
}

// Delete implements queue.Queue.
func (c *ChaosQueue) Delete(ctx context.Context, receipts ...string) error {
	if c.dead.Load() {
		return errQueueDead
	}
	var kept []string
	for _, r := range receipts {
		if !c.chance(c.plan.DropDeleteRate) {
			kept = append(kept, r)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return c.q.Delete(ctx, kept...)
}

// ChangeVisibility implements queue.Queue.
func (c *ChaosQueue) ChangeVisibility(ctx context.Context, receipt string, timeout time.Duration) error {
	if c.dead.Load() {
		return errQueueDead
	}
	return c.q.ChangeVisibility(ctx, receipt, timeout+c.extra())
}
