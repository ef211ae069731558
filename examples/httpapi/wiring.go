package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/dynamodblocal"
	"github.com/asyncevent/asyncevent/httpapi"
	"github.com/asyncevent/asyncevent/queue"
	"github.com/asyncevent/asyncevent/seed"
)

// newLoggers returns the command's logger and the library's, which logs warnings
// and errors only; both write -log-format's format to stderr.
func newLoggers(cfg config, stderr io.Writer) (logger, libLogger *slog.Logger) {
	if cfg.logJSON {
		return slog.New(slog.NewJSONHandler(stderr, nil)),
			slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.NewTextHandler(stderr, nil)),
		slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
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

// newClient returns the library's client on cfg.table, with the sealed lottery
// seeds of ASYNCEVENT_DRAW_SECRET and tel's observer when they are set, once it
// has created the table (-create-table) or checked it.
func newClient(ctx context.Context, cfg config, db *dynamodb.Client, tel *telemetry, libLogger *slog.Logger) (*asyncevent.Client, error) {
	opts := asyncevent.Options{TableName: cfg.table, StatusLog: cfg.statusLog, Logger: libLogger}
	var err error
	if cfg.drawSecret != nil {
		if opts.Seeds, err = seed.HMAC(cfg.drawSecret); err != nil {
			return nil, err
		}
	}
	if tel != nil {
		opts.Observer = tel.observer
	}
	client, err := asyncevent.New(db, opts)
	if err != nil {
		return nil, err
	}
	if tel != nil {
		tel.observer.WatchSeats(client)
	}
	if cfg.createTable {
		err = client.CreateTable(ctx)
	} else {
		err = client.CheckTable(ctx)
	}
	if errors.Is(err, asyncevent.ErrTableNotFound) {
		return nil, fmt.Errorf("table %s not found: pass -create-table to create it (or -table to name another)", cfg.table)
	}
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", cfg.table, err)
	}
	return client, nil
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

// queueName is the queue as the "listening" log line names it.
func queueName(cfg config) string {
	if cfg.queueURL == "" {
		return "memory"
	}
	return cfg.queueURL
}

// authenticator is the identity provider's tokens (-jwks-url) or the HS256 secret's,
// which with -dev may also come in the dev sign-in's cookie.
func authenticator(ctx context.Context, cfg config) (httpapi.Authenticator, error) {
	if cfg.jwks.URL != "" {
		return httpapi.NewJWKSAuthenticator(ctx, cfg.jwks)
	}
	var opts httpapi.JWTOptions
	if cfg.dev {
		opts.CookieName = devCookie
	}
	return httpapi.NewJWTAuthenticator(cfg.jwtSecret, opts)
}

// admission is the per-user rate limit of -user-rate, if set.
func admission(cfg config) httpapi.Admission {
	if cfg.userRate == 0 {
		return nil
	}
	return httpapi.UserRateLimit(cfg.userRate, cfg.userBurst)
}
