// Package ctxsleep is the one sleep of the module that a context cuts short.
package ctxsleep

import (
	"context"
	"time"
)

// Sleep waits for d, or until ctx ends, whose error it then returns. A d of zero or
// less returns nil at once.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
