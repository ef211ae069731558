package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/asyncevent/asyncevent"
)

// eventView is the event page.
type eventView struct {
	Event      *asyncevent.Event
	Stats      *asyncevent.EventStats
	Cards      []card // counts
	Timing     []card // latencies and fairness
	ByStatus   []countRow
	ByResult   []countRow
	Chart      chartView
	Table      tableView
	Lottery    *lotteryView // LOTTERY only
	Holds      *holdsView   // an event with holds only
	Queue      *queueView   // FIRST_COME only: the line
	FirstCome  bool
	DrawError  string // a refused draw, shown above the draw section
	DrawStatus int
	Controls   controlsView // the operator's controls and the audit trail

	// The event's layout: IndexShards (K) partitions of its requests on GSI2 and,
	// FIRST_COME, CapacityShards (C) capacity items, each at least 1; with C > 1,
	// each shard's seats.
	IndexShards    int
	CapacityShards int
	Shards         []shardView
}

// shardView is one capacity shard of the event page.
type shardView struct {
	Shard     int
	Remaining int64
	Total     int64
	TakenPct  string // of the shard's seats, for its bar
	Tone      string // "warn" when empty
}

// card is one figure of the stats rows.
type card struct {
	ID     string // the element's id, for tests and links
	Label  string
	Value  string
	Unit   string // a small word after Value ("p50")
	Value2 string // a second figure, after Value ("p95 …")
	Unit2  string
	Note   string
	Tone   string // "good", "bad", "warn" or ""
}

// countRow is one line of a breakdown (by status, by result code).
type countRow struct {
	Label string
	Count int
	Pct   string
	Class string
}

// holdsView is the holds section of an event with holds: what became of its
// requests' holds, and where its seats are.
type holdsView struct {
	HoldFor  string
	Capacity int64
	Cards    []card    // requests: held, confirmed, released, expired, waitlisted
	Seats    []card    // the seats given back: in all, handed on, not yet
	Bar      []seatSeg // the event's seats, stacked along one bar
}

// seatSeg is one part of the seats' bar; X and W are percent of the bar.
type seatSeg struct {
	Class, Label string
	Count        int64
	X, W         string
}

// tableView is the request table: one page of ListEventRequests.
type tableView struct {
	Rows          []rowView
	Order         asyncevent.Order
	Status        asyncevent.Status
	Limit         int
	Pos           int // the position of the first row in this listing, 1-based
	End           int // the position of the last row
	StatusOptions []option
	Lottery       bool
	Holds         bool // the event has holds: a column for a HELD request's time left
	AscURL        string
	DescURL       string
	FirstURL      string
	NextURL       string // empty on the last page
	FirstPage     bool
}

type option struct {
	Value    string
	Label    string
	Selected bool
}

type rowView struct {
	Pos      int
	R        asyncevent.Request
	HoldLeft string // of a HELD request: "4m59s left", or "ran out"
}

// lotteryView is a LOTTERY event's draw section.
type lotteryView struct {
	Draw         *asyncevent.DrawRecord
	CanDraw      bool
	DrawLabel    string
	DrawOpensAt  asyncevent.EpochMillis // Client.DrawOpensAt
	NotYet       bool                   // the draw cannot run before DrawOpensAt
	Verification *checkView             // once the draw, or the pre-queue's freeze, began
	VerifyError  string
	Winners      []string // the first winners, for links
	MoreWinners  int

	// A FIRST_COME event's pre-queue, shown in the same section: its window, and once
	// served the head of the drawn order with the winners marked.
	Prequeue        bool
	PrequeueOpensAt asyncevent.EpochMillis
	StartsAt        asyncevent.EpochMillis
	Head            []headEntry
	MoreInOrder     int
}

// checkView is what a verification found, as the event page says it: Said names what
// it checked beside the seed and the entries.
type checkView struct {
	OK       bool
	Said     string
	Problems []string
}

// lateSaid tells the late arrivals a verification listed apart, and what became of
// them; "" when there are none.
func lateSaid(late []string, became string) string {
	if len(late) == 0 {
		return ""
	}
	return fmt.Sprintf("; %d requests reached the table after the entries were recorded, absent from the record (%s)", len(late), became)
}

// headEntry is one entry of a pre-queue's drawn order, as the event page lists it.
type headEntry struct {
	Place     int
	RequestID string
	Won       bool
}

