package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
	"github.com/asyncevent/asyncevent/seed"
)

func TestHealthzNeedsNoToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do("GET", "/healthz", "", nil)
	assert.Equal(t, http.StatusOK, r.status)
	assert.JSONEq(t, `{"status":"ok"}`, string(r.body))
}

func TestCreateAndGetEvent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	admin := e.admin()

	r := e.do("POST", "/admin/events", admin, `{"eventId":"spring-sale","eventType":"FIRST_COME","name":"Spring sale",
		"capacityTotal":100,"startsAt":"2020-01-01T09:00:00+09:00","endsAt":"2099-01-01T00:00:00.1234Z"}`)
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	assert.Equal(t, "/admin/events/spring-sale", r.header.Get("Location"))
	assert.Equal(t, "application/json", r.header.Get("Content-Type"))
	created := decode[map[string]any](t, r)
	assert.Equal(t, "spring-sale", created["eventId"])
	assert.Equal(t, "FIRST_COME", created["eventType"])
	assert.Equal(t, "Spring sale", created["name"])
	assert.EqualValues(t, 100, created["capacityTotal"])
	assert.Equal(t, "2020-01-01T00:00:00.000Z", created["startsAt"], "read with its offset, written in UTC")
	assert.Equal(t, "2099-01-01T00:00:00.123Z", created["endsAt"], "cut to milliseconds")
	assert.NotEmpty(t, created["createdAt"])
	assert.NotContains(t, created, "lotteryCutoffAt")

	r = e.do("GET", "/admin/events/spring-sale", admin, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	got := decode[EventView](t, r)
	require.NotNil(t, got.Capacity)
	assert.Equal(t, CapacityView{Total: 100, Remaining: 100, UpdatedAt: got.Capacity.UpdatedAt}, *got.Capacity)
	assert.Nil(t, got.Draw)

	r = e.do("POST", "/admin/events", admin, map[string]any{"eventId": "spring-sale", "eventType": "FIRST_COME", "capacityTotal": 5})
	assert.Equal(t, http.StatusConflict, r.status)
	assert.Equal(t, CodeEventExists, r.problem(t).Code)

	r = e.do("GET", "/admin/events/no-such-event", admin, nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.Equal(t, CodeEventNotFound, r.problem(t).Code)
}

func TestParticipateThenDuplicate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createFirstCome("sale", 10)
	ann := token(t, "ann", RoleUser)

	r := e.do("POST", "/events/sale/participations", ann, nil)
	require.Equal(t, http.StatusAccepted, r.status, "body: %s", r.body)
	first := decode[ParticipationView](t, r)
	assert.NotEmpty(t, first.RequestID)
	assert.Equal(t, ParticipationView{RequestID: first.RequestID, EventID: "sale", Status: asyncevent.StatusQueued, UIResult: asyncevent.UIPending}, first)
	assert.Equal(t, "/requests/"+first.RequestID, r.header.Get("Location"))
	assert.Equal(t, "1", r.header.Get("Retry-After"), "when its place is worth a poll")
	assert.Contains(t, string(r.body), `"duplicate":false`)

	for range 3 {
		r = e.do("POST", "/events/sale/participations", ann, nil)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		again := decode[ParticipationView](t, r)
		assert.Equal(t, ParticipationView{RequestID: first.RequestID, EventID: "sale", Status: asyncevent.StatusQueued, UIResult: asyncevent.UIPending, Duplicate: true}, again)
		assert.Equal(t, "/requests/"+first.RequestID, r.header.Get("Location"))
		assert.Empty(t, r.header.Get("Retry-After"), "a repeat's request was polled before")
	}
	assert.Equal(t, 1, e.queue.Len().Visible, "one message for one user, however many clicks")

	r = e.do("GET", "/requests/"+first.RequestID, ann, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	own := decode[map[string]any](t, r)
	assert.Equal(t, first.RequestID, own["requestId"])
	assert.Equal(t, "ann", own["userId"])
	assert.Equal(t, "QUEUED", own["status"])
	assert.Equal(t, "PENDING", own["uiResult"])
	assert.NotEmpty(t, own["queuedAt"])
	assert.NotEmpty(t, own["requestedAt"])
	for _, operatorOnly := range []string{"idempotencyKey", "leaseOwner", "errorMessage", "failureClass"} {
		assert.NotContains(t, own, operatorOnly)
	}

	r = e.do("GET", "/admin/requests/"+first.RequestID, e.admin(), nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	assert.Equal(t, "IDEMP#sale#ann", decode[RequestView](t, r).IdempotencyKey)

	e.process()
	r = e.do("GET", "/requests/"+first.RequestID, ann, nil)
	require.Equal(t, http.StatusOK, r.status)
	done := decode[RequestView](t, r)
	assert.Equal(t, asyncevent.StatusSucceeded, done.Status)
	assert.Equal(t, asyncevent.UISuccess, done.UIResult)
	assert.Equal(t, asyncevent.ResultSuccess, done.ResultCode)
	assert.NotZero(t, done.FinishedAt)

	r = e.do("POST", "/events/sale/participations", ann, nil)
	require.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, ParticipationView{RequestID: first.RequestID, EventID: "sale", Status: asyncevent.StatusSucceeded, UIResult: asyncevent.UISuccess, Duplicate: true},
		decode[ParticipationView](t, r), "a repeat after the outcome reports the outcome")
}

func TestParticipateRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	now := time.Now()
	for _, cfg := range []asyncevent.EventSettings{
		{EventID: "later", EventType: asyncevent.FirstCome, CapacityTotal: 1, StartsAt: asyncevent.MillisOf(now.Add(time.Hour))},
		{EventID: "over", EventType: asyncevent.FirstCome, CapacityTotal: 1, StartsAt: asyncevent.MillisOf(now.Add(-2 * time.Hour)), EndsAt: asyncevent.MillisOf(now.Add(-time.Hour))},
	} {
		_, err := e.client.CreateEvent(ctx, cfg)
		require.NoError(t, err)
	}
	ann := token(t, "ann", RoleUser)
	for _, c := range []struct {
		event  string
		status int
		code   string
	}{
		{"no-such-event", http.StatusNotFound, CodeEventNotFound},
		{"later", http.StatusConflict, CodeEventNotOpen},
		{"over", http.StatusConflict, CodeEventClosed},
	} {
		r := e.do("POST", "/events/"+c.event+"/participations", ann, nil)
		assert.Equal(t, c.status, r.status, c.event)
		p := r.problem(t)
		assert.Equal(t, c.code, p.Code, c.event)
		assert.Equal(t, c.status, p.Status)
		assert.Equal(t, http.StatusText(c.status), p.Title)
		assert.Equal(t, "about:blank", p.Type)
		assert.True(t, strings.HasPrefix(p.Instance, "urn:uuid:"), p.Instance)
	}
	assert.Zero(t, e.queue.Len().Visible)
}

