package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"golang.org/x/sync/errgroup"

	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/internal/ctxsleep"
	"github.com/asyncevent/asyncevent/queue"
)

// Ranked admission (EventSettings.Admission AdmissionRanked): the winners of a
// first-come event are decided by rank, (queuedAt, requestId), the order of GSI2SK,
// not by the order the workers happen to process the messages.
//
// One admission per event decides the line, holding a lease on the event's
// admission record (PK EVENT#<eventId>, SK ADMISSION). It reads the requests ranked
// after the record's watermark (through) and queued at least RankSettle ago from GSI2,
// merged over the index shards, and decides them in waves: a wave is at most the
// seats left (read strongly consistent, less the requests of the admission's own
// waves since, while no other wave was written), it is written on the record by name
// with the new watermark before any of its claims (a compare-and-set on the record's
// counts of waves and of late arrivals as read, under the lease), and every request
// of it is decided, and the wave recorded decided, before the next wave begins. So a request can lose for want of a seat only once every request
// ranked before it has won or ended without a seat for another reason. Once the seats
// are gone the record says so (refusing), and every worker refuses the rest at once.
//
// The record is the truth. A request ranked at or before the watermark that no wave
// names and that is not decided (its put, or its GSI2 entry, landed after the
// admission read its place: a slow network, a frozen process, an ingest clock
// behind) is a late arrival. It is decided where the admission stands when a worker
// meets it: while the admission is not refusing, the worker adds it to the record's
// late set (condition: not refusing) and the admission's next wave takes it first,
// so it wins if that wave has a seat for it; once the admission is refusing, the
// worker ends it ResultLate. It is never handed a seat ahead of a request already
// refused for want of one (no claim runs beside a wave but the wave's own, and the
// admission refuses only once every wave is decided and no seat is left), and never
// left waiting. Exactly N stays with the seat claim (tokens and fences): two
// admissions at once (a lease taken over while its holder still runs) decide the same
// recorded wave, and the record's compare-and-set lets only one of them write the
// next.

// Admission is how a FIRST_COME event's winners are chosen (EventSettings.Admission).
type Admission string

// The admissions.
const (
	// AdmissionProcessing decides each request when a worker processes its message.
	AdmissionProcessing Admission = ""
	// AdmissionRanked decides the requests by rank, (queuedAt, requestId), a settle
	// delay behind now.
	AdmissionRanked Admission = "RANKED"
)

// The bounds of EventSettings.RankSettle.
const (
	DefaultRankSettle = 100 * time.Millisecond
	MinRankSettle     = 10 * time.Millisecond
	MaxRankSettle     = 10 * time.Second
)

// rankSettle is the event's settle delay.
func (e *EventSettings) rankSettle() time.Duration { return orDefault(e.RankSettle, DefaultRankSettle) }

const (
	// rankTick is how often an admission reads its line, and how often a process
	// that does not hold the admission's lease reads the record.
	rankTick = 25 * time.Millisecond
	// admissionLease is how long an admission holds its record before another
	// process may take it over: liveness only (the record's compare-and-set decides).
	admissionLease = 3 * time.Second
	// admissionIdle is how long an admission goes on once no delivery of its process
	// waits on it.
	admissionIdle = 2 * time.Second
	// waveTimeout bounds the deciding of one wave: a wave not decided by then is
	// resumed from the record.
	waveTimeout = 30 * time.Second
	// waveClaimTimeout bounds a wave's seat writes: a write unanswered by then is left
	// (it may still land), and its requests send their own claims, so that one write
	// that hangs never holds the whole wave.
	waveClaimTimeout = 2 * time.Second
)

// initialThrough is the watermark of an admission that has decided nothing: below
// every rank (each GSI2SK begins with QAT#<13 digits>).
const initialThrough = prefixQueued + sep

// The attributes of the admission record.
const (
	attrThrough  = "through"
	attrWave     = "wave"
	attrWaveDone = "waveDone"
	attrWaves    = "waves"
	attrRefusing = "refusing"
	attrLate     = "late"
	attrLateAdds = "lateAdds"
)

