package drawrun

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// The entries a run recorded, by name.
//
// The record is the truth: once the Draw record holds entriesHash, the set it names
// decides the draw and every later step of it, whatever reaches the table since (a
// put held on a slow network, a frozen ingest, a skewed clock). So that anyone can
// read the set back, and not only check a guess against its hash, the run writes it
// before it records the hash: the request IDs sorted bytewise, each followed by a
// newline (exactly the bytes draw.EntriesHash hashes), cut at ID boundaries into
// chunks of at most ChunkBytes, chunk n on its own item, PK
// EVENT#<eventId>#ENTRIES#<n>, SK SET#<entriesHash>. The Draw record then names how
// many chunks there are (entryChunks). A chunk's content is fixed by its key (the
// set's hash and its number), so its put needs no condition: two runs that read the
// same set write the same bytes, and two that read different sets write under
// different keys, only one of which the record names.
//
// Cost, one-off per draw: len(id)+1 bytes an entry, so with 36-byte IDs about 37 WCU
// per 1,000 entries written (1 WCU a KB) and about 9 RCU per 1,000 read back
// strongly consistent (4 KB an RCU: resumption, verification, the pre-queue's
// places); each chunk on its own partition key, so no partition takes more than
// ChunkBytes of it.

// ChunkBytes bounds a chunk's IDs: DynamoDB's item limit is 400 KB, names and the
// other attributes included.
const ChunkBytes = 300_000

// chunk returns ids sorted bytewise, each followed by a newline, cut at ID boundaries
// into chunks of at most ChunkBytes (an ID is at most asyncevent.MaxIDLength bytes), and the set's hash,
// draw.EntriesHash of ids: SHA-256 of the chunks' bytes one after the other.
func chunk(ids []string) (chunks []string, hash string) {
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	h := sha256.New()
	var b strings.Builder
	for _, id := range sorted {
		if b.Len()+len(id)+1 > ChunkBytes {
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

// writeEntries puts the chunks of the set ids, Concurrency at a time, and returns the
// set's hash and the number of chunks.
func writeEntries(ctx context.Context, st Store, cfg Config, ids []string) (string, int, error) {
	chunks, hash := chunk(ids)
	err := each(ctx, cfg.Concurrency, len(chunks), func(n int) error {
		return st.PutChunk(ctx, hash, n, chunks[n])
	})
	if err != nil {
		return "", 0, fmt.Errorf("record the entries of %s: %w", cfg.EventID, err)
	}
	return hash, len(chunks), nil
}

// ReadBack reads back the set rec names, its IDs sorted bytewise, each chunk read
// strongly consistent, Concurrency at a time. A chunk missing, or chunks whose bytes
// do not hash to the recorded entriesHash or hold another count of entries, wrap
// Config.Mismatch: the record cannot be read back as written. A record from before
// the chunks (count and hash only) is ErrCountOnly.
func ReadBack(ctx context.Context, st Chunks, cfg Config, rec Record) ([]string, error) {
	if rec.EntryChunks == 0 && rec.EntryCount > 0 {
		return nil, ErrCountOnly
	}
	chunks := make([]string, rec.EntryChunks)
	err := each(ctx, cfg.Concurrency, len(chunks), func(n int) error {
		ids, found, err := st.Chunk(ctx, rec.EntriesHash, n)
		switch {
		case err != nil:
			return err
		case !found:
			return fmt.Errorf("%w: chunk %d of the entries of %s (hash %s) is missing", cfg.Mismatch, n, cfg.EventID, rec.EntriesHash)
		}
		chunks[n] = ids
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the recorded entries of %s: %w", cfg.EventID, err)
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
	if got := hex.EncodeToString(h.Sum(nil)); got != rec.EntriesHash || int64(len(ids)) != rec.EntryCount {
		return nil, fmt.Errorf("%w: the recorded entries of %s hash to %s and count %d, the Draw record says %s and %d",
			cfg.Mismatch, cfg.EventID, got, len(ids), rec.EntriesHash, rec.EntryCount)
	}
	return ids, nil
}

// Late returns the requests of onTable, in their order, that the recorded set does
// not name: they reached the table after the record, and the record shows them
// absent.
func Late(recorded, onTable []string) []string {
	inRecord := make(map[string]bool, len(recorded))
	for _, id := range recorded {
		inRecord[id] = true
	}
	var late []string
	for _, id := range onTable {
		if !inRecord[id] {
			late = append(late, id)
		}
	}
	return late
}

// each runs do for 0 to n−1, at most at at once, and joins their errors; once ctx
// ends it starts no more.
func each(ctx context.Context, at, n int, do func(int) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	work := make(chan int)
	for range min(at, n) {
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
