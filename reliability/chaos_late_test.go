package reliability

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/entity"
)

// The clicks that reach the table late, and the drawing process that dies: the
// chaos suite's parts for a draw (or a pre-queue's serve) whose record is the truth.

// lateMoment is when a late click reaches the table, relative to the draw (or the
// pre-queue's serve).
type lateMoment int

const (
	beforeFreeze  lateMoment = iota // a held put lands before the draw begins: an entry like any other
	duringDraw                      // a skewed ingest clicks while the first process draws: an entry or not, as the race goes
	atRecord                        // a held put lands right after the record, before any entry is decided
	afterKill                       // between the process that died and the one that resumes
	afterAnnounce                   // once the draw is announced
)

func (m lateMoment) String() string {
	return [...]string{"before the freeze", "during the draw", "at the record", "after the kill", "after the announcement"}[m]
}

// lateIngest is the users whose click reaches the table late: their request's put
// held on the wire and landed at a moment (half of their ingests told at once that
// the connection was reset, the others kept waiting for the answer, as over a slow
// network, until it comes or their ingest's deadline passes; a user answered an
// error does not click again), or sent by an ingest whose clock is seconds behind,
// which takes the event for open past the last moment of its entries.
type lateIngest struct {
	w       *world
	eventID string
	last    asyncevent.EpochMillis // the last queuedAt of an entry: the cutoff, or the start less 1 ms
	hb      *asynceventtest.HoldBack
	ingest  *asyncevent.Client // through hb, on the world's clock
	held    map[lateMoment][]string
	skewed  map[lateMoment][]string
	behind  map[string]time.Duration // how far before last each skewed ingest's clock reads when it clicks
	rules   map[lateMoment][]*asynceventtest.Held
	submits sync.WaitGroup // the held clicks' Submit calls
	gaveUp  atomic.Int64   // those that answered an error
	landed  atomic.Bool    // the puts held for atRecord landed
}

// newLateIngest takes a few users per moment out of w.users (the rest click as
// usual) for the late clicks of eventID, whose entries are queued by last.
func (w *world) newLateIngest(eventID string, last asyncevent.EpochMillis, rng *rand.Rand) *lateIngest {
	l := &lateIngest{w: w, eventID: eventID, last: last, hb: asynceventtest.NewHoldBack(w.db),
		held: map[lateMoment][]string{}, skewed: map[lateMoment][]string{}, behind: map[string]time.Duration{},
		rules: map[lateMoment][]*asynceventtest.Held{}}
	pool := slices.Clone(w.users)
	rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	take := func(n int) []string {
		picked := pool[:n]
		pool = pool[n:]
		return picked
	}
	for _, m := range []lateMoment{beforeFreeze, atRecord, afterKill, afterAnnounce} {
		l.held[m] = take(max(2, len(w.users)/60))
	}
	for _, m := range []lateMoment{duringDraw, afterKill, afterAnnounce} {
		l.skewed[m] = take(max(2, len(w.users)/80))
		for _, u := range l.skewed[m] {
			l.behind[u] = 5*time.Second + time.Duration(rng.Int64N(int64(10*time.Second)))
		}
	}
	late := l.users()
	w.users = slices.DeleteFunc(slices.Clone(w.users), func(u string) bool { return slices.Contains(late, u) })
	opts := w.opts
	opts.TableName = w.table
	var err error
	l.ingest, err = asyncevent.New(l.hb, opts)
	require.NoError(w.t, err)
	return l
}

// users returns every late user.
func (l *lateIngest) users() []string {
	var all []string
	for _, m := range []lateMoment{beforeFreeze, duringDraw, atRecord, afterKill, afterAnnounce} {
		all = append(all, l.held[m]...)
		all = append(all, l.skewed[m]...)
	}
	return all
}