// The params of the admission's rows.
const (
	pThrough     param = "through"
	pWave        param = "wave"
	pLate        param = "late"
	pWavesAsRead param = "wavesAsRead"
	pLateAsRead  param = "lateAddsAsRead"
	pWaves       param = "waves"
)

// admissionItem is a ranked event's admission record.
type admissionItem struct {
	EntityType entity.Type `dynamodbav:"entityType"` // ADMISSION
	// Through is the GSI2SK of the last request the admission has passed: every
	// request ranked at or before it is decided, or is in Wave, or is a late arrival.
	Through string `dynamodbav:"through"`
	// Wave names the requests of the latest wave, which are decided before the next;
	// WaveDone records that they are.
	Wave     []string `dynamodbav:"wave"`
	WaveDone bool     `dynamodbav:"waveDone"`
	// Waves counts the waves written, LateAdds the late arrivals added: the wave
	// rows' compare-and-set names both as read, so that a wave is never written over
	// a late arrival added after the read, nor a write's stale copy over a later one.
	Waves    int64 `dynamodbav:"waves"`
	LateAdds int64 `dynamodbav:"lateAdds"`
	// Refusing: the admission found no seat left once every wave was decided; every
	// request not decided is then refused by the worker that meets it.
	Refusing bool `dynamodbav:"refusing"`
	// Late names the late arrivals workers found while the admission was not
	// refusing: its next wave takes them first.
	Late           []string    `dynamodbav:"late,stringset,omitempty"`
	Owner          string      `dynamodbav:"leaseOwner"`
	LeaseExpiresAt EpochMillis `dynamodbav:"leaseExpiresAt"`
}

// passed reports whether the admission has passed rank without deciding it: rank is
// at or before its watermark and no wave of it names id.
func (r *admissionItem) passed(rank, id string) bool {
	return rank <= r.Through && !slices.Contains(r.Wave, id)
}

var (
	// notRefusing: the admission has not begun refusing (the lease row sets
	// refusing false, so the attribute is there to compare).
	notRefusing = fixed(expression.Name(attrRefusing).Equal(expression.Value(false)))
	// admissionOwned: this process holds the lease, no wave was written since it read
	// the record, and the admission has not begun refusing.
	admissionOwned = all(leaseHeld, compare(expression.Name(attrWaves).Equal, pWavesAsRead), notRefusing)
	// waveUnchanged: admissionOwned, and no late arrival was added since the read
	// either: a wave never leaves out a late arrival added before it was written.
	waveUnchanged = all(admissionOwned, compare(expression.Name(attrLateAdds).Equal, pLateAsRead))

	admissionLeaseRow = row{
		name: "admission: lease", method: "Processor.ProcessOne", item: entity.Admission, op: opUpdate,
		cond: either(fixed(expression.AttributeNotExists(expression.Name(attrLeaseOwner))), leaseHeld, leaseExpired),
		sets: []set{setIfMissing(attrEntityType, entity.Admission), setIfMissing(attrThrough, initialThrough), setIfMissing(attrRefusing, false),
			setIfMissing(attrWaves, 0), setIfMissing(attrLateAdds, 0), setTo(attrLeaseOwner, pLeaseOwner), setTo(attrLeaseExpiresAt, pLeaseExpiresAt)},
	}
	admissionWaveRow = row{
		name: "admission: wave", method: "Processor.ProcessOne", item: entity.Admission, op: opUpdate, cond: waveUnchanged,
		sets: []set{setTo(attrThrough, pThrough), setTo(attrWave, pWave), setTo(attrWaveDone, false), setTo(attrLeaseExpiresAt, pLeaseExpiresAt)},
		adds: []set{addTo(attrWaves, 1)},
	}
	admissionWaveDoneRow = row{
		name: "admission: wave decided", method: "Processor.ProcessOne", item: entity.Admission, op: opUpdate,
		cond: all(leaseHeld, compare(expression.Name(attrWaves).Equal, pWaves)),
		sets: []set{setTo(attrWaveDone, true)},
	}
	// The wave that takes late arrivals takes them out of the late set too.
	admissionLateWaveRow = row{
		name: "admission: wave (late)", method: "Processor.ProcessOne", item: entity.Admission, op: opUpdate, cond: waveUnchanged,
		sets:    admissionWaveRow.sets,
		adds:    admissionWaveRow.adds,
		deletes: []set{addTo(attrLate, pLate)},
	}
	admissionLateRow = row{
		name: "admission: late arrival", method: "Processor.ProcessOne", item: entity.Admission, op: opUpdate,
		cond: notRefusing,
		adds: []set{addTo(attrLate, pLate), addTo(attrLateAdds, 1)},
	}
	admissionRefusingRow = row{
		name: "admission: refusing", method: "Processor.ProcessOne", item: entity.Admission, op: opUpdate, cond: admissionOwned,
		sets: []set{setTo(attrRefusing, true), setTo(attrWave, pWave)},
	}
)