// maxWinnersShown bounds the winners listed on the event page.
const maxWinnersShown = 20

// event is GET /admin/ui/events/{eventId}?order=&status=&limit=&cursor=&pos=.
func (u *adminUI) event(w http.ResponseWriter, r *http.Request, sess *uiSession) error {
	eventID, err := pathID(r, "eventId")
	if err != nil {
		return err
	}
	q, err := query(r)
	if err != nil {
		return err
	}
	return u.renderEvent(w, r, sess, eventID, q, http.StatusOK, eventNotice{})
}

// eventNotice is what a refused form posted to the event page says: a draw's or a
// control's refusal, shown beside its form.
type eventNotice struct {
	Draw, Control string
}

// renderEvent reads everything the event page shows and renders it with status and
// the notice of a refused form.
func (u *adminUI) renderEvent(w http.ResponseWriter, r *http.Request, sess *uiSession, eventID string, q url.Values, status int, notice eventNotice) error {
	ctx := r.Context()
	opts, pos, err := tableQuery(q)
	if err != nil {
		return err
	}
	ev, err := u.client.GetEvent(ctx, eventID)
	if err != nil {
		return err
	}
	stats, err := u.client.EventStats(ctx, eventID)
	if err != nil {
		return err
	}
	list, err := u.client.ListEventRequests(ctx, eventID, opts)
	if err != nil {
		return err
	}
	chart, err := u.outcomeChart(ctx, ev, stats)
	if err != nil {
		return err
	}

	v := eventView{
		Event:      ev,
		Stats:      stats,
		Chart:      chart,
		FirstCome:  ev.EventType == asyncevent.FirstCome,
		DrawError:  notice.Draw,
		DrawStatus: status,

		IndexShards: max(ev.IndexShards, 1),
	}
	if v.FirstCome {
		v.CapacityShards = max(ev.CapacityShards, 1)
		v.Queue = queueOf(stats)
	}
	if v.CapacityShards > 1 {
		c, err := u.client.GetCapacity(ctx, eventID)
		if err != nil {
			return err
		}
		v.Shards = shardsOf(c)
	}
	if ev.EventType == asyncevent.Lottery {
		lv, err := u.lottery(r, ev)
		if err != nil {
			return err
		}
		v.Lottery = lv
	}
	if ev.EventType == asyncevent.FirstCome && ev.PrequeueOpensAt != 0 {
		lv, err := u.prequeue(r, ev)
		if err != nil {
			return err
		}
		v.Lottery = lv
	}
	if v.Controls, err = u.controlsOf(ctx, ev, notice.Control); err != nil {
		return err
	}
	v.Cards, v.Timing = eventCards(ev, stats, v.Lottery)
	v.Holds = holdsOf(stats)
	v.ByStatus, v.ByResult = breakdowns(stats)
	v.Table = tableOf(ev, stats, list, opts, pos, u.now())
	title := ev.EventID
	if ev.Name != "" {
		title = ev.Name
	}
	u.render(w, r, status, "event", page{Title: title, Session: sess, Data: v})
	return nil
}

// tableQuery reads the request table's page from the event page's query
// (order=&status=&limit=&cursor=&pos=): the listing's options and the position of
// its first row.
func tableQuery(q url.Values) (opts asyncevent.EventListOptions, pos int, err error) {
	limit, err := queryInt(q, "limit")
	if err != nil {
		return opts, 0, err
	}
	if limit == 0 {
		limit = defaultPageSize
	}
	if pos, err = queryInt(q, "pos"); err != nil {
		return opts, 0, err
	}
	opts = eventListOptions(q, limit)
	if opts.Order != asyncevent.Ascending && opts.Order != asyncevent.Descending {
		return opts, 0, newHTTPError(http.StatusBadRequest, CodeInvalidParameter, "order must be asc or desc")
	}
	if opts.Status != "" && !opts.Status.Valid() {
		return opts, 0, newHTTPError(http.StatusBadRequest, CodeInvalidParameter, "status "+strconv.Quote(truncate(string(opts.Status), 40))+" is not a request status")
	}
	return opts, max(pos, 1), nil
}

