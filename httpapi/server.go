package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/queue"
)

// ServerOptions configures a Server. Client and Authenticator are required; every
// other field has a default.
type ServerOptions struct {
	// Client runs the access patterns. Required.
	Client *asyncevent.Client

	// Queue is where participations are sent (Client.Submit). Nil: the server takes
	// no participations (503 ingest_disabled), e.g. an admin-only deployment.
	Queue queue.Queue

	// Authenticator tells who sent each request that is not to a Public route, e.g.
	// a JWTAuthenticator. Required.
	Authenticator Authenticator

	// Logger receives the access log (one line per request) and the errors behind
	// 5xx answers. Default: discard.
	Logger *slog.Logger

	// RequestTimeout bounds each request's work (its context). A request that runs
	// out answers 503 timeout. Default: DefaultRequestTimeout (10 seconds).
	RequestTimeout time.Duration

	// MaxBodyBytes bounds a request body; a larger one answers 413.
	// Default: DefaultMaxBodyBytes (64 KiB).
	MaxBodyBytes int64

	// TracerProvider, if set, traces every request but /healthz with the
	// OpenTelemetry HTTP middleware (otelhttp): a server span, named for its route,
	// that continues the W3C traceparent the request carries (from the client, a load
	// balancer or API Gateway) or starts a trace, so that Submit, the message and the
	// worker's processing (package otelasyncevent) are spans of the click's own trace.
	// The traceparent is the caller's word: with a parent-based sampler a client
	// decides whether its click is sampled, and it picks the trace ID; behind a
	// gateway that sets the header, that is the gateway's. Default: no spans.
	TracerProvider trace.TracerProvider

	// PublicEndpoint, with a TracerProvider, takes no caller's word for the trace: a
	// request's server span starts a trace of its own, linked to the traceparent the
	// request carries (if any), so that a client can neither pick the trace ID nor have
	// its clicks sampled. Set it when clients reach the server with no gateway or load
	// balancer that sets the header in between. Default: the traceparent is continued.
	PublicEndpoint bool

	// Admission, if set, is asked about every participation before Submit (after
	// authentication): a bot challenge, a rate limit (UserRateLimit). Its Refusal is
	// a 403 or 429 with nothing written. Default: every click is admitted.
	Admission Admission

	// Clock tells the time the answers count from: a HELD request's
	// holdSecondsLeft, an event's state. It should agree with the Client's (asyncevent.Options.Clock),
	// whose writes decide when a hold has run out. Default: time.Now.
	Clock func() time.Time
}

// The defaults of ServerOptions.
const (
	DefaultRequestTimeout = 10 * time.Second
	DefaultMaxBodyBytes   = 64 << 10
)

// Server is the HTTP API over an asyncevent.Client: user participation and reads,
// and the admin routes. It is an http.Handler factory, not a listener: serve
// Handler with an http.Server of your own, or mount it in a larger mux. Mount adds
// routes behind the same authentication, timeout and access log; MountAdminUI adds
// the admin web UI.
type Server struct {
	client  *asyncevent.Client
	queue   queue.Queue
	auth    Authenticator
	admit   Admission
	logger  *slog.Logger
	timeout time.Duration
	maxBody int64
	now     func() time.Time
	mux     *http.ServeMux
	handler http.Handler
	// pages reports whether MountRequestPage added the page of a user's request:
	// a participation's answer then links to it.
	pages bool
}

