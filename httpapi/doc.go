// Package httpapi is an HTTP API over an asyncevent.Client that a service mounts
// instead of forking: users take part in events and follow their requests; admins
// create events, page through requests, read statistics and draw lotteries; an
// optional admin web UI shows the same.
//
//	auth, err := httpapi.NewJWTAuthenticator(secret, httpapi.JWTOptions{})
//	...
//	srv, err := httpapi.NewServer(httpapi.ServerOptions{Client: client, Queue: queue, Authenticator: auth})
//	...
//	if err := srv.MountAdminUI(httpapi.AdminUIOptions{}); err != nil { // optional
//		...
//	}
//	mux.Handle("/", srv.Handler())
//
// # Routes
//
//	GET  /healthz                                 Public
//	POST /events/{eventId}/participations         a user: 202 (new) or 200 (duplicate), the requestId
//	GET  /requests/{requestId}                    the caller's own request (another's is 404)
//	GET  /me/participations                       the caller's requests, newest first, cursor paging
//	POST /admin/events                            create an event, its layout included
//	GET  /admin/events/{eventId}                  an event and its layout, with its capacity (each shard's too) or draw
//	GET  /admin/events/{eventId}/requests         in queue order, status filter, cursor paging
//	GET  /admin/events/{eventId}/stats            statistics
//	POST /admin/events/{eventId}/draw             a lottery's draw (409 draw_too_early before cutoff + settle window)
//	GET  /admin/events/{eventId}/draw/verify      re-check a draw
//	GET  /admin/requests/{requestId}              any request
//	GET  /admin/requests/{requestId}/logs         its status log
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
// event; winnerCount, lotteryCutoffAt and announceAt for a LOTTERY. Its layout for a
// traffic spike (asyncevent.EventConfig.IndexShards and CapacityShards, fixed for the
// event's life) is optional: indexShards and capacityShards as numbers, or
// peakClicksPerSecond, the expected peak, from which the library's rule
// (asyncevent.EventConfig.ShardForPeak) derives them as the CLI's event create -peak
// does (no capacity shards for a LOTTERY; for a FIRST_COME event no more than its
// seats and at least one per 128 of them), not both. Absent, the event has the
// design's single keys. A layout CreateEvent refuses is 400 invalid_event, with
// nothing stored. The event's views show indexShards and, for a FIRST_COME event,
// capacityShards (1 for a single key); GET /admin/events/{eventId} lists each
// capacity shard's seats under capacity.shards. Every other route reads a sharded
// event as any other.
//
// # Authentication
//
// Every route but /healthz asks the ServerOptions.Authenticator who is calling; the
// /admin routes need the admin role. JWTAuthenticator, the one provided, verifies
// HS256 bearer tokens strictly (see its doc); a service with its own identity layer
// implements Authenticator instead.
package httpapi
