package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/httpapi"
)

func TestMain(m *testing.M) { asynceventtest.Main(m) }

// testSecret signs the tokens of the tests.
var testSecret = []byte("httpapi-test-secret-0123456789abcdef")

// token mints a token for user valid for an hour.
func token(t testing.TB, user string, role httpapi.Role) string {
	t.Helper()
	tok, err := httpapi.MintToken(testSecret, user, role, time.Now().Add(time.Hour))
	require.NoError(t, err)
	return tok
}

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

// above returns the lines of a JSON log at level or more severe.
func (b *syncBuffer) above(level slog.Level) string {
	var out strings.Builder
	for line := range strings.Lines(b.String()) {
		var entry struct{ Level slog.Level }
		if json.Unmarshal([]byte(line), &entry) == nil && entry.Level >= level {
			out.WriteString(line)
		}
	}
	return out.String()
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
