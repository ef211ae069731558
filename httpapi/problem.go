package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/asyncevent/asyncevent"
)

// Problem is an RFC 9457 problem details object, sent as application/problem+json.
// Type is always about:blank, so Title is the HTTP status text; Code is the stable,
// machine-readable name of the problem that clients branch on (the Code* constants).
// Instance names this occurrence (urn:uuid:…), the same ID the access log carries,
// so an operator can find the log line of a 500 whose detail says nothing.
type Problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail,omitempty"`
	Instance string `json:"instance,omitempty"`
	Code     string `json:"code"`

	// Request, of a status_conflict, is the request as the refused write found it:
	// its status and resultCode say why (a hold that ran out, one already ended). Of
	// a refused cancel (control_refused), it is the request as it stands.
	Request *RequestView `json:"request,omitempty"`

	// Event, of a control_refused, is the event as the refused control found it:
	// its state says why, as the detail does in words.
	Event *EventView `json:"event,omitempty"`
}

// ProblemContentType is the media type of a Problem.
const ProblemContentType = "application/problem+json"

// The stable problem codes. Clients may rely on them; the detail text is for humans
// and may change.
const (
	CodeUnauthorized         = "unauthorized"           // 401: no, malformed, forged or expired token
	CodeForbidden            = "forbidden"              // 403: a valid token without the role the route needs
	CodeCrossSite            = "cross_site"             // 403: a write (not GET, HEAD, OPTIONS) without a bearer token from another site, as the browser tells (Sec-Fetch-Site, else Origin against Host); nothing written
	CodeAdmissionRefused     = "admission_refused"      // 403: ServerOptions.Admission refused the click (Forbid); nothing written
	CodeRateLimited          = "rate_limited"           // 429: ServerOptions.Admission refused the click for now (TooManyRequests); try again after Retry-After; nothing written
	CodeRouteNotFound        = "route_not_found"        // 404: no such route
	CodeMethodNotAllowed     = "method_not_allowed"     // 405: the route exists for other methods (see Allow)
	CodeInvalidID            = "invalid_id"             // 400: an ID that cannot be used in a key (asyncevent.ErrInvalidID)
	CodeInvalidParameter     = "invalid_parameter"      // 400: a bad query parameter (asyncevent.ErrInvalidOptions)
	CodeInvalidEvent         = "invalid_event"          // 400: event settings CreateEvent refuses (asyncevent.ErrInvalidEvent)
	CodeInvalidCursor        = "invalid_cursor"         // 400: a cursor not handed out for this listing (asyncevent.ErrInvalidCursor)
	CodeMalformedJSON        = "malformed_json"         // 400: the body is not one JSON value
	CodeInvalidBody          = "invalid_body"           // 400: the body is JSON of the wrong shape (a field of the wrong type, a bad time)
	CodeUnknownField         = "unknown_field"          // 400: the body has a field the route does not know
	CodeBodyTooLarge         = "body_too_large"         // 413: the body is over ServerOptions.MaxBodyBytes
	CodeUnsupportedMediaType = "unsupported_media_type" // 415: a body that is not application/json
	CodeEventNotFound        = "event_not_found"        // 404: asyncevent.ErrEventNotFound
	CodeRequestNotFound      = "request_not_found"      // 404: no such request, or not the caller's
	CodeNotFound             = "not_found"              // 404: another item asked for by key (asyncevent.ErrNotFound)
	CodeEventExists          = "event_exists"           // 409: asyncevent.ErrEventExists
	CodeEventNotOpen         = "event_not_open"         // 409: asyncevent.ErrEventNotOpen
	CodeEventClosed          = "event_closed"           // 409: asyncevent.ErrEventClosed
	CodeEventPaused          = "event_paused"           // 409: asyncevent.ErrEventPaused: an operator paused the event's ingest; nothing written
	CodeDrawTooEarly         = "draw_too_early"         // 409: asyncevent.ErrDrawTooEarly
	CodeNotLottery           = "not_lottery"            // 409: asyncevent.ErrNotLottery
	CodeDrawMismatch         = "draw_mismatch"          // 409: asyncevent.ErrDrawMismatch
	CodeOutcomeUnknown       = "outcome_unknown"        // 503: an operator's control got no answer from DynamoDB (asyncevent.ErrOutcomeUnknown): it may have applied; read the event (a call again under the same Idempotency-Key applies it at most once)
	CodeSeedMismatch         = "seed_mismatch"          // 409: the server's seed source is not the event's (asyncevent.ErrSeedMismatch); nothing drawn
	CodeNoSeedSource         = "no_seed_source"         // 409: a sealed event, and the server has no seed source (asyncevent.ErrNoSeedSource); nothing drawn
	CodeStatusConflict       = "status_conflict"        // 409: a confirm or release found the request in a status it does not act on; nothing written, the problem's request shows it
	CodeNoHolds              = "no_holds"               // 409: a hold sweep of an event without holds (asyncevent.EventSettings.HoldFor)
	CodeControlRefused       = "control_refused"        // 409: an operator's control the event's state (or a cancel's request) refuses (asyncevent.EventUpdate.Reason); nothing written, the problem's event shows it
	CodeEnqueueFailed        = "enqueue_failed"         // 503: asyncevent.ErrEnqueueFailed; the user may try again
	CodeThrottled            = "throttled"              // 503: DynamoDB refused the throughput (asyncevent.ErrThrottled); try again after Retry-After
	CodeIngestDisabled       = "ingest_disabled"        // 503: the server has no queue
	CodeTimeout              = "timeout"                // 503: the request ran out of ServerOptions.RequestTimeout
	CodeInternal             = "internal"               // 500: anything else; the detail says nothing
)

