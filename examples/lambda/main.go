// Command lambda is an AWS Lambda function that processes the asyncevent queue with
// package awslambda: an SQS event source mapping delivers batches, and the function
// reports the messages that must come back as partial batch failures (enable
// ReportBatchItemFailures on the mapping).
//
// Environment: ASYNCEVENT_TABLE (default AsyncEventTable); ASYNCEVENT_QUEUE_URL, the
// mapping's queue, for the worker's backoff and keep-alive through
// ChangeMessageVisibility (optional); ASYNCEVENT_VISIBILITY_TIMEOUT, that queue's
// visibility timeout (default 30s); the AWS SDK's usual variables for region and
// credentials.
package main

import (
	"context"
	"log"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/awslambda"
	"github.com/asyncevent/asyncevent/queue"
)

func main() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	client, err := asyncevent.New(dynamodb.NewFromConfig(cfg), asyncevent.Options{TableName: os.Getenv("ASYNCEVENT_TABLE")})
	if err != nil {
		log.Fatal(err)
	}
	// MaxReceives must equal the queue's redrive policy maxReceiveCount.
	opts := awslambda.Options{ProcessOptions: asyncevent.ProcessOptions{MaxReceives: 5}}
	if url := os.Getenv("ASYNCEVENT_QUEUE_URL"); url != "" {
		if opts.Queue, err = queue.NewSQS(sqs.NewFromConfig(cfg), url); err != nil {
			log.Fatal(err)
		}
	}
	if v := os.Getenv("ASYNCEVENT_VISIBILITY_TIMEOUT"); v != "" {
		if opts.VisibilityTimeout, err = time.ParseDuration(v); err != nil {
			log.Fatal(err)
		}
	}
	h, err := awslambda.New(client, opts)
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(h.Handle)
}
