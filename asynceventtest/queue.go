package asynceventtest

import (
	"context"
	"testing"
	"time"

	"github.com/asyncevent/asyncevent/queue"
)

// WaitDrained waits until q holds no message, visible or in flight
// (queue.Memory.WaitIdle), and fails the test with what is left on q when timeout
// passes first. A zero timeout asks that q be drained already. Like t.FailNow, it
// must be called from the goroutine running the test.
func WaitDrained(t testing.TB, q *queue.Memory, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := q.WaitIdle(ctx); err != nil {
		l := q.Len()
		t.Fatalf("asynceventtest: queue not drained after %s: %d visible, %d in flight (%d dead letters)",
			timeout, l.Visible, l.InFlight, l.Dead)
	}
}
