package benchcmd

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/bench"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit/clikittest"
	"github.com/asyncevent/asyncevent/entity"
)

func TestMain(m *testing.M) { asynceventtest.Main(m) }

func TestBench(t *testing.T) {
	t.Parallel()
	f := clikittest.New(asynceventtest.Endpoint(t), asynceventtest.NewTable(t).TableName())
	var rep benchOutput
	// 400 participations in each heat run: about 4 for each of the derived layout's
	// 100 index shards, so that their mean is not one click's.
	f.JSON(t, &rep, &Options{}, "-rounds", "1", "-n", "12", "-clients", "3", "-workers", "2", "-warmup", "-1", "-heat-participations", "400",
		"-polls", "400", "-poll-clients", "20", "-poll-backlog", "50", "-cpu-ops", "100")
	require.NotNil(t, rep.Report)
	require.Len(t, rep.Report.Flows, 6, "with the sold-out flow at 99 capacity shards")
	assert.Equal(t, bench.FlowIngestNew, rep.Report.Flows[0].Name)
	for _, fl := range rep.Report.Flows {
		assert.Positive(t, fl.Library.Median, fl.Name)
		assert.Positive(t, fl.Baseline.Median, fl.Name)
		assert.Positive(t, fl.Ratio, fl.Name)
	}
	require.Len(t, rep.Acceptance, 26, "with the two of an event with holds, the poll's and two a flow of the client's CPU")
	require.NotNil(t, rep.ClientCPU)
	require.Len(t, rep.ClientCPU.Flows, 7)
	for _, fl := range rep.ClientCPU.Flows { // the ratios are the machine's: only that they were measured
		assert.Positive(t, fl.CPURatio, fl.Name)
		// A flow may allocate nothing (a repeat click answered from the client's
		// memory): its ratio is 0, against a baseline that did allocate.
		assert.GreaterOrEqual(t, fl.AllocsRatio, 0.0, fl.Name)
		assert.Positive(t, fl.Baseline.AllocsPerOp, fl.Name)
	}
	byName := map[string]check{}
	for _, c := range rep.Acceptance {
		byName[c.Name] = c
	}
	assert.True(t, byName["DynamoDB calls per new participation = 3, no transaction"].OK)
	assert.True(t, byName["DynamoDB calls per duplicate click = 1, no read units"].OK)
	assert.Contains(t, byName, "DynamoDB calls per first-come winner < 3, WCU ≤ 7 (the raw flow's)")
	assert.Contains(t, byName, "DynamoDB calls per loser at C = 99 once sold out, on a new worker ≤ 2")
	assert.True(t, byName["DynamoDB calls per message once the worker knows it is sold out = 2 (a look at the home shard, one write), no CAPACITY write"].OK)
	winHolds := byName["DynamoDB calls per first-come winner with holds = a winner's + 1 (the PutItem of its Hold item), the rest < 3"]
	assert.True(t, winHolds.OK, winHolds.Shown)
	assert.InDelta(t, 1.0, winHolds.Value, 1e-9, "one capacity shard: the winner's calls exactly, and the Hold item's put")
	loseHolds := byName["DynamoDB calls per loser with holds once the worker knows it is sold out = 2 (a look at the home shard, one write to WAITLISTED), as without holds"]
	assert.True(t, loseHolds.OK, loseHolds.Shown)
	poll := byName["DynamoDB calls per poll of a waiting request ≈ 1 (the GetItem of its request; the event's progress read once per flush of the counts, every 200 ms, per node)"]
	assert.True(t, poll.OK, poll.Shown)

	// The poll flow: 400 polls of the 40 requests of 50 that wait, each read once a
	// poll; the CONFIG once, the event's progress at most once per flush of the
	// nodes' counts (every 200 ms), and the first read.
	p := rep.Poll
	require.NotNil(t, p)
	assert.Equal(t, 400, p.Polls)
	assert.Equal(t, 40, p.Waiting)
	assert.Equal(t, 400, p.Placed, "every request polled waits in line")
	assert.Equal(t, 1.0, p.RequestReads)
	assert.LessOrEqual(t, p.ConfigReads*400, 1+p.Seconds/5, "once per Options.EventCacheTTL (5s)")
	assert.Positive(t, p.ProgressReads)
	assert.LessOrEqual(t, float64(p.ProgressReads), 5*p.Seconds+2, "at most a Query per flush (every 200 ms) of the event's one progress partition, and the first")
	assert.InDelta(t, 1.0, p.PerPoll.Calls, 0.05)
	assert.InDelta(t, p.PerPoll.Calls, p.PerPoll.ByCall["GetItem"]+p.PerPoll.ByCall["Query"], 1e-9, "reads only")
	assert.Positive(t, p.PerPoll.RCU)

	// The flows of an event with holds, in -json as report.holds.
	holds := rep.Report.Holds
	require.NotNil(t, holds)
	var names []string
	for _, fl := range holds.Flows {
		names = append(names, fl.Name)
		assert.Positive(t, fl.Library.Median, fl.Name)
		assert.Positive(t, fl.Library.PerOp.WCU, fl.Name)
	}
	assert.Equal(t, []string{bench.FlowHoldsWinner, bench.FlowHoldsLoser, bench.FlowHoldsConfirm, bench.FlowHoldsRelease,
		bench.FlowHoldsExpire, bench.FlowHoldsServe}, names)
	assert.Equal(t, 12, holds.Flows[0].Library.Ops)
	assert.Equal(t, 1.0, holds.Flows[0].WritesPerOp[entity.Hold])
	assert.NotEmpty(t, rep.Machine)
	require.Len(t, rep.Heat, 3, "the default layout, the one derived for 20,000 clicks/s, and that one with a pre-queue")
	h := rep.Heat[0]
	assert.Equal(t, "default", h.Layout)
	assert.Equal(t, 400, h.Participations)
	assert.Equal(t, 100, h.Winners, "a quarter")
	assert.Regexp(t, `^GSI2:EVENT#\S+-heat-default$`, h.HottestKey)
	// GSI2: the put, QUEUED and the final status, 1 WCU each (a claim that goes on
	// under a lease writes PROCESSING too).
	assert.InDelta(t, 3.0, h.HottestWCUPerParticipation, 0.25)
	// One capacity item, 1 WCU a claim and no transaction: its units bound it.
	assert.Equal(t, "units", h.WinnersBound)
	assert.Equal(t, h.CapacityClaimsPerSecPerShard, h.CeilingWinnersPerSec)
	assert.Greater(t, h.CeilingWinnersPerSec, 500.0)
	assert.LessOrEqual(t, h.CeilingWinnersPerSec, 1000.0)
	d := rep.Heat[1]
	assert.Equal(t, "derived-20000", d.Layout)
	k, c := asyncevent.ShardsFor(20000, 0)
	assert.Equal(t, k, d.IndexShards)
	assert.Equal(t, c, d.CapacityShards)
	assert.GreaterOrEqual(t, d.CeilingParticipationsPerSec, 20000.0)
	assert.GreaterOrEqual(t, d.CeilingWinnersPerSec, 5000.0)
	assert.Equal(t, "units", d.WinnersBound)
	// The same layout with a pre-queue: its serve at the start heats no key more.
	pq := rep.Heat[2]
	assert.Equal(t, "derived-20000-prequeue", pq.Layout)
	assert.Equal(t, d.IndexShards, pq.IndexShards)
	assert.GreaterOrEqual(t, pq.CeilingParticipationsPerSec, 20000.0)
	assert.GreaterOrEqual(t, pq.CeilingWinnersPerSec, 5000.0)
	assert.Equal(t, 100, pq.Winners)

	out := f.OK(t, &Options{}, "-rounds", "1", "-n", "6", "-clients", "2", "-workers", "2", "-warmup", "-1", "-polls", "100", "-poll-backlog", "20")
	assert.Contains(t, out, "library/baseline")
	assert.Contains(t, out, "acceptance:")
	assert.Contains(t, out, "holds (EventSettings.HoldFor 5m0s; the library only, the baseline has none), per operation:")
	assert.Regexp(t, `(?m)^  holds: worker, first-come winner \(HELD, its Hold item\)\s+[\d.]+\s+[\d.]+ \(.*PutItem 1\.00 .*\)\s.* HOLD 1\.00 .*\+1\.00 calls, .* \(worker, first-come winner\)$`, out)
	assert.Regexp(t, `(?m)^  holds: SweepHolds, per seat handed on to the waitlist\s+[\d.]+\s+[\d.]+ \(.*TransactWriteItems 1\.00.*\)`, out)
	assert.Regexp(t, `(?m)^  ceiling: about [\d,]+ participations/s per event \(GSI2:EVENT#\S+ at [\d.]+ WCU per participation\), [\d,]+ winners/s \(1 capacity item × [\d,]+ claims/s, by their units \([\d.]+ WCU per claim on table:EVENT#\S+; no transaction holds a capacity item\)\)$`, out)
	assert.Regexp(t, `(?m)^poll of a waiting request \(GetRequest with its place in line; the library only\): 100 polls from 50 goroutines on one client, over 16 waiting requests of an event of 20, in \S+ \([\d,]+ polls/s\)\n`+
		`  per poll: DynamoDB calls 1\.\d\d \(GetItem 1\.\d\d \+ Query 0\.\d\d\) · [\d.]+ RCU · 1\.000 GetItem of the request · 0\.0\d+ of the event's CONFIG; the event's progress read \d+ times \(Query\)$`, out)
	var decoded map[string]any
	assert.Error(t, json.Unmarshal([]byte(out), &decoded), "human output by default")
}
