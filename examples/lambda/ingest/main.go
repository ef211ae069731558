// Command ingest is an AWS Lambda function behind an API Gateway HTTP API that serves
// the asyncevent HTTP API (package httpapi) through the AWS Labs API proxy
// (httpadapter, payload format 2.0): users take part and follow their requests,
// admins run events. It sends the participations to the queue the worker function
// (examples/lambda) processes.
//
// Environment: ASYNCEVENT_TABLE (default AsyncEventTable); ASYNCEVENT_QUEUE_URL, the
// participation queue (required); the identity provider's tokens:
// ASYNCEVENT_JWKS_URL, ASYNCEVENT_JWT_ISSUER, ASYNCEVENT_JWT_AUDIENCE (all three
// required), ASYNCEVENT_JWT_ROLE_CLAIM (default role; Cognito: cognito:groups),
// ASYNCEVENT_JWT_ADMIN_ROLE (the claim's value that makes an admin; default admin);
// ASYNCEVENT_USER_RATE, clicks a second a user may make on one instance of the
// function (optional; each instance keeps its own, so a first line behind a WAF
// only); the AWS SDK's usual variables for region and credentials.
//
// A CORS preflight (OPTIONS) is answered 204 with no body: API Gateway, configured for
// CORS, adds the headers. The event's progress counts (the place in line) are written
// after an invocation when they are due (Client.FlushDueProgress: at once when the
// invocations come less often than ProgressEvery, else at the first one after each of
// its multiples), and when Lambda shuts the instance down (SIGTERM).
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/httpapi"
	"github.com/asyncevent/asyncevent/queue"
)

func main() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	client, err := asyncevent.New(dynamodb.NewFromConfig(cfg), asyncevent.Options{TableName: os.Getenv("ASYNCEVENT_TABLE"), ProgressEvery: progressEvery})
	if err != nil {
		log.Fatal(err)
	}
	q, err := queue.NewSQS(sqs.NewFromConfig(cfg), os.Getenv("ASYNCEVENT_QUEUE_URL"))
	if err != nil {
		log.Fatalf("ASYNCEVENT_QUEUE_URL: %v", err)
	}
	auth, err := authenticator(ctx, os.Getenv)
	if err != nil {
		log.Fatal(err)
	}
	handle, err := newHandler(client, q, auth, os.Getenv)
	if err != nil {
		log.Fatal(err)
	}
	lambda.StartWithOptions(handle, lambda.WithEnableSIGTERM(func() {
		// Lambda gives an instance about 300 ms between SIGTERM and its end.
		ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
		defer cancel()
		if err := client.FlushProgress(ctx); err != nil {
			log.Printf("at shutdown, the progress counts were not written: %v", err)
		}
	}))
}

// authenticator is the identity provider's tokens the environment names.
func authenticator(ctx context.Context, getenv func(string) string) (httpapi.Authenticator, error) {
	opts := httpapi.JWKSOptions{
		URL: getenv("ASYNCEVENT_JWKS_URL"), Issuer: getenv("ASYNCEVENT_JWT_ISSUER"),
		Audience: getenv("ASYNCEVENT_JWT_AUDIENCE"), RoleClaim: getenv("ASYNCEVENT_JWT_ROLE_CLAIM"),
		AdminRole: getenv("ASYNCEVENT_JWT_ADMIN_ROLE"),
	}
	if opts.URL == "" || opts.Issuer == "" || opts.Audience == "" {
		return nil, errors.New("ASYNCEVENT_JWKS_URL, ASYNCEVENT_JWT_ISSUER and ASYNCEVENT_JWT_AUDIENCE are required")
	}
	return httpapi.NewJWKSAuthenticator(ctx, opts)
}

// progressEvery is the client's Options.ProgressEvery: the multiples of it at which
// every node writes its counts of the event's progress (the place in line), and
// readers take them as written. A frozen sandbox runs no timer, and a write per click
// would heat the progress partitions as much as the clicks: an invocation writes the
// counts when they are due (Client.FlushDueProgress). A count made by a sandbox that
// wrote once since the last multiple waits for its first invocation after the next
// multiple, or its shutdown (SIGTERM), and is read as it lands, the estimate carrying
// the line on meanwhile.
const progressEvery = 200 * time.Millisecond

// newHandler returns the function's handler: the HTTP API through the adapter, and
// the progress counts written after an invocation when they are due.
func newHandler(client *asyncevent.Client, q queue.Queue, auth httpapi.Authenticator, getenv func(string) string) (func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error), error) {
	so := httpapi.ServerOptions{Client: client, Queue: q, Authenticator: auth}
	if v := getenv("ASYNCEVENT_USER_RATE"); v != "" {
		rate, err := strconv.ParseFloat(v, 64)
		if err != nil || rate <= 0 {
			return nil, fmt.Errorf("ASYNCEVENT_USER_RATE %q: want clicks a second, more than 0", v)
		}
		so.Admission = httpapi.UserRateLimit(rate, 5)
	}
	srv, err := httpapi.NewServer(so)
	if err != nil {
		return nil, err
	}
	adapter := httpadapter.NewV2(preflight(srv.Handler()))
	return func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		resp, err := adapter.ProxyWithContext(ctx, req)
		if ferr := client.FlushDueProgress(ctx); ferr != nil {
			log.Printf("the progress counts were not written: %v", ferr)
		}
		return resp, err
	}, nil
}

// preflight answers a CORS preflight (OPTIONS) 204 with no body, for API Gateway to
// add the CORS headers it is configured with; other requests go to next.
func preflight(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}
