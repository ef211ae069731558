package asyncevent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/internal/progress"
)

// An event's progress: how many of its requests arrived, and how many the workers
// reached, in each tenth of a second, so that a poll of a request that waits in line
// can say how many wait before it and for how long (docs/design.md, "A place in
// line").
//
// Every node counts what it does in memory and writes its counts at each multiple of
// Options.ProgressEvery on its clock: one UpdateItem per second of counts (ADD of ten
// tenths of arrivals, a0 … a9, of ten tenths of requests reached, d0 … d9, and of the
// arrivals again by hundredth, h00 … h99) on one of the event's progress partitions,
// EVENT#<eventId>#PROGRESS#<p>, SK T#<unix second>; the node's p is fixed at random,
// so that the nodes spread over the event's progress.Shards partitions. A reader
// queries each partition and keeps what it read for Options.ProgressCacheTTL, and
// for the polls it would place poorly until the nodes' next flush has landed, so
// thousands of polls a second cost a node a few reads of each partition a second, and
// each poll about the GetItem of its request. This file reads and writes the rows;
// internal/progress does the counting and the arithmetic.

// The defaults of the progress options.
const (
	defaultProgressEvery    = 200 * time.Millisecond
	defaultProgressCacheTTL = time.Second
	// progressTTL is how long a progress item is kept.
	progressTTL = 7 * 24 * time.Hour
)

// The attributes and params of the progress row: a0 … a9 and d0 … d9, the counts of
// each tenth, and h00 … h99, the arrivals of each hundredth (a tenth whose hundredths
// do not sum to its count was written without them: its arrivals are taken as spread
// over it).
var (
	progressAttrs       = progress.NewNames("a", "d", "h")
	pProgressTTL  param = "progressTtl"
)

// progressRow adds a node's counts of one second to its progress item.
var progressRow = row{
	name: "progress counted", method: "FlushProgress", item: entity.Progress, op: opUpdate,
	sets: []set{setIfMissing(attrEntityType, entity.Progress), setIfMissing(attrEventID, pEventID), setIfMissing(attrTTL, pProgressTTL)},
	adds: countAdds(progressAttrs.Arrived[:], progressAttrs.Reached[:], progressAttrs.Hundredths[:]),
}

// countAdds is ADD n :n for each count attribute n of the lists.
func countAdds(lists ...[]string) []set {
	var adds []set
	for _, names := range lists {
		for _, n := range names {
			adds = append(adds, addTo(n, param(n)))
		}
	}
	return adds
}

// progressMeter counts what a node does for each event (progress.Meter) and writes
// it, the "progress counted" row.
type progressMeter struct {
	c       *Client
	meter   *progress.Meter
	flusher progress.Flusher
}

func newProgressMeter(c *Client, every time.Duration) *progressMeter {
	m := &progressMeter{c: c}
	now := func() int64 { return int64(c.now()) }
	m.meter = progress.NewMeter(every, now, func(gen int64) { _ = m.flushOf(context.Background(), gen) })
	m.flusher = progress.Flusher{
		Write: m.write,
		Refused: func(err error) bool {
			return errors.Is(throttled(err), ErrThrottled) || errors.Is(err, errCountsNotSent)
		},
		Dropped: func(ctx context.Context, k progress.Second, err error) {
			if err == nil {
				c.opts.Logger.WarnContext(ctx, "progress counts older than the span a reader holds are dropped (their process was frozen or stalled)", "eventId", k.EventID, "second", k.Second)
			} else {
				c.opts.Logger.WarnContext(ctx, "a write of the progress counts failed; its counts are dropped, as it may have applied", "eventId", k.EventID, "error", err)
			}
		},
	}
	return m
}

// arrived counts a request of eventID queued at.
func (m *progressMeter) arrived(eventID string, at EpochMillis) {
	if m != nil {
		m.meter.Arrived(eventID, int64(at))
	}
}

// waitlisted counts a request of eventID queued at that joined its waitlist, or,
// joined false, left it.
func (m *progressMeter) waitlisted(eventID string, at EpochMillis, joined bool) {
	if m != nil {
		m.meter.Waitlisted(eventID, int64(at), joined)
	}
}

// reached counts a request of eventID a worker finished at.
func (m *progressMeter) reached(eventID string, at EpochMillis) {
	if m != nil {
		m.meter.Reached(eventID, int64(at))
	}
}

// flush writes every count pending, a write per event and second (progress.Meter.Flush:
// counts refused for throughput stay pending, others whose write failed are dropped).
func (m *progressMeter) flush(ctx context.Context) error { return m.flushOf(ctx, 0) }

// flushOf is flush; a timer's (gen, its arming) flushes only if its arming stands.
func (m *progressMeter) flushOf(ctx context.Context, gen int64) error {
	if m == nil {
		return nil // progress not counted
	}
	return m.meter.Flush(ctx, gen, &m.flusher)
}

