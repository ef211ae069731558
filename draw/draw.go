// Package draw is the arithmetic of an asyncevent lottery draw and of a first-come
// event's pre-queue: the entries' hash, each entry's score, the winners and the order. It needs no table and no AWS: whoever holds a
// draw's revealed seed and its entries' request IDs recomputes its winners with it
// alone (asyncevent's Client.VerifyDraw does the same against the table).
package draw

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"slices"
)

// Score is an entry's score in a draw: SHA-256 of the seed's bytes, the 32 bytes
// that entriesHash (an EntriesHash, 64 hex digits) encodes, and the request ID's
// bytes. The entries hash ties every score to the whole frozen entry set: an entry
// more, less or under another request ID changes every entry's score, so that
// neither knowing the seed early nor re-rolling a request ID picks a score. The K
// smallest scores win (compared as bytes; equal scores by request ID). An
// entriesHash that is not 64 hex digits is hashed as its text, as no draw does.
func Score(seed []byte, entriesHash string, requestID string) [sha256.Size]byte {
	h := sha256.New()
	h.Write(seed)
	if b, err := hex.DecodeString(entriesHash); err == nil && len(b) == sha256.Size {
		h.Write(b)
	} else {
		h.Write([]byte(entriesHash))
	}
	h.Write([]byte(requestID))
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// EntriesHash is the hex SHA-256 of the entries' request IDs, sorted as strings and
// each followed by a newline. The draw records it so that a later change of the
// entries shows.
func EntriesHash(requestIDs []string) string {
	ids := slices.Clone(requestIDs)
	slices.Sort(ids)
	h := sha256.New()
	for _, id := range ids {
		h.Write([]byte(id))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Winners returns the k request IDs with the smallest Score under the
// EntriesHash of requestIDs, smallest first: the winners of a draw of these entries.
// It keeps only k candidates at a time, so memory grows with k, not with the entries.
func Winners(seed []byte, requestIDs []string, k int) []string {
	if k <= 0 {
		return nil
	}
	entriesHash := EntriesHash(requestIDs)
	var kept worstFirst
	for _, id := range requestIDs {
		s := scored{score: Score(seed, entriesHash, id), id: id}
		if len(kept) < k {
			kept.push(s)
		} else if s.less(kept[0]) {
			kept.replaceWorst(s)
		}
	}
	slices.SortFunc(kept, func(a, b scored) int {
		if a.less(b) {
			return -1
		}
		return 1
	})
	winners := make([]string, len(kept))
	for i, s := range kept {
		winners[i] = s.id
	}
	return winners
}

// Order returns requestIDs in the order of their Score under the EntriesHash of
// requestIDs, smallest first: the order in which a pre-queue of these entries is
// served. Its first k are Winners(seed, requestIDs, k).
func Order(seed []byte, requestIDs []string) []string {
	entriesHash := EntriesHash(requestIDs)
	all := make([]scored, len(requestIDs))
	for i, id := range requestIDs {
		all[i] = scored{score: Score(seed, entriesHash, id), id: id}
	}
	slices.SortFunc(all, func(a, b scored) int {
		if a.less(b) {
			return -1
		}
		if b.less(a) {
			return 1
		}
		return 0
	})
	order := make([]string, len(all))
	for i, s := range all {
		order[i] = s.id
	}
	return order
}

// scored is an entry with its score; less orders scores as bytes, equal ones by
// request ID.
type scored struct {
	score [sha256.Size]byte
	id    string
}

func (a scored) less(b scored) bool {
	if c := bytes.Compare(a.score[:], b.score[:]); c != 0 {
		return c < 0
	}
	return a.id < b.id
}

// worstFirst is a binary max-heap of candidates: its root is the worst one kept.
type worstFirst []scored

func (h *worstFirst) push(s scored) {
	*h = append(*h, s)
	for i := len(*h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !(*h)[parent].less((*h)[i]) {
			break
		}
		(*h)[parent], (*h)[i] = (*h)[i], (*h)[parent]
		i = parent
	}
}

// replaceWorst puts s in the root's place and sifts it down.
func (h worstFirst) replaceWorst(s scored) {
	h[0] = s
	for i := 0; ; {
		worst := i
		for _, child := range []int{2*i + 1, 2*i + 2} {
			if child < len(h) && h[worst].less(h[child]) {
				worst = child
			}
		}
		if worst == i {
			return
		}
		h[i], h[worst] = h[worst], h[i]
		i = worst
	}
}
