// Package seatclaim is the algorithm of a first-come seat claim (docs/design.md, "The
// seat claim"): which seat place a request's claim tries next, when a place is closed
// to the request before the claim leaves it, when the claim moves and when the
// event's pool is tried, how often a claim or a close is sent again, and what each
// answer of a place means.
//
// A seat place is one of an event's n capacity shards (places 0 … n−1) or its pool
// (place n). A claim takes a seat and records the request's seat token on the place,
// at an epoch of the request: 0 for a claim without a lease (on the home shard) and
// the first leased one, then one more each time the request's claim moves. A close
// records the request's fence token at an epoch on a place, unless the place records
// the request's seat: no claim of the request at that epoch takes a seat there from
// then on, however late it lands. A request's claim leaves a place only once no claim
// of it can land there any more (closed, or a shard found empty without its token),
// and a request ends without a seat only once the places its claims may land on are
// closed to it or empty.
//
// The package knows no table: every claim, close, move and result is a write of a
// Store, which package asyncevent implements with its rows. Safety rests on those
// conditional writes and on what they record on the items (a seat token among a
// place's holders, a fence token in its void, the request's seatEpoch), never on a
// clock: time here decides only how long to wait before sending again.
package seatclaim

import "context"

// EpochNone is the epoch of the claims without a lease, on the request's home shard,
// and of its first leased claim.
const EpochNone = 0

// Outcome is what a place answers a claim of the request at the claim's epoch.
type Outcome int

// The outcomes of a claim.
const (
	Won     Outcome = iota // the claim took a seat
	Held                   // the place records the request's seat already
	Empty                  // no seat is left on the place, none of them the request's
	Refused                // DynamoDB refused every send for throughput: nothing written
	Closed                 // the place is closed to the request's claims at this epoch
)

// Reply is how DynamoDB answered one send of a claim or a close.
type Reply int

// The replies to one send.
const (
	Applied    Reply = iota // the write was applied
	Lost                    // its condition failed: Answer.Met is what it met
	Throttled               // refused for throughput: nothing written
	Busy                    // a claim refused because a transaction held the item: nothing written
	Invalid                 // a close refused as invalid (a client fault): sent again, it would be too
	Unanswered              // any other error: the write may have been applied, and may still land
)

// Met is a place as a write whose condition failed found it.
type Met struct {
	Missing     bool  // the place has no item: a pool no seat was ever added to
	Holder      bool  // the place records the request's seat
	Closed      bool  // the place is closed to the request's claims at the write's epoch
	Left        int64 // the seats left on it
	PoolVersion int64 // the pool version a capacity shard carries
	SoldOut     bool  // a capacity shard carries the event's sold-out mark
}

// Answer is the answer to one send.
type Answer struct {
	Reply Reply
	// LastSeat: on a capacity shard (never the pool), the claim applied took its last
	// seat, or the request's seat found there was its last (the claim's own, its
	// answer lost, may have taken it).
	LastSeat bool
	Met      Met   // Lost
	Err      error // Throttled, Busy, Invalid, Unanswered: DynamoDB's error
}

// Send sends a prepared write once.
type Send func(ctx context.Context) (Answer, error)

// Places prepares the writes of a request's seat places. A write is prepared once
// (its values bound then) and sent as often as this package decides; an error of a
// Send is an answer the store could not read (an item that does not decode, a
// capacity shard that does not exist), never DynamoDB's refusal, which is an Answer.
type Places interface {
	// Claim prepares the claim of a seat on place at epoch: the "first-come capacity"
	// row (the "pool seat claimed" row on the pool), which takes a seat and records
	// the request's seat token there, conditional on a seat being left, the token not
	// being there, and the place not being closed to the request at epoch.
	Claim(place, epoch int) (Send, error)
	// Close prepares the close of place to the request's claims at epoch: the
	// "first-come seat closed" row (the "pool seat closed" row on the pool), which
	// records the request's fence token at epoch there, conditional on the place
	// existing and recording no seat of the request.
	Close(place, epoch int) (Send, error)
	// Name names place and the request in an error: its item's key and the
	// request's ID.
	Name(place int) (item, request string)
}

// Record says when Store.ShardEmpty records an empty shard on the event, for the
// workers that have not met it.
type Record int

// When a shard found empty is recorded.
const (
	IfUnlisted    Record = iota // when the event's list, read at most once a second, lacks it
	IfNew                       // when the worker did not know it empty
	Always                      // the claim that took its last seat: another may have met it empty first
	IfUnlistedNow               // as IfUnlisted, the list read at once when the shard is news to the worker
)

// Store is what a walk needs besides the places: the request's own writes under its
// delivery's lease, and the event's record of its empty shards.
type Store interface {
	Places
	// Move moves the request's claim to place at epoch to, from epoch from: the
	// "first-come seat moved" row, a compare-and-set on the request's seatEpoch under
	// the lease. moved is false when the request is not PROCESSING under the lease at
	// from any more (a move of this delivery that landed, its answer lost, is moved).
	Move(ctx context.Context, place, from, to int) (moved bool, err error)
	// Take ends the request with the seat it holds: the "first-come success" row (the
	// "first-come held" row on an event with holds), under the lease.
	Take(ctx context.Context) error
	// ShardEmpty records that a capacity shard has no seat left, as how says.
	ShardEmpty(ctx context.Context, shard int, how Record)
}

// Claim is one delivery's claim of a seat for its request: where its claims go, and
// what they met.
type Claim struct {
	Place int // the place its claims go: a capacity shard, or the pool (place n)
	Epoch int // its epoch
	// Inherited: a claim of the request may be on Place at Epoch already, sent by an
	// earlier delivery (a takeover, or a start whose answer was lost) or, on the home
	// shard at epoch 0, by any delivery without a lease. The walk then claims there
	// first whatever it knows of the place, and closes it before it leaves it.
	Inherited bool
	Sent      bool // this delivery sent a claim at Place and Epoch

	PoolVersion int64 // the highest pool version of a capacity item the claim met
	SeatsMet    int64 // the seats left on the last place that refused the claim
	Emptied     bool  // the claim took a capacity shard's last seat
	SoldOut     bool  // the last item that refused the claim empty carries the sold-out mark
}

// MayLand reports whether a claim of the request may still land on c's place: one
// was sent, or inherited. The request ends without a seat only once that place is
// closed to it.
func (c *Claim) MayLand() bool { return c.Inherited || c.Sent }

// moveTo records that the request's claim moved to place at epoch: no claim of it was
// sent there yet.
func (c *Claim) moveTo(place, epoch int) {
	c.Place, c.Epoch, c.Inherited, c.Sent = place, epoch, false, false
}
