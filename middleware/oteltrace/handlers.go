package oteltrace

import (
	"cmp"
	"context"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/attribute"
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
	reserve := reserveOf(opts.Reserve)
	return func(ctx context.Context, ev events.SQSEvent) (resp events.SQSEventResponse, err error) {
		ctx, end := c.invocation(ctx, semconv.FaaSTriggerPubSub, reserve)
		defer finish(end, &err)
		if !sampled(ctx) {
			return h(ctx, ev)
		}
		st := &batchState{}
		// One backing array for every record's links: most have one.
		links := make([]trace.Link, 0, len(ev.Records))
		for i := range ev.Records {
			m := &ev.Records[i]
			q := lastField(m.EventSourceARN)
			if i == 0 {
				st.queue = q
			} else if q != st.queue {
				st.queue = "multiple_sources"
			}
			n := len(links)
			if links = appendProducerLinks(links, m); len(links) > n {
				if st.links == nil {
					st.links = make(map[string][]trace.Link, len(ev.Records))
				}
				st.links[m.MessageId] = links[n:len(links):len(links)]
			}
		}
		attrs := make([]attribute.KeyValue, 0, len(sqsAttrs)+2)
		attrs = append(attrs, sqsAttrs...)
		attrs = append(attrs, semconv.MessagingBatchMessageCount(len(ev.Records)))
		if st.queue != "" && st.queue != "multiple_sources" {
			attrs = append(attrs, semconv.MessagingDestinationName(st.queue))
		}
		st.name = c.spanName(st.queue)
		ctx, span := c.tracer.Start(context.WithValue(ctx, batchKey{}, st), st.name,
			consumerKind, trace.WithLinks(links...), trace.WithAttributes(attrs...))
		defer func() {
			if p := recover(); p != nil {
				endSpan(span, &batch.PanicError{Value: p})
				panic(p)
			}
			span.SetAttributes(attribute.Int("sqsonce.failed_records", len(resp.BatchItemFailures)))
			endSpan(span, err)
		}()
		return h(ctx, ev)
	}
}

// batchKey holds, in a batch's context, its *batchState.
type batchKey struct{}

// batchState is what a batch's span read of its records, for their spans:
// the links to each record's producers by message id (none for a record
// without), the queue and the span's name.
type batchState struct {
	links       map[string][]trace.Link
	queue, name string
}

// consumerKind and serverKind are the span kinds as options, made once.
var (
	consumerKind = trace.WithSpanKind(trace.SpanKindConsumer)
	serverKind   = trace.WithSpanKind(trace.SpanKindServer)
)

// sqsRecord runs fn under the record's span.
func sqsRecord[T any](c *config, fn func(context.Context, events.SQSMessage) (T, error)) func(context.Context, events.SQSMessage) (T, error) {
	return func(ctx context.Context, m events.SQSMessage) (T, error) {
		if !sampled(ctx) {
			return fn(ctx, m)
		}
		q := lastField(m.EventSourceARN)
		var links []trace.Link
		var name string
		if st, ok := ctx.Value(batchKey{}).(*batchState); ok {
			links = st.links[m.MessageId]
			if q == st.queue {
				name = st.name
			}
		} else {
			links = appendProducerLinks(nil, &m)
		}
		if name == "" {
			name = c.spanName(q)
		}
		attrs := make([]attribute.KeyValue, 0, len(sqsAttrs)+2)
		attrs = append(attrs, sqsAttrs...)
		attrs = append(attrs, semconv.MessagingMessageID(m.MessageId))
		if q != "" {
			attrs = append(attrs, semconv.MessagingDestinationName(q))
		}
		var span trace.Span
		if len(links) > 0 {
			ctx, span = c.tracer.Start(ctx, name, consumerKind, trace.WithLinks(links...), trace.WithAttributes(attrs...))
		} else {
			ctx, span = c.tracer.Start(ctx, name, consumerKind, trace.WithAttributes(attrs...))
		}
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

// finish calls end with *err, or with a *batch.PanicError when the
// handler is panicking, as Lambda then fails the invocation; the panic
// goes on. Call it deferred, directly.
func finish(end func(error), err *error) {
	if p := recover(); p != nil {
		end(&batch.PanicError{Value: p})
		panic(p)
	}
	end(*err)
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

// Kinesis is batch.Kinesis(fn, opts), traced: the invocation's span and
// one span per record ("<stream> process"), under which fn runs.
func Kinesis[T any](fn func(context.Context, events.KinesisEventRecord) (T, error), opts batch.StreamOptions, o ...Option) func(context.Context, events.KinesisEvent) (events.KinesisEventResponse, error) {
	c := newConfig(o)
	h := batch.Kinesis(func(ctx context.Context, r events.KinesisEventRecord) (T, error) {
		return streamRecord(ctx, c, r.EventSourceArn, r.EventID, semconv.FaaSTriggerPubSub, func(ctx context.Context) (T, error) { return fn(ctx, r) })
	}, opts)
	reserve := reserveOf(opts.Reserve)
	return func(ctx context.Context, ev events.KinesisEvent) (resp events.KinesisEventResponse, err error) {
		ctx, end := c.invocation(ctx, semconv.FaaSTriggerPubSub, reserve)
		defer finish(end, &err)
		return h(ctx, ev)
	}
}

// DynamoDBStream is batch.DynamoDBStream(fn, opts), traced as Kinesis is.
func DynamoDBStream[T any](fn func(context.Context, events.DynamoDBEventRecord) (T, error), opts batch.StreamOptions, o ...Option) func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	c := newConfig(o)
	h := batch.DynamoDBStream(func(ctx context.Context, r events.DynamoDBEventRecord) (T, error) {
		return streamRecord(ctx, c, tableOf(r.EventSourceArn), r.EventID, semconv.FaaSTriggerDatasource, func(ctx context.Context) (T, error) { return fn(ctx, r) })
	}, opts)
	reserve := reserveOf(opts.Reserve)
	return func(ctx context.Context, ev events.DynamoDBEvent) (resp events.DynamoDBEventResponse, err error) {
		ctx, end := c.invocation(ctx, semconv.FaaSTriggerDatasource, reserve)
		defer finish(end, &err)
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
	ctx, span := c.tracer.Start(ctx, c.spanName(name), consumerKind, trace.WithAttributes(attrs...))
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
			ctx, end := c.invocation(ctx, semconv.FaaSTriggerOther, batch.DefaultReserve)
			defer finish(end, &err)
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

// reserveOf is the time batch keeps free before the deadline for a
// handler whose options give reserve: batch's default when zero.
func reserveOf(reserve time.Duration) time.Duration { return cmp.Or(reserve, batch.DefaultReserve) }
