package main

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/dynamodblocal"
)

// TestMain stops the kit's DynamoDB Local when the tests end: a container, unlike a
// java child, does not end with the test binary.
func TestMain(m *testing.M) { asynceventtest.Main(m) }

func TestQuickstartRunsACompleteEvent(t *testing.T) {
	t.Setenv(dynamodblocal.EnvEndpoint, asynceventtest.Endpoint(t))
	r, w, err := os.Pipe()
	require.NoError(t, err)
	stdout := os.Stdout
	os.Stdout = w
	t.Cleanup(func() { os.Stdout = stdout })
	read := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		read <- string(b)
	}()

	runErr := run(context.Background())
	os.Stdout = stdout
	require.NoError(t, w.Close())
	out := <-read
	require.NoError(t, runErr)
	t.Log(out)

	assert.Contains(t, out, "duplicate true", "ann's second click")
	assert.Equal(t, 3, countLines(out, ": SUCCEEDED SUCCESS"), "3 seats")
	assert.Equal(t, 2, countLines(out, ": REJECTED REJECTED_CAPACITY"))
}

func countLines(s, substr string) int {
	n := 0
	for line := range strings.Lines(s) {
		if strings.Contains(line, substr) {
			n++
		}
	}
	return n
}
