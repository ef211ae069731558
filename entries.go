package asyncevent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/asyncevent/asyncevent/entity"
)

// The entries a draw (or a pre-queue's serve) recorded, by name.
//
// The record is the truth: once the Draw record holds entriesHash, the set it names
// decides the draw and every later step of it, whatever reaches the table since (a
// put held on a slow network, a frozen ingest, a skewed clock). So that anyone can
// read the set back, and not only check a guess against its hash, the draw writes it
// before it records the hash: the request IDs sorted bytewise, each followed by a
// newline (exactly the bytes draw.EntriesHash hashes), cut at ID boundaries into
// chunks of at most entriesChunkBytes, chunk n on its own item, PK
// EVENT#<eventId>#ENTRIES#<n>, SK SET#<entriesHash> (EntriesKey). The Draw record then
// names how many chunks there are (entryChunks). A chunk's content is fixed by its key
// (the set's hash and its number), so its put needs no condition: two draws that read
// the same set write the same bytes, and two that read different sets write under
// different keys, only one of which the record names.
//
// Cost, one-off per draw: len(id)+1 bytes an entry, so with 36-byte IDs about 37 WCU
// per 1,000 entries written (1 WCU a KB) and about 9 RCU per 1,000 read back
// strongly consistent (4 KB an RCU: resumption, verification, the pre-queue's
// places); each chunk on its own partition key, so no partition takes more than
// entriesChunkBytes of it.

// entriesChunkBytes bounds a chunk's IDs: DynamoDB's item limit is 400 KB, names and
// the other attributes included.
const entriesChunkBytes = 300_000

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

// chunkEntries returns ids sorted bytewise, each followed by a newline, cut at ID
// boundaries into chunks of at most entriesChunkBytes (an ID is at most MaxIDLength
// bytes), and the set's hash, draw.EntriesHash of ids: SHA-256 of the chunks' bytes
// one after the other.
func chunkEntries(ids []string) (chunks []string, hash string) {
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	h := sha256.New()
	var b strings.Builder
	for _, id := range sorted {
		if b.Len()+len(id)+1 > entriesChunkBytes {
			chunks = append(chunks, b.String())
			b.Reset()
		}
		b.WriteString(id)
		b.WriteByte('\n')
		h.Write([]byte(id))
		h.Write([]byte{'\n'})
	}
	if b.Len() > 0 {
		chunks = append(chunks, b.String())
	}
	return chunks, hex.EncodeToString(h.Sum(nil))
}

// writeEntries puts the chunks of the set ids of eventID, DrawConcurrency at a time,
// and returns the set's hash and the number of chunks.
func (c *Client) writeEntries(ctx context.Context, eventID string, ids []string) (string, int, error) {
	chunks, hash := chunkEntries(ids)
	err := c.eachChunk(ctx, len(chunks), func(n int) error {
		key, err := NewEntriesKey(eventID, hash, n)
		if err != nil {
			return err
		}
		item := entriesChunk{Key: key.Key(), EntityType: entity.Entries, EventID: eventID, EntriesHash: hash, Chunk: n, IDs: chunks[n]}
		return c.do(ctx, txOptions{}, []write{{row: &entriesChunkRow, item: item}})
	})
	if err != nil {
		return "", 0, fmt.Errorf("record the entries of %s: %w", eventID, err)
	}
	return hash, len(chunks), nil
}

// errRecordedBefore: a Draw record whose entries were recorded by a version that
// stored only their count and hash.
var errRecordedBefore = errors.New("asyncevent: the entries were recorded by count and hash only")

// recordedEntries reads back the set record names, its IDs sorted bytewise, each
// chunk with a strongly consistent GetItem PK EVENT#<eventId>#ENTRIES#<n>, SK
// SET#<entriesHash>. A chunk missing, or chunks whose bytes do not hash to the
// recorded entriesHash or hold another count of entries, are ErrDrawMismatch: the
// record cannot be read back as written. A record from before the chunks (count and
// hash only) is errRecordedBefore.
func (c *Client) recordedEntries(ctx context.Context, eventID string, record *DrawRecord) ([]string, error) {
	if record.EntryChunks == 0 && record.EntryCount > 0 {
		return nil, errRecordedBefore
	}
	chunks := make([]string, record.EntryChunks)
	err := c.eachChunk(ctx, len(chunks), func(n int) error {
		key, err := NewEntriesKey(eventID, record.EntriesHash, n)
		if err != nil {
			return err
		}
		var it entriesChunk
		found, err := c.getItem(ctx, key.Key(), true, &it)
		switch {
		case err != nil:
			return err
		case !found:
			return fmt.Errorf("%w: chunk %d of the entries of %s (hash %s) is missing", ErrDrawMismatch, n, eventID, record.EntriesHash)
		}
		chunks[n] = it.IDs
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the recorded entries of %s: %w", eventID, err)
	}
	h := sha256.New()
	var ids []string
	for _, chunk := range chunks {
		h.Write([]byte(chunk))
		ids = append(ids, strings.SplitAfter(chunk, "\n")...)
	}
	ids = slices.DeleteFunc(ids, func(id string) bool { return id == "" })
	for i, id := range ids {
		ids[i] = strings.TrimSuffix(id, "\n")
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != record.EntriesHash || int64(len(ids)) != record.EntryCount {
		return nil, fmt.Errorf("%w: the recorded entries of %s hash to %s and count %d, the Draw record says %s and %d",
			ErrDrawMismatch, eventID, got, len(ids), record.EntriesHash, record.EntryCount)
	}
	return ids, nil
}

// eachChunk runs do for chunks 0 to n−1, DrawConcurrency at a time, and joins their
// errors.
func (c *Client) eachChunk(ctx context.Context, n int, do func(int) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	work := make(chan int)
	for range min(c.opts.DrawConcurrency, n) {
		wg.Go(func() {
			for i := range work {
				if err := do(i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		select {
		case work <- i:
		case <-ctx.Done():
			mu.Lock()
			errs = append(errs, ctx.Err())
			mu.Unlock()
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(work)
	wg.Wait()
	return errors.Join(errs...)
}
