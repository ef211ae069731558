package asyncevent_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

// TestEveryMethodRefusesBadIDs calls every public method of Client with IDs that
// cannot be keys, and checks that each returns ErrInvalidID and that nothing stored
// changes.
func TestEveryMethodRefusesBadIDs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _ := newIngest(t, asyncevent.Options{StatusLog: true})
	_, err := c.Submit(ctx, &sendQueue{}, "ev", "someone")
	require.NoError(t, err)
	require.NoError(t, c.FlushProgress(ctx)) // the click's count, which its timer would write at any moment
	before := asynceventtest.ScanTable(t, c.TableName())
	q := &sendQueue{}

	for _, bad := range []string{"", "a#b", strings.Repeat("x", 500), "tab\there", "nul\x00", "\xff\xfe"} {
		msg := asyncevent.Message{V: 1, RequestID: bad, EventID: "ev", UserID: "u", EventType: asyncevent.FirstCome, RequestedAt: 1}
		badEvent := asyncevent.Message{V: 1, RequestID: "r", EventID: bad, UserID: "u", EventType: asyncevent.FirstCome, RequestedAt: 1}
		calls := map[string]func() error{
			"Participate(event)":  func() error { _, err := c.Participate(ctx, bad, "u"); return err },
			"Participate(user)":   func() error { _, err := c.Participate(ctx, "ev", bad); return err },
			"Submit":              func() error { _, err := c.Submit(ctx, q, "ev", bad); return err },
			"LookupParticipation": func() error { _, err := c.LookupParticipation(ctx, "ev", bad); return err },
			"GetRequest":          func() error { _, err := c.GetRequest(ctx, bad); return err },
			"MarkQueued":          func() error { _, err := c.MarkQueued(ctx, msg.Ref()); return err },
			"MarkQueued(event)":   func() error { _, err := c.MarkQueued(ctx, badEvent.Ref()); return err },
			"MarkEnqueueFailed":   func() error { _, err := c.MarkEnqueueFailed(ctx, msg.Ref(), errors.New("x")); return err },
			"ListUserRequests":    func() error { _, err := c.ListUserRequests(ctx, bad, asyncevent.PageOptions{}); return err },
			"ListStatusLogs":      func() error { _, err := c.ListStatusLogs(ctx, bad); return err },
			"CreateEvent": func() error {
				_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: bad, EventType: asyncevent.FirstCome, CapacityTotal: 1})
				return err
			},
			"GetEvent":          func() error { _, err := c.GetEvent(ctx, bad); return err },
			"GetCapacity":       func() error { _, err := c.GetCapacity(ctx, bad); return err },
			"GetDraw":           func() error { _, err := c.GetDraw(ctx, bad); return err },
			"Draw":              func() error { _, err := c.Draw(ctx, bad); return err },
			"VerifyDraw":        func() error { _, err := c.VerifyDraw(ctx, bad); return err },
			"ListEventRequests": func() error { _, err := c.ListEventRequests(ctx, bad, asyncevent.EventListOptions{}); return err },
			"EventStats":        func() error { _, err := c.EventStats(ctx, bad); return err },
			"Sweep":             func() error { _, err := c.Sweep(ctx, q, bad, asyncevent.SweepOptions{}); return err },
			"StartProcessing": func() error {
				_, err := c.StartProcessing(ctx, msg.Ref(), asyncevent.Lease{Owner: "w", Duration: time.Second})
				return err
			},
			"ClaimSeat":        func() error { _, err := c.ClaimSeat(ctx, msg.Ref(), asyncevent.Lease{Owner: "w"}); return err },
			"ClaimSeat(event)": func() error { _, err := c.ClaimSeat(ctx, badEvent.Ref(), asyncevent.Lease{Owner: "w"}); return err },
			"MarkCapacityRejected": func() error {
				_, err := c.MarkCapacityRejected(ctx, msg.Ref(), asyncevent.Lease{Owner: "w"})
				return err
			},
			"MarkFailed": func() error { _, err := c.MarkFailed(ctx, msg.Ref(), asyncevent.Failure{}); return err },
			"MarkClosed": func() error { _, err := c.MarkClosed(ctx, msg.RequestID); return err },
		}
		for name, call := range calls {
			err := call()
			if !assert.ErrorIs(t, err, asyncevent.ErrInvalidID, "%s(%q)", name, bad) {
				continue
			}
			var idErr *asyncevent.InvalidIDError
			assert.ErrorAs(t, err, &idErr, name)
		}
	}
	assert.ElementsMatch(t, before, asynceventtest.ScanTable(t, c.TableName()), "nothing stored changed")
	assert.Empty(t, q.sent)
}

func TestEventSettingsAreChecked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTable(t)
	at := asyncevent.MillisOf(t0)
	for name, cfg := range map[string]asyncevent.EventSettings{
		"zero capacity":          {EventID: "e", EventType: asyncevent.FirstCome},
		"negative capacity":      {EventID: "e", EventType: asyncevent.FirstCome, CapacityTotal: -5},
		"zero winners":           {EventID: "e", EventType: asyncevent.Lottery, LotteryCutoffAt: at},
		"negative winners":       {EventID: "e", EventType: asyncevent.Lottery, WinnerCount: -1, LotteryCutoffAt: at},
		"cutoff before start":    {EventID: "e", EventType: asyncevent.Lottery, WinnerCount: 1, StartsAt: at, LotteryCutoffAt: at - 1},
		"announce before cutoff": {EventID: "e", EventType: asyncevent.Lottery, WinnerCount: 1, LotteryCutoffAt: at, AnnounceAt: at - 1},
		"end before start":       {EventID: "e", EventType: asyncevent.FirstCome, CapacityTotal: 1, StartsAt: at, EndsAt: at},
		"unknown type":           {EventID: "e", EventType: "RAFFLE", CapacityTotal: 1},
		"huge name":              {EventID: "e", EventType: asyncevent.FirstCome, CapacityTotal: 1, Name: strings.Repeat("n", 300)},
		"time past 13 digits":    {EventID: "e", EventType: asyncevent.FirstCome, CapacityTotal: 1, EndsAt: 1 << 50},
	} {
		_, err := c.CreateEvent(ctx, cfg)
		assert.ErrorIs(t, err, asyncevent.ErrInvalidEvent, name)
	}
	assert.Empty(t, asynceventtest.ScanTable(t, c.TableName()))

	_, err := asyncevent.NewWorker(nil, nil, asyncevent.WorkerOptions{})
	assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions)
}

func TestLotteryWithFewerEntriesThanWinners(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, clock, _ := newLottery(t, asynceventtest.DynamoDB(t), asyncevent.Options{}, 10, 3)
	clock.Advance(2 * time.Hour)
	res, err := c.Draw(ctx, "lotto")
	require.NoError(t, err)
	assert.Len(t, res.Winners, 3, "all win")
	asynceventtest.CheckEvent(t, c, "lotto", asynceventtest.CheckOptions{})
}
