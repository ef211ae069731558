package asyncevent_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/asyncevent/asyncevent"
)

func ExampleValidateID() {
	err := asyncevent.ValidateID("userId", "user#7")
	fmt.Println(errors.Is(err, asyncevent.ErrInvalidID))
	fmt.Println(err)
	// Output:
	// true
	// asyncevent: invalid userId: contains the key separator '#' at byte 4
}

func ExampleEventConfig_RequestIndexKeys() {
	at := asyncevent.MillisOf(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	event := asyncevent.EventConfig{EventID: "spring-sale"} // one index shard: the seed's keys
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