// shardsOf lists the capacity shards of c, in shard order.
func shardsOf(c *asyncevent.EventCapacity) []shardView {
	var out []shardView
	for i, s := range c.Shards {
		sv := shardView{Shard: i, Remaining: s.CapacityRemaining, Total: s.CapacityTotal, TakenPct: "0"}
		if s.CapacityTotal > 0 {
			sv.TakenPct = strconv.FormatFloat(100*float64(s.CapacityTotal-s.CapacityRemaining)/float64(s.CapacityTotal), 'f', 1, 64)
		}
		if s.CapacityRemaining == 0 {
			sv.Tone = "warn"
		}
		out = append(out, sv)
	}
	return out
}

// lottery reads the draw record and, once the draw has started, verifies it.
func (u *adminUI) lottery(r *http.Request, ev *asyncevent.Event) (*lotteryView, error) {
	d, err := u.client.GetDraw(r.Context(), ev.EventID)
	if err != nil {
		return nil, err
	}
	opens, _ := u.client.DrawOpensAt(ev)
	lv := &lotteryView{Draw: d, DrawOpensAt: opens}
	switch d.Phase {
	case asyncevent.PhaseCollecting, "":
		lv.CanDraw, lv.DrawLabel = true, "Run the draw"
		lv.NotYet = asyncevent.MillisOf(u.now()) < lv.DrawOpensAt
		return lv, nil
	case asyncevent.PhaseDrawing:
		lv.CanDraw, lv.DrawLabel = true, "Resume the draw"
	}
	ver, err := u.client.VerifyDraw(r.Context(), ev.EventID)
	if err != nil {
		p, _, internal := problemFor(err)
		if internal {
			return nil, err
		}
		lv.VerifyError = p.Detail
		return lv, nil
	}
	lv.Verification = &checkView{OK: ver.OK(), Problems: ver.Problems,
		Said: fmt.Sprintf("the %d winners recomputed from the seed are exactly the requests marked SUCCEEDED%s", len(ver.Winners), lateSaid(ver.Late, "REJECTED_NOT_DRAWN"))}
	lv.Winners = ver.Winners
	if len(lv.Winners) > maxWinnersShown {
		lv.Winners, lv.MoreWinners = lv.Winners[:maxWinnersShown], len(ver.Winners)-maxWinnersShown
	}
	return lv, nil
}

// prequeue reads a FIRST_COME event's pre-queue (its Draw record) and, once its
// entries are frozen, verifies it and lists the head of its drawn order.
func (u *adminUI) prequeue(r *http.Request, ev *asyncevent.Event) (*lotteryView, error) {
	d, err := u.client.GetDraw(r.Context(), ev.EventID)
	if err != nil {
		return nil, err
	}
	opens, _ := u.client.DrawOpensAt(ev)
	lv := &lotteryView{Draw: d, Prequeue: true, PrequeueOpensAt: ev.PrequeueOpensAt, StartsAt: ev.StartsAt, DrawOpensAt: opens}
	switch d.Phase {
	case asyncevent.PhaseCollecting, "":
		lv.CanDraw, lv.DrawLabel = true, "Serve the pre-queue"
		lv.NotYet = asyncevent.MillisOf(u.now()) < lv.DrawOpensAt
		return lv, nil
	case asyncevent.PhaseDrawing:
		lv.CanDraw, lv.DrawLabel = true, "Resume serving the pre-queue"
	}
	ver, err := u.client.VerifyPrequeue(r.Context(), ev.EventID)
	if err != nil {
		p, _, internal := problemFor(err)
		if internal {
			return nil, err
		}
		lv.VerifyError = p.Detail
		return lv, nil
	}
	lv.Verification = &checkView{OK: ver.OK(), Problems: ver.Problems,
		Said: fmt.Sprintf("the %d winners are the first entries of the order recomputed from the seed, and no click of the sale won while an entry was refused%s", len(ver.Winners), lateSaid(ver.Late, "in the sale's line after the drawn order"))}
	won := map[string]bool{}
	for _, id := range ver.Winners {
		won[id] = true
	}
	for i, id := range ver.Order {
		if i == maxWinnersShown {
			lv.MoreInOrder = len(ver.Order) - i
			break
		}
		lv.Head = append(lv.Head, headEntry{Place: i + 1, RequestID: id, Won: won[id]})
	}
	return lv, nil
}

