package asyncevent

import (
	"context"
	"fmt"

	"github.com/asyncevent/asyncevent/internal/control"
	"github.com/asyncevent/asyncevent/internal/idempotent"
)

// Seats added while an event runs, and the event's seat pool.
//
// A capacity shard that is empty stays empty: every rule of the seat claim relies on
// it. So seats an operator adds go onto the shards that still hold seats (which may
// grow: nothing relies on a shard that holds seats staying as it is), and, once every
// shard is empty, onto the event's seat pool: its Returns item, from which the hold
// sweep serves an event with holds its waitlist, and from which, for an event without
// holds, a request that finds every shard empty claims a seat under its lease, as it
// would on a shard (its seatShard then names the pool: shard C). Each change of the
// pool's seats raises a version on every shard, so a worker's look at a request's
// home shard, or a claim that meets one empty, tells it that the pool may hold seats,
// whatever it remembers of the sell-out (docs/design.md, "Seats added").

// MaxAddSeats bounds the seats one AddCapacity adds.
const MaxAddSeats = 1_000_000

// AddCapacityInput is what AddCapacity adds, and who asks for it.
type AddCapacityInput struct {
	// Seats is the number of seats to add, 1 to MaxAddSeats. Required.
	Seats int64
	// Shard, when set, puts the seats on that capacity shard (0 to the event's
	// CapacityShards − 1) if it holds seats, else on the event's pool. Default (nil):
	// spread over the shards that hold seats, at most MaxSeatsPerShard a shard.
	Shard *int
	// Actor names who adds them, on the event's audit trail: 1 to MaxIDLength bytes.
	// Required.
	Actor string
	// IdempotencyKey makes a call given again after its answer was lost apply once:
	// of the calls under one key, at most one adds the seats, for a day at least, and
	// the others answer Applied with EventUpdate.Replayed. A call under it that is
	// refused (the event closed, say) records the refusal under the key, and the
	// calls under it then answer not applied with that reason, for a day at least
	// (see AddCapacity). Give each add a key of its own (a UUID), and the same key to
	// its retries; it follows the rules of ValidateID. A key given to another add
	// (other seats, shard or actor) is an ErrInvalidOptions error. Default: a key of
	// the call's own, which keeps its own attempts from applying twice but not a retry
	// by the caller.
	IdempotencyKey string
}

// target is what the add asks for, as its operation's marker records it.
func (in AddCapacityInput) target() string {
	if in.Shard == nil {
		return seatCount(in.Seats) + ", spread"
	}
	return fmt.Sprintf("%s, shard %d", seatCount(in.Seats), *in.Shard)
}

// seatCount is "1 seat", "n seats".
func seatCount(n int64) string {
	if n == 1 {
		return "1 seat"
	}
	return fmt.Sprintf("%d seats", n)
}

// AddCapacity adds seats to a running FIRST_COME event, keeping exactly N: after a
// strongly consistent read of its config and capacity, one TransactWriteItems of the
// "capacity added" row (UpdateItem PK EVENT#<eventId>, SK CONFIG, ADD capacityTotal
// seats, SET poolVersion; condition eventType = FIRST_COME, not ended, and poolVersion
// as read), the "capacity added to a shard" row for each shard that takes seats
// (ADD capacityRemaining and capacityTotal; condition capacityRemaining > 0, a shard
// that is empty stays empty, and capacityTotal ≤ MaxSeatsPerShard − its seats), and,
// for the seats no shard takes, the "capacity added to the pool" row (UpdateItem PK
// EVENT#<eventId>#RETURNS, SK RETURNS, ADD capacityRemaining, added) with the
// "capacity shard: pool version" row on every shard (SET poolVersion), its audit
// entry, and the "operation marker" row (PutItem PK EVENT#<eventId>, SK
// OP#ADD_CAPACITY#<idempotencyKey>; condition attribute_not_exists(PK)). in.Shard
// puts the seats on that shard (if it holds seats; else on the pool); without it
// they are spread over the shards that hold seats, at most MaxSeatsPerShard a shard.
// A transaction holds 100 items: seats for the pool need the event's C shards in it
// beside the CONFIG, the pool, the audit entry and the marker, so an event of more
// than 96 shards takes seats on its shards only while they hold some. A shard
// emptied between the read and the write refuses it, as another add or cancel at the
// same moment does (poolVersion): it is then read and tried again, six times at
// most. An event in no state to take seats (closed, a LOTTERY) is not applied, with
// the reason.
//
// A retry applies nothing twice (see operation.go): an attempt refused whose
// marker is there answers Applied, Replayed, with the event as it stands. An attempt
// whose answer was lost (a connection reset, a timeout) is sent again by the call,
// twice at most; the error of a call that never learned its outcome says that the
// outcome is unknown and names its idempotency key, under which a call again applies
// the seats once at most.
//
// Not applied stays true. An attempt whose answer was lost may land later, its
// condition read with its sender's now (sent in the event's last millisecond, it
// would find the event open after the end and add the seats). So a refusal after a
// write of the call that got no answer, or under in.IdempotencyKey (the call may
// follow one that never learned its outcome), is first recorded: the "operation
// marker" row alone (PutItem PK EVENT#<eventId>, SK OP#ADD_CAPACITY#<idempotencyKey>,
// outcome REFUSED and the reason; condition attribute_not_exists(PK)), on which every
// attempt under the key, its own put of the marker failing, is refused when it
// lands. A marker there already answers as it records: Applied, Replayed, or not
// applied with the reason recorded. A key so refused stays refused for a day at
// least: a call again under it answers not applied, with that reason, whatever the
// event's state then; a new add takes a new key. A refusal under a key of the
// call's own whose writes were all answered records nothing.
func (c *Client) AddCapacity(ctx context.Context, eventID string, in AddCapacityInput) (EventUpdate, error) {
	if in.Seats < 1 || in.Seats > MaxAddSeats {
		return EventUpdate{}, fmt.Errorf("%w: add %d seats, want 1 to %d", ErrInvalidOptions, in.Seats, MaxAddSeats)
	}
	toShard := -1
	if in.Shard != nil {
		if toShard = *in.Shard; toShard < 0 {
			return EventUpdate{}, fmt.Errorf("%w: shard %d, want 0 or more (nil spreads the seats)", ErrInvalidOptions, toShard)
		}
	}
	op, err := newOperation(ActionAddCapacity, in.Actor, in.target(), in.IdempotencyKey)
	if err != nil {
		return EventUpdate{}, err
	}
	return c.seatsControl(ctx, op, func() (EventUpdate, bool, error) {
		return c.addCapacity(ctx, eventID, in.Seats, toShard, op)
	})
}

