package admission

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/asyncevent/asyncevent/internal/ctxsleep"
)

// run reads the record every tick while deliveries wait and, holding the lease,
// decides the line.
func (a *Admission) run(ctx context.Context) {
	log := a.cfg.Logger.With(slog.String("eventId", a.cfg.EventID))
	since := time.Now()
	a.left = -1
	for !a.idle(&since) {
		full, err := a.step(ctx)
		if err != nil {
			log.WarnContext(ctx, "ranked admission", slog.Any("error", err))
		}
		if !full || err != nil {
			_ = ctxsleep.Sleep(ctx, Tick)
		}
	}
}

// step reads the record and, holding the lease, decides the next wave. It reports
// whether the line read was full (more to read at once).
func (a *Admission) step(ctx context.Context) (full bool, err error) {
	rec, err := a.store.Read(ctx)
	if err != nil {
		return false, err
	}
	a.publish(rec)
	if rec.Waves != a.leftAt {
		// A wave this loop did not count (another process's, or one before its
		// read): its claims are not in the count.
		a.left = -1
	}
	owner, now := a.cfg.Owner, a.cfg.Clock().UnixMilli()
	if rec.Refusing || rec.Owner != owner && rec.Owner != "" && rec.LeaseExpiresAt > now {
		a.left = -1
		return false, nil
	}
	if rec.Owner != owner || rec.LeaseExpiresAt-now < leaseFor.Milliseconds()/2 {
		if rec.Owner != owner {
			a.left = -1 // another process may have decided waves since
		}
		// Taken: read the record as written.
		return a.store.TakeLease(ctx, owner, now, now+leaseFor.Milliseconds())
	}
	decidedHere := rec.Waves == a.decided && rec.Owner == owner
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
		if a.left, err = a.store.SeatsLeft(ctx); err != nil {
			a.left = -1
			return false, err
		}
		a.leftAt = rec.Waves
	}
	if a.left <= 0 {
		_, err := a.store.SetRefusing(ctx, owner, rec.Waves)
		return false, err
	}
	return a.nextWave(ctx, rec, now, decidedHere)
}

// nextWave reads the late arrivals and the line after the record's watermark, writes
// the next wave of at most the seats left on the record (its compare-and-set), and
// decides it; in a lull it says the last wave this loop decided is decided. It
// reports whether the line read was full.
func (a *Admission) nextWave(ctx context.Context, rec *Record, now int64, decidedHere bool) (full bool, err error) {
	size := int(min(a.left, int64(a.cfg.WaveSize)))
	// The late arrivals first: they are ranked before everything the line holds.
	wave, taken, err := a.lateArrivals(ctx, rec.Late, size)
	if err != nil {
		return false, err
	}
	pages, err := a.store.Line(ctx, rec.Through, now-a.cfg.Settle.Milliseconds(), size-len(wave))
	if err != nil {
		return false, err
	}
	line, full := merge(pages, rec.Through)
	if len(line) == 0 && len(taken) == 0 {
		if len(rec.Wave) > 0 && !rec.WaveDone && decidedHere {
			// A lull: the wave this loop decided is recorded decided, so that the
			// deliveries of other processes waiting on it end without a read (a
			// next wave says as much, which a busy line writes instead).
			_, err := a.store.MarkWaveDone(ctx, a.cfg.Owner, rec.Waves)
			return false, err
		}
		return false, nil
	}
	wave, through, cut := fill(wave, line, rec.Through, size)
	full = full || cut
	ids := make([]string, len(wave))
	for i, e := range wave {
		ids[i] = e.RequestID
	}
	applied, err := a.store.WriteWave(ctx, WaveWrite{Owner: a.cfg.Owner, WavesAsRead: rec.Waves, LateAsRead: rec.LateAdds,
		Through: through, Wave: ids, Late: taken, LeaseExpiresAt: now + leaseFor.Milliseconds()})
	if err != nil || !applied {
		a.left = -1
		return false, err
	}
	rec = &Record{Through: through, Wave: ids, Waves: rec.Waves + 1, LateAdds: rec.LateAdds, Owner: a.cfg.Owner, LeaseExpiresAt: rec.LeaseExpiresAt}
	a.publish(rec)
	return full, a.finish(ctx, rec, wave)
}

