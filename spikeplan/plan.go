// Package spikeplan plans a table for a spike from one number, the peak of clicks
// per second of one event. Sharding an event ([asyncevent.ShardsFor]) removes its
// per-key ceilings, but a table takes only as many units at once as its warm
// throughput: a new on-demand table starts at 4,000 write and 12,000 read units per
// second and grows to twice its previous peak, so a bigger drop is throttled at the
// table unless the table and its indexes are warmed first; and an account takes at
// most its on-demand quota per table and per index, 40,000 units a second unless
// raised.
//
// [For] turns the peak into the event's layout, the throughput the table and its
// indexes need, what they have now and what passes the quota, and the time the
// workers take to drain the queue; [Apply] raises the warm throughput that is short.
// The operator CLI's plan command prints a Plan.
package spikeplan

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/internal/clickcost"
)

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

// Plan is what one event and the table need to take a peak of clicks per second on
// DynamoDB.
type Plan struct {
	ClicksPerSecond float64
	// WinnersPerSecond is the seats taken per second at the peak that the plan
	// assumes: a quarter of the clicks.
	WinnersPerSecond float64

	// The event's layout for the peak (asyncevent.ShardsFor): EventSettings.IndexShards
	// and CapacityShards.
	IndexShards, CapacityShards int

	// Need is the throughput the table ("") and each index ("GSI1", "GSI2") take at
	// the peak: per click 5 WCU and 2 RCU on the table and 4 WCU on each index, and
	// per winner 2 WCU on the table (its seat); Warm their warm throughput now
	// (DescribeTable), zero where DynamoDB reports none (DynamoDB Local); Short those
	// whose warm throughput is below the need, with the throughput to raise them to.
	Need, Warm, Short map[string]Throughput

	// Quota is the on-demand quota each of the table and its indexes is held to by
	// default (DefaultOnDemandQuota); OverQuota those whose need passes it, with
	// their need: the account's quota to raise, ahead of the drop (Apply cannot).
	// OnDemandMax is the on-demand maximum set on the table and each index
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

// TableDescriber is the part of the DynamoDB API that For uses; *dynamodb.Client and
// every asyncevent.DynamoDB have it.
type TableDescriber interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// For turns the expected peak of clicks per second of one event on table into its
// layout ([asyncevent.ShardsFor]), the throughput the table, GSI1 and GSI2 each need
// at it (per click 5 WCU and 2 RCU on the table and 4 WCU on each index, per winner
// 2 WCU on the table; a quarter of the clicks winning), which of them pass the
// default on-demand quota (DefaultOnDemandQuota) or the maximum set on them, and the
// Drain of a one-minute spike; and reads the warm throughput and on-demand maxima
// they have now (DescribeTable on db). It writes nothing. At 20,000 clicks/s: 100
// index and 13 capacity shards, 110,000 WCU/s on the table and 80,000 on each index,
// each above the default quota of 40,000.
//
// table is the table's name ([asyncevent.Client.TableName]). A peak that is not a
// positive finite number is [asyncevent.ErrInvalidOptions]; a table that does not
// exist, [asyncevent.ErrTableNotFound].
func For(ctx context.Context, db TableDescriber, table string, clicksPerSecond float64) (*Plan, error) {
	if clicksPerSecond <= 0 || math.IsInf(clicksPerSecond, 0) || math.IsNaN(clicksPerSecond) {
		return nil, fmt.Errorf("%w: a peak of %v clicks/s", asyncevent.ErrInvalidOptions, clicksPerSecond)
	}
	p := &Plan{
		ClicksPerSecond: clicksPerSecond, WinnersPerSecond: clicksPerSecond * clickcost.WinnerShare,
		Need: map[string]Throughput{}, Warm: map[string]Throughput{}, OnDemandMax: map[string]Throughput{},
		Quota: Throughput{ReadUnitsPerSecond: DefaultOnDemandQuota, WriteUnitsPerSecond: DefaultOnDemandQuota},
		Drain: DrainFor(int64(math.Ceil(clicksPerSecond*DefaultDuration.Seconds())), 0, 0),
	}
	p.IndexShards, p.CapacityShards = asyncevent.ShardsFor(clicksPerSecond, p.WinnersPerSecond)
	units := func(perSecond float64) int64 { return int64(math.Ceil(perSecond)) }
	p.Need[""] = Throughput{
		ReadUnitsPerSecond:  units(clicksPerSecond * clickcost.TableRCU),
		WriteUnitsPerSecond: units(clicksPerSecond*clickcost.TableWCU + p.WinnersPerSecond*clickcost.ClaimWCU),
	}
	for _, index := range []string{asyncevent.IndexUser, asyncevent.IndexEvent} {
		p.Need[index] = Throughput{WriteUnitsPerSecond: units(clicksPerSecond * clickcost.IndexWCU)}
	}
	out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	var notFound *types.ResourceNotFoundException
	if errors.As(err, &notFound) {
		return nil, fmt.Errorf("%w: %s", asyncevent.ErrTableNotFound, table)
	}
	if err != nil {
		return nil, fmt.Errorf("plan spike: describe table %s: %w", table, err)
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

// short lists the table and indexes whose warm throughput is below what the peak
// needs, with the throughput to raise them to.
func (p *Plan) short() map[string]Throughput {
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
func (p *Plan) above(limit func(name string) Throughput) map[string]Throughput {
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
