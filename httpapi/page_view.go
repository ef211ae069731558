package httpapi

import (
	"encoding/hex"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/text/language"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/draw"
)

// pageView is what page.html shows: one state of a request in words.
type pageView struct {
	Lang  string
	T     map[string]string
	Nonce string // the inline style's
	Style string // the service's stylesheet
	// State names the state for the stylesheet (class "state-<State>"): waiting,
	// prequeue, held, waitlisted, won, lost, failed, entered, plain.
	State   string
	Heading string
	// Live is the page's first sentence, in a polite live region: a screen reader
	// is told it when it changes (the place, why it moved back, a new state).
	Live      string
	Lines     []string
	Countdown *countdown // the time left, counted down by the page's script
	Progress  *progress  // how far the line has moved since the page was opened
	Confirm   string     // the service's payment link of a HELD request
	Release   *release   // the Release form of a HELD or WAITLISTED request
	Verify    *verify    // a finished draw's proof, for the user to recompute
	// Refresh is the seconds until the script asks for the page again (the
	// API's Retry-After); 0: never. Reload is the no-script page's: the same, but
	// at least noScriptRefresh.
	Refresh, Reload int
	// Next is the URL asked for then: the page, with what it showed (seen).
	Next string
	// Paused is a page whose updates the user stopped (seen.paused): it does not
	// reload itself; Pause is the link that stops them.
	Paused    bool
	Pause     string
	Script    string // the page's script
	SignIn    string // the service's sign-in page, on the page of a caller without identity
	RequestID string // the request's number, for the organiser; "" on a plain page
}

// noScriptRefresh is the shortest reload of a page without script: a reload
// starts a screen reader over from the top, so it comes no more often than this,
// whatever the API's pace.
const noScriptRefresh = 10

// updating makes v a page that updates itself every refresh seconds, unless the
// user paused it, with the link that pauses it.
func (v *pageView) updating(refresh int, paused bool) {
	v.Refresh, v.Reload, v.Paused = refresh, max(refresh, noScriptRefresh), paused
	v.Pause = v.Next + "?pause=1"
	if strings.Contains(v.Next, "?") {
		v.Pause = v.Next + "&pause=1"
	}
}

// countdown is a time left that the page's script counts down from Ms, the
// milliseconds left when the server answered: it follows the server's clock, not
// the browser's. Text holds {left}; Units are the minutes' and seconds' units.
type countdown struct {
	Ms          int64
	Text, Shown string
	Units       string // "min|s"
}

// progress is the part of the line served since the page was opened: Done of Of.
type progress struct {
	Done, Of int64
	Label    string
}

// seen is what the page showed before, carried in its URL (the script's fetch and
// the no-script reload ask for Next): the place when it was opened (first), the
// best place it has shown (low), and whether the user paused its updates. A value
// that does not parse is not there.
type seen struct {
	first, low int64 // -1: not shown
	paused     bool
}

// seenOf reads a page URL's query.
func seenOf(q url.Values) seen {
	num := func(name string) int64 {
		n, err := strconv.ParseInt(q.Get(name), 10, 64)
		if err != nil || n < 0 {
			return -1
		}
		return n
	}
	return seen{first: num("first"), low: num("low"), paused: q.Get("pause") == "1"}
}

// place sets v's place, ahead (in line, or on the waitlist): its sentence (keyed
// by key, or key+"First" when none is ahead), a progress bar from the place first
// shown, and, while the place is further back than the best one shown, why; and
// the next URL, carrying both. Ahead is an estimate from counts that land late and
// a rate that may change: it may go back, and the page says so rather than let a
// place jump back unexplained.
func (v *pageView) place(s seen, key string, ahead int64, withProgress bool) {
	first, low := max(s.first, ahead), ahead
	if s.low >= 0 {
		low = min(s.low, ahead)
	}
	v.Live = fill(v.T[key], "ahead", strconv.FormatInt(ahead, 10))
	if ahead == 0 {
		v.Live = v.T[key+"First"]
	}
	if ahead > low {
		v.Live = strings.TrimSuffix(v.Live, ".") + fill(v.T["page.back"], "low", strconv.FormatInt(low, 10))
		v.Lines = append(v.Lines, v.T["page.backWhy"])
	}
	if withProgress && first > 0 {
		v.Progress = &progress{Done: first - ahead, Of: first,
			Label: fill(v.T["waiting.progress"], "done", strconv.FormatInt(first-ahead, 10), "first", strconv.FormatInt(first, 10))}
	}
	v.Next += "?first=" + strconv.FormatInt(first, 10) + "&low=" + strconv.FormatInt(low, 10)
}

