package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/asyncevent/asyncevent"
)

// The routes of holds and the waitlist (asyncevent.EventSettings.HoldFor): the paying
// service confirms a HELD request, its user or an admin releases a HELD or
// WAITLISTED one, and an admin runs a pass of an event's hold sweep. A confirm or a
// release whose condition was lost is 409 status_conflict with the request as it
// is, and wrote nothing.

// confirm is POST /requests/{requestId}/confirm (asyncevent.Client.Confirm): the
// service that took the payment makes the HELD request SUCCEEDED. It needs the admin
// role: payment is taken server side, never confirmed by the user's own token, and
// the API has no narrower role for a service. 200 with the request when applied,
// 409 status_conflict when the hold ran out or ended first (the payment must then
// be refunded) or the request was not HELD, 404 for an unknown request.
func (s *Server) confirm(r *http.Request, requestID string, p Principal) (RequestView, error) {
	t, err := s.client.Confirm(r.Context(), requestID)
	if errors.Is(err, asyncevent.ErrNotFound) {
		return RequestView{}, requestNotFound(requestID)
	}
	if err != nil {
		return RequestView{}, err
	}
	return s.answerTransition(p, requestID, t, confirmRefusal)
}

// release is POST /requests/{requestId}/release (asyncevent.Client.Release): the
// request's own user, or an admin, gives up a HELD request's seat (it goes to the
// waitlist) or a WAITLISTED request's place. Another user's request is 404, exactly
// as a missing one, as GET /requests/{requestId} answers. 200 with the request when
// applied, 409 status_conflict when it was in another status.
func (s *Server) release(r *http.Request, requestID string, p Principal) (RequestView, error) {
	req, err := s.readRequest(r.Context(), requestID)
	switch {
	case err != nil:
		return RequestView{}, err
	case req.UserID != p.UserID && !p.IsAdmin():
		return RequestView{}, requestNotFound(requestID)
	}
	t, err := s.client.Release(r.Context(), requestID)
	if errors.Is(err, asyncevent.ErrNotFound) {
		return RequestView{}, requestNotFound(requestID)
	}
	if err != nil {
		return RequestView{}, err
	}
	return s.answerTransition(p, requestID, t, releaseRefusal)
}

// answerTransition is the answer to a confirm or a release: 200 with the request as
// the write left it when it applied, else 409 status_conflict with the request as the
// write found it and refusal's words for it.
func (s *Server) answerTransition(p Principal, requestID string, t asyncevent.Transition,
	refusal func(*asyncevent.Request, time.Time) string) (RequestView, error) {
	now := s.now()
	if t.Current == nil {
		return RequestView{}, fmt.Errorf("%s: a write without the request", requestID)
	}
	v := newRequestView(t.Current, p.IsAdmin(), now)
	if t.Applied {
		return v, nil
	}
	e := newHTTPError(http.StatusConflict, CodeStatusConflict, refusal(t.Current, now))
	e.request = &v
	return RequestView{}, e
}

// confirmRefusal says why a confirm found req as it is.
func confirmRefusal(req *asyncevent.Request, now time.Time) string {
	switch {
	case req.Status == asyncevent.StatusHeld:
		return fmt.Sprintf("the hold of request %s ran out at %s: too late to confirm", req.RequestID, rfc3339(req.HoldExpiresAt))
	case req.ResultCode == asyncevent.ResultHoldExpired:
		return fmt.Sprintf("the hold of request %s expired at %s: too late to confirm", req.RequestID, rfc3339(req.HoldExpiresAt))
	case req.ResultCode == asyncevent.ResultReleased:
		return fmt.Sprintf("the hold of request %s was released: too late to confirm", req.RequestID)
	case req.Status == asyncevent.StatusSucceeded:
		return fmt.Sprintf("request %s is SUCCEEDED already", req.RequestID)
	}
	return fmt.Sprintf("request %s is %s, not HELD: nothing to confirm", req.RequestID, statusText(req))
}

// releaseRefusal says why a release found req as it is.
func releaseRefusal(req *asyncevent.Request, _ time.Time) string {
	return fmt.Sprintf("request %s is %s: only a HELD or WAITLISTED request can be released", req.RequestID, statusText(req))
}

// statusText is a request's status with its result code, if any.
func statusText(req *asyncevent.Request) string {
	if req.ResultCode == "" {
		return string(req.Status)
	}
	return string(req.Status) + " (" + string(req.ResultCode) + ")"
}

// rfc3339 writes a stored time as the API does.
func rfc3339(m asyncevent.EpochMillis) string { return m.Time().UTC().Format(timestampLayout) }

// sweepHolds is POST /admin/events/{eventId}/holds/sweep?maxWrites=: one pass of
// the event's hold sweep (asyncevent.Client.SweepHolds, without a sweep lease), its
// report as the answer; more: true asks for another pass. maxWrites bounds the
// requests the pass moves (default asyncevent.DefaultHoldSweepWrites). An event
// without holds is 409 no_holds.
func (s *Server) sweepHolds(r *http.Request, eventID string, _ Principal) (HoldSweepView, error) {
	_, maxWrites, err := queryWithInt(r, "maxWrites")
	if err != nil {
		return HoldSweepView{}, err
	}
	if maxWrites < 0 {
		return HoldSweepView{}, newHTTPError(http.StatusBadRequest, CodeInvalidParameter, fmt.Sprintf("maxWrites %d: want a positive number (or none)", maxWrites))
	}
	rep, err := s.client.SweepHolds(r.Context(), eventID, asyncevent.HoldSweepOptions{MaxWrites: maxWrites})
	if errors.Is(err, asyncevent.ErrInvalidOptions) {
		// The options are the defaults or a positive budget: what SweepHolds refuses
		// is the event.
		return HoldSweepView{}, newHTTPError(http.StatusConflict, CodeNoHolds, humanDetail(err))
	}
	if err != nil {
		return HoldSweepView{}, err
	}
	return NewHoldSweepView(eventID, rep), nil
}
