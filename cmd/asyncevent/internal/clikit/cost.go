package clikit

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/asyncevent/asyncevent/internal/metered"
)

// CostJSON is the mean cost of one operation.
type CostJSON struct {
	Count      int                `json:"count"`
	Calls      float64            `json:"dynamodbCalls"`
	RoundTrips float64            `json:"roundTrips"`
	WCU        float64            `json:"wcu"`
	RCU        float64            `json:"rcu"`
	QueueSends float64            `json:"queueSends"`
	ByCall     map[string]float64 `json:"byCall"`
}

// CostOf is the mean of c over n operations, with sends queue sends among them.
func CostOf(c metered.Counts, n, sends int) CostJSON {
	out := CostJSON{Count: n, ByCall: map[string]float64{}}
	if n == 0 {
		return out
	}
	f := float64(n)
	out.Calls, out.RoundTrips = float64(c.DataCalls())/f, float64(c.RoundTrips())/f
	out.WCU, out.RCU, out.QueueSends = c.WCU/f, c.RCU/f, float64(sends)/f
	for op, k := range c.Calls {
		out.ByCall[op] = float64(k) / f
	}
	return out
}

// String writes the cost for a human: the calls with their split by operation, the
// round trips, the units and the queue sends.
func (c CostJSON) String() string {
	if c.Count == 0 {
		return "-"
	}
	ops := make([]string, 0, len(c.ByCall))
	for _, op := range slices.Sorted(maps.Keys(c.ByCall)) {
		ops = append(ops, fmt.Sprintf("%s %.2f", op, c.ByCall[op]))
	}
	s := fmt.Sprintf("%.2f calls (%s) · %.2f round trips · %.2f WCU", c.Calls, strings.Join(ops, " + "), c.RoundTrips, c.WCU)
	if c.RCU > 0 {
		s += fmt.Sprintf(" · %.2f RCU", c.RCU)
	}
	if c.QueueSends > 0 {
		s += fmt.Sprintf(" + %.2f queue sends", c.QueueSends)
	}
	return s
}
