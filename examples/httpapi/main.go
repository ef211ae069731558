// Command httpapi is an HTTP service on asyncevent: users take part in events and
// follow their requests; admins create events, watch them, and draw lotteries.
// It shows how a team mounts package httpapi (the routes, bearer-token
// authentication, RFC 9457 problem details, the admin web UI) on net/http, with
// in-process workers and a graceful shutdown.
//
// # Run it on an embedded DynamoDB Local with an in-memory queue
//
// With Java 17+ and npm (or a Docker engine), nothing else is needed: the embedded
// DynamoDB Local is started as the tests start it, the table is created, and two
// in-process workers take the requests off an in-memory queue. -dev makes up a JWT
// secret and prints an admin and a user token to stderr:
//
//	go run ./examples/httpapi -dev
//
// # Run it on DynamoDB Local and fauxqs (an SQS emulator)
//
// DynamoDB Local from Amazon's jar (or docker run -p 8000:8000 amazon/dynamodb-local),
// fauxqs from npm (Node.js 20+; it listens on :4566, FAUXQS_PORT to change), a queue
// made with one call of the SQS JSON protocol (or the aws CLI's sqs create-queue):
//
//	java -Djava.library.path=./DynamoDBLocal_lib -jar DynamoDBLocal.jar -inMemory -port 8000 &
//	npx fauxqs@1.9.2 &
//	curl -s localhost:4566/ -H 'X-Amz-Target: AmazonSQS.CreateQueue' \
//	    -H 'Content-Type: application/x-amz-json-1.0' -d '{"QueueName":"participations"}'
//	    # {"QueueUrl":"http://sqs.us-east-1.localhost:4566/000000000000/participations"}
//	export ASYNCEVENT_JWT_SECRET=$(openssl rand -hex 32)
//	go run ./examples/httpapi -dynamodb-endpoint http://localhost:8000 -create-table \
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
//	-dev                                       make up a secret if none is given; print an admin and a user token
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
// creates get a sealed seed (asyncevent.HMACSeeds: seedMode SEALED), and only a
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
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"go.opentelemetry.io/otel/trace"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/dynamodblocal"
	"github.com/asyncevent/asyncevent/httpapi"
	"github.com/asyncevent/asyncevent/otelasyncevent"
	"github.com/asyncevent/asyncevent/queue"
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

// config is what the flags say.
type config struct {
	addr             string
	table            string
	dynamoEndpoint   string
	embedded         bool
	createTable      bool
	queueURL         string
	sqsEndpoint      string
	workers          int
	jwtSecret        []byte
	jwks             httpapi.JWKSOptions // URL set: an identity provider's tokens instead of jwtSecret's
	userRate         float64             // clicks a second per user; 0: no limit
	userBurst        int
	drawSecret       []byte // from ASYNCEVENT_DRAW_SECRET; nil: unsealed lottery seeds
	dev              bool
	statusLog        bool
	requestTimeout   time.Duration
	shutdownTimeout  time.Duration
	logJSON          bool
	generatedSecret  bool // -dev made the secret up
	workerWait       time.Duration
	workerVisibility time.Duration
	otelStdout       bool
	otelPublic       bool      // ServerOptions.PublicEndpoint
	telemetryOut     io.Writer // where -otel-stdout writes; nil: os.Stdout
}

