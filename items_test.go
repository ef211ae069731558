package asyncevent

import (
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent/entity"
)

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

func TestStatusLifecycle(t *testing.T) {
	terminal := map[Status]bool{StatusSucceeded: true, StatusRejected: true, StatusFailedFinal: true}
	all := []Status{StatusReceived, StatusQueued, StatusProcessing, StatusSucceeded, StatusRejected, StatusFailedFinal}
	for _, s := range all {
		assert.True(t, s.Valid())
		assert.Equal(t, terminal[s], s.IsTerminal(), s)
		for _, to := range all {
			if s.IsTerminal() && !(s == StatusSucceeded && to == StatusRejected) {
				assert.False(t, CanTransition(s, to), "%s → %s", s, to)
			}
		}
	}
	assert.False(t, Status("DONE").Valid())
	assert.True(t, CanTransition(StatusReceived, StatusQueued))
	assert.True(t, CanTransition(StatusReceived, StatusProcessing), "the QUEUED race")
	assert.True(t, CanTransition(StatusProcessing, StatusProcessing), "lease takeover")
	assert.True(t, CanTransition(StatusSucceeded, StatusRejected), "an operator's cancel (CancelRequest): the one change of a final status")
	assert.False(t, CanTransition(StatusQueued, StatusReceived))
	assert.True(t, CanTransition(StatusReceived, StatusSucceeded), "a lottery entry drawn before a worker met it")
	assert.True(t, CanTransition(StatusQueued, StatusQueued), "a lottery entry collected")
	assert.False(t, CanTransition(StatusReceived, StatusReceived))
	assert.False(t, CanTransition(StatusProcessing, StatusQueued))
	assert.Equal(t, UIPending, UIResultOf(StatusProcessing))
	assert.Equal(t, UISuccess, UIResultOf(StatusSucceeded))
	assert.Equal(t, UIRejected, UIResultOf(StatusRejected))
	assert.Equal(t, UIFailed, UIResultOf(StatusFailedFinal))
}
