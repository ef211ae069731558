package asyncevent_test

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// rankedRig is a ranked first-come event "sale" on a fresh table, with ingest
// clients and workers of their own.
type rankedRig struct {
	t       *testing.T
	ctx     context.Context
	c       *asyncevent.Client
	q       queue.Queue
	seats   int
	eventID string
}

func newRankedRig(t *testing.T, seats int, settings func(*asyncevent.EventSettings)) *rankedRig {
	t.Helper()
	return newRankedRigOn(t, seats, queue.NewMemory(queue.MemoryOptions{}), settings)
}

func newRankedRigOn(t *testing.T, seats int, q queue.Queue, settings func(*asyncevent.EventSettings)) *rankedRig {
	t.Helper()
	r := &rankedRig{t: t, ctx: context.Background(), c: asynceventtest.NewTable(t), q: q, seats: seats, eventID: "sale"}
	s := asyncevent.EventSettings{EventID: r.eventID, EventType: asyncevent.FirstCome, CapacityTotal: int64(seats), Admission: asyncevent.AdmissionRanked}
	if settings != nil {
		settings(&s)
	}
	if s.HoldFor != 0 && s.EndsAt == 0 {
		s.EndsAt = asyncevent.MillisOf(time.Now().Add(24 * time.Hour))
	}
	_, err := r.c.CreateEvent(r.ctx, s)
	require.NoError(t, err)
	return r
}

// slowClick starts a click of user whose request put is held back, and returns once
// the put is caught (the clicks after it are queued after it); land lands the put and
// waits for the click's answer.
func (r *rankedRig) slowClick(user string) (land func()) {
	r.t.Helper()
	hb := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(r.t))
	held := hb.Hold(requestPut, 1, asynceventtest.CallerWaits)
	slow := r.client(hb, nil)
	done := make(chan error, 1)
	go func() {
		_, err := slow.Submit(r.ctx, r.q, r.eventID, user)
		done <- err
	}()
	require.NoError(r.t, held.Caught(r.ctx))
	time.Sleep(5 * time.Millisecond)
	return func() {
		require.NoError(r.t, held.Land(r.ctx))
		require.NoError(r.t, <-done)
	}
}

// client returns another client of the rig's table, on db (nil: the test's
// DynamoDB Local) with clock (nil: the real one).
func (r *rankedRig) client(db asyncevent.DynamoDB, clock func() time.Time) *asyncevent.Client {
	r.t.Helper()
	if db == nil {
		db = asynceventtest.DynamoDB(r.t)
	}
	c, err := asyncevent.New(db, asyncevent.Options{TableName: r.c.TableName(), Clock: clock})
	require.NoError(r.t, err)
	return c
}

// checkEverySeatWon holds the ranked promises on rs (checkRanked, CheckEvent) when
// there are more users than seats, and that no seat is left: none taken twice, none
// taken for no winner.
func (r *rankedRig) checkEverySeatWon(rs []asyncevent.Request) {
	r.t.Helper()
	checkRanked(r.t, rs, r.seats)
	asynceventtest.CheckEvent(r.t, r.c, r.eventID, asynceventtest.CheckOptions{})
	left, err := r.c.GetCapacity(r.ctx, r.eventID)
	require.NoError(r.t, err)
	assert.Zero(r.t, left.CapacityRemaining, "every seat went to a winner")
}

// submit clicks for users on c, from clients goroutines at once.
func (r *rankedRig) submit(c *asyncevent.Client, users []string, clients int) {
	r.t.Helper()
	var wg sync.WaitGroup
	work := make(chan string)
	for range clients {
		wg.Go(func() {
			for u := range work {
				_, err := c.Submit(r.ctx, r.q, r.eventID, u)
				assert.NoError(r.t, err, u)
			}
		})
	}
	for _, u := range users {
		work <- u
	}
	close(work)
	wg.Wait()
}

// workers starts n workers, each on a client of its own, whose handler-less claims
// run in an order of their own (a jittered receive).
func (r *rankedRig) workers(n int, opts func(i int) (asyncevent.DynamoDB, func() time.Time)) {
	r.t.Helper()
	for i := range n {
		var db asyncevent.DynamoDB
		var clock func() time.Time
		if opts != nil {
			db, clock = opts(i)
		}
		runWorker(r.t, r.client(db, clock), r.q, asyncevent.WorkerOptions{Concurrency: 16, BatchSize: 10})
	}
}

// judged is the event's requests from a raw Scan, ranked by (queuedAt, requestId),
// once each is final.
func (r *rankedRig) judged(users int) []asyncevent.Request {
	r.t.Helper()
	var rs []asyncevent.Request
	eventually(r.t, "every request final", func() bool {
		rs = requestsOf(r.t, r.c, r.eventID)
		return allFinal(rs, users)
	})
	return byRank(rs)
}

