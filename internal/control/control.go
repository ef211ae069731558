// Package control holds the rules of an operator's controls of an event that need no
// table: why a control found the event in no state to take it, whether a cancel may
// be tried, and how seats added are shared over the capacity shards. The root package
// reads its items, calls these rules, and writes the rows.
package control

import "fmt"

// The actions of the audit trail, as the root's Action constants spell them.
const (
	Close        = "CLOSE"
	Pause        = "PAUSE"
	Resume       = "RESUME"
	ExtendEnd    = "EXTEND_END"
	ExtendCutoff = "EXTEND_CUTOFF"
	ExtendStart  = "EXTEND_START"
	AddCapacity  = "ADD_CAPACITY"
	Cancel       = "CANCEL"
)

// MaxTransactItems is the most items a TransactWriteItems holds.
const MaxTransactItems = 100

// Event is what the refusal of a control reads of the event as the refusal found it.
type Event struct {
	Ended    bool // closed, or its end (a LOTTERY's cutoff) came before now
	HasEnd   bool // it has an end to move
	Lottery  bool
	Prequeue bool // a FIRST_COME event with a pre-queue
}

// Refusal says why a control found the event in no state to take it.
func Refusal(action string, e Event) string {
	switch {
	case action == Close && e.Ended:
		return "the event is closed already"
	case action == Pause && e.Ended:
		return "the event is closed"
	case action == Pause:
		return "the event is paused already"
	case action == Resume && e.Ended:
		return "the event is closed"
	case action == Resume:
		return "the event is not paused"
	case action == ExtendEnd && !e.HasEnd:
		return "the event has no end to move"
	case action == ExtendEnd:
		return "the end has passed, is less than 10 s away, or is not before the new one"
	case action == ExtendCutoff && !e.Lottery:
		return "only a LOTTERY has a cutoff"
	case action == ExtendStart && !e.Prequeue:
		return "only a FIRST_COME event with a pre-queue has its start moved"
	case action == ExtendStart:
		return "the start has passed, is less than 10 s away, is not before the new one, is not before the event's end, or the pre-queue's serve began"
	case action == AddCapacity && e.Ended:
		return "the event is closed"
	case action == AddCapacity:
		return "another change of the event's seats came first: try again"
	case action == Cancel:
		return "the request is no longer SUCCEEDED, or another change of the event's seats came first"
	}
	return "the cutoff has passed, is less than 10 s away, is not before the new one, lies past the event's end, or the draw began"
}

// Request is what the refusal of a cancel reads of the request, as read.
type Request struct {
	FirstCome bool
	// Status and ResultCode name the request's state in the reason.
	Status, ResultCode string
	Held               bool // HELD or WAITLISTED: Release's, not a cancel's
	Cancelled          bool // REJECTED (REJECTED_CANCELLED)
	Rejected           bool
	Succeeded          bool
}

// CancelRefusal is the reason a cancel of r is not applied, before any write: a
// request that holds no seat a cancel gives back, or an event of shards too many to
// mark in one transaction beside the CONFIG, the audit entry, the request, the pool,
// the marker and, with statusLog, the request's log entry; cancelled is the reason of
// a request cancelled already. "" when the cancel may be tried.
func CancelRefusal(r Request, shards int, statusLog bool, cancelled string) string {
	switch {
	case !r.FirstCome:
		return "only a FIRST_COME seat can be cancelled"
	case r.Held:
		return "the request is " + r.Status + ": Release ends it"
	case r.Cancelled:
		return cancelled
	case r.Rejected:
		return "the request is REJECTED (" + r.ResultCode + "): it holds no seat"
	case !r.Succeeded:
		return "the request is " + r.Status + ", not SUCCEEDED: it holds no seat"
	}
	items := shards + 5
	if statusLog {
		items++
	}
	if items > MaxTransactItems {
		return fmt.Sprintf("an event of %d shards cannot mark them all in one transaction", shards)
	}
	return ""
}

// Shard is a capacity shard as an add reads it.
type Shard struct {
	Remaining, Total int64
}

// Spread shares seats over the shards that hold seats (or the one asked for,
// toShard ≥ 0), at most perShard a shard in total, evenly; pool is what none takes.
func Spread(shards []Shard, seats int64, toShard int, perShard int64) (share []int64, pool int64) {
	share = make([]int64, len(shards))
	var open []int
	for i, s := range shards {
		if s.Remaining > 0 && (toShard < 0 || toShard == i) && s.Total < perShard {
			open = append(open, i)
		}
	}
	left := seats
	for left > 0 && len(open) > 0 {
		each := max(left/int64(len(open)), 1)
		var still []int
		for _, i := range open {
			k := min(each, left, perShard-shards[i].Total-share[i])
			share[i] += k
			left -= k
			if shards[i].Total+share[i] < perShard {
				still = append(still, i)
			}
			if left == 0 {
				break
			}
		}
		open = still
	}
	return share, left
}
