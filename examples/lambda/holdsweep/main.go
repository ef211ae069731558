// Command holdsweep is an AWS Lambda function that runs the hold sweep of events
// with holds with package awslambda, for an EventBridge schedule (rate(1 minute)):
// the holds that ran out end, and the seats given back go to the waitlist. The queue's
// function (examples/lambda) does not sweep, as a long-running Worker does.
//
// Environment: ASYNCEVENT_TABLE (default AsyncEventTable); ASYNCEVENT_HOLD_EVENTS,
// the IDs of the events to sweep, comma-separated (default: every event the hold
// registry offers, Client.HoldEvents);
// ASYNCEVENT_SWEEP_OWNER, to take each event's sweep lease in turn with the Workers
// (optional); the AWS SDK's usual variables for region and credentials.
package main

import (
	"context"
	"log"
	"log/slog"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/awslambda"
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
	s, err := awslambda.NewHoldSweeper(client, awslambda.SweepOptions{
		Events:           strings.FieldsFunc(os.Getenv("ASYNCEVENT_HOLD_EVENTS"), func(r rune) bool { return r == ',' || r == ' ' }),
		HoldSweepOptions: asyncevent.HoldSweepOptions{Owner: os.Getenv("ASYNCEVENT_SWEEP_OWNER")},
		Logger:           slog.Default(), // a line per event swept, to CloudWatch Logs
	})
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(s.Handle)
}
