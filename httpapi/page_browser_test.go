package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

// pageShotsDir is where `make screenshot` writes the request page's screenshots
// (UPDATE_SCREENSHOT=1), one per state, from the English run with script.
const pageShotsDir = "../docs/request-page"

// TestRequestPageInBrowser walks a user's own request page through its states in a
// real, headless Chromium, with and without script, in English and Korean: a
// first-come request from in line to won (updated in place with script, reloading
// itself without), a held seat counting down by the server's clock, then released,
// another running out, a waitlisted request, a pre-queue's entry before and after
// its draw (the test recomputes the place from what the page shows), and a lottery
// lost. axe-core checks each state for serious or critical accessibility issues;
// the server counts the page's polls against the Retry-After it gave.
func TestRequestPageInBrowser(t *testing.T) {
	t.Parallel()
	execPath := requireChromium(t)
	axe := axeSource(t)
	for _, run := range []pageRun{{script: true, lang: "en"}, {script: false, lang: "ko"}, {script: true, lang: "ko"}, {script: false, lang: "en"}} {
		t.Run(run.name(), func(t *testing.T) {
			t.Parallel()
			run.walk(t, execPath, axe)
		})
	}
}

// pageRun is one walk: with script or without, in one language.
type pageRun struct {
	script bool
	lang   string
}

func (r pageRun) name() string {
	if r.script {
		return "with script, " + r.lang
	}
	return "without script, " + r.lang
}

// words are the page's texts of the run's language.
func (r pageRun) words(key string) string { return pageTexts[r.lang][key] }

func (r pageRun) walk(t *testing.T, execPath, axe string) {
	// The server's clock runs an hour behind the browser's: a countdown that read
	// the browser's clock against the server's times would show every hold run out.
	clock := asynceventtest.NewClock(time.Now().Add(-time.Hour).Truncate(time.Second))
	// The user signs in with a cookie, as a browser following a link must: no
	// header is added to what the browser sends.
	cookieAuth, err := NewJWTAuthenticator(testSecret, JWTOptions{CookieName: pageCookie})
	require.NoError(t, err)
	e := newEnv(t, withClock(clock), func(_ *asyncevent.Options, so *ServerOptions) { so.Authenticator = cookieAuth })
	require.NoError(t, e.srv.MountRequestPage(RequestPageOptions{ConfirmURL: "/pay/{requestId}"}))
	hits := &pageHits{}
	ts := newTestServer(t, hits.count(e.srv.Handler()))
	p := &pageBrowser{browser: newBrowser(t, execPath, ts.URL), mode: r, base: ts.URL, axe: axe, hits: hits}
	p.run(chromedp.EmulateViewport(720, 900))
	_, err = chromedp.Call(p.ctx, network.Enable, network.EnableParams{})
	require.NoError(t, err)
	_, err = chromedp.Call(p.ctx, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{
		UserAgent: "Mozilla/5.0 (X11; Linux x86_64) HeadlessChrome", AcceptLanguage: r.lang})
	require.NoError(t, err)
	var (
		mu      sync.Mutex
		foreign []string // what the browser asked of anywhere but the service
	)
	require.NoError(t, chromedp.Listen(p.ctx, func(ev any) {
		if sent, ok := ev.(*network.EventRequestWillBeSent); ok && !strings.HasPrefix(sent.Request.URL, ts.URL+"/") {
			mu.Lock()
			foreign = append(foreign, sent.Request.URL)
			mu.Unlock()
		}
	}))
	if !r.script {
		p.scriptOff(true)
	}

	p.firstCome(t, e, clock)
	p.held(t, e, clock)
	p.lottery(t, e, clock)
	p.prequeue(t, e, clock) // last: its entries' messages wait on the queue for the start
	assert.Empty(t, p.problems(), "script errors or CSP violations in the browser")
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, foreign, "every request of the page stays on the service's origin")
}

// pageBrowser is a browser on the request page, as one user at a time.
type pageBrowser struct {
	*browser
	mode pageRun
	base string
	axe  string
	hits *pageHits
}

// pageCookie is the cookie the service's sign-in sets, holding the user's token.
const pageCookie = "session"