// admission is one process's part in a ranked event's admission: the record as last
// read, the deliveries waiting on it, and the loop that reads it (and, holding the
// lease, decides the line) while any wait.
type admission struct {
	p     *Processor // the admitting processor: it decides a wave's requests
	cfg   *eventItem
	key   Key
	owner string

	mu      sync.Mutex
	waiters int
	running bool
	rec     *admissionItem // as last read or written; nil before the first read
	changed chan struct{}  // closed when rec changes

	// left, the loop's own: the seats left as last read strongly consistent, less
	// the requests of the waves this loop decided since; -1 when not known. It
	// holds while the record's count of waves is leftAt: any other wave sets it aside.
	left, leftAt int64
	// decided is the number of the last wave this loop decided (the record's count
	// of waves once it was written), whose end the record may not say yet.
	decided int64
}

// admissionOf returns the process's admission of a ranked event.
func (p *Processor) admissionOf(cfg *eventItem) (*admission, error) {
	if a, ok := p.admissions.Load(cfg.EventID); ok {
		return a.(*admission), nil
	}
	key, err := NewEventKey(cfg.EventID, EventItemAdmission)
	if err != nil {
		return nil, err
	}
	p.admitterOnce.Do(func() {
		p.admitter = &Processor{c: p.c, opts: p.opts, seats: p.seats, admitting: true}
	})
	a := &admission{p: p.admitter, cfg: cfg, key: key.Key(), owner: p.opts.WorkerID + "/admission/" + randomHex(4), changed: make(chan struct{})}
	actual, _ := p.admissions.LoadOrStore(cfg.EventID, a)
	return actual.(*admission), nil
}

// view returns the record as last read (nil before the first read) and a channel
// closed when it changes.
func (a *admission) view() (*admissionItem, <-chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rec, a.changed
}

// publish makes rec the record the waiting deliveries see.
func (a *admission) publish(rec *admissionItem) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rec = rec
	close(a.changed)
	a.changed = make(chan struct{})
}

// join counts a waiting delivery, and starts the loop if it is not running.
func (a *admission) join(ctx context.Context) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.waiters++
	if !a.running {
		a.running = true
		go a.run(context.WithoutCancel(ctx))
	}
}

// leave uncounts a waiting delivery.
func (a *admission) leave() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.waiters--
}

// idle reports whether no delivery has waited for admissionIdle; it then stops the
// loop, under the same lock join starts it under.
func (a *admission) idle(since *time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.waiters > 0 {
		*since = time.Now()
		return false
	}
	if time.Since(*since) < admissionIdle {
		return false
	}
	a.running = false
	return true
}

