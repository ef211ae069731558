package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Planning a spike from one number. Sharding an event removes its per-key ceilings,
// but a table takes only as many units at once as its warm throughput: a new
// on-demand table starts at 4,000 write and 12,000 read units per second and grows to
// twice its previous peak, so a bigger drop is throttled at the table unless the
// table and its indexes are warmed first; and an account takes at most its on-demand
// quota per table and per index, 40,000 units a second unless raised.

// The layout rule: what one click and one seat write, as the heat meter measures them
// on DynamoDB Local (asyncevent bench, its heat rows), and the share of a partition
// key's 1,000 WCU/s a shard may take. ShardsFor, EventConfig.ShardForPeak and
// PlanSpike all read these, and nothing else does.
const (
	// keyWCULimit is DynamoDB's limit on one partition key: 1,000 WCU/s, on the table
	// and on each GSI apart.
	keyWCULimit = 1000
	// shardBudget is the share of keyWCULimit one shard may take at the peak: 80%,
	// for the bursts around it.
	shardBudget = 0.8 * keyWCULimit

	// indexWCUPerClick is what one click writes on GSI2 (its event's key) and on GSI1
	// (its user's) while seats last: the index projects ALL, so the request's put
	// (which carries its index keys), its QUEUED, its PROCESSING and its final status
	// each rewrite its entry, 1 WCU each for an item under 1 KB. A loser once the
	// worker knows the event is sold out skips PROCESSING: 3.
	indexWCUPerClick = 4
	// tableWCUPerClick is what one click writes on the table, on keys of its own (a
	// lock and a request per click, so no key of the table runs hot): the lock, the
	// request's put, QUEUED, PROCESSING and the final status.
	tableWCUPerClick = 5
	// tableRCUPerClick is the reads of a click on the table: a few eventually
	// consistent reads of the request while the user waits for the result.
	tableRCUPerClick = 2

	// wcuPerClaim is what the rule counts for one seat claim: one UpdateItem of a
	// capacity shard, 1 WCU while the shard item is under 1 KB and 2 under 2 KB. The
	// item grows by a 12-byte seat token per winner, so its claims cost 1 WCU to
	// about its 64th winner and 2 to about its 150th: 2 holds for a shard of up to
	// ruleSeatsPerShard seats, which ShardForPeak keeps.
	wcuPerClaim = 2
	// ruleSeatsPerShard is the most seats a capacity shard holds for wcuPerClaim to
	// hold, with room for the item's other attributes.
	ruleSeatsPerShard = 128

	// winnersPerClick is the share of the clicks that take a seat at the peak when
	// the caller does not say: a quarter.
	winnersPerClick = 0.25
)

// ShardsFor returns the layout (EventConfig.IndexShards and CapacityShards) that
// keeps each of an event's hot keys under 80% of a partition key's 1,000 WCU/s at a
// peak of clicksPerSecond new participations and winnersPerSecond seats taken:
//
//	IndexShards    = ⌈clicksPerSecond × 4 WCU ÷ 800⌉   (GSI2: put, QUEUED, PROCESSING, final status)
//	CapacityShards = ⌈winnersPerSecond × 2 WCU ÷ 800⌉  (one UpdateItem of a shard per seat)
//
// (4 is a click that a worker with a Handler holds PROCESSING; the home claim of a
// worker without one, and every loser once the event is sold out, write 3 on GSI2:
// the put, QUEUED and the result.) Each at least 1 and at most MaxShards (99 capacity
// shards); winnersPerSecond 0
// means a quarter of the clicks. 20,000 clicks/s gives 100 index shards and, for
// 5,000 winners/s, 13 capacity shards. A claim costs 2 WCU only while its shard
// holds up to about 128 seats: EventConfig.ShardForPeak also counts the seats.
// A capacity shard takes no transaction, so its bound is its units alone: no
// serial bound of one transaction at a time applies.
func ShardsFor(clicksPerSecond, winnersPerSecond float64) (indexShards, capacityShards int) {
	if winnersPerSecond <= 0 {
		winnersPerSecond = clicksPerSecond * winnersPerClick
	}
	return shardsFor(clicksPerSecond*indexWCUPerClick, MaxShards), shardsFor(winnersPerSecond*wcuPerClaim, maxCapacityShards)
}