// errCountsNotSent is a flush's write that sent nothing (the event's config could
// not be read, but for want of the event): its counts are put back for the next
// flush.
var errCountsNotSent = errors.New("the counts were not sent")

// write adds one second's counts to the node's progress item of the event, or one
// minute's to its waitlist item (writeWaitlist). Each is sent once, each attempt a
// single send: an ADD whose answer was lost is dropped, never sent again (it may
// have applied).
func (m *progressMeter) write(ctx context.Context, k progress.Second, p *progress.Counts) error {
	cfg, err := m.c.cachedEvent(ctx, k.EventID)
	switch {
	case errors.Is(err, ErrEventNotFound):
		return err // no event to count for: dropped
	case err != nil:
		return fmt.Errorf("%w: %w", errCountsNotSent, err)
	}
	shard := m.meter.Partition(progress.Shards(cfg.IndexShards))
	if k.Waitlist {
		return m.writeWaitlist(ctx, cfg, shard, k, p)
	}
	key := ProgressKey{eventID: k.EventID, shard: shard, second: k.Second}
	a := args{pEventID: k.EventID, pProgressTTL: time.Unix(k.Second, 0).Add(progressTTL).Unix()}
	for i := range progress.Slots {
		a[param(progressAttrs.Arrived[i])] = p.Arrived[i]
		a[param(progressAttrs.Reached[i])] = p.Reached[i]
	}
	for i, n := range p.Hundredths {
		a[param(progressAttrs.Hundredths[i])] = n
	}
	if err := m.c.do(ctx, txOptions{answered: true}, []write{{row: &progressRow, key: key.Key(), args: a}}); err != nil {
		return fmt.Errorf("progress of %s: %w", k.EventID, err)
	}
	return nil
}

// flushDue writes the counts pending if they are due (progress.Meter.FlushDue).
func (m *progressMeter) flushDue(ctx context.Context) error {
	if m == nil {
		return nil
	}
	return m.meter.FlushDue(ctx, m.flush)
}

// FlushDueProgress is FlushProgress when the counts this client holds are due: the
// multiple of Options.ProgressEvery after the first of them has come (readers take
// them as written by then), or no flush has written counts since the last multiple.
// A process frozen between invocations (an AWS Lambda sandbox) runs no timer:
// calling it at the end of each invocation writes an invocation's counts at once
// when the invocations come less often than ProgressEvery (a thawed timer's write of
// the counts a pause held does not count), and otherwise at the first invocation
// after each multiple: at most one write per event and second counted a multiple
// (one more after a thaw), not one a click. It writes nothing otherwise, but waits
// (for ctx at most) for a flush its timer began, since a thawed process's timer
// fires at once, so that the process is not frozen in its writes.
func (c *Client) FlushDueProgress(ctx context.Context) error {
	return c.progress.flushDue(ctx)
}

// FlushProgress writes the counts of the event's progress this client holds now,
// rather than at the next multiple of Options.ProgressEvery: the "progress counted" row, one
// UpdateItem per event and second counted (PK EVENT#<eventId>#PROGRESS#<p>, SK
// T#<unix second>, ADD a0 … a9, d0 … d9 and h00 … h99: the arrivals and the requests
// reached in each tenth of the second, and the arrivals in each hundredth; no
// condition), and the "waitlist counted" row, one UpdateItem per event and minute of
// queuedAt counted (SK W#<the minute's first second>, ADD w00 … w59, l00 … l59: the
// requests queued in each second that joined a waitlist, and that left it). Call it
// before a process that counted ends (ingest, a worker; a process that released a
// waitlisted request or swept holds), such as at the end of a Lambda invocation.
func (c *Client) FlushProgress(ctx context.Context) error {
	return c.progress.flush(ctx)
}

// readProgress reads the progress items of the event from the second since on: a
// Query of each of its progress partitions (SK ≥ T#<since>), all pages, the
// partitions at once (progress.ReadPartitions).
func (c *Client) readProgress(ctx context.Context, cfg *eventItem, since int64) (progress.Tenths, error) {
	from := ProgressKey{eventID: cfg.EventID, second: since}.Key().SK
	tenths, err := progress.ReadPartitions(ctx, progress.Shards(cfg.IndexShards), func(ctx context.Context, shard int) (progress.Tenths, error) {
		return c.readProgressPartition(ctx, progressPartition(cfg.EventID, shard), from)
	})
	if err != nil {
		return nil, fmt.Errorf("read the progress of %s: %w", cfg.EventID, err)
	}
	return tenths, nil
}

// lastProgressSK bounds the progress items of a partition: its waitlist items (W#)
// sort after them.
var lastProgressSK = ProgressKey{second: maxSeconds}.Key().SK

