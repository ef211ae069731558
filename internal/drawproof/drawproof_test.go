package drawproof

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent/draw"
	"github.com/asyncevent/asyncevent/internal/drawrun"
	"github.com/asyncevent/asyncevent/seed"
)

var errMismatch = errors.New("mismatch")

// table is a verifier's source: the chunks by number, the requests by ID.
type table struct {
	chunks   map[int]string
	requests map[string]drawrun.Entry
}

func (t *table) Chunk(_ context.Context, _ string, n int) (string, bool, error) {
	ids, ok := t.chunks[n]
	return ids, ok, nil
}

func (t *table) Request(_ context.Context, id string) (drawrun.Entry, error) {
	if e, ok := t.requests[id]; ok {
		return e, nil
	}
	return drawrun.Entry{}, &drawrun.NotFoundError{Err: fmt.Errorf("%s not found", id)}
}

func collect(problems *[]string) Problem {
	return func(format string, args ...any) { *problems = append(*problems, fmt.Sprintf(format, args...)) }
}

func TestSeed(t *testing.T) {
	s := []byte(strings.Repeat("s", SeedBytes))
	c := Commitment(s)
	sum := sha256.Sum256(s)
	assert.Equal(t, hex.EncodeToString(sum[:]), c)

	revealed, err := Reveal("e", "the source", s, c, c, errMismatch)
	require.NoError(t, err)
	assert.Equal(t, hex.EncodeToString(s), revealed)
	_, err = Reveal("e", "the source", s, c, Commitment([]byte("other")), errMismatch)
	assert.ErrorIs(t, err, errMismatch)
	assert.Contains(t, err.Error(), "e: the source hashes to "+c)

	var problems []string
	assert.Equal(t, s, Seed(revealed, c, c, collect(&problems)))
	assert.Empty(t, problems)
	Seed("zz", c, c, collect(&problems))
	assert.Equal(t, []string{"the revealed seed is not hex", "SHA-256 of the revealed seed is " + Commitment(nil) + ", the published commitment " + c}, problems)

	fresh, err := NewSeed()
	require.NoError(t, err)
	assert.Len(t, fresh, SeedBytes)
	_, err = FromSource(context.Background(), seed.SourceFunc(func(context.Context, string) ([]byte, error) { return []byte("short"), nil }).Seed, "e")
	assert.ErrorContains(t, err, "gave 5 bytes, want at least 32")
	got, err := FromSource(context.Background(), seed.SourceFunc(func(context.Context, string) ([]byte, error) { return s, nil }).Seed, "e")
	require.NoError(t, err)
	assert.Equal(t, s, got)
}

// drawn is a lottery of ids, drawn with k winners and recorded in one chunk, each
// entry holding the result the draw gives it.
func drawn(t *testing.T, ids []string, k int) (*table, Lottery) {
	s := []byte(strings.Repeat("k", SeedBytes))
	chunk := strings.Join(ids, "\n") + "\n"
	hash := draw.EntriesHash(ids)
	l := Lottery{
		Config:    drawrun.Config{EventID: "lotto", Concurrency: 2, Mismatch: errMismatch},
		Record:    drawrun.Record{Seed: hex.EncodeToString(s), EntryCount: int64(len(ids)), EntriesHash: hash, EntryChunks: 1},
		Published: Commitment(s), Recorded: Commitment(s), WinnerCount: k, Cutoff: 100, Announced: true,
	}
	won := map[string]bool{}
	for _, id := range draw.Winners(s, ids, k) {
		won[id] = true
	}
	tb := &table{chunks: map[int]string{0: chunk}, requests: map[string]drawrun.Entry{}}
	for i, id := range ids {
		e := drawrun.Entry{RequestID: id, EventID: "lotto", QueuedAt: int64(i + 1), State: drawrun.Lost, Status: "REJECTED", ResultCode: "REJECTED_LOTTERY_LOSE"}
		if won[id] {
			e.State, e.Status, e.ResultCode = drawrun.Won, "SUCCEEDED", "SUCCESS"
		}
		tb.requests[id] = e
		shown := e
		shown.EventID = ""
		l.OnTable = append(l.OnTable, Row{Entry: shown, DrawnResult: true})
	}
	return tb, l
}

