// Package otelasyncevent traces and measures asyncevent with OpenTelemetry: it
// implements asyncevent.Observer, so the core package depends on no telemetry
// library.
//
//	obs, err := otelasyncevent.New(otelasyncevent.Options{}) // the global providers
//	client, err := asyncevent.New(db, asyncevent.Options{Observer: obs})
//	obs.WatchSeats(client) // asyncevent.event.seats.remaining
//
// # Traces
//
// Client.Submit is a span (asyncevent.submit) whose children are its DynamoDB calls
// and the sending of its message (asyncevent.send, a producer span). The send span's
// context travels in the message's attributes as a W3C traceparent (Options.Propagator),
// on SQS as a String message attribute, so the processing of the message by a Worker,
// a Processor or the Lambda adapter (asyncevent.process, a consumer span) is a child of
// the send span: a click and its outcome are one trace. The processing's DynamoDB
// calls are its children. A DynamoDB call's span is named after its operation and the
// table ("UpdateItem AsyncEventTable", a client span) and carries the semantic
// conventions' db.system.name aws.dynamodb, db.operation.name, rpc.method and
// aws.dynamodb.table_names, and asyncevent.row, the rows of the access-pattern table
// it writes. A lost condition is an outcome of the library, not an error: its span
// carries asyncevent.condition_failed and no error status.
//
// # Metrics
//
// All under the meter "github.com/asyncevent/asyncevent/otelasyncevent":
//
//   - asyncevent.participations, a counter of {participation}: Submit's answers, by
//     asyncevent.participation.outcome (new, duplicate or refused) and, for a
//     refusal, asyncevent.participation.refusal (event_closed, event_not_open,
//     event_not_found, invalid_id, throttled, enqueue_failed, canceled, error).
//   - asyncevent.submit.duration, a histogram in s: Submit's latency, by the same
//     attributes.
//   - asyncevent.outcomes, a counter of {message}: what became of each message
//     processed, by asyncevent.outcome (an asyncevent.OutcomeKind) and
//     asyncevent.result_code.
//   - asyncevent.process.duration, a histogram in s: the processing of one message,
//     by asyncevent.outcome.
//   - asyncevent.queue.wait.duration, a histogram in s: from the queue's send time
//     of a message to the start of its first processing (queuedAt → startedAt).
//   - asyncevent.messages.dead_lettered, a counter of {message}: messages whose
//     request ended FAILED_FINAL on their last receive, which the queue moves to its
//     dead-letter queue (asyncevent.OutcomeDeadLetter).
//   - asyncevent.event.seats.remaining, a gauge of {seat}: a FIRST_COME event's
//     capacityRemaining (see WatchSeats).
//   - asyncevent.dynamodb.throttles, a counter of {call}: DynamoDB calls refused for
//     throughput after the SDK's retries (a write that the library sends again
//     counts at each attempt), by db.operation.name, asyncevent.row and error.type.
//   - asyncevent.dynamodb.transaction_conflicts, a counter of {call}: calls refused
//     because a transaction was under way on one of their items, by the same
//     attributes.
//   - db.client.operation.duration, a histogram in s: every DynamoDB call, by
//     db.system.name, db.operation.name and error.type.
//
// Every asyncevent metric but the DynamoDB ones carries asyncevent.event.id, so there
// is one series per event and attribute value. Request IDs are on spans only
// (asyncevent.request.id); user IDs are on none.
package otelasyncevent

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/queue"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/asyncevent/asyncevent/otelasyncevent"

// Options configures New. The zero value is valid.
type Options struct {
	// TracerProvider makes the spans. Default: otel.GetTracerProvider().
	TracerProvider trace.TracerProvider

	// MeterProvider makes the metrics. Default: otel.GetMeterProvider().
	MeterProvider metric.MeterProvider

	// Propagator writes the send span's context into a message's attributes and
	// reads it back for the processing span. Default: propagation.TraceContext{}
	// (W3C traceparent and tracestate).
	Propagator propagation.TextMapPropagator
}