// checkRanked holds the ranked admission's promises on rs (in rank order): exactly
// seats winners (fewer users: all), no winner ranked after a request refused for want
// of a seat, and every ResultLate request refused only once a seat went to a request
// ranked after it... which the admission had seen first.
func checkRanked(t *testing.T, rs []asyncevent.Request, seats int) (winners, late int) {
	t.Helper()
	refused := -1
	for i, q := range rs {
		switch {
		case q.Status == asyncevent.StatusSucceeded:
			winners++
			if refused >= 0 {
				t.Errorf("late winner: %s (rank %d, queued %d) won after %s (rank %d, queued %d) was refused",
					q.RequestID, i, q.QueuedAt, rs[refused].RequestID, refused, rs[refused].QueuedAt)
			}
		case q.ResultCode == asyncevent.ResultRejectedCapacity:
			if refused < 0 {
				refused = i
			}
		case q.ResultCode == asyncevent.ResultLate:
			late++
		default:
			t.Errorf("request %s ended %s %s", q.RequestID, q.Status, q.ResultCode)
		}
	}
	assert.Equal(t, min(seats, len(rs)), winners, "exactly N winners")
	return winners, late
}

func usersN(prefix string, n int) []string {
	us := make([]string, n)
	for i := range us {
		us[i] = fmt.Sprintf("%s%04d", prefix, i)
	}
	return us
}

