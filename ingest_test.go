package asyncevent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/queue"
)

// sendQueue is a queue that only records sends, or fails them: ingest never receives.
type sendQueue struct {
	mu   sync.Mutex
	sent []queue.OutgoingMessage
	fail error
}

func (q *sendQueue) Send(_ context.Context, m queue.OutgoingMessage) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.fail != nil {
		return q.fail
	}
	q.sent = append(q.sent, m)
	return nil
}

func (q *sendQueue) Receive(context.Context, int, time.Duration, time.Duration) ([]queue.Delivery, error) {
	return nil, nil
}
func (q *sendQueue) Delete(context.Context, ...string) error { return nil }
func (q *sendQueue) ChangeVisibility(context.Context, string, time.Duration) error {
	return nil
}

func (q *sendQueue) messages(t *testing.T) []asyncevent.Message {
	t.Helper()
	q.mu.Lock()
	defer q.mu.Unlock()
	var ms []asyncevent.Message
	for _, s := range q.sent {
		m, err := asyncevent.DecodeMessage(s.Body)
		require.NoError(t, err)
		assert.Equal(t, m.EventID, s.GroupID)
		assert.Equal(t, m.RequestID, s.DeduplicationID)
		ms = append(ms, m)
	}
	return ms
}

func (q *sendQueue) setFail(err error) {
	q.mu.Lock()
	q.fail = err
	q.mu.Unlock()
}

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// newIngest returns a client on a fresh table with an open FIRST_COME event "ev".
func newIngest(t *testing.T, opts asyncevent.Options) (*asyncevent.Client, *asynceventtest.Clock) {
	t.Helper()
	clock := asynceventtest.NewClock(t0)
	if opts.Clock == nil {
		opts.Clock = clock.Now
	}
	c := asynceventtest.NewTableWith(t, opts)
	_, err := c.CreateEvent(context.Background(), asyncevent.EventSettings{
		EventID: "ev", EventType: asyncevent.FirstCome, CapacityTotal: 10,
	})
	require.NoError(t, err)
	return c, clock
}

// items returns the table's items by entity type.
func items(t *testing.T, c *asyncevent.Client) map[entity.Type][]map[string]types.AttributeValue {
	t.Helper()
	byType := map[entity.Type][]map[string]types.AttributeValue{}
	for _, it := range asynceventtest.ScanTable(t, c.TableName()) {
		var e struct {
			EntityType entity.Type `dynamodbav:"entityType"`
		}
		require.NoError(t, attributevalue.UnmarshalMap(it, &e))
		byType[e.EntityType] = append(byType[e.EntityType], it)
	}
	return byType
}

func TestConcurrentClicksOfOneUserMakeOneRequest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _ := newIngest(t, asyncevent.Options{})
	q := &sendQueue{}

	const clicks = 200
	ids := make([]string, clicks)
	dups := make([]bool, clicks)
	var wg sync.WaitGroup
	for i := range clicks {
		wg.Go(func() {
			p, err := c.Submit(ctx, q, "ev", "alice")
			assert.NoError(t, err)
			ids[i], dups[i] = p.RequestID, p.Duplicate
		})
	}
	wg.Wait()

	news := 0
	for i := range clicks {
		assert.Equal(t, ids[0], ids[i])
		if !dups[i] {
			news++
		}
	}
	assert.Equal(t, 1, news, "exactly one click is the new participation")
	byType := items(t, c)
	assert.Len(t, byType[entity.Request], 1)
	assert.Len(t, byType[entity.Idempotency], 1)
	assert.Len(t, q.messages(t), 1)

	r, err := c.GetRequest(ctx, ids[0])
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusQueued, r.Status)
	p, err := c.LookupParticipation(ctx, "ev", "alice")
	require.NoError(t, err)
	assert.Equal(t, ids[0], p.RequestID)
}

func TestManyUsersAreQueuedAndIndexed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _ := newIngest(t, asyncevent.Options{Clock: time.Now})
	q := &sendQueue{}

	const users = 1000
	work := make(chan int)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := range work {
				p, err := c.Submit(ctx, q, "ev", fmt.Sprintf("user-%04d", i))
				assert.NoError(t, err)
				assert.False(t, p.Duplicate)
				assert.Equal(t, asyncevent.StatusQueued, p.Request.Status)
			}
		})
	}
	for i := range users {
		work <- i
	}
	close(work)
	wg.Wait()

	byType := items(t, c)
	require.Len(t, byType[entity.Request], users)
	assert.Len(t, byType[entity.Idempotency], users)
	assert.Len(t, q.messages(t), users)
	for _, raw := range byType[entity.Request] {
		var r struct {
			asyncevent.Request
			asyncevent.IndexKeys
		}
		require.NoError(t, attributevalue.UnmarshalMap(raw, &r))
		assert.Equal(t, asyncevent.StatusQueued, r.Status)
		want, err := (&asyncevent.EventSettings{EventID: "ev"}).RequestIndexKeys(r.UserID, r.RequestID, r.QueuedAt)
		require.NoError(t, err)
		assert.Equal(t, want, r.IndexKeys)
		assert.Regexp(t, `^QAT#\d{13}#REQ#`+r.RequestID+`$`, r.GSI2SK)
		assert.GreaterOrEqual(t, r.QueuedAt, r.RequestedAt)
	}
	for typ, its := range byType {
		if typ == entity.Request {
			continue
		}
		for _, it := range its {
			for name := range it {
				assert.False(t, strings.HasPrefix(name, "GSI"), "%s item has %s", typ, name)
			}
		}
	}
	// Each user sees their one request on GSI1.
	page, err := c.ListUserRequests(ctx, "user-0042", asyncevent.PageOptions{})
	require.NoError(t, err)
	require.Len(t, page.Requests, 1)
	assert.Equal(t, "user-0042", page.Requests[0].UserID)
}

