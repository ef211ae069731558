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

// A transaction whose response is lost after DynamoDB applied it is retried by the
// SDK; its ClientRequestToken makes the retry succeed instead of failing on the
// condition its own first attempt broke. The SDK fills in a token where the input has
// none, unless the client's IdempotencyTokenProvider is nil, as it is here: so only
// the library's own token, on ClaimSeat's transaction, keeps the retries from showing
// up as refusals. Ingest writes no transaction; a lost answer of its lock's put is
// recognised by the requestId the retry meets, so no click comes back a duplicate of
// itself.
func TestLostTransactionResponsesAreRetriedByTheirToken(t *testing.T) {
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
	_, err := c.CreateEvent(ctx, asyncevent.EventConfig{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 100})
	require.NoError(t, err)

	const n = 40
	users := make([]string, n)
	q := asyncevent.NewMemoryQueue(asyncevent.MemoryQueueOptions{})
	for i := range users {
		users[i] = fmt.Sprintf("user-%02d", i)
		p, err := c.Submit(ctx, q, "sale", users[i])
		require.NoError(t, err)
		assert.False(t, p.Duplicate, "%s's only click is not a duplicate", users[i])
	}
	participateLost := faults.Counts().Lost
	require.Positive(t, participateLost, "the plan lost some of the lock's and the request's puts")
	assert.Zero(t, refused.n.Load(), "ingest writes no transaction")

	runWorker(t, c, q, asyncevent.WorkerOptions{})
	eventually(t, "every seat taken", func() bool { // with the request's SUCCEEDED, in one transaction
		capacity, err := c.GetCapacity(ctx, "sale")
		return err == nil && capacity.CapacityRemaining == 100-n
	})
	require.Greater(t, faults.Counts().Lost, participateLost, "the plan lost some of ClaimSeat's responses")
	assert.Zero(t, refused.n.Load(), "ClaimSeat: a retry refused by its own first attempt")
	rep := asynceventtest.CheckEvent(t, c, "sale", asynceventtest.CheckOptions{Users: users})
	assert.Equal(t, n, rep.ByStatus[asyncevent.StatusSucceeded])
}