// NewServer returns a Server with its routes registered, or an error when Client or
// Authenticator is missing.
func NewServer(opts ServerOptions) (*Server, error) {
	if opts.Client == nil {
		return nil, errors.New("httpapi: NewServer: ServerOptions.Client is nil")
	}
	if opts.Authenticator == nil {
		return nil, errors.New("httpapi: NewServer: ServerOptions.Authenticator is nil")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	s := &Server{
		client:  opts.Client,
		queue:   opts.Queue,
		auth:    opts.Authenticator,
		admit:   opts.Admission,
		logger:  opts.Logger,
		timeout: opts.RequestTimeout,
		maxBody: opts.MaxBodyBytes,
		now:     opts.Clock,
		mux:     http.NewServeMux(),
	}
	s.handler = s.observe(http.HandlerFunc(s.dispatch))
	if opts.TracerProvider != nil {
		s.handler = otelhttp.NewHandler(s.handler, "asyncevent.http",
			otelhttp.WithTracerProvider(opts.TracerProvider),
			otelhttp.WithPropagators(propagation.TraceContext{}),
			otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return spanMethod(r.Method) + " " + routeOf(s.mux, r) }),
			otelhttp.WithFilter(func(r *http.Request) bool { return r.URL.Path != "/healthz" }), // a load balancer's polls
			otelhttp.WithPublicEndpointFn(func(*http.Request) bool { return opts.PublicEndpoint }))
	}

	s.route("GET /healthz", Public, s.healthz)

	s.route("POST /events/{eventId}/participations", UserOnly, s.participate)
	s.route("GET /requests/{requestId}", UserOnly, s.pollOwnRequest)
	s.route("GET /me/participations", UserOnly, answer(s.listOwnRequests))
	s.route("POST /requests/{requestId}/confirm", AdminOnly, byID("requestId", s.confirm))
	s.route("POST /requests/{requestId}/release", UserOnly, byID("requestId", s.release))

	s.route("POST /admin/events", AdminOnly, s.createEvent)
	s.route("GET /admin/events", AdminOnly, answer(s.listEvents))
	s.route("GET /admin/events/{eventId}", AdminOnly, byID("eventId", s.getEvent))
	s.route("GET /admin/events/{eventId}/requests", AdminOnly, byID("eventId", s.listEventRequests))
	s.route("GET /admin/events/{eventId}/stats", AdminOnly, byID("eventId", s.eventStats))
	s.route("POST /admin/events/{eventId}/draw", AdminOnly, byID("eventId", s.draw))
	s.route("GET /admin/events/{eventId}/draw/verify", AdminOnly, byID("eventId", s.verifyDraw))
	s.route("POST /admin/events/{eventId}/holds/sweep", AdminOnly, byID("eventId", s.sweepHolds))
	s.route("POST /admin/events/{eventId}/close", AdminOnly, byID("eventId", s.control(s.client.CloseEvent)))
	s.route("POST /admin/events/{eventId}/pause", AdminOnly, byID("eventId", s.control(s.client.PauseEvent)))
	s.route("POST /admin/events/{eventId}/resume", AdminOnly, byID("eventId", s.control(s.client.ResumeEvent)))
	s.route("POST /admin/events/{eventId}/extend", AdminOnly, byIDWithBody("eventId", s.maxBody, s.extendEvent))
	s.route("POST /admin/events/{eventId}/capacity", AdminOnly, byIDWithBody("eventId", s.maxBody, s.addEventCapacity))
	s.route("GET /admin/events/{eventId}/audit", AdminOnly, byID("eventId", s.auditTrail))
	s.route("GET /admin/requests/{requestId}", AdminOnly, byID("requestId", s.getRequest))
	s.route("GET /admin/requests/{requestId}/logs", AdminOnly, byID("requestId", s.statusLogs))
	s.route("POST /admin/requests/{requestId}/cancel", AdminOnly, byID("requestId", s.cancelRequest))
	return s, nil
}

// Handler returns the server's handler: every route, with the access log, panic
// recovery and problem details for unknown routes.
func (s *Server) Handler() http.Handler { return s.handler }

// Mount registers h under pattern (http.ServeMux syntax, e.g. "GET /admin/ui/"),
// behind the same per-request timeout and access log as the API's routes, and
// behind authentication unless access is Public (and, as the API's routes, a
// refusal of writes from another site that carry no bearer token: 403 cross_site);
// h reads the caller with PrincipalFrom. Mount may be called while the server is
// serving.
func (s *Server) Mount(pattern string, access Access, h http.Handler) {
	s.route(pattern, access, func(w http.ResponseWriter, r *http.Request, _ Principal) error {
		h.ServeHTTP(w, r)
		return nil
	})
}

// apiFunc is a route's handler: it answers, or returns the error to answer with.
type apiFunc func(w http.ResponseWriter, r *http.Request, p Principal) error

// route registers f under pattern with its cross-site check, authentication and
// timeout.
func (s *Server) route(pattern string, access Access, f apiFunc) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		info := infoFrom(r.Context())
		if info != nil {
			info.pattern = pattern
		}
		var p Principal
		if access != Public {
			err := crossSite(r) // before any token is read: a refused write costs nothing
			if err == nil {
				p, err = s.authenticate(r, access)
			}
			if info != nil {
				info.userID = p.UserID
			}
			if err != nil {
				s.WriteError(w, r, err)
				return
			}
			r = r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
		}
		ctx, cancel := context.WithTimeout(r.Context(), s.timeout)
		defer cancel()
		r = r.WithContext(ctx)
		if err := f(w, r, p); err != nil {
			if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
				err = errors.Join(err, ctx.Err())
			}
			s.WriteError(w, r, err)
		}
	})
}

