package asynceventtest

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/entity"
)

// CheckOptions tunes CheckEvent.
type CheckOptions struct {
	// Users are the users who took part; each must have at most one live request
	// (one not ended by a failed enqueue, which releases the lock).
	Users []string
	// Unsettled allows requests that are not final yet (a LOTTERY before its draw
	// may keep QUEUED entries either way).
	Unsettled bool
	// Abandoned are the users whose ingest died between their lock and their request
	// and who never clicked again: each may keep a lock without its request (the
	// next click would heal it). Every other lock must name its request.
	Abandoned []string
}

// CheckReport sums up the event CheckEvent checked.
type CheckReport struct {
	Requests   int
	ByStatus   map[asyncevent.Status]int
	ByCode     map[asyncevent.ResultCode]int
	Locks      int
	Abandoned  int // locks of CheckOptions.Abandoned users left without their request
	Violations []string
}

// CheckEvent reads the whole table (a Scan: the test kit may, the library never does)
// and checks the design's invariants for one event, reporting each violation with
// t.Errorf:
//
//   - FIRST_COME: capacityRemaining + SUCCEEDED = capacityTotal (summed over the
//     capacity shards, one item each, none below zero), and exactly
//     min(capacity, contenders) SUCCEEDED, contenders being the requests that won or
//     lost for capacity; no request lost for capacity while a seat was left; and on
//     each capacity item, one seat token per seat spent, each that of a SUCCEEDED
//     request whose seatShard is that item's: no seat spent without its winner, none
//     given twice.
//   - FIRST_COME with holds (EventSettings.HoldFor), instead of the first two: the seats
//     left on the shards and on the Returns item and the HELD and SUCCEEDED requests
//     add up to the capacity; the Returns item's counts match the holds released or
//     expired and the requests served from the waitlist; the shards' seat tokens are
//     those of the requests that won a seat there; no request is WAITLISTED while a
//     shard holds a seat, nor (unless opts.Unsettled) while a seat given back waits.
//     HELD and WAITLISTED requests wait for a person, and count as settled.
//   - FIRST_COME with a ranked admission (EventSettings.Admission): no winner (SUCCEEDED
//     or HELD, or a hold's end) ranked by (queuedAt, requestId) after a request
//     refused for want of a seat (REJECTED_CAPACITY, or WAITLISTED), a seat of the
//     pool (added, or given back by a cancel) aside; REJECTED_LATE only once a seat
//     went to a request ranked after it, never while none did.
//   - LOTTERY, once announced: exactly min(K, entries) SUCCEEDED, and VerifyDraw clean.
//   - No request left non-final (unless opts.Unsettled; QUEUED lottery entries before
//     the draw are fine).
//   - Every lock names an existing request of its (event, user), but those of
//     opts.Abandoned users, and every live request has its lock: no orphan lock, no
//     request without one.
//   - At most one live request per (event, user).
//   - GSI attributes only on Request items, and every request carries the index
//     keys of its queuedAt (its put wrote them).
//   - Every status log, if there is one, is a legal path of the lifecycle ending in
//     the request's status: its entries' steps (fromStatus → toStatus) chain from
//     RECEIVED to it, each used once.
func CheckEvent(t testing.TB, c *asyncevent.Client, eventID string, opts CheckOptions) CheckReport {
	t.Helper()
	ctx := context.Background()
	rep := CheckReport{ByStatus: map[asyncevent.Status]int{}, ByCode: map[asyncevent.ResultCode]int{}}
	fail := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		rep.Violations = append(rep.Violations, msg)
		t.Errorf("CheckEvent %s: %s", eventID, msg)
	}
	cfg, err := c.GetEvent(ctx, eventID)
	if err != nil {
		t.Fatalf("CheckEvent %s: %v", eventID, err)
	}
	items := readEventItems(t, c, eventID, fail)
	live := checkRequests(cfg, items, opts, &rep, fail)
	checkLocks(eventID, items, live, opts, &rep, fail)
	won := rep.ByStatus[asyncevent.StatusSucceeded]
	switch cfg.EventType {
	case asyncevent.FirstCome:
		checkFirstCome(cfg, items, won, rep.ByCode[asyncevent.ResultRejectedCapacity]+rep.ByCode[asyncevent.ResultLate], opts, fail)
		if cfg.Admission == asyncevent.AdmissionRanked {
			checkRanked(cfg, items, fail)
		}
	case asyncevent.Lottery:
		checkLottery(ctx, c, cfg, won, rep.ByCode[asyncevent.ResultLotteryLose], rep.ByCode[asyncevent.ResultNotDrawn], fail)
	}
	return rep
}