// seatsControl runs once, an attempt of op, by idempotent.Run: tried again
// seatsControlAttempts times at most while another change of the seats came first,
// operationResends times while unanswered; a refusal answered as its marker records,
// or fenced (see operation.go); an unknown outcome's error names op's key.
func (c *Client) seatsControl(ctx context.Context, op operation, once func() (EventUpdate, bool, error)) (EventUpdate, error) {
	s := &seatsOperation{c: c, op: op, once: once}
	return idempotent.Run(ctx, s, s.policy())
}

// addCapacity is one attempt of AddCapacity; retry reports a shard emptied meanwhile.
func (c *Client) addCapacity(ctx context.Context, eventID string, seats int64, toShard int, op operation) (up EventUpdate, retry bool, err error) {
	cfg, err := c.getEvent(ctx, eventID)
	if err != nil {
		return EventUpdate{}, false, err
	}
	if cfg.EventType != FirstCome {
		return EventUpdate{Event: &cfg.Event, Reason: "only a FIRST_COME event has seats"}, false, nil
	}
	n := max(cfg.CapacityShards, 1)
	if toShard >= n {
		return EventUpdate{}, false, fmt.Errorf("%w: shard %d of %d", ErrInvalidOptions, toShard, n)
	}
	capacity, err := c.GetCapacity(ctx, eventID)
	if err != nil {
		return EventUpdate{}, false, err
	}
	shards := capacity.Shards
	if n == 1 {
		shards = []EventCapacity{*capacity}
	}
	keys, err := CapacityKeys(eventID, n)
	if err != nil {
		return EventUpdate{}, false, err
	}
	read := make([]control.Shard, len(shards))
	for i, s := range shards {
		read[i] = control.Shard{Remaining: s.CapacityRemaining, Total: s.CapacityTotal}
	}
	share, pool := control.Spread(read, seats, toShard, MaxSeatsPerShard)
	// Seats for the pool mark every shard: with the CONFIG, the pool, the audit entry
	// and the operation's marker, n + 4 items.
	if pool > 0 && n+4 > control.MaxTransactItems {
		return EventUpdate{Event: &cfg.Event, Reason: fmt.Sprintf("every shard is full or empty, and an event of %d shards cannot mark them all in one transaction: add seats while its shards hold some", n)}, false, nil
	}
	version := cfg.PoolVersion
	if pool > 0 {
		version++
	}
	now := c.now()
	w := write{row: &seatsAddedRow, args: args{pSeats: seats, pPoolVersion: version, pPrevPoolVersion: cfg.PoolVersion, pNow: now}}
	marker, err := op.marker(eventID, now)
	if err != nil {
		return EventUpdate{}, false, err
	}
	extra := []write{marker}
	for i, k := range share {
		switch {
		case k > 0:
			extra = append(extra, write{row: &shardSeatsAddedRow, key: keys[i].Key(), args: args{pSeats: k, pPoolVersion: version, pNow: now, pShardRoom: MaxSeatsPerShard - k}})
		case pool > 0:
			extra = append(extra, write{row: &poolMarkedRow, key: keys[i].Key(), args: args{pPoolVersion: version}})
		}
	}
	if pool > 0 {
		rk, err := NewReturnsKey(eventID)
		if err != nil {
			return EventUpdate{}, false, err
		}
		extra = append(extra, write{row: &poolSeatsAddedRow, key: rk.Key(), args: args{pSeats: pool, pNow: now, pEventID: eventID, pPoolVersion: version}})
	}
	detail := fmt.Sprintf("%s: %d on shards, %d on the pool", seatCount(seats), seats-pool, pool)
	up, err = c.control(ctx, eventID, op.actor, ActionAddCapacity, detail, w, extra...)
	if err == nil && !up.Applied && (up.lost == &shardSeatsAddedRow || up.lost == &seatsAddedRow && up.Event.StateAt(c.now()) != StateClosed) {
		return up, true, nil // a shard emptied, or the seats changed, since the read: read again
	}
	return up, false, err
}

