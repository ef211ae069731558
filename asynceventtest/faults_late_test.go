package asynceventtest_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

// Late writes may be sent while WaitLate waits for the ones before (a client's
// background flush of its progress while a test settles, as the chaos tests do):
// each is waited for, and, under -race, sending one during a wait is no data race.
func TestWaitLateWhileWritesAreSent(t *testing.T) {
	landed := &landedWrites{}
	f := asynceventtest.NewFaultyDynamoDB(landed, asynceventtest.FaultPlan{LateRate: 1, LateBy: 5 * time.Millisecond})
	ctx := context.Background()
	key := map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "EVENT#e"}, "SK": &types.AttributeValueMemberS{Value: "T#1"}}
	var senders sync.WaitGroup
	for range 4 {
		senders.Go(func() {
			for range 50 {
				_, _ = f.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key})
				time.Sleep(time.Millisecond)
			}
		})
	}
	// Waits while the senders send, with nothing else between them and the waits
	// (an atomic read would order them, and hide the race a wait group has here).
	for range 40 {
		f.WaitLate()
		time.Sleep(time.Millisecond)
	}
	senders.Wait()
	f.WaitLate()
	assert.EqualValues(t, 200, landed.n.Load(), "every late write landed")
	assert.Equal(t, 200, f.Counts().Late)
}

// landedWrites counts the UpdateItems that reach it.
type landedWrites struct {
	asyncevent.DynamoDB
	n atomic.Int64
}

func (l *landedWrites) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	l.n.Add(1)
	return &dynamodb.UpdateItemOutput{}, nil
}
