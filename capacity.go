package asyncevent

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/internal/ctxsleep"
	"github.com/asyncevent/asyncevent/internal/seatcache"
)

// EventCapacity is a FIRST_COME event's seats as a caller reads them (GetCapacity):
// its EventCapacity item (PK EVENT#<eventId>, SK CAPACITY), or the sum of its C
// shards (PK EVENT#<eventId>#CAPACITY#<shard>, SK CAPACITY), whose capacities sum to
// the event's. capacityRemaining goes down by one per seat, under the condition
// capacityRemaining > 0, so the event has at most capacityTotal winners; it goes up
// only by seats an operator adds to a shard that holds seats, never from 0: an empty
// shard stays empty, which the seat rules rely on (seat.go). The item's bookkeeping
// (whose seats it holds, the claims it is closed to, the pool's version) is the
// library's own (capacityItem).
type EventCapacity struct {
	EventID           string      `dynamodbav:"eventId"`
	CapacityTotal     int64       `dynamodbav:"capacityTotal"`
	CapacityRemaining int64       `dynamodbav:"capacityRemaining"`
	UpdatedAt         EpochMillis `dynamodbav:"updatedAt"`

	// SoldOut is set on every shard of an event with capacity shards once all of them
	// are empty, so that a worker new to the event learns the sell-out from the one
	// shard it reads.
	SoldOut bool `dynamodbav:"soldOut,omitempty"`

	// HoldFor is the event's EventSettings.HoldFor (0: no holds), written with the item,
	// so that a worker that reads only a request's home shard knows whether its seat
	// is held (HELD) or won, and its loser waitlisted or rejected.
	HoldFor time.Duration `dynamodbav:"holdFor,omitempty"`

	// Shards, for an event with capacity shards (EventSettings.CapacityShards > 1), are
	// its shards, in shard order; the fields above are then their sum (UpdatedAt the
	// latest). Not stored.
	Shards []EventCapacity `dynamodbav:"-"`
}

// The attribute names of an EventCapacity item that its rows name.
const (
	attrCapacityRemaining = "capacityRemaining"
	attrUpdatedAt         = "updatedAt"
	attrHolders           = "holders"
	attrSoldOut           = "soldOut"
	attrVoid              = "void"
	attrPoolVersion       = "poolVersion"
	attrCapacityTotal     = "capacityTotal"
)

// The params and conditions of the capacity rows: a claim takes a seat and records
// whose it is (holders); a close records a fence token (void) that no later claim
// of the request at that epoch passes.
const (
	pSeats       param = "seats"
	pPoolVersion param = "poolVersion"
	pShards      param = "shards"      // capacity shards, as a number set
	pSeatToken   param = "seatToken"   // a request's seat token, as a string
	pSeatTokens  param = "seatTokens"  // the same, as a one-element string set
	pFenceToken  param = "fenceToken"  // the seat token at a claim's epoch
	pFenceTokens param = "fenceTokens" // the same, as a one-element string set
	pWaveSeats   param = "waveSeats"   // the seats a wave's write takes
	pSeatsTaken  param = "seatsTaken"  // the same, negated: ADD to capacityRemaining
	pWaveTokens  param = "waveTokens"  // the seat tokens of a wave's write, as a string set
)

var (
	// seatLeftWithRoom: the shard holds seats, and room for the seats added
	// (MaxSeatsPerShard), also when another add read it at the same moment.
	seatLeftWithRoom = all(seatLeft, func(v values) expression.ConditionBuilder {
		return expression.Name(attrCapacityTotal).LessThanEqual(v.Value(pShardRoom))
	})
	configAddCap     = all(addable, samePool)
	configPoolAsRead = all(configExists, samePool)
	seatLeft         = fixed(expression.Name(attrCapacityRemaining).GreaterThan(expression.Value(0)))
	// holder: the request's token is on the place.
	holder = func(v values) expression.ConditionBuilder {
		return expression.Contains(expression.Name(attrHolders), v.Arg(pSeatToken))
	}
	notHolder = not(holder)
	// notClosed: the place is not closed to the claims of the request at this epoch.
	notClosed = not(func(v values) expression.ConditionBuilder {
		return expression.Contains(expression.Name(attrVoid), v.Arg(pFenceToken))
	})
	seatFree    = all(seatLeft, notHolder, notClosed)
	placeExists = fixed(expression.AttributeExists(expression.Name(attrPK)))
	// notHeldHere: the place exists and records no seat of the request.
	notHeldHere = all(placeExists, notHolder)
	// A claim takes a seat and records whose it is; a close records a fence token.
	claimSets      = []set{setTo(attrCapacityRemaining, expression.Name(attrCapacityRemaining).Minus(expression.Value(1))), setTo(attrUpdatedAt, pNow)}
	claimAdds      = []set{addTo(attrHolders, pSeatTokens)}
	fenceAdds      = []set{addTo(attrVoid, pFenceTokens)}
	closedBy       = "Rows.ClaimSeat, Rows.MarkEnqueueFailed"
	capacityExists = fixed(expression.AttributeExists(expression.Name(attrPK)))
)

