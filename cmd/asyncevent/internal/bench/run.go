package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/internal/metered"
	"github.com/asyncevent/asyncevent/queue"
)

// Config configures Run. Only DB and Table are required.
type Config struct {
	// DB is the DynamoDB client both sides use, each through its own metered.Counter.
	DB asyncevent.DynamoDB
	// Table is the table, made by the library's CreateTable; Run creates it if needed.
	Table string

	// Rounds is how many times each flow runs on each side. Default: 5.
	Rounds int
	// N is how many operations each flow runs per round and side. Default: 500.
	N int
	// Clients is how many ingest calls run at once. Default: 16.
	Clients int
	// Workers is how many messages are processed at once. Default: 8.
	Workers int
	// Warmup is how many operations of each flow run before the first round, on
	// both sides, unmeasured, so that neither side pays for a cold DynamoDB Local.
	// Default: N/5; negative: none.
	Warmup int

	// LatencyClicks is how many clicks the latency run plays on each of its two
	// events (Ranked.Latency), after the rounds. Default: N; negative: no latency
	// run.
	LatencyClicks int
	// LatencyRate is the latency run's clicks a second. Default: DefaultLatencyRate.
	LatencyRate float64

	// RunID prefixes the event IDs, so that runs on one table do not meet.
	// Default: the start time.
	RunID string
	// Progress, if set, is told what runs next.
	Progress func(format string, args ...any)
}

// ItemKind names the kind of item of a table key by the library's own parser: the
// meters of internal/metered, which sit under the library, are handed it.
func ItemKind(pk, sk string) (entity.Type, error) {
	return asyncevent.Key{PK: pk, SK: sk}.Entity()
}

// The defaults of Config.
const (
	DefaultRounds  = 5
	DefaultN       = 500
	DefaultClients = 16
	DefaultWorkers = 8
)

// The flows, in the order Run measures them.
const (
	FlowIngestNew = "ingest, new participation"
	FlowIngestDup = "ingest, duplicate click"
	// FlowIngestRepeat is a repeat click on the ingest node that took the first one:
	// the library answers it from that client's cache of queued requests.
	FlowIngestRepeat  = "ingest, repeat click, same node"
	FlowWorkerWin     = "worker, first-come winner"
	FlowWorkerSoldOut = "worker, after sold out"
	// FlowWorkerSoldOutSharded is a loser of an event of ShardedSeats seats on as many
	// capacity shards, once every seat is taken, each on a worker new to the event
	// (on the library side, a Client and Processor of its own per message): what a sell-out
	// costs whichever worker a loser lands on. The baseline's event has one CAPACITY
	// item.
	FlowWorkerSoldOutSharded = "worker, after sold out, 99 capacity shards, new worker each"

	// FlowStoreTransaction calibrates the store, not the library: one
	// TransactWriteItems of two Puts (the "library" side) against two PutItem calls
	// of the same items (the "baseline" side), at the ingest's concurrency: what a
	// transaction costs on the DynamoDB under test. Neither a new participation nor a
	// first-come seat takes one; the lottery's draw and CreateEvent do.
	FlowStoreTransaction = "store: 1 transaction of 2 Puts vs 2 PutItems"
)

// Report is what Run measured.
type Report struct {
	Rounds  int    `json:"rounds"`
	N       int    `json:"n"`
	Clients int    `json:"clients"`
	Workers int    `json:"workers"`
	Flows   []Flow `json:"flows"`
	// Store is the calibration row FlowStoreTransaction.
	Store *Flow `json:"store,omitempty"`
	// Holds is the flows of an event with holds, measured on the library only.
	Holds *Holds `json:"holds,omitempty"`
	// Ranked is the flow of a ranked event's winners (FlowWorkerWinRanked) against
	// the baseline and against the library's standard mode, and the latency run.
	Ranked *Ranked `json:"ranked,omitempty"`
}

// Flow is one flow measured on both sides.
type Flow struct {
	Name     string `json:"name"`
	Library  Side   `json:"library"`
	Baseline Side   `json:"baseline"`
	// Ratio is the median over the rounds of library ops/s ÷ baseline ops/s, each
	// round's two runs having been measured one after the other.
	Ratio float64 `json:"ratio"`
}

