package asyncevent

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/seed"
)

var updateStored = flag.Bool("update-stored", false, "rewrite testdata/stored_items.golden")

// renderAV prints an attribute value with its DynamoDB type, sets sorted.
func renderAV(v types.AttributeValue) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return "S:" + v.Value
	case *types.AttributeValueMemberN:
		return "N:" + v.Value
	case *types.AttributeValueMemberBOOL:
		return fmt.Sprintf("BOOL:%t", v.Value)
	case *types.AttributeValueMemberNS:
		ns := append([]string(nil), v.Value...)
		sort.Strings(ns)
		return "NS:" + strings.Join(ns, ",")
	case *types.AttributeValueMemberSS:
		ss := append([]string(nil), v.Value...)
		sort.Strings(ss)
		return "SS:" + strings.Join(ss, ",")
	case *types.AttributeValueMemberNULL:
		return "NULL"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// renderItem prints an item as the table holds it: one attribute a line, sorted.
func renderItem(t *testing.T, name string, item any) string {
	t.Helper()
	av, err := attributevalue.MarshalMap(item)
	require.NoError(t, err)
	names := make([]string, 0, len(av))
	for n := range av {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", name)
	for _, n := range names {
		fmt.Fprintf(&b, "%s = %s\n", n, renderAV(av[n]))
	}
	return b.String()
}

// TestStoredItemsUnchanged pins the attributes of fully set items, names, types and
// values, to testdata/stored_items.golden: the EventConfig item and the Request item,
// written before the caller's types (EventSettings, Event, Request) were split from
// the stored ones, and the StatusLog, Draw record, AuditEntry, HoldEvent and
// EventCapacity items, written before StatusLog, DrawRecord, AuditEntry, HoldEvent and
// Capacity were: the table's data is the same whatever a caller's type looks like
// (CHANGELOG's compatibility promise).
func TestStoredItemsUnchanged(t *testing.T) {
	got := strings.Join([]string{
		renderItem(t, "EventConfig item", fullConfigItem(t)),
		renderItem(t, "Request item", fullRequestItem(t)),
		renderItem(t, "StatusLog item", fullStatusLogItem()),
		renderItem(t, "Draw record", fullDrawItem()),
		renderItem(t, "AuditEntry item", fullAuditItem()),
		renderItem(t, "HoldEvent item", fullHoldEventItem()),
		renderItem(t, "EventCapacity item", fullCapacityItem()),
	}, "\n")
	golden := filepath.Join("testdata", "stored_items.golden")
	if *updateStored {
		require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), got)
}

// fullConfigItem is an EventConfig item with every attribute set.
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

// fullRequestItem is a Request item with every attribute set, and the fields that
// are not stored set too.
func fullRequestItem(t *testing.T) any {
	shard := 3
	ik, err := newIndexKeys("e1", "u1", "r1", 4)
	if err != nil {
		t.Fatal(err)
	}
	return requestItem{Key: Key{PK: "REQ#r1", SK: "META"}, IndexKeys: ik, storedRequest: storedRequest{
		EntityType: entity.Request,
		Request: Request{
			RequestID: "r1", EventID: "e1", UserID: "u1",
			EventType: Lottery, Status: StatusFailedFinal, UIPhase: PhaseAnnounced,
			LotteryCutoffAt: 1, AnnouncedAt: 2, UIResult: UIFailed, ResultCode: ResultFailedWorker,
			RequestedAt: 3, QueuedAt: 4, StartedAt: 5, FinishedAt: 6,
			FailureClass: NonRetryable, ErrorCode: "X", ErrorMessage: "m",
			HoldExpiresAt: 9, ServedAt: 10,
			Queue: &QueueEstimate{}, Lease: &LeaseState{Owner: "not stored"},
		},
		IdempotencyKey: "IDEMP#e1#u1", LeaseOwner: "w", LeaseExpiresAt: 7,
		SeatShard: &shard, SeatEpoch: 2, TTL: 8,
	}}
}

// fullStatusLogItem is a StatusLog item with every attribute set.
func fullStatusLogItem() any {
	return statusLogItem{Key: Key{PK: "REQ#r1", SK: "LOG#0000000000005#QUEUED-abc"}, EntityType: entity.StatusLog, StatusLog: StatusLog{
		RequestID: "r1", FromStatus: StatusReceived, ToStatus: StatusQueued, OccurredAt: 5, Message: "m",
	}, TTL: 6}
}

// fullDrawItem is a Draw record with every attribute set.
func fullDrawItem() any {
	return drawItem{Key: Key{PK: "EVENT#e1", SK: "DRAW"}, EntityType: entity.Draw, DrawRecord: DrawRecord{
		EventID: "e1", Phase: PhaseAnnounced, WinnerCount: 4, SeedCommitment: "abc",
		SeedMode: seed.Sealed, Seed: "def", EntryCount: 7, EntriesHash: "123", DrawnAt: 8, AnnouncedAt: 9,
	}}
}