// The attribute keys of this package.
const (
	keyEventID      = attribute.Key("asyncevent.event.id")
	keyRequestID    = attribute.Key("asyncevent.request.id")
	keyParticipated = attribute.Key("asyncevent.participation.outcome")
	keyRefusal      = attribute.Key("asyncevent.participation.refusal")
	keyOutcome      = attribute.Key("asyncevent.outcome")
	keyResultCode   = attribute.Key("asyncevent.result_code")
	keyReceiveCount = attribute.Key("asyncevent.receive_count")
	keyRow          = attribute.Key("asyncevent.row")
	keyLostCond     = attribute.Key("asyncevent.condition_failed")
)

// Observer is an asyncevent.Observer that makes OpenTelemetry spans and metrics; pass
// it in asyncevent.Options.Observer. It is safe for concurrent use.
type Observer struct {
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator

	participations metric.Int64Counter
	submitDuration metric.Float64Histogram
	outcomes       metric.Int64Counter
	processDur     metric.Float64Histogram
	queueWait      metric.Float64Histogram
	deadLettered   metric.Int64Counter
	throttles      metric.Int64Counter
	conflicts      metric.Int64Counter
	callDuration   metric.Float64Histogram

	seats *seatWatch
}

var _ asyncevent.Observer = (*Observer)(nil)

// New returns an Observer on opts' providers. Its only error is an instrument that the
// meter provider refuses.
func New(opts Options) (*Observer, error) {
	if opts.TracerProvider == nil {
		opts.TracerProvider = otel.GetTracerProvider()
	}
	if opts.MeterProvider == nil {
		opts.MeterProvider = otel.GetMeterProvider()
	}
	if opts.Propagator == nil {
		opts.Propagator = propagation.TraceContext{}
	}
	meter := opts.MeterProvider.Meter(ScopeName)
	o := &Observer{
		tracer:     opts.TracerProvider.Tracer(ScopeName),
		propagator: opts.Propagator,
		seats:      &seatWatch{events: map[string]*watchedEvent{}},
	}
	// Explicit buckets in seconds, from a DynamoDB call (milliseconds) to a queue
	// backed up for minutes.
	buckets := metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	histogram := func(name, desc string) metric.Float64Histogram {
		h, err := meter.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc), buckets)
		errs = append(errs, err)
		return h
	}
	o.participations = counter("asyncevent.participations", "{participation}", "Clicks answered by Submit: new, duplicate or refused.")
	o.submitDuration = histogram("asyncevent.submit.duration", "Duration of Submit.")
	o.outcomes = counter("asyncevent.outcomes", "{message}", "Messages processed, by what became of them.")
	o.processDur = histogram("asyncevent.process.duration", "Duration of the processing of one message.")
	o.queueWait = histogram("asyncevent.queue.wait.duration", "Time from a message's send to the start of its first processing.")
	o.deadLettered = counter("asyncevent.messages.dead_lettered", "{message}", "Messages ended FAILED_FINAL on their last receive, left for the dead-letter queue.")
	o.throttles = counter("asyncevent.dynamodb.throttles", "{call}", "DynamoDB calls refused for throughput after the SDK's retries.")
	o.conflicts = counter("asyncevent.dynamodb.transaction_conflicts", "{call}", "DynamoDB calls refused for a transaction under way on one of their items.")
	o.callDuration = histogram("db.client.operation.duration", "Duration of DynamoDB calls.")
	_, err := meter.Int64ObservableGauge("asyncevent.event.seats.remaining",
		metric.WithUnit("{seat}"), metric.WithDescription("Seats left of a FIRST_COME event (capacityRemaining)."),
		metric.WithInt64Callback(o.seats.observe))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return o, nil
}