// parseConfig reads the flags, with getenv for their environment fallbacks.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	envOr := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	var (
		c         config
		secret    string
		logFormat string
	)
	fs := flag.NewFlagSet("httpapi", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.addr, "addr", envOr("ASYNCEVENT_ADDR", ":8080"), "listen address (env ASYNCEVENT_ADDR)")
	fs.StringVar(&c.table, "table", envOr("ASYNCEVENT_TABLE", asyncevent.DefaultTableName), "DynamoDB table (env ASYNCEVENT_TABLE)")
	fs.StringVar(&c.dynamoEndpoint, "dynamodb-endpoint", getenv("DYNAMODB_ENDPOINT"), "DynamoDB (Local) endpoint, used with dummy credentials (env DYNAMODB_ENDPOINT)")
	fs.BoolVar(&c.embedded, "embedded", false, "start an embedded DynamoDB Local (default: true when no endpoint is given)")
	fs.BoolVar(&c.createTable, "create-table", false, "create the table if missing (always with -embedded); otherwise check it")
	fs.StringVar(&c.queueURL, "queue-url", getenv("ASYNCEVENT_QUEUE_URL"), "SQS queue URL (env ASYNCEVENT_QUEUE_URL); empty: an in-memory queue")
	fs.StringVar(&c.sqsEndpoint, "sqs-endpoint", getenv("SQS_ENDPOINT"), "SQS endpoint such as fauxqs, used with dummy credentials (env SQS_ENDPOINT)")
	fs.IntVar(&c.workers, "workers", 2, "in-process workers; 0: ingest only")
	fs.StringVar(&secret, "jwt-secret", getenv("ASYNCEVENT_JWT_SECRET"), "HS256 secret of the bearer tokens, at least 32 bytes (env ASYNCEVENT_JWT_SECRET)")
	fs.StringVar(&c.jwks.URL, "jwks-url", getenv("ASYNCEVENT_JWKS_URL"), "an identity provider's JWK set URL: RS256/ES256 tokens instead of -jwt-secret's (env ASYNCEVENT_JWKS_URL)")
	fs.StringVar(&c.jwks.Issuer, "jwt-issuer", getenv("ASYNCEVENT_JWT_ISSUER"), "the tokens' required iss, with -jwks-url (env ASYNCEVENT_JWT_ISSUER)")
	fs.StringVar(&c.jwks.Audience, "jwt-audience", getenv("ASYNCEVENT_JWT_AUDIENCE"), "the tokens' required aud, with -jwks-url (env ASYNCEVENT_JWT_AUDIENCE)")
	fs.StringVar(&c.jwks.RoleClaim, "jwt-role-claim", envOr("ASYNCEVENT_JWT_ROLE_CLAIM", httpapi.DefaultRoleClaim), "the claim that carries the roles, a string or an array (Cognito: cognito:groups) (env ASYNCEVENT_JWT_ROLE_CLAIM)")
	fs.StringVar(&c.jwks.AdminRole, "jwt-admin-role", envOr("ASYNCEVENT_JWT_ADMIN_ROLE", string(httpapi.RoleAdmin)), "the role of the admins, with -jwks-url (env ASYNCEVENT_JWT_ADMIN_ROLE)")
	fs.BoolVar(&c.dev, "dev", false, "development: make up a JWT secret if none is given and print an admin and a user token")
	userRate, userBurst := envOr("ASYNCEVENT_USER_RATE", "0"), envOr("ASYNCEVENT_USER_BURST", "5")
	fs.StringVar(&userRate, "user-rate", userRate, "clicks a second a user may make, in this server's memory (0: no limit): a first line behind a WAF, not instead of one (env ASYNCEVENT_USER_RATE)")
	fs.StringVar(&userBurst, "user-burst", userBurst, "clicks a user may make at once before -user-rate holds them back (env ASYNCEVENT_USER_BURST)")
	fs.BoolVar(&c.statusLog, "status-log", true, "write a StatusLog item for every transition (GET /admin/requests/{id}/logs)")
	fs.DurationVar(&c.requestTimeout, "request-timeout", httpapi.DefaultRequestTimeout, "deadline of each request")
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: httpapi [flags]       serve the API\n       httpapi token -user ID [-admin] [-ttl D]   mint a bearer token\n\nFlags:\n")
		fs.PrintDefaults()
		fmt.Fprint(stderr, "\nEnvironment:\n  ASYNCEVENT_DRAW_SECRET\n    \tsecret sealing lottery seeds, hex, at least 32 bytes (openssl rand -hex 32);\n"+
			"    \tunset: UNSEALED seeds, readable from the table before the draw (development only)\n")
	}
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long a shutdown may take: drain HTTP, then stop the workers")
	fs.StringVar(&logFormat, "log-format", "text", "log format: text or json")
	fs.BoolVar(&c.otelStdout, "otel-stdout", false, "write OpenTelemetry traces and metrics to stdout as JSON (spans as they end, metrics every 30s)")
	fs.BoolVar(&c.otelPublic, "otel-public", false, "with -otel-stdout: take no caller's traceparent as the trace, start one linked to it (clients reach the server with no gateway between)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case !set["embedded"]:
		c.embedded = c.dynamoEndpoint == ""
	case c.embedded && c.dynamoEndpoint != "":
		return c, errors.New("-embedded and -dynamodb-endpoint exclude each other")
	}
	if c.embedded {
		c.createTable = true // an embedded DynamoDB Local starts empty
	}
	switch logFormat {
	case "text", "json":
		c.logJSON = logFormat == "json"
	default:
		return c, fmt.Errorf("-log-format %q: want text or json", logFormat)
	}
	var err error
	if c.userRate, err = strconv.ParseFloat(userRate, 64); err != nil || c.userRate < 0 || math.IsInf(c.userRate, 0) || math.IsNaN(c.userRate) {
		return c, fmt.Errorf("-user-rate %q: want clicks a second, 0 or more", userRate)
	}
	if c.userBurst, err = strconv.Atoi(userBurst); err != nil || c.userBurst < 1 {
		return c, fmt.Errorf("-user-burst %q: want 1 or more", userBurst)
	}
	if c.jwks.URL == "" && (c.jwks.Issuer != "" || c.jwks.Audience != "" || c.jwks.RoleClaim != httpapi.DefaultRoleClaim || c.jwks.AdminRole != string(httpapi.RoleAdmin)) {
		return c, errors.New("-jwt-issuer, -jwt-audience, -jwt-role-claim and -jwt-admin-role go with -jwks-url: the HS256 tokens of -jwt-secret check none of them")
	}
	if c.otelPublic && !c.otelStdout {
		return c, errors.New("-otel-public goes with -otel-stdout: without it no span is made")
	}
	if c.workers < 0 {
		return c, fmt.Errorf("-workers %d: want 0 or more", c.workers)
	}
	if c.requestTimeout <= 0 || c.shutdownTimeout <= 0 {
		return c, errors.New("-request-timeout and -shutdown-timeout must be positive")
	}
	switch {
	case c.jwks.URL != "" && (secret != "" || c.dev):
		return c, errors.New("-jwks-url excludes -jwt-secret and -dev: the identity provider signs the tokens")
	case c.jwks.URL != "" && (c.jwks.Issuer == "" || c.jwks.Audience == ""):
		return c, errors.New("-jwks-url needs -jwt-issuer and -jwt-audience: a token of another issuer, or meant for another API, would pass")
	case c.jwks.URL != "":
		return c, c.parseDrawSecret(getenv)
	case secret == "" && c.dev:
		b := make([]byte, httpapi.MinSecretBytes)
		_, _ = rand.Read(b) // never fails (crypto/rand)
		secret, c.generatedSecret = hex.EncodeToString(b), true
	case secret == "":
		return c, errors.New("a JWT secret is required: -jwt-secret or ASYNCEVENT_JWT_SECRET (or -dev to make one up)")
	case len(secret) < httpapi.MinSecretBytes:
		return c, fmt.Errorf("the JWT secret has %d bytes; HS256 wants at least %d", len(secret), httpapi.MinSecretBytes)
	}
	c.jwtSecret = []byte(secret)
	return c, c.parseDrawSecret(getenv)
}

