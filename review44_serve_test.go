package asyncevent_test

import (
	"context"
	"encoding/hex"
	"errors"
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
	"github.com/asyncevent/asyncevent/draw"
)

// throttleVictim fails (with err) the first budget writes of the event's capacity
// item once victim is set; every other call passes. (A throttle,
// ProvisionedThroughputExceededException, does not show the defect: the serve's
// failFinal is throttled too and the entry stays undecided, as it should.)
type throttleVictim struct {
	asyncevent.DynamoDB
	t      *testing.T
	mu     sync.Mutex
	victim string
	budget int
	hits   int
	log    bool
	err    error
}

func (v *throttleVictim) hit(op string, key map[string]types.AttributeValue) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.victim == "" || skOf(key) != "CAPACITY" {
		return false
	}
	if v.log {
		v.t.Logf("%s %s %s (hit %d)", time.Now().Format("05.000"), op, pkOf(key), v.hits)
	}
	if v.hits >= v.budget {
		return false
	}
	v.hits++
	return true
}

func skOf(key map[string]types.AttributeValue) string {
	if s, ok := key["SK"].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

func pkOf(key map[string]types.AttributeValue) string {
	if s, ok := key["PK"].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

var errThrottledInjected = &types.ProvisionedThroughputExceededException{Message: aws.String("injected: the capacity shard is hot")}

func (v *throttleVictim) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if v.hit("UpdateItem", in.Key) {
		return nil, v.err
	}
	return v.DynamoDB.UpdateItem(ctx, in, o...)
}

func (v *throttleVictim) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	for _, it := range in.TransactItems {
		if it.Update != nil && v.hit("TransactWriteItems", it.Update.Key) {
			return nil, v.err
		}
	}
	return v.DynamoDB.TransactWriteItems(ctx, in, o...)
}

// Review 44: "no entry after it may be served before it" (serveEntry). The serve
// processes an entry's message as the queue would deliver it again, with the
// receive count growing on each retry, so that its fifth receive (DefaultMaxReceives)
// ends it FAILED_FINAL. Five failed claims in a row on the capacity item (connection
// errors, some 11 s of the serve's backoff; the sixth write, failFinal's, lands)
// thus forfeit the first entry's place for good: the serve passes it over and the
// next entry of the drawn order wins the seat, and VerifyPrequeue calls that OK (a
// "final failure"). The serve is the only one deciding entries and is resumable
// (an error would have let the operator run it again); a transient fault is no
// reason to end an entry: the first entry of the order should win.
func TestReview44FailedClaimsForfeitTheFirstEntry(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the serve's backoff, some 10 s")
	}
	t.Parallel()
	ctx := context.Background()
	c, clock := prequeueDrop(t, 1, 1)
	clock.Advance(time.Minute)
	entries := clickAll(t, c, &sendQueue{}, userIDs("early", 3))

	// The order, from the seed the Draw record keeps (Options.Seeds unset) and the
	// entries: the test's own look, to aim the throttle at the first entry.
	var seedHex string
	for _, item := range asynceventtest.ScanTable(t, c.TableName()) {
		if s, ok := item["seed"].(*types.AttributeValueMemberS); ok && pkOf(item) == "EVENT#drop" {
			seedHex = s.Value
		}
	}
	require.NotEmpty(t, seedHex)
	seed, err := hex.DecodeString(seedHex)
	require.NoError(t, err)
	order := draw.Order(seed, entries)

	db := &throttleVictim{DynamoDB: asynceventtest.DynamoDB(t), t: t, victim: order[0], budget: asyncevent.DefaultMaxReceives, log: false, err: errors.New("dial tcp: connection refused (injected)")}
	server, err := asyncevent.New(db, asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	clock.Advance(prequeueStart.Sub(clock.Now()) + asyncevent.DefaultDrawSettleWindow)
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	res, err := server.ServePrequeue(sctx, "drop")
	require.NoError(t, err)
	require.Equal(t, order, res.Order)
	first, err := c.GetRequest(ctx, order[0])
	require.NoError(t, err)
	t.Logf("first entry of the order: %s %s", first.Status, first.ResultCode)
	assert.Equal(t, order[:1], res.Winners, "the first entry of the drawn order wins the one seat")

	v, err := c.VerifyPrequeue(ctx, "drop")
	require.NoError(t, err)
	t.Logf("VerifyPrequeue: %s", v)
}