// rankedGate leaves a request of a ranked event to its admission: the delivery waits
// (its message kept hidden) until the admission has decided the request, or passed it
// without seeing it (a late arrival, which the worker's own path then decides, late
// set), or begun refusing (the worker's own path refuses it). It reports whether it
// decided the message. The admitting processor passes.
func (p *Processor) rankedGate(ctx context.Context, m Message, d queue.Delivery, extend *extender) (res result, gated, late bool) {
	if p.admitting || !m.Ranked && m.CapacityShards > 0 {
		return result{}, false, false // the admission's own, or its sender knew the event: not ranked
	}
	w := &rankedWait{p: p, m: m, d: d}
	cfg, err := p.c.cachedEvent(ctx, m.EventID)
	switch {
	case errors.Is(err, ErrEventNotFound):
		return result{}, false, false // the worker's own path says what becomes of it
	case err != nil:
		return w.retry(err)
	case cfg.Admission != AdmissionRanked:
		return result{}, false, false
	}
	w.cfg = cfg
	if w.a, err = p.admissionOf(cfg); err != nil {
		return w.retry(err)
	}
	// The rank the message names lets a delivery wait without a read; every
	// decision rests on the rank the request itself holds (a message may name
	// another queuedAt: a put whose answer was lost, then healed by a later click).
	w.rank, err = w.rankOf(m.QueuedAt)
	if m.QueuedAt == 0 {
		var res result
		var done bool
		if w.stored, res, done = w.look(ctx); done {
			return res, true, false
		}
		w.rank, err = w.rankOf(w.stored.QueuedAt)
	}
	if err != nil {
		return w.retry(err)
	}
	w.a.join(ctx)
	defer w.a.leave()
	stop := p.keepVisible(ctx, m, extend)
	defer stop()
	return w.wait(ctx)
}

// rankedWait is a delivery of a ranked event's message waiting on its admission.
type rankedWait struct {
	p      *Processor
	m      Message
	d      queue.Delivery
	cfg    *eventItem
	a      *admission
	rank   string         // the request's rank, as the message or the request last said
	stored *storedRequest // the request as last read; nil until then
	asked  bool           // this delivery added the request to the record's late set
}

// retry gives the message back after the processor's backoff.
func (w *rankedWait) retry(err error) (result, bool, bool) {
	return result{action: actRetry, delay: w.p.opts.Backoff(w.d.ReceiveCount), outcome: Outcome{Kind: OutcomeRetry, Err: err}}, true, false
}

// rankOf is the rank (GSI2SK) of the message's request queued at queuedAt.
func (w *rankedWait) rankOf(queuedAt EpochMillis) (string, error) {
	index, err := w.cfg.RequestIndexKeys(w.m.UserID, w.m.RequestID, queuedAt)
	return index.GSI2SK, err
}

// look reads the request as it stands (strongly consistent), and reports whether
// that decided the delivery: the request decided, missing on the last receive, or
// the read failed.
func (w *rankedWait) look(ctx context.Context) (*storedRequest, result, bool) {
	r, err := w.p.c.getRequest(ctx, w.m.RequestID, true)
	switch {
	case errors.Is(err, ErrNotFound) && w.d.ReceiveCount >= w.p.opts.MaxReceives:
		// Its put never landed (or lands later still: it is then on GSI2 for the
		// admission, or for Sweep once passed).
		return nil, notFound(), true
	case err != nil:
		res, _, _ := w.retry(err)
		return nil, res, true
	case r.Status.decided():
		return nil, decidedResult(r), true
	}
	return r, result{}, false
}

// wait waits until the admission decided the request, passed it without seeing it
// (a late arrival) or began refusing, the record read each tick by the admission's
// loop; it gives the message back after a whole lease.
func (w *rankedWait) wait(ctx context.Context) (res result, gated, late bool) {
	giveUp := time.NewTimer(w.p.opts.LeaseDuration)
	defer giveUp.Stop()
	for {
		rec, changed := w.a.view()
		tick := (<-chan time.Time)(nil)
		inWave := rec != nil && slices.Contains(rec.Wave, w.m.RequestID)
		switch {
		case inWave && rec.WaveDone:
			// Its wave is recorded decided: the admission decided it.
			return result{action: actDelete, outcome: Outcome{Kind: OutcomeDuplicate}}, true, false
		case inWave:
			// Its wave is being decided: wait for the record to say so.
		case rec != nil && (rec.Refusing || w.rank <= rec.Through):
			if res, gated, late, done := w.passed(ctx, rec); done {
				return res, gated, late
			}
			// Waiting for the next wave (a late arrival): the request is read
			// again each tick.
			tick = time.After(rankTick)
		}
		select {
		case <-changed:
		case <-tick:
		case <-giveUp.C:
			return result{action: actRetry, delay: time.Second, outcome: Outcome{Kind: OutcomeRetry, Err: errAdmissionSlow}}, true, false
		case <-ctx.Done():
			return w.retry(ctx.Err())
		}
	}
}