// parseDrawSecret reads ASYNCEVENT_DRAW_SECRET, if set.
func (c *config) parseDrawSecret(getenv func(string) string) error {
	hexSecret := getenv("ASYNCEVENT_DRAW_SECRET")
	if hexSecret == "" {
		return nil
	}
	b, err := hex.DecodeString(hexSecret)
	if err != nil {
		return fmt.Errorf("ASYNCEVENT_DRAW_SECRET: want hex (openssl rand -hex 32): %w", err)
	}
	if len(b) < asyncevent.MinSeedSecretBytes {
		return fmt.Errorf("ASYNCEVENT_DRAW_SECRET has %d bytes; want at least %d", len(b), asyncevent.MinSeedSecretBytes)
	}
	c.drawSecret = b
	return nil
}

// admission is the per-user rate limit of -user-rate, if set.
func admission(cfg config) httpapi.Admission {
	if cfg.userRate == 0 {
		return nil
	}
	return httpapi.UserRateLimit(cfg.userRate, cfg.userBurst)
}

// authenticator is the identity provider's tokens (-jwks-url) or the HS256 secret's.
func authenticator(ctx context.Context, cfg config) (httpapi.Authenticator, error) {
	if cfg.jwks.URL != "" {
		return httpapi.NewJWKSAuthenticator(ctx, cfg.jwks)
	}
	return httpapi.NewJWTAuthenticator(cfg.jwtSecret, httpapi.JWTOptions{})
}