func TestOwnerOnlyReads(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createFirstCome("sale", 10)
	_, a := e.participate("sale", "user-a")
	e.participate("sale", "user-b")
	b := token(t, "user-b", RoleUser)

	other := e.do("GET", "/requests/"+a.RequestID, b, nil)
	missing := e.do("GET", "/requests/0197aaaa-0000-7000-8000-000000000000", b, nil)
	assert.Equal(t, http.StatusNotFound, other.status, "another user's request is not found, not forbidden")
	assert.Equal(t, http.StatusNotFound, missing.status)
	po, pm := other.problem(t), missing.problem(t)
	assert.Equal(t, CodeRequestNotFound, po.Code)
	assert.Equal(t, CodeRequestNotFound, pm.Code)
	assert.Equal(t, "request "+a.RequestID+" not found", po.Detail, "the same words as for a missing request")

	mine := e.listAll("/me/participations", b)
	require.Len(t, mine, 1)
	assert.Equal(t, "user-b", mine[0].UserID)
	assert.NotEqual(t, a.RequestID, mine[0].RequestID)
}

func TestMyParticipationsPagingAndForeignCursor(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	const events = 45
	var want []string
	for i := range events {
		id := fmt.Sprintf("ev-%02d", i)
		_, err := e.client.CreateEvent(ctx, asyncevent.EventSettings{EventID: id, EventType: asyncevent.FirstCome, CapacityTotal: 1})
		require.NoError(t, err)
		_, p := e.participate(id, "user-a")
		want = append(want, p.RequestID)
		if i < 3 {
			e.participate(id, "user-b")
		}
	}
	a, b := token(t, "user-a", RoleUser), token(t, "user-b", RoleUser)

	r := e.do("GET", "/me/participations?limit=20", a, nil)
	require.Equal(t, http.StatusOK, r.status)
	first := decode[PageView](t, r)
	require.Len(t, first.Requests, 20)
	require.NotEmpty(t, first.NextCursor)

	all := e.listAll("/me/participations?limit=20", a)
	var got []string
	for i, req := range all {
		assert.Equal(t, "user-a", req.UserID)
		got = append(got, req.RequestID)
		if i > 0 {
			assert.LessOrEqual(t, req.QueuedAt, all[i-1].QueuedAt, "newest first")
		}
	}
	assert.ElementsMatch(t, want, got, "every request once")

	r = e.do("GET", "/me/participations?limit=20&cursor="+first.NextCursor, b, nil)
	assert.Equal(t, http.StatusBadRequest, r.status, "B replays A's cursor")
	assert.Equal(t, CodeInvalidCursor, r.problem(t).Code)
	assert.NotContains(t, string(r.body), first.Requests[0].RequestID)

	assert.Len(t, e.listAll("/me/participations", b), 3, "B sees only B's")

	for q, code := range map[string]string{
		"?cursor=not-a-cursor": CodeInvalidCursor,
		"?limit=abc":           CodeInvalidParameter,
		"?limit=101":           CodeInvalidParameter,
		"?limit=-1":            CodeInvalidParameter,
	} {
		r := e.do("GET", "/me/participations"+q, a, nil)
		assert.Equal(t, http.StatusBadRequest, r.status, q)
		assert.Equal(t, code, r.problem(t).Code, q)
	}
}