func TestRequestStuckInReceivedIsResentAfterTheGracePeriod(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, clock := newIngest(t, asyncevent.Options{RedriveAfter: time.Minute})
	q := &sendQueue{}

	// A crash between the write and the send: only Participate ran.
	first, err := c.Rows().Participate(ctx, "ev", "bob")
	require.NoError(t, err)

	clock.Advance(30 * time.Second)
	p, err := c.Submit(ctx, q, "ev", "bob")
	require.NoError(t, err)
	assert.True(t, p.Duplicate)
	assert.Empty(t, q.messages(t), "within the grace period the first click may still be sending")

	clock.Advance(31 * time.Second)
	p, err = c.Submit(ctx, q, "ev", "bob")
	require.NoError(t, err)
	assert.True(t, p.Duplicate)
	assert.Equal(t, first.RequestID, p.RequestID)
	msgs := q.messages(t)
	require.Len(t, msgs, 1)
	assert.Equal(t, first.RequestID, msgs[0].RequestID)
	r, err := c.GetRequest(ctx, first.RequestID)
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusQueued, r.Status)
	assert.Equal(t, first.Request.QueuedAt, r.QueuedAt, "its place in line is its put's, not the re-send's")
	assert.Equal(t, first.ParticipatedAt, r.QueuedAt)

	// Once queued, later duplicates send nothing more.
	clock.Advance(time.Hour)
	_, err = c.Submit(ctx, q, "ev", "bob")
	require.NoError(t, err)
	assert.Len(t, q.messages(t), 1)
}

func TestFailedEnqueueEndsTheRequestAndReleasesTheLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, clock := newIngest(t, asyncevent.Options{StatusLog: true})
	q := &sendQueue{}
	q.setFail(errors.New("sqs: service unavailable"))

	p, err := c.Submit(ctx, q, "ev", "carol")
	require.ErrorIs(t, err, asyncevent.ErrEnqueueFailed)
	assert.Contains(t, err.Error(), "service unavailable")
	require.NotEmpty(t, p.RequestID)

	failed, err := c.GetRequest(ctx, p.RequestID)
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusFailedFinal, failed.Status)
	assert.Equal(t, asyncevent.UIFailed, failed.UIResult)
	assert.Equal(t, asyncevent.ResultFailedIngestEnqueue, failed.ResultCode)
	assert.Equal(t, "FAILED_INGEST_ENQUEUE", failed.ErrorCode)
	assert.Equal(t, "sqs: service unavailable", failed.ErrorMessage)
	assert.Equal(t, asyncevent.MillisOf(clock.Now()), failed.FinishedAt)
	assert.Zero(t, failed.QueuedAt, "its message never reached the queue: no queuedAt (seed 003, pitfall 2)")
	_, err = c.LookupParticipation(ctx, "ev", "carol")
	assert.ErrorIs(t, err, asyncevent.ErrNotFound, "the lock is released")

	// Listed: its put wrote its index keys.
	page, err := c.ListUserRequests(ctx, "carol", asyncevent.PageOptions{})
	require.NoError(t, err)
	require.Len(t, page.Requests, 1)
	assert.Equal(t, p.RequestID, page.Requests[0].RequestID)

	logs, err := c.ListStatusLogs(ctx, p.RequestID)
	require.NoError(t, err)
	require.Len(t, logs, 2)
	assert.Equal(t, asyncevent.StatusReceived, logs[0].ToStatus)
	assert.Equal(t, asyncevent.StatusReceived, logs[1].FromStatus)
	assert.Equal(t, asyncevent.StatusFailedFinal, logs[1].ToStatus)

	// The user can participate again: a fresh request; the failed one stays.
	q.setFail(nil)
	clock.Advance(time.Second)
	again, err := c.Submit(ctx, q, "ev", "carol")
	require.NoError(t, err)
	assert.False(t, again.Duplicate)
	assert.NotEqual(t, p.RequestID, again.RequestID)
	page, err = c.ListUserRequests(ctx, "carol", asyncevent.PageOptions{})
	require.NoError(t, err)
	require.Len(t, page.Requests, 2)
	assert.Equal(t, again.RequestID, page.Requests[0].RequestID, "newest first")
	assert.Equal(t, asyncevent.StatusFailedFinal, page.Requests[1].Status)
}

func TestMarkQueuedLosesHarmlesslyToTheWorker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _ := newIngest(t, asyncevent.Options{})
	p, err := c.Rows().Participate(ctx, "ev", "dave")
	require.NoError(t, err)
	m := asyncevent.Message{V: 1, RequestID: p.RequestID, EventID: "ev", UserID: "dave",
		EventType: asyncevent.FirstCome, RequestedAt: p.Request.RequestedAt}

	// The worker got the message first and started the request.
	setStatus(t, c.TableName(), p.RequestID, asyncevent.StatusProcessing)
	before := asynceventtest.ScanTable(t, c.TableName())

	tr, err := c.Rows().MarkQueued(ctx, m.Ref())
	require.NoError(t, err)
	assert.False(t, tr.Applied)
	require.NotNil(t, tr.Current)
	assert.Equal(t, asyncevent.StatusProcessing, tr.Current.Status)
	assert.ElementsMatch(t, before, asynceventtest.ScanTable(t, c.TableName()), "nothing changed")

	// And on a request that does not exist: ErrNotFound, nothing written.
	m.RequestID = "no-such-request"
	_, err = c.Rows().MarkQueued(ctx, m.Ref())
	assert.ErrorIs(t, err, asyncevent.ErrNotFound)
	assert.ElementsMatch(t, before, asynceventtest.ScanTable(t, c.TableName()))
}

// setStatus writes a request's status behind the library's back, as another process
// would.
func setStatus(t *testing.T, table, requestID string, s asyncevent.Status) {
	t.Helper()
	av, err := attributevalue.MarshalMap(asyncevent.Key{PK: "REQ#" + requestID, SK: "META"}) // the design's Request key
	require.NoError(t, err)
	_, err = asynceventtest.DynamoDB(t).UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: av,
		UpdateExpression:          aws.String("SET #s = :s"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: string(s)}},
	})
	require.NoError(t, err)
}

func TestBadInputWritesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, clock := newIngest(t, asyncevent.Options{})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{
		EventID: "later", EventType: asyncevent.FirstCome, CapacityTotal: 1,
		StartsAt: asyncevent.MillisOf(t0.Add(time.Hour)), EndsAt: asyncevent.MillisOf(t0.Add(2 * time.Hour)),
	})
	require.NoError(t, err)
	_, err = c.CreateEvent(ctx, asyncevent.EventSettings{
		EventID: "lotto", EventType: asyncevent.Lottery, WinnerCount: 1,
		LotteryCutoffAt: asyncevent.MillisOf(t0.Add(time.Minute)),
	})
	require.NoError(t, err)
	before := asynceventtest.ScanTable(t, c.TableName())
	q := &sendQueue{}

	tests := []struct {
		name          string
		event, user   string
		advance       time.Duration
		want          error
		wantFieldName string
	}{
		{"user with separator", "ev", "u#1", 0, asyncevent.ErrInvalidID, "userId"},
		{"empty user", "ev", "", 0, asyncevent.ErrInvalidID, "userId"},
		{"huge user", "ev", strings.Repeat("x", 4096), 0, asyncevent.ErrInvalidID, "userId"},
		{"control character", "ev", "u\x07", 0, asyncevent.ErrInvalidID, "userId"},
		{"event with separator", "ev#CAPACITY", "u1", 0, asyncevent.ErrInvalidID, "eventId"},
		{"unknown event", "nope", "u1", 0, asyncevent.ErrEventNotFound, ""},
		{"not open yet", "later", "u1", 0, asyncevent.ErrEventNotOpen, ""},
		{"ended", "later", "u1", 3 * time.Hour, asyncevent.ErrEventClosed, ""},
		{"after the lottery cutoff", "lotto", "u1", 3 * time.Hour, asyncevent.ErrEventClosed, ""},
	}
	for _, tt := range tests {
		clock.Advance(tt.advance)
		_, err := c.Submit(ctx, q, tt.event, tt.user)
		assert.ErrorIs(t, err, tt.want, tt.name)
		if tt.wantFieldName != "" {
			var idErr *asyncevent.InvalidIDError
			require.ErrorAs(t, err, &idErr, tt.name)
			assert.Equal(t, tt.wantFieldName, idErr.Field, tt.name)
		}
		_, err = c.Rows().Participate(ctx, tt.event, tt.user)
		assert.ErrorIs(t, err, tt.want, tt.name)
	}
	assert.ElementsMatch(t, before, asynceventtest.ScanTable(t, c.TableName()), "nothing was written")
	assert.Empty(t, q.messages(t))

	_, err = c.GetRequest(ctx, "a#b")
	assert.ErrorIs(t, err, asyncevent.ErrInvalidID)
	_, err = c.GetRequest(ctx, "missing")
	assert.ErrorIs(t, err, asyncevent.ErrNotFound)
	_, err = c.ListUserRequests(ctx, "u1", asyncevent.PageOptions{Limit: 101})
	assert.ErrorIs(t, err, asyncevent.ErrInvalidOptions)
}

func TestCreateEvent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTable(t)

	fc, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "fc", EventType: asyncevent.FirstCome, CapacityTotal: 1000, Name: "Spring sale"})
	require.NoError(t, err)
	got, err := c.GetEvent(ctx, "fc")
	require.NoError(t, err)
	assert.Equal(t, fc, got)
	capacity, err := c.GetCapacity(ctx, "fc")
	require.NoError(t, err)
	assert.Equal(t, int64(1000), capacity.CapacityTotal)
	assert.Equal(t, int64(1000), capacity.CapacityRemaining)

	_, err = c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "fc", EventType: asyncevent.FirstCome, CapacityTotal: 5})
	assert.ErrorIs(t, err, asyncevent.ErrEventExists)
	capacity, err = c.GetCapacity(ctx, "fc")
	require.NoError(t, err)
	assert.Equal(t, int64(1000), capacity.CapacityRemaining, "the existing event is untouched")

	cutoff := asyncevent.MillisOf(time.Now().Add(time.Hour))
	lot, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "lot", EventType: asyncevent.Lottery, WinnerCount: 100, LotteryCutoffAt: cutoff})
	require.NoError(t, err)
	assert.Regexp(t, `^[0-9a-f]{64}$`, lot.SeedCommitment)
	assert.Equal(t, asyncevent.PhaseCollecting, lot.Phase)
	draw, err := c.GetDraw(ctx, "lot")
	require.NoError(t, err)
	assert.Equal(t, asyncevent.PhaseCollecting, draw.Phase)
	assert.Empty(t, draw.Seed, "sealed")
	assert.Equal(t, lot.SeedCommitment, draw.SeedCommitment)
	_, err = c.GetCapacity(ctx, "lot")
	assert.ErrorIs(t, err, asyncevent.ErrNotFound, "a LOTTERY event has no capacity item")

	_, err = c.GetEvent(ctx, "none")
	assert.ErrorIs(t, err, asyncevent.ErrEventNotFound)

	for name, bad := range map[string]asyncevent.EventSettings{
		"no type":              {EventID: "x"},
		"no capacity":          {EventID: "x", EventType: asyncevent.FirstCome},
		"lottery without K":    {EventID: "x", EventType: asyncevent.Lottery, LotteryCutoffAt: cutoff},
		"lottery no cutoff":    {EventID: "x", EventType: asyncevent.Lottery, WinnerCount: 1},
		"capacity on lottery":  {EventID: "x", EventType: asyncevent.Lottery, WinnerCount: 1, LotteryCutoffAt: cutoff, CapacityTotal: 3},
		"ends before it opens": {EventID: "x", EventType: asyncevent.FirstCome, CapacityTotal: 1, StartsAt: 10, EndsAt: 5},
		"negative time":        {EventID: "x", EventType: asyncevent.FirstCome, CapacityTotal: 1, EndsAt: -1},
	} {
		_, err := c.CreateEvent(ctx, bad)
		assert.ErrorIs(t, err, asyncevent.ErrInvalidEvent, name)
	}
	_, err = c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "x#y", EventType: asyncevent.FirstCome, CapacityTotal: 1})
	assert.ErrorIs(t, err, asyncevent.ErrInvalidID)
	_, err = c.GetEvent(ctx, "x")
	assert.ErrorIs(t, err, asyncevent.ErrEventNotFound, "no refused event was stored")
}

