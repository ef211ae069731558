package asyncevent

import (
	"context"

	"github.com/asyncevent/asyncevent/entity"
)

// The entries a draw (or a pre-queue's serve) recorded, by name, so that anyone can
// read the set back, and not only check a guess against its hash: chunk n of the set
// on its own item, PK EVENT#<eventId>#ENTRIES#<n>, SK SET#<entriesHash> (EntriesKey),
// written before the Draw record names how many there are (entryChunks). Their
// bytes, their cost and the checks of what is read back are internal/drawrun's
// (entries.go); the chunk's item and row are here.

// entriesChunk is one chunk of a recorded set of entries.
type entriesChunk struct {
	Key
	EntityType  entity.Type `dynamodbav:"entityType"` // ENTRIES
	EventID     string      `dynamodbav:"eventId"`
	EntriesHash string      `dynamodbav:"entriesHash"`
	Chunk       int         `dynamodbav:"chunk"`
	// IDs are the chunk's request IDs, in the set's sorted order, each followed by a
	// newline.
	IDs string `dynamodbav:"ids"`
}

// entriesChunkRow is the put of one chunk: no condition, as a chunk's key fixes its
// content.
var entriesChunkRow = row{
	name: "draw: entries chunk", method: "Draw, ServePrequeue", item: entity.Entries, op: opPut,
}

// PutChunk puts chunk n of the set whose hash is hash: the "draw: entries chunk" row,
// PutItem PK EVENT#<eventId>#ENTRIES#<n>, SK SET#<entriesHash>, no condition.
func (s *drawStore) PutChunk(ctx context.Context, hash string, n int, ids string) error {
	key, err := NewEntriesKey(s.cfg.EventID, hash, n)
	if err != nil {
		return err
	}
	item := entriesChunk{Key: key.Key(), EntityType: entity.Entries, EventID: s.cfg.EventID, EntriesHash: hash, Chunk: n, IDs: ids}
	return s.c.do(ctx, txOptions{}, []write{{row: &entriesChunkRow, item: item}})
}

// Chunk reads chunk n of the set whose hash is hash (entryChunks).
func (s *drawStore) Chunk(ctx context.Context, hash string, n int) (string, bool, error) {
	return entryChunks{c: s.c, eventID: s.cfg.EventID}.Chunk(ctx, hash, n)
}

// entryChunks are the chunks of an event's recorded entries (drawrun.Chunks).
type entryChunks struct {
	c       *Client
	eventID string
}

// Chunk reads a chunk: GetItem PK EVENT#<eventId>#ENTRIES#<n>, SK SET#<entriesHash>,
// strongly consistent.
func (e entryChunks) Chunk(ctx context.Context, hash string, n int) (string, bool, error) {
	key, err := NewEntriesKey(e.eventID, hash, n)
	if err != nil {
		return "", false, err
	}
	var it entriesChunk
	found, err := e.c.getItem(ctx, key.Key(), true, &it)
	return it.IDs, found, err
}
