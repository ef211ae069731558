package workloop

import (
	"context"
	"log/slog"
	"time"
)

// deleteBatchDelay is how long a finished message's delete waits for others to share
// its DeleteMessageBatch call.
const deleteBatchDelay = 20 * time.Millisecond

// batchDeletes deletes finished messages in batches of up to ten, waiting at most
// deleteBatchDelay for a batch to fill.
func (l *Loop) batchDeletes() {
	defer close(l.deleted)
	var batch []string
	flush := func() {
		if len(batch) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), l.cfg.Bookkeeping)
		defer cancel()
		if err := l.q.Delete(ctx, batch...); err != nil {
			// The messages come back and are deleted then as duplicates.
			l.cfg.Logger.Warn("deleting messages failed", slog.Int("count", len(batch)), slog.Any("error", err))
		}
		batch = batch[:0]
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case r, ok := <-l.deletes:
			if !ok {
				flush()
				return
			}
			batch = append(batch, r)
			if len(batch) == 1 {
				timer.Reset(deleteBatchDelay)
			}
			if len(batch) >= 10 {
				timer.Stop()
				flush()
			}
		case <-timer.C:
			flush()
		}
	}
}