// shardsFor is how many shards of shardBudget take units a second, between 1 and
// most.
func shardsFor(units float64, most int) int {
	n := math.Ceil(units / shardBudget)
	if !(n < float64(most)) { // clamped as a float: a huge peak (or NaN) would overflow int
		return most
	}
	return max(int(n), 1)
}

// ShardForPeak sets the event's layout (IndexShards and CapacityShards) for a peak of
// clicksPerSecond new participations, a quarter of them winners, by ShardsFor: a
// LOTTERY gets no capacity shards; a FIRST_COME event no more capacity shards than
// seats, and at least one per 128 seats (up to 99 shards), so that a claim costs
// the 2 WCU ShardsFor counts. Past 99 × 128 seats a shard's claims cost more as it
// fills (⌈item size ÷ 1 KB⌉ WCU, about 12 bytes a winner) and it takes fewer claims a
// second than the rule says. The CLI's event create -peak and the HTTP API's
// peakClicksPerSecond call it.
func (e *EventConfig) ShardForPeak(clicksPerSecond float64) {
	e.IndexShards, e.CapacityShards = ShardsFor(clicksPerSecond, 0)
	if e.EventType != FirstCome {
		e.CapacityShards = 0
		return
	}
	seats := max(e.CapacityTotal, 1)
	bySeats := min((seats+ruleSeatsPerShard-1)/ruleSeatsPerShard, maxCapacityShards)
	e.CapacityShards = int(min(max(int64(e.CapacityShards), bySeats), seats))
	if e.HoldFor > 0 {
		// CreateEvent writes an event with holds' registry entry in the same
		// transaction as its shards: one shard fewer fits.
		e.CapacityShards = min(e.CapacityShards, maxCapacityShards-1)
	}
}

// DefaultOnDemandQuota is AWS's default on-demand throughput quota of one table, and
// of each of its GSIs apart: 40,000 read and 40,000 write request units a second. It
// is an account quota (Service Quotas, per Region), raised on request, ahead of the
// drop: DynamoDB throttles the table or the index above it whatever its warm
// throughput.
const DefaultOnDemandQuota = 40000

// Throughput is units per second of a table or an index.
type Throughput struct {
	ReadUnitsPerSecond  int64
	WriteUnitsPerSecond int64
}

// SpikePlan is what one event and the table need to take a peak of clicks per second
// on DynamoDB.
type SpikePlan struct {
	ClicksPerSecond float64
	// WinnersPerSecond is the seats taken per second at the peak that the plan
	// assumes: a quarter of the clicks.
	WinnersPerSecond float64

	// The event's layout for the peak (ShardsFor): EventConfig.IndexShards and
	// CapacityShards.
	IndexShards, CapacityShards int

	// Need is the throughput the table ("") and each index ("GSI1", "GSI2") take at
	// the peak: per click 5 WCU and 2 RCU on the table and 4 WCU on each index, and
	// per winner 2 WCU on the table (its seat); Warm their warm throughput now
	// (DescribeTable), zero where DynamoDB reports none (DynamoDB Local); Short those
	// whose warm throughput is below the need, with the throughput to raise them to.
	Need, Warm, Short map[string]Throughput

	// Quota is the on-demand quota each of the table and its indexes is held to by
	// default (DefaultOnDemandQuota); OverQuota those whose need passes it, with
	// their need: the account's quota to raise, ahead of the drop (ApplySpikePlan
	// cannot). OnDemandMax is the on-demand maximum set on the table and each index
	// (DescribeTable OnDemandThroughput), where one is set; Capped those whose
	// maximum is below the need, with the need.
	Quota               Throughput
	OverQuota           map[string]Throughput
	OnDemandMax, Capped map[string]Throughput

	// Drain is how long the workers take to drain the queue of a one-minute spike at
	// the peak, DefaultDrainConcurrency messages at once, DefaultMessageTime each;
	// DrainFor works it out for other figures.
	Drain Drain
}

// Drain is how long workers take to process the messages of a spike: Clicks
// messages, Concurrency of them at once (over all workers), MessageTime each, so
// Time = Clicks × MessageTime ÷ Concurrency. The queue holds what the workers have
// not reached; a first-come user waits up to Time for the result.
type Drain struct {
	Clicks      int64
	Concurrency int
	MessageTime time.Duration
	Time        time.Duration
}