// eventCards are the stats rows: the counts, then the latencies and fairness.
func eventCards(ev *asyncevent.Event, s *asyncevent.EventStats, lv *lotteryView) (counts, timing []card) {
	inFlight := s.ByStatus[asyncevent.StatusReceived] + s.ByStatus[asyncevent.StatusQueued] + s.ByStatus[asyncevent.StatusProcessing]
	n := strconv.Itoa
	cards := []card{
		{ID: "stat-requests", Label: "Requests", Value: n(s.Requests), Note: "in queue order (GSI2)"},
		{ID: "stat-succeeded", Label: "Succeeded", Value: n(s.ByStatus[asyncevent.StatusSucceeded]), Tone: "good"},
		{ID: "stat-rejected", Label: "Rejected", Value: n(s.ByStatus[asyncevent.StatusRejected]), Tone: "warn"},
		{ID: "stat-failed", Label: "Failed", Value: n(s.ByStatus[asyncevent.StatusFailedFinal]), Tone: "bad"},
		{ID: "stat-inflight", Label: "Waiting", Value: n(inFlight), Note: "received, queued or processing"},
	}
	for i := 1; i < 4; i++ {
		if s.Requests > 0 {
			cards[i].Note = pctOf(cards[i].Value, s.Requests) + " of requests"
		}
	}
	switch ev.EventType {
	case asyncevent.FirstCome:
		cards = append(cards, capacityCard(s))
	case asyncevent.Lottery:
		c := card{ID: "stat-winners", Label: "Winners", Value: n(int(ev.WinnerCount)), Note: "to draw; phase " + string(ev.Phase)}
		if lv != nil && lv.Draw.DrawnAt != 0 {
			c.Note = "drawn among " + n(int(lv.Draw.EntryCount)) + " entries"
		}
		cards = append(cards, c)
	}
	timing = []card{
		durationCard("stat-queue-wait", "Queue wait", s.QueueWait, "queuedAt → startedAt"),
		durationCard("stat-processing", "Processing", s.Processing, "startedAt → finishedAt"),
	}
	if ev.EventType == asyncevent.FirstCome {
		c := card{ID: "stat-inversions", Label: "Fairness inversions", Value: n(s.Fairness.Inversions), Tone: "good",
			Note: "no request lost its seat to one queued after it"}
		if s.Fairness.Inversions > 0 {
			c.Tone, c.Note = "warn", "rejected while a later request won; max gap "+fmtDuration(s.Fairness.MaxGap)+" in queue time"
		}
		late := card{ID: "stat-late-winners", Label: "Late winners", Value: n(s.Fairness.LateWinners), Tone: "good",
			Note: "no request won while one queued before it lost"}
		if s.Fairness.LateWinners > 0 {
			late.Tone, late.Note = "warn", "won while an earlier request lost; up to "+fmtDuration(s.Fairness.LateWinnerMaxGap)+" later in queue time"
		}
		if s.Fairness.Late > 0 {
			late.Note += "; " + n(s.Fairness.Late) + " REJECTED_LATE, in neither count"
		}
		timing = append(timing, c, late)
	}
	return cards, timing
}

// capacityCard is a FIRST_COME event's seats left of its capacity: those its
// capacity shards hold and those on its pool (seats added once the shards were
// empty, or given back).
func capacityCard(s *asyncevent.EventStats) card {
	left := s.CapacityRemaining + s.PoolRemaining
	c := card{ID: "stat-capacity", Label: "Capacity left", Value: strconv.FormatInt(left, 10) + " / " + strconv.FormatInt(s.CapacityTotal, 10)}
	if s.CapacityTotal > 0 {
		c.Note = strconv.FormatFloat(100*float64(s.CapacityTotal-left)/float64(s.CapacityTotal), 'f', 0, 64) + "% of the seats taken"
	}
	if s.PoolRemaining > 0 {
		c.Note += "; " + strconv.FormatInt(s.PoolRemaining, 10) + " on the pool, added or given back"
	}
	if left == 0 {
		c.Tone = "warn"
	}
	return c
}

