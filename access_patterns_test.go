package asyncevent_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// rowRecorder is an Observer that records the rows of every write the client makes,
// for the step of a script that is running.
type rowRecorder struct {
	mu   sync.Mutex
	step string
	rows map[string]map[string]int // step → row → writes
	// transactions are the TransactWriteItems of each step, by their rows in order,
	// the status log's entries left out.
	transactions map[string]map[string]bool
	reads        map[string]map[string]int // step → read → calls
}

func (r *rowRecorder) Submit(ctx context.Context, _, _ string, next func(context.Context) (asyncevent.Participation, error)) {
	_, _ = next(ctx)
}

func (r *rowRecorder) Send(ctx context.Context, m queue.OutgoingMessage, next func(context.Context, queue.OutgoingMessage) error) {
	_ = next(ctx, m)
}

func (r *rowRecorder) Process(ctx context.Context, _ queue.Delivery, next func(context.Context) asyncevent.Outcome) {
	next(ctx)
}

func (r *rowRecorder) DynamoDB(ctx context.Context, call asyncevent.DynamoDBCall, next func(context.Context) error) {
	if call.Row != "" {
		r.mu.Lock()
		var items []string
		for _, row := range strings.Split(call.Row, " + ") {
			r.rows[r.step][row]++
			if row != "status log" {
				items = append(items, row)
			}
		}
		if call.Operation == "TransactWriteItems" && len(items) > 1 {
			if r.transactions[r.step] == nil {
				r.transactions[r.step] = map[string]bool{}
			}
			r.transactions[r.step][strings.Join(items, " + ")] = true
		}
		r.mu.Unlock()
	}
	_ = next(ctx)
}

// reads records the reads the client makes, by step: "GetItem <entity>" or
// "Query <index> <partition's kind>".
type readRecorder struct {
	asyncevent.DynamoDB
	rec *rowRecorder
}

func (d readRecorder) note(read string) {
	d.rec.mu.Lock()
	if d.rec.reads[d.rec.step] == nil {
		d.rec.reads[d.rec.step] = map[string]int{}
	}
	d.rec.reads[d.rec.step][read]++
	d.rec.mu.Unlock()
}

func (d readRecorder) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	d.note("GetItem " + itemKind(in.Key["PK"], in.Key["SK"]))
	return d.DynamoDB.GetItem(ctx, in, o...)
}

func (d readRecorder) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	index := "table"
	if in.IndexName != nil {
		index = *in.IndexName
	}
	d.note("Query " + index + " " + partitionKind(partitionOf(in)))
	return d.DynamoDB.Query(ctx, in, o...)
}

// partitionOf is the partition key value a Query's key condition names: the value
// bound to "<PK, GSI1PK or GSI2PK> = :v".
func partitionOf(in *dynamodb.QueryInput) string {
	for name, attr := range in.ExpressionAttributeNames {
		if attr != "PK" && attr != "GSI1PK" && attr != "GSI2PK" {
			continue
		}
		_, after, ok := strings.Cut(aws.ToString(in.KeyConditionExpression), name+" = ")
		if !ok {
			continue
		}
		placeholder, _, _ := strings.Cut(after, " ")
		placeholder = strings.TrimRight(placeholder, ")")
		if v, ok := in.ExpressionAttributeValues[placeholder].(*types.AttributeValueMemberS); ok {
			return v.Value
		}
	}
	return ""
}

// itemKind is the entity a key names, by its text.
func itemKind(pk, sk types.AttributeValue) string {
	p, _ := pk.(*types.AttributeValueMemberS)
	s, _ := sk.(*types.AttributeValueMemberS)
	if p == nil || s == nil {
		return "?"
	}
	kind, err := asyncevent.Key{PK: p.Value, SK: s.Value}.Entity()
	if err != nil {
		return "? " + p.Value + " / " + s.Value
	}
	return string(kind)
}

// partitionKind is what a Query's partition key names.
func partitionKind(pk string) string {
	switch parts := strings.Split(pk, "#"); {
	case pk == "":
		return "?"
	case len(parts) == 1:
		return parts[0] // EVENTS, HOLD_EVENTS
	case len(parts) >= 3 && (parts[0] == "EVENT") && !isDigits(parts[2]):
		return parts[0] + "#" + parts[2] // EVENT#PROGRESS, EVENT#HOLDS
	}
	return strings.Split(pk, "#")[0]
}

func isDigits(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }

// run runs fn as the step of method and returns the rows it wrote.
func (r *rowRecorder) run(t *testing.T, method string, fn func() error) {
	t.Helper()
	r.mu.Lock()
	r.step = method
	if r.rows[method] == nil {
		r.rows[method] = map[string]int{}
	}
	r.mu.Unlock()
	require.NoError(t, fn(), method)
}

