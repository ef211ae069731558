package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
)

// DynamoDB refusing throughput is a 503 with Retry-After, not a 500: the caller may
// try again, and nothing half-written is left behind.
func TestThrottledIs503WithRetryAfter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.srv.Mount("GET /throttled", Public, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.srv.WriteError(w, r, fmt.Errorf("claim seat: %w: ProvisionedThroughputExceededException", asyncevent.ErrThrottled))
	}))
	r := e.do("GET", "/throttled", "", nil)
	assert.Equal(t, http.StatusServiceUnavailable, r.status)
	assert.Equal(t, ProblemContentType, r.header.Get("Content-Type"))
	assert.Equal(t, "1", r.header.Get("Retry-After"))
	p := r.problem(t)
	assert.Equal(t, CodeThrottled, p.Code)
	assert.NotContains(t, p.Detail, "Provisioned", "the cause stays in the log")
	assert.Contains(t, e.logs.String(), "ProvisionedThroughputExceededException")
}

// A control whose write got no answer is a 503 outcome_unknown, not a plain timeout's
// "try again": the caller learns it may have applied, and that a call again under the
// same Idempotency-Key applies it once at most.
func TestOutcomeUnknownIs503(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.srv.Mount("GET /unknown", Public, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.srv.WriteError(w, r, fmt.Errorf("%w: add capacity e: %w", asyncevent.ErrOutcomeUnknown, context.DeadlineExceeded))
	}))
	r := e.do("GET", "/unknown", "", nil)
	assert.Equal(t, http.StatusServiceUnavailable, r.status)
	p := r.problem(t)
	assert.Equal(t, CodeOutcomeUnknown, p.Code)
	assert.Contains(t, p.Detail, "Idempotency-Key")

	// A resend after an unanswered attempt, throttled: still unknown, not throttled.
	p, _, _ = problemFor(fmt.Errorf("%w: add capacity e: %w", asyncevent.ErrOutcomeUnknown, fmt.Errorf("%w: x", asyncevent.ErrThrottled)))
	assert.Equal(t, CodeOutcomeUnknown, p.Code)
}

func TestProblemDetailsSpeakTheAPIsLanguage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do("GET", "/admin/events/nope", e.admin(), nil)
	require.Equal(t, http.StatusNotFound, r.status)
	p := r.problem(t)
	assert.Equal(t, CodeEventNotFound, p.Code)
	assert.NotContains(t, p.Detail, "asyncevent:", "no Go package prefix")
	assert.Contains(t, p.Detail, "nope")

	at := time.Date(2026, 11, 23, 19, 42, 52, 123e6, time.UTC)
	err := fmt.Errorf("%w: lot can be drawn from %s", asyncevent.ErrDrawTooEarly, at)
	assert.Equal(t, "too early to draw: lot can be drawn from 2026-11-23T19:42:52.123Z", humanDetail(err), "RFC 3339, as the API writes times")
}