// hold clicks every user whose put is held for the moments, each in a Submit of
// its own, and waits until every put is on the wire. A Submit kept waiting answers
// when its put lands within its ingest's deadline (10 s), an error otherwise.
func (l *lateIngest) hold(moments ...lateMoment) {
	ctx := context.Background()
	for _, m := range moments {
		users := l.held[m]
		for i, caller := range []asynceventtest.HeldCaller{asynceventtest.CallerWaits, asynceventtest.CallerReset} {
			var group []string
			for j := i; j < len(users); j += 2 {
				group = append(group, users[j])
			}
			if len(group) == 0 {
				continue
			}
			l.rules[m] = append(l.rules[m], l.hb.Hold(requestPutOf(group), len(group), caller))
			for _, u := range group {
				l.submits.Go(func() {
					// An error is the user's answer (its ingest gave up on the put),
					// and the user leaves: a click again would heal the lock with a
					// put of its own.
					if _, err := l.ingest.Submit(ctx, l.w.queue, l.eventID, u); err != nil {
						l.gaveUp.Add(1)
					}
				})
			}
		}
	}
	require.Eventually(l.w.t, func() bool {
		for _, m := range moments {
			caught := 0
			for _, r := range l.rules[m] {
				caught += r.Count()
			}
			if caught < len(l.held[m]) {
				return false
			}
		}
		return true
	}, time.Minute, 10*time.Millisecond, "every late put is on the wire")
}

// requestPutOf matches the put of a request of users (a PutItem, or the
// TransactWriteItems that writes it with its status log).
func requestPutOf(users []string) asynceventtest.Match {
	ofUsers := func(item map[string]types.AttributeValue) bool {
		user, _ := item["userId"].(*types.AttributeValueMemberS)
		kind, _ := keyOf(item).Entity()
		return kind == entity.Request && user != nil && slices.Contains(users, user.Value)
	}
	return func(_ string, in any) bool {
		switch in := in.(type) {
		case *dynamodb.PutItemInput:
			return ofUsers(in.Item)
		case *dynamodb.TransactWriteItemsInput:
			return slices.ContainsFunc(in.TransactItems, func(it types.TransactWriteItem) bool { return it.Put != nil && ofUsers(it.Put.Item) })
		}
		return false
	}
}

// land lands the puts held for moment m; each applies, as nothing else writes
// those requests.
func (l *lateIngest) land(m lateMoment) {
	n := 0
	for _, r := range l.rules[m] {
		if !assert.NoError(l.w.t, r.Land(context.Background())) {
			continue
		}
		for _, o := range r.Outcomes() {
			assert.True(l.w.t, o.Applied, "a put held for %s landed: %s", m, o)
			n++
		}
	}
	if m == atRecord {
		l.landed.Store(true)
	}
	l.w.t.Logf("%d late puts landed %s", n, m)
}

// clickSkewed clicks the users of moment m, each through an ingest under faults
// whose clock reads, when it clicks, a few seconds before the last moment of the
// entries (tens of seconds behind the others by then).
func (l *lateIngest) clickSkewed(m lateMoment) {
	wire, _ := l.w.wire(l.w.cfg.seed + int64(m)*104729)
	db := asynceventtest.NewFaultyDynamoDB(wire, l.w.plan(l.w.cfg.seed+int64(m)*104729))
	for _, u := range l.skewed[m] {
		behind := l.w.clock.Now().Sub(l.last.Time()) + l.behind[u]
		opts := l.w.opts
		opts.TableName, opts.Clock = l.w.table, asynceventtest.SkewedClock(l.w.clock.Now, -behind)
		c, err := asyncevent.New(db, opts)
		if assert.NoError(l.w.t, err) {
			assert.NoError(l.w.t, l.w.clickOn(context.Background(), c, l.eventID, u), "%s: a click %s by an ingest %s behind", u, m, behind.Round(time.Millisecond))
		}
	}
	if len(l.skewed[m]) > 0 {
		l.w.t.Logf("%d skewed ingests clicked %s", len(l.skewed[m]), m)
	}
}

