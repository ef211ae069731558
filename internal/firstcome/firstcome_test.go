package firstcome

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/asyncevent/asyncevent/internal/seatcache"
	"github.com/asyncevent/asyncevent/internal/seatclaim"
)

// delivery is a Delivery whose answers a case sets, recording the writes the step
// sends. The behaviour of the rows themselves is tested against DynamoDB Local in
// the root package; here, the step's decisions.
type delivery struct {
	n, home    int
	shardsErr  error
	cfgErr     error
	bindErr    error
	wave       bool
	other      int
	cfg        Config
	cached     bool
	shard      Shard
	claim      seatclaim.Outcome
	claimed    seatclaim.Claim
	binds      []Answer // one per Bind, in order
	named      bool
	rejectSold Answer
	waitlists  bool
	start      Started
	handleErr  error
	seat       Claimed
	seatErr    error
	rejected   Answer
	calls      []string
}

func (d *delivery) log(call string) { d.calls = append(d.calls, call) }

func (d *delivery) Shards(context.Context) (int, int, error) { return d.n, d.home, d.shardsErr }
func (d *delivery) Config(context.Context) (Config, error)   { return d.cfg, d.cfgErr }
func (d *delivery) ConfigCached() bool                       { return d.cached }
func (d *delivery) HoldFor(context.Context) (time.Duration, error) {
	return d.cfg.Hold, nil
}
func (d *delivery) WaveSeat() bool { return d.wave }
func (d *delivery) SawHolds()      {}
func (d *delivery) ReadShard(context.Context, int, int) (Shard, error) {
	d.log("read")
	return d.shard, nil
}
func (d *delivery) ClaimHome(context.Context, int, int) (seatclaim.Outcome, *seatclaim.Claim, error) {
	d.log("claim home")
	return d.claim, &d.claimed, nil
}
func (d *delivery) Bind(context.Context, int, int, time.Time, time.Duration) (Answer, error) {
	d.log("bind")
	if d.bindErr != nil {
		return Answer{}, d.bindErr
	}
	a := d.binds[0]
	d.binds = d.binds[1:]
	return a, nil
}
func (d *delivery) PutRequest(context.Context) (bool, error) {
	d.log("put")
	return d.named, nil
}
func (d *delivery) ShardEmpty(_ context.Context, shard, _ int, how seatclaim.Record) {
	d.log([...]string{seatclaim.IfUnlisted: "empty if unlisted", seatclaim.IfNew: "empty if new", seatclaim.Always: "empty",
		seatclaim.IfUnlistedNow: "empty if unlisted, now"}[how])
}
func (d *delivery) HealEmpty(context.Context)                     {}
func (d *delivery) Waitlists(context.Context, time.Duration) bool { return d.waitlists }
func (d *delivery) RejectSoldOut(context.Context, bool) (Answer, error) {
	d.log("reject sold out")
	return d.rejectSold, nil
}
func (d *delivery) OtherShard(int, int) int { return d.other }
func (d *delivery) Start(context.Context, int, int, bool, time.Duration) (Started, error) {
	d.log("start")
	return d.start, nil
}
func (d *delivery) NotStarted() Verdict              { return Verdict{Outcome: Made} }
func (d *delivery) KeepAlive(context.Context) func() { return func() {} }
func (d *delivery) Handle(context.Context) error     { d.log("handle"); return d.handleErr }
func (d *delivery) ClaimSeat(context.Context) (Claimed, error) {
	d.log("claim seat")
	return d.seat, d.seatErr
}
func (d *delivery) MarkRejected(context.Context, bool) (Answer, error) {
	d.log("mark rejected")
	return d.rejected, nil
}
func (d *delivery) Failed(_ context.Context, err error, leased bool) Verdict {
	d.log(map[bool]string{false: "failed", true: "failed under the lease"}[leased])
	return Verdict{Outcome: Made}
}
func (d *delivery) Mismatch(context.Context, int, int) Verdict {
	d.log("mismatch")
	return Verdict{Outcome: Made}
}
func (d *delivery) LostLease(context.Context) Verdict {
	d.log("lost lease")
	return Verdict{Outcome: Made}
}

