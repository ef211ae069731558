package asyncevent_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

// A timer that fired while another flush held the lock, which took its counts, writes
// nothing: the counts of a later arming wait for their own timer, at the next
// multiple (at most one write per event and second counted a multiple; review 51).
func TestReview51AFiredTimerTakesALaterArmingsCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	every := 400 * time.Millisecond
	clock := asynceventtest.NewClock(time.Now().Truncate(every).Add(10 * time.Millisecond))
	c, db, submit := gatedProgress(t, asyncevent.Options{Clock: clock.Now, ProgressEvery: every, ProgressCacheTTL: time.Nanosecond}, make(chan struct{}, 16))
	defer close(db.proceed)

	submit("u1") // arms T1, due K+400
	a := make(chan error, 1)
	go func() { a <- c.FlushDueProgress(ctx) }() // nothing written since K: at once; stops T1
	<-db.began                                   // A holds the flush, its write held
	submit("u2")                                 // arms T2: 390 ms of real time, due K+400
	clock.Advance(every)                         // K+410: u2's multiple has come
	b := make(chan error, 1)
	go func() { b <- c.FlushDueProgress(ctx) }() // due: waits for A, first in line
	time.Sleep(every + 100*time.Millisecond)     // T2 fires, its flush waits for A, second in line
	db.proceed <- struct{}{}                     // A's write lands; B takes u2 (T2 has fired: Stop fails)
	require.NoError(t, <-a)
	<-db.began   // B's write held
	submit("u3") // arms T3: due K+800, 390 ms of real time away
	db.proceed <- struct{}{}
	require.NoError(t, <-b)
	// B released the flush: T2's waiting flush must leave u3 to T3.
	select {
	case <-db.began:
		db.proceed <- struct{}{}
		time.Sleep(20 * time.Millisecond)
		t.Fatalf("u3's counts written at once after B (%d writes in all, 2 in the multiple at K+400), not at their multiple K+800", db.writes.Load())
	case <-time.After(200 * time.Millisecond): // T3 fires only at 390 ms
	}
}

// An invocation's counts are written at its end when the invocations come less often
// than ProgressEvery, also after a thaw: the thawed timer that writes the pause's
// counts (a multiple or more late) does not count as the write since the multiple
// (review 51).
func TestReview51AThawedTimerHoldsTheNextInvocationsCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	every := 200 * time.Millisecond
	proceed := make(chan struct{})
	close(proceed) // no write held
	clock := asynceventtest.NewClock(time.Now().Truncate(time.Second).Add(10 * time.Millisecond))
	c, db, submit := gatedProgress(t, asyncevent.Options{Clock: clock.Now, ProgressEvery: every, ProgressCacheTTL: time.Nanosecond}, proceed)
	invoke := func(user string) {
		submit(user)
		require.NoError(t, c.FlushDueProgress(ctx))
	}
	invoke("u1") // K+10: written at once
	require.EqualValues(t, 1, db.writes.Load())
	clock.Advance(40 * time.Millisecond)
	invoke("u2") // K+50: the second in the multiple, pending; its timer due K+200 ("frozen")
	require.EqualValues(t, 1, db.writes.Load())
	clock.Advance(5 * time.Second) // the next invocation, 5 s later: the sandbox is thawed
	require.Eventually(t, func() bool { return db.writes.Load() == 2 }, 10*time.Second, 5*time.Millisecond,
		"the thawed timer fires at once and writes u2")
	invoke("u3") // 5 s after the last invocation: sparser than ProgressEvery
	require.EqualValues(t, 3, db.writes.Load(), "an invocation 5 s after the last: its count is written at its end")
}
