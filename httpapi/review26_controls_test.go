package httpapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

// Over HTTP, a resume of an event that an operator paused and then closed is 200
// with a RESUME entry on its audit trail, though the event is CLOSED and takes no
// click: it should be 409 control_refused with nothing written.
func TestReview26ResumeAfterCloseOverHTTP(t *testing.T) {
	t.Parallel()
	clock := asynceventtest.NewClock(time.Now().Truncate(time.Second))
	e := newEnv(t, withClock(clock))
	admin := e.admin()
	e.createFirstCome("pc", 3)
	e.applied("/admin/events/pc/pause", admin, nil)
	clock.Advance(time.Millisecond)
	e.applied("/admin/events/pc/close", admin, nil)
	clock.Advance(time.Millisecond)
	e.refusedControl("/admin/events/pc/resume", admin, nil, asyncevent.StateClosed, "closed")
}

// Over HTTP, a LOTTERY past its cutoff is CLOSED (the event view says so, a click
// is 409 event_closed), yet a pause and a close of it are 200, each with an audit
// entry.
func TestReview26ControlsOfALotteryPastItsCutoffOverHTTP(t *testing.T) {
	t.Parallel()
	clock := asynceventtest.NewClock(time.Now().Truncate(time.Second))
	e := newEnv(t, withClock(clock))
	admin := e.admin()
	r := e.do("POST", "/admin/events", admin, map[string]any{"eventId": "lot", "eventType": "LOTTERY", "winnerCount": 1,
		"lotteryCutoffAt": rfc(clock.Now().Add(time.Minute))})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	clock.Advance(2 * time.Minute)
	e.refusedClick("lot", "late", CodeEventClosed)
	e.refusedControl("/admin/events/lot/pause", admin, nil, asyncevent.StateClosed, "closed")
	e.refusedControl("/admin/events/lot/close", admin, nil, asyncevent.StateClosed, "closed")
}
