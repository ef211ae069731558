package asyncevent

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A sale's click held back for its pre-queue spends none of its receives in the settle
// window: the first hold runs until the serve may begin, and the holds after it grow,
// so that SQS's default limit of 5 receives lasts 51 s past that moment.
func TestPrequeueHoldSpendsReceivesAfterTheServeMayBegin(t *testing.T) {
	opens := MillisOf(t0Internal.Add(30 * time.Second))
	assert.Equal(t, 31*time.Second, prequeueHold(opens, MillisOf(t0Internal), 1), "until the serve may begin, then a second")
	// Receive 2 comes at opens + 1 s; each hold after it sets when the next comes.
	fifth := time.Second
	for receive := 2; receive <= 4; receive++ {
		fifth += prequeueHold(opens, MillisOf(opens.Time().Add(fifth)), receive)
	}
	assert.Equal(t, 51*time.Second, fifth, "the fifth receive, the last of SQS's default limit, 51 s after the serve may begin")
	now := MillisOf(opens.Time().Add(fifth))
	assert.Equal(t, time.Minute, prequeueHold(opens, now, 9), "no longer than a minute past the last")
}

var t0Internal = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