// holdsOf is the holds section of an event with holds; nil without holds.
func holdsOf(s *asyncevent.EventStats) *holdsView {
	h := s.Holds
	if h == nil {
		return nil
	}
	n := strconv.Itoa
	n64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	v := &holdsView{
		HoldFor:  fmtDuration(h.HoldFor),
		Capacity: s.CapacityTotal,
		Cards: []card{
			{ID: "stat-held", Label: "Held", Value: n(h.Held), Note: "a seat each, until paid for or run out"},
			{ID: "stat-confirmed", Label: "Confirmed", Value: n(h.Confirmed), Tone: "good", Note: "paid: SUCCEEDED"},
			{ID: "stat-released", Label: "Released", Value: n(h.Released), Tone: "warn", Note: "gave up a hold or the waitlist"},
			{ID: "stat-expired", Label: "Expired", Value: n(h.Expired), Tone: "warn", Note: "the hold ran out unpaid"},
			{ID: "stat-waitlisted", Label: "Waitlisted", Value: n(h.Waitlisted), Note: "waiting for a seat given back"},
		},
		Seats: []card{
			{ID: "stat-seats-returned", Label: "Seats given back", Value: n64(h.SeatsReturned), Note: "by released and expired holds"},
			{ID: "stat-seats-served", Label: "Handed on", Value: n64(h.SeatsServed), Note: "to the earliest waitlisted"},
			{ID: "stat-seats-waiting", Label: "Not handed on", Value: n64(h.SeatsWaiting), Note: "no one waitlisted, or the sweep is to come"},
		},
	}
	if h.SeatsWaiting > 0 {
		v.Seats[2].Tone = "warn"
	}
	// The seats add up to the capacity (docs/design.md, "Holds and the waitlist"):
	// the rest is claimed and being bound. The stats are read at different moments,
	// so a bar whose parts overshoot is scaled to them.
	parts := []seatSeg{
		{Class: "success", Label: "confirmed", Count: int64(h.Confirmed)},
		{Class: "held", Label: "held", Count: int64(h.Held)},
		{Class: "released", Label: "given back, not handed on", Count: h.SeatsWaiting},
		{Class: "left", Label: "left on the capacity shards", Count: s.CapacityRemaining},
	}
	var sum int64
	for _, p := range parts {
		sum += p.Count
	}
	if rest := s.CapacityTotal - sum; rest > 0 {
		parts = append(parts, seatSeg{Class: "processing", Label: "claimed, being bound", Count: rest})
		sum += rest
	}
	x := 0.0
	for _, p := range parts {
		if p.Count == 0 || sum == 0 {
			continue
		}
		w := 100 * float64(p.Count) / float64(sum)
		p.X, p.W = f1(x), f1(w)
		x += w
		v.Bar = append(v.Bar, p)
	}
	return v
}

func durationCard(id, label string, d asyncevent.Durations, span string) card {
	if d.Count == 0 {
		return card{ID: id, Label: label, Value: "—", Note: span + ": none yet"}
	}
	return card{ID: id, Label: label, Value: fmtDuration(d.P50), Unit: "p50", Value2: fmtDuration(d.P95), Unit2: "p95",
		Note: span + "; max " + fmtDuration(d.Max) + " over " + strconv.Itoa(d.Count) + " requests"}
}

func pctOf(count string, total int) string {
	c, _ := strconv.Atoi(count)
	return strconv.FormatFloat(100*float64(c)/float64(total), 'f', 0, 64) + "%"
}

// statusOrder and resultOrder fix the order of the breakdowns.
var (
	statusOrder = []asyncevent.Status{
		asyncevent.StatusReceived, asyncevent.StatusQueued, asyncevent.StatusProcessing,
		asyncevent.StatusHeld, asyncevent.StatusWaitlisted,
		asyncevent.StatusSucceeded, asyncevent.StatusRejected, asyncevent.StatusFailedFinal,
	}
	resultOrder = []asyncevent.ResultCode{
		asyncevent.ResultSuccess, asyncevent.ResultReleased, asyncevent.ResultHoldExpired, asyncevent.ResultCancelled,
		asyncevent.ResultRejectedCapacity, asyncevent.ResultLotteryLose, asyncevent.ResultNotDrawn, asyncevent.ResultLate,
		asyncevent.ResultRejectedClosed, asyncevent.ResultRejectedDuplicate, asyncevent.ResultFailedIngestEnqueue,
		asyncevent.ResultFailedWorker, asyncevent.ResultFailedValidation, asyncevent.ResultFailedSerde,
	}
)