// CancelRequestInput says who cancels a request's seat.
type CancelRequestInput struct {
	// Actor names who cancels, on the event's audit trail: 1 to MaxIDLength bytes.
	// Required.
	Actor string
	// IdempotencyKey tells a call given again after its answer was lost that its
	// cancel applied: under the key of the cancel that applied, it answers Applied
	// with EventUpdate.Replayed, for a day at least. Give each cancel a key of its own
	// (a UUID), and the same key to its retries; it follows the rules of ValidateID.
	// A key given to another cancel (another request or actor) is an
	// ErrInvalidOptions error. A call under it that is refused records the refusal
	// under the key, and the calls under it then answer not applied with that
	// reason, for a day at least (see CancelRequest). Default: a key of the call's
	// own, which keeps its own attempts apart; a retry by the caller then answers not
	// applied, the request being REJECTED_CANCELLED already (see CancelRequest).
	IdempotencyKey string
}

// CancelRequest cancels a FIRST_COME participation that won its seat (SUCCEEDED): an
// operator's decision (a refund, a fraud). Its seat goes back to the event's pool, to
// the waitlist first when the event has holds (the hold sweep hands it on), else to
// the next request that finds every shard empty. After a strongly consistent read of
// the request and the event, one TransactWriteItems of the "participation cancelled"
// row (UpdateItem PK REQ#<requestId>, SK META, SET status = REJECTED, uiResult
// REJECTED, resultCode REJECTED_CANCELLED, finishedAt; condition status = SUCCEEDED
// AND eventType = FIRST_COME: the one change of a final status the design allows), the
// "seat of a cancel to the pool" row (PK EVENT#<eventId>#RETURNS: ADD capacityRemaining
// 1, cancelled 1), the "pool version raised" row on the CONFIG and the "capacity
// shard: pool version" row on every shard (so that a worker that remembers the
// sell-out learns of the seat), its audit entry, the "operation marker" row (PutItem
// PK EVENT#<eventId>, SK OP#CANCEL#<idempotencyKey>; condition
// attribute_not_exists(PK)), and with Options.StatusLog the request's log entry: C + 5
// items, C + 6 with the log, so an event of more than 95 shards (94 with the log)
// takes no cancel. A HELD or WAITLISTED request is Release's; any other is not
// applied, with the reason; one that lost to another add or cancel at the same moment
// (poolVersion) is read and tried again, six times at most. The answer's Request is
// the request as it stands. A cancel after the event closed is applied (a refund):
// its seat goes to the pool, where no request takes it any more.
//
// A request is cancelled once whatever the calls (its condition). A call given
// again after its answer was lost, under the IdempotencyKey of the cancel that
// applied, answers Applied, Replayed, with the request REJECTED_CANCELLED as it
// stands; without that key it answers not applied, Reason "the request is REJECTED
// (REJECTED_CANCELLED), cancelled already … : it holds no seat". An attempt whose
// answer was lost is sent again by the call, twice at most, under the call's key, so
// that its answer is applied (Replayed) when the lost attempt applied; the error of
// a call that never learned its outcome says that the outcome is unknown and names
// its key. A refusal after a write of the call that got no answer, or under
// in.IdempotencyKey, is recorded as AddCapacity's is (the "operation marker" row
// alone, SK OP#CANCEL#<idempotencyKey>, outcome REFUSED and the reason; condition
// attribute_not_exists(PK)) before it is answered, and the key then stays refused
// for a day at least. A cancel's own conditions already leave no refusal that an
// attempt still on its way could outlive (a request leaves SUCCEEDED only
// cancelled, the pool's version only grows, a cancel after the close is applied):
// the record keeps one rule for both controls of seats.
func (c *Client) CancelRequest(ctx context.Context, requestID string, in CancelRequestInput) (EventUpdate, error) {
	op, err := newOperation(ActionCancel, in.Actor, "request "+requestID, in.IdempotencyKey)
	if err != nil {
		return EventUpdate{}, err
	}
	return c.seatsControl(ctx, op, func() (EventUpdate, bool, error) { return c.cancelRequest(ctx, requestID, op) })
}