// The rows of the EventCapacity item (a capacity shard).
var (
	claimSeatRow       = row{name: "first-come capacity", method: "Rows.ClaimSeat", item: entity.Capacity, op: opUpdate, cond: seatFree, sets: claimSets, adds: claimAdds}
	seatClosedRow      = row{name: "first-come seat closed", method: closedBy, item: entity.Capacity, op: opUpdate, cond: notHeldHere, adds: fenceAdds}
	shardSeatsAddedRow = row{
		name: "capacity added to a shard", method: "AddCapacity", item: entity.Capacity, op: opUpdate, cond: seatLeftWithRoom,
		sets: []set{setTo(attrPoolVersion, pPoolVersion), setTo(attrUpdatedAt, pNow)},
		adds: []set{addTo(attrCapacityRemaining, pSeats), addTo(attrCapacityTotal, pSeats)},
	}
	poolMarkedRow = row{
		name: "capacity shard: pool version", method: "AddCapacity, CancelRequest", item: entity.Capacity, op: opUpdate, cond: capacityExists,
		sets: []set{setTo(attrPoolVersion, pPoolVersion)},
	}
	shardSoldOutRow = row{
		name: "capacity shard sold out", method: "Rows.ClaimSeat", item: entity.Capacity, op: opUpdate, cond: capacityExists,
		sets: []set{setTo(attrSoldOut, true)},
	}
)

// capacityItem is an EventCapacity item as stored: its key, the caller's fields and
// the seat rules' bookkeeping.
type capacityItem struct {
	Key
	EntityType entity.Type `dynamodbav:"entityType"` // CAPACITY
	EventCapacity

	// Holders are the seat tokens of the requests that won a seat on the item, one per
	// seat spent: the claim that takes a seat adds its request's token in the same
	// write, so that any later claim of the request here finds its seat instead of
	// taking another. A token is 8 bytes of SHA-256 of the request ID, base64 (about
	// 12 bytes a winner on the item).
	Holders []string `dynamodbav:"holders,omitempty,stringset"`

	// PoolVersion is the version of the event's seat pool (its Returns item) this shard
	// was told of: 0 while no seat was ever added to the pool (AddCapacity after a
	// sell-out, CancelRequest); each change of the pool's seats by an operator raises
	// it on every shard, so that a worker that reads a request's home shard, or meets
	// it empty, learns that the pool may hold seats.
	PoolVersion int64 `dynamodbav:"poolVersion,omitempty"`

	// Void are the fence tokens the item is closed to: a request's seat token at an
	// epoch of its claim (seatclaim.Close), written before the request's claim left
	// the item or the request ended without a seat, so that no claim of it sent
	// before takes a seat here afterwards, however late it lands.
	Void []string `dynamodbav:"void,omitempty,stringset"`
}

var (
	configExists = fixed(expression.AttributeExists(expression.Name(attrPK)))
)

// seatToken is the token a request's seat claim records on its capacity item: 8
// bytes of SHA-256 of the request ID, base64. Two requests of one shard share a token
// with a chance of about S²/2⁶⁵ for S seats on the shard (10⁻¹⁴ for 1,000).
func seatToken(requestID string) string {
	sum := sha256.Sum256([]byte("seat\x00" + requestID))
	return base64.RawStdEncoding.EncodeToString(sum[:8])
}