// Submit implements asyncevent.Observer: the asyncevent.submit span and the
// participations metrics.
func (o *Observer) Submit(ctx context.Context, eventID, userID string, next func(context.Context) (asyncevent.Participation, error)) {
	began := time.Now()
	ctx, span := o.tracer.Start(ctx, "asyncevent.submit", trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(keyEventID.String(eventID)))
	defer span.End()
	p, err := next(ctx)
	o.seats.seen(eventID)

	attrs := []attribute.KeyValue{keyEventID.String(eventID)}
	switch refusal := refusalOf(err); {
	case err != nil:
		attrs = append(attrs, keyParticipated.String("refused"), keyRefusal.String(refusal))
		span.RecordError(err)
		if refusal != "event_closed" && refusal != "event_not_open" && refusal != "event_not_found" && refusal != "invalid_id" {
			span.SetStatus(codes.Error, err.Error())
		}
	case p.Duplicate:
		attrs = append(attrs, keyParticipated.String("duplicate"))
	default:
		attrs = append(attrs, keyParticipated.String("new"))
	}
	if p.RequestID != "" {
		span.SetAttributes(keyRequestID.String(p.RequestID))
	}
	span.SetAttributes(attrs[1:]...)
	set := metric.WithAttributeSet(attribute.NewSet(attrs...))
	o.participations.Add(ctx, 1, set)
	o.submitDuration.Record(ctx, time.Since(began).Seconds(), set)
}

// refusalOf names the reason of Submit's error.
func refusalOf(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, asyncevent.ErrEventClosed):
		return "event_closed"
	case errors.Is(err, asyncevent.ErrEventNotOpen):
		return "event_not_open"
	case errors.Is(err, asyncevent.ErrEventNotFound):
		return "event_not_found"
	case errors.Is(err, asyncevent.ErrInvalidID):
		return "invalid_id"
	case errors.Is(err, asyncevent.ErrThrottled):
		return "throttled"
	case errors.Is(err, asyncevent.ErrEnqueueFailed):
		return "enqueue_failed"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	}
	return "error"
}

// Send implements asyncevent.Observer: the asyncevent.send producer span, whose
// context it adds to the message's attributes.
func (o *Observer) Send(ctx context.Context, m queue.OutgoingMessage, next func(context.Context, queue.OutgoingMessage) error) {
	ctx, span := o.tracer.Start(ctx, "asyncevent.send", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(semconv.MessagingOperationTypeSend, semconv.MessagingOperationName("send")))
	defer span.End()
	attrs := make(map[string]string, len(m.Attributes)+2)
	for k, v := range m.Attributes {
		attrs[k] = v
	}
	o.propagator.Inject(ctx, propagation.MapCarrier(attrs))
	m.Attributes = attrs
	if err := next(ctx, m); err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
}

// Process implements asyncevent.Observer: the asyncevent.process consumer span, a
// child of the send span whose context the delivery's attributes carry (linked to the
// span of ctx, if any), and the processing metrics.
func (o *Observer) Process(ctx context.Context, d queue.Delivery, next func(context.Context) asyncevent.Outcome) {
	began := time.Now()
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
		semconv.MessagingOperationTypeProcess, semconv.MessagingOperationName("process"),
		semconv.MessagingMessageID(d.MessageID), keyReceiveCount.Int(d.ReceiveCount))}
	parent := ctx
	if len(d.Attributes) > 0 {
		sent := o.propagator.Extract(ctx, propagation.MapCarrier(d.Attributes))
		if sc := trace.SpanContextFromContext(sent); sc.IsValid() {
			parent = trace.ContextWithRemoteSpanContext(ctx, sc)
			if ambient := trace.SpanContextFromContext(ctx); ambient.IsValid() {
				opts = append(opts, trace.WithLinks(trace.Link{SpanContext: ambient}))
			}
		}
	}
	ctx, span := o.tracer.Start(parent, "asyncevent.process", opts...)
	defer span.End()
	wait := began.Sub(d.SentAt) // measured before the work, which it must not count
	out := next(ctx)
	o.seats.seen(out.EventID)

	attrs := []attribute.KeyValue{keyEventID.String(out.EventID), keyOutcome.String(string(out.Kind))}
	if out.ResultCode != "" {
		attrs = append(attrs, keyResultCode.String(string(out.ResultCode)))
	}
	span.SetAttributes(attrs...)
	if out.RequestID != "" {
		span.SetAttributes(keyRequestID.String(out.RequestID))
	}
	if out.Err != nil {
		span.RecordError(out.Err)
	}
	switch out.Kind {
	case asyncevent.OutcomeFailed, asyncevent.OutcomeDeadLetter, asyncevent.OutcomeMalformed, asyncevent.OutcomeRetry, asyncevent.OutcomeThrottled:
		msg := string(out.Kind)
		if out.Err != nil {
			msg = out.Err.Error()
		}
		span.SetStatus(codes.Error, msg)
	}
	set := metric.WithAttributeSet(attribute.NewSet(attrs...))
	o.outcomes.Add(ctx, 1, set)
	o.processDur.Record(ctx, time.Since(began).Seconds(), metric.WithAttributes(attrs[:2]...))
	if d.ReceiveCount <= 1 && !d.SentAt.IsZero() {
		o.queueWait.Record(ctx, max(wait, 0).Seconds(), metric.WithAttributes(attrs[0]))
	}
	if out.Kind == asyncevent.OutcomeDeadLetter {
		o.deadLettered.Add(ctx, 1, metric.WithAttributes(attrs[0]))
	}
}

