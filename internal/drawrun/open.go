package drawrun

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/asyncevent/asyncevent/draw"
)

// Opened is where a draw or a pre-queue's serve stands once opened: its entries
// recorded and read back from the record, and the seed revealed.
type Opened struct {
	// Before is the entries' bound under the config as frozen (Bounds.Before).
	Before int64
	// OnTable are the requests GSI2 showed queued before Before, in queue order: the
	// recorded set and what landed since.
	OnTable []Entry
	// IDs are the recorded entries, sorted bytewise.
	IDs []string
	// Seed is the revealed seed.
	Seed []byte
}

// Late returns the requests of o.OnTable that the record does not name, in queue
// order: their put reached the table after the entries were read.
func (o *Opened) Late() []string {
	onTable := make([]string, len(o.OnTable))
	for i, e := range o.OnTable {
		onTable[i] = e.RequestID
	}
	return Late(o.IDs, onTable)
}

// Open takes a draw or a pre-queue's serve from wherever it stands to a record of its
// entries (frozenSet), and reads the recorded set back with the revealed seed
// (drawnSet). Run again after a crash, it finds the record and reads it back.
func Open(ctx context.Context, st Store, cfg Config) (*Opened, error) {
	o, rec, err := frozenSet(ctx, st, cfg)
	if err != nil {
		return nil, err
	}
	if o.IDs, o.Seed, err = drawnSet(ctx, st, cfg, o.Before, rec); err != nil {
		return nil, err
	}
	return o, nil
}

// frozenSet takes a run from wherever it stands to a record of its entries: the seed
// checked against the commitment, the freeze, then, unless the record names the
// entries already, the requests queued before the bound read from GSI2, kept (a
// lottery collects its entries; a pre-queue keeps every request), and recorded. It
// returns the Draw record and the requests before the bound as GSI2 showed them (the
// recorded set and what landed since).
//
// The set is read under the event's config as it stands once frozen, not as the
// caller read it before: the bounds move only while the Draw record is COLLECTING,
// so from the freeze on they are the event's for good, whoever froze it; a run whose
// clock has not passed them plus the settle window wraps Config.TooEarly (frozen,
// nothing recorded: run it again).
func frozenSet(ctx context.Context, st Store, cfg Config) (*Opened, Record, error) {
	rec, err := st.Record(ctx)
	if err != nil {
		return nil, Record{}, err
	}
	var seedHex string
	if rec.EntriesHash == "" {
		if seedHex, err = st.Reveal(ctx); err != nil {
			return nil, Record{}, err
		}
	}
	if rec.Collecting {
		if rec, err = st.Freeze(ctx); err != nil {
			return nil, Record{}, err
		}
	}
	bounds, err := st.Refresh(ctx)
	if err != nil {
		return nil, Record{}, err
	}
	before := bounds.Before
	if rec.EntriesHash == "" && cfg.Now() < bounds.OpensAt {
		return nil, Record{}, fmt.Errorf("%w: %s was frozen under entries until %s, and can be drawn from %s",
			cfg.TooEarly, cfg.EventID, time.UnixMilli(before).UTC(), time.UnixMilli(bounds.OpensAt).UTC())
	}
	onTable, err := st.QueuedBefore(ctx, before)
	if err != nil || rec.EntriesHash != "" {
		return &Opened{Before: before, OnTable: onTable}, rec, err
	}
	entries := onTable
	if cfg.Kind == Lottery {
		if entries, err = collect(ctx, st, cfg, onTable); err != nil {
			return nil, Record{}, err
		}
	}
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.RequestID
	}
	if rec, err = recordEntries(ctx, st, cfg, ids, seedHex); err != nil {
		return nil, Record{}, err
	}
	// What landed between the read and the record is answered now, not left to the
	// workers and Sweep: the requests queued in the last moments before the bound
	// (where a put held past the fence, or sent by a clock behind, falls) are read
	// again. Liveness only: one queued earlier that lands later still gets its answer
	// from a worker, or Sweep.
	tail, err := st.QueuedBetween(ctx, before-int64(cfg.Reread/time.Millisecond), before)
	if err != nil {
		return nil, Record{}, err
	}
	return &Opened{Before: before, OnTable: merge(onTable, tail)}, rec, nil
}

