package workloop

import (
	"context"
	"time"
)

// Every calls tick every period from a goroutine of its own, until tick returns
// false or ctx ends. The returned stop ends it and returns once no tick runs any
// more, so nothing tick does lands after stop. tick's ctx ends with stop.
func Every(ctx context.Context, period time.Duration, tick func(ctx context.Context) bool) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if !tick(ctx) {
					return
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}