// httpError is an error that already knows its problem: the server's own refusals
// (authentication, body decoding, query parameters, a confirm, a release or a
// control refused).
type httpError struct {
	status  int
	code    string
	detail  string
	header  http.Header  // extra response headers, e.g. WWW-Authenticate
	request *RequestView // the problem's request member
	event   *EventView   // the problem's event member
}

func (e *httpError) Error() string { return e.detail }

func newHTTPError(status int, code, detail string) *httpError {
	return &httpError{status: status, code: code, detail: detail}
}

// throttledRetryAfter is the Retry-After of a throttled request, in seconds:
// DynamoDB's partition limits are per second.
const throttledRetryAfter = "1"

// goPrefix is the package prefix of the library's error texts.
const goPrefix = "asyncevent: "

// goTime matches a time in Go's default format (time.Time.String), as some library
// errors print them: "2026-11-23 19:42:52.123 +0000 UTC".
var goTime = regexp.MustCompile(`\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d+)? [+-]\d{4} [A-Z]+`)

// humanDetail is an error's text for a problem's detail: without the library's
// package prefixes, and with times in RFC 3339 as the API writes them.
func humanDetail(err error) string {
	detail := strings.ReplaceAll(err.Error(), goPrefix, "")
	return goTime.ReplaceAllStringFunc(detail, func(s string) string {
		t, err := time.Parse("2006-01-02 15:04:05.999999999 -0700 MST", s)
		if err != nil {
			return s
		}
		return t.UTC().Format(timestampLayout)
	})
}

// problemFor maps an error to its problem. Library errors are matched with errors.Is;
// a 4xx detail is the error's text (it describes the caller's input), a 5xx detail is
// fixed so that nothing of the infrastructure leaks. internal reports whether the
// error is unexpected and must be logged in full.
func problemFor(err error) (p Problem, header http.Header, internal bool) {
	p = Problem{Type: "about:blank", Detail: humanDetail(err)}
	var he *httpError
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &he):
		p.Status, p.Code, p.Detail, p.Request, p.Event = he.status, he.code, he.detail, he.request, he.event
		header = he.header
	case errors.As(err, &tooLarge):
		p.Status, p.Code, p.Detail = http.StatusRequestEntityTooLarge, CodeBodyTooLarge, "the body is over "+strconv.FormatInt(tooLarge.Limit, 10)+" bytes"
	default:
		var refused bool
		if p.Status, p.Code, refused = refusalFor(err); !refused {
			p.Status, p.Code, p.Detail, header, internal = failureFor(err)
		}
	}
	p.Title = http.StatusText(p.Status)
	return p, header, internal
}

// refusals are the library's errors that refuse what the caller asks, in the order
// they are matched: each answers its status and code, the error's text the detail.
var refusals = []struct {
	err    error
	status int
	code   string
}{
	{asyncevent.ErrInvalidID, http.StatusBadRequest, CodeInvalidID},
	{asyncevent.ErrInvalidOptions, http.StatusBadRequest, CodeInvalidParameter},
	{asyncevent.ErrInvalidEvent, http.StatusBadRequest, CodeInvalidEvent},
	{asyncevent.ErrInvalidTime, http.StatusBadRequest, CodeInvalidEvent},
	{asyncevent.ErrInvalidCursor, http.StatusBadRequest, CodeInvalidCursor},
	{asyncevent.ErrEventNotFound, http.StatusNotFound, CodeEventNotFound},
	{asyncevent.ErrNotFound, http.StatusNotFound, CodeNotFound},
	{asyncevent.ErrEventExists, http.StatusConflict, CodeEventExists},
	{asyncevent.ErrEventNotOpen, http.StatusConflict, CodeEventNotOpen},
	{asyncevent.ErrEventClosed, http.StatusConflict, CodeEventClosed},
	{asyncevent.ErrEventPaused, http.StatusConflict, CodeEventPaused},
	{asyncevent.ErrDrawTooEarly, http.StatusConflict, CodeDrawTooEarly},
	// The request is well formed; the event is of the wrong kind for it.
	{asyncevent.ErrNotLottery, http.StatusConflict, CodeNotLottery},
	{asyncevent.ErrDrawMismatch, http.StatusConflict, CodeDrawMismatch},
	// The event cannot be drawn with this server's secret; the admin who asked must
	// learn why, and the detail holds hashes only.
	{asyncevent.ErrSeedMismatch, http.StatusConflict, CodeSeedMismatch},
	{asyncevent.ErrNoSeedSource, http.StatusConflict, CodeNoSeedSource},
}

