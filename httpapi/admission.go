package httpapi

import (
	"fmt"
	"hash/maphash"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Admission is a check ServerOptions.Admission runs on a participation before
// Submit, once the caller is authenticated: a bot challenge (Cloudflare Turnstile,
// reCAPTCHA: verify the token the client sent in a header), a per-user or per-IP rate
// limit. A nil error admits the click; a Refusal answers 403 (Forbid) or 429
// (TooManyRequests, with Retry-After) and nothing is written; any other error is a
// 500 (a check that depends on a service, such as a bot challenge's, decides itself
// whether to admit or refuse when that service fails). It runs on every click, so it must be quick: a first line behind a WAF, not
// instead of one.
type Admission func(r *http.Request, caller Principal, eventID string) error

// Refusal is an Admission's no: its status (403 or 429; any other is answered 403),
// what the caller is told, and for a 429 when to try again.
type Refusal struct {
	Status     int
	Detail     string
	RetryAfter time.Duration
}

func (r *Refusal) Error() string { return fmt.Sprintf("refused (%d): %s", r.Status, r.Detail) }

// Forbid refuses a click for good (403 admission_refused): a failed bot challenge.
func Forbid(detail string) *Refusal { return &Refusal{Status: http.StatusForbidden, Detail: detail} }

// TooManyRequests refuses a click for now (429 rate_limited, Retry-After).
func TooManyRequests(detail string, retryAfter time.Duration) *Refusal {
	return &Refusal{Status: http.StatusTooManyRequests, Detail: detail, RetryAfter: retryAfter}
}

// problem is the refusal's HTTP answer.
func (r *Refusal) problem() *httpError {
	if r.Status == http.StatusTooManyRequests {
		e := newHTTPError(http.StatusTooManyRequests, CodeRateLimited, r.Detail)
		e.header = http.Header{"Retry-After": {strconv.Itoa(max(1, int(math.Ceil(r.RetryAfter.Seconds()))))}}
		return e
	}
	return newHTTPError(http.StatusForbidden, CodeAdmissionRefused, r.Detail)
}

// UserRateLimit returns an Admission that lets each user click at most burst times
// at once and then perSecond times a second (a token bucket per user, in this
// process's memory; a bucket full again is dropped). Behind several servers each keeps
// its own, so a user may click that much on each. A click the user repeats (a
// duplicate, which the API answers with the first request) counts as any other. The
// buckets are split among 64 locks by user, so that clicks of different users seldom
// wait for each other and a sweep of full buckets holds one part at a time. It panics
// unless perSecond > 0 and burst ≥ 1.
func UserRateLimit(perSecond float64, burst int) Admission {
	if !(perSecond > 0) || burst < 1 {
		panic(fmt.Sprintf("httpapi: UserRateLimit(%v, %d): want a rate above 0 and a burst of 1 or more", perSecond, burst))
	}
	l := &userLimits{every: rate.Limit(perSecond), burst: burst, seed: maphash.MakeSeed()}
	for i := range l.parts {
		l.parts[i].users = map[string]*rate.Limiter{}
	}
	return l.admit
}

// userLimits are the users' buckets, in parts by a hash of the user ID.
type userLimits struct {
	every rate.Limit
	burst int
	seed  maphash.Seed
	parts [64]userPart
}

type userPart struct {
	mu    sync.Mutex
	users map[string]*rate.Limiter
	swept time.Time
}

func (l *userLimits) admit(_ *http.Request, caller Principal, _ string) error {
	now := time.Now()
	p := &l.parts[maphash.String(l.seed, caller.UserID)%uint64(len(l.parts))]
	p.mu.Lock()
	if now.Sub(p.swept) > time.Minute { // a bucket full again is as good as none: drop it
		for id, b := range p.users {
			if b.TokensAt(now) >= float64(l.burst) {
				delete(p.users, id)
			}
		}
		p.swept = now
	}
	b := p.users[caller.UserID] // after the sweep, which must not drop the bucket this click takes from
	if b == nil {
		b = rate.NewLimiter(l.every, l.burst)
		p.users[caller.UserID] = b
	}
	res := b.ReserveN(now, 1)
	p.mu.Unlock()
	if wait := res.DelayFrom(now); wait > 0 {
		res.CancelAt(now)
		return TooManyRequests("too many clicks: try again in a moment", wait)
	}
	return nil
}
