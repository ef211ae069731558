// Scenario suite: the deployment. It builds deploy/template.yaml's table on DynamoDB
// Local and reads the template's queue, functions, routes, roles and alarms, and
// proves the template agrees with the code: its table is the one CreateTable makes,
// each function runs under a role of its own (the roles' actions are held to the
// calls each function makes by httpapi's TestMain and awslambda's policy_test.go),
// its queue agrees with the worker's defaults, and the table is kept and watched.

package asyncevent

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/asyncevent/asyncevent/dynamodblocal"
	"github.com/asyncevent/asyncevent/internal/deployrole"
)

// templateNode reads deploy/template.yaml and returns the node at path (mapping keys,
// or sequence indexes as numbers).
func templateNode(t *testing.T, path ...string) *yaml.Node {
	t.Helper()
	raw, err := os.ReadFile("deploy/template.yaml")
	require.NoError(t, err)
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal(raw, &doc))
	n := doc.Content[0]
	for _, p := range path {
		n = child(t, n, p)
	}
	return n
}

func child(t *testing.T, n *yaml.Node, key string) *yaml.Node {
	t.Helper()
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				return n.Content[i+1]
			}
		}
	case yaml.SequenceNode:
		if i, err := strconv.Atoi(key); err == nil && i < len(n.Content) {
			return n.Content[i]
		}
	}
	t.Fatalf("deploy/template.yaml has no %q at line %d", key, n.Line)
	return nil
}

func strings0(n *yaml.Node) []string {
	var out []string
	for _, c := range n.Content {
		out = append(out, c.Value)
	}
	return out
}

// TestTemplateTableIsCreateTables builds the template's table on DynamoDB Local
// (without its warm throughput, which DynamoDB Local ignores) and checks it as the
// library checks a table, and key by key against what CreateTable makes.
func TestTemplateTableIsCreateTables(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	props := templateNode(t, "Resources", "Table", "Properties")
	name := "deploy_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	in := &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingMode(child(t, props, "BillingMode").Value)}
	for _, a := range child(t, props, "AttributeDefinitions").Content {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{
			AttributeName: aws.String(child(t, a, "AttributeName").Value), AttributeType: types.ScalarAttributeType(child(t, a, "AttributeType").Value),
		})
	}
	keySchema := func(n *yaml.Node) []types.KeySchemaElement {
		var ks []types.KeySchemaElement
		for _, k := range n.Content {
			ks = append(ks, types.KeySchemaElement{AttributeName: aws.String(child(t, k, "AttributeName").Value), KeyType: types.KeyType(child(t, k, "KeyType").Value)})
		}
		return ks
	}
	in.KeySchema = keySchema(child(t, props, "KeySchema"))
	for _, g := range child(t, props, "GlobalSecondaryIndexes").Content {
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, types.GlobalSecondaryIndex{
			IndexName:  aws.String(child(t, g, "IndexName").Value),
			KeySchema:  keySchema(child(t, g, "KeySchema")),
			Projection: &types.Projection{ProjectionType: types.ProjectionType(child(t, child(t, g, "Projection"), "ProjectionType").Value)},
		})
		child(t, g, "WarmThroughput") // a parameter for each index
	}
	child(t, props, "WarmThroughput")

	want := design.CreateTableInput(name)
	assert.Equal(t, want.BillingMode, in.BillingMode)
	assert.ElementsMatch(t, want.AttributeDefinitions, in.AttributeDefinitions)
	assert.Equal(t, want.KeySchema, in.KeySchema)
	assert.ElementsMatch(t, want.GlobalSecondaryIndexes, in.GlobalSecondaryIndexes)
	ttl := child(t, props, "TimeToLiveSpecification")
	assert.Equal(t, attrTTL, child(t, ttl, "AttributeName").Value)
	assert.Equal(t, "true", child(t, ttl, "Enabled").Value)

	// An internal test cannot use the test kit (it imports this package): the
	// launcher finds DYNAMODB_ENDPOINT, or starts a DynamoDB Local of its own, from
	// the jar (it has no container starter: make test's jar part).
	local, err := dynamodblocal.Start(ctx, dynamodblocal.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = local.Stop() })
	db := local.Client
	_, err = db.CreateTable(ctx, in)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	c, err := New(db, Options{TableName: name})
	require.NoError(t, err)
	require.NoError(t, c.CheckTable(ctx), "the template's table passes CheckTable")
}

