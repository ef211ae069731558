// Package httpapi is an HTTP API over an asyncevent.Client that a service mounts
// instead of forking: users take part in events, follow their requests and give up
// a held seat; admins create, list and control events (close, pause, resume,
// extend, add seats, cancel a won seat), page through requests, read statistics,
// draw lotteries and confirm paid holds; an optional admin web UI shows the same.
//
//	auth, err := httpapi.NewJWTAuthenticator(secret, httpapi.JWTOptions{})
//	...
//	srv, err := httpapi.NewServer(httpapi.ServerOptions{Client: client, Queue: queue, Authenticator: auth})
//	...
//	if err := srv.MountAdminUI(httpapi.AdminUIOptions{}); err != nil { // optional
//		...
//	}
//	if err := srv.MountRequestPage(httpapi.RequestPageOptions{ConfirmURL: "/pay/{requestId}"}); err != nil { // optional
//		...
//	}
//	mux.Handle("/", srv.Handler())
//
// # Routes
//
//	GET  /healthz                                 Public
//	POST /events/{eventId}/participations         a user: 202 (new) or 200 (duplicate), the requestId
//	GET  /requests/{requestId}                    the caller's own request (another's is 404), its place in line while it waits; Retry-After: when to poll again
//	GET  /requests/{requestId}/page               MountRequestPage: the page the request's user sees of it (HTML, English or Korean)
//	POST /requests/{requestId}/page/release       MountRequestPage: the page's Release button (its form token, same origin)
//	GET  /me/participations                       the caller's requests, newest first, cursor paging
//	POST /requests/{requestId}/confirm            admin (the paying service): a HELD request paid for, SUCCEEDED
//	POST /requests/{requestId}/release            the request's user or an admin: a HELD or WAITLISTED request given up
//	POST /admin/events                            create an event, its layout included
//	GET  /admin/events                            the events, newest first, with state and seats left, cursor paging
//	GET  /admin/events/{eventId}                  an event and its layout, with its capacity (each shard's too) or draw
//	GET  /admin/events/{eventId}/requests         in queue order, status filter, cursor paging
//	GET  /admin/events/{eventId}/stats            statistics, a first-come event's line (queue) among them
//	POST /admin/events/{eventId}/draw             a lottery's draw, or a pre-queue's serve (409 draw_too_early before cutoff, or start, + settle window)
//	GET  /admin/events/{eventId}/draw/verify      re-check a draw or a served pre-queue
//	POST /admin/events/{eventId}/holds/sweep      one pass of an event's hold sweep, its report
//	POST /admin/events/{eventId}/close            close the event now (409 control_refused when it is closed already)
//	POST /admin/events/{eventId}/pause            pause its ingest: clicks get 409 event_paused
//	POST /admin/events/{eventId}/resume           take clicks again
//	POST /admin/events/{eventId}/extend           move its end or a lottery's cutoff later
//	POST /admin/events/{eventId}/capacity         add seats to a first-come event while it runs
//	GET  /admin/events/{eventId}/audit            its audit trail: who did what, when
//	GET  /admin/requests/{requestId}              any request
//	GET  /admin/requests/{requestId}/logs         its status log
//	POST /admin/requests/{requestId}/cancel       cancel a SUCCEEDED first-come request: its seat goes back
//	/admin/ui/...                                 the admin web UI, if mounted
//
// Bodies and answers are JSON; times are RFC 3339 strings, in and out. Errors are
// application/problem+json (RFC 9457) with a stable code (the Code constants): a
// library error is matched with errors.Is, never by its text; a 5xx says nothing
// of its cause, which goes to the log. DynamoDB refusing throughput
// (asyncevent.ErrThrottled) is 503 throttled with Retry-After.
//
// # Creating an event
//
// The body of POST /admin/events is the event's settings: eventId, eventType
// (FIRST_COME or LOTTERY), name, startsAt, endsAt; capacityTotal for a FIRST_COME
// event, and prequeueOpensAt for one with a pre-queue before startsAt; winnerCount, lotteryCutoffAt and announceAt for a LOTTERY. Its layout for a
// traffic spike (asyncevent.EventSettings.IndexShards and CapacityShards, fixed for the
// event's life) is optional: indexShards and capacityShards as numbers, or
// peakClicksPerSecond, the expected peak, from which the library's rule
// (asyncevent.EventSettings.ShardForPeak) derives them as the CLI's event create -peak
// does (no capacity shards for a LOTTERY; for a FIRST_COME event no more than its
// seats and at least one per 128 of them), not both. Absent, the event has the
// design's single keys. A layout CreateEvent refuses is 400 invalid_event, with
// nothing stored. The event's views show indexShards and, for a FIRST_COME event,
// capacityShards (1 for a single key); GET /admin/events/{eventId} lists each
// capacity shard's seats under capacity.shards. Every other route reads a sharded
// event as any other.
//
// # Operator controls and the event list
//
// GET /admin/events?limit=&cursor= lists the events newest first, 20 a page by
// default and at most 100 (more is 400 invalid_parameter; a cursor of another
// listing is 400 invalid_cursor), from the event list that CreateEvent writes
// (asyncevent.Client.ListEvents: a Query, never a Scan). Its answer is events, each
// the event's view as GET /admin/events/{eventId} shows it without capacity or
// draw, plus seatsLeft for a FIRST_COME event (the seats its capacity shards and
// its pool hold), and nextCursor while there is more. It counts no requests: that would read each
// event's requests (GET /admin/events/{eventId}/stats does, for one event). An event
// created before the event list existed is not on it.
//
// Every event view carries state, what the event is doing at ServerOptions.Clock
// (asyncevent.Event.StateAt): SCHEDULED, OPEN, PAUSED, CLOSED, DRAWING or
// ANNOUNCED; paused while an operator has paused its ingest; closedAt once an
// operator closed it (endsAt then moved to that time too).
//
// The controls act on the event's config, each with an audit entry naming the
// caller's sub, in one transaction (asyncevent.Client.CloseEvent, PauseEvent,
// ResumeEvent, ExtendEvent, AddCapacity, CancelRequest):
//
//   - POST /admin/events/{eventId}/close ends its ingest now: a click gets 409
//     event_closed, as after its end.
//   - POST /admin/events/{eventId}/pause stops its ingest until
//     POST /admin/events/{eventId}/resume: meanwhile a click gets 409 event_paused
//     and writes nothing; what was queued is still processed.
//   - POST /admin/events/{eventId}/extend takes {"endsAt": "…"},
//     {"lotteryCutoffAt": "…"} or {"startsAt": "…"}, exactly one (else 400
//     invalid_body), and moves that time later: only while it is more than 10
//     seconds away, never earlier, a cutoff never past the end nor once the draw
//     began, and only a LOTTERY has one; a start only of a FIRST_COME event with a
//     pre-queue, before the end and before its serve began.
//   - POST /admin/events/{eventId}/capacity takes {"seats": n} and, optionally,
//     "shard": k, and adds n seats (1 to asyncevent.MaxAddSeats, else 400
//     invalid_body) to a FIRST_COME event that has not ended: onto the capacity
//     shards that still hold seats, or onto shard k (0 to capacityShards − 1, else
//     400 invalid_body); seats no shard takes (every one is empty: a sold-out event)
//     go to the event's seat pool, which the next requests that find every shard
//     empty claim (with holds, the hold sweep hands them to the waitlist). The
//     event's capacityTotal grows by n; its capacity shows the seats on the shards,
//     and its stats the pool's too (poolRemaining).
//   - POST /admin/requests/{requestId}/cancel takes a SUCCEEDED FIRST_COME request's
//     seat back (a refund, a fraud): the request ends REJECTED with resultCode
//     REJECTED_CANCELLED, and its seat goes to the event's pool (with holds, to its
//     waitlist first). It answers 200 with request, read after the write (eventually
//     consistent, as a confirm's), and event; refused, its problem carries the
//     request too. A HELD or WAITLISTED request is a release's; any other status
//     holds no seat. An unknown request is 404 request_not_found.
//
// The two controls of seats are idempotent under a key: each takes an
// Idempotency-Key header (the draft's quoted form, "key", too; capacity also takes
// "idempotencyKey" in its body, which must then agree), a string that
// asyncevent.ValidateID accepts (else 400 invalid_id), such as a UUID. Send each add
// or cancel with a key of its own, and its retries with the same key: of the calls
// under one key, at most one applies, for a day at least, and one sent again after
// its answer was lost (a timeout, a reset connection, a 5xx) answers 200 with
// "replayed": true, nothing written again. A key given before to another add or
// cancel (other seats, shard, request or admin) is 400. Without a key, a retried
// capacity call adds the seats again; a retried cancel answers 409 control_refused,
// the request being REJECTED_CANCELLED already.
//
// close, pause, resume and cancel take no body. Applied, a control answers 200 with
// the event (a cancel with its request and event). Refused by the event's state
// (closed already, paused already, not paused, a time that cannot move, seats of a
// LOTTERY) or, for a cancel, by the request's (one that holds no seat), it writes
// nothing, neither on the event nor on its audit trail, and answers 409
// control_refused, whose detail says why and whose event member is the event as the
// refusal found it:
//
//	{"type":"about:blank","title":"Conflict","status":409,"code":"control_refused",
//	 "detail":"the event is paused already","event":{"eventId":"…","state":"PAUSED","paused":true,…}}
//
// An unknown event is 404 event_not_found. Each server learns of a control within
// its client's asyncevent.Options.EventCacheTTL (5 seconds by default); the server
// that applied it knows at once. GET /admin/events/{eventId}/audit answers eventId
// and entries, oldest first, each with at, actor (the admin's sub), action (CLOSE,
// PAUSE, RESUME, EXTEND_END, EXTEND_CUTOFF, ADD_CAPACITY, CANCEL) and detail: for a
// move "to …", for seats added how many went onto the shards and onto the pool, for
// a cancel "request …".
//
// # Holds and the waitlist
//
// A FIRST_COME event created with holdForSeconds (asyncevent.EventSettings.HoldFor,
// asyncevent.MinHoldFor to MaxHoldFor; absent or 0: no holds; out of range, or
// without endsAt, when its waitlist ends: 400 invalid_event) keeps a winner's seat
// HELD until it is paid for, and makes the losers of the sold-out event WAITLISTED
// instead of REJECTED. The request views (GET /requests/{requestId},
// /me/participations, the admin listings) then show a HELD request's holdExpiresAt
// and holdSecondsLeft (whole seconds left by ServerOptions.Clock, 0 once it ran out
// and the hold sweep has not ended it yet), and servedAt on a request that got a seat
// given back; holdExpiresAt stays on a hold that ended. A WAITLISTED request read
// one at a time carries waitlist: ahead (the requests before it on the waitlist; 0
// gets the next seat given back), endsAt (when the waitlist ends) and asOf
// (asyncevent.WaitlistPlace). The event's views show holdForSeconds, and its stats a holds
// member: held, confirmed, released, expired and waitlisted requests, and the seats
// given back (seatsReturned), handed on to the waitlist (seatsServed) and not yet
// handed on (seatsWaiting).
//
// POST /requests/{requestId}/confirm is for the service that took the payment, so
// it needs the admin role (a user's own token cannot confirm): it makes the HELD
// request SUCCEEDED (asyncevent.Client.Confirm). POST /requests/{requestId}/release
// is for the request's own user or an admin (another user's request is 404, as for
// GET): a HELD request's seat goes to the earliest WAITLISTED request, a WAITLISTED
// request leaves the waitlist; both end REJECTED_RELEASED. Neither takes a body.
// Applied, they answer 200 with the request, read after the write (eventually
// consistent: for a moment it may still show HELD or WAITLISTED; the 200 is what
// says the write applied). When the request was not in a status they act on (a
// hold that ran out, REJECTED_HOLD_EXPIRED, a release or a confirm that came first,
// a request that never held a seat), they write nothing and answer 409
// status_conflict, whose problem carries the request as it is in a request member:
//
//	{"type":"about:blank","title":"Conflict","status":409,"code":"status_conflict",
//	 "detail":"the hold of request … expired at …: too late to confirm",
//	 "request":{"requestId":"…","status":"REJECTED","resultCode":"REJECTED_HOLD_EXPIRED",…}}
//
// A confirm refused for a hold that ended means the payment must be refunded; a
// confirm repeated after a lost answer is 409 with request.status SUCCEEDED. An
// unknown request is 404 request_not_found.
//
// The workers sweep the holds of the events they process (asyncevent.WorkerOptions.
// HoldSweepEvery). POST /admin/events/{eventId}/holds/sweep?maxWrites= runs one more
// pass (asyncevent.Client.SweepHolds): holds that ran out end REJECTED_HOLD_EXPIRED,
// seats given back go to the earliest WAITLISTED requests, and once the event has
// ended its waitlist ends. It answers 200 with the pass's report: expired, served,
// closed, cleared, waiting (seats given back not handed on) and more (maxWrites was
// reached: run it again). An event without holds is 409 no_holds.
//
// # A place in line
//
// While a FIRST_COME request waits for a worker (RECEIVED or QUEUED), GET
// /requests/{requestId} (and GET /admin/requests/{requestId}) shows where it stands,
// estimated from the event's progress (asyncevent.Request.Queue), in a queue member:
//
//	"queue":{"ahead":412,"waitSeconds":14,"ratePerSecond":29.5,"asOf":"2026-05-01T09:00:03.250Z"}
//
// ahead is the requests queued before it that no worker has finished; ratePerSecond
// the requests the workers finish a second while they have work, over the last 3
// seconds counted; waitSeconds the time until they have decided it at that rate (those
// ahead, then its own turn), in whole
// seconds rounded up, absent while no rate is measured (a rate of 0: no worker has
// finished a request lately, the wait is unknown); asOf when this server read the
// event's progress, which every node writes every 200 ms
// (asyncevent.Options.ProgressEvery) and each server reads at most once a second
// (ProgressCacheTTL) and, for the polls that need it, at most every 200 ms, however
// many users poll. The participation's 202 says when to poll first (Retry-After: 1):
// by then the counts of the arrivals before the request have landed; a poll sooner
// is told a place in which the arrivals of the last moments are carried on at their
// pace (docs/design.md, "A place in line", has the errors measured). It assumes the workers take requests
// in queue order, which a standard queue does only roughly. The member is absent
// once a worker has reached the request, for a LOTTERY entry, in the listings
// (/me/participations, the admin's), when the server's client does not count
// progress (a negative ProgressEvery), and when the progress could not be read (the
// request is still the answer).
//
// The stats of a FIRST_COME event carry its line as a whole in a queue member
// (asyncevent.QueueStats): depth, the requests that arrived and no worker has
// finished; ratePerSecond, as above; drainSeconds, the time to finish them at that
// rate, in whole seconds rounded up, absent while requests wait at a rate of 0;
// asOf; and series, the line second by second from the event's first request or
// over the last 15 minutes, whichever is shorter, as far as the nodes had written their counts by asOf: at the end of each second its
// depth, and the requests the workers finished in it:
//
//	"queue":{"depth":1200,"ratePerSecond":60,"drainSeconds":20,"asOf":"…",
//	 "series":[{"at":"2026-05-01T09:00:01.000Z","depth":1500,"ratePerSecond":0},…]}
//
// The admin UI's event page draws the same in a Queue panel beside its outcome
// chart, and a waiting request's page shows its place in line.
//
// # Authentication
//
// Every route but /healthz asks the ServerOptions.Authenticator who is calling; the
// /admin routes and POST /requests/{requestId}/confirm need the admin role.
// JWKSAuthenticator verifies an identity provider's RS256 and ES256 tokens against
// the keys of its JWKS URL, with iss and aud required; JWTAuthenticator verifies
// HS256 tokens of a shared secret, for development (see their docs); a service with
// its own identity layer implements Authenticator instead. Both read the token from
// the Authorization: Bearer header and, with CookieName set, from that cookie when
// the request has no Authorization header (a browser opening the request page).
// Because a browser attaches a cookie whatever page makes the request, a write (any
// method but GET, HEAD and OPTIONS) on a route that is not Public and that carries
// no bearer token must come from the server's own origin as far as the browser
// tells: Sec-Fetch-Site same-origin or none, else an Origin whose host and port are
// the request's Host; otherwise it is 403 cross_site, before authentication and with
// nothing written. A client that sends neither header (not a browser) passes.
//
// # Admission and tracing
//
// ServerOptions.Admission checks every participation before Submit (a bot
// challenge, UserRateLimit): a Refusal answers 403 admission_refused or 429
// rate_limited with Retry-After, and nothing is written. ServerOptions.TracerProvider
// wraps the handler in the OpenTelemetry HTTP middleware: a server span per request,
// named for its route, that continues the request's W3C traceparent (or, with
// ServerOptions.PublicEndpoint, starts a trace of its own linked to it).
package httpapi
