package asyncevent

import (
	"slices"

	"github.com/asyncevent/asyncevent/entity"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
)

// The seat pool: the event's Returns item (PK EVENT#<eventId>#RETURNS, SK RETURNS),
// where the seats that come back wait. A hold that ended unpaid gives its seat back
// here (returnSeat), an operator adds seats here (AddCapacity), a cancel frees one here
// (CancelRequest). Seats leave it to the waitlist, earliest first (the hold sweep's
// serve, internal/holdsweep), or to a claim on the pool (the seat walk's, internal/seatclaim).

// seatReturns is an event's Returns item (PK EVENT#<eventId>#RETURNS, SK RETURNS):
// the seats given back by holds that ended unpaid and not yet handed to the waitlist
// (capacityRemaining), with the counts of seats given back and handed on, and the
// lease of the worker that sweeps the event's holds. Written first by the first seat
// given back, or the first sweep lease.
type seatReturns struct {
	Key
	EntityType        entity.Type `dynamodbav:"entityType"` // RETURNS
	EventID           string      `dynamodbav:"eventId"`
	CapacityRemaining int64       `dynamodbav:"capacityRemaining"`
	Returned          int64       `dynamodbav:"returned"`
	Served            int64       `dynamodbav:"served"`
	Added             int64       `dynamodbav:"added,omitempty"`     // seats an operator added to the pool
	Cancelled         int64       `dynamodbav:"cancelled,omitempty"` // seats of cancelled participations
	Holders           []string    `dynamodbav:"holders,omitempty,stringset"`
	SweepOwner        string      `dynamodbav:"sweepOwner,omitempty"`
	SweepUntil        EpochMillis `dynamodbav:"sweepUntil,omitempty"`
	UpdatedAt         EpochMillis `dynamodbav:"updatedAt,omitempty"`
}

// The attribute names of the Returns item that its rows name.
const (
	attrReturned  = "returned"
	attrServed    = "served"
	attrAdded     = "added"
	attrCancelled = "cancelled"
)

var (
	// returnsSets name the Returns item on its first write.
	returnsSets = []set{
		setIfMissing(attrEntityType, entity.Returns), setIfMissing(attrEventID, pEventID), setTo(attrUpdatedAt, pNow),
	}
	seatReturnedRow = row{
		name: "seat given to the waitlist", method: "Release, SweepHolds", item: entity.Returns, op: opUpdate,
		sets: returnsSets,
		adds: []set{addTo(attrCapacityRemaining, 1), addTo(attrReturned, 1)},
	}
	returnedSeatTakenRow = row{
		name: "returned seat taken", method: "SweepHolds", item: entity.Returns, op: opUpdate, cond: seatLeft,
		sets: []set{
			setTo(attrCapacityRemaining, expression.Name(attrCapacityRemaining).Minus(expression.Value(1))),
			setTo(attrUpdatedAt, pNow),
		},
		adds: []set{addTo(attrServed, 1)},
	}
	poolSeatsAddedRow = row{
		name: "capacity added to the pool", method: "AddCapacity", item: entity.Returns, op: opUpdate,
		sets: append(slices.Clone(returnsSets), setTo(attrPoolVersion, pPoolVersion)),
		adds: []set{addTo(attrCapacityRemaining, pSeats), addTo(attrAdded, pSeats)},
	}
	poolCancelledRow = row{
		name: "seat of a cancel to the pool", method: "CancelRequest", item: entity.Returns, op: opUpdate,
		sets: append(slices.Clone(returnsSets), setTo(attrPoolVersion, pPoolVersion)),
		adds: []set{addTo(attrCapacityRemaining, 1), addTo(attrCancelled, 1)},
	}
	poolClaimRow      = row{name: "pool seat claimed", method: "Rows.ClaimSeat", item: entity.Returns, op: opUpdate, cond: seatFree, sets: claimSets, adds: claimAdds}
	poolSeatClosedRow = row{name: "pool seat closed", method: "Rows.ClaimSeat", item: entity.Returns, op: opUpdate, cond: notHeldHere, adds: fenceAdds}
	sweepLeaseRow     = row{
		name: "hold sweep lease", method: "SweepHolds", item: entity.Returns, op: opUpdate, cond: sweepFree,
		sets: append([]set{setTo(attrSweepOwner, pSweepOwner), setTo(attrSweepUntil, pSweepUntil)}, returnsSets...),
	}
)

// returnSeat returns the write that puts one seat on the event's Returns item.
func (c *Client) returnSeat(eventID string) (write, error) {
	key, err := NewReturnsKey(eventID)
	if err != nil {
		return write{}, err
	}
	return write{row: &seatReturnedRow, key: key.Key(), args: args{pNow: c.now(), pEventID: eventID}}, nil
}

const (
	pSweepOwner    param = "sweepOwner"
	pSweepUntil    param = "sweepUntil"
	attrSweepOwner       = "sweepOwner"
	attrSweepUntil       = "sweepUntil"
)

var (
	// sweepFree: no other sweeper holds the event's sweep lease.
	sweepFree = either(fixed(expression.AttributeNotExists(expression.Name(attrSweepUntil))),
		compare(expression.Name(attrSweepUntil).LessThanEqual, pNow),
		compare(expression.Name(attrSweepOwner).Equal, pSweepOwner))
)