func TestRankedAdmission(t *testing.T) {
	t.Parallel()

	t.Run("many ingest clients and workers: no late winner, exactly N", func(t *testing.T) {
		t.Parallel()
		r := newRankedRig(t, 40, nil)
		r.workers(4, nil)
		users := usersN("u", 400)
		rand.Shuffle(len(users), func(i, j int) { users[i], users[j] = users[j], users[i] })
		var wg sync.WaitGroup
		for i := range 4 {
			c := r.client(nil, nil)
			wg.Go(func() { r.submit(c, users[i*100:(i+1)*100], 8) })
		}
		wg.Wait()
		_, late := checkRanked(t, r.judged(len(users)), r.seats)
		assert.Zero(t, late, "no write was held back")
	})

	for _, fifo := range []bool{false, true} {
		t.Run(fmt.Sprintf("on SQS (fauxqs), FIFO %t", fifo), func(t *testing.T) {
			t.Parallel()
			r := newRankedRigOn(t, 15, asynceventtest.NewSQSQueue(t, asynceventtest.SQSQueueOptions{FIFO: fifo}), nil)
			r.workers(3, nil)
			var wg sync.WaitGroup
			for i := range 3 {
				c := r.client(nil, nil)
				wg.Go(func() { r.submit(c, usersN(fmt.Sprintf("c%d-", i), 40), 4) })
			}
			wg.Wait()
			checkRanked(t, r.judged(120), r.seats)
		})
	}

	t.Run("messages processed last-sent first: the first N by rank win all the same", func(t *testing.T) {
		t.Parallel()
		for _, admission := range []asyncevent.Admission{asyncevent.AdmissionProcessing, asyncevent.AdmissionRanked} {
			r := newRankedRig(t, 5, func(s *asyncevent.EventSettings) { s.Admission = admission })
			sent := submitInOrder(t, r.c, r.q, 20)
			ds := receiveAll(t, r.q, len(sent))
			p := asyncevent.NewProcessor(r.client(nil, nil), asyncevent.ProcessOptions{})
			for i := len(ds) - 1; i >= 0; i-- {
				_, done, _ := p.ProcessOne(r.ctx, ds[i], 0, nil)
				require.True(t, done)
			}
			rs := r.judged(len(sent))
			st, err := r.c.EventStats(r.ctx, r.eventID)
			require.NoError(t, err)
			if admission == asyncevent.AdmissionProcessing {
				// The default decides in processing order: the last five sent win.
				assert.Equal(t, 5, st.Fairness.LateWinners, "processing order: every winner is a late winner")
				continue
			}
			checkRanked(t, rs, r.seats)
			assert.Zero(t, st.Fairness.LateWinners)
			for i, q := range rs {
				assert.Equal(t, i < r.seats, q.Status == asyncevent.StatusSucceeded, "rank %d: %s", i, q.Status)
			}
		}
	})

	t.Run("holds: the first N by rank hold, the rest wait in rank order", func(t *testing.T) {
		t.Parallel()
		r := newRankedRig(t, 3, func(s *asyncevent.EventSettings) { s.HoldFor = time.Minute })
		r.workers(2, nil)
		r.submit(r.c, usersN("u", 12), 6)
		var rs []asyncevent.Request
		eventually(t, "every request held or waitlisted", func() bool {
			rs = requestsOf(t, r.c, r.eventID)
			return len(rs) == 12 && !slices.ContainsFunc(rs, func(q asyncevent.Request) bool {
				return q.Status != asyncevent.StatusHeld && q.Status != asyncevent.StatusWaitlisted
			})
		})
		for i, q := range byRank(rs) {
			assert.Equal(t, i < r.seats, q.Status == asyncevent.StatusHeld, "rank %d: %s", i, q.Status)
		}
		asynceventtest.CheckEvent(t, r.c, r.eventID, asynceventtest.CheckOptions{})
	})

	t.Run("an admission stuck mid-wave is taken over: the recorded wave is decided, its held claims land on their tokens", func(t *testing.T) {
		t.Parallel()
		r := newRankedRig(t, 10, nil)
		r.submit(r.c, usersN("u", 40), 8)
		hb := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(t))
		claims := hb.Hold(capacityWrite, 0, asynceventtest.CallerWaits)
		stuck := r.client(hb, nil)
		runWorker(t, stuck, r.q, asyncevent.WorkerOptions{Concurrency: 8, BatchSize: 8})
		require.NoError(t, claims.Caught(r.ctx)) // the stuck worker holds the lease and has recorded a wave
		r.workers(2, nil)                        // they wait out its lease, take the record over and resume the wave
		eventually(t, "every seat taken", func() bool {
			n := 0
			for _, q := range requestsOf(t, r.c, r.eventID) {
				if q.Status == asyncevent.StatusSucceeded {
					n++
				}
			}
			return n == r.seats
		})
		claims.Stop()
		require.NoError(t, claims.Land(r.ctx))
		rs := r.judged(40)
		checkRanked(t, rs, r.seats)
		asynceventtest.CheckEvent(t, r.c, r.eventID, asynceventtest.CheckOptions{})
	})

	t.Run("a Handler that keeps failing for one request: it ends FAILED_FINAL on its last try and the line goes on", func(t *testing.T) {
		t.Parallel()
		for _, admission := range []asyncevent.Admission{asyncevent.AdmissionProcessing, asyncevent.AdmissionRanked} {
			t.Run(string(admission)+"/", func(t *testing.T) {
				t.Parallel()
				r := newRankedRig(t, 3, func(s *asyncevent.EventSettings) { s.Admission = admission })
				ids := submitInOrder(t, r.c, r.q, 12)
				poison := ids[0]
				h := asyncevent.HandlerFunc(func(ctx context.Context, m asyncevent.Message) error {
					if m.RequestID == poison {
						return errors.New("payment service says 503 for this user")
					}
					return nil
				})
				runWorker(t, r.client(nil, nil), r.q, asyncevent.WorkerOptions{Concurrency: 16, BatchSize: 10,
					ProcessOptions: asyncevent.ProcessOptions{Handler: h, LeaseDuration: 5 * time.Second}})
				deadline := time.Now().Add(45 * time.Second) // beyond waveTimeout (30 s)
				for time.Now().Before(deadline) {
					st := statusesOf(t, r.c, r.eventID)
					if st[asyncevent.StatusQueued]+st[asyncevent.StatusProcessing]+st[asyncevent.StatusReceived] == 0 {
						break
					}
					time.Sleep(200 * time.Millisecond)
				}
				st := statusesOf(t, r.c, r.eventID)
				t.Logf("%s after up to 45 s: %v", admission, st)
				assert.Zero(t, st[asyncevent.StatusQueued]+st[asyncevent.StatusProcessing]+st[asyncevent.StatusReceived],
					"every request final (poison %s)", poison)
			})
		}
	})

	t.Run("a wave of late arrivals alone whose claim is held past the wave's timeout is resumed, never taken for decided", func(t *testing.T) {
		t.Parallel()
		r := newRankedRig(t, 4, nil)
		ctx := r.ctx

		// X's put is held: its queuedAt is before u1's and u2's.
		landX := r.slowClick("x")
		first := submitUsers(t, r, "u1", "u2")

		// One worker process: it holds the admission.
		hb := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(t))
		wc := r.client(hb, nil)
		runWorker(t, wc, r.q, asyncevent.WorkerOptions{Concurrency: 16, BatchSize: 10,
			ProcessOptions: asyncevent.ProcessOptions{LeaseDuration: 2 * time.Minute}})
		eventually(t, "wave 1 decided", func() bool {
			rs := requestsOf(t, r.c, r.eventID)
			return countBy(rs, func(q asyncevent.Request) asyncevent.Status { return q.Status })[asyncevent.StatusSucceeded] == 2
		})
		_ = first

		// X lands behind the watermark: the late set, then a late-only wave {X} at the
		// same watermark, whose claim is held on the wire past waveTimeout.
		xClaim := hb.Hold(capacityWrite, 1, asynceventtest.CallerWaits)
		landX()
		require.NoError(t, xClaim.Caught(ctx))
		through, wave, _, _ := admissionRecord(t, r)
		t.Logf("late wave recorded: through %s wave %v", through, wave)
		require.Len(t, wave, 1)

		// More clicks, ranked after the watermark; the claim of the first of the next
		// wave is held so that X's claim lands between the wave's two claims.
		more := submitUsers(t, r, "u3", "u4", "u5", "u6", "u7", "u8")
		u3Claim := hb.Hold(claimOf(more["u3"]), 1, asynceventtest.CallerWaits)
		waitCtx, cancel := context.WithTimeout(ctx, 90*time.Second)
		defer cancel()
		if err := u3Claim.Caught(waitCtx); err != nil {
			th, w, l, ref := admissionRecord(t, r)
			t.Logf("record: through %s wave %v late %v refusing %v", th, w, l, ref)
			for _, q := range requestsOf(t, r.c, r.eventID) {
				t.Logf("%s %s %s %s", q.UserID, q.RequestID, q.Status, q.ResultCode)
			}
			t.Fatalf("the next wave's claim was not caught: %v", err)
		}
		through2, wave2, _, _ := admissionRecord(t, r)
		t.Logf("next wave recorded: through %s wave %v (X=%s)", through2, wave2, wave[0])
		eventually(t, "u4 decided", func() bool {
			return find(requestsOf(t, r.c, r.eventID), "u4").Status.IsTerminal()
		})
		require.NoError(t, xClaim.Land(ctx))
		t.Logf("X's claim landed: %v", xClaim.Outcome())
		require.NoError(t, u3Claim.Land(ctx))
		t.Logf("u3's claim landed: %v", u3Claim.Outcome())

		rs := r.judged(9)
		for i, q := range rs {
			t.Logf("rank %d %s %s %s", i, q.UserID, q.Status, q.ResultCode)
		}
		checkRanked(t, rs, r.seats)
		asynceventtest.CheckEvent(t, r.c, r.eventID, asynceventtest.CheckOptions{})
	})

	t.Run("a late arrival added while the wave write is on the wire: the write fails, the next wave takes it first", func(t *testing.T) {
		t.Parallel()
		r := newRankedRig(t, 3, nil)
		ctx := r.ctx

		// X's put is held: its queuedAt is before u1's and u2's.
		landX := r.slowClick("x")
		submitUsers(t, r, "u1", "u2")

		hb := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(t))
		runWorker(t, r.client(hb, nil), r.q, asyncevent.WorkerOptions{Concurrency: 16, BatchSize: 10})
		eventually(t, "wave 1 decided", func() bool {
			rs := requestsOf(t, r.c, r.eventID)
			return countBy(rs, func(q asyncevent.Request) asyncevent.Status { return q.Status })[asyncevent.StatusSucceeded] == 2
		})

		waveWrite := hb.Hold(admissionWaveWrite, 1, asynceventtest.CallerWaits)
		submitUsers(t, r, "u3", "u4", "u5", "u6", "u7", "u8")
		require.NoError(t, waveWrite.Caught(ctx)) // the next wave (the last seat), not landed yet

		landX()
		x := find(requestsOf(t, r.c, r.eventID), "x").RequestID
		eventually(t, "X in the record's late set", func() bool {
			_, _, late, refusing := admissionRecord(t, r)
			require.False(t, refusing)
			return slices.Contains(late, x)
		})
		require.NoError(t, waveWrite.Land(ctx))
		t.Logf("wave write landed after X's late write: %v", waveWrite.Outcome())

		rs := r.judged(9)
		for i, q := range rs {
			t.Logf("rank %d %s %s %s", i, q.UserID, q.Status, q.ResultCode)
		}
		checkRanked(t, rs, r.seats)
		assert.Equal(t, asyncevent.StatusSucceeded, find(rs, "x").Status,
			"X was in the late set, not refusing, before the wave that took the last seat was written")
	})

	t.Run("holds: a late arrival met once the admission refuses ends REJECTED_LATE, not on the waitlist", func(t *testing.T) {
		t.Parallel()
		r := newRankedRig(t, 4, func(s *asyncevent.EventSettings) { s.HoldFor = time.Minute })
		land := r.slowClick("slow")
		r.workers(2, nil)
		r.submit(r.c, usersN("u", 12), 4)
		eventually(t, "the admission refusing", func() bool { return admissionRefusing(t, r) })
		land()
		// CheckEvent holds every request of the event, not only the late arrival: it
		// runs once the workers are done with all 13.
		var rs []asyncevent.Request
		eventually(t, "every request decided", func() bool {
			rs = requestsOf(t, r.c, r.eventID)
			return allDecided(rs, 13)
		})
		q := find(rs, "slow")
		assert.Equal(t, asyncevent.StatusRejected, q.Status, "the late arrival")
		assert.Equal(t, asyncevent.ResultLate, q.ResultCode, "the late arrival: %s %s", q.Status, q.ResultCode)
		st, err := r.c.EventStats(r.ctx, r.eventID)
		require.NoError(t, err)
		t.Logf("fairness: %+v", st.Fairness)
		assert.Zero(t, st.Fairness.LateWinners, "late winners")
		asynceventtest.CheckEvent(t, r.c, r.eventID, asynceventtest.CheckOptions{})
	})

	t.Run("an admission whose read of its record is answered late, after another process decided waves, reads the seats again", func(t *testing.T) {
		t.Parallel()
		idA, idB := "A", "B"
		r := newRankedRig(t, 8, nil)
		ctx := r.ctx
		qA, qB := queue.NewMemory(queue.MemoryOptions{}), queue.NewMemory(queue.MemoryOptions{})

		hbA := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(t))
		slowA := &slowAdmissionAnswer{DynamoDB: hbA}
		cA := clientOn(t, r, slowA, nil, 1) // waves of at most 4
		cB := clientOn(t, r, nil, nil, 1)
		runWorker(t, cA, qA, asyncevent.WorkerOptions{Concurrency: 16, BatchSize: 10, ProcessOptions: asyncevent.ProcessOptions{WorkerID: idA}})
		runWorker(t, cB, qB, asyncevent.WorkerOptions{Concurrency: 16, BatchSize: 10, ProcessOptions: asyncevent.ProcessOptions{WorkerID: idB}})

		// A click from an ingest clock an hour ahead: ranked after everything, its
		// delivery keeps A's admission running (as any stream of clicks would).
		ahead := clientOn(t, r, nil, func() time.Time { return time.Now().Add(time.Hour) }, 0)
		_, err := ahead.Submit(ctx, qA, r.eventID, "keeper")
		require.NoError(t, err)

		// Wave(s) of A: u0..u3 win; A counts 4 seats left.
		for i := range 4 {
			_, err := r.c.Submit(ctx, qA, r.eventID, fmt.Sprintf("u%d", i))
			require.NoError(t, err)
		}
		eventually(t, "u0..u3 won", func() bool {
			return statusesOf(t, r.c, r.eventID)[asyncevent.StatusSucceeded] == 4
		})
		rec := readAdmission(t, r)
		t.Logf("after A's waves: owner %s waves %d done %v", rec.Owner, rec.Waves, rec.WaveDone)
		require.True(t, strings.HasPrefix(rec.Owner, idA))

		// A's next read of the record is answered late.
		slowA.arm()
		<-slowA.caught

		// Meanwhile B (deliveries of u4, u5) takes the lease over once A's runs out,
		// decides u4 and u5, and goes idle.
		for _, u := range []string{"u4", "u5"} {
			_, err := r.c.Submit(ctx, qB, r.eventID, u)
			require.NoError(t, err)
		}
		eventually(t, "u4, u5 won", func() bool {
			return statusesOf(t, r.c, r.eventID)[asyncevent.StatusSucceeded] == 6
		})
		eventually(t, "B's lease ran out", func() bool {
			rec := readAdmission(t, r)
			if idA == idB {
				return rec.WaveDone && rec.Waves >= 4
			}
			return strings.HasPrefix(rec.Owner, idB) && rec.WaveDone && rec.LeaseExpiresAt < time.Now().UnixMilli()-200
		})
		rec = readAdmission(t, r)
		t.Logf("after B's wave: owner %s waves %d done %v wave %v", rec.Owner, rec.Waves, rec.WaveDone, rec.Wave)

		// Four more clicks, on A's queue; u6's claim is held so that the order of the
		// wave's claims is the one that shows the fault.
		ids := map[string]string{}
		for _, u := range []string{"u6", "u7", "u8", "u9"} {
			p, err := r.c.Submit(ctx, qA, r.eventID, u)
			require.NoError(t, err)
			ids[u] = p.RequestID
		}
		u6Claim := hbA.Hold(claimOf(ids["u6"]), 1, asynceventtest.CallerWaits)
		time.Sleep(300 * time.Millisecond) // past RankSettle
		close(slowA.release)

		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := u6Claim.Caught(wctx); err != nil {
			rec := readAdmission(t, r)
			t.Logf("record: %+v", rec)
			t.Fatalf("u6's claim not caught: %v", err)
		}
		rec = readAdmission(t, r)
		t.Logf("A's wave after the slow read: owner %s waves %d wave %v (2 seats left)", rec.Owner, rec.Waves, rec.Wave)
		eventually(t, "u7, u8, u9 decided", func() bool {
			rs := requestsOf(t, r.c, r.eventID)
			return find(rs, "u7").Status.IsTerminal() && find(rs, "u8").Status.IsTerminal() && find(rs, "u9").Status.IsTerminal()
		})
		require.NoError(t, u6Claim.Land(ctx))
		eventually(t, "u6 decided", func() bool { return find(requestsOf(t, r.c, r.eventID), "u6").Status.IsTerminal() })

		var rs []asyncevent.Request
		for _, q := range requestsOf(t, r.c, r.eventID) {
			if q.UserID != "keeper" {
				rs = append(rs, q)
			}
		}
		rs = byRank(rs)
		for i, q := range rs {
			t.Logf("rank %d %s %s %s", i, q.UserID, q.Status, q.ResultCode)
		}
		checkRanked(t, rs, r.seats)
	})

	t.Run("a wave's seat write unanswered, landing after its requests' own claims: it takes no seat", func(t *testing.T) {
		t.Parallel()
		r := newRankedRig(t, 10, nil)
		r.submit(r.c, usersN("u", 40), 8)
		hb := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(t))
		wave := hb.Hold(waveSeatsWrite, 1, asynceventtest.CallerReset)
		runWorker(t, r.client(hb, nil), r.q, asyncevent.WorkerOptions{Concurrency: 8, BatchSize: 8})
		require.NoError(t, wave.Caught(r.ctx))
		rs := r.judged(40)
		require.NoError(t, wave.Land(r.ctx))
		assert.True(t, wave.Outcome().ConditionFailed, "the late write found its requests' tokens: %s", wave.Outcome())
		r.checkEverySeatWon(rs)
	})

	t.Run("a wave's seat write applied, its answer lost: its requests bind the seats it took", func(t *testing.T) {
		t.Parallel()
		r := newRankedRig(t, 10, func(s *asyncevent.EventSettings) { s.CapacityShards = 2 })
		r.submit(r.c, usersN("u", 40), 8)
		var applied atomic.Int32
		runWorker(t, r.client(countWaveWrites(t, &applied, 2), nil), r.q, asyncevent.WorkerOptions{Concurrency: 8, BatchSize: 8})
		rs := r.judged(40)
		require.GreaterOrEqual(t, applied.Load(), int32(1), "a wave write's answer was lost")
		r.checkEverySeatWon(rs)
	})

	t.Run("a wave's seat write that hangs: its requests claim one by one, not held for the wave's timeout", func(t *testing.T) {
		t.Parallel()
		r := newRankedRig(t, 10, nil)
		r.submit(r.c, usersN("u", 40), 8)
		hb := asynceventtest.NewHoldBack(asynceventtest.DynamoDB(t))
		wave := hb.Hold(waveSeatsWrite, 1, asynceventtest.CallerWaits)
		runWorker(t, r.client(hb, nil), r.q, asyncevent.WorkerOptions{Concurrency: 8, BatchSize: 8})
		require.NoError(t, wave.Caught(r.ctx))
		// Liveness: every request final while the write is still on the wire, well
		// before the wave's own 30 s bound would have let its requests go on.
		deadline := time.Now().Add(15 * time.Second)
		for !allFinal(requestsOf(t, r.c, r.eventID), 40) {
			require.True(t, time.Now().Before(deadline), "the wave's requests wait on its hung write")
			time.Sleep(50 * time.Millisecond)
		}
		require.NoError(t, wave.Land(r.ctx))
		r.checkEverySeatWon(r.judged(40))
	})

	t.Run("one capacity shard, waves wider than a write: several writes on one item at once", func(t *testing.T) {
		t.Parallel()
		r := newRankedRig(t, 60, nil)
		r.submit(r.c, usersN("u", 400), 8)
		var applied atomic.Int32
		runWorker(t, r.client(countWaveWrites(t, &applied, 0), nil), r.q, asyncevent.WorkerOptions{Concurrency: 16, BatchSize: 10})
		rs := r.judged(400)
		assert.GreaterOrEqual(t, applied.Load(), int32(3), "a wave of 60 on one shard is three writes")
		r.checkEverySeatWon(rs)
	})

	t.Run("holds, the first wave writes' answers lost: the first N by rank hold", func(t *testing.T) {
		t.Parallel()
		r := newRankedRig(t, 30, func(s *asyncevent.EventSettings) { s.HoldFor = time.Minute; s.CapacityShards = 2 })
		r.submit(r.c, usersN("u", 80), 8)
		var applied atomic.Int32
		runWorker(t, r.client(countWaveWrites(t, &applied, 2), nil), r.q, asyncevent.WorkerOptions{Concurrency: 16, BatchSize: 10})
		var rs []asyncevent.Request
		eventually(t, "every request held or waitlisted", func() bool {
			rs = requestsOf(t, r.c, r.eventID)
			return len(rs) == 80 && !slices.ContainsFunc(rs, func(q asyncevent.Request) bool {
				return q.Status != asyncevent.StatusHeld && q.Status != asyncevent.StatusWaitlisted
			})
		})
		assert.GreaterOrEqual(t, applied.Load(), int32(2))
		for i, q := range byRank(rs) {
			assert.Equal(t, i < r.seats, q.Status == asyncevent.StatusHeld, "rank %d: %s", i, q.Status)
		}
		asynceventtest.CheckEvent(t, r.c, r.eventID, asynceventtest.CheckOptions{})
	})

	t.Run("index and capacity shards", func(t *testing.T) {
		t.Parallel()
		r := newRankedRig(t, 30, func(s *asyncevent.EventSettings) { s.IndexShards, s.CapacityShards = 4, 3 })
		r.workers(3, nil)
		r.submit(r.client(nil, nil), usersN("u", 200), 16)
		checkRanked(t, r.judged(200), r.seats)
	})

	t.Run("fewer users than seats: every one wins", func(t *testing.T) {
		t.Parallel()
		r := newRankedRig(t, 50, nil)
		r.workers(2, nil)
		r.submit(r.c, usersN("u", 20), 4)
		checkRanked(t, r.judged(20), r.seats)
	})

	t.Run("a put held back lands behind the watermark once the seats are gone: REJECTED_LATE", func(t *testing.T) {
		t.Parallel()
		r := newRankedRig(t, 10, nil)
		land := r.slowClick("slow")
		r.workers(2, nil)
		r.submit(r.c, usersN("u", 60), 8)
		eventually(t, "the admission refusing", func() bool { return admissionRefusing(t, r) })
		land()
		rs := r.judged(61)
		_, late := checkRanked(t, rs, r.seats)
		assert.Equal(t, 1, late, "the held put is a late arrival")
		assert.Equal(t, asyncevent.ResultLate, find(rs, "slow").ResultCode)
	})

	t.Run("a put held back lands behind the watermark while seats are left: it wins", func(t *testing.T) {
		t.Parallel()
		r := newRankedRig(t, 30, nil)
		land := r.slowClick("slow")
		r.workers(2, nil)
		r.submit(r.c, usersN("u", 10), 4)
		eventually(t, "the ten decided", func() bool {
			n := 0
			for _, q := range requestsOf(t, r.c, r.eventID) {
				if q.Status.IsTerminal() {
					n++
				}
			}
			return n == 10
		})
		land()
		rs := r.judged(11)
		checkRanked(t, rs, r.seats)
		assert.Equal(t, asyncevent.StatusSucceeded, find(rs, "slow").Status)
	})

	t.Run("an ingest clock 2 s behind: its clicks are late arrivals, never late winners", func(t *testing.T) {
		t.Parallel()
		r := newRankedRig(t, 20, nil)
		r.workers(3, nil)
		behind := r.client(nil, func() time.Time { return time.Now().Add(-2 * time.Second) })
		var wg sync.WaitGroup
		wg.Go(func() { r.submit(r.c, usersN("u", 150), 8) })
		wg.Go(func() { time.Sleep(300 * time.Millisecond); r.submit(behind, usersN("b", 50), 4) })
		wg.Wait()
		checkRanked(t, r.judged(200), r.seats)
	})

	t.Run("a lease taken over while its holder still runs (a clock 10 s ahead)", func(t *testing.T) {
		t.Parallel()
		r := newRankedRig(t, 40, nil)
		r.workers(4, func(i int) (asyncevent.DynamoDB, func() time.Time) {
			if i%2 == 1 {
				return nil, func() time.Time { return time.Now().Add(time.Duration(i) * 5 * time.Second) }
			}
			return nil, nil
		})
		r.submit(r.c, usersN("u", 300), 16)
		checkRanked(t, r.judged(300), r.seats)
	})
}

