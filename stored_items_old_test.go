package asyncevent

import (
	"testing"
	"time"

	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/seed"
)

func fullConfigItem(t *testing.T) any {
	return configItem{Key: Key{PK: "EVENT#e1", SK: "CONFIG"}, eventItem: eventItem{
		EntityType: entity.Config,
		Event: Event{
			EventSettings: EventSettings{
				EventID: "e1", EventType: FirstCome, Name: "Sale",
				StartsAt: 1, EndsAt: 2, CapacityTotal: 3, WinnerCount: 4, LotteryCutoffAt: 5,
				AnnounceAt: 6, IndexShards: 8, CapacityShards: 9, HoldFor: 10 * time.Minute,
			},
			AnnouncedAt: 7, SeedCommitment: "abc", SeedMode: seed.Sealed,
			Paused: true, ClosedAt: 11, Phase: PhaseDrawing, CreatedAt: 14,
		},
		EmptyShards: []int{0, 2}, PoolVersion: 12, LocksKeptUntil: 13,
	}}
}

func fullRequestItem(t *testing.T) any {
	shard := 3
	ik, err := newIndexKeys("e1", "u1", "r1", 4)
	if err != nil {
		t.Fatal(err)
	}
	return requestItem{Key: Key{PK: "REQ#r1", SK: "META"}, IndexKeys: ik, Request: Request{
		EntityType: entity.Request, RequestID: "r1", EventID: "e1", UserID: "u1",
		EventType: Lottery, Status: StatusFailedFinal, UIPhase: PhaseAnnounced,
		LotteryCutoffAt: 1, AnnouncedAt: 2, UIResult: UIFailed, ResultCode: ResultFailedWorker,
		RequestedAt: 3, QueuedAt: 4, StartedAt: 5, FinishedAt: 6,
		FailureClass: NonRetryable, ErrorCode: "X", ErrorMessage: "m",
		IdempotencyKey: "IDEMP#e1#u1", LeaseOwner: "w", LeaseExpiresAt: 7,
		SeatShard: &shard, SeatEpoch: 2, HoldExpiresAt: 9, ServedAt: 10, TTL: 8,
		Queue: &QueueEstimate{},
	}}
}