// wait waits for the held clicks' Submit calls, all of whose puts have landed.
func (l *lateIngest) wait() {
	done := make(chan struct{})
	go func() { l.submits.Wait(); close(done) }()
	select {
	case <-done:
		held := 0
		for _, users := range l.held {
			held += len(users)
		}
		l.w.t.Logf("%d of the %d clicks whose puts were held answered an error", l.gaveUp.Load(), held)
	case <-time.After(time.Minute):
		l.w.t.Fatal("the late clicks' Submit calls did not return within a minute of their puts' landing")
	}
}

// expected returns the users whose request must be absent from the record (it
// landed after the record by construction) and those whose request must be in it (it
// landed before the draw read its entries). recordedFirst reports whether the first
// process recorded the entries before it died.
func (l *lateIngest) expected(recordedFirst bool) (late, entries []string) {
	late = slices.Concat(l.held[atRecord], l.held[afterAnnounce], l.skewed[afterAnnounce])
	entries = slices.Clone(l.held[beforeFreeze])
	between := slices.Concat(l.held[afterKill], l.skewed[afterKill])
	if recordedFirst {
		late = append(late, between...)
	} else {
		entries = append(entries, between...)
	}
	return late, entries
}

// checkUsers holds each late user's request to where its moment puts it (expected),
// and returns the IDs of those that must be absent from the record.
func (l *lateIngest) checkUsers(s eventScan, recordedFirst bool) map[string]bool {
	lateUsers, entryUsers := l.expected(recordedFirst)
	absent := map[string]bool{}
	for _, u := range lateUsers {
		if r, ok := s.liveRequest(l.w.t, u); ok {
			assert.False(l.w.t, s.recorded[r.RequestID], "%s: request %s landed after the record and is in it", u, r.RequestID)
			absent[r.RequestID] = true
		}
	}
	for _, u := range entryUsers {
		if r, ok := s.liveRequest(l.w.t, u); ok && r.Status != asyncevent.StatusFailedFinal {
			assert.True(l.w.t, s.recorded[r.RequestID], "%s: request %s landed before the draw read its entries and is not in the record (%s %s)",
				u, r.RequestID, r.Status, r.ResultCode)
		}
	}
	return absent
}

// deathAt is where the first drawing (or serving) process dies: after the freeze,
// after the record, midway (once it has written requests `after` times since the
// record), or as it is about to announce.
type deathAt struct {
	stage string
	after int
}

func (d deathAt) String() string {
	if d.stage == "midway" {
		return fmt.Sprintf("midway, after %d writes of requests", d.after)
	}
	return "at the " + d.stage
}

// deathFor picks the stage from the seed and turn (consecutive seeds go through
// them all), and, midway, a number of request writes up to entries.
func (w *world) deathFor(turn int, entries int, rng *rand.Rand) deathAt {
	d := deathAt{stage: []string{"freeze", "record", "midway", "announce"}[(int(w.cfg.seed)+turn)%4]}
	if d.stage == "midway" {
		d.after = 1 + rng.IntN(max(entries, 1))
	}
	return d
}

var errKilled = errors.New("connection refused: the drawing process is dead (injected)")

// drawTap sits beneath a drawing process's faults, on the wire, where it sees what
// DynamoDB did with each call: once the Draw record names the entries it calls
// onRecorded, and it kills the process at its death (every later call fails, and the
// process's context ends, as a serve retries an entry until it does).
type drawTap struct {
	asyncevent.DynamoDB
	draw       asyncevent.Key
	record     func() asyncevent.DrawRecord // the Draw record, read strongly consistent
	onRecorded func()
	death      deathAt
	die        context.CancelFunc

	mu       sync.Mutex
	dead     bool
	recorded bool // this process saw the record
	written  int  // its writes of requests since
}

