package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent/asynceventtest"
)

func TestLotteryExampleRuns(t *testing.T) {
	var out strings.Builder
	require.NoError(t, run(context.Background(), &out, asynceventtest.Endpoint(t), 60, 5))
	assert.Contains(t, out.String(), "60 entries collected\n")
	assert.Contains(t, out.String(), "winner  5:")
	assert.Contains(t, out.String(), "draw of spring-lottery verified: 60 entries, 5 winners")
}
