// Package ddblocal is the former home of the DynamoDB Local launcher, kept so that
// code written against it still builds.
//
// Deprecated: use github.com/asyncevent/asyncevent/dynamodblocal.
package ddblocal

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/asyncevent/asyncevent/dynamodblocal"
)

// The names of package dynamodblocal.
const (
	EnvEndpoint     = dynamodblocal.EnvEndpoint
	SourceEnv       = dynamodblocal.SourceEnv
	SourceContainer = dynamodblocal.SourceContainer
	SourceJar       = dynamodblocal.SourceJar
	Region          = dynamodblocal.Region
)

// Options is dynamodblocal.Options.
type Options = dynamodblocal.Options

// Instance is dynamodblocal.Instance.
type Instance = dynamodblocal.Instance

// Start is dynamodblocal.Start.
func Start(ctx context.Context, opts Options) (*Instance, error) {
	return dynamodblocal.Start(ctx, opts)
}

// NewClient is dynamodblocal.NewClient; ctx is not used.
func NewClient(_ context.Context, endpoint string, optFns ...func(*dynamodb.Options)) (*dynamodb.Client, error) {
	return dynamodblocal.NewClient(endpoint, optFns...)
}