// DynamoDB implements asyncevent.Observer: a client span per call, the calls'
// duration, and the throttles and transaction conflicts.
func (o *Observer) DynamoDB(ctx context.Context, call asyncevent.DynamoDBCall, next func(context.Context) error) {
	began := time.Now()
	attrs := []attribute.KeyValue{semconv.DBSystemNameAWSDynamoDB, semconv.DBOperationName(call.Operation)}
	var span trace.Span
	if !quiet(ctx) {
		spanAttrs := append([]attribute.KeyValue{semconv.RPCMethod(call.Operation), semconv.AWSDynamoDBTableNames(call.Table)}, attrs...)
		if call.Row != "" {
			spanAttrs = append(spanAttrs, keyRow.String(call.Row))
		}
		ctx, span = o.tracer.Start(ctx, call.Operation+" "+call.Table, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(spanAttrs...))
		defer span.End()
	}
	err := next(ctx)
	if err != nil {
		code := errorCode(err)
		attrs = append(attrs, semconv.ErrorTypeKey.String(code))
		throttle, conflict, lost := refusals(err)
		switch {
		case span == nil:
		case lost:
			span.SetAttributes(keyLostCond.Bool(true), semconv.ErrorTypeKey.String(code))
		default:
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
			span.SetAttributes(semconv.ErrorTypeKey.String(code))
		}
		refusal := metric.WithAttributes(semconv.DBOperationName(call.Operation), keyRow.String(call.Row), semconv.ErrorTypeKey.String(code))
		if throttle {
			o.throttles.Add(ctx, 1, refusal)
		}
		if conflict {
			o.conflicts.Add(ctx, 1, refusal)
		}
	}
	o.callDuration.Record(ctx, time.Since(began).Seconds(), metric.WithAttributes(attrs...))
}

// errorCode is the API error code of err ("ConditionalCheckFailedException"), or
// "_OTHER" as the semantic conventions ask when there is none.
func errorCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return "canceled"
	}
	return "_OTHER"
}

