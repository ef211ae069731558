package asyncevent

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestStatusLifecycle(t *testing.T) {
	terminal := map[Status]bool{StatusSucceeded: true, StatusRejected: true, StatusFailedFinal: true}
	all := []Status{StatusReceived, StatusQueued, StatusProcessing, StatusSucceeded, StatusRejected, StatusFailedFinal}
	for _, s := range all {
		assert.True(t, s.Valid())
		assert.Equal(t, terminal[s], s.IsTerminal(), s)
		for _, to := range all {
			if s.IsTerminal() && !(s == StatusSucceeded && to == StatusRejected) {
				assert.False(t, CanTransition(s, to), "%s → %s", s, to)
			}
		}
	}
	assert.False(t, Status("DONE").Valid())
	assert.True(t, CanTransition(StatusReceived, StatusQueued))
	assert.True(t, CanTransition(StatusReceived, StatusProcessing), "the QUEUED race")
	assert.True(t, CanTransition(StatusProcessing, StatusProcessing), "lease takeover")
	assert.True(t, CanTransition(StatusSucceeded, StatusRejected), "an operator's cancel (CancelRequest): the one change of a final status")
	assert.False(t, CanTransition(StatusQueued, StatusReceived))
	assert.True(t, CanTransition(StatusReceived, StatusSucceeded), "a lottery entry drawn before a worker met it")
	assert.True(t, CanTransition(StatusQueued, StatusQueued), "a lottery entry collected")
	assert.False(t, CanTransition(StatusReceived, StatusReceived))
	assert.False(t, CanTransition(StatusProcessing, StatusQueued))
	assert.Equal(t, UIPending, UIResultOf(StatusProcessing))
	assert.Equal(t, UISuccess, UIResultOf(StatusSucceeded))
	assert.Equal(t, UIRejected, UIResultOf(StatusRejected))
	assert.Equal(t, UIFailed, UIResultOf(StatusFailedFinal))
}
