package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/draw"
	"github.com/asyncevent/asyncevent/queue"
)

// pageClient is a browser of the request page: it sends the headers asked for and
// never follows a redirect.
type pageClient struct {
	t    *testing.T
	base string
}

func (e *env) pages(t *testing.T) *pageClient {
	t.Helper()
	require.NoError(t, e.srv.MountRequestPage(RequestPageOptions{ConfirmURL: "/pay/{requestId}"}))
	return &pageClient{t: t, base: e.ts.URL}
}

// get fetches path with tok (none if empty) and headers as name, value pairs.
func (c *pageClient) get(path, tok string, headers ...string) response {
	return c.send("GET", path, tok, nil, headers...)
}

func (c *pageClient) send(method, path, tok string, form url.Values, headers ...string) response {
	c.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(context.Background(), method, c.base+path, body)
	require.NoError(c.t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// shownHex is the hex value a page shows in its element id.
func shownHex(t *testing.T, page, id string) string {
	t.Helper()
	m := regexp.MustCompile(`id="` + id + `">([0-9a-f]+)<`).FindStringSubmatch(page)
	require.NotNil(t, m, "%s not on the page", id)
	return m[1]
}

// eventOf creates an event through the admin API from its settings and gives it one
// participation of each user: the users by request ID, and the request IDs in the
// order of the clicks.
func (e *env) eventOf(settings map[string]any, users ...string) (map[string]string, []string) {
	e.t.Helper()
	r := e.do("POST", "/admin/events", e.admin(), settings)
	require.Equal(e.t, http.StatusCreated, r.status, "%s", r.body)
	byID := map[string]string{}
	var ids []string
	for _, u := range users {
		_, p := e.participate(settings["eventId"].(string), u)
		byID[p.RequestID] = u
		ids = append(ids, p.RequestID)
	}
	return byID, ids
}

// recomputed is a drawn request's score, in hex, recomputed as its user would from
// the seed and the entries' hash its page shows.
func recomputed(t testing.TB, seedHex, entriesHash, requestID string) string {
	t.Helper()
	seed, err := hex.DecodeString(seedHex)
	require.NoError(t, err)
	score := draw.Score(seed, entriesHash, requestID)
	return hex.EncodeToString(score[:])
}

// formToken is the Release form's token on a page.
func formToken(t *testing.T, page response) string {
	t.Helper()
	m := regexp.MustCompile(`name="token" value="([^"]+)"`).FindSubmatch(page.body)
	require.NotNil(t, m, "no Release form: %s", page.body)
	return string(m[1])
}

// The page a user sees of their own request, in each state, in English and Korean,
// without JavaScript: its words, its refresh at the API's pace, its Release form
// and what it refuses.
func TestRequestPage(t *testing.T) {
	t.Parallel()

	t.Run("a held seat: the time left, the payment link, Release", func(t *testing.T) {
		t.Parallel()
		clock := asynceventtest.NewClock(time.Now().Truncate(time.Second))
		s := newHoldsSale(t, newEnv(t, withClock(clock)), clock, 1, 3)
		pc := s.pages(t)
		id := s.held[0]
		page := pc.get("/requests/"+id+"/page", s.owner(id), "Accept-Language", "en-GB,en;q=0.9")
		require.Equal(t, http.StatusOK, page.status, "%s", page.body)
		body := string(page.body)
		assert.Contains(t, body, `<html lang="en">`)
		assert.Contains(t, body, "A seat is held for you")
		assert.Contains(t, body, "10 min left")
		assert.Contains(t, body, `href="/pay/`+id+`"`)
		assert.Contains(t, body, `role="status" aria-live="polite"`)
		assert.Equal(t, "30", page.header.Get("Retry-After"), "a held seat is polled every 30 s at most")
		assert.Contains(t, body, `<noscript><meta http-equiv="refresh" content="30;url=/requests/`+id+`/page"></noscript>`, "without script, the page reloads itself")
		assert.Contains(t, body, `data-refresh="30"`, "with it, the script asks again then")
		csp := page.header.Get("Content-Security-Policy")
		assert.Contains(t, csp, "default-src 'none'")
		nonce := regexp.MustCompile(`<script nonce="([^"]+)" src="(/request-page/page\.js\?v=[0-9a-f]+)" defer>`).FindStringSubmatch(body)
		require.NotNil(t, nonce, "the page's script")
		assert.Contains(t, csp, "script-src 'nonce-"+nonce[1]+"'; connect-src 'self'", "the page's one script, and fetches of its own origin only")
		assert.Contains(t, csp, "font-src 'self'", "the service's fonts, for its brand")
		script := nonce[1:]
		js := pc.get(script[1], "")
		assert.Equal(t, http.StatusOK, js.status, "the script is served to anyone: it holds no data")
		assert.Equal(t, "text/javascript; charset=utf-8", js.header.Get("Content-Type"))

		// A cross-site post, or one without the page's token, is refused and changes nothing.
		tok := formToken(t, page)
		refused := pc.send("POST", "/requests/"+id+"/page/release", s.owner(id), url.Values{"token": {tok}}, "Sec-Fetch-Site", "cross-site")
		assert.Equal(t, http.StatusForbidden, refused.status)
		refused = pc.send("POST", "/requests/"+id+"/page/release", s.owner(id), url.Values{"token": {"forged"}})
		assert.Equal(t, http.StatusForbidden, refused.status)
		other := s.owner(s.waitlisted[0])
		refused = pc.send("POST", "/requests/"+id+"/page/release", other, url.Values{"token": {tok}})
		assert.Equal(t, http.StatusNotFound, refused.status, "another user's request")
		req, err := s.client.GetRequest(context.Background(), id)
		require.NoError(t, err)
		require.Equal(t, asyncevent.StatusHeld, req.Status, "nothing released")

		done := pc.send("POST", "/requests/"+id+"/page/release", s.owner(id), url.Values{"token": {tok}}, "Sec-Fetch-Site", "same-origin")
		require.Equal(t, http.StatusSeeOther, done.status, "%s", done.body)
		assert.Equal(t, "/requests/"+id+"/page", done.header.Get("Location"))
		page = pc.get("/requests/"+id+"/page", s.owner(id))
		assert.Contains(t, string(page.body), "You gave up your place")
		assert.Empty(t, page.header.Get("Retry-After"), "a final request is not polled")
		assert.NotContains(t, string(page.body), `http-equiv="refresh"`)
	})

	t.Run("waitlisted, in Korean: the place and the end", func(t *testing.T) {
		t.Parallel()
		clock := asynceventtest.NewClock(time.Now().Truncate(time.Second))
		s := newHoldsSale(t, newEnv(t, withClock(clock)), clock, 1, 3)
		require.NoError(t, s.client.FlushProgress(context.Background()))
		pc := s.pages(t)
		id := s.waitlisted[0]
		page := pc.get("/requests/"+id+"/page", s.owner(id), "Accept-Language", "ko-KR,ko;q=0.9,en;q=0.5")
		require.Equal(t, http.StatusOK, page.status)
		body := string(page.body)
		assert.Contains(t, body, `<html lang="ko">`)
		assert.Equal(t, "ko", page.header.Get("Content-Language"))
		assert.Contains(t, body, "매진: 대기자 명단에 있습니다")
		assert.Contains(t, body, "대기자 명단의 첫 번째입니다. 다음에 반환되는 좌석을 받습니다.", "none ahead: first")
		assert.Contains(t, body, "2099-01-01 00:00:00 UTC", "the waitlist's end")
		assert.Contains(t, body, "대기 취소", "its Release button")
		done := pc.send("POST", "/requests/"+id+"/page/release", s.owner(id), url.Values{"token": {formToken(t, page)}})
		require.Equal(t, http.StatusSeeOther, done.status, "%s", done.body)
		left := string(pc.get("/requests/"+id+"/page", s.owner(id), "Accept-Language", "ko").body)
		assert.Contains(t, left, "대기를 취소했습니다", "it left the waitlist; it gave up no seat")

		// A hold run out and not yet ended by the sweep: nothing left to pay for.
		clock.Advance(holdFor + time.Second)
		held := s.held[0]
		ranOut := string(pc.get("/requests/"+held+"/page", s.owner(held)).body)
		assert.Contains(t, ranOut, "The hold has run out")
		assert.NotContains(t, ranOut, `id="pay"`)
	})

	t.Run("in line, then won or sold out: the API's pace, then no refresh", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		pc := e.pages(t)
		e.createFirstCome("sale", 1)
		_, first := e.participate("sale", "ann")
		_, second := e.participate("sale", "bob")
		ann, bob := token(t, "ann", RoleUser), token(t, "bob", RoleUser)
		page := pc.get("/requests/"+first.RequestID+"/page", ann)
		require.Equal(t, http.StatusOK, page.status)
		assert.Contains(t, string(page.body), "You are in line")
		api := e.do("GET", "/requests/"+first.RequestID, ann, nil)
		require.Equal(t, http.StatusOK, api.status)
		after, err := strconv.Atoi(api.header.Get("Retry-After"))
		require.NoError(t, err, "the API says when to poll again")
		assert.Equal(t, strconv.Itoa(after), page.header.Get("Retry-After"), "the page refreshes at the API's pace")
		assert.Contains(t, string(page.body), fmt.Sprintf(`data-refresh="%d"`, after), "the script asks again at the API's pace")
		assert.Contains(t, string(page.body), fmt.Sprintf(`content="%d;url=`, max(after, noScriptRefresh)), "without script, no more often than every 10 s")

		e.process() // one wins, the other finds the seat gone (in the queue's order)
		annPage := string(pc.get("/requests/"+first.RequestID+"/page", ann).body)
		bobPage := string(pc.get("/requests/"+second.RequestID+"/page", bob, "Accept-Language", "ko").body)
		if strings.Contains(annPage, "You got a seat") {
			assert.Contains(t, bobPage, `<h1 id="heading" tabindex="-1">매진</h1>`)
		} else {
			assert.Contains(t, annPage, `<h1 id="heading" tabindex="-1">Sold out</h1>`)
			assert.Contains(t, bobPage, "좌석을 얻었습니다")
		}
		api = e.do("GET", "/requests/"+first.RequestID, ann, nil)
		assert.Empty(t, api.header.Get("Retry-After"), "a final request is not polled again")
	})

	t.Run("a participation's answer leads to the page", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.createFirstCome("sale", 1)
		r := e.do("POST", "/events/sale/participations", token(t, "ann", RoleUser), nil)
		require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
		assert.Empty(t, r.header.Get("Link"), "no page mounted, none named")
		assert.Empty(t, decode[ParticipationView](t, r).Page)

		e.pages(t)
		r = e.do("POST", "/events/sale/participations", token(t, "bob", RoleUser), nil)
		require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
		v := decode[ParticipationView](t, r)
		assert.Equal(t, "/requests/"+v.RequestID+"/page", v.Page)
		assert.Equal(t, `</requests/`+v.RequestID+`/page>; rel="alternate"; type="text/html"`, r.header.Get("Link"))
		assert.Equal(t, "/requests/"+v.RequestID, r.header.Get("Location"), "the API's own poll, as before")
		r = e.do("POST", "/events/sale/participations", token(t, "bob", RoleUser), nil)
		require.Equal(t, http.StatusOK, r.status, "a repeat")
		assert.Equal(t, v.Page, decode[ParticipationView](t, r).Page, "a repeat leads to the first request's page")
	})

	// What the page showed before comes back in the URL it asks for next: the line's
	// progress since it was opened, a place further back said with why, updates
	// paused by the user (no refresh, a link to resume).
	t.Run("the place: progress since opened, a step back said, updates paused", func(t *testing.T) {
		t.Parallel()
		clock := asynceventtest.NewClock(time.Now().Truncate(time.Second))
		e := newEnv(t, withClock(clock))
		pc := e.pages(t)
		e.createFirstCome("sale", 5)
		var last ParticipationView
		for _, u := range []string{"ann", "bob", "cid"} {
			_, last = e.participate("sale", u)
			clock.Advance(time.Second)
		}
		require.NoError(t, e.client.FlushProgress(context.Background()))
		path, cid := "/requests/"+last.RequestID+"/page", token(t, "cid", RoleUser)
		page := string(pc.get(path, cid).body)
		assert.Contains(t, page, `aria-atomic="true">2 ahead of you.</p>`)
		assert.Contains(t, page, `<progress id="progress" max="2" value="0">`, "opened now: nothing served since")
		assert.Contains(t, page, `data-next="`+path+`?first=2&amp;low=2"`, "the next ask carries what was shown")
		assert.NotContains(t, page, "corrected")

		page = string(pc.get(path+"?first=6&low=1", cid).body)
		assert.Contains(t, page, `<progress id="progress" max="6" value="4">`, "opened when 6 were ahead, 2 now")
		assert.Contains(t, page, `aria-atomic="true">2 ahead of you (an estimate, corrected from 1).</p>`,
			"a place further back than the best shown says so, in the live region")
		assert.Contains(t, page, "<p>The count ahead is an estimate", "and why, beside it")
		assert.Contains(t, page, `data-next="`+path+`?first=6&amp;low=1"`, "and keeps saying it until the place is back")

		page = string(pc.get(path+"?first=x&low=-3", cid).body)
		assert.Contains(t, page, `<progress id="progress" max="2" value="0">`, "what does not parse is not there")
		assert.NotContains(t, page, "corrected")

		paused := pc.get(path+"?first=2&low=2&pause=1", cid)
		assert.NotContains(t, string(paused.body), `http-equiv="refresh"`, "paused: it does not reload itself")
		assert.Contains(t, string(paused.body), `data-paused="1"`)
		assert.Contains(t, string(paused.body), `<a id="resume" href="`+path+`?first=2&amp;low=2"`)
		assert.NotEmpty(t, paused.header.Get("Retry-After"), "the API's pace is still said")
		running := string(pc.get(path, cid).body)
		assert.Contains(t, running, `<a id="pause" href="`+path+`?first=2&amp;low=2&amp;pause=1"`)
		assert.Less(t, strings.Index(running, `id="pause"`), strings.Index(running, `id="body"`), "the pause link comes before what updates")
	})

	// A lottery's entry, then its result: the draw's proof on the page, from which
	// the test recomputes the user's score, and the winners' by the same rule.
	t.Run("a lottery: entered, then the result and its proof", func(t *testing.T) {
		t.Parallel()
		clock := asynceventtest.NewClock(time.Now().Truncate(time.Second))
		e := newEnv(t, withClock(clock))
		pc := e.pages(t)
		cutoff := clock.Now().Add(time.Hour).UTC()
		users, _ := e.eventOf(map[string]any{"eventId": "lotto", "eventType": "LOTTERY", "winnerCount": 1,
			"lotteryCutoffAt": cutoff.Format(time.RFC3339Nano)}, "ann", "bob", "cid")
		e.process()
		for id, u := range users {
			page := string(pc.get("/requests/"+id+"/page", token(t, u, RoleUser)).body)
			assert.Contains(t, page, "You are entered in the draw")
			assert.Contains(t, page, cutoff.Format("2006-01-02 15:04:05"), "the draw's time")
		}
		clock.Advance(time.Hour + asyncevent.DefaultDrawSettleWindow + time.Second)
		r := e.do("POST", "/admin/events/lotto/draw", e.admin(), nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		winner := decode[DrawView](t, r).Winners[0]

		shown := func(page, id string) string { return shownHex(t, page, id) }
		scores := map[string]string{}
		for id, u := range users {
			page := string(pc.get("/requests/"+id+"/page", token(t, u, RoleUser)).body)
			if id == winner {
				assert.Contains(t, page, "You won the draw")
			} else {
				assert.Contains(t, page, "Not drawn this time")
			}
			seedHex := shown(page, "verify-seed")
			seedBytes, err := hex.DecodeString(seedHex)
			require.NoError(t, err)
			sum := sha256.Sum256(seedBytes)
			assert.Equal(t, hex.EncodeToString(sum[:]), shown(page, "verify-commitment"), "the seed is the one committed to")
			assert.Equal(t, recomputed(t, seedHex, shown(page, "verify-entries-hash"), id), shown(page, "verify-score"), "the score, recomputed")
			scores[id] = shown(page, "verify-score")
		}
		for id, s := range scores {
			assert.LessOrEqual(t, scores[winner], s, "the winner has the lowest score (%s)", id)
		}
	})

	// A pre-queue's entry: in before the start, then its place in the drawn order
	// with the draw's proof; the test recomputes every entry's score, and the order
	// the pages show is the order of the scores.
	t.Run("a pre-queue: in before the start, then the drawn place and its proof", func(t *testing.T) {
		t.Parallel()
		clock := asynceventtest.NewClock(time.Now().Truncate(time.Second))
		e := newEnv(t, withClock(clock))
		pc := e.pages(t)
		start := clock.Now().Add(time.Hour).UTC()
		users, _ := e.eventOf(map[string]any{"eventId": "drop", "eventType": "FIRST_COME", "capacityTotal": 1,
			"prequeueOpensAt": clock.Now().UTC().Format(time.RFC3339Nano), "startsAt": start.Format(time.RFC3339Nano)}, "ann", "bob", "cid")
		e.process()
		for id, u := range users {
			page := pc.get("/requests/"+id+"/page", token(t, u, RoleUser), "Accept-Language", "ko")
			assert.Contains(t, string(page.body), "사전 대기에 들어왔습니다")
			assert.Equal(t, "30", page.header.Get("Retry-After"))
		}
		clock.Advance(time.Hour + asyncevent.DefaultDrawSettleWindow + time.Second)
		r := e.do("POST", "/admin/events/drop/draw", e.admin(), nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)

		byPlace := map[int]string{} // place → score shown, recomputed
		for id, u := range users {
			page := string(pc.get("/requests/"+id+"/page", token(t, u, RoleUser)).body)
			m := regexp.MustCompile(`Your place in the drawn order: (\d) of 3\.`).FindStringSubmatch(page)
			require.NotNil(t, m, "%s", page)
			place, _ := strconv.Atoi(m[1])
			if place == 1 {
				assert.Contains(t, page, "You got a seat")
			} else {
				assert.Contains(t, page, "Sold out")
			}
			score := recomputed(t, shownHex(t, page, "verify-seed"), shownHex(t, page, "verify-entries-hash"), id)
			assert.Contains(t, page, `id="verify-score">`+score+`<`)
			byPlace[place] = score
		}
		require.Len(t, byPlace, 3)
		assert.Less(t, byPlace[1], byPlace[2], "the drawn order is the scores' order")
		assert.Less(t, byPlace[2], byPlace[3])
	})

	t.Run("someone else's, unknown, malformed, without identity: a plain page, nothing told", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		pc := e.pages(t)
		e.createFirstCome("sale", 1)
		_, mine := e.participate("sale", "ann")
		bob := token(t, "bob", RoleUser)
		theirs := pc.get("/requests/"+mine.RequestID+"/page", bob)
		unknown := pc.get("/requests/no-such-request/page", bob)
		assert.Equal(t, http.StatusNotFound, theirs.status)
		assert.Equal(t, http.StatusNotFound, unknown.status)
		assert.Equal(t, string(unknown.body[strings.Index(string(unknown.body), "<main"):]),
			string(theirs.body[strings.Index(string(theirs.body), "<main"):]), "another user's request reads as no request at all")
		assert.NotContains(t, string(theirs.body), "QUEUED")
		assert.NotContains(t, string(theirs.body), "sale")

		bad := pc.get("/requests/a%23b/page", bob)
		assert.Equal(t, http.StatusBadRequest, bad.status)
		assert.Contains(t, string(bad.body), "This link is not valid")
		anonymous := pc.get("/requests/"+mine.RequestID+"/page", "")
		assert.Equal(t, http.StatusUnauthorized, anonymous.status)
		assert.Contains(t, string(anonymous.body), "Sign in to see your request")
		expired, err := MintToken(testSecret, "ann", RoleUser, time.Now().Add(-time.Hour))
		require.NoError(t, err)
		assert.Equal(t, http.StatusUnauthorized, pc.get("/requests/"+mine.RequestID+"/page", expired).status)
	})

	// A page view reads what the API's poll reads: the request (its place from the
	// node's copy of the progress), and, once a draw's proof is shown, the draw's
	// record once per server, not once per view.
	t.Run("a view costs a poll", func(t *testing.T) {
		t.Parallel()
		counter := asynceventtest.NewCounter(asynceventtest.DynamoDB(t))
		// No flush of the node's counts during the test: its writes are not a view's.
		client := asynceventtest.NewTableOn(t, counter, asyncevent.Options{ProgressEvery: time.Hour})
		q := queue.NewMemory(queue.MemoryOptions{})
		srv := newServer(t, ServerOptions{Client: client, Queue: q, RequestTimeout: time.Minute})
		require.NoError(t, srv.MountRequestPage(RequestPageOptions{}))
		ts := newTestServer(t, srv.Handler())
		ctx := context.Background()
		_, err := client.CreateEvent(ctx, asyncevent.EventSettings{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 1})
		require.NoError(t, err)
		p, err := client.Submit(ctx, q, "sale", "ann")
		require.NoError(t, err)
		ann := token(t, "ann", RoleUser)
		pc := &pageClient{t: t, base: ts.URL}
		pc.get("/requests/"+p.RequestID+"/page", ann) // the event's config and its progress, cached
		doURL(t, http.DefaultClient, ts.URL, "GET", "/requests/"+p.RequestID, ann, nil)
		cost := func(get func()) map[string]int {
			before := counter.Snapshot()
			get()
			return counter.Snapshot().Sub(before).Calls
		}
		api := cost(func() { doURL(t, http.DefaultClient, ts.URL, "GET", "/requests/"+p.RequestID, ann, nil) })
		page := cost(func() { pc.get("/requests/"+p.RequestID+"/page", ann) })
		assert.Equal(t, map[string]int{"GetItem": 1}, api)
		assert.Equal(t, api, page, "a view of the page costs a poll of the API")
	})

	// A read refused (a peak's throttling) or a Release that could not be written:
	// a 503 page that asks for the page again by itself (not the Release), may be
	// paused, and tells no error's text.
	t.Run("a failed read or Release: a 503 page that asks for the page again", func(t *testing.T) {
		t.Parallel()
		db := &outage{DynamoDB: asynceventtest.DynamoDB(t)}
		client := asynceventtest.NewTableOn(t, db, asyncevent.Options{})
		q := queue.NewMemory(queue.MemoryOptions{})
		srv := newServer(t, ServerOptions{Client: client, Queue: q, RequestTimeout: time.Minute})
		require.NoError(t, srv.MountRequestPage(RequestPageOptions{}))
		pc := &pageClient{t: t, base: newTestServer(t, srv.Handler()).URL}
		ctx := context.Background()
		_, err := client.CreateEvent(ctx, asyncevent.EventSettings{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 1,
			HoldFor: time.Hour, EndsAt: asyncevent.MillisOf(time.Now().Add(24 * time.Hour))})
		require.NoError(t, err)
		p, err := client.Submit(ctx, q, "sale", "ann")
		require.NoError(t, err)
		processConcurrently(t, client, q, 1)
		ann, path := token(t, "ann", RoleUser), "/requests/"+p.RequestID+"/page"
		page := pc.get(path, ann)
		require.Contains(t, string(page.body), "A seat is held for you")

		db.writes.Store(true)
		failed := pc.send("POST", path+"/release", ann, url.Values{"token": {formToken(t, page)}})
		assert.Equal(t, http.StatusServiceUnavailable, failed.status)
		assert.Contains(t, string(failed.body), `content="10;url=`+path+`"`, "it asks for the page, not the Release")
		assert.Contains(t, string(failed.body), `data-next="`+path+`"`)
		db.writes.Store(false)

		db.reads.Store(true)
		failed = pc.get(path, ann)
		assert.Equal(t, http.StatusServiceUnavailable, failed.status)
		assert.Equal(t, "5", failed.header.Get("Retry-After"))
		assert.Contains(t, string(failed.body), "Try again in a moment")
		assert.Contains(t, string(failed.body), `<a id="pause" href="`+path+`?pause=1"`, "its updates may be paused too")
		assert.NotContains(t, string(failed.body), "outage", "no error's text")
		db.reads.Store(false)
		assert.Contains(t, string(pc.get(path, ann).body), "A seat is held for you", "nothing was released")
	})

	t.Run("no identity: a 401 page that says so, with the service's sign-in", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		require.NoError(t, e.srv.MountRequestPage(RequestPageOptions{SignInURL: "/sign-in?next=here"}))
		pc := &pageClient{t: t, base: e.ts.URL}
		page := pc.get("/requests/r-1/page", "")
		assert.Equal(t, http.StatusUnauthorized, page.status)
		assert.Equal(t, `Bearer realm="asyncevent"`, page.header.Get("WWW-Authenticate"))
		assert.Contains(t, string(page.body), `<a href="/sign-in?next=here">Sign in</a>`)
	})

	t.Run("the options a service brands it with", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		require.Error(t, e.srv.MountRequestPage(RequestPageOptions{StyleURL: "https://cdn.example/brand.css"}), "a style from elsewhere")
		require.Error(t, e.srv.MountRequestPage(RequestPageOptions{StyleURL: `/\cdn.example/brand.css`}), "read by browsers as //cdn.example")
		require.Error(t, e.srv.MountRequestPage(RequestPageOptions{ConfirmURL: "javascript:alert(1)"}))
		require.Error(t, e.srv.MountRequestPage(RequestPageOptions{SignInURL: "//elsewhere.example/"}))
		require.Error(t, e.srv.MountRequestPage(RequestPageOptions{Texts: map[string]map[string]string{"fr": {}}}))
		require.Error(t, e.srv.MountRequestPage(RequestPageOptions{Texts: map[string]map[string]string{"en": {"no.such": "x"}}}))
		require.NoError(t, e.srv.MountRequestPage(RequestPageOptions{StyleURL: "/static/brand.css",
			Texts: map[string]map[string]string{"en": {"waiting.title": "Hang tight"}}}))
		e.createFirstCome("sale", 1)
		_, p := e.participate("sale", "ann")
		page := (&pageClient{t: t, base: e.ts.URL}).get("/requests/"+p.RequestID+"/page", token(t, "ann", RoleUser))
		assert.Contains(t, string(page.body), "Hang tight")
		assert.Contains(t, string(page.body), `<link rel="stylesheet" href="/static/brand.css">`)
		assert.Contains(t, PageTextKeys(), "waiting.title")
	})
}

func TestConfirmURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ template, id, want string }{
		{"", "r1", ""},
		{"/pay/{requestId}", "a b&c?d", "/pay/a%20b&c%3Fd"},
		{"https://shop.example/pay?request={requestId}&from=queue", "a b&c=d", "https://shop.example/pay?request=a+b%26c%3Dd&from=queue"},
		{"/pay/{requestId}?again={requestId}", "x/y", "/pay/x%2Fy?again=x%2Fy"},
	} {
		assert.Equal(t, c.want, confirmURL(c.template, c.id), c.template)
	}
}

// TestRequestPageStates renders every state a request can be in, in both
// languages: its heading and first sentence are the page's own words for it, never
// a status or a result code; what can be done (pay, release, leave) is offered
// only where it can be.
func TestRequestPageStates(t *testing.T) {
	t.Parallel()
	now := time.Now().Truncate(time.Second)
	at := func(d time.Duration) asyncevent.EpochMillis { return asyncevent.MillisOf(now.Add(d)) }
	queued := func(q *asyncevent.QueueEstimate) asyncevent.Request {
		return asyncevent.Request{EventType: asyncevent.FirstCome, Status: asyncevent.StatusQueued, Queue: q}
	}
	final := func(typ asyncevent.EventType, st asyncevent.Status, rc asyncevent.ResultCode) asyncevent.Request {
		return asyncevent.Request{EventType: typ, Status: st, ResultCode: rc, HoldExpiresAt: at(-time.Hour)}
	}
	withPrequeue := func(pq asyncevent.PrequeuePlace) asyncevent.Request {
		r := queued(nil)
		r.Prequeue = &pq
		return r
	}
	lottery := func(cutoff time.Duration) asyncevent.Request {
		return asyncevent.Request{EventType: asyncevent.Lottery, Status: asyncevent.StatusQueued, LotteryCutoffAt: at(cutoff)}
	}
	waitlisted := func(ends time.Duration) asyncevent.Request {
		return asyncevent.Request{EventType: asyncevent.FirstCome, Status: asyncevent.StatusWaitlisted,
			Waitlist: &asyncevent.WaitlistPlace{Ahead: 2, EndsAt: at(ends)}}
	}
	type want struct {
		state, heading, live    string // text keys ("" live: any)
		countdown, release, pay bool
	}
	cases := []struct {
		name string
		req  asyncevent.Request
		want want
	}{
		{"in line", queued(&asyncevent.QueueEstimate{Ahead: 3, Rate: 1, Wait: 3 * time.Second}), want{state: "waiting", heading: "waiting.title"}},
		{"next in line", queued(&asyncevent.QueueEstimate{}), want{state: "waiting", heading: "waiting.title", live: "waiting.aheadFirst"}},
		{"in line, no place read", queued(nil), want{state: "waiting", heading: "waiting.title", live: "waiting.title"}},
		{"its turn", asyncevent.Request{EventType: asyncevent.FirstCome, Status: asyncevent.StatusProcessing}, want{state: "waiting", heading: "waiting.title", live: "waiting.turn"}},
		{"held", asyncevent.Request{EventType: asyncevent.FirstCome, Status: asyncevent.StatusHeld, HoldExpiresAt: at(5 * time.Minute)},
			want{state: "held", heading: "held.title", countdown: true, release: true, pay: true}},
		{"held, run out", asyncevent.Request{EventType: asyncevent.FirstCome, Status: asyncevent.StatusHeld, HoldExpiresAt: at(-time.Second)},
			want{state: "held", heading: "held.ranOut", live: "held.ranOutBody"}},
		{"waitlisted", waitlisted(time.Hour), want{state: "waitlisted", heading: "waitlisted.title", release: true}},
		{"waitlist ended", waitlisted(-time.Second), want{state: "lost", heading: "lost.soldOut.title", live: "waitlisted.ended"}},
		{"pre-queue, before the start", withPrequeue(asyncevent.PrequeuePlace{Seats: 5, StartsAt: at(time.Hour)}),
			want{state: "prequeue", heading: "prequeue.title", live: "prequeue.drawn", countdown: true}},
		{"pre-queue, started, not drawn", withPrequeue(asyncevent.PrequeuePlace{Seats: 5, StartsAt: at(-time.Second)}),
			want{state: "prequeue", heading: "prequeue.title", live: "prequeue.drawn"}},
		{"pre-queue, placed", withPrequeue(asyncevent.PrequeuePlace{Frozen: true, Place: 2, Entries: 5, Seats: 1}), want{state: "prequeue", heading: "prequeue.placeTitle"}},
		{"pre-queue, late", withPrequeue(asyncevent.PrequeuePlace{Frozen: true, Late: true, Entries: 5, Seats: 1}),
			want{state: "prequeue", heading: "prequeue.lateTitle", live: "prequeue.late"}},
		{"lottery, entered", lottery(time.Hour), want{state: "entered", heading: "entered.title", countdown: true}},
		{"lottery, closed", lottery(-time.Second), want{state: "entered", heading: "entered.title", live: "entered.drawing"}},
		{"won a seat", final(asyncevent.FirstCome, asyncevent.StatusSucceeded, asyncevent.ResultSuccess), want{state: "won", heading: "won.seat.title", live: "won.seat.body"}},
		{"won the draw", final(asyncevent.Lottery, asyncevent.StatusSucceeded, asyncevent.ResultSuccess), want{state: "won", heading: "won.lottery.title", live: "won.lottery.body"}},
		{"left the waitlist", asyncevent.Request{EventType: asyncevent.FirstCome, Status: asyncevent.StatusRejected, ResultCode: asyncevent.ResultReleased},
			want{state: "lost", heading: "lost.left.title", live: "lost.left.body"}},
		{"sold out", final(asyncevent.FirstCome, asyncevent.StatusRejected, asyncevent.ResultRejectedCapacity), want{state: "lost", heading: "lost.soldOut.title", live: "lost.soldOut.body"}},
		{"click failed", final(asyncevent.FirstCome, asyncevent.StatusFailedFinal, asyncevent.ResultFailedIngestEnqueue), want{state: "failed", heading: "failed.again.title", live: "failed.again.body"}},
		{"failed on our side", final(asyncevent.FirstCome, asyncevent.StatusFailedFinal, asyncevent.ResultFailedWorker), want{state: "failed", heading: "failed.ours.title", live: "failed.ours.body"}},
	}
	for rc, key := range lostKeys {
		cases = append(cases, struct {
			name string
			req  asyncevent.Request
			want want
		}{"refused " + string(rc), final(asyncevent.FirstCome, asyncevent.StatusRejected, rc), want{state: "lost", heading: key + ".title", live: key + ".body"}})
	}
	p := &requestPage{loc: time.UTC, confirm: "/pay/{requestId}"}
	for _, c := range cases {
		for _, lang := range []string{"en", "ko"} {
			t.Run(c.name+", "+lang, func(t *testing.T) {
				req := c.req
				req.RequestID = "r-1"
				v := p.view(lang, &req, now, seen{first: -1, low: -1})
				words := pageTexts[lang]
				assert.Equal(t, c.want.state, v.State)
				assert.Equal(t, words[c.want.heading], v.Heading)
				if c.want.live != "" {
					assert.Equal(t, words[c.want.live], v.Live)
				}
				assert.NotEmpty(t, v.Live, "every state has its sentence for the live region")
				assert.Equal(t, c.want.countdown, v.Countdown != nil, "countdown")
				assert.Equal(t, c.want.release, v.Release != nil, "release")
				assert.Equal(t, c.want.pay, v.Confirm != "", "pay")
				for _, s := range append([]string{v.Heading, v.Live}, v.Lines...) {
					assert.NotRegexp(t, `[A-Z]{4,}_[A-Z]{3,}|QUEUED|HELD|WAITLISTED|PROCESSING|FAILED`, s, "a status or result code shown")
					assert.NotContains(t, s, "{", "a text left unfilled")
				}
			})
		}
	}
}

