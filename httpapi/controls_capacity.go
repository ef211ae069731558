package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/asyncevent/asyncevent"
)

// The operator's controls of a FIRST_COME event's seats: seats added while it runs
// (asyncevent.Client.AddCapacity) and a won seat cancelled
// (asyncevent.Client.CancelRequest). Each is on the event's audit trail with the
// admin's sub; refused, each is 409 control_refused with nothing written, as the
// event's other controls (under an Idempotency-Key, the refusal itself is recorded on
// the key's marker, so that a call again under it gets the same 409); a write that
// got no answer is 503 outcome_unknown. Each takes an Idempotency-Key header (the capacity route
// also an idempotencyKey body field): a call sent again under the key of one that
// applied, its answer lost, applies nothing again and answers 200 with replayed
// true (asyncevent.EventUpdate.Replayed).

// idempotencyHeader is the request header that names a control's idempotency key
// (the IETF draft's Idempotency-Key; its quoted form, "key", is read too).
const idempotencyHeader = "Idempotency-Key"

// idempotencyKey is the key of r's control: its Idempotency-Key header, or the
// body's field (""), which must agree when both are given. "" when neither is: the
// library then keeps the call's own attempts apart, not a client's retries.
func idempotencyKey(r *http.Request, body string) (string, error) {
	header := strings.TrimSpace(r.Header.Get(idempotencyHeader))
	if len(header) >= 2 && strings.HasPrefix(header, `"`) && strings.HasSuffix(header, `"`) {
		header = header[1 : len(header)-1]
	}
	switch {
	case header != "" && body != "" && header != body:
		return "", newHTTPError(http.StatusBadRequest, CodeInvalidBody,
			fmt.Sprintf("the %s header (%q) and the body's idempotencyKey (%q) differ: give one, or the same", idempotencyHeader, truncate(header, 40), truncate(body, 40)))
	case header != "":
		return header, nil
	}
	return body, nil
}

// capacityBody is the body of POST /admin/events/{eventId}/capacity: the seats to
// add and, optionally, the capacity shard to put them on and the add's idempotency
// key (or the Idempotency-Key header).
type capacityBody struct {
	Seats          *int64 `json:"seats"`
	Shard          *int   `json:"shard"`
	IdempotencyKey string `json:"idempotencyKey"`
}

// input is AddCapacity's input by actor: an absent shard spreads the seats over the
// shards that hold seats.
func (b capacityBody) input(actor string) (asyncevent.AddCapacityInput, error) {
	if b.Seats == nil {
		return asyncevent.AddCapacityInput{}, newHTTPError(http.StatusBadRequest, CodeInvalidBody, "give seats: the number of seats to add")
	}
	if b.Shard != nil && *b.Shard < 0 {
		return asyncevent.AddCapacityInput{}, newHTTPError(http.StatusBadRequest, CodeInvalidBody,
			fmt.Sprintf("shard %d: a capacity shard is 0 or more; leave shard out to spread the seats over the shards that hold seats", *b.Shard))
	}
	return asyncevent.AddCapacityInput{Seats: *b.Seats, Shard: b.Shard, Actor: actor, IdempotencyKey: b.IdempotencyKey}, nil
}

// CapacityAddedView is the answer of POST /admin/events/{eventId}/capacity: the
// event as the add left it and, when an add under the same idempotency key had
// applied before (its answer lost), replayed true: nothing was added again.
type CapacityAddedView struct {
	EventView
	Replayed bool `json:"replayed,omitempty"`
}

