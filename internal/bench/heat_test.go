package bench_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/internal/bench"
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
	// The put, QUEUED, PROCESSING and the final status (a sold-out loser skips
	// PROCESSING): about 4 WCU per participation with half the users winning.
	assert.InDelta(t, 4, h.HottestWCUPerParticipation, 1)
	assert.InDelta(t, 1000/h.HottestWCUPerParticipation, h.CeilingParticipationsPerSec, 1e-9)
	assert.Equal(t, "table:EVENT#"+h.EventID, h.Ceiling.CapacityKey.String())
	// 2 WCU per seat in its transaction, plus refused claims: about 500 winners/s.
	assert.InDelta(t, 500, h.CeilingWinnersPerSec, 150)

	b, err := json.Marshal(h)
	require.NoError(t, err)
	var fields map[string]any
	require.NoError(t, json.Unmarshal(b, &fields))
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	assert.ElementsMatch(t, []string{"layout", "index_shards", "capacity_shards", "participations", "winners",
		"hottest_key", "hottest_wcu_per_participation", "ceiling_participations_per_s", "ceiling_winners_per_s"}, keys)
}

// The layout ShardsFor derives for 20,000 clicks/s takes them on DynamoDB, and 5,000
// winners/s: its hottest key (GSI2 shard or capacity shard, as their mean) stays
// under a partition key's 1,000 WCU/s at those rates.
func TestDerivedLayoutTakesItsPeak(t *testing.T) {
	t.Parallel()
	table := asynceventtest.UniqueTableName(t)
	t.Cleanup(func() { asynceventtest.DeleteTable(t, table) })
	l := bench.LayoutFor(20000)
	h, err := bench.MeasureHeat(context.Background(), bench.HeatConfig{
		DB: asynceventtest.DynamoDB(t), Table: table, Layout: l, Participations: 1500, Clients: 8, Workers: 8,
	})
	require.NoError(t, err)
	t.Logf("layout %s (K %d, C %d): hottest %s at %.3f WCU/participation; GSI2 %s; %.0f participations/s, %.0f winners/s",
		h.Layout, h.IndexShards, h.CapacityShards, h.HottestKey, h.HottestWCUPerParticipation, h.Ceiling.Hottest["GSI2"],
		h.CeilingParticipationsPerSec, h.CeilingWinnersPerSec)
	assert.GreaterOrEqual(t, h.CeilingParticipationsPerSec, 20000.0)
	assert.GreaterOrEqual(t, h.CeilingWinnersPerSec, 5000.0)
}
