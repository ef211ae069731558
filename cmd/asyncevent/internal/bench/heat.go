package bench

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/internal/metered"
)

// Layout is how an event lays out its keys: how many GSI2 partitions its requests
// spread over (index shards) and how many items its capacity is split into
// (capacity shards): EventSettings.IndexShards and CapacityShards.
type Layout struct {
	Name           string
	IndexShards    int
	CapacityShards int
	// Prequeue gives the event a pre-queue: every click is an entry, and the heat
	// counts its serve at the start (ServePrequeue) besides the clicks.
	Prequeue bool
}

// WithPrequeue is l with a pre-queue, named <l.Name>-prequeue.
func (l Layout) WithPrequeue() Layout {
	l.Name, l.Prequeue = l.Name+"-prequeue", true
	return l
}

// DefaultLayout is the design's keys: GSI2PK EVENT#<eventId>, one CAPACITY item.
var DefaultLayout = Layout{Name: "default", IndexShards: 1, CapacityShards: 1}

// LayoutFor is the layout asyncevent.ShardsFor derives for a peak of clicks per
// second (a quarter of them winners), named derived-<clicks/s>: the library's one
// peak-to-layout rule. MeasureHeat gives the event no more capacity shards than seats.
func LayoutFor(clicksPerSecond float64) Layout {
	k, c := asyncevent.ShardsFor(clicksPerSecond, 0)
	return Layout{Name: fmt.Sprintf("derived-%.0f", clicksPerSecond), IndexShards: k, CapacityShards: c}
}

// HeatConfig configures MeasureHeat. Only DB and Table are required.
type HeatConfig struct {
	DB    asyncevent.DynamoDB
	Table string // made by the library's CreateTable; created if needed

	// Layout is the event's layout. Default: DefaultLayout.
	Layout Layout
	// Participations is how many users take part, each once. Default: 2 × DefaultN.
	Participations int
	// Winners is the event's capacity. Default: Participations / 2.
	Winners int
	// Clients is how many ingest calls run at once. Default: DefaultClients.
	Clients int
	// Workers is how many messages are processed at once, while the ingest goes on.
	// Default: DefaultWorkers.
	Workers int

	// RunID prefixes the event ID. Default: the start time.
	RunID string
	// Progress, if set, is told what runs next.
	Progress func(format string, args ...any)
}

func (c *HeatConfig) setDefaults() {
	if c.Layout == (Layout{}) {
		c.Layout = DefaultLayout
	}
	if c.Participations <= 0 {
		c.Participations = 2 * DefaultN
	}
	if c.Winners <= 0 {
		c.Winners = max(c.Participations/4, 1)
	}
	if c.Clients <= 0 {
		c.Clients = DefaultClients
	}
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	if c.RunID == "" {
		c.RunID = fmt.Sprintf("bench%d", time.Now().UnixMilli())
	}
	if c.Progress == nil {
		c.Progress = func(string, ...any) {}
	}
}

// LayoutHeat is the heat of one layout: one object of `bench -json`'s heat array.
type LayoutHeat struct {
	Layout         string `json:"layout"`
	IndexShards    int    `json:"index_shards"`
	CapacityShards int    `json:"capacity_shards"`
	Participations int    `json:"participations"`
	Winners        int    `json:"winners"`
	// HottestKey is the partition key with the most WCU per participation, as
	// "<index>:<key>" ("GSI2:EVENT#…", "table:EVENT#…").
	HottestKey                 string  `json:"hottest_key"`
	HottestWCUPerParticipation float64 `json:"hottest_wcu_per_participation"`
	// CeilingParticipationsPerSec is metered.KeyWCULimit ÷
	// HottestWCUPerParticipation: above it DynamoDB throttles the hottest key.
	CeilingParticipationsPerSec float64 `json:"ceiling_participations_per_s"`
	// CapacityClaimsPerSecPerShard is the claims a second one capacity shard takes:
	// the smaller of its units bound (metered.KeyWCULimit ÷ the WCU per claim on the
	// hottest capacity key) and, when claims touch it inside transactions, its serial
	// bound (about 1 ÷ metered.TransactionHold). WinnersBound names the smaller:
	// "units" or "serial". CeilingWinnersPerSec is the event's capacity shards × that.
	CapacityClaimsPerSecPerShard float64 `json:"capacity_claims_per_s_per_shard"`
	WinnersBound                 string  `json:"winners_bound"`
	CeilingWinnersPerSec         float64 `json:"ceiling_winners_per_s"`

	// ProgressKey is the event's progress partitions (their mean), which every node
	// writes once a second per event it counts in, whatever the clicks: this run's
	// nodes' peak WCU a second on one of them (ProgressPeakWCU), against the
	// metered.KeyWCULimit each takes.
	ProgressKey     string  `json:"progress_key,omitempty"`
	ProgressPeakWCU float64 `json:"progress_peak_wcu"`

	// OneOffKey is the key that took the most one-off units (metered.OneOff: the
	// event's config, a serve's records), as "<index>:<key>", and OneOffWCU those
	// units: they come once per event or node, whatever the clicks, so the ceilings
	// above leave them out (they were divided by the run's participations before,
	// which made the ceiling depend on the run's size).
	OneOffKey string  `json:"one_off_key,omitempty"`
	OneOffWCU float64 `json:"one_off_wcu,omitempty"`

	// Ceiling has the details: the hottest key of the table and of each GSI, the
	// capacity key.
	Ceiling metered.Ceiling `json:"-"`
	// EventID is the event measured.
	EventID string `json:"-"`
}