// carry passes on what an earlier page showed when this one shows no place (its
// place could not be read this time, or its turn came): the next place is still
// measured against it.
func (v *pageView) carry(s seen) {
	if strings.Contains(v.Next, "?") || s.first < 0 || s.low < 0 {
		return
	}
	v.Next += "?first=" + strconv.FormatInt(s.first, 10) + "&low=" + strconv.FormatInt(s.low, 10)
}

// release is the Release form.
type release struct {
	Action, Label, Token, Field string
	// Warning and Confirm are the second step: what giving up means, and the
	// button that does it (WCAG 3.3.4: a choice that cannot be undone is confirmed).
	Warning, Confirm string
}

// verify is what a user needs to recompute their place or their lottery result by
// hand (docs/design.md, "Lottery"): the commitment published before the draw, the
// seed revealed by it, the hash of the entries it froze, and their own score,
// SHA-256(seed ‖ entriesHash ‖ requestId).
type verify struct {
	Commitment, Seed, EntriesHash, Score, RequestID string
	Entries                                         int64
}

// view is req's state at now in lang's words, after s.
func (p *requestPage) view(lang string, req *asyncevent.Request, now time.Time, s seen) *pageView {
	t := p.textsOf(lang)
	v := &pageView{Lang: lang, T: t, Style: p.style, RequestID: req.RequestID, Script: p.script,
		Next: "/requests/" + url.PathEscape(req.RequestID) + pagePath}
	say := func(key string, args ...any) string { return fill(t[key], args...) }
	until := func(key string, at asyncevent.EpochMillis) {
		left := max(at.Time().Sub(now), 0)
		v.Countdown = &countdown{Ms: left.Milliseconds(), Text: t[key], Shown: say(key, "left", duration(lang, left)), Units: units[lang][0] + "|" + units[lang][1]}
	}
	releaseForm := func(key string) {
		v.Release = &release{Action: "/requests/" + url.PathEscape(req.RequestID) + pagePath + "/release", Label: t[key], Field: releaseField,
			Warning: t[key+"Warning"], Confirm: t[key+"Confirm"]}
	}
	switch {
	case req.Status == asyncevent.StatusHeld && !req.HoldExpiresAt.Time().After(now):
		// Run out, and not yet ended by the hold sweep: nothing left to pay for.
		v.State, v.Heading, v.Live = "held", t["held.ranOut"], t["held.ranOutBody"]
	case req.Status == asyncevent.StatusHeld:
		v.State, v.Heading = "held", t["held.title"]
		v.Live = say("held.until", "until", p.clock(req.HoldExpiresAt))
		until("held.left", req.HoldExpiresAt)
		v.Lines = []string{t["held.next"]}
		v.Confirm = confirmURL(p.confirm, req.RequestID)
		releaseForm("held.release")
	case req.Status == asyncevent.StatusWaitlisted && req.Waitlist != nil && req.Waitlist.EndsAt != 0 && !req.Waitlist.EndsAt.Time().After(now):
		// Ended, and not yet refused by the hold sweep: nothing left to wait for.
		v.State, v.Heading, v.Live = "lost", t["lost.soldOut.title"], t["waitlisted.ended"]
	case req.Status == asyncevent.StatusWaitlisted:
		v.State, v.Heading = "waitlisted", t["waitlisted.title"]
		if w := req.Waitlist; w != nil {
			v.place(s, "waitlisted.ahead", w.Ahead, false)
			if w.EndsAt != 0 {
				v.Lines = append(v.Lines, say("waitlisted.ends", "until", p.clock(w.EndsAt)))
			}
		}
		v.Lines = append(v.Lines, t["waitlisted.next"])
		releaseForm("waitlisted.release")
	case req.Status.IsTerminal():
		outcome(v, req)
	case req.EventType == asyncevent.Lottery:
		v.State, v.Heading = "entered", t["entered.title"]
		if req.LotteryCutoffAt != 0 && req.LotteryCutoffAt.Time().After(now) {
			v.Live = say("entered.draw", "at", p.clock(req.LotteryCutoffAt))
			until("entered.left", req.LotteryCutoffAt)
		} else {
			v.Live = t["entered.drawing"]
		}
	case req.Prequeue != nil:
		v.State = "prequeue"
		pq := req.Prequeue
		switch {
		case !pq.Frozen:
			v.Heading, v.Live = t["prequeue.title"], t["prequeue.drawn"]
			if pq.StartsAt.Time().After(now) {
				v.Lines = []string{say("prequeue.start", "at", p.clock(pq.StartsAt))}
				until("prequeue.left", pq.StartsAt)
			}
			v.Lines = append(v.Lines, say("prequeue.seats", "seats", strconv.FormatInt(pq.Seats, 10)))
		case pq.Late:
			v.Heading, v.Live = t["prequeue.lateTitle"], t["prequeue.late"]
		default:
			v.Heading = t["prequeue.placeTitle"]
			v.Live = say("prequeue.place", "place", strconv.FormatInt(pq.Place, 10), "entries", strconv.FormatInt(pq.Entries, 10))
			v.Lines = []string{say("prequeue.seats", "seats", strconv.FormatInt(pq.Seats, 10))}
		}
	default: // first come, in line
		v.State, v.Heading = "waiting", t["waiting.title"]
		switch q := req.Queue; {
		case req.Status == asyncevent.StatusProcessing:
			v.Live = t["waiting.turn"] // its turn has come: no place to show
		case q == nil:
			v.Live = t["waiting.title"] // no place could be read
		default:
			v.place(s, "waiting.ahead", q.Ahead, true)
			if q.Rate > 0 {
				v.Lines = append(v.Lines, say("waiting.wait", "wait", duration(lang, q.Wait)))
			}
		}
		v.Lines = append(v.Lines, t["waiting.next"])
	}
	if v.Live == "" && len(v.Lines) > 0 {
		v.Live, v.Lines = v.Lines[0], v.Lines[1:]
	}
	v.carry(s)
	if pq := req.Prequeue; pq != nil && pq.Frozen && pq.Place > 0 && v.State != "prequeue" {
		// A decided entry: the place in the drawn order its result came from.
		v.Lines = append(v.Lines, say("prequeue.place", "place", strconv.FormatInt(pq.Place, 10), "entries", strconv.FormatInt(pq.Entries, 10)))
	}
	return v
}

