package clikit

import (
	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/httpapi"
)

// The outputs of the CLI that carry stored items. Where the HTTP API has a view of the
// same result, the output is that view (embedded: its fields are the output's) with
// the items beside it; an item takes the place of a view's field of the same name
// (in encoding/json the shallower field wins), as the CLI printed the item under that
// name before the view had it.

// Row is an item as the table stores it, as the CLI prints it: its attributes under
// their stored names, times in epoch milliseconds (ttl in epoch seconds), with the
// item's own bookkeeping (entityType, ttl, the lease, the seat's place, the pool
// version…) read again from the table. The HTTP API shows views, never rows: where a
// row and a view share a name (requestedAt, updatedAt…) their forms differ, so a
// request, a status log entry or an audit entry is printed as its row alone.
type Row = map[string]any

// EventItems is an event as event create and event get print it: the HTTP API's view
// (httpapi.EventView) with its items, Config its CONFIG item and, of event get,
// Capacity its CAPACITY item (FIRST_COME: of an event of several capacity shards,
// their sum) or Draw its DRAW item (LOTTERY), in the place of the view's capacity and
// draw.
type EventItems struct {
	httpapi.EventView
	Config   Row `json:"config"`
	Capacity Row `json:"capacity,omitempty"`
	Draw     Row `json:"draw,omitempty"`
}

// EventSummary is one event of event list: the HTTP API's (httpapi.EventSummaryView)
// with its CONFIG item.
type EventSummary struct {
	httpapi.EventSummaryView
	Config Row `json:"config"`
}

// EventPage is a page of event list, newest first, as httpapi.EventListView;
// NextCursor, when present, continues it.
type EventPage struct {
	Events     []EventSummary `json:"events"`
	NextCursor string         `json:"nextCursor,omitempty"`
}

// Control is the outcome of an operator's control (event close, pause, resume,
// extend, add-capacity; request cancel): the HTTP API's view of the event after it,
// or as the refusal found it (the 200's body, or the 409's event), and the control's
// own: Action as the audit trail names it (CLOSE, PAUSE, RESUME, EXTEND_END,
// EXTEND_CUTOFF, EXTEND_START, ADD_CAPACITY, CANCEL), whether it applied, Reason why
// not, Replayed when it had applied before under the run's idempotency key (its
// answer lost; nothing written again); Config the event's CONFIG item; of
// ADD_CAPACITY applied, Capacity its CAPACITY item after it (its shards summed, as
// event get shows it); of CANCEL, the request, after it or as the refusal found it.
type Control struct {
	httpapi.EventView
	Action    asyncevent.Action `json:"action"`
	Applied   bool              `json:"applied"`
	Reason    string            `json:"reason,omitempty"`
	Replayed  bool              `json:"replayed,omitempty"`
	Config    Row               `json:"config,omitempty"`
	Capacity  Row               `json:"capacity,omitempty"`
	RequestID string            `json:"requestId,omitempty"`
	Request   Row               `json:"request,omitempty"`
}

// Transition is the outcome of request confirm or request release: Action (confirm,
// release), whether it applied, the request's status after it (the one the action
// leaves, when applied) and, when it was not applied, the request as found. The HTTP
// API answers these with the request read after the write, or a 409 problem: no view
// of this result.
type Transition struct {
	RequestID  string `json:"requestId"`
	Action     string `json:"action"`
	Applied    bool   `json:"applied"`
	Status     string `json:"status"`
	ResultCode string `json:"resultCode,omitempty"`
	Request    Row    `json:"request,omitempty"`
}

// RequestPage is a page of requests list: the requests' rows, and NextCursor, when
// present, to continue it. (httpapi.PageView holds views of the requests.)
type RequestPage struct {
	Requests   []Row  `json:"requests"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// Draw is a lottery's draw as the draw command prints it: the HTTP API's answer
// (httpapi.DrawResultView: the record, the winners) with Item, the DRAW item.
type Draw struct {
	httpapi.DrawResultView
	Item Row `json:"draw"`
}

// PrequeueServe is a pre-queue's serve as the draw command prints it: the HTTP API's
// answer (httpapi.PrequeueServeView: the record, the winners, the order) with Item,
// the DRAW item.
type PrequeueServe struct {
	httpapi.PrequeueServeView
	Item Row `json:"draw"`
}
