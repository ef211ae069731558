package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/httpapi"
)

// TestEndToEndOverSQS runs the command's own wiring (run) on a real socket, with
// in-process workers on a local SQS (fauxqs): 500 users take part over HTTP at once
// in a FIRST_COME event of capacity 50, and exactly 50 win.
func TestEndToEndOverSQS(t *testing.T) {
	t.Parallel()
	const users, capacity = 500, 50
	queue := asynceventtest.NewSQSQueue(t, asynceventtest.SQSQueueOptions{MaxReceives: 5})
	table := asynceventtest.UniqueTableName(t)
	t.Cleanup(func() { asynceventtest.DeleteTable(t, table) })

	cfg, err := parseConfig([]string{
		"-addr", "127.0.0.1:0",
		"-table", table,
		"-dynamodb-endpoint", asynceventtest.Endpoint(t),
		"-create-table",
		"-queue-url", queue.URL(),
		"-sqs-endpoint", asynceventtest.SQSEndpoint(t),
		"-workers", "4",
		"-request-timeout", "60s",
		"-log-format", "json",
	}, func(name string) string {
		if name == "ASYNCEVENT_JWT_SECRET" {
			return string(testSecret)
		}
		return ""
	}, io.Discard)
	require.NoError(t, err)
	require.False(t, cfg.embedded)
	cfg.workerWait = time.Second         // a short long-poll, so the workers stop quickly
	cfg.requestTimeout = 2 * time.Minute // a loaded CI machine's DynamoDB Local is slow

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrs := make(chan net.Addr, 1)
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, logs, func(a net.Addr) { addrs <- a }) }()
	var base string
	select {
	case a := <-addrs:
		base = "http://" + a.String()
	case err := <-done:
		t.Fatalf("run ended before listening: %v\n%s", err, logs)
	case <-time.After(2 * time.Minute):
		t.Fatal("the server did not start")
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: users}, Timeout: 2 * time.Minute}
	admin := token(t, "admin-1", httpapi.RoleAdmin)

	r := doURL(t, hc, base, "GET", "/healthz", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	r = doURL(t, hc, base, "GET", "/dev/sign-in?user=ann", "", nil)
	require.Equal(t, http.StatusNotFound, r.status, "no dev sign-in without -dev")
	r = doURL(t, hc, base, "POST", "/admin/events", admin, map[string]any{"eventId": "rush", "eventType": "FIRST_COME", "capacityTotal": capacity})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)

	var wg sync.WaitGroup
	answers := make([]response, users)
	errs := make([]error, users)
	start := make(chan struct{})
	for i := range users {
		tok := token(t, fmt.Sprintf("user-%03d", i), httpapi.RoleUser)
		wg.Go(func() {
			<-start
			answers[i], errs[i] = tryURL(hc, base, "POST", "/events/rush/participations", tok, nil)
		})
	}
	close(start)
	wg.Wait()
	for i := range users {
		require.NoError(t, errs[i], "user %d", i)
		if answers[i].status != http.StatusAccepted {
			t.Fatalf("user %d: %d %s\nwarnings and errors logged:\n%s", i, answers[i].status, answers[i].body, logs.above(slog.LevelWarn))
		}
	}

	var stats httpapi.StatsView
	deadline := time.Now().Add(3 * time.Minute)
	for {
		r = doURL(t, hc, base, "GET", "/admin/events/rush/stats", admin, nil)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		stats = decode[httpapi.StatsView](t, r)
		terminal := stats.ByStatus[asyncevent.StatusSucceeded] + stats.ByStatus[asyncevent.StatusRejected] + stats.ByStatus[asyncevent.StatusFailedFinal]
		if terminal == users {
			break
		}
		require.True(t, time.Now().Before(deadline), "not all terminal: %+v", stats.ByStatus)
		time.Sleep(200 * time.Millisecond)
	}
	assert.Equal(t, users, stats.Requests)
	assert.Equal(t, map[asyncevent.Status]int{asyncevent.StatusSucceeded: capacity, asyncevent.StatusRejected: users - capacity}, stats.ByStatus)
	require.NotNil(t, stats.CapacityRemaining)
	assert.EqualValues(t, 0, *stats.CapacityRemaining)
	t.Logf("queue wait p50 %.0fms p95 %.0fms; processing p50 %.0fms; fairness inversions %d",
		stats.QueueWait.P50Ms, stats.QueueWait.P95Ms, stats.Processing.P50Ms, stats.Fairness.Inversions)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("run did not stop")
	}
	out := logs.String()
	assert.Contains(t, out, `"msg":"shutting down: draining HTTP, then stopping the workers"`)
	assert.Contains(t, out, `"msg":"stopped"`)
	assert.Contains(t, out, `"pattern":"POST /events/{eventId}/participations"`)
}

