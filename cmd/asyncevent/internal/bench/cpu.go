package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/queue"
)

// FlowPoll is a GetRequest of a request waiting in line (its place told), against
// the baseline's GetItem of the request unmarshalled into a struct.
const FlowPoll = "poll of a waiting request"

// ClientCPU is what each flow's operation costs the caller's CPU, on the library and
// on the baseline, against an Instant endpoint: the SDK's work and the caller's own,
// not the network's or DynamoDB's.
type ClientCPU struct {
	N     int       `json:"n"` // operations per flow, side and round
	Flows []CPUFlow `json:"flows"`
}

// CPUFlow is one flow's CPU and allocations per operation on both sides.
type CPUFlow struct {
	ID       string  `json:"id"` // short and stable, for scripts: "ingest-new", "worker-win"…
	Name     string  `json:"name"`
	Library  CPUSide `json:"library"`
	Baseline CPUSide `json:"baseline"`
	// CPURatio and AllocsRatio are library ÷ baseline, of the rounds' means.
	CPURatio    float64 `json:"cpuRatio"`
	AllocsRatio float64 `json:"allocsRatio"`
	// CPURatioMin and CPURatioMax are the lowest and highest of the rounds' own ratios
	// (each round runs the library, then the baseline): how far one round can stray.
	CPURatioMin float64 `json:"cpuRatioMin"`
	CPURatioMax float64 `json:"cpuRatioMax"`
}

// CPUSide is a flow's costs per operation on one side, the mean of the rounds.
// CPU is the process's user and system time (getrusage) over the operations: the
// caller's and the SDK's work, the garbage collector's share of it, and the Instant
// endpoint's own decoding and answering (measured at about 3% of a new participation
// on either side, 2026-11-28); the rounds run one operation at a time.
type CPUSide struct {
	CPUNsPerOp float64 `json:"cpuNsPerOp"`
	// CPUNsPerOpMin and CPUNsPerOpMax are the fastest and slowest round's.
	CPUNsPerOpMin float64 `json:"cpuNsPerOpMin"`
	CPUNsPerOpMax float64 `json:"cpuNsPerOpMax"`
	AllocsPerOp   float64 `json:"allocsPerOp"`
	BytesPerOp    float64 `json:"bytesPerOp"`
	CallsPerOp    float64 `json:"dynamodbCallsPerOp"` // the calls the endpoint answered: the path taken
}

// cpuFlow is a flow's operation on each side: the i-th of a run.
type cpuFlow struct {
	id, name          string
	endpoint          *Instant
	library, baseline func(ctx context.Context, i int) error
}

// cpuRounds is how many times MeasureClientCPU runs each side of a flow, the two
// sides in turn, so that neither pays alone for the machine's moments.
const cpuRounds = 3

// MeasureClientCPU measures each flow of cpuFlows on its own Instant endpoint: n
// operations per side and round, one at a time, after n/10 unmeasured ones.
func MeasureClientCPU(ctx context.Context, n int) (*ClientCPU, error) {
	flows, err := cpuFlows(ctx)
	if err != nil {
		return nil, err
	}
	out := &ClientCPU{N: n}
	for _, f := range flows {
		var lib, raw CPUSide
		next := 0
		run := func(op func(context.Context, int) error, into *CPUSide, ops int) (float64, error) {
			calls := f.endpoint.Calls()
			s, err := measureCPU(ops, func() error { next++; return op(ctx, next) })
			into.CPUNsPerOp += s.CPUNsPerOp / cpuRounds
			into.AllocsPerOp += s.AllocsPerOp / cpuRounds
			into.BytesPerOp += s.BytesPerOp / cpuRounds
			into.CallsPerOp += float64(f.endpoint.Calls()-calls) / float64(ops) / cpuRounds
			if into.CPUNsPerOpMin == 0 || s.CPUNsPerOp < into.CPUNsPerOpMin {
				into.CPUNsPerOpMin = s.CPUNsPerOp
			}
			into.CPUNsPerOpMax = max(into.CPUNsPerOpMax, s.CPUNsPerOp)
			return s.CPUNsPerOp, err
		}
		round := func(lib, raw *CPUSide, ops int) (float64, error) {
			l, errL := run(f.library, lib, ops)
			b, errB := run(f.baseline, raw, ops)
			if err := errors.Join(errL, errB); err != nil {
				return 0, fmt.Errorf("%s: %w", f.name, err)
			}
			return l / b, nil
		}
		var warm CPUSide
		if _, err := round(&warm, &warm, max(n/10, 1)); err != nil {
			return nil, err
		}
		flow := CPUFlow{ID: f.id, Name: f.name}
		for i := range cpuRounds {
			ratio, err := round(&lib, &raw, n)
			if err != nil {
				return nil, err
			}
			if i == 0 {
				flow.CPURatioMin, flow.CPURatioMax = ratio, ratio
			}
			flow.CPURatioMin, flow.CPURatioMax = min(flow.CPURatioMin, ratio), max(flow.CPURatioMax, ratio)
		}
		flow.Library, flow.Baseline = lib, raw
		flow.CPURatio, flow.AllocsRatio = lib.CPUNsPerOp/raw.CPUNsPerOp, lib.AllocsPerOp/raw.AllocsPerOp
		out.Flows = append(out.Flows, flow)
	}
	return out, nil
}

