package metered_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/internal/metered"
)

// TestHeatAttributesUnitsToPartitionKeys runs a first-come event of 6 users and 2
// seats through a Heat, one message at a time, and checks where the units landed.
func TestHeatAttributesUnitsToPartitionKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	heat := metered.NewHeat(asynceventtest.DynamoDB(t))
	c := asynceventtest.NewTableOn(t, metered.NewCounter(heat), asyncevent.Options{})
	_, err := c.CreateEvent(ctx, asyncevent.EventConfig{EventID: "ev", EventType: asyncevent.FirstCome, CapacityTotal: 2})
	require.NoError(t, err)
	heat.Reset() // the event's creation is not the spike's

	const users, seats = 6, 2
	q := asyncevent.NewMemoryQueue(asyncevent.MemoryQueueOptions{})
	for i := range users {
		_, err := c.Submit(ctx, q, "ev", fmt.Sprintf("u%d", i))
		require.NoError(t, err)
	}
	p := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	for range users {
		ds, err := q.Receive(ctx, 1, time.Second, time.Minute)
		require.NoError(t, err)
		require.Len(t, ds, 1)
		require.Empty(t, p.ProcessMessages(ctx, ds))
	}

	keys := heat.Keys()
	byKey := map[string]metered.KeyHeat{}
	for _, k := range keys {
		byKey[k.String()] = k
		assert.NotEqual(t, metered.UnknownKey, k.Key, "every unit lands on a known key: %+v", k)
	}
	ev := byKey["GSI2:EVENT#ev"]
	// Each request writes its GSI2 entry at QUEUED, then at PROCESSING (unless the
	// worker already knows the event is sold out) and at its final status (2 WCU in
	// the winner's transaction).
	assert.GreaterOrEqual(t, ev.WCU, float64(2*users))
	assert.LessOrEqual(t, ev.WCU, float64(4*users))
	assert.Positive(t, ev.PeakWCU)
	for i := range users {
		u := byKey[fmt.Sprintf("GSI1:USER#u%d", i)]
		assert.GreaterOrEqual(t, u.WCU, 2.0, "USER#u%d", i)
	}

	ceil := metered.CeilingOf(keys, users, seats)
	t.Logf("hottest %s %.2f WCU/participation; capacity %s %.2f WCU/winner; keys %+v", ceil.HottestKey, ceil.WCUPerParticipation, ceil.CapacityKey, ceil.WCUPerWinner, keys[:4])
	assert.Equal(t, "GSI2:EVENT#ev", ceil.HottestKey.String())
	assert.Equal(t, ev.WCU/users, ceil.WCUPerParticipation)
	assert.InDelta(t, 1000/ceil.WCUPerParticipation, ceil.ParticipationsPerSec, 1e-9)
	assert.Equal(t, "table:EVENT#ev", ceil.CapacityKey.String())
	assert.GreaterOrEqual(t, ceil.CapacityKey.CapacityWrites, seats)
	// 2 WCU per seat (a transaction), plus what refused claims cost.
	assert.GreaterOrEqual(t, ceil.WCUPerWinner, 2.0)
	assert.Equal(t, "GSI1", ceil.Hottest["GSI1"].Index)
	assert.Equal(t, "table", ceil.Hottest[metered.TableIndex].Index)
}

func TestIndexKeysSetReadsSetClauses(t *testing.T) {
	vals := map[string]string{":1": "USER#u", ":2": "EVENT#e", ":3": "x"}
	look := func(p string) (string, bool) { v, ok := vals[p]; return v, ok }
	names := map[string]string{"#a": "GSI1PK", "#b": "GSI2PK", "#c": "status"}
	assert.Equal(t, map[string]string{"GSI1": "USER#u", "GSI2": "EVENT#e"},
		metered.IndexKeysSet("SET #a = if_not_exists(#a, :1), #b = :2, #c = :3", names, look))
	assert.Nil(t, metered.IndexKeysSet("SET #c = :3 REMOVE #a", names, look))
	idx, key, ok := metered.QueryPartition("GSI2", "#k = :2 AND begins_with(#s, :3)", map[string]string{"#k": "GSI2PK", "#s": "GSI2SK"}, look)
	assert.True(t, ok)
	assert.Equal(t, "GSI2", idx)
	assert.Equal(t, "EVENT#e", key)
}
