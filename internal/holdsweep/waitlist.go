package holdsweep

import (
	"context"
	"time"
)

// A walk of an event's requests reads pages of walkPage requests, and moves its
// starting point only past requests queued more than walkSettle ago: a request's put
// shows on the index a moment after it lands.
const (
	walkPage   = 500
	walkSettle = time.Minute
	// walkReads bounds the requests one walk reads past its starting point: with a
	// seat given back and no one waitlisted behind a backlog still QUEUED, a pass
	// reads this much and no more; the seat waits until the backlog's head settles.
	walkReads = 4 * walkPage
	// walkRestart is how long a walk's starting point is kept before a walk reads
	// the event from its first request again, so that a request that showed on the
	// index long after its queuedAt (a put delayed past walkSettle) is not passed
	// over for good.
	walkRestart = 5 * time.Minute
)

// serve hands the seats in the pool to the waitlist: a pre-queue's entries in their
// drawn order first, and once each of them is settled and the pre-queue announced,
// the sale's waitlisted requests in queue order.
func (s *sweep) serve(ctx context.Context) error {
	left, err := s.st.SeatsLeft(ctx)
	if err != nil {
		return err
	}
	if left > 0 && s.budget > 0 && s.p.Event.Prequeue {
		// A pre-queue's entries come first, in their drawn order; the sale's
		// clicks, waitlisted only once the pre-queue was served, after them.
		done, err := s.serveDrawn(ctx, &left)
		if err != nil || !done || !s.p.Event.Announced {
			s.report.Waiting = max(left, 0)
			return err
		}
	}
	if left > 0 && s.budget > 0 {
		err = s.walk(ctx, func(r *Request) (settled, stop bool, err error) {
			if r.State != Waitlisted {
				return false, false, nil
			}
			served, gone, err := s.st.Serve(ctx, *r)
			switch {
			case err != nil:
				return false, true, err
			case gone:
				left = 0
			case served:
				left--
				s.budget--
				s.report.Served++
			}
			return served, left <= 0 || s.budget <= 0, nil
		})
	}
	s.report.Waiting = max(left, 0)
	return err
}

// serveDrawn hands the seats in the pool to the pre-queue's waitlisted entries in
// their drawn order, from past the entries found settled for good, up to the first
// entry the pre-queue's serve has not decided yet, and reports whether every entry
// is settled (the sale's waitlist comes next). Each entry is read strongly
// consistent; the serve's condition (waitlisted) decides.
func (s *sweep) serveDrawn(ctx context.Context, left *int64) (bool, error) {
	return s.st.Drawn(ctx, func(order []string, settled *int) (bool, error) {
		moving := true
		for i := *settled; i < len(order); i++ {
			if *left <= 0 || s.budget <= 0 {
				return false, nil
			}
			r, err := s.st.Request(ctx, order[i])
			if err != nil {
				return false, err
			}
			if r.State == Waitlisted {
				served, gone, err := s.st.Serve(ctx, r)
				switch {
				case err != nil:
					return false, err
				case gone:
					*left = 0
					return false, nil
				case served:
					*left--
					s.budget--
					s.report.Served++
					r.State = Held
				}
			}
			if moving = moving && r.settled(); moving {
				*settled = i + 1
			}
			if r.State == Pending {
				return false, nil // undecided yet (the serve runs): no entry after it goes first
			}
		}
		return moving, nil
	})
}

// close ends the waitlist of an event that closed.
func (s *sweep) close(ctx context.Context) error {
	if s.budget <= 0 {
		return nil
	}
	return s.walk(ctx, func(r *Request) (settled, stop bool, err error) {
		if r.State != Waitlisted {
			return false, false, nil
		}
		closed, err := s.st.Close(ctx, *r)
		if err != nil {
			return false, true, err
		}
		if closed {
			s.budget--
			s.report.Closed++
		}
		return closed, s.budget <= 0, nil
	})
}

// start is where a client's walks of an event begin, and since when.
type start struct {
	after Place
	since time.Time
}

// walk hands the event's requests to visit in queue order, from after the last
// request that this client's walks found settled for good with every request before
// it (final or HELD: neither is waitlisted again; and queued over walkSettle before),
// until visit says stop or the requests end. visit reports whether the request it was
// handed is settled now (it served or closed it). Every index shard is read afresh
// from that point each time, so a pass reads the waitlist's head and what came after
// it, not the winners ahead of it, and a walk of a settled event reads nothing. A walk
// reads at most walkReads requests, and every walkRestart the walk begins again at the
// event's first request.
func (s *sweep) walk(ctx context.Context, visit func(*Request) (settled, stop bool, err error)) error {
	now := s.p.Clock()
	since := now
	var after *Place
	if v, known := s.p.Starts.Load(s.p.Event.ID); known && now.Sub(v.(start).since) < walkRestart {
		from := v.(start)
		since, after = from.since, &from.after
	}
	pages, err := s.st.Queue(after)
	if err != nil {
		return err
	}
	recent := now.Add(-walkSettle).UnixMilli()
	moving := true
	for read := 0; read < walkReads; {
		page, more, err := pages(ctx, walkPage)
		if err != nil {
			return err
		}
		read += len(page)
		for i := range page {
			r := &page[i]
			done, stop, err := visit(r)
			if moving = moving && (done || r.settled()) && r.QueuedAt < recent; moving {
				s.p.Starts.Store(s.p.Event.ID, start{after: Place{QueuedAt: r.QueuedAt, RequestID: r.ID}, since: since})
			}
			if err != nil || stop {
				return err
			}
		}
		if !more {
			return nil
		}
	}
	return nil
}
