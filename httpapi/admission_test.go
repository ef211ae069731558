package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
)

// An Admission's refusal is a 403 or a 429 problem and nothing is written; its
// other errors are a 500; what it admits goes on to Submit.
func TestAdmissionRefusesBeforeAnythingIsWritten(t *testing.T) {
	t.Parallel()
	challenge := func(r *http.Request, _ Principal, _ string) error {
		switch r.Header.Get("X-Challenge") {
		case "passed":
			return nil
		case "broken":
			return errors.New("the challenge service did not answer")
		}
		return Forbid("the bot challenge was not passed")
	}
	e := newEnv(t, func(_ *asyncevent.Options, so *ServerOptions) { so.Admission = challenge })
	e.createFirstCome("sale", 5)
	click := func(user, answer string) response {
		req, err := http.NewRequest("POST", e.ts.URL+"/events/sale/participations", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token(t, user, RoleUser))
		if answer != "" {
			req.Header.Set("X-Challenge", answer)
		}
		return send(t, req)
	}
	r := click("ann", "")
	assert.Equal(t, http.StatusForbidden, r.status)
	assert.Equal(t, CodeAdmissionRefused, r.problem(t).Code)
	r = click("ann", "broken")
	assert.Equal(t, http.StatusInternalServerError, r.status)
	_, err := e.client.LookupParticipation(context.Background(), "sale", "ann")
	assert.ErrorIs(t, err, asyncevent.ErrNotFound, "nothing written for a refused click")
	r = click("ann", "passed")
	assert.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
}

// UserRateLimit: a user's clicks past the burst are 429 with Retry-After, nothing
// written; another user is not held back; the bucket fills again. The rate is slow
// (a click every 5 s) so that a loaded machine's slow clicks do not refill it.
func TestUserRateLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(_ *asyncevent.Options, so *ServerOptions) { so.Admission = UserRateLimit(0.2, 2) })
	for _, id := range []string{"a", "b", "c"} {
		e.createFirstCome(id, 5)
	}
	ann := token(t, "ann", RoleUser)
	assert.Equal(t, http.StatusAccepted, e.do("POST", "/events/a/participations", ann, nil).status)
	assert.Equal(t, http.StatusAccepted, e.do("POST", "/events/b/participations", ann, nil).status)
	r := e.do("POST", "/events/c/participations", ann, nil)
	require.Equal(t, http.StatusTooManyRequests, r.status, "%s", r.body)
	assert.Equal(t, CodeRateLimited, r.problem(t).Code)
	secs, err := strconv.Atoi(r.header.Get("Retry-After"))
	require.NoError(t, err)
	assert.True(t, secs >= 1 && secs <= 5, "Retry-After %d: within the 5 s a click takes to come back", secs)
	_, err = e.client.LookupParticipation(context.Background(), "c", "ann")
	assert.ErrorIs(t, err, asyncevent.ErrNotFound, "nothing written for a limited click")
	assert.Equal(t, http.StatusAccepted, e.do("POST", "/events/c/participations", token(t, "bob", RoleUser), nil).status, "another user")
	time.Sleep(time.Duration(secs) * time.Second)
	assert.Equal(t, http.StatusAccepted, e.do("POST", "/events/c/participations", ann, nil).status, "the bucket filled again")
	assert.Panics(t, func() { UserRateLimit(0, 1) })
	assert.Panics(t, func() { UserRateLimit(1, 0) })
}

// send does req and reads its answer.
func send(t *testing.T, req *http.Request) response {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return response{status: resp.StatusCode, header: resp.Header, body: body}
}

// Many users clicking at once, from many goroutines: each user gets exactly its burst
// (the rate too slow to refill within the test), whichever part of the limiter holds
// its bucket.
func TestUserRateLimitManyUsers(t *testing.T) {
	t.Parallel()
	admit := UserRateLimit(0.001, 3)
	const users, clicks, workers = 500, 5, 8
	var admitted [users]atomic.Int32
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for u := range users {
				for range clicks {
					err := admit(nil, Principal{UserID: fmt.Sprintf("user-%d", (u+w*61)%users)}, "sale")
					if err == nil {
						admitted[(u+w*61)%users].Add(1)
					} else if !errors.As(err, new(*Refusal)) {
						t.Errorf("not a refusal: %v", err)
					}
				}
			}
		})
	}
	wg.Wait()
	for u := range admitted {
		require.EqualValues(t, 3, admitted[u].Load(), "user-%d", u)
	}
}