// eventItems are the items of one event that CheckEvent reads off the table.
type eventItems struct {
	requests map[string]reqItem                    // by request ID
	locks    map[string]asyncevent.IdempotencyLock // by user
	logs     map[string][]asyncevent.StatusLog
	capacity *asyncevent.EventCapacity // the shards, summed
	holders  map[int][]string          // capacity shard → the seat tokens on it
	spent    map[int]int64             // capacity shard → the seats taken from it
	returns  struct {                  // the event's pool: seats given back, added, of cancels
		CapacityRemaining int64    `dynamodbav:"capacityRemaining"`
		Returned          int64    `dynamodbav:"returned"`
		Served            int64    `dynamodbav:"served"`
		Added             int64    `dynamodbav:"added"`
		Cancelled         int64    `dynamodbav:"cancelled"`
		Holders           []string `dynamodbav:"holders,stringset"`
	}
}

// readEventItems scans the table for the event's items, failing any item that does
// not decode and any item but a request that carries an index attribute.
func readEventItems(t testing.TB, c *asyncevent.Client, eventID string, fail func(string, ...any)) *eventItems {
	items := &eventItems{requests: map[string]reqItem{}, locks: map[string]asyncevent.IdempotencyLock{}, logs: map[string][]asyncevent.StatusLog{},
		holders: map[int][]string{}, spent: map[int]int64{}}
	for _, raw := range ScanTable(t, c.TableName()) {
		var head struct {
			PK, SK     string
			EntityType entity.Type `dynamodbav:"entityType"`
			EventID    string      `dynamodbav:"eventId"`
		}
		if err := attributevalue.UnmarshalMap(raw, &head); err != nil {
			fail("an item does not decode: %v", err)
			continue
		}
		if head.EntityType != entity.Request {
			for name := range raw {
				if strings.HasPrefix(name, "GSI") {
					fail("%s item %s/%s carries %s", head.EntityType, head.PK, head.SK, name)
				}
			}
		}
		switch head.EntityType {
		case entity.Request:
			var r reqItem
			mustDecode(t, raw, &r)
			if r.EventID == eventID {
				items.requests[r.RequestID] = r
			}
		case entity.Idempotency:
			var l asyncevent.IdempotencyLock
			mustDecode(t, raw, &l)
			if l.EventID == eventID {
				items.locks[l.UserID] = l
			}
		case entity.Capacity:
			if head.EventID == eventID {
				key, err := asyncevent.ParseEventKey(asyncevent.Key{PK: head.PK, SK: head.SK})
				if err != nil {
					fail("capacity item %s/%s: %v", head.PK, head.SK, err)
					continue
				}
				shard, _ := key.Shard() // 0 for the one item of an event without capacity shards
				items.addShard(t, raw, shard, fail)
			}
		case entity.Returns:
			if head.EventID == eventID {
				mustDecode(t, raw, &items.returns)
			}
		case entity.StatusLog:
			var l asyncevent.StatusLog
			mustDecode(t, raw, &l)
			items.logs[l.RequestID] = append(items.logs[l.RequestID], l)
		}
	}
	return items
}

// addShard adds capacity shard n, as raw, to the event's capacity.
func (items *eventItems) addShard(t testing.TB, raw map[string]types.AttributeValue, n int, fail func(string, ...any)) {
	var shard asyncevent.EventCapacity
	mustDecode(t, raw, &shard)
	if items.capacity == nil {
		items.capacity = &asyncevent.EventCapacity{}
	}
	items.capacity.CapacityTotal += shard.CapacityTotal
	items.capacity.CapacityRemaining += shard.CapacityRemaining
	items.capacity.Shards = append(items.capacity.Shards, shard)
	if shard.CapacityRemaining < 0 {
		fail("a capacity item of %s has capacityRemaining %d", shard.EventID, shard.CapacityRemaining)
	}
	var seats struct {
		Holders []string `dynamodbav:"holders,stringset"`
	}
	mustDecode(t, raw, &seats)
	items.holders[n], items.spent[n] = seats.Holders, shard.CapacityTotal-shard.CapacityRemaining
}