// Side is a flow's figures on one side.
type Side struct {
	OpsPerSec []float64 `json:"opsPerSec"` // per round
	Median    float64   `json:"medianOpsPerSec"`
	Ops       int       `json:"ops"`
	PerOp     Costs     `json:"perOp"`
}

// Costs are the mean costs of one operation of a flow, over all rounds.
type Costs struct {
	DynamoDBCalls  float64            `json:"dynamodbCalls"`
	RoundTrips     float64            `json:"roundTrips"` // HTTP round trips to DynamoDB, SDK retries included
	QueueSends     float64            `json:"queueSends"`
	WCU            float64            `json:"wcu"`
	RCU            float64            `json:"rcu"`
	CapacityWrites float64            `json:"capacityWrites"` // write requests on the CAPACITY item
	CapacityReads  float64            `json:"capacityReads"`  // GetItem calls of a CAPACITY item (a look at a home shard)
	ConfigReads    float64            `json:"configReads"`    // GetItem calls of the event's CONFIG (cached per client)
	Calls          map[string]float64 `json:"calls"`
	// WCUOn splits WCU by where the units went (metered.Counts.WCUOn): "table:<kind
	// of item>", and each GSI by its name.
	WCUOn map[string]float64 `json:"wcuOn,omitempty"`
}

func (c *Config) setDefaults() {
	if c.Rounds <= 0 {
		c.Rounds = DefaultRounds
	}
	if c.N <= 0 {
		c.N = DefaultN
	}
	if c.Clients <= 0 {
		c.Clients = DefaultClients
	}
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	if c.Warmup == 0 {
		c.Warmup = c.N / 5
	}
	if c.LatencyClicks == 0 {
		c.LatencyClicks = c.N
	}
	if c.LatencyRate <= 0 {
		c.LatencyRate = DefaultLatencyRate
	}
	if c.RunID == "" {
		c.RunID = fmt.Sprintf("bench%d", time.Now().UnixMilli())
	}
	if c.Progress == nil {
		c.Progress = func(string, ...any) {}
	}
}

// side is one of the two implementations under test.
type side struct {
	name    string // "lib" or "raw"
	counter *metered.Counter
	client  *asyncevent.Client // the library, on counter (the baseline uses it only to create events)
	other   *asyncevent.Client // another ingest node of the library: no cache of this node's clicks
	raw     *Baseline
	// holds is the library's client for the events with holds, on counter, whose
	// clock (holdsClock) skips past their holds; nil on the baseline's side.
	holds      *asyncevent.Client
	holdsClock *holdsClock
	results    map[string]*measured
}

type measured struct {
	opsPerSec []float64
	// decidedPerSec is, per round, the winners over the time from the flow's start
	// to the last winner's decision (finishedAt), where a flow records it.
	decidedPerSec []float64
	ops           int
	counts        metered.Counts
	sends         int64
}