func TestVerify(t *testing.T) {
	ctx := context.Background()
	ids := []string{"a", "b", "c", "d", "e"}
	cases := []struct {
		name    string
		alter   func(tb *table, l *Lottery)
		late    []string
		entries int
		want    []string // substrings of the problems, in order
	}{
		{name: "checks out", entries: 5},
		{name: "a late arrival is no problem", entries: 5, late: []string{"z"}, alter: func(_ *table, l *Lottery) {
			l.OnTable = append(l.OnTable, Row{Entry: drawrun.Entry{RequestID: "z", State: drawrun.Waiting, Status: "QUEUED"}})
		}},
		{name: "a failed request is no late arrival", entries: 5, alter: func(_ *table, l *Lottery) {
			l.OnTable = append(l.OnTable, Row{Entry: drawrun.Entry{RequestID: "z", State: drawrun.Final, Status: "FAILED_FINAL"}, Failed: true})
		}},
		{name: "an unrecorded request holds a drawn result", entries: 5, late: []string{"z"}, want: []string{"request z is SUCCEEDED (SUCCESS) but is not a recorded entry"},
			alter: func(_ *table, l *Lottery) {
				l.OnTable = append(l.OnTable, Row{Entry: drawrun.Entry{RequestID: "z", State: drawrun.Won, Status: "SUCCEEDED", ResultCode: "SUCCESS"}, DrawnResult: true})
			}},
		{name: "GSI2 lags, the request has the last word", entries: 5, alter: func(_ *table, l *Lottery) {
			l.OnTable[0].State, l.OnTable[0].Status = drawrun.Waiting, "QUEUED"
		}},
		{name: "an entry still waiting once announced", entries: 5, want: []string{"entry a has no result"}, alter: func(tb *table, l *Lottery) {
			e := tb.requests["a"]
			e.State, e.Status = drawrun.Waiting, "QUEUED"
			tb.requests["a"] = e
			l.OnTable[0].Entry = e
		}},
		{name: "an entry gone", entries: 5, want: []string{"recorded entry b is not on the table"}, alter: func(tb *table, l *Lottery) {
			delete(tb.requests, "b")
			l.OnTable = l.OnTable[:1+copy(l.OnTable[1:], l.OnTable[2:])]
		}},
		{name: "an entry of another event", entries: 5, want: []string{"recorded entry c is no request of lotto queued by its cutoff (event other, queued at 3)"}, alter: func(tb *table, l *Lottery) {
			e := tb.requests["c"]
			e.EventID, e.State = "other", drawrun.Final
			tb.requests["c"] = e
			l.OnTable[2].State = drawrun.Final
		}},
		{name: "a chunk altered, the set taken from the table", entries: 5, want: []string{"mismatch: the recorded entries of lotto hash to"}, alter: func(tb *table, _ *Lottery) {
			tb.chunks[0] = "a\nb\nc\nd\n"
		}},
		{name: "a record from before the chunks", entries: 5, alter: func(_ *table, l *Lottery) {
			l.Record.EntryChunks = 0
		}},
		{name: "a record from before the chunks, another count", entries: 5, want: []string{"5 entries on the table, the freeze recorded 6"}, alter: func(_ *table, l *Lottery) {
			l.Record.EntryChunks, l.Record.EntryCount = 0, 6
		}},
		{name: "a seed that is not the committed one", entries: 5, want: []string{"SHA-256 of the revealed seed is"}, alter: func(_ *table, l *Lottery) {
			l.Published = Commitment([]byte("other"))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tb, l := drawn(t, ids, 2)
			if tc.alter != nil {
				tc.alter(tb, &l)
			}
			v, err := Verify(ctx, tb, l)
			require.NoError(t, err)
			assert.Equal(t, tc.entries, v.EntryCount)
			assert.Equal(t, tc.late, v.Late)
			require.Len(t, v.Problems, len(tc.want), "%q", v.Problems)
			for i, w := range tc.want {
				assert.Contains(t, v.Problems[i], w)
			}
		})
	}
}
