package ctxsleep

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSleep(t *testing.T) {
	assert.NoError(t, Sleep(context.Background(), time.Millisecond))
	assert.NoError(t, Sleep(context.Background(), 0))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.NoError(t, Sleep(ctx, -time.Second), "nothing to wait for")
	start := time.Now()
	assert.ErrorIs(t, Sleep(ctx, time.Hour), context.Canceled)
	assert.Less(t, time.Since(start), time.Minute)
}
