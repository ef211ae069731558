package main

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"strings"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/dynamodblocal"
	"github.com/asyncevent/asyncevent/dynamodblocal/container"
	"github.com/asyncevent/asyncevent/internal/sqslocal"
	"github.com/asyncevent/asyncevent/seed"
)

// maxConnsPerHost keeps enough idle connections for the demo's and the bench's
// concurrent callers; the SDK's default of 10 would open and close connections all
// the time under 16 clients and 8 workers.
const maxConnsPerHost = 64

func httpClient() *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConns = maxConnsPerHost * 2
		t.MaxIdleConnsPerHost = maxConnsPerHost
	})
}

// dynamoDB returns the DynamoDB client the global flags name: the endpoint with
// DynamoDB Local's dummy credentials, or AWS through the default configuration.
func (e *env) dynamoDB(ctx context.Context) (*dynamodb.Client, error) {
	if e.endpoint != "" {
		return dynamodblocal.NewClient(e.endpoint, func(o *dynamodb.Options) {
			if e.region != "" {
				o.Region = e.region
			}
			o.HTTPClient = httpClient()
		})
	}
	var opts []func(*config.LoadOptions) error
	if e.region != "" {
		opts = append(opts, config.WithRegion(e.region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, usagef("no AWS region: set -region or %s (or -endpoint for a DynamoDB Local)", envRegion)
	}
	return dynamodb.NewFromConfig(cfg), nil
}

// client returns a library client on the global flags' table.
func (e *env) client(ctx context.Context) (*asyncevent.Client, error) {
	db, err := e.dynamoDB(ctx)
	if err != nil {
		return nil, err
	}
	opts, err := e.options()
	if err != nil {
		return nil, err
	}
	c, err := asyncevent.New(db, opts)
	if errors.Is(err, asyncevent.ErrInvalidOptions) && strings.Contains(err.Error(), "table name") {
		return nil, usagef("-table %q: want 3 to 255 of a-z A-Z 0-9 _ . -", e.table)
	}
	return c, err
}

// options are the library options of the CLI's clients: the table, and lottery seeds
// sealed by the secret in ASYNCEVENT_DRAW_SECRET when it is set.
func (e *env) options() (asyncevent.Options, error) {
	opts := asyncevent.Options{TableName: e.table}
	if e.drawSecret == "" {
		return opts, nil
	}
	secret, err := hex.DecodeString(e.drawSecret)
	if err != nil {
		return opts, usagef("%s: want the secret in hex (openssl rand -hex 32): %v", envDrawSecret, err)
	}
	if opts.Seeds, err = seed.HMAC(secret); err != nil {
		return opts, usagef("%s: %v", envDrawSecret, err)
	}
	return opts, nil
}

// unsealedNote is what the CLI says of a lottery created without a seed source.
const unsealedNote = "seed UNSEALED: stored on the DRAW item, so anyone who can read the table can read it before the draw; for a real draw set " + envDrawSecret

// startLocal gives demo and bench a DynamoDB Local when no endpoint was given: it
// starts one (a container through testcontainers-go on a loopback-only engine, or the
// jar with Java and npm) and sets the endpoint. The
// returned function stops it.
func (e *env) startLocal(ctx context.Context) (stop func(), err error) {
	if e.endpoint != "" {
		return func() {}, nil
	}
	fmt.Fprintln(e.stderr, "starting an embedded DynamoDB Local (set -endpoint or "+envEndpoint+" to use a running one)…")
	inst, err := container.Start(ctx, dynamodblocal.Options{Logf: func(format string, args ...any) {
		fmt.Fprintf(e.stderr, "  "+format+"\n", args...)
	}})
	if err != nil {
		return nil, err
	}
	e.endpoint = inst.Endpoint
	e.localSource = inst.Source
	return func() { _ = inst.Stop() }, nil
}

// sqsFlags name an SQS queue: its URL, and the endpoint of a local SQS.
type sqsFlags struct {
	queueURL string
	endpoint string
}

func (s *sqsFlags) register(fs *flag.FlagSet, required bool) {
	what := "SQS queue `URL` the workers read (required)"
	if !required {
		what = "SQS queue `URL`"
		what += " (default: an in-memory queue; with -sqs-endpoint alone, a new queue there)"
	}
	fs.StringVar(&s.queueURL, "queue-url", "", what)
	fs.StringVar(&s.endpoint, "sqs-endpoint", s.endpoint, "SQS endpoint `URL` of a local SQS such as fauxqs (env "+envSQSEndpoint+"); empty: AWS")
}

// sqsClient returns the SQS client the flags name.
func (s *sqsFlags) sqsClient(ctx context.Context, region string) (*sqs.Client, error) {
	if s.endpoint != "" {
		return sqslocal.NewClient(ctx, s.endpoint, func(o *sqs.Options) {
			if region != "" {
				o.Region = region
			}
		})
	}
	var opts []func(*config.LoadOptions) error
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	}
	return sqs.NewFromConfig(cfg), nil
}