// outage is a DynamoDB whose reads (GetItem, Query) or writes fail while asked to.
type outage struct {
	asyncevent.DynamoDB
	reads, writes atomic.Bool
}

var errOutage = errors.New("outage: the table is not answering")

func (o *outage) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if o.reads.Load() {
		return nil, errOutage
	}
	return o.DynamoDB.GetItem(ctx, in, opts...)
}

func (o *outage) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if o.writes.Load() {
		return nil, errOutage
	}
	return o.DynamoDB.UpdateItem(ctx, in, opts...)
}

func (o *outage) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if o.writes.Load() {
		return nil, errOutage
	}
	return o.DynamoDB.TransactWriteItems(ctx, in, opts...)
}

// TestPollEvery: the pace a client is told to ask again at, by state.
func TestPollEvery(t *testing.T) {
	t.Parallel()
	now := time.Now().Truncate(time.Second)
	at := func(d time.Duration) asyncevent.EpochMillis { return asyncevent.MillisOf(now.Add(d)) }
	fc, lot := asyncevent.FirstCome, asyncevent.Lottery
	for _, c := range []struct {
		name string
		req  asyncevent.Request
		want time.Duration
	}{
		{"final", asyncevent.Request{EventType: fc, Status: asyncevent.StatusSucceeded}, 0},
		{"in line, a long wait", asyncevent.Request{EventType: fc, Status: asyncevent.StatusQueued, Queue: &asyncevent.QueueEstimate{Rate: 1, Wait: time.Hour}}, 10 * time.Second},
		{"in line, a short wait", asyncevent.Request{EventType: fc, Status: asyncevent.StatusQueued, Queue: &asyncevent.QueueEstimate{Rate: 1, Wait: 2 * time.Second}}, time.Second},
		{"in line, no rate", asyncevent.Request{EventType: fc, Status: asyncevent.StatusQueued, Queue: &asyncevent.QueueEstimate{}}, 2 * time.Second},
		{"held", asyncevent.Request{EventType: fc, Status: asyncevent.StatusHeld, HoldExpiresAt: at(time.Hour)}, 30 * time.Second},
		{"held, running out", asyncevent.Request{EventType: fc, Status: asyncevent.StatusHeld, HoldExpiresAt: at(3 * time.Second)}, 4 * time.Second},
		{"held, run out", asyncevent.Request{EventType: fc, Status: asyncevent.StatusHeld, HoldExpiresAt: at(-time.Second)}, 5 * time.Second},
		{"waitlisted", asyncevent.Request{EventType: fc, Status: asyncevent.StatusWaitlisted}, 30 * time.Second},
		{"pre-queue, far from the start", asyncevent.Request{EventType: fc, Status: asyncevent.StatusQueued, Prequeue: &asyncevent.PrequeuePlace{StartsAt: at(time.Hour)}}, 30 * time.Second},
		{"pre-queue, near the start", asyncevent.Request{EventType: fc, Status: asyncevent.StatusQueued, Prequeue: &asyncevent.PrequeuePlace{StartsAt: at(7 * time.Second)}}, 8 * time.Second},
		{"pre-queue, started", asyncevent.Request{EventType: fc, Status: asyncevent.StatusQueued, Prequeue: &asyncevent.PrequeuePlace{StartsAt: at(-time.Second)}}, 10 * time.Second},
		{"pre-queue, drawn", asyncevent.Request{EventType: fc, Status: asyncevent.StatusQueued, Prequeue: &asyncevent.PrequeuePlace{Frozen: true, Place: 3}}, 30 * time.Second},
		{"lottery, near the cutoff", asyncevent.Request{EventType: lot, Status: asyncevent.StatusQueued, LotteryCutoffAt: at(9 * time.Second)}, 10 * time.Second},
		{"lottery, closed", asyncevent.Request{EventType: lot, Status: asyncevent.StatusQueued, LotteryCutoffAt: at(-time.Second)}, 30 * time.Second},
	} {
		assert.Equal(t, c.want, pollEvery(&c.req, now), c.name)
	}
}

// A page that shows no place this time passes on what the earlier ones showed.
func TestPageCarriesWhatItShowed(t *testing.T) {
	t.Parallel()
	p := &requestPage{loc: time.UTC}
	req := asyncevent.Request{RequestID: "r-1", EventType: asyncevent.FirstCome, Status: asyncevent.StatusQueued} // no place read
	v := p.view("en", &req, time.Now(), seen{first: 9, low: 4})
	assert.Equal(t, "/requests/r-1/page?first=9&low=4", v.Next)
	req.Queue = &asyncevent.QueueEstimate{Ahead: 6}
	v = p.view("en", &req, time.Now(), seen{first: 9, low: 4})
	assert.Equal(t, "/requests/r-1/page?first=9&low=4", v.Next)
	assert.Equal(t, "6 ahead of you (an estimate, corrected from 4).", v.Live, "the jump back is said")
	assert.Contains(t, v.Lines, pageTexts["en"]["page.backWhy"])
	v = p.view("en", &req, time.Now(), seen{first: -1, low: -1})
	assert.Equal(t, "/requests/r-1/page?first=6&low=6", v.Next)
}