func breakdowns(s *asyncevent.EventStats) (byStatus, byResult []countRow) {
	p := func(n int) string {
		if s.Requests == 0 {
			return "0"
		}
		return strconv.FormatFloat(100*float64(n)/float64(s.Requests), 'f', 1, 64)
	}
	for _, st := range statusOrder {
		if c := s.ByStatus[st]; c > 0 {
			byStatus = append(byStatus, countRow{Label: string(st), Count: c, Pct: p(c), Class: outcomeOf(st)})
		}
	}
	seen := map[asyncevent.ResultCode]bool{}
	add := func(rc asyncevent.ResultCode) {
		if c := s.ByResultCode[rc]; c > 0 && !seen[rc] {
			seen[rc] = true
			byResult = append(byResult, countRow{Label: string(rc), Count: c, Pct: p(c), Class: outcomeOfResult(rc)})
		}
	}
	for _, rc := range resultOrder {
		add(rc)
	}
	for rc := range s.ByResultCode { // codes this page does not know yet, at the end
		add(rc)
	}
	return byStatus, byResult
}

// tableOf builds the request table of one page at now.
func tableOf(ev *asyncevent.Event, s *asyncevent.EventStats, list *asyncevent.RequestPage, opts asyncevent.EventListOptions, pos int, now time.Time) tableView {
	t := tableView{
		Order:     opts.Order,
		Status:    opts.Status,
		Limit:     opts.Limit,
		Pos:       pos,
		Lottery:   ev.EventType == asyncevent.Lottery,
		Holds:     s.Holds != nil,
		FirstPage: opts.Cursor == "",
	}
	for i := range list.Requests {
		row := rowView{Pos: pos + i, R: list.Requests[i]}
		if row.R.Status == asyncevent.StatusHeld {
			row.HoldLeft = fmtHoldLeft(&row.R, now)
		}
		t.Rows = append(t.Rows, row)
	}
	t.End = pos + len(list.Requests) - 1
	t.StatusOptions = append(t.StatusOptions, option{Value: "", Label: "all statuses (" + strconv.Itoa(s.Requests) + ")", Selected: opts.Status == ""})
	for _, st := range statusOrder {
		if (st == asyncevent.StatusHeld || st == asyncevent.StatusWaitlisted) && !t.Holds && s.ByStatus[st] == 0 && opts.Status != st {
			continue // an event without holds has none
		}
		t.StatusOptions = append(t.StatusOptions, option{
			Value:    string(st),
			Label:    string(st) + " (" + strconv.Itoa(s.ByStatus[st]) + ")",
			Selected: opts.Status == st,
		})
	}
	base := func(order asyncevent.Order) url.Values {
		v := url.Values{}
		if order != asyncevent.Ascending {
			v.Set("order", string(order))
		}
		if opts.Status != "" {
			v.Set("status", string(opts.Status))
		}
		if opts.Limit != defaultPageSize {
			v.Set("limit", strconv.Itoa(opts.Limit))
		}
		return v
	}
	withQuery := func(v url.Values) string {
		if len(v) == 0 {
			return eventURL(ev.EventID)
		}
		return eventURL(ev.EventID) + "?" + v.Encode()
	}
	t.AscURL = withQuery(base(asyncevent.Ascending))
	t.DescURL = withQuery(base(asyncevent.Descending))
	t.FirstURL = withQuery(base(opts.Order))
	if list.NextCursor != "" {
		v := base(opts.Order)
		v.Set("cursor", list.NextCursor)
		v.Set("pos", strconv.Itoa(pos+len(list.Requests)))
		t.NextURL = withQuery(v)
	}
	return t
}

// fmtHoldLeft is the time left at now on a HELD request's hold: "4m59s left", or
// "ran out" (the hold sweep is to end it).
func fmtHoldLeft(r *asyncevent.Request, now time.Time) string {
	switch left := holdLeft(r, now).Truncate(time.Second); {
	case left <= 0:
		return "ran out"
	case left < time.Minute:
		return strconv.Itoa(int(left.Seconds())) + " s left"
	default:
		return fmtDuration(left) + " left"
	}
}

