package progress

import "strconv"

// WaitSlots is the seconds of a waitlist's progress item: one item holds the counts
// of one minute of queuedAt, by its seconds.
const WaitSlots = 60

// WaitNames are the attribute names of a waitlist item's counts: the requests queued
// in each second of its minute that joined the waitlist, and that left it.
type WaitNames struct {
	Joined, Left [WaitSlots]string
}

// NewWaitNames returns the names that the prefixes make: joined00 … joined59 and
// left00 … left59.
func NewWaitNames(joined, left string) WaitNames {
	var n WaitNames
	for i := range WaitSlots {
		n.Joined[i] = joined + pad2(i)
		n.Left[i] = left + pad2(i)
	}
	return n
}

func pad2(i int) string {
	if i < 10 {
		return "0" + strconv.Itoa(i)
	}
	return strconv.Itoa(i)
}

// Waitlist is an event's waitlist as read from its waitlist items: the requests on
// it, by the second of their queuedAt (unix seconds), those that joined less those
// that left. The waitlist is served in queue order, so the requests on it queued
// before one are the ones ahead of it.
type Waitlist map[int64]int64

// AddItem adds the counts of the waitlist item of the minute that begins at second,
// its number attributes by name, to w.
func (w Waitlist) AddItem(second int64, counts map[string]int64, names *WaitNames) {
	for i := range WaitSlots {
		if n := counts[names.Joined[i]] - counts[names.Left[i]]; n != 0 {
			w[second+int64(i)] += n
		}
	}
}

// Before returns the requests on the waitlist queued in the seconds before the one
// that holds t (unix ms).
func (w Waitlist) Before(t int64) int64 {
	var n int64
	for second, on := range w {
		if second < t/1000 {
			n += on
		}
	}
	return max(n, 0)
}

// Ahead returns the requests on the waitlist ahead of one on it queued at (unix
// ms): those of the seconds before its own, and of its own second (which counts it
// too) its expected share, the requests of the second taken as spread evenly over
// it: of n, the one queued at the fraction f of the second is taken as the
// ⌊f·n⌋-th.
func (w Waitlist) Ahead(queuedAt int64) int64 {
	on := max(w[queuedAt/1000], 1)
	return w.Before(queuedAt) + min(queuedAt%1000*on/1000, on-1)
}
