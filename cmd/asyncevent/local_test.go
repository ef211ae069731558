package main

import (
	"bytes"
	"context"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
	"github.com/asyncevent/asyncevent/dynamodblocal"
)

// local with an endpoint given checks that it answers and prints its lines, and
// returns at once: it started nothing.
func TestLocalFindsTheOneGiven(t *testing.T) {
	t.Parallel()
	ep := asynceventtest.Endpoint(t)
	out, errOut, code := cli(t, "-endpoint", ep, "local")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "\n  export DYNAMODB_ENDPOINT="+ep+"\n")
	assert.Contains(t, out, "export AWS_ACCESS_KEY_ID=ddblocal AWS_SECRET_ACCESS_KEY=ddblocal AWS_REGION=us-east-1")
	assert.Contains(t, out, "nothing started here")

	var v clikit.LocalDynamoDB
	newFixture(t).json(t, &v, "local")
	assert.Equal(t, clikit.LocalDynamoDB{Endpoint: ep, Source: dynamodblocal.SourceEnv, Env: map[string]string{
		"DYNAMODB_ENDPOINT": ep, "AWS_ACCESS_KEY_ID": "ddblocal", "AWS_SECRET_ACCESS_KEY": "ddblocal", "AWS_REGION": "us-east-1",
	}}, v)

	_, errOut, code = cli(t, "-endpoint", "http://127.0.0.1:1", "local")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "http://127.0.0.1:1 does not answer: leave out -endpoint to start one here")
}

// local without an endpoint starts a DynamoDB Local as the tests do, prints the export
// line of an endpoint the other commands can use, and stops it on Ctrl-C (its context
// cancelled). Not parallel: it clears DYNAMODB_ENDPOINT.
func TestLocalStartsOneAndStopsItOnCtrlC(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a DynamoDB Local of its own")
	}
	t.Setenv(dynamodblocal.EnvEndpoint, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut lockedBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"local"}, &out, &errOut) }()

	export := regexp.MustCompile(`\n  export DYNAMODB_ENDPOINT=(http://\S+)\n`)
	var ep string
	require.Eventually(t, func() bool {
		m := export.FindStringSubmatch(out.String())
		if m != nil {
			ep = m[1]
		}
		return m != nil
	}, 3*time.Minute, 100*time.Millisecond, "no endpoint printed:\n%s%s", &out, &errOut)
	assert.Contains(t, out.String(), "Ctrl-C stops it.")

	_, cliErr, code := cli(t, "-endpoint", ep, "-table", "local-test", "table", "create")
	require.Equal(t, exitOK, code, cliErr)

	cancel()
	select {
	case code := <-done:
		assert.Equal(t, exitOK, code, errOut.String())
	case <-time.After(time.Minute):
		t.Fatal("local did not stop on Ctrl-C")
	}
	db, err := dynamodblocal.NewClient(ep)
	require.NoError(t, err)
	_, err = db.ListTables(context.Background(), &dynamodb.ListTablesInput{}, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	assert.Error(t, err, "stopped")
}

// lockedBuffer is a bytes.Buffer safe for one writer and a polling reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