// refusalFor returns the status and code of the first of refusals that err is; ok
// is false when it is none of them.
func refusalFor(err error) (status int, code string, ok bool) {
	for _, r := range refusals {
		if errors.Is(err, r.err) {
			return r.status, r.code, true
		}
	}
	return 0, "", false
}

// failureFor is the problem of an error that is no refusal of the caller's input: a
// 503 that tells when to try again, or a 500, each with a fixed detail. internal
// reports that its cause is to be logged in full.
func failureFor(err error) (status int, code, detail string, header http.Header, internal bool) {
	switch {
	case errors.Is(err, asyncevent.ErrEnqueueFailed):
		// The request ended FAILED_FINAL and its lock is released: a retry makes a
		// fresh request. The cause (the queue's error) stays in the log.
		return http.StatusServiceUnavailable, CodeEnqueueFailed, "the request could not be queued; try again",
			http.Header{"Retry-After": {"1"}}, true
	case errors.Is(err, asyncevent.ErrOutcomeUnknown):
		// Before the throttle's and the deadline's cases: an unknown outcome is not a
		// plain "try again" (a resend after an unanswered attempt may be throttled).
		return http.StatusServiceUnavailable, CodeOutcomeUnknown,
			"the outcome is unknown: the change may have applied, or may apply when its write lands; read the event and its audit trail before acting again (a call again under the same Idempotency-Key, if one was sent, applies it at most once)",
			http.Header{"Retry-After": {"1"}}, true
	case errors.Is(err, asyncevent.ErrThrottled):
		// Nothing half-written is left behind (the library's promise for
		// ErrThrottled); the cause, a hot partition key, stays in the log.
		return http.StatusServiceUnavailable, CodeThrottled, "too many requests for this event right now; try again",
			http.Header{"Retry-After": {throttledRetryAfter}}, true
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return http.StatusServiceUnavailable, CodeTimeout, "the request took too long; try again",
			http.Header{"Retry-After": {"1"}}, false
	}
	return http.StatusInternalServerError, CodeInternal, "internal error", nil, true
}

// WriteError answers r with the problem of err, and logs err when it is unexpected
// or when the request ran out of time (Server.logFailure says how).
// Handlers mounted with Server.Mount may use it to answer as the API does.
func (s *Server) WriteError(w http.ResponseWriter, r *http.Request, err error) {
	p, header, internal := problemFor(err)
	info := infoFrom(r.Context())
	if info != nil {
		p.Instance = info.instance
	}
	s.logFailure(r, p, internal, err)
	for k, vs := range header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	writeProblem(w, p)
}

// logFailure logs the error behind a failed request's problem p: in full (level
// error) when it is unexpected; at level warn when the request ran out of time (its
// own RequestTimeout, or a deadline of a call inside it), the error naming the call
// that was waiting. A request whose client hung up (its context canceled) is the
// access log's alone.
func (s *Server) logFailure(r *http.Request, p Problem, internal bool, err error) {
	switch {
	case internal:
		s.logger.LogAttrs(r.Context(), slog.LevelError, "request failed",
			slog.String("instance", p.Instance), slog.Int("status", p.Status), slog.Any("error", err))
	case p.Code == CodeTimeout && !errors.Is(r.Context().Err(), context.Canceled):
		s.logger.LogAttrs(r.Context(), slog.LevelWarn, "request ran out of time",
			slog.String("instance", p.Instance), slog.Any("error", err),
			slog.Bool("requestTimeoutPassed", errors.Is(r.Context().Err(), context.DeadlineExceeded)))
	}
}

// writeProblem sends p as the whole response.
func writeProblem(w http.ResponseWriter, p Problem) {
	body, _ := json.Marshal(p) // a Problem always marshals
	h := w.Header()
	h.Set("Content-Type", ProblemContentType)
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(p.Status)
	_, _ = w.Write(append(body, '\n'))
}
