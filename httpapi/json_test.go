package httpapi

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
)

// The views' exported constructors, which the CLI's -json calls too: each view as it
// is written, with the fields the CLI printed before the view had them (passes,
// holdForMs) and its lists written [] when empty, never null.
func TestViewConstructors(t *testing.T) {
	t.Parallel()
	stats := func(s asyncevent.EventStats) StatsView { return NewStatsView(&s) }
	for _, tc := range []struct {
		name string
		view any
		want string
	}{
		{
			name: "hold sweep of one pass, as the route runs",
			view: NewHoldSweepView("sale", &asyncevent.HoldSweepReport{Expired: 2, Served: 1, Cleared: 1, Waiting: 1, More: true}),
			want: `{"eventId":"sale","passes":1,"expired":2,"served":1,"closed":0,"cleared":1,"waiting":1,"more":true}`,
		},
		{
			name: "hold sweep of passes summed, the last one's waiting and more",
			view: NewHoldSweepView("sale", &asyncevent.HoldSweepReport{Expired: 2, Waiting: 1, More: true}, &asyncevent.HoldSweepReport{Served: 1, Closed: 3}),
			want: `{"eventId":"sale","passes":2,"expired":2,"served":1,"closed":3,"cleared":0,"waiting":0,"more":false}`,
		},
		{
			name: "hold sweep before a pass",
			view: NewHoldSweepView("sale"),
			want: `{"eventId":"sale","passes":0,"expired":0,"served":0,"closed":0,"cleared":0,"waiting":0,"more":false}`,
		},
		{
			name: "holds of the stats, their time in seconds and in milliseconds",
			view: stats(asyncevent.EventStats{EventID: "sale", EventType: asyncevent.FirstCome,
				Holds: &asyncevent.HoldStats{HoldFor: 10 * time.Minute, Held: 2, Waitlisted: 1}}).Holds,
			want: `{"holdForSeconds":600,"holdForMs":600000,"held":2,"confirmed":0,"released":0,"expired":0,"waitlisted":1,"seatsReturned":0,"seatsServed":0,"seatsWaiting":0}`,
		},
		{
			name: "a lottery's stats: no capacity, no holds, no line",
			view: stats(asyncevent.EventStats{EventID: "lot", EventType: asyncevent.Lottery, Requests: 1,
				ByStatus: map[asyncevent.Status]int{asyncevent.StatusQueued: 1}, Fairness: asyncevent.Fairness{MaxGap: 1500 * time.Microsecond}}),
			want: `{"eventId":"lot","eventType":"LOTTERY","requests":1,"byStatus":{"QUEUED":1},"byResultCode":{},` +
				`"queueWait":{"count":0,"p50Ms":0,"p95Ms":0,"maxMs":0},"processing":{"count":0,"p50Ms":0,"p95Ms":0,"maxMs":0},` +
				`"fairness":{"inversions":0,"maxGapMs":1.5,"lateWinners":0,"lateWinnerMaxGapMs":0,"late":0}}`,
		},
		{
			name: "a lottery's verification without winners or problems",
			view: NewVerificationView(&asyncevent.Verification{EventID: "lot"}),
			want: `{"eventId":"lot","ok":true,"entryCount":0,"winners":[],"problems":[]}`,
		},
		{
			name: "a pre-queue's verification, with its order and its late arrivals",
			view: NewPrequeueVerificationView(&asyncevent.PrequeueVerification{EventID: "drop", EntryCount: 2,
				Order: []string{"r2", "r1"}, Winners: []string{"r2"}, Late: []string{"r3"}, Problems: []string{"r1: not served"}}),
			want: `{"eventId":"drop","ok":false,"entryCount":2,"winners":["r2"],"problems":["r1: not served"],"order":["r2","r1"],"late":["r3"]}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.view)
			require.NoError(t, err)
			assert.JSONEq(t, tc.want, string(b))
		})
	}
}
