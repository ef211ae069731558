package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/asyncevent/asyncevent"
)

// The operator's controls of an event (asyncevent.Client.CloseEvent, PauseEvent,
// ResumeEvent, ExtendEvent; its seats' controls are in controls_capacity.go) and
// its audit trail. The actor of a control is the admin's token's sub. A control
// the event's state refuses is 409 control_refused with the library's reason as
// the detail and the event as it stands, and wrote nothing: neither the event nor
// its audit trail.

// controlFunc is one of the client's controls that take no argument but the actor.
type controlFunc func(ctx context.Context, eventID string, in asyncevent.ControlInput) (asyncevent.EventUpdate, error)

// control is POST /admin/events/{eventId}/close, /pause or /resume: the control do
// by the caller. 200 with the event when applied, 409 control_refused when the
// event's state refuses it, 404 for an unknown event. No body.
func (s *Server) control(do controlFunc) idFunc[EventView] {
	return func(r *http.Request, eventID string, p Principal) (EventView, error) {
		up, err := do(r.Context(), eventID, asyncevent.ControlInput{Actor: p.UserID})
		return s.answerControl(eventID, up, err)
	}
}

// extendBody is the body of POST /admin/events/{eventId}/extend: the new end, a
// LOTTERY's new entry cutoff, or a pre-queued FIRST_COME event's new start; exactly
// one.
type extendBody struct {
	EndsAt          *Timestamp `json:"endsAt"`
	LotteryCutoffAt *Timestamp `json:"lotteryCutoffAt"`
	StartsAt        *Timestamp `json:"startsAt"`
}

// target is the time the body moves (asyncevent.ActionExtendEnd, ActionExtendCutoff or
// ActionExtendStart) and where to, by actor.
func (b extendBody) target(actor string) (asyncevent.ExtendEventInput, error) {
	given := 0
	for _, t := range []*Timestamp{b.EndsAt, b.LotteryCutoffAt, b.StartsAt} {
		if t != nil {
			given++
		}
	}
	switch {
	case given != 1:
	case b.EndsAt != nil:
		return asyncevent.ExtendEventInput{Actor: actor, Action: asyncevent.ActionExtendEnd, To: asyncevent.EpochMillis(*b.EndsAt)}, nil
	case b.LotteryCutoffAt != nil:
		return asyncevent.ExtendEventInput{Actor: actor, Action: asyncevent.ActionExtendCutoff, To: asyncevent.EpochMillis(*b.LotteryCutoffAt)}, nil
	case b.StartsAt != nil:
		return asyncevent.ExtendEventInput{Actor: actor, Action: asyncevent.ActionExtendStart, To: asyncevent.EpochMillis(*b.StartsAt)}, nil
	}
	return asyncevent.ExtendEventInput{}, newHTTPError(http.StatusBadRequest, CodeInvalidBody, "give endsAt, lotteryCutoffAt or startsAt (of a pre-queued event), exactly one: the time to move, and where to")
}

// extendEvent is POST /admin/events/{eventId}/extend: moves the event's end, or a
// LOTTERY's entry cutoff, later (asyncevent.Client.ExtendEvent). 200 with the event
// when applied; 409 control_refused when the time has passed, is less than 10
// seconds away or not before the new one, when a cutoff would pass the end or the
// draw began, or for the cutoff of a FIRST_COME event; 400 for a bad body.
func (s *Server) extendEvent(r *http.Request, eventID string, p Principal, body extendBody) (EventView, error) {
	up, err := s.extend(r.Context(), eventID, p.UserID, body)
	return s.answerControl(eventID, up, err)
}

// extend applies body to the event, by actor. A time ExtendEvent cannot store is
// the body's fault: 400 invalid_body.
func (s *Server) extend(ctx context.Context, eventID, actor string, body extendBody) (asyncevent.EventUpdate, error) {
	in, err := body.target(actor)
	if err != nil {
		return asyncevent.EventUpdate{}, err
	}
	up, err := s.client.ExtendEvent(ctx, eventID, in)
	if errors.Is(err, asyncevent.ErrInvalidOptions) {
		return up, newHTTPError(http.StatusBadRequest, CodeInvalidBody, humanDetail(err))
	}
	return up, err
}

// answerControl is the answer to a control of eventID that returned up and err:
// err as it is, else 200 with the event as it now is, or 409 control_refused with
// the reason and the event as the refusal found it.
func (s *Server) answerControl(eventID string, up asyncevent.EventUpdate, err error) (EventView, error) {
	if err != nil {
		return EventView{}, err
	}
	return s.controlled("control of "+eventID, up)
}

// controlled is the event as a control (what, for an error) left it, or, refused,
// the 409 control_refused (an *httpError) carrying the reason and the event as the
// refusal found it.
func (s *Server) controlled(what string, up asyncevent.EventUpdate) (EventView, error) {
	if up.Event == nil {
		return EventView{}, fmt.Errorf("%s: an outcome without the event", what)
	}
	v := NewEventView(up.Event, s.now())
	if !up.Applied {
		e := newHTTPError(http.StatusConflict, CodeControlRefused, up.Reason)
		e.event = &v
		return v, e
	}
	return v, nil
}

// AuditEntryView is one control of an event: when, who (an admin's sub), what
// (CLOSE, PAUSE, RESUME, EXTEND_END, EXTEND_CUTOFF, EXTEND_START, ADD_CAPACITY,
// CANCEL) and its detail: for a move, to when; for seats added, how many and where;
// for a cancel, the request.
type AuditEntryView struct {
	At     Timestamp         `json:"at"`
	Actor  string            `json:"actor"`
	Action asyncevent.Action `json:"action"`
	Detail string            `json:"detail,omitempty"`
}

// AuditView is GET /admin/events/{eventId}/audit: the event's audit trail, oldest
// first.
type AuditView struct {
	EventID string           `json:"eventId"`
	Entries []AuditEntryView `json:"entries"`
}

func newAuditView(eventID string, trail []asyncevent.AuditEntry) AuditView {
	v := AuditView{EventID: eventID, Entries: make([]AuditEntryView, 0, len(trail))}
	for _, a := range trail {
		v.Entries = append(v.Entries, AuditEntryView{At: Timestamp(a.At), Actor: a.Actor, Action: a.Action, Detail: a.Detail})
	}
	return v
}

// auditTrail is GET /admin/events/{eventId}/audit (asyncevent.Client.ListAudit).
// An unknown event is 404, not an empty trail.
func (s *Server) auditTrail(r *http.Request, eventID string, _ Principal) (AuditView, error) {
	if _, err := s.client.GetEvent(r.Context(), eventID); err != nil {
		return AuditView{}, err
	}
	trail, err := s.client.ListAudit(r.Context(), eventID)
	if err != nil {
		return AuditView{}, err
	}
	return newAuditView(eventID, trail), nil
}