// composedOf names the row methods that a method makes its writes through: Submit
// is Participate, the send and MarkQueued (or MarkEnqueueFailed); a worker's delivery
// is the worker's row steps. Every method may write the status log and the progress.
var composedOf = map[string][]string{
	"Submit":               {"Rows.Participate", "Rows.MarkQueued", "Rows.MarkEnqueueFailed"},
	"Processor.ProcessOne": workerRows,
	// A pre-queue's serve decides each entry as a worker's delivery would.
	"ServePrequeue": append([]string{"Processor.ProcessOne"}, workerRows...),
}

// workerRows are the row methods of a worker's delivery.
var workerRows = []string{"Rows.StartProcessing", "Rows.ClaimSeat", "Rows.MarkCapacityRejected", "Rows.RejectSoldOut",
	"Rows.MarkFailed", "Rows.MarkClosed"}

// TestTheTableNamesWhatEachMethodDoes runs each method that writes, on first-come events
// with and without holds, a lottery, a pre-queue and the operator's controls, and
// holds every row it is seen to write to the access-pattern table: the row's method
// column names the method (or a row method it is made of). A method that starts
// writing a row its entry does not name fails here.
func TestTheTableNamesWhatEachMethodDoes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	rec := &rowRecorder{rows: map[string]map[string]int{}, transactions: map[string]map[string]bool{}, reads: map[string]map[string]int{}}
	c := asynceventtest.NewTableOn(t, readRecorder{DynamoDB: asynceventtest.DynamoDB(t), rec: rec},
		asyncevent.Options{Clock: clock.Now, StatusLog: true, Observer: rec})
	q := queue.NewMemory(queue.MemoryOptions{Clock: clock.Now})
	p := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	process := func() error {
		for {
			ds, err := q.Receive(ctx, 10, 0, time.Minute)
			if err != nil || len(ds) == 0 {
				return err
			}
			for _, d := range ds {
				if _, done, _ := p.ProcessOne(ctx, d, time.Minute, nil); done {
					if err := q.Delete(ctx, d.Receipt); err != nil {
						return err
					}
				}
			}
		}
	}
	submit := func(event string, users ...string) []string {
		var ids []string
		rec.run(t, "Submit", func() error {
			for _, u := range users {
				p, err := c.Submit(ctx, q, event, u)
				if err != nil {
					return err
				}
				ids = append(ids, p.RequestID)
			}
			return nil
		})
		rec.run(t, "Processor.ProcessOne", process)
		return ids
	}
	create := func(s asyncevent.EventSettings) {
		rec.run(t, "CreateEvent", func() error { _, err := c.CreateEvent(ctx, s); return err })
	}
	actor := asyncevent.ControlInput{Actor: "ops"}

	// A sale with holds: a winner confirmed, one released to the waitlist, the
	// waitlist served by the hold sweep, one left on it.
	create(asyncevent.EventSettings{EventID: "held", EventType: asyncevent.FirstCome, CapacityTotal: 2, HoldFor: 10 * time.Minute,
		EndsAt: asyncevent.MillisOf(t0.Add(24 * time.Hour))})
	held := submit("held", "ann", "bob", "cid", "dan")
	rec.run(t, "Confirm", func() error { _, err := c.Confirm(ctx, held[0]); return err })
	rec.run(t, "Release", func() error { _, err := c.Release(ctx, held[1]); return err })
	rec.run(t, "SweepHolds", func() error { _, err := c.SweepHolds(ctx, "held", asyncevent.HoldSweepOptions{}); return err })
	rec.run(t, "Release", func() error { _, err := c.Release(ctx, held[3]); return err }) // off the waitlist
	clock.Advance(11 * time.Minute)
	rec.run(t, "SweepHolds", func() error { _, err := c.SweepHolds(ctx, "held", asyncevent.HoldSweepOptions{}); return err }) // expiries

	// A sale without holds: sold out, seats added, a request cancelled, the controls.
	create(asyncevent.EventSettings{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 2, CapacityShards: 2,
		EndsAt: asyncevent.MillisOf(t0.Add(24 * time.Hour))})
	sale := submit("sale", "ann", "bob", "cid", "dan")
	rec.run(t, "AddCapacity", func() error {
		_, err := c.AddCapacity(ctx, "sale", asyncevent.AddCapacityInput{Seats: 2, Actor: "ops"})
		return err
	})
	submit("sale", "eve")
	for _, id := range sale {
		if r, err := c.GetRequest(ctx, id); err == nil && r.Status == asyncevent.StatusSucceeded {
			rec.run(t, "CancelRequest", func() error {
				_, err := c.CancelRequest(ctx, id, asyncevent.CancelRequestInput{Actor: "ops"})
				return err
			})
			break
		}
	}
	rec.run(t, "PauseEvent", func() error { _, err := c.PauseEvent(ctx, "sale", actor); return err })
	rec.run(t, "ResumeEvent", func() error { _, err := c.ResumeEvent(ctx, "sale", actor); return err })
	rec.run(t, "ExtendEvent", func() error {
		_, err := c.ExtendEvent(ctx, "sale", asyncevent.ExtendEventInput{Actor: "ops", Action: asyncevent.ActionExtendEnd,
			To: asyncevent.MillisOf(clock.Now().Add(48 * time.Hour))})
		return err
	})
	rec.run(t, "CloseEvent", func() error { _, err := c.CloseEvent(ctx, "sale", actor); return err })
	rec.run(t, "Sweep", func() error { _, err := c.Sweep(ctx, q, "sale", asyncevent.SweepOptions{}); return err })

	// A lottery, drawn.
	create(asyncevent.EventSettings{EventID: "lot", EventType: asyncevent.Lottery, WinnerCount: 1,
		LotteryCutoffAt: asyncevent.MillisOf(clock.Now().Add(time.Hour))})
	submit("lot", "ann", "bob")
	rec.run(t, "ExtendEvent", func() error {
		_, err := c.ExtendEvent(ctx, "lot", asyncevent.ExtendEventInput{Actor: "ops", Action: asyncevent.ActionExtendCutoff,
			To: asyncevent.MillisOf(clock.Now().Add(2 * time.Hour))})
		return err
	})
	clock.Advance(3 * time.Hour)
	rec.run(t, "Draw", func() error { _, err := c.Draw(ctx, "lot"); return err })

	// A pre-queue, served.
	create(asyncevent.EventSettings{EventID: "pre", EventType: asyncevent.FirstCome, CapacityTotal: 1,
		PrequeueOpensAt: asyncevent.MillisOf(clock.Now()), StartsAt: asyncevent.MillisOf(clock.Now().Add(time.Hour))})
	submit("pre", "ann", "bob")
	clock.Advance(time.Hour + asyncevent.DefaultDrawSettleWindow + time.Second)
	rec.run(t, "ServePrequeue", func() error { _, err := c.ServePrequeue(ctx, "pre"); return err })
	rec.run(t, "ListEvents", func() error { _, err := c.ListEvents(ctx, asyncevent.PageOptions{}); return err })
	rec.run(t, "FlushProgress", func() error { return c.FlushProgress(ctx) })

	// The progress meter flushes from goroutines of its own: a flush that lands from
	// here on waits for the checks.
	rec.mu.Lock()
	defer rec.mu.Unlock()
	named := asyncevent.RowMethods()
	var steps []string
	for step := range rec.rows {
		steps = append(steps, step)
	}
	sort.Strings(steps)
	seen := map[string]bool{}
	for _, step := range steps {
		allowed := append([]string{step, "Options.StatusLog", "FlushProgress"}, composedOf[step]...)
		for row, n := range rec.rows[step] {
			seen[row] = true
			methods, ok := named[row]
			if !assert.True(t, ok, "%s wrote %q, which the access-pattern table does not have", step, row) {
				continue
			}
			assert.True(t, slices.ContainsFunc(methods, func(m string) bool { return slices.Contains(allowed, m) }),
				"%s wrote the row %q (%d times); its entry names %s", step, row, n, strings.Join(methods, ", "))
		}
	}
	var unseen []string
	for row := range named {
		if !seen[row] {
			unseen = append(unseen, row)
		}
	}
	sort.Strings(unseen)
	t.Logf("rows this script does not reach (other tests do): %s", strings.Join(unseen, "; "))
	checkTransactionsBlock(t, rec.transactions)

	// Every read a method makes is a read of the table that names it.
	reads := asyncevent.ReadMethods()
	for step, calls := range rec.reads {
		allowed := append([]string{step}, composedOf[step]...)
		for read, n := range calls {
			assert.True(t, slices.ContainsFunc(reads[read], func(m string) bool { return slices.Contains(allowed, m) }),
				"%s made %d %s; no read of the table of that kind names it (those name %s)", step, n, read, strings.Join(reads[read], ", "))
		}
	}
}