func TestStatusLogFollowsIngest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _ := newIngest(t, asyncevent.Options{StatusLog: true})
	p, err := c.Submit(ctx, &sendQueue{}, "ev", "erin")
	require.NoError(t, err)
	logs, err := c.ListStatusLogs(ctx, p.RequestID)
	require.NoError(t, err)
	require.Len(t, logs, 2, "RECEIVED and QUEUED, in the same millisecond of the stopped clock")
	assert.Equal(t, asyncevent.Status(""), logs[0].FromStatus)
	assert.Equal(t, asyncevent.StatusReceived, logs[0].ToStatus)
	assert.Equal(t, asyncevent.StatusReceived, logs[1].FromStatus)
	assert.Equal(t, asyncevent.StatusQueued, logs[1].ToStatus)
	// The stored entries' bookkeeping, which the caller's StatusLog leaves out.
	key, err := asyncevent.NewRequestKey(p.RequestID)
	require.NoError(t, err)
	out, err := asynceventtest.DynamoDB(t).Query(ctx, &dynamodb.QueryInput{
		TableName:              aws.String(c.TableName()),
		KeyConditionExpression: aws.String("PK = :pk AND begins_with(SK, :log)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: key.Key().PK}, ":log": &types.AttributeValueMemberS{Value: asyncevent.StatusLogPrefix},
		},
	})
	require.NoError(t, err)
	require.Len(t, out.Items, 2)
	for _, raw := range out.Items {
		var stored struct {
			EntityType entity.Type `dynamodbav:"entityType"`
			TTL        int64       `dynamodbav:"ttl"`
		}
		require.NoError(t, attributevalue.UnmarshalMap(raw, &stored))
		assert.Equal(t, entity.StatusLog, stored.EntityType)
		assert.Equal(t, asyncevent.MillisOf(t0.Add(30*24*time.Hour)).Time().Unix(), stored.TTL)
	}
}

func TestListUserRequestsPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, clock := newIngest(t, asyncevent.Options{})
	q := &sendQueue{}
	var want []string
	for i := range 25 {
		ev := fmt.Sprintf("ev-%02d", i)
		_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: ev, EventType: asyncevent.FirstCome, CapacityTotal: 1})
		require.NoError(t, err)
		p, err := c.Submit(ctx, q, ev, "frank")
		require.NoError(t, err)
		want = append([]string{p.RequestID}, want...) // newest first
		clock.Advance(time.Millisecond)
		_, err = c.Submit(ctx, q, ev, "grace")
		require.NoError(t, err)
	}
	first, err := c.ListUserRequests(ctx, "frank", asyncevent.PageOptions{})
	require.NoError(t, err)
	require.Len(t, first.Requests, 20)
	require.NotEmpty(t, first.NextCursor)
	second, err := c.ListUserRequests(ctx, "frank", asyncevent.PageOptions{Cursor: first.NextCursor})
	require.NoError(t, err)
	require.Len(t, second.Requests, 5)
	var got []string
	for _, r := range append(first.Requests, second.Requests...) {
		assert.Equal(t, "frank", r.UserID)
		got = append(got, r.RequestID)
	}
	assert.Equal(t, want, got)

	// A cursor of frank's listing is refused for grace, and garbage is refused.
	for _, cursor := range []string{first.NextCursor, "!!!", "e30", strings.Repeat("A", 5000)} {
		_, err = c.ListUserRequests(ctx, "grace", asyncevent.PageOptions{Cursor: cursor})
		assert.ErrorIs(t, err, asyncevent.ErrInvalidCursor, cursor)
	}
}

func TestEventConfigIsCachedDuringASpike(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	counter := asynceventtest.NewCounter(asynceventtest.DynamoDB(t))
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableOn(t, counter, asyncevent.Options{ProgressEvery: -1, Clock: clock.Now})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "ev", EventType: asyncevent.FirstCome, CapacityTotal: 10})
	require.NoError(t, err)

	before := counter.Snapshot()
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			_, err := c.Rows().Participate(ctx, "ev", fmt.Sprintf("u%d", i))
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	d := counter.Snapshot().Sub(before)
	assert.Equal(t, 1, d.Calls["GetItem"], "one CONFIG read for 100 concurrent clicks")
	assert.Equal(t, 200, d.Calls["PutItem"], "a lock and a request each")
	assert.Zero(t, d.Calls["TransactWriteItems"])

	clock.Advance(5 * time.Second)
	_, err = c.Rows().Participate(ctx, "ev", "late")
	require.NoError(t, err)
	assert.Equal(t, 2, counter.Snapshot().Sub(before).Calls["GetItem"], "read again after the TTL")
}

// A put whose answer is lost after it was applied is settled within the call: the
// lock's by reading it back (it names this call's requestId), the request's by
// sending the message all the same and finding the request when marking it queued.
func TestLostParticipateResponseIsStillOurs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, prefix := range []string{"IDEMP#", "REQ#"} {
		t.Run(prefix, func(t *testing.T) {
			t.Parallel()
			db := asynceventtest.NewFaultyDynamoDB(asynceventtest.DynamoDB(t), asynceventtest.FaultPlan{
				LoseRate: 1, Operations: []string{"PutItem"}, KeyPrefix: prefix,
			})
			c := asynceventtest.NewTableOn(t, db, asyncevent.Options{})
			_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "ev", EventType: asyncevent.FirstCome, CapacityTotal: 1})
			require.NoError(t, err)
			q := &sendQueue{}

			p, err := c.Submit(ctx, q, "ev", "ann")
			require.NoError(t, err)
			assert.Equal(t, 1, db.Counts().Lost)
			assert.False(t, p.Duplicate, "the call recognises its own write")
			require.Len(t, q.messages(t), 1, "and sends its message")
			r, err := c.GetRequest(ctx, p.RequestID)
			require.NoError(t, err)
			assert.Equal(t, asyncevent.StatusQueued, r.Status)
			assert.Len(t, items(t, c)[entity.Request], 1)
		})
	}
}

