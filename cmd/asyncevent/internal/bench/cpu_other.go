//go:build !unix

package bench

import "time"

var started = time.Now()

// processCPU is the time since the process began where the CPU time is not at hand:
// the flows run one operation at a time, so it is their CPU time and their waits.
func processCPU() time.Duration { return time.Since(started) }
