package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/queue"
)

// workers are the in-process workers that take the requests off the queue.
type workers []*asyncevent.Worker

// startWorkers starts cfg.workers workers on queue, under ctx. When one fails to
// start, it stops those it started.
func startWorkers(ctx context.Context, cfg config, client *asyncevent.Client, q queue.Queue, libLogger *slog.Logger) (workers, error) {
	ws := make(workers, 0, cfg.workers)
	for range cfg.workers {
		w, err := asyncevent.NewWorker(client, q, asyncevent.WorkerOptions{
			ProcessOptions:    asyncevent.ProcessOptions{Logger: libLogger},
			WaitTime:          cfg.workerWait,
			VisibilityTimeout: cfg.workerVisibility,
		})
		if err == nil {
			err = w.Start(ctx)
		}
		if err != nil {
			_ = ws.stop(context.Background())
			return nil, fmt.Errorf("worker: %w", err)
		}
		ws = append(ws, w)
	}
	return ws, nil
}

// stop stops the workers all at once: on SQS each stop waits out its long poll (up
// to the worker's WaitTime) so as to give back what the poll returns.
func (ws workers) stop(ctx context.Context) error {
	errs := make([]error, len(ws))
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Go(func() { errs[i] = w.Stop(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
