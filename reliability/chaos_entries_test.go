package reliability

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/entity"
)

// TestChaosLotteryLateArrivals runs a lottery under the suite's faults, worker kills,
// late worker writes and skewed worker clocks, in which some clicks reach the table
// late (lateIngest): their request's put held on the wire and landed before the
// draw, right after it recorded its entries, between a draw that died and its
// resumption, or after the announcement; or sent by an ingest whose clock is tens of
// seconds behind, while the draw runs, between its two processes, or after it. The
// draw dies at a stage the seed picks (after the freeze, after the record, midway
// through the results, as it is about to announce) and a fresh client resumes it;
// then the workers and the sweeper run until nothing is left. The record is the
// truth: from a raw consistent Scan, every request is final, the winners are
// min(K, entries) of the recorded entries, every other request queued by the cutoff
// (but failed ones) is a late arrival REJECTED_NOT_DRAWN, and VerifyDraw checks out,
// listing exactly those apart.
func TestChaosLotteryLateArrivals(t *testing.T) {
	t.Parallel()
	cfg := newConfig(t, chaosUsers()/2)
	w := newWorld(t, cfg)
	const eventID = "chaos-late-lottery"
	winners := atScale(50)
	cutoff := asyncevent.MillisOf(w.clock.Now().Add(time.Hour))
	ctx := context.Background()
	_, err := w.clean.CreateEvent(ctx, asyncevent.EventSettings{
		EventID: eventID, EventType: asyncevent.Lottery, WinnerCount: int64(winners), LotteryCutoffAt: cutoff})
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(uint64(cfg.seed), 7))
	everyone := w.users
	late := w.newLateIngest(eventID, cutoff, rng)
	// The workers take their time over each entry, so that the draw meets a backlog.
	w.handler = asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error {
		time.Sleep(20 * time.Millisecond)
		return nil
	})

	lap := phases(t)
	late.hold(beforeFreeze)
	drain := w.submitAll(eventID, rng)
	late.land(beforeFreeze)
	late.hold(atRecord, afterKill, afterAnnounce)
	lap("ingest")
	w.clock.Skip(time.Hour + asyncevent.DefaultDrawSettleWindow)
	death := w.deathFor(0, len(w.users), rng)
	recordedFirst := w.decideKilled(eventID, late, death, func(ctx context.Context, c *asyncevent.Client) error {
		_, err := c.Draw(ctx, eventID)
		return err
	})
	lap("the draw, killed and resumed")
	drain()
	w.startWorker()
	w.settle(eventID)
	w.stopWorkers()
	lap("the workers and the sweeper")

	w.users = everyone
	rep := asynceventtest.CheckEvent(t, w.clean, eventID, asynceventtest.CheckOptions{Users: w.users, Abandoned: w.abandoned})
	t.Logf("%d requests: %v %v; the draw died %s (entries recorded by then: %v); %d worker kills",
		rep.Requests, rep.ByStatus, rep.ByCode, death, recordedFirst, w.kills)
	w.judgeLottery(eventID, cutoff, winners, late, recordedFirst)
}