// addEventCapacity is POST /admin/events/{eventId}/capacity: adds seats to a
// running FIRST_COME event (asyncevent.Client.AddCapacity). 200 with the event
// when applied (replayed true when under its idempotency key it had applied
// before); 409 control_refused for a closed event, a LOTTERY, or another change of
// its seats at the same moment; 400 for a bad body (seats missing or out of the
// library's range, a shard the event does not have, an idempotency key given before
// to another add, or one that differs from the Idempotency-Key header) and 400
// invalid_id for a key that cannot be one; 404 for an unknown event.
func (s *Server) addEventCapacity(r *http.Request, eventID string, p Principal, body capacityBody) (CapacityAddedView, error) {
	key, err := idempotencyKey(r, body.IdempotencyKey)
	if err != nil {
		return CapacityAddedView{}, err
	}
	body.IdempotencyKey = key
	up, err := s.addCapacity(r.Context(), eventID, p.UserID, body)
	ev, err := s.answerControl(eventID, up, err)
	return CapacityAddedView{EventView: ev, Replayed: up.Replayed}, err
}

// addCapacity applies body to the event, by actor. Seats, a shard or a key that
// AddCapacity refuses are the body's fault: 400 invalid_body.
func (s *Server) addCapacity(ctx context.Context, eventID, actor string, body capacityBody) (asyncevent.EventUpdate, error) {
	in, err := body.input(actor)
	if err != nil {
		return asyncevent.EventUpdate{}, err
	}
	up, err := s.client.AddCapacity(ctx, eventID, in)
	if errors.Is(err, asyncevent.ErrInvalidOptions) {
		return up, newHTTPError(http.StatusBadRequest, CodeInvalidBody, s.shardDetail(ctx, eventID, in.Shard, err))
	}
	return up, err
}

// shardDetail is the words for err, AddCapacity's refusal of its arguments: when
// toShard is not one of the event's capacity shards, which ones it has.
func (s *Server) shardDetail(ctx context.Context, eventID string, shard *int, err error) string {
	if shard == nil {
		return humanDetail(err)
	}
	toShard := *shard
	ev, gerr := s.client.GetEvent(ctx, eventID)
	if gerr != nil {
		return humanDetail(err)
	}
	if shards := NewEventView(ev, s.now()).CapacityShards; toShard >= shards {
		return fmt.Sprintf("shard %d: event %s has %d capacity shard(s), 0 to %d; leave shard out to spread the seats over the shards that hold seats",
			toShard, eventID, shards, shards-1)
	}
	return humanDetail(err)
}

// CancellationView is the answer of POST /admin/requests/{requestId}/cancel: the
// request as it now stands, and its event; replayed when under its Idempotency-Key
// the cancel had applied before (its answer lost).
type CancellationView struct {
	Request  RequestView `json:"request"`
	Event    EventView   `json:"event"`
	Replayed bool        `json:"replayed,omitempty"`
}

// cancelRequest is POST /admin/requests/{requestId}/cancel: a SUCCEEDED FIRST_COME
// request ends REJECTED_CANCELLED and its seat goes back to the event
// (asyncevent.Client.CancelRequest). No body; an optional Idempotency-Key header.
// 200 with the request, read after the write (eventually consistent, as a
// confirm's), and its event when applied (replayed true when under its key it had
// applied before); 409 control_refused with the request and the event when the
// request holds no seat to cancel (another status, cancelled already under another
// key or none, a LOTTERY's, a HELD or WAITLISTED one, which a release ends); 404 for
// an unknown request; 400 for a key given before to another cancel.
func (s *Server) cancelRequest(r *http.Request, requestID string, p Principal) (CancellationView, error) {
	key, err := idempotencyKey(r, "")
	if err != nil {
		return CancellationView{}, err
	}
	up, err := s.cancel(r.Context(), requestID, asyncevent.CancelRequestInput{Actor: p.UserID, IdempotencyKey: key})
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
	return CancellationView{Request: rv, Event: ev, Replayed: up.Replayed}, nil
}

// cancel cancels the request's seat, as in says; an unknown request is 404
// request_not_found (a key given before to another cancel is ErrInvalidOptions: 400
// invalid_parameter).
func (s *Server) cancel(ctx context.Context, requestID string, in asyncevent.CancelRequestInput) (asyncevent.EventUpdate, error) {
	up, err := s.client.CancelRequest(ctx, requestID, in)
	if errors.Is(err, asyncevent.ErrNotFound) {
		return up, requestNotFound(requestID)
	}
	return up, err
}
