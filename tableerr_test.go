package asyncevent_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// Every call on a table that does not exist says so, naming the table and how to make
// it; DynamoDB's own error stays wrapped.
func TestMissingTableNamesTheTableAndTheFix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := asynceventtest.UniqueTableName(t)
	c, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: name})
	require.NoError(t, err)

	_, getErr := c.GetRequest(ctx, "r1")
	_, eventErr := c.GetEvent(ctx, "sale")
	_, listErr := c.ListEventRequests(ctx, "sale", asyncevent.EventListOptions{})
	_, userErr := c.ListUserRequests(ctx, "ann", asyncevent.PageOptions{})
	for what, err := range map[string]error{
		"GetRequest": getErr, "GetEvent": eventErr, "ListEventRequests": listErr, "ListUserRequests": userErr,
		"CheckTable": c.CheckTable(ctx),
	} {
		require.ErrorIs(t, err, asyncevent.ErrTableNotFound, what)
		assert.Contains(t, err.Error(), name, what)
		assert.Contains(t, err.Error(), "Client.CreateTable", what)
		assert.Contains(t, err.Error(), "asyncevent table create", what)
		assert.NotErrorIs(t, err, asyncevent.ErrNotFound, what)
	}
	var notFound *types.ResourceNotFoundException
	assert.ErrorAs(t, getErr, &notFound, "the SDK's error is still there")
}

// A call that DynamoDB refuses as invalid on a table that differs from the design
// names the differences: a missing GSI2 on the admin list, a wrong key schema on a
// read by key.
func TestCallsOnAMismatchedTableNameTheDifference(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	noGSI2 := createRaw(t, seedTableInput(asynceventtest.UniqueTableName(t), false))
	_, err := noGSI2.ListEventRequests(ctx, "sale", asyncevent.EventListOptions{})
	require.ErrorIs(t, err, asyncevent.ErrTableMismatch)
	var mismatch *asyncevent.TableMismatchError
	require.ErrorAs(t, err, &mismatch)
	assert.Equal(t, []string{"global secondary index GSI2 is missing"}, mismatch.Problems)
	assert.Contains(t, err.Error(), noGSI2.TableName())
	_, err = noGSI2.GetRequest(ctx, "r1")
	assert.ErrorIs(t, err, asyncevent.ErrNotFound, "a call the table can serve is unaffected")

	name := asynceventtest.UniqueTableName(t)
	otherKeys := createRaw(t, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	_, err = otherKeys.GetRequest(ctx, "r1")
	require.ErrorAs(t, err, &mismatch)
	assert.Contains(t, mismatch.Problems, `table hash key is "id", want "PK"`)
	assert.Contains(t, err.Error(), name)
	assert.Contains(t, err.Error(), "asyncevent table check")
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }

func (s *syncBuf) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// ErrTableNotFound from the entry points a service calls, not only the
// reads the library's test covers.
func TestMissingTableEveryEntryPoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := asynceventtest.UniqueTableName(t)
	var logs syncBuf
	c, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: name,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})

	_, submitErr := c.Submit(ctx, q, "sale", "ann")
	_, createErr := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 1})
	_, participateErr := c.Rows().Participate(ctx, "sale", "ann")
	_, lookupErr := c.LookupParticipation(ctx, "sale", "ann")
	_, drawErr := c.Draw(ctx, "sale")
	_, verifyErr := c.VerifyDraw(ctx, "sale")
	_, statsErr := c.EventStats(ctx, "sale")
	_, eventsErr := c.ListEvents(ctx, asyncevent.PageOptions{Limit: 10})
	_, auditErr := c.ListAudit(ctx, "sale")
	_, logsErr := c.ListStatusLogs(ctx, "r1")
	_, confirmErr := c.Confirm(ctx, "r1")
	_, releaseErr := c.Release(ctx, "r1")
	_, pauseErr := c.PauseEvent(ctx, "sale", asyncevent.ControlInput{Actor: "op"})
	_, capErr := c.GetCapacity(ctx, "sale")
	_, getDrawErr := c.GetDraw(ctx, "sale")
	_, countErr := c.CountRequests(ctx, "sale")
	_, qsErr := c.QueueStats(ctx, "sale")
	_, sweepErr := c.Sweep(ctx, q, "sale", asyncevent.SweepOptions{})
	_, holdsErr := c.SweepHolds(ctx, "sale", asyncevent.HoldSweepOptions{})
	_, holdEventsErr := c.HoldEvents(ctx)
	_, markErr := c.Rows().MarkQueued(ctx, asyncevent.RequestRef{RequestID: "r1", EventID: "sale", UserID: "ann"})
	for what, err := range map[string]error{
		"Submit": submitErr, "CreateEvent": createErr, "Participate": participateErr, "LookupParticipation": lookupErr,
		"Draw": drawErr, "VerifyDraw": verifyErr, "EventStats": statsErr, "ListEvents": eventsErr, "ListAudit": auditErr,
		"ListStatusLogs": logsErr, "Confirm": confirmErr, "Release": releaseErr, "PauseEvent": pauseErr,
		"GetCapacity": capErr, "GetDraw": getDrawErr, "CountRequests": countErr, "QueueStats": qsErr,
		"Sweep": sweepErr, "SweepHolds": holdsErr, "HoldEvents": holdEventsErr, "MarkQueued": markErr,
	} {
		assert.ErrorIs(t, err, asyncevent.ErrTableNotFound, "%s: %v", what, err)
	}

	// The worker: a message for a missing table. Its error can only be seen in the log.
	body, err := asyncevent.EncodeMessage(asyncevent.Message{RequestID: "r1", EventID: "sale", UserID: "ann", EventType: asyncevent.FirstCome, V: 1, RequestedAt: 1})
	require.NoError(t, err)
	require.NoError(t, q.Send(ctx, queue.OutgoingMessage{Body: body}))
	w, err := asyncevent.NewWorker(c, q, asyncevent.WorkerOptions{})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	time.Sleep(2 * time.Second)
	stop, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_ = w.Stop(stop)
	t.Logf("worker log:\n%s", logs.String())
	assert.True(t, strings.Contains(logs.String(), name), "the worker's log names the table")
}

// docs/library.md says of ErrTableNotFound and the mismatch "DynamoDB's
// own error stays wrapped in both"; CheckTable's ErrTableNotFound drops it.
func TestCheckTableKeepsTheSDKError(t *testing.T) {
	t.Parallel()
	c, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: asynceventtest.UniqueTableName(t)})
	require.NoError(t, err)
	err = c.CheckTable(context.Background())
	require.ErrorIs(t, err, asyncevent.ErrTableNotFound)
	var notFound *types.ResourceNotFoundException
	assert.ErrorAs(t, err, &notFound, "the SDK's error is still there")
}