// TestTemplateQueueAgreesWithTheWorker: the dead-letter queue takes a message after
// the worker's MaxReceives, and a message stays hidden longer than a lease lasts.
func TestTemplateQueueAgreesWithTheWorker(t *testing.T) {
	t.Parallel()
	queue := templateNode(t, "Resources", "Queue", "Properties")
	receives, err := strconv.Atoi(child(t, child(t, queue, "RedrivePolicy"), "maxReceiveCount").Value)
	require.NoError(t, err)
	assert.Equal(t, DefaultMaxReceives, receives, "maxReceiveCount = ProcessOptions.MaxReceives")
	visibility, err := strconv.Atoi(child(t, queue, "VisibilityTimeout").Value)
	require.NoError(t, err)
	assert.Greater(t, time.Duration(visibility)*time.Second, defaultLeaseDuration, "visibility outlasts the lease")

	fn := templateNode(t, "Resources", "Worker", "Properties")
	timeout, err := strconv.Atoi(child(t, fn, "Timeout").Value)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, visibility, 6*timeout, "AWS advises a visibility timeout of at least six times a Lambda event source's function timeout")
	assert.Equal(t, strconv.Itoa(visibility)+"s", child(t, child(t, child(t, fn, "Environment"), "Variables"), "ASYNCEVENT_VISIBILITY_TIMEOUT").Value, "the worker extends a message's visibility by the queue's")
	assert.Equal(t, "provided.al2023", child(t, fn, "Runtime").Value)
	assert.Equal(t, []string{"arm64"}, strings0(child(t, fn, "Architectures")))
	events := child(t, child(t, child(t, fn, "Events"), "Participations"), "Properties")
	assert.Equal(t, []string{"ReportBatchItemFailures"}, strings0(child(t, events, "FunctionResponseTypes")))
	mc := child(t, child(t, events, "ScalingConfig"), "MaximumConcurrency")
	assert.Equal(t, []string{"!Ref", "WorkerMaximumConcurrency"}, []string{mc.Tag, mc.Value}, "a parameter")
	lambdaMain, err := os.ReadFile("examples/lambda/main.go")
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(lambdaMain), "MaxReceives: "+strconv.Itoa(receives)),
		"examples/lambda sets ProcessOptions.MaxReceives to the queue's maxReceiveCount")
}

// TestTemplateKeepsTheTableAndWatchesIt: the table survives the stack and a mistaken
// delete (deletion protection, Retain) and can be restored (point-in-time recovery);
// alarms watch the dead-letter queue and DynamoDB's throttles.
func TestTemplateKeepsTheTableAndWatchesIt(t *testing.T) {
	t.Parallel()
	table := templateNode(t, "Resources", "Table")
	assert.Equal(t, "Retain", child(t, table, "DeletionPolicy").Value)
	props := child(t, table, "Properties")
	assert.Equal(t, "true", child(t, props, "DeletionProtectionEnabled").Value)
	assert.Equal(t, "true", child(t, child(t, props, "PointInTimeRecoverySpecification"), "PointInTimeRecoveryEnabled").Value)
	for alarm, metric := range map[string]string{
		"DeadLetterAlarm": "ApproximateNumberOfMessagesVisible", "WriteThrottleAlarm": "WriteThrottleEvents",
		"IndexWriteThrottleAlarm": "WriteThrottleEvents", "ReadThrottleAlarm": "ReadThrottleEvents",
	} {
		p := templateNode(t, "Resources", alarm, "Properties")
		assert.Equal(t, metric, child(t, p, "MetricName").Value, alarm)
		assert.Equal(t, "0", child(t, p, "Threshold").Value, alarm)
	}
}

