package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/asyncevent/asyncevent"
)

// The operator's controls of a FIRST_COME event's seats: seats added while it runs
// (asyncevent.Client.AddCapacity) and a won seat cancelled
// (asyncevent.Client.CancelRequest). Each is on the event's audit trail with the
// admin's sub; refused, each is 409 control_refused with nothing written, as the
// event's other controls.

// capacityBody is the body of POST /admin/events/{eventId}/capacity: the seats to
// add and, optionally, the capacity shard to put them on.
type capacityBody struct {
	Seats *int64 `json:"seats"`
	Shard *int   `json:"shard"`
}

// args are AddCapacity's seats and toShard: an absent shard is -1, spread over the
// shards that hold seats.
func (b capacityBody) args() (seats int64, toShard int, err error) {
	if b.Seats == nil {
		return 0, 0, newHTTPError(http.StatusBadRequest, CodeInvalidBody, "give seats: the number of seats to add")
	}
	if b.Shard == nil {
		return *b.Seats, -1, nil
	}
	if *b.Shard < 0 {
		return 0, 0, newHTTPError(http.StatusBadRequest, CodeInvalidBody,
			fmt.Sprintf("shard %d: a capacity shard is 0 or more; leave shard out to spread the seats over the shards that hold seats", *b.Shard))
	}
	return *b.Seats, *b.Shard, nil
}

// addEventCapacity is POST /admin/events/{eventId}/capacity: adds seats to a
// running FIRST_COME event (asyncevent.Client.AddCapacity). 200 with the event
// when applied; 409 control_refused for a closed event, a LOTTERY, or another
// change of its seats at the same moment; 400 for a bad body (seats missing or out
// of the library's range, a shard the event does not have); 404 for an unknown
// event.
func (s *Server) addEventCapacity(r *http.Request, eventID string, p Principal, body capacityBody) (EventView, error) {
	up, err := s.addCapacity(r.Context(), eventID, p.UserID, body)
	return s.answerControl(eventID, up, err)
}

// addCapacity applies body to the event, by actor. Seats or a shard that
// AddCapacity refuses are the body's fault: 400 invalid_body.
func (s *Server) addCapacity(ctx context.Context, eventID, actor string, body capacityBody) (asyncevent.EventUpdate, error) {
	seats, toShard, err := body.args()
	if err != nil {
		return asyncevent.EventUpdate{}, err
	}
	up, err := s.client.AddCapacity(ctx, eventID, seats, toShard, actor)
	if errors.Is(err, asyncevent.ErrInvalidOptions) {
		return up, newHTTPError(http.StatusBadRequest, CodeInvalidBody, s.shardDetail(ctx, eventID, toShard, err))
	}
	return up, err
}

// shardDetail is the words for err, AddCapacity's refusal of its arguments: when
// toShard is not one of the event's capacity shards, which ones it has.
func (s *Server) shardDetail(ctx context.Context, eventID string, toShard int, err error) string {
	if toShard < 0 {
		return humanDetail(err)
	}
	ev, gerr := s.client.GetEvent(ctx, eventID)
	if gerr != nil {
		return humanDetail(err)
	}
	if shards := newEventView(ev, s.now()).CapacityShards; toShard >= shards {
		return fmt.Sprintf("shard %d: event %s has %d capacity shard(s), 0 to %d; leave shard out to spread the seats over the shards that hold seats",
			toShard, eventID, shards, shards-1)
	}
	return humanDetail(err)
}

// CancellationView is the answer of POST /admin/requests/{requestId}/cancel: the
// request as it now stands, and its event.
type CancellationView struct {
	Request RequestView `json:"request"`
	Event   EventView   `json:"event"`
}

// cancelRequest is POST /admin/requests/{requestId}/cancel: a SUCCEEDED FIRST_COME
// request ends REJECTED_CANCELLED and its seat goes back to the event
// (asyncevent.Client.CancelRequest). No body. 200 with the request, read after the
// write (eventually consistent, as a confirm's), and its event when applied; 409
// control_refused with the request and the event when the request holds no seat
// to cancel (another status, a LOTTERY's, a HELD or WAITLISTED one, which a release
// ends); 404 for an unknown request.
func (s *Server) cancelRequest(r *http.Request, requestID string, p Principal) (CancellationView, error) {
	up, err := s.cancel(r.Context(), requestID, p.UserID)
	if err != nil {
		return CancellationView{}, err
	}
	ev, outcome := s.controlled("cancel of "+requestID, up)
	var refused *httpError
	if outcome != nil && !errors.As(outcome, &refused) {
		return CancellationView{}, outcome
	}
	req := up.Request // as the cancel left it, or as its refusal found it
	if req == nil {
		return CancellationView{}, fmt.Errorf("cancel of %s: no request in the answer", requestID)
	}
	rv := newRequestView(req, true, s.now())
	if refused != nil {
		refused.request = &rv
		return CancellationView{}, refused
	}
	return CancellationView{Request: rv, Event: ev}, nil
}

// cancel cancels the request's seat, by actor; an unknown request is 404
// request_not_found.
func (s *Server) cancel(ctx context.Context, requestID, actor string) (asyncevent.EventUpdate, error) {
	up, err := s.client.CancelRequest(ctx, requestID, actor)
	if errors.Is(err, asyncevent.ErrNotFound) {
		return up, requestNotFound(requestID)
	}
	return up, err
}