// transactionsBegin opens doc.go's list of the transactions the methods were seen to
// make; an empty comment line closes it.
const transactionsBegin = "//\t\tTRANSACTIONS"

// checkTransactionsBlock holds doc.go's list of transactions to the ones observed
// (UPDATE_DOC=1 rewrites it).
func checkTransactionsBlock(t *testing.T, seen map[string]map[string]bool) {
	t.Helper()
	var lines []string
	for method, txs := range seen {
		for tx := range txs {
			lines = append(lines, fmt.Sprintf("//\t%-22s %s", method, tx))
		}
	}
	sort.Strings(lines)
	block := transactionsBegin + "\n" + strings.Join(lines, "\n") + "\n"
	src, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	doc := string(src)
	start := strings.Index(doc, transactionsBegin)
	require.GreaterOrEqual(t, start, 0, "doc.go has no list of transactions (a line %q)", transactionsBegin)
	end := start + strings.Index(doc[start:], "\n//\n") + 1
	if os.Getenv("UPDATE_DOC") != "" {
		require.NoError(t, os.WriteFile("doc.go", []byte(doc[:start]+block+doc[end:]), 0o644))
		return
	}
	assert.Equal(t, block, doc[start:end], "doc.go's transactions are not the ones the methods make (UPDATE_DOC=1 go test -run TestTheTableNamesWhatEachMethodDoes rewrites them)")
}
