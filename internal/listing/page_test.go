package listing

import (
	"context"
	"errors"
	"strconv"
	"testing"
)

func TestLimitAndBudget(t *testing.T) {
	for _, tc := range []struct{ limit, want int }{{0, 20}, {1, 1}, {100, 100}, {101, -1}, {-1, -1}} {
		got, err := Limit(tc.limit, 20, 100, errInvalid)
		if tc.want < 0 && !errors.Is(err, errInvalid) || tc.want >= 0 && (err != nil || got != tc.want) {
			t.Errorf("Limit(%d) = %d, %v", tc.limit, got, err)
		}
	}
	for _, tc := range []struct {
		limit, maxRead int
		filtered       bool
		want           int
	}{{5, 0, true, 50}, {5, 8, true, 8}, {5, 4, true, -1}, {5, 0, false, 5}, {5, 8, false, 5}, {5, 4, false, -1}} {
		got, err := Budget(tc.limit, tc.maxRead, tc.filtered, errInvalid)
		if tc.want < 0 && !errors.Is(err, errInvalid) || tc.want >= 0 && (err != nil || got != tc.want) {
			t.Errorf("Budget(%d, %d, %v) = %d, %v", tc.limit, tc.maxRead, tc.filtered, got, err)
		}
	}
}

// fake serves a partition's items 0 … n−1 (sort key Q#<part><i>), a page at a time.
func fake(items map[string][]Item) func(context.Context, *Reader, int) error {
	return func(_ context.Context, r *Reader, n int) error {
		all := items[r.Partition]
		from := 0
		if r.From != nil {
			for i, it := range all {
				if stringAttr(it, "ISK") == stringAttr(r.From, "ISK") {
					from = i + 1
				}
			}
		}
		to := min(from+n, len(all))
		r.Ahead, r.Ended = all[from:to], to == len(all)
		r.From = nil
		if !r.Ended {
			r.From = all[to-1]
		}
		return nil
	}
}

func TestFillMergesWithinItsBudget(t *testing.T) {
	items := map[string][]Item{}
	for i := range 6 {
		p := []string{"a", "b"}[i%2]
		items[p] = append(items[p], key(p, strconv.Itoa(i)))
	}
	var got []string
	even := func(it Item) (bool, error) {
		n, _ := strconv.Atoi(stringAttr(it, "ISK")[2:])
		if n%3 != 0 {
			return false, nil
		}
		got = append(got, stringAttr(it, "ISK"))
		return true, nil
	}
	readers := []*Reader{{Partition: "a"}, {Partition: "b"}}
	m := Merge{SortKey: "ISK", Forward: true, Read: fake(items), Keep: even}
	if err := m.Fill(context.Background(), readers, 10, 3); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "Q#0" {
		t.Fatalf("three read: kept %v", got)
	}
	if stringAttr(readers[0].Last, "ISK") != "Q#2" || stringAttr(readers[1].Last, "ISK") != "Q#1" {
		t.Fatalf("last listed: %v, %v", readers[0].Last, readers[1].Last)
	}
	if err := m.Fill(context.Background(), readers, 10, 100); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1] != "Q#3" {
		t.Fatalf("to the end: kept %v", got)
	}
	boom := errors.New("boom")
	m.Keep = func(Item) (bool, error) { return false, boom }
	if err := m.Fill(context.Background(), []*Reader{{Partition: "a"}}, 1, 1); !errors.Is(err, boom) {
		t.Fatalf("a failed keep: %v", err)
	}
	m.Read = func(context.Context, *Reader, int) error { return boom }
	if err := m.Fill(context.Background(), []*Reader{{Partition: "a"}}, 1, 1); !errors.Is(err, boom) {
		t.Fatalf("a failed read: %v", err)
	}
}

func TestGatherKeepsThePartitionsOrder(t *testing.T) {
	got, err := Gather(context.Background(), 4, 2, func(_ context.Context, p int) ([]int, error) {
		return []int{p * 10, p*10 + 1}, nil
	})
	if err != nil || len(got) != 8 || got[0] != 0 || got[7] != 31 || got[2] != 10 {
		t.Fatalf("%v, %v", got, err)
	}
	boom := errors.New("boom")
	if _, err := Gather(context.Background(), 3, 1, func(_ context.Context, p int) ([]int, error) {
		if p == 2 {
			return nil, boom
		}
		return nil, nil
	}); !errors.Is(err, boom) {
		t.Fatalf("a failed partition: %v", err)
	}
}