func TestFirstComeOutcomesStatsAndFilters(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *asyncevent.Options, _ *ServerOptions) { o.StatusLog = true })
	e.createFirstCome("sale", 10)
	requests := map[string]string{} // requestId → user
	for i := range 30 {
		user := fmt.Sprintf("user-%02d", i)
		_, p := e.participate("sale", user)
		requests[p.RequestID] = user
	}
	e.process()
	admin := e.admin()

	r := e.do("GET", "/admin/events/sale/stats", admin, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	stats := decode[StatsView](t, r)
	assert.Equal(t, "sale", stats.EventID)
	assert.Equal(t, asyncevent.FirstCome, stats.EventType)
	assert.Equal(t, 30, stats.Requests)
	assert.Equal(t, map[asyncevent.Status]int{asyncevent.StatusSucceeded: 10, asyncevent.StatusRejected: 20}, stats.ByStatus)
	assert.Equal(t, map[asyncevent.ResultCode]int{asyncevent.ResultSuccess: 10, asyncevent.ResultRejectedCapacity: 20}, stats.ByResultCode)
	require.NotNil(t, stats.CapacityTotal)
	require.NotNil(t, stats.CapacityRemaining)
	assert.EqualValues(t, 10, *stats.CapacityTotal)
	assert.EqualValues(t, 0, *stats.CapacityRemaining)
	// Every request was reached by a worker; every winner started, and a loser started
	// unless its worker already knew the event was sold out (then one write rejects
	// it, without startedAt).
	assert.Equal(t, 30, stats.QueueWait.Count)
	assert.GreaterOrEqual(t, stats.Processing.Count, 10)
	assert.LessOrEqual(t, stats.Processing.Count, 30)
	assert.Equal(t, stats.Fairness.Inversions == 0, stats.Fairness.LateWinners == 0, "the losers and the winners of the same pairs: zero together")
	assert.Regexp(t, `"fairness":\{"inversions":\d+,"maxGapMs":[\d.]+,"lateWinners":\d+,"lateWinnerMaxGapMs":[\d.]+,"late":0\}`, string(r.body))

	r = e.do("GET", "/admin/events/sale", admin, nil)
	require.Equal(t, http.StatusOK, r.status)
	assert.EqualValues(t, 0, decode[EventView](t, r).Capacity.Remaining)

	for status, n := range map[asyncevent.Status]int{asyncevent.StatusSucceeded: 10, asyncevent.StatusRejected: 20, asyncevent.StatusQueued: 0} {
		got := e.listAll("/admin/events/sale/requests?status="+string(status)+"&limit=7", admin)
		assert.Len(t, got, n, status)
		for _, req := range got {
			assert.Equal(t, status, req.Status)
			assert.Equal(t, requests[req.RequestID], req.UserID)
		}
	}

	// A winner's and a loser's timeline, from the status log.
	for _, status := range []asyncevent.Status{asyncevent.StatusSucceeded, asyncevent.StatusRejected} {
		one := e.listAll("/admin/events/sale/requests?limit=50&status="+string(status), admin)[0]
		r = e.do("GET", "/admin/requests/"+one.RequestID+"/logs", admin, nil)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		logs := decode[StatusLogsView](t, r)
		assert.Equal(t, one.RequestID, logs.RequestID)
		var path []asyncevent.Status
		for _, l := range logs.Logs {
			path = append(path, l.ToStatus)
			assert.NotZero(t, l.OccurredAt)
		}
		// PROCESSING only for a request whose claim went on under a lease (its home
		// shard emptied by others before the sell-out); a home claim's winner and a
		// sold-out loser skip it.
		require.GreaterOrEqual(t, len(path), 3)
		assert.Equal(t, []asyncevent.Status{asyncevent.StatusReceived, asyncevent.StatusQueued}, path[:2])
		assert.Equal(t, status, path[len(path)-1])
		if len(path) == 4 {
			assert.Equal(t, asyncevent.StatusProcessing, path[2])
		}
		assert.LessOrEqual(t, len(path), 4)

		// The user sees the outcome of the own request.
		r = e.do("GET", "/requests/"+one.RequestID, token(t, one.UserID, RoleUser), nil)
		require.Equal(t, http.StatusOK, r.status)
		assert.Equal(t, status, decode[RequestView](t, r).Status)
	}
	r = e.do("GET", "/admin/requests/0197aaaa-0000-7000-8000-000000000000/logs", admin, nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.Equal(t, CodeRequestNotFound, r.problem(t).Code)

	for q, code := range map[string]string{
		"?status=WON":      CodeInvalidParameter,
		"?order=sideways":  CodeInvalidParameter,
		"?limit=x":         CodeInvalidParameter,
		"?limit=501":       CodeInvalidParameter,
		"?cursor=%%%":      CodeInvalidParameter,
		"?cursor=bm9wZQ==": CodeInvalidCursor,
	} {
		r := e.do("GET", "/admin/events/sale/requests"+q, admin, nil)
		assert.Equal(t, http.StatusBadRequest, r.status, "%s: %s", q, r.body)
		if r.status == http.StatusBadRequest {
			assert.Equal(t, code, r.problem(t).Code, q)
		}
	}
	r = e.do("GET", "/admin/events/sale/requests?status=WON", admin, nil)
	assert.Contains(t, r.problem(t).Detail, "want one of RECEIVED, QUEUED, PROCESSING, HELD, WAITLISTED, SUCCEEDED, REJECTED, FAILED_FINAL",
		"a refused filter names the accepted values")
	r = e.do("GET", "/admin/events/no-such-event/requests", admin, nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.Equal(t, CodeEventNotFound, r.problem(t).Code)
	r = e.do("GET", "/admin/events/no-such-event/stats", admin, nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.Equal(t, CodeEventNotFound, r.problem(t).Code)
}

func TestEventRequestsPageBothOrders(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createFirstCome("big", 1000)
	var want []string
	for i := range 120 {
		_, p := e.participate("big", fmt.Sprintf("user-%03d", i))
		want = append(want, p.RequestID)
	}
	admin := e.admin()

	asc := e.listAll("/admin/events/big/requests?order=asc&limit=25", admin)
	desc := e.listAll("/admin/events/big/requests?order=desc&limit=25", admin)
	dflt := e.listAll("/admin/events/big/requests?limit=50", admin)

	ids := func(rs []RequestView) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.RequestID)
		}
		return out
	}
	assert.ElementsMatch(t, want, ids(asc), "ascending: each request exactly once")
	assert.ElementsMatch(t, want, ids(desc), "descending: each request exactly once")
	reversed := slices.Clone(ids(desc))
	slices.Reverse(reversed)
	assert.Equal(t, ids(asc), reversed, "one order is the other reversed")
	assert.Equal(t, ids(asc), ids(dflt), "ascending by default")
	for i := 1; i < len(asc); i++ {
		assert.GreaterOrEqual(t, asc[i].QueuedAt, asc[i-1].QueuedAt, "queue order")
	}
	r := e.do("GET", "/admin/events/big/requests?order=desc&limit=25", admin, nil)
	require.Equal(t, http.StatusOK, r.status)
	page := decode[PageView](t, r)
	assert.Len(t, page.Requests, 25)
	assert.Equal(t, ids(desc)[:25], ids(page.Requests))
	assert.Equal(t, "IDEMP#big#"+page.Requests[0].UserID, page.Requests[0].IdempotencyKey, "the admin view")
}

