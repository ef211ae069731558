package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/httpapi"
	"github.com/asyncevent/asyncevent/seed"
)

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

// textFlags are the flags read as text; parseConfig turns them into config fields
// once it has checked them.
type textFlags struct {
	jwtSecret string
	logFormat string
	userRate  string
	userBurst string
}

// parseConfig reads the flags, with getenv for their environment fallbacks.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	var (
		c    config
		text textFlags
	)
	fs := newFlagSet(&c, &text, getenv, stderr)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := c.resolve(text, set["embedded"]); err != nil {
		return c, err
	}
	if err := c.check(); err != nil {
		return c, err
	}
	if err := c.bearerSecret(text.jwtSecret); err != nil {
		return c, err
	}
	return c, c.parseDrawSecret(getenv)
}

// newFlagSet declares the flags into c and text, each with its environment
// fallback read through getenv.
func newFlagSet(c *config, text *textFlags, getenv func(string) string, stderr io.Writer) *flag.FlagSet {
	envOr := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
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
	fs.StringVar(&text.jwtSecret, "jwt-secret", getenv("ASYNCEVENT_JWT_SECRET"), "HS256 secret of the bearer tokens, at least 32 bytes (env ASYNCEVENT_JWT_SECRET)")
	fs.StringVar(&c.jwks.URL, "jwks-url", getenv("ASYNCEVENT_JWKS_URL"), "an identity provider's JWK set URL: RS256/ES256 tokens instead of -jwt-secret's (env ASYNCEVENT_JWKS_URL)")
	fs.StringVar(&c.jwks.Issuer, "jwt-issuer", getenv("ASYNCEVENT_JWT_ISSUER"), "the tokens' required iss, with -jwks-url (env ASYNCEVENT_JWT_ISSUER)")
	fs.StringVar(&c.jwks.Audience, "jwt-audience", getenv("ASYNCEVENT_JWT_AUDIENCE"), "the tokens' required aud, with -jwks-url (env ASYNCEVENT_JWT_AUDIENCE)")
	fs.StringVar(&c.jwks.RoleClaim, "jwt-role-claim", envOr("ASYNCEVENT_JWT_ROLE_CLAIM", httpapi.DefaultRoleClaim), "the claim that carries the roles, a string or an array (Cognito: cognito:groups) (env ASYNCEVENT_JWT_ROLE_CLAIM)")
	fs.StringVar(&c.jwks.AdminRole, "jwt-admin-role", envOr("ASYNCEVENT_JWT_ADMIN_ROLE", string(httpapi.RoleAdmin)), "the role of the admins, with -jwks-url (env ASYNCEVENT_JWT_ADMIN_ROLE)")
	fs.BoolVar(&c.dev, "dev", false, "development: make up a JWT secret if none is given, print an admin and a user token, and sign a browser on this machine in at /dev/sign-in?user=ID (a cookie)")
	fs.StringVar(&text.userRate, "user-rate", envOr("ASYNCEVENT_USER_RATE", "0"), "clicks a second a user may make, in this server's memory (0: no limit): a first line behind a WAF, not instead of one (env ASYNCEVENT_USER_RATE)")
	fs.StringVar(&text.userBurst, "user-burst", envOr("ASYNCEVENT_USER_BURST", "5"), "clicks a user may make at once before -user-rate holds them back (env ASYNCEVENT_USER_BURST)")
	fs.BoolVar(&c.statusLog, "status-log", true, "write a StatusLog item for every transition (GET /admin/requests/{id}/logs)")
	fs.DurationVar(&c.requestTimeout, "request-timeout", httpapi.DefaultRequestTimeout, "deadline of each request")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long a shutdown may take: drain HTTP, then stop the workers")
	fs.StringVar(&text.logFormat, "log-format", "text", "log format: text or json")
	fs.BoolVar(&c.otelStdout, "otel-stdout", false, "write OpenTelemetry traces and metrics to stdout as JSON (spans as they end, metrics every 30s)")
	fs.BoolVar(&c.otelPublic, "otel-public", false, "with -otel-stdout: take no caller's traceparent as the trace, start one linked to it (clients reach the server with no gateway between)")
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: httpapi [flags]       serve the API\n       httpapi token -user ID [-admin] [-ttl D]   mint a bearer token\n\nFlags:\n")
		fs.PrintDefaults()
		fmt.Fprint(stderr, "\nEnvironment:\n  ASYNCEVENT_DRAW_SECRET\n    \tsecret sealing lottery seeds, hex, at least 32 bytes (openssl rand -hex 32);\n"+
			"    \tunset: UNSEALED seeds, readable from the table before the draw (development only)\n")
	}
	return fs
}

