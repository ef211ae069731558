package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"golang.org/x/sync/errgroup"

	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/internal/admission"
	"github.com/asyncevent/asyncevent/queue"
)

// Ranked admission (EventSettings.Admission AdmissionRanked): the winners of a
// first-come event are decided by rank, (queuedAt, requestId), the order of GSI2SK,
// not by the order the workers happen to process the messages. The algorithm (the
// admission's loop, its waves, the deliveries' wait) is package internal/admission;
// here are the admission record, its rows, and the store the algorithm runs on.

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

// admissionOf returns the process's admission of a ranked event.
func (p *Processor) admissionOf(cfg *eventItem) (*admission.Admission, error) {
	if a, ok := p.admissions.Load(cfg.EventID); ok {
		return a.(*admission.Admission), nil
	}
	key, err := NewEventKey(cfg.EventID, EventItemAdmission)
	if err != nil {
		return nil, err
	}
	p.admitterOnce.Do(func() {
		p.admitter = &Processor{c: p.c, opts: p.opts, seats: p.seats, admitting: true}
	})
	a := admission.New(&admissionStore{p: p.admitter, cfg: cfg, key: key.Key()}, admission.Config{
		EventID: cfg.EventID, Owner: p.opts.WorkerID + "/admission/" + randomHex(4), Settle: cfg.rankSettle(),
		WaveSize: admission.WaveSize(p.c.opts.DrawConcurrency), MaxWaveClaim: maxWaveClaim, Clock: p.c.opts.Clock, Logger: p.opts.Logger,
	})
	actual, _ := p.admissions.LoadOrStore(cfg.EventID, a)
	return actual.(*admission.Admission), nil
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
	cfg, err := p.c.cachedEvent(ctx, m.EventID)
	switch {
	case errors.Is(err, ErrEventNotFound):
		return result{}, false, false // the worker's own path says what becomes of it
	case err != nil:
		return p.waited(d, admission.Verdict{Kind: admission.Retry, Err: err})
	case cfg.Admission != AdmissionRanked:
		return result{}, false, false
	}
	a, err := p.admissionOf(cfg)
	if err != nil {
		return p.waited(d, admission.Verdict{Kind: admission.Retry, Err: err})
	}
	w := &admission.Wait{Admission: a, RequestID: m.RequestID, LastReceive: d.ReceiveCount >= p.opts.MaxReceives, GiveUp: p.opts.LeaseDuration,
		RankOf: func(queuedAt int64) (string, error) {
			index, err := cfg.RequestIndexKeys(m.UserID, m.RequestID, EpochMillis(queuedAt))
			return index.GSI2SK, err
		}}
	return p.waited(d, w.Run(ctx, int64(m.QueuedAt), func() (stop func()) { return p.keepVisible(ctx, m, extend) }))
}

// waited is the worker's result of a delivery's wait on its admission.
func (p *Processor) waited(d queue.Delivery, v admission.Verdict) (res result, gated, late bool) {
	switch v.Kind {
	case admission.Proceed, admission.ProceedLate:
		return result{}, false, v.Kind == admission.ProceedLate // late: ResultLate
	case admission.Decided:
		return result{action: actDelete, outcome: Outcome{Kind: OutcomeDuplicate, ResultCode: ResultCode(v.ResultCode)}}, true, false
	case admission.Missing:
		return notFound(), true, false
	case admission.Slow:
		return result{action: actRetry, delay: time.Second, outcome: Outcome{Kind: OutcomeRetry, Err: errAdmissionSlow}}, true, false
	}
	return result{action: actRetry, delay: p.opts.Backoff(d.ReceiveCount), outcome: Outcome{Kind: OutcomeRetry, Err: v.Err}}, true, false
}

// errAdmissionSlow: a delivery waited a whole lease for the admission; its message
// comes back.
var errAdmissionSlow = errors.New("asyncevent: the ranked admission has not reached the request yet")

// admissionStore is the admission record of one event, its line, its requests and its
// seats, as the admission (package internal/admission) reads and writes them: the
// admission's rows, the admitting processor's decisions.
type admissionStore struct {
	p   *Processor // the admitting processor: it decides a wave's requests
	cfg *eventItem
	key Key
}

func (s *admissionStore) Read(ctx context.Context) (*admission.Record, error) {
	var rec admissionItem
	if _, err := s.p.c.getItem(ctx, s.key, true, &rec); err != nil {
		return nil, fmt.Errorf("admission of %s: %w", s.cfg.EventID, err)
	}
	return &admission.Record{Through: rec.Through, Wave: rec.Wave, WaveDone: rec.WaveDone, Waves: rec.Waves, LateAdds: rec.LateAdds,
		Refusing: rec.Refusing, Late: rec.Late, Owner: rec.Owner, LeaseExpiresAt: int64(rec.LeaseExpiresAt)}, nil
}

// write makes one of the record's rows.
func (s *admissionStore) write(ctx context.Context, r *row, v args) (bool, error) {
	return applied(s.p.c.do(ctx, txOptions{}, []write{{row: r, key: s.key, args: v}}))
}

// applied is a conditional write's outcome: a lost condition is no error, the write
// not applied (another process holds the record, or moved it on).
func applied(err error) (bool, error) {
	if lost := (*conditionLost)(nil); errors.As(err, &lost) {
		return false, nil
	}
	return err == nil, err
}

func (s *admissionStore) TakeLease(ctx context.Context, owner string, now, expiresAt int64) (bool, error) {
	return s.write(ctx, &admissionLeaseRow, args{pNow: EpochMillis(now), pLeaseOwner: owner, pLeaseExpiresAt: EpochMillis(expiresAt)})
}