// readProgressPartition reads one progress partition's seconds from the sort key from on.
func (c *Client) readProgressPartition(ctx context.Context, partition, from string) (progress.Tenths, error) {
	tenths := progress.Tenths{}
	err := c.countItems(ctx, partition, from, lastProgressSK, func(head Key, counts map[string]int64) error {
		k, err := ParseProgressKey(head)
		if err == nil {
			tenths.AddItem(k.second, counts, &progressAttrs)
		}
		return err
	})
	return tenths, err
}

// countItems reads the items of a progress partition whose sort keys are from from
// to to, all pages, and gives add each one's key and its number attributes.
func (c *Client) countItems(ctx context.Context, partition, from, to string, add func(head Key, counts map[string]int64) error) error {
	key := expression.Key(attrPK).Equal(expression.Value(partition)).
		And(expression.Key(attrSK).Between(expression.Value(from), expression.Value(to)))
	expr, err := expression.NewBuilder().WithKeyCondition(key).Build()
	if err != nil {
		return err
	}
	for pages := dynamodb.NewQueryPaginator(c.db, c.query("", expr)); pages.HasMorePages(); {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, raw := range page.Items {
			var head Key
			if err := attributevalue.UnmarshalMap(raw, &head); err != nil {
				return err
			}
			if err := add(head, progress.Numbers(raw)); err != nil {
				return err
			}
		}
	}
	return nil
}

// QueueEstimate is where a request that waits in line (RECEIVED or QUEUED, of a
// FIRST_COME event) stands, estimated from the event's progress: the requests queued
// before it that no worker has finished, and the time until the workers reach it at
// the rate they finish requests now. It assumes the workers take requests in queue
// order, which a standard queue does only roughly (docs/design.md, "A place in line").
type QueueEstimate struct {
	Ahead int64
	// Wait is the time until a worker has decided it: Ahead and then its own turn,
	// at Rate; zero when Rate is zero (no worker has finished a request
	// of the event lately: the wait is unknown).
	Wait time.Duration
	// Rate is the requests the workers finished a second over the last 3 seconds
	// that the counts cover.
	Rate float64
	// AsOf is when the counts behind the estimate were read; they are complete up to
	// the nodes' last flush whose writes had landed by then (0.1 to 0.3 s before
	// it; the arrivals less Submit's puts), and the estimate carries the workers on
	// at Rate, and the arrivals at their pace, from there.
	AsOf EpochMillis

	// The estimate's parts, for the rig's diagnosis: the arrivals before the request
	// and the requests finished it took, the moment up to which the finished were
	// counted in full (unix ms), and their count then.
	arrived, done float64
	doneCut       int64
	doneCounted   float64
}

// QueueStats is an event's line as a whole, from its progress (FIRST_COME).
type QueueStats struct {
	// Depth is the requests that arrived and no worker has finished: the arrivals
	// whose counts have landed (not carried on past them, as a request's Ahead is:
	// a request queued in a burst's last moments can be told more ahead than Depth,
	// and Depth does not count arrivals that never came once a burst has ended).
	Depth int64
	// Rate is the requests the workers finish a second (over the last 3 seconds).
	Rate float64
	// DrainTime is Depth at Rate; zero when Depth is zero, and when Rate is zero
	// (the time is then unknown if Depth is not zero).
	DrainTime time.Duration
	// Series is the line second by second, from the first arrival or over the last 15
	// minutes, whichever is shorter, up to the last second whose counts are complete
	// (the nodes' last flush landed by AsOf, less Submit's puts): its depth at the
	// second's end, and the requests the workers finished in that second.
	Series []QueuePoint
	// AsOf is when the counts behind the line were read.
	AsOf EpochMillis
}

// QueuePoint is one second of an event's line.
type QueuePoint struct {
	At    EpochMillis // the second's end
	Depth int64
	Rate  float64
}

// progressTiming is what this client takes for when the nodes' counts land: its own
// period (progressEvery) and the lags it measured, taken as every node's.
func (c *Client) progressTiming() progress.Timing {
	t := progress.Timing{Every: c.progressEvery()}
	if c.progress != nil {
		t.Lag, t.WriteLag = c.progress.meter.Lags()
	}
	return t
}

// progressEvery is the period at which the nodes write their counts: this client's,
// or the default when it counts nothing.
func (c *Client) progressEvery() time.Duration {
	if every := c.opts.ProgressEvery; every > 0 {
		return every
	}
	return defaultProgressEvery
}

// queueEstimate is a request's place p in line, from v.
func queueEstimate(v *progress.View, p progress.Place) *QueueEstimate {
	return &QueueEstimate{Ahead: p.Ahead, Wait: p.Wait, Rate: p.Rate, AsOf: MillisOf(v.ReadAt()), arrived: p.Arrived, done: p.Done, doneCut: p.DoneCut, doneCounted: p.DoneCounted}
}

