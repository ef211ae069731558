package clikit

import (
	"context"
	"encoding/hex"
	"flag"
	"fmt"
	"net/http"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/dynamodblocal"
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

// DynamoDB returns the DynamoDB client the global flags name: the endpoint with
// DynamoDB Local's dummy credentials, or AWS through the default configuration.
func (e *Env) DynamoDB(ctx context.Context) (*dynamodb.Client, error) {
	if e.Endpoint != "" {
		return dynamodblocal.NewClient(e.Endpoint, func(o *dynamodb.Options) {
			if e.Region != "" {
				o.Region = e.Region
			}
			o.HTTPClient = httpClient()
		})
	}
	var opts []func(*config.LoadOptions) error
	if e.Region != "" {
		opts = append(opts, config.WithRegion(e.Region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, Usagef("no AWS region: set -region or %s (or -endpoint for a DynamoDB Local)", EnvRegion)
	}
	return dynamodb.NewFromConfig(cfg), nil
}

// Options are the library options of the CLI's clients: the table, and lottery seeds
// sealed by the secret in ASYNCEVENT_DRAW_SECRET when it is set.
func (e *Env) Options() (asyncevent.Options, error) {
	opts := asyncevent.Options{TableName: e.Table, DrawSettleWindow: e.DrawSettleWindow}
	if e.DrawSecret == "" {
		return opts, nil
	}
	secret, err := hex.DecodeString(e.DrawSecret)
	if err != nil {
		return opts, Usagef("%s: want the secret in hex (openssl rand -hex 32): %v", EnvDrawSecret, err)
	}
	if opts.Seeds, err = seed.HMAC(secret); err != nil {
		return opts, Usagef("%s: %v", EnvDrawSecret, err)
	}
	return opts, nil
}

// StartLocal gives demo and bench a DynamoDB Local when no endpoint was given: it
// starts one with StartDynamoDBLocal (in the CLI a container through
// testcontainers-go on a loopback-only engine, or the jar with Java and npm) and
// sets the endpoint. The returned function stops it.
func (e *Env) StartLocal(ctx context.Context) (stop func(), err error) {
	if e.Endpoint != "" {
		return func() {}, nil
	}
	fmt.Fprintln(e.Stderr, "starting an embedded DynamoDB Local (set -endpoint or "+EnvEndpoint+" to use a running one)…")
	start := e.StartDynamoDBLocal
	if start == nil {
		start = dynamodblocal.Start
	}
	inst, err := start(ctx, dynamodblocal.Options{Logf: func(format string, args ...any) {
		fmt.Fprintf(e.Stderr, "  "+format+"\n", args...)
	}})
	if err != nil {
		return nil, err
	}
	e.Endpoint = inst.Endpoint
	e.LocalSource = inst.Source
	return func() { _ = inst.Stop() }, nil
}

// SQSFlags name an SQS queue: its URL, and the endpoint of a local SQS.
type SQSFlags struct {
	QueueURL string
	Endpoint string
}

// Register declares -queue-url and -sqs-endpoint on fs; required says the queue must
// be named.
func (s *SQSFlags) Register(fs *flag.FlagSet, required bool) {
	what := "SQS queue `URL` the workers read (required)"
	if !required {
		what = "SQS queue `URL`"
		what += " (default: an in-memory queue; with -sqs-endpoint alone, a new queue there)"
	}
	fs.StringVar(&s.QueueURL, "queue-url", "", what)
	fs.StringVar(&s.Endpoint, "sqs-endpoint", s.Endpoint, "SQS endpoint `URL` of a local SQS such as fauxqs (env "+EnvSQSEndpoint+"); empty: AWS")
}

// Client returns the SQS client the flags name.
func (s *SQSFlags) Client(ctx context.Context, region string) (*sqs.Client, error) {
	if s.Endpoint != "" {
		return sqslocal.NewClient(ctx, s.Endpoint, func(o *sqs.Options) {
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