// open shows request id's page as its user, signed in by the service's cookie.
func (p *pageBrowser) open(user, id string) {
	p.t.Helper()
	_, err := chromedp.Call(p.ctx, network.SetCookie, network.SetCookieParams{Name: pageCookie, Value: token(p.t, user, RoleUser),
		URL: p.base, HTTPOnly: new(true), SameSite: network.CookieSameSiteStrict})
	require.NoError(p.t, err)
	p.hits.asTest(func() { p.run(chromedp.Navigate(p.base + "/requests/" + id + pagePath)) })
	p.waitFor(`document.readyState === "complete" && document.querySelector("#heading") !== null`)
}

// reload asks for the page again, as its user would.
func (p *pageBrowser) reload() {
	p.t.Helper()
	p.hits.asTest(func() { p.run(chromedp.Reload()) })
	p.waitFor(`document.readyState === "complete" && document.querySelector("#heading") !== null`)
}

// waitHeading waits for the page to show the heading of text key, by itself.
func (p *pageBrowser) waitHeading(key string) {
	p.t.Helper()
	p.waitFor(`document.querySelector("#heading")?.textContent === ` + jsString(p.mode.words(key)))
}

// check checks the page a state shows: its words in the run's language, no
// accessibility issue (axe-core, where script runs), and its screenshot.
func (p *pageBrowser) check(state string) {
	p.t.Helper()
	assert.Equal(p.t, p.mode.lang, p.attr("html", "lang"), state)
	if p.mode.script {
		assert.Empty(p.t, p.accessibilityProblems(p.axe), "%s: accessibility", state)
	} else {
		p.checkWithoutScript(state)
	}
	png := p.screenshot(p.mode.lang + "-" + state + ".png")
	if os.Getenv("UPDATE_SCREENSHOT") == "1" && p.mode.script {
		require.NoError(p.t, os.MkdirAll(pageShotsDir, 0o755))
		require.NoError(p.t, os.WriteFile(filepath.Join(pageShotsDir, p.mode.lang+"-"+state+".png"), png, 0o644))
	}
}

// checkWithoutScript runs axe-core on the page a browser without script shows.
// axe-core is a script, and in a page whose script is off its timers never fire:
// the page is opened again with script on and its own script blocked, which shows
// the same document but for its <noscript> refresh (a <meta> refresh, which axe-core
// flags whatever the page offers: rule meta-refresh, WCAG 2.2.1; the page offers
// the link that turns it off, the criterion's own "turn off", docs/http.md). The
// page is then opened again as it was, without script.
func (p *pageBrowser) checkWithoutScript(state string) {
	p.t.Helper()
	here := value(p.browser, chromedp.Evaluate[string](`location.href`))
	p.scriptOff(false, p.base+pageScriptPath+"*")
	p.hits.asTest(func() { p.run(chromedp.Navigate(here)) })
	assert.Empty(p.t, p.accessibilityProblems(p.axe), "%s: accessibility", state)
	p.scriptOff(true)
	p.hits.asTest(func() { p.run(chromedp.Navigate(here)) })
}

// scriptOff turns the page's script execution off or on, and blocks the URLs of
// the patterns given (none: none).
func (p *pageBrowser) scriptOff(off bool, blocked ...string) {
	p.t.Helper()
	_, err := chromedp.Call(p.ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: off})
	require.NoError(p.t, err)
	patterns := []*network.BlockPattern{}
	for _, b := range blocked {
		patterns = append(patterns, &network.BlockPattern{URLPattern: b, Block: true})
	}
	_, err = chromedp.Call(p.ctx, network.SetBlockedURLs, network.SetBlockedURLsParams{URLPatterns: patterns})
	require.NoError(p.t, err)
}