// TestSealedLotteryNeedsTheSeedSource: an event made with a seed source shows it is
// sealed, and a server without the source refuses to draw it, with a code of its own.
func TestSealedLotteryNeedsTheSeedSource(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(time.Now())
	e := newEnv(t, func(o *asyncevent.Options, _ *ServerOptions) { o.Clock = clock.Now })
	seeds, err := seed.HMAC(bytes.Repeat([]byte{1}, seed.MinSecretBytes))
	require.NoError(t, err)
	operator, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: e.client.TableName(), Clock: clock.Now, Seeds: seeds})
	require.NoError(t, err)
	_, err = operator.CreateEvent(ctx, asyncevent.EventSettings{EventID: "sealed", EventType: asyncevent.Lottery,
		WinnerCount: 1, LotteryCutoffAt: asyncevent.MillisOf(clock.Now().Add(time.Hour))})
	require.NoError(t, err)

	r := e.do("GET", "/admin/events/sealed", e.admin(), nil)
	require.Equal(t, http.StatusOK, r.status)
	got := decode[EventView](t, r)
	assert.Equal(t, seed.Sealed, got.SeedMode)
	require.NotNil(t, got.Draw)
	assert.Equal(t, seed.Sealed, got.Draw.SeedMode)

	clock.Advance(2 * time.Hour)
	r = e.do("POST", "/admin/events/sealed/draw", e.admin(), nil)
	assert.Equal(t, http.StatusConflict, r.status)
	assert.Equal(t, CodeNoSeedSource, r.problem(t).Code)
}