// Run measures the flows on both sides, interleaved: in each round every flow runs on
// the library and on the baseline one after the other (which goes first alternates by
// round), with N operations each. A round is, per side: a FIRST_COME event with
// capacity N; N new participations from Clients concurrent callers; N repeat clicks of
// the same users; the N messages processed by Workers concurrent workers (all win, and
// the event is sold out); the same on a ranked event of the library's
// (FlowWorkerWinRanked, Report.Ranked; the baseline's raw winner flow again on its
// side), on N users of its own; then N more users, whose messages are processed by a worker
// that has already seen the event sold out (one message first, unmeasured); on the
// library only, the same on an event with holds, then its holds confirmed, released
// and expired and their seats handed on to the waitlist (Report.Holds; workerHolds
// says how); last, the store calibration FlowStoreTransaction (Report.Store). After
// the rounds, the latency run (Report.Ranked.Latency): Config.LatencyClicks clicks
// at LatencyRate on a standard event, then on a ranked one, against a running worker.
//
// The library's winners are processed by an asyncevent.Worker; its sold-out messages by
// an asyncevent.Processor driven like the baseline's loop, since only a processor that
// has seen the event sold out skips the CAPACITY item and a Worker cannot be paused to
// refill its queue.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.setDefaults()
	lib, raw := &side{name: "lib"}, &side{name: "raw"}
	for _, sd := range []*side{lib, raw} {
		sd.counter = metered.NewCounter(cfg.DB, ItemKind)
		c, err := asyncevent.New(sd.counter, asyncevent.Options{TableName: cfg.Table, ProgressEvery: -1})
		if err != nil {
			return nil, err
		}
		sd.client = c
		if sd.other, err = asyncevent.New(sd.counter, asyncevent.Options{TableName: cfg.Table, DuplicateCacheSize: -1, ProgressEvery: -1}); err != nil {
			return nil, err
		}
		sd.raw = &Baseline{DB: sd.counter, Table: cfg.Table}
		sd.results = map[string]*measured{}
	}
	lib.holdsClock = &holdsClock{}
	h, err := asyncevent.New(lib.counter, asyncevent.Options{TableName: cfg.Table, Clock: lib.holdsClock.now, ProgressEvery: -1})
	if err != nil {
		return nil, err
	}
	lib.holds = h
	if err := lib.client.CreateTable(ctx); err != nil {
		return nil, err
	}

	if cfg.Warmup > 0 {
		cfg.Progress("warm-up: %d operations per flow on each side", cfg.Warmup)
		for _, sd := range []*side{lib, raw} {
			if err := runRound(ctx, cfg, sd, "warmup", cfg.Warmup); err != nil {
				return nil, fmt.Errorf("warm-up: %w", err)
			}
		}
	}
	for r := range cfg.Rounds {
		order := []*side{lib, raw}
		if r%2 == 1 {
			order = []*side{raw, lib}
		}
		cfg.Progress("round %d of %d: %s first, %d operations per flow", r+1, cfg.Rounds, order[0].name, cfg.N)
		if err := runRoundPair(ctx, cfg, order, fmt.Sprintf("r%d", r+1)); err != nil {
			return nil, fmt.Errorf("round %d: %w", r+1, err)
		}
	}
	rep := report(cfg, lib, raw)
	if cfg.LatencyClicks > 0 && rep.Ranked != nil {
		lat, err := measureRankedLatency(ctx, cfg)
		if err != nil {
			return nil, err
		}
		rep.Ranked.Latency = lat
	}
	return rep, nil
}

// runRoundPair runs one round on both sides, flow by flow.
func runRoundPair(ctx context.Context, cfg Config, order []*side, round string) error {
	states := map[*side]*roundState{}
	for _, sd := range order {
		st, err := newRoundState(ctx, cfg, sd, round, cfg.N)
		if err != nil {
			return err
		}
		states[sd] = st
	}
	for _, step := range steps {
		for _, sd := range order {
			if err := step(ctx, cfg, sd, states[sd], true); err != nil {
				return fmt.Errorf("%s: %w", sd.name, err)
			}
		}
	}
	return nil
}

// runRound runs one round of n operations per flow on one side, unrecorded.
func runRound(ctx context.Context, cfg Config, sd *side, round string, n int) error {
	st, err := newRoundState(ctx, cfg, sd, round, n)
	if err != nil {
		return err
	}
	for _, step := range steps {
		if err := step(ctx, cfg, sd, st, false); err != nil {
			return fmt.Errorf("%s: %w", sd.name, err)
		}
	}
	return nil
}

// roundState is one side's round: its event and queues.
type roundState struct {
	n       int
	eventID string
	winners *CountingQueue // messages of the first n users
	losers  *CountingQueue // messages of the n users after the sold-out
}

func newRoundState(ctx context.Context, cfg Config, sd *side, round string, n int) (*roundState, error) {
	st := &roundState{n: n, eventID: fmt.Sprintf("%s-%s-%s", cfg.RunID, round, sd.name), winners: newQueue(), losers: newQueue()}
	ec := asyncevent.EventSettings{EventID: st.eventID, EventType: asyncevent.FirstCome, CapacityTotal: int64(n)}
	if sd.name == "lib" {
		ec.CapacityShards = libCapacityShards(n)
	}
	_, err := sd.client.CreateEvent(ctx, ec)
	return st, err
}