// cancelRequest is one try of CancelRequest; retry reports another change of the
// event's seats at the same moment.
func (c *Client) cancelRequest(ctx context.Context, requestID string, op operation) (up EventUpdate, retry bool, err error) {
	req, err := c.getRequest(ctx, requestID, true)
	if err != nil {
		return EventUpdate{}, false, fmt.Errorf("cancel %s: %w", requestID, err)
	}
	cfg, err := c.getEvent(ctx, req.EventID)
	if err != nil {
		return EventUpdate{}, false, err
	}
	if reason := c.cancelRefusal(cfg, req); reason != "" {
		return EventUpdate{Event: &cfg.Event, Reason: reason, Request: &req.Request}, false, nil
	}
	w, extra, err := c.cancelWrites(requestID, cfg, req, op)
	if err != nil {
		return EventUpdate{}, false, err
	}
	up, err = c.control(ctx, req.EventID, op.actor, ActionCancel, "request "+requestID, w, extra...)
	if err != nil {
		return up, false, err
	}
	cur, err := c.getRequest(ctx, requestID, true)
	if err != nil {
		return up, false, err
	}
	up.Request = &cur.Request
	switch {
	case !up.Applied && cur.Status == StatusRejected && cur.ResultCode == ResultCancelled:
		up.Reason = cancelledAlready
	case !up.Applied && cur.Status != StatusSucceeded:
		up.Reason = "the request is " + string(cur.Status) + " now"
	case !up.Applied && up.lost == &poolVersionRow:
		return up, true, nil // another change of the seats came first: read again
	}
	return up, false, nil
}

// cancelRefusal is the reason a cancel of req is not applied, before any write; ""
// when it may be tried.
func (c *Client) cancelRefusal(cfg *eventItem, req *storedRequest) string {
	return control.CancelRefusal(control.Request{
		FirstCome: req.EventType == FirstCome, Status: string(req.Status), ResultCode: string(req.ResultCode),
		Held:      req.Status == StatusHeld || req.Status == StatusWaitlisted,
		Cancelled: req.Status == StatusRejected && req.ResultCode == ResultCancelled,
		Rejected:  req.Status == StatusRejected, Succeeded: req.Status == StatusSucceeded,
	}, max(cfg.CapacityShards, 1), c.opts.StatusLog, cancelledAlready)
}

// cancelWrites are the writes of a cancel of requestID (req, as read), in one
// transaction: w, the "pool version raised" row on the CONFIG, and extra, the request
// cancelled, its seat to the pool, the operation's marker, the pool version on every
// shard and, with Options.StatusLog, the request's log entry.
func (c *Client) cancelWrites(requestID string, cfg *eventItem, req *storedRequest, op operation) (w write, extra []write, err error) {
	n := max(cfg.CapacityShards, 1)
	keys, err := CapacityKeys(req.EventID, n)
	if err != nil {
		return write{}, nil, err
	}
	rk, err := NewReturnsKey(req.EventID)
	if err != nil {
		return write{}, nil, err
	}
	reqKey, _ := NewRequestKey(requestID) // checked by the read
	version := cfg.PoolVersion + 1
	now := c.now()
	marker, err := op.marker(req.EventID, now)
	if err != nil {
		return write{}, nil, err
	}
	w = write{row: &poolVersionRow, args: args{pPoolVersion: version, pPrevPoolVersion: cfg.PoolVersion}}
	extra = []write{
		{row: &cancelRow, key: reqKey.Key(), args: args{pNow: now}},
		{row: &poolCancelledRow, key: rk.Key(), args: args{pNow: now, pEventID: req.EventID, pPoolVersion: version}},
		marker,
	}
	for _, k := range keys {
		extra = append(extra, write{row: &poolMarkedRow, key: k.Key(), args: args{pPoolVersion: version}})
	}
	if c.opts.StatusLog {
		entry, err := c.statusLogEntry(requestID, StatusSucceeded, StatusRejected, cancelRow.name+" by "+op.actor, now)
		if err != nil {
			return write{}, nil, err
		}
		extra = append(extra, entry)
	}
	return w, extra, nil
}

// cancelledAlready is the reason of a cancel that finds its request cancelled, by a
// call under another idempotency key (or none).
const cancelledAlready = "the request is REJECTED (REJECTED_CANCELLED), cancelled already by a call under another idempotency key " +
	"(one sent again under the key of the cancel that applied answers applied): it holds no seat"