// drawingProcess returns a client of a process that draws (or serves) eventID under
// faults, above a drawTap, and the process's context.
func (w *world) drawingProcess(eventID string, n int, death deathAt, onRecorded func()) (*asyncevent.Client, *drawTap, context.Context) {
	ctx, cancel := context.WithCancel(context.Background())
	w.t.Cleanup(cancel)
	seed := w.cfg.seed + int64(n)*15485863
	wire, _ := w.wire(seed)
	key, err := asyncevent.NewEventKey(eventID, asyncevent.EventItemDraw)
	require.NoError(w.t, err)
	tap := &drawTap{DynamoDB: wire, draw: key.Key(), death: death, onRecorded: onRecorded, die: cancel,
		record: func() asyncevent.DrawRecord {
			r, err := w.clean.GetDraw(context.Background(), eventID)
			if !assert.NoError(w.t, err) {
				return asyncevent.DrawRecord{}
			}
			return *r
		}}
	// A quarter of the suite's faults above the SDK: a call of Draw or ServePrequeue
	// makes tens of reads even once it is done (a serve reads the seats before each
	// wave and GSI2 again for its winners), and any of them failing fails the call.
	plan := w.plan(seed)
	plan.FailRate, plan.LoseRate = plan.FailRate/4, plan.LoseRate/4
	opts := w.opts
	opts.TableName = w.table
	c, err := asyncevent.New(asynceventtest.NewFaultyDynamoDB(tap, plan), opts)
	require.NoError(w.t, err)
	return c, tap, ctx
}

func (t *drawTap) isDead() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dead
}

func (t *drawTap) kill() {
	t.mu.Lock()
	t.dead = true
	t.mu.Unlock()
	t.die()
}

// write sends one write of in and sees to the process's death and the record.
func (t *drawTap) write(in any, send func() error) error {
	if t.isDead() {
		return errKilled
	}
	ws := writtenBy(in)
	onDraw := func(name string) bool {
		return slices.ContainsFunc(ws, func(w written) bool { return w.key == t.draw && slices.Contains(w.names, name) })
	}
	if t.death.stage == "announce" && onDraw("announcedAt") {
		t.kill()
		return errKilled
	}
	err := send()
	switch {
	case onDraw("drawnAt"): // the freeze
		if t.death.stage == "freeze" && t.record().Phase != asyncevent.PhaseCollecting {
			t.kill()
		}
	case onDraw("entriesHash"): // the record: its answer may be lost, the record tells
		if t.record().EntriesHash != "" {
			t.mu.Lock()
			t.recorded = true
			t.mu.Unlock()
			t.onRecorded()
			if t.death.stage == "record" {
				t.kill()
			}
		}
	case err == nil && slices.ContainsFunc(ws, func(w written) bool { kind, _ := w.key.Entity(); return kind == entity.Request }):
		t.mu.Lock()
		if t.recorded {
			t.written++
		}
		dies := t.recorded && t.death.stage == "midway" && t.written >= t.death.after
		t.mu.Unlock()
		if dies {
			t.kill()
		}
	}
	return err
}

// PutItem implements asyncevent.DynamoDB.
func (t *drawTap) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.PutItemOutput, err error) {
	err = t.write(in, func() error { out, err = t.DynamoDB.PutItem(ctx, in, o...); return err })
	return out, err
}

// UpdateItem implements asyncevent.DynamoDB.
func (t *drawTap) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.UpdateItemOutput, err error) {
	err = t.write(in, func() error { out, err = t.DynamoDB.UpdateItem(ctx, in, o...); return err })
	return out, err
}

// DeleteItem implements asyncevent.DynamoDB.
func (t *drawTap) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.DeleteItemOutput, err error) {
	err = t.write(in, func() error { out, err = t.DynamoDB.DeleteItem(ctx, in, o...); return err })
	return out, err
}

// TransactWriteItems implements asyncevent.DynamoDB.
func (t *drawTap) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (out *dynamodb.TransactWriteItemsOutput, err error) {
	err = t.write(in, func() error { out, err = t.DynamoDB.TransactWriteItems(ctx, in, o...); return err })
	return out, err
}

// GetItem implements asyncevent.DynamoDB: a dead process reads nothing either.
func (t *drawTap) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if t.isDead() {
		return nil, errKilled
	}
	return t.DynamoDB.GetItem(ctx, in, o...)
}