// run serves until ctx ends, then drains HTTP and stops the workers. ready, if
// set, is told the listening address.
func run(ctx context.Context, cfg config, stderr io.Writer, ready func(net.Addr)) error {
	var handler, libHandler slog.Handler
	if cfg.logJSON {
		handler = slog.NewJSONHandler(stderr, nil)
		libHandler = slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})
	} else {
		handler = slog.NewTextHandler(stderr, nil)
		libHandler = slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})
	}
	logger := slog.New(handler)

	// Set-up is bounded by ctx: a signal during it ends it.
	db, stopDB, err := dynamoClient(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer stopDB()
	opts := asyncevent.Options{TableName: cfg.table, StatusLog: cfg.statusLog, Logger: slog.New(libHandler)}
	if cfg.drawSecret != nil {
		if opts.Seeds, err = asyncevent.HMACSeeds(cfg.drawSecret); err != nil {
			return err
		}
	}
	var (
		obs    *otelasyncevent.Observer
		tracer trace.TracerProvider // the HTTP server's spans; nil: none
	)
	if cfg.otelStdout {
		out := cfg.telemetryOut
		if out == nil {
			out = os.Stdout
		}
		var shutdown func(context.Context) error
		obs, tracer, shutdown, err = stdoutTelemetry(out)
		if err != nil {
			return err
		}
		opts.Observer = obs
		defer func() { // after the workers have stopped: the last spans and metrics
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a loaded machine exports slowly
			defer cancel()
			if err := shutdown(ctx); err != nil {
				logger.Warn("flushing telemetry failed", "error", err)
			}
		}()
	}
	client, err := asyncevent.New(db, opts)
	if err != nil {
		return err
	}
	if obs != nil {
		obs.WatchSeats(client)
	}
	if cfg.createTable {
		err = client.CreateTable(ctx)
	} else {
		err = client.CheckTable(ctx)
	}
	if errors.Is(err, asyncevent.ErrTableNotFound) {
		return fmt.Errorf("table %s not found: pass -create-table to create it (or -table to name another)", cfg.table)
	}
	if err != nil {
		return fmt.Errorf("table %s: %w", cfg.table, err)
	}
	queue, err := newQueue(ctx, cfg)
	if err != nil {
		return err
	}

	// The workers run under a context of their own: a signal drains HTTP first, and
	// only then are the workers stopped, so the last accepted requests get processed.
	workers := make([]*asyncevent.Worker, 0, cfg.workers)
	stopWorkers := func(ctx context.Context) error {
		// All at once: on SQS each stop waits out its long poll (up to -worker-wait) so
		// as to give back what the poll returns.
		errs := make([]error, len(workers))
		var wg sync.WaitGroup
		for i, w := range workers {
			wg.Go(func() { errs[i] = w.Stop(ctx) })
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	for range cfg.workers {
		w, err := asyncevent.NewWorker(client, queue, asyncevent.WorkerOptions{
			ProcessOptions:    asyncevent.ProcessOptions{Logger: slog.New(libHandler)},
			WaitTime:          cfg.workerWait,
			VisibilityTimeout: cfg.workerVisibility,
		})
		if err == nil {
			err = w.Start(context.WithoutCancel(ctx))
		}
		if err != nil {
			_ = stopWorkers(context.Background())
			return fmt.Errorf("worker: %w", err)
		}
		workers = append(workers, w)
	}

	auth, err := authenticator(ctx, cfg)
	if err != nil {
		_ = stopWorkers(context.Background())
		return err
	}
	if jwks, ok := auth.(*httpapi.JWKSAuthenticator); ok {
		defer jwks.Close() // its key set's refreshes
	}
	srv, err := httpapi.NewServer(httpapi.ServerOptions{
		Client:         client,
		Queue:          queue,
		Authenticator:  auth,
		Admission:      admission(cfg),
		TracerProvider: tracer,
		PublicEndpoint: cfg.otelPublic,
		Logger:         logger,
		RequestTimeout: cfg.requestTimeout,
	})
	if err == nil {
		err = srv.MountAdminUI(httpapi.AdminUIOptions{})
	}
	if err != nil {
		_ = stopWorkers(context.Background())
		return err
	}
	httpServer := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      cfg.requestTimeout + 5*time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(handler, slog.LevelWarn),
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		_ = stopWorkers(context.Background())
		return err
	}
	logger.Info("listening", "addr", ln.Addr().String(), "table", cfg.table, "queue", queueName(cfg), "workers", cfg.workers)
	if cfg.dev {
		printDevTokens(stderr, cfg)
	}
	if ready != nil {
		ready(ln.Addr())
	}
	served := make(chan error, 1)
	go func() { served <- httpServer.Serve(ln) }()

	var serveErr error
	select {
	case <-ctx.Done():
		logger.Info("shutting down: draining HTTP, then stopping the workers")
	case serveErr = <-served:
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.shutdownTimeout)
	defer cancel()
	// Then the ingest's last progress counts (the workers wrote theirs as they stopped).
	errs := []error{httpServer.Shutdown(shutdownCtx), stopWorkers(shutdownCtx), client.FlushProgress(shutdownCtx)}
	if !errors.Is(serveErr, http.ErrServerClosed) {
		errs = append(errs, serveErr)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	logger.Info("stopped")
	return nil
}

// dynamoClient returns the DynamoDB client the flags ask for, and a function that
// stops the embedded DynamoDB Local, if one was started.
func dynamoClient(ctx context.Context, cfg config, logger *slog.Logger) (*dynamodb.Client, func(), error) {
	endpoint := cfg.dynamoEndpoint
	stop := func() {}
	switch {
	case cfg.embedded:
		inst, err := dynamodblocal.Start(ctx, dynamodblocal.Options{Logf: func(format string, args ...any) {
			logger.Info(fmt.Sprintf(format, args...))
		}})
		if err != nil {
			return nil, nil, err
		}
		stop = func() { _ = inst.Stop() }
		endpoint = inst.Endpoint
	case endpoint == "":
		awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("aws config: %w", err)
		}
		return dynamodb.NewFromConfig(awsCfg), stop, nil
	}
	db, err := dynamodblocal.NewClient(endpoint)
	if err != nil {
		stop()
		return nil, nil, err
	}
	return db, stop, nil
}

// newQueue returns the SQS queue the flags name, or an in-memory queue.
func newQueue(ctx context.Context, cfg config) (queue.Queue, error) {
	if cfg.queueURL == "" {
		return queue.NewMemory(queue.MemoryOptions{MaxReceives: asyncevent.DefaultMaxReceives}), nil
	}
	var client *sqs.Client
	if cfg.sqsEndpoint != "" {
		// A local SQS such as fauxqs checks only that some credentials are there.
		client = sqs.New(sqs.Options{
			Region:       "us-east-1",
			Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
			BaseEndpoint: aws.String(cfg.sqsEndpoint),
		})
	} else {
		awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("aws config: %w", err)
		}
		client = sqs.NewFromConfig(awsCfg)
	}
	return queue.NewSQS(client, cfg.queueURL)
}

