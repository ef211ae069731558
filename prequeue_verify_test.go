package asyncevent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// served is a pre-queue VerifyPrequeue found OK: five entries for two seats and one
// click of the sale, their messages handed to a worker before the serve.
type served struct {
	*prequeueBundle
	res  *asyncevent.PrequeueResult
	sale string
}

// servedSetup serves a pre-queue (prequeueSetup) and checks that it verifies.
func servedSetup(t *testing.T) served {
	t.Helper()
	b := prequeueSetup(t, drop{seats: 2, shards: 1})
	b.clock.Advance(time.Minute)
	b.click(t, "early", 5)
	b.toStart(0)
	sale := b.click(t, "sale", 1)
	deliverAll(t, b.worker, b.q)
	b.clock.Advance(asyncevent.DefaultDrawSettleWindow)
	res := b.serve(t, b.c)
	require.Equal(t, res.Order[:2], res.Winners)
	v := b.verify(t)
	require.True(t, v.OK(), v.String())
	return served{prequeueBundle: b, res: res, sale: sale[0]}
}

// alteration is a change written behind the library's back to a served pre-queue,
// and the problems VerifyPrequeue must then name.
type alteration struct {
	name     string
	alter    func(t *testing.T, s served)
	problems func(s served) []string
	check    func(t *testing.T, s served, v *asyncevent.PrequeueVerification) // more to check, if any
}

// verifyCatches alters a served pre-queue of its own for each case and verifies it
// again: not OK, each problem named.
func verifyCatches(t *testing.T, cases []alteration) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := servedSetup(t)
			tc.alter(t, s)
			v := s.verify(t)
			assert.False(t, v.OK(), v.String())
			for _, p := range tc.problems(s) {
				assert.Contains(t, v.String(), p)
			}
			if tc.check != nil {
				tc.check(t, s, v)
			}
		})
	}
}

// force sets a request's status and result, as a broken serve or gate would.
func force(t *testing.T, s served, id string, status asyncevent.Status, code asyncevent.ResultCode) {
	t.Helper()
	behindTheLibrary(t, s.c, id, "SET #s = :s, resultCode = :c", map[string]types.AttributeValue{":s": str(string(status)), ":c": str(string(code))})
}

// VerifyPrequeue catches a serve that broke the order: an entry made to win after one
// before it was refused, a click of the sale made to win while entries were refused,
// and that click cancelled afterwards (a refund: the seat it won is no longer held,
// the break stands).
func TestVerifyPrequeueCatchesABrokenOrder(t *testing.T) {
	t.Parallel()
	verifyCatches(t, []alteration{
		{
			name: "an entry won a seat after one before it was refused",
			alter: func(t *testing.T, s served) {
				force(t, s, s.res.Order[1], asyncevent.StatusRejected, asyncevent.ResultRejectedCapacity)
				force(t, s, s.res.Order[3], asyncevent.StatusSucceeded, asyncevent.ResultSuccess)
			},
			problems: func(s served) []string {
				return []string{fmt.Sprintf("entry %s won a seat after entry %s", s.res.Order[3], s.res.Order[1])}
			},
		},
		{
			name: "a click of the sale won a seat while entries were refused",
			alter: func(t *testing.T, s served) {
				force(t, s, s.sale, asyncevent.StatusSucceeded, asyncevent.ResultSuccess)
			},
			problems: func(s served) []string { return []string{fmt.Sprintf("click %s of the sale won a seat", s.sale)} },
		},
		{
			name: "both at once: each break is named",
			alter: func(t *testing.T, s served) {
				force(t, s, s.res.Order[1], asyncevent.StatusRejected, asyncevent.ResultRejectedCapacity)
				force(t, s, s.res.Order[3], asyncevent.StatusSucceeded, asyncevent.ResultSuccess)
				force(t, s, s.sale, asyncevent.StatusSucceeded, asyncevent.ResultSuccess)
			},
			problems: func(s served) []string {
				return []string{
					fmt.Sprintf("entry %s won a seat after entry %s", s.res.Order[3], s.res.Order[1]),
					fmt.Sprintf("click %s of the sale won a seat", s.sale),
				}
			},
		},
		{
			name: "a click of the sale that won while entries were refused, cancelled since",
			alter: func(t *testing.T, s served) {
				// The sale's click made a winner on shard 0 while entries 2 to 4 were refused.
				behindTheLibrary(t, s.c, s.sale, "SET #s = :s, resultCode = :c, uiResult = :c, seatShard = :z", map[string]types.AttributeValue{
					":s": str(string(asyncevent.StatusSucceeded)), ":c": str(string(asyncevent.ResultSuccess)), ":z": &types.AttributeValueMemberN{Value: "0"}})
				v := s.verify(t)
				require.False(t, v.OK(), "caught while it stands")
				require.Contains(t, v.String(), fmt.Sprintf("click %s of the sale won a seat", s.sale))

				up, err := s.c.CancelRequest(context.Background(), s.sale, asyncevent.CancelRequestInput{Actor: "ops"})
				require.NoError(t, err)
				require.True(t, up.Applied, up.Reason)
			},
			problems: func(s served) []string { return []string{fmt.Sprintf("click %s of the sale won a seat", s.sale)} },
		},
	})
}

