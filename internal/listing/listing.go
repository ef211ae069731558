// Package listing pages through listings of an index that may be spread over several
// partitions (an event's index shards): it merges what each partition's Query read
// into one order, and writes and checks the opaque cursors that continue a listing.
// It reads nothing itself; the caller runs each Query.
package listing

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Item is an item as a Query returns it.
type Item = map[string]types.AttributeValue

// A Reader is where a listing stands in one partition of an index.
type Reader struct {
	Partition string // the partition key's value
	From      Item   // the next Query starts after this key (nil: at the start)
	Ahead     []Item // read, not listed yet, in the listing's order
	Ended     bool   // nothing lies beyond Ahead
	Last      Item   // the last item listed from this partition
	Start     Item   // where this call began in this partition
}

// Next returns the reader whose next item comes first in the listing's order (by the
// string attribute sortKey, forward or backward), or nil when every reader is read
// to its end.
func Next(readers []*Reader, sortKey string, forward bool) *Reader {
	var best *Reader
	var bestKey string
	for _, r := range readers {
		if len(r.Ahead) == 0 {
			continue
		}
		k := stringAttr(r.Ahead[0], sortKey)
		if best == nil || forward && k < bestKey || !forward && k > bestKey {
			best, bestKey = r, k
		}
	}
	return best
}

func stringAttr(item Item, name string) string {
	if s, ok := item[name].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// A Codec writes and reads the cursors of the listings of one index: base64url of
// the JSON of the last key listed (the table key and the index key), or, for a
// listing of several partitions, where it stands in each.
type Codec struct {
	PK, SK           string // the table's key attributes
	IndexPK, IndexSK string // the index's
	// Invalid is the error a cursor that this codec did not write is told as.
	Invalid error
	// Check accepts a position's key (attribute → string) read in partition, or says
	// why not; nil accepts any.
	Check func(key map[string]string) string
}

// MaxLength bounds the cursor text accepted for one partition, far above what Encode
// writes.
const MaxLength = 2048

// bad is c.Invalid with reason.
func (c Codec) bad(reason string) error { return fmt.Errorf("%w: %s", c.Invalid, reason) }

// EncodeKey writes the cursor continuing after last, a key of strings; "" for none.
func EncodeKey(last Item) (string, error) {
	if len(last) == 0 {
		return "", nil
	}
	var plain map[string]string
	if err := attributevalue.UnmarshalMap(last, &plain); err != nil {
		return "", fmt.Errorf("cursor: %w", err)
	}
	b, err := json.Marshal(plain)
	if err != nil {
		return "", fmt.Errorf("cursor: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// DecodeTableKey reads a cursor of a Query on the table itself: its key (PK and SK,
// strings, nothing else).
func (c Codec) DecodeTableKey(cursor string) (pk, sk string, err error) {
	bad := c.bad("not a cursor of this listing")
	if len(cursor) > MaxLength {
		return "", "", bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return "", "", bad
	}
	var plain map[string]string
	if err := json.Unmarshal(raw, &plain); err != nil || len(plain) != 2 || plain[c.PK] == "" || plain[c.SK] == "" {
		return "", "", bad
	}
	return plain[c.PK], plain[c.SK], nil
}

// DecodeKey reads a cursor of a Query on the index in partition. It accepts only what
// EncodeKey could have written for that partition: a table key and an index key that
// Check accepts.
func (c Codec) DecodeKey(cursor, partition string) (Item, error) {
	if cursor == "" {
		return nil, nil
	}
	if len(cursor) > MaxLength {
		return nil, c.bad("too long")
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return nil, c.bad("not base64url")
	}
	var plain map[string]string
	if err := json.Unmarshal(raw, &plain); err != nil {
		return nil, c.bad("not a key")
	}
	if len(plain) != 4 {
		return nil, c.bad("not a key of this listing")
	}
	if plain[c.IndexPK] != partition {
		return nil, c.bad("it belongs to another listing")
	}
	if c.Check != nil {
		if reason := c.Check(plain); reason != "" {
			return nil, c.bad(reason)
		}
	}
	return attributevalue.MarshalMap(plain)
}

// position is the key of the index where a listing stands in one partition.
func (c Codec) position(item Item) Item {
	key := Item{}
	for _, a := range []string{c.PK, c.SK, c.IndexPK, c.IndexSK} {
		key[a] = item[a]
	}
	return key
}

// A sharded cursor: where the listing stands in each partition: the key of the last
// item listed from it, or its end.
type sharded struct {
	After map[int]map[string]string `json:"after,omitempty"`
	Ended []int                     `json:"ended,omitempty"`
}

// Decode reads a listing's cursor into one Reader per partition, checking every
// position against its partition.
func (c Codec) Decode(cursor string, partitions []string) ([]*Reader, error) {
	readers := make([]*Reader, len(partitions))
	for i, p := range partitions {
		readers[i] = &Reader{Partition: p}
	}
	if cursor == "" {
		return readers, nil
	}
	if len(partitions) == 1 {
		start, err := c.DecodeKey(cursor, partitions[0])
		readers[0].From, readers[0].Start = start, start
		return readers, err
	}
	if len(cursor) > MaxLength*len(partitions) {
		return nil, c.bad("too long")
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return nil, c.bad("not base64url")
	}
	var sc sharded
	if err := json.Unmarshal(raw, &sc); err != nil || len(sc.After)+len(sc.Ended) == 0 {
		return nil, c.bad("not a cursor of a sharded listing")
	}
	for shard, plain := range sc.After {
		if shard < 0 || shard >= len(partitions) {
			return nil, c.bad("a shard the event does not have")
		}
		b, err := json.Marshal(plain)
		if err != nil {
			return nil, c.bad("not a key")
		}
		start, err := c.DecodeKey(base64.RawURLEncoding.EncodeToString(b), partitions[shard])
		if err != nil {
			return nil, err
		}
		readers[shard].From, readers[shard].Start = start, start
	}
	for _, shard := range sc.Ended {
		if shard < 0 || shard >= len(partitions) || sc.After[shard] != nil {
			return nil, c.bad("a shard the event does not have")
		}
		readers[shard].Ended = true
	}
	return readers, nil
}

// Encode writes where the listing stands, or "" when every partition is read to its
// end.
func (c Codec) Encode(readers []*Reader) (string, error) {
	position := func(r *Reader) Item {
		if r.Last != nil {
			return c.position(r.Last)
		}
		return r.Start
	}
	done := func(r *Reader) bool { return r.Ended && len(r.Ahead) == 0 }
	if !slices.ContainsFunc(readers, func(r *Reader) bool { return !done(r) }) {
		return "", nil
	}
	if len(readers) == 1 {
		return EncodeKey(position(readers[0]))
	}
	sc := sharded{After: map[int]map[string]string{}}
	for i, r := range readers {
		switch pos := position(r); {
		case done(r):
			sc.Ended = append(sc.Ended, i)
		case pos != nil:
			var plain map[string]string
			if err := attributevalue.UnmarshalMap(pos, &plain); err != nil {
				return "", fmt.Errorf("cursor: %w", err)
			}
			sc.After[i] = plain
		}
	}
	b, err := json.Marshal(sc)
	if err != nil {
		return "", fmt.Errorf("cursor: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