func queueName(cfg config) string {
	if cfg.queueURL == "" {
		return "memory"
	}
	return cfg.queueURL
}

// printDevTokens prints a day's admin and user token, ready to paste into a shell.
func printDevTokens(w io.Writer, cfg config) {
	exp := time.Now().Add(24 * time.Hour)
	admin, err1 := httpapi.MintToken(cfg.jwtSecret, "admin-1", httpapi.RoleAdmin, exp)
	user, err2 := httpapi.MintToken(cfg.jwtSecret, "user-1", httpapi.RoleUser, exp)
	if err := errors.Join(err1, err2); err != nil {
		fmt.Fprintln(w, "dev: cannot mint tokens:", err)
		return
	}
	if cfg.generatedSecret {
		fmt.Fprintln(w, "dev: made up a JWT secret; tokens signed with it die with this process")
		fmt.Fprintf(w, "export ASYNCEVENT_JWT_SECRET=%s\n", cfg.jwtSecret)
	}
	fmt.Fprintf(w, "dev: tokens valid until %s:\nexport ADMIN_TOKEN=%s\nexport USER_TOKEN=%s\n",
		exp.UTC().Format(time.RFC3339), admin, user)
	fmt.Fprintf(w, "dev: curl -s -X POST localhost%s/events/spring-sale/participations -H \"Authorization: Bearer $USER_TOKEN\"\n", portOf(cfg.addr))
	fmt.Fprintln(w, "dev: a token for another user: go run ./examples/httpapi token -user NAME [-admin] (with ASYNCEVENT_JWT_SECRET as above)")
	fmt.Fprintf(w, "dev: admin web UI at http://localhost%s/admin/ui/ (sign in with $ADMIN_TOKEN)\n", portOf(cfg.addr))
}

