package oteltrace

import (
	"context"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// The trace header Lambda gives an invocation: aws-lambda-go puts it in the
// context under this key and in the environment variable.
const (
	lambdaTraceKey = "x-amzn-trace-id"
	lambdaTraceEnv = "_X_AMZN_TRACE_ID"
)

// invocation starts the invocation's span, a child of the trace context
// Lambda gave it, unless ctx holds a span of this process already (an
// outer instrumentation's), which then stands for it. end ends the span it
// started, with err's class when err is not nil, and flushes the provider.
// Under a trace context that was not sampled it starts nothing.
func (c *config) invocation(ctx context.Context, trigger attribute.KeyValue) (_ context.Context, end func(error)) {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() && !sc.IsRemote() {
		return ctx, func(error) {}
	}
	if !trace.SpanContextFromContext(ctx).IsValid() {
		h, _ := ctx.Value(lambdaTraceKey).(string)
		if h == "" {
			h = os.Getenv(lambdaTraceEnv)
		}
		if sc, ok := parseXRay(h); ok {
			ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
		}
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() && !sc.IsSampled() {
		// Lambda's trace context was not sampled: nothing below records,
		// and the context carries the trace on as it is.
		return ctx, func(error) {}
	}
	attrs := make([]attribute.KeyValue, 0, 6)
	attrs = append(attrs, semconv.CloudProviderAWS, trigger)
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		attrs = append(attrs, semconv.FaaSInvocationID(lc.AwsRequestID))
		if arn := lc.InvokedFunctionArn; arn != "" {
			attrs = append(attrs, semconv.AWSLambdaInvokedARN(arn))
			if account := arnField(arn, 4); account != "" {
				attrs = append(attrs, semconv.CloudAccountID(account))
			}
		}
	}
	name := lambdacontext.FunctionName
	if name == "" {
		name = "lambda"
	} else {
		attrs = append(attrs, semconv.FaaSName(name))
	}
	ctx, span := c.tracer.Start(ctx, name, serverKind, trace.WithAttributes(attrs...))
	return ctx, func(err error) {
		endSpan(span, err)
		if c.flush != nil && span.SpanContext().IsSampled() {
			c.flushNow(ctx)
		}
	}
}

// arnField is the field i (from 0) of arn's ":"-separated fields, "" when
// it has fewer.
func arnField(arn string, i int) string {
	for ; i > 0; i-- {
		j := strings.IndexByte(arn, ':')
		if j < 0 {
			return ""
		}
		arn = arn[j+1:]
	}
	f, _, _ := strings.Cut(arn, ":")
	return f
}

// flushNow exports the spans the provider holds, before Lambda freezes the
// environment, within the invocation's deadline.
func (c *config) flushNow(ctx context.Context) {
	fctx, cancel := context.WithoutCancel(ctx), context.CancelFunc(func() {})
	if d, ok := ctx.Deadline(); ok {
		fctx, cancel = context.WithDeadline(fctx, d)
	}
	defer cancel()
	if err := c.flush(fctx); err != nil {
		otel.Handle(err)
	}
}

// sampled reports whether spans made under ctx can record: false when ctx
// holds a span context that was not sampled, and nothing below it needs a
// span.
func sampled(ctx context.Context) bool {
	sc := trace.SpanContextFromContext(ctx)
	return !sc.IsValid() || sc.IsSampled()
}

// endSpan ends span, with an error status and err's class when err is not
// nil: never err's text.
func endSpan(span trace.Span, err error) {
	if err != nil {
		class := errorClass(err)
		span.SetAttributes(semconv.ErrorTypeKey.String(class))
		span.SetStatus(codes.Error, class)
	}
	span.End()
}