// firstCome: three in line for three seats; the last one's page shows its place,
// which moves as the line is served, then the seat won. With script the page is
// updated in place (the same document, its live region told the place); without,
// it reloads itself. Either way it asks no sooner than the Retry-After it was given.
func (p *pageBrowser) firstCome(t *testing.T, e *env, clock *asynceventtest.Clock) {
	e.createFirstCome("line", 3)
	var last ParticipationView
	for _, u := range []string{"ann", "bob", "cid"} {
		_, last = e.participate("line", u)
		clock.Advance(time.Second) // a second apart: a place is exact by the second
	}
	require.NoError(t, e.client.FlushProgress(context.Background()))
	p.open("cid", last.RequestID)
	p.waitHeading("waiting.title")
	assert.Equal(t, fill(p.mode.words("waiting.ahead"), "ahead", "2"), p.text("#live"))
	assert.Equal(t, p.mode.words("waiting.progress") != "", p.count("#progress") == 1)
	p.check("waiting")
	if p.mode.script {
		value(p.browser, chromedp.Evaluate[bool](`(window.sameDocument = true)`))
	}

	processOne(t, e)
	require.NoError(t, e.client.FlushProgress(context.Background()))
	clock.Advance(2 * time.Second) // past the progress cache (Options.ProgressCacheTTL, 1 s)
	// The place moves up (by the line's pace, it may show the next one served too).
	one, next := fill(p.mode.words("waiting.ahead"), "ahead", "1"), p.mode.words("waiting.aheadFirst")
	p.waitFor(`[` + jsString(one) + `, ` + jsString(next) + `].includes(document.querySelector("#live")?.textContent)`)
	served := map[string]string{one: "1", next: "2"}[p.text("#live")]
	assert.Equal(t, served, p.attr("#progress", "value"), "the part of the line served since the page was opened")
	assert.Equal(t, "2", p.attr("#progress", "max"))
	if p.mode.script {
		assert.True(t, value(p.browser, chromedp.Evaluate[bool](`window.sameDocument === true`)), "updated in place, not reloaded")
		p.focusKeptAndPaused("/requests/" + last.RequestID + pagePath)
	}

	processOne(t, e)
	processOne(t, e)
	p.waitHeading("won.seat.title")
	assert.Equal(t, "0", p.attr("#request", "data-refresh"), "a final page asks no more")
	p.check("won")
	p.hits.paced(t, "/requests/"+last.RequestID+pagePath)
}

// focusKeptAndPaused checks, on a page that updates itself with its script, that
// the control with the focus keeps it through the updates (the same element, never
// blurred), as does the live region (the same element, told only what changed);
// that pausing stops the asking, and resuming starts it again.
func (p *pageBrowser) focusKeptAndPaused(path string) {
	t := p.t
	t.Helper()
	value(p.browser, chromedp.Evaluate[bool](`(() => {
		const b = document.querySelector("#pause-button");
		b.focus();
		b.marked = true;
		document.querySelector("#live").marked = true;
		window.blurs = 0;
		b.addEventListener("blur", () => window.blurs++);
		return true;
	})()`))
	asked := p.hits.countOf(path)
	p.waitUntil(func() bool { return p.hits.countOf(path) >= asked+2 }, "two more asks")
	assert.True(t, value(p.browser, chromedp.Evaluate[bool](`document.activeElement.marked === true && window.blurs === 0`)), "the focus kept through the updates")
	assert.True(t, value(p.browser, chromedp.Evaluate[bool](`document.querySelector("#live").marked === true`)), "the live region is the same element")

	p.run(chromedp.Click(chromedp.CSS("#pause-button")))
	p.waitFor(`document.querySelector("#pause-button").getAttribute("aria-pressed") === "true"`)
	assert.Equal(t, p.mode.words("page.paused"), p.text("#refresh"))
	asked = p.hits.countOf(path)
	wait := time.Duration(max(atoi(p.attr("#request", "data-refresh")), 1)) * time.Second
	time.Sleep(2 * wait) // nothing to wait for: that nothing is asked meanwhile
	assert.Equal(t, asked, p.hits.countOf(path), "paused: nothing asked")
	p.run(chromedp.Click(chromedp.CSS("#pause-button")))
	p.waitFor(`document.querySelector("#pause-button").getAttribute("aria-pressed") === "false"`)
	p.waitUntil(func() bool { return p.hits.countOf(path) > asked }, "an ask once resumed")

	// A proxy's error page in between: the page keeps what it showed, says it
	// could not update, and asks again later, then shows the answer.
	shown := p.text("#live")
	p.hits.mu.Lock()
	p.hits.refuse = 1
	p.hits.mu.Unlock()
	p.waitFor(`document.querySelector("#offline").textContent === ` + jsString(p.mode.words("page.offline")))
	assert.Equal(t, shown, p.text("#live"), "what was shown stays")
	p.waitFor(`document.querySelector("#offline").textContent === ""`)

	// A hidden tab does not ask; shown again, overdue, it asks at once.
	value(p.browser, chromedp.Evaluate[bool](`(Object.defineProperty(document, "hidden", {configurable: true, get: () => true}), true)`))
	time.Sleep(wait) // let the ask in flight, if any, land
	asked = p.hits.countOf(path)
	time.Sleep(2 * wait)
	assert.Equal(t, asked, p.hits.countOf(path), "hidden: nothing asked")
	value(p.browser, chromedp.Evaluate[bool](`(Object.defineProperty(document, "hidden", {configurable: true, get: () => false}), document.dispatchEvent(new Event("visibilitychange")), true)`))
	p.waitUntil(func() bool { return p.hits.countOf(path) > asked }, "an ask once shown")
	assert.Contains(t, value(p.browser, chromedp.Evaluate[string](`location.search`)), "first=2", "the address carries what was shown, for a reload")
}