// libCapacityShards is the capacity shards of the library's event of n seats. The
// library's shard holds a 12-byte token per winner: at most 64 seats a shard keep
// each claim at 1 WCU (asyncevent.MaxSeatsPerShard's doc). The baseline's CAPACITY
// item holds a count only.
func libCapacityShards(n int) int {
	return min((n+seatsPerShard-1)/seatsPerShard, ShardedSeats)
}

// ShardedSeats is the seats, and the capacity shards, of FlowWorkerSoldOutSharded's
// event: one seat on each, and the most capacity shards an event takes (CreateEvent
// writes them with its CONFIG in one transaction of at most 100 items).
const ShardedSeats = 99

// seatsPerShard is the most seats the library's side puts on one capacity shard.
const seatsPerShard = 64

type step func(ctx context.Context, cfg Config, sd *side, st *roundState, record bool) error

var steps = []step{ingestNew, ingestDup, ingestRepeat, workerWin, workerWinRanked, workerSoldOut, workerSoldOutSharded, workerHolds, storeTransaction}

// measure runs f, which does ops operations, and records its throughput and costs
// under flow.
func measure(sd *side, flow string, q *CountingQueue, ops int, record bool, f func() error) error {
	return measureOn(sd, sd.counter, flow, q, ops, record, f)
}

// measureOn is measure with the costs counted on counter: a flow whose client is
// counted apart.
func measureOn(sd *side, counter *metered.Counter, flow string, q *CountingQueue, ops int, record bool, f func() error) error {
	before := counter.Snapshot()
	var sendsBefore int64
	if q != nil {
		sendsBefore = q.Sends()
	}
	start := time.Now()
	if err := f(); err != nil {
		return fmt.Errorf("%s: %w", flow, err)
	}
	elapsed := time.Since(start)
	if !record {
		return nil
	}
	m := sd.results[flow]
	if m == nil {
		m = &measured{counts: metered.Counts{}}
		sd.results[flow] = m
	}
	m.opsPerSec = append(m.opsPerSec, float64(ops)/elapsed.Seconds())
	m.ops += ops
	m.counts = m.counts.Add(counter.Snapshot().Sub(before))
	if q != nil {
		m.sends += q.Sends() - sendsBefore
	}
	return nil
}

