package otelasyncevent_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/otelasyncevent"
	"github.com/asyncevent/asyncevent/queue"
)

func TestMain(m *testing.M) { asynceventtest.Main(m) }

// telemetry is an Observer on in-memory providers.
type telemetry struct {
	obs    *otelasyncevent.Observer
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
}

func newTelemetry(t *testing.T) telemetry {
	t.Helper()
	spans := tracetest.NewSpanRecorder()
	reader := sdkmetric.NewManualReader()
	obs, err := otelasyncevent.New(otelasyncevent.Options{
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)),
		MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
	})
	require.NoError(t, err)
	return telemetry{obs: obs, spans: spans, reader: reader}
}

// metrics collects the metrics by name.
func (tm telemetry) metrics(t *testing.T) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, tm.reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		assert.Equal(t, otelasyncevent.ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

// sum adds up the points of a counter whose attributes include every one of want.
func sum(t *testing.T, data metricdata.Aggregation, want ...attribute.KeyValue) int64 {
	t.Helper()
	if data == nil {
		return 0
	}
	s, ok := data.(metricdata.Sum[int64])
	require.True(t, ok, "%T is no int64 counter", data)
	var n int64
	for _, p := range s.DataPoints {
		if hasAll(p.Attributes, want) {
			n += p.Value
		}
	}
	return n
}

// count is the number of values a histogram recorded with every one of want.
func count(t *testing.T, data metricdata.Aggregation, want ...attribute.KeyValue) uint64 {
	t.Helper()
	h, ok := data.(metricdata.Histogram[float64])
	require.True(t, ok, "%T is no float64 histogram", data)
	var n uint64
	for _, p := range h.DataPoints {
		if hasAll(p.Attributes, want) {
			n += p.Count
		}
	}
	return n
}

func hasAll(set attribute.Set, want []attribute.KeyValue) bool {
	for _, kv := range want {
		if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// waitFinal polls the event's statistics until n requests are final.
func waitFinal(t *testing.T, c *asyncevent.Client, eventID string, n int) *asyncevent.EventStats {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st, err := c.EventStats(context.Background(), eventID)
		require.NoError(t, err)
		final := st.ByStatus[asyncevent.StatusSucceeded] + st.ByStatus[asyncevent.StatusRejected] + st.ByStatus[asyncevent.StatusFailedFinal]
		if final >= n {
			return st
		}
		require.True(t, time.Now().Before(deadline), "%d of %d requests final: %v", final, n, st.ByStatus)
		time.Sleep(100 * time.Millisecond)
	}
}

// TestOneClickIsOneTraceAcrossSQS sends one click through SQS (fauxqs) to a worker:
// its ingest and its processing are one trace, the processing a child of the send,
// each DynamoDB call a child of the span that made it.
func TestOneClickIsOneTraceAcrossSQS(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tm := newTelemetry(t)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Observer: tm.obs})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "drop", EventType: asyncevent.FirstCome, CapacityTotal: 1})
	require.NoError(t, err)
	q := asynceventtest.NewSQSQueue(t, asynceventtest.SQSQueueOptions{})

	p, err := c.Submit(ctx, q, "drop", "ann")
	require.NoError(t, err)
	w, err := asyncevent.NewWorker(c, q, asyncevent.WorkerOptions{WaitTime: time.Second})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	waitFinal(t, c, "drop", 1)
	require.NoError(t, w.Stop(ctx))

	var submit sdktrace.ReadOnlySpan
	for _, s := range tm.spans.Ended() {
		if s.Name() == "asyncevent.submit" {
			require.Nil(t, submit, "one Submit, one span")
			submit = s
		}
	}
	require.NotNil(t, submit)
	assert.False(t, submit.Parent().IsValid(), "Submit is the root")
	assert.Equal(t, "drop", attr(submit, "asyncevent.event.id"))
	assert.Equal(t, p.RequestID, attr(submit, "asyncevent.request.id"))
	assert.Equal(t, "new", attr(submit, "asyncevent.participation.outcome"))

	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	var trail []sdktrace.ReadOnlySpan
	for _, s := range tm.spans.Ended() {
		if s.SpanContext().TraceID() == submit.SpanContext().TraceID() {
			byID[s.SpanContext().SpanID()] = s
			trail = append(trail, s)
		}
	}
	// children lists the names (with the rows written) of the spans whose parent is s.
	children := func(s sdktrace.ReadOnlySpan) []string {
		var out []string
		for _, c := range trail {
			if c.Parent().SpanID() == s.SpanContext().SpanID() {
				name := c.Name()
				if row := attr(c, "asyncevent.row"); row != "" {
					name += " (" + row + ")"
				}
				out = append(out, name)
			}
		}
		return out
	}
	table := c.TableName()
	assert.ElementsMatch(t, []string{
		"GetItem " + table, // the event's CONFIG, then cached by the client
		"PutItem " + table + " (participate)",
		"PutItem " + table + " (create request)",
		"asyncevent.send",
		"UpdateItem " + table + " (mark queued)",
	}, children(submit))

	var send, process sdktrace.ReadOnlySpan
	for _, s := range trail {
		switch s.Name() {
		case "asyncevent.send":
			send = s
		case "asyncevent.process":
			require.Nil(t, process, "one delivery, one processing span")
			process = s
		}
	}
	require.NotNil(t, send)
	require.NotNil(t, process, "the processing span is in the click's trace")
	assert.Equal(t, trace.SpanKindProducer, send.SpanKind())
	assert.Equal(t, trace.SpanKindConsumer, process.SpanKind())
	assert.Equal(t, send.SpanContext().SpanID(), process.Parent().SpanID(), "processing is a child of the send")
	assert.True(t, process.Parent().IsRemote(), "its parent came through the queue")
	assert.Equal(t, "SUCCEEDED", attr(process, "asyncevent.outcome"))
	assert.Equal(t, "SUCCESS", attr(process, "asyncevent.result_code"))
	assert.Equal(t, p.RequestID, attr(process, "asyncevent.request.id"))
	assert.Equal(t, []string{
		"UpdateItem " + table + " (first-come capacity)",
		"UpdateItem " + table + " (first-come seat bound)",
	}, children(process))

	for _, s := range trail {
		if s.SpanKind() != trace.SpanKindClient {
			continue
		}
		assert.Equal(t, "aws.dynamodb", attr(s, "db.system.name"), s.Name())
		assert.Equal(t, `["`+table+`"]`, attr(s, "aws.dynamodb.table_names"), s.Name())
		assert.NotEmpty(t, attr(s, "db.operation.name"), s.Name())
		assert.Equal(t, codes.Unset, s.Status().Code, s.Name())
		_, ok := byID[s.Parent().SpanID()]
		assert.True(t, ok, "%s has its parent in the trace", s.Name())
	}
}

