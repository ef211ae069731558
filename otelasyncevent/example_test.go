package otelasyncevent_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/otelasyncevent"
	"github.com/asyncevent/asyncevent/queue"
)

// Three clicks on a first-come event with one seat, two of them by the same user,
// processed by a Processor: the winner's click is one trace from Submit to its
// outcome, and the metrics count the answers and the outcomes. A service passes its
// own providers (an OTLP exporter, say), or none for the global ones.
func Example() {
	ctx := context.Background()
	spans := tracetest.NewSpanRecorder()
	reader := sdkmetric.NewManualReader()
	obs, err := otelasyncevent.New(otelasyncevent.Options{
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)),
		MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
	})
	if err != nil {
		panic(err)
	}
	db, err := asynceventtest.LocalDynamoDB()
	if err != nil {
		panic(err)
	}
	client, err := asyncevent.New(db, asyncevent.Options{
		TableName: fmt.Sprintf("example-otel-%d", time.Now().UnixNano()),
		Observer:  obs,
	})
	if err != nil {
		panic(err)
	}
	obs.WatchSeats(client)
	if err := client.CreateTable(ctx); err != nil {
		panic(err)
	}
	if _, err := client.CreateEvent(ctx, asyncevent.EventSettings{EventID: "drop", EventType: asyncevent.FirstCome, CapacityTotal: 1}); err != nil {
		panic(err)
	}

	queue := queue.NewMemory(queue.MemoryOptions{})
	for _, user := range []string{"ann", "ann", "bob"} {
		if _, err := client.Submit(ctx, queue, "drop", user); err != nil {
			panic(err)
		}
	}
	processor := asyncevent.NewProcessor(client, asyncevent.ProcessOptions{})
	deliveries, err := queue.Receive(ctx, 10, time.Second, time.Minute)
	if err != nil {
		panic(err)
	}
	for _, d := range deliveries {
		processor.ProcessOne(ctx, d, time.Minute, nil)
	}

	printWinnersTrace(spans.Ended(), client.TableName())
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		panic(err)
	}
	printMetrics(rm)
	// Output:
	// asyncevent.submit
	//   GetItem AsyncEventTable
	//   PutItem AsyncEventTable (participate)
	//   PutItem AsyncEventTable (create request)
	//   asyncevent.send
	//     asyncevent.process [SUCCEEDED]
	//       UpdateItem AsyncEventTable (first-come capacity)
	//       UpdateItem AsyncEventTable (first-come seat bound)
	//   UpdateItem AsyncEventTable (mark queued)
	// asyncevent.event.seats.remaining: 0
	// asyncevent.outcomes: REJECTED/REJECTED_CAPACITY 1, SUCCEEDED/SUCCESS 1
	// asyncevent.participations: duplicate 1, new 2
}

// printWinnersTrace prints the trace of the processing that won, as a tree in start
// order, with the table's name shortened.
func printWinnersTrace(ended []sdktrace.ReadOnlySpan, table string) {
	var winner sdktrace.ReadOnlySpan
	for _, s := range ended {
		if s.Name() == "asyncevent.process" && value(s.Attributes(), "asyncevent.outcome") == "SUCCEEDED" {
			winner = s
		}
	}
	var trace []sdktrace.ReadOnlySpan
	for _, s := range ended {
		if s.SpanContext().TraceID() == winner.SpanContext().TraceID() {
			trace = append(trace, s)
		}
	}
	slices.SortFunc(trace, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	var walk func(parent sdktrace.ReadOnlySpan, depth int)
	walk = func(parent sdktrace.ReadOnlySpan, depth int) {
		for _, s := range trace {
			if (parent == nil && s.Parent().IsValid()) || (parent != nil && s.Parent().SpanID() != parent.SpanContext().SpanID()) {
				continue
			}
			line := strings.Replace(s.Name(), table, "AsyncEventTable", 1)
			if row := value(s.Attributes(), "asyncevent.row"); row != "" {
				line += " (" + row + ")"
			}
			if outcome := value(s.Attributes(), "asyncevent.outcome"); outcome != "" {
				line += " [" + outcome + "]"
			}
			fmt.Println(strings.Repeat("  ", depth) + line)
			walk(s, depth+1)
		}
	}
	walk(nil, 0)
}

// printMetrics prints three of the metrics, summed by the attributes that matter here.
func printMetrics(rm metricdata.ResourceMetrics) {
	var lines []string
	for _, m := range rm.ScopeMetrics[0].Metrics {
		var parts []string
		switch data := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, p := range data.DataPoints {
				switch m.Name {
				case "asyncevent.participations":
					parts = append(parts, fmt.Sprintf("%s %d", value(p.Attributes.ToSlice(), "asyncevent.participation.outcome"), p.Value))
				case "asyncevent.outcomes":
					parts = append(parts, fmt.Sprintf("%s/%s %d", value(p.Attributes.ToSlice(), "asyncevent.outcome"), value(p.Attributes.ToSlice(), "asyncevent.result_code"), p.Value))
				}
			}
		case metricdata.Gauge[int64]:
			for _, p := range data.DataPoints {
				parts = append(parts, fmt.Sprint(p.Value))
			}
		}
		if len(parts) > 0 {
			slices.Sort(parts)
			lines = append(lines, m.Name+": "+strings.Join(parts, ", "))
		}
	}
	slices.Sort(lines)
	fmt.Println(strings.Join(lines, "\n"))
}

func value(attrs []attribute.KeyValue, key string) string {
	for _, kv := range attrs {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}