// checkRequests counts the event's requests into rep and checks each: settled, on
// its index keys, its status log a path of the lifecycle. It returns each user's
// live requests.
func checkRequests(cfg *asyncevent.Event, items *eventItems, opts CheckOptions, rep *CheckReport, fail func(string, ...any)) map[string][]string {
	live := map[string][]string{} // user → live request IDs
	for id, r := range items.requests {
		rep.Requests++
		rep.ByStatus[r.Status]++
		if r.ResultCode != "" {
			rep.ByCode[r.ResultCode]++
		}
		if r.ResultCode != asyncevent.ResultFailedIngestEnqueue {
			live[r.UserID] = append(live[r.UserID], id)
		}
		waiting := r.Status == asyncevent.StatusQueued && cfg.EventType == asyncevent.Lottery && cfg.Phase != asyncevent.PhaseAnnounced
		// A hold and a place on the waitlist wait for a person, not for the library.
		waiting = waiting || r.Status == asyncevent.StatusHeld || r.Status == asyncevent.StatusWaitlisted
		if !r.Status.IsTerminal() && !opts.Unsettled && !waiting {
			fail("request %s of %s is left %s", id, r.UserID, r.Status)
		}
		orderAt := r.QueuedAt
		if orderAt == 0 && r.ResultCode == asyncevent.ResultFailedIngestEnqueue && r.ErrorCode == string(asyncevent.ResultFailedIngestEnqueue) {
			// Its message never reached the queue: no queuedAt (seed 003, pitfall 2);
			// its index keys keep the time its put gave them.
			orderAt = orderAtOf(r.IndexKeys.GSI2SK)
		}
		if want, err := cfg.RequestIndexKeys(r.UserID, id, orderAt); orderAt == 0 || err != nil || want != r.IndexKeys {
			fail("request %s (%s) has index keys %+v, want %+v from queuedAt %d", id, r.Status, r.IndexKeys, want, r.QueuedAt)
		}
		checkLog(fail, id, r.Status, items.logs[id])
	}
	return live
}

// checkLocks checks the event's locks against its live requests: one live request a
// user, each with its lock, and no lock without its request (but those of
// opts.Abandoned users).
func checkLocks(eventID string, items *eventItems, live map[string][]string, opts CheckOptions, rep *CheckReport, fail func(string, ...any)) {
	for user, ids := range live {
		if len(ids) > 1 {
			fail("user %s has %d live requests: %v", user, len(ids), ids)
		}
		l, ok := items.locks[user]
		switch {
		case !ok:
			fail("live request %s of %s has no lock", ids[0], user)
		case !containsID(ids, l.RequestID):
			fail("the lock of %s names %s, its live request is %v", user, l.RequestID, ids)
		}
	}
	for user, l := range items.locks {
		rep.Locks++
		r, ok := items.requests[l.RequestID]
		switch {
		case !ok && slices.Contains(opts.Abandoned, user):
			rep.Abandoned++
		case !ok || r.UserID != user:
			fail("orphan lock: %s/%s names request %s, which does not exist", eventID, user, l.RequestID)
		}
	}
	for _, u := range opts.Users {
		if len(live[u]) > 1 {
			fail("user %s has more than one request", u)
		}
	}
}

