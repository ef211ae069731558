package clikit

import (
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/spikeplan"
)

// Plan is what plan -json prints: the library's spikeplan.Plan in the CLI's own
// stable names (the table as "table", durations in milliseconds), the units short of
// warm throughput, and with -ranked the bound of a ranked admission. The HTTP API
// serves no plan.
type Plan struct {
	Plan   PlanFigures           `json:"plan"`
	Short  map[string]Throughput `json:"short"`
	Ranked *RankedBound          `json:"ranked,omitempty"`
}

// PlanFigures are a plan's figures: the peak, the event's layout, the units the
// table and its indexes need beside their warm throughput, the quota and the
// maxima over it, and the queue's drain.
type PlanFigures struct {
	ClicksPerSecond  float64               `json:"clicksPerSecond"`
	WinnersPerSecond float64               `json:"winnersPerSecond"`
	IndexShards      int                   `json:"indexShards"`
	CapacityShards   int                   `json:"capacityShards"`
	Need             map[string]Throughput `json:"need"`
	Warm             map[string]Throughput `json:"warm"`
	Quota            Throughput            `json:"quota"`
	OverQuota        map[string]Throughput `json:"overQuota"`
	OnDemandMax      map[string]Throughput `json:"onDemandMax"`
	Capped           map[string]Throughput `json:"capped"`
	Drain            Drain                 `json:"drain"`
}

// Throughput is units a second (spikeplan.Throughput).
type Throughput struct {
	WriteUnitsPerSecond int64 `json:"writeUnitsPerSecond"`
	ReadUnitsPerSecond  int64 `json:"readUnitsPerSecond"`
}

// Drain is the time the workers take to drain the queue (spikeplan.Drain).
type Drain struct {
	Clicks        int64 `json:"clicks"`
	Concurrency   int   `json:"concurrency"`
	MessageTimeMs int64 `json:"messageTimeMs"`
	TimeMs        int64 `json:"timeMs"`
}

// RankedBound is the bound of a ranked admission (asyncevent.RankedBound); BelowPeak
// when it decides fewer winners a second than the plan's peak.
type RankedBound struct {
	WaveSize             int     `json:"waveSize"`
	RoundTripsPerWave    int     `json:"roundTripsPerWave"`
	CallLatencyMs        float64 `json:"callLatencyMs"`
	WinnersPerSecond     float64 `json:"winnersPerSecond"`
	BelowPeak            bool    `json:"belowPeak"`
	LineQueriesPerSecond float64 `json:"lineQueriesPerSecond"`
	RecordRCU            int     `json:"recordRcu"`
	RecordRCUPerWorker   float64 `json:"recordRcuPerWorker"`
	MaxWorkers           int     `json:"maxWorkers"`
}

// PlanOf is p as the CLI prints it, with ranked's bound (nil: none).
func PlanOf(p *spikeplan.Plan, ranked *asyncevent.RankedBound) Plan {
	units := func(t spikeplan.Throughput) Throughput {
		return Throughput{WriteUnitsPerSecond: t.WriteUnitsPerSecond, ReadUnitsPerSecond: t.ReadUnitsPerSecond}
	}
	byName := func(m map[string]spikeplan.Throughput) map[string]Throughput {
		out := map[string]Throughput{}
		for name, t := range m {
			if name == "" {
				name = "table"
			}
			out[name] = units(t)
		}
		return out
	}
	out := Plan{
		Plan: PlanFigures{
			ClicksPerSecond: p.ClicksPerSecond, WinnersPerSecond: p.WinnersPerSecond,
			IndexShards: p.IndexShards, CapacityShards: p.CapacityShards,
			Need: byName(p.Need), Warm: byName(p.Warm), Quota: units(p.Quota), OverQuota: byName(p.OverQuota),
			OnDemandMax: byName(p.OnDemandMax), Capped: byName(p.Capped),
			Drain: Drain{Clicks: p.Drain.Clicks, Concurrency: p.Drain.Concurrency,
				MessageTimeMs: p.Drain.MessageTime.Milliseconds(), TimeMs: p.Drain.Time.Milliseconds()},
		},
		Short: byName(p.Short),
	}
	if b := ranked; b != nil {
		out.Ranked = &RankedBound{
			WaveSize: b.WaveSize, RoundTripsPerWave: b.RoundTrips, CallLatencyMs: float64(b.CallLatency) / float64(time.Millisecond),
			WinnersPerSecond: b.WinnersPerSecond, BelowPeak: b.WinnersPerSecond < p.WinnersPerSecond,
			LineQueriesPerSecond: b.LineQueriesPerSecond, RecordRCU: b.RecordRCU, RecordRCUPerWorker: b.RecordRCUPerWorker, MaxWorkers: b.MaxWorkers,
		}
	}
	return out
}
