package drawrun

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent/draw"
)

// lotteryTable: five requests queued by the cutoff (one collected by a worker, one
// failed, one drawn already is impossible before a freeze) and one after it.
func lotteryTable() *store {
	collected := waiting("r2", 20)
	collected.Collected = true
	failed := waiting("r3", 30)
	failed.State, failed.Status, failed.ResultCode = Final, "FAILED_FINAL", "FAILED_VALIDATION"
	return newStore(waiting("r1", 10), collected, failed, waiting("r4", 40), waiting("r5", cutoff), waiting("after", cutoff+1))
}

func TestOpen(t *testing.T) {
	ctx := context.Background()

	// A fresh lottery: frozen, its entries collected (a refused collect taken as it
	// found the request), recorded by name then by count and hash, read back; a put
	// that lands right after the record is read again and is no entry.
	t.Run("a lottery, first run", func(t *testing.T) {
		st := lotteryTable()
		st.failedFirst["r4"] = true
		st.onRecord = func(st *store) { st.put(waiting("late", cutoff-500)) }
		o, err := Open(ctx, st, testConfig(Lottery))
		require.NoError(t, err)
		assert.Equal(t, []string{"r1", "r2", "r5"}, o.IDs, "r3 and r4 failed, r2 collected by a worker")
		assert.Equal(t, []byte{0x5e, 0xed}, o.Seed)
		assert.Equal(t, cutoff+1, o.Before)
		assert.Equal(t, []string{"r3", "r4", "late"}, o.Late(), "on the table, not in the record: the failed ones and the late put")
		assert.Equal(t, []string{
			"record", "reveal", "freeze", "refresh", "before 1000001",
			"collect r1", "collect r4", "collect r5", "put chunk 0", "record entries 3 1", "record",
			"between 989001 1000001", "chunk 0",
		}, sortCollects(st.calls))
		assert.Equal(t, draw.EntriesHash(o.IDs), st.rec.EntriesHash)
		assert.Equal(t, "5eed", st.rec.Seed)
	})

	// Run again once recorded: no seed, freeze, collect or chunk written; the
	// recorded set, read back, stands whatever landed since.
	t.Run("resumed once recorded", func(t *testing.T) {
		st := lotteryTable()
		_, err := Open(ctx, st, testConfig(Lottery))
		require.NoError(t, err)
		st.put(waiting("late", cutoff))
		st.calls = nil
		o, err := Open(ctx, st, testConfig(Lottery))
		require.NoError(t, err)
		assert.Equal(t, []string{"r1", "r2", "r4", "r5"}, o.IDs)
		assert.Equal(t, []string{"r3", "late"}, o.Late())
		assert.Equal(t, []string{"record", "refresh", "before 1000001", "chunk 0"}, st.calls)
	})

	// Frozen by another run that has not recorded yet: this run records.
	t.Run("frozen, not recorded", func(t *testing.T) {
		st := lotteryTable()
		st.rec.Collecting = false
		o, err := Open(ctx, st, testConfig(Lottery))
		require.NoError(t, err)
		assert.Len(t, o.IDs, 4)
		assert.Zero(t, st.count("freeze"))
		assert.Equal(t, 1, st.count("reveal"))
	})

	// Frozen under bounds that are not past yet: nothing recorded.
	t.Run("frozen too early", func(t *testing.T) {
		st := lotteryTable()
		st.opensAt = cutoff + 10_000
		_, err := Open(ctx, st, testConfig(Lottery))
		assert.ErrorIs(t, err, errTooEarly)
		assert.Equal(t, []string{"record", "reveal", "freeze", "refresh"}, st.calls)
		assert.Empty(t, st.rec.EntriesHash)
	})

	// A pre-queue keeps every request queued before the bound, failed or not, and
	// collects none.
	t.Run("a pre-queue", func(t *testing.T) {
		st := lotteryTable()
		o, err := Open(ctx, st, testConfig(Prequeue))
		require.NoError(t, err)
		assert.Equal(t, []string{"r1", "r2", "r3", "r4", "r5"}, o.IDs)
		assert.Zero(t, st.count("collect"))
	})

	// A record from before the chunks is read as it was drawn: the entries on the
	// table, which must hash as recorded.
	t.Run("recorded by count and hash only", func(t *testing.T) {
		st := lotteryTable()
		ids := []string{"r1", "r2", "r4", "r5"}
		st.rec = Record{EntryCount: 4, EntriesHash: draw.EntriesHash(ids), Seed: "5eed"}
		o, err := Open(ctx, st, testConfig(Lottery))
		require.NoError(t, err)
		assert.Equal(t, ids, o.IDs)
		st.put(waiting("late", 50))
		_, err = Open(ctx, st, testConfig(Lottery))
		assert.ErrorIs(t, err, errMismatch, "the table no longer hashes as recorded")
	})

	t.Run("a seed that is not hex", func(t *testing.T) {
		st := lotteryTable()
		_, err := Open(ctx, st, testConfig(Lottery))
		require.NoError(t, err)
		st.rec.Seed = "not hex"
		_, err = Open(ctx, st, testConfig(Lottery))
		assert.ErrorContains(t, err, "the stored seed is not hex")
	})
}

// sortCollects sorts each run of consecutive collects, which run at once.
func sortCollects(calls []string) []string {
	out := append([]string{}, calls...)
	for i := 0; i < len(out); {
		j := i
		for j < len(out) && len(out[j]) > 8 && out[j][:8] == "collect " {
			j++
		}
		if j > i {
			slices.Sort(out[i:j])
			i = j
		} else {
			i++
		}
	}
	return out
}

// merge keeps one view of each request, the later read's, in queue order.
func TestMerge(t *testing.T) {
	a := []Entry{waiting("a", 1), waiting("c", 3)}
	fresh := waiting("c", 3)
	fresh.Collected = true
	b := []Entry{waiting("b", 2), fresh}
	got := merge(a, b)
	require.Len(t, got, 3)
	assert.Equal(t, []string{"a", "b", "c"}, []string{got[0].RequestID, got[1].RequestID, got[2].RequestID})
	assert.True(t, got[2].Collected, "b's view replaces a's")
}
