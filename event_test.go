package asyncevent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

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
