package workloop

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/asyncevent/asyncevent/queue"
)

// hider keeps the deliveries of a run hidden for the visibility timeout while they
// wait behind the run's earlier ones. A nil hider does nothing.
type hider struct {
	mu      sync.Mutex
	waiting []queue.Delivery
	quit    chan struct{}
	exited  chan struct{}
}

// hide starts keeping ds hidden, every half of the visibility timeout.
func (l *Loop) hide(ctx context.Context, ds []queue.Delivery) *hider {
	h := &hider{waiting: ds, quit: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		defer close(h.exited)
		tick := time.NewTicker(l.cfg.VisibilityTimeout / 2)
		defer tick.Stop()
		for {
			select {
			case <-h.quit:
				return
			case <-tick.C:
			}
			h.mu.Lock()
			for _, d := range h.waiting {
				bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.Bookkeeping)
				if err := l.q.ChangeVisibility(bctx, d.Receipt, l.cfg.VisibilityTimeout); err != nil {
					l.cfg.Logger.WarnContext(ctx, "keeping a waiting message hidden failed", slog.String("messageId", d.MessageID), slog.Any("error", err))
				}
				cancel()
			}
			h.mu.Unlock()
		}
	}()
	return h
}

// starting stops keeping d, the first of those waiting, hidden: its work now does.
func (h *hider) starting(d queue.Delivery) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.waiting) > 0 && h.waiting[0].Receipt == d.Receipt {
		h.waiting = h.waiting[1:]
	}
}

// end stops the hider and returns once it changes no visibility any more, so that
// a message given back after it stays visible.
func (h *hider) end() {
	if h == nil {
		return
	}
	close(h.quit)
	<-h.exited
}
