package seatclaim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent/internal/seatcache"
)

// place is a seat place in memory, as the conditional writes see it.
type place struct {
	left        int64
	holder      bool         // it records the request's seat
	void        map[int]bool // the epochs it is closed to the request at
	missing     bool         // no item: a pool no seat was ever added to
	pool        bool
	poolVersion int64
	soldOut     bool
	replies     []Reply // refusals for the next sends, one each, before the write applies
}

// store is a Store in memory for one request of an event: its places, where its claim
// stands (seatShard, seatEpoch) under its lease, and the calls made.
type store struct {
	places    map[int]*place
	shard     int
	epoch     int
	leaseLost bool
	calls     []string
}

func (s *store) call(format string, a ...any) { s.calls = append(s.calls, fmt.Sprintf(format, a...)) }

// refusal consumes the next scripted refusal of p, if any.
func refusal(p *place) (Answer, bool) {
	if len(p.replies) == 0 {
		return Answer{}, false
	}
	r := p.replies[0]
	p.replies = p.replies[1:]
	return Answer{Reply: r, Err: fmt.Errorf("refused: %d", r)}, true
}

func (s *store) Claim(at, epoch int) (Send, error) {
	p, ok := s.places[at]
	if !ok {
		return nil, fmt.Errorf("no place %d", at)
	}
	return func(context.Context) (Answer, error) {
		s.call("claim %d@%d", at, epoch)
		if a, ok := refusal(p); ok {
			return a, nil
		}
		switch {
		case p.missing:
			return Answer{Reply: Lost, Met: Met{Missing: true}}, nil
		case p.holder:
			return Answer{Reply: Lost, LastSeat: !p.pool && p.left == 0, Met: Met{Holder: true}}, nil
		case p.left == 0 || p.void[epoch]:
			return Answer{Reply: Lost, Met: Met{Closed: p.void[epoch], Left: p.left, PoolVersion: p.poolVersion, SoldOut: p.soldOut}}, nil
		}
		p.left--
		p.holder = true
		return Answer{Reply: Applied, LastSeat: !p.pool && p.left == 0}, nil
	}, nil
}

func (s *store) Name(at int) (item, request string) { return fmt.Sprintf("item %d", at), "r" }

func (s *store) Close(at, epoch int) (Send, error) {
	p, ok := s.places[at]
	if !ok {
		return nil, fmt.Errorf("no place %d", at)
	}
	return func(context.Context) (Answer, error) {
		s.call("close %d@%d", at, epoch)
		if a, ok := refusal(p); ok {
			return a, nil
		}
		switch {
		case p.missing:
			return Answer{Reply: Lost, Met: Met{Missing: true}}, nil
		case p.holder:
			return Answer{Reply: Lost, Met: Met{Holder: true}}, nil
		}
		if p.void == nil {
			p.void = map[int]bool{}
		}
		p.void[epoch] = true
		return Answer{Reply: Applied}, nil
	}, nil
}

func (s *store) Move(_ context.Context, at, from, to int) (bool, error) {
	s.call("move %d@%d", at, to)
	if s.leaseLost || s.epoch != from {
		return false, nil
	}
	s.shard, s.epoch = at, to
	return true, nil
}

func (s *store) Take(context.Context) error {
	s.call("take")
	return nil
}

func (s *store) ShardEmpty(_ context.Context, shard int, how Record) {
	s.call("empty %d %s", shard, []string{"if unlisted", "if new", "always"}[how])
}

// bundle is one walk's set-up: an event of n shards (place n its pool), a request
// whose home is shard 0 and whose order is 0 … n−1, and what the worker knows.
type bundle struct {
	st    *store
	seats *seatcache.Shards
	walk  *Walk
	claim *Claim
}