// passed handles a request the record has passed, or every one once it refuses:
// the request itself, read, says whether it was decided, is refused (the worker's
// own path), or is a late arrival that joins the record's late set while seats may
// be left. done is false while the delivery goes on waiting.
func (w *rankedWait) passed(ctx context.Context, rec *admissionItem) (res result, gated, late, done bool) {
	r, res, decided := w.look(ctx)
	if decided {
		return res, true, false, true
	}
	if w.stored == nil || r.QueuedAt != w.stored.QueuedAt {
		rank, err := w.rankOf(r.QueuedAt)
		if err != nil {
			res, gated, late := w.retry(err)
			return res, gated, late, true
		}
		w.rank = rank
	}
	w.stored = r
	switch {
	case rec.Refusing && w.rank > rec.Through:
		// Ranked after every wave, once no seat was left: refused as any request
		// after the last seat.
		return result{}, false, false, true
	case rec.Refusing:
		return result{}, false, true, true // a late arrival, once no seat is left: ResultLate
	case w.rank > rec.Through:
		return result{}, false, false, false // the message named an older rank: wait for the admission
	case rec.passed(w.rank, w.m.RequestID) && !w.asked && !slices.Contains(rec.Late, w.m.RequestID):
		// A late arrival while seats may be left: the admission's next wave takes it
		// first. A refusal of the write means the admission began refusing
		// meanwhile: the next read of the record says so.
		if err := ignoreLost(w.a.write(ctx, &admissionLateRow, args{pLate: setOf[string]{w.m.RequestID}})); err != nil {
			res, gated, late := w.retry(err)
			return res, gated, late, true
		}
		w.asked = true
	}
	return result{}, false, false, false
}

// errAdmissionSlow: a delivery waited a whole lease for the admission; its message
// comes back.
var errAdmissionSlow = errors.New("asyncevent: the ranked admission has not reached the request yet")

// decidedResult is the result of a delivery that found its request decided already.
func decidedResult(r *storedRequest) result {
	return result{action: actDelete, outcome: Outcome{Kind: OutcomeDuplicate, ResultCode: r.ResultCode}}
}

// run reads the record every tick while deliveries wait and, holding the lease,
// decides the line.
func (a *admission) run(ctx context.Context) {
	log := a.p.opts.Logger.With(slog.String("eventId", a.cfg.EventID))
	since := time.Now()
	a.left = -1
	for !a.idle(&since) {
		full, err := a.step(ctx)
		if err != nil {
			log.WarnContext(ctx, "ranked admission", slog.Any("error", err))
		}
		if !full || err != nil {
			_ = ctxsleep.Sleep(ctx, rankTick)
		}
	}
}

