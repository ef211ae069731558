package asyncevent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// EventCapacity is the EventCapacity item of a FIRST_COME event (PK EVENT#<eventId>,
// SK CAPACITY), or one of its C shards (SK CAPACITY#<shard>), whose capacities sum to
// the event's. capacityRemaining only goes down, by one per winner, under the
// condition capacityRemaining > 0, so the event has at most capacityTotal winners.
type EventCapacity struct {
	EntityType        EntityType  `dynamodbav:"entityType"` // CAPACITY
	EventID           string      `dynamodbav:"eventId"`
	CapacityTotal     int64       `dynamodbav:"capacityTotal"`
	CapacityRemaining int64       `dynamodbav:"capacityRemaining"`
	UpdatedAt         EpochMillis `dynamodbav:"updatedAt"`

	// Shards, for an event with capacity shards (EventConfig.CapacityShards > 1), are
	// its CAPACITY#<shard> items, in shard order; the fields above are then their sum
	// (UpdatedAt the latest). Not stored.
	Shards []EventCapacity `dynamodbav:"-"`
}

// The attribute names of an EventCapacity item that its rows name.
const (
	attrCapacityRemaining = "capacityRemaining"
	attrUpdatedAt         = "updatedAt"
)

type capacityItem struct {
	Key
	EventCapacity
}

// The capacity rows: a seat is spent only together with its winner.
var (
	seatLeft = expression.Name(attrCapacityRemaining).GreaterThan(expression.Value(0))

	claimSeatRow = row{
		name: "first-come capacity", method: "ClaimSeat", item: EntityCapacity, op: opUpdate, cond: &seatLeft,
		sets: []set{
			{attrCapacityRemaining, expression.Name(attrCapacityRemaining).Minus(expression.Value(1))},
			setTo(attrUpdatedAt, pNow),
		},
	}
	takeSeatRow = row{
		name: "first-come success", method: "ClaimSeat", item: EntityRequest, op: opUpdate,
		from: []leave{{status: StatusProcessing}}, guard: &leaseHeld, to: StatusSucceeded,
		sets: finalSets(UISuccess, ResultSuccess),
	}
)

// GetCapacity reads a FIRST_COME event's EventCapacity: GetItem PK EVENT#<eventId>,
// SK CAPACITY, a strongly consistent read; for an event with capacity shards, GetItem
// of each CAPACITY#<shard>, summed, with the shards in Shards. An event without one
// (unknown, or a LOTTERY) is ErrNotFound.
func (c *Client) GetCapacity(ctx context.Context, eventID string) (*EventCapacity, error) {
	if err := ValidateID("eventId", eventID); err != nil {
		return nil, err
	}
	shards, err := c.capacityShards(ctx, eventID)
	if err != nil {
		return nil, err
	}
	keys, err := capacityKeys(eventID, shards)
	if err != nil {
		return nil, err
	}
	sum := &EventCapacity{EntityType: EntityCapacity, EventID: eventID}
	for _, key := range keys {
		var item capacityItem
		found, err := c.getItem(ctx, key.Key(), true, &item)
		switch {
		case err != nil:
			return nil, fmt.Errorf("get capacity %s: %w", eventID, err)
		case !found:
			return nil, fmt.Errorf("%w: capacity of %s (%s)", ErrNotFound, eventID, key.Key().SK)
		case len(keys) == 1:
			return &item.EventCapacity, nil
		}
		sum.CapacityTotal += item.CapacityTotal
		sum.CapacityRemaining += item.CapacityRemaining
		sum.UpdatedAt = max(sum.UpdatedAt, item.UpdatedAt)
		sum.Shards = append(sum.Shards, item.EventCapacity)
	}
	return sum, nil
}

// capacityShards returns the capacity shards of an event, from the client's cache; an
// event without a config has the design's one CAPACITY item.
func (c *Client) capacityShards(ctx context.Context, eventID string) (int, error) {
	cfg, err := c.cachedEvent(ctx, eventID)
	switch {
	case errors.Is(err, ErrEventNotFound):
		return 1, nil
	case err != nil:
		return 0, err
	}
	return max(cfg.CapacityShards, 1), nil
}

// capacityItems returns the capacity items of a new FIRST_COME event: one CAPACITY
// item, or C shards holding capacityTotal ÷ C seats each, the first capacityTotal mod
// C of them one more.
func capacityItems(cfg EventConfig, now EpochMillis) []capacityItem {
	keys, _ := capacityKeys(cfg.EventID, cfg.CapacityShards) // the ID is checked
	items := make([]capacityItem, len(keys))
	n := int64(len(keys))
	for i, key := range keys {
		seats := cfg.CapacityTotal / n
		if int64(i) < cfg.CapacityTotal%n {
			seats++
		}
		items[i] = capacityItem{Key: key.Key(), EventCapacity: EventCapacity{
			EntityType: EntityCapacity, EventID: cfg.EventID,
			CapacityTotal: seats, CapacityRemaining: seats, UpdatedAt: now,
		}}
	}
	return items
}

