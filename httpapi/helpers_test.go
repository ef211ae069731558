package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// testSecret signs the tokens of the tests.
var testSecret = []byte("httpapi-test-secret-0123456789abcdef")

// env is a Server on a fresh table with an in-memory queue, served by httptest.
type env struct {
	t      testing.TB
	client *asyncevent.Client
	queue  *queue.Memory
	srv    *Server
	ts     *httptest.Server
	logs   *syncBuffer
}

type envOption func(*asyncevent.Options, *ServerOptions)

func newEnv(t testing.TB, opts ...envOption) *env {
	t.Helper()
	var co asyncevent.Options
	// A loaded CI machine's DynamoDB Local can take seconds per call: the API's
	// 10-second default would turn slowness into 503s that the tests do not test.
	so := ServerOptions{Authenticator: testAuth(t), RequestTimeout: 2 * time.Minute}
	for _, o := range opts {
		o(&co, &so)
	}
	client := asynceventtest.NewTableOn(t, ingestCalls.Record(asynceventtest.DynamoDB(t)), co)
	queue := queue.NewMemory(queue.MemoryOptions{})
	logs := &syncBuffer{}
	so.Client = client
	if so.Queue == nil {
		so.Queue = sendsRecorded{queue}
	}
	so.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	srv := newServer(t, so)
	return &env{t: t, client: client, queue: queue, srv: srv, ts: newTestServer(t, asIngest(srv.Handler())), logs: logs}
}

// testAuth is the JWT authenticator of testSecret.
func testAuth(t testing.TB) *JWTAuthenticator {
	t.Helper()
	a, err := NewJWTAuthenticator(testSecret, JWTOptions{})
	require.NoError(t, err)
	return a
}

// newServer is NewServer, failing t on an error; a nil Authenticator is testAuth.
func newServer(t testing.TB, so ServerOptions) *Server {
	t.Helper()
	if so.Authenticator == nil {
		so.Authenticator = testAuth(t)
	}
	srv, err := NewServer(so)
	require.NoError(t, err)
	return srv
}

func newTestServer(t testing.TB, h http.Handler) *httptest.Server {
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}

// token mints a token for user valid for an hour.
func token(t testing.TB, user string, role Role) string {
	t.Helper()
	tok, err := MintToken(testSecret, user, role, time.Now().Add(time.Hour))
	require.NoError(t, err)
	return tok
}

func (e *env) admin() string { return token(e.t, "admin-1", RoleAdmin) }

// response is what a request got back.
type response struct {
	status int
	header http.Header
	body   []byte
}

// json decodes the body into a fresh value of T.
func decode[T any](t testing.TB, r response) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(r.body, &v), "body: %s", r.body)
	return v
}

func (r response) problem(t testing.TB) Problem {
	t.Helper()
	require.Equal(t, ProblemContentType, r.header.Get("Content-Type"), "body: %s", r.body)
	return decode[Problem](t, r)
}

// do sends a request to the server; body is sent as is when it is a string or
// []byte, else as JSON. An empty tok sends no Authorization header.
func (e *env) do(method, path, tok string, body any) response {
	e.t.Helper()
	return doURL(e.t, http.DefaultClient, e.ts.URL, method, path, tok, body)
}

func doURL(t testing.TB, hc *http.Client, base, method, path, tok string, body any) response {
	t.Helper()
	r, err := tryURL(hc, base, method, path, tok, body)
	require.NoError(t, err)
	return r
}

// tryURL is doURL for goroutines other than the test's, which must not call
// t.FailNow.
func tryURL(hc *http.Client, base, method, path, tok string, body any) (response, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			return response{}, err
		}
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, base+path, rd)
	if err != nil {
		return response{}, err
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, err
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// createFirstCome creates a FIRST_COME event through the admin route.
func (e *env) createFirstCome(eventID string, capacity int64) EventView {
	e.t.Helper()
	r := e.do("POST", "/admin/events", e.admin(), map[string]any{"eventId": eventID, "eventType": "FIRST_COME", "capacityTotal": capacity})
	require.Equal(e.t, http.StatusCreated, r.status, "body: %s", r.body)
	return decode[EventView](e.t, r)
}

// participate posts a participation of user and returns the answer.
func (e *env) participate(eventID, user string) (int, ParticipationView) {
	e.t.Helper()
	r := e.do("POST", "/events/"+eventID+"/participations", token(e.t, user, RoleUser), nil)
	require.Contains(e.t, []int{http.StatusAccepted, http.StatusOK}, r.status, "body: %s", r.body)
	return r.status, decode[ParticipationView](e.t, r)
}

// process runs a Processor over everything on the queue until it is empty.
func (e *env) process() {
	e.t.Helper()
	ctx := context.Background()
	p := asyncevent.NewProcessor(e.client, asyncevent.ProcessOptions{})
	for {
		ds, err := e.queue.Receive(ctx, 10, 0, time.Minute)
		require.NoError(e.t, err)
		if len(ds) == 0 {
			l := e.queue.Len()
			require.Zero(e.t, l.InFlight+l.Visible, "messages left on the queue")
			return
		}
		failed := asynceventtest.Process(ctx, p, ds)
		require.Empty(e.t, failed, "messages to retry")
		var receipts []string
		for _, d := range ds {
			receipts = append(receipts, d.Receipt)
		}
		require.NoError(e.t, e.queue.Delete(ctx, receipts...))
	}
}

// listAll pages through a listing with limit and returns every request, in order,
// failing on a repeated request ID.
func (e *env) listAll(path, tok string) []RequestView {
	e.t.Helper()
	var all []RequestView
	seen := map[string]bool{}
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(e.t, pages, 1000, "too many pages")
		p := path
		if cursor != "" {
			sep := "?"
			if strings.Contains(p, "?") {
				sep = "&"
			}
			p += sep + "cursor=" + cursor
		}
		r := e.do("GET", p, tok, nil)
		require.Equal(e.t, http.StatusOK, r.status, "body: %s", r.body)
		page := decode[PageView](e.t, r)
		for _, req := range page.Requests {
			require.False(e.t, seen[req.RequestID], "request %s listed twice", req.RequestID)
			seen[req.RequestID] = true
			all = append(all, req)
		}
		if page.NextCursor == "" {
			return all
		}
		cursor = page.NextCursor
	}
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// accessLogs returns the access log lines written so far.
func (b *syncBuffer) accessLogs(t testing.TB) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m))
		if m["msg"] == "http" {
			lines = append(lines, m)
		}
	}
	return lines
}
