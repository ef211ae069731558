package deployrole

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each function of the template has a role of its own whose statements Read finds.
func TestReadFollowsTheRole(t *testing.T) {
	for fn, sids := range map[string][]string{
		"Ingest":      {"AsyncEventQueue", "AsyncEventTable", "Logs"},
		"Worker":      {"AsyncEventQueue", "AsyncEventTable", "EventSourcePoller", "Logs"},
		"HoldSweeper": {"AsyncEventTable", "Logs"},
	} {
		role, err := Read("../../deploy/template.yaml", fn)
		require.NoError(t, err, fn)
		var got []string
		for sid := range role {
			got = append(got, sid)
		}
		assert.ElementsMatch(t, sids, got, fn)
		assert.NotEmpty(t, role["AsyncEventTable"].Actions, fn)
		assert.Equal(t, []string{"logs:CreateLogStream", "logs:PutLogEvents"}, role["Logs"].Actions, fn)
		assert.Equal(t, []string{"!GetAtt " + fn + "LogGroup.Arn"}, role["Logs"].Resources, "%s logs to its own group alone", fn)
	}
	_, err := Read("../../deploy/template.yaml", "Nothing")
	assert.Error(t, err)
}
