package httpapi

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/queue"
)

// chromiumPath is Debian's chromium, which scripts/ensure-chromium.sh installs.
// CHROMIUM names another Chromium binary.
const chromiumPath = "/usr/bin/chromium"

// screenshotPath is the README's screenshot, rewritten by the browser test when
// UPDATE_SCREENSHOT=1.
const screenshotPath = "../docs/admin-event.png"

// TestAdminUIInBrowser drives the admin UI in a real, headless Chromium: sign in,
// open a first-come event of 200 requests (half of them processed), page through
// its requests, filter them by status, open a request, run and verify a lottery's
// draw, create a sharded event from the home page's form and read its shards, sign
// out. It asserts on the DOM, checks that the browser reported no
// script error and no Content-Security-Policy violation, and saves a screenshot of
// the event page under the test's temp dir.
func TestAdminUIInBrowser(t *testing.T) {
	t.Parallel()
	execPath := requireChromium(t)

	u := newUIEnv(t)
	ctx := context.Background()

	// A lottery whose entries were queued two hours ago, cutoff one hour ago: the
	// server's clock is past the cutoff and the settle window, so it can be drawn.
	past := func() time.Time { return time.Now().Add(-2 * time.Hour) }
	pastClient, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: u.client.TableName(), StatusLog: true, Clock: past})
	require.NoError(t, err)
	pastQueue := queue.NewMemory(queue.MemoryOptions{Clock: past})
	_, err = pastClient.CreateEvent(ctx, asyncevent.EventSettings{EventID: "spring-lottery", Name: "Spring lottery", EventType: asyncevent.Lottery,
		WinnerCount: 5, LotteryCutoffAt: asyncevent.MillisOf(past().Add(time.Hour))})
	require.NoError(t, err)
	submitAll(t, pastClient, pastQueue, "spring-lottery", 30)
	processConcurrently(t, pastClient, pastQueue, 30)

	// A first-come event: 200 requests for 50 seats, the first 100 processed.
	_, err = u.client.CreateEvent(ctx, asyncevent.EventSettings{EventID: "spring-sale", Name: "Spring sale", EventType: asyncevent.FirstCome, CapacityTotal: 50})
	require.NoError(t, err)
	submitAll(t, u.client, u.queue, "spring-sale", 200)
	processConcurrently(t, u.client, u.queue, 100)

	b := newBrowser(t, execPath, u.ts.URL)

	// Signed out, the UI sends the browser to its login form. A user's token is 403.
	b.run(chromedp.Navigate(u.ts.URL + "/admin/ui/"))
	b.waitFor(`location.pathname === "/admin/ui/login" && document.querySelector("#token") !== null`)
	b.login(token(t, "ann", RoleUser))
	b.waitFor(`document.querySelector("#login-error") !== null`)
	assert.Contains(t, b.text("#login-error"), "not an admin")

	// An admin's token signs in; the session cookie is out of the page's reach.
	b.login(u.admin())
	b.waitFor(`document.querySelector("#event-id-input") !== null`)
	assert.Equal(t, "admin-1", b.text("#signed-in-as"))
	assert.NotContains(t, value(b, chromedp.Evaluate[string](`String(document.cookie)`)), sessionCookieName, "HttpOnly")

	// The event page, from the home form.
	b.run(
		chromedp.SetValue(chromedp.CSS("#event-id-input"), "spring-sale"),
		chromedp.Submit(chromedp.CSS("#event-id-input")),
	)
	b.waitFor(`location.pathname === "/admin/ui/events/spring-sale" && document.querySelector("#request-table") !== null`)
	assert.Equal(t, "Spring sale", b.text("#event-name"))
	for id, want := range map[string]string{
		"stat-requests":  "200",
		"stat-succeeded": "50",
		"stat-rejected":  "50",
		"stat-inflight":  "100",
		"stat-failed":    "0",
		"stat-capacity":  "0 / 50",
	} {
		assert.Equal(t, want, b.text("#"+id+" .value"), id)
	}
	assert.NotEqual(t, "—", b.text("#stat-queue-wait .value"))
	assert.Equal(t, 200, b.count("#outcome-chart g.col"), "one chart column per request")
	assert.Equal(t, "capacity 50", b.text("#capacity-marker"))
	assert.Equal(t, 1, b.count(".grid-chart.with-queue > #queue #queue-depth"), "the queue panel, beside the outcome chart")
	assert.Equal(t, 50, b.count("#request-table tbody tr"))
	assert.Equal(t, "#1–#50", b.text("#page-range"))
	page1 := b.rowIDs()

	// Paging: the next page continues the queue order.
	b.run(chromedp.Click(chromedp.CSS("#next-page")))
	b.waitFor(`document.querySelector("#page-range")?.textContent === "#51–#100"`)
	page2 := b.rowIDs()
	assert.Len(t, page2, 50)
	for _, id := range page2 {
		assert.NotContains(t, page1, id, "a request on two pages")
	}
	b.run(chromedp.Click(chromedp.CSS("#first-page")))
	b.waitFor(`document.querySelector("#page-range")?.textContent === "#1–#50"`)
	assert.Equal(t, page1, b.rowIDs())

	// Newest first.
	b.run(chromedp.Click(chromedp.CSS("#order-desc")))
	// The toggle comes before the table: wait for the whole page, not just for it.
	b.waitFor(`location.search === "?order=desc" && document.querySelector("#order-desc.active") !== null && document.readyState === "complete"`)
	desc := b.rowIDs()
	require.Len(t, desc, 50)
	assert.NotContains(t, page1, desc[0], "the newest request is not among the oldest 50")
	b.run(chromedp.Click(chromedp.CSS("#order-asc")))
	b.waitFor(`location.search === "" && document.querySelector("#order-asc.active") !== null`)

	// Filter by status with the form's button (the value set without a change
	// event, as a browser without scripts would)…
	value(b, chromedp.Evaluate[bool](`(document.querySelector("#status-filter").value = "SUCCEEDED") !== ""`))
	b.run(chromedp.Click(chromedp.CSS("#filter-apply")))
	b.waitFor(`location.search === "?status=SUCCEEDED" && document.readyState === "complete"`)
	assert.Equal(t, 50, b.count(`#request-table tbody tr[data-status="SUCCEEDED"]`))
	assert.Equal(t, 50, b.count(`#request-table tbody tr`))
	// …and by choosing one in the select: SetValue fires its change event, and
	// admin.js submits the form.
	b.run(chromedp.SetValue(chromedp.CSS("#status-filter"), "REJECTED"))
	b.waitFor(`location.search === "?status=REJECTED" && document.readyState === "complete"`)
	assert.Equal(t, 50, b.count(`#request-table tbody tr[data-status="REJECTED"]`))
	assert.Equal(t, 50, b.count(`#request-table tbody tr`))

	// A request: its fields, latencies and status log.
	rejected := b.rowIDs()[0]
	b.run(chromedp.Click(chromedp.CSS(`#request-table tbody tr:first-child a`)))
	b.waitFor(`location.pathname.startsWith("/admin/ui/requests/") && document.querySelector("#status-log") !== null`)
	assert.Equal(t, rejected, b.text("#request-id"))
	assert.Equal(t, "REJECTED", b.text("#request-status"))
	assert.Equal(t, "REJECTED_CAPACITY", b.text("#request-resultcode"))
	assert.Equal(t, 4, b.count(".steps .step.done"), "requested, queued, started, finished")
	assert.Equal(t, 3, b.count(".steps .gap.known"))
	assert.Contains(t, []int{3, 4}, b.count("#status-log li"), "RECEIVED, QUEUED, (PROCESSING when its home shard was empty before the sell-out,) REJECTED")
	assert.Equal(t, "REJECTED", b.attr("#status-log li:last-child", "data-to"))
	b.screenshot("admin-request.png")
	b.run(chromedp.Click(chromedp.CSS("#event-link")))
	b.waitFor(`location.pathname === "/admin/ui/events/spring-sale" && document.readyState === "complete"`)

	// The lottery: draw, then the verification on the event page.
	b.run(chromedp.Navigate(u.ts.URL + eventURL("spring-lottery")))
	b.waitFor(`document.querySelector("#draw-button") !== null`)
	assert.Equal(t, "Run the draw", b.text("#draw-button"))
	assert.Equal(t, "COLLECTING", b.text("#draw-phase"))
	assert.Equal(t, "30", b.text("#stat-inflight .value"), "30 entries waiting for the draw")
	b.run(chromedp.Click(chromedp.CSS("#draw-button")))
	b.waitFor(`document.querySelector("#verification") !== null`)
	assert.Equal(t, "true", b.attr("#verification", "data-ok"))
	assert.Contains(t, b.text("#verification"), "Verified.")
	assert.Equal(t, "ANNOUNCED", b.text("#draw-phase"))
	assert.Equal(t, "30", b.text("#draw-entries"))
	assert.Equal(t, "5", b.text("#stat-succeeded .value"))
	assert.Equal(t, "25", b.text("#stat-rejected .value"))
	assert.Equal(t, 5, b.count(".winners a"))
	assert.Equal(t, 0, b.count("#draw-button"), "an announced draw has nothing left to run")
	b.screenshot("admin-lottery.png")

	// The rest of the first-come event is processed; the page, refreshed, is the
	// README's screenshot.
	processConcurrently(t, u.client, u.queue, 100)
	b.run(
		chromedp.Navigate(u.ts.URL+eventURL("spring-sale")),
		chromedp.WaitVisible(chromedp.CSS("#outcome-chart")),
	)
	assert.Equal(t, "50", b.text("#stat-succeeded .value"))
	assert.Equal(t, "150", b.text("#stat-rejected .value"))
	assert.Equal(t, "0", b.text("#stat-inflight .value"))
	png := b.screenshot("admin-event.png")
	if os.Getenv("UPDATE_SCREENSHOT") == "1" {
		require.NoError(t, os.MkdirAll(filepath.Dir(screenshotPath), 0o755))
		require.NoError(t, os.WriteFile(screenshotPath, png, 0o644))
		t.Logf("wrote %s", screenshotPath)
	}

	// An event with a layout, from the home page's form: the layout group opens,
	// the shards are given, and the event page shows them and each shard's seats.
	b.run(chromedp.Navigate(u.ts.URL + "/admin/ui/"))
	b.waitFor(`document.querySelector("#create-form") !== null`)
	assert.False(t, value(b, chromedp.Evaluate[bool](`document.querySelector("#layout-group").open`)), "the layout group starts closed")
	b.run(
		chromedp.SetValue(chromedp.CSS("#create-id"), "sharded-sale"),
		chromedp.SetValue(chromedp.CSS("#create-name"), "Sharded sale"),
		chromedp.SetValue(chromedp.CSS("#create-capacity"), "30"),
		chromedp.Click(chromedp.CSS("#layout-group summary")),
	)
	b.waitFor(`document.querySelector("#layout-group").open`)
	b.run(
		chromedp.SetValue(chromedp.CSS("#create-index-shards"), "4"),
		chromedp.SetValue(chromedp.CSS("#create-capacity-shards"), "3"),
	)
	b.screenshot("admin-create.png")
	b.run(chromedp.Click(chromedp.CSS("#create-submit")))
	b.waitFor(`location.pathname === "/admin/ui/events/sharded-sale" && document.querySelector("#event-layout") !== null`)
	assert.Equal(t, "Sharded sale", b.text("#event-name"))
	assert.Equal(t, "layout: 4 index shards, 3 capacity shards", b.text("#event-layout"))
	assert.Equal(t, 3, b.count("#capacity-shards .shard"))
	assert.Equal(t, 0, b.count("#capacity-shards .shard.warn"))
	submitAll(t, u.client, u.queue, "sharded-sale", 60)
	processConcurrently(t, u.client, u.queue, 60)
	b.run(chromedp.Navigate(u.ts.URL + eventURL("sharded-sale")))
	b.waitFor(`document.querySelector("#request-table") !== null`)
	assert.Equal(t, 3, b.count("#capacity-shards .shard.warn"), "every shard sold out")
	assert.Equal(t, "30", b.text("#stat-succeeded .value"))
	assert.Equal(t, "0 / 30", b.text("#stat-capacity .value"))
	assert.Equal(t, 50, b.count("#request-table tbody tr"), "a full page merged from the 4 index shards")
	b.screenshot("admin-sharded.png")

	// An event with holds: 12 requests for 5 seats held for 10 minutes, the rest
	// waitlisted; the holds section counts them and the table filtered by HELD shows
	// each hold's time left.
	_, err = u.client.CreateEvent(ctx, asyncevent.EventSettings{EventID: "held-sale", Name: "Held sale", EventType: asyncevent.FirstCome,
		CapacityTotal: 5, HoldFor: 10 * time.Minute, EndsAt: asyncevent.MillisOf(time.Now().Add(24 * time.Hour))})
	require.NoError(t, err)
	submitAll(t, u.client, u.queue, "held-sale", 12)
	processConcurrently(t, u.client, u.queue, 12)
	b.run(chromedp.Navigate(u.ts.URL + eventURL("held-sale")))
	b.waitFor(`document.querySelector("#seat-chart") !== null && document.readyState === "complete"`)
	assert.Equal(t, "5", b.text("#stat-held .value"))
	assert.Equal(t, "7", b.text("#stat-waitlisted .value"))
	assert.Equal(t, 1, b.count(`#seat-chart rect[data-seats="held"]`))
	assert.Equal(t, 5, b.count(`#outcome-chart rect.o-held`))
	assert.Equal(t, 7, b.count(`#outcome-chart rect.o-waitlisted`))
	b.screenshot("admin-holds.png")
	b.run(chromedp.SetValue(chromedp.CSS("#status-filter"), "HELD"))
	b.waitFor(`location.search === "?status=HELD" && document.readyState === "complete"`)
	assert.Equal(t, 5, b.count(`#request-table tbody tr[data-status="HELD"]`))
	assert.Contains(t, b.text(`#request-table tbody tr:first-child .hold-left`), " left")

	// Sign out: the pages send the browser to the login form again.
	b.run(chromedp.Click(chromedp.CSS("#logout")))
	b.waitFor(`location.pathname === "/admin/ui/login" && document.querySelector("#token") !== null`)
	b.run(chromedp.Navigate(u.ts.URL + eventURL("spring-sale")))
	b.waitFor(`location.pathname === "/admin/ui/login" && document.readyState === "complete"`)

	assert.Empty(t, b.problems(), "script errors or CSP violations in the browser")
}

