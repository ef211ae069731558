package reliability

import (
	"cmp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

// judged is a FIRST_COME event's requests judged from a raw Scan, ranked by
// (queuedAt, requestId).
type judged struct {
	// lateWinners counts the winners ranked after the first request refused for
	// want of a seat (REJECTED_CAPACITY); lateGap is the largest gap in queuedAt
	// between such a winner and that refusal.
	lateWinners int
	lateGap     time.Duration
	// decisionP50, decisionP95: the decided requests' finishedAt − queuedAt.
	decisionP50, decisionP95 time.Duration
}

func judge(t *testing.T, table, eventID string) judged {
	t.Helper()
	var rs []asyncevent.Request
	for _, item := range asynceventtest.ScanTable(t, table) {
		if sk, ok := item["SK"].(*types.AttributeValueMemberS); !ok || sk.Value != "META" {
			continue
		}
		if r := asynceventtest.UnmarshalRequest(t, item); r.EventID == eventID {
			rs = append(rs, r)
		}
	}
	slices.SortFunc(rs, func(a, b asyncevent.Request) int {
		return cmp.Or(cmp.Compare(a.QueuedAt, b.QueuedAt), strings.Compare(a.RequestID, b.RequestID))
	})
	var j judged
	var decisions []time.Duration
	refused := -1
	for i, r := range rs {
		if r.Status.IsTerminal() && r.FinishedAt > 0 && r.QueuedAt > 0 {
			decisions = append(decisions, r.FinishedAt.Time().Sub(r.QueuedAt.Time()))
		}
		switch {
		case r.ResultCode == asyncevent.ResultRejectedCapacity && refused < 0:
			refused = i
		case r.Status == asyncevent.StatusSucceeded && refused >= 0:
			j.lateWinners++
			j.lateGap = max(j.lateGap, r.QueuedAt.Time().Sub(rs[refused].QueuedAt.Time()))
		}
	}
	if len(decisions) > 0 {
		slices.Sort(decisions)
		j.decisionP50, j.decisionP95 = decisions[len(decisions)/2], decisions[(len(decisions)*95+99)/100-1]
	}
	return j
}

// scaleRanked plays the sale on a ranked event (EventSettings.Admission
// AdmissionRanked, the default RankSettle) of layout k, c under limits, and holds
// it to the bar: exactly N winners, no late winner judged from the table,
// under 1% of the calls refused for throughput.
func scaleRanked(t *testing.T, run func(asyncevent.EventSettings) spikeResult, k, c int, scale func(string, ...any)) spikeResult {
	ranked := run(asyncevent.EventSettings{EventID: "ranked", EventType: asyncevent.FirstCome, IndexShards: k, CapacityShards: c,
		Admission: asyncevent.AdmissionRanked})
	scale("RANKED, derived layout under the limits: %d of %d calls throttled (%.2f%%: %v), ingest p99 %s, %s; %d winners, %d late winners (largest gap %s); queuedAt to decision p50 %s, p95 %s",
		ranked.throttled, ranked.attempts, ranked.throttledShare()*100, ranked.reasons, ranked.p99.Round(time.Millisecond), ranked.finality(),
		ranked.report.ByStatus[asyncevent.StatusSucceeded], ranked.lateWinners, ranked.lateGap, ranked.decisionP50, ranked.decisionP95)
	assert.True(t, ranked.allFinal, "every request final")
	assert.Equal(t, 1000, ranked.report.ByStatus[asyncevent.StatusSucceeded], "exactly N winners")
	assert.Zero(t, ranked.lateWinners, "no winner ranked after a refused request")
	assert.Less(t, ranked.throttledShare(), 0.01, "under 1%% of calls throttled")
	return ranked
}