// TestRunWithMemoryQueue runs the command with an in-memory queue and -dev: the
// printed tokens work, a participation is processed by the in-process worker, and
// the command stops cleanly.
func TestRunWithMemoryQueue(t *testing.T) {
	t.Parallel()
	table := asynceventtest.UniqueTableName(t)
	t.Cleanup(func() { asynceventtest.DeleteTable(t, table) })
	cfg, err := parseConfig([]string{
		"-addr", "127.0.0.1:0", "-table", table, "-dynamodb-endpoint", asynceventtest.Endpoint(t),
		"-create-table", "-workers", "1", "-dev", "-status-log=false", "-otel-stdout",
	}, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	public, err := parseConfig([]string{"-dev", "-otel-stdout", "-otel-public"}, func(string) string { return "" }, io.Discard)
	require.True(t, public.otelPublic)
	require.NoError(t, err)
	require.True(t, cfg.generatedSecret)
	require.True(t, cfg.otelStdout)
	telemetry := &syncBuffer{}
	cfg.telemetryOut = telemetry
	cfg.workerWait = 100 * time.Millisecond
	cfg.requestTimeout = 2 * time.Minute

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrs := make(chan net.Addr, 1)
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, logs, func(a net.Addr) { addrs <- a }) }()
	var base string
	select {
	case a := <-addrs:
		base = "http://" + a.String()
	case err := <-done:
		t.Fatalf("run ended before listening: %v\n%s", err, logs)
	}

	// -dev printed tokens signed with the secret it made up.
	adminTok, userTok := exported(t, logs.String(), "ADMIN_TOKEN"), exported(t, logs.String(), "USER_TOKEN")
	// ... and how to mint more with it.
	assert.Equal(t, string(cfg.jwtSecret), exported(t, logs.String(), "ASYNCEVENT_JWT_SECRET"))
	assert.Contains(t, logs.String(), "go run ./examples/httpapi token -user NAME")
	assert.Contains(t, logs.String(), "/dev/sign-in?user=user-1&next=/requests/REQUEST_ID/page")
	r := doURL(t, http.DefaultClient, base, "POST", "/admin/events", adminTok, map[string]any{"eventId": "sale", "eventType": "FIRST_COME", "capacityTotal": 1})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	// The click carries its own trace (a W3C traceparent, as a browser's or a load
	// balancer's): the server continues it.
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	req, err := http.NewRequest("POST", base+"/events/sale/participations", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+userTok)
	req.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var part httpapi.ParticipationView
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&part))
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	id := part.RequestID

	require.Eventually(t, func() bool {
		r := doURL(t, http.DefaultClient, base, "GET", "/requests/"+id, userTok, nil)
		return r.status == http.StatusOK && decode[httpapi.RequestView](t, r).Status == asyncevent.StatusSucceeded
	}, time.Minute, 50*time.Millisecond)
	r = doURL(t, http.DefaultClient, base, "GET", "/admin/requests/"+id+"/logs", adminTok, nil)
	require.Equal(t, http.StatusOK, r.status)
	assert.Empty(t, decode[httpapi.StatusLogsView](t, r).Logs, "-status-log=false")
	devSignInOpensThePage(t, base, part)

	cancel()
	require.NoError(t, <-done)
	// -otel-stdout flushed the spans and the metrics when the command stopped.
	out := telemetry.String()
	for _, want := range []string{`"Name":"asyncevent.submit"`, `"Name":"asyncevent.process"`, `"Name":"asyncevent.participations"`, `"Name":"asyncevent.outcomes"`, `"Value":"asyncevent-httpapi"`} {
		assert.Contains(t, out, want)
	}
	// One trace from the click to the outcome: the server's span, Submit's, the
	// message's send and the worker's processing all carry the click's trace ID.
	inTrace := map[string]bool{}
	for d := json.NewDecoder(strings.NewReader(out)); ; {
		var span struct {
			Name        string
			SpanContext struct{ TraceID string }
		}
		if err := d.Decode(&span); err != nil {
			break
		}
		if span.SpanContext.TraceID == traceID {
			inTrace[span.Name] = true
		}
	}
	assert.True(t, inTrace["POST /events/{eventId}/participations"], "the server's span continues the click's trace: %v", inTrace)
	assert.True(t, inTrace["asyncevent.submit"], "%v", inTrace)
	assert.True(t, inTrace["asyncevent.process"], "the worker's span is in the click's trace: %v", inTrace)
}

