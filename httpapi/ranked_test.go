package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
)

// A ranked event is created through the API with its settle delay (or the default),
// shown in its view, and a bad admission or delay is a 400 that stores nothing.
func TestCreateRankedEvent(t *testing.T) {
	t.Parallel()
	u := newUIEnv(t)
	ctx := context.Background()
	admin := u.admin()

	for _, c := range []struct {
		id, extra string
		settle    time.Duration
	}{
		{"ranked", ``, asyncevent.DefaultRankSettle},
		{"ranked-slow", `,"rankSettleMs":250`, 250 * time.Millisecond},
	} {
		r := u.do("POST", "/admin/events", admin, `{"eventId":"`+c.id+`","eventType":"FIRST_COME","capacityTotal":5,"admission":"RANKED"`+c.extra+`}`)
		require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
		v := decode[EventView](t, r)
		assert.Equal(t, asyncevent.AdmissionRanked, v.Admission)
		assert.Equal(t, c.settle.Milliseconds(), v.RankSettleMs)
		ev, err := u.client.GetEvent(ctx, c.id)
		require.NoError(t, err)
		assert.Equal(t, asyncevent.AdmissionRanked, ev.Admission)
	}
	u.createFirstCome("plain", 5)
	r := u.do("GET", "/admin/events/plain", admin, nil)
	assert.NotContains(t, decode[map[string]any](t, r), "admission", "processing order, no field")

	for i, body := range []string{
		`{"eventType":"FIRST_COME","capacityTotal":5,"admission":"FIFO"}`,
		`{"eventType":"FIRST_COME","capacityTotal":5,"admission":"RANKED","rankSettleMs":5}`,
		`{"eventType":"FIRST_COME","capacityTotal":5,"admission":"RANKED","rankSettleMs":-1}`,
		`{"eventType":"FIRST_COME","capacityTotal":5,"admission":"RANKED","rankSettleMs":10001}`,
		`{"eventType":"FIRST_COME","capacityTotal":5,"rankSettleMs":100}`,
		`{"eventType":"LOTTERY","winnerCount":1,"lotteryCutoffAt":"2099-01-01T00:00:00Z","admission":"RANKED"}`,
	} {
		id := fmt.Sprintf("bad-%d", i)
		r := u.do("POST", "/admin/events", admin, `{"eventId":"`+id+`",`+body[1:])
		assert.Equal(t, http.StatusBadRequest, r.status, "%s: %s", body, r.body)
		assert.Equal(t, CodeInvalidEvent, r.problem(t).Code, body)
		_, err := u.client.GetEvent(ctx, id)
		assert.ErrorIs(t, err, asyncevent.ErrEventNotFound, "%s: nothing stored", body)
	}
}