// step reads the record and, holding the lease, decides the next wave. It reports
// whether the line read was full (more to read at once).
func (a *admission) step(ctx context.Context) (full bool, err error) {
	c := a.p.c
	rec, err := a.read(ctx)
	if err != nil {
		return false, err
	}
	a.publish(rec)
	if rec.Waves != a.leftAt {
		// A wave this loop did not count (another process's, or one before its
		// read): its claims are not in the count.
		a.left = -1
	}
	now := c.now()
	if rec.Refusing || rec.Owner != a.owner && rec.Owner != "" && rec.LeaseExpiresAt > now {
		a.left = -1
		return false, nil
	}
	if rec.Owner != a.owner || rec.LeaseExpiresAt-now < EpochMillis(admissionLease.Milliseconds()/2) {
		if rec.Owner != a.owner {
			a.left = -1 // another process may have decided waves since
		}
		if err := a.write(ctx, &admissionLeaseRow, args{pNow: now, pLeaseOwner: a.owner, pLeaseExpiresAt: now + EpochMillis(admissionLease.Milliseconds())}); err != nil {
			return false, ignoreLost(err)
		}
		return true, nil // read the record as written
	}
	decidedHere := rec.Waves == a.decided && rec.Owner == a.owner
	if len(rec.Wave) > 0 && !rec.WaveDone && !decidedHere {
		// A wave written and not known decided (this process crashed, or another
		// one's lease ran out): decide it before any other.
		wave, _, err := a.undecided(ctx, rec.Wave, len(rec.Wave))
		if err != nil {
			return false, err
		}
		return true, a.finish(ctx, rec, wave)
	}
	// The seats left: read strongly consistent when not known, and again before the
	// admission refuses; in between, those read less the requests of this loop's
	// waves since, while the record counts no other wave (nothing else takes a seat
	// before the record says refusing: seats added or given back only add), a count
	// never above the seats left.
	if a.left <= 0 {
		// Read after the record: a wave another process writes from now on changes
		// the record's count of waves, which this loop's own wave write names as read
		// (and fails on), and which the next step's read sets the count aside for.
		if a.left, err = c.seatsLeft(ctx, a.cfg); err != nil {
			a.left = -1
			return false, err
		}
		a.leftAt = rec.Waves
	}
	if a.left <= 0 {
		return false, ignoreLost(a.write(ctx, &admissionRefusingRow, args{pLeaseOwner: a.owner, pWavesAsRead: rec.Waves, pWave: []string{}}))
	}
	return a.nextWave(ctx, rec, now, decidedHere)
}

// nextWave reads the late arrivals and the line after the record's watermark, writes
// the next wave of at most the seats left on the record (its compare-and-set), and
// decides it; in a lull it says the last wave this loop decided is decided. It
// reports whether the line read was full.
func (a *admission) nextWave(ctx context.Context, rec *admissionItem, now EpochMillis, decidedHere bool) (full bool, err error) {
	c := a.p.c
	size := int(min(a.left, int64(waveSize(c))))
	// The late arrivals first: they are ranked before everything the line holds.
	wave, taken, err := a.lateArrivals(ctx, rec.Late, size)
	if err != nil {
		return false, err
	}
	line, full, err := c.lineAfter(ctx, a.cfg, rec.Through, now-EpochMillis(a.cfg.rankSettle().Milliseconds()), size-len(wave))
	if err != nil {
		return false, err
	}
	if len(line) == 0 && len(taken) == 0 {
		if len(rec.Wave) > 0 && !rec.WaveDone && decidedHere {
			// A lull: the wave this loop decided is recorded decided, so that the
			// deliveries of other processes waiting on it end without a read (a
			// next wave says as much, which a busy line writes instead).
			return false, ignoreLost(a.write(ctx, &admissionWaveDoneRow, args{pLeaseOwner: a.owner, pWaves: rec.Waves}))
		}
		return false, nil
	}
	through := rec.Through
	for _, e := range line {
		if len(wave) == size {
			full = true
			break
		}
		through = e.GSI2SK
		if !e.Status.decided() && !slices.ContainsFunc(wave, func(w drawEntry) bool { return w.RequestID == e.RequestID }) {
			wave = append(wave, e.drawEntry)
		}
	}
	ids := make([]string, len(wave))
	for i, e := range wave {
		ids[i] = e.RequestID
	}
	waveRow, v := &admissionWaveRow, args{pLeaseOwner: a.owner, pWavesAsRead: rec.Waves, pLateAsRead: rec.LateAdds, pThrough: through, pWave: ids,
		pLeaseExpiresAt: now + EpochMillis(admissionLease.Milliseconds())}
	if len(taken) > 0 {
		waveRow, v[pLate] = &admissionLateWaveRow, setOf[string](taken)
	}
	if err := a.write(ctx, waveRow, v); err != nil {
		a.left = -1
		return false, ignoreLost(err)
	}
	rec = &admissionItem{EntityType: entity.Admission, Through: through, Wave: ids, Waves: rec.Waves + 1, LateAdds: rec.LateAdds,
		Owner: a.owner, LeaseExpiresAt: rec.LeaseExpiresAt}
	a.publish(rec)
	return full, a.finish(ctx, rec, wave)
}