// TestMetricsMatchEventStats runs a small spike with duplicate clicks and checks the
// counters against the event's statistics.
func TestMetricsMatchEventStats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tm := newTelemetry(t)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Observer: tm.obs})
	tm.obs.WatchSeats(c)
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "spike", EventType: asyncevent.FirstCome, CapacityTotal: 10})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	w, err := asyncevent.NewWorker(c, q, asyncevent.WorkerOptions{Concurrency: 4, WaitTime: time.Second})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))

	const users, twice = 50, 15
	var wg sync.WaitGroup
	for i := range users {
		clicks := 1
		if i < twice {
			clicks = 2
		}
		for range clicks {
			wg.Go(func() {
				_, err := c.Submit(ctx, q, "spike", fmt.Sprintf("user-%02d", i))
				assert.NoError(t, err)
			})
		}
	}
	wg.Wait()
	_, err = c.Submit(ctx, q, "no-such-event", "user-00")
	require.ErrorIs(t, err, asyncevent.ErrEventNotFound)

	st := waitFinal(t, c, "spike", users)
	require.NoError(t, w.Stop(ctx))
	before := len(tm.spans.Ended())
	m := tm.metrics(t)
	assert.Len(t, tm.spans.Ended(), before, "the seats gauge's reads make no spans")

	event := attribute.String("asyncevent.event.id", "spike")
	participations := m["asyncevent.participations"]
	assert.Equal(t, int64(st.Requests), sum(t, participations, event, attribute.String("asyncevent.participation.outcome", "new")))
	assert.Equal(t, int64(users), int64(st.Requests))
	assert.Equal(t, int64(twice), sum(t, participations, event, attribute.String("asyncevent.participation.outcome", "duplicate")))
	assert.Equal(t, int64(1), sum(t, participations,
		attribute.String("asyncevent.event.id", "no-such-event"),
		attribute.String("asyncevent.participation.outcome", "refused"),
		attribute.String("asyncevent.participation.refusal", "event_not_found")))
	assert.Equal(t, uint64(users+twice), count(t, m["asyncevent.submit.duration"], event))

	outcomes := m["asyncevent.outcomes"]
	for code, n := range st.ByResultCode {
		got := sum(t, outcomes, event, attribute.String("asyncevent.outcome", "SUCCEEDED"), attribute.String("asyncevent.result_code", string(code))) +
			sum(t, outcomes, event, attribute.String("asyncevent.outcome", "REJECTED"), attribute.String("asyncevent.result_code", string(code)))
		assert.Equal(t, int64(n), got, "result code %s", code)
	}
	assert.Equal(t, 10, st.ByResultCode[asyncevent.ResultSuccess])
	assert.Equal(t, int64(users), sum(t, outcomes, event), "one outcome a message: no retry in this run")
	assert.Equal(t, uint64(users), count(t, m["asyncevent.process.duration"], event))
	assert.Equal(t, uint64(st.QueueWait.Count), count(t, m["asyncevent.queue.wait.duration"], event), "every message once")
	assert.Zero(t, sum(t, m["asyncevent.messages.dead_lettered"]))
	assert.Zero(t, sum(t, m["asyncevent.dynamodb.throttles"]))
	assert.NotZero(t, count(t, m["db.client.operation.duration"], attribute.String("db.operation.name", "TransactWriteItems")))

	seats, ok := m["asyncevent.event.seats.remaining"].(metricdata.Gauge[int64])
	require.True(t, ok, "seats gauge: %T", m["asyncevent.event.seats.remaining"])
	require.Len(t, seats.DataPoints, 1, "one FIRST_COME event seen; the unknown one has no capacity")
	assert.Equal(t, st.CapacityRemaining, seats.DataPoints[0].Value)
	assert.True(t, hasAll(seats.DataPoints[0].Attributes, []attribute.KeyValue{event}))
}