// VerifyPrequeue holds a served pre-queue to what its freeze recorded, and to its
// seats: a record altered, or a winner forged, behind the library's back is a
// problem it names.
func TestVerifyPrequeueCatchesAnAlteredRecord(t *testing.T) {
	t.Parallel()
	var forged = "f0f0f0f0-0000-4000-8000-000000000000"
	verifyCatches(t, []alteration{
		{
			// The recorded set read back must hash to the record's entriesHash: a
			// chunk that lost an entry does not.
			name: "a recorded entry dropped from the set",
			alter: func(t *testing.T, s served) {
				key, err := asyncevent.NewEntriesKey("drop", s.res.Record.EntriesHash, 0)
				require.NoError(t, err)
				ids := strings.Join(s.res.Order[1:], "\n") + "\n"
				alterItem(t, s.c, key.Key(), "SET ids = :v", &types.AttributeValueMemberS{Value: ids})
			},
			problems: func(served) []string { return []string{"the recorded entries of drop hash to"} },
		},
		{
			// The revealed seed must hash to the commitment published at CreateEvent.
			name: "a revealed seed that is not the committed one",
			alter: func(t *testing.T, s served) {
				key, err := asyncevent.NewEventKey("drop", asyncevent.EventItemDraw)
				require.NoError(t, err)
				alterItem(t, s.c, key.Key(), "SET seed = :v", &types.AttributeValueMemberS{Value: strings.Repeat("ab", 32)})
			},
			problems: func(served) []string { return []string{"SHA-256 of the revealed seed is"} },
		},
		{
			// A request forged onto the table, queued before the start and SUCCEEDED on
			// the pool's seat, is a late arrival the record does not name, and a third
			// winner of two seats.
			name: "a winner forged onto the table, queued before the start",
			alter: func(t *testing.T, s served) {
				entry := s.res.Order[4] // a refused entry
				var item map[string]types.AttributeValue
				for _, it := range asynceventtest.ScanTable(t, s.c.TableName()) {
					if attrS(it["PK"]) == "REQ#"+entry && attrS(it["SK"]) == "META" {
						item = it
					}
				}
				require.NotNil(t, item)
				for k, av := range item {
					if sv, ok := av.(*types.AttributeValueMemberS); ok {
						item[k] = &types.AttributeValueMemberS{Value: strings.ReplaceAll(sv.Value, entry, forged)}
					}
				}
				item["status"] = &types.AttributeValueMemberS{Value: "SUCCEEDED"}
				item["resultCode"] = &types.AttributeValueMemberS{Value: "SUCCESS"}
				item["seatShard"] = &types.AttributeValueMemberN{Value: "1"} // the pool of an event of one shard
				_, err := asynceventtest.DynamoDB(t).PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(s.c.TableName()), Item: item})
				require.NoError(t, err)
			},
			problems: func(served) []string {
				return []string{"3 requests hold a seat (SUCCEEDED or HELD), the event has 2"}
			},
			check: func(t *testing.T, _ served, v *asyncevent.PrequeueVerification) {
				assert.Equal(t, []string{forged}, v.Late)
			},
		},
	})
}
