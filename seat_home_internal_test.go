package asyncevent

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The widest wave write stays within DynamoDB's limits on an expression (the
// Constraints page of the developer guide, "Expression parameters"): 4 KB for any
// expression string, 300 operators or functions in one.
func TestWaveSeatsWithinExpressionLimits(t *testing.T) {
	p, err := waveClaimRows[maxWaveClaim].planOf("")
	require.NoError(t, err)
	for _, text := range []string{*p.Condition, *p.Update} {
		assert.LessOrEqual(t, len(text), 4096, text)
		operators := len(regexp.MustCompile(`\b(AND|OR|NOT|contains|attribute_exists|attribute_not_exists|size|BETWEEN|IN)\b|>=|<=|<>|=|<|>|[+-]`).FindAllString(text, -1))
		assert.LessOrEqual(t, operators, 300, text)
		t.Logf("%d bytes, %d operators", len(text), operators)
	}
}
