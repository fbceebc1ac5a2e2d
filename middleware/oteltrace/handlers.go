package oteltrace

import (
	"context"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/contrib/propagators/aws/xray"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/sqsonce/sqsonce/middleware/batch"
)

// SQS is batch.SQS(fn, opts), traced: the invocation's span, the batch's,
// and one span per record, linked to its producer, under which fn runs (see
// the package doc). It panics as batch.SQS does.
func SQS[T any](fn func(context.Context, events.SQSMessage) (T, error), opts batch.Options, o ...Option) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	c := newConfig(o)
	h := batch.SQS(sqsRecord(c, fn), opts)
	return func(ctx context.Context, ev events.SQSEvent) (resp events.SQSEventResponse, err error) {
		ctx, end := c.invocation(ctx, semconv.FaaSTriggerPubSub)
		defer func() { end(err) }()
		if !sampled(ctx) {
			return h(ctx, ev)
		}
		source := ""
		producers := make(map[string][]trace.Link, len(ev.Records))
		var links []trace.Link
		for i := range ev.Records {
			m := &ev.Records[i]
			q := lastField(m.EventSourceARN)
			if i == 0 {
				source = q
			} else if q != source {
				source = "multiple_sources"
			}
			l := producerLinks(m)
			producers[m.MessageId] = l
			links = append(links, l...)
		}
		attrs := []attribute.KeyValue{
			semconv.FaaSTriggerPubSub, semconv.MessagingSystemAWSSQS, semconv.MessagingOperationTypeProcess,
			semconv.MessagingOperationName("process"), semconv.MessagingBatchMessageCount(len(ev.Records)),
		}
		if source != "" && source != "multiple_sources" {
			attrs = append(attrs, semconv.MessagingDestinationName(source))
		}
		ctx, span := c.tracer.Start(context.WithValue(ctx, producersKey{}, producers), spanName(source),
			trace.WithSpanKind(trace.SpanKindConsumer), trace.WithLinks(links...), trace.WithAttributes(attrs...))
		defer func() {
			span.SetAttributes(attribute.Int("sqsonce.failed_records", len(resp.BatchItemFailures)))
			endSpan(span, err)
		}()
		return h(ctx, ev)
	}
}

// producersKey holds, in a batch's context, the links to each record's
// producer by message id, read once for the batch's span.
type producersKey struct{}

// sqsRecord runs fn under the record's span.
func sqsRecord[T any](c *config, fn func(context.Context, events.SQSMessage) (T, error)) func(context.Context, events.SQSMessage) (T, error) {
	return func(ctx context.Context, m events.SQSMessage) (T, error) {
		if !sampled(ctx) {
			return fn(ctx, m)
		}
		links, ok := ctx.Value(producersKey{}).(map[string][]trace.Link)[m.MessageId]
		if !ok {
			links = producerLinks(&m)
		}
		q := lastField(m.EventSourceARN)
		attrs := make([]attribute.KeyValue, 0, 12) // room for the guard's decision too
		attrs = append(attrs, sqsAttrs...)
		attrs = append(attrs, semconv.MessagingMessageID(m.MessageId))
		if q != "" {
			attrs = append(attrs, semconv.MessagingDestinationName(q))
		}
		ctx, span := c.tracer.Start(ctx, spanName(q), trace.WithSpanKind(trace.SpanKindConsumer),
			trace.WithLinks(links...), trace.WithAttributes(attrs...))
		defer func() {
			if p := recover(); p != nil {
				endSpan(span, &batch.PanicError{Value: p})
				panic(p)
			}
		}()
		v, err := fn(ctx, m)
		endSpan(span, err)
		return v, err
	}
}

// sqsAttrs are the attributes every SQS span has.
var sqsAttrs = []attribute.KeyValue{
	semconv.FaaSTriggerPubSub, semconv.MessagingSystemAWSSQS, semconv.MessagingOperationTypeProcess,
	semconv.MessagingOperationName("process"),
}

// run calls fn under span and ends it with fn's error; a panic ends it too,
// and goes on.
func run[T any](ctx context.Context, span trace.Span, fn func(context.Context) (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			endSpan(span, &batch.PanicError{Value: p})
			panic(p)
		}
		endSpan(span, err)
	}()
	return fn(ctx)
}

// producerLinks are the links to m's producers: the context in its
// AWSTraceHeader system attribute (X-Ray's format) and the one in its
// traceparent message attribute (W3C's), each when present and valid.
func producerLinks(m *events.SQSMessage) []trace.Link {
	var links []trace.Link
	if h := m.Attributes["AWSTraceHeader"]; h != "" {
		sc := trace.SpanContextFromContext(xray.Propagator{}.Extract(context.Background(), propagation.MapCarrier{xrayHeader: h}))
		if sc.IsValid() {
			links = append(links, trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("sqsonce.link", "AWSTraceHeader")}})
		}
	}
	if a, ok := m.MessageAttributes["traceparent"]; ok && a.StringValue != nil {
		carrier := propagation.MapCarrier{"traceparent": *a.StringValue}
		if s, ok := m.MessageAttributes["tracestate"]; ok && s.StringValue != nil {
			carrier["tracestate"] = *s.StringValue
		}
		sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier))
		if sc.IsValid() && (len(links) == 0 || sc.TraceID() != links[0].SpanContext.TraceID() || sc.SpanID() != links[0].SpanContext.SpanID()) {
			links = append(links, trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("sqsonce.link", "traceparent")}})
		}
	}
	return links
}

