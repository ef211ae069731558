// Command httpapi is an HTTP service on asyncevent: users take part in events and
// follow their requests; admins create events, watch them, and draw lotteries.
// It shows how a team mounts package httpapi (the routes, bearer-token
// authentication, RFC 9457 problem details, the admin web UI, a user's request
// page) on net/http, with in-process workers and a graceful shutdown.
//
// # Run it on an embedded DynamoDB Local with an in-memory queue
//
// With Java 17+ and npm, nothing else is needed: the embedded
// DynamoDB Local is started as the tests start it, the table is created, and two
// in-process workers take the requests off an in-memory queue. -dev makes up a JWT
// secret and prints an admin and a user token to stderr:
//
//	go run ./examples/httpapi -dev
//
// # Run it on DynamoDB Local and fauxqs (an SQS emulator)
//
// DynamoDB Local from Amazon's jar (or the amazon/dynamodb-local image),
// fauxqs from npm (Node.js 20+; it listens on :4566, FAUXQS_PORT to change), a queue
// made with one call of the SQS JSON protocol (or the aws CLI's sqs create-queue):
//
//	go run ./cmd/asyncevent local   # in another shell; paste here the export DYNAMODB_ENDPOINT=… line it prints
//	npx fauxqs@1.9.2 &
//	curl -s localhost:4566/ -H 'X-Amz-Target: AmazonSQS.CreateQueue' \
//	    -H 'Content-Type: application/x-amz-json-1.0' -d '{"QueueName":"participations"}'
//	    # {"QueueUrl":"http://sqs.us-east-1.localhost:4566/000000000000/participations"}
//	export ASYNCEVENT_JWT_SECRET=$(openssl rand -hex 32)
//	go run ./examples/httpapi -create-table \
//	    -sqs-endpoint http://localhost:4566 \
//	    -queue-url http://sqs.us-east-1.localhost:4566/000000000000/participations \
//	    -workers 4 -dev
//
// With a secret of its own, -dev only prints the sample tokens. More tokens, for
// other users, come from the token subcommand with the same secret:
//
//	ASYNCEVENT_JWT_SECRET=… go run ./examples/httpapi token -user ann
//	ASYNCEVENT_JWT_SECRET=… go run ./examples/httpapi token -user ops-1 -admin -ttl 1h
//
// Without an endpoint
// and with -embedded=false the command uses AWS itself, with the default credential
// chain (environment, ~/.aws, instance role); the table must exist (or pass
// -create-table). -workers 0 runs ingest only, for a fleet whose workers run
// elsewhere (another process, or a Lambda on the queue). SIGINT or SIGTERM drains
// the HTTP requests in flight, then stops the workers (Worker.Stop), within
// -shutdown-timeout.
//
// # Flags
//
// Each flag with an environment variable falls back to it.
//
//	-addr               ASYNCEVENT_ADDR        listen address (:8080)
//	-table              ASYNCEVENT_TABLE       DynamoDB table (AsyncEventTable)
//	-dynamodb-endpoint  DYNAMODB_ENDPOINT      DynamoDB Local endpoint, with dummy credentials
//	-embedded                                  start a DynamoDB Local in-process (default: true when no endpoint)
//	-create-table                              create the table, idempotently (always with -embedded); else check it
//	-queue-url          ASYNCEVENT_QUEUE_URL   SQS queue URL; empty: an in-memory queue (queue.Memory)
//	-sqs-endpoint       SQS_ENDPOINT           SQS endpoint such as fauxqs, with dummy credentials; empty: AWS
//	-workers                                   in-process workers (2); 0: ingest only
//	-jwt-secret         ASYNCEVENT_JWT_SECRET  HS256 secret of the bearer tokens, at least 32 bytes; required unless -dev
//	-dev                                       make up a secret if none is given; print an admin and a user token; offer /dev/sign-in
//	-jwks-url           ASYNCEVENT_JWKS_URL    an identity provider's JWK set (RS256/ES256 tokens) instead of -jwt-secret
//	-jwt-issuer         ASYNCEVENT_JWT_ISSUER  the tokens' required iss (with -jwks-url)
//	-jwt-audience       ASYNCEVENT_JWT_AUDIENCE  the tokens' required aud (with -jwks-url)
//	-jwt-role-claim     ASYNCEVENT_JWT_ROLE_CLAIM  the claim of the roles (role; Cognito: cognito:groups)
//	-jwt-admin-role     ASYNCEVENT_JWT_ADMIN_ROLE  the role of the admins (admin)
//	-user-rate          ASYNCEVENT_USER_RATE   clicks a second a user may make (0: no limit), a first line behind a WAF
//	-user-burst         ASYNCEVENT_USER_BURST  clicks a user may make at once before -user-rate holds them back (5)
//	-status-log                                write the StatusLog of every transition (true)
//	-request-timeout                           deadline of each request (10s); past it: 503 timeout
//	-shutdown-timeout                          drain HTTP, then stop the workers, within this (30s)
//	-log-format                                text or json (text)
//	-otel-stdout                               write OpenTelemetry traces and metrics (package otelasyncevent) to stdout as JSON
//	-otel-public                               with -otel-stdout: start a trace of the server's own for each request, linked to the caller's traceparent (clients reach the server directly)
//	                    ASYNCEVENT_DRAW_SECRET lottery seed secret, hex, at least 32 bytes (environment only)
//
// With ASYNCEVENT_DRAW_SECRET set (openssl rand -hex 32), the lotteries this server
// creates get a sealed seed (seed.HMAC: seedMode SEALED), and only a
// server with the same secret can draw them. Without it their seeds are UNSEALED:
// stored on the table from the start, which is for development only; the event and
// draw views say which.
//
// # A session
//
// Times are RFC 3339 strings, in and out. -dev prints export lines for the tokens:
//
//	export ADMIN_TOKEN=… USER_TOKEN=…
//	curl -s -X POST localhost:8080/admin/events -H "Authorization: Bearer $ADMIN_TOKEN" \
//	    -H 'Content-Type: application/json' \
//	    -d '{"eventId":"spring-sale","eventType":"FIRST_COME","name":"Spring sale","capacityTotal":100,"endsAt":"2030-01-01T00:00:00Z"}'
//	    # 201 {"eventId":"spring-sale","eventType":"FIRST_COME","name":"Spring sale","endsAt":"2030-01-01T00:00:00.000Z","capacityTotal":100,"createdAt":"…","indexShards":1,"capacityShards":1}
//	    # a drop's layout: "peakClicksPerSecond":20000, or "indexShards":K,"capacityShards":C
//	curl -si -X POST localhost:8080/events/spring-sale/participations -H "Authorization: Bearer $USER_TOKEN"
//	    # 202, Location: /requests/01a2…
//	    # {"requestId":"01a2…","eventId":"spring-sale","status":"QUEUED","uiResult":"PENDING","duplicate":false}
//	    # the same again: 200, the same requestId, "duplicate":true (and the status by then)
//	REQ=01a2…   # the requestId
//	curl -s localhost:8080/requests/$REQ -H "Authorization: Bearer $USER_TOKEN"
//	curl -s 'localhost:8080/me/participations?limit=20' -H "Authorization: Bearer $USER_TOKEN"
//	    # {"requests":[…],"nextCursor":"…"}: pass nextCursor back as &cursor= for the next page
//	curl -s localhost:8080/admin/events/spring-sale -H "Authorization: Bearer $ADMIN_TOKEN"
//	    # the event with "capacity":{"total":100,"remaining":99,"updatedAt":"…"}
//	curl -s 'localhost:8080/admin/events/spring-sale/requests?order=desc&status=SUCCEEDED&limit=50' -H "Authorization: Bearer $ADMIN_TOKEN"
//	curl -s localhost:8080/admin/events/spring-sale/stats -H "Authorization: Bearer $ADMIN_TOKEN"
//	    # {"requests":1,"byStatus":{"SUCCEEDED":1},"byResultCode":{"SUCCESS":1},"capacityTotal":100,"capacityRemaining":99,…}
//	curl -s localhost:8080/admin/requests/$REQ/logs -H "Authorization: Bearer $ADMIN_TOKEN"
//	curl -s localhost:8080/admin/events/spring-sale -H "Authorization: Bearer $USER_TOKEN"
//	    # 403 {"type":"about:blank","title":"Forbidden","status":403,"detail":"this route needs the admin role","instance":"urn:uuid:…","code":"forbidden"}
//
// A LOTTERY event takes winnerCount and lotteryCutoffAt instead of capacityTotal;
// after the cutoff (plus the library's settle window) POST
// /admin/events/{eventId}/draw draws it and GET /admin/events/{eventId}/draw/verify
// re-checks it. Errors are application/problem+json with a stable "code".
//
// # Admin web UI
//
// Operators get server-rendered pages at /admin/ui/ (httpapi.Server.MountAdminUI): sign in with an
// admin token (exchanged for an HttpOnly, SameSite=Strict session cookie), create an
// event (its layout too), open an event by its ID for its layout, its stats, an
// outcome chart along queue order and the request
// table, open a request for its latencies and status log, run and verify a draw.
//
// # A request's page
//
// A user's browser opens the page of their request at /requests/{requestId}/page
// (httpapi.Server.MountRequestPage; the participation's answer names it in "page").
// A browser sends no Authorization header, so with -dev the token may also come in
// a cookie (httpapi.JWTOptions.CookieName), which /dev/sign-in sets, for a browser
// on this machine only, with no password, as a service's own sign-in would:
//
//	http://localhost:8080/dev/sign-in?user=user-1&next=/requests/01a2…/page
//
// A write with that cookie from another site is refused (403 cross_site). Without
// -dev there is no sign-in and no cookie: the page takes the bearer header only.
// With -jwks-url the page is not mounted: its Release form would need a secret of
// its own (httpapi.RequestPageOptions.Secret).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "token" {
		if err := mintCmd(os.Args[2:], os.Getenv, os.Stdout, os.Stderr); err != nil {
			if !errors.Is(err, flag.ErrHelp) {
				fmt.Fprintln(os.Stderr, "httpapi token:", err)
			}
			os.Exit(2)
		}
		return
	}
	cfg, err := parseConfig(os.Args[1:], os.Getenv, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "httpapi:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "httpapi:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends, then drains HTTP and stops the workers. ready, if
// set, is told the listening address.
func run(ctx context.Context, cfg config, stderr io.Writer, ready func(net.Addr)) error {
	logger, libLogger := newLoggers(cfg, stderr)

	// Set-up is bounded by ctx: a signal during it ends it.
	db, stopDB, err := dynamoClient(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer stopDB()
	tel, err := startTelemetry(cfg)
	if err != nil {
		return err
	}
	if tel != nil {
		defer tel.flush(logger) // after the workers have stopped: the last spans and metrics
	}
	client, err := newClient(ctx, cfg, db, tel, libLogger)
	if err != nil {
		return err
	}
	q, err := newQueue(ctx, cfg)
	if err != nil {
		return err
	}

	// The workers run under a context of their own: a signal drains HTTP first, and
	// only then are the workers stopped, so the last accepted requests get processed.
	workers, err := startWorkers(context.WithoutCancel(ctx), cfg, client, q, libLogger)
	if err != nil {
		return err
	}
	api, err := listenAPI(ctx, cfg, client, q, tel.tracerProvider(), logger)
	if err != nil {
		_ = workers.stop(context.Background())
		return err
	}
	defer api.closeAuth() // the identity provider's key set's refreshes
	logger.Info("listening", "addr", api.ln.Addr().String(), "table", cfg.table, "queue", queueName(cfg), "workers", cfg.workers)
	if cfg.dev {
		printDevTokens(stderr, cfg)
	}
	if ready != nil {
		ready(api.ln.Addr())
	}
	return serve(ctx, cfg, api, workers, client, logger)
}
