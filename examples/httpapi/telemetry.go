package main

import (
	"context"
	"errors"
	"io"
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

// stdoutTelemetry returns an Observer whose spans (one JSON object each, as they end)
// and metrics (every metricsInterval, and once more at shutdown) are written to out,
// its tracer provider (for the HTTP server's spans), and the function that flushes
// and stops both.
func stdoutTelemetry(out io.Writer) (*otelasyncevent.Observer, trace.TracerProvider, func(context.Context) error, error) {
	spans, err := stdouttrace.New(stdouttrace.WithWriter(out))
	if err != nil {
		return nil, nil, nil, err
	}
	metrics, err := stdoutmetric.New(stdoutmetric.WithWriter(out))
	if err != nil {
		return nil, nil, nil, err
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
		return nil, nil, nil, err
	}
	return obs, tp, shutdown, nil
}
