package oteltrace_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sqsonce/sqsonce/middleware/batch"
	"github.com/sqsonce/sqsonce/middleware/oteltrace"
)

// TestGlobalProviderSetAfterBuild: a handler built without
// WithTracerProvider before main sets the global provider (a handler in a
// package variable, say) flushes that provider at each invocation, as one
// built after it does: else its spans wait in the batch processor while
// Lambda freezes the environment.
func TestGlobalProviderSetAfterBuild(t *testing.T) {
	prev := otel.GetTracerProvider()
	t.Cleanup(func() { otel.SetTracerProvider(prev) })
	h := oteltrace.SQS(func(context.Context, events.SQSMessage) (string, error) { return "ok", nil }, batch.Options{})
	w := oteltrace.Wrap("orders", func(context.Context, string) (string, error) { return "ok", nil })

	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Hour)))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	otel.SetTracerProvider(tp)

	ctx, cancel := lambdaContext()
	defer cancel()
	if _, err := h(ctx, events.SQSEvent{Records: []events.SQSMessage{message("m1", "a")}}); err != nil {
		t.Fatal(err)
	}
	if n := len(exp.GetSpans()); n != 3 {
		t.Errorf("SQS: %d spans exported when the invocation returned, want 3 (invocation, batch, record): it did not flush the global provider", n)
	}
	exp.Reset()
	if _, err := w(ctx, "in"); err != nil {
		t.Fatal(err)
	}
	if n := len(exp.GetSpans()); n != 1 {
		t.Errorf("Wrap: %d spans exported when the invocation returned, want 1: it did not flush the global provider", n)
	}
}
