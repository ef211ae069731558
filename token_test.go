package asyncevent_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// refusals counts the transactions DynamoDB cancelled on a failed condition, as they
// come off the wire (beneath the SDK's retries).
type refusals struct {
	next aws.HTTPClient
	n    atomic.Int64
}

func (r *refusals) Do(req *http.Request) (*http.Response, error) {
	resp, err := r.next.Do(req)
	if err != nil || resp.StatusCode != http.StatusBadRequest || !strings.HasSuffix(req.Header.Get("X-Amz-Target"), ".TransactWriteItems") {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if bytes.Contains(body, []byte("ConditionalCheckFailed")) {
		r.n.Add(1)
	}
	return resp, err
}

// Writes whose response is lost after DynamoDB applied them are sent again (by the
// SDK, or by the seat claim itself); no retry takes a second seat or turns a click
// into a duplicate of itself. Ingest writes no transaction, and neither does the
// worker: a lost answer of the lock's put is recognised by the requestId the retry
// meets, a lost answer of a seat claim by the request's seat token the retry finds
// on the capacity item.
func TestLostResponsesTakeNoSecondSeat(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	refused := &refusals{}
	wire := dynamodb.New(asynceventtest.DynamoDB(t).Options(), func(o *dynamodb.Options) {
		refused.next, o.HTTPClient = o.HTTPClient, refused
	})
	db, faults := asynceventtest.NewFaultyClient(wire, asynceventtest.FaultPlan{
		Seed: 8, LoseRate: 0.4, Operations: []string{"PutItem", "TransactWriteItems"},
	}, func(o *dynamodb.Options) { o.IdempotencyTokenProvider = nil })
	c := asynceventtest.NewTableOn(t, db, asyncevent.Options{})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 100})
	require.NoError(t, err)

	const n = 40
	users := make([]string, n)
	q := queue.NewMemory(queue.MemoryOptions{})
	for i := range users {
		users[i] = fmt.Sprintf("user-%02d", i)
		p, err := c.Submit(ctx, q, "sale", users[i])
		require.NoError(t, err)
		assert.False(t, p.Duplicate, "%s's only click is not a duplicate", users[i])
	}
	participateLost := faults.Counts().Lost
	require.Positive(t, participateLost, "the plan lost some of the lock's and the request's puts")
	assert.Zero(t, refused.n.Load(), "ingest writes no transaction")

	// The worker's single writes (its start, its seats, SUCCEEDED) lose answers too.
	workerDB, workerFaults := asynceventtest.NewFaultyClient(wire, asynceventtest.FaultPlan{
		Seed: 9, LoseRate: 0.3, Operations: []string{"UpdateItem", "TransactWriteItems"},
	}, func(o *dynamodb.Options) { o.IdempotencyTokenProvider = nil })
	wc, err := asyncevent.New(workerDB, asyncevent.Options{TableName: c.TableName()})
	require.NoError(t, err)
	runWorker(t, wc, q, asyncevent.WorkerOptions{})
	eventually(t, "every seat taken", func() bool {
		capacity, err := c.GetCapacity(ctx, "sale")
		return err == nil && capacity.CapacityRemaining == 100-n
	})
	eventually(t, "every winner written", func() bool {
		st, err := c.EventStats(ctx, "sale")
		return err == nil && st.ByStatus[asyncevent.StatusSucceeded] == n
	})
	require.Positive(t, workerFaults.Counts().Lost, "the plan lost some of the worker's responses")
	assert.Zero(t, refused.n.Load(), "no transaction refused")
	rep := asynceventtest.CheckEvent(t, c, "sale", asynceventtest.CheckOptions{Users: users})
	assert.Equal(t, n, rep.ByStatus[asyncevent.StatusSucceeded])
}