// statusesOf counts the event's requests by status.
func statusesOf(t *testing.T, c *asyncevent.Client, eventID string) map[asyncevent.Status]int {
	return countBy(requestsOf(t, c, eventID), func(r asyncevent.Request) asyncevent.Status { return r.Status })
}

// admissionWaveWrite matches the admission's wave rows (they SET wave and ADD waves).
func admissionWaveWrite(op string, in any) bool {
	u, ok := updateOf(op, in, "ADMISSION")
	return ok && u.UpdateExpression != nil && strings.Contains(*u.UpdateExpression, "ADD") &&
		slices.Contains(slices.Collect(maps.Values(u.ExpressionAttributeNames)), "wave")
}

// updateOf is the UpdateItem input of a write of an item whose SK is sk.
func updateOf(op string, in any, sk string) (*dynamodb.UpdateItemInput, bool) {
	u, ok := in.(*dynamodb.UpdateItemInput)
	if !ok || op != "UpdateItem" {
		return nil, false
	}
	key, ok := u.Key["SK"].(*types.AttributeValueMemberS)
	return u, ok && key.Value == sk
}

// claimOf matches a seat claim (capacity write) that names requestID.
func claimOf(requestID string) asynceventtest.Match {
	return func(op string, in any) bool {
		sum := sha256.Sum256([]byte("seat\x00" + requestID))
		token := base64.RawStdEncoding.EncodeToString(sum[:8])
		if !capacityWrite(op, in) {
			return false
		}
		for _, v := range in.(*dynamodb.UpdateItemInput).ExpressionAttributeValues {
			switch v := v.(type) {
			case *types.AttributeValueMemberS:
				if strings.HasPrefix(v.Value, token) {
					return true
				}
			case *types.AttributeValueMemberSS:
				if slices.Contains(v.Value, token) {
					return true
				}
			}
		}
		return false
	}
}