// judgeLottery checks a lottery with late arrivals from a raw consistent Scan and
// VerifyDraw.
func (w *world) judgeLottery(eventID string, cutoff asyncevent.EpochMillis, winners int, late *lateIngest, recordedFirst bool) {
	t := w.t
	s := scanEvent(t, w.table, eventID)
	won := 0
	var notDrawn []string
	for id, r := range s.requests {
		assert.True(t, r.Status.IsTerminal(), "request %s of %s is left %s", id, r.UserID, r.Status)
		switch {
		case s.recorded[id]:
			assert.True(t, r.Status == asyncevent.StatusSucceeded && r.ResultCode == asyncevent.ResultSuccess || r.ResultCode == asyncevent.ResultLotteryLose,
				"recorded entry %s of %s is %s %s", id, r.UserID, r.Status, r.ResultCode)
		case r.orderAt > cutoff:
			assert.NotEqual(t, asyncevent.StatusSucceeded, r.Status, "request %s of %s, queued after the cutoff, won", id, r.UserID)
		case r.Status != asyncevent.StatusFailedFinal:
			assert.Equal(t, asyncevent.ResultNotDrawn, r.ResultCode, "request %s of %s, queued by the cutoff and absent from the record, is %s",
				id, r.UserID, r.Status)
		}
		if r.Status == asyncevent.StatusSucceeded {
			won++
		}
		if r.ResultCode == asyncevent.ResultNotDrawn {
			notDrawn = append(notDrawn, id)
		}
	}
	assert.Equal(t, min(winners, len(s.recorded)), won, "min(K, entries) SUCCEEDED, all of them recorded entries")
	for id := range late.checkUsers(s, recordedFirst) {
		assert.Equal(t, asyncevent.ResultNotDrawn, s.requests[id].ResultCode, "late arrival %s", id)
	}
	v, err := w.clean.VerifyDraw(context.Background(), eventID)
	require.NoError(t, err)
	assert.True(t, v.OK(), "%s", v)
	assert.Equal(t, len(s.recorded), v.EntryCount)
	assert.ElementsMatch(t, notDrawn, v.Late, "VerifyDraw lists apart exactly the requests REJECTED_NOT_DRAWN")
	t.Logf("%d entries recorded, %d winners, %d late arrivals REJECTED_NOT_DRAWN", len(s.recorded), won, len(notDrawn))
}

// TestChaosPrequeue runs a first-come event with a pre-queue under the suite's
// faults, worker kills, late worker writes and skewed worker clocks: the pre-queue's
// clicks, some of them late as in TestChaosLotteryLateArrivals; its serve, which dies
// at a stage the seed picks and is resumed by a fresh client; then the sale's clicks
// and the sweeper. With holds, a payer confirms half the holds it meets, releases a
// quarter and lets a quarter lapse while the workers' hold sweeps hand the seats
// given back to the waitlist; at the end every hold is decided and the event closes,
// which refuses the waitlist. From a raw consistent Scan: every request is final;
// the requests queued before the start that the record does not name are exactly
// what VerifyPrequeue, which checks out, lists apart, among them every click that
// landed after the record; no seat is on the Returns item while a request was refused
// for want of one, and then exactly N seats were sold.
func TestChaosPrequeue(t *testing.T) {
	t.Parallel()
	for turn, layout := range []struct {
		name                string
		indexShards, shards int
		holds               bool
	}{
		{"one shard", 1, 1, false},
		{"K=8 C=4 holds", 8, 4, true},
	} {
		t.Run(layout.name, func(t *testing.T) {
			t.Parallel()
			cfg := newConfig(t, chaosUsers()/4)
			w := newWorld(t, cfg)
			p := &prequeueRun{w: w, eventID: "chaos-prequeue", holds: layout.holds, rng: rand.New(rand.NewPCG(uint64(cfg.seed), uint64(8+turn)))}
			p.start = asyncevent.MillisOf(w.clock.Now().Add(time.Hour))
			p.everyone = w.users
			p.late = w.newLateIngest(p.eventID, p.start-1, p.rng)
			p.create(layout.indexShards, layout.shards)
			p.run(turn)
			w.users = p.everyone
			rep := asynceventtest.CheckEvent(t, w.clean, p.eventID, asynceventtest.CheckOptions{Users: w.users, Abandoned: w.abandoned})
			t.Logf("%d requests, %d seats: %v %v; the serve died %s (entries recorded by then: %v); %d worker kills",
				rep.Requests, p.seats, rep.ByStatus, rep.ByCode, p.death, p.recordedFirst, w.kills)
			p.judge()
		})
	}
}