// requireChromium returns the Chromium to drive, and fails the test (never skips
// it) when there is none.
func requireChromium(t *testing.T) string {
	t.Helper()
	p := chromiumPath
	if env := os.Getenv("CHROMIUM"); env != "" {
		p = env
	}
	if _, err := exec.LookPath(p); err != nil {
		t.Fatalf("the admin UI's browser test needs Chromium at %s: %v\n"+
			"install it with scripts/ensure-chromium.sh (make test runs it first), or set CHROMIUM to a Chromium binary", p, err)
	}
	return p
}

// submitAll submits n users' participations, several at a time.
func submitAll(t *testing.T, c *asyncevent.Client, q queue.Queue, eventID string, n int) {
	t.Helper()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	users := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range users {
				if _, err := c.Submit(context.Background(), q, eventID, fmt.Sprintf("user-%03d", i)); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		users <- i
	}
	close(users)
	wg.Wait()
	require.Empty(t, errs)
}

// processConcurrently processes n messages of q with three workers, each taking
// batches of up to 10 off the queue, as a Worker with some concurrency would: the
// outcomes then stray a little from queue order, as they do in production.
func processConcurrently(t *testing.T, c *asyncevent.Client, q *queue.Memory, n int) {
	t.Helper()
	ctx := context.Background()
	p := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{})
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		left     = n
		problems []string
	)
	// take reserves up to 10 of the messages left; give returns what a receive
	// did not deliver.
	take := func() int {
		mu.Lock()
		defer mu.Unlock()
		k := min(10, left)
		left -= k
		return k
	}
	report := func(msgs ...string) {
		mu.Lock()
		defer mu.Unlock()
		problems = append(problems, msgs...)
	}
	for range 3 {
		wg.Go(func() {
			for k := take(); k > 0; k = take() {
				ds, err := q.Receive(ctx, k, 0, 5*time.Minute)
				if err != nil || len(ds) != k {
					report(fmt.Sprintf("receive %d: got %d, %v", k, len(ds), err))
					return
				}
				report(asynceventtest.Process(ctx, p, ds)...)
				var receipts []string
				for _, d := range ds {
					receipts = append(receipts, d.Receipt)
				}
				if err := q.Delete(ctx, receipts...); err != nil {
					report(err.Error())
				}
			}
		})
	}
	wg.Wait()
	require.Empty(t, problems)
}