// setup makes shards with the seats given (their count is the event's shards) and a
// pool of pool seats (-1: never added); the claim starts on shard 0 at epoch 0,
// inherited (claims without a lease may be there).
func setup(t *testing.T, shards []int64, pool int64) *bundle {
	t.Helper()
	n := len(shards)
	st := &store{places: map[int]*place{}}
	order := make([]int, n)
	for i, left := range shards {
		st.places[i] = &place{left: left}
		order[i] = i
	}
	st.places[n] = &place{left: max(pool, 0), missing: pool < 0, pool: true}
	seats := seatcache.New()
	return &bundle{
		st: st, seats: seats,
		walk:  &Walk{RequestID: "r1", EventID: "e1", Shards: n, Home: 0, Order: order, Seats: seats, Logger: slog.New(slog.DiscardHandler)},
		claim: &Claim{Place: 0, Epoch: EpochNone, Inherited: true},
	}
}

func (b *bundle) run(t *testing.T) (End, error) {
	t.Helper()
	return b.walk.Run(context.Background(), b.st, b.claim)
}

func TestWalk(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		shards  []int64
		pool    int64
		arrange func(b *bundle)
		end     End
		calls   []string
	}{
		{name: "a seat on its place is taken", shards: []int64{2, 2}, pool: -1,
			end: Seated, calls: []string{"claim 0@0", "take"}},
		{name: "its own seat found on its place is taken, no other claimed", shards: []int64{1, 2}, pool: -1,
			arrange: func(b *bundle) { b.st.places[0].holder = true },
			end:     Seated, calls: []string{"claim 0@0", "take"}},
		{name: "the last seat of a shard is recorded on the event after the take", shards: []int64{1, 2}, pool: -1,
			end: Seated, calls: []string{"claim 0@0", "take", "empty 0 always"}},
		{name: "one shard's last seat is not recorded", shards: []int64{1}, pool: -1,
			end: Seated, calls: []string{"claim 0@0", "take"}},
		{name: "an empty shard is left for the next, at the next epoch", shards: []int64{0, 2}, pool: -1,
			end: Seated, calls: []string{"claim 0@0", "empty 0 if unlisted", "move 1@1", "claim 1@1", "take"}},
		{name: "one empty shard of one is recorded if new, and the request sold out", shards: []int64{0}, pool: -1,
			end: SoldOut, calls: []string{"claim 0@0", "empty 0 if new"}},
		{name: "a shard known empty takes no claim unless one may be there", shards: []int64{5, 2}, pool: -1,
			arrange: func(b *bundle) { b.claim.Inherited = false; b.seats.Add("e1", 0, 2) },
			end:     Seated, calls: []string{"empty 0 if unlisted", "move 1@1", "claim 1@1", "take"}},
		{name: "a shard known empty is claimed on when a claim may be there", shards: []int64{5, 2}, pool: -1,
			arrange: func(b *bundle) { b.seats.Add("e1", 0, 2) },
			end:     Seated, calls: []string{"claim 0@0", "take"}},
		{name: "a refusing shard no claim of the request may be on is left without a close", shards: []int64{2, 2}, pool: -1,
			arrange: func(b *bundle) {
				b.claim.Inherited = false
				b.st.places[0].replies = []Reply{Throttled, Throttled, Throttled}
			},
			end: Seated, calls: []string{"claim 0@0", "claim 0@0", "claim 0@0", "move 1@1", "claim 1@1", "take"}},
		{name: "a refusing shard an earlier claim may be on is closed before it is left", shards: []int64{2, 2}, pool: -1,
			arrange: func(b *bundle) { b.st.places[0].replies = []Reply{Throttled, Throttled, Throttled} },
			end:     Seated, calls: []string{"claim 0@0", "claim 0@0", "claim 0@0", "close 0@0", "move 1@1", "claim 1@1", "take"}},
		{name: "the close of a refusing shard that finds the request's seat takes it", shards: []int64{2, 2}, pool: -1,
			arrange: func(b *bundle) {
				b.st.places[0].replies = []Reply{Throttled, Throttled, Throttled}
				b.st.places[0].holder = true
			},
			end: Seated, calls: []string{"claim 0@0", "claim 0@0", "claim 0@0", "close 0@0", "take"}},
		{name: "every shard with seats refusing ends the walk refused", shards: []int64{2, 2}, pool: 3,
			arrange: func(b *bundle) {
				b.claim.Inherited = false
				b.st.places[0].replies = []Reply{Throttled, Throttled, Throttled}
				b.st.places[1].replies = []Reply{Throttled, Throttled, Throttled}
			},
			end: ShardsRefused, calls: []string{"claim 0@0", "claim 0@0", "claim 0@0", "move 1@1", "claim 1@1", "claim 1@1", "claim 1@1"}},
		{name: "a shard closed to the request with seats left is claimed again at a later epoch", shards: []int64{2, 0}, pool: -1,
			arrange: func(b *bundle) { b.st.places[0].void = map[int]bool{0: true} },
			end:     Seated, calls: []string{"claim 0@0", "move 1@1", "claim 1@1", "empty 1 if unlisted", "move 0@2", "claim 0@2", "take"}},
		{name: "a shard closed with no seat left is not come back to", shards: []int64{0, 0}, pool: -1,
			arrange: func(b *bundle) { b.st.places[0].void = map[int]bool{0: true} },
			end:     SoldOut, calls: []string{"claim 0@0", "move 1@1", "claim 1@1", "empty 1 if unlisted"}},
		{name: "every shard empty, the claim moves to a pool that may hold seats", shards: []int64{0, 0}, pool: 1,
			arrange: func(b *bundle) { b.st.places[1].poolVersion = 1 },
			end:     Seated, calls: []string{"claim 0@0", "empty 0 if unlisted", "move 1@1", "claim 1@1", "empty 1 if unlisted", "move 2@2", "claim 2@2", "take"}},
		{name: "an event with holds never claims on its pool", shards: []int64{0}, pool: 1,
			arrange: func(b *bundle) { b.walk.Holds = true; b.st.places[0].poolVersion = 1 },
			end:     SoldOut, calls: []string{"claim 0@0", "empty 0 if new"}},
		{name: "a pool no version was met for is not tried", shards: []int64{0}, pool: 1,
			end: SoldOut, calls: []string{"claim 0@0", "empty 0 if new"}},
		{name: "the sold-out mark tells every shard empty", shards: []int64{0, 3, 3}, pool: -1,
			arrange: func(b *bundle) { b.st.places[0].soldOut = true },
			end:     SoldOut, calls: []string{"claim 0@0", "empty 0 if unlisted"}},
		{name: "a move not applied stops the walk", shards: []int64{0, 2}, pool: -1,
			arrange: func(b *bundle) { b.st.leaseLost = true },
			end:     Unmoved, calls: []string{"claim 0@0", "empty 0 if unlisted", "move 1@1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tt.shards, tt.pool)
			if tt.arrange != nil {
				tt.arrange(b)
			}
			end, err := b.run(t)
			require.NoError(t, err)
			assert.Equal(t, tt.end, end)
			assert.Equal(t, tt.calls, b.st.calls)
		})
	}
}

