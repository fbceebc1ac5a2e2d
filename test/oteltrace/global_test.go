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

// TestGlobalProviderSetAfterBuild: handlers built with zero-value options
// and no WithTracerProvider before main sets the global provider (in a
// package variable, say) flush that provider at each invocation, as ones
// built after it do: else their spans wait in the batch processor while
// Lambda freezes the environment. On a collector that never answers, an
// invocation at Lambda's default timeout of 3 s still returns with half
// batch.DefaultReserve left.
//
// The global provider's delegation is set once per process: this is the
// package's one test that sets it.
func TestGlobalProviderSetAfterBuild(t *testing.T) {
	otelErrors(t)
	h := oteltrace.SQS(func(context.Context, events.SQSMessage) (string, error) { return "ok", nil }, batch.Options{})
	w := oteltrace.Wrap("orders", func(context.Context, string) (string, error) { return "ok", nil })

	exp := tracetest.NewInMemoryExporter()
	stuck := &stuckProcessor{}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Hour)), // flushed first
		sdktrace.WithSpanProcessor(stuck))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() {
		otel.SetTracerProvider(prev)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_ = tp.Shutdown(ctx)
	})

	for _, c := range []struct {
		name  string
		call  func(context.Context) error
		spans int
	}{
		{"SQS", func(ctx context.Context) error {
			_, err := h(ctx, events.SQSEvent{Records: []events.SQSMessage{message("m1", "a")}})
			return err
		}, 3}, // the invocation, the batch, the record
		{"Wrap", func(ctx context.Context) error { _, err := w(ctx, "in"); return err }, 1},
	} {
		exp.Reset()
		flushes := stuck.flushes.Load()
		ctx, cancel := lambdaContext() // Lambda's default timeout, 3 s
		deadline, _ := ctx.Deadline()
		if err := c.call(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		if n := len(exp.GetSpans()); n != c.spans {
			t.Errorf("%s: %d spans exported when the invocation returned, want %d: it did not flush the global provider", c.name, n, c.spans)
		}
		if n := stuck.flushes.Load() - flushes; n != 1 {
			t.Errorf("%s: %d flushes, want 1", c.name, n)
		}
		if left := time.Until(deadline); left < batch.DefaultReserve/2-slack {
			t.Errorf("%s: returned %v before the deadline, want about %v: the flush spent the reserve", c.name, left, batch.DefaultReserve/2)
		}
	}
}
