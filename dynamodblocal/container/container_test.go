package container

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent/dynamodblocal"
)

// required reports whether this run must have a container (make test inside
// scripts/container-engine.sh sets DYNAMODB_LOCAL_CONTAINER=require).
func required() bool { return os.Getenv(EnvMode) == "require" }

// TestStartInContainer starts DynamoDB Local through testcontainers-go, uses it, and
// stops it. Without an engine set up for loopback only it skips, saying why, unless
// the run requires a container.
func TestStartInContainer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t.Setenv(dynamodblocal.EnvEndpoint, "")

	began := time.Now()
	inst, err := Start(ctx, dynamodblocal.Options{Logf: t.Logf, RequireContainer: true})
	if err != nil && !required() {
		t.Skipf("no container here (%s=require makes this a failure): %v", EnvMode, err)
	}
	require.NoError(t, err)
	stopped := false
	defer func() {
		if !stopped {
			_ = inst.Stop()
		}
	}()
	t.Logf("container at %s after %s", inst.Endpoint, time.Since(began).Round(time.Millisecond))
	require.Equal(t, dynamodblocal.SourceContainer, inst.Source)
	require.True(t, strings.HasPrefix(inst.Endpoint, "http://127.0.0.1:"), "a container is reached on loopback: %s", inst.Endpoint)

	table := fmt.Sprintf("container_test_%d", time.Now().UnixNano())
	_, err = inst.Client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
	})
	require.NoError(t, err)
	_, err = inst.Client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(table),
		Item:      map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}},
	})
	require.NoError(t, err)
	out, err := inst.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(table),
		Key:            map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}},
		ConsistentRead: aws.Bool(true),
	})
	require.NoError(t, err)
	require.Equal(t, &types.AttributeValueMemberS{Value: "a"}, out.Item["pk"])

	require.NoError(t, inst.Stop())
	stopped = true
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(inst.Endpoint, "http://"), time.Second)
	if err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after Stop", inst.Endpoint)
	}
}

// TestGuardRefusesBeforeAnyContainer runs Engine where testcontainers-go would take
// a non-loopback address for the engine's host: it must refuse before it starts
// anything.
func TestGuardRefusesBeforeAnyContainer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "172.17.0.1")
	_, _, err := Engine{}.StartContainer(ctx, t.Logf)
	require.Error(t, err)
	t.Log(err)
	if !strings.Contains(err.Error(), "no container engine") {
		require.ErrorContains(t, err, "TESTCONTAINERS_HOST_OVERRIDE")
	}
}

func TestStartRejectsAnUnknownMode(t *testing.T) {
	t.Setenv(EnvMode, "sometimes")
	_, err := Start(context.Background(), dynamodblocal.Options{})
	require.ErrorContains(t, err, EnvMode)
}