// measureCPU runs op n times and returns the process's CPU time and the heap
// allocations per run (a GC first, so that the last run's garbage is not counted).
func measureCPU(n int, op func() error) (CPUSide, error) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu := processCPU()
	for range n {
		if err := op(); err != nil {
			return CPUSide{}, err
		}
	}
	cpu = processCPU() - cpu
	runtime.ReadMemStats(&after)
	return CPUSide{
		CPUNsPerOp:  float64(cpu.Nanoseconds()) / float64(n),
		AllocsPerOp: float64(after.Mallocs-before.Mallocs) / float64(n),
		BytesPerOp:  float64(after.TotalAlloc-before.TotalAlloc) / float64(n),
	}, nil
}

// cpuFlows returns the flows the client's CPU is measured on, each set up on an
// Instant endpoint of its own: a new participation, a duplicate click on another
// ingest node than the first one's and on the same one, a poll of a waiting request, a first-come
// winner and a loser once the event is sold out.
func cpuFlows(ctx context.Context) ([]cpuFlow, error) {
	ingestNew, err := ingestNewFlow(ctx)
	if err != nil {
		return nil, err
	}
	ingestDup, ingestRepeat, err := ingestDuplicateFlows(ctx)
	if err != nil {
		return nil, err
	}
	poll, err := pollFlow(ctx)
	if err != nil {
		return nil, err
	}
	win, err := workerFlow(ctx, "worker-win", FlowWorkerWin, workerSetup{}, asyncevent.ResultSuccess, RawWon)
	if err != nil {
		return nil, err
	}
	lose, err := workerFlow(ctx, "worker-sold-out", FlowWorkerSoldOut, workerSetup{soldOut: true}, asyncevent.ResultRejectedCapacity, RawRejected)
	if err != nil {
		return nil, err
	}
	loseSharded, err := workerFlow(ctx, "worker-sold-out-sharded", FlowWorkerSoldOutSharded, workerSetup{soldOut: true, shards: ShardedSeats, newWorkerEach: true}, asyncevent.ResultRejectedCapacity, RawRejected)
	if err != nil {
		return nil, err
	}
	return []cpuFlow{ingestNew, ingestDup, ingestRepeat, poll, win, lose, loseSharded}, nil
}

// The table of every flow, and the event of the library's.
const cpuTable, cpuEventID = "AsyncEventTable", "cpu"

// cpuEvent is a FIRST_COME event of 100 seats on an Instant endpoint of its own, with
// the library's client and the baseline over it.
type cpuEvent struct {
	endpoint *Instant
	db       *dynamodb.Client
	lib      *asyncevent.Client
	raw      *Baseline
}

// newCPUEvent creates a cpuEvent on a new Instant endpoint.
func newCPUEvent(ctx context.Context) (*cpuEvent, error) {
	endpoint := new(Instant)
	db := endpoint.Client()
	c, err := asyncevent.New(db, asyncevent.Options{TableName: cpuTable})
	if err != nil {
		return nil, err
	}
	if _, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: cpuEventID, EventType: asyncevent.FirstCome, CapacityTotal: 100}); err != nil {
		return nil, err
	}
	return &cpuEvent{endpoint: endpoint, db: db, lib: c, raw: &Baseline{DB: db, Table: cpuTable}}, nil
}

// ingestNewFlow is a new participation: the i-th operation's user clicks for the
// first time.
func ingestNewFlow(ctx context.Context) (cpuFlow, error) {
	ev, err := newCPUEvent(ctx)
	if err != nil {
		return cpuFlow{}, err
	}
	user := func(side string, i int) string { return side + "-" + strconv.Itoa(i) }
	return cpuFlow{id: "ingest-new", name: FlowIngestNew, endpoint: ev.endpoint,
		library: func(ctx context.Context, i int) error {
			p, err := ev.lib.Submit(ctx, discard{}, cpuEventID, user("lib", i))
			return wantDuplicate(p.Duplicate, false, err)
		},
		baseline: func(ctx context.Context, i int) error {
			_, dup, err := ev.raw.Submit(ctx, discard{}, cpuEventID, user("raw", i))
			return wantDuplicate(dup, false, err)
		},
	}, nil
}

