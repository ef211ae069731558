package admission

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// otherHolds is a record whose lease another process holds: the test's own loop only
// reads it.
func otherHolds(rec Record) Record {
	rec.Owner, rec.LeaseExpiresAt = "other", testNow.UnixMilli()+time.Hour.Milliseconds()
	return rec
}

// waitFor is a delivery of id, its message naming rank(id).
func waitFor(a *Admission, id string, lastReceive bool, giveUp time.Duration) *Wait {
	return &Wait{Admission: a, RequestID: id, LastReceive: lastReceive, GiveUp: giveUp,
		RankOf: func(queuedAt int64) (string, error) { return rank(id), nil }}
}

func noHide() (stop func()) { return func() {} }

func TestWait(t *testing.T) {
	ctx := context.Background()
	t.Run("its wave recorded decided: decided, without a read", func(t *testing.T) {
		f := newFakeStore()
		f.queued("b")
		f.set(otherHolds(Record{Through: rank("c"), Wave: []string{"b", "c"}, WaveDone: true}))
		v := waitFor(newTestAdmission(t, f), "b", false, time.Minute).Run(ctx, 1, noHide)
		if v.Kind != Decided || slices.Contains(f.Calls(), "request b") {
			t.Fatalf("verdict %+v, calls %v", v, f.Calls())
		}
	})
	t.Run("refusing: ranked after every wave proceeds, passed unseen proceeds late", func(t *testing.T) {
		f := newFakeStore()
		f.queued("b", "d")
		f.set(otherHolds(Record{Through: rank("c"), Refusing: true}))
		a := newTestAdmission(t, f)
		if v := waitFor(a, "d", false, time.Minute).Run(ctx, 1, noHide); v.Kind != Proceed {
			t.Fatalf("after the watermark: %+v", v)
		}
		if v := waitFor(a, "b", false, time.Minute).Run(ctx, 1, noHide); v.Kind != ProceedLate {
			t.Fatalf("behind the watermark: %+v", v)
		}
	})
	t.Run("found decided: decided, with its result code", func(t *testing.T) {
		f := newFakeStore()
		f.requests["b"] = Request{Entry: Entry{RequestID: "b"}, Decided: true, ResultCode: "SUCCESS"}
		v := waitFor(newTestAdmission(t, f), "b", false, time.Minute).Run(ctx, 0, noHide)
		if v.Kind != Decided || v.ResultCode != "SUCCESS" {
			t.Fatalf("verdict %+v", v)
		}
	})
	t.Run("not on the table: missing on the last receive, a retry before", func(t *testing.T) {
		a := newTestAdmission(t, newFakeStore())
		if v := waitFor(a, "b", true, time.Minute).Run(ctx, 0, noHide); v.Kind != Missing {
			t.Fatalf("last receive: %+v", v)
		}
		if v := waitFor(a, "b", false, time.Minute).Run(ctx, 0, noHide); v.Kind != Retry || !errors.Is(v.Err, errNoRequest) {
			t.Fatalf("before: %+v", v)
		}
	})
	t.Run("passed unseen while seats are left: added to the late set once, decided by the next wave", func(t *testing.T) {
		f := newFakeStore()
		f.queued("b")
		f.set(otherHolds(Record{Through: rank("c"), Wave: []string{"c"}}))
		hidden := make(chan struct{})
		done := make(chan Verdict)
		go func() {
			done <- waitFor(newTestAdmission(t, f), "b", false, time.Minute).Run(ctx, 1, func() func() { return func() { close(hidden) } })
		}()
		// Added, then read again a few ticks while the wave does not come: no
		// second add.
		eventually(t, func() bool { return countOf(f.Calls(), "late b") == 1 && countOf(f.Calls(), "request b") >= 4 })
		f.set(otherHolds(Record{Through: rank("c"), Wave: []string{"b"}, WaveDone: true, Waves: 1}))
		if v := <-done; v.Kind != Decided {
			t.Fatalf("verdict %+v", v)
		}
		if n := countOf(f.Calls(), "late b"); n != 1 {
			t.Fatalf("added to the late set %d times: %v", n, f.Calls())
		}
		select {
		case <-hidden:
		default:
			t.Fatal("the message was not kept hidden until the wait ended")
		}
	})
	t.Run("a whole GiveUp without the admission: slow", func(t *testing.T) {
		f := newFakeStore()
		f.set(otherHolds(Record{Through: rank("a")}))
		if v := waitFor(newTestAdmission(t, f), "b", false, 50*time.Millisecond).Run(ctx, 1, noHide); v.Kind != Slow {
			t.Fatalf("verdict %+v", v)
		}
	})
	t.Run("the delivery's context ends: a retry", func(t *testing.T) {
		f := newFakeStore()
		f.set(otherHolds(Record{Through: rank("a")}))
		ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		if v := waitFor(newTestAdmission(t, f), "b", false, time.Minute).Run(ctx, 1, noHide); v.Kind != Retry || !errors.Is(v.Err, context.DeadlineExceeded) {
			t.Fatalf("verdict %+v", v)
		}
	})
}

// eventually polls cond until it holds, or fails the test after 10 s.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("not reached in 10 s")
		}
	}
}
