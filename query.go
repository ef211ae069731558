package asyncevent

import (
	"context"
	"fmt"

	"github.com/asyncevent/asyncevent/internal/listing"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The page sizes of "my participations".
const (
	defaultUserPageLimit = 20
	maxUserPageLimit     = 100
)

// PageOptions asks for one page of a listing. Every listing that pages takes it
// (ListEvents, ListUserRequests; EventListOptions embeds it for ListEventRequests)
// and answers with a page whose NextCursor continues it.
type PageOptions struct {
	// Limit is the most items the page holds. Default (0): the listing's default;
	// each listing's doc gives its default and its maximum, and a Limit below 0 or
	// above the maximum is ErrInvalidOptions.
	Limit int
	// Cursor continues a listing where the previous page ended (its NextCursor);
	// empty starts it.
	Cursor string
}

// RequestPage is one page of requests.
type RequestPage struct {
	Requests []Request
	// NextCursor continues the listing; empty when there is nothing more.
	NextCursor string
}

// ListUserRequests lists a user's requests, newest first, one page at a time: the "my
// participations" row, Query GSI1 with GSI1PK = USER#<userId>, ScanIndexForward =
// false, page.Limit 20 by default (at most 100). A request appears from its put, RECEIVED
// (the put writes its index keys). The cursor is opaque; one handed out for
// another user's listing is ErrInvalidCursor.
func (c *Client) ListUserRequests(ctx context.Context, userID string, page PageOptions) (*RequestPage, error) {
	user, err := NewUserPartition(userID)
	if err != nil {
		return nil, err
	}
	limit, err := listing.Limit(page.Limit, defaultUserPageLimit, maxUserPageLimit, ErrInvalidOptions)
	if err != nil {
		return nil, err
	}
	start, err := decodeCursor(page.Cursor, attrGSI1PK, attrGSI1SK, user.String())
	if err != nil {
		return nil, err
	}
	expr, err := expression.NewBuilder().
		WithKeyCondition(expression.Key(attrGSI1PK).Equal(expression.Value(user.String()))).Build()
	if err != nil {
		return nil, err
	}
	in := c.query(IndexUser, expr)
	in.ScanIndexForward, in.Limit, in.ExclusiveStartKey = aws.Bool(false), aws.Int32(int32(limit)), start
	out, err := c.db.Query(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("list requests of user %s: %w", userID, err)
	}
	var items []requestItem
	if err := attributevalue.UnmarshalListOfMaps(out.Items, &items); err != nil {
		return nil, fmt.Errorf("list requests of user %s: %w", userID, err)
	}
	result := &RequestPage{Requests: make([]Request, 0, len(items))}
	for _, it := range items {
		result.Requests = append(result.Requests, *it.view())
	}
	if result.NextCursor, err = listing.EncodeKey(out.LastEvaluatedKey); err != nil {
		return nil, err
	}
	return result, nil
}

// requestCodec writes and checks the cursors of the request listings on index
// (pkAttr, skAttr: GSI1's or GSI2's): a position is a request's table key and a
// queue key of the same request.
func requestCodec(pkAttr, skAttr string) listing.Codec {
	return listing.Codec{PK: attrPK, SK: attrSK, IndexPK: pkAttr, IndexSK: skAttr, Invalid: ErrInvalidCursor,
		Check: func(key map[string]string) string {
			req, err := ParseRequestKey(Key{PK: key[attrPK], SK: key[attrSK]})
			if err != nil {
				return "not a request key"
			}
			order, err := ParseQueuedAtSortKey(key[skAttr])
			if err != nil || order.requestID != req.requestID {
				return "not a queue key of the request"
			}
			return ""
		}}
}

// eventCodec is the codec of an event's request listing (GSI2).
var eventCodec = requestCodec(attrGSI2PK, attrGSI2SK)

// decodeCursor reads a cursor for a Query on the index whose keys are pkAttr/skAttr
// in the partition partition. It accepts only what listing.EncodeKey could have
// written for that partition: a request's table key, and a queue key for the same
// request.
func decodeCursor(cursor, pkAttr, skAttr, partition string) (map[string]types.AttributeValue, error) {
	return requestCodec(pkAttr, skAttr).DecodeKey(cursor, partition)
}

// The page sizes of an event's request list.
const (
	defaultEventPageLimit = 50
	maxEventPageLimit     = 500
)

// Order is the order of a listing in queue order (queuedAt).
type Order string

// The orders.
const (
	Ascending  Order = "asc"  // oldest first: the order the queue saw
	Descending Order = "desc" // newest first: the "latest N" listing
)

// EventListOptions asks for one page of an event's requests.
type EventListOptions struct {
	// PageOptions: Limit is the most requests to return (default 50, at most 500),
	// and Cursor continues the listing.
	PageOptions
	// Order is the queue order: Ascending (default) or Descending.
	Order Order
	// Status keeps only the requests in this status (filtered by the library while it
	// pages). Default: all.
	Status Status
	// MaxRead bounds the requests read to fill one page, so a filter that matches
	// little does not read the whole event in one call: the page may then hold fewer
	// than Limit requests, with a NextCursor to go on. Default: 10 × Limit.
	MaxRead int
}

// ListEventRequests lists an event's requests in queue order, one page at a time: the
// "event requests" row, Query GSI2 with GSI2PK = EVENT#<eventId>, ScanIndexForward =
// true (Ascending) or false (Descending), opts.Limit 50 by default (at most 500). An event with index shards is read from each of its
// partitions EVENT#<eventId>#<shard> and the shards are merged in queue order
// (GSI2SK), so the listing is the same as without shards. A status filter is applied
// by the library on each page read, reading at most MaxRead requests per call. The
// cursor is opaque; one handed out for another event's listing is ErrInvalidCursor.
func (c *Client) ListEventRequests(ctx context.Context, eventID string, opts EventListOptions) (*RequestPage, error) {
	if err := ValidateID("eventId", eventID); err != nil {
		return nil, err
	}
	limit, err := listing.Limit(opts.Limit, defaultEventPageLimit, maxEventPageLimit, ErrInvalidOptions)
	if err != nil {
		return nil, err
	}
	forward := true
	switch opts.Order {
	case "", Ascending:
	case Descending:
		forward = false
	default:
		return nil, fmt.Errorf("%w: order %q, want asc or desc", ErrInvalidOptions, string(opts.Order))
	}
	if opts.Status != "" && !opts.Status.Valid() {
		return nil, fmt.Errorf("%w: status %q, want one of %s", ErrInvalidOptions, string(opts.Status), statusNames())
	}
	budget, err := listing.Budget(limit, opts.MaxRead, opts.Status != "", ErrInvalidOptions)
	if err != nil {
		return nil, err
	}
	parts, err := c.eventParts(ctx, eventID)
	if err != nil {
		return nil, err
	}
	sources, err := eventCodec.Decode(opts.Cursor, partitionNames(parts))
	if err != nil {
		return nil, err
	}
	page := &RequestPage{Requests: []Request{}}
	merge := listing.Merge{SortKey: attrGSI2SK, Forward: forward,
		Read: func(ctx context.Context, src *listing.Reader, n int) error { return c.readAhead(ctx, src, forward, n) },
		Keep: func(av listing.Item) (bool, error) {
			var item requestItem
			if err := attributevalue.UnmarshalMap(av, &item); err != nil {
				return false, err
			}
			if opts.Status != "" && item.Status != opts.Status {
				return false, nil
			}
			page.Requests = append(page.Requests, *item.view())
			return true, nil
		}}
	if err := merge.Fill(ctx, sources, limit, budget); err != nil {
		return nil, fmt.Errorf("list requests of event %s: %w", eventID, err)
	}
	if page.NextCursor, err = eventCodec.Encode(sources); err != nil {
		return nil, err
	}
	return page, nil
}

// readAhead reads the next at most n requests of a shard.
func (c *Client) readAhead(ctx context.Context, src *listing.Reader, forward bool, n int) error {
	expr, err := expression.NewBuilder().
		WithKeyCondition(expression.Key(attrGSI2PK).Equal(expression.Value(src.Partition))).Build()
	if err != nil {
		return err
	}
	in := c.query(IndexEvent, expr)
	in.ScanIndexForward, in.Limit, in.ExclusiveStartKey = aws.Bool(forward), aws.Int32(int32(n)), src.From
	out, err := c.db.Query(ctx, in)
	if err != nil {
		return err
	}
	src.Ahead, src.From, src.Ended = out.Items, out.LastEvaluatedKey, len(out.LastEvaluatedKey) == 0
	return nil
}

// cursorAfter returns the cursor of an ascending listing of an event's requests that
// begins after the request whose queue key is after, in every partition of the event:
// the requests that follow it in queue order, each shard read afresh.
func cursorAfter(parts []EventPartition, after QueuedAtSortKey) (string, error) {
	readers := make([]*listing.Reader, len(parts))
	for i, p := range parts {
		readers[i] = &listing.Reader{Partition: p.String(), Last: map[string]types.AttributeValue{
			attrPK:     &types.AttributeValueMemberS{Value: requestPK(after.requestID)},
			attrSK:     &types.AttributeValueMemberS{Value: skRequest},
			attrGSI2PK: &types.AttributeValueMemberS{Value: p.String()},
			attrGSI2SK: &types.AttributeValueMemberS{Value: after.String()},
		}}
	}
	return eventCodec.Encode(readers)
}

// partitionNames are the partition keys' values of parts.
func partitionNames(parts []EventPartition) []string {
	names := make([]string, len(parts))
	for i, p := range parts {
		names[i] = p.String()
	}
	return names
}

// eachEventPage reads an event's requests from GSI2 (Query GSI2PK = EVENT#<eventId>,
// or each EVENT#<eventId>#<shard> in turn for an event with index shards, and sk when
// given), all pages, projecting only names, and hands each page to fn as rows of T.
// Within a shard the rows come in queue order; across shards they do not.
func eachEventPage[T any](ctx context.Context, c *Client, eventID string, sk *expression.KeyConditionBuilder, names []string, fn func([]T) error) error {
	parts, err := c.eventParts(ctx, eventID)
	if err != nil {
		return err
	}
	for _, part := range parts {
		if err := eachPartitionPage(ctx, c, eventID, part, sk, names, fn); err != nil {
			return err
		}
	}
	return nil
}

// eventParts returns the GSI2 partitions of an event's requests.
func (c *Client) eventParts(ctx context.Context, eventID string) ([]EventPartition, error) {
	if err := ValidateID("eventId", eventID); err != nil {
		return nil, err
	}
	shards, err := c.indexShards(ctx, eventID)
	if err != nil {
		return nil, err
	}
	return EventPartitions(eventID, shards)
}

// eachPartitionPage hands fn each page of one GSI2 partition of an event's requests,
// with the attributes names only.
func eachPartitionPage[T any](ctx context.Context, c *Client, eventID string, part EventPartition, sk *expression.KeyConditionBuilder, names []string, fn func([]T) error) error {
	projection := expression.NamesList(expression.Name(names[0]))
	for _, n := range names[1:] {
		projection = projection.AddNames(expression.Name(n))
	}
	key := expression.Key(attrGSI2PK).Equal(expression.Value(part.String()))
	if sk != nil {
		key = key.And(*sk)
	}
	expr, err := expression.NewBuilder().WithKeyCondition(key).WithProjection(projection).Build()
	if err != nil {
		return err
	}
	for pages := dynamodb.NewQueryPaginator(c.db, c.query(IndexEvent, expr)); pages.HasMorePages(); {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("read the requests of %s: %w", eventID, err)
		}
		var rows []T
		if err := attributevalue.UnmarshalListOfMaps(page.Items, &rows); err != nil {
			return fmt.Errorf("read the requests of %s: %w", eventID, err)
		}
		if err := fn(rows); err != nil {
			return err
		}
	}
	return nil
}

