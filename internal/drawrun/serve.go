package drawrun

import (
	"context"
)

// refuseConcurrency is how many times Concurrency entries the serve refuses at once,
// once no seat is left: a refusal is a look at the entry's home shard and one write of
// the request, spread over the event's index shards, and the order no longer matters.
const refuseConcurrency = 4

// Serve serves a pre-queue's requests in order (its entries in their drawn order,
// then its late arrivals), skipping those final already, and returns how many it
// served. Order rests on one rule: a wave is never larger than the seats left, read
// strongly consistent before the wave, and every entry of a wave is decided before
// the next begins; so an entry wins only if every entry before it has won or ended
// without a seat for another reason, never because a later one took its seat.
func Serve(ctx context.Context, st Seats, cfg Config, o *Opened, order []string) (int, error) {
	byID, err := servedEntries(ctx, st, cfg, o)
	if err != nil {
		return 0, err
	}
	var waiting []Entry
	for _, id := range order {
		if e := byID[id]; !e.State.IsFinal() {
			waiting = append(waiting, e)
		}
	}
	return serveWaves(ctx, st, cfg, waiting)
}

// servedEntries returns the requests a serve decides by ID: those GSI2 showed, and
// each recorded entry it did not show read with a strongly consistent read.
func servedEntries(ctx context.Context, st Requests, cfg Config, o *Opened) (map[string]Entry, error) {
	byID := make(map[string]Entry, len(o.OnTable))
	for _, e := range o.OnTable {
		byID[e.RequestID] = e
	}
	for _, id := range o.IDs {
		if _, ok := byID[id]; ok {
			continue
		}
		e, err := recordedEntry(ctx, st, cfg, o.Before, id)
		if err != nil {
			return nil, err
		}
		byID[id] = e
	}
	return byID, nil
}

// serveWaves serves the waiting requests in their order, a wave at a time, and
// returns how many it served.
func serveWaves(ctx context.Context, st Seats, cfg Config, waiting []Entry) (int, error) {
	served := 0
	for len(waiting) > 0 {
		// The seats left, read strongly consistent before each wave: every claim of
		// an entry decided so far has landed or never will (a token or a fence stops
		// it), so a wave no larger never takes a seat an entry before it needs.
		left, err := st.SeatsLeft(ctx)
		if err != nil {
			return served, err
		}
		// No seat left: the next entries are refused, many at once (a seat that
		// reaches the pool meanwhile, added or given back, goes to whichever asks
		// first, as it would to any request after a refusal); the seats are read
		// again before each such wave.
		n, at := min(len(waiting), refuseConcurrency*cfg.Concurrency), refuseConcurrency*cfg.Concurrency
		if left > 0 {
			n, at = int(min(int64(cfg.Concurrency), left, int64(len(waiting)))), cfg.Concurrency
		}
		if err := st.ServeWave(ctx, waiting[:n], at); err != nil {
			return served, err
		}
		served += n
		waiting = waiting[n:]
	}
	return served, nil
}

// Winners returns the requests of order that won a seat, in order: each as a fresh
// read of GSI2 before the bound shows it, and read again strongly consistent only
// where the index still shows it undecided (it lags the serve's last writes by a
// moment), not a read per entry.
func Winners(ctx context.Context, st Reader, before int64, order []string) ([]string, error) {
	entries, err := st.QueuedBefore(ctx, before)
	if err != nil {
		return nil, err
	}
	onIndex := make(map[string]Entry, len(entries))
	for _, e := range entries {
		onIndex[e.RequestID] = e
	}
	var winners []string
	for _, id := range order {
		e := onIndex[id]
		if !e.State.decided() {
			if e, err = st.Request(ctx, id); err != nil {
				return nil, err
			}
		}
		if e.Seated {
			winners = append(winners, id)
		}
	}
	return winners, nil
}