// admissionRecord returns what the rig's admission record holds.
func admissionRecord(t *testing.T, r *rankedRig) (through string, wave, late []string, refusing bool) {
	rec := readAdmission(t, r)
	return rec.Through, rec.Wave, rec.Late, rec.Refusing
}

// submitUsers submits users one after another on the rig's client and returns their
// request IDs by user.
func submitUsers(t *testing.T, r *rankedRig, users ...string) map[string]string {
	t.Helper()
	ids := map[string]string{}
	for _, u := range users {
		p, err := r.c.Submit(r.ctx, r.q, r.eventID, u)
		require.NoError(t, err)
		ids[u] = p.RequestID
	}
	return ids
}

// slowAdmissionAnswer delays the answer of the next strongly consistent read of the
// ADMISSION record once armed: the read is made (it sees the record as it is then),
// its answer comes back only when released (a slow network, a GC pause, a frozen
// Lambda environment).
type slowAdmissionAnswer struct {
	asyncevent.DynamoDB
	mu      sync.Mutex
	armed   bool
	caught  chan struct{}
	release chan struct{}
}

func (s *slowAdmissionAnswer) arm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed, s.caught, s.release = true, make(chan struct{}), make(chan struct{})
}

func (s *slowAdmissionAnswer) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	out, err := s.DynamoDB.GetItem(ctx, in, o...)
	sk, ok := in.Key["SK"].(*types.AttributeValueMemberS)
	if ok && sk.Value == "ADMISSION" {
		s.mu.Lock()
		take := s.armed
		s.armed = false
		caught, release := s.caught, s.release
		s.mu.Unlock()
		if take {
			close(caught)
			<-release
		}
	}
	return out, err
}

