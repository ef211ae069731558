package holdsweep

import (
	"cmp"
	"context"
)

// holdsPage is the most hold records one read of a shard asks for.
const holdsPage = 100

// expire ends the holds that ran out, shard by shard.
func (s *sweep) expire(ctx context.Context) error {
	by := s.p.Clock().UnixMilli()
	for shard := 0; shard < max(s.p.Event.Shards, 1) && s.budget > 0; shard++ {
		pages, err := s.st.DueHolds(shard, by)
		if err != nil {
			return err
		}
		for more := true; more && s.budget > 0; {
			var holds []Hold
			if holds, more, err = pages(ctx, min(s.budget, holdsPage)); err != nil {
				return err
			}
			var failed error
			for _, h := range holds {
				if s.budget <= 0 {
					break
				}
				// One hold that cannot be ended now does not hold up the others.
				failed = cmp.Or(failed, s.expireOne(ctx, h))
			}
			if failed != nil {
				return failed
			}
		}
	}
	return nil
}

// expireOne ends one hold that ran out, or clears a record that is no longer its
// request's hold: the request ended, or holds a hold of another expiry. A request not
// yet HELD (its claim is being bound) keeps the record for the next pass.
func (s *sweep) expireOne(ctx context.Context, h Hold) error {
	expired, cur, err := s.st.Expire(ctx, h)
	switch {
	case err != nil:
		return err
	case expired:
		s.budget--
		s.report.Expired++
		return nil
	case cur.State != Final && !(cur.State == Held && cur.HoldExpiresAt != h.ExpiresAt):
		return nil // being bound (or HELD on this hold, its clock ahead of ours): next pass
	}
	if err := s.st.Clear(ctx, h); err != nil {
		return err
	}
	s.budget--
	s.report.Cleared++
	return nil
}
