package admission

import (
	"slices"
	"strings"
)

// merge merges the index shards' pages of the line read after through into one line
// in rank order, cut where a shard that had more ends, so that no request is missing
// before the last one kept (a shard's next page may hold requests ranked before
// another shard's last). full reports that a shard had more.
func merge(pages []Page, through string) (line []Place, full bool) {
	var cut string
	for _, p := range pages {
		if p.More && len(p.Places) > 0 {
			last := p.Places[len(p.Places)-1].Rank
			if !full || last < cut {
				cut = last
			}
			full = true
		}
	}
	for _, p := range pages {
		for _, r := range p.Places {
			if r.Rank > through && (!full || r.Rank <= cut) {
				line = append(line, r)
			}
		}
	}
	slices.SortFunc(line, func(a, b Place) int { return strings.Compare(a.Rank, b.Rank) })
	return line, full
}

// fill adds to wave (the late arrivals it took) the requests of line not decided and
// not in it yet, until it holds size, and returns the new watermark: the rank of the
// last request of line it passed. cut reports that it stopped before line's end.
func fill(wave []Entry, line []Place, through string, size int) (_ []Entry, _ string, cut bool) {
	for _, e := range line {
		if len(wave) == size {
			return wave, through, true
		}
		through = e.Rank
		if !e.Decided && !slices.ContainsFunc(wave, func(w Entry) bool { return w.RequestID == e.RequestID }) {
			wave = append(wave, e.Entry)
		}
	}
	return wave, through, false
}
