package admission

import (
	"slices"
	"testing"
)

func places(ranks ...string) []Place {
	ps := make([]Place, len(ranks))
	for i, r := range ranks {
		ps[i] = Place{Rank: r, Request: Request{Entry: Entry{RequestID: r}}}
	}
	return ps
}

func ranksOf(ps []Place) []string {
	rs := make([]string, len(ps))
	for i, p := range ps {
		rs[i] = p.Rank
	}
	return rs
}

func TestMerge(t *testing.T) {
	cases := []struct {
		name    string
		pages   []Page
		through string
		want    []string
		full    bool
	}{
		{name: "no page", want: nil},
		{
			name:  "shards without more: merged in rank order, the watermark left out",
			pages: []Page{{Places: places("b", "d")}, {Places: places("a", "c", "e")}}, through: "a",
			want: []string{"b", "c", "d", "e"},
		},
		{
			name: "cut where a shard that had more ends: its next page may rank before the others' last",
			pages: []Page{
				{Places: places("b", "d"), More: true},
				{Places: places("a", "c", "e", "f")},
			},
			want: []string{"a", "b", "c", "d"}, full: true,
		},
		{
			name: "two shards with more: cut at the earlier end",
			pages: []Page{
				{Places: places("b", "f"), More: true},
				{Places: places("a", "c"), More: true},
				{Places: places("d", "e", "g")},
			},
			want: []string{"a", "b", "c"}, full: true,
		},
		{
			name:  "a shard with more and an empty page sets no cut",
			pages: []Page{{More: true}, {Places: places("a", "b")}},
			want:  []string{"a", "b"},
		},
		{
			name:  "a page of the watermark alone",
			pages: []Page{{Places: places("c"), More: true}}, through: "c",
			want: nil, full: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			line, full := merge(tc.pages, tc.through)
			if got := ranksOf(line); !slices.Equal(got, tc.want) || full != tc.full {
				t.Fatalf("merge = %v, full %t; want %v, full %t", got, full, tc.want, tc.full)
			}
		})
	}
}

func TestFill(t *testing.T) {
	line := places("b", "c", "d", "e")
	line[1].Decided = true
	t.Run("the wave takes the undecided requests up to its size, the watermark the last passed", func(t *testing.T) {
		wave, through, cut := fill(nil, line, "a", 2)
		if ids := idsOf(wave); !slices.Equal(ids, []string{"b", "d"}) || through != "d" || !cut {
			t.Fatalf("fill = %v through %q cut %t", ids, through, cut)
		}
	})
	t.Run("a line that fits: the watermark at its end, nothing cut", func(t *testing.T) {
		wave, through, cut := fill(nil, line, "a", 10)
		if ids := idsOf(wave); !slices.Equal(ids, []string{"b", "d", "e"}) || through != "e" || cut {
			t.Fatalf("fill = %v through %q cut %t", ids, through, cut)
		}
	})
	t.Run("late arrivals first, not taken twice", func(t *testing.T) {
		wave, through, cut := fill([]Entry{{RequestID: "d"}}, line, "a", 3)
		if ids := idsOf(wave); !slices.Equal(ids, []string{"d", "b", "e"}) || through != "e" || cut {
			t.Fatalf("fill = %v through %q cut %t", ids, through, cut)
		}
	})
	t.Run("a wave full of late arrivals passes nothing", func(t *testing.T) {
		wave, through, cut := fill([]Entry{{RequestID: "x"}}, line, "a", 1)
		if ids := idsOf(wave); !slices.Equal(ids, []string{"x"}) || through != "a" || !cut {
			t.Fatalf("fill = %v through %q cut %t", ids, through, cut)
		}
	})
}

func idsOf(wave []Entry) []string {
	ids := make([]string, len(wave))
	for i, e := range wave {
		ids[i] = e.RequestID
	}
	return ids
}