func TestLotteryDrawAndVerify(t *testing.T) {
	t.Parallel()
	clock := asynceventtest.NewClock(time.Now())
	e := newEnv(t, func(o *asyncevent.Options, _ *ServerOptions) { o.Clock = clock.Now })
	admin := e.admin()
	cutoff := clock.Now().Add(time.Hour).UTC()

	r := e.do("POST", "/admin/events", admin, map[string]any{
		"eventId": "spring-lottery", "eventType": "LOTTERY", "name": "Spring lottery",
		"winnerCount": 3, "lotteryCutoffAt": cutoff.Format(time.RFC3339Nano),
	})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	event := decode[EventView](t, r)
	assert.Equal(t, asyncevent.PhaseCollecting, event.Phase)
	assert.Len(t, event.SeedCommitment, 64)
	assert.Equal(t, seed.Unsealed, event.SeedMode, "the development default says so")
	assert.Equal(t, Timestamp(asyncevent.MillisOf(cutoff)), event.LotteryCutoffAt)

	r = e.do("GET", "/admin/events/spring-lottery", admin, nil)
	require.Equal(t, http.StatusOK, r.status)
	got := decode[EventView](t, r)
	require.NotNil(t, got.Draw)
	assert.Empty(t, got.Draw.Seed, "left out while collecting")
	assert.Equal(t, seed.Unsealed, got.Draw.SeedMode)
	assert.Equal(t, event.SeedCommitment, got.Draw.SeedCommitment)
	assert.Nil(t, got.Capacity)

	for i := range 12 {
		e.participate("spring-lottery", fmt.Sprintf("user-%02d", i))
	}
	e.process()

	for _, path := range []string{"POST /admin/events/spring-lottery/draw", "GET /admin/events/spring-lottery/draw/verify"} {
		method, p, _ := strings.Cut(path, " ")
		r = e.do(method, p, admin, nil)
		assert.Equal(t, http.StatusConflict, r.status, path)
		assert.Equal(t, CodeDrawTooEarly, r.problem(t).Code, path)
	}

	clock.Advance(time.Hour + asyncevent.DefaultDrawSettleWindow + time.Second)
	r = e.do("POST", "/admin/events/spring-lottery/draw", admin, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	draw := decode[DrawView](t, r)
	assert.Len(t, draw.Winners, 3)
	assert.EqualValues(t, 12, draw.EntryCount)
	assert.NotEmpty(t, draw.Seed, "revealed")
	assert.Equal(t, asyncevent.PhaseAnnounced, draw.Phase)

	r = e.do("POST", "/admin/events/spring-lottery/draw", admin, nil)
	require.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, draw.Winners, decode[DrawView](t, r).Winners, "a second draw gives the same winners")

	r = e.do("GET", "/admin/events/spring-lottery/draw/verify", admin, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	v := decode[VerificationView](t, r)
	assert.True(t, v.OK, "problems: %v", v.Problems)
	assert.Empty(t, v.Problems)
	assert.Equal(t, 12, v.EntryCount)
	assert.ElementsMatch(t, draw.Winners, v.Winners)

	r = e.do("GET", "/admin/events/spring-lottery/stats", admin, nil)
	require.Equal(t, http.StatusOK, r.status)
	stats := decode[StatsView](t, r)
	assert.Equal(t, map[asyncevent.Status]int{asyncevent.StatusSucceeded: 3, asyncevent.StatusRejected: 9}, stats.ByStatus)
	assert.Nil(t, stats.CapacityRemaining)

	r = e.do("GET", "/requests/"+draw.Winners[0], token(t, mustGetUser(t, e, draw.Winners[0]), RoleUser), nil)
	require.Equal(t, http.StatusOK, r.status)
	won := decode[RequestView](t, r)
	assert.Equal(t, asyncevent.StatusSucceeded, won.Status)
	assert.Equal(t, asyncevent.PhaseAnnounced, won.UIPhase)

	e.createFirstCome("sale", 1)
	r = e.do("POST", "/admin/events/sale/draw", admin, nil)
	assert.Equal(t, http.StatusConflict, r.status)
	assert.Equal(t, CodeNotLottery, r.problem(t).Code)
	r = e.do("POST", "/admin/events/no-such-event/draw", admin, nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.Equal(t, CodeEventNotFound, r.problem(t).Code)
}

func mustGetUser(t *testing.T, e *env, requestID string) string {
	t.Helper()
	req, err := e.client.GetRequest(context.Background(), requestID)
	require.NoError(t, err)
	return req.UserID
}

func TestBadIDsAreRefusedAndWriteNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	admin, user := e.admin(), token(t, "ann", RoleUser)
	long := strings.Repeat("e", 500)
	for _, c := range []struct {
		method, path, tok string
		body              any
	}{
		{"POST", "/events/a%23b/participations", user, nil},
		{"POST", "/events/%23/participations", user, nil},
		{"POST", "/events/" + long + "/participations", user, nil},
		{"POST", "/events/a%20b/participations", user, nil},
		{"POST", "/events/a%00b/participations", user, nil},
		{"GET", "/requests/a%23b", user, nil},
		{"GET", "/requests/" + long, user, nil},
		{"GET", "/admin/events/a%23b", admin, nil},
		{"GET", "/admin/events/a%23b/requests", admin, nil},
		{"GET", "/admin/events/" + long + "/stats", admin, nil},
		{"POST", "/admin/events/a%23b/draw", admin, nil},
		{"GET", "/admin/requests/a%23b", admin, nil},
		{"GET", "/admin/requests/a%23b/logs", admin, nil},
		{"POST", "/admin/events", admin, map[string]any{"eventId": "a#b", "eventType": "FIRST_COME", "capacityTotal": 1}},
		{"POST", "/admin/events", admin, map[string]any{"eventId": long, "eventType": "FIRST_COME", "capacityTotal": 1}},
		{"POST", "/admin/events", admin, map[string]any{"eventId": "", "eventType": "FIRST_COME", "capacityTotal": 1}},
	} {
		r := e.do(c.method, c.path, c.tok, c.body)
		name := c.method + " " + truncate(c.path, 60)
		assert.Equal(t, http.StatusBadRequest, r.status, "%s: %s", name, r.body)
		if r.status == http.StatusBadRequest {
			assert.Equal(t, CodeInvalidID, r.problem(t).Code, name)
		}
	}
	assert.Empty(t, asynceventtest.ScanTable(t, e.client.TableName()), "nothing written")
	assert.Zero(t, e.queue.Len().Visible, "nothing sent")
}

func TestBodyDecoding(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(_ *asyncevent.Options, so *ServerOptions) { so.MaxBodyBytes = 0 }) // the default, 64 KiB
	admin := e.admin()
	big := `{"eventId":"big","eventType":"FIRST_COME","capacityTotal":1,"name":"` + strings.Repeat("x", 70<<10) + `"}`
	for _, c := range []struct {
		name, body string
		status     int
		code       string
	}{
		{"malformed", `{"eventId":`, http.StatusBadRequest, CodeMalformedJSON},
		{"not json", `eventId=x`, http.StatusBadRequest, CodeMalformedJSON},
		{"empty", ``, http.StatusBadRequest, CodeMalformedJSON},
		{"array", `[]`, http.StatusBadRequest, CodeInvalidBody},
		{"unknown field", `{"eventId":"x","eventType":"FIRST_COME","capacityTotal":1,"capacity":5}`, http.StatusBadRequest, CodeUnknownField},
		{"two values", `{"eventId":"x","eventType":"FIRST_COME","capacityTotal":1} {}`, http.StatusBadRequest, CodeMalformedJSON},
		{"trailing garbage", `{"eventId":"x","eventType":"FIRST_COME","capacityTotal":1}]`, http.StatusBadRequest, CodeMalformedJSON},
		{"wrong type", `{"eventId":"x","eventType":"FIRST_COME","capacityTotal":"1"}`, http.StatusBadRequest, CodeInvalidBody},
		{"fraction", `{"eventId":"x","eventType":"FIRST_COME","capacityTotal":1.5}`, http.StatusBadRequest, CodeInvalidBody},
		{"epoch ms", `{"eventId":"x","eventType":"FIRST_COME","capacityTotal":1,"endsAt":1795421039191}`, http.StatusBadRequest, CodeInvalidBody},
		{"bad time", `{"eventId":"x","eventType":"FIRST_COME","capacityTotal":1,"endsAt":"tomorrow"}`, http.StatusBadRequest, CodeInvalidBody},
		{"before 1970", `{"eventId":"x","eventType":"FIRST_COME","capacityTotal":1,"endsAt":"1960-01-01T00:00:00Z"}`, http.StatusBadRequest, CodeInvalidEvent},
		{"after 2286", `{"eventId":"x","eventType":"FIRST_COME","capacityTotal":1,"endsAt":"2300-01-01T00:00:00Z"}`, http.StatusBadRequest, CodeInvalidEvent},
		{"no capacity", `{"eventId":"x","eventType":"FIRST_COME"}`, http.StatusBadRequest, CodeInvalidEvent},
		{"ends first", `{"eventId":"x","eventType":"FIRST_COME","capacityTotal":1,"startsAt":"2030-01-02T00:00:00Z","endsAt":"2030-01-01T00:00:00Z"}`, http.StatusBadRequest, CodeInvalidEvent},
		{"bad type", `{"eventId":"x","eventType":"RAFFLE","capacityTotal":1}`, http.StatusBadRequest, CodeInvalidEvent},
		{"lottery without cutoff", `{"eventId":"x","eventType":"LOTTERY","winnerCount":1}`, http.StatusBadRequest, CodeInvalidEvent},
		{"too large", big, http.StatusRequestEntityTooLarge, CodeBodyTooLarge},
	} {
		r := e.do("POST", "/admin/events", admin, c.body)
		assert.Equal(t, c.status, r.status, "%s: %s", c.name, r.body)
		if r.header.Get("Content-Type") == ProblemContentType {
			assert.Equal(t, c.code, r.problem(t).Code, "%s: %s", c.name, r.body)
		}
	}

	req, err := http.NewRequest("POST", e.ts.URL+"/admin/events", strings.NewReader(`{}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+admin)
	req.Header.Set("Content-Type", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode)

	r := e.do("POST", "/admin/events", admin, `{"eventId":"ok","eventType":"FIRST_COME","capacityTotal":1,"startsAt":null}`)
	assert.Equal(t, http.StatusCreated, r.status, "null is an absent time: %s", r.body)
	var items []string
	for _, it := range asynceventtest.ScanTable(t, e.client.TableName()) {
		if pk := it["PK"]; pk != nil {
			items = append(items, fmt.Sprint(pk))
		}
	}
	assert.Len(t, items, 3, "only the good event's CONFIG, CAPACITY and its entry in the event list")
}

func TestUnknownRouteAndMethod(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do("GET", "/nope", "", nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.Equal(t, CodeRouteNotFound, r.problem(t).Code)

	r = e.do("DELETE", "/admin/events", e.admin(), nil)
	assert.Equal(t, http.StatusMethodNotAllowed, r.status)
	assert.Equal(t, CodeMethodNotAllowed, r.problem(t).Code)
	assert.Equal(t, "GET, HEAD, POST", r.header.Get("Allow"))
}

// failingQueue fails every Send while failing is set.
type failingQueue struct {
	queue.Queue
	failing atomic.Bool
}

func (q *failingQueue) Send(ctx context.Context, m queue.OutgoingMessage) error {
	if q.failing.Load() {
		return errors.New("sqs: connection refused to https://sqs.internal.example:443/secret-queue")
	}
	return q.Queue.Send(ctx, m)
}

func TestEnqueueFailureIs503AndRetryable(t *testing.T) {
	t.Parallel()
	fq := &failingQueue{}
	e := newEnv(t, func(_ *asyncevent.Options, so *ServerOptions) { so.Queue = fq })
	fq.Queue = e.queue
	e.createFirstCome("sale", 5)
	ann := token(t, "ann", RoleUser)

	fq.failing.Store(true)
	r := e.do("POST", "/events/sale/participations", ann, nil)
	assert.Equal(t, http.StatusServiceUnavailable, r.status)
	p := r.problem(t)
	assert.Equal(t, CodeEnqueueFailed, p.Code)
	assert.Equal(t, "1", r.header.Get("Retry-After"))
	assert.NotContains(t, string(r.body), "secret-queue", "the cause stays in the log")
	assert.Contains(t, e.logs.String(), "secret-queue")
	assert.Contains(t, e.logs.String(), p.Instance, "the log line carries the problem's instance")

	fq.failing.Store(false)
	r = e.do("POST", "/events/sale/participations", ann, nil)
	require.Equal(t, http.StatusAccepted, r.status, "the lock was released: a fresh request")

	mine := e.listAll("/me/participations", ann)
	require.Len(t, mine, 2)
	statuses := []asyncevent.Status{mine[0].Status, mine[1].Status}
	assert.ElementsMatch(t, []asyncevent.Status{asyncevent.StatusFailedFinal, asyncevent.StatusQueued}, statuses)
}

func TestNoQueueMeansNoIngest(t *testing.T) {
	t.Parallel()
	client := asynceventtest.NewTable(t)
	srv := newServer(t, ServerOptions{Client: client})
	_, err := client.CreateEvent(context.Background(), asyncevent.EventSettings{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 1})
	require.NoError(t, err)
	e := &env{t: t, client: client, srv: srv}
	e.ts = newTestServer(t, srv.Handler())
	r := e.do("POST", "/events/sale/participations", token(t, "ann", RoleUser), nil)
	assert.Equal(t, http.StatusServiceUnavailable, r.status)
	assert.Equal(t, CodeIngestDisabled, r.problem(t).Code)
}

func TestInternalErrorsSayNothing(t *testing.T) {
	t.Parallel()
	// A client on a table that does not exist: every call fails inside the SDK.
	client, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: "httpapi-missing-table-4711"})
	require.NoError(t, err)
	logs := &syncBuffer{}
	srv := newServer(t, ServerOptions{Client: client, Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	e := &env{t: t, client: client, srv: srv, logs: logs}
	e.ts = newTestServer(t, srv.Handler())

	r := e.do("GET", "/admin/events/sale", e.admin(), nil)
	assert.Equal(t, http.StatusInternalServerError, r.status)
	p := r.problem(t)
	assert.Equal(t, CodeInternal, p.Code)
	assert.Equal(t, "internal error", p.Detail)
	assert.NotContains(t, string(r.body), "ResourceNotFoundException")
	assert.Contains(t, logs.String(), "ResourceNotFoundException", "the cause is logged")
}

func TestRequestTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(_ *asyncevent.Options, so *ServerOptions) { so.RequestTimeout = time.Nanosecond })
	r := e.do("GET", "/admin/events/sale", e.admin(), nil)
	assert.Equal(t, http.StatusServiceUnavailable, r.status, "body: %s", r.body)
	p := r.problem(t)
	assert.Equal(t, CodeTimeout, p.Code)
	assert.Contains(t, e.logs.String(), `"level":"WARN","msg":"request ran out of time","instance":"`+p.Instance+`","error":"`, "the cause is logged")
	assert.Contains(t, e.logs.String(), "context deadline exceeded")
	assert.Contains(t, e.logs.String(), `"requestTimeoutPassed":true`)
}

func TestMountAndPanics(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.srv.Mount("GET /admin/ui/", AdminOnly, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := PrincipalFrom(r.Context())
		if !ok {
			http.Error(w, "no principal", http.StatusInternalServerError)
			return
		}
		_, _ = fmt.Fprintf(w, "hello %s", p.UserID)
	}))
	e.srv.Mount("GET /boom", Public, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic("secret internals")
	}))

	r := e.do("GET", "/admin/ui/events", e.admin(), nil)
	assert.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, "hello admin-1", string(r.body))
	r = e.do("GET", "/admin/ui/events", token(t, "ann", RoleUser), nil)
	assert.Equal(t, http.StatusForbidden, r.status)
	r = e.do("GET", "/admin/ui/events", "", nil)
	assert.Equal(t, http.StatusUnauthorized, r.status)

	r = e.do("GET", "/boom", "", nil)
	assert.Equal(t, http.StatusInternalServerError, r.status)
	assert.Equal(t, CodeInternal, r.problem(t).Code)
	assert.NotContains(t, string(r.body), "secret internals")
	assert.Contains(t, e.logs.String(), "secret internals")

	r = e.do("GET", "/healthz", "", nil)
	assert.Equal(t, http.StatusOK, r.status, "the server goes on after a panic")
}