// Ingest is the design's own writes: a new participation is the lock's put, the
// request's put and MarkQueued's update, no transaction; a duplicate click from
// another ingest node is the lock's failed put alone, answered from its old item
// (no read, no read units).
func TestIngestWritesNoTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	counter := asynceventtest.NewCounter(asynceventtest.DynamoDB(t))
	c := asynceventtest.NewTableOn(t, counter, asyncevent.Options{ProgressEvery: -1})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "ev", EventType: asyncevent.FirstCome, CapacityTotal: 10})
	require.NoError(t, err)
	q := &sendQueue{}
	_, err = c.Submit(ctx, q, "ev", "warm-up") // reads CONFIG into the cache
	require.NoError(t, err)

	before := counter.Snapshot()
	first, err := c.Submit(ctx, q, "ev", "ann")
	require.NoError(t, err)
	d := counter.Snapshot().Sub(before)
	assert.Equal(t, map[string]int{"PutItem": 2, "UpdateItem": 1}, d.Calls, "a new participation")

	other, err := asyncevent.New(counter, asyncevent.Options{ProgressEvery: -1, TableName: c.TableName()})
	require.NoError(t, err)
	_, err = other.Submit(ctx, q, "ev", "warm-up") // its own CONFIG read
	require.NoError(t, err)
	before = counter.Snapshot()
	dup, err := other.Submit(ctx, q, "ev", "ann")
	require.NoError(t, err)
	d = counter.Snapshot().Sub(before)
	assert.True(t, dup.Duplicate)
	assert.Equal(t, first.RequestID, dup.RequestID)
	assert.Equal(t, map[string]int{"PutItem": 1}, d.Calls, "a duplicate click on another node")
	assert.Zero(t, d.RCU)
}

// A lock left without its request (the ingest died between the two puts) heals on
// the user's next click once RedriveAfter has passed: the request is written from the
// lock and sent. Before that, a click is answered as the duplicate it is. The dying
// ingest tries to close the request's home shard until its 10 s bookkeeping deadline,
// a wall-clock one: the test runs InBubble, where it costs no wall time.
func TestLockWithoutRequestHealsOnTheNextClick(t *testing.T) {
	t.Parallel()
	asynceventtest.InBubble(t, func(t *testing.T) {
		ctx := context.Background()
		clock := asynceventtest.NewClock(t0)
		opts := asyncevent.Options{Clock: clock.Now, RedriveAfter: time.Minute, StatusLog: true}
		c := asynceventtest.NewTableWith(t, opts)
		_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "ev", EventType: asyncevent.FirstCome, CapacityTotal: 10})
		require.NoError(t, err)
		doomed := asynceventtest.NewFaultyDynamoDB(asynceventtest.DynamoDB(t), asynceventtest.FaultPlan{
			CrashAfterRate: 1, Operations: []string{"PutItem"}, KeyPrefix: "IDEMP#",
		})
		opts.TableName = c.TableName()
		dying, err := asyncevent.New(doomed, opts)
		require.NoError(t, err)
		q := &sendQueue{}

		deadQueue := asynceventtest.NewChaosQueue(queue.NewMemory(queue.MemoryOptions{}), asynceventtest.QueueFaultPlan{})
		deadQueue.Kill() // the process is gone by the time it would send
		_, err = dying.Submit(ctx, deadQueue, "ev", "ann")
		require.Error(t, err, "the ingest died after the lock")
		require.Equal(t, 1, doomed.Counts().Crashed)
		before := items(t, c)
		require.Len(t, before[entity.Idempotency], 1)
		require.Empty(t, before[entity.Request])
		report := asynceventtest.CheckEvent(t, c, "ev", asynceventtest.CheckOptions{Abandoned: []string{"ann"}})
		assert.Equal(t, 1, report.Abandoned)

		clock.Advance(30 * time.Second)
		p, err := c.Submit(ctx, q, "ev", "ann")
		require.NoError(t, err)
		assert.True(t, p.Duplicate, "within RedriveAfter the first click may still be writing")
		assert.Empty(t, items(t, c)[entity.Request])

		clock.Advance(31 * time.Second)
		healed, err := c.Submit(ctx, q, "ev", "ann")
		require.NoError(t, err)
		assert.Equal(t, p.RequestID, healed.RequestID)
		r, err := c.GetRequest(ctx, healed.RequestID)
		require.NoError(t, err)
		assert.Equal(t, asyncevent.StatusQueued, r.Status)
		assert.Equal(t, asyncevent.MillisOf(t0), r.RequestedAt, "requested when the lock was written")
		msgs := q.messages(t)
		require.Len(t, msgs, 1)
		assert.Equal(t, healed.RequestID, msgs[0].RequestID)
		asynceventtest.CheckEvent(t, c, "ev", asynceventtest.CheckOptions{Users: []string{"ann"}, Unsettled: true})
	})
}

// A request put refused for certain (here throttled past the SDK's retries) writes
// nothing of the request and releases the lock, so the user's next click is a fresh
// participation; the error matches ErrThrottled.
func TestRefusedRequestPutReleasesTheLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := asynceventtest.NewFaultyDynamoDB(asynceventtest.DynamoDB(t), asynceventtest.FaultPlan{
		ThrottleRate: 1, Operations: []string{"PutItem"}, KeyPrefix: "REQ#",
	})
	c := asynceventtest.NewTableOn(t, db, asyncevent.Options{})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "ev", EventType: asyncevent.FirstCome, CapacityTotal: 10})
	require.NoError(t, err)
	q := &sendQueue{}

	_, err = c.Submit(ctx, q, "ev", "ann")
	require.ErrorIs(t, err, asyncevent.ErrThrottled)
	assert.Empty(t, items(t, c)[entity.Idempotency], "the lock was released")
	assert.Empty(t, items(t, c)[entity.Request])
	assert.Empty(t, q.messages(t))
}