// prequeueRun is one run of TestChaosPrequeue.
type prequeueRun struct {
	w                  *world
	eventID            string
	holds              bool
	rng                *rand.Rand
	start              asyncevent.EpochMillis
	everyone, entrants []string // every user; those who click before the start, late ones aside
	sale               []string // those who click once the pre-queue was served
	late               *lateIngest
	seats              int
	death              deathAt
	recordedFirst      bool
	served             *asyncevent.PrequeueResult // the serve's answer
	confirmed          int                        // the confirms that applied
}

// create makes the event: three in five of the users click before the start. Without
// holds it has from half to one and a half times as many seats as the pre-queue has
// entries (so that the late arrivals and the sale win some, or none); with holds a
// third as many (so that the waitlist outlasts the seats given back); never more
// than its capacity shards hold.
func (p *prequeueRun) create(indexShards, shards int) {
	users := p.w.users
	p.entrants, p.sale = users[:len(users)*3/5], users[len(users)*3/5:]
	entries := len(p.entrants) + len(p.late.users())
	settings := asyncevent.EventSettings{EventID: p.eventID, EventType: asyncevent.FirstCome, IndexShards: indexShards,
		PrequeueOpensAt: asyncevent.MillisOf(p.w.clock.Now()), StartsAt: p.start}
	if p.holds {
		p.seats = max(shards, entries/3)
		settings.HoldFor, settings.EndsAt = asyncevent.MinHoldFor, asyncevent.MillisOf(p.start.Time().Add(2*time.Hour))
	} else {
		p.seats = max(shards, entries/2+p.rng.IntN(entries))
	}
	p.seats = min(p.seats, shards*asyncevent.MaxSeatsPerShard)
	settings.CapacityTotal, settings.CapacityShards = int64(p.seats), shards
	_, err := p.w.clean.CreateEvent(context.Background(), settings)
	require.NoError(p.w.t, err)
}

// run plays the pre-queue, its serve, the sale and the holds.
func (p *prequeueRun) run(turn int) {
	w, ctx := p.w, context.Background()
	lap := phases(w.t)
	p.late.hold(beforeFreeze)
	w.users = p.entrants
	drainEntries := w.submitAll(p.eventID, p.rng)
	p.late.land(beforeFreeze)
	p.late.hold(atRecord, afterKill, afterAnnounce)
	lap("the pre-queue's clicks")
	w.clock.Skip(time.Hour + asyncevent.DefaultDrawSettleWindow)
	stop, paid := make(chan struct{}), make(chan int)
	if p.holds {
		go func() { paid <- w.pay(ctx, p.eventID, stop) }()
	}
	p.death = w.deathFor(turn, len(p.entrants), p.rng)
	p.recordedFirst = w.decideKilled(p.eventID, p.late, p.death, func(ctx context.Context, c *asyncevent.Client) error {
		res, err := c.ServePrequeue(ctx, p.eventID)
		if err == nil {
			p.served = res
		}
		return err
	})
	lap("the serve, killed and resumed")
	// The sale's clicks come while the messages the workers met during the serve,
	// which come back as a sale's click does, wait their turn.
	w.users = p.sale
	w.ingestAll(p.eventID, p.rng)
	drainEntries()
	w.startWorker()
	w.settle(p.eventID)
	lap("the sale and the sweeper")
	if p.holds {
		w.clock.Skip(asyncevent.MinHoldFor + w.cfg.skew + time.Second)
		w.waitHoldsLapsed(ctx, p.eventID)
		close(stop)
		p.confirmed = <-paid
	}
	w.stopWorkers()
	if p.holds {
		p.confirmed += w.decideHolds(ctx, p.eventID)
		w.closeWaitlist(ctx, p.eventID)
		lap("the holds decided, the event closed")
	}
}