// confirmURL is the service's payment link of requestID: its "{requestId}" replaced
// by the ID, escaped for where it stands (a path, or the query after "?").
func confirmURL(template, requestID string) string {
	path, query, hasQuery := strings.Cut(template, "?")
	path = strings.ReplaceAll(path, "{requestId}", url.PathEscape(requestID))
	if !hasQuery {
		return path
	}
	return path + "?" + strings.ReplaceAll(query, "{requestId}", url.QueryEscape(requestID))
}

// outcome fills v with a final request's result in plain words.
func outcome(v *pageView, req *asyncevent.Request) {
	t := v.T
	switch {
	case req.Status == asyncevent.StatusFailedFinal && req.ResultCode == asyncevent.ResultFailedIngestEnqueue:
		v.State, v.Heading, v.Lines = "failed", t["failed.again.title"], []string{t["failed.again.body"]}
	case req.Status == asyncevent.StatusFailedFinal:
		v.State, v.Heading, v.Lines = "failed", t["failed.ours.title"], []string{t["failed.ours.body"]}
	case req.ResultCode == asyncevent.ResultSuccess && req.EventType == asyncevent.Lottery:
		v.State, v.Heading, v.Lines = "won", t["won.lottery.title"], []string{t["won.lottery.body"]}
	case req.ResultCode == asyncevent.ResultSuccess:
		v.State, v.Heading, v.Lines = "won", t["won.seat.title"], []string{t["won.seat.body"]}
	default:
		key, ok := lostKeys[req.ResultCode]
		switch {
		case !ok:
			key = "lost.soldOut"
		case req.ResultCode == asyncevent.ResultReleased && req.HoldExpiresAt == 0:
			key = "lost.left" // it left the waitlist, holding no seat
		}
		v.State, v.Heading, v.Lines = "lost", t[key+".title"], []string{t[key+".body"]}
	}
}

// lostKeys are the texts of a request refused, by its result code; any other is
// sold out.
var lostKeys = map[asyncevent.ResultCode]string{
	asyncevent.ResultLotteryLose: "lost.lottery", asyncevent.ResultReleased: "lost.released",
	asyncevent.ResultHoldExpired: "lost.expired", asyncevent.ResultCancelled: "lost.cancelled",
	asyncevent.ResultRejectedClosed: "lost.closed", asyncevent.ResultNotDrawn: "lost.notDrawn",
	asyncevent.ResultLate: "lost.late", asyncevent.ResultRejectedDuplicate: "lost.duplicate",
}