// requestPageView is the request page.
type requestPageView struct {
	R           *asyncevent.Request
	Event       *asyncevent.Event // nil if it cannot be read
	Steps       []stepView
	Logs        []logRow
	LogsEnabled bool
	Lease       string
	// IdempotencyKey is the PK of the request's lock, built from its IDs.
	IdempotencyKey string
	HoldLeft       string     // of a HELD request
	Place          *placeView // of a request waiting in line

	// CanCancel is whether an operator may take the request's seat back: a
	// SUCCEEDED FIRST_COME request. CancelError is a refused cancel's reason.
	CanCancel   bool
	CancelError string
}

// stepView is one step of a request's life, with the time it took to get there
// from the step before.
type stepView struct {
	Label string
	At    asyncevent.EpochMillis
	Gap   string // from the previous step: "12 ms"; "" for the first
	Span  string // what the gap is: "ingest", "queue wait", "processing"
}

type logRow struct {
	L     asyncevent.StatusLog
	Since string // from the previous entry
}

// request is GET /admin/ui/requests/{requestId}.
func (u *adminUI) request(w http.ResponseWriter, r *http.Request, sess *uiSession) error {
	requestID, err := pathID(r, "requestId")
	if err != nil {
		return err
	}
	return u.renderRequest(w, r, sess, requestID, http.StatusOK, "")
}

// renderRequest reads everything the request page shows and renders it with status
// and the reason of a refused cancel, if any.
func (u *adminUI) renderRequest(w http.ResponseWriter, r *http.Request, sess *uiSession, requestID string, status int, refusal string) error {
	req, err := u.srv.readRequest(r.Context(), requestID)
	if err != nil {
		return err
	}
	logs, err := u.client.ListStatusLogs(r.Context(), requestID)
	if err != nil {
		return err
	}
	v := requestPageView{R: req, LogsEnabled: len(logs) > 0, Steps: stepsOf(req), Logs: logRowsOf(logs), CancelError: refusal, Place: placeOf(req.Queue)}
	if ev, err := u.client.GetEvent(r.Context(), req.EventID); err == nil {
		v.Event = ev
	} else if !errors.Is(err, asyncevent.ErrEventNotFound) && !errors.Is(err, asyncevent.ErrNotFound) {
		return err
	}
	if lock, err := asyncevent.NewLockKey(req.EventID, req.UserID); err == nil { // the IDs of a stored request
		v.IdempotencyKey = lock.IdempotencyKey()
	}
	if l := req.Lease; l != nil { // set while PROCESSING: a finished request's lease is history
		v.Lease = l.Owner + " until " + fmtTime(l.ExpiresAt)
		if l.ExpiresAt != 0 && l.ExpiresAt.Time().Before(u.now()) {
			v.Lease += " (expired)"
		}
	}
	if req.Status == asyncevent.StatusHeld {
		v.HoldLeft = fmtHoldLeft(req, u.now())
	}
	v.CanCancel = req.EventType == asyncevent.FirstCome && req.Status == asyncevent.StatusSucceeded
	u.render(w, r, status, "request", page{Title: "Request " + req.RequestID, Session: sess, Data: v})
	return nil
}

// stepsOf are the steps of req's life, each with the time from the one before.
func stepsOf(req *asyncevent.Request) []stepView {
	steps := []stepView{
		{Label: "requested", At: req.RequestedAt},
		{Label: "queued", At: req.QueuedAt, Span: "ingest"},
		{Label: "started", At: req.StartedAt, Span: "queue wait"},
		{Label: "finished", At: req.FinishedAt, Span: "processing"},
	}
	if req.EventType == asyncevent.Lottery && req.StartedAt == 0 && req.FinishedAt != 0 {
		// A lottery entry is finalised by the draw, not by a worker's start.
		steps[3].Span = "until the draw"
	}
	prev := asyncevent.EpochMillis(0)
	for i := range steps {
		if i > 0 && steps[i].At != 0 && prev != 0 {
			steps[i].Gap = between(prev, steps[i].At)
		}
		if steps[i].At != 0 {
			prev = steps[i].At
		}
	}
	return steps
}

// logRowsOf are the status log's rows, each with the time since the one before.
func logRowsOf(logs []asyncevent.StatusLog) []logRow {
	var rows []logRow
	for i, l := range logs {
		row := logRow{L: l}
		if i > 0 {
			row.Since = "+" + between(logs[i-1].OccurredAt, l.OccurredAt)
		}
		rows = append(rows, row)
	}
	return rows
}