// dispatch serves the mux, answering with problem details where it would answer a
// plain-text 404 or 405.
func (s *Server) dispatch(w http.ResponseWriter, r *http.Request) {
	if _, pattern := s.mux.Handler(r); pattern != "" {
		s.mux.ServeHTTP(w, r)
		return
	}
	// No route matched: the mux's own handler would write 404, or 405 with Allow.
	hc := &headerCapture{header: http.Header{}}
	s.mux.ServeHTTP(hc, r)
	if hc.status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", hc.header.Get("Allow"))
		s.WriteError(w, r, newHTTPError(http.StatusMethodNotAllowed, CodeMethodNotAllowed, r.Method+" is not allowed here"))
		return
	}
	s.WriteError(w, r, newHTTPError(http.StatusNotFound, CodeRouteNotFound, "no route for "+r.Method+" "+r.URL.EscapedPath()))
}

// headerCapture keeps the status and headers of a response and drops its body.
type headerCapture struct {
	header http.Header
	status int
}

func (c *headerCapture) Header() http.Header         { return c.header }
func (c *headerCapture) Write(b []byte) (int, error) { return len(b), nil }
func (c *headerCapture) WriteHeader(status int)      { c.status = status }

// pathID returns the path value name, which must pass asyncevent.ValidateID: an ID
// with '#' (sent as %23), too long or unprintable is refused before any I/O.
func pathID(r *http.Request, name string) (string, error) {
	id := r.PathValue(name)
	if err := asyncevent.ValidateID(name, id); err != nil {
		return "", err
	}
	return id, nil
}

// viewFunc is the work of a JSON route that answers 200: the view to send, or the
// error to answer with.
type viewFunc[V any] func(r *http.Request, p Principal) (V, error)

// idFunc is the work of a JSON route under one ID in its path (eventId, requestId):
// given the ID, checked, the view to send with 200, or the error to answer with.
type idFunc[V any] func(r *http.Request, id string, p Principal) (V, error)

// bodyFunc is an idFunc that takes the request's body, decoded.
type bodyFunc[B, V any] func(r *http.Request, id string, p Principal, body B) (V, error)

// answer is the handler of a JSON route whose work is f: 200 with f's view, or f's
// error, with nothing written, for route to answer with its problem.
func answer[V any](f viewFunc[V]) apiFunc {
	return func(w http.ResponseWriter, r *http.Request, p Principal) error {
		v, err := f(r, p)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, v)
		return nil
	}
}

// byID is the handler of a JSON route whose path names one ID, name: an ID that
// pathID refuses is answered before f runs, so before any I/O; then as answer.
func byID[V any](name string, f idFunc[V]) apiFunc {
	return answer(func(r *http.Request, p Principal) (V, error) {
		id, err := pathID(r, name)
		if err != nil {
			return *new(V), err
		}
		return f(r, id, p)
	})
}

// byIDWithBody is byID for a route that takes a body: one JSON B of at most limit
// bytes (decodeJSON), read once the ID passed and before f runs.
func byIDWithBody[B, V any](name string, limit int64, f bodyFunc[B, V]) apiFunc {
	return func(w http.ResponseWriter, r *http.Request, p Principal) error {
		return byID(name, func(r *http.Request, id string, p Principal) (V, error) {
			var body B
			if err := decodeJSON(w, r, limit, &body); err != nil {
				return *new(V), err
			}
			return f(r, id, p, body)
		})(w, r, p)
	}
}

// query parses r's query string; a malformed one (a bad %-escape, say) is refused
// rather than read in part.
func query(r *http.Request) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, newHTTPError(http.StatusBadRequest, CodeInvalidParameter, "the query string is malformed")
	}
	return q, nil
}

// queryInt reads an optional integer query parameter; absent is 0.
func queryInt(q url.Values, name string) (int, error) {
	v := q.Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, newHTTPError(http.StatusBadRequest, CodeInvalidParameter, fmt.Sprintf("%s must be an integer, not %q", name, truncate(v, 40)))
	}
	return n, nil
}

// queryWithInt parses r's query (query) and reads its integer parameter name
// (queryInt), refusing a malformed query first.
func queryWithInt(r *http.Request, name string) (url.Values, int, error) {
	q, err := query(r)
	if err != nil {
		return nil, 0, err
	}
	n, err := queryInt(q, name)
	return q, n, err
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request, _ Principal) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