// recordEntries records the entries ids a DRAWING run read, by name (their chunks)
// and then by count and hash, revealing the seed, and reads the record again: when
// another run recorded its set first, that set stands.
func recordEntries(ctx context.Context, st Store, cfg Config, ids []string, seedHex string) (Record, error) {
	hash, chunks, err := writeEntries(ctx, st, cfg, ids)
	if err != nil {
		return Record{}, err
	}
	if err := st.RecordEntries(ctx, int64(len(ids)), hash, int64(chunks), seedHex); err != nil {
		return Record{}, err
	}
	return st.Record(ctx)
}

// merge returns the requests of a and b, in queue order, b's view of a request in
// both replacing a's.
func merge(a, b []Entry) []Entry {
	fresh := make(map[string]Entry, len(b))
	for _, e := range b {
		fresh[e.RequestID] = e
	}
	merged := make([]Entry, 0, len(a)+len(b))
	for _, e := range a {
		if f, ok := fresh[e.RequestID]; ok {
			e = f
			delete(fresh, e.RequestID)
		}
		merged = append(merged, e)
	}
	for _, e := range b {
		if _, ok := fresh[e.RequestID]; ok {
			merged = append(merged, e)
		}
	}
	slices.SortStableFunc(merged, inQueueOrder)
	return merged
}

// drawnSet reads back the entries the record names (ReadBack) and the revealed seed.
// A record from before the entries were recorded by name is read as it was drawn: the
// entries GSI2 shows before the bound now, which must hash as recorded.
func drawnSet(ctx context.Context, st Store, cfg Config, before int64, rec Record) ([]string, []byte, error) {
	ids, err := ReadBack(ctx, st, cfg, rec)
	if errors.Is(err, ErrCountOnly) {
		ids, err = entriesOnTable(ctx, st, cfg, before, rec)
	}
	if err != nil {
		return nil, nil, err
	}
	revealed, err := hex.DecodeString(rec.Seed)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: the stored seed is not hex: %w", cfg.EventID, err)
	}
	return ids, revealed, nil
}

// entriesOnTable reads the entries of a run recorded by count and hash only from
// GSI2, as that version did, and checks them against the record.
func entriesOnTable(ctx context.Context, st Store, cfg Config, before int64, rec Record) ([]string, error) {
	all, err := st.QueuedBefore(ctx, before)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range all {
		if cfg.Kind != Lottery || e.State.IsEntry() {
			ids = append(ids, e.RequestID)
		}
	}
	if h := draw.EntriesHash(ids); int64(len(ids)) != rec.EntryCount || h != rec.EntriesHash {
		return nil, fmt.Errorf("%w: %s froze %d entries (hash %s), the table now has %d (hash %s)",
			cfg.Mismatch, cfg.EventID, rec.EntryCount, rec.EntriesHash, len(ids), h)
	}
	return ids, nil
}

// collect keeps the lottery's entries of the requests GSI2 showed queued by the
// cutoff, having collected each one the index shows not collected yet. A collected
// entry can no longer fail (the "entry failure" row's condition), so the set the draw
// records stays the set it finalises whatever failure lands later; GSI2 is read
// eventually consistent, so an entry whose collect is refused is taken as the refusal
// found it: collected by a worker meanwhile (an entry), or failed (no entry).
func collect(ctx context.Context, st Store, cfg Config, onTable []Entry) ([]Entry, error) {
	var entries []Entry
	for _, e := range onTable {
		if e.State.IsEntry() {
			entries = append(entries, e)
		}
	}
	var (
		mu   sync.Mutex
		errs []error
	)
	err := each(ctx, cfg.Concurrency, len(entries), func(i int) error {
		e := &entries[i]
		if e.Collected || e.State.IsFinal() {
			return nil
		}
		applied, now, err := st.Collect(ctx, e.RequestID)
		if err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
			return nil
		}
		if !applied {
			e.State, e.Collected, e.Status, e.ResultCode = now.State, now.Collected, now.Status, now.ResultCode
		}
		return nil
	})
	if err = errors.Join(append(errs, err)...); err != nil {
		return nil, fmt.Errorf("draw: collecting the entries: %w", err)
	}
	kept := entries[:0]
	for _, e := range entries {
		if e.State.IsEntry() {
			kept = append(kept, e)
		}
	}
	return kept, nil
}