// TestTemplateIngest: the ingest function is examples/lambda/ingest, its environment
// names exactly the variables the command reads, and its role sends to the queue and
// nothing more on SQS (the ingest only sends; the worker receives, deletes, extends);
// its routes: the authorizer, the open preflight and /healthz.
func TestTemplateIngest(t *testing.T) {
	t.Parallel()
	fn := templateNode(t, "Resources", "Ingest", "Properties")
	assert.Equal(t, "../examples/lambda/ingest", child(t, fn, "CodeUri").Value)
	src, err := os.ReadFile("examples/lambda/ingest/main.go")
	require.NoError(t, err)
	read := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?:getenv|os\.Getenv)\("(ASYNCEVENT_[A-Z_]+)"\)`).FindAllStringSubmatch(string(src), -1) {
		read[m[1]] = true
	}
	set := map[string]bool{}
	vars := child(t, child(t, fn, "Environment"), "Variables")
	for i := 0; i < len(vars.Content); i += 2 {
		set[vars.Content[i].Value] = true
	}
	assert.Equal(t, read, set, "the template sets the variables the command reads")
	role, err := deployrole.Read("deploy/template.yaml", "Ingest")
	require.NoError(t, err)
	assert.Equal(t, []string{"sqs:SendMessage"}, role["AsyncEventQueue"].Actions)

	// The API's authorizer turns away what the function would (the same issuer and
	// audience) before an invocation; /healthz and the CORS preflight are open, as the
	// server's route is and as a browser's preflight (no token) must be.
	jwt := templateNode(t, "Resources", "IdentityProviderAuthorizer", "Properties", "JwtConfiguration")
	assert.Equal(t, "JwtIssuer", child(t, jwt, "Issuer").Value)
	assert.Equal(t, "JwtAudience", child(t, child(t, jwt, "Audience"), "0").Value)
	vars = child(t, child(t, fn, "Environment"), "Variables")
	assert.Equal(t, "JwtIssuer", child(t, vars, "ASYNCEVENT_JWT_ISSUER").Value)
	assert.Equal(t, "JwtAudience", child(t, vars, "ASYNCEVENT_JWT_AUDIENCE").Value)
	routes := map[string]string{}
	for _, name := range []string{"ProxyRoute", "PreflightRoute", "HealthRoute"} {
		r := templateNode(t, "Resources", name, "Properties")
		auth := child(t, r, "AuthorizationType")
		routes[child(t, r, "RouteKey").Value] = strings.TrimPrefix(auth.Tag, "!!str") + auth.Value
		assert.Equal(t, "integrations/${IngestIntegration}", child(t, r, "Target").Value, name)
	}
	assert.Equal(t, map[string]string{
		"ANY /{proxy+}": "!If[GatewayAuthorizes, JWT, NONE]", "OPTIONS /{proxy+}": "NONE", "GET /healthz": "NONE",
	}, routesText(routes))
}

// routesText writes a route's !If as it reads.
func routesText(routes map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range routes {
		if v == "!If" {
			v = "!If[GatewayAuthorizes, JWT, NONE]"
		}
		out[k] = v
	}
	return out
}

// TestTemplateRolesAreTheirOwn: each function runs under a role of the template's, so
// that SAM adds no managed policy (AWSLambdaSQSQueueExecutionRole would let the worker
// read every queue of the account, AWSLambdaBasicExecutionRole write every log group),
// and logs to a group of its own.
func TestTemplateRolesAreTheirOwn(t *testing.T) {
	t.Parallel()
	for _, fn := range []string{"Ingest", "Worker", "HoldSweeper"} {
		p := templateNode(t, "Resources", fn, "Properties")
		role := child(t, p, "Role")
		assert.Equal(t, []string{"!GetAtt", fn + "Role.Arn"}, []string{role.Tag, role.Value}, fn)
		for i := 0; i < len(p.Content); i += 2 {
			assert.NotEqual(t, "Policies", p.Content[i].Value, "%s: SAM policies beside a role", fn)
		}
		group := child(t, child(t, p, "LoggingConfig"), "LogGroup")
		assert.Equal(t, fn+"LogGroup", group.Value, fn)
	}
}
