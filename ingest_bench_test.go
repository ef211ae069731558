package asyncevent_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

// reportCosts adds the DynamoDB round trips and consumed capacity per operation to a
// benchmark's results.
func reportCosts(b *testing.B, d asynceventtest.Counts) {
	n := float64(b.N)
	b.ReportMetric(float64(d.RoundTrips())/n, "roundtrips/op")
	b.ReportMetric(d.WCU/n, "WCU/op")
	b.ReportMetric(d.RCU/n, "RCU/op")
}

// BenchmarkSubmit measures the whole ingest of a click against DynamoDB Local (the
// queue is the in-process recorder): a new participation, and a duplicate click.
func BenchmarkSubmit(b *testing.B) {
	ctx := context.Background()
	for _, statusLog := range []bool{false, true} {
		counter := asynceventtest.NewCounter(asynceventtest.DynamoDB(b))
		c := asynceventtest.NewTableOn(b, counter, asyncevent.Options{StatusLog: statusLog})
		_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "ev", EventType: asyncevent.FirstCome, CapacityTotal: 1})
		require.NoError(b, err)
		q := &sendQueue{}
		_, err = c.Submit(ctx, q, "ev", "warm") // fills the event cache
		require.NoError(b, err)

		b.Run(fmt.Sprintf("new/statuslog=%t", statusLog), func(b *testing.B) {
			before := counter.Snapshot()
			for i := 0; b.Loop(); i++ {
				if _, err := c.Submit(ctx, q, "ev", fmt.Sprintf("user-%d-%d", b.N, i)); err != nil {
					b.Fatal(err)
				}
			}
			reportCosts(b, counter.Snapshot().Sub(before))
		})
		b.Run(fmt.Sprintf("duplicate/statuslog=%t", statusLog), func(b *testing.B) {
			before := counter.Snapshot()
			for b.Loop() {
				p, err := c.Submit(ctx, q, "ev", "warm")
				if err != nil || !p.Duplicate {
					b.Fatal(err, p)
				}
			}
			reportCosts(b, counter.Snapshot().Sub(before))
		})
	}
}