// Query implements asyncevent.DynamoDB: a dead process reads nothing either.
func (t *drawTap) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if t.isDead() {
		return nil, errKilled
	}
	return t.DynamoDB.Query(ctx, in, o...)
}

// written is one item a write writes, and the attribute names its expressions use.
type written struct {
	key   asyncevent.Key
	names []string
}

// writtenBy returns the items a write input writes.
func writtenBy(in any) []written {
	one := func(item map[string]types.AttributeValue, names map[string]string) written {
		w := written{key: keyOf(item)}
		for _, n := range names {
			w.names = append(w.names, n)
		}
		return w
	}
	switch in := in.(type) {
	case *dynamodb.PutItemInput:
		return []written{one(in.Item, in.ExpressionAttributeNames)}
	case *dynamodb.UpdateItemInput:
		return []written{one(in.Key, in.ExpressionAttributeNames)}
	case *dynamodb.DeleteItemInput:
		return []written{one(in.Key, in.ExpressionAttributeNames)}
	case *dynamodb.TransactWriteItemsInput:
		var ws []written
		for _, it := range in.TransactItems {
			switch {
			case it.Put != nil:
				ws = append(ws, one(it.Put.Item, it.Put.ExpressionAttributeNames))
			case it.Update != nil:
				ws = append(ws, one(it.Update.Key, it.Update.ExpressionAttributeNames))
			case it.Delete != nil:
				ws = append(ws, one(it.Delete.Key, it.Delete.ExpressionAttributeNames))
			}
		}
		return ws
	}
	return nil
}

// keyOf returns the table key of an item or a key map.
func keyOf(item map[string]types.AttributeValue) asyncevent.Key {
	s := func(name string) string {
		v, _ := item[name].(*types.AttributeValueMemberS)
		if v == nil {
			return ""
		}
		return v.Value
	}
	return asyncevent.Key{PK: s("PK"), SK: s("SK")}
}

// decideAttempts bounds the calls of a draw (or a serve) by one process, each of which
// fails at the first fault of its tens of calls of DynamoDB.
const decideAttempts = 50

// decideKilled runs a draw (or a serve), decide, as an operator would after a crash:
// in a process that dies at death, called again under faults until it dies (or,
// dying too late, finishes), then in a fresh process, called again until it
// finishes. Around it, the late ingest's held puts land and its skewed ingests click
// at their moments. It reports whether the entries were recorded when the first
// process was done.
func (w *world) decideKilled(eventID string, late *lateIngest, death deathAt, decide func(context.Context, *asyncevent.Client) error) (recordedFirst bool) {
	onRecorded := sync.OnceFunc(func() { late.land(atRecord) })
	racing := make(chan struct{})
	go func() { defer close(racing); late.clickSkewed(duringDraw) }()

	c, tap, ctx := w.drawingProcess(eventID, 1, death, onRecorded)
	for attempt := 0; ; attempt++ {
		require.Less(w.t, attempt, decideAttempts, "the first process neither died nor finished")
		err := decide(ctx, c)
		if err == nil || tap.isDead() {
			w.t.Logf("the first process, to die %s: dead %v after %d attempts (%v)", death, tap.isDead(), attempt+1, err)
			break
		}
		w.t.Logf("first process, attempt %d: %v", attempt, firstLine(err))
	}
	recordedFirst = tap.record().EntriesHash != ""

	late.land(afterKill)
	late.clickSkewed(afterKill)
	c, _, ctx = w.drawingProcess(eventID, 2, deathAt{}, onRecorded)
	for attempt := 0; ; attempt++ {
		require.Less(w.t, attempt, decideAttempts, "the resumed process did not finish")
		err := decide(ctx, c)
		if err == nil {
			break
		}
		w.t.Logf("resumed process, attempt %d: %v", attempt, firstLine(err))
	}
	<-racing
	assert.True(w.t, late.landed.Load(), "the record was made, and the puts held for it landed right after it")
	onRecorded() // if it never was: the Submit calls waiting on them return all the same
	late.land(afterAnnounce)
	late.clickSkewed(afterAnnounce)
	late.wait()
	return recordedFirst
}