func TestItemLifetimes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now, LockTTL: 48 * time.Hour})
	end := t0.Add(24 * time.Hour)
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "ev", EventType: asyncevent.FirstCome, CapacityTotal: 1, EndsAt: asyncevent.MillisOf(end)})
	require.NoError(t, err)
	_, err = c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "open", EventType: asyncevent.FirstCome, CapacityTotal: 1})
	require.NoError(t, err)
	p, err := c.Submit(ctx, &sendQueue{}, "ev", "ann")
	require.NoError(t, err)
	_, err = c.Submit(ctx, &sendQueue{}, "open", "ann")
	require.NoError(t, err)

	stored, err := asyncevent.ReadStoredRequest(ctx, c, p.RequestID)
	require.NoError(t, err)
	assert.Equal(t, t0.Add(90*24*time.Hour).Unix(), stored.TTL, "requests: 90 days")
	for _, raw := range items(t, c)[entity.Idempotency] {
		var l asyncevent.IdempotencyLock
		require.NoError(t, attributevalue.UnmarshalMap(raw, &l))
		switch l.EventID {
		case "ev":
			assert.Equal(t, end.Add(48*time.Hour).Unix(), l.TTL, "locks: the event's end plus LockTTL")
		case "open":
			assert.Zero(t, l.TTL, "an event without an end keeps its locks")
		}
	}
	for _, raw := range items(t, c)[entity.Config] {
		_, has := raw["ttl"]
		assert.False(t, has, "event configs are kept")
	}
}

func TestRepeatClicksOnTheSameClientCostNoCall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	counter := asynceventtest.NewCounter(asynceventtest.DynamoDB(t))
	c := asynceventtest.NewTableOn(t, counter, asyncevent.Options{ProgressEvery: -1, DuplicateCacheSize: 2})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "ev", EventType: asyncevent.FirstCome, CapacityTotal: 5})
	require.NoError(t, err)
	q := &sendQueue{}
	first, err := c.Submit(ctx, q, "ev", "ann")
	require.NoError(t, err)

	before := counter.Snapshot()
	again, err := c.Submit(ctx, q, "ev", "ann")
	require.NoError(t, err)
	assert.True(t, again.Duplicate)
	assert.Equal(t, first.RequestID, again.RequestID)
	assert.Zero(t, counter.Snapshot().Sub(before).RoundTrips(), "answered from the client's cache")

	// The cache is bounded: after two more users, ann's entry is gone and her next
	// click asks the table (one cancelled transaction), with the same answer.
	for _, u := range []string{"bob", "cid"} {
		_, err := c.Submit(ctx, q, "ev", u)
		require.NoError(t, err)
	}
	before = counter.Snapshot()
	again, err = c.Submit(ctx, q, "ev", "ann")
	require.NoError(t, err)
	assert.Equal(t, first.RequestID, again.RequestID)
	assert.Equal(t, 1, counter.Snapshot().Sub(before).RoundTrips())
	assert.Len(t, q.messages(t), 3)
}

// A repeat click on a paused event gets its participation on every node, whether
// the node remembers it or not, and writes nothing; a new user's click is
// ErrEventPaused.
func TestRepeatClickOnAPausedEvent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now, EventCacheTTL: -1, ProgressEvery: -1})
	other, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: clock.Now, EventCacheTTL: -1, ProgressEvery: -1})
	require.NoError(t, err)
	_, err = c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "rep", EventType: asyncevent.FirstCome, CapacityTotal: 5})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	first, err := c.Submit(ctx, q, "rep", "u1")
	require.NoError(t, err)
	up, err := c.PauseEvent(ctx, "rep", asyncevent.ControlInput{Actor: "ops"})
	require.NoError(t, err)
	require.True(t, up.Applied)
	before := itemsOf(t, c)
	for name, node := range map[string]*asyncevent.Client{"another node": other, "the first click's node": c} {
		p, err := node.Submit(ctx, q, "rep", "u1")
		require.NoError(t, err, name)
		assert.Equal(t, first.RequestID, p.RequestID, name)
		assert.True(t, p.Duplicate, name)
	}
	_, err = other.Submit(ctx, q, "rep", "u2")
	assert.ErrorIs(t, err, asyncevent.ErrEventPaused, "a new user")
	assert.Equal(t, before, itemsOf(t, c), "nothing written")
}

// afterPut wraps a DynamoDB client and calls a hook once a PutItem on an item whose PK
// starts with prefix has landed, or holds such a put back for a while (honouring its
// context, as the SDK would) before it goes.
type afterPut struct {
	asyncevent.DynamoDB
	prefix string
	landed func()        // called after each such put returns
	delay  time.Duration // held back before it is sent
	sent   atomic.Int32  // such puts sent on to DynamoDB
}

