package progress

import "testing"

// The names of a progress item's counts, and an item read back into tenths: each
// slot's counts in its own tenth, and the partitions of an event summed.
func TestItemsReadIntoTenths(t *testing.T) {
	names := NewNames("a", "d", "h")
	if names.Arrived[0] != "a0" || names.Reached[9] != "d9" || names.Hundredths[7] != "h07" || names.Hundredths[99] != "h99" {
		t.Fatalf("names %v %v %v", names.Arrived, names.Reached, names.Hundredths)
	}
	ts := Tenths{}
	ts.AddItem(100, map[string]int64{"a0": 3, "h01": 1, "h07": 2, "d9": 4, "ttl": 5}, &names)
	if got := ts[1000]; got[arrivals] != 3 || got[firstPart+1] != 1 || got[firstPart+7] != 2 {
		t.Fatalf("tenth 0 %v", got)
	}
	if got := ts[1009]; got[finished] != 4 {
		t.Fatalf("tenth 9 %v", got)
	}
	other := Tenths{}
	other.AddItem(100, map[string]int64{"a0": 1, "d0": 2}, &names)
	ts.Add(other)
	if got := ts[1000]; got[arrivals] != 4 || got[finished] != 2 {
		t.Fatalf("summed %v", got)
	}
	for _, tc := range []struct{ index, want int }{{0, 1}, {8, 1}, {9, 2}, {16, 2}, {17, 3}} {
		if got := Shards(tc.index); got != tc.want {
			t.Errorf("Shards(%d) = %d, want %d", tc.index, got, tc.want)
		}
	}
}