// participate is POST /events/{eventId}/participations: the whole ingest of a click
// for the token's user. 202 with the new request, 200 with the first request of a
// repeat (duplicate: true); Location names the request to poll (with
// MountRequestPage, a Link and the body's page name the page its user's browser
// shows), and a 202's Retry-After when (pollAfter): by then the counts of the
// arrivals before it have landed and a first poll is told its place from them
// (docs/design.md, "A place in line").
// pollAfter is the 202's Retry-After: the time from a click to its first poll worth
// making.
const pollAfter = time.Second

func (s *Server) participate(w http.ResponseWriter, r *http.Request, p Principal) error {
	eventID, err := pathID(r, "eventId")
	if err != nil {
		return err
	}
	if s.queue == nil {
		return newHTTPError(http.StatusServiceUnavailable, CodeIngestDisabled, "this server takes no participations")
	}
	if s.admit != nil {
		var refusal *Refusal
		switch err := s.admit(r, p, eventID); {
		case errors.As(err, &refusal):
			return refusal.problem()
		case err != nil:
			return fmt.Errorf("admission: %w", err)
		}
	}
	part, err := s.client.Submit(r.Context(), s.queue, eventID, p.UserID)
	if err != nil {
		return err
	}
	status := asyncevent.StatusQueued
	switch {
	case part.Request != nil:
		status = part.Request.Status
	case part.Duplicate:
		// The duplicate answer names the first request but not its status: read it.
		// The read is eventually consistent; a request too fresh to be seen exists all
		// the same (its lock does) and is at least RECEIVED.
		req, err := s.client.GetRequest(r.Context(), part.RequestID)
		switch {
		case errors.Is(err, asyncevent.ErrNotFound):
			status = asyncevent.StatusReceived
		case err != nil:
			return err
		default:
			status = req.Status
		}
	}
	code := http.StatusAccepted
	if part.Duplicate {
		code = http.StatusOK
	}
	w.Header().Set("Location", "/requests/"+url.PathEscape(part.RequestID))
	page := ""
	if s.pages {
		page = "/requests/" + url.PathEscape(part.RequestID) + pagePath
		w.Header().Set("Link", "<"+page+`>; rel="alternate"; type="text/html"`)
	}
	if code == http.StatusAccepted {
		w.Header().Set("Retry-After", strconv.Itoa(int(pollAfter/time.Second)))
	}
	writeJSON(w, code, ParticipationView{
		RequestID: part.RequestID,
		EventID:   eventID,
		Status:    status,
		UIResult:  asyncevent.UIResultOf(status),
		Duplicate: part.Duplicate,
		Page:      page,
	})
	return nil
}

// requestNotFound is the one answer for a request that does not exist and for one
// that is not the caller's, so that the user routes never tell them apart.
func requestNotFound(requestID string) error {
	return newHTTPError(http.StatusNotFound, CodeRequestNotFound, "request "+requestID+" not found")
}

// readRequest reads the request (asyncevent.Client.GetRequest); an unknown one is
// requestNotFound.
func (s *Server) readRequest(ctx context.Context, requestID string) (*asyncevent.Request, error) {
	req, err := s.client.GetRequest(ctx, requestID)
	if errors.Is(err, asyncevent.ErrNotFound) {
		return nil, requestNotFound(requestID)
	}
	return req, err
}

// pollOwnRequest is GET /requests/{requestId}: the caller's own request; another
// user's is 404, exactly as a missing one. Retry-After says when to poll it again
// (pollEvery), absent once it is final; the request page refreshes at the same pace.
func (s *Server) pollOwnRequest(w http.ResponseWriter, r *http.Request, p Principal) error {
	requestID, err := pathID(r, "requestId")
	if err != nil {
		return err
	}
	req, err := s.readRequest(r.Context(), requestID)
	switch {
	case err != nil:
		return err
	case req.UserID != p.UserID:
		return requestNotFound(requestID)
	}
	now := s.now()
	if after := pollEvery(req, now); after > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(after/time.Second)))
	}
	writeJSON(w, http.StatusOK, newRequestView(req, false, now))
	return nil
}

// listOwnRequests is GET /me/participations?limit=&cursor=: the caller's requests,
// newest first. A cursor from another user's listing is 400 invalid_cursor.
func (s *Server) listOwnRequests(r *http.Request, p Principal) (PageView, error) {
	q, limit, err := queryWithInt(r, "limit")
	if err != nil {
		return PageView{}, err
	}
	page, err := s.client.ListUserRequests(r.Context(), p.UserID, asyncevent.PageOptions{Limit: limit, Cursor: q.Get("cursor")})
	if err != nil {
		return PageView{}, err
	}
	return newPageView(page, false, s.now()), nil
}

