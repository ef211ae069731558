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
	const table, eventID = "AsyncEventTable", "cpu"
	setup := func() (*Instant, *dynamodb.Client, *asyncevent.Client, *Baseline, error) {
		endpoint := new(Instant)
		db := endpoint.Client()
		c, err := asyncevent.New(db, asyncevent.Options{TableName: table})
		if err != nil {
			return nil, nil, nil, nil, err
		}
		if _, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: eventID, EventType: asyncevent.FirstCome, CapacityTotal: 100}); err != nil {
			return nil, nil, nil, nil, err
		}
		return endpoint, db, c, &Baseline{DB: db, Table: table}, nil
	}
	q := discard{}
	user := func(side string, i int) string { return side + "-" + strconv.Itoa(i) }

	newEndpoint, _, newLib, newRaw, err := setup()
	if err != nil {
		return nil, err
	}
	ingestNew := cpuFlow{id: "ingest-new", name: FlowIngestNew, endpoint: newEndpoint,
		library: func(ctx context.Context, i int) error {
			p, err := newLib.Submit(ctx, q, eventID, user("lib", i))
			return wantDuplicate(p.Duplicate, false, err)
		},
		baseline: func(ctx context.Context, i int) error {
			_, dup, err := newRaw.Submit(ctx, q, eventID, user("raw", i))
			return wantDuplicate(dup, false, err)
		},
	}

	dupEndpoint, db, first, dupRaw, err := setup()
	if err != nil {
		return nil, err
	}
	other, err := asyncevent.New(db, asyncevent.Options{TableName: table}) // another ingest node
	if err != nil {
		return nil, err
	}
	if _, err := first.Submit(ctx, q, eventID, "lib"); err != nil {
		return nil, err
	}
	if _, _, err := dupRaw.Submit(ctx, q, eventID, "raw"); err != nil {
		return nil, err
	}
	ingestDup := cpuFlow{id: "ingest-duplicate", name: FlowIngestDup, endpoint: dupEndpoint,
		library: func(ctx context.Context, _ int) error {
			p, err := other.Submit(ctx, q, eventID, "lib")
			return wantDuplicate(p.Duplicate, true, err)
		},
		baseline: func(ctx context.Context, _ int) error {
			_, dup, err := dupRaw.Submit(ctx, q, eventID, "raw")
			return wantDuplicate(dup, true, err)
		},
	}

	// The repeat click on the node that took the first: the library answers from that
	// client's memory; the baseline makes its duplicate's two calls.
	ingestRepeat := cpuFlow{id: "ingest-repeat", name: FlowIngestRepeat, endpoint: dupEndpoint,
		library: func(ctx context.Context, _ int) error {
			p, err := first.Submit(ctx, q, eventID, "lib")
			return wantDuplicate(p.Duplicate, true, err)
		},
		baseline: ingestDup.baseline,
	}

	pollEndpoint, db, pollLib, _, err := setup()
	if err != nil {
		return nil, err
	}
	waiting, err := pollLib.Submit(ctx, q, eventID, "waiting")
	if err != nil {
		return nil, err
	}
	key, err := asyncevent.NewRequestKey(waiting.RequestID)
	if err != nil {
		return nil, err
	}
	k := key.Key()
	get := &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: k.PK}, "SK": &types.AttributeValueMemberS{Value: k.SK}}}
	// The endpoint keeps puts, not updates: the request is stored QUEUED, as its
	// ingest's update left it.
	stored, err := db.GetItem(ctx, get)
	if err != nil {
		return nil, err
	}
	stored.Item["status"] = &types.AttributeValueMemberS{Value: string(asyncevent.StatusQueued)}
	stored.Item["queuedAt"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(int64(waiting.Request.QueuedAt), 10)}
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: stored.Item}); err != nil {
		return nil, err
	}
	poll := cpuFlow{id: "poll", name: FlowPoll, endpoint: pollEndpoint,
		library: func(ctx context.Context, _ int) error {
			r, err := pollLib.GetRequest(ctx, waiting.RequestID)
			if err == nil && (r.Status != asyncevent.StatusQueued || r.Queue == nil) {
				err = fmt.Errorf("poll: %s, place told %t: want QUEUED and a place", r.Status, r.Queue != nil)
			}
			return err
		},
		baseline: func(ctx context.Context, _ int) error {
			out, err := db.GetItem(ctx, get)
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
	const table, eventID, rawEventID = "AsyncEventTable", "cpu", "cpu-raw"
	endpoint := new(Instant)
	db := endpoint.Client()
	c, err := asyncevent.New(db, asyncevent.Options{TableName: table})
	if err != nil {
		return cpuFlow{}, err
	}
	shards := max(setup.shards, 1)
	for _, ev := range []asyncevent.EventSettings{
		{EventID: eventID, EventType: asyncevent.FirstCome, CapacityTotal: 10 * int64(shards), CapacityShards: setup.shards},
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
			c, err := asyncevent.New(db, asyncevent.Options{TableName: table, ProgressEvery: -1})
			return asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}), err
		}
	}
	p, err := worker()
	if err != nil {
		return cpuFlow{}, err
	}
	raw := &Baseline{DB: db, Table: table}
	now := asyncevent.EpochMillis(time.Now().UnixMilli())
	noKeepAlive := func(context.Context) error { return nil }
	return cpuFlow{id: id, name: name, endpoint: endpoint,
		library: func(ctx context.Context, i int) error {
			body, err := asyncevent.EncodeMessage(asyncevent.Message{V: asyncevent.MessageVersion, RequestID: uuid.Must(uuid.NewV7()).String(), EventID: eventID,
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