// ingestDuplicateFlows are a user's click again, after its first: dup on another
// ingest node than the first one's, repeat on the same one.
func ingestDuplicateFlows(ctx context.Context) (dup, repeat cpuFlow, err error) {
	ev, err := newCPUEvent(ctx)
	if err != nil {
		return cpuFlow{}, cpuFlow{}, err
	}
	other, err := asyncevent.New(ev.db, asyncevent.Options{TableName: cpuTable}) // another ingest node
	if err != nil {
		return cpuFlow{}, cpuFlow{}, err
	}
	if _, err := ev.lib.Submit(ctx, discard{}, cpuEventID, "lib"); err != nil {
		return cpuFlow{}, cpuFlow{}, err
	}
	if _, _, err := ev.raw.Submit(ctx, discard{}, cpuEventID, "raw"); err != nil {
		return cpuFlow{}, cpuFlow{}, err
	}
	dup = cpuFlow{id: "ingest-duplicate", name: FlowIngestDup, endpoint: ev.endpoint,
		library: func(ctx context.Context, _ int) error {
			p, err := other.Submit(ctx, discard{}, cpuEventID, "lib")
			return wantDuplicate(p.Duplicate, true, err)
		},
		baseline: func(ctx context.Context, _ int) error {
			_, dup, err := ev.raw.Submit(ctx, discard{}, cpuEventID, "raw")
			return wantDuplicate(dup, true, err)
		},
	}
	// The repeat click on the node that took the first: the library answers from that
	// client's memory; the baseline makes its duplicate's two calls.
	repeat = cpuFlow{id: "ingest-repeat", name: FlowIngestRepeat, endpoint: ev.endpoint,
		library: func(ctx context.Context, _ int) error {
			p, err := ev.lib.Submit(ctx, discard{}, cpuEventID, "lib")
			return wantDuplicate(p.Duplicate, true, err)
		},
		baseline: dup.baseline,
	}
	return dup, repeat, nil
}

// pollFlow is a poll of a request waiting in line: the library's GetRequest, the
// baseline's GetItem unmarshalled.
func pollFlow(ctx context.Context) (cpuFlow, error) {
	ev, err := newCPUEvent(ctx)
	if err != nil {
		return cpuFlow{}, err
	}
	waiting, err := ev.lib.Submit(ctx, discard{}, cpuEventID, "waiting")
	if err != nil {
		return cpuFlow{}, err
	}
	get, err := storeQueued(ctx, ev.db, waiting)
	if err != nil {
		return cpuFlow{}, err
	}
	return cpuFlow{id: "poll", name: FlowPoll, endpoint: ev.endpoint,
		library: func(ctx context.Context, _ int) error {
			r, err := ev.lib.GetRequest(ctx, waiting.RequestID)
			if err == nil && (r.Status != asyncevent.StatusQueued || r.Queue == nil) {
				err = fmt.Errorf("poll: %s, place told %t: want QUEUED and a place", r.Status, r.Queue != nil)
			}
			return err
		},
		baseline: func(ctx context.Context, _ int) error {
			out, err := ev.db.GetItem(ctx, get)
			if err != nil {
				return err
			}
			var r rawRequest
			if err := attributevalue.UnmarshalMap(out.Item, &r); err != nil {
				return err
			}
			if r.Status != string(asyncevent.StatusQueued) {
				return fmt.Errorf("poll: %s, want QUEUED", r.Status)
			}
			return nil
		},
	}, nil
}

// storeQueued stores the request of waiting QUEUED, as its ingest's update left it
// (the endpoint keeps puts, not updates), and returns the GetItem that reads it.
func storeQueued(ctx context.Context, db *dynamodb.Client, waiting asyncevent.Participation) (*dynamodb.GetItemInput, error) {
	key, err := asyncevent.NewRequestKey(waiting.RequestID)
	if err != nil {
		return nil, err
	}
	k := key.Key()
	get := &dynamodb.GetItemInput{TableName: aws.String(cpuTable), Key: map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: k.PK}, "SK": &types.AttributeValueMemberS{Value: k.SK}}}
	stored, err := db.GetItem(ctx, get)
	if err != nil {
		return nil, err
	}
	stored.Item["status"] = &types.AttributeValueMemberS{Value: string(asyncevent.StatusQueued)}
	stored.Item["queuedAt"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(int64(waiting.Request.QueuedAt), 10)}
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(cpuTable), Item: stored.Item}); err != nil {
		return nil, err
	}
	return get, nil
}

