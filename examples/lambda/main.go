// Command lambda is an AWS Lambda function that processes the asyncevent queue: an SQS
// event source mapping delivers batches, and the function reports the messages that
// must come back as partial batch failures (enable ReportBatchItemFailures on the
// mapping). The processing is the same as the long-running Worker's.
//
// Environment: ASYNCEVENT_TABLE (default AsyncEventTable); the AWS SDK's usual
// variables for region and credentials.
package main

import (
	"context"
	"log"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/asyncevent/asyncevent"
)

func main() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	table := os.Getenv("ASYNCEVENT_TABLE")
	client, err := asyncevent.New(dynamodb.NewFromConfig(cfg), asyncevent.Options{TableName: table})
	if err != nil {
		log.Fatal(err)
	}
	// MaxReceives must equal the queue's redrive policy maxReceiveCount.
	p := asyncevent.NewProcessor(client, asyncevent.ProcessOptions{MaxReceives: 5})
	lambda.Start(handler(p))
}

// handler processes one SQS batch and returns the messages that must be retried.
func handler(p *asyncevent.Processor) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		ds := make([]asyncevent.Delivery, 0, len(ev.Records))
		for _, r := range ev.Records {
			ds = append(ds, delivery(r))
		}
		var resp events.SQSEventResponse
		for _, id := range p.ProcessMessages(ctx, ds) {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
		}
		return resp, nil
	}
}

// delivery converts a Lambda SQS record.
func delivery(r events.SQSMessage) asyncevent.Delivery {
	d := asyncevent.Delivery{MessageID: r.MessageId, Receipt: r.ReceiptHandle, Body: []byte(r.Body), ReceiveCount: 1}
	if n, err := strconv.Atoi(r.Attributes["ApproximateReceiveCount"]); err == nil {
		d.ReceiveCount = n
	}
	if ms, err := strconv.ParseInt(r.Attributes["SentTimestamp"], 10, 64); err == nil {
		d.SentAt = time.UnixMilli(ms)
	}
	return d
}