// The pool: a claim there is the last a request can get, and a pool found empty is
// closed to the request before it is refused.
func TestWalkOnThePool(t *testing.T) {
	t.Parallel()
	onPool := func(t *testing.T, pool int64) *bundle {
		b := setup(t, []int64{0, 0}, pool)
		b.claim.Place = 2
		b.claim.Inherited = false
		return b
	}
	t.Run("an empty pool is closed to the request before it is refused", func(t *testing.T) {
		t.Parallel()
		b := onPool(t, 0)
		b.st.places[2].poolVersion = 3
		b.seats.LearnPool("e1", 3)
		end, err := b.run(t)
		require.NoError(t, err)
		assert.Equal(t, SoldOut, end)
		assert.Equal(t, []string{"claim 2@0", "close 2@0"}, b.st.calls)
		assert.True(t, b.st.places[2].void[0], "no claim of the request at epoch 0 takes a seat added later")
		assert.False(t, b.seats.PoolOpen("e1", 0), "the pool is dry at the version met")
	})
	t.Run("a pool never added to is refused after a close", func(t *testing.T) {
		t.Parallel()
		b := onPool(t, -1)
		end, err := b.run(t)
		require.NoError(t, err)
		assert.Equal(t, SoldOut, end)
		assert.Equal(t, []string{"claim 2@0", "close 2@0"}, b.st.calls)
	})
	t.Run("the close that finds the request's seat takes it", func(t *testing.T) {
		t.Parallel()
		b := onPool(t, 0)
		st := &landsOnClose{store: b.st}
		end, err := b.walk.Run(context.Background(), st, b.claim)
		require.NoError(t, err)
		assert.Equal(t, Seated, end)
		assert.Equal(t, []string{"claim 2@0", "close 2@0", "take"}, b.st.calls)
	})
	t.Run("a pool closed to the request is claimed again at the next epoch", func(t *testing.T) {
		t.Parallel()
		b := onPool(t, 1)
		b.st.places[2].void = map[int]bool{0: true}
		end, err := b.run(t)
		require.NoError(t, err)
		assert.Equal(t, Seated, end)
		assert.Equal(t, []string{"claim 2@0", "move 2@1", "claim 2@1", "take"}, b.st.calls)
	})
	t.Run("a pool refusing every send ends the walk refused", func(t *testing.T) {
		t.Parallel()
		b := onPool(t, 1)
		b.st.places[2].replies = []Reply{Throttled, Busy, Throttled}
		end, err := b.run(t)
		require.NoError(t, err)
		assert.Equal(t, PoolRefused, end)
		assert.Len(t, b.st.calls, 3)
	})
}

