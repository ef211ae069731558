package asyncevent

import "testing"

// Review 41: "Parse… refuses text no builder could have produced". NewProgressKey
// writes the second as 10 digits; ParseProgressKey reads it with strconv.ParseInt,
// which takes a leading '+', so T#+000000001 parses (and Key.Entity calls it a
// Progress item) though no builder writes it: the key rebuilt from it differs.
func TestReview41ParseProgressKeyRefusesASign(t *testing.T) {
	key := Key{PK: "EVENT#e#PROGRESS#0", SK: "T#+000000001"}
	if k, err := ParseProgressKey(key); err == nil {
		t.Errorf("ParseProgressKey(%v) accepted it, rebuilt as %v", key, k.Key())
	}
	if kind, err := key.Entity(); err == nil {
		t.Errorf("Key.Entity(%v) = %s, want ErrMalformedKey", key, kind)
	}
}