func TestSettle(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	processing := Request{Status: "PROCESSING", Processing: true, LeaseExpiresAt: now.Add(3 * time.Second).UnixMilli()}
	succeeded := Request{Status: "SUCCEEDED", ResultCode: "SUCCESS", Decided: true, Ours: true}
	for _, tc := range []struct {
		name       string
		d          delivery
		handler    bool
		late       bool
		soldOut    bool // the worker knows every shard empty
		newToEvent bool
		want       Verdict
		calls      []string
		wantError  string // logged
	}{
		{name: "the home claim wins and binds",
			d:     delivery{n: 1, cfg: Config{Shards: 1, Hold: time.Minute}, cached: true, claim: seatclaim.Won, binds: []Answer{{Applied: true}}},
			want:  Verdict{Outcome: Won, Hold: time.Minute},
			calls: []string{"claim home", "bind"}},
		{name: "a bind that finds no request writes it from the message, then binds",
			d:     delivery{n: 1, cfg: Config{Shards: 1}, cached: true, claim: seatclaim.Won, binds: []Answer{{Missing: true}, {Applied: true}}, named: true},
			want:  Verdict{Outcome: Won},
			calls: []string{"claim home", "bind", "put", "bind"}},
		{name: "a seat for a request no lock names stays unused",
			d:         delivery{n: 1, cfg: Config{Shards: 1}, cached: true, claim: seatclaim.Held, binds: []Answer{{Missing: true}}},
			want:      Verdict{Outcome: NotFound},
			calls:     []string{"claim home", "bind", "put"},
			wantError: "lock does not name its request"},
		{name: "a live lease at home: come back after it",
			d:     delivery{n: 1, cfg: Config{Shards: 1}, cached: true, claim: seatclaim.Held, binds: []Answer{{Current: processing}}},
			want:  Verdict{Outcome: LeaseHeld, Delay: 4 * time.Second},
			calls: []string{"claim home", "bind"}},
		{name: "a request bound elsewhere is logged, its seat left where it is",
			d: delivery{n: 2, cfg: Config{Shards: 2}, cached: true, claim: seatclaim.Held,
				binds: []Answer{{Current: Request{Status: "SUCCEEDED", ResultCode: "SUCCESS", Decided: true, SeatShard: new(1)}}}},
			want:      Verdict{Outcome: Duplicate, Code: "SUCCESS"},
			calls:     []string{"claim home", "bind"},
			wantError: "does not account for"},
		{name: "the capacity shards of the message are not the event's",
			d:     delivery{n: 2, cfg: Config{Shards: 1}, cached: true},
			want:  Verdict{Outcome: Made},
			calls: []string{"mismatch"}},
		{name: "an empty home of a sold-out event rejects in one write",
			d:     delivery{n: 1, cfg: Config{Shards: 1}, cached: true, claim: seatclaim.Empty, claimed: seatclaim.Claim{SoldOut: true}, rejectSold: Answer{Applied: true}},
			want:  Verdict{Outcome: Refused},
			calls: []string{"claim home", "empty if new", "reject sold out"}},
		{name: "a worker that knows the sell-out looks at the home shard, then rejects, waitlisting with holds",
			d:       delivery{n: 1, cfg: Config{Shards: 1, Hold: time.Minute}, cached: true, shard: Shard{Hold: time.Minute}, waitlists: true, rejectSold: Answer{Applied: true}},
			soldOut: true,
			want:    Verdict{Outcome: Waitlisted},
			calls:   []string{"read", "reject sold out"}},
		{name: "a late arrival is refused, not waitlisted",
			d:       delivery{n: 1, cfg: Config{Shards: 1, Hold: time.Minute}, cached: true, shard: Shard{Hold: time.Minute}, waitlists: true, rejectSold: Answer{Applied: true}},
			soldOut: true, late: true,
			want:  Verdict{Outcome: Refused},
			calls: []string{"read", "reject sold out"}},
		{name: "with a Handler: start, handle, claim",
			d:       delivery{n: 1, cfg: Config{Shards: 1}, cached: true, start: Started{Applied: true}, seat: Claimed{Applied: true}},
			handler: true,
			want:    Verdict{Outcome: Won},
			calls:   []string{"start", "handle", "claim seat"}},
		{name: "a start that finds no request",
			d:       delivery{n: 1, cfg: Config{Shards: 1}, cached: true, start: Started{Missing: true}},
			handler: true,
			want:    Verdict{Outcome: NotFound},
			calls:   []string{"start"}},
		{name: "a start another delivery holds",
			d:       delivery{n: 1, cfg: Config{Shards: 1}, cached: true},
			handler: true,
			want:    Verdict{Outcome: Made},
			calls:   []string{"start"}},
		{name: "a handler's error fails under the lease, before any claim",
			d:       delivery{n: 1, cfg: Config{Shards: 1}, cached: true, start: Started{Applied: true}, handleErr: errors.New("refused")},
			handler: true,
			want:    Verdict{Outcome: Made},
			calls:   []string{"start", "handle", "failed under the lease"}},
		{name: "a leased claim that finds no seat ends the request under the lease",
			d:       delivery{n: 1, cfg: Config{Shards: 1}, cached: true, start: Started{Applied: true}, seat: Claimed{SoldOut: true}, rejected: Answer{Applied: true}},
			handler: true,
			want:    Verdict{Outcome: Refused},
			calls:   []string{"start", "handle", "claim seat", "mark rejected"}},
		{name: "our own end, its answer lost, is a duplicate",
			d:       delivery{n: 1, cfg: Config{Shards: 1}, cached: true, start: Started{Applied: true}, seat: Claimed{SoldOut: true}, rejected: Answer{Current: succeeded}},
			handler: true,
			want:    Verdict{Outcome: Duplicate, Code: "SUCCESS"},
			calls:   []string{"start", "handle", "claim seat", "mark rejected"}},
		{name: "an end another delivery's lease refused leaves the message to it",
			d:       delivery{n: 1, cfg: Config{Shards: 1}, cached: true, start: Started{Applied: true}, seat: Claimed{SoldOut: true}, rejected: Answer{Current: processing}},
			handler: true,
			want:    Verdict{Outcome: Left},
			calls:   []string{"start", "handle", "claim seat", "mark rejected"}},
		{name: "a claim whose lease was taken over",
			d:       delivery{n: 1, cfg: Config{Shards: 1}, cached: true, start: Started{Applied: true}},
			handler: true,
			want:    Verdict{Outcome: Made},
			calls:   []string{"start", "handle", "claim seat", "lost lease"}},
		{name: "a known sell-out is not claimed unless the request inherited a claim",
			d:       delivery{n: 1, cfg: Config{Shards: 1}, cached: true, shard: Shard{HoldsSeat: false, Remaining: 0}, start: Started{Applied: true, Inherited: true}, seat: Claimed{Applied: true}, rejectSold: Answer{Current: processing}},
			soldOut: true, handler: true,
			want:  Verdict{Outcome: Won},
			calls: []string{"read", "reject sold out", "start", "handle", "claim seat"}},
		{name: "a failed read of the event's shards fails without the lease",
			d:     delivery{shardsErr: errors.New("throttled")},
			want:  Verdict{Outcome: Made},
			calls: []string{"failed"}},
		{name: "a failed read of the config fails without the lease",
			d:     delivery{n: 1, cached: true, cfgErr: errors.New("throttled")},
			want:  Verdict{Outcome: Made},
			calls: []string{"failed"}},
		{name: "a bind's error fails without the lease",
			d:     delivery{n: 1, cfg: Config{Shards: 1}, cached: true, claim: seatclaim.Won, bindErr: errors.New("unanswered")},
			want:  Verdict{Outcome: Made},
			calls: []string{"claim home", "bind", "failed"}},
		{name: "a wave's write took the home seat: bind it",
			d:     delivery{n: 1, cfg: Config{Shards: 1, Hold: time.Minute}, cached: true, wave: true, binds: []Answer{{Applied: true}}},
			want:  Verdict{Outcome: Won, Hold: time.Minute},
			calls: []string{"bind"}},
		{name: "a claim that takes a shard's last seat records it empty at once",
			d:     delivery{n: 2, cfg: Config{Shards: 2}, cached: true, claim: seatclaim.Won, claimed: seatclaim.Claim{Emptied: true}, binds: []Answer{{Applied: true}}},
			want:  Verdict{Outcome: Won},
			calls: []string{"claim home", "bind", "empty"}},
		{name: "an empty home of several shards is recorded if unlisted; the leased way goes on",
			d:     delivery{n: 2, cfg: Config{Shards: 2}, cached: true, claim: seatclaim.Empty, start: Started{Applied: true}, seat: Claimed{Applied: true}},
			want:  Verdict{Outcome: Won},
			calls: []string{"claim home", "empty if unlisted", "start", "handle", "claim seat"}},
		{name: "a worker new to the event looks at the home shard first, which holds the seat",
			d:          delivery{n: 1, cfg: Config{Shards: 1}, shard: Shard{HoldsSeat: true}, binds: []Answer{{Applied: true}}},
			newToEvent: true,
			want:       Verdict{Outcome: Won},
			calls:      []string{"read", "bind"}},
		{name: "a look that finds the seat of a request under a live lease comes back after it",
			d:          delivery{n: 1, cfg: Config{Shards: 1}, shard: Shard{HoldsSeat: true}, binds: []Answer{{Current: processing}}},
			newToEvent: true,
			want:       Verdict{Outcome: LeaseHeld, Delay: 4 * time.Second},
			calls:      []string{"read", "bind"}},
		{name: "a home shard closed to the request: the leased way",
			d:          delivery{n: 1, cfg: Config{Shards: 1}, shard: Shard{Closed: true, Remaining: 3}, start: Started{Applied: true}, seat: Claimed{Applied: true}},
			newToEvent: true,
			want:       Verdict{Outcome: Won},
			calls:      []string{"read", "start", "handle", "claim seat"}},
		{name: "an empty home shard of several, news to the worker, is checked against the event's list at once",
			d:          delivery{n: 2, cfg: Config{Shards: 2}, start: Started{Applied: true}, seat: Claimed{Applied: true}},
			newToEvent: true,
			want:       Verdict{Outcome: Won},
			calls:      []string{"read", "empty if unlisted, now", "start", "handle", "claim seat"}},
		{name: "a sold-out event's rejection that finds no request",
			d:       delivery{n: 1, cfg: Config{Shards: 1}, cached: true, rejectSold: Answer{Missing: true}},
			soldOut: true,
			want:    Verdict{Outcome: NotFound},
			calls:   []string{"read", "reject sold out"}},
		{name: "a sold-out event's rejection that finds the request decided",
			d:       delivery{n: 1, cfg: Config{Shards: 1}, cached: true, rejectSold: Answer{Current: succeeded}},
			soldOut: true,
			want:    Verdict{Outcome: Duplicate, Code: "SUCCESS"},
			calls:   []string{"read", "reject sold out"}},
		{name: "a sold-out event whose pool may hold seats: the leased way claims there",
			d:       delivery{n: 1, cfg: Config{Shards: 1}, cached: true, shard: Shard{PoolVersion: 1}, start: Started{Applied: true}, seat: Claimed{Applied: true}},
			soldOut: true,
			want:    Verdict{Outcome: Won},
			calls:   []string{"read", "start", "handle", "claim seat"}},
		{name: "a leased claim that finds no seat waitlists with holds",
			d:       delivery{n: 1, cfg: Config{Shards: 1, Hold: time.Minute}, cached: true, waitlists: true, start: Started{Applied: true}, seat: Claimed{SoldOut: true}, rejected: Answer{Applied: true}},
			handler: true,
			want:    Verdict{Outcome: Waitlisted},
			calls:   []string{"start", "handle", "claim seat", "mark rejected"}},
		{name: "an end refused by a request another lease decided leaves the message to it",
			d:       delivery{n: 1, cfg: Config{Shards: 1}, cached: true, start: Started{Applied: true}, seat: Claimed{SoldOut: true}, rejected: Answer{Current: Request{Status: "SUCCEEDED", Decided: true}}},
			handler: true,
			want:    Verdict{Outcome: Left},
			calls:   []string{"start", "handle", "claim seat", "mark rejected"}},
		{name: "a claim's error fails under the lease",
			d:       delivery{n: 1, cfg: Config{Shards: 1}, cached: true, start: Started{Applied: true}, seatErr: errors.New("unanswered")},
			handler: true,
			want:    Verdict{Outcome: Made},
			calls:   []string{"start", "handle", "claim seat", "failed under the lease"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logged bytes.Buffer
			seats := seatcache.New()
			if !tc.newToEvent {
				seats.FirstLook("e")
			}
			if tc.soldOut {
				seats.AllEmpty("e", tc.d.n)
			}
			d := tc.d
			s := Step{D: &d, Seats: seats, EventID: "e", RequestID: "r", Handler: tc.handler, Late: tc.late,
				Clock: func() time.Time { return now }, Logger: slog.New(slog.NewTextHandler(&logged, nil))}
			assert.Equal(t, tc.want, s.Settle(context.Background()))
			assert.Equal(t, tc.calls, d.calls)
			if tc.wantError != "" {
				assert.Contains(t, logged.String(), tc.wantError)
			} else {
				assert.Empty(t, logged.String())
			}
		})
	}
}
