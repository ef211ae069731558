package httpapi

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/asyncevent/asyncevent"
)

// clickTrace is the trace a click carries in its traceparent.
const (
	clickTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	clickParent = "00f067aa0ba902b7"
)

// traced sends a participation carrying the click's traceparent to a server with a
// TracerProvider (and PublicEndpoint as given), and a load balancer's poll of
// /healthz, and returns the server's spans.
func traced(t *testing.T, public bool) []sdktrace.ReadOnlySpan {
	t.Helper()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	e := newEnv(t, func(_ *asyncevent.Options, so *ServerOptions) { so.TracerProvider, so.PublicEndpoint = tp, public })
	e.createFirstCome("sale", 1)
	spans.Reset()

	req, err := http.NewRequestWithContext(t.Context(), "POST", e.ts.URL+"/events/sale/participations", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token(t, "u1", RoleUser))
	req.Header.Set("traceparent", "00-"+clickTrace+"-"+clickParent+"-01")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	r := e.do("GET", "/healthz", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	return spans.Ended()
}

// The server continues the traceparent a click carries: its span is a child of the
// caller's, in the caller's trace, named for the route; /healthz is not traced.
func TestTraceContinuesTheClicks(t *testing.T) {
	t.Parallel()
	spans := traced(t, false)
	require.Len(t, spans, 1, "one span: the participation's (not /healthz's)")
	s := spans[0]
	assert.Equal(t, "POST /events/{eventId}/participations", s.Name())
	assert.Equal(t, clickTrace, s.SpanContext().TraceID().String())
	assert.Equal(t, clickParent, s.Parent().SpanID().String())
	assert.True(t, s.Parent().IsRemote())
}

// With PublicEndpoint the caller's traceparent is not continued: the server's span
// starts a trace of its own and links to the caller's.
func TestTracePublicEndpointStartsItsOwn(t *testing.T) {
	t.Parallel()
	spans := traced(t, true)
	require.Len(t, spans, 1)
	s := spans[0]
	assert.NotEqual(t, clickTrace, s.SpanContext().TraceID().String(), "the caller does not pick the trace")
	assert.False(t, s.Parent().IsValid(), "a root span")
	require.Len(t, s.Links(), 1)
	assert.Equal(t, clickTrace, s.Links()[0].SpanContext.TraceID().String(), "linked to the caller's")
	assert.Equal(t, clickParent, s.Links()[0].SpanContext.SpanID().String())
}