// Kinesis is batch.Kinesis(fn, opts), traced: the invocation's span and
// one span per record ("<stream> process"), under which fn runs.
func Kinesis[T any](fn func(context.Context, events.KinesisEventRecord) (T, error), opts batch.StreamOptions, o ...Option) func(context.Context, events.KinesisEvent) (events.KinesisEventResponse, error) {
	c := newConfig(o)
	h := batch.Kinesis(func(ctx context.Context, r events.KinesisEventRecord) (T, error) {
		return streamRecord(ctx, c, r.EventSourceArn, r.EventID, semconv.FaaSTriggerPubSub, func(ctx context.Context) (T, error) { return fn(ctx, r) })
	}, opts)
	return func(ctx context.Context, ev events.KinesisEvent) (resp events.KinesisEventResponse, err error) {
		ctx, end := c.invocation(ctx, semconv.FaaSTriggerPubSub)
		defer func() { end(err) }()
		return h(ctx, ev)
	}
}

// DynamoDBStream is batch.DynamoDBStream(fn, opts), traced as Kinesis is.
func DynamoDBStream[T any](fn func(context.Context, events.DynamoDBEventRecord) (T, error), opts batch.StreamOptions, o ...Option) func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	c := newConfig(o)
	h := batch.DynamoDBStream(func(ctx context.Context, r events.DynamoDBEventRecord) (T, error) {
		return streamRecord(ctx, c, tableOf(r.EventSourceArn), r.EventID, semconv.FaaSTriggerDatasource, func(ctx context.Context) (T, error) { return fn(ctx, r) })
	}, opts)
	return func(ctx context.Context, ev events.DynamoDBEvent) (resp events.DynamoDBEventResponse, err error) {
		ctx, end := c.invocation(ctx, semconv.FaaSTriggerDatasource)
		defer func() { end(err) }()
		return h(ctx, ev)
	}
}

// streamRecord runs fn under a stream record's span.
func streamRecord[T any](ctx context.Context, c *config, arn, id string, trigger attribute.KeyValue, fn func(context.Context) (T, error)) (T, error) {
	if !sampled(ctx) {
		return fn(ctx)
	}
	name := lastField(arn)
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	attrs := []attribute.KeyValue{trigger, semconv.MessagingOperationTypeProcess, semconv.MessagingOperationName("process"), semconv.MessagingMessageID(id)}
	if name != "" {
		attrs = append(attrs, semconv.MessagingDestinationName(name))
	}
	ctx, span := c.tracer.Start(ctx, spanName(name), trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...))
	return run(ctx, span, fn)
}

// Wrap returns fn traced, for an input that is neither an SQS message nor
// a stream record (an API Gateway request, an EventBridge event, a type of
// your own): each call gets a span, named name, on which the guard's
// decision is written. As a Lambda handler the span is the invocation's
// (SERVER, under Lambda's trace context); called under a span of this
// process, it is a child of that span.
func Wrap[In, T any](name string, fn func(context.Context, In) (T, error), o ...Option) func(context.Context, In) (T, error) {
	c := newConfig(o)
	return func(ctx context.Context, in In) (v T, err error) {
		if sc := trace.SpanContextFromContext(ctx); !sc.IsValid() || sc.IsRemote() {
			ctx, end := c.invocation(ctx, semconv.FaaSTriggerOther)
			defer func() { end(err) }()
			trace.SpanFromContext(ctx).SetName(name)
			return fn(ctx, in)
		}
		if !sampled(ctx) {
			return fn(ctx, in)
		}
		ctx, span := c.tracer.Start(ctx, name)
		return run(ctx, span, func(ctx context.Context) (T, error) { return fn(ctx, in) })
	}
}

// lastField is what follows the last ":" of an ARN: an SQS queue's name.
func lastField(arn string) string {
	return arn[strings.LastIndexByte(arn, ':')+1:]
}

// tableOf is the table of a DynamoDB stream's ARN
// (arn:aws:dynamodb:region:account:table/NAME/stream/LABEL).
func tableOf(arn string) string {
	if _, rest, ok := strings.Cut(arn, ":table/"); ok {
		name, _, _ := strings.Cut(rest, "/")
		return name
	}
	return ""
}

// spanName is the name of a span that processes messages of source.
func spanName(source string) string {
	if source == "" {
		return "process"
	}
	return source + " process"
}
