package asyncevent_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/asyncevent/asyncevent"
)

func ExampleNewRequestKey() {
	k, err := asyncevent.NewRequestKey("0193a3c2-7f1e-7cc1-9f5b-2b1d3c4e5f60")
	if err != nil {
		panic(err)
	}
	fmt.Println(k.Key().PK, k.Key().SK)
	// Output: REQ#0193a3c2-7f1e-7cc1-9f5b-2b1d3c4e5f60 META
}

func ExampleNewLockKey() {
	k, err := asyncevent.NewLockKey("spring-sale", "user-7")
	if err != nil {
		panic(err)
	}
	fmt.Println(k.Key().PK, k.Key().SK)
	// Output: IDEMP#spring-sale#user-7 LOCK
}

func ExampleNewLockKey_invalidID() {
	_, err := asyncevent.NewLockKey("spring-sale", "user#7")
	fmt.Println(errors.Is(err, asyncevent.ErrInvalidID))
	fmt.Println(err)
	// Output:
	// true
	// asyncevent: invalid userId: contains the key separator '#' at byte 4
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

func ExampleNewStatusLogKey() {
	at := asyncevent.MillisOf(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	k, err := asyncevent.NewStatusLogKey("req-1", at, "01")
	if err != nil {
		panic(err)
	}
	fmt.Println(k.Key().PK, k.Key().SK)
	// Output: REQ#req-1 LOG#1795435200000#01
}

func ExampleNewQueueKey() {
	// Zero padding to 13 digits keeps string order equal to time order.
	early, _ := asyncevent.NewQueueKey(999, "req-a")
	late, _ := asyncevent.NewQueueKey(1000, "req-b")
	fmt.Println(early)
	fmt.Println(late)
	fmt.Println(early.String() < late.String())
	// Output:
	// QAT#0000000000999#REQ#req-a
	// QAT#0000000001000#REQ#req-b
	// true
}

func ExampleNewIndexKeys() {
	at := asyncevent.MillisOf(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	k, err := asyncevent.NewIndexKeys("spring-sale", "user-7", "req-1", at)
	if err != nil {
		panic(err)
	}
	fmt.Println(k.GSI1PK, k.GSI1SK)
	fmt.Println(k.GSI2PK, k.GSI2SK)
	// Output:
	// USER#user-7 QAT#1795435200000#REQ#req-1
	// EVENT#spring-sale QAT#1795435200000#REQ#req-1
}

func ExampleParseQueueKey() {
	k, err := asyncevent.ParseQueueKey("QAT#1795435200000#REQ#req-1")
	if err != nil {
		panic(err)
	}
	fmt.Println(k.RequestID(), k.QueuedAt().Time().Format(time.RFC3339))

	_, err = asyncevent.ParseQueueKey("QAT#1795435200000#ST#QUEUED#REQ#req-1")
	fmt.Println(errors.Is(err, asyncevent.ErrMalformedKey))
	// Output:
	// req-1 2026-11-23T12:00:00Z
	// true
}
