package bench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/bench"
)

func TestMeasureHeatFindsTheEventsGSI2KeyHottest(t *testing.T) {
	t.Parallel()
	table := asynceventtest.UniqueTableName(t)
	t.Cleanup(func() { asynceventtest.DeleteTable(t, table) })
	h, err := bench.MeasureHeat(context.Background(), bench.HeatConfig{
		DB: asynceventtest.DynamoDB(t), Table: table, Participations: 40, Winners: 20, Clients: 4, Workers: 3,
	})
	require.NoError(t, err)
	t.Logf("%+v", *h)
	assert.Equal(t, "default", h.Layout)
	assert.Equal(t, 1, h.IndexShards)
	assert.Equal(t, 1, h.CapacityShards)
	assert.Equal(t, 40, h.Participations)
	assert.Equal(t, 20, h.Winners)
	assert.Equal(t, "GSI2:EVENT#"+h.EventID, h.HottestKey)
	// The put (which carries the index keys), QUEUED and the final status rewrite
	// the request's GSI2 entry, 1 WCU each: a winner of a home claim and a loser
	// rejected in one write never hold PROCESSING. About 3 WCU per participation (a
	// claim that meets its home shard emptied by others goes under a lease: 4).
	assert.InDelta(t, 3.0, h.HottestWCUPerParticipation, 0.25)
	assert.InDelta(t, 1000/h.HottestWCUPerParticipation, h.CeilingParticipationsPerSec, 1e-9)
	assert.Equal(t, "table:EVENT#"+h.EventID, h.Ceiling.CapacityKey.String())
	// A claim is one UpdateItem of the capacity item, 1 WCU under 1 KB, no
	// transaction: its units bound it, not a transaction's hold. Refused claims and
	// the CONFIG's writes share the key (EVENT#<eventId>), so a little under 1,000.
	assert.Equal(t, "units", h.WinnersBound)
	assert.Zero(t, h.Ceiling.ClaimsPerSecSerial)
	assert.InDelta(t, 1000/h.Ceiling.WCUPerClaim, h.CapacityClaimsPerSecPerShard, 1e-9)
	assert.Equal(t, h.CapacityClaimsPerSecPerShard, h.CeilingWinnersPerSec, "one shard")
	assert.Greater(t, h.CeilingWinnersPerSec, 500.0)
	assert.LessOrEqual(t, h.CeilingWinnersPerSec, 1000.0)

	b, err := json.Marshal(h)
	require.NoError(t, err)
	var fields map[string]any
	require.NoError(t, json.Unmarshal(b, &fields))
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	assert.Subset(t, []string{"layout", "index_shards", "capacity_shards", "participations", "winners",
		"hottest_key", "hottest_wcu_per_participation", "ceiling_participations_per_s", "capacity_claims_per_s_per_shard", "winners_bound",
		"ceiling_winners_per_s", "progress_key", "progress_peak_wcu", "one_off_key", "one_off_wcu"}, keys, "bench -json's names")
	assert.Subset(t, keys, []string{"layout", "index_shards", "capacity_shards", "participations", "winners",
		"hottest_key", "hottest_wcu_per_participation", "ceiling_participations_per_s", "capacity_claims_per_s_per_shard", "winners_bound",
		"ceiling_winners_per_s", "progress_key", "progress_peak_wcu"}, "the names kept")
	assert.Contains(t, h.ProgressKey, "#PROGRESS#", "the progress partitions are shown apart")
	assert.Positive(t, h.ProgressPeakWCU)
	assert.Less(t, h.ProgressPeakWCU, 10.0, "a write a second per node and event, not per participation")
}

// The layout ShardsFor derives for 20,000 clicks/s (100 index shards, 13 capacity
// shards) takes them on DynamoDB, and 5,000 winners/s: its hottest key (GSI2 shard or
// capacity shard, as their mean) stays under a partition key's 1,000 WCU/s at those
// rates, and no transaction bounds a capacity shard's claims.
func TestDerivedLayoutTakesItsPeak(t *testing.T) {
	t.Parallel()
	table := asynceventtest.UniqueTableName(t)
	t.Cleanup(func() { asynceventtest.DeleteTable(t, table) })
	l := bench.LayoutFor(20000)
	h, err := bench.MeasureHeat(context.Background(), bench.HeatConfig{
		DB: asynceventtest.DynamoDB(t), Table: table, Layout: l, Participations: 1500, Clients: 8, Workers: 8,
	})
	require.NoError(t, err)
	t.Logf("layout %s (K %d, C %d): hottest %s at %.3f WCU/participation; GSI2 %s; %.0f participations/s, %.0f winners/s (%.2f WCU/claim, %.0f claims/s per shard, %s)",
		h.Layout, h.IndexShards, h.CapacityShards, h.HottestKey, h.HottestWCUPerParticipation, h.Ceiling.Hottest["GSI2"],
		h.CeilingParticipationsPerSec, h.CeilingWinnersPerSec, h.Ceiling.WCUPerClaim, h.CapacityClaimsPerSecPerShard, h.WinnersBound)
	assert.Equal(t, 100, h.IndexShards)
	assert.Equal(t, 13, h.CapacityShards)
	assert.Equal(t, 13, h.Ceiling.CapacityShards, "each capacity shard booked as a key of its own")
	assert.GreaterOrEqual(t, h.CeilingParticipationsPerSec, 20000.0)
	assert.GreaterOrEqual(t, h.CeilingWinnersPerSec, 5000.0)
	assert.Equal(t, "units", h.WinnersBound)
}

// The ceilings a layout reads do not depend on how many clicks the run had: the
// one-off writes (the event's config, a serve's records) are shown apart, not
// divided by the run's participations. The layout derived for 20,000 clicks/s, with
// and without a pre-queue, measured with 200 and with 400 participations.
func TestHeatCeilingsDoNotDependOnTheRunsSize(t *testing.T) {
	t.Parallel()
	for _, l := range []bench.Layout{bench.LayoutFor(20000), bench.LayoutFor(20000).WithPrequeue()} {
		t.Run(l.Name, func(t *testing.T) {
			t.Parallel()
			table := asynceventtest.UniqueTableName(t)
			t.Cleanup(func() { asynceventtest.DeleteTable(t, table) })
			var heats []*bench.LayoutHeat
			for _, n := range []int{200, 400} {
				h, err := bench.MeasureHeat(context.Background(), bench.HeatConfig{
					DB: asynceventtest.DynamoDB(t), Table: table, Layout: l, Participations: n, Clients: 8, Workers: 8, RunID: fmt.Sprintf("n%d", n),
				})
				require.NoError(t, err)
				t.Logf("%d participations: hottest %s at %.3f WCU/participation, %.0f participations/s, %.0f winners/s; one-off %.1f WCU on %s",
					n, h.HottestKey, h.HottestWCUPerParticipation, h.CeilingParticipationsPerSec, h.CeilingWinnersPerSec, h.OneOffWCU, h.OneOffKey)
				heats = append(heats, h)
			}
			small, large := heats[0], heats[1]
			assert.InEpsilon(t, large.CeilingParticipationsPerSec, small.CeilingParticipationsPerSec, 0.05, "participations/s")
			assert.InEpsilon(t, large.CeilingWinnersPerSec, small.CeilingWinnersPerSec, 0.05, "winners/s")
			assert.InEpsilon(t, large.OneOffWCU, small.OneOffWCU, 0.3, "the one-off units come once, whatever the clicks")
		})
	}
}