// devSignInOpensThePage checks -dev's sign-in: a browser on this machine signed in
// as the user of part, by a cookie, opens its request's page; the cookie is
// HttpOnly and SameSite=Strict; next goes nowhere but this server; a write with the
// cookie from another site is refused.
func devSignInOpensThePage(t *testing.T, base string, part httpapi.ParticipationView) {
	t.Helper()
	require.Equal(t, "/requests/"+part.RequestID+"/page", part.Page, "the answer names the page")
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	browser := &http.Client{Jar: jar}
	resp, err := browser.Get(base + "/dev/sign-in?user=user-1&next=" + url.QueryEscape(part.Page))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, part.Page, resp.Request.URL.Path)
	assert.Contains(t, resp.Header.Get("Content-Type"), "text/html")

	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for next, want := range map[string]string{
		"":                     "/me/participations",
		"/requests/x/page":     "/requests/x/page",
		"//evil.example/":      "/me/participations",
		"/\\evil.example/":     "/me/participations",
		"/\t/evil.example/":    "/me/participations",
		"https://evil.example": "/me/participations",
	} {
		resp, err := noFollow.Get(base + "/dev/sign-in?user=ann&next=" + url.QueryEscape(next))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusSeeOther, resp.StatusCode, next)
		assert.Equal(t, want, resp.Header.Get("Location"), "next %q", next)
		require.Len(t, resp.Cookies(), 1)
		c := resp.Cookies()[0]
		assert.Equal(t, devCookie, c.Name)
		assert.True(t, c.HttpOnly)
		assert.Equal(t, http.SameSiteStrictMode, c.SameSite)
	}

	req, err := http.NewRequest("POST", base+"/events/sale/participations", nil)
	require.NoError(t, err)
	req.Header.Set("Origin", "https://evil.example")
	resp, err = browser.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a write with the cookie from another site")
}

// exported finds "export NAME=value" in out.
func exported(t *testing.T, out, name string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "export "+name+"="); ok {
			return v
		}
	}
	t.Fatalf("no export %s in:\n%s", name, out)
	return ""
}

