package oteltrace

import (
	"context"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"go.opentelemetry.io/contrib/propagators/aws/xray"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// The trace header Lambda gives an invocation: aws-lambda-go puts it in the
// context under this key and in the environment variable.
const (
	lambdaTraceKey = "x-amzn-trace-id"
	lambdaTraceEnv = "_X_AMZN_TRACE_ID"
	xrayHeader     = "X-Amzn-Trace-Id"
)

// invocation starts the invocation's span, a child of the trace context
// Lambda gave it, unless ctx holds a span of this process already (an
// outer instrumentation's), which then stands for it. end ends the span it
// started, with err's class when err is not nil, and flushes the provider.
func (c *config) invocation(ctx context.Context, trigger attribute.KeyValue) (_ context.Context, end func(error)) {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() && !sc.IsRemote() {
		return ctx, func(error) {}
	}
	if !trace.SpanContextFromContext(ctx).IsValid() {
		h, _ := ctx.Value(lambdaTraceKey).(string)
		if h == "" {
			h = os.Getenv(lambdaTraceEnv)
		}
		if h != "" {
			ctx = xray.Propagator{}.Extract(ctx, propagation.MapCarrier{xrayHeader: h})
		}
	}
	attrs := []attribute.KeyValue{semconv.CloudProviderAWS, trigger}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		attrs = append(attrs, semconv.FaaSInvocationID(lc.AwsRequestID))
		if arn := lc.InvokedFunctionArn; arn != "" {
			attrs = append(attrs, semconv.AWSLambdaInvokedARN(arn))
			if f := strings.Split(arn, ":"); len(f) > 4 && f[4] != "" {
				attrs = append(attrs, semconv.CloudAccountID(f[4]))
			}
		}
	}
	name := lambdacontext.FunctionName
	if name == "" {
		name = "lambda"
	} else {
		attrs = append(attrs, semconv.FaaSName(name))
	}
	ctx, span := c.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	return ctx, func(err error) {
		endSpan(span, err)
		if c.flush != nil && span.SpanContext().IsSampled() {
			c.flushNow(ctx)
		}
	}
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