func (a *afterPut) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	pk, _ := in.Item["PK"].(*types.AttributeValueMemberS)
	ours := pk != nil && strings.HasPrefix(pk.Value, a.prefix)
	if ours && a.delay > 0 {
		select {
		case <-time.After(a.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if ours {
		a.sent.Add(1)
	}
	out, err := a.DynamoDB.PutItem(ctx, in, optFns...)
	if ours && a.landed != nil {
		a.landed()
	}
	return out, err
}

// A client that hangs up right after the lock's put landed (its HTTP request
// cancelled) still gets its click written, sent and processed: the lock is not left
// without its request.
func TestHungUpClientStillCompletesTheIngest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	opts := asyncevent.Options{Clock: clock.Now, StatusLog: true}
	admin := asynceventtest.NewTableWith(t, opts)
	_, err := admin.CreateEvent(ctx, asyncevent.EventSettings{EventID: "ev", EventType: asyncevent.FirstCome, CapacityTotal: 2})
	require.NoError(t, err)

	callerCtx, hangUp := context.WithCancel(ctx)
	defer hangUp()
	db := &afterPut{DynamoDB: asynceventtest.DynamoDB(t), prefix: "IDEMP#", landed: hangUp}
	opts.TableName = admin.TableName()
	c, err := asyncevent.New(db, opts)
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})

	p, err := c.Submit(callerCtx, q, "ev", "ann")
	require.NoError(t, err, "the writes after the lock do not run under the caller's context")
	require.Error(t, callerCtx.Err(), "the caller hung up after the lock landed")
	assert.False(t, p.Duplicate)
	r, err := admin.GetRequest(ctx, p.RequestID)
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusQueued, r.Status, "written, sent and marked queued")
	require.Equal(t, 1, q.Len().Visible, "its message is on the queue")

	proc := asyncevent.NewProcessor(admin, asyncevent.ProcessOptions{})
	ds, err := q.Receive(ctx, 10, 0, time.Minute)
	require.NoError(t, err)
	assert.Empty(t, asynceventtest.Process(ctx, proc, ds))
	r, err = admin.GetRequest(ctx, p.RequestID)
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusSucceeded, r.Status)
	report := asynceventtest.CheckEvent(t, admin, "ev", asynceventtest.CheckOptions{Users: []string{"ann"}})
	assert.Equal(t, 1, report.Locks, "the lock names its request")

	// A caller gone before the lock's put writes nothing.
	gone, cancel := context.WithCancel(ctx)
	cancel()
	_, err = c.Submit(gone, q, "ev", "bob")
	require.ErrorIs(t, err, context.Canceled)
	_, err = admin.LookupParticipation(ctx, "ev", "bob")
	assert.ErrorIs(t, err, asyncevent.ErrNotFound)
}

// A lottery's ingest writes nothing once its draw may begin (the cutoff plus
// DrawSettleWindow, less a quarter of the window here): a request put held back past
// that moment is never sent, and the lock it leaves is ended FAILED_FINAL, not made an
// entry, by the user's click after the cutoff.
func TestLotteryIngestStopsBeforeTheDrawMayBegin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	const window = time.Second // the deadline is 750 ms away at the cutoff
	// Without the status log the request's put is a PutItem, which afterPut holds back.
	opts := asyncevent.Options{Clock: clock.Now, DrawSettleWindow: window, RedriveAfter: time.Minute}
	admin := asynceventtest.NewTableWith(t, opts)
	cutoff := asyncevent.MillisOf(t0)
	_, err := admin.CreateEvent(ctx, asyncevent.EventSettings{EventID: "lotto", EventType: asyncevent.Lottery, WinnerCount: 1, LotteryCutoffAt: cutoff})
	require.NoError(t, err)
	db := &afterPut{DynamoDB: asynceventtest.DynamoDB(t), prefix: "REQ#", delay: 5 * time.Second}
	opts.TableName = admin.TableName()
	c, err := asyncevent.New(db, opts)
	require.NoError(t, err)
	q := &sendQueue{}

	began := time.Now()
	_, err = c.Submit(ctx, q, "lotto", "ann") // at the cutoff: still open
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(began), 5*time.Second, "cut off at the draw's deadline, not the request's own 10 s")
	assert.Zero(t, db.sent.Load(), "the request's put was never sent")
	assert.Empty(t, items(t, admin)[entity.Request])
	p, err := admin.LookupParticipation(ctx, "lotto", "ann")
	require.NoError(t, err, "the lock landed before the deadline")
	sent := len(q.messages(t)) // a message without its request, which a worker drops

	// After the cutoff, the user clicks again: within RedriveAfter the lock alone
	// answers; after it, its request is written FAILED_FINAL, never an entry.
	clock.Advance(time.Second)
	again, err := admin.Submit(ctx, q, "lotto", "ann")
	require.NoError(t, err, "a duplicate after the cutoff is its participation, not ErrEventClosed")
	assert.True(t, again.Duplicate)
	assert.Equal(t, p.RequestID, again.RequestID)
	assert.Empty(t, items(t, admin)[entity.Request])

	clock.Advance(time.Minute)
	ended, err := admin.Submit(ctx, q, "lotto", "ann")
	require.NoError(t, err)
	require.NotNil(t, ended.Request)
	assertIncomplete(t, ended.Request, p.ParticipatedAt, asyncevent.MillisOf(clock.Now()))
	assert.Greater(t, ended.Request.QueuedAt, cutoff, "never an entry of the draw")
	assert.Len(t, q.messages(t), sent, "nothing sent")

	_, err = admin.Submit(ctx, q, "lotto", "bob")
	assert.ErrorIs(t, err, asyncevent.ErrEventClosed, "a click after the cutoff without a lock")
}

func assertIncomplete(t *testing.T, r *asyncevent.Request, requestedAt, at asyncevent.EpochMillis) {
	t.Helper()
	assert.Equal(t, asyncevent.StatusFailedFinal, r.Status)
	assert.Equal(t, asyncevent.UIFailed, r.UIResult)
	assert.Equal(t, asyncevent.ResultFailedIngestEnqueue, r.ResultCode)
	assert.Equal(t, "INGEST_INCOMPLETE", r.ErrorCode)
	assert.Equal(t, asyncevent.NonRetryable, r.FailureClass)
	assert.NotEmpty(t, r.ErrorMessage)
	assert.Equal(t, requestedAt, r.RequestedAt, "requested when the lock was written")
	assert.Equal(t, at, r.QueuedAt)
	assert.Equal(t, at, r.FinishedAt)
}

