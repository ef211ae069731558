package httpapi

// The admin UI's side of the operator's controls and of the event list: the home
// page lists the events a page at a time, and the event page has the controls
// (close, pause or resume, move the end or a lottery's cutoff) and the audit trail.
// A control goes through the same library calls as the API's routes, its actor
// the session's admin; a refused one is shown on the event page with its reason.

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/asyncevent/asyncevent"
)

// defaultEventsPageSize is the home page's list size when the URL names none.
const defaultEventsPageSize = 20

// eventListPage is one page of the home page's event list.
type eventListPage struct {
	Rows      []eventRow
	FirstPage bool
	FirstURL  string
	NextURL   string // empty on the last page
}

// eventRow is one event of the list.
type eventRow struct {
	E     asyncevent.EventConfig
	State asyncevent.EventState
	Seats string // FIRST_COME: "12 / 50", the seats left of the capacity
	Full  bool   // FIRST_COME: no seat left
}

// renderHome renders the home page with status: a page of the event list (limit
// and cursor from q), and the create form as form with createError, if any.
func (u *adminUI) renderHome(w http.ResponseWriter, r *http.Request, sess *uiSession, q url.Values, status int, form createForm, createError string) error {
	limit, err := queryInt(q, "limit")
	if err != nil {
		return err
	}
	if limit == 0 {
		limit = defaultEventsPageSize
	}
	list, err := u.client.ListEvents(r.Context(), limit, q.Get("cursor"))
	if err != nil {
		return err
	}
	v := homeView{Events: eventListOf(list, limit, q.Get("cursor") == ""), Create: form, CreateError: createError}
	u.render(w, r, status, "home", page{Title: "Admin", Session: sess, Data: v})
	return nil
}

// eventListOf is the list's page of p, read with limit.
func eventListOf(p *asyncevent.EventPage, limit int, first bool) eventListPage {
	l := eventListPage{FirstPage: first, FirstURL: uiPrefix}
	base := url.Values{}
	if limit != defaultEventsPageSize {
		base.Set("limit", strconv.Itoa(limit))
		l.FirstURL += "?" + base.Encode()
	}
	if p.NextCursor != "" {
		base.Set("cursor", p.NextCursor)
		l.NextURL = uiPrefix + "?" + base.Encode()
	}
	for _, s := range p.Events {
		row := eventRow{E: s.Config, State: s.State}
		if s.SeatsLeft != nil {
			row.Seats = strconv.FormatInt(*s.SeatsLeft, 10) + " / " + strconv.FormatInt(s.Config.CapacityTotal, 10)
			row.Full = *s.SeatsLeft == 0
		}
		l.Rows = append(l.Rows, row)
	}
	return l
}

// controlsView is the event page's controls and audit trail.
type controlsView struct {
	State asyncevent.EventState
	// Ingest is whether the event takes clicks now or will (SCHEDULED, OPEN,
	// PAUSED): only then are there controls to offer.
	Ingest   bool
	Paused   bool
	Lottery  bool
	EndsAt   string // the extend forms' values: the times now, as datetime-local in UTC
	CutoffAt string
	Error    string // a refused control's reason, or a bad form's detail
	Audit    []asyncevent.AuditEntry
}

// formTimeLayout writes a time as a datetime-local input's value, in UTC.
const formTimeLayout = "2006-01-02T15:04:05"

// controlsOf reads the event's audit trail and builds its controls; refusal is a
// refused control's words.
func (u *adminUI) controlsOf(ctx context.Context, ev *asyncevent.EventConfig, refusal string) (controlsView, error) {
	trail, err := u.client.ListAudit(ctx, ev.EventID)
	if err != nil {
		return controlsView{}, err
	}
	c := controlsView{State: ev.StateAt(u.now()), Paused: ev.Paused, Lottery: ev.EventType == asyncevent.Lottery, Error: refusal, Audit: trail}
	switch c.State {
	case asyncevent.StateScheduled, asyncevent.StateOpen, asyncevent.StatePaused:
		c.Ingest = true
	}
	if ev.EndsAt != 0 {
		c.EndsAt = ev.EndsAt.Time().UTC().Format(formTimeLayout)
	}
	if ev.LotteryCutoffAt != 0 {
		c.CutoffAt = ev.LotteryCutoffAt.Time().UTC().Format(formTimeLayout)
	}
	return c, nil
}

// control is POST /admin/ui/events/{eventId}/close, /pause or /resume: action by
// the session's admin. A close must carry confirm=yes (the form's box): it cannot
// be undone.
func (u *adminUI) control(action string) uiFunc {
	return func(w http.ResponseWriter, r *http.Request, sess *uiSession) error {
		eventID, err := pathID(r, "eventId")
		if err != nil {
			return err
		}
		var up asyncevent.EventUpdate
		switch action {
		case asyncevent.ActionClose:
			if r.PostFormValue("confirm") != "yes" {
				err = newHTTPError(http.StatusBadRequest, CodeInvalidBody, "tick the box to confirm the close: it cannot be undone")
				break
			}
			up, err = u.client.CloseEvent(r.Context(), eventID, sess.UserID)
		case asyncevent.ActionPause:
			up, err = u.client.PauseEvent(r.Context(), eventID, sess.UserID)
		default:
			up, err = u.client.ResumeEvent(r.Context(), eventID, sess.UserID)
		}
		return u.answerControl(w, r, sess, eventID, up, err)
	}
}

// extend is POST /admin/ui/events/{eventId}/extend: the form's endsAt or
// lotteryCutoffAt (exactly one; RFC 3339 or a datetime-local value in UTC), as the
// API's extend route takes them.
func (u *adminUI) extend(w http.ResponseWriter, r *http.Request, sess *uiSession) error {
	eventID, err := pathID(r, "eventId")
	if err != nil {
		return err
	}
	var body extendBody
	for _, f := range []struct {
		name string
		dst  **Timestamp
	}{{"endsAt", &body.EndsAt}, {"lotteryCutoffAt", &body.LotteryCutoffAt}} {
		v := strings.TrimSpace(r.PostFormValue(f.name))
		if v == "" {
			continue
		}
		at, perr := parseFormTime(v)
		if perr != nil {
			return u.answerControl(w, r, sess, eventID, asyncevent.EventUpdate{}, formError(f.name, "a time such as 2026-05-01T09:00 (UTC) or RFC 3339", v))
		}
		ts := Timestamp(asyncevent.MillisOf(at))
		*f.dst = &ts
	}
	up, err := u.srv.extend(r.Context(), eventID, sess.UserID, body)
	return u.answerControl(w, r, sess, eventID, up, err)
}

// answerControl answers a control's form: applied, back to the event page (a GET,
// so a reload does not post again); refused or bad, the event page with the reason
// beside the controls and the status the API would answer with. An unknown event
// is the error page.
func (u *adminUI) answerControl(w http.ResponseWriter, r *http.Request, sess *uiSession, eventID string, up asyncevent.EventUpdate, err error) error {
	if err != nil {
		p, _, internal := problemFor(err)
		if internal || p.Status == http.StatusNotFound {
			return err
		}
		return u.renderEvent(w, r, sess, eventID, url.Values{}, p.Status, eventNotice{Control: p.Detail})
	}
	if !up.Applied {
		return u.renderEvent(w, r, sess, eventID, url.Values{}, http.StatusConflict, eventNotice{Control: up.Reason})
	}
	http.Redirect(w, r, eventURL(eventID)+"#controls", http.StatusSeeOther)
	return nil
}
