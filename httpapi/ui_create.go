package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/asyncevent/asyncevent"
)

// homeView is the home page: a page of the event list, the forms that open an
// event or a request, and the form that creates an event, with what was typed
// into it when it was refused.
type homeView struct {
	Events      eventListPage
	Create      createForm
	CreateError string
}

// createForm is the create-event form's fields, as typed.
type createForm struct {
	EventID, Name, EventType          string
	CapacityTotal, WinnerCount        string
	StartsAt, EndsAt, LotteryCutoffAt string
	AnnounceAt                        string
	PeakClicksPerSecond               string
	IndexShards, CapacityShards       string
	HoldForSeconds                    string
	LayoutOpen                        bool // a layout field was filled in: show the group open
	MaxShards                         int  // for the hint
	MinHoldSeconds, MaxHoldSeconds    int64
}

// createFormFields are the form's names, which are the JSON body's.
var createFormFields = []string{
	"eventId", "name", "eventType", "capacityTotal", "winnerCount", "startsAt", "endsAt", "lotteryCutoffAt",
	"announceAt", "peakClicksPerSecond", "indexShards", "capacityShards", "holdForSeconds", csrfFieldName,
}

// newCreateForm is the form with f's values (nil: an empty form).
func newCreateForm(f url.Values) createForm {
	get := func(name string) string { return strings.TrimSpace(f.Get(name)) }
	c := createForm{
		EventID: get("eventId"), Name: f.Get("name"), EventType: get("eventType"),
		CapacityTotal: get("capacityTotal"), WinnerCount: get("winnerCount"),
		StartsAt: get("startsAt"), EndsAt: get("endsAt"), LotteryCutoffAt: get("lotteryCutoffAt"), AnnounceAt: get("announceAt"),
		PeakClicksPerSecond: get("peakClicksPerSecond"), IndexShards: get("indexShards"), CapacityShards: get("capacityShards"),
		HoldForSeconds: get("holdForSeconds"), MaxShards: asyncevent.MaxShards,
		MinHoldSeconds: int64(asyncevent.MinHoldFor / time.Second), MaxHoldSeconds: int64(asyncevent.MaxHoldFor / time.Second),
	}
	if c.EventType == "" {
		c.EventType = string(asyncevent.FirstCome)
	}
	c.LayoutOpen = c.PeakClicksPerSecond != "" || c.IndexShards != "" || c.CapacityShards != ""
	return c
}

// body turns the form into the JSON route's body: empty fields are absent, numbers
// are decimal, times are RFC 3339 or the browser's datetime-local value, read in
// UTC as the pages show times.
func (c createForm) body() (createEventBody, error) {
	b := createEventBody{EventID: c.EventID, Name: c.Name, EventType: asyncevent.EventType(c.EventType)}
	for _, n := range []struct {
		name, value string
		bits        int // of the body's field, so that nothing wraps around
		set         func(int64)
	}{
		{"capacityTotal", c.CapacityTotal, 64, func(v int64) { b.CapacityTotal = v }},
		{"winnerCount", c.WinnerCount, 64, func(v int64) { b.WinnerCount = v }},
		{"indexShards", c.IndexShards, strconv.IntSize, func(v int64) { b.IndexShards = int(v) }},
		{"capacityShards", c.CapacityShards, strconv.IntSize, func(v int64) { b.CapacityShards = int(v) }},
		{"holdForSeconds", c.HoldForSeconds, 64, func(v int64) { b.HoldForSeconds = v }},
	} {
		if n.value == "" {
			continue
		}
		v, err := strconv.ParseInt(n.value, 10, n.bits)
		if err != nil {
			return b, formError(n.name, "a whole number", n.value)
		}
		n.set(v)
	}
	if c.PeakClicksPerSecond != "" {
		v, err := strconv.ParseFloat(c.PeakClicksPerSecond, 64)
		if err != nil {
			return b, formError("peakClicksPerSecond", "a number of clicks per second", c.PeakClicksPerSecond)
		}
		b.PeakClicksPerSecond = v
	}
	for _, t := range []struct {
		name, value string
		dst         *Timestamp
	}{{"startsAt", c.StartsAt, &b.StartsAt}, {"endsAt", c.EndsAt, &b.EndsAt},
		{"lotteryCutoffAt", c.LotteryCutoffAt, &b.LotteryCutoffAt}, {"announceAt", c.AnnounceAt, &b.AnnounceAt}} {
		if t.value == "" {
			continue
		}
		at, err := parseFormTime(t.value)
		if err != nil {
			return b, formError(t.name, "a time such as 2026-05-01T09:00 (UTC) or RFC 3339", t.value)
		}
		*t.dst = Timestamp(asyncevent.MillisOf(at))
	}
	return b, nil
}

func formError(field, want, got string) error {
	return newHTTPError(http.StatusBadRequest, CodeInvalidBody, fmt.Sprintf("%s must be %s, not %q", field, want, truncate(got, 40)))
}

// parseFormTime reads an RFC 3339 time, or a datetime-local value (no zone: UTC).
func parseFormTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02T15:04:05.999999999"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a time", s)
}

// createEvent is POST /admin/ui/events: the home page's create-event form, the same
// event as POST /admin/events (its layout included). Created, it goes to the event's
// page; refused, the form is shown again with what was typed and why.
func (u *adminUI) createEvent(w http.ResponseWriter, r *http.Request, sess *uiSession) error {
	for name := range r.PostForm {
		if !slices.Contains(createFormFields, name) {
			return newHTTPError(http.StatusBadRequest, CodeUnknownField, "the form has a field "+strconv.Quote(truncate(name, 40))+" it does not know")
		}
	}
	form := newCreateForm(r.PostForm)
	ev, err := func() (*asyncevent.Event, error) {
		body, err := form.body()
		if err != nil {
			return nil, err
		}
		cfg, err := body.config()
		if err != nil {
			return nil, err
		}
		return u.client.CreateEvent(r.Context(), cfg)
	}()
	if err != nil {
		p, _, internal := problemFor(err)
		if internal {
			return err
		}
		return u.renderHome(w, r, sess, url.Values{}, p.Status, form, p.Detail)
	}
	http.Redirect(w, r, eventURL(ev.EventID), http.StatusSeeOther)
	return nil
}