// browser is a headless Chromium on a fresh profile, with the test's helpers.
type browser struct {
	t       *testing.T
	ctx     context.Context // the browser's: no deadline, it would end the browser
	tempDir string          // where screenshots go

	mu   sync.Mutex
	errs []string // script errors and CSP violations the browser reported
}

// actionTimeout bounds each step of the browser test.
const actionTimeout = 30 * time.Second

func newBrowser(t *testing.T, execPath, base string) *browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(execPath),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		// The machine may have no network: without these, Chromium hangs on
		// lookups of its own services.
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1360, 1050),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx, chromedp.WithErrorf(t.Logf))
	// Cleanups run last-in first-out: the browser is gone before its profile
	// directory (an earlier t.TempDir) is removed.
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	b := &browser{t: t, ctx: ctx, tempDir: t.TempDir()}
	start := time.Now()
	require.NoError(t, chromedp.Do(ctx), "start chromium") // starts the browser, bound to ctx
	t.Logf("chromium started in %v for %s", time.Since(start).Round(time.Millisecond), base)
	require.NoError(t, chromedp.Listen(ctx, func(ev any) {
		var msg string
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			msg = "exception: " + ev.ExceptionDetails.Text
			if ev.ExceptionDetails.Exception != nil {
				msg += " " + ev.ExceptionDetails.Exception.Description
			}
		case *log.EventEntryAdded:
			if ev.Entry.Source == log.EntrySourceSecurity || ev.Entry.Source == log.EntrySourceJavascript ||
				strings.Contains(ev.Entry.Text, "Content Security Policy") {
				msg = string(ev.Entry.Source) + ": " + ev.Entry.Text
			}
		}
		if msg != "" {
			b.mu.Lock()
			b.errs = append(b.errs, msg)
			b.mu.Unlock()
		}
	}))
	_, err := chromedp.Call(ctx, log.Enable, cdp.Empty{})
	require.NoError(t, err)
	b.run(chromedp.EmulateViewport(1360, 1050))
	return b
}