// waitUntil polls ok until it holds, for at most actionTimeout.
func (p *pageBrowser) waitUntil(ok func() bool, what string) {
	p.t.Helper()
	deadline := time.Now().Add(actionTimeout)
	for !ok() {
		if time.Now().After(deadline) {
			p.t.Fatalf("waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// held: a holds sale of two seats and five users. The first held seat counts down
// from what the server says is left and is given up with its button; the second
// runs out; the last in line waits on the waitlist, served after the two before it.
func (p *pageBrowser) held(t *testing.T, e *env, clock *asynceventtest.Clock) {
	s := newHoldsSale(t, e, clock, 3, 7)
	id := s.held[0]
	p.open(s.users[id], id)
	p.waitHeading("held.title")
	assert.Equal(t, fill(p.mode.words("held.left"), "left", duration(p.mode.lang, holdFor)), p.text("#countdown"))
	assert.Contains(t, p.attr("#pay", "href"), "/pay/"+id)
	if p.mode.script {
		// The server's clock stands still: the page counts down from the 10 minutes
		// it was told, on the browser's own monotonic clock.
		p.waitFor(`document.querySelector("#countdown")?.textContent === ` + jsString(fill(p.mode.words("held.left"), "left", duration(p.mode.lang, holdFor-2*time.Second))))
	}
	p.check("held")
	// Real clicks (without script, no script can click): the button opens its
	// second step, which says what giving up means and does it.
	p.run(chromedp.Click(chromedp.CSS("#release")))
	p.waitFor(`document.querySelector("#release-box").open`)
	assert.Equal(t, p.mode.words("held.releaseWarning"), p.text("#release-box p"))
	p.run(chromedp.Click(chromedp.CSS("#release-confirm")))
	p.waitHeading("lost.released.title")
	p.check("released")

	// Three seconds before the holds run out (by the server's clock), the page asks
	// every 4 s.
	clock.Advance(holdFor - 3*time.Second)
	if p.mode.script {
		p.heldInPlace(s, s.held[1])
	}

	run := s.held[2]
	p.open(s.users[run], run)
	clock.Advance(4 * time.Second)
	p.reload()
	p.waitHeading("held.ranOut")
	assert.Zero(t, p.count("#release"), "nothing left to give up")
	r := s.do("POST", "/admin/events/sale/holds/sweep", s.admin(), nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	p.reload()
	p.waitFor(`document.querySelector("#request")?.dataset.state === "lost"`)
	p.waitHeading("lost.expired.title")
	p.check("expired")

	last := s.waitlisted[len(s.waitlisted)-1]
	p.open(s.users[last], last)
	p.waitHeading("waitlisted.title")
	// The three seats given up or run out went to the three before it.
	assert.Equal(t, p.mode.words("waitlisted.aheadFirst"), p.text("#live"))
	assert.Equal(t, p.mode.words("waitlisted.release"), p.text("#release"))
	p.check("waitlisted")
}

// heldInPlace: a held seat's page, updated in place every 4 s, keeps the Release
// step the user opened open and the focus on its button, tells the live region
// nothing while nothing changed, and sets its countdown again by each answer (the
// server's clock stands still: 3 s left at every answer). The seat given up
// elsewhere (the API, as another tab would), the page shows it, and the focus,
// whose button is gone, goes to the heading.
func (p *pageBrowser) heldInPlace(s *holdsSale, id string) {
	t := p.t
	t.Helper()
	path := "/requests/" + id + pagePath
	p.open(s.users[id], id)
	p.waitHeading("held.title")
	p.run(chromedp.Click(chromedp.CSS("#release")))
	p.waitFor(`document.querySelector("#release-box").open`)
	value(p.browser, chromedp.Evaluate[bool](`(() => {
		const b = document.querySelector("#release-confirm");
		b.focus();
		b.marked = true;
		window.liveChanges = 0;
		new MutationObserver(() => window.liveChanges++).observe(document.querySelector("#live"), {childList: true, characterData: true, subtree: true});
		return document.activeElement === b;
	})()`))
	left := func(d time.Duration) string {
		return `document.querySelector("#countdown")?.textContent === ` + jsString(fill(p.mode.words("held.left"), "left", duration(p.mode.lang, d)))
	}
	p.waitFor(left(0))
	p.waitFor(left(3 * time.Second)) // set again by the next answer
	asked := p.hits.countOf(path)
	p.waitUntil(func() bool { return p.hits.countOf(path) >= asked+1 }, "another ask")
	p.waitFor(left(2 * time.Second))
	assert.True(t, value(p.browser, chromedp.Evaluate[bool](`document.querySelector("#release-box").open`)), "the step opened stays open")
	assert.True(t, value(p.browser, chromedp.Evaluate[bool](`document.activeElement.marked === true`)), "the focus kept on its button")
	assert.Zero(t, value(p.browser, chromedp.Evaluate[int](`window.liveChanges`)), "nothing told while nothing changed")

	r := s.do("POST", "/requests/"+id+"/release", s.owner(id), nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	p.waitHeading("lost.released.title")
	assert.Equal(t, p.mode.words("lost.released.body"), p.text("#live"))
	assert.Equal(t, "heading", value(p.browser, chromedp.Evaluate[string](`document.activeElement.id`)), "the focus on the heading")
	assert.Equal(t, 1, value(p.browser, chromedp.Evaluate[int](`window.liveChanges`)), "the new state told once")
}

// prequeue: three entries before the start, each told the order is drawn at the
// start, counting down to it; after the draw (which serves the one seat at once),
// one entry's page shows its result, its place and the draw's proof, from which the
// test recomputes every entry's score: the place shown is the rank of its own.
func (p *pageBrowser) prequeue(t *testing.T, e *env, clock *asynceventtest.Clock) {
	start := clock.Now().Add(time.Hour).UTC()
	users, ids := e.eventOf(map[string]any{"eventId": "drop", "eventType": "FIRST_COME", "capacityTotal": 1,
		"prequeueOpensAt": clock.Now().UTC().Format(time.RFC3339Nano), "startsAt": start.Format(time.RFC3339Nano)}, "dan", "eve", "fay")
	id := ids[1]
	p.open(users[id], id)
	p.waitHeading("prequeue.title")
	assert.Equal(t, fill(p.mode.words("prequeue.left"), "left", duration(p.mode.lang, time.Hour)), p.text("#countdown"))
	p.check("prequeue")

	clock.Advance(time.Hour + asyncevent.DefaultDrawSettleWindow + time.Second)
	r := e.do("POST", "/admin/events/drop/draw", e.admin(), nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	p.reload()
	p.waitFor(`document.querySelector("#verify-seed") !== null`)
	seed, entries := p.text("#verify-seed"), p.text("#verify-entries-hash")
	scores := make([]string, 0, len(ids))
	for _, other := range ids {
		scores = append(scores, recomputed(t, seed, entries, other))
	}
	own := recomputed(t, seed, entries, id)
	assert.Equal(t, own, p.text("#verify-score"), "the score shown, recomputed")
	slices.Sort(scores)
	place := slices.Index(scores, own) + 1
	assert.Contains(t, p.text("#request"), fill(p.mode.words("prequeue.place"), "place", strconv.Itoa(place), "entries", "3"), "the place shown is the rank of its score")
	// The serve decided it at once: the one seat went to the first drawn.
	assert.Equal(t, map[bool]string{true: p.mode.words("won.seat.title"), false: p.mode.words("lost.soldOut.title")}[place == 1], p.text("#heading"))
	p.check("prequeue-drawn")
}

// lottery: two entries for one prize; the loser's page after the draw, with the
// proof its score is recomputed from.
func (p *pageBrowser) lottery(t *testing.T, e *env, clock *asynceventtest.Clock) {
	cutoff := clock.Now().Add(time.Hour).UTC()
	users, _ := e.eventOf(map[string]any{"eventId": "lotto", "eventType": "LOTTERY", "winnerCount": 1,
		"lotteryCutoffAt": cutoff.Format(time.RFC3339Nano)}, "gus", "hal")
	processOne(t, e) // the holds sale's messages are still in flight: not e.process
	processOne(t, e)
	clock.Advance(time.Hour + asyncevent.DefaultDrawSettleWindow + time.Second)
	r := e.do("POST", "/admin/events/lotto/draw", e.admin(), nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	winner := decode[DrawView](t, r).Winners[0]
	for id, u := range users {
		if id == winner {
			continue
		}
		p.open(u, id)
		p.waitHeading("lost.lottery.title")
		assert.Equal(t, recomputed(t, p.text("#verify-seed"), p.text("#verify-entries-hash"), id), p.text("#verify-score"))
		p.check("lottery-lost")
	}
}

// processOne processes the queue's next message.
func processOne(t *testing.T, e *env) {
	t.Helper()
	ctx := context.Background()
	ds, err := e.queue.Receive(ctx, 1, 0, time.Minute)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	require.Empty(t, asynceventtest.Process(ctx, asyncevent.NewProcessor(e.client, asyncevent.ProcessOptions{}), ds))
	require.NoError(t, e.queue.Delete(ctx, ds[0].Receipt))
}

// pageHits records when each page was asked for, and the Retry-After it answered.
type pageHits struct {
	mu      sync.Mutex
	log     map[string][]pageHit // by path
	testing bool                 // the test itself is asking
	refuse  int                  // the next asks answered as a proxy would whose server is down
}

type pageHit struct {
	at     time.Time
	after  time.Duration
	byTest bool // asked by the test (a navigation), not by the page
}

// asTest runs f, a navigation of the test's own: what it asks for is not the page's
// polling.
func (h *pageHits) asTest(f func()) {
	h.mu.Lock()
	h.testing = true
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.testing = false
		h.mu.Unlock()
	}()
	f()
}

func (h *pageHits) count(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived := time.Now() // as the page's script counts: from when it asked
		h.mu.Lock()
		refused := h.refuse > 0 && strings.HasSuffix(r.URL.Path, pagePath)
		if refused {
			// No Retry-After: the page waits at least 5 s before it asks again.
			h.refuse--
			h.log[r.URL.Path] = append(h.log[r.URL.Path], pageHit{at: arrived, after: 5 * time.Second})
		}
		h.mu.Unlock()
		if refused {
			http.Error(w, "<html><body>502 Bad Gateway</body></html>", http.StatusBadGateway)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		after, _ := time.ParseDuration(rec.Header().Get("Retry-After") + "s")
		h.mu.Lock()
		if h.log == nil {
			h.log = map[string][]pageHit{}
		}
		h.log[r.URL.Path] = append(h.log[r.URL.Path], pageHit{at: arrived, after: after, byTest: h.testing})
		h.mu.Unlock()
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

// countOf is how many times path was asked for.
func (h *pageHits) countOf(path string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.log[path])
}

// paced checks that the page never asked for path again before the Retry-After of
// its previous answer (a tenth of it allowed for the timers), nor after a final
// answer (no Retry-After).
func (h *pageHits) paced(t *testing.T, path string) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	hits := h.log[path]
	require.GreaterOrEqual(t, len(hits), 2, "the page asked for again")
	for i := 1; i < len(hits); i++ {
		prev := hits[i-1]
		if hits[i].byTest {
			continue
		}
		require.NotZero(t, prev.after, "poll %d came after a final answer", i)
		assert.GreaterOrEqual(t, hits[i].at.Sub(prev.at), prev.after*9/10, "poll %d came before the Retry-After of %v", i, prev.after)
	}
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}