// workerSetup is the event of a worker flow.
type workerSetup struct {
	soldOut       bool // every seat taken, its CAPACITY items marked sold out
	shards        int  // capacity shards of the library's event (the baseline's has one CAPACITY item)
	newWorkerEach bool // each message on a Client and Processor of its own (a worker new to the event)
}

// workerFlow is a message of a new request of a FIRST_COME event whose CAPACITY
// items hold seats (the flow's winners) or none (its losers): on the library, a
// Processor's ProcessOne; on the baseline, its Process. Each operation checks that
// its request ended as the flow says.
func workerFlow(ctx context.Context, id, name string, setup workerSetup, want asyncevent.ResultCode, wantRaw string) (cpuFlow, error) {
	const rawEventID = "cpu-raw" // the baseline's event, beside the library's
	endpoint := new(Instant)
	db := endpoint.Client()
	c, err := asyncevent.New(db, asyncevent.Options{TableName: cpuTable})
	if err != nil {
		return cpuFlow{}, err
	}
	shards := max(setup.shards, 1)
	for _, ev := range []asyncevent.EventSettings{
		{EventID: cpuEventID, EventType: asyncevent.FirstCome, CapacityTotal: 10 * int64(shards), CapacityShards: setup.shards},
		{EventID: rawEventID, EventType: asyncevent.FirstCome, CapacityTotal: 10},
	} {
		if _, err := c.CreateEvent(ctx, ev); err != nil {
			return cpuFlow{}, err
		}
	}
	if setup.soldOut {
		endpoint.sellOut()
	}
	worker := func() (*asyncevent.Processor, error) {
		return asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), nil
	}
	if setup.newWorkerEach {
		worker = func() (*asyncevent.Processor, error) {
			c, err := asyncevent.New(db, asyncevent.Options{TableName: cpuTable, ProgressEvery: -1})
			return asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), err
		}
	}
	p, err := worker()
	if err != nil {
		return cpuFlow{}, err
	}
	raw := &Baseline{DB: db, Table: cpuTable}
	now := asyncevent.EpochMillis(time.Now().UnixMilli())
	noKeepAlive := func(context.Context) error { return nil }
	return cpuFlow{id: id, name: name, endpoint: endpoint,
		library: func(ctx context.Context, i int) error {
			body, err := asyncevent.EncodeMessage(asyncevent.Message{V: asyncevent.MessageVersion, RequestID: uuid.Must(uuid.NewV7()).String(), EventID: cpuEventID,
				UserID: "lib-" + strconv.Itoa(i), EventType: asyncevent.FirstCome, RequestedAt: now, CapacityShards: shards})
			if err != nil {
				return err
			}
			if setup.newWorkerEach {
				if p, err = worker(); err != nil {
					return err
				}
			}
			o, _, _ := p.ProcessOne(ctx, queue.Delivery{MessageID: strconv.Itoa(i), Body: body, ReceiveCount: 1}, time.Minute, noKeepAlive)
			if o.ResultCode != want {
				return fmt.Errorf("%s: ended %q (%v), want %s: the flow took another path", name, o.ResultCode, o.Err, want)
			}
			return nil
		},
		baseline: func(ctx context.Context, i int) error {
			body, err := json.Marshal(rawMessage{RequestID: uuid.Must(uuid.NewV7()).String(), EventID: rawEventID, UserID: "raw-" + strconv.Itoa(i), RequestedAt: int64(now)})
			if err != nil {
				return err
			}
			got, err := raw.Process(ctx, body)
			if err == nil && got != wantRaw {
				err = fmt.Errorf("%s: the baseline ended %s, want %s", name, got, wantRaw)
			}
			return err
		},
	}, nil
}

// wantDuplicate checks that a click took the path its flow measures.
func wantDuplicate(got, want bool, err error) error {
	if err == nil && got != want {
		err = fmt.Errorf("a click answered duplicate=%t, want %t: the flow took another path", got, want)
	}
	return err
}

// discard is a queue whose sends go nowhere: the flows measure the caller's CPU, not
// a queue's.
type discard struct{ queue.Queue }

func (discard) Send(context.Context, queue.OutgoingMessage) error { return nil }