// ClaimSeat is the "first-come capacity" and "first-come success" rows in one
// TransactWriteItems: UpdateItem PK EVENT#<eventId>, SK CAPACITY (or a CAPACITY#<shard>
// of an event with capacity shards), SET capacityRemaining = capacityRemaining - 1,
// updatedAt, condition capacityRemaining > 0; and UpdateItem PK REQ#<requestId>, SK
// META, SET status = SUCCEEDED, uiResult SUCCESS, resultCode SUCCESS, finishedAt,
// condition status = PROCESSING AND leaseOwner = lease.Owner; with the status log
// entry. A seat is therefore spent only together with a SUCCEEDED request. With
// capacity shards it starts at the shard the request ID picks and moves on, in an
// order of the request's own, while a shard is empty: a request is refused only when
// every shard is.
//
// A lost condition is not an error. When the request is not PROCESSING under this
// lease (another delivery took it over, or it is final) the Transition is not applied
// and holds the request as it is; when no seat is left it is not applied and SoldOut
// is set; in both cases nothing was written. An event without a CAPACITY item is
// ErrNoCapacity.
//
// A transaction cancelled for throughput alone, TransactionConflict on the hot
// CAPACITY item (another claim under way on it) or ThrottlingError (the CAPACITY
// key, or the request's key on an index, over its share), wrote nothing and is sent
// again as it is, after a jittered backoff (from 5 ms after a conflict, from half a
// second after a throttle, for the key to refill), at most 8 attempts in all; when
// they run out the error matches ErrThrottled, nothing was written, and the caller
// may claim again later (the Processor leaves the message for redelivery). The
// ClientRequestToken of each attempt is derived from the request, the lease, the
// capacity item and the attempt, so the SDK's retry of a call whose response was lost
// returns success rather than a lost condition (the conditions alone already keep it
// from being applied twice).
func (c *Client) ClaimSeat(ctx context.Context, ref RequestRef, lease Lease) (Transition, error) {
	return c.claimSeat(ctx, ref, lease, newSeatShards(), nil)
}

// claimSeat is ClaimSeat with what seats knows of the event's shards: it skips the
// shards found empty, tells seats of the ones it finds, and claims a shard only while
// no other claim of seats' processor is under way on it. hold, if set, is held during
// each call.
func (c *Client) claimSeat(ctx context.Context, ref RequestRef, lease Lease, seats *seatShards, hold sync.Locker) (Transition, error) {
	reqKey, err := NewRequestKey(ref.RequestID)
	if err != nil {
		return Transition{}, err
	}
	if err := ValidateID("eventId", ref.EventID); err != nil {
		return Transition{}, err
	}
	shards, err := c.capacityShards(ctx, ref.EventID)
	if err != nil {
		return Transition{}, err
	}
	keys, err := capacityKeys(ref.EventID, shards)
	if err != nil {
		return Transition{}, err
	}
	order := claimOrder(ref.RequestID, len(keys))
	for {
		shard, release, err := seats.take(ctx, ref.EventID, order, len(keys))
		if err != nil {
			return Transition{}, err
		}
		if shard < 0 {
			return Transition{SoldOut: true}, nil
		}
		t, err := c.claimSeatOn(ctx, reqKey, keys[shard], ref, lease, hold)
		release()
		if err != nil || !t.SoldOut {
			return t, err
		}
		seats.add(ref.EventID, shard, len(keys))
	}
}

// claimOrder is the order in which a request tries n capacity shards: from the shard
// its ID picks, then on in an order of its own, so that the claims that find a shard
// empty spread over the others instead of all falling on its neighbour.
func claimOrder(requestID string, n int) []int {
	if n <= 1 {
		return []int{0}
	}
	h := fnv.New64a()
	h.Write([]byte(requestID))
	order := rand.New(rand.NewPCG(h.Sum64(), 0)).Perm(n)
	first := slices.Index(order, shardOf(requestID, n))
	order[0], order[first] = order[first], order[0]
	return order
}