type rawAdmission struct {
	SK             string   `dynamodbav:"SK"`
	Through        string   `dynamodbav:"through"`
	Wave           []string `dynamodbav:"wave"`
	Late           []string `dynamodbav:"late,stringset"`
	WaveDone       bool     `dynamodbav:"waveDone"`
	Waves          int64    `dynamodbav:"waves"`
	Refusing       bool     `dynamodbav:"refusing"`
	Owner          string   `dynamodbav:"leaseOwner"`
	LeaseExpiresAt int64    `dynamodbav:"leaseExpiresAt"`
}

func readAdmission(t *testing.T, r *rankedRig) rawAdmission {
	for _, it := range asynceventtest.ScanTable(t, r.c.TableName()) {
		var rec rawAdmission
		require.NoError(t, attributevalue.UnmarshalMap(it, &rec))
		if rec.SK == "ADMISSION" {
			return rec
		}
	}
	return rawAdmission{}
}

func clientOn(t *testing.T, r *rankedRig, db asyncevent.DynamoDB, clock func() time.Time, drawConcurrency int) *asyncevent.Client {
	t.Helper()
	if db == nil {
		db = asynceventtest.DynamoDB(t)
	}
	c, err := asyncevent.New(db, asyncevent.Options{TableName: r.c.TableName(), Clock: clock, DrawConcurrency: drawConcurrency})
	require.NoError(t, err)
	return c
}

