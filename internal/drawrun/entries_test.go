package drawrun

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent/draw"
)

// The set by name: the IDs sorted bytewise, each followed by a newline, cut at ID
// boundaries into chunks of at most ChunkBytes, hashing as draw.EntriesHash.
func TestChunk(t *testing.T) {
	ids := make([]string, 20_000)
	for i := range ids {
		ids[i] = fmt.Sprintf("%036d", len(ids)-i) // 37 bytes a line: 8,108 a chunk
	}
	chunks, hash := chunk(ids)
	assert.Equal(t, draw.EntriesHash(ids), hash)
	require.Len(t, chunks, 3)
	joined := strings.Join(chunks, "")
	assert.Equal(t, 20_000*37, len(joined))
	for i, c := range chunks {
		assert.LessOrEqual(t, len(c), ChunkBytes)
		assert.True(t, strings.HasSuffix(c, "\n"), "chunk %d ends at an ID boundary", i)
	}
	assert.True(t, strings.HasPrefix(joined, fmt.Sprintf("%036d\n%036d\n", 1, 2)), "sorted bytewise")

	none, hash := chunk(nil)
	assert.Empty(t, none)
	assert.Equal(t, draw.EntriesHash(nil), hash)
}

// ReadBack returns the set the record names, and refuses one it cannot read back as
// written.
func TestReadBack(t *testing.T) {
	ctx := context.Background()
	ids := []string{"c", "a", "b"}
	chunks, hash := chunk(ids)
	rec := Record{EntryCount: 3, EntriesHash: hash, EntryChunks: int64(len(chunks))}
	written := func() *store {
		st := newStore()
		for n, c := range chunks {
			st.chunks[fmt.Sprint(hash, "/", n)] = c
		}
		return st
	}
	tests := []struct {
		name   string
		change func(*store, *Record)
		want   error
	}{
		{name: "as written"},
		{name: "a chunk missing", change: func(st *store, _ *Record) { delete(st.chunks, hash+"/0") }, want: errMismatch},
		{name: "a chunk altered", change: func(st *store, _ *Record) { st.chunks[hash+"/0"] = "a\nb\nd\n" }, want: errMismatch},
		{name: "another count", change: func(_ *store, r *Record) { r.EntryCount = 4 }, want: errMismatch},
		{name: "count and hash only", change: func(_ *store, r *Record) { r.EntryChunks = 0 }, want: ErrCountOnly},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, r := written(), rec
			if tt.change != nil {
				tt.change(st, &r)
			}
			got, err := ReadBack(ctx, st, testConfig(Lottery), r)
			if tt.want != nil {
				assert.ErrorIs(t, err, tt.want)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, []string{"a", "b", "c"}, got)
		})
	}
	empty, err := ReadBack(ctx, newStore(), testConfig(Lottery), Record{EntriesHash: draw.EntriesHash(nil)})
	require.NoError(t, err)
	assert.Empty(t, empty, "an empty set has no chunk")
}

func TestLate(t *testing.T) {
	assert.Equal(t, []string{"x", "y"}, Late([]string{"a", "b"}, []string{"a", "x", "b", "y"}))
	assert.Empty(t, Late([]string{"a"}, []string{"a"}))
}

// each starts no more work once ctx ends, and runs at most at at once.
func TestEach(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ran := 0
	_ = each(ctx, 1, 10, func(i int) error {
		ran++
		if i == 2 {
			cancel()
		}
		return nil
	})
	assert.LessOrEqual(t, ran, 4, "at most the one handed over as ctx ended")

	var mu sync.Mutex
	running, most := 0, 0
	err := each(context.Background(), 3, 5, func(i int) error {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		time.Sleep(time.Millisecond)
		mu.Lock()
		running--
		mu.Unlock()
		if i%2 == 0 {
			return fmt.Errorf("job %d", i)
		}
		return nil
	})
	assert.ErrorContains(t, err, "job 0")
	assert.ErrorContains(t, err, "job 4")
	assert.LessOrEqual(t, most, 3)
}
