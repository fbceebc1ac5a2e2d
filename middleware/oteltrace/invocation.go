package oteltrace

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/sqsonce/sqsonce/middleware/batch"
)

// The trace header Lambda gives an invocation: aws-lambda-go puts it in the
// context under this key, and in the environment variable when it runs one
// invocation at a time.
const (
	lambdaTraceKey = "x-amzn-trace-id"
	lambdaTraceEnv = "_X_AMZN_TRACE_ID"
)

// invocation starts the invocation's span, a child of the trace context
// Lambda gave it, unless ctx holds a span of this process already (an
// outer instrumentation's), which then stands for it. end ends the span it
// started, with err's class when err is not nil, and flushes the provider
// (under an outer span too) while more than reserve/2 is left before ctx's
// deadline (see flushNow): reserve is the handler's, the time batch keeps
// before the deadline to return the response. Under a trace context that
// was not sampled it starts and flushes nothing.
func (c *config) invocation(ctx context.Context, trigger attribute.KeyValue, reserve time.Duration) (_ context.Context, end func(error)) {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() && !sc.IsRemote() {
		f := c.flusher()
		if f == nil || !sc.IsSampled() {
			return ctx, func(error) {}
		}
		// The outer span ends after this returns: its instrumentation
		// flushes it (otellambda's WithFlusher). The spans made here are
		// flushed now, as Lambda may freeze the environment right after.
		// (outer, never reassigned, keeps ctx off the heap on every path.)
		outer := ctx
		return ctx, func(error) { flushNow(outer, f, reserve) }
	}
	if !trace.SpanContextFromContext(ctx).IsValid() {
		// aws-lambda-go puts the invocation's header in the context, empty
		// when Lambda sent none. The environment variable stands in only
		// for a context without it (a caller other than aws-lambda-go), and
		// only where one invocation runs at a time: with several, it is
		// not set per invocation, and another's may be there.
		h, set := ctx.Value(lambdaTraceKey).(string)
		if !set && lambdacontext.MaxConcurrency() <= 1 {
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
		if span.SpanContext().IsSampled() {
			if f := c.flusher(); f != nil {
				flushNow(ctx, f, reserve)
			}
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

// errFlushSkipped is reported when no flush could start: the records ran
// past the moment it must end.
var errFlushSkipped = fmt.Errorf("oteltrace: flush skipped: %w", batch.ErrReserveReached)

// flushNow exports the spans the provider holds, before Lambda freezes the
// environment, until reserve/2 before ctx's deadline: a flush still going
// then (a slow or stuck collector) is cut short, and none starts after,
// so that the handler keeps at least half its reserve to return the
// response, which Lambda loses when it comes after the deadline (the
// whole batch is then delivered again). Both are reported to otel.Handle.
func flushNow(ctx context.Context, f flusher, reserve time.Duration) {
	fctx, cancel := context.WithoutCancel(ctx), context.CancelFunc(func() {})
	if d, ok := ctx.Deadline(); ok {
		until := d.Add(-reserve / 2)
		if time.Until(until) <= 0 {
			otel.Handle(errFlushSkipped)
			return
		}
		fctx, cancel = context.WithDeadline(fctx, until)
	}
	defer cancel()
	if err := f.ForceFlush(fctx); err != nil {
		otel.Handle(fmt.Errorf("oteltrace: flush: %w", err))
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