// TestDeadLetteredCounter ends a request on its last receive: the message is counted
// as dead-lettered.
func TestDeadLetteredCounter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tm := newTelemetry(t)
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Observer: tm.obs})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "dl", EventType: asyncevent.FirstCome, CapacityTotal: 1})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	_, err = c.Submit(ctx, q, "dl", "ann")
	require.NoError(t, err)
	ds, err := q.Receive(ctx, 1, time.Second, time.Minute)
	require.NoError(t, err)
	require.Len(t, ds, 1)

	var seen []asyncevent.Outcome
	p := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{
		MaxReceives: 1,
		Handler: asyncevent.HandlerFunc(func(context.Context, asyncevent.Message) error {
			return errors.New("the service's check is down")
		}),
		OnOutcome: func(o asyncevent.Outcome) { seen = append(seen, o) },
	})
	o, done, _ := p.ProcessOne(ctx, ds[0], time.Minute, nil)
	assert.False(t, done)
	assert.Equal(t, asyncevent.OutcomeDeadLetter, o.Kind)
	require.Len(t, seen, 1, "OnOutcome works beside the Observer")
	assert.Equal(t, asyncevent.OutcomeDeadLetter, seen[0].Kind)

	m := tm.metrics(t)
	event := attribute.String("asyncevent.event.id", "dl")
	assert.Equal(t, int64(1), sum(t, m["asyncevent.messages.dead_lettered"], event))
	assert.Equal(t, int64(1), sum(t, m["asyncevent.outcomes"], event,
		attribute.String("asyncevent.outcome", "DEAD_LETTER"), attribute.String("asyncevent.result_code", "FAILED_WORKER")))
	var process sdktrace.ReadOnlySpan
	for _, s := range tm.spans.Ended() {
		if s.Name() == "asyncevent.process" {
			process = s
		}
	}
	require.NotNil(t, process)
	assert.Equal(t, codes.Error, process.Status().Code)
}

