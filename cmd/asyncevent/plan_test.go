package main

import (
	"testing"

	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
	"github.com/stretchr/testify/assert"
)

func TestPlanRanked(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.ok(t, "table", "create")

	out := f.ok(t, "plan", "-peak", "1000", "-ranked")
	// K = 5, C = 1: the record, the line, the record, the seat, SUCCEEDED, the wave decided.
	assert.Contains(t, out, "a wave 6 round trips one after another")
	assert.Contains(t, out, "about 64 ÷ (6 × 10ms) = 1,066 winners/s per event")
	assert.Contains(t, out, "above the peak's 250 winners/s")
	assert.Contains(t, out, "40 RCU/s a worker; that key's 3,000 RCU/s takes at most about 75 such workers")
	assert.Contains(t, out, "200 Queries/s on GSI2")

	// The layout of 20,000 clicks/s: 100 index shards, 10 at a time.
	out = f.ok(t, "plan", "-peak", "20000", "-ranked", "-call-latency", "5ms")
	assert.Contains(t, out, "about 64 ÷ (15 × 5ms) = 853 winners/s per event")
	assert.Contains(t, out, "below the 5,000 winners/s the capacity shards take at the peak")
	assert.Contains(t, out, "4,000 Queries/s on GSI2")

	assert.NotContains(t, f.ok(t, "plan", "-peak", "1000"), "ranked admission", "only with -ranked")

	var plan clikit.Plan
	f.json(t, &plan, "plan", "-peak", "20000", "-ranked")
	if assert.NotNil(t, plan.Ranked) {
		assert.Equal(t, 64, plan.Ranked.WaveSize)
		assert.Equal(t, 15, plan.Ranked.RoundTripsPerWave)
		assert.True(t, plan.Ranked.BelowPeak)
		assert.Equal(t, 75, plan.Ranked.MaxWorkers)
	}
	var plain clikit.Plan
	f.json(t, &plain, "plan", "-peak", "20000")
	assert.Nil(t, plain.Ranked)

	_, errOut, code := f.run(t, "plan", "-peak", "1000", "-ranked", "-call-latency", "0s")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "-call-latency")
}