// refusals sorts a DynamoDB error: refused for throughput (on the table, an index or
// the account), refused for a transaction under way on an item, or a condition that
// failed, which the library takes as an outcome. A cancelled transaction can be
// several at once, one per item.
func refusals(err error) (throttle, conflict, conditionFailed bool) {
	var (
		pte *types.ProvisionedThroughputExceededException
		rle *types.RequestLimitExceeded
		thr *types.ThrottlingException
		tce *types.TransactionConflictException
		ccf *types.ConditionalCheckFailedException
		tx  *types.TransactionCanceledException
		api smithy.APIError
	)
	switch {
	case errors.As(err, &pte), errors.As(err, &rle), errors.As(err, &thr):
		return true, false, false
	case errors.As(err, &tce):
		return false, true, false
	case errors.As(err, &ccf):
		return false, false, true
	case errors.As(err, &tx):
		for _, r := range tx.CancellationReasons {
			switch aws.ToString(r.Code) {
			case "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded":
				throttle = true
			case "TransactionConflict":
				conflict = true
			case "ConditionalCheckFailed":
				conditionFailed = true
			}
		}
		return throttle, conflict, conditionFailed
	case errors.As(err, &api) && api.ErrorCode() == "ThrottlingException":
		return true, false, false
	}
	return false, false, false
}

// quietKey marks the context of the reads WatchSeats makes for the gauge: they get no
// span of their own, since they belong to no request.
type quietKey struct{}

func quiet(ctx context.Context) bool { return ctx.Value(quietKey{}) != nil }

// seatsWindow is how long an event stays on the seats gauge after this Observer last
// saw it in a Submit or a processed message.
const seatsWindow = 15 * time.Minute

// seatsMaxEvents bounds the events the gauge reads at each collection.
const seatsMaxEvents = 256

// seatWatch is what the seats gauge reads: the events seen lately, and the client to
// read their capacity with.
type seatWatch struct {
	client atomic.Pointer[asyncevent.Client]

	mu     sync.Mutex
	events map[string]*watchedEvent
}

type watchedEvent struct {
	lastSeen  time.Time
	notSeated bool // no capacity item: a LOTTERY event, or none at all
}

// WatchSeats makes the gauge asyncevent.event.seats.remaining read c's table: at each
// collection of the meter provider's readers, for every event this Observer saw in a
// Submit or a processed message during the last 15 minutes (at most 256), it calls
// c.GetCapacity, a strongly consistent GetItem of each capacity shard of the event (a
// FIRST_COME event's reads, about one read unit each; a LOTTERY event is read once and
// then left out). Those reads get no spans. Call it once, with the client that has
// this Observer in its options or with any client of the same table; until then the
// gauge reports nothing.
func (o *Observer) WatchSeats(c *asyncevent.Client) { o.seats.client.Store(c) }

// seen records that an event was met.
func (w *seatWatch) seen(eventID string) {
	if eventID == "" || w.client.Load() == nil {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if e, ok := w.events[eventID]; ok {
		e.lastSeen = now
		return
	}
	if len(w.events) >= seatsMaxEvents {
		w.forget(now.Add(-seatsWindow))
		if len(w.events) >= seatsMaxEvents {
			return
		}
	}
	w.events[eventID] = &watchedEvent{lastSeen: now}
}

// forget drops the events not seen since before. w.mu must be held.
func (w *seatWatch) forget(before time.Time) {
	for id, e := range w.events {
		if e.lastSeen.Before(before) {
			delete(w.events, id)
		}
	}
}

// observe is the gauge's callback.
func (w *seatWatch) observe(ctx context.Context, obs metric.Int64Observer) error {
	c := w.client.Load()
	if c == nil {
		return nil
	}
	w.mu.Lock()
	w.forget(time.Now().Add(-seatsWindow))
	var ids []string
	for id, e := range w.events {
		if !e.notSeated {
			ids = append(ids, id)
		}
	}
	w.mu.Unlock()

	ctx = context.WithValue(ctx, quietKey{}, true)
	var errs []error
	for _, id := range ids {
		capacity, err := c.GetCapacity(ctx, id)
		switch {
		case errors.Is(err, asyncevent.ErrNotFound):
			w.mu.Lock()
			if e, ok := w.events[id]; ok {
				e.notSeated = true
			}
			w.mu.Unlock()
		case err != nil:
			errs = append(errs, err)
		default:
			obs.Observe(capacity.CapacityRemaining, metric.WithAttributes(keyEventID.String(id)))
		}
	}
	return errors.Join(errs...)
}
