package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

// TestShardedEventThroughTheAPI creates a FIRST_COME event with 4 index shards and 3
// capacity shards through POST /admin/events, sends clicks, and reads it back
// through the admin routes: the layout and each capacity shard on the event, the
// requests merged over the shards in queue order (both orders, a status filter,
// cursor paging), and the statistics summed over the shards.
func TestShardedEventThroughTheAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	admin := e.admin()

	r := e.do("POST", "/admin/events", admin, map[string]any{
		"eventId": "sharded", "eventType": "FIRST_COME", "capacityTotal": 7, "indexShards": 4, "capacityShards": 3,
	})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	created := decode[map[string]any](t, r)
	assert.EqualValues(t, 4, created["indexShards"])
	assert.EqualValues(t, 3, created["capacityShards"])

	r = e.do("GET", "/admin/events/sharded", admin, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	ev := decode[EventView](t, r)
	assert.Equal(t, 4, ev.IndexShards)
	assert.Equal(t, 3, ev.CapacityShards)
	require.NotNil(t, ev.Capacity)
	assert.EqualValues(t, 7, ev.Capacity.Total)
	assert.EqualValues(t, 7, ev.Capacity.Remaining)
	require.Len(t, ev.Capacity.Shards, 3)
	var total int64
	for i, s := range ev.Capacity.Shards {
		assert.Equal(t, i, s.Shard)
		assert.Equal(t, s.Total, s.Remaining, "shard %d untouched", i)
		assert.NotZero(t, s.UpdatedAt)
		total += s.Total
	}
	assert.EqualValues(t, 7, total, "the shards sum to the capacity")

	users := map[string]string{} // requestId → user
	for i := range 20 {
		user := fmt.Sprintf("user-%02d", i)
		_, p := e.participate("sharded", user)
		users[p.RequestID] = user
	}
	e.process()

	// The requests are spread over the index shards on the table…
	partitions := map[string]int{}
	for _, item := range asynceventtest.ScanTable(t, e.client.TableName()) {
		if pk, ok := item["GSI2PK"].(*types.AttributeValueMemberS); ok {
			partitions[pk.Value]++
		}
	}
	assert.Greater(t, len(partitions), 1, "20 requests on one GSI2 partition: %v", partitions)
	for pk := range partitions {
		assert.True(t, strings.HasPrefix(pk, "EVENT#sharded#"), pk)
	}

	// …and listed as one queue: each request once, in queuedAt order.
	asc := e.listAll("/admin/events/sharded/requests?limit=6", admin)
	desc := e.listAll("/admin/events/sharded/requests?order=desc&limit=7", admin)
	require.Len(t, asc, 20)
	require.Len(t, desc, 20)
	ids := func(rs []RequestView) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.RequestID)
		}
		return out
	}
	for i, req := range asc {
		assert.Equal(t, users[req.RequestID], req.UserID)
		if i > 0 {
			assert.GreaterOrEqual(t, req.QueuedAt, asc[i-1].QueuedAt, "queue order across the shards")
		}
	}
	reversed := slices.Clone(ids(desc))
	slices.Reverse(reversed)
	assert.Equal(t, ids(asc), reversed, "newest first is the reverse")
	won := e.listAll("/admin/events/sharded/requests?status=SUCCEEDED&limit=3", admin)
	assert.Len(t, won, 7, "exactly the capacity won")
	for _, req := range won {
		assert.Equal(t, asyncevent.StatusSucceeded, req.Status)
	}

	r = e.do("GET", "/admin/events/sharded/stats", admin, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	stats := decode[StatsView](t, r)
	assert.Equal(t, 20, stats.Requests)
	assert.Equal(t, map[asyncevent.Status]int{asyncevent.StatusSucceeded: 7, asyncevent.StatusRejected: 13}, stats.ByStatus)
	require.NotNil(t, stats.CapacityTotal)
	require.NotNil(t, stats.CapacityRemaining)
	assert.EqualValues(t, 7, *stats.CapacityTotal)
	assert.EqualValues(t, 0, *stats.CapacityRemaining)

	r = e.do("GET", "/admin/events/sharded", admin, nil)
	require.Equal(t, http.StatusOK, r.status)
	ev = decode[EventView](t, r)
	assert.EqualValues(t, 0, ev.Capacity.Remaining)
	require.Len(t, ev.Capacity.Shards, 3)
	for i, s := range ev.Capacity.Shards {
		assert.Zero(t, s.Remaining, "shard %d sold out", i)
	}
}

