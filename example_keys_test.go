package asyncevent_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/entity"
)

func ExampleValidateID() {
	err := asyncevent.ValidateID("userId", "user#7")
	fmt.Println(errors.Is(err, asyncevent.ErrInvalidID))
	fmt.Println(err)
	// Output:
	// true
	// asyncevent: invalid userId: contains the key separator '#' at byte 4
}

func ExampleEventSettings_RequestIndexKeys() {
	at := asyncevent.MillisOf(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	event := asyncevent.EventSettings{EventID: "spring-sale"} // one index shard: the seed's keys
	k, err := event.RequestIndexKeys("user-7", "req-1", at)
	if err != nil {
		panic(err)
	}
	fmt.Println(k.GSI1PK, k.GSI1SK)
	fmt.Println(k.GSI2PK, k.GSI2SK)
	// Output:
	// USER#user-7 QAT#1795435200000#REQ#req-1
	// EVENT#spring-sale QAT#1795435200000#REQ#req-1
}

func ExampleKey_Entity() {
	for _, k := range []asyncevent.Key{
		{PK: "REQ#req-1", SK: "META"},
		{PK: "IDEMP#spring-sale#user-7", SK: "LOCK"},
		{PK: "EVENT#spring-sale", SK: "CAPACITY"},
		{PK: "REQ#req-1", SK: "LOG#1795435200000#01"},
	} {
		kind, err := k.Entity()
		fmt.Println(kind, err)
	}
	_, err := asyncevent.Key{PK: "REQ#req-1", SK: "QAT#1795435200000"}.Entity()
	fmt.Println(errors.Is(err, asyncevent.ErrMalformedKey))
	// Output:
	// REQUEST <nil>
	// IDEMPOTENCY <nil>
	// CAPACITY <nil>
	// STATUS_LOG <nil>
	// true
}

// A tool of another team (an export job, a support script, a migration) builds the
// library's keys with the library, and reads IDs back out of them.
func ExampleNewRequestKey() {
	k, err := asyncevent.NewRequestKey("0193a3c2-7f1e-7cc1-9f5b-2b1d3c4e5f60")
	if err != nil {
		panic(err)
	}
	fmt.Println(k.Key().PK, k.Key().SK)

	_, err = asyncevent.NewRequestKey("req#1")
	fmt.Println(errors.Is(err, asyncevent.ErrInvalidID))
	// Output:
	// REQ#0193a3c2-7f1e-7cc1-9f5b-2b1d3c4e5f60 META
	// true
}

func ExampleParseRequestKey() {
	k, err := asyncevent.ParseRequestKey(asyncevent.Key{PK: "REQ#req-1", SK: "META"})
	fmt.Println(k.RequestID(), err)

	_, err = asyncevent.ParseRequestKey(asyncevent.Key{PK: "REQ#req-1", SK: "LOCK"})
	fmt.Println(errors.Is(err, asyncevent.ErrMalformedKey))
	// Output:
	// req-1 <nil>
	// true
}

func ExampleNewLockKey() {
	k, err := asyncevent.NewLockKey("spring-sale", "user-7")
	if err != nil {
		panic(err)
	}
	fmt.Println(k.Key().PK, k.Key().SK)
	fmt.Println(k.IdempotencyKey()) // what a Request stores in idempotencyKey
	// Output:
	// IDEMP#spring-sale#user-7 LOCK
	// IDEMP#spring-sale#user-7
}

func ExampleParseLockKey() {
	k, err := asyncevent.ParseLockKey(asyncevent.Key{PK: "IDEMP#spring-sale#user-7", SK: "LOCK"})
	fmt.Println(k.EventID(), k.UserID(), err)
	// Output:
	// spring-sale user-7 <nil>
}

func ExampleNewEventKey() {
	for _, item := range []asyncevent.EventItem{asyncevent.EventItemConfig, asyncevent.EventItemCapacity, asyncevent.EventItemDraw} {
		k, err := asyncevent.NewEventKey("spring-sale", item)
		if err != nil {
			panic(err)
		}
		fmt.Println(k.Key().PK, k.Key().SK)
	}
	// Output:
	// EVENT#spring-sale CONFIG
	// EVENT#spring-sale CAPACITY
	// EVENT#spring-sale DRAW
}

// An event created with CapacityShards C > 1 holds its capacity on C items, each on a
// partition key of its own.
func ExampleCapacityKeys() {
	keys, err := asyncevent.CapacityKeys("spring-sale", 3) // EventSettings.CapacityShards
	if err != nil {
		panic(err)
	}
	for _, k := range keys {
		shard, _ := k.Shard()
		fmt.Println(k.Key().PK, k.Key().SK, shard)
	}
	// Output:
	// EVENT#spring-sale#CAPACITY#0 CAPACITY 0
	// EVENT#spring-sale#CAPACITY#1 CAPACITY 1
	// EVENT#spring-sale#CAPACITY#2 CAPACITY 2
}

func ExampleParseEventKey() {
	for _, key := range []asyncevent.Key{
		{PK: "EVENT#spring-sale", SK: "CONFIG"},
		{PK: "EVENT#spring-sale#CAPACITY#2", SK: "CAPACITY"},
	} {
		k, err := asyncevent.ParseEventKey(key)
		if err != nil {
			panic(err)
		}
		shard, sharded := k.Shard()
		fmt.Println(k.EventID(), k.Item(), shard, sharded)
	}
	// Output:
	// spring-sale CONFIG 0 false
	// spring-sale CAPACITY 2 true
}

func ExampleNewStatusLogKey() {
	at := asyncevent.MillisOf(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	k, err := asyncevent.NewStatusLogKey("req-1", at, "01")
	if err != nil {
		panic(err)
	}
	fmt.Println(k.Key().PK, k.Key().SK)
	fmt.Println(asyncevent.StatusLogPrefix) // begins_with(SK, …) lists a request's log

	back, err := asyncevent.ParseStatusLogKey(k.Key())
	fmt.Println(back.RequestID(), back.OccurredAt().Time().Format(time.RFC3339), back.Suffix(), err)
	// Output:
	// REQ#req-1 LOG#1795435200000#01
	// LOG#
	// req-1 2026-11-23T12:00:00Z 01 <nil>
}

// The index keys of a request: GSI1 lists a user's requests, GSI2 an event's, both in
// queue order.
func ExampleNewQueuedAtSortKey() {
	at := asyncevent.MillisOf(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	user, err := asyncevent.NewUserPartition("user-7")
	if err != nil {
		panic(err)
	}
	order, err := asyncevent.NewQueuedAtSortKey(at, "req-1")
	if err != nil {
		panic(err)
	}
	fmt.Println("GSI1PK", user)
	fmt.Println("GSI1SK", order)
	// Output:
	// GSI1PK USER#user-7
	// GSI1SK QAT#1795435200000#REQ#req-1
}

func ExampleParseQueuedAtSortKey() {
	k, err := asyncevent.ParseQueuedAtSortKey("QAT#1795435200000#REQ#req-1")
	fmt.Println(k.RequestID(), k.QueuedAt().Time().Format(time.RFC3339), err)

	_, err = asyncevent.ParseQueuedAtSortKey("QAT#1795435200#REQ#req-1") // seconds, not 13 digits
	fmt.Println(errors.Is(err, asyncevent.ErrMalformedKey))
	// Output:
	// req-1 2026-11-23T12:00:00Z <nil>
	// true
}

// An export job that reads an event's requests queued since its last run: one Query
// of each GSI2 partition of the event, GSI2SK > the bound, merged by GSI2SK.
func ExampleQueuedAtBound() {
	since := asyncevent.MillisOf(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	bound, err := asyncevent.QueuedAtBound(since)
	if err != nil {
		panic(err)
	}
	parts, err := asyncevent.EventPartitions("spring-sale", 2) // EventSettings.IndexShards
	if err != nil {
		panic(err)
	}
	for _, p := range parts {
		fmt.Printf("GSI2PK = %s AND GSI2SK > %s\n", p, bound)
	}
	// Output:
	// GSI2PK = EVENT#spring-sale#0 AND GSI2SK > QAT#1795435200000
	// GSI2PK = EVENT#spring-sale#1 AND GSI2SK > QAT#1795435200000
}

func ExampleParseEventPartition() {
	for _, s := range []string{"EVENT#spring-sale", "EVENT#spring-sale#3"} {
		p, err := asyncevent.ParseEventPartition(s)
		if err != nil {
			panic(err)
		}
		shard, sharded := p.Shard()
		fmt.Println(p.EventID(), shard, sharded)
	}
	// Output:
	// spring-sale 0 false
	// spring-sale 3 true
}

// The items the library keeps for itself have typed keys too, so that a tool that
// walks the table (an export, a migration) reads the IDs of every item.
func ExampleParseHoldKey() {
	for _, key := range []asyncevent.Key{
		{PK: "EVENT#spring-sale#HOLDS#4", SK: "EXP#1795435200000#REQ#req-1"},
		{PK: "EVENT#spring-sale#RETURNS", SK: "RETURNS"},
		{PK: "EVENT#spring-sale", SK: "OP#CANCEL#k-1"},
	} {
		kind, _ := key.Entity()
		switch kind {
		case entity.Hold:
			k, _ := asyncevent.ParseHoldKey(key)
			fmt.Println(kind, k.EventID(), k.Shard(), k.RequestID(), k.ExpiresAt().Time().Format(time.RFC3339))
		case entity.Returns:
			k, _ := asyncevent.ParseReturnsKey(key)
			fmt.Println(kind, k.EventID())
		case entity.Operation:
			k, _ := asyncevent.ParseOperationKey(key)
			fmt.Println(kind, k.EventID(), k.Action(), k.IdempotencyKey())
		}
	}
	// Output:
	// HOLD spring-sale 4 req-1 2026-11-23T12:00:00Z
	// RETURNS spring-sale
	// OPERATION spring-sale CANCEL k-1
}

func ExampleNewAuditKey() {
	at := asyncevent.MillisOf(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	audit, _ := asyncevent.NewAuditKey("spring-sale", at, "0a1b")
	entry, _ := asyncevent.NewEventEntryKey(at, "spring-sale")
	registry, _ := asyncevent.NewHoldEventKey("spring-sale")
	progress, _ := asyncevent.NewProgressKey("spring-sale", 0, at.Time().Unix())
	for _, k := range []asyncevent.Key{audit.Key(), entry.Key(), registry.Key(), progress.Key()} {
		kind, _ := k.Entity()
		fmt.Println(kind, k.PK, k.SK)
	}
	// Output:
	// AUDIT EVENT#spring-sale AUDIT#1795435200000#0a1b
	// EVENT_ENTRY EVENTS CAT#1795435200000#EVENT#spring-sale
	// HOLD_EVENT HOLD_EVENTS EVENT#spring-sale
	// PROGRESS EVENT#spring-sale#PROGRESS#0 T#1795435200
}