// landsOnClose is a store on which the request's claim lands on the pool just before
// the close: the close finds its seat.
type landsOnClose struct{ *store }

func (s *landsOnClose) Close(at, epoch int) (Send, error) {
	s.places[at].holder = true
	return s.store.Close(at, epoch)
}

// A request taken over off its home shard at epoch 0 (a worker of a version before
// epochs moved it without closing its home): the home is closed first, and a seat
// found there is taken after the claim's place is closed and the claim moved back.
func TestWalkOfARequestAnOlderVersionMoved(t *testing.T) {
	t.Parallel()
	offHome := func(t *testing.T) *bundle {
		b := setup(t, []int64{2, 2}, -1)
		b.claim.Place = 1
		return b
	}
	t.Run("home clear", func(t *testing.T) {
		t.Parallel()
		b := offHome(t)
		end, err := b.run(t)
		require.NoError(t, err)
		assert.Equal(t, Seated, end)
		assert.Equal(t, []string{"close 0@0", "claim 1@0", "take"}, b.st.calls)
	})
	t.Run("its seat on the home shard", func(t *testing.T) {
		t.Parallel()
		b := offHome(t)
		b.st.places[0].holder = true
		end, err := b.run(t)
		require.NoError(t, err)
		assert.Equal(t, Seated, end)
		assert.Equal(t, []string{"close 0@0", "close 1@0", "move 0@1", "claim 0@1", "take"}, b.st.calls)
	})
	t.Run("a seat on both: the place's is taken", func(t *testing.T) {
		t.Parallel()
		b := offHome(t)
		b.st.places[0].holder = true
		b.st.places[1].holder = true
		end, err := b.run(t)
		require.NoError(t, err)
		assert.Equal(t, Seated, end)
		assert.Equal(t, []string{"close 0@0", "close 1@0", "claim 1@0", "take"}, b.st.calls)
	})
	t.Run("the lease lost on the move back", func(t *testing.T) {
		t.Parallel()
		b := offHome(t)
		b.st.places[0].holder = true
		b.st.leaseLost = true
		end, err := b.run(t)
		assert.Equal(t, Failed, end)
		assert.ErrorContains(t, err, "taken over")
	})
}

