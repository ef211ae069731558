package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Planning a spike from one number. Sharding an event removes its per-key ceilings,
// but a table takes only as many units at once as its warm throughput: a new
// on-demand table starts at 4,000 write and 12,000 read units per second and grows to
// twice its previous peak, so a bigger drop is throttled at the table unless the
// table and its indexes are warmed first.

// The units per second one click at the peak puts on the table and on each index, as
// the heat meter measures them (asyncevent bench, its heat rows): the lock, the
// request, its queued, started and final writes (a winner's final write and seat in a
// transaction) on the table; the request's entry written by its put and at each of
// its three later statuses on GSI1 and on GSI2; and a few eventually consistent reads of the
// request while the user waits for the result.
const (
	tableWCUPerClick = 5
	indexWCUPerClick = 4
	tableRCUPerClick = 2
)

// Throughput is units per second of a table or an index.
type Throughput struct {
	ReadUnitsPerSecond  int64
	WriteUnitsPerSecond int64
}

// SpikePlan is what one event and the table need to take a peak of clicks per second
// on DynamoDB.
type SpikePlan struct {
	ClicksPerSecond float64

	// The event's layout for the peak (ShardsFor): EventConfig.IndexShards and
	// CapacityShards.
	IndexShards, CapacityShards int

	// Need is the throughput the table ("") and each index ("GSI1", "GSI2") take at
	// the peak; Warm their warm throughput now (DescribeTable), zero where DynamoDB
	// reports none (DynamoDB Local); Short those whose warm throughput is below the
	// need, with the throughput to raise them to.
	Need, Warm, Short map[string]Throughput
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

// PlanSpike turns the expected peak of clicks per second of one event into its layout
// (ShardsFor) and the throughput the table, GSI1 and GSI2 each need, per click: 5 WCU
// and 2 RCU on the table, 4 WCU on each index; and reads the warm throughput they
// have now (DescribeTable). It writes nothing.
func (c *Client) PlanSpike(ctx context.Context, clicksPerSecond float64) (*SpikePlan, error) {
	if clicksPerSecond <= 0 || math.IsInf(clicksPerSecond, 0) || math.IsNaN(clicksPerSecond) {
		return nil, fmt.Errorf("%w: a peak of %v clicks/s", ErrInvalidOptions, clicksPerSecond)
	}
	p := &SpikePlan{ClicksPerSecond: clicksPerSecond, Need: map[string]Throughput{}, Warm: map[string]Throughput{}}
	p.IndexShards, p.CapacityShards = ShardsFor(clicksPerSecond, 0)
	units := func(perClick float64) int64 { return int64(math.Ceil(clicksPerSecond * perClick)) }
	p.Need[""] = Throughput{ReadUnitsPerSecond: units(tableRCUPerClick), WriteUnitsPerSecond: units(tableWCUPerClick)}
	for _, index := range []string{IndexUser, IndexEvent} {
		p.Need[index] = Throughput{WriteUnitsPerSecond: units(indexWCUPerClick)}
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
	for _, gsi := range out.Table.GlobalSecondaryIndexes {
		if w := gsi.WarmThroughput; w != nil {
			p.Warm[aws.ToString(gsi.IndexName)] = Throughput{aws.ToInt64(w.ReadUnitsPerSecond), aws.ToInt64(w.WriteUnitsPerSecond)}
		}
	}
	p.Short = p.short()
	return p, nil
}

// TableUpdater is the part of the DynamoDB API that ApplySpikePlan uses;
// *dynamodb.Client has it.
type TableUpdater interface {
	UpdateTable(ctx context.Context, in *dynamodb.UpdateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error)
}

// ApplySpikePlan raises the warm throughput of the table and of each index the plan
// finds short (of its Warm against its Need), in one UpdateTable call. It is a one-way change, and
// billed: warm throughput cannot be lowered again. It does nothing when nothing is
// short. (DynamoDB Local ignores warm throughput.)
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