// A lock left without its request (the ingest died between the two puts) and met by
// the user's click after the event ended is ended FAILED_FINAL with INGEST_INCOMPLETE:
// a final answer in the user's list and the admin's, no message, and later clicks are
// its duplicates.
func TestOrphanLockMetAfterTheEndEndsFailedFinal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	opts := asyncevent.Options{Clock: clock.Now, RedriveAfter: time.Minute, StatusLog: true}
	c := asynceventtest.NewTableWith(t, opts)
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "ev", EventType: asyncevent.FirstCome, CapacityTotal: 10,
		EndsAt: asyncevent.MillisOf(t0.Add(time.Second))})
	require.NoError(t, err)
	doomed := asynceventtest.NewFaultyDynamoDB(asynceventtest.DynamoDB(t), asynceventtest.FaultPlan{
		CrashAfterRate: 1, Operations: []string{"PutItem"}, KeyPrefix: "IDEMP#",
	})
	opts.TableName = c.TableName()
	dying, err := asyncevent.New(doomed, opts)
	require.NoError(t, err)
	_, err = dying.Submit(ctx, &sendQueue{}, "ev", "ann")
	require.Error(t, err, "the ingest died after the lock")
	p, err := c.LookupParticipation(ctx, "ev", "ann")
	require.NoError(t, err)

	clock.Advance(2 * time.Minute) // past the end and RedriveAfter
	q := &sendQueue{}
	ended, err := c.Submit(ctx, q, "ev", "ann")
	require.NoError(t, err, "not ErrEventClosed: the pair has a participation")
	assert.True(t, ended.Duplicate)
	assert.Equal(t, p.RequestID, ended.RequestID)
	require.NotNil(t, ended.Request)
	assertIncomplete(t, ended.Request, asyncevent.MillisOf(t0), asyncevent.MillisOf(clock.Now()))
	assert.Empty(t, q.messages(t))

	stored, err := c.GetRequest(ctx, p.RequestID)
	require.NoError(t, err)
	assert.Equal(t, ended.Request, stored)
	mine, err := c.ListUserRequests(ctx, "ann", asyncevent.PageOptions{})
	require.NoError(t, err)
	require.Len(t, mine.Requests, 1)
	assert.Equal(t, asyncevent.StatusFailedFinal, mine.Requests[0].Status)
	logs, err := c.ListStatusLogs(ctx, p.RequestID)
	require.NoError(t, err)
	require.Len(t, logs, 2)
	assert.Equal(t, asyncevent.StatusReceived, logs[0].ToStatus)
	assert.Equal(t, asyncevent.MillisOf(t0), logs[0].OccurredAt)
	assert.Equal(t, asyncevent.StatusFailedFinal, logs[1].ToStatus)
	st, err := c.EventStats(ctx, "ev")
	require.NoError(t, err)
	assert.Equal(t, map[asyncevent.ResultCode]int{asyncevent.ResultFailedIngestEnqueue: 1}, st.ByResultCode)

	again, err := c.Submit(ctx, q, "ev", "ann")
	require.NoError(t, err)
	assert.True(t, again.Duplicate)
	assert.Equal(t, p.RequestID, again.RequestID, "its lock stays, naming it")
	_, err = c.Submit(ctx, q, "ev", "bob")
	assert.ErrorIs(t, err, asyncevent.ErrEventClosed)
	asynceventtest.CheckEvent(t, c, "ev", asynceventtest.CheckOptions{Users: []string{"ann"}})
}

// tokenLedger emulates DynamoDB's ClientRequestToken rule on TransactWriteItems: a
// token seen before (answered or not) with other parameters is refused with
// IdempotentParameterMismatchException, as DynamoDB does for ten minutes.
type tokenLedger struct {
	asyncevent.DynamoDB
	mu     sync.Mutex
	seen   map[string]string // token → the call's items, as text
	fail   func(in *dynamodb.TransactWriteItemsInput) bool
	tokens []string
}

func (l *tokenLedger) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if in.ClientRequestToken != nil {
		token, params := *in.ClientRequestToken, describeItems(in.TransactItems)
		l.mu.Lock()
		l.tokens = append(l.tokens, token)
		before, ok := l.seen[token]
		l.seen[token] = params
		l.mu.Unlock()
		if ok && before != params {
			return nil, &types.IdempotentParameterMismatchException{Message: &token}
		}
	}
	if l.fail != nil && l.fail(in) {
		return nil, errors.New("connection reset") // recorded by DynamoDB, answer lost
	}
	return l.DynamoDB.TransactWriteItems(ctx, in, optFns...)
}

func describeItems(items []types.TransactWriteItem) string {
	var b strings.Builder
	for _, it := range items {
		if it.Put != nil {
			for _, k := range []string{"PK", "SK", "queuedAt"} {
				switch v := it.Put.Item[k].(type) {
				case *types.AttributeValueMemberS:
					b.WriteString(v.Value + "|")
				case *types.AttributeValueMemberN:
					b.WriteString(v.Value + "|")
				}
			}
		}
		b.WriteString(";")
	}
	return b.String()
}

// Healing a lock writes its request with a ClientRequestToken of its own: the first
// put's transaction (with the status log) was recorded by DynamoDB, its answer lost,
// and the heal's put, which differs from it, would otherwise be refused as an
// IdempotentParameterMismatch within ten minutes.
func TestHealUsesATokenOfItsOwn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	var broken atomic.Bool
	broken.Store(true)
	ledger := &tokenLedger{DynamoDB: asynceventtest.DynamoDB(t), seen: map[string]string{},
		fail: func(in *dynamodb.TransactWriteItemsInput) bool {
			pk := in.TransactItems[0].Put
			return broken.Load() && pk != nil && strings.HasPrefix(pk.Item["PK"].(*types.AttributeValueMemberS).Value, "REQ#")
		}}
	c := asynceventtest.NewTableOn(t, ledger, asyncevent.Options{Clock: clock.Now, RedriveAfter: time.Minute, StatusLog: true})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "ev", EventType: asyncevent.FirstCome, CapacityTotal: 10})
	require.NoError(t, err)
	q := &sendQueue{}

	_, err = c.Submit(ctx, q, "ev", "ann")
	require.Error(t, err, "the request's put never landed")
	require.Empty(t, items(t, c)[entity.Request])
	first := len(ledger.tokens)
	require.Positive(t, first)

	broken.Store(false)
	clock.Advance(2 * time.Minute) // well within DynamoDB's ten minutes
	healed, err := c.Submit(ctx, q, "ev", "ann")
	require.NoError(t, err)
	assert.Equal(t, asyncevent.StatusQueued, healed.Request.Status)
	for _, tok := range ledger.tokens[first:] {
		assert.NotContains(t, ledger.tokens[:first], tok, "the heal reuses no token of the first put")
	}
}
