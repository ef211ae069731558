package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/httpapi"
	"github.com/asyncevent/asyncevent/queue"
)

// operator is an Authenticator that lets every request in as an admin.
type operator struct{}

func (operator) Authenticate(*http.Request) (httpapi.Principal, error) {
	return httpapi.Principal{UserID: "operator", Role: httpapi.RoleAdmin}, nil
}

// TestDrawJSONIsTheHTTPAPIs holds draw -json and verify -json to the HTTP API's
// answers on the same event: one view each, so the same JSON, empty lists included
// ([] where the API would say null or leave the list out). The draw command adds
// only the DRAW item ("draw").
func TestDrawJSONIsTheHTTPAPIs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.ok(t, "table", "create")
	srv, err := httpapi.NewServer(httpapi.ServerOptions{Client: f.client(t, asyncevent.Options{}), Authenticator: operator{}})
	require.NoError(t, err)

	// Entries made in the past, as in TestDrawAndVerify and TestPrequeueServeAndVerify,
	// so that the real clock may draw and serve at once.
	lotteries := f.client(t, asyncevent.Options{Clock: pastClock(2 * time.Hour)})
	drops := f.client(t, asyncevent.Options{Clock: pastClock(time.Hour)})
	q := queue.NewMemory(queue.MemoryOptions{})
	for _, ev := range []struct {
		id      string
		entries int
	}{{"lot", 4}, {"lot-empty", 0}} {
		_, err := lotteries.CreateEvent(ctx, asyncevent.EventSettings{EventID: ev.id, EventType: asyncevent.Lottery,
			WinnerCount: 2, LotteryCutoffAt: asyncevent.MillisOf(time.Now().Add(-time.Hour))})
		require.NoError(t, err)
		for i := range ev.entries {
			_, err := lotteries.Submit(ctx, q, ev.id, fmt.Sprintf("entrant-%d", i))
			require.NoError(t, err)
		}
	}
	ds, err := q.Receive(ctx, 10, 0, time.Minute)
	require.NoError(t, err)
	require.Empty(t, asynceventtest.Process(ctx, asyncevent.NewProcessor(lotteries, asyncevent.ProcessOptions{}), ds))
	for _, ev := range []struct {
		id      string
		entries int
	}{{"drop", 3}, {"drop-empty", 0}} {
		_, err := drops.CreateEvent(ctx, asyncevent.EventSettings{EventID: ev.id, EventType: asyncevent.FirstCome, CapacityTotal: 2,
			PrequeueOpensAt: asyncevent.MillisOf(time.Now().Add(-2 * time.Hour)), StartsAt: asyncevent.MillisOf(time.Now().Add(-50 * time.Minute))})
		require.NoError(t, err)
		for i := range ev.entries {
			_, err := drops.Submit(ctx, queue.NewMemory(queue.MemoryOptions{}), ev.id, fmt.Sprintf("early-%d", i))
			require.NoError(t, err)
		}
	}

	// api answers method path on srv, requiring 200, decoded.
	api := func(t *testing.T, method, path string) map[string]any {
		t.Helper()
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest(method, path, nil))
		require.Equal(t, http.StatusOK, rec.Code, "%s %s: %s", method, path, rec.Body)
		var v map[string]any
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &v))
		return v
	}
	for _, eventID := range []string{"lot", "lot-empty", "drop", "drop-empty"} {
		t.Run(eventID, func(t *testing.T) {
			// The draw first from the CLI, then from the API, which repeats it: the same
			// record and winners.
			var drawn map[string]any
			f.json(t, &drawn, "draw", eventID)
			assert.Contains(t, drawn, "draw", "the DRAW item")
			delete(drawn, "draw")
			assert.Equal(t, api(t, http.MethodPost, "/admin/events/"+eventID+"/draw"), drawn, "draw")

			var verified map[string]any
			f.json(t, &verified, "verify", eventID)
			assert.Equal(t, api(t, http.MethodGet, "/admin/events/"+eventID+"/draw/verify"), verified, "verify")
			assert.Equal(t, []any{}, verified["problems"])
		})
	}
}