// queueStats sums up the event's line at now.
func (c *Client) queueStats(v *progress.View, now time.Time) QueueStats {
	l := v.Line(c.progressTiming(), now)
	st := QueueStats{Depth: l.Depth, Rate: l.Rate, DrainTime: l.DrainTime, AsOf: MillisOf(v.ReadAt())}
	if len(l.Series) > 0 {
		st.Series = make([]QueuePoint, len(l.Series))
		for i, p := range l.Series {
			st.Series[i] = QueuePoint{At: MillisOf(p.At), Depth: p.Depth, Rate: p.Rate}
		}
	}
	return st
}

// eventProgress returns the event's progress, read less than maxAge ago (at most
// ProgressCacheTTL), or, if landed is not zero, at or after landed: this client's
// copy (progress.Entry.View), or a Query of each of the event's progress partitions
// (readProgress). While one poll refreshes it the others take the view before; a
// refresh that failed is not tried again for ProgressCacheTTL (the view before
// stands meanwhile, if there is one).
func (c *Client) eventProgress(ctx context.Context, cfg *eventItem, maxAge time.Duration, landed time.Time) (*progress.View, error) {
	now := c.opts.Clock()
	return c.progressReads.Entry(cfg.EventID, now).View(ctx, now, progress.Refresh{
		MaxAge: maxAge, Landed: landed, TTL: c.opts.ProgressCacheTTL,
		Read: func(ctx context.Context, since int64) (progress.Tenths, error) {
			return c.readProgress(ctx, cfg, since)
		},
		Stale: func(ctx context.Context, err error) {
			c.opts.Logger.WarnContext(ctx, "the progress of an event could not be read; the copy read before stands", "eventId", cfg.EventID, "error", err)
		},
	})
}

// placeInLine sets r's Queue when it waits in line: RECEIVED or QUEUED, of a
// FIRST_COME event, with progress counted. A failed read of the progress leaves it
// unset: the request is still the answer. A poll that its copy would place poorly
// (progress.View.WantsFresher) reads the progress again once the nodes' last flush
// has landed, at most every progress.RefreshGap.
func (c *Client) placeInLine(ctx context.Context, r *Request) {
	if c.progress == nil || r.EventType != FirstCome || (r.Status != StatusReceived && r.Status != StatusQueued) || r.QueuedAt == 0 {
		return
	}
	cfg, err := c.cachedEvent(ctx, r.EventID)
	if err != nil {
		return
	}
	if cfg.isPrequeueEntry(r.QueuedAt) {
		c.placeInPrequeue(ctx, cfg, r)
		return
	}
	v, err := c.eventProgress(ctx, cfg, c.opts.ProgressCacheTTL, time.Time{})
	if err != nil {
		c.opts.Logger.WarnContext(ctx, "the progress of an event could not be read", "eventId", r.EventID, "error", err)
		return
	}
	now := c.opts.Clock()
	timing := c.progressTiming()
	place := v.Place(timing, int64(r.QueuedAt), now)
	r.Queue = queueEstimate(v, place)
	if v.WantsFresher(timing, place, int64(r.QueuedAt), now) {
		if v, err := c.eventProgress(ctx, cfg, progress.RefreshGap, timing.LandedAt(now)); err == nil {
			r.Queue = queueEstimate(v, v.Place(c.progressTiming(), int64(r.QueuedAt), c.opts.Clock())) // as of the answer, not of before the read
		}
	}
}

// QueueStats returns the FIRST_COME event's line as a whole from its progress: a
// Query of each of its progress partitions (the "event progress" row), or this
// client's copy of them if read less than Options.ProgressCacheTTL ago. A LOTTERY
// is ErrInvalidEvent (its entries wait for the draw, not in a line), and so is any
// event on a client that does not count progress (Options.ProgressEvery < 0).
func (c *Client) QueueStats(ctx context.Context, eventID string) (QueueStats, error) {
	cfg, err := c.cachedEvent(ctx, eventID)
	if err != nil {
		return QueueStats{}, err
	}
	switch {
	case cfg.EventType != FirstCome:
		return QueueStats{}, fmt.Errorf("%w: %s is a %s event: its entries wait for the draw, not in a line", ErrInvalidEvent, eventID, cfg.EventType)
	case c.progress == nil:
		return QueueStats{}, fmt.Errorf("%w: this client does not count progress (Options.ProgressEvery < 0)", ErrInvalidEvent)
	}
	v, err := c.eventProgress(ctx, cfg, c.opts.ProgressCacheTTL, time.Time{})
	if err != nil {
		return QueueStats{}, err
	}
	return c.queueStats(v, c.opts.Clock()), nil
}
