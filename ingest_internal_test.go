package asyncevent

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The writes of an ingest get at least bookkeepingTimeout, the caller's own deadline
// when it allows more, and for a lottery never past the moment its draw may begin,
// less the margin.
func TestIngestDeadline(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	c := &Client{opts: Options{DrawSettleWindow: 30 * time.Second}}
	sale := &eventItem{Event: Event{EventSettings: EventSettings{EventType: FirstCome}}}
	lotto := &eventItem{Event: Event{EventSettings: EventSettings{EventType: Lottery, LotteryCutoffAt: MillisOf(now.Add(5 * time.Second))}}}
	for _, tc := range []struct {
		name   string
		event  *eventItem
		caller time.Time
		want   time.Time
	}{
		{"no caller deadline", sale, time.Time{}, now.Add(bookkeepingTimeout)},
		{"a caller's shorter deadline does not cut the writes", sale, now.Add(time.Second), now.Add(bookkeepingTimeout)},
		{"a caller's longer deadline is kept", sale, now.Add(2 * time.Minute), now.Add(2 * time.Minute)},
		{"lottery far from its draw", lotto, time.Time{}, now.Add(bookkeepingTimeout)},
		{"lottery: the draw's opening less a second", lotto, now.Add(2 * time.Minute), now.Add(5*time.Second + 29*time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, c.ingestDeadline(tc.event, now, tc.caller))
		})
	}
	c.opts.DrawSettleWindow = 2 * time.Second // margin: a quarter of the window
	assert.Equal(t, now.Add(5*time.Second+1500*time.Millisecond), c.ingestDeadline(lotto, now, time.Time{}))
}