// createEvent is POST /admin/events: 201 with the stored event. The body is
// createEventBody; a layout that CreateEvent refuses, or a peak given together with
// shard counts, is 400 invalid_event with nothing stored.
func (s *Server) createEvent(w http.ResponseWriter, r *http.Request, _ Principal) error {
	var body createEventBody
	if err := decodeJSON(w, r, s.maxBody, &body); err != nil {
		return err
	}
	cfg, err := body.config()
	if err != nil {
		return err
	}
	e, err := s.client.CreateEvent(r.Context(), cfg)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/admin/events/"+url.PathEscape(e.EventID))
	writeJSON(w, http.StatusCreated, NewEventView(e, s.now()))
	return nil
}

// getEvent is GET /admin/events/{eventId}: the config and its layout, with the
// capacity of a FIRST_COME event (and of each capacity shard) or the draw record of
// a LOTTERY.
func (s *Server) getEvent(r *http.Request, eventID string, _ Principal) (EventView, error) {
	e, err := s.client.GetEvent(r.Context(), eventID)
	if err != nil {
		return EventView{}, err
	}
	v := NewEventView(e, s.now())
	switch e.EventType {
	case asyncevent.FirstCome:
		c, err := s.client.GetCapacity(r.Context(), eventID)
		if err != nil {
			return EventView{}, fmt.Errorf("capacity of %s: %w", eventID, err)
		}
		v.Capacity = newCapacityView(c)
		if e.PrequeueOpensAt != 0 {
			d, err := s.client.GetDraw(r.Context(), eventID)
			if err != nil {
				return EventView{}, fmt.Errorf("pre-queue of %s: %w", eventID, err)
			}
			v.Draw = NewDrawView(d, nil)
		}
	case asyncevent.Lottery:
		d, err := s.client.GetDraw(r.Context(), eventID)
		if err != nil {
			return EventView{}, fmt.Errorf("draw of %s: %w", eventID, err)
		}
		v.Draw = NewDrawView(d, nil)
	}
	return v, nil
}

// listEventRequests is GET /admin/events/{eventId}/requests?order=&status=&limit=&cursor=.
func (s *Server) listEventRequests(r *http.Request, eventID string, _ Principal) (PageView, error) {
	q, limit, err := queryWithInt(r, "limit")
	if err != nil {
		return PageView{}, err
	}
	opts := eventListOptions(q, limit)
	// An unknown event would list as empty; say 404 instead. Only the first page
	// pays for the check: a cursor was handed out for an event that exists.
	if opts.Cursor == "" {
		if _, err := s.client.GetEvent(r.Context(), eventID); err != nil {
			return PageView{}, err
		}
	}
	page, err := s.client.ListEventRequests(r.Context(), eventID, opts)
	if err != nil {
		return PageView{}, err
	}
	return newPageView(page, true, s.now()), nil
}

// eventStats is GET /admin/events/{eventId}/stats.
func (s *Server) eventStats(r *http.Request, eventID string, _ Principal) (StatsView, error) {
	st, err := s.client.EventStats(r.Context(), eventID)
	if err != nil {
		return StatsView{}, err
	}
	return NewStatsView(st), nil
}

// draw is POST /admin/events/{eventId}/draw: runs (or resumes, or repeats) the draw
// and answers with the revealed record and the winners (DrawResultView); of a
// FIRST_COME event with a pre-queue, serves the pre-queue and answers with its
// record, winners and order (PrequeueServeView).
func (s *Server) draw(r *http.Request, eventID string, _ Principal) (any, error) {
	if e, err := s.client.GetEvent(r.Context(), eventID); err == nil && e.EventType == asyncevent.FirstCome && e.PrequeueOpensAt != 0 {
		res, err := s.client.ServePrequeue(r.Context(), eventID)
		if err != nil {
			return nil, err
		}
		return NewPrequeueServeView(res), nil
	}
	res, err := s.client.Draw(r.Context(), eventID)
	if err != nil {
		return nil, err
	}
	return NewDrawResultView(res), nil
}