// judge checks the pre-queue from a raw consistent Scan and VerifyPrequeue.
func (p *prequeueRun) judge() {
	t := p.w.t
	s := scanEvent(t, p.w.table, p.eventID)
	var late []string
	won, refused, refusedEntries := 0, 0, 0
	for id, r := range s.requests {
		assert.True(t, r.Status.IsTerminal(), "request %s of %s is left %s", id, r.UserID, r.Status)
		if !s.recorded[id] && r.orderAt < p.start {
			late = append(late, id)
		}
		switch {
		case r.Status == asyncevent.StatusSucceeded:
			won++
		case r.ResultCode == asyncevent.ResultRejectedCapacity:
			refused++
			if s.recorded[id] {
				refusedEntries++
			}
		}
	}
	if !p.holds && refusedEntries > 0 {
		for id, r := range s.requests {
			assert.False(t, !s.recorded[id] && r.Status == asyncevent.StatusSucceeded,
				"%s of %s, no entry, won a seat while %d entries were refused", id, r.UserID, refusedEntries)
		}
	}
	for id := range p.late.checkUsers(s, p.recordedFirst) {
		assert.Contains(t, late, id, "a click that landed after the record is a late arrival")
	}
	require.NotNil(t, p.served, "the serve answered")
	for _, id := range p.served.Late {
		assert.Contains(t, late, id, "the serve's late arrival %s is absent from the record", id)
	}
	v, err := p.w.clean.VerifyPrequeue(context.Background(), p.eventID)
	require.NoError(t, err)
	assert.True(t, v.OK(), "%s", v)
	assert.True(t, v.Served, "the pre-queue was served")
	assert.Equal(t, len(s.recorded), v.EntryCount)
	assert.ElementsMatch(t, late, v.Late, "VerifyPrequeue lists apart exactly the requests queued before the start that the record does not name")
	if refused > 0 {
		assert.Zero(t, s.returns, "%d seats on the Returns item while %d requests were refused for want of one", s.returns, refused)
		assert.Equal(t, p.seats, won, "exactly N seats sold, as requests were refused")
	}
	if p.holds {
		assert.Equal(t, p.confirmed, won, "every confirm that applied, and no other")
	}
	t.Logf("%d entries recorded, %d late arrivals (%d of them in the serve's answer), %d seats sold, %d refused",
		len(s.recorded), len(late), len(p.served.Late), won, refused)
}

// decideHolds plays the payment service to the end, the workers stopped: round after
// round it sweeps without faults (the holds that ran out end, and the seats given
// back reach the waitlist, which the workers' own sweeps, each pass of which reads
// the drawn order's head entry by entry and stops at the first fault, seldom finish
// under the suite's faults), confirms or releases each HELD request by its ID as pay
// does (a quarter lapse), and lets the holds run out, until a sweep leaves no hold.
// It returns how many confirms applied.
func (w *world) decideHolds(ctx context.Context, eventID string) int {
	confirmed := 0
	for round := 0; ; round++ {
		require.Less(w.t, round, 40, "holds still served after 40 rounds")
		w.sweepHolds(ctx, eventID)
		var held []string
		for id, r := range scanEvent(w.t, w.table, eventID).requests {
			if r.Status == asyncevent.StatusHeld {
				held = append(held, id)
			}
		}
		if len(held) == 0 {
			return confirmed
		}
		for _, id := range held {
			switch fnv32(id) % 4 {
			case 0, 1:
				tr, err := w.clean.Confirm(ctx, id)
				require.NoError(w.t, err)
				if tr.Applied {
					confirmed++
				}
			case 2:
				_, err := w.clean.Release(ctx, id)
				require.NoError(w.t, err)
			}
		}
		w.clock.Skip(asyncevent.MinHoldFor + w.cfg.skew + time.Second)
	}
}

// closeWaitlist lets the event end and sweeps: its waitlist is refused.
func (w *world) closeWaitlist(ctx context.Context, eventID string) {
	ev, err := w.clean.GetEvent(ctx, eventID)
	require.NoError(w.t, err)
	w.clock.Skip(ev.EndsAt.Time().Sub(w.clock.Now()) + time.Second)
	w.sweepHolds(ctx, eventID)
}