func TestParseConfig(t *testing.T) {
	t.Parallel()
	noEnv := func(string) string { return "" }
	secret := strings.Repeat("s", 32)
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

	_, err := parseConfig(nil, noEnv, io.Discard)
	assert.ErrorContains(t, err, "JWT secret is required", "no secret, no start")

	_, err = parseConfig([]string{"-jwt-secret", "short"}, noEnv, io.Discard)
	assert.ErrorContains(t, err, "at least 32")

	c, err := parseConfig([]string{"-dev"}, noEnv, io.Discard)
	require.NoError(t, err)
	assert.True(t, c.generatedSecret)
	assert.Len(t, c.jwtSecret, 64)
	assert.True(t, c.embedded, "no endpoint: embedded")
	assert.True(t, c.createTable, "embedded: the table is made")
	assert.Equal(t, ":8080", c.addr)
	assert.Equal(t, asyncevent.DefaultTableName, c.table)
	assert.Equal(t, 2, c.workers)
	assert.True(t, c.statusLog)

	c, err = parseConfig(nil, env(map[string]string{
		"ASYNCEVENT_JWT_SECRET": secret, "DYNAMODB_ENDPOINT": "http://localhost:8000",
		"ASYNCEVENT_TABLE": "T", "SQS_ENDPOINT": "http://localhost:4566",
		"ASYNCEVENT_QUEUE_URL": "http://localhost:4566/000000000000/q", "ASYNCEVENT_ADDR": ":9999",
	}), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, config{
		addr: ":9999", table: "T", dynamoEndpoint: "http://localhost:8000", queueURL: "http://localhost:4566/000000000000/q",
		sqsEndpoint: "http://localhost:4566", workers: 2, jwtSecret: []byte(secret), statusLog: true,
		requestTimeout: httpapi.DefaultRequestTimeout, shutdownTimeout: 30 * time.Second, userBurst: 5,
		jwks: httpapi.JWKSOptions{RoleClaim: httpapi.DefaultRoleClaim, AdminRole: string(httpapi.RoleAdmin)},
	}, c, "from the environment; an endpoint means not embedded")

	// An identity provider's tokens: with an issuer and an audience, and never with a
	// secret as well.
	c, err = parseConfig([]string{"-jwks-url", "https://idp.example.test/jwks.json", "-jwt-issuer", "https://idp.example.test/", "-jwt-audience", "api", "-jwt-role-claim", "cognito:groups", "-user-rate", "2"}, noEnv, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, httpapi.JWKSOptions{URL: "https://idp.example.test/jwks.json", Issuer: "https://idp.example.test/", Audience: "api", RoleClaim: "cognito:groups", AdminRole: "admin"}, c.jwks)
	assert.Empty(t, c.jwtSecret)
	assert.Equal(t, 2.0, c.userRate)

	// The lottery seed secret comes from the environment only, in hex.
	drawSecret := strings.Repeat("ab", 32)
	c, err = parseConfig([]string{"-dev"}, env(map[string]string{"ASYNCEVENT_DRAW_SECRET": drawSecret}), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, bytes.Repeat([]byte{0xab}, 32), c.drawSecret)
	for _, bad := range []string{"not hex", strings.Repeat("ab", 31)} {
		_, err = parseConfig([]string{"-dev"}, env(map[string]string{"ASYNCEVENT_DRAW_SECRET": bad}), io.Discard)
		assert.ErrorContains(t, err, "ASYNCEVENT_DRAW_SECRET", bad)
	}

	c, err = parseConfig([]string{"-jwt-secret", secret, "-embedded=false", "-workers", "0", "-table", "U"}, env(map[string]string{"ASYNCEVENT_TABLE": "T"}), io.Discard)
	require.NoError(t, err)
	assert.False(t, c.embedded, "AWS itself")
	assert.False(t, c.createTable)
	assert.Equal(t, "U", c.table, "a flag beats the environment")
	assert.Zero(t, c.workers)

	for _, args := range [][]string{
		{"-jwt-secret", secret, "-embedded", "-dynamodb-endpoint", "http://x"},
		{"-jwt-secret", secret, "-workers", "-1"},
		{"-jwt-secret", secret, "-log-format", "xml"},
		{"-jwt-secret", secret, "-request-timeout", "0s"},
		{"-jwt-secret", secret, "extra"},
		{"-jwt-secret", secret, "-user-rate", "-1"},
		{"-jwt-secret", secret, "-user-burst", "0"},
		{"-jwt-secret", secret, "-jwt-issuer", "https://idp.example.test/"},
		{"-jwt-secret", secret, "-jwt-audience", "api"},
		{"-jwks-url", "https://idp.example.test/jwks.json", "-jwt-issuer", "i"},
		{"-jwks-url", "https://idp.example.test/jwks.json", "-jwt-audience", "a"},
		{"-jwks-url", "https://idp.example.test/jwks.json", "-jwt-issuer", "i", "-jwt-audience", "a", "-jwt-secret", secret},
		{"-jwks-url", "https://idp.example.test/jwks.json", "-jwt-issuer", "i", "-jwt-audience", "a", "-dev"},
		{"-jwt-secret", secret, "-otel-public"},
		{"-no-such-flag"},
	} {
		_, err := parseConfig(args, noEnv, io.Discard)
		assert.Error(t, err, "%q", args)
	}
}

func TestTokenSubcommand(t *testing.T) {
	t.Parallel()
	secret := strings.Repeat("s", 32)
	var out, errOut strings.Builder
	require.NoError(t, mintCmd([]string{"-user", "ann", "-admin", "-ttl", "1h"}, func(string) string { return secret }, &out, &errOut))
	auth, err := httpapi.NewJWTAuthenticator([]byte(secret), httpapi.JWTOptions{})
	require.NoError(t, err)
	p, err := auth.Authenticate(&http.Request{Header: http.Header{"Authorization": {"Bearer " + strings.TrimSpace(out.String())}}})
	require.NoError(t, err)
	assert.Equal(t, "ann", p.UserID)
	assert.Equal(t, httpapi.RoleAdmin, p.Role)

	noEnv := func(string) string { return "" }
	assert.ErrorContains(t, mintCmd([]string{"-user", "ann"}, noEnv, io.Discard, io.Discard), "ASYNCEVENT_JWT_SECRET")
	assert.ErrorContains(t, mintCmd(nil, func(string) string { return secret }, io.Discard, io.Discard), "-user is required")
}

// A missing table names the flag that creates it.
func TestMissingTableSaysCreateTable(t *testing.T) {
	t.Parallel()
	cfg, err := parseConfig([]string{"-addr", "127.0.0.1:0", "-table", asynceventtest.UniqueTableName(t),
		"-dynamodb-endpoint", asynceventtest.Endpoint(t), "-jwt-secret", string(testSecret)}, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	err = run(context.Background(), cfg, io.Discard, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not found: pass -create-table to create it")
}