// submitAll runs submit for users first..first+n-1 from cfg.Clients goroutines.
func submitAll(ctx context.Context, cfg Config, n, first int, submit func(ctx context.Context, userID string) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	work := make(chan int)
	var wg sync.WaitGroup
	for range cfg.Clients {
		wg.Go(func() {
			for i := range work {
				if err := submit(ctx, fmt.Sprintf("u%06d", i)); err != nil {
					cancel(err)
				}
			}
		})
	}
feed:
	for i := first; i < first+n; i++ {
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	return context.Cause(ctx)
}

// submitter returns the side's ingest of one click into q; wantDup says what the
// click must turn out to be.
func submitter(sd *side, st *roundState, q queue.Queue, wantDup bool, client *asyncevent.Client) func(context.Context, string) error {
	return func(ctx context.Context, userID string) error {
		var dup bool
		if sd.name == "lib" {
			p, err := client.Submit(ctx, q, st.eventID, userID)
			if err != nil {
				return err
			}
			dup = p.Duplicate
		} else {
			_, d, err := sd.raw.Submit(ctx, q, st.eventID, userID)
			if err != nil {
				return err
			}
			dup = d
		}
		if dup != wantDup {
			return fmt.Errorf("click of %s: duplicate = %t, want %t", userID, dup, wantDup)
		}
		return nil
	}
}

func ingestNew(ctx context.Context, cfg Config, sd *side, st *roundState, record bool) error {
	return measure(sd, FlowIngestNew, st.winners, st.n, record, func() error {
		return submitAll(ctx, cfg, st.n, 0, submitter(sd, st, st.winners, false, sd.client))
	})
}

func ingestDup(ctx context.Context, cfg Config, sd *side, st *roundState, record bool) error {
	return measure(sd, FlowIngestDup, st.winners, st.n, record, func() error {
		return submitAll(ctx, cfg, st.n, 0, submitter(sd, st, st.winners, true, sd.other))
	})
}

func ingestRepeat(ctx context.Context, cfg Config, sd *side, st *roundState, record bool) error {
	return measure(sd, FlowIngestRepeat, st.winners, st.n, record, func() error {
		return submitAll(ctx, cfg, st.n, 0, submitter(sd, st, st.winners, true, sd.client))
	})
}

// outcomes counts the messages processed and the winners among them.
type outcomes struct{ done, won atomic.Int64 }

func workerWin(ctx context.Context, cfg Config, sd *side, st *roundState, record bool) error {
	var out outcomes
	start := time.Now()
	err := measure(sd, FlowWorkerWin, nil, st.n, record, func() error {
		if sd.name == "raw" {
			return drain(ctx, memory(st.winners), cfg.Workers, rawHandler(sd, &out))
		}
		return workUntilEmpty(ctx, cfg, sd.client, st.winners, &out)
	})
	if err != nil {
		return err
	}
	if got := out.won.Load(); got != int64(st.n) {
		return fmt.Errorf("%s: %d winners of %d messages, want all", FlowWorkerWin, got, st.n)
	}
	if sd.name == "raw" {
		return nil
	}
	return recordDecided(ctx, sd, sd.client, FlowWorkerWin, st, start, record) // beside the ranked flow's
}

// workUntilEmpty runs an asyncevent.Worker of cfg.Workers on client over q, which
// receives no more messages, until q is empty.
func workUntilEmpty(ctx context.Context, cfg Config, client *asyncevent.Client, q *CountingQueue, out *outcomes) error {
	w, err := asyncevent.NewWorker(client, q, asyncevent.WorkerOptions{
		Concurrency: cfg.Workers, WaitTime: 50 * time.Millisecond,
		HoldSweepEvery: -1, // no holds here; the table's other events' sweeps are not this flow's
		ProcessOptions: asyncevent.ProcessOptions{OnOutcome: libOutcome(out)},
	})
	if err != nil {
		return err
	}
	if err := w.Start(ctx); err != nil {
		return err
	}
	werr := waitEmpty(ctx, memory(q))
	return errors.Join(werr, w.Stop(ctx))
}

func workerSoldOut(ctx context.Context, cfg Config, sd *side, st *roundState, record bool) error {
	// Users n..2n-1 join after the event sold out: unmeasured ingest.
	if err := submitAll(ctx, cfg, st.n, st.n, submitter(sd, st, st.losers, false, sd.client)); err != nil {
		return err
	}
	var out outcomes
	var handle func(context.Context, queue.Delivery) error
	if sd.name == "raw" {
		handle = rawHandler(sd, &out)
	} else {
		p := asyncevent.NewProcessor(sd.client, asyncevent.ProcessOptions{OnOutcome: libOutcome(&out)})
		handle = func(ctx context.Context, d queue.Delivery) error {
			if _, done, _ := p.ProcessOne(ctx, d, 0, nil); !done {
				return fmt.Errorf("message %s failed", d.MessageID)
			}
			return nil
		}
	}
	// One message first, unmeasured: the library's processor learns that the event is
	// sold out (the baseline has nothing to learn).
	if err := drainN(ctx, memory(st.losers), 1, handle); err != nil {
		return err
	}
	if err := measure(sd, FlowWorkerSoldOut, nil, st.n-1, record, func() error {
		return drain(ctx, memory(st.losers), cfg.Workers, handle)
	}); err != nil {
		return err
	}
	if got := out.won.Load(); got != 0 {
		return fmt.Errorf("%s: %d winners after the sell-out", FlowWorkerSoldOut, got)
	}
	if got := out.done.Load(); got != int64(st.n) {
		return fmt.Errorf("%s: %d of %d messages processed", FlowWorkerSoldOut, got, st.n)
	}
	return nil
}

func workerSoldOutSharded(ctx context.Context, cfg Config, sd *side, st *roundState, record bool) error {
	ev := &roundState{n: ShardedSeats, eventID: st.eventID + "-sharded", winners: newQueue(), losers: newQueue()}
	ec := asyncevent.EventSettings{EventID: ev.eventID, EventType: asyncevent.FirstCome, CapacityTotal: ShardedSeats}
	if sd.name == "lib" {
		ec.CapacityShards = ShardedSeats
	}
	if _, err := sd.client.CreateEvent(ctx, ec); err != nil {
		return err
	}
	if err := submitAll(ctx, cfg, ShardedSeats, 0, submitter(sd, ev, ev.winners, false, sd.client)); err != nil {
		return err
	}
	if err := submitAll(ctx, cfg, st.n, ShardedSeats, submitter(sd, ev, ev.losers, false, sd.client)); err != nil {
		return err
	}
	var won, lost outcomes
	handler := func(out *outcomes, fresh bool) func(context.Context, queue.Delivery) error {
		if sd.name == "raw" {
			return rawHandler(sd, out)
		}
		p := asyncevent.NewProcessor(sd.client, asyncevent.ProcessOptions{OnOutcome: libOutcome(out)})
		return func(ctx context.Context, d queue.Delivery) error {
			p := p
			if fresh { // a worker node new to the event: no cached CONFIG, no memory of shards
				c, err := asyncevent.New(sd.counter, asyncevent.Options{TableName: cfg.Table, ProgressEvery: -1})
				if err != nil {
					return err
				}
				p = asyncevent.NewProcessor(c, asyncevent.ProcessOptions{OnOutcome: libOutcome(out)})
			}
			if _, done, _ := p.ProcessOne(ctx, d, 0, nil); !done {
				return fmt.Errorf("message %s failed", d.MessageID)
			}
			return nil
		}
	}
	if err := drain(ctx, memory(ev.winners), cfg.Workers, handler(&won, false)); err != nil {
		return err
	}
	if got := won.won.Load(); got != ShardedSeats {
		return fmt.Errorf("%s: %d winners of %d seats", FlowWorkerSoldOutSharded, got, ShardedSeats)
	}
	if err := measure(sd, FlowWorkerSoldOutSharded, nil, st.n, record, func() error {
		return drain(ctx, memory(ev.losers), cfg.Workers, handler(&lost, true))
	}); err != nil {
		return err
	}
	if got, done := lost.won.Load(), lost.done.Load(); got != 0 || done != int64(st.n) {
		return fmt.Errorf("%s: %d winners among %d of %d losers", FlowWorkerSoldOutSharded, got, done, st.n)
	}
	return nil
}

func libOutcome(out *outcomes) func(asyncevent.Outcome) {
	return func(o asyncevent.Outcome) {
		out.done.Add(1)
		if o.Kind == asyncevent.OutcomeSucceeded {
			out.won.Add(1)
		}
	}
}

func rawHandler(sd *side, out *outcomes) func(context.Context, queue.Delivery) error {
	return func(ctx context.Context, d queue.Delivery) error {
		outcome, err := sd.raw.Process(ctx, d.Body)
		if err != nil {
			return err
		}
		out.done.Add(1)
		if outcome == RawWon {
			out.won.Add(1)
		}
		return nil
	}
}

// drain processes a queue that receives no more messages until it is empty, with
// workers goroutines that each receive one message, handle it and delete it.
func drain(ctx context.Context, q *queue.Memory, workers int, handle func(context.Context, queue.Delivery) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				ds, err := q.Receive(ctx, 1, 10*time.Millisecond, time.Minute)
				if err != nil {
					cancel(err)
					return
				}
				if len(ds) == 0 {
					if l := q.Len(); l.Visible+l.InFlight == 0 {
						return
					}
					continue
				}
				if err := handle(ctx, ds[0]); err != nil {
					cancel(err)
					return
				}
				if err := q.Delete(ctx, ds[0].Receipt); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}

// drainN handles and deletes n messages, one at a time.
func drainN(ctx context.Context, q *queue.Memory, n int, handle func(context.Context, queue.Delivery) error) error {
	for range n {
		ds, err := q.Receive(ctx, 1, time.Second, time.Minute)
		if err != nil {
			return err
		}
		if len(ds) == 0 {
			return errors.New("queue is empty")
		}
		if err := handle(ctx, ds[0]); err != nil {
			return err
		}
		if err := q.Delete(ctx, ds[0].Receipt); err != nil {
			return err
		}
	}
	return nil
}

// waitEmpty returns once q holds no message, visible or in flight.
func waitEmpty(ctx context.Context, q *queue.Memory) error {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		if l := q.Len(); l.Visible+l.InFlight == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func report(cfg Config, lib, raw *side) *Report {
	r := &Report{Rounds: cfg.Rounds, N: cfg.N, Clients: cfg.Clients, Workers: cfg.Workers}
	for _, name := range []string{FlowIngestNew, FlowIngestDup, FlowIngestRepeat, FlowWorkerWin, FlowWorkerSoldOut, FlowWorkerSoldOutSharded, FlowStoreTransaction} {
		l, b := lib.results[name], raw.results[name]
		if l == nil || b == nil {
			continue
		}
		f := Flow{Name: name, Library: sideOf(l), Baseline: sideOf(b)}
		var ratios []float64
		for i := range min(len(l.opsPerSec), len(b.opsPerSec)) {
			ratios = append(ratios, l.opsPerSec[i]/b.opsPerSec[i])
		}
		f.Ratio = median(ratios)
		if name == FlowStoreTransaction {
			r.Store = &f
			continue
		}
		r.Flows = append(r.Flows, f)
	}
	r.Holds = holdsReport(lib)
	r.Ranked = rankedReport(lib, raw)
	return r
}

// storeTransaction measures FlowStoreTransaction: on the library side one
// TransactWriteItems of two Puts per operation, on the baseline side the same two
// items with two PutItem calls; items of about the size of a lock and a request.
func storeTransaction(ctx context.Context, cfg Config, sd *side, st *roundState, record bool) error {
	item := func(kind string, i int) map[string]types.AttributeValue {
		pk := fmt.Sprintf("CALIBRATE#%s#%s#%06d", st.eventID, kind, i)
		return map[string]types.AttributeValue{
			"PK": s(pk), "SK": s(kind), "entityType": s("CALIBRATION"), "eventId": s(st.eventID),
			"userId": s(fmt.Sprintf("u%06d", i)), "requestId": s(uuid.Must(uuid.NewV7()).String()),
			"status": s(string(asyncevent.StatusReceived)), "uiResult": s(string(asyncevent.UIPending)),
			"requestedAt": n(time.Now().UnixMilli()), "idempotencyKey": s(pk), "ttl": n(time.Now().Add(time.Hour).Unix()),
		}
	}
	table := aws.String(cfg.Table)
	return measure(sd, FlowStoreTransaction, nil, st.n, record, func() error {
		return submitAll(ctx, cfg, st.n, 0, func(ctx context.Context, user string) error {
			var i int
			if _, err := fmt.Sscanf(user, "u%d", &i); err != nil {
				return err
			}
			lock, req := item("LOCK", i), item("META", i)
			if sd.name == "lib" {
				_, err := sd.counter.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
					{Put: &types.Put{TableName: table, Item: lock, ConditionExpression: aws.String("attribute_not_exists(PK)")}},
					{Put: &types.Put{TableName: table, Item: req, ConditionExpression: aws.String("attribute_not_exists(PK)")}},
				}})
				return err
			}
			if _, err := sd.counter.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: lock, ConditionExpression: aws.String("attribute_not_exists(PK)")}); err != nil {
				return err
			}
			_, err := sd.counter.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: req, ConditionExpression: aws.String("attribute_not_exists(PK)")})
			return err
		})
	})
}

func sideOf(m *measured) Side {
	ops := float64(m.ops)
	c := Costs{
		DynamoDBCalls:  float64(m.counts.DataCalls()) / ops,
		RoundTrips:     float64(m.counts.RoundTrips()) / ops,
		QueueSends:     float64(m.sends) / ops,
		WCU:            m.counts.WCU / ops,
		RCU:            m.counts.RCU / ops,
		CapacityWrites: float64(m.counts.Writes[entity.Capacity]) / ops,
		CapacityReads:  float64(m.counts.Reads[entity.Capacity]) / ops,
		ConfigReads:    float64(m.counts.Reads[entity.Config]) / ops,
		Calls:          map[string]float64{},
	}
	for op, k := range m.counts.Calls {
		c.Calls[op] = float64(k) / ops
	}
	if len(m.counts.WCUOn) > 0 {
		c.WCUOn = map[string]float64{}
		for on, u := range m.counts.WCUOn {
			c.WCUOn[on] = u / ops
		}
	}
	return Side{OpsPerSec: m.opsPerSec, Median: median(m.opsPerSec), Ops: m.ops, PerOp: c}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
