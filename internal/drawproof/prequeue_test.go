package drawproof

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent/draw"
	"github.com/asyncevent/asyncevent/internal/drawrun"
)

// seats is a pre-queue's table: the chunks, the requests by ID as read one by one,
// the sale's clicks as GSI2 shows them, and the reads it answered.
type seats struct {
	chunks map[int]string
	byID   map[string]Seat
	sale   []Seat
	reads  []string
}

func (s *seats) Chunk(_ context.Context, _ string, n int) (string, bool, error) {
	ids, ok := s.chunks[n]
	return ids, ok, nil
}

func (s *seats) Seat(_ context.Context, id string) (Seat, error) {
	s.reads = append(s.reads, id)
	if r, ok := s.byID[id]; ok {
		return r, nil
	}
	return Seat{}, &drawrun.NotFoundError{Err: fmt.Errorf("%s not found", id)}
}

func (s *seats) Sale(context.Context) ([]Seat, error) {
	s.reads = append(s.reads, "sale")
	return s.sale, nil
}

var (
	won     = Seat{Status: "SUCCEEDED", Won: true, Final: true, Decided: true, Holding: true}
	refused = Seat{Status: "REJECTED", Refused: true, Final: true, Decided: true}
)

// frozen is a pre-queue of ids for k seats, served in its drawn order: the first k
// won, the others were refused; one click of the sale, refused.
func frozen(ids []string, k int) (*seats, Prequeue, []string) {
	s := []byte(strings.Repeat("p", SeedBytes))
	p := Prequeue{
		Config:    drawrun.Config{EventID: "drop", Concurrency: 2, Mismatch: errMismatch},
		Record:    drawrun.Record{Seed: hex.EncodeToString(s), EntryCount: int64(len(ids)), EntriesHash: draw.EntriesHash(ids), EntryChunks: 1},
		Published: Commitment(s), Recorded: Commitment(s), Seats: int64(k), Announced: true,
	}
	order := draw.Order(s, ids)
	tb := &seats{chunks: map[int]string{0: strings.Join(ids, "\n") + "\n"}, byID: map[string]Seat{}}
	for i, id := range order {
		r := refused
		if i < k {
			r = won
		}
		r.RequestID = id
		tb.byID[id] = r
	}
	for _, id := range ids {
		p.OnTable = append(p.OnTable, tb.byID[id])
	}
	sale := refused
	sale.RequestID = "sale"
	tb.sale, tb.byID["sale"] = []Seat{sale}, sale
	return tb, p, order
}

func TestVerifyPrequeue(t *testing.T) {
	ids := []string{"a", "b", "c", "d", "e"}
	for _, tc := range []struct {
		name  string
		alter func(tb *seats, p *Prequeue, order []string)
		want  func(order []string) []string // the problems, in order
		reads int                           // strongly consistent reads and sale reads
	}{
		{name: "served in order", want: func([]string) []string { return nil }, reads: 2}, // the sale, for the order and for the seats
		{
			name: "an entry won after one before it was refused, on GSI2 and on the table",
			alter: func(tb *seats, p *Prequeue, order []string) {
				for i, e := range p.OnTable {
					switch e.RequestID {
					case order[1]:
						p.OnTable[i] = Seat{RequestID: e.RequestID, Status: "REJECTED", Refused: true, Final: true, Decided: true}
					case order[3]:
						p.OnTable[i] = Seat{RequestID: e.RequestID, Status: "SUCCEEDED", Won: true, Final: true, Decided: true, Holding: true}
					}
					tb.byID[e.RequestID] = p.OnTable[i]
				}
			},
			want: func(order []string) []string {
				return []string{fmt.Sprintf("entry %s won a seat after entry %s, before it in the order, was refused", order[3], order[1])}
			},
			reads: 1 + 5 + 1 + 1, // every entry again, the sale in each pass and for the seats
		},
		{
			name: "GSI2 lagging: the entries read again say it was served in order",
			alter: func(_ *seats, p *Prequeue, order []string) {
				for i, e := range p.OnTable {
					if e.RequestID == order[0] {
						p.OnTable[i] = Seat{RequestID: e.RequestID, Status: "REJECTED", Refused: true, Final: true, Decided: true}
					}
				}
			},
			want:  func([]string) []string { return nil },
			reads: 1 + 5 + 1 + 1,
		},
		{
			name: "an entry undecided after the serve, and a winner on the sale beyond the seats",
			alter: func(tb *seats, p *Prequeue, order []string) {
				for i, e := range p.OnTable {
					if e.RequestID == order[4] {
						p.OnTable[i] = Seat{RequestID: e.RequestID, Status: "QUEUED"}
						tb.byID[e.RequestID] = p.OnTable[i]
					}
				}
				sale := won
				sale.RequestID = "sale"
				tb.sale, tb.byID["sale"] = []Seat{sale}, sale
			},
			want: func(order []string) []string {
				return []string{
					"3 requests hold a seat (SUCCEEDED or HELD), the event has 2",
					fmt.Sprintf("entry %s is QUEUED after the pre-queue was served", order[4]),
					fmt.Sprintf("click sale of the sale won a seat while entry %s was refused", order[2]),
				}
			},
			reads: 1 + 5 + 1 + 1 + 3, // and the three holders again
		},
		{
			name: "a recorded entry not on the table, nor on GSI2",
			alter: func(tb *seats, p *Prequeue, order []string) {
				delete(tb.byID, order[2])
				for i, e := range p.OnTable {
					if e.RequestID == order[2] {
						p.OnTable = append(p.OnTable[:i], p.OnTable[i+1:]...)
						break
					}
				}
			},
			want: func(order []string) []string {
				return []string{fmt.Sprintf("a recorded entry is not on the table: %s not found", order[2])}
			},
			reads: 1 + 1, // the entry, and the sale for the seats
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb, p, order := frozen(ids, 2)
			if tc.alter != nil {
				tc.alter(tb, &p, order)
			}
			v, err := VerifyPrequeue(context.Background(), tb, p)
			require.NoError(t, err)
			assert.Equal(t, order, v.Order)
			assert.Equal(t, tc.want(order), v.Problems)
			assert.Len(t, tb.reads, tc.reads, tb.reads)
			assert.Equal(t, 5, v.EntryCount)
		})
	}
}