// finish decides the undecided requests of rec's wave. The deliveries of this
// process waiting on them end at once; those of others when the record moves on: the
// next wave (written only once this one is decided), or, in a lull, "admission: wave
// decided" (step).
func (a *admission) finish(ctx context.Context, rec *admissionItem, wave []drawEntry) error {
	if err := a.decide(ctx, wave); err != nil {
		a.left = -1
		return err
	}
	a.left -= int64(len(wave))
	a.leftAt = rec.Waves
	a.decided = rec.Waves
	done := *rec
	done.WaveDone = true
	a.publish(&done)
	return nil
}

// waveSize is the most requests an admission decides at once.
func waveSize(c *Client) int { return 4 * c.opts.DrawConcurrency }

// lateArrivals returns the first at most size late arrivals of the record's late
// set not decided yet, and every ID of the set it took (decided ones too), which the
// wave takes out of the set.
func (a *admission) lateArrivals(ctx context.Context, late []string, size int) (wave []drawEntry, taken []string, err error) {
	late = slices.Clone(late)
	slices.Sort(late)
	return a.undecided(ctx, late, size)
}

// undecided returns the requests of ids not decided yet, each read strongly
// consistent, at most size of them, and the IDs it looked at.
func (a *admission) undecided(ctx context.Context, ids []string, size int) (wave []drawEntry, looked []string, err error) {
	for _, id := range ids {
		if len(wave) == size {
			break
		}
		looked = append(looked, id)
		r, err := a.p.c.getRequest(ctx, id, true)
		switch {
		case errors.Is(err, ErrNotFound):
			continue // the record names requests that were on the table: none is ever deleted
		case err != nil:
			return nil, nil, err
		case r.Status.decided():
			continue
		}
		wave = append(wave, drawEntry{RequestID: id, UserID: r.UserID, RequestedAt: r.RequestedAt, Status: r.Status, QueuedAt: r.QueuedAt})
	}
	return wave, looked, nil
}

// decide decides every request of a wave at once, each as a worker without a Handler
// would (its seat claim), until each is decided or waveTimeout passes.
func (a *admission) decide(ctx context.Context, wave []drawEntry) error {
	if len(wave) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, waveTimeout)
	defer cancel()
	a.claimWave(ctx, wave)
	return a.p.c.serveWave(ctx, a.p, a.cfg, wave, len(wave))
}

// claimWave takes the home seats of a wave's requests before they are decided: one
// write of each home shard for up to maxWaveClaim of its requests at once (the
// "first-come wave seats" row), where each would otherwise send its own home claim.
// A request whose seat a write took is then only bound. What a write does not take
// (a shard with fewer seats than requests, a request its token or a fence already
// names there, a write refused or unanswered) the requests' own claims sort out, one
// at a time, as a worker's would. Without a Handler only: a Handler runs before a
// request's claim.
func (a *admission) claimWave(ctx context.Context, wave []drawEntry) {
	p, ev, n := a.p, a.cfg.EventID, max(a.cfg.CapacityShards, 1)
	if p.opts.Handler != nil || p.seats.SoldOut(ev) {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, waveClaimTimeout)
	defer cancel()
	byShard := map[int][]string{}
	for _, e := range wave {
		if shard := shardOf(e.RequestID, n); !p.seats.IsEmpty(ev, shard) {
			byShard[shard] = append(byShard[shard], e.RequestID)
		}
	}
	var wg sync.WaitGroup
	for shard, ids := range byShard {
		for chunk := range slices.Chunk(ids, maxWaveClaim) {
			if len(chunk) < 2 {
				continue // a home claim of its own is the same one write
			}
			wg.Go(func() {
				taken, emptied, err := p.c.claimWaveSeats(ctx, ev, n, shard, chunk)
				var lost *conditionLost
				if err != nil && !errors.As(err, &lost) {
					p.opts.Logger.WarnContext(ctx, "a wave's seat write failed: its requests claim one by one",
						slog.String("eventId", ev), slog.Int("shard", shard), slog.Int("requests", len(chunk)), slog.Any("error", err))
				}
				if err != nil {
					return
				}
				for _, id := range chunk[:taken] {
					p.waveSeats.Store(id, struct{}{})
				}
				if emptied && n > 1 {
					p.c.shardEmpty(ctx, ev, shard, n, p.seats, recordAlways)
				}
			})
		}
	}
	wg.Wait()
}

