package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Review 41: "the CLI hints at the right place for a flag". A flag put between a
// group and its command (the subcommand) is read as a misspelled command: the hint is
// wrong ('event add-capacity' for -capacity) or missing, where the flag before the
// whole command gets "Did you mean: asyncevent event create -capacity 3 sale".
func TestReview41FlagBeforeTheSubcommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		hint string
	}{
		{[]string{"event", "-capacity", "3", "create", "sale"}, "Did you mean: asyncevent event create -capacity 3 sale"},
		{[]string{"requests", "-user", "ann", "list"}, "Did you mean: asyncevent requests list -user ann"},
		{[]string{"holds", "-once", "sweep", "sale"}, "Did you mean: asyncevent holds sweep -once sale"},
	} {
		out, errOut, code := cli(t, tc.args...)
		assert.Equal(t, exitUsage, code, "%v", tc.args)
		assert.Empty(t, out, "%v", tc.args)
		assert.Contains(t, errOut, tc.hint, "%v", tc.args)
	}
}