// fullAuditItem is an AuditEntry item with every attribute set.
func fullAuditItem() any {
	return auditItem{Key: Key{PK: "EVENT#e1", SK: "AUDIT#0000000000003#abc"}, EntityType: entity.Audit, AuditEntry: AuditEntry{
		EventID: "e1", At: 3, Actor: "admin", Action: ActionClose, Detail: "d",
	}}
}

// fullHoldEventItem is a HoldEvent item with every attribute set.
func fullHoldEventItem() any {
	return holdEventItem{Key: Key{PK: "HOLD_EVENTS", SK: "EVENT#e1"}, EntityType: entity.HoldEvent, HoldEvent: HoldEvent{
		EventID: "e1", HoldFor: 10 * time.Minute, EndsAt: 2, CreatedAt: 1,
	}}
}

// fullCapacityItem is an EventCapacity item with every attribute set.
func fullCapacityItem() any {
	return capacityItem{Key: Key{PK: "EVENT#e1#CAPACITY#1", SK: "CAPACITY"}, EntityType: entity.Capacity, EventCapacity: EventCapacity{
		EventID: "e1", CapacityTotal: 3, CapacityRemaining: 1, UpdatedAt: 4, SoldOut: true, HoldFor: 10 * time.Minute,
	}, Holders: []string{"h2", "h1"}, PoolVersion: 5, Void: []string{"v1"}}
}

// attributeNames returns the names of the attributes item is stored with, sorted.
func attributeNames(t *testing.T, item any) []string {
	t.Helper()
	av, err := attributevalue.MarshalMap(item)
	require.NoError(t, err)
	var names []string
	for n := range av {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// TestItemAttributeNames pins the stored field names to seed 001 §2, and shows that
// only a Request item can carry index keys.
func TestItemAttributeNames(t *testing.T) {
	rk, _ := NewRequestKey("r1")
	ik, err := newIndexKeys("e1", "u1", "r1", 1)
	require.NoError(t, err)
	full := requestItem{Key: rk.Key(), IndexKeys: ik, storedRequest: storedRequest{
		EntityType: entity.Request,
		Request: Request{
			RequestID: "r1", EventID: "e1", UserID: "u1",
			EventType: Lottery, Status: StatusFailedFinal, UIPhase: PhaseAnnounced,
			LotteryCutoffAt: 1, AnnouncedAt: 2, UIResult: UIFailed, ResultCode: ResultFailedWorker,
			RequestedAt: 3, QueuedAt: 4, StartedAt: 5, FinishedAt: 6,
			FailureClass: NonRetryable, ErrorCode: "X", ErrorMessage: "m",
		},
		IdempotencyKey: "IDEMP#e1#u1", LeaseOwner: "w", LeaseExpiresAt: 7, TTL: 8,
	}}
	assert.Equal(t, strings.Fields(`GSI1PK GSI1SK GSI2PK GSI2SK PK SK announcedAt entityType
		errorCode errorMessage eventId eventType failureClass finishedAt idempotencyKey
		leaseExpiresAt leaseOwner lotteryCutoffAt queuedAt requestId requestedAt resultCode
		startedAt status ttl uiPhase uiResult userId`), attributeNames(t, full))

	// A request without an order time has no index keys at all (not empty strings,
	// which DynamoDB refuses as index keys).
	fresh := full
	fresh.IndexKeys = IndexKeys{}
	assert.NotContains(t, attributeNames(t, fresh), "GSI1PK")

	for name, item := range map[string]any{
		"lock":       lockItem{IdempotencyLock: IdempotencyLock{EntityType: entity.Idempotency, EventID: "e", UserID: "u", RequestID: "r", CreatedAt: 1, TTL: 2}},
		"capacity":   capacityItem{EntityType: entity.Capacity, EventCapacity: EventCapacity{EventID: "e", CapacityTotal: 1, CapacityRemaining: 1, UpdatedAt: 1}},
		"status log": statusLogItem{EntityType: entity.StatusLog, StatusLog: StatusLog{RequestID: "r", FromStatus: StatusQueued, ToStatus: StatusProcessing, OccurredAt: 1, Message: "m"}, TTL: 2},
		"config":     configItem{eventItem: eventItem{EntityType: entity.Config, Event: Event{EventSettings: EventSettings{EventID: "e", EventType: FirstCome, CapacityTotal: 1}, CreatedAt: 1}}},
	} {
		names := attributeNames(t, item)
		assert.Contains(t, names, "entityType", name)
		assert.Contains(t, names, "PK", name)
		for _, n := range names {
			assert.False(t, strings.HasPrefix(n, "GSI"), "%s item carries %s", name, n)
		}
	}
}