// read reads the record strongly consistent; a record not written yet is the zero
// record.
func (a *admission) read(ctx context.Context) (*admissionItem, error) {
	var rec admissionItem
	if _, err := a.p.c.getItem(ctx, a.key, true, &rec); err != nil {
		return nil, fmt.Errorf("admission of %s: %w", a.cfg.EventID, err)
	}
	return &rec, nil
}

// write makes one of the record's rows.
func (a *admission) write(ctx context.Context, r *row, v args) error {
	return a.p.c.do(ctx, txOptions{}, []write{{row: r, key: a.key, args: v}})
}

// ignoreLost: a lost condition on the record is an outcome (another process holds it,
// or moved it on): the next step reads it again.
func ignoreLost(err error) error {
	var lost *conditionLost
	if errors.As(err, &lost) {
		return nil
	}
	return err
}

// lineRow is a request of an event's line as the admission reads it.
type lineRow struct {
	GSI2SK string `dynamodbav:"GSI2SK"`
	drawEntry
}

// lineAfter reads the event's requests ranked after through and queued before upTo
// from GSI2, in rank order: at most limit from each index shard (one Query page each),
// merged, and cut where a shard that had more ends, so that no request is missing
// before the last one returned. full reports that a shard had more.
func (c *Client) lineAfter(ctx context.Context, cfg *eventItem, through string, upTo EpochMillis, limit int) (rows []lineRow, full bool, err error) {
	hi, err := QueuedAtBound(max(upTo, 0))
	if err != nil {
		return nil, false, err
	}
	if hi <= through {
		return nil, false, nil
	}
	parts, err := EventPartitions(cfg.EventID, max(cfg.IndexShards, 1))
	if err != nil {
		return nil, false, err
	}
	names := []string{attrGSI2SK, attrRequestID, attrUserID, attrRequestedAt, attrStatus, attrResultCode, attrQueuedAt}
	projection := expression.NamesList(expression.Name(names[0]))
	for _, n := range names[1:] {
		projection = projection.AddNames(expression.Name(n))
	}
	byPart := make([][]lineRow, len(parts))
	more := make([]bool, len(parts))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(partitionReads)
	for i, part := range parts {
		g.Go(func() error {
			key := expression.Key(attrGSI2PK).Equal(expression.Value(part.String())).
				And(expression.Key(attrGSI2SK).Between(expression.Value(through), expression.Value(hi)))
			expr, err := expression.NewBuilder().WithKeyCondition(key).WithProjection(projection).Build()
			if err != nil {
				return err
			}
			in := c.query(IndexEvent, expr)
			in.Limit = aws.Int32(int32(limit + 1)) // the watermark itself may be the first
			out, err := c.db.Query(gctx, in)
			if err != nil {
				return fmt.Errorf("read the line of %s: %w", cfg.EventID, err)
			}
			if err := attributevalue.UnmarshalListOfMaps(out.Items, &byPart[i]); err != nil {
				return fmt.Errorf("read the line of %s: %w", cfg.EventID, err)
			}
			more[i] = out.LastEvaluatedKey != nil
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, false, err
	}
	cut := hi
	for i, part := range byPart {
		if more[i] && len(part) > 0 {
			full = true
			cut = min(cut, part[len(part)-1].GSI2SK)
		}
	}
	for _, part := range byPart {
		for _, r := range part {
			if r.GSI2SK > through && r.GSI2SK <= cut {
				rows = append(rows, r)
			}
		}
	}
	slices.SortFunc(rows, func(a, b lineRow) int { return strings.Compare(a.GSI2SK, b.GSI2SK) })
	return rows, full, nil
}