// partitionReads is how many GSI2 partitions of an event allEventRows reads at once:
// an event of 100 index shards is read in a tenth of the time, each partition at
// its own key's pace.
const partitionReads = 10

// allEventRows collects every row of an event's GSI2 partitions, partitionReads of
// them read at once; the rows come partition after partition (callers sort them).
func allEventRows[T any](ctx context.Context, c *Client, eventID string, sk *expression.KeyConditionBuilder, names ...string) ([]T, error) {
	parts, err := c.eventParts(ctx, eventID)
	if err != nil {
		return nil, err
	}
	return listing.Gather(ctx, len(parts), partitionReads, func(ctx context.Context, i int) ([]T, error) {
		var rows []T
		err := eachPartitionPage(ctx, c, eventID, parts[i], sk, names, func(page []T) error {
			rows = append(rows, page...)
			return nil
		})
		return rows, err
	})
}

// CountRequests counts an event's requests: the "event request count" row, Query GSI2
// GSI2PK = EVENT#<eventId> (each index shard's partition), Select COUNT, all pages.
// Nothing comes back but the count, but DynamoDB still reads every request it
// counts (about 0.5 RCU per 4 KB, eventually consistent): a screen that lists events
// should cache it, not read it per view. An unknown event is ErrEventNotFound.
func (c *Client) CountRequests(ctx context.Context, eventID string) (int, error) {
	cfg, err := c.cachedEvent(ctx, eventID)
	if err != nil {
		return 0, err
	}
	parts, err := EventPartitions(eventID, max(cfg.IndexShards, 1))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, part := range parts {
		expr, err := expression.NewBuilder().WithKeyCondition(expression.Key(attrGSI2PK).Equal(expression.Value(part.String()))).Build()
		if err != nil {
			return 0, err
		}
		in := c.query(IndexEvent, expr)
		in.Select = types.SelectCount
		for pages := dynamodb.NewQueryPaginator(c.db, in); pages.HasMorePages(); {
			page, err := pages.NextPage(ctx)
			if err != nil {
				return 0, fmt.Errorf("count the requests of %s: %w", eventID, err)
			}
			n += int(page.Count)
		}
	}
	return n, nil
}