// login submits the login form the browser shows with tok.
func (b *browser) login(tok string) {
	b.t.Helper()
	b.setValue("#token", tok)
	b.click("#login-submit")
}

// step returns a context for one step, bounded by actionTimeout.
func (b *browser) step() (context.Context, context.CancelFunc) {
	return context.WithTimeout(b.ctx, actionTimeout)
}

func (b *browser) run(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	require.NoError(b.t, chromedp.Do(ctx, actions...))
}

// value runs an action that returns a value.
func value[T any](b *browser, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	require.NoError(b.t, err)
	return v
}

// waitFor waits until the JavaScript expression is true on the current page. It
// polls with plain evaluations, which, unlike a poll task, outlive the navigation
// that a click may start.
func (b *browser) waitFor(expr string) {
	b.t.Helper()
	deadline := time.Now().Add(actionTimeout)
	var lastErr error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("Boolean("+expr+")"))
		cancel()
		if err == nil && ok {
			return
		}
		lastErr = err
		time.Sleep(50 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	where, _ := chromedp.Run(ctx, chromedp.Location())
	body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 2000) : ""`))
	b.t.Fatalf("waiting for %s (last error: %v)\nat %s:\n%s", expr, lastErr, where, body)
}

// on waits for an element matching the CSS selector and evaluates expr on the
// first one (el), as a string. It goes through JavaScript, not chromedp's queries:
// those hold DOM node IDs, and the page a click loaded may replace the document
// under them before chromedp has learnt of it ("No node with given id found").
func (b *browser) on(sel, expr string) string {
	b.t.Helper()
	q := fmt.Sprintf("document.querySelector(%q)", sel)
	b.waitFor(q + " !== null")
	return value(b, chromedp.Evaluate[string](fmt.Sprintf(`(el => String(%s ?? ""))(%s)`, expr, q)))
}

// text is the text content of the first element matching the CSS selector, with
// its runs of white space made single spaces. (Text, the visible text, is
// undefined for SVG elements.)
func (b *browser) text(sel string) string {
	b.t.Helper()
	return strings.Join(strings.Fields(b.on(sel, "el.textContent")), " ")
}

func (b *browser) attr(sel, name string) string {
	b.t.Helper()
	return b.on(sel, fmt.Sprintf("el.getAttribute(%q)", name))
}

// click clicks the first element matching the CSS selector, as a user would a
// link, a box or a form's button (its form's checks included), once the script
// that asks it has answered: the click may leave the page.
func (b *browser) click(sel string) {
	b.t.Helper()
	b.on(sel, "void setTimeout(() => el.click(), 0)")
}

// setValue types v into the form field matching the CSS selector: its value, and
// the change event a user's typing ends with.
func (b *browser) setValue(sel, v string) {
	b.t.Helper()
	b.on(sel, fmt.Sprintf(`void (el.value = %q, el.dispatchEvent(new Event("change", {bubbles: true})))`, v))
}

func (b *browser) count(sel string) int {
	b.t.Helper()
	return value(b, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)))
}

// rowIDs are the request IDs of the table's rows, in order.
func (b *browser) rowIDs() []string {
	b.t.Helper()
	return value(b, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#request-table tbody tr")).map(tr => tr.dataset.requestId)`))
}

// screenshot saves the viewport as name under the test's temp dir, and under
// $ADMIN_UI_SCREENSHOTS too when that is set (to look at them after the test).
func (b *browser) screenshot(name string) []byte {
	b.t.Helper()
	png := value(b, chromedp.CaptureScreenshot())
	dirs := []string{b.tempDir}
	if d := os.Getenv("ADMIN_UI_SCREENSHOTS"); d != "" {
		require.NoError(b.t, os.MkdirAll(d, 0o755))
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		require.NoError(b.t, os.WriteFile(p, png, 0o644))
		b.t.Logf("screenshot: %s (%d bytes)", p, len(png))
	}
	return png
}

func (b *browser) problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errs...)
}
