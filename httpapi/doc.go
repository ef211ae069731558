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
//	POST /admin/events                            create an event
//	GET  /admin/events/{eventId}                  an event, with its capacity or draw
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
// # Authentication
//
// Every route but /healthz asks the ServerOptions.Authenticator who is calling; the
// /admin routes need the admin role. JWTAuthenticator, the one provided, verifies
// HS256 bearer tokens strictly (see its doc); a service with its own identity layer
// implements Authenticator instead.
package httpapi
