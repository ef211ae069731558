package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"time"

	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/asyncevent/asyncevent/otelasyncevent"
)

// metricsInterval is how often -otel-stdout writes the metrics.
const metricsInterval = 30 * time.Second

// flushTimeout bounds the last export at shutdown: a loaded machine exports slowly.
const flushTimeout = 20 * time.Second

// telemetry is what -otel-stdout wires in: the library's Observer, the tracer
// provider of the HTTP server's spans, and the function that flushes and stops
// both.
type telemetry struct {
	observer *otelasyncevent.Observer
	tracer   trace.TracerProvider
	shutdown func(context.Context) error
}

// startTelemetry returns -otel-stdout's telemetry, written to cfg.telemetryOut
// (os.Stdout when nil); without -otel-stdout, nil.
func startTelemetry(cfg config) (*telemetry, error) {
	if !cfg.otelStdout {
		return nil, nil
	}
	out := cfg.telemetryOut
	if out == nil {
		out = os.Stdout
	}
	return stdoutTelemetry(out)
}

// stdoutTelemetry returns telemetry whose spans (one JSON object each, as they end)
// and metrics (every metricsInterval, and once more at shutdown) are written to out.
func stdoutTelemetry(out io.Writer) (*telemetry, error) {
	spans, err := stdouttrace.New(stdouttrace.WithWriter(out))
	if err != nil {
		return nil, err
	}
	metrics, err := stdoutmetric.New(stdoutmetric.WithWriter(out))
	if err != nil {
		return nil, err
	}
	res := resource.NewSchemaless(semconv.ServiceName("asyncevent-httpapi"))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(spans), sdktrace.WithResource(res))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metrics, sdkmetric.WithInterval(metricsInterval))), sdkmetric.WithResource(res))
	// Metrics first: their last collection reads the seats left, and a slow export of
	// the spans must not use up the time it has.
	shutdown := func(ctx context.Context) error { return errors.Join(mp.Shutdown(ctx), tp.Shutdown(ctx)) }
	obs, err := otelasyncevent.New(otelasyncevent.Options{TracerProvider: tp, MeterProvider: mp})
	if err != nil {
		_ = shutdown(context.Background())
		return nil, err
	}
	return &telemetry{observer: obs, tracer: tp, shutdown: shutdown}, nil
}

// tracerProvider is the tracer provider of the HTTP server's spans; nil when t is
// nil, and the server makes none.
func (t *telemetry) tracerProvider() trace.TracerProvider {
	if t == nil {
		return nil
	}
	return t.tracer
}

// flush writes the last spans and metrics and stops both, within flushTimeout.
func (t *telemetry) flush(logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	if err := t.shutdown(ctx); err != nil {
		logger.Warn("flushing telemetry failed", "error", err)
	}
}