func byRank(rs []asyncevent.Request) []asyncevent.Request {
	slices.SortFunc(rs, func(a, b asyncevent.Request) int {
		return cmp.Or(cmp.Compare(a.QueuedAt, b.QueuedAt), strings.Compare(a.RequestID, b.RequestID))
	})
	return rs
}

// countWaveWrites is the test's DynamoDB Local, counting in applied the wave seat
// writes it applied, of which it answers the first lose with a connection reset (the
// write applied, its answer lost).
func countWaveWrites(t *testing.T, applied *atomic.Int32, lose int32) asyncevent.DynamoDB {
	db := asynceventtest.DynamoDB(t)
	return &hookDB{DynamoDB: db, update: func(ctx context.Context, in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error, bool) {
		if !waveSeatsWrite("UpdateItem", in) {
			return nil, nil, false
		}
		out, err := db.UpdateItem(ctx, in)
		if err == nil && applied.Add(1) <= lose {
			return nil, errors.New("read tcp: connection reset by peer"), true
		}
		return out, err, true
	}}
}

// allFinal reports whether rs are users requests, each final.
func allFinal(rs []asyncevent.Request, users int) bool {
	return len(rs) == users && !slices.ContainsFunc(rs, func(q asyncevent.Request) bool { return !q.Status.IsTerminal() })
}

