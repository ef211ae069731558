package asyncevent_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The event list's cursor is checked: a cursor of another partition, or of the
// EVENTS partition with a sort key the list never wrote, is ErrInvalidCursor, not a
// DynamoDB error or a page of something else.
func TestEventListCursorTampering(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := asynceventtest.NewClock(t0)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Clock: clock.Now})
	for i := range 3 {
		_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: fmt.Sprintf("e%d", i), EventType: asyncevent.FirstCome, CapacityTotal: 1})
		require.NoError(t, err)
		clock.Advance(time.Millisecond)
	}
	page, err := c.ListEvents(ctx, asyncevent.PageOptions{Limit: 1})
	require.NoError(t, err)
	require.NotEmpty(t, page.NextCursor)
	for name, key := range map[string]map[string]string{
		"another partition":      {"PK": "EVENT#e0", "SK": "CONFIG"},
		"an SK never written":    {"PK": "EVENTS", "SK": "CONFIG"},
		"a short createdAt":      {"PK": "EVENTS", "SK": "CAT#1#EVENT#e0"},
		"an extra attribute":     {"PK": "EVENTS", "SK": "CAT#0000000000001#EVENT#e0", "GSI1PK": "USER#x"},
		"another user's listing": {"GSI1PK": "USER#x", "GSI1SK": "QAT#0000000000001#REQ#r", "PK": "REQ#r", "SK": "META"},
	} {
		cursor := forgedCursor(t, key)
		_, err := c.ListEvents(ctx, asyncevent.PageOptions{Limit: 1, Cursor: cursor})
		assert.ErrorIs(t, err, asyncevent.ErrInvalidCursor, name)
	}
}

// forgedCursor encodes key as the library's cursors are: base64url of its JSON.
func forgedCursor(t *testing.T, key map[string]string) string {
	t.Helper()
	b, err := json.Marshal(key)
	require.NoError(t, err)
	return base64.RawURLEncoding.EncodeToString(b)
}

// An operator lists the events while another creates one: CreateEvent has written
// the list entry and its transaction is on its way. ListEvents finds the entry's
// config missing, takes the entry for a stray of a failed CreateEvent and deletes
// it; the transaction then succeeds, and the event is missing from the list for
// good (nothing writes its entry again).
func TestEventCreatedWhileListingStaysListed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	gate := &gateCreate{DynamoDB: asynceventtest.DynamoDB(t), entered: make(chan struct{}), release: make(chan struct{})}
	c := asynceventtest.NewTableOn(t, gate, asyncevent.Options{})
	done := make(chan error)
	go func() {
		_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "new", EventType: asyncevent.FirstCome, CapacityTotal: 3})
		done <- err
	}()
	<-gate.entered
	page, err := c.ListEvents(ctx, asyncevent.PageOptions{}) // the operator's screen refreshes
	require.NoError(t, err)
	assert.Empty(t, page.Events, "not made yet")
	close(gate.release)
	require.NoError(t, <-done)

	_, err = c.GetEvent(ctx, "new")
	require.NoError(t, err, "the event exists")
	page, err = c.ListEvents(ctx, asyncevent.PageOptions{})
	require.NoError(t, err)
	var listed []string
	for _, e := range page.Events {
		listed = append(listed, e.Event.EventID)
	}
	assert.Equal(t, []string{"new"}, listed, "an event made while an operator listed the events is missing from the list")
}

// gateCreate holds CreateEvent's transaction (the first TransactWriteItems) until
// release is closed, after telling entered: the moment between the event list's
// entry and the event's own items.
type gateCreate struct {
	asyncevent.DynamoDB
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (g *gateCreate) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	first := false
	g.once.Do(func() { first = true })
	if first {
		close(g.entered)
		<-g.release
	}
	return g.DynamoDB.TransactWriteItems(ctx, in, o...)
}
