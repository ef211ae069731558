package reliability

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// TestFairnessOfEachQueue measures what the quickstart's copied code gives: 30 users
// clicking at once for 5 seats, a Worker with its defaults, on a standard queue, a
// FIFO queue, and a ranked event on a standard queue; each run's inversions (losers
// queued before a winner) and the largest gap, from EventStats. The figures that the
// README, NewWorker and queue.MemoryOptions quote come from FAIRNESS_RUNS=20; make
// test runs each once. A ranked event must show none.
func TestFairnessOfEachQueue(t *testing.T) {
	runs := 1
	if n, err := strconv.Atoi(os.Getenv("FAIRNESS_RUNS")); err == nil && n > 0 {
		runs = n
	}
	const users, seats = 30, 5
	for _, mode := range []struct {
		name   string
		fifo   bool
		ranked bool
	}{{name: "standard queue"}, {name: "FIFO queue", fifo: true}, {name: "ranked, standard queue", ranked: true}} {
		t.Run(mode.name, func(t *testing.T) {
			var inverted, inversions int
			var maxGap time.Duration
			for run := range runs {
				f := fairnessRun(t, fmt.Sprintf("fair-%d", run), users, seats, mode.fifo, mode.ranked)
				if f.Inversions > 0 {
					inverted++
				}
				inversions += f.Inversions
				maxGap = max(maxGap, f.MaxGap)
				if mode.ranked {
					assert.Zero(t, f.LateWinners, "a ranked event's winners are its first by rank")
				}
			}
			t.Logf("fairness: %s, %d users for %d seats, %d runs: %d with inversions, %d inversions in all, largest gap %v",
				mode.name, users, seats, runs, inverted, inversions, maxGap)
		})
	}
}

// fairnessRun runs one event of users clicking at once for seats and returns its
// fairness.
func fairnessRun(t *testing.T, eventID string, users, seats int, fifo, ranked bool) asyncevent.Fairness {
	t.Helper()
	ctx := context.Background()
	c := asynceventtest.NewTable(t)
	settings := asyncevent.EventSettings{EventID: eventID, EventType: asyncevent.FirstCome, CapacityTotal: int64(seats)}
	if ranked {
		settings.Admission = asyncevent.AdmissionRanked
	}
	_, err := c.CreateEvent(ctx, settings)
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{FIFO: fifo})
	w, err := asyncevent.NewWorker(c, q, asyncevent.WorkerOptions{})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	var wg sync.WaitGroup
	for u := range users {
		wg.Go(func() {
			_, err := c.Submit(ctx, q, eventID, "user-"+strconv.Itoa(u))
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	require.NoError(t, q.WaitIdle(wctx))
	require.NoError(t, w.Stop(ctx))
	stats, err := c.EventStats(ctx, eventID)
	require.NoError(t, err)
	asynceventtest.CheckEvent(t, c, eventID, asynceventtest.CheckOptions{})
	return stats.Fairness
}
