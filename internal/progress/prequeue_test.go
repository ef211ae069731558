package progress

import (
	"context"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent/draw"
	"github.com/asyncevent/asyncevent/internal/drawrun"
)

// drawTable is a pre-queue's table: its Draw record, its chunks, the requests GSI2
// shows, and the reads it answered.
type drawTable struct {
	record drawrun.Record
	chunks map[int]string
	shown  []string
	reads  []string
}

func (d *drawTable) Record(context.Context) (drawrun.Record, error) {
	d.reads = append(d.reads, "record")
	return d.record, nil
}

func (d *drawTable) Chunk(_ context.Context, _ string, n int) (string, bool, error) {
	d.reads = append(d.reads, "chunk")
	ids, ok := d.chunks[n]
	return ids, ok, nil
}

func (d *drawTable) QueuedBefore(context.Context, int64) ([]drawrun.Entry, error) {
	d.reads = append(d.reads, "gsi2")
	entries := make([]drawrun.Entry, len(d.shown))
	for i, id := range d.shown {
		entries[i] = drawrun.Entry{RequestID: id}
	}
	return entries, nil
}

func TestPrequeueRefresh(t *testing.T) {
	ids := []string{"a", "b", "c"}
	seed := strings.Repeat("ab", 32)
	raw, _ := hex.DecodeString(seed)
	frozen := drawrun.Record{Seed: seed, EntryCount: 3, EntriesHash: draw.EntriesHash(ids)}
	t0 := time.Unix(1000, 0)
	const ttl = time.Second
	read := func(d *drawTable, at time.Duration) PrequeueRead {
		return PrequeueRead{Table: d, Config: drawrun.Config{EventID: "drop", Concurrency: 1, Mismatch: errors.New("mismatch")}, Until: 5, Now: t0.Add(at), TTL: ttl}
	}

	t.Run("the record is read once per TTL until frozen, then the order once", func(t *testing.T) {
		d := &drawTable{record: drawrun.Record{Collecting: true}}
		var v Prequeue
		require.NoError(t, v.Refresh(context.Background(), read(d, 0)))
		require.NoError(t, v.Refresh(context.Background(), read(d, ttl/2)))
		assert.Nil(t, v.Order)
		assert.Equal(t, []string{"record"}, d.reads)

		frozen := frozen
		frozen.EntryChunks = 1
		d.record, d.chunks = frozen, map[int]string{0: "a\nb\nc\n"}
		require.NoError(t, v.Refresh(context.Background(), read(d, ttl)))
		assert.Equal(t, draw.Order(raw, ids), v.Order)
		assert.Equal(t, int64(1), v.Places[v.Order[0]])
		assert.Equal(t, t0.Add(ttl), v.ReadAt)
		require.NoError(t, v.Refresh(context.Background(), read(d, 10*ttl)))
		assert.Equal(t, []string{"record", "record", "chunk"}, d.reads, "frozen: neither read again")
	})

	t.Run("a record of count and hash only: GSI2's entries once they hash so, not read again within TTL", func(t *testing.T) {
		d := &drawTable{record: frozen, shown: ids[:2]}
		var v Prequeue
		require.NoError(t, v.Refresh(context.Background(), read(d, 0)))
		require.NoError(t, v.Refresh(context.Background(), read(d, ttl/2)))
		assert.Nil(t, v.Order, "the index lags the freeze")
		assert.Equal(t, []string{"record", "gsi2"}, d.reads)

		d.shown = ids
		require.NoError(t, v.Refresh(context.Background(), read(d, ttl)))
		assert.Equal(t, draw.Order(raw, ids), v.Order)
		assert.Equal(t, []string{"record", "gsi2", "gsi2"}, d.reads)
	})
}