// sweepHolds runs hold sweeps without faults until one finds nothing to do.
func (w *world) sweepHolds(ctx context.Context, eventID string) {
	for pass := 0; ; pass++ {
		require.Less(w.t, pass, 30, "the hold sweeps found something to do 30 times")
		rep, err := w.clean.SweepHolds(ctx, eventID, asyncevent.HoldSweepOptions{})
		require.NoError(w.t, err)
		if rep.Expired+rep.Served+rep.Closed == 0 && !rep.More {
			return
		}
	}
}

// eventScan is what a raw consistent Scan shows of an event.
type eventScan struct {
	requests map[string]scannedRequest // by request ID
	record   asyncevent.DrawRecord
	recorded map[string]bool // the entries the record names, read from its chunks
	returns  int64           // the seats on the Returns item
}

// scannedRequest is a request and the queuedAt its put wrote into its GSI2 sort key
// (which a failed enqueue keeps while it removes queuedAt).
type scannedRequest struct {
	asyncevent.Request
	orderAt asyncevent.EpochMillis
}

// scanEvent reads the event's requests, its Draw record, the chunks of entries the
// record names and its Returns item off the table.
func scanEvent(t *testing.T, table, eventID string) eventScan {
	drawKey, err := asyncevent.NewEventKey(eventID, asyncevent.EventItemDraw)
	require.NoError(t, err)
	returnsKey, err := asyncevent.NewReturnsKey(eventID)
	require.NoError(t, err)
	s := eventScan{requests: map[string]scannedRequest{}, recorded: map[string]bool{}}
	chunks := map[asyncevent.Key]string{}
	for _, item := range asynceventtest.ScanTable(t, table) {
		var head struct {
			PK, SK            string
			EntityType        entity.Type `dynamodbav:"entityType"`
			EventID           string      `dynamodbav:"eventId"`
			GSI2SK            string      `dynamodbav:"GSI2SK"`
			IDs               string      `dynamodbav:"ids"`
			CapacityRemaining int64       `dynamodbav:"capacityRemaining"`
		}
		require.NoError(t, attributevalue.UnmarshalMap(item, &head))
		key := asyncevent.Key{PK: head.PK, SK: head.SK}
		switch {
		case head.EntityType == entity.Request && head.EventID == eventID:
			r := scannedRequest{Request: asynceventtest.UnmarshalRequest(t, item)}
			if k, err := asyncevent.ParseQueuedAtSortKey(head.GSI2SK); assert.NoError(t, err, "request %s", r.RequestID) {
				r.orderAt = k.QueuedAt()
			}
			s.requests[r.RequestID] = r
		case key == drawKey.Key():
			require.NoError(t, attributevalue.UnmarshalMap(item, &s.record))
		case head.EntityType == entity.Entries:
			chunks[key] = head.IDs
		case key == returnsKey.Key():
			s.returns = head.CapacityRemaining
		}
	}
	for n := range int(s.record.EntryChunks) {
		key, err := asyncevent.NewEntriesKey(eventID, s.record.EntriesHash, n)
		require.NoError(t, err)
		ids, ok := chunks[key.Key()]
		require.True(t, ok, "chunk %d of the recorded entries is on the table", n)
		for id := range strings.SplitSeq(strings.TrimSuffix(ids, "\n"), "\n") {
			s.recorded[id] = true
		}
	}
	require.EqualValues(t, s.record.EntryCount, len(s.recorded), "the record's chunks hold its count of entries")
	return s
}

// liveRequest returns the request of user that its lock names: the one not ended by
// a failed enqueue (which releases the lock).
func (s eventScan) liveRequest(t *testing.T, user string) (scannedRequest, bool) {
	var live []scannedRequest
	for _, r := range s.requests {
		if r.UserID == user && r.ResultCode != asyncevent.ResultFailedIngestEnqueue {
			live = append(live, r)
		}
	}
	if !assert.Len(t, live, 1, "the live requests of %s", user) {
		return scannedRequest{}, false
	}
	return live[0], true
}
