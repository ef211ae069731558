// Package progress is the arithmetic of an event's place in line (docs/design.md, "A
// place in line"): what a node counts of the requests that arrived and that the
// workers reached, by tenth of a second, and what a reader makes of the counts it
// read: the requests ahead of one, the workers' rate, the line's depth.
//
// It does no I/O of its own and knows no key text. The root package writes a Meter's
// counts to the progress rows and reads them back into Tenths (by the attribute Names
// it gives), and asks a View where a request stands; a Prequeue, the places of a
// pre-queue's drawn order, reads the Draw record and the entries through the table
// the root hands it.
package progress

import (
	"fmt"
	"strconv"
	"time"
)

// Slots is the tenths of a second of a progress item: one item holds one second.
const Slots = 10

// Parts is the hundredths of a tenth by which the arrivals are counted as well: a
// request near the front is placed among the arrivals of its own tenth (tens of them
// in a burst, and not evenly spread) by the hundredth they came in.
const Parts = 10

// shardsPer is the index shards of an event per progress partition: the progress
// partitions take a write per node a second, not per click.
const shardsPer = 8

// Shards returns the number of an event's progress partitions, of its index shards.
func Shards(indexShards int) int {
	return max(1, (max(indexShards, 1)+shardsPer-1)/shardsPer)
}

// Span is the span of an event's progress a node holds by tenth of a second: the
// line's last quarter of an hour, which bounds what a refresh rebuilds and what a
// Line's Series holds, however long the event runs. The counts before it are kept
// as two sums; a request that has waited longer than the span is placed as if it had
// arrived at the span's start, which can only say more ahead than there are. A
// Meter's counts older than it are not written: no reader looks there.
const Span = 15 * time.Minute

// RefreshGap is the least time between two reads of an event's progress by a node
// for the polls it would place poorly.
const RefreshGap = 100 * time.Millisecond

// Names are the attribute names of a progress item's counts: the arrivals and the
// requests reached in each tenth of its second, and the arrivals in each hundredth.
type Names struct {
	Arrived, Reached [Slots]string
	Hundredths       [Slots * Parts]string
}

// NewNames returns the names that the prefixes make: arrived0 … arrived9, reached0 …
// reached9, and hundredth00 … hundredth99.
func NewNames(arrived, reached, hundredth string) Names {
	var n Names
	for i := range Slots {
		n.Arrived[i] = arrived + strconv.Itoa(i)
		n.Reached[i] = reached + strconv.Itoa(i)
	}
	for i := range n.Hundredths {
		n.Hundredths[i] = fmt.Sprintf("%s%02d", hundredth, i)
	}
	return n
}

// Counts is what a node counted of one second of one event, or, of a waitlist's
// key, of one minute: the requests queued in each of its seconds that joined the
// waitlist, and that left it.
type Counts struct {
	Arrived, Reached [Slots]int64
	Hundredths       [Slots * Parts]int64 // the arrivals again, by hundredth
	Joined, Left     [WaitSlots]int64
}

// Second names one second (unix) of one event's counts; with Waitlist, one minute
// of its waitlist's counts, Second being the minute's first second.
type Second struct {
	EventID  string
	Second   int64
	Waitlist bool
}

// Tenth is one tenth of a second of an event's progress as read: its arrivals, its
// requests reached, and then its arrivals by hundredth (from firstPart on). A tenth
// whose hundredths do not sum to its arrivals was written without them: its
// arrivals are taken as spread evenly over it.
type Tenth [2 + Parts]int64

// The counts of a Tenth and of a View.
const (
	arrivals  = 0
	finished  = 1
	firstPart = 2 // the index of a Tenth's arrivals in its first hundredth
)

// Tenths is an event's progress as read, by tenth of a second (unix tenths).
type Tenths map[int64]Tenth

// AddItem adds the counts of a progress item of second, its number attributes by
// name, to ts.
func (ts Tenths) AddItem(second int64, counts map[string]int64, names *Names) {
	for i := range Slots {
		t := ts[second*Slots+int64(i)]
		t[arrivals] += counts[names.Arrived[i]]
		t[finished] += counts[names.Reached[i]]
		for h := range Parts {
			t[firstPart+h] += counts[names.Hundredths[i*Parts+h]]
		}
		ts[second*Slots+int64(i)] = t
	}
}

// Add adds the counts of other, read from another progress partition, to ts.
func (ts Tenths) Add(other Tenths) {
	for t, n := range other {
		sum := ts[t]
		for i := range sum {
			sum[i] += n[i]
		}
		ts[t] = sum
	}
}
