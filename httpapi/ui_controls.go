package httpapi

// The admin UI's side of the operator's controls and of the event list: the home
// page lists the events a page at a time, the event page has the controls (close,
// pause or resume, move the end or a lottery's cutoff, add seats) and the audit
// trail, and the page of a SUCCEEDED first-come request has its cancel. A control
// goes through the same library calls as the API's routes, its actor the session's
// admin; a refused one is shown on the page of its form with its reason.

import (
	"context"
	"errors"
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
	E        asyncevent.Event
	State    asyncevent.EventState
	Seats    string // FIRST_COME: "12 / 50", the seats left of the capacity
	Full     bool   // FIRST_COME: no seat left
	Requests string // the event's requests, counted at most liveCountTTL ago; "?" when the count failed
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
	list, err := u.client.ListEvents(r.Context(), asyncevent.PageOptions{Limit: limit, Cursor: q.Get("cursor")})
	if err != nil {
		return err
	}
	events := eventListOf(list, limit, q.Get("cursor") == "")
	for i := range events.Rows {
		row := &events.Rows[i]
		row.Requests = "?"
		if n, ok := u.counts.get(r.Context(), u.client, &row.E, row.State, u.now()); ok {
			row.Requests = strconv.Itoa(n)
		}
	}
	v := homeView{Events: events, Create: form, CreateError: createError}
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
		row := eventRow{E: s.Event, State: s.State}
		if s.SeatsLeft != nil {
			row.Seats = strconv.FormatInt(*s.SeatsLeft, 10) + " / " + strconv.FormatInt(s.Event.CapacityTotal, 10)
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

	// AddSeats is whether the event takes seats: a FIRST_COME event whose ingest is
	// not over. Capacity is its seats (capacityTotal, the pool's included); Shards
	// numbers its capacity shards when it has more than one, for the form's choice.
	AddSeats bool
	Capacity int64
	Shards   []int
}

// formTimeLayout writes a time as a datetime-local input's value, in UTC.
const formTimeLayout = "2006-01-02T15:04:05"

// controlsOf reads the event's audit trail and builds its controls; refusal is a
// refused control's words.
func (u *adminUI) controlsOf(ctx context.Context, ev *asyncevent.Event, refusal string) (controlsView, error) {
	trail, err := u.client.ListAudit(ctx, ev.EventID)
	if err != nil {
		return controlsView{}, err
	}
	c := controlsView{State: ev.StateAt(asyncevent.MillisOf(u.now())), Paused: ev.Paused, Lottery: ev.EventType == asyncevent.Lottery, Error: refusal, Audit: trail}
	switch c.State {
	case asyncevent.StateScheduled, asyncevent.StateOpen, asyncevent.StatePaused:
		c.Ingest = true
	}
	if c.Ingest && ev.EventType == asyncevent.FirstCome {
		c.AddSeats, c.Capacity = true, ev.CapacityTotal
		if ev.CapacityShards > 1 {
			for i := range ev.CapacityShards {
				c.Shards = append(c.Shards, i)
			}
		}
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
func (u *adminUI) control(action asyncevent.Action) uiFunc {
	return func(w http.ResponseWriter, r *http.Request, sess *uiSession) error {
		eventID, err := pathID(r, "eventId")
		if err != nil {
			return err
		}
		var up asyncevent.EventUpdate
		in := asyncevent.ControlInput{Actor: sess.UserID}
		switch action {
		case asyncevent.ActionClose:
			if err = confirmed(r, "close"); err != nil {
				break
			}
			up, err = u.client.CloseEvent(r.Context(), eventID, in)
		case asyncevent.ActionPause:
			up, err = u.client.PauseEvent(r.Context(), eventID, in)
		default:
			up, err = u.client.ResumeEvent(r.Context(), eventID, in)
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

// confirmed checks the form's box (confirm=yes) of a control that cannot be undone.
func confirmed(r *http.Request, what string) error {
	if r.PostFormValue("confirm") != "yes" {
		return newHTTPError(http.StatusBadRequest, CodeInvalidBody, "tick the box to confirm the "+what+": it cannot be undone")
	}
	return nil
}

// addSeats is POST /admin/ui/events/{eventId}/capacity: the form's seats and
// optional shard, as the API's capacity route takes them.
func (u *adminUI) addSeats(w http.ResponseWriter, r *http.Request, sess *uiSession) error {
	eventID, err := pathID(r, "eventId")
	if err != nil {
		return err
	}
	body, err := capacityForm(r)
	if err != nil {
		return u.answerControl(w, r, sess, eventID, asyncevent.EventUpdate{}, err)
	}
	up, err := u.srv.addCapacity(r.Context(), eventID, sess.UserID, body)
	return u.answerControl(w, r, sess, eventID, up, err)
}

// capacityForm reads the add-seats form: seats, and shard (empty: spread the seats
// over the shards that hold seats).
func capacityForm(r *http.Request) (capacityBody, error) {
	var body capacityBody
	if v := strings.TrimSpace(r.PostFormValue("seats")); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return body, formError("seats", "a whole number of seats", v)
		}
		body.Seats = &n
	}
	if v := strings.TrimSpace(r.PostFormValue("shard")); v != "" {
		k, err := strconv.Atoi(v)
		if err != nil {
			return body, formError("shard", "the number of a capacity shard", v)
		}
		body.Shard = &k
	}
	return body, nil
}

// cancel is POST /admin/ui/requests/{requestId}/cancel: the request's seat taken
// back by the session's admin, as the API's cancel route does. It must carry
// confirm=yes (the form's box). Refused or bad, it is the request's page with the
// reason.
func (u *adminUI) cancel(w http.ResponseWriter, r *http.Request, sess *uiSession) error {
	requestID, err := pathID(r, "requestId")
	if err != nil {
		return err
	}
	var up asyncevent.EventUpdate
	if err = confirmed(r, "cancel"); err == nil {
		up, err = u.srv.cancel(r.Context(), requestID, asyncevent.CancelRequestInput{Actor: sess.UserID})
	}
	return answerForm(w, r, up, err, func(status int, reason string) error {
		return u.renderRequest(w, r, sess, requestID, status, reason)
	})
}

// answerControl answers a control's form on the event page: refused or bad, the
// event page with the reason beside the controls (answerForm).
func (u *adminUI) answerControl(w http.ResponseWriter, r *http.Request, sess *uiSession, eventID string, up asyncevent.EventUpdate, err error) error {
	return answerForm(w, r, up, err, func(status int, reason string) error {
		return u.renderEvent(w, r, sess, eventID, url.Values{}, status, eventNotice{Control: reason})
	})
}

// answerForm answers a control's form: applied, to the event page (a GET, so a
// reload does not post again), where its state, seats and audit trail show the
// control; refused or bad, refused(status, reason) shows the form's page again with
// the reason and the status the API would answer with. An unknown event or request
// is the error page.
func answerForm(w http.ResponseWriter, r *http.Request, up asyncevent.EventUpdate, err error, refused func(status int, reason string) error) error {
	if err != nil {
		p, _, internal := problemFor(err)
		if internal || p.Status == http.StatusNotFound {
			return err
		}
		return refused(p.Status, p.Detail)
	}
	if !up.Applied {
		return refused(http.StatusConflict, up.Reason)
	}
	if up.Event == nil {
		return errors.New("a control applied without its event")
	}
	http.Redirect(w, r, eventURL(up.Event.EventID)+"#controls", http.StatusSeeOther)
	return nil
}