// The Drain a SpikePlan states unless told otherwise.
const (
	// DefaultSpikeDuration is how long the peak lasts.
	DefaultSpikeDuration = time.Minute
	// DefaultDrainConcurrency is the messages the workers process at once, over all
	// workers (say a dozen workers of WorkerOptions.Concurrency 8).
	DefaultDrainConcurrency = 100
	// DefaultMessageTime is one message's time in a worker: a winner's three writes
	// (its start, its seat, SUCCEEDED) at about 10 ms each on DynamoDB. A loser once
	// the worker knows the event is sold out takes one write, so for a drop of many
	// more users than seats the figure is high. An assumption, not a measurement:
	// DynamoDB Local is no guide to DynamoDB's latency.
	DefaultMessageTime = 30 * time.Millisecond
)

// DrainFor is how long concurrency messages at once, messageTime each, take to
// process clicks messages. concurrency ≤ 0 means DefaultDrainConcurrency,
// messageTime ≤ 0 DefaultMessageTime.
func DrainFor(clicks int64, concurrency int, messageTime time.Duration) Drain {
	if concurrency <= 0 {
		concurrency = DefaultDrainConcurrency
	}
	if messageTime <= 0 {
		messageTime = DefaultMessageTime
	}
	d := Drain{Clicks: max(clicks, 0), Concurrency: concurrency, MessageTime: messageTime}
	d.Time = time.Duration(float64(d.Clicks) * float64(messageTime) / float64(concurrency))
	return d
}

// short lists the table and indexes whose warm throughput is below what the peak
// needs, with the throughput to raise them to.
func (p *SpikePlan) short() map[string]Throughput {
	short := map[string]Throughput{}
	for name, need := range p.Need {
		warm := p.Warm[name]
		if warm.ReadUnitsPerSecond < need.ReadUnitsPerSecond || warm.WriteUnitsPerSecond < need.WriteUnitsPerSecond {
			short[name] = Throughput{
				ReadUnitsPerSecond:  max(warm.ReadUnitsPerSecond, need.ReadUnitsPerSecond),
				WriteUnitsPerSecond: max(warm.WriteUnitsPerSecond, need.WriteUnitsPerSecond),
			}
		}
	}
	return short
}

// above lists the table and indexes whose need passes limit (a limit of 0 or less,
// in reads or in writes, is no limit), with their need.
func (p *SpikePlan) above(limit func(name string) Throughput) map[string]Throughput {
	out := map[string]Throughput{}
	for name, need := range p.Need {
		l := limit(name)
		if (l.ReadUnitsPerSecond > 0 && need.ReadUnitsPerSecond > l.ReadUnitsPerSecond) ||
			(l.WriteUnitsPerSecond > 0 && need.WriteUnitsPerSecond > l.WriteUnitsPerSecond) {
			out[name] = need
		}
	}
	return out
}