// checkFirstCome checks a FIRST_COME event's seats: its shards, the seats added, won
// and left, and each seat's token (checkHolds for an event with holds).
func checkFirstCome(cfg *asyncevent.Event, items *eventItems, won, lost int, opts CheckOptions, fail func(string, ...any)) {
	capacity, returns := items.capacity, items.returns
	if capacity == nil {
		fail("no CAPACITY item")
		return
	}
	if shards := max(cfg.CapacityShards, 1); len(capacity.Shards) != shards {
		fail("%d capacity items, the event has %d capacity shards", len(capacity.Shards), shards)
	}
	if total := capacity.CapacityTotal + returns.Added; total != cfg.CapacityTotal {
		fail("the shards' capacityTotal %d + %d seats added to the pool != the event's capacityTotal %d", capacity.CapacityTotal, returns.Added, cfg.CapacityTotal)
	}
	if cfg.HoldFor > 0 {
		checkHolds(cfg, capacity, items.requests, items.holders, items.spent, returns.CapacityRemaining, returns.Returned, returns.Served, returns.Added, opts, fail)
		return
	}
	// The pool (shard C): seats added or given back by a cancel, taken by claims
	// that record their token there.
	pool := max(cfg.CapacityShards, 1)
	if len(returns.Holders) > 0 || returns.Added+returns.Cancelled > 0 {
		items.holders[pool], items.spent[pool] = returns.Holders, returns.Added+returns.Cancelled-returns.CapacityRemaining
	}
	contenders := won + lost
	total := capacity.CapacityTotal + returns.Added
	if capacity.CapacityRemaining+returns.CapacityRemaining+int64(won) != total {
		fail("capacityRemaining %d + %d on the pool + %d SUCCEEDED != capacityTotal %d (%d added)", capacity.CapacityRemaining, returns.CapacityRemaining, won, total, returns.Added)
	}
	if want := min(int(total), contenders); won > want || returns.Added+returns.Cancelled == 0 && won != want {
		fail("%d SUCCEEDED, want min(capacity %d, contenders %d) = %d", won, total, contenders, want)
	}
	winners := map[string]int{} // seat token → seatShard (-1: none)
	for id, r := range items.requests {
		if r.Status == asyncevent.StatusSucceeded || r.ResultCode == asyncevent.ResultCancelled {
			winners[seatToken(id)] = -1
			if r.SeatShard != nil {
				winners[seatToken(id)] = *r.SeatShard
			}
		}
	}
	checkSeats(winners, items.holders, items.spent, tokenOwners(items), fail)
}

// checkRanked checks a ranked FIRST_COME event's order: no late winner, and no late
// arrival refused unless a request ranked after it won (the admission had passed it).
func checkRanked(cfg *asyncevent.Event, items *eventItems, fail func(string, ...any)) {
	pool := max(cfg.CapacityShards, 1)
	rs := slices.Collect(maps.Values(items.requests))
	slices.SortFunc(rs, func(a, b reqItem) int {
		return cmp.Or(cmp.Compare(a.QueuedAt, b.QueuedAt), strings.Compare(a.RequestID, b.RequestID))
	})
	won := func(r reqItem) bool {
		return r.Status == asyncevent.StatusSucceeded || r.Status == asyncevent.StatusHeld || r.HoldExpiresAt != 0
	}
	var refused, late *reqItem
	for i := range rs {
		r := &rs[i]
		switch {
		case r.SeatShard != nil && *r.SeatShard == pool:
		case won(*r) && refused != nil:
			fail("late winner: %s (queuedAt %d) won after %s (queuedAt %d) was refused for want of a seat", r.RequestID, r.QueuedAt, refused.RequestID, refused.QueuedAt)
		case won(*r):
			late = nil // a request ranked after the late arrival won: the admission had passed it
		case refused == nil && (r.ResultCode == asyncevent.ResultRejectedCapacity || r.Status == asyncevent.StatusWaitlisted):
			refused = r
		case r.ResultCode == asyncevent.ResultLate && late == nil:
			late = r
		}
	}
	if late != nil {
		fail("%s ended REJECTED_LATE, yet no request ranked after it won", late.RequestID)
	}
}

// checkLottery checks an announced LOTTERY: min(K, entries) winners, the draw
// verifies, and each of the notDrawn requests ended REJECTED_NOT_DRAWN is one the
// verifier finds absent from the record.
func checkLottery(ctx context.Context, c *asyncevent.Client, cfg *asyncevent.Event, won, lost, notDrawn int, fail func(string, ...any)) {
	if cfg.Phase != asyncevent.PhaseAnnounced {
		return
	}
	entries := won + lost
	if want := min(int(cfg.WinnerCount), entries); won != want {
		fail("%d SUCCEEDED, want min(K %d, entries %d) = %d", won, cfg.WinnerCount, entries, want)
	}
	v, err := c.VerifyDraw(ctx, cfg.EventID)
	if err != nil {
		fail("VerifyDraw: %v", err)
	} else if !v.OK() {
		fail("VerifyDraw: %s", v)
	} else if notDrawn > len(v.Late) {
		fail("%d requests REJECTED_NOT_DRAWN, the verifier finds %d absent from the record", notDrawn, len(v.Late))
	}
}

