// Package bench measures the library against a baseline: the same FIRST_COME ingest
// and worker flows written directly on aws-sdk-go-v2, the way a team would write seed
// 003's calls without the library. Both run interleaved in one process against the
// same DynamoDB, each through its own metered client, so that the throughput, the
// round trips and the capacity they consume can be compared. The flows of an event with
// holds (EventSettings.HoldFor) are measured on the library alone, against its own flows
// without holds. The operator CLI's bench command prints the Report of Run.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/queue"
)

// Baseline is the FIRST_COME flow written by hand on the SDK, call for call as seed
// 003 lists it:
//
//   - ingest: PutItem of the IdempotencyLock with attribute_not_exists(PK) (on a
//     duplicate, GetItem of the lock for the first requestId), PutItem of the Request
//     RECEIVED, the queue send, UpdateItem QUEUED with the index keys, condition
//     status = RECEIVED;
//   - worker: UpdateItem PROCESSING (condition status is RECEIVED or QUEUED),
//     UpdateItem of the CAPACITY item capacityRemaining − 1 (condition
//     capacityRemaining > 0), then UpdateItem SUCCEEDED or REJECTED
//     (REJECTED_CAPACITY), condition status = PROCESSING.
//
// It is what the library is measured against, not a design to copy: a crash between
// the lock and the request leaves an orphan lock, one between the seat and SUCCEEDED
// spends a seat without a winner, a failed send leaves the request RECEIVED, a stuck
// PROCESSING is never taken over, and every message tries the CAPACITY item even when
// the event sold out long ago. It writes the same items, under the same keys (built by
// the library's key builders, which cost nanoseconds), with constant expression
// strings, the fastest hand-written form.
type Baseline struct {
	DB    asyncevent.DynamoDB
	Table string
	// Clock tells the time. Default: time.Now.
	Clock func() time.Time
}

// rawMessage is the baseline's queue message.
type rawMessage struct {
	RequestID   string `json:"requestId"`
	EventID     string `json:"eventId"`
	UserID      string `json:"userId"`
	RequestedAt int64  `json:"requestedAt"`
}

type rawLock struct {
	asyncevent.Key
	EntityType string `dynamodbav:"entityType"`
	EventID    string `dynamodbav:"eventId"`
	UserID     string `dynamodbav:"userId"`
	RequestID  string `dynamodbav:"requestId"`
	CreatedAt  int64  `dynamodbav:"createdAt"`
}

type rawRequest struct {
	asyncevent.Key
	EntityType     string `dynamodbav:"entityType"`
	RequestID      string `dynamodbav:"requestId"`
	EventID        string `dynamodbav:"eventId"`
	UserID         string `dynamodbav:"userId"`
	EventType      string `dynamodbav:"eventType"`
	Status         string `dynamodbav:"status"`
	UIResult       string `dynamodbav:"uiResult"`
	RequestedAt    int64  `dynamodbav:"requestedAt"`
	QueuedAt       int64  `dynamodbav:"queuedAt"`
	IdempotencyKey string `dynamodbav:"idempotencyKey"`
	TTL            int64  `dynamodbav:"ttl"`
	asyncevent.IndexKeys
}

func (b *Baseline) now() time.Time {
	if b.Clock != nil {
		return b.Clock()
	}
	return time.Now()
}

// requestTTL is the library's default Options.RequestTTL (seed 001 §6: 90 days).
const requestTTL = 90 * 24 * time.Hour

func keyOf(k asyncevent.Key) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: k.PK},
		"SK": &types.AttributeValueMemberS{Value: k.SK},
	}
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

func conditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// Submit is the baseline's ingest of one click. It returns the request's ID and
// whether the click was a duplicate.
func (b *Baseline) Submit(ctx context.Context, q queue.Queue, eventID, userID string) (requestID string, duplicate bool, err error) {
	lk, err := asyncevent.NewLockKey(eventID, userID)
	if err != nil {
		return "", false, err
	}
	requestID = uuid.Must(uuid.NewV7()).String()
	rk, err := asyncevent.NewRequestKey(requestID)
	if err != nil {
		return "", false, err
	}
	lockKey, reqKey := lk.Key(), rk.Key()
	now := b.now()
	lock, err := attributevalue.MarshalMap(rawLock{Key: lockKey, EntityType: "IDEMPOTENCY",
		EventID: eventID, UserID: userID, RequestID: requestID, CreatedAt: now.UnixMilli()})
	if err != nil {
		return "", false, err
	}
	_, err = b.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(b.Table), Item: lock,
		ConditionExpression: aws.String("attribute_not_exists(PK)"),
	})
	if conditionFailed(err) {
		out, err := b.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(b.Table), Key: keyOf(lockKey), ConsistentRead: aws.Bool(true)})
		if err != nil {
			return "", true, err
		}
		var first rawLock
		if err := attributevalue.UnmarshalMap(out.Item, &first); err != nil {
			return "", true, err
		}
		return first.RequestID, true, nil
	}
	if err != nil {
		return "", false, err
	}

	// The design's request is on both indexes from its put, its place in line fixed
	// there, so that a request whose message is lost can be found without a Scan.
	queuedAt := b.now()
	idx, err := (&asyncevent.EventSettings{EventID: eventID}).RequestIndexKeys(userID, requestID, asyncevent.MillisOf(queuedAt))
	if err != nil {
		return "", false, err
	}
	req, err := attributevalue.MarshalMap(rawRequest{Key: reqKey, EntityType: "REQUEST", RequestID: requestID,
		EventID: eventID, UserID: userID, EventType: string(asyncevent.FirstCome), Status: string(asyncevent.StatusReceived),
		UIResult: string(asyncevent.UIPending), RequestedAt: now.UnixMilli(), QueuedAt: queuedAt.UnixMilli(),
		IdempotencyKey: lk.IdempotencyKey(), TTL: now.Add(requestTTL).Unix(), IndexKeys: idx})
	if err != nil {
		return "", false, err
	}
	if _, err := b.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(b.Table), Item: req}); err != nil {
		return "", false, err
	}

	body, err := json.Marshal(rawMessage{RequestID: requestID, EventID: eventID, UserID: userID, RequestedAt: now.UnixMilli()})
	if err != nil {
		return "", false, err
	}
	if err := q.Send(ctx, queue.OutgoingMessage{Body: body, GroupID: eventID, DeduplicationID: requestID}); err != nil {
		return "", false, err
	}

	_, err = b.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(b.Table),
		Key:                      keyOf(reqKey),
		UpdateExpression:         aws.String("SET #status = :queued"),
		ConditionExpression:      aws.String("#status = :received"),
		ExpressionAttributeNames: map[string]string{"#status": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":queued": s(string(asyncevent.StatusQueued)), ":received": s(string(asyncevent.StatusReceived)),
		},
	})
	if err != nil && !conditionFailed(err) {
		return "", false, err
	}
	return requestID, false, nil
}

// The outcomes of Baseline.Process.
const (
	RawWon       = "WON"
	RawRejected  = "REJECTED"
	RawDuplicate = "DUPLICATE" // the request was no longer startable
)

// Process is the baseline's worker step for one message. The caller deletes the
// message when it returns without an error.
func (b *Baseline) Process(ctx context.Context, body []byte) (string, error) {
	var m rawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return "", err
	}
	rk, err := asyncevent.NewRequestKey(m.RequestID)
	if err != nil {
		return "", err
	}
	ck, err := asyncevent.NewEventKey(m.EventID, asyncevent.EventItemCapacity)
	if err != nil {
		return "", err
	}
	reqKey, capKey := rk.Key(), ck.Key()
	_, err = b.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(b.Table),
		Key:                      keyOf(reqKey),
		UpdateExpression:         aws.String("SET #status = :processing, startedAt = :at"),
		ConditionExpression:      aws.String("#status IN (:received, :queued)"),
		ExpressionAttributeNames: map[string]string{"#status": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":processing": s(string(asyncevent.StatusProcessing)), ":received": s(string(asyncevent.StatusReceived)),
			":queued": s(string(asyncevent.StatusQueued)), ":at": n(b.now().UnixMilli()),
		},
	})
	if conditionFailed(err) {
		return RawDuplicate, nil
	}
	if err != nil {
		return "", err
	}

	_, err = b.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(b.Table),
		Key:                       keyOf(capKey),
		UpdateExpression:          aws.String("SET capacityRemaining = capacityRemaining - :one, updatedAt = :at"),
		ConditionExpression:       aws.String("capacityRemaining > :zero"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": n(1), ":zero": n(0), ":at": n(b.now().UnixMilli())},
	})
	outcome, status, uiResult, code := RawWon, asyncevent.StatusSucceeded, asyncevent.UISuccess, asyncevent.ResultSuccess
	switch {
	case conditionFailed(err):
		outcome, status, uiResult, code = RawRejected, asyncevent.StatusRejected, asyncevent.UIRejected, asyncevent.ResultRejectedCapacity
	case err != nil:
		return "", err
	}
	_, err = b.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(b.Table),
		Key:                      keyOf(reqKey),
		UpdateExpression:         aws.String("SET #status = :to, uiResult = :ui, resultCode = :code, finishedAt = :at"),
		ConditionExpression:      aws.String("#status = :processing"),
		ExpressionAttributeNames: map[string]string{"#status": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":to": s(string(status)), ":ui": s(string(uiResult)), ":code": s(string(code)),
			":processing": s(string(asyncevent.StatusProcessing)), ":at": n(b.now().UnixMilli()),
		},
	})
	if err != nil && !conditionFailed(err) {
		return "", err
	}
	return outcome, nil
}
