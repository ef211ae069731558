package httpapi

import (
	"net/http"
	"time"

	"github.com/asyncevent/asyncevent"
)

// EventSummaryView is one event of GET /admin/events: the event as GET
// /admin/events/{eventId} shows it, without its capacity or draw, and the seats
// left of a FIRST_COME event (those its capacity shards and its pool hold; absent
// for a LOTTERY). The list counts no requests: that would read each event's requests.
type EventSummaryView struct {
	EventView
	SeatsLeft *int64 `json:"seatsLeft,omitempty"`
}

// EventListView is one page of the event list, newest first; NextCursor, when
// present, continues it.
type EventListView struct {
	Events     []EventSummaryView `json:"events"`
	NextCursor string             `json:"nextCursor,omitempty"`
}

// NewEventListView is the view of p at now.
func NewEventListView(p *asyncevent.EventPage, now time.Time) EventListView {
	v := EventListView{Events: make([]EventSummaryView, 0, len(p.Events)), NextCursor: p.NextCursor}
	for i := range p.Events {
		e := &p.Events[i]
		v.Events = append(v.Events, EventSummaryView{EventView: NewEventView(&e.Event, now), SeatsLeft: e.SeatsLeft})
	}
	return v
}

// listEvents is GET /admin/events?limit=&cursor= (asyncevent.Client.ListEvents):
// the events newest first, 20 a page by default, at most 100.
func (s *Server) listEvents(r *http.Request, _ Principal) (EventListView, error) {
	q, limit, err := queryWithInt(r, "limit")
	if err != nil {
		return EventListView{}, err
	}
	page, err := s.client.ListEvents(r.Context(), asyncevent.PageOptions{Limit: limit, Cursor: q.Get("cursor")})
	if err != nil {
		return EventListView{}, err
	}
	return NewEventListView(page, s.now()), nil
}
