package rowplan

import "testing"

// The access-pattern table writes a run of numbered attributes set alike as its first
// and last, and nothing else that way.
func TestCollapseRuns(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"ADD a0 :a0, a1 :a1, a2 :a2 SET x = :x", "ADD a0 :a0 … a2 :a2 SET x = :x"},
		{"ADD a0 :a0, a1 :a1, d0 :d0, d1 :d1, d2 :d2", "ADD a0 :a0, a1 :a1, d0 :d0 … d2 :d2"},
		{"ADD h08 :h08, h09 :h09, h10 :h10", "ADD h08 :h08 … h10 :h10"},
		{"ADD a0 :a0, a2 :a2, a3 :a3", "ADD a0 :a0, a2 :a2, a3 :a3"}, // not in a row
		{"ADD a0 :b0, a1 :b1, a2 :b2", "ADD a0 :b0, a1 :b1, a2 :b2"}, // set otherwise
		{"SET x = if_not_exists(x, :x), y = :y", "SET x = if_not_exists(x, :x), y = :y"},
	} {
		if got := collapseRuns(tc.in); got != tc.want {
			t.Errorf("collapseRuns(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