// verifyDraw is GET /admin/events/{eventId}/draw/verify: 200 whether or not the draw
// checks out; ok and problems say which.
func (s *Server) verifyDraw(r *http.Request, eventID string, _ Principal) (VerificationView, error) {
	if e, err := s.client.GetEvent(r.Context(), eventID); err == nil && e.EventType == asyncevent.FirstCome && e.PrequeueOpensAt != 0 {
		v, err := s.client.VerifyPrequeue(r.Context(), eventID)
		if err != nil {
			return VerificationView{}, err
		}
		return NewPrequeueVerificationView(v), nil
	}
	v, err := s.client.VerifyDraw(r.Context(), eventID)
	if err != nil {
		return VerificationView{}, err
	}
	return NewVerificationView(v), nil
}

// getRequest is GET /admin/requests/{requestId}: any request, with the operator's
// fields.
func (s *Server) getRequest(r *http.Request, requestID string, _ Principal) (RequestView, error) {
	req, err := s.readRequest(r.Context(), requestID)
	if err != nil {
		return RequestView{}, err
	}
	return newRequestView(req, true, s.now()), nil
}

// statusLogs is GET /admin/requests/{requestId}/logs: the request's transitions,
// oldest first (empty when the client runs without Options.StatusLog).
func (s *Server) statusLogs(r *http.Request, requestID string, _ Principal) (StatusLogsView, error) {
	if _, err := s.readRequest(r.Context(), requestID); err != nil {
		return StatusLogsView{}, err
	}
	logs, err := s.client.ListStatusLogs(r.Context(), requestID)
	if err != nil {
		return StatusLogsView{}, err
	}
	return newStatusLogsView(requestID, logs), nil
}

// requestInfo is what the access log learns about a request while it runs.
type requestInfo struct {
	instance string // urn:uuid:…, also the problem's instance
	pattern  string // the route's pattern; empty when none matched
	userID   string // the token's sub, once authenticated
}

type infoKey struct{}

func infoFrom(ctx context.Context) *requestInfo {
	info, _ := ctx.Value(infoKey{}).(*requestInfo)
	return info
}

// statusRecorder remembers the status and size of a response.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (s *statusRecorder) WriteHeader(status int) {
	if s.status == 0 {
		s.status = status
	}
	s.ResponseWriter.WriteHeader(status)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(b)
	s.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// observe writes one access log line per request (method, route pattern, status,
// duration, userId) and turns a panic into a 500.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &requestInfo{instance: "urn:uuid:" + uuid.NewString()}
		r = r.WithContext(context.WithValue(r.Context(), infoKey{}, info))
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.logger.LogAttrs(r.Context(), slog.LevelError, "panic", slog.String("instance", info.instance), slog.Any("panic", v))
				if rec.status == 0 {
					s.WriteError(rec, r, fmt.Errorf("panic: %v", v))
				}
			}
			if rec.status == 0 {
				rec.status = http.StatusOK // nothing written: net/http sends 200
			}
			level := slog.LevelInfo
			if rec.status >= 500 {
				level = slog.LevelWarn
			}
			pattern := info.pattern
			if pattern == "" {
				pattern = "-"
			}
			s.logger.LogAttrs(r.Context(), level, "http",
				slog.String("method", r.Method),
				slog.String("pattern", pattern),
				slog.Int("status", rec.status),
				slog.Duration("duration", time.Since(start)),
				slog.String("userId", info.userID),
				slog.Int64("bytes", rec.bytes),
				slog.String("instance", info.instance),
			)
		}()
		next.ServeHTTP(rec, r)
	})
}

// eventListOptions reads a listing's order (ascending unless asked), status filter
// and cursor from the query; the caller checks them.
func eventListOptions(q url.Values, limit int) asyncevent.EventListOptions {
	opts := asyncevent.EventListOptions{
		PageOptions: asyncevent.PageOptions{Limit: limit, Cursor: q.Get("cursor")},
		Order:       asyncevent.Order(q.Get("order")),
		Status:      asyncevent.Status(q.Get("status")),
	}
	if opts.Order == "" {
		opts.Order = asyncevent.Ascending
	}
	return opts
}

// spanMethod is the method of a span's name: one of HTTP's, or HTTP for any other (a
// made-up method must not make a span name of its own).
func spanMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "HTTP"
}

// routeOf is the pattern of the route r is for (the span's name: the route, not the
// path with its IDs), or "unknown route".
func routeOf(mux *http.ServeMux, r *http.Request) string {
	if _, pattern := mux.Handler(r); pattern != "" {
		if _, path, ok := strings.Cut(pattern, " "); ok {
			return path
		}
		return pattern
	}
	return "unknown route"
}