// TestEventLayoutFromPeak derives the layout from peakClicksPerSecond as the CLI's
// -peak does: asyncevent.ShardsFor, no more capacity shards than seats and at least
// one per 128 seats, none for a lottery; a default event shows the design's single
// keys.
func TestEventLayoutFromPeak(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	admin := e.admin()
	k, c := asyncevent.ShardsFor(20000, 0)
	require.Greater(t, k, 1)
	require.Greater(t, c, 3)

	for _, tc := range []struct {
		name  string
		body  map[string]any
		k, c  int
		nilCS bool
	}{
		{"default", map[string]any{"eventType": "FIRST_COME", "capacityTotal": 10}, 1, 1, false},
		{"peak", map[string]any{"eventType": "FIRST_COME", "capacityTotal": 1000, "peakClicksPerSecond": 20000}, k, c, false},
		{"peak, few seats", map[string]any{"eventType": "FIRST_COME", "capacityTotal": 3, "peakClicksPerSecond": 20000}, k, 3, false},
		{"peak, small", map[string]any{"eventType": "FIRST_COME", "capacityTotal": 10, "peakClicksPerSecond": 50}, 1, 1, false},
		{"peak, small, many seats", map[string]any{"eventType": "FIRST_COME", "capacityTotal": 1000, "peakClicksPerSecond": 50}, 1, 8, false},
		{"peak beyond the largest layout", map[string]any{"eventType": "FIRST_COME", "capacityTotal": 1000, "peakClicksPerSecond": 1e300}, asyncevent.MaxShards, 99, false},
		{"peak, lottery", map[string]any{"eventType": "LOTTERY", "winnerCount": 5, "lotteryCutoffAt": "2099-01-01T00:00:00Z", "peakClicksPerSecond": 20000}, k, 0, true},
		{"explicit, lottery", map[string]any{"eventType": "LOTTERY", "winnerCount": 5, "lotteryCutoffAt": "2099-01-01T00:00:00Z", "indexShards": 2}, 2, 0, true},
	} {
		id := strings.NewReplacer(" ", "-", ",", "").Replace(tc.name)
		tc.body["eventId"] = id
		r := e.do("POST", "/admin/events", admin, tc.body)
		require.Equal(t, http.StatusCreated, r.status, "%s: %s", tc.name, r.body)
		created := decode[map[string]any](t, r)
		assert.EqualValues(t, tc.k, created["indexShards"], tc.name)
		if tc.nilCS {
			assert.NotContains(t, created, "capacityShards", tc.name)
		} else {
			assert.EqualValues(t, tc.c, created["capacityShards"], tc.name)
		}
		stored, err := e.client.GetEvent(context.Background(), id)
		require.NoError(t, err)
		assert.Equal(t, tc.k, max(stored.IndexShards, 1), tc.name)
		if tc.c == 0 {
			assert.Zero(t, stored.CapacityShards, tc.name)
		} else {
			assert.Equal(t, tc.c, max(stored.CapacityShards, 1), tc.name)
		}

		r = e.do("GET", "/admin/events/"+id, admin, nil)
		require.Equal(t, http.StatusOK, r.status, "%s: %s", tc.name, r.body)
		got := decode[EventView](t, r)
		assert.Equal(t, tc.k, got.IndexShards, tc.name)
		if got.Capacity != nil && tc.c > 1 {
			assert.Len(t, got.Capacity.Shards, tc.c, tc.name)
		} else if got.Capacity != nil {
			assert.Empty(t, got.Capacity.Shards, "%s: one capacity item, no shards listed", tc.name)
		}
	}
}