// allDecided reports whether rs are the requests of users users and the workers are
// done with each: final, or HELD or WAITLISTED, which wait for a person.
func allDecided(rs []asyncevent.Request, users int) bool {
	return len(rs) == users && !slices.ContainsFunc(rs, func(q asyncevent.Request) bool {
		return !q.Status.IsTerminal() && q.Status != asyncevent.StatusHeld && q.Status != asyncevent.StatusWaitlisted
	})
}

// waveSeatsWrite matches the ranked admission's write of a wave's home seats: a
// capacity write that adds several seat tokens at once.
func waveSeatsWrite(op string, in any) bool {
	if !capacityWrite(op, in) {
		return false
	}
	for _, v := range in.(*dynamodb.UpdateItemInput).ExpressionAttributeValues {
		if ss, ok := v.(*types.AttributeValueMemberSS); ok && len(ss.Value) > 1 {
			return true
		}
	}
	return false
}

// capacityWrite matches a write of a capacity item (a seat claim).
func capacityWrite(op string, in any) bool {
	_, ok := updateOf(op, in, "CAPACITY")
	return ok
}

// receiveAll receives n messages of q.
func receiveAll(t *testing.T, q queue.Queue, n int) []queue.Delivery {
	t.Helper()
	var ds []queue.Delivery
	for len(ds) < n {
		got, err := q.Receive(context.Background(), n-len(ds), time.Second, time.Minute)
		require.NoError(t, err)
		ds = append(ds, got...)
	}
	return ds
}

// requestPut matches the put of a request (ingest's second write).
func requestPut(op string, in any) bool {
	p, ok := in.(*dynamodb.PutItemInput)
	if !ok || op != "PutItem" {
		return false
	}
	pk, ok := p.Item["PK"].(*types.AttributeValueMemberS)
	return ok && strings.HasPrefix(pk.Value, "REQ#")
}

// admissionRefusing reports whether the rig's admission record says it is refusing.
func admissionRefusing(t *testing.T, r *rankedRig) bool { return readAdmission(t, r).Refusing }

func find(rs []asyncevent.Request, user string) asyncevent.Request {
	for _, q := range rs {
		if q.UserID == user {
			return q
		}
	}
	return asyncevent.Request{}
}