// GetCapacity reads a FIRST_COME event's EventCapacity: GetItem PK EVENT#<eventId>,
// SK CAPACITY, a strongly consistent read; for an event with capacity shards, GetItem
// of each shard (PK EVENT#<eventId>#CAPACITY#<shard>, SK CAPACITY), summed, with the
// shards in Shards (read partitionReads at a time). An event without one
// (unknown, or a LOTTERY) is ErrNotFound.
func (c *Client) GetCapacity(ctx context.Context, eventID string) (*EventCapacity, error) {
	if err := ValidateID("eventId", eventID); err != nil {
		return nil, err
	}
	shards, err := c.capacityShards(ctx, eventID)
	if err != nil {
		return nil, err
	}
	keys, err := CapacityKeys(eventID, shards)
	if err != nil {
		return nil, err
	}
	items := make([]capacityItem, len(keys))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(partitionReads) // each shard is a partition key of its own
	for i, key := range keys {
		g.Go(func() error {
			found, err := c.getItem(gctx, key.Key(), true, &items[i])
			switch {
			case err != nil:
				return fmt.Errorf("get capacity %s: %w", eventID, err)
			case !found:
				return fmt.Errorf("%w: capacity of %s (%s)", ErrNotFound, eventID, key.Key().SK)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if len(items) == 1 {
		return &items[0].EventCapacity, nil
	}
	sum := &EventCapacity{EventID: eventID}
	for _, item := range items {
		sum.CapacityTotal += item.CapacityTotal
		sum.CapacityRemaining += item.CapacityRemaining
		sum.UpdatedAt = max(sum.UpdatedAt, item.UpdatedAt)
		sum.Shards = append(sum.Shards, item.EventCapacity)
	}
	return sum, nil
}

// capacityItems returns the capacity items of a new FIRST_COME event: one CAPACITY
// item, or C shards holding capacityTotal ÷ C seats each, the first capacityTotal mod
// C of them one more.
func capacityItems(cfg eventItem, now EpochMillis) []capacityItem {
	keys, _ := CapacityKeys(cfg.EventID, cfg.CapacityShards) // the ID is checked
	items := make([]capacityItem, len(keys))
	n := int64(len(keys))
	for i, key := range keys {
		seats := cfg.CapacityTotal / n
		if int64(i) < cfg.CapacityTotal%n {
			seats++
		}
		items[i] = capacityItem{Key: key.Key(), EntityType: entity.Capacity, EventCapacity: EventCapacity{
			EventID: cfg.EventID, CapacityTotal: seats, CapacityRemaining: seats, UpdatedAt: now, HoldFor: cfg.HoldFor,
		}}
	}
	return items
}

// applyWhileThrottled applies a write that must follow a seat already spent (its
// SUCCEEDED), sending it again while DynamoDB refuses it for throughput, for up to
// bookkeepingTimeout whatever ctx does.
func (c *Client) applyWhileThrottled(ctx context.Context, key RequestKey, w write, tx txOptions) (Transition, error) {
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		t, err := c.apply(bctx, key, w, tx)
		if !errors.Is(throttled(err), ErrThrottled) || ctxsleep.Sleep(bctx, finalWriteBackoff(attempt)) != nil {
			return t, err
		}
	}
}

// Whether shardEmpty records an empty shard on the event's config.
type recordEmpty int

const (
	recordIfUnlisted    recordEmpty = iota // when the CONFIG, read at most once a second, lacks it
	recordIfNew                            // when seats did not know it
	recordAlways                           // the claim that emptied it: another claim of the worker may have met it empty first
	recordIfUnlistedNow                    // as recordIfUnlisted, the list read at once when the shard is news to the worker
)

// shardEmpty records that a shard has no seat left: in seats, and as record says on
// the event's config for the workers that have not met it; and, at most once a
// second, reads the shards the others recorded (healEmpty).
func (c *Client) shardEmpty(ctx context.Context, eventID string, shard, n int, seats *seatcache.Shards, record recordEmpty) {
	news := seats.Add(eventID, shard, n)
	switch {
	case record == recordAlways, record == recordIfNew && news:
		c.recordEmpty(ctx, eventID, n, []int{shard})
	case (record == recordIfUnlisted || record == recordIfUnlistedNow) && news:
		seats.Unrecorded(eventID, shard)
	}
	c.healEmpty(ctx, eventID, n, seats, news && record == recordIfUnlistedNow)
}

// healEmpty reads the event's emptyShards (at most once a second per Processor, or
// now: a worker's look found its home shard empty, news to it), into
// seats, and records there the shards seats found empty that it still lacks: the
// record of the claim that emptied one was lost (a crash between the two writes, a
// throttle), and the workers new to the event would otherwise pay a failed claim on
// it each, for good.
func (c *Client) healEmpty(ctx context.Context, eventID string, n int, seats *seatcache.Shards, now bool) {
	if !now && !seats.RefreshDue(eventID, c.opts.Clock()) {
		return // a read at once does not spend the once-a-second one
	}
	cfg, err := c.getEvent(ctx, eventID)
	if err != nil {
		return
	}
	seats.Know(eventID, n, cfg.EmptyShards)
	if missing := seats.TakeUnrecorded(eventID, cfg.EmptyShards); len(missing) > 0 {
		c.recordEmpty(ctx, eventID, n, missing)
	}
}

// recordEmpty adds shards to the event's emptyShards: the "capacity shard empty" row.
// Sent once: the record saves other workers a failed claim each, no more, and the
// CONFIG item takes C of them at the sell-out, all at once.
//
// The record that completes the list (every one of the event's n shards) marks them
// all sold out (markSoldOut).
func (c *Client) recordEmpty(ctx context.Context, eventID string, n int, shards []int) {
	key, _ := NewEventKey(eventID, EventItemConfig) // the ID is checked
	w := write{row: &shardEmptyRow, key: key.Key(), args: args{pShards: setOf[int](shards)}}
	var old map[string]types.AttributeValue
	if err := c.do(ctx, txOptions{once: true, old: &old}, []write{w}); err != nil {
		c.opts.Logger.WarnContext(ctx, "recording an empty capacity shard failed", slog.String("eventId", eventID), slog.Any("shards", shards), slog.Any("error", err))
		return
	}
	var was struct {
		Empty []int `dynamodbav:"emptyShards,numberset"`
	}
	_ = attributevalue.UnmarshalMap(old, &was) // none: the first record
	all := map[int]bool{}
	for _, s := range append(was.Empty, shards...) {
		all[s] = true
	}
	if n > 1 && len(all) >= n && len(was.Empty) < n {
		c.markSoldOut(ctx, eventID, n)
	}
}

// claimOrder is the order in which a request tries n capacity shards: from the shard
// its ID picks, then on in an order of its own, so that the claims that find a shard
// empty spread over the others instead of all falling on its neighbour.
func claimOrder(requestID string, n int) []int {
	if n <= 1 {
		return []int{0}
	}
	h := fnv.New64a()
	h.Write([]byte(requestID))
	order := rand.New(rand.NewPCG(h.Sum64(), 0)).Perm(n)
	first := slices.Index(order, shardOf(requestID, n))
	order[0], order[first] = order[first], order[0]
	return order
}

// requestToken derives a ClientRequestToken (at most 36 characters) from a request,
// a lease and an attempt.
func requestToken(requestID, owner string, attempt int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%d", requestID, owner, attempt))
	return hex.EncodeToString(sum[:18])
}

// waveClaimRows[k] is the "first-come wave seats" row of k requests (2 ≤ k ≤
// maxWaveClaim; declaredRows()'s entry is k = 2): k home claims at epoch 0 in one
// write, all or none. Each request's pair of terms is a home claim's own condition (its
// token not yet on the shard, the shard not closed to it: the fence token at epoch 0
// is the seat token), so the write takes exactly the seats those k claims would;
// any delivery may send such a claim at any time (seat.go), so the rules hold as
// they are.
var waveClaimRows = func() (rs [maxWaveClaim + 1]*row) {
	for k := 2; k <= maxWaveClaim; k++ {
		conds := []cond{compare(expression.Name(attrCapacityRemaining).GreaterThanEqual, pWaveSeats)}
		for i := range k {
			token := waveTokenParam(i)
			conds = append(conds,
				not(func(v values) expression.ConditionBuilder {
					return expression.Contains(expression.Name(attrHolders), v.Arg(token))
				}),
				not(func(v values) expression.ConditionBuilder {
					return expression.Contains(expression.Name(attrVoid), v.Arg(token))
				}))
		}
		rs[k] = &row{
			name: "first-come wave seats", method: "Processor.ProcessOne", item: entity.Capacity, op: opUpdate, cond: all(conds...),
			sets: []set{setTo(attrUpdatedAt, pNow)},
			adds: []set{addTo(attrCapacityRemaining, pSeatsTaken), addTo(attrHolders, pWaveTokens)},
		}
	}
	return rs
}()

// maxWaveClaim is the most home seats one "first-come wave seats" write takes: its
// condition has two terms a seat, which keeps it well within DynamoDB's 4 KB
// expression.
const maxWaveClaim = 25

// waveTokenParam is the param of the seat token of a wave write's i-th request.
func waveTokenParam(i int) param { return param("seatToken" + strconv.Itoa(i+1)) }

// markSoldOut sets soldOut on every capacity shard of an event whose shards are all
// empty, the "capacity shard sold out" row (UpdateItem of each shard, SET soldOut =
// true), so that a worker new to the event that reads a request's home shard learns
// the sell-out from that read alone. A mark that fails is left: such a worker reads
// the event's config instead.
func (c *Client) markSoldOut(ctx context.Context, eventID string, n int) {
	keys, err := CapacityKeys(eventID, n)
	if err != nil {
		return
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			w := write{row: &shardSoldOutRow, key: k.Key()}
			if err := c.do(ctx, txOptions{once: true}, []write{w}); err != nil {
				c.opts.Logger.WarnContext(ctx, "marking a capacity shard sold out failed", slog.String("eventId", eventID), slog.String("pk", k.Key().PK), slog.Any("error", err))
			}
		}()
	}
	wg.Wait()
}

const (
	pShardRoom param = "shardRoom"
)

var (
	addable  = all(configExists, fixed(expression.Name(attrEventType).Equal(expression.Value(FirstCome))), notEnded)
	samePool = func(v values) expression.ConditionBuilder {
		return expression.AttributeNotExists(expression.Name(attrPoolVersion)).Or(expression.Name(attrPoolVersion).Equal(v.Value(pPrevPoolVersion)))
	}
)

const (
	pPrevPoolVersion param = "prevPoolVersion"
)
