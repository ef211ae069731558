package workloop

import (
	"context"
	"log/slog"
	"sync"

	"github.com/asyncevent/asyncevent/queue"
)

// hider keeps the deliveries of a run hidden for the visibility timeout while they
// wait behind the run's earlier ones. A nil hider does nothing.
type hider struct {
	mu      sync.Mutex
	waiting []queue.Delivery
	stop    func()
}

// hide starts keeping ds hidden, every half of the visibility timeout.
func (l *Loop) hide(ctx context.Context, ds []queue.Delivery) *hider {
	h := &hider{waiting: ds}
	h.stop = Every(context.WithoutCancel(ctx), l.cfg.VisibilityTimeout/2, func(context.Context) bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, d := range h.waiting {
			bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.Bookkeeping)
			if err := l.q.ChangeVisibility(bctx, d.Receipt, l.cfg.VisibilityTimeout); err != nil {
				l.cfg.Logger.WarnContext(ctx, "keeping a waiting message hidden failed", slog.String("messageId", d.MessageID), slog.Any("error", err))
			}
			cancel()
		}
		return true
	})
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
	h.stop()
}