// TestInvalidLayoutsAreRefusedAndWriteNothing: a layout CreateEvent refuses, or a
// peak given with shard counts, is 400 with a problem, and nothing is stored.
func TestInvalidLayoutsAreRefusedAndWriteNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	admin := e.admin()
	cutoff := "2099-01-01T00:00:00Z"
	for _, c := range []struct {
		name   string
		body   map[string]any
		code   string
		detail string
	}{
		{"negative index shards", map[string]any{"eventType": "FIRST_COME", "capacityTotal": 10, "indexShards": -1}, CodeInvalidEvent, "indexShards -1"},
		{"too many index shards", map[string]any{"eventType": "FIRST_COME", "capacityTotal": 10, "indexShards": asyncevent.MaxShards + 1}, CodeInvalidEvent, "indexShards"},
		{"negative capacity shards", map[string]any{"eventType": "FIRST_COME", "capacityTotal": 10, "capacityShards": -2}, CodeInvalidEvent, "capacityShards -2"},
		{"too many capacity shards", map[string]any{"eventType": "FIRST_COME", "capacityTotal": 1000, "capacityShards": 100}, CodeInvalidEvent, "capacityShards 100"},
		{"capacity shards over MaxShards", map[string]any{"eventType": "FIRST_COME", "capacityTotal": 1000, "capacityShards": asyncevent.MaxShards + 1}, CodeInvalidEvent, "capacityShards"},
		{"more capacity shards than seats", map[string]any{"eventType": "FIRST_COME", "capacityTotal": 2, "capacityShards": 3}, CodeInvalidEvent, "more than the capacity"},
		{"capacity shards on a lottery", map[string]any{"eventType": "LOTTERY", "winnerCount": 1, "lotteryCutoffAt": cutoff, "capacityShards": 2}, CodeInvalidEvent, "FIRST_COME"},
		{"peak and index shards", map[string]any{"eventType": "FIRST_COME", "capacityTotal": 10, "peakClicksPerSecond": 1000, "indexShards": 2}, CodeInvalidEvent, "not both"},
		{"peak and capacity shards", map[string]any{"eventType": "FIRST_COME", "capacityTotal": 10, "peakClicksPerSecond": 1000, "capacityShards": 2}, CodeInvalidEvent, "not both"},
		{"negative peak", map[string]any{"eventType": "FIRST_COME", "capacityTotal": 10, "peakClicksPerSecond": -5}, CodeInvalidEvent, "peakClicksPerSecond"},
		{"fractional shards", map[string]any{"eventType": "FIRST_COME", "capacityTotal": 10, "indexShards": 1.5}, CodeInvalidBody, "indexShards"},
		{"shards as a string", map[string]any{"eventType": "FIRST_COME", "capacityTotal": 10, "capacityShards": "3"}, CodeInvalidBody, "capacityShards"},
		{"peak as a string", map[string]any{"eventType": "FIRST_COME", "capacityTotal": 10, "peakClicksPerSecond": "fast"}, CodeInvalidBody, "peakClicksPerSecond"},
	} {
		c.body["eventId"] = "bad"
		r := e.do("POST", "/admin/events", admin, c.body)
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", c.name, r.body)
		p := r.problem(t)
		assert.Equal(t, c.code, p.Code, c.name)
		assert.Contains(t, p.Detail, c.detail, c.name)
		_, err := e.client.GetEvent(context.Background(), "bad")
		require.ErrorIs(t, err, asyncevent.ErrEventNotFound, "%s: stored", c.name)
	}
	assert.Empty(t, asynceventtest.ScanTable(t, e.client.TableName()), "nothing written")
}