// PlanSpike turns the expected peak of clicks per second of one event into its layout
// (ShardsFor), the throughput the table, GSI1 and GSI2 each need at it (per click 5
// WCU and 2 RCU on the table and 4 WCU on each index, per winner 2 WCU on the table;
// a quarter of the clicks winning), which of them pass the default on-demand quota
// (DefaultOnDemandQuota) or the maximum set on them, and the Drain of a one-minute
// spike; and reads the warm throughput and on-demand maxima they have now
// (DescribeTable). It writes nothing. At 20,000 clicks/s: 100 index and 13 capacity
// shards, 110,000 WCU/s on the table and 80,000 on each index, each above the default
// quota of 40,000.
func (c *Client) PlanSpike(ctx context.Context, clicksPerSecond float64) (*SpikePlan, error) {
	if clicksPerSecond <= 0 || math.IsInf(clicksPerSecond, 0) || math.IsNaN(clicksPerSecond) {
		return nil, fmt.Errorf("%w: a peak of %v clicks/s", ErrInvalidOptions, clicksPerSecond)
	}
	p := &SpikePlan{
		ClicksPerSecond: clicksPerSecond, WinnersPerSecond: clicksPerSecond * winnersPerClick,
		Need: map[string]Throughput{}, Warm: map[string]Throughput{}, OnDemandMax: map[string]Throughput{},
		Quota: Throughput{ReadUnitsPerSecond: DefaultOnDemandQuota, WriteUnitsPerSecond: DefaultOnDemandQuota},
		Drain: DrainFor(int64(math.Ceil(clicksPerSecond*DefaultSpikeDuration.Seconds())), 0, 0),
	}
	p.IndexShards, p.CapacityShards = ShardsFor(clicksPerSecond, p.WinnersPerSecond)
	units := func(perSecond float64) int64 { return int64(math.Ceil(perSecond)) }
	p.Need[""] = Throughput{
		ReadUnitsPerSecond:  units(clicksPerSecond * tableRCUPerClick),
		WriteUnitsPerSecond: units(clicksPerSecond*tableWCUPerClick + p.WinnersPerSecond*wcuPerClaim),
	}
	for _, index := range []string{IndexUser, IndexEvent} {
		p.Need[index] = Throughput{WriteUnitsPerSecond: units(clicksPerSecond * indexWCUPerClick)}
	}
	out, err := c.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(c.opts.TableName)})
	var notFound *types.ResourceNotFoundException
	if errors.As(err, &notFound) {
		return nil, fmt.Errorf("%w: %s", ErrTableNotFound, c.opts.TableName)
	}
	if err != nil {
		return nil, fmt.Errorf("plan spike: describe table %s: %w", c.opts.TableName, err)
	}
	if w := out.Table.WarmThroughput; w != nil {
		p.Warm[""] = Throughput{aws.ToInt64(w.ReadUnitsPerSecond), aws.ToInt64(w.WriteUnitsPerSecond)}
	}
	if m, ok := onDemandMax(out.Table.OnDemandThroughput); ok {
		p.OnDemandMax[""] = m
	}
	for _, gsi := range out.Table.GlobalSecondaryIndexes {
		name := aws.ToString(gsi.IndexName)
		if w := gsi.WarmThroughput; w != nil {
			p.Warm[name] = Throughput{aws.ToInt64(w.ReadUnitsPerSecond), aws.ToInt64(w.WriteUnitsPerSecond)}
		}
		if m, ok := onDemandMax(gsi.OnDemandThroughput); ok {
			p.OnDemandMax[name] = m
		}
	}
	p.Short = p.short()
	p.OverQuota = p.above(func(string) Throughput { return p.Quota })
	p.Capped = p.above(func(name string) Throughput { return p.OnDemandMax[name] })
	return p, nil
}

// onDemandMax is the on-demand maximum DescribeTable reports, if any is set (-1 or
// absent is none).
func onDemandMax(t *types.OnDemandThroughput) (Throughput, bool) {
	if t == nil {
		return Throughput{}, false
	}
	m := Throughput{ReadUnitsPerSecond: max(aws.ToInt64(t.MaxReadRequestUnits), 0), WriteUnitsPerSecond: max(aws.ToInt64(t.MaxWriteRequestUnits), 0)}
	return m, m != Throughput{}
}

// TableUpdater is the part of the DynamoDB API that ApplySpikePlan uses;
// *dynamodb.Client has it.
type TableUpdater interface {
	UpdateTable(ctx context.Context, in *dynamodb.UpdateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error)
}

// ApplySpikePlan raises the warm throughput of the table and of each index the plan
// finds short (of its Warm against its Need), in one UpdateTable call. It is a one-way change, and
// billed: warm throughput cannot be lowered again. It does nothing when nothing is
// short. (DynamoDB Local ignores warm throughput.) It raises neither the account's
// on-demand quota (OverQuota: a request to AWS) nor an on-demand maximum set on the
// table (Capped).
func (c *Client) ApplySpikePlan(ctx context.Context, db TableUpdater, p *SpikePlan) error {
	short := p.short()
	if len(short) == 0 {
		return nil
	}
	warm := func(t Throughput) *types.WarmThroughput {
		return &types.WarmThroughput{ReadUnitsPerSecond: aws.Int64(t.ReadUnitsPerSecond), WriteUnitsPerSecond: aws.Int64(t.WriteUnitsPerSecond)}
	}
	in := &dynamodb.UpdateTableInput{TableName: aws.String(c.opts.TableName)}
	if t, ok := short[""]; ok {
		in.WarmThroughput = warm(t)
	}
	for _, index := range []string{IndexUser, IndexEvent} {
		if t, ok := short[index]; ok {
			in.GlobalSecondaryIndexUpdates = append(in.GlobalSecondaryIndexUpdates, types.GlobalSecondaryIndexUpdate{
				Update: &types.UpdateGlobalSecondaryIndexAction{IndexName: aws.String(index), WarmThroughput: warm(t)},
			})
		}
	}
	if _, err := db.UpdateTable(ctx, in); err != nil {
		return fmt.Errorf("raise the warm throughput of %s: %w", c.opts.TableName, err)
	}
	return nil
}