// checkHolds checks the seats of an event with holds: the seats left on the shards
// and on the Returns item and the HELD and SUCCEEDED requests add up to the capacity;
// the seats given back are the holds released or expired, the seats handed on those
// of the requests served from the waitlist; each shard's seat tokens are those of
// the requests that won a seat there (HELD, SUCCEEDED, released or expired, not
// served from the waitlist); and no request waits on the waitlist while the shards
// hold seats, nor (settled) while seats given back wait.
func checkHolds(cfg *asyncevent.Event, capacity *asyncevent.EventCapacity, requests map[string]reqItem, holders map[int][]string, spent map[int]int64,
	waiting, returned, served, added int64, opts CheckOptions, fail func(string, ...any)) {
	var seated, gaveBack, handedOn, waitlisted int64
	winners := map[string]int{}
	for id, r := range requests {
		switch {
		case r.Status == asyncevent.StatusHeld, r.Status == asyncevent.StatusSucceeded:
			seated++
		case r.Status == asyncevent.StatusWaitlisted:
			waitlisted++
		}
		ended := r.Status == asyncevent.StatusRejected && (r.ResultCode == asyncevent.ResultHoldExpired ||
			r.ResultCode == asyncevent.ResultReleased && r.HoldExpiresAt != 0)
		if ended {
			gaveBack++
		}
		ended = ended || r.ResultCode == asyncevent.ResultCancelled
		if r.ServedAt != 0 {
			handedOn++
			continue
		}
		if r.Status == asyncevent.StatusHeld || r.Status == asyncevent.StatusSucceeded || ended {
			winners[seatToken(id)] = -1
			if r.SeatShard != nil {
				winners[seatToken(id)] = *r.SeatShard
			}
		}
	}
	total := capacity.CapacityTotal + added
	if capacity.CapacityRemaining+waiting+seated != total {
		fail("holds: %d seats left on the shards + %d given back and waiting + %d HELD or SUCCEEDED != capacity %d",
			capacity.CapacityRemaining, waiting, seated, total)
	}
	if seated > total {
		fail("holds: %d HELD or SUCCEEDED, more than the capacity %d", seated, total)
	}
	if gaveBack != returned {
		fail("holds: %d holds released or expired, the Returns item counts %d seats given back", gaveBack, returned)
	}
	if handedOn != served {
		fail("holds: %d requests served from the waitlist, the Returns item counts %d", handedOn, served)
	}
	if waitlisted > 0 && capacity.CapacityRemaining > 0 {
		fail("holds: %d WAITLISTED while the shards hold %d seats", waitlisted, capacity.CapacityRemaining)
	}
	if waitlisted > 0 && waiting > 0 && !opts.Unsettled {
		fail("holds: %d WAITLISTED while %d seats given back wait", waitlisted, waiting)
	}
	checkSeats(winners, holders, spent, tokenOwners(&eventItems{requests: requests}), fail)
}

// reqItem is a Request item as the table holds it: the request, its index keys and
// the seat bookkeeping the checks read (attribute names as the library stores them).
type reqItem struct {
	asyncevent.Request
	asyncevent.IndexKeys
	SeatShard *int `dynamodbav:"seatShard,omitempty"`
	SeatEpoch int  `dynamodbav:"seatEpoch,omitempty"`
}

func mustDecode(t testing.TB, raw map[string]types.AttributeValue, out any) {
	t.Helper()
	if err := attributevalue.UnmarshalMap(raw, out); err != nil {
		t.Fatalf("CheckEvent: %v", err)
	}
}