// finish decides the undecided requests of rec's wave. The deliveries of this
// process waiting on them end at once; those of others when the record moves on: the
// next wave (written only once this one is decided), or, in a lull, "admission: wave
// decided" (step).
func (a *Admission) finish(ctx context.Context, rec *Record, wave []Entry) error {
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

// lateArrivals returns the first at most size late arrivals of the record's late
// set not decided yet, and every ID of the set it took (decided ones too), which the
// wave takes out of the set.
func (a *Admission) lateArrivals(ctx context.Context, late []string, size int) (wave []Entry, taken []string, err error) {
	late = slices.Clone(late)
	slices.Sort(late)
	return a.undecided(ctx, late, size)
}

// undecided returns the requests of ids not decided yet, each read strongly
// consistent, at most size of them, and the IDs it looked at.
func (a *Admission) undecided(ctx context.Context, ids []string, size int) (wave []Entry, looked []string, err error) {
	for _, id := range ids {
		if len(wave) == size {
			break
		}
		looked = append(looked, id)
		r, err := a.store.Request(ctx, id)
		var missing *NotFoundError
		switch {
		case errors.As(err, &missing):
			continue // the record names requests that were on the table: none is ever deleted
		case err != nil:
			return nil, nil, err
		case r.Decided:
			continue
		}
		wave = append(wave, r.Entry)
	}
	return wave, looked, nil
}

// decide decides every request of a wave at once, each as a worker without a Handler
// would (its seat claim), until each is decided or waveTimeout passes.
func (a *Admission) decide(ctx context.Context, wave []Entry) error {
	if len(wave) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, waveTimeout)
	defer cancel()
	a.claimWave(ctx, wave)
	return a.store.Decide(ctx, wave)
}

// claimWave takes the home seats of a wave's requests before they are decided: one
// write of each home shard for up to MaxWaveClaim of its requests at once (the
// "first-come wave seats" row), where each would otherwise send its own home claim.
// A request whose seat a write took is then only bound. What a write does not take
// (a shard with fewer seats than requests, a request its token or a fence already
// names there, a write refused or unanswered) the requests' own claims sort out, one
// at a time, as a worker's would. Without a Handler only: a Handler runs before a
// request's claim.
func (a *Admission) claimWave(ctx context.Context, wave []Entry) {
	if !a.store.ClaimsWaves() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, waveClaimTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, w := range a.waveClaims(wave) {
		wg.Go(func() {
			if err := a.store.ClaimWaveSeats(ctx, w.shard, w.ids); err != nil {
				a.cfg.Logger.WarnContext(ctx, "a wave's seat write failed: its requests claim one by one",
					slog.String("eventId", a.cfg.EventID), slog.Int("shard", w.shard), slog.Int("requests", len(w.ids)), slog.Any("error", err))
			}
		})
	}
	wg.Wait()
}

// waveClaim is one write of a wave's home seats: requests of one home shard.
type waveClaim struct {
	shard int
	ids   []string
}

// waveClaims groups a wave's requests whose home shard may hold a seat by that shard,
// in writes of at most MaxWaveClaim requests. A write of one is left out: the
// request's own home claim is the same one write.
func (a *Admission) waveClaims(wave []Entry) []waveClaim {
	byShard := map[int][]string{}
	for _, e := range wave {
		if shard, open := a.store.HomeShard(e.RequestID); open {
			byShard[shard] = append(byShard[shard], e.RequestID)
		}
	}
	var claims []waveClaim
	for shard, ids := range byShard {
		for chunk := range slices.Chunk(ids, max(a.cfg.MaxWaveClaim, 1)) {
			if len(chunk) >= 2 {
				claims = append(claims, waveClaim{shard: shard, ids: chunk})
			}
		}
	}
	return claims
}
