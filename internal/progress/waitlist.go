package progress

// Waitlist is an event's waitlist as read from its progress items: the requests on
// it, by the tenth of their queuedAt (unix tenths), those that joined less those that
// left. The waitlist is served in queue order, so the requests on it queued before
// one are the ones ahead of it.
type Waitlist map[int64]int64

// AddItem adds the waitlist counts of a progress item of second, its number
// attributes by name, to w.
func (w Waitlist) AddItem(second int64, counts map[string]int64, names *Names) {
	for i := range Slots {
		if n := counts[names.Joined[i]] - counts[names.Left[i]]; n != 0 {
			w[second*Slots+int64(i)] += n
		}
	}
}

// Before returns the requests on the waitlist queued before the tenth that holds t
// (unix ms).
func (w Waitlist) Before(t int64) int64 {
	var n int64
	for tenth, on := range w {
		if tenth < t/100 {
			n += on
		}
	}
	return max(n, 0)
}

// Ahead returns the requests on the waitlist ahead of one on it queued at (unix
// ms): those of the tenths before its own, and of its own tenth (which counts it
// too) the share queued before it, taken as spread evenly over the tenth.
func (w Waitlist) Ahead(queuedAt int64) int64 {
	others := max(w[queuedAt/100]-1, 0)
	return w.Before(queuedAt) + others*(queuedAt%100)/100
}