func TestAccessLog(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createFirstCome("sale", 1)
	e.participate("sale", "ann")
	e.do("GET", "/nope", "", nil)
	e.do("GET", "/admin/events/sale", token(t, "bob", RoleUser), nil)

	lines := e.logs.accessLogs(t)
	require.Len(t, lines, 4)
	want := []struct {
		method, pattern string
		status          float64
		userID          string
	}{
		{"POST", "POST /admin/events", 201, "admin-1"},
		{"POST", "POST /events/{eventId}/participations", 202, "ann"},
		{"GET", "-", 404, ""},
		{"GET", "GET /admin/events/{eventId}", 403, "bob"},
	}
	for i, w := range want {
		l := lines[i]
		assert.Equal(t, w.method, l["method"], i)
		assert.Equal(t, w.pattern, l["pattern"], i)
		assert.Equal(t, w.status, l["status"], i)
		assert.Equal(t, w.userID, l["userId"], i)
		assert.Contains(t, l, "duration")
		assert.True(t, strings.HasPrefix(fmt.Sprint(l["instance"]), "urn:uuid:"))
	}
	raw, _ := json.Marshal(lines)
	assert.NotContains(t, string(raw), "Bearer", "tokens are never logged")
}

// A pre-queued first-come drop over HTTP: created with prequeueOpensAt, its clicks
// wait (the workers decide none of them); POST …/draw serves the pre-queue once the
// start and the settle window have passed, answering with its order and winners, and
// GET …/draw/verify re-checks it.
func TestPrequeueServeAndVerify(t *testing.T) {
	t.Parallel()
	clock := asynceventtest.NewClock(time.Now())
	e := newEnv(t, func(o *asyncevent.Options, so *ServerOptions) { o.Clock, so.Clock = clock.Now, clock.Now })
	admin := e.admin()
	start := clock.Now().Add(time.Hour).UTC()

	r := e.do("POST", "/admin/events", admin, map[string]any{
		"eventId": "drop", "eventType": "FIRST_COME", "capacityTotal": 2,
		"prequeueOpensAt": clock.Now().UTC().Format(time.RFC3339Nano), "startsAt": start.Format(time.RFC3339Nano),
	})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	event := decode[EventView](t, r)
	assert.Equal(t, asyncevent.StatePrequeue, event.State)
	assert.Len(t, event.SeedCommitment, 64)

	for i := range 5 {
		e.participate("drop", fmt.Sprintf("user-%02d", i))
	}
	e.process()
	r = e.do("GET", "/admin/events/drop/requests", admin, nil)
	require.Equal(t, http.StatusOK, r.status)
	first := decode[PageView](t, r).Requests[0]
	r = e.do("GET", "/requests/"+first.RequestID, token(t, mustGetUser(t, e, first.RequestID), RoleUser), nil)
	require.Equal(t, http.StatusOK, r.status)
	waiting := decode[RequestView](t, r)
	require.NotNil(t, waiting.Prequeue, "body: %s", r.body)
	assert.False(t, waiting.Prequeue.Frozen)
	assert.Nil(t, waiting.Queue)
	r = e.do("GET", "/admin/events/drop/stats", admin, nil)
	require.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, map[asyncevent.Status]int{asyncevent.StatusQueued: 5}, decode[StatsView](t, r).ByStatus, "decided by nobody")

	r = e.do("POST", "/admin/events/drop/draw", admin, nil)
	assert.Equal(t, http.StatusConflict, r.status)
	assert.Equal(t, CodeDrawTooEarly, r.problem(t).Code)

	clock.Advance(time.Hour + asyncevent.DefaultDrawSettleWindow + time.Second)
	r = e.do("POST", "/admin/events/drop/draw", admin, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	served := decode[DrawView](t, r)
	assert.Len(t, served.Order, 5)
	assert.Equal(t, served.Order[:2], served.Winners)
	assert.NotEmpty(t, served.Seed)

	r = e.do("GET", "/admin/events/drop/draw/verify", admin, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	v := decode[VerificationView](t, r)
	assert.True(t, v.OK, "problems: %v", v.Problems)
	assert.Equal(t, served.Order, v.Order)
	assert.Equal(t, served.Winners, v.Winners)

	r = e.do("GET", "/admin/events/drop", admin, nil)
	require.Equal(t, http.StatusOK, r.status)
	got := decode[EventView](t, r)
	require.NotNil(t, got.Draw)
	assert.Equal(t, served.Seed, got.Draw.Seed)
	assert.Equal(t, asyncevent.StateOpen, got.State, "served: the sale goes on")
}