// resolve fills in the fields that follow from other flags or are read from text:
// -embedded's default, -create-table (always with -embedded), the log format and
// the per-user rate limit.
func (c *config) resolve(text textFlags, embeddedSet bool) error {
	switch {
	case !embeddedSet:
		c.embedded = c.dynamoEndpoint == ""
	case c.embedded && c.dynamoEndpoint != "":
		return errors.New("-embedded and -dynamodb-endpoint exclude each other")
	}
	if c.embedded {
		c.createTable = true // an embedded DynamoDB Local starts empty
	}
	switch text.logFormat {
	case "text", "json":
		c.logJSON = text.logFormat == "json"
	default:
		return fmt.Errorf("-log-format %q: want text or json", text.logFormat)
	}
	var err error
	if c.userRate, err = strconv.ParseFloat(text.userRate, 64); err != nil || c.userRate < 0 || math.IsInf(c.userRate, 0) || math.IsNaN(c.userRate) {
		return fmt.Errorf("-user-rate %q: want clicks a second, 0 or more", text.userRate)
	}
	if c.userBurst, err = strconv.Atoi(text.userBurst); err != nil || c.userBurst < 1 {
		return fmt.Errorf("-user-burst %q: want 1 or more", text.userBurst)
	}
	return nil
}

// check refuses flags that do not go together and numbers out of range.
func (c *config) check() error {
	if c.jwks.URL == "" && (c.jwks.Issuer != "" || c.jwks.Audience != "" || c.jwks.RoleClaim != httpapi.DefaultRoleClaim || c.jwks.AdminRole != string(httpapi.RoleAdmin)) {
		return errors.New("-jwt-issuer, -jwt-audience, -jwt-role-claim and -jwt-admin-role go with -jwks-url: the HS256 tokens of -jwt-secret check none of them")
	}
	if c.otelPublic && !c.otelStdout {
		return errors.New("-otel-public goes with -otel-stdout: without it no span is made")
	}
	if c.workers < 0 {
		return fmt.Errorf("-workers %d: want 0 or more", c.workers)
	}
	if c.requestTimeout <= 0 || c.shutdownTimeout <= 0 {
		return errors.New("-request-timeout and -shutdown-timeout must be positive")
	}
	return nil
}

// bearerSecret settles who signs the bearer tokens: the identity provider of
// -jwks-url, or the HS256 secret (-jwt-secret), which -dev makes up when none is
// given.
func (c *config) bearerSecret(secret string) error {
	switch {
	case c.jwks.URL != "" && (secret != "" || c.dev):
		return errors.New("-jwks-url excludes -jwt-secret and -dev: the identity provider signs the tokens")
	case c.jwks.URL != "" && (c.jwks.Issuer == "" || c.jwks.Audience == ""):
		return errors.New("-jwks-url needs -jwt-issuer and -jwt-audience: a token of another issuer, or meant for another API, would pass")
	case c.jwks.URL != "":
		return nil
	case secret == "" && c.dev:
		b := make([]byte, httpapi.MinSecretBytes)
		_, _ = rand.Read(b) // never fails (crypto/rand)
		secret, c.generatedSecret = hex.EncodeToString(b), true
	case secret == "":
		return errors.New("a JWT secret is required: -jwt-secret or ASYNCEVENT_JWT_SECRET (or -dev to make one up)")
	case len(secret) < httpapi.MinSecretBytes:
		return fmt.Errorf("the JWT secret has %d bytes; HS256 wants at least %d", len(secret), httpapi.MinSecretBytes)
	}
	c.jwtSecret = []byte(secret)
	return nil
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
	if len(b) < seed.MinSecretBytes {
		return fmt.Errorf("ASYNCEVENT_DRAW_SECRET has %d bytes; want at least %d", len(b), seed.MinSecretBytes)
	}
	c.drawSecret = b
	return nil
}
