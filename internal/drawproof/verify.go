package drawproof

import (
	"context"
	"errors"
	"fmt"

	"github.com/asyncevent/asyncevent/draw"
	"github.com/asyncevent/asyncevent/internal/drawrun"
)

// Problem is told each difference a verifier finds.
type Problem func(format string, args ...any)

// Set reads back the set a draw or a pre-queue's freeze recorded (drawrun.ReadBack
// of rec from chunks, under cfg): the recorded chunks, checked against the record's
// count and hash. When they cannot be read back as recorded (an error wrapping
// cfg.Mismatch), problem says so and the set is onTable, the IDs of the requests
// GSI2 shows that the verifier keeps, as is the set of a record from before the
// chunks (drawrun.ErrCountOnly), checked against the record's count and hash.
func Set(ctx context.Context, chunks drawrun.Chunks, cfg drawrun.Config, rec drawrun.Record, onTable []string, problem Problem) ([]string, error) {
	ids, err := drawrun.ReadBack(ctx, chunks, cfg, rec)
	switch {
	case err == nil:
		return ids, nil
	case errors.Is(err, cfg.Mismatch):
		problem("%v", err)
	case !errors.Is(err, drawrun.ErrCountOnly):
		return nil, err
	}
	if int64(len(onTable)) != rec.EntryCount {
		problem("%d entries on the table, the freeze recorded %d", len(onTable), rec.EntryCount)
	}
	if h := draw.EntriesHash(onTable); h != rec.EntriesHash {
		problem("the entries hash to %s, the freeze recorded %s", h, rec.EntriesHash)
	}
	return onTable, nil
}

// Row is a request of a lottery queued by its cutoff, as GSI2 shows it.
type Row struct {
	drawrun.Entry
	// Failed: FAILED_FINAL, never in the running: no entry, nor a late arrival.
	Failed bool
	// DrawnResult: the request holds a result only the draw gives (SUCCEEDED,
	// REJECTED_LOTTERY_LOSE), which only a recorded entry may hold.
	DrawnResult bool
}

// Lottery is a drawn LOTTERY event as its verifier reads it.
type Lottery struct {
	// Config is the run's configuration the recorded set is read back under.
	Config drawrun.Config
	// Record is the Draw record: its revealed seed and recorded set.
	Record drawrun.Record
	// Published and Recorded are the seed's commitments, the config's and the Draw
	// record's.
	Published, Recorded string
	WinnerCount         int
	Cutoff              int64 // lotteryCutoffAt, epoch ms
	// Announced: the draw is ANNOUNCED, so every recorded entry must have its result.
	Announced bool
	// OnTable are the requests queued by the cutoff as GSI2 shows them, in queue order.
	OnTable []Row
}

// Verification is what Verify found.
type Verification struct {
	EntryCount int
	Winners    []string
	Late       []string
	Problems   []string
}

// Source is the event's table as a verifier reads it: the chunks of the recorded
// set, and the requests one by one, strongly consistent.
type Source interface {
	drawrun.Chunks
	drawrun.Requests
}

// Verify re-checks a drawn lottery l: the recorded set (Set) against the entries
// GSI2 shows, the revealed seed against its commitments, every recorded entry's
// result against the winners recomputed from the seed and the set (draw.Winners),
// and no request the set does not name holding a result only the draw gives. The
// requests queued by the cutoff that the set does not name and did not fail are
// listed apart (Late): they landed after the record, which still verifies.
func Verify(ctx context.Context, src Source, l Lottery) (*Verification, error) {
	v := &Verification{}
	problem := func(format string, args ...any) { v.Problems = append(v.Problems, fmt.Sprintf(format, args...)) }
	var entries, candidates []string
	for _, e := range l.OnTable {
		if e.State.IsEntry() {
			entries = append(entries, e.RequestID)
		}
		if !e.Failed {
			candidates = append(candidates, e.RequestID)
		}
	}
	ids, err := Set(ctx, src, l.Config, l.Record, entries, problem)
	if err != nil {
		return nil, err
	}
	revealed := Seed(l.Record.Seed, l.Published, l.Recorded, problem)
	v.EntryCount = len(ids)
	v.Winners = draw.Winners(revealed, ids, l.WinnerCount)
	v.Late = drawrun.Late(ids, candidates)
	if err := checkResults(ctx, src, l, v.Winners, ids, problem); err != nil {
		return nil, err
	}
	checkUnrecorded(ids, l.OnTable, problem)
	return v, nil
}