// LayoutHeatOf makes the LayoutHeat of a layout from its Ceiling.
func LayoutHeatOf(l Layout, c metered.Ceiling) LayoutHeat {
	h := LayoutHeat{
		Layout: l.Name, IndexShards: l.IndexShards, CapacityShards: l.CapacityShards,
		Participations: c.Participations, Winners: c.Winners,
		HottestKey: c.HottestKey.String(), HottestWCUPerParticipation: c.WCUPerParticipation,
		CeilingParticipationsPerSec: c.ParticipationsPerSec, CeilingWinnersPerSec: c.WinnersPerSec,
		CapacityClaimsPerSecPerShard: c.ClaimsPerSecPerShard, WinnersBound: c.WinnersBound,
		ProgressPeakWCU: c.ProgressKey.PeakWCU,
		Ceiling:         c,
	}
	if c.ProgressKey.Key != "" {
		h.ProgressKey = c.ProgressKey.String()
	}
	if c.OneOffKey.OneOffWCU > 0 {
		h.OneOffKey, h.OneOffWCU = c.OneOffKey.String(), c.OneOffKey.OneOffWCU
	}
	return h
}

// MeasureHeat runs one FIRST_COME event of cfg.Layout as a spike (Participations users
// click once each from Clients callers while Workers process the messages; with a
// pre-queue, the clicks are its entries, which ServePrequeue serves once the event's
// clock skipped to its start) through a metered.Heat, and reports its hottest partition keys and the ceilings they put on
// the event on DynamoDB. The event is created through an unmetered client, so only
// the spike's own calls count.
func MeasureHeat(ctx context.Context, cfg HeatConfig) (*LayoutHeat, error) {
	cfg.setDefaults()
	admin, err := asyncevent.New(cfg.DB, asyncevent.Options{TableName: cfg.Table})
	if err != nil {
		return nil, err
	}
	heat := metered.NewHeat(cfg.DB, ItemKind)
	var skipped atomic.Int64 // how far a pre-queue's clock has skipped to its start
	clock := func() time.Time { return time.Now().Add(time.Duration(skipped.Load())) }
	client, err := asyncevent.New(heat, asyncevent.Options{TableName: cfg.Table, Clock: clock})
	if err != nil {
		return nil, err
	}
	if err := admin.CreateTable(ctx); err != nil {
		return nil, err
	}
	eventID := fmt.Sprintf("%s-heat-%s", cfg.RunID, cfg.Layout.Name)
	cfg.Layout.CapacityShards = min(cfg.Layout.CapacityShards, cfg.Winners) // no more shards than seats, as CreateEvent wants
	settings := asyncevent.EventSettings{
		EventID: eventID, EventType: asyncevent.FirstCome, CapacityTotal: int64(cfg.Winners),
		IndexShards: cfg.Layout.IndexShards, CapacityShards: cfg.Layout.CapacityShards,
	}
	const prequeueFor = time.Hour // the pre-queue's window; its clock skips to the start
	if cfg.Layout.Prequeue {
		settings.PrequeueOpensAt, settings.StartsAt = asyncevent.MillisOf(time.Now()), asyncevent.MillisOf(time.Now().Add(prequeueFor))
	}
	if _, err := admin.CreateEvent(ctx, settings); err != nil {
		return nil, err
	}
	cfg.Progress("heat, layout %s: %d participations for %d seats, %d clients, %d workers", cfg.Layout.Name, cfg.Participations, cfg.Winners, cfg.Clients, cfg.Workers)

	q := newQueue()
	var out outcomes
	w, err := asyncevent.NewWorker(client, q, asyncevent.WorkerOptions{
		Concurrency: cfg.Workers, WaitTime: 50 * time.Millisecond,
		HoldSweepEvery: -1, // no holds here; the table's other events' sweeps are not this flow's
		ProcessOptions: asyncevent.ProcessOptions{OnOutcome: libOutcome(&out)},
	})
	if err != nil {
		return nil, err
	}
	if err := w.Start(ctx); err != nil {
		return nil, err
	}
	ingest := submitAll(ctx, Config{Clients: cfg.Clients}, cfg.Participations, 0, func(ctx context.Context, userID string) error {
		p, err := client.Submit(ctx, q, eventID, userID)
		if err == nil && p.Duplicate {
			err = fmt.Errorf("click of %s: a duplicate", userID)
		}
		return err
	})
	var drained error
	if ingest == nil {
		drained = waitEmpty(ctx, memory(q))
	}
	if err := errors.Join(ingest, drained, w.Stop(ctx)); err != nil {
		return nil, fmt.Errorf("heat, layout %s: %w", cfg.Layout.Name, err)
	}
	if cfg.Layout.Prequeue {
		skipped.Store(int64(prequeueFor + asyncevent.DefaultDrawSettleWindow + time.Second))
		if _, err := client.ServePrequeue(ctx, eventID); err != nil {
			return nil, fmt.Errorf("heat, layout %s: %w", cfg.Layout.Name, err)
		}
	}
	st, err := admin.EventStats(ctx, eventID)
	if err != nil {
		return nil, err
	}
	winners := st.ByStatus[asyncevent.StatusSucceeded]
	if winners != cfg.Winners {
		return nil, fmt.Errorf("heat, layout %s: %d winners, want %d", cfg.Layout.Name, winners, cfg.Winners)
	}
	h := LayoutHeatOf(cfg.Layout, metered.CeilingOf(heat.Keys(), cfg.Participations, winners))
	h.EventID = eventID
	return &h, nil
}
