package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
)

// TestUICreateEventWithLayout creates events from the home page's form, with a
// layout given as shards or as a peak, and reads the layout and each capacity
// shard's seats on the event page; a refused form is shown again with what was
// typed and why, and stores nothing.
func TestUICreateEventWithLayout(t *testing.T) {
	t.Parallel()
	u := newUIEnv(t)
	ctx := context.Background()
	u.signIn()

	home := u.get("/admin/ui/")
	require.Equal(t, http.StatusOK, home.status, "body: %s", home.body)
	assert.Contains(t, string(home.body), `id="create-form"`)
	assert.Regexp(t, `<details class="span" id="layout-group">`, string(home.body), "the layout group starts closed")
	tok := csrf(t, home)

	create := func(fields map[string]string) response {
		t.Helper()
		form := url.Values{"csrf": {tok}}
		for k, v := range fields {
			form.Set(k, v)
		}
		return u.post("/admin/ui/events", form)
	}

	// Shards given: K = 4, C = 3.
	r := create(map[string]string{"eventId": "sharded", "name": "Sharded sale", "eventType": "FIRST_COME", "capacityTotal": "7",
		"indexShards": "4", "capacityShards": "3", "startsAt": "2020-01-01T09:00", "endsAt": "2099-01-01T00:00:00"})
	require.Equal(t, http.StatusSeeOther, r.status, "body: %s", r.body)
	assert.Equal(t, "/admin/ui/events/sharded", r.header.Get("Location"))
	ev, err := u.client.GetEvent(ctx, "sharded")
	require.NoError(t, err)
	assert.Equal(t, 4, ev.IndexShards)
	assert.Equal(t, 3, ev.CapacityShards)
	assert.Equal(t, "Sharded sale", ev.Name)
	assert.Equal(t, asyncevent.MillisOf(time.Date(2020, 1, 1, 9, 0, 0, 0, time.UTC)), ev.StartsAt, "a datetime-local value is UTC")
	assert.Equal(t, asyncevent.MillisOf(time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)), ev.EndsAt)

	page := u.get("/admin/ui/events/sharded")
	require.Equal(t, http.StatusOK, page.status, "body: %s", page.body)
	body := string(page.body)
	assert.Contains(t, body, `data-index-shards="4" data-capacity-shards="3"`)
	assert.Contains(t, body, "layout: 4 index shards, 3 capacity shards")
	assert.Equal(t, []int{3, 2, 2}, shardSeats(t, body), "7 seats over 3 shards")

	for i := range 10 {
		u.participate("sharded", fmt.Sprintf("user-%02d", i))
	}
	u.processN(100)
	page = u.get("/admin/ui/events/sharded")
	require.Equal(t, http.StatusOK, page.status, "body: %s", page.body)
	body = string(page.body)
	assert.Equal(t, []int{0, 0, 0}, shardSeats(t, body), "every shard sold out")
	assert.Equal(t, 3, strings.Count(body, `<li class="shard warn"`))
	assert.Equal(t, 10, len(rowIDs(body)), "the requests of the 4 index shards in one table")
	assert.Regexp(t, `id="stat-capacity">\s*<div class="label">[^<]*</div>\s*<div class="value">0 / 7</div>`, body)

	// A peak: the layout is derived as the CLI's -peak derives it.
	r = create(map[string]string{"eventId": "peak", "eventType": "FIRST_COME", "capacityTotal": "1000", "peakClicksPerSecond": "20000"})
	require.Equal(t, http.StatusSeeOther, r.status, "body: %s", r.body)
	ev, err = u.client.GetEvent(ctx, "peak")
	require.NoError(t, err)
	k, c := asyncevent.ShardsFor(20000, 0)
	assert.Equal(t, k, ev.IndexShards)
	assert.Equal(t, c, ev.CapacityShards)
	page = u.get("/admin/ui/events/peak")
	require.Equal(t, http.StatusOK, page.status)
	assert.Len(t, shardSeats(t, string(page.body)), c)

	// A lottery: index shards only; a default event shows its single keys.
	r = create(map[string]string{"eventId": "lot", "eventType": "LOTTERY", "winnerCount": "2", "lotteryCutoffAt": "2099-01-01T00:00", "indexShards": "2"})
	require.Equal(t, http.StatusSeeOther, r.status, "body: %s", r.body)
	page = u.get("/admin/ui/events/lot")
	require.Equal(t, http.StatusOK, page.status, "body: %s", page.body)
	assert.Contains(t, string(page.body), `data-index-shards="2" data-capacity-shards="0"`)
	assert.Contains(t, string(page.body), "layout: 2 index shards<")
	assert.NotContains(t, string(page.body), `id="capacity-shards"`)
	r = create(map[string]string{"eventId": "plain", "eventType": "FIRST_COME", "capacityTotal": "5"})
	require.Equal(t, http.StatusSeeOther, r.status, "body: %s", r.body)
	page = u.get("/admin/ui/events/plain")
	assert.Contains(t, string(page.body), "layout: single keys")
	assert.NotContains(t, string(page.body), `id="capacity-shards"`)

	// Refusals: the form again, with what was typed, the layout group open.
	for _, c := range []struct {
		name   string
		fields map[string]string
		status int
		detail string
	}{
		{"peak and shards", map[string]string{"eventType": "FIRST_COME", "capacityTotal": "10", "peakClicksPerSecond": "5000", "indexShards": "3"}, http.StatusBadRequest, "not both"},
		{"more capacity shards than seats", map[string]string{"eventType": "FIRST_COME", "capacityTotal": "2", "capacityShards": "3"}, http.StatusBadRequest, "more than the capacity"},
		{"too many index shards", map[string]string{"eventType": "FIRST_COME", "capacityTotal": "2", "indexShards": strconv.Itoa(asyncevent.MaxShards + 1)}, http.StatusBadRequest, "indexShards"},
		{"negative peak", map[string]string{"eventType": "FIRST_COME", "capacityTotal": "2", "peakClicksPerSecond": "-1"}, http.StatusBadRequest, "peakClicksPerSecond"},
		{"not a number", map[string]string{"eventType": "FIRST_COME", "capacityTotal": "2", "capacityShards": "three"}, http.StatusBadRequest, "capacityShards must be a whole number"},
		{"not a time", map[string]string{"eventType": "FIRST_COME", "capacityTotal": "2", "endsAt": "tomorrow", "indexShards": "2"}, http.StatusBadRequest, "endsAt must be a time"},
		{"capacity shards on a lottery", map[string]string{"eventType": "LOTTERY", "winnerCount": "1", "lotteryCutoffAt": "2099-01-01T00:00", "capacityShards": "2"}, http.StatusBadRequest, "FIRST_COME"},
	} {
		c.fields["eventId"] = "refused"
		r := create(c.fields)
		require.Equal(t, c.status, r.status, "%s: %s", c.name, r.body)
		body := string(r.body)
		assert.Regexp(t, `id="create-error" role="alert">The event was not created: [^<]*`+regexp.QuoteMeta(c.detail), body, c.name)
		assert.Contains(t, body, `<details class="span" id="layout-group" open>`, c.name)
		assert.Contains(t, body, `id="create-id" value="refused"`, c.name)
		_, err := u.client.GetEvent(ctx, "refused")
		require.ErrorIs(t, err, asyncevent.ErrEventNotFound, "%s: stored", c.name)
	}
	r = create(map[string]string{"eventId": "plain", "eventType": "FIRST_COME", "capacityTotal": "5"})
	assert.Equal(t, http.StatusConflict, r.status)
	assert.Contains(t, string(r.body), `id="create-error"`)
	r = create(map[string]string{"eventId": "x", "eventType": "FIRST_COME", "capacityTotal": "5", "capacity": "5"})
	assert.Equal(t, http.StatusBadRequest, r.status, "an unknown field")
	r = u.post("/admin/ui/events", url.Values{"eventId": {"no-csrf"}, "eventType": {"FIRST_COME"}, "capacityTotal": {"1"}})
	assert.Equal(t, http.StatusForbidden, r.status)
	_, err = u.client.GetEvent(ctx, "no-csrf")
	require.ErrorIs(t, err, asyncevent.ErrEventNotFound)
}

var shardSeat = regexp.MustCompile(`<li class="shard[^"]*" data-shard="(\d+)" data-remaining="(\d+)"`)

// shardSeats returns the seats left in each capacity shard the event page lists, in
// its order, which must be shard order.
func shardSeats(t *testing.T, body string) []int {
	t.Helper()
	var seats []int
	for i, m := range shardSeat.FindAllStringSubmatch(body, -1) {
		require.Equal(t, strconv.Itoa(i), m[1], "shard order")
		n, err := strconv.Atoi(m[2])
		require.NoError(t, err)
		seats = append(seats, n)
	}
	return seats
}
