package bench_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/entity"
)

// The hot functions of a participation and of a message, without I/O: what the
// library adds in CPU and allocations to each DynamoDB call.

const (
	hotEvent   = "spring-sale-2026"
	hotUser    = "user-0001234567"
	hotRequest = "01a20795-50b4-778f-baec-0a750608711f"
	hotMillis  = asyncevent.EpochMillis(1_795_421_039_191)
)

func BenchmarkParseLockKey(b *testing.B) {
	k, err := asyncevent.NewLockKey(hotEvent, hotUser)
	if err != nil {
		b.Fatal(err)
	}
	key := k.Key()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := key.Entity(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidateID(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if err := asyncevent.ValidateID("userId", hotUser); err != nil {
			b.Fatal(err)
		}
	}
}

func hotMessage() asyncevent.Message {
	return asyncevent.Message{V: asyncevent.MessageVersion, RequestID: hotRequest, EventID: hotEvent, UserID: hotUser,
		EventType: asyncevent.FirstCome, RequestedAt: hotMillis}
}

func BenchmarkEncodeMessage(b *testing.B) {
	m := hotMessage()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := asyncevent.EncodeMessage(m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeMessage(b *testing.B) {
	body, err := asyncevent.EncodeMessage(hotMessage())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := asyncevent.DecodeMessage(body); err != nil {
			b.Fatal(err)
		}
	}
}

// hotItem is a Request item as stored: the caller's Request and the bookkeeping the
// library stores beside it, under the same attribute names.
type hotItem struct {
	EntityType entity.Type `dynamodbav:"entityType"`
	asyncevent.Request
	IdempotencyKey string                 `dynamodbav:"idempotencyKey"`
	LeaseOwner     string                 `dynamodbav:"leaseOwner,omitempty"`
	LeaseExpiresAt asyncevent.EpochMillis `dynamodbav:"leaseExpiresAt,omitempty"`
	TTL            int64                  `dynamodbav:"ttl,omitempty"`
}

func hotRequestItem() hotItem {
	lock, _ := asyncevent.NewLockKey(hotEvent, hotUser)
	return hotItem{
		EntityType: entity.Request,
		Request: asyncevent.Request{
			RequestID: hotRequest, EventID: hotEvent, UserID: hotUser,
			EventType: asyncevent.FirstCome, Status: asyncevent.StatusSucceeded, UIResult: asyncevent.UISuccess,
			ResultCode: asyncevent.ResultSuccess, RequestedAt: hotMillis, QueuedAt: hotMillis + 3, StartedAt: hotMillis + 40,
			FinishedAt: hotMillis + 52,
		},
		IdempotencyKey: lock.IdempotencyKey(), LeaseOwner: "worker-1/0a1b2c3d",
		LeaseExpiresAt: hotMillis + 30_040, TTL: hotMillis.Time().Unix() + 90*24*3600,
	}
}

// BenchmarkMarshalRequest is the item encoding of a Request (what GetRequest decodes
// and a full write encodes).
func BenchmarkMarshalRequest(b *testing.B) {
	r := hotRequestItem()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := attributevalue.MarshalMap(r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnmarshalRequest(b *testing.B) {
	item, err := attributevalue.MarshalMap(hotRequestItem())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		var r asyncevent.Request
		if err := attributevalue.UnmarshalMap(item, &r); err != nil {
			b.Fatal(err)
		}
	}
}
