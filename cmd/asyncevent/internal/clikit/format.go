package clikit

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/asyncevent/asyncevent"
)

// FormatDuration rounds a duration for a human: 3 significant digits.
func FormatDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(100 * time.Microsecond).String()
	case d < time.Minute:
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// FormatInt writes n with thousands separators: 20,000.
func FormatInt(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// FormatCounts writes a count per key, biggest first: "SUCCEEDED 1,000 · REJECTED 15,000".
func FormatCounts[K ~string](m map[K]int) string {
	if len(m) == 0 {
		return "-"
	}
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b K) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(string(a), string(b))
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %s", k, FormatInt(m[k]))
	}
	return strings.Join(parts, " · ")
}

// FormatSeconds is FormatDuration of a count of seconds.
func FormatSeconds(s float64) string {
	return FormatDuration(time.Duration(s * float64(time.Second)))
}

// FormatRate writes a rate of requests a second: 3 significant digits at most.
func FormatRate(r float64) string {
	switch {
	case r >= 100:
		return fmt.Sprintf("%.0f", r)
	case r >= 10:
		return fmt.Sprintf("%.1f", r)
	}
	return fmt.Sprintf("%.2f", r)
}

// Plural writes a count of things: "1 request", "1,234 requests".
func Plural(n int64, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return FormatInt(int(n)) + " " + thing + "s"
}

// PluralShards counts an event's capacity shards: "1 capacity item", "13 capacity shards".
func PluralShards(n int) string {
	if n == 1 {
		return "1 capacity item"
	}
	return fmt.Sprintf("%d capacity shards", n)
}

// FormatFloat writes v with one decimal at most: 2.5, 3.
func FormatFloat(v float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.1f", v), "0"), ".")
}

// CallsOf says the calls per operation with their split by operation:
// "3.05 (GetItem 0.01 + PutItem 1.00 + UpdateItem 2.04)".
func CallsOf(total float64, byOp map[string]float64) string {
	ops := make([]string, 0, len(byOp))
	for _, op := range slices.Sorted(maps.Keys(byOp)) {
		ops = append(ops, fmt.Sprintf("%s %.2f", op, byOp[op]))
	}
	return fmt.Sprintf("%.2f (%s)", total, strings.Join(ops, " + "))
}

// Ms is d in milliseconds, to the microsecond.
func Ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// FormatDurations writes d's percentiles for a human; "-" when it counts none.
func FormatDurations(d asyncevent.Durations) string {
	if d.Count == 0 {
		return "-"
	}
	return fmt.Sprintf("p50 %s · p95 %s · max %s (%s)", FormatDuration(d.P50), FormatDuration(d.P95), FormatDuration(d.Max), Plural(int64(d.Count), "request"))
}