func (s *admissionStore) WriteWave(ctx context.Context, w admission.WaveWrite) (bool, error) {
	r, v := &admissionWaveRow, args{pLeaseOwner: w.Owner, pWavesAsRead: w.WavesAsRead, pLateAsRead: w.LateAsRead, pThrough: w.Through, pWave: w.Wave,
		pLeaseExpiresAt: EpochMillis(w.LeaseExpiresAt)}
	if len(w.Late) > 0 {
		r, v[pLate] = &admissionLateWaveRow, setOf[string](w.Late)
	}
	return s.write(ctx, r, v)
}

func (s *admissionStore) MarkWaveDone(ctx context.Context, owner string, waves int64) (bool, error) {
	return s.write(ctx, &admissionWaveDoneRow, args{pLeaseOwner: owner, pWaves: waves})
}

func (s *admissionStore) AddLate(ctx context.Context, requestID string) (bool, error) {
	return s.write(ctx, &admissionLateRow, args{pLate: setOf[string]{requestID}})
}

func (s *admissionStore) SetRefusing(ctx context.Context, owner string, wavesAsRead int64) (bool, error) {
	return s.write(ctx, &admissionRefusingRow, args{pLeaseOwner: owner, pWavesAsRead: wavesAsRead, pWave: []string{}})
}

func (s *admissionStore) Request(ctx context.Context, requestID string) (admission.Request, error) {
	r, err := s.p.c.getRequest(ctx, requestID, true)
	switch {
	case errors.Is(err, ErrNotFound):
		return admission.Request{}, &admission.NotFoundError{Err: err}
	case err != nil:
		return admission.Request{}, err
	}
	return admission.Request{Entry: admission.Entry{RequestID: requestID, UserID: r.UserID, RequestedAt: int64(r.RequestedAt), QueuedAt: int64(r.QueuedAt)},
		Decided: r.Status.decided(), ResultCode: string(r.ResultCode)}, nil
}

func (s *admissionStore) SeatsLeft(ctx context.Context) (int64, error) {
	return s.p.c.seatsLeft(ctx, s.cfg)
}

func (s *admissionStore) ClaimsWaves() bool {
	return s.p.opts.Handler == nil && !s.p.seats.SoldOut(s.cfg.EventID)
}

func (s *admissionStore) HomeShard(requestID string) (int, bool) {
	shard := shardOf(requestID, max(s.cfg.CapacityShards, 1))
	return shard, !s.p.seats.IsEmpty(s.cfg.EventID, shard)
}

// ClaimWaveSeats makes the "first-come wave seats" write; the requests whose seat it
// took are then only bound, and a shard it emptied is recorded so.
func (s *admissionStore) ClaimWaveSeats(ctx context.Context, shard int, ids []string) error {
	p, ev, n := s.p, s.cfg.EventID, max(s.cfg.CapacityShards, 1)
	taken, emptied, err := p.c.claimWaveSeats(ctx, ev, n, shard, ids)
	if ok, err := applied(err); !ok {
		return err
	}
	for _, id := range ids[:taken] {
		p.waveSeats.Store(id, struct{}{})
	}
	if emptied && n > 1 {
		p.c.shardEmpty(ctx, ev, shard, n, p.seats, recordAlways)
	}
	return nil
}

// Decide decides a wave's requests, each as a worker without a Handler would.
func (s *admissionStore) Decide(ctx context.Context, wave []admission.Entry) error {
	entries := make([]drawEntry, len(wave))
	for i, e := range wave {
		entries[i] = drawEntry{RequestID: e.RequestID, UserID: e.UserID, RequestedAt: EpochMillis(e.RequestedAt), QueuedAt: EpochMillis(e.QueuedAt)}
	}
	return s.p.c.serveWave(ctx, s.p, s.cfg, entries, len(entries))
}

// lineRow is a request of an event's line as the admission reads it.
type lineRow struct {
	GSI2SK string `dynamodbav:"GSI2SK"`
	drawEntry
}

// Line reads the event's requests ranked after through and queued before upTo from
// GSI2, in rank order: one Query page of each index shard, of limit+1 items (the
// watermark itself may be the first), which the admission merges.
func (s *admissionStore) Line(ctx context.Context, through string, upTo int64, limit int) ([]admission.Page, error) {
	c, cfg := s.p.c, s.cfg
	hi, err := QueuedAtBound(EpochMillis(max(upTo, 0)))
	if err != nil || hi <= through {
		return nil, err
	}
	parts, err := EventPartitions(cfg.EventID, max(cfg.IndexShards, 1))
	if err != nil {
		return nil, err
	}
	projection := expression.NamesList(expression.Name(attrGSI2SK), expression.Name(attrRequestID), expression.Name(attrUserID),
		expression.Name(attrRequestedAt), expression.Name(attrStatus), expression.Name(attrResultCode), expression.Name(attrQueuedAt))
	pages := make([]admission.Page, len(parts))
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
			in.Limit = aws.Int32(int32(limit + 1))
			out, err := c.db.Query(gctx, in)
			if err != nil {
				return fmt.Errorf("read the line of %s: %w", cfg.EventID, err)
			}
			var rows []lineRow
			if err := attributevalue.UnmarshalListOfMaps(out.Items, &rows); err != nil {
				return fmt.Errorf("read the line of %s: %w", cfg.EventID, err)
			}
			pages[i].More = out.LastEvaluatedKey != nil
			for _, r := range rows {
				pages[i].Places = append(pages[i].Places, admission.Place{Rank: r.GSI2SK, Request: admission.Request{
					Entry:   admission.Entry{RequestID: r.RequestID, UserID: r.UserID, RequestedAt: int64(r.RequestedAt), QueuedAt: int64(r.QueuedAt)},
					Decided: r.Status.decided(), ResultCode: string(r.ResultCode)}})
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return pages, nil
}