func containsID(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// checkLog checks that a request's status log is a legal path ending in its status.
// The entries' times come from the clocks of different processes (ingest, workers),
// and a worker's write may be applied after an ingest write it was built before, so
// the order of the entries is not trusted: the check is that the entries, each a step
// from one status to another, chain in some order from nothing through RECEIVED to
// the request's status, every step legal and every entry used once.
func checkLog(fail func(string, ...any), id string, status asyncevent.Status, logs []asyncevent.StatusLog) {
	if len(logs) == 0 {
		return
	}
	left := map[step]int{}
	for _, l := range logs {
		left[step{l.FromStatus, l.ToStatus}]++
	}
	if !legalPath("", left, len(logs), status) {
		var got []string
		for _, l := range logs {
			got = append(got, fmt.Sprintf("%s→%s", l.FromStatus, l.ToStatus))
		}
		fail("request %s (%s): no order of its status log %v is a legal path", id, status, got)
	}
}

// step is one status log entry's transition.
type step struct{ from, to asyncevent.Status }

// legalPath reports whether the steps left, taken in some order after prev, make a
// legal path that ends in last.
func legalPath(prev asyncevent.Status, left map[step]int, n int, last asyncevent.Status) bool {
	if n == 0 {
		return prev == last
	}
	for s, k := range left {
		if k == 0 || s.from != prev || !(prev == "" && s.to == asyncevent.StatusReceived || prev != "" && asyncevent.CanTransition(prev, s.to)) {
			continue
		}
		left[s]--
		ok := legalPath(s.to, left, n-1, last)
		left[s]++
		if ok {
			return true
		}
	}
	return false
}

// seatToken is the library's seat token of a request: 8 bytes of SHA-256 of
// "seat\x00" and the request ID, base64 (capacity.go).
func seatToken(requestID string) string {
	sum := sha256.Sum256([]byte("seat\x00" + requestID))
	return base64.RawStdEncoding.EncodeToString(sum[:8])
}

// checkSeats holds the capacity items' seat tokens to the winners: one token per
// seat spent, each a winner's on the shard its seatShard names, every winner's
// somewhere.
func checkSeats(winners map[string]int, holders map[int][]string, spent map[int]int64, owners map[string]string, fail func(string, ...any)) {
	seen := map[string]bool{}
	for shard, tokens := range holders {
		if int64(len(tokens)) != spent[shard] {
			fail("capacity shard %d: %d seats spent, %d seat tokens", shard, spent[shard], len(tokens))
		}
		for _, tok := range tokens {
			want, ok := winners[tok]
			switch {
			case !ok:
				fail("capacity shard %d: seat token %s is no SUCCEEDED request's: a seat spent without its winner (%s)", shard, tok, orNone(owners[tok]))
			case want != shard:
				fail("capacity shard %d: seat token %s of a winner whose seatShard is %d", shard, tok, want)
			case seen[tok]:
				fail("seat token %s on two capacity shards", tok)
			}
			seen[tok] = true
		}
	}
	for tok, shard := range winners {
		if !seen[tok] {
			fail("a winner (seatShard %d, token %s) holds no seat", shard, tok)
		}
	}
}

// orderAtOf reads the time of a GSI2SK, QAT#<13 digits>#REQ#<requestId>; 0 when it
// has none.
func orderAtOf(sk string) asyncevent.EpochMillis {
	k, err := asyncevent.ParseQueuedAtSortKey(sk)
	if err != nil {
		return 0
	}
	return k.QueuedAt()
}

// tokenOwners names the request of each seat token: its ID, status, result and seat
// place, and its status log's path, for a failure's message.
func tokenOwners(items *eventItems) map[string]string {
	owners := map[string]string{}
	for id, r := range items.requests {
		shard := "none"
		if r.SeatShard != nil {
			shard = strconv.Itoa(*r.SeatShard)
		}
		var path []string
		for _, l := range items.logs[id] {
			path = append(path, string(l.ToStatus)+" ("+l.Message+")")
		}
		owners[seatToken(id)] = fmt.Sprintf("request %s: %s %s, seatShard %s, seatEpoch %d, log %v", id, r.Status, r.ResultCode, shard, r.SeatEpoch, path)
	}
	return owners
}

func orNone(s string) string {
	if s == "" {
		return "no request has it"
	}
	return s
}
