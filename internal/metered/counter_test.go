package metered_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/internal/metered"
)

func TestMain(m *testing.M) { asynceventtest.Main(m) }

// kinds is what the meters' callers pass: the library's own key parser.
func kinds(pk, sk string) (entity.Type, error) { return asyncevent.Key{PK: pk, SK: sk}.Entity() }

func TestCounterCountsCallsWritesAndCapacity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	counter := metered.NewCounter(asynceventtest.DynamoDB(t), kinds)
	c := asynceventtest.NewTableOn(t, counter, asyncevent.Options{})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "ev", EventType: asyncevent.FirstCome, CapacityTotal: 5})
	require.NoError(t, err)

	before := counter.Snapshot()
	p, err := c.Rows().Participate(ctx, "ev", "u1")
	require.NoError(t, err)
	d := counter.Snapshot().Sub(before)
	assert.Equal(t, 2, d.Calls["PutItem"], "the lock, then the request")
	assert.Equal(t, 1, d.Writes[entity.Idempotency])
	assert.Equal(t, 1, d.Writes[entity.Request])
	assert.GreaterOrEqual(t, d.RoundTrips(), 1)
	assert.Positive(t, d.WCU)
	assert.Equal(t, d.Calls["PutItem"]+d.Calls["GetItem"], d.DataCalls())
	t.Logf("a click's units by place: %v", d.WCUOn)
	assert.InDelta(t, 1, d.WCUOn["table:IDEMPOTENCY"], 1e-9, "the lock's put, on no index")
	assert.InDelta(t, 1, d.WCUOn["table:REQUEST"], 1e-9, "the request's put")
	var sum float64
	for _, u := range d.WCUOn {
		sum += u
	}
	assert.InDelta(t, d.WCU, sum, 1e-9, "every unit placed once")

	_, err = c.GetRequest(ctx, p.RequestID)
	require.NoError(t, err)
	assert.Equal(t, 1, counter.Snapshot().Sub(before).Calls["GetItem"]-d.Calls["GetItem"])
}

func TestTrackAttributesCallsToAContext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	counter := metered.NewCounter(asynceventtest.DynamoDB(t), kinds)
	c := asynceventtest.NewTableOn(t, counter, asyncevent.Options{})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "ev", EventType: asyncevent.FirstCome, CapacityTotal: 5})
	require.NoError(t, err)
	_, err = c.Rows().Participate(ctx, "ev", "warm") // reads the event config into the cache
	require.NoError(t, err)

	var wg sync.WaitGroup
	tallies := make([]metered.Counts, 8)
	for i := range tallies {
		wg.Go(func() {
			tctx, done := metered.Track(ctx)
			_, err := c.Rows().Participate(tctx, "ev", "warm") // a duplicate: one call
			assert.NoError(t, err)
			tallies[i] = done()
		})
	}
	wg.Wait()
	for _, tl := range tallies {
		assert.Equal(t, map[string]int{"PutItem": 1}, tl.Calls, "the lock's failed put")
		assert.Equal(t, 1, tl.RoundTrips())
	}
	sum := metered.Counts{}
	for _, tl := range tallies {
		sum = sum.Add(tl)
	}
	assert.Equal(t, 8, sum.Calls["PutItem"])
	assert.Equal(t, 8, sum.Writes[entity.Idempotency])
}