func portOf(addr string) string {
	if _, port, err := net.SplitHostPort(addr); err == nil {
		if _, err := strconv.Atoi(port); err == nil {
			return ":" + port
		}
	}
	return ":8080"
}

// mintCmd is the token subcommand: it prints a bearer token for a user, signed with
// the server's secret (-jwt-secret or ASYNCEVENT_JWT_SECRET).
func mintCmd(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("httpapi token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	user := fs.String("user", "", "the user ID (the token's sub); required")
	admin := fs.Bool("admin", false, "role admin, for /admin/* and the admin web UI")
	ttl := fs.Duration("ttl", 24*time.Hour, "how long the token is valid")
	secret := fs.String("jwt-secret", getenv("ASYNCEVENT_JWT_SECRET"), "HS256 secret of the server (env ASYNCEVENT_JWT_SECRET)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	case *user == "":
		return errors.New("-user is required")
	case *ttl <= 0:
		return fmt.Errorf("-ttl %s: want a positive duration", *ttl)
	}
	auth, err := httpapi.NewJWTAuthenticator([]byte(*secret), httpapi.JWTOptions{})
	if err != nil {
		return fmt.Errorf("%w (-jwt-secret or ASYNCEVENT_JWT_SECRET: the server's secret)", err)
	}
	role := httpapi.RoleUser
	if *admin {
		role = httpapi.RoleAdmin
	}
	tok, err := auth.Mint(*user, role, time.Now().Add(*ttl))
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, tok)
	return err
}
