package asyncevent

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/asyncevent/asyncevent/entity"
)

// StatusLog is an optional StatusLog item (PK REQ#<requestId>, SK
// LOG#<occurredAt>#<suffix>): one transition of a request, for the operator's
// timeline, written in the same transaction as the transition. It never carries GSI
// attributes. FromStatus is the status the request left (empty for the first entry).
// OccurredAt is the transition's own time, the value written on the request:
// requestedAt, queuedAt, startedAt or finishedAt. QUEUED, written by ingest after
// the send, records the request's queuedAt (taken before its put, so before the
// send): a worker's start, which follows the message's receipt and may land just
// after ingest's QUEUED write, is never logged before it on the same clock; the log
// reads in lifecycle order wherever the processes' clocks agree.
type StatusLog struct {
	RequestID  string      `dynamodbav:"requestId"`
	FromStatus Status      `dynamodbav:"fromStatus,omitempty"` // empty for the first entry
	ToStatus   Status      `dynamodbav:"toStatus"`
	OccurredAt EpochMillis `dynamodbav:"occurredAt"`
	Message    string      `dynamodbav:"message,omitempty"`
}

// statusLogItem is a StatusLog as stored: its key and the item's bookkeeping.
type statusLogItem struct {
	Key
	EntityType entity.Type `dynamodbav:"entityType"` // STATUS_LOG
	StatusLog
	// TTL is the expiry in epoch seconds: OccurredAt plus Options.StatusLogTTL.
	TTL int64 `dynamodbav:"ttl,omitempty"`
}

// statusLogRow writes a log entry, in the transaction of its transition.
var statusLogRow = row{name: "status log", method: "Options.StatusLog", item: entity.StatusLog, op: opPut, cond: notExists}

// ListStatusLogs returns a request's status log, oldest first and entries of the same
// millisecond in lifecycle order: the "status logs" row, Query PK = REQ#<requestId>
// AND begins_with(SK, "LOG#"), all pages. It returns the whole log, not a page (it
// takes no PageOptions): the log holds one entry per status write of the request. It
// is empty when Options.StatusLog was off while the request ran.
func (c *Client) ListStatusLogs(ctx context.Context, requestID string) ([]StatusLog, error) {
	key, err := NewRequestKey(requestID)
	if err != nil {
		return nil, err
	}
	cond := expression.Key(attrPK).Equal(expression.Value(key.Key().PK)).
		And(expression.Key(attrSK).BeginsWith(StatusLogPrefix))
	expr, err := expression.NewBuilder().WithKeyCondition(cond).Build()
	if err != nil {
		return nil, err
	}
	in := c.query("", expr)
	in.ConsistentRead = aws.Bool(true)
	var logs []StatusLog
	for pages := dynamodb.NewQueryPaginator(c.db, in); pages.HasMorePages(); {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list status logs %s: %w", requestID, err)
		}
		var items []statusLogItem
		if err := attributevalue.UnmarshalListOfMaps(page.Items, &items); err != nil {
			return nil, fmt.Errorf("list status logs %s: %w", requestID, err)
		}
		for _, it := range items {
			logs = append(logs, it.StatusLog)
		}
	}
	// Entries of the same millisecond sort by their random suffix; put them back in
	// lifecycle order.
	slices.SortStableFunc(logs, func(a, b StatusLog) int {
		return cmp.Or(cmp.Compare(a.OccurredAt, b.OccurredAt), cmp.Compare(a.ToStatus.rank(), b.ToStatus.rank()))
	})
	return logs, nil
}
