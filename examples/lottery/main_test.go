package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent/asynceventtest"
)

// TestMain stops the kit's DynamoDB Local when the tests end: a container, unlike a
// java child, does not end with the test binary.
func TestMain(m *testing.M) { asynceventtest.Main(m) }

func TestLotteryExampleRuns(t *testing.T) {
	var out strings.Builder
	require.NoError(t, run(context.Background(), &out, asynceventtest.Endpoint(t), 60, 5))
	assert.Contains(t, out.String(), "60 entries collected\n")
	assert.Contains(t, out.String(), "winner  5:")
	assert.Contains(t, out.String(), "draw of spring-lottery verified: 60 entries, 5 winners")
}
