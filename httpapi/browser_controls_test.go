package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
)

// TestAdminControlsInBrowser works the operator's controls of the event page in a
// real, headless Chromium, on a sold-out first-come event: pause (the page shows
// PAUSED and the trail the admin's sub; a click over the API meanwhile is 409
// event_paused and writes nothing), resume, add seats (a click then wins one),
// move the end, cancel a SUCCEEDED request from its page, and close (only once its
// box is ticked). The audit trail on the page lists each control with its actor,
// and the browser reports no script error or CSP violation.
func TestAdminControlsInBrowser(t *testing.T) {
	t.Parallel()
	execPath := requireChromium(t)
	u := newUIEnv(t)
	ends := time.Now().Add(time.Hour).Truncate(time.Second).UTC()
	_, err := u.client.CreateEvent(context.Background(), asyncevent.EventSettings{EventID: "ops-sale", Name: "Ops sale",
		EventType: asyncevent.FirstCome, CapacityTotal: 2, EndsAt: asyncevent.MillisOf(ends)})
	require.NoError(t, err)
	submitAll(t, u.client, u.queue, "ops-sale", 3)
	processConcurrently(t, u.client, u.queue, 3)

	b := newBrowser(t, execPath, u.ts.URL)
	b.run(chromedp.Navigate(u.ts.URL + "/admin/ui/login"))
	b.waitFor(`document.querySelector("#token") !== null`)
	b.login(u.admin())
	b.waitFor(`document.querySelector("#event-id-input") !== null`)
	b.run(chromedp.Navigate(u.ts.URL + eventURL("ops-sale")))
	b.waitFor(`document.querySelector("#controls") !== null && document.readyState === "complete"`)
	assert.Equal(t, "OPEN", b.text("#event-state"))
	assert.Equal(t, 1, b.count("#no-audit"))
	assert.Equal(t, "0 / 2", b.text("#stat-capacity .value"), "sold out")

	b.control("#pause-button", 1)
	assert.Equal(t, "PAUSED", b.text("#event-state"))
	assert.Equal(t, [][]string{{string(asyncevent.ActionPause), "admin-1"}}, b.audit())
	u.refusedClick("ops-sale", "late", CodeEventPaused)

	b.control("#resume-button", 2)
	assert.Equal(t, "OPEN", b.text("#event-state"))

	b.setValue("#add-seats", "2")
	b.screenshot("admin-add-seats.png")
	b.control("#add-seats-button", 3)
	assert.Equal(t, "4", b.text("#capacity-total"))
	assert.Equal(t, "2 / 4", b.text("#stat-capacity .value"), "the seats added, on the pool")
	status, _ := u.participate("ops-sale", "late")
	assert.Equal(t, http.StatusAccepted, status)
	u.process()

	later := ends.Add(time.Hour)
	b.setValue("#extend-end", later.Format(formTimeLayout))
	b.control("#extend-end-button", 4)
	assert.Equal(t, later.Format(formTimeLayout), b.attr("#extend-end", "value"))
	assert.Equal(t, "3", b.text("#stat-succeeded .value"), "the click after the seats were added won one")

	// Cancel: from a SUCCEEDED request's row to its page, the box ticked.
	b.click(`#request-table tr[data-status="SUCCEEDED"] a`)
	b.waitFor(`location.pathname.startsWith("/admin/ui/requests/") && document.querySelector("#cancel-form") !== null`)
	cancelled := b.text("#request-id")
	assert.False(t, value(b, chromedp.Evaluate[bool](`document.querySelector("#cancel-form").checkValidity()`)), "not without the box")
	b.click("#cancel-confirm")
	b.screenshot("admin-cancel.png")
	b.control("#cancel-button", 5)
	assert.Equal(t, "REJECTED", b.attr(fmt.Sprintf(`#request-table tr[data-request-id=%q]`, cancelled), "data-status"))
	assert.Equal(t, "2", b.text("#stat-succeeded .value"))
	assert.Equal(t, "2 / 4", b.text("#stat-capacity .value"), "the seat cancelled, back on the pool")

	assert.False(t, value(b, chromedp.Evaluate[bool](`document.querySelector("#close-form").checkValidity()`)), "not without the box")
	b.click("#close-confirm")
	b.control("#close-button", 6)
	assert.Equal(t, "CLOSED", b.text("#event-state"))
	assert.Equal(t, 1, b.count("#controls-over"))
	assert.Equal(t, 0, b.count("#add-seats-form"))

	var want [][]string
	for _, a := range []asyncevent.Action{asyncevent.ActionPause, asyncevent.ActionResume, asyncevent.ActionAddCapacity,
		asyncevent.ActionExtendEnd, asyncevent.ActionCancel, asyncevent.ActionClose} {
		want = append(want, []string{string(a), "admin-1"})
	}
	assert.Equal(t, want, b.audit(), "each control on the trail, oldest first, with the admin's sub")
	assert.Contains(t, b.text(`#audit-trail tr[data-action="CANCEL"]`), "request "+cancelled)
	b.screenshot("admin-controls.png")
	assert.Empty(t, b.problems(), "script errors or CSP violations in the browser")
}

// control clicks a control's button and waits for the event page it leads back to,
// with n entries on its audit trail.
func (b *browser) control(button string, n int) {
	b.t.Helper()
	b.click(button)
	b.waitFor(fmt.Sprintf(`location.pathname.startsWith("/admin/ui/events/") && document.readyState === "complete" && `+
		`document.querySelectorAll("#audit-trail tbody tr").length === %d`, n))
}

// audit is the event page's audit trail: each entry's action and actor, oldest
// first.
func (b *browser) audit() [][]string {
	b.t.Helper()
	return value(b, chromedp.Evaluate[[][]string](`Array.from(document.querySelectorAll("#audit-trail tbody tr")).`+
		`map(tr => [tr.dataset.action, tr.querySelector(".actor").textContent])`))
}