// TestDynamoDBRefusals feeds the DynamoDB hook the errors DynamoDB answers: throttles
// and transaction conflicts are counted, a failed condition is no error.
func TestDynamoDBRefusals(t *testing.T) {
	t.Parallel()
	tm := newTelemetry(t)
	call := asyncevent.DynamoDBCall{Operation: "TransactWriteItems", Table: "T", Row: "lottery result (win) + status log"}
	cancelled := func(codes ...string) error {
		reasons := make([]types.CancellationReason, len(codes))
		for i, c := range codes {
			reasons[i] = types.CancellationReason{Code: aws.String(c)}
		}
		return &types.TransactionCanceledException{Message: aws.String("cancelled"), CancellationReasons: reasons}
	}
	for _, err := range []error{
		&types.ProvisionedThroughputExceededException{Message: aws.String("slow down")},
		cancelled("None", "ThrottlingError"),
		cancelled("TransactionConflict", "None"),
		&types.TransactionConflictException{Message: aws.String("conflict")},
		cancelled("ConditionalCheckFailed", "None"),
		nil,
	} {
		tm.obs.DynamoDB(context.Background(), call, func(context.Context) error { return err })
	}
	m := tm.metrics(t)
	op := attribute.String("db.operation.name", "TransactWriteItems")
	assert.Equal(t, int64(2), sum(t, m["asyncevent.dynamodb.throttles"], op, attribute.String("asyncevent.row", call.Row)))
	assert.Equal(t, int64(1), sum(t, m["asyncevent.dynamodb.throttles"], attribute.String("error.type", "ProvisionedThroughputExceededException")))
	assert.Equal(t, int64(2), sum(t, m["asyncevent.dynamodb.transaction_conflicts"], op))
	assert.Equal(t, uint64(6), count(t, m["db.client.operation.duration"], op, attribute.String("db.system.name", "aws.dynamodb")))

	spans := tm.spans.Ended()
	require.Len(t, spans, 6)
	for i, want := range []codes.Code{codes.Error, codes.Error, codes.Error, codes.Error, codes.Unset, codes.Unset} {
		assert.Equal(t, want, spans[i].Status().Code, "call %d", i)
		assert.Equal(t, "TransactWriteItems T", spans[i].Name())
	}
	assert.Equal(t, "true", attr(spans[4], "asyncevent.condition_failed"))
}

// TestSubmitRefusals names the reasons Submit refuses a click.
func TestSubmitRefusals(t *testing.T) {
	t.Parallel()
	tm := newTelemetry(t)
	for _, err := range []error{
		fmt.Errorf("%w: sale", asyncevent.ErrEventClosed),
		fmt.Errorf("%w: req-1", asyncevent.ErrEnqueueFailed),
		fmt.Errorf("mark queued: %w", asyncevent.ErrThrottled),
		errors.New("something else"),
	} {
		tm.obs.Submit(context.Background(), "sale", "ann", func(context.Context) (asyncevent.Participation, error) {
			return asyncevent.Participation{}, err
		})
	}
	m := tm.metrics(t)
	for _, reason := range []string{"event_closed", "enqueue_failed", "throttled", "error"} {
		assert.Equal(t, int64(1), sum(t, m["asyncevent.participations"],
			attribute.String("asyncevent.participation.outcome", "refused"),
			attribute.String("asyncevent.participation.refusal", reason)), reason)
	}
	spans := tm.spans.Ended()
	require.Len(t, spans, 4)
	assert.Equal(t, codes.Unset, spans[0].Status().Code, "a closed event is an answer, not a failure")
	assert.Equal(t, codes.Error, spans[1].Status().Code)
}

// TestObserverThatSkipsNext: the work runs even when an observer does not call it.
func TestObserverThatSkipsNext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := asynceventtest.NewTableWith(t, asyncevent.Options{Observer: skipping{}})
	_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: "e", EventType: asyncevent.FirstCome, CapacityTotal: 1})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	p, err := c.Submit(ctx, q, "e", "ann")
	require.NoError(t, err)
	assert.False(t, p.Duplicate)
	ds, err := q.Receive(ctx, 1, time.Second, time.Minute)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	o, done, _ := asyncevent.NewProcessor(c, asyncevent.ProcessOptions{}).ProcessOne(ctx, ds[0], time.Minute, nil)
	assert.True(t, done)
	assert.Equal(t, asyncevent.OutcomeSucceeded, o.Kind)
}

type skipping struct{}

func (skipping) Submit(context.Context, string, string, func(context.Context) (asyncevent.Participation, error)) {
}
func (skipping) Send(context.Context, queue.OutgoingMessage, func(context.Context, queue.OutgoingMessage) error) {
}
func (skipping) DynamoDB(context.Context, asyncevent.DynamoDBCall, func(context.Context) error) {}
func (skipping) Process(context.Context, queue.Delivery, func(context.Context) asyncevent.Outcome) {
}
