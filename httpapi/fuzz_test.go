package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

// FuzzCreateEventBody sends arbitrary bodies to POST /admin/events on a real table:
// whatever comes in, the answer is 201 with an event in a layout CreateEvent allows
// or a 4xx problem with a code, never a 5xx and never a panic.
func FuzzCreateEventBody(f *testing.F) {
	for _, seed := range []string{
		`{"eventId":"spring-sale","eventType":"FIRST_COME","name":"Spring sale","capacityTotal":100,"startsAt":"2026-05-01T09:00:00+09:00","endsAt":"2026-05-02T00:00:00Z"}`,
		`{"eventId":"spring-lottery","eventType":"LOTTERY","winnerCount":10,"lotteryCutoffAt":"2026-05-01T12:00:00.5Z","announceAt":"2026-05-01T13:00:00Z"}`,
		`{"eventId":"a#b","eventType":"FIRST_COME","capacityTotal":1}`,
		`{"eventId":"x","eventType":"FIRST_COME","capacityTotal":1,"endsAt":1795421039191}`,
		`{"eventId":"x","eventType":"FIRST_COME","capacityTotal":9223372036854775807}`,
		`{"eventId":"x","eventType":"FIRST_COME","capacityTotal":1,"extra":true}`,
		`{"eventId":"x","eventType":"FIRST_COME","capacityTotal":1,"startsAt":"0000-01-01T00:00:00Z"}`,
		`{"eventId":"x","name":"\u0000\ud800","eventType":"FIRST_COME","capacityTotal":1}`,
		`{"eventId":"sharded","eventType":"FIRST_COME","capacityTotal":1000,"indexShards":4,"capacityShards":3}`,
		`{"eventId":"peak","eventType":"FIRST_COME","capacityTotal":1000,"peakClicksPerSecond":20000}`,
		`{"eventId":"peak-lottery","eventType":"LOTTERY","winnerCount":3,"lotteryCutoffAt":"2030-01-01T00:00:00Z","peakClicksPerSecond":2500.5}`,
		`{"eventId":"x","eventType":"FIRST_COME","capacityTotal":10,"peakClicksPerSecond":100,"indexShards":2}`,
		`{"eventId":"x","eventType":"FIRST_COME","capacityTotal":2,"capacityShards":3}`,
		`{"eventId":"x","eventType":"FIRST_COME","capacityTotal":10,"indexShards":-1,"capacityShards":9223372036854775807}`,
		`null`,
		`[]`,
		`{"eventId":`,
		`{} {}`,
		``,
	} {
		f.Add([]byte(seed))
	}
	// Fuzz workers are processes of their own, started with this process's
	// environment once f.Fuzz runs: point them at this process's DynamoDB Local (the
	// kit honours DYNAMODB_ENDPOINT) rather than have each start one.
	if os.Getenv("DYNAMODB_ENDPOINT") == "" {
		f.Setenv("DYNAMODB_ENDPOINT", asynceventtest.Endpoint(f))
	}
	client := asynceventtest.NewTable(f)
	h := newServer(f, ServerOptions{Client: client}).Handler()
	admin, err := MintToken(testSecret, "admin-1", RoleAdmin, time.Now().Add(24*time.Hour))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest("POST", "/admin/events", strings.NewReader(string(body)))
		req.Header.Set("Authorization", "Bearer "+admin)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)

		switch status := rec.Code; {
		case status == http.StatusCreated:
			var e EventView
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.EventID == "" {
				t.Fatalf("201 without an event: %v: %s", err, rec.Body)
			}
			if e.IndexShards < 1 || e.IndexShards > asyncevent.MaxShards || e.CapacityShards < 0 || e.CapacityShards > asyncevent.MaxShards ||
				(e.EventType == asyncevent.FirstCome && (e.CapacityShards < 1 || int64(e.CapacityShards) > e.CapacityTotal)) {
				t.Fatalf("201 with the layout K = %d, C = %d: %s", e.IndexShards, e.CapacityShards, rec.Body)
			}
		case status >= 400 && status < 500:
			var p Problem
			if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.Code == "" || p.Status != status {
				t.Fatalf("%d without a problem: %v: %s", status, err, rec.Body)
			}
			if rec.Header().Get("Content-Type") != ProblemContentType {
				t.Fatalf("%d with Content-Type %q", status, rec.Header().Get("Content-Type"))
			}
		default:
			t.Fatalf("body %q: status %d: %s", body, status, rec.Body)
		}
	})
}