func TestClaimOn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("refused for throughput three times", func(t *testing.T) {
		t.Parallel()
		b := setup(t, []int64{1}, -1)
		b.st.places[0].replies = []Reply{Throttled, Throttled, Throttled, Throttled}
		res, err := ClaimOn(ctx, b.st, b.claim)
		require.NoError(t, err)
		assert.Equal(t, Refused, res)
		assert.Len(t, b.st.calls, claimAttempts)
	})
	t.Run("held up by transactions, then a seat", func(t *testing.T) {
		t.Parallel()
		b := setup(t, []int64{1}, -1)
		b.st.places[0].replies = []Reply{Busy, Busy}
		res, err := ClaimOn(ctx, b.st, b.claim)
		require.NoError(t, err)
		assert.Equal(t, Won, res)
		assert.True(t, b.claim.Emptied, "its last seat")
	})
	t.Run("held up by transactions on every send", func(t *testing.T) {
		t.Parallel()
		b := setup(t, []int64{1}, -1)
		b.st.places[0].replies = []Reply{Busy, Busy, Busy}
		_, err := ClaimOn(ctx, b.st, b.claim)
		assert.ErrorContains(t, err, "other transactions")
	})
	t.Run("unanswered: an error, the claim sent", func(t *testing.T) {
		t.Parallel()
		b := setup(t, []int64{1}, -1)
		b.claim.Inherited = false
		b.st.places[0].replies = []Reply{Unanswered}
		_, err := ClaimOn(ctx, b.st, b.claim)
		require.Error(t, err)
		assert.True(t, b.claim.Sent)
		assert.True(t, b.claim.MayLand(), "the request ends only once the place is closed to it")
	})
	t.Run("an empty shard tells what it carries", func(t *testing.T) {
		t.Parallel()
		b := setup(t, []int64{0}, -1)
		*b.st.places[0] = place{poolVersion: 4, soldOut: true}
		res, err := ClaimOn(ctx, b.st, b.claim)
		require.NoError(t, err)
		assert.Equal(t, Empty, res)
		assert.Equal(t, Claim{Place: 0, Inherited: true, Sent: true, PoolVersion: 4, SoldOut: true}, *b.claim)
	})
	t.Run("closed with seats left", func(t *testing.T) {
		t.Parallel()
		b := setup(t, []int64{3}, -1)
		b.st.places[0].void = map[int]bool{0: true}
		res, err := ClaimOn(ctx, b.st, b.claim)
		require.NoError(t, err)
		assert.Equal(t, Closed, res)
		assert.Equal(t, int64(3), b.claim.SeatsMet)
	})
	t.Run("a place that does not prepare is not sent", func(t *testing.T) {
		t.Parallel()
		b := setup(t, []int64{3}, -1)
		b.claim.Place = 7
		_, err := ClaimOn(ctx, b.st, b.claim)
		require.Error(t, err)
		assert.False(t, b.claim.Sent)
		assert.Empty(t, b.st.calls)
	})
}

func TestClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tt := range []struct {
		name    string
		replies []Reply
		holder  bool
		tries   int
		held    bool
		sends   int
		err     string
	}{
		{name: "closed", sends: 1},
		{name: "the request's seat found", holder: true, held: true, sends: 1},
		{name: "unanswered, sent again", replies: []Reply{Unanswered, Unanswered}, sends: 3},
		{name: "refused for throughput, sent again", replies: []Reply{Throttled, Throttled}, tries: 3, sends: 3},
		{name: "refused tries times: open", replies: []Reply{Throttled, Throttled, Throttled}, tries: 3, sends: 3, err: "refused 3 times"},
		{name: "without a bound, sent until it lands", replies: []Reply{Throttled, Throttled, Throttled, Throttled}, sends: 5},
		{name: "invalid: not sent again", replies: []Reply{Invalid}, sends: 1, err: "refused"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, []int64{1}, -1)
			b.st.places[0].replies = tt.replies
			b.st.places[0].holder = tt.holder
			held, err := Close(ctx, b.st, 0, 2, tt.tries)
			if tt.err != "" {
				assert.ErrorContains(t, err, tt.err)
			} else {
				require.NoError(t, err)
				assert.Equal(t, !tt.held, b.st.places[0].void[2], "closed at the epoch, unless it holds the seat")
			}
			assert.Equal(t, tt.held, held)
			assert.Len(t, b.st.calls, tt.sends)
		})
	}
	t.Run("a context that ends stops the sends", func(t *testing.T) {
		t.Parallel()
		b := setup(t, []int64{1}, -1)
		b.st.places[0].replies = []Reply{Unanswered, Unanswered, Unanswered, Unanswered}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := Close(ctx, b.st, 0, 0, 0)
		assert.True(t, errors.Is(err, context.Canceled))
		assert.Len(t, b.st.calls, 1)
	})
}