// claimSeatOn claims a seat of one capacity item.
func (c *Client) claimSeatOn(ctx context.Context, reqKey RequestKey, capKey EventKey, ref RequestRef, lease Lease, hold sync.Locker) (Transition, error) {
	now := c.now()
	seat := write{row: &claimSeatRow, key: capKey.Key(), args: args{pNow: now},
		lost: func(old map[string]types.AttributeValue) (Transition, error) {
			if old == nil {
				return Transition{}, fmt.Errorf("%w: %s (%s)", ErrNoCapacity, ref.EventID, capKey.Key().SK)
			}
			return Transition{SoldOut: true}, nil
		}}
	owner := lease.Owner + "\x00" + capKey.Key().SK
	t, err := c.apply(ctx, reqKey,
		write{row: &takeSeatRow, args: args{pNow: now, pLeaseOwner: lease.Owner}, note: "won a seat"},
		txOptions{token: func(attempt int) string { return requestToken(ref.RequestID, owner, attempt) }, hold: hold},
		seat)
	if err != nil {
		return t, fmt.Errorf("claim seat %s: %w", ref.RequestID, err)
	}
	return t, nil
}

// seatShards is what a Processor knows of the capacity shards of FIRST_COME events:
// the shards found empty, which it skips (capacity never grows back; once every shard
// of an event is, the event is sold out), and the shards one of its own claims is
// under way on. One claim at a time per shard keeps a processor's claims from racing
// each other into TransactionConflict, and from piling onto a shard that is throttled
// while one of them backs off to send again: a claim takes the first shard of its
// order that is free, and waits for the first one when none is. It is safe for
// concurrent use.
type seatShards struct {
	mu      sync.Mutex
	byEvent map[string]*eventShards
}

type eventShards struct {
	empty map[int]bool
	slots []chan struct{} // one per shard, full while a claim is under way on it
}

func newSeatShards() *seatShards { return &seatShards{byEvent: map[string]*eventShards{}} }

// event returns what s knows of the n shards of eventID. s.mu is held.
func (s *seatShards) event(eventID string, n int) *eventShards {
	e := s.byEvent[eventID]
	if e == nil || len(e.slots) != n {
		e = &eventShards{empty: map[int]bool{}, slots: make([]chan struct{}, n)}
		for i := range e.slots {
			e.slots[i] = make(chan struct{}, 1)
		}
		s.byEvent[eventID] = e
	}
	return e
}

// take returns the first shard of order (of an event of n shards) not known empty,
// once it holds it: a free one at once, else the first, when its claim under way
// ends. It returns -1 when every shard of order is known empty. release gives the
// shard back.
func (s *seatShards) take(ctx context.Context, eventID string, order []int, n int) (shard int, release func(), err error) {
	for {
		s.mu.Lock()
		e := s.event(eventID, n)
		var open []int
		for _, shard := range order {
			if !e.empty[shard] {
				open = append(open, shard)
			}
		}
		s.mu.Unlock()
		if len(open) == 0 {
			return -1, nil, nil
		}
		for _, shard := range open {
			select {
			case e.slots[shard] <- struct{}{}:
				return shard, func() { <-e.slots[shard] }, nil
			default:
			}
		}
		select {
		case e.slots[open[0]] <- struct{}{}:
			s.mu.Lock()
			empty := e.empty[open[0]]
			s.mu.Unlock()
			if !empty {
				return open[0], func() { <-e.slots[open[0]] }, nil
			}
			<-e.slots[open[0]] // emptied while this claim waited: look again
		case <-ctx.Done():
			return -1, nil, ctx.Err()
		}
	}
}

// add records that the shard of eventID (of n shards) is empty.
func (s *seatShards) add(eventID string, shard, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.event(eventID, n).empty[shard] = true
}

// soldOut reports whether every shard of the event was found empty.
func (s *seatShards) soldOut(eventID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byEvent[eventID]
	return e != nil && len(e.empty) == len(e.slots)
}

// requestToken derives a ClientRequestToken (at most 36 characters) from a request,
// a lease and an attempt.
func requestToken(requestID, owner string, attempt int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%d", requestID, owner, attempt))
	return hex.EncodeToString(sum[:18])
}

// refusalBackoff is the wait before sending again, after attempt (0 first), a call
// refused for throughput alone by err. A conflict ends as soon as the other call on
// the item does: 5 ms doubled per attempt, at most 320 ms. A throttle ends only once
// the key's units have refilled, as the SDK's retryer assumes of the throttles it
// retries: 1 s doubled per attempt, at most 4 s. Both with jitter (half of it at
// random), so that the calls refused together do not all come back together.
func refusalBackoff(err error, attempt int) time.Duration {
	d := 5 * time.Millisecond << min(attempt, 6)
	for _, r := range cancellationReasons(err) {
		if aws.ToString(r.Code) == "ThrottlingError" {
			d = time.Second << min(attempt, 2)
			break
		}
	}
	return d/2 + rand.N(d/2+1)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
