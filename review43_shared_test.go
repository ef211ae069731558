package asyncevent

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// New takes any DynamoDB (a user's wrapper, middleware that tags or rewrites an input).
// Before plans each call's input had maps of its own; now every write of a row shares
// the plan's names map and constant AttributeValues, so one wrapper that edits an
// input (adds a name, say) changes every later write of that row in the process, and
// two doing so at once crash it with concurrent map writes.
func TestReview43InputsShareNoMutableState(t *testing.T) {
	c := &Client{opts: Options{TableName: "tab"}}
	w := write{row: &startProcessingRow, key: Key{PK: "REQ#x", SK: "META"},
		args: args{pNow: EpochMillis(1), pLeaseOwner: "o", pLeaseExpiresAt: EpochMillis(2), pSeatShard: 3, pSeatEpoch: 1}}
	first, err := c.input(w, "")
	require.NoError(t, err)
	first.Update.ExpressionAttributeNames["#wrapper"] = "tenant"
	for k, v := range first.Update.ExpressionAttributeValues {
		if s, ok := v.(*types.AttributeValueMemberS); ok {
			s.Value = "edited" // a constant's value, edited in place
			_ = k
		}
	}
	second, err := c.input(w, "")
	require.NoError(t, err)
	assert.NotContains(t, second.Update.ExpressionAttributeNames, "#wrapper", "the next write carries the first one's edit")
	for k, v := range second.Update.ExpressionAttributeValues {
		if s, ok := v.(*types.AttributeValueMemberS); ok {
			assert.NotEqual(t, "edited", s.Value, "value %s", k)
		}
	}
}