// units are the minutes' and seconds' units of duration, by language.
var units = map[string][2]string{"en": {" min", " s"}, "ko": {"분", "초"}}

// clock is at in the page's time zone, as a reader reads a time.
func (p *requestPage) clock(at asyncevent.EpochMillis) string {
	return at.Time().In(p.loc).Format("2006-01-02 15:04:05 MST")
}

// verifyOf is a finished draw's proof for requestID; nil before its seed is revealed.
func verifyOf(d *asyncevent.DrawRecord, requestID string) *verify {
	seed, err := hex.DecodeString(d.Seed)
	if err != nil || d.Seed == "" || d.EntriesHash == "" {
		return nil
	}
	score := draw.Score(seed, d.EntriesHash, requestID)
	return &verify{Commitment: d.SeedCommitment, Seed: d.Seed, EntriesHash: d.EntriesHash, Entries: d.EntryCount,
		Score: hex.EncodeToString(score[:]), RequestID: requestID}
}

// pollEvery is how long a client should wait before it asks for req again: the
// Retry-After of GET /requests/{requestId} and the page's own refresh. A request
// in line is polled often while its wait is short and less as it grows (a fifth of
// its wait, 1 to 10 s); a held seat, a waitlist place, an entry waiting for its
// draw or its pre-queue's, every 30 s at most, and sooner when its hold runs out or
// its lottery's cutoff or its sale's start comes first (a hold run out and not yet
// swept, every 5 s; a pre-queue's entry once its sale has started, every 10 s); a
// final request, never (0).
func pollEvery(req *asyncevent.Request, now time.Time) time.Duration {
	until := func(at asyncevent.EpochMillis, most time.Duration) time.Duration {
		left := at.Time().Sub(now)
		switch {
		case at == 0:
			return most
		case left <= 0:
			return 5 * time.Second
		}
		return min(left.Truncate(time.Second)+time.Second, most)
	}
	switch {
	case req.Status.IsTerminal():
		return 0
	case req.Status == asyncevent.StatusHeld:
		return until(req.HoldExpiresAt, 30*time.Second)
	case req.Status == asyncevent.StatusWaitlisted:
		return 30 * time.Second
	case req.Prequeue != nil && !req.Prequeue.Frozen && req.Prequeue.StartsAt.Time().After(now):
		return until(req.Prequeue.StartsAt, 30*time.Second)
	case req.Prequeue != nil && !req.Prequeue.Frozen:
		return 10 * time.Second // started: its order is drawn once the settle window has passed
	case req.Prequeue != nil:
		return 30 * time.Second
	case req.EventType == asyncevent.Lottery && req.LotteryCutoffAt.Time().After(now):
		return until(req.LotteryCutoffAt, 30*time.Second)
	case req.EventType == asyncevent.Lottery:
		return 30 * time.Second // the draw runs when its operator or its schedule runs it
	case req.Queue != nil && req.Queue.Rate > 0:
		return min(max((req.Queue.Wait/5).Truncate(time.Second), time.Second), 10*time.Second)
	}
	return 2 * time.Second
}

// pageLanguages are the page's languages, the first the default.
var pageLanguages = []language.Tag{language.English, language.Korean}

var pageMatcher = language.NewMatcher(pageLanguages)

// pageLanguage is the page's language for an Accept-Language header: en or ko.
func pageLanguage(accept string) string {
	tags, _, _ := language.ParseAcceptLanguage(accept)
	_, i, _ := pageMatcher.Match(tags...)
	base, _ := pageLanguages[i].Base()
	return base.String()
}

// fill replaces each {name} of text by its value, given as name, value pairs.
func fill(text string, args ...any) string {
	pairs := make([]string, 0, len(args))
	for i := 0; i+1 < len(args); i += 2 {
		pairs = append(pairs, "{"+args[i].(string)+"}", args[i+1].(string))
	}
	return strings.NewReplacer(pairs...).Replace(text)
}

// duration is d in words of lang, rounded up to the second: "3 min 20 s", "3분 20초".
func duration(lang string, d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	m, s := s/60, s%60
	u := units[lang]
	switch {
	case m == 0:
		return strconv.FormatInt(s, 10) + u[1]
	case s == 0:
		return strconv.FormatInt(m, 10) + u[0]
	}
	return strconv.FormatInt(m, 10) + u[0] + " " + strconv.FormatInt(s, 10) + u[1]
}
